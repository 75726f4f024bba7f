"""Reading a submission (roofline_lib/grading/reader.py): parsed in a child under the notebook's
limits, refused past its caps with a message naming them, and never in the grader's memory.

No kernel starts here; the slowest test waits out a 1 s time limit.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import jupytext
import nbformat
import pytest

from roofline_lib.grading import grader, reader, sandbox
from roofline_lib.grading.worker import descendants

ROOT = Path(__file__).resolve().parents[1]
EX2 = "ex2_ridge_points"
LIMITS = sandbox.limits(30)  # 3 GiB of address space, 30 s of CPU: what a sandboxed notebook gets


@pytest.fixture(scope="module")
def server():
    r = reader.Reader()
    r.start()
    yield r
    r.close()


def _read(server, path: Path, time_limit_s: float = 30, limits=LIMITS) -> reader.Read:
    return server.read(os.open(path, os.O_RDONLY), path.suffix, time_limit_s, limits)


def _expected(nb) -> list[tuple[str, list[str]]]:
    return [(c.source, c.get("metadata", {}).get("tags", [])) for c in nb.cells if c.cell_type == "code"]


def _lab_copy(dest: Path, output_bytes: int = 0) -> Path:
    """The ex2 solution as JupyterLab saves it, each code cell with ``output_bytes`` of stored output."""
    nb = jupytext.read(ROOT / "solutions" / f"{EX2}.md")
    for cell in nb.cells:
        if cell.cell_type == "code" and output_bytes:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="y" * output_bytes)]
    nbformat.write(nb, dest)
    return dest


def _slow_md(dest: Path) -> None:
    """The ex2 exercise and 100_000 Markdown cells: no fence to count, so only a limit stops the
    parse (jupytext takes about 20 s on it)."""
    notes = "".join(f"\n+++\n\nnote {i}\n" for i in range(100_000))
    dest.write_text((ROOT / "exercises" / f"{EX2}.md").read_text() + notes)


def _peak_rss_mib() -> tuple[float, float]:
    """(this process's resident memory now, its peak since the last reset), in MiB (Linux)."""
    status = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        status[name] = value
    return int(status["VmRSS"].split()[0]) / 1024, int(status["VmHWM"].split()[0]) / 1024


def test_a_text_notebook_and_its_lab_copy_read_as_jupytext_reads_them(server, tmp_path):
    md = ROOT / "solutions" / f"{EX2}.md"
    expected = _expected(jupytext.read(md))
    assert len(expected) == 17 and any("answer-ex2-a" in tags for _, tags in expected)  # the exercise's 17 code cells
    got = _read(server, md)
    assert got.end == "read" and got.cells == expected and got.seconds < 5
    lab = _read(server, _lab_copy(tmp_path / f"{EX2}.ipynb"))
    assert lab.end == "read" and lab.cells == expected


def test_a_100k_cell_text_notebook_is_refused_by_its_cap_before_the_parse(server, tmp_path):
    cells = "".join(f"```{{code-cell}} ipython3\nx{i} = {i}\n```\n\n" for i in range(100_000))
    path = tmp_path / f"{EX2}.md"
    path.write_text((ROOT / "exercises" / f"{EX2}.md").read_text() + cells)  # 4 MB; jupytext took 28 s on it
    got = _read(server, path)
    assert got.end == "refused" and got.seconds < 5, got.problem  # counted, not parsed
    # 100_000 cells * 2 fences + the exercise's own 36 = 200_036 lines
    assert got.problem == (
        "cannot read the notebook: it has 200036 fence lines (```), more than 1000 code cells can need; "
        "a notebook may have at most 1000 code cells"
    )


def test_an_ipynb_with_more_code_cells_than_the_cap_is_refused_by_its_count(server, tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"x = {i}") for i in range(1001)])
    nbformat.write(nb, tmp_path / "many.ipynb")
    got = _read(server, tmp_path / "many.ipynb")
    assert got.problem == "cannot read the notebook: it has 1001 code cells; a notebook may have at most 1000"


def test_more_code_than_the_cap_is_refused_and_never_sent_back(server, tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1  # " + "z" * 2**20)])  # 1 MiB + 9 B
    nbformat.write(nb, tmp_path / "big.ipynb")
    got = _read(server, tmp_path / "big.ipynb")
    assert got.end == "refused" and got.cells is None
    assert got.problem == "cannot read the notebook: its code cells hold more than 1 MiB of code"


def _child_seen(server_pid: int, until: threading.Event) -> dict:
    """The reading child's uid and limits, as /proc last showed them while it parsed (``{}``: none seen).

    Watched until ``until`` is set (the read has returned), not for a fixed time: on a loaded
    machine the server forked its child only after a watch of 0.9 s had ended. The last sight,
    not the first: a child caught between its fork and its confinement still has the server's uid
    and no limits; the child parses for the whole time limit after it, so the last sight shows
    the confined child."""
    deadline, last = time.monotonic() + 30, {}
    while not until.is_set() and time.monotonic() < deadline:
        for pid in descendants(server_pid):
            try:
                uid = Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[1]  # the effective uid
                limits = Path(f"/proc/{pid}/limits").read_text()
            except (OSError, IndexError):
                continue
            if "Max address space" in limits and uid:
                last = {"uid": int(uid), "limits": limits}
        time.sleep(0.02)
    return last


def test_a_notebook_that_parses_past_its_time_limit_costs_that_limit_and_its_child(server, tmp_path):
    _slow_md(tmp_path / "slow.md")
    seen, read = {}, threading.Event()
    watcher = threading.Thread(target=lambda: seen.update(_child_seen(server._proc.pid, read)))
    started = time.monotonic()
    watcher.start()
    try:
        got = _read(server, tmp_path / "slow.md", time_limit_s=1)
    finally:
        read.set()
        watcher.join()
    assert seen, "no reading child was seen while the notebook was read"
    assert got.end == "time limit" and got.cells is None
    assert 1 <= got.seconds < 3 and time.monotonic() - started < 5
    # while it parsed: the notebook's limits, and no privilege where the grader is root
    address_space = next(line for line in seen["limits"].splitlines() if line.startswith("Max address space"))
    assert address_space.split()[3:5] == [str(3 * 2**30)] * 2  # soft and hard: 3 GiB
    assert seen["uid"] == (65534 if os.geteuid() == 0 else os.geteuid())
    deadline = time.monotonic() + 5
    while descendants(server._proc.pid) and time.monotonic() < deadline:  # killed, then reaped by the server
        time.sleep(0.05)
    assert descendants(server._proc.pid) == []
    assert _read(server, ROOT / "solutions" / f"{EX2}.md").end == "read"  # the server serves on


def test_a_notebook_past_the_memory_limit_is_refused_naming_it(server, tmp_path):
    path = _lab_copy(tmp_path / f"{EX2}.ipynb", output_bytes=3_000_000)  # 17 cells * 3 MB: a 51 MB file
    assert path.stat().st_size > 50e6
    small = {**LIMITS, "address_space_bytes": 200 * 2**20}
    got = _read(server, path, limits=small)
    assert (
        got.problem == "cannot read the notebook: reading it needs more than the 200 MiB of memory a notebook may use"
    )
    assert _read(server, path).cells == _expected(jupytext.read(ROOT / "solutions" / f"{EX2}.md"))  # 3 GiB: read


def test_a_child_killed_by_its_cpu_limit_is_reported_with_its_limits(server, tmp_path):
    _slow_md(tmp_path / "slow.md")
    got = _read(server, tmp_path / "slow.md", time_limit_s=20, limits={**LIMITS, "cpu_seconds": 1})
    assert got.end == "refused" and got.seconds < 10  # SIGXCPU after 1 s of CPU, long before the 20 s
    assert got.problem == "cannot read the notebook: its reader was stopped by a limit (3 GiB of memory, 1 s of CPU)"


def test_reading_a_huge_notebook_does_not_grow_the_grader(server, tmp_path):
    path = _lab_copy(tmp_path / f"{EX2}.ipynb", output_bytes=2_500_000)  # 17 * 2.5 MB: 42 MB of outputs
    Path("/proc/self/clear_refs").write_text("5")  # the peak is counted again from here
    before, _ = _peak_rss_mib()
    got = _read(server, path)
    _, peak = _peak_rss_mib()
    assert got.end == "read" and len(got.cells) == 17
    assert peak - before < 10, (before, peak)  # parsed in this process, the same file grew it by about 120 MiB


def test_an_unreadable_notebook_is_named_by_its_error_never_its_text(server, tmp_path):
    (tmp_path / "k.ipynb").write_text("SECRET-LINE-42 is not JSON")
    got = _read(server, tmp_path / "k.ipynb")
    assert got.problem == "cannot read the notebook (NotJSONError)"
    (tmp_path / "bad.md").write_bytes(b"\xff\xfe not UTF-8")
    assert _read(server, tmp_path / "bad.md").problem == "cannot read the notebook (UnicodeDecodeError)"


def test_a_server_that_is_gone_is_started_again(server):
    server._proc.kill()
    server._proc.wait()
    assert _read(server, ROOT / "solutions" / f"{EX2}.md").end == "read"


def test_the_grader_reports_a_notebook_that_was_not_read_in_time_with_its_limit(tmp_path):
    _slow_md(tmp_path / f"{EX2}.md")
    result = grader.grade_paths([tmp_path / f"{EX2}.md"], time_limit_s=1, unsandboxed=True, seed=1)
    (nb,) = result.notebooks
    assert nb.problem == "the time limit of 1 s was reached while the notebook was read, before any cell ran"
    assert nb.marks == 0 and {p.status for p in nb.parts} == {"not graded"} and nb.seconds < 3
    report = json.dumps(grader.report_json([result]))
    assert "note 5" not in report  # nothing of the notebook's text
