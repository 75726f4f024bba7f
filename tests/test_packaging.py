"""The package's metadata and the lock: what a fresh machine installs, and what the math needs."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_BLOCK_HEAVY = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {'torch', 'triton', 'matplotlib', 'ipywidgets'}:
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
import roofline_lib as rl
from roofline_lib import record_report, records
print(rl.decode_roofline(7e9, 'H100').tokens_per_s > 0)
"""


def test_the_math_imports_without_torch_matplotlib_or_ipywidgets():
    # pyproject's core dependencies are numpy alone; the rest are extras
    done = subprocess.run([sys.executable, "-c", _BLOCK_HEAVY], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_pyproject_extras_name_what_each_group_imports():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert [d.split(">")[0] for d in meta["dependencies"]] == ["numpy"]
    extras = meta["optional-dependencies"]
    assert any(d.startswith("torch") for d in extras["measure"])
    assert {d.split(">")[0] for d in extras["kernels"]} >= {"torch", "triton"}
    assert any(d.startswith("matplotlib") for d in extras["book"])


def _pins(text: str) -> dict[str, str]:
    pins = {}
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[re.sub(r"[-_.]+", "-", name.lower())] = version
    return pins


def test_the_lock_pins_every_direct_dependency_and_names_no_host():
    lock = (ROOT / "requirements.txt").read_text()
    direct = (ROOT / "requirements.in").read_text()
    pins = _pins(lock)
    for line in direct.splitlines():
        name = re.split(r"[=<>\[ ]", line.split("#")[0].strip())[0]
        if name:
            assert re.sub(r"[-_.]+", "-", name.lower()) in pins, f"{name} is in requirements.in but not locked"
    # the CPU build (2.13.0+cpu) and the CUDA build both satisfy a pin with no local version
    assert pins["torch"] == "2.13.0"
    assert "--index-url" not in lock and "--find-links" not in lock and "://" not in lock
    assert "make lock" in lock  # the header says how it was made


def _layers() -> list[str]:
    """The layer list in roofline_lib/__init__.py's docstring, top first."""
    import roofline_lib

    return re.findall(r"^    ([a-z_]+)\s+->", roofline_lib.__doc__, flags=re.M)


#: Imports against the layer order, each with its reason; anything else fails the test below.
_UPWARD: dict[tuple[str, str], str] = {}


def _package_imports(source: str, depth: int) -> set[str]:
    """The package modules ``source`` imports, read from its syntax tree, functions included.

    ``depth`` is how deep the file sits (1: ``roofline_lib/x.py``, 2: a subpackage's file). Seen:
    ``from .x import y`` and ``from . import x`` (``..`` from a subpackage), ``import roofline_lib.x``,
    ``from roofline_lib.x import y``, and ``importlib.import_module("roofline_lib.x")`` or
    ``import_module(".x", ...)`` with a constant name. Private modules (``_checks``) are named too.
    """
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level == depth:
                if node.module:
                    found.add(node.module.split(".")[0])
                else:
                    found |= {alias.name for alias in node.names}
            elif node.level == 0 and (node.module or "").startswith("roofline_lib."):
                found.add(node.module.split(".")[1])
            elif node.level == 0 and node.module == "roofline_lib":
                found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("roofline_lib.")}
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
                target = str(node.args[0].value)
                if target.startswith("roofline_lib."):
                    found.add(target.split(".")[1])
                elif target.startswith("." * depth) and not target.startswith("." * (depth + 1)):
                    found.add(target[depth:].split(".")[0])
    return found


def test_the_import_reader_sees_importlib_private_modules_and_function_bodies():
    planted = (
        "import importlib\n"
        "from ._checks import _positive\n"
        "from . import ops, roofline\n"
        "def later():\n"
        "    from .cli import main\n"
        "    importlib.import_module('roofline_lib.widgets')\n"
        "    importlib.import_module('.plots', 'roofline_lib')\n"
        "    import roofline_lib.records\n"
    )
    assert _package_imports(planted, 1) == {"_checks", "ops", "roofline", "cli", "widgets", "plots", "records"}
    # a subpackage's file reaches the package with two dots; one dot stays inside the subpackage
    assert _package_imports("from ..hardware import gpu\nfrom .key import x\n", 2) == {"hardware"}


def _module_files(package: Path) -> dict[str, list[tuple[Path, int]]]:
    """Each module and subpackage of the package, private ones too, with its files and their depth."""
    files: dict[str, list[tuple[Path, int]]] = {}
    for path in sorted(package.glob("*.py")):
        if path.stem != "__init__":
            files[path.stem] = [(path, 1)]
    for init in sorted(package.glob("*/__init__.py")):
        files[init.parent.name] = [(f, 2) for f in sorted(init.parent.glob("*.py")) if f.name != "__main__.py"]
    return files


def test_the_layer_list_matches_the_imports():
    layers = _layers()
    package = ROOT / "roofline_lib"
    modules = _module_files(package)
    public = sorted(name for name in modules if not name.startswith("_"))
    assert sorted(layers) == public, "every public module and subpackage has one line in the layer list"
    imports = {
        name: set().union(*(_package_imports(f.read_text(), depth) for f, depth in paths)) - {name}
        for name, paths in modules.items()
    }
    # a private helper sits where its highest importer does: it may import only what is above that
    rank = {name: i for i, name in enumerate(layers)}
    private = [name for name in modules if name.startswith("_")]
    for name in private:
        rank[name] = len(layers)
    for _ in private:  # settle helpers imported by helpers
        for name in private:
            importers = [rank[m] for m, used in imports.items() if name in used and m != name]
            rank[name] = min(importers, default=len(layers))
    wrong = []
    for name, used in imports.items():
        for other in used:
            if other not in rank:
                wrong.append(f"{name} imports {other}, which is no module of the package")
            elif other.startswith("_") and not name.startswith("_"):
                continue  # a layer's own helper: its imports are checked at the layer's rank
            elif rank[other] >= rank[name] and (name, other) not in _UPWARD:
                wrong.append(f"{name} imports {other}, which is not above it")
    assert not wrong, "; ".join(sorted(wrong))


def _sanitizers() -> list[tuple[str, str]]:
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "tests" / "nbval_sanitize.cfg")
    return [(cfg[s]["regex"], cfg[s]["replace"]) for s in cfg.sections()]


def test_strict_nbval_compares_the_registrys_figures():
    # a line as chapter 1 prints it: every figure in it comes from the registry, none is measured
    line = "H100 SXM        3.35 TB/s  bf16   989.5 TFLOP/s  ridge   295 FLOP/B"
    for regex, replace in _sanitizers():
        assert re.sub(regex, replace, line) == line, f"the sanitizer [{regex}] rewrites a registry figure"


def test_the_strict_records_store_no_images_and_hold_the_registry_figures():
    import json as _json

    records_dir = ROOT / "tests" / "records"
    files = sorted(records_dir.rglob("*.ipynb"))
    assert files, "strict nbval has at least one reference record"
    for path in files:
        text = path.read_text(encoding="utf-8")
        nb = _json.loads(text)
        assert "base64," not in text.replace("base64,NOT-STORED", ""), f"{path.name} stores an image"
        for cell in nb["cells"]:
            for output in cell.get("outputs", []):
                assert not any(k.startswith("image/") or "/image/" in k for k in output.get("data", {})), path.name
        assert "widgets" not in nb["metadata"], f"{path.name} stores widget state"
    chapter1 = (records_dir / "notebooks" / "01_two_speed_limits.ipynb").read_text(encoding="utf-8")
    assert "989.5 TFLOP/s" in chapter1  # the H100's dense bf16 peak, compared as the registry gives it


def _book_prerequisites() -> set[str]:
    """What `make` rebuilds the strict book for: the prerequisites of its stamp, read from make's database."""
    done = subprocess.run(
        ["make", "--no-print-directory", "-pn", "-f", "Makefile", "help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    rule = next(line for line in done.stdout.splitlines() if line.startswith("_build/.strict-build-passed:"))
    return set(rule.split(":", 1)[1].split())


def test_the_strict_build_reruns_for_what_the_site_is_made_of_and_only_that():
    needs = _book_prerequisites()
    # every chapter, exercise, library module and the book's configuration, and the environment
    for path in [
        *ROOT.glob("notebooks/*.md"),
        *ROOT.glob("exercises/*.md"),
        *ROOT.glob("roofline_lib/*.py"),
        ROOT / "_config.yml",
        ROOT / "_toc.yml",
        ROOT / "references.bib",
        ROOT / "book" / "index.md",
    ]:
        assert path.relative_to(ROOT).as_posix() in needs, path
    assert ".venv/.installed" in needs
    # not the tests, the solutions or the tools: changing them cannot change the site
    assert not {p for p in needs if p.startswith(("tests/", "solutions/", "tools/"))}, needs
