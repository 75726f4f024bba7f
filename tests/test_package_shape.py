"""The library's shape holds: short functions, shallow nesting, a docstring per layer, and a layer
contract that fails on an import running the wrong way (not only one that passes today)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "roofline_lib"
LONGEST_LINES = 100  # no function longer
LONG_LINES, MOST_LONG = 60, 8  # at most this many longer than LONG_LINES
DEEPEST = 4  # if/for/while/with/try blocks inside one another in one function
_BLOCKS = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith)


def _nesting(node: ast.AST, depth: int = 0) -> int:
    """How deep blocks nest in a function's own body (a nested function counts on its own)."""
    deepest = depth
    # an elif is an If alone in its parent's else: a branch beside the parent, not inside it
    elif_ = node.orelse[0] if isinstance(node, ast.If) and len(node.orelse) == 1 else None
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if child is elif_ and isinstance(child, ast.If):
            deepest = max(deepest, _nesting(child, depth))
            continue
        deepest = max(deepest, _nesting(child, depth + isinstance(child, _BLOCKS)))
    return deepest


def _functions(root: Path) -> list[tuple[str, int, int]]:
    """(where, lines, nesting) of every function and method under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                where = f"{path.relative_to(root)}:{node.lineno} {node.name}"
                found.append((where, node.end_lineno - node.lineno + 1, _nesting(node)))
    return found


def test_the_measures_see_length_and_nesting(tmp_path):
    # the measures themselves, on a file written to break them
    body = "\n".join(f"    x{i} = {i}" for i in range(120))
    nested = "def deep():\n    if a:\n        for b in c:\n            while d:\n                with e:\n                    try:\n                        pass\n                    except E:\n                        pass\n"
    chain = "def flat(k):\n    if k == 1:\n        pass\n" + "".join(
        f"    elif k == {i}:\n        pass\n" for i in range(2, 9)
    )
    (tmp_path / "m.py").write_text(f"def long():\n{body}\n\n{nested}\n{chain}", encoding="utf-8")
    shape = {where.split()[-1]: (lines, depth) for where, lines, depth in _functions(tmp_path)}
    assert shape["long"] == (121, 0) and shape["deep"][1] == 5
    assert shape["flat"][1] == 1  # eight branches of one elif chain are one level, not eight


def test_no_function_is_long_or_deep():
    functions = _functions(PACKAGE)
    assert len(functions) > 500  # the whole package was read
    too_long = [f for f in functions if f[1] > LONGEST_LINES]
    long = [f for f in functions if f[1] > LONG_LINES]
    deep = [f for f in functions if f[2] > DEEPEST]
    assert not too_long, f"functions over {LONGEST_LINES} lines: {too_long}"
    assert len(long) <= MOST_LONG, f"{len(long)} functions over {LONG_LINES} lines (at most {MOST_LONG}): {long}"
    assert not deep, f"blocks nested deeper than {DEEPEST}: {deep}"


def test_every_layer_says_what_lives_there():
    layers = sorted(p.parent for p in PACKAGE.glob("*/__init__.py"))
    assert {p.name for p in layers} >= {"core", "models", "workloads", "evidence", "present", "grading", "cli"}
    for layer in layers:
        doc = ast.get_docstring(ast.parse((layer / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc.splitlines()[0]) > 20, f"{layer.name}/__init__.py has no one-line docstring"


@pytest.mark.parametrize(
    ("module", "wrong_way"),
    [
        ("core/formatting.py", "from ..present import plots"),  # the base layer importing a drawing
        ("models/transformer.py", "from ..workloads import serving"),  # a model importing what prices it
        ("workloads/serving.py", "from ..grading import grader"),  # anything importing a face
    ],
)
def test_the_layer_contract_fails_on_an_import_the_wrong_way(tmp_path, module, wrong_way):
    copy = tmp_path / "roofline_lib"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    lint = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"]
    run = dict(cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": ""}, capture_output=True, text=True)
    kept = subprocess.run([*lint, "--no-cache"], **run)
    assert kept.returncode == 0, kept.stdout + kept.stderr  # the copy, unchanged, keeps the contract
    target = copy / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{wrong_way}  # noqa\n", encoding="utf-8")
    broken = subprocess.run([*lint, "--no-cache"], **run)
    assert broken.returncode != 0 and "BROKEN" in broken.stdout, broken.stdout + broken.stderr
