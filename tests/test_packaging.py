"""The package's metadata and the lock: what a fresh machine installs, and what the math needs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

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


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    """import-linter's contract from pyproject.toml, run on the package under ``root``."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(root)},
    )


def test_the_layer_contract_holds_and_names_every_layer():
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    assert contract["type"] == "layers" and contract["exhaustive"] is True
    named = {part.strip() for layer in contract["layers"] for part in re.split(r"[|:]", layer)}
    folders = {p.parent.name for p in (ROOT / "roofline_lib").glob("*/__init__.py")}
    modules = {p.stem for p in (ROOT / "roofline_lib").glob("*.py") if p.stem != "__init__"}
    assert named == folders | modules, "every folder and top-level module of roofline_lib sits in one layer"
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    "module, wrong_way",
    [
        ("core/ops.py", "from ..present import prose"),  # core reaching up to what draws
        ("models/transformer.py", "from ..workloads import serving"),  # a model pricing its serving
        ("evidence/traces.py", "from ..present import plots"),  # two siblings: evidence and present
        ("present/plots.py", "from .. import cli"),  # a face imported from below
    ],
)
def test_an_import_the_wrong_way_breaks_the_contract(tmp_path, module, wrong_way):
    shutil.copytree(ROOT / "roofline_lib", tmp_path / "roofline_lib", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with open(tmp_path / "roofline_lib" / module, "a", encoding="utf-8") as f:
        f.write(f"\n{wrong_way}  # planted\n")
    done = _lint_imports(tmp_path)
    assert done.returncode != 0
    assert "BROKEN" in done.stdout.upper() and module.replace("/", ".").removesuffix(".py") in done.stdout


def test_the_package_exports_each_public_name_once_and_its_modules_by_name():
    import roofline_lib as rl
    from roofline_lib.core import layer

    # every public module of every layer is reached by its short name, and no two share one
    for folder in ("core", "models", "workloads", "evidence", "present"):
        for name in layer.module_names([str(ROOT / "roofline_lib" / folder)]):
            assert rl._MODULES[name] == f"roofline_lib.{folder}.{name}"
    assert rl.decode_roofline is rl.workloads.inference.decode_roofline
    with pytest.raises(AttributeError, match="no attribute 'not_a_module'"):
        rl.not_a_module  # noqa: B018


def test_a_layer_refuses_two_modules_that_export_one_name(tmp_path, monkeypatch):
    from roofline_lib.core import layer

    pkg = tmp_path / "twolayer"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("__all__ = ['x']\nx = 1\n")
    (pkg / "b.py").write_text("__all__ = ['x']\nx = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match="twolayer.b and twolayer.a both export 'x'"):
        layer.gather("twolayer", [str(pkg)], {})
    assert layer.gather("twolayer", [str(pkg)], {}, on_demand={"b"}) == ["x"]


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
        *ROOT.glob("roofline_lib/**/*.py"),
        ROOT / "_config.yml",
        ROOT / "_toc.yml",
        ROOT / "references.bib",
        ROOT / "book" / "index.md",
    ]:
        assert path.relative_to(ROOT).as_posix() in needs, path
    assert ".venv/.installed" in needs
    # not the tests, the solutions or the tools: changing them cannot change the site
    assert not {p for p in needs if p.startswith(("tests/", "solutions/", "tools/"))}, needs
