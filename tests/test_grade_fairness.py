"""Grading a class fairly: one notebook per exercise, reports that agree, safe names, no harm between students.

The first section grades a class of honest students and attackers in the sandbox, with a fork
bomb in a second grader running at the same time, and checks every student's marks (the issue's
"done when"). The sections after it check each rule on its own, in this process, without a kernel.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import jupytext
import nbformat
import pytest

from roofline_lib.grading import grader, key, sandbox
from roofline_lib.grading.grader import NotebookResult, PartResult, StudentResult
from roofline_lib.grading.names import for_terminal, shown
from roofline_lib.grading.notebooks import one_per_exercise

EX2 = "ex2_ridge_points"
EX5 = "ex5_precision_sweep"


# =========================================================================== a class, graded beside a fork bomb

ROOT = Path(__file__).resolve().parents[1]
WHY = sandbox.why_unavailable()
OWN_USERS = sandbox.mode() in ("root", "user")  # each sandbox a user of its own: per-notebook process limits


def _build(dest: Path, base: Path, replace: dict[str, str] | None = None) -> None:
    """``base`` written to ``dest`` with the cells of the tags in ``replace`` given new sources."""
    nb = jupytext.read(base)
    for cell in nb.cells:
        for tag in cell.get("metadata", {}).get("tags", []):
            if replace and tag in replace:
                cell.source = replace[tag]
    dest.parent.mkdir(parents=True, exist_ok=True)
    jupytext.write(nb, dest, fmt="md:myst")


def _tagged(path: Path) -> dict[str, str]:
    return {t: c.source for c in jupytext.read(path).cells for t in c.get("metadata", {}).get("tags", [])}


#: A folder name that would clear the screen, colour the rest, reverse it and draw a row of its own.
ESCAPE_NAME = "e_numpy\x1b[2J\x1b[H\x1b[31m\u202e\nfake,8,8"

#: Correct answers in the types numpy and the standard library give (ridge P 1200e12 / 6e12 = 200,
#: ridge Q 500e12 / 4e12 = 125, ceiling P 6e12 * 150 = 9e14, ceiling Q 5e14); once "must be one
#: of" or "other".
NUMPY_ANSWERS = {
    "answer-ex2-a": "import numpy as np\nridge_p = np.asarray(P_BF16_FLOPS_PER_S / P_HBM_BYTES_PER_S)  # 0-d",
    "answer-ex2-b": "from decimal import Decimal\nridge_q = Decimal(500) * 10**12 / (Decimal(4) * 10**12)",
    "answer-ex2-c": "from fractions import Fraction\nceiling_p_flops_per_s = Fraction(6 * 10**12) * 150",
    "answer-ex2-d": "ceiling_q_flops_per_s = np.float32(Q_BF16_FLOPS_PER_S)",
    "answer-ex2-e": 'machine_change = np.str_("A")',
    "answer-ex2-f": "machine_change_reason = np.int64(3)",
    "answer-ex2-g": (
        "def ceiling(intensity, datasheet, dtype):\n"
        "    if not intensity > 0 or dtype not in datasheet['peak_flops_per_s']:\n"
        "        raise ValueError(f'intensity must be a positive number of FLOP/byte, got {intensity!r}')\n"
        "    return np.minimum(np.asarray(datasheet['peak_flops_per_s'][dtype]),\n"
        "                      np.asarray(datasheet['hbm_bytes_per_s'] * intensity))[()]"
    ),
}

# Writes 16 MiB at a time, in files under the 64 MiB file limit, until its space is full (or
# 640 MiB, where nothing stops it), then holds it full while its neighbours run.
FILL = """
import time
error = None
try:
    for n in range(40):
        with open(f"fill{n}", "wb") as f:
            for _ in range(3):
                f.write(b"x" * 2**24)
except OSError as err:
    error = err
time.sleep(3)
if error:
    raise error
ridge_p = 1200e12 / 6e12  # earned only where nothing stopped the writes
"""

# Starts `sleep` processes until its user's process limit refuses one, then holds them while the
# other grader's class is graded. The sleeps carry MARK, so the test can count them from outside.
FORK_BOMB = """
import os, time
started = 0
try:
    for _ in range(4096):
        if os.fork() == 0:
            try:
                os.execv("/usr/bin/sleep", ["sleep", "MARK"])
            finally:
                os._exit(1)
        started += 1
except OSError:  # EAGAIN: the limit
    pass
time.sleep(50)
ridge_p = 1200e12 / 6e12 if started == 4096 else ...  # earned only where nothing stopped the forks
"""


def _lab_copy(dest: Path, base: Path, output_bytes: int) -> None:
    """``base`` as JupyterLab saves it after a run: every code cell with ``output_bytes`` of stored output."""
    nb = jupytext.read(base)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="y" * output_bytes)]
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest)


#: 100_000 code cells after an exercise: jupytext once parsed them for 28 s in the grader's process.
MANY_CELLS = "".join(f"```{{code-cell}} ipython3\nx{i} = {i}\n```\n\n" for i in range(100_000))


def _the_class(sub: Path) -> None:
    """Three honest students and four who attack (copies, a disk filler, a huge answer, 100k cells)."""
    solution, stub = ROOT / "solutions" / f"{EX2}.md", ROOT / "exercises" / f"{EX2}.md"
    _lab_copy(sub / "a_honest" / f"{EX2}.ipynb", solution, 2_400_000)  # 17 cells * 2.4 MB: a 41 MB Lab copy
    answers = {t: s for t, s in _tagged(solution).items() if t in ("answer-ex2-a", "answer-ex2-b")}
    _build(sub / "b_pair" / f"{EX2}.md", stub, answers)  # the text notebook: two parts answered ...
    _build(sub / "b_pair" / f"{EX2}.ipynb", solution)  # ... and a complete Lab copy beside it, not graded
    for copy in (f"{EX2}.md", f"{EX2} (1).md", "ex2-draft.ipynb"):  # three copies once scored 24 of 8
        _build(sub / "c_copies" / copy, solution)
    _build(sub / "d_filler" / f"{EX2}.md", solution, {"answer-ex2-a": FILL})
    _build(sub / ESCAPE_NAME / f"{EX2}.md", solution, NUMPY_ANSWERS)
    _build(sub / "f_huge" / f"{EX2}.md", solution, {"answer-ex2-a": 'ridge_p = "x" * 150_000_000  # 150 MB'})
    (sub / "g_cells").mkdir()
    (sub / "g_cells" / f"{EX2}.md").write_text(solution.read_text() + MANY_CELLS)  # 4 MB


#: ``roofline grade``, writing its own peak resident memory (KiB, VmHWM: ru_maxrss would count the
#: memory of the process that started it, from before its exec) to the file named first when it exits.
_PEAK_RSS = (
    "import atexit, re, runpy, sys; peak = sys.argv.pop(1); "
    "hwm = lambda: re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read()).group(1); "
    "atexit.register(lambda: open(peak, 'w').write(hwm())); "
    "runpy.run_module('roofline_lib.cli', run_name='__main__')"
)


def _grader(sub: Path, out: Path, time_limit_s: int) -> list[str]:
    return [
        sys.executable, "-c", _PEAK_RSS, str(out / "peak_kib"), "grade", "--submissions", str(sub), "--workers", "2",
        "--time-limit", str(time_limit_s), "--csv", str(out / "g.csv"), "--json", str(out / "r.json"),
    ]  # fmt: skip


def _sleeps(mark: str) -> int:
    """Processes on this machine whose command line is ``sleep MARK`` (the fork bomb's)."""
    found = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            found += Path(f"/proc/{pid}/cmdline").read_bytes() == f"sleep\0{mark}\0".encode()
        except OSError:
            pass
    return found


def _reports(out: Path, returncode: int, stdout: bytes, stderr: bytes) -> dict:
    return dict(
        returncode=returncode,
        stdout=stdout.decode("utf-8", "backslashreplace"),
        stderr=stderr.decode("utf-8", "replace"),
        csv=(out / "g.csv").read_text(encoding="utf-8"),
        report=json.loads((out / "r.json").read_text(encoding="utf-8")),
        peak_mib=int((out / "peak_kib").read_text()) / 1024,
    )


def _grade_beside_a_fork_bomb(tmp: Path) -> dict:
    """The class graded while a second grader's fork bomb holds every process its user may have."""
    _the_class(tmp / "class")
    mark = f"59.{secrets.randbelow(10**6):06d}"  # a duration no other sleep on the machine has
    bomb = {"answer-ex2-a": FORK_BOMB.replace("MARK", mark)}
    _build(tmp / "other" / "z_bomb" / f"{EX2}.md", ROOT / "exercises" / f"{EX2}.md", bomb)
    (tmp / "out_other").mkdir()
    (tmp / "out").mkdir()
    other = None
    held = 0
    if OWN_USERS:
        other = subprocess.Popen(
            _grader(tmp / "other", tmp / "out_other", 90), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and other.poll() is None and (held := _sleeps(mark)) < 150:
            time.sleep(0.2)  # of 256 processes its user may have, the kernel and worker take some 30
    started = time.monotonic()
    graded = subprocess.run(_grader(tmp / "class", tmp / "out", 20), cwd=ROOT, capture_output=True, timeout=300)
    result = _reports(tmp / "out", graded.returncode, graded.stdout, graded.stderr)
    result |= {"seconds": round(time.monotonic() - started, 1), "held": held}
    if other is not None:
        result["held_after"] = _sleeps(mark)  # still holding when the class was done
        other.send_signal(signal.SIGTERM)
        stdout, stderr = other.communicate(timeout=120)
        result["other"] = _reports(tmp / "out_other", other.returncode, stdout, stderr)
        result["left_behind"] = _sleeps(mark)
    return result


@pytest.fixture(scope="session")
def fair_class(once_per_run):
    if WHY:
        pytest.skip(f"no sandbox on this machine: {WHY}")
    return once_per_run("fair-class", _grade_beside_a_fork_bomb)


def _by_student(graded: dict) -> dict[str, dict]:
    return {s["student"]: s for s in graded["report"]["students"]}


def _part_marks(student: dict) -> dict[str, int]:
    return {p["part"]: p["marks"] for nb in student["notebooks"] for p in nb["parts"]}


def test_every_honest_student_gets_exactly_their_marks_and_attackers_nothing_unanswered(fair_class):
    assert fair_class["returncode"] == 1 and "Traceback" not in fair_class["stderr"], fair_class["stderr"]
    students = _by_student(fair_class)
    totals = {name: s["marks"] for name, s in students.items()}
    # honest: the solution; a pair whose .md answers two parts; numpy-typed answers under an escaping name
    assert {n: totals[n] for n in ("a_honest", "b_pair", ESCAPE_NAME)} == {"a_honest": 8, "b_pair": 2, ESCAPE_NAME: 8}
    # attackers: the copies earn nothing; the filler and the huge answer lose the part that attacked
    assert {n: totals[n] for n in ("c_copies", "d_filler", "f_huge")} == {"c_copies": 0, "d_filler": 7, "f_huge": 7}
    assert totals["g_cells"] == 0
    for name in ("d_filler", "f_huge"):
        assert _part_marks(students[name])["ex2-a"] == 0, name
    copies = students["c_copies"]["notebooks"]
    assert len(copies) == 1 and copies[0]["problem"].startswith("not graded: 3 notebooks for ex2 (")
    (pair,) = students["b_pair"]["notebooks"]
    assert pair["path"].endswith(f"{EX2}.md")  # of the pair, the .md
    (filler,) = students["d_filler"]["notebooks"]
    assert "wrote more than its 256 MiB of scratch space" in filler["problem"] and "part ex2-a" in filler["problem"]
    (huge,) = students["f_huge"]["notebooks"]
    huge_a = next(p for p in huge["parts"] if p["part"] == "ex2-a")
    assert "over 1 MiB" in huge_a["message"] and not huge["problem"] and huge["seconds"] < 20  # within its limit


def test_a_huge_or_pathological_notebook_is_read_within_limits_outside_the_grader(fair_class):
    students = _by_student(fair_class)
    (lab,) = students["a_honest"]["notebooks"]
    assert lab["path"].endswith(f"{EX2}.ipynb") and lab["marks"] == 8 and not lab["problem"]  # 41 MB, as written
    (cells,) = students["g_cells"]["notebooks"]
    assert cells["problem"] == (
        "cannot read the notebook: it has 200036 fence lines (```), more than 1000 code cells can need; "
        "a notebook may have at most 1000 code cells"
    )  # 100_000 cells * 2 fences + the solution's 36
    assert cells["seconds"] < 5 and {p["status"] for p in cells["parts"]} == {"not graded"}
    # The grader read neither: parsed in its process, the Lab copy alone grew it by about 120 MiB
    # and the 100k cells by 220 MiB (its peak was 86 MiB for a class of solutions, jupytext loaded).
    assert fair_class["peak_mib"] < 80, fair_class["peak_mib"]


def test_the_class_report_is_written_and_its_three_forms_agree(fair_class):
    rows = list(csv.DictReader(io.StringIO(fair_class["csv"])))
    table = [line for line in fair_class["stdout"].splitlines() if re.search(r"^\S.*   \d+/\d+$", line)]
    students = fair_class["report"]["students"]
    assert len(rows) == len(table) == len(students) == 7
    parts = [c for c in rows[0] if c not in ("student", "total", "max")]
    assert parts == [p.key for p in key.parts_of("ex2")]
    for row, shown_line, s in zip(rows, table, students):
        assert row["student"] == s["student"]  # the same order, the same student, the real name
        assert int(row["total"]) == s["marks"] == sum(int(row[p]) for p in parts)  # CSV and JSON agree
        assert shown_line.endswith(f"   {s['marks']}/{s['max_marks']}")  # and the table
        assert s["marks"] <= s["max_marks"] <= int(row["max"]) == 8  # no total past its maximum


def test_the_terminal_shows_the_escaping_name_escaped(fair_class):
    out = fair_class["stdout"]
    assert "\x1b" not in out and "\u202e" not in out  # no escape sequence, no right-to-left override
    assert "e_numpy\\x1b[2J\\x1b[H\\x1b[31m\\u202e\\nfake,8,8   (" in out  # one line of its own, readable
    assert not any(line.startswith("fake,8,8") for line in out.splitlines())  # the fake row is not drawn


@pytest.mark.skipif(not OWN_USERS, reason="a grader that is not root runs every sandbox as its own user")
def test_a_fork_bomb_in_another_grader_takes_nothing_from_this_class(fair_class):
    # it held at least 150 processes before the class started and while it was graded ...
    assert fair_class["held"] >= 150 and fair_class["held_after"] >= 150, fair_class["other"]["stderr"]
    # ... and every honest student of the class above got their marks beside it (uids leased, not shared)
    other = fair_class["other"]
    assert other["returncode"] == 128 + signal.SIGTERM and other["report"]["stopped"] == "SIGTERM"
    (bomb,) = other["report"]["students"]
    assert bomb["marks"] == 0  # it answered nothing else, and the bomb earns nothing
    assert fair_class["left_behind"] == 0  # its processes went with its grader


# =========================================================================== one notebook per exercise


def _paths(folder: Path, *names: str) -> list[Path]:
    return [folder / n for n in names]


def test_one_notebook_per_exercise_is_graded_as_it_is(tmp_path):
    chosen, clashes = one_per_exercise(_paths(tmp_path, f"{EX2}.md", f"{EX5}.ipynb"))
    assert [p.name for p in chosen] == [f"{EX2}.md", f"{EX5}.ipynb"] and clashes == []


def test_of_a_jupytext_pair_the_md_is_graded(tmp_path):
    chosen, clashes = one_per_exercise(_paths(tmp_path, f"{EX2}.ipynb", f"{EX2}.md"))
    assert [p.name for p in chosen] == [f"{EX2}.md"] and clashes == []
    chosen, _ = one_per_exercise(_paths(tmp_path, "ex2-final.ipynb", "ex2-final.md"))  # any name of ex2
    assert [p.name for p in chosen] == ["ex2-final.md"]


@pytest.mark.parametrize(
    "names",
    [
        (f"{EX2}.md", f"{EX2} (1).md"),  # two copies
        (f"{EX2}.md", f"{EX2} (1).md", "ex2-copy.md"),  # three: 24 of 8 before
        (f"{EX2}.md", f"{EX2}.ipynb", "ex2-draft.md"),  # a pair and a draft
        ("ex2-draft.md", f"{EX2}.ipynb"),  # two names: no pair
    ],
    ids=["two-copies", "three-copies", "pair-and-draft", "different-names"],
)
def test_more_than_one_notebook_for_an_exercise_grades_none_and_names_them(tmp_path, names):
    chosen, clashes = one_per_exercise([*_paths(tmp_path, *names), tmp_path / f"{EX5}.md"])
    assert [p.name for p in chosen] == [f"{EX5}.md"]  # the other exercise is graded
    assert len(clashes) == 1 and clashes[0].exercise == "ex2"
    message = clashes[0].message()
    assert message.startswith(f"not graded: {len(names)} notebooks for ex2")
    assert all(n in message for n in names) and "hand in one per exercise" in message


def test_a_pair_is_one_folder_s_two_files(tmp_path):
    # one student's notebooks given from two folders: the same name twice is two notebooks, not a pair
    chosen, clashes = one_per_exercise([tmp_path / "a" / f"{EX2}.md", tmp_path / "b" / f"{EX2}.ipynb"])
    assert chosen == [] and len(clashes[0].files) == 2


def test_a_folder_of_copies_only_is_graded_without_a_kernel_and_earns_nothing(tmp_path):
    sub = tmp_path / "sub"
    for name in (f"{EX2}.md", f"{EX2} (1).md", "ex2-draft.ipynb"):
        (sub / "copies").mkdir(parents=True, exist_ok=True)
        (sub / "copies" / name).write_text("not even read")
    students = grader.grade_submissions(sub, unsandboxed=True, workers=1)  # no notebook to run
    (s,) = students
    assert (s.marks, s.max_marks) == (0, 8)  # ex2 has eight parts of one mark each
    (nb,) = s.notebooks
    assert nb.exercise == "ex2" and "3 notebooks for ex2" in nb.problem and "ex2-draft.ipynb" in nb.problem
    assert {p.status for p in nb.parts} == {"not graded"}
    assert not s.problem  # the submission has notebooks: the problem is the exercise's, not "no notebook"


def test_one_student_s_notebooks_given_twice_are_one_clash_not_two_grades(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"{EX2}.md").write_text("not even read")
    result = grader.grade_paths([tmp_path / "a" / f"{EX2}.md", tmp_path / "b" / f"{EX2}.md"], unsandboxed=True)
    assert (result.marks, result.max_marks) == (0, 8) and len(result.notebooks) == 1
    assert "2 notebooks for ex2" in result.notebooks[0].problem


# =========================================================================== the reports agree


def _notebook(exercise: str, correct: set[str]) -> NotebookResult:
    parts = [
        PartResult(p.key, p.title, "correct" if p.key in correct else "wrong", p.marks * (p.key in correct), p.marks)
        for p in key.parts_of(exercise)
    ]
    return NotebookResult(f"{exercise}.md", exercise, key.EXERCISES[exercise].title, parts)


def _table_totals(table: str) -> list[tuple[int, int]]:
    """(marks, max) of each student's line of the score table: the lines that start unindented."""
    rows = [line for line in table.splitlines() if line and not line.startswith(" ") and "/" in line]
    return [tuple(int(x) for x in row.rsplit("   ", 1)[1].split("/")) for row in rows]


def test_the_csv_the_json_and_the_table_give_every_student_the_same_total():
    students = [
        StudentResult("ann", "ann", [_notebook("ex2", {"ex2-a", "ex2-b"}), _notebook("ex5", {"ex5-a"})]),
        StudentResult("bob", "bob", [_notebook("ex2", {p.key for p in key.parts_of("ex2")})]),
        StudentResult("cy", "cy", []),
    ]
    rows = list(csv.DictReader(grader.gradebook_csv(students).splitlines()))
    report = grader.report_json(students)
    table = _table_totals(grader.format_table(students))
    cols = [c for c in rows[0] if c not in ("student", "total", "max")]
    for row, entry, (marks, max_marks), s in zip(rows, report["students"], table, students):
        assert int(row["total"]) == entry["marks"] == marks == s.marks
        assert int(row["total"]) == sum(int(row[c]) for c in cols)  # the total is the row's parts
        assert int(row["total"]) <= int(row["max"]) and entry["marks"] <= entry["max_marks"] == max_marks
    assert [int(r["total"]) for r in rows] == [3, 8, 0]  # 2 + 1, all eight of ex2, nothing
    assert int(rows[0]["max"]) == 8 + len(key.parts_of("ex5"))  # the class's maximum


def test_a_part_graded_twice_is_never_added_up_in_the_gradebook():
    # the grader never builds this (one notebook per exercise); if it did, the row says so
    twice = StudentResult("dup", "dup", [_notebook("ex2", {"ex2-a"}), _notebook("ex2", {"ex2-a"})])
    (row,) = list(csv.reader(grader.gradebook_csv([twice]).splitlines()))[1:]
    assert row[-1] == "row failed (ValueError)" and row[-3] == "0"


# =========================================================================== names


@pytest.mark.parametrize(
    "raw, escaped",
    [
        ("\x1b[2J\x1b[Hann", "\\x1b[2J\\x1b[Hann"),  # clear the screen, cursor home
        ("bob\nfake   8/8", "bob\\nfake   8/8"),  # a row of its own
        ("cy\r", "cy\\r"),
        ("\u202eevil.md", "\\u202eevil.md"),  # right-to-left override
        ("a\u2066b\u2069\u200bc\u200fd", "a\\u2066b\\u2069\\u200bc\\u200fd"),  # isolates, zero-width, RLM
        ("del\x7f c1\x85\x9b", "del\\x7f c1\\x85\\x9b"),  # DEL and the C1 controls (CSI is \x9b)
        ("line\u2028sep", "line\\u2028sep"),
        ("Zoë 日本 Ünïcödé ok", "Zoë 日本 Ünïcödé ok"),  # letters of any script are left as they are
    ],
)
def test_a_terminal_gets_every_character_it_would_act_on_escaped(raw, escaped):
    assert for_terminal(raw) == escaped


def test_undecodable_bytes_of_a_file_name_become_escapes():
    assert shown(b"j_bad\xff".decode("utf-8", "surrogateescape")) == "j_bad\\xff"


NASTY = "\x1b[2J\x1b[31mann\u202e\nfake,8,8"


def test_the_table_and_the_terminal_gradebook_escape_names_and_the_files_keep_them():
    nasty = StudentResult(NASTY, f"sub/{NASTY}", [_notebook("ex2", {"ex2-a"})])
    nasty.notebooks[0].parts[1].message = "a cell of this part raised OSError: \x1b]0;pwned\x07"
    table = grader.format_table([nasty])
    terminal = grader.gradebook_csv([nasty], terminal=True)
    for shown_text in (table, terminal):
        assert "\x1b" not in shown_text and "\u202e" not in shown_text and "\x07" not in shown_text
    assert table.splitlines()[0].startswith("\\x1b[2J\\x1b[31mann\\u202e\\nfake,8,8   (")
    assert len(terminal.splitlines()) == 2  # the header and one row: the newline drew nothing
    rows = list(csv.reader(grader.gradebook_csv([nasty]).splitlines(keepends=True)))
    assert rows[1][0] == NASTY  # the file keeps the real name, quoted
    text = json.dumps(grader.report_json([nasty]))
    assert "\x1b" not in text and json.loads(text)["students"][0]["student"] == NASTY


# =========================================================================== the grader's own reading


def test_a_line_longer_than_any_event_is_dropped_as_it_arrives():
    lines = grader._Lines(max_bytes=10)
    assert lines.feed(b"short\nlo") == [b"short"]
    assert lines.feed(b"ng" * 20) == []  # 42 bytes and counting: dropped, not kept
    assert len(lines.partial) <= 10
    assert lines.feed(b"still\nnext\n") == [b"next"]  # the rest of the long line is dropped too


def test_a_full_scratch_space_and_a_file_too_large_are_named_with_their_limits():
    assert "256 MiB, is full" in grader._explained("OSError: [Errno 28] No space left on device: 'f3'")
    assert "at most 64 MiB" in grader._explained("OSError: [Errno 27] File too large")
    assert grader._explained("ZeroDivisionError: division by zero") == "ZeroDivisionError: division by zero"
