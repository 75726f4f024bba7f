"""Every chapter under nbval on a simulated H200 (tests/fakegpu), the GPU path without a GPU.

`make fake-gpu` runs this (ROOFLINE_FAKE_GPU_NOTEBOOKS=1): every chapter that could reach a GPU, with
the fake in each kernel, in about a minute. This module imports no torch, so collecting it is
quick; the fake's own tests, and the library's device rules under it, are in test_fake_gpu.py.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

from roofline_lib import _MODULES, record_report

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "tests" / "fakegpu"
sys.path.insert(0, str(FAKE))
import fake_cuda  # noqa: E402 - found through the sys.path entry above

NOTEBOOK_DIRS = ("notebooks",)  # the chapters; the exercises have no GPU path (test_fake_gpu.py)


def _fake_env(**extra) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(FAKE),
        fake_cuda.ENV: "h200",
        "PATH": f"{FAKE / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        **extra,
    }
    for name in ("TRITON_INTERPRET", "CUDA_VISIBLE_DEVICES", record_report.REQUIRE_GPU_ENV):
        env.pop(name, None)
    return env


#: What a chapter may import and still have no GPU path: nothing here loads torch (checked below).
GPU_FREE_IMPORTS = {
    "IPython.display",
    "dataclasses",
    "inspect",
    "math",
    "matplotlib.figure",
    "matplotlib.ticker",
    "roofline_lib",
    "roofline_lib.present.plots",
    "roofline_lib.present.prose",
    "roofline_lib.workloads.scenarios",
    "roofline_lib.present.widgets",
    "roofline_lib.workloads",
}
_GPU_WORDS = re.compile(r"\b(torch|cuda|triton|measure_\w+|device)\b")  # rl.measure_collectives and the like


def _code_of(page: Path) -> list[str]:
    return [
        "\n".join(line for line in c.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for c in jupytext.read(page).cells
        if c.cell_type == "code"
    ]


def _reaches_no_gpu(page: Path) -> bool:
    """Whether a page's code imports only GPU_FREE_IMPORTS and names nothing that could reach a GPU."""
    code = _code_of(page)
    imported = set().union(*(_imports(src) for src in code))
    return imported <= GPU_FREE_IMPORTS and not any(_GPU_WORDS.search(src) for src in code)


def _imports(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            # ``from roofline_lib import plots`` names a layer's module by its short name
            found |= {
                _MODULES.get(a.name, f"roofline_lib.{a.name}") if node.module == "roofline_lib" else node.module
                for a in node.names
            }
        elif isinstance(node, ast.Name) and node.id in ("__import__", "importlib", "exec", "eval"):
            found.add(node.id)
    return found


def _notebooks() -> list[str]:
    return [str(p.relative_to(ROOT)) for d in NOTEBOOK_DIRS for p in sorted((ROOT / d).glob("*.md"))]


# A page that reads this machine's roofs (measure_ceilings) judges its timings against them: run
# beside another kernel, a roof read while the other held a core comes out low, and a kernel timed a
# moment later beats it. Chapter 9 times its steps too, but judges bytes, not times, against its
# planner, so it shares the cores with the pages that time nothing.
_READS_ROOFS = re.compile(r"\bmeasure_ceilings\(")


def _judges_timings_against_roofs(page: Path) -> bool:
    """Whether a page reads this machine's roofs and judges its own timings against them."""
    return bool(_READS_ROOFS.search(page.read_text(encoding="utf-8")))


def _first_failure(out: str, size: int = 5000) -> str:
    """The first failing cell's report and the summary: a cascade of NameErrors after one failed
    cell fills the tail of the output, and the cell that failed first is what to read."""
    start = out.find("\n____")
    head = out[start : start + size] if start >= 0 else out[:size]
    return head + "\n...\n" + out[-1500:]


def _run_under_fake(notebooks: list[str], log: Path, out: Path, **env) -> subprocess.Popen:
    """nbval over ``notebooks``, one after the other in one process, with the fake H200 in every
    kernel (and ``env`` in their environment)."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--nbval-lax",
        "--nbval-current-env",
        "--nbval-kernel-startup-timeout",
        "30",
        "--nbval-sanitize-with",
        "tests/nbval_sanitize.cfg",
        *notebooks,
    ]
    with open(out, "w", encoding="utf-8") as sink:
        return subprocess.Popen(
            cmd, cwd=ROOT, env=_fake_env(**{fake_cuda.LOG_ENV: str(log)}, **env), stdout=sink, stderr=subprocess.STDOUT
        )


def _groups() -> dict[str, list[str]]:
    """The chapters that could reach a GPU, in two groups: ``live``, the pages that judge timings
    against this machine's roofs, and ``quiet``, the rest. A chapter that cannot reach a GPU
    (test_some_chapters_have_no_gpu_path_for_the_fake_to_run) runs as it does in the book build,
    which executes it already."""
    notebooks = [nb for nb in _notebooks() if not _reaches_no_gpu(ROOT / nb)]
    live = [nb for nb in notebooks if _judges_timings_against_roofs(ROOT / nb)]
    return {"live": live, "quiet": [nb for nb in notebooks if nb not in live]}


def test_the_pages_that_read_roofs_run_alone_and_chapter_9_shares():
    groups = _groups()  # chapters 1, 2 and 4 reach no GPU
    assert [nb[10:12] for nb in groups["live"]] == ["06", "07", "08", "10"]
    assert [nb[10:12] for nb in groups["quiet"]] == ["03", "05", "09", "11"]


def _kernel_threads(jobs: int) -> int:
    """The build's rule (tools/build_book.py): each of ``jobs`` notebooks run at once gets its share of the cores."""
    spec = importlib.util.spec_from_file_location("build_book", ROOT / "tools" / "build_book.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool.kernel_threads(jobs, os.cpu_count())


#: torch's threads in every kernel of both groups. The two groups run side by side, as the build runs
#: two pages at once, and each page on its share of the cores, as each page of the build does (why,
#: and what two threads beside a busy core cost: build_book.kernel_threads). The quiet group times
#: nothing, but its torch work waited all the same: its four chapters took 18.1 and 20.8 s on torch's
#: default two threads beside a busy core, 16.5 and 16.8 s on one (on 2 cores, interleaved runs).
THREADS = {"OMP_NUM_THREADS": str(_kernel_threads(2))}


@pytest.mark.skipif(
    os.environ.get("ROOFLINE_FAKE_GPU_NOTEBOOKS") != "1",
    reason="runs every chapter on the fake GPU (about a minute): `make fake-gpu`",
)
@pytest.mark.parametrize("group", ["live", "quiet"])
def test_every_chapter_passes_on_a_fake_h200(tmp_path, group):
    # The pages that judge timings against this machine's roofs (group "live") run one at a time, in
    # one process: a roof read while another of them streamed through memory is low, and a step timed
    # a moment later then beats it (chapter 10 failed so). `make fake-gpu` runs the other group in a
    # second process beside them, as the book build runs its pages (tools/build_book.py); `make test`
    # runs nbval's notebooks after it, in that same process. Each notebook is whole in one kernel.
    notebooks = _groups()[group]
    assert notebooks
    log, out = tmp_path / "fake-gpu.jsonl", tmp_path / "out.txt"
    # the kernels' temporary files in this test's folder: nbval kills each kernel at its end, so what a
    # chapter leaves for its kernel's exit to remove (chapter 6's trace) would stay in the machine's /tmp
    kernel_tmp = tmp_path / "tmp"
    kernel_tmp.mkdir()
    run = _run_under_fake(notebooks, log, out, TMPDIR=str(kernel_tmp), **THREADS)
    assert run.wait(timeout=900) == 0, _first_failure(out.read_text())
    events = fake_cuda.read_log(log)
    threads = {e["threads"] for e in events if e["event"] == "torch"}
    assert threads, f"no kernel of the {group} group imported torch"
    assert threads == {int(THREADS["OMP_NUM_THREADS"])}, f"torch's threads in the {group} kernels: {threads}"
    kernels = {e["pid"] for e in events if e["event"] == "installed"} - {None}
    assert len(kernels) >= len(notebooks)  # the fake was live in every notebook's kernel (and in pytest)
    judged = [e for e in events if e["event"] == "judged"]
    against_gpu = [e for e in judged if e["roofs"] == "cuda"]
    assert against_gpu == [], f"work judged against a GPU's measured roofs: {against_gpu}"
    assert all(e["timed_on"] in (None, e["roofs"]) for e in judged)
    if group == "live":  # these time work on the GPU's path and judge it
        gpu_work = [e for e in events if e["event"] in ("cuda_matmul", "cuda_stream", "cuda_time_fn")]
        assert gpu_work, "no cell took its GPU path: the fake did not reach the kernels"
        assert judged, "no measurement was judged against any roof"
