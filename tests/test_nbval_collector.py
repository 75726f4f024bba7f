"""The conftest collector: nbval over jupytext notebooks, lax and strict with a reference record."""

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import conftest

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_1 = ROOT / "notebooks" / "01_two_speed_limits.md"


def test_course_notebooks_are_recognised_and_others_are_not(tmp_path):
    assert conftest._is_course_notebook(CHAPTER_1)
    assert not conftest._is_course_notebook(ROOT / "README.md")  # not in a notebook folder
    assert not conftest._is_course_notebook(ROOT / "book" / "index.md")
    assert not conftest._is_course_notebook(tmp_path / "notebooks" / "x.md")  # outside the repo


def test_reading_a_text_notebook_gives_its_code_cells():
    nb = conftest.read_notebook(CHAPTER_1, with_record=False)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.get("outputs") for c in code)  # text notebooks store no outputs
    assert "import roofline_lib as rl" in code[0].source


def test_strict_mode_takes_outputs_from_the_record():
    nb = conftest.read_notebook(CHAPTER_1, with_record=True)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert any(c.outputs for c in code)  # the record's outputs were attached
    assert all(c.execution_count is not None for c in code)


def test_a_stale_record_is_refused_in_strict_mode_only(tmp_path, monkeypatch):
    record = conftest.record_path(CHAPTER_1)
    stale = nbformat.read(str(record), as_version=4)
    first_code = next(c for c in stale.cells if c.cell_type == "code")
    first_code.source += "\nprint('edited')"
    fake_records = tmp_path / "records"
    target = fake_records / record.relative_to(conftest.RECORDS)
    target.parent.mkdir(parents=True)
    nbformat.write(stale, str(target))
    monkeypatch.setattr(conftest, "RECORDS", fake_records)
    with pytest.raises(pytest.UsageError, match="is stale"):
        conftest.read_notebook(CHAPTER_1, with_record=True)
    conftest.read_notebook(CHAPTER_1, with_record=False)  # lax mode does not look at it


# The strict run itself (chapter 1 executed and compared with its record) is `make nbval`;
# running it here as well executed the chapter twice per `make test`.


_FLAKY_KERNELS = """
import nbval.plugin as plugin

real, calls = plugin.RunningKernel, []


def flaky(*args, **kwargs):  # the 1st kernel stays silent, the 2nd lives, the 3rd to 5th die
    calls.append(kwargs["cwd"])
    if len(calls) == 1:
        raise RuntimeError("Kernel didn't respond in 30 seconds")
    if len(calls) != 2:
        raise RuntimeError("Kernel died before replying to kernel_info")
    return real(*args, **kwargs)


plugin.RunningKernel = flaky


def pytest_unconfigure(config):
    open(LOG, "w").write(str(len(calls)))
"""


def test_a_kernel_that_dies_at_start_is_replaced_and_one_that_keeps_dying_fails(tmp_path):
    log = tmp_path / "starts.txt"
    (tmp_path / "flaky_kernels.py").write_text(f"LOG = {str(log)!r}\n" + _FLAKY_KERNELS)
    lives, dies = "exercises/ex2_ridge_points.md", "exercises/ex3_70b_budget.md"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "flaky_kernels",
            "--nbval-lax",
            "--nbval-current-env",
            "-W",
            "default",
            lives,
            dies,
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout
    assert done.returncode == 1, out[-3000:]
    assert log.read_text() == "5"  # 2 for the first notebook, 3 (all attempts) for the second
    assert f"ERROR {dies}::Cell 0 - RuntimeError: Kernel died" in out
    assert f"{lives}::" not in out.split("short test summary")[-1]  # every cell of the first passed
    assert f"{lives}: Kernel didn't respond in 30 seconds; starting another kernel" in out
    assert f"{dies}: Kernel died before replying to kernel_info; starting another kernel" in out
