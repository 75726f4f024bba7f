"""The grader of the exercises: one student's notebooks, or a whole class.

Three processes, and the key lives in only one kind of them:

* the **kernel** runs the student's cells and, after each part's answer cell, an injected cell
  that calls :func:`roofline_lib.observer.publish`: it reads the part's names and calls the
  student's functions on probe inputs drawn when grading starts. The kernel imports a scratch
  copy of ``roofline_lib`` without the key modules; nothing it can reach holds a reference
  value, a probe's expected result or a letter;
* the **worker** (``roofline_lib.grading.worker``), one per notebook, starts that kernel and
  streams what the injected cells published; it judges nothing;
* the **grader** (this module, in the process that runs ``roofline grade``) draws the probes,
  judges every observation against ``roofline_lib.grading.key`` in its own process, and writes
  the reports, atomically, after the last kernel is dead.

A student earns each exercise's marks at most once: of the files that name an exercise, one is
graded (:mod:`.notebooks`: the ``.md`` of a jupytext pair; more than one otherwise grades none
and names them), so no total passes its maximum and the CSV, the JSON and the table agree.
Names a student chose reach the terminal escaped (:mod:`.names`); the files keep them. The
grader copies each submission (:func:`snapshot`) but parses none: :mod:`.reader` does, in a
child, under the notebook's time and memory limits.

Practice mode is the same judge in another process: ``python -m roofline_lib.grading
--practice`` serves the exercises' check cells (``observer.check``) line by line. See the
README's "Grading" section for what each mode shows and for the threat model.
"""

from __future__ import annotations

import compileall
import contextlib
import csv
import hmac
import io
import json
import os
import random
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Sequence

from ..core.formatting import to_unit
from . import key, leases, reader, sandbox
from .names import for_terminal
from .names import shown as _shown
from .notebooks import Clash, exercise_of, one_per_exercise
from .notebooks import is_candidate as _is_candidate
from .worker import MAX_OBSERVATION_BYTES, descendants, harden, kill_tree, sign

__all__ = [
    "PartResult",
    "NotebookResult",
    "StudentResult",
    "GradeError",
    "grade_paths",
    "grade_submissions",
    "gradebook_csv",
    "report_json",
    "format_table",
    "run_grade",
    "practice_server",
    "EXIT_OK",
    "EXIT_WRONG",
    "EXIT_USAGE",
    "DEFAULT_TIME_LIMIT_S",
]

EXIT_OK, EXIT_WRONG, EXIT_USAGE = 0, 1, 2
DEFAULT_TIME_LIMIT_S = 180  # one notebook, start of its kernel to its last cell
_MAX_COPY_BYTES = 50e6  # a submission folder larger than this is not copied whole
_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the roofline_lib this grader runs: hidden in every sandbox
_WORKER_SCRIPT = "roofline_grading_worker.py"  # the worker, copied beside the package copy it imports
NOT_ISOLATED = (
    "GRADES NOT ISOLATED: graded with --unsandboxed; a student's code could read the key or change others' grades"
)


class _Supervisor:
    """What the grader is running, so that SIGTERM or SIGINT can stop it and the reports still land."""

    def __init__(self):
        self.lock = threading.Lock()
        self.running: set[subprocess.Popen] = set()
        self.stopped = threading.Event()
        self.signal_name = ""

    def stop(self, signum, frame=None) -> None:
        self.signal_name = signal.Signals(signum).name
        self.stopped.set()
        with self.lock:
            running = list(self.running)
        for proc in running:
            kill_tree(proc.pid, include_root=True)


_SUPERVISOR = _Supervisor()


class GradeError(Exception):
    """A usage problem found before grading: reported as one line, exit code 2."""


# ============================================================================ results


@dataclass
class PartResult:
    part: str
    title: str
    status: str  # correct, wrong, error, not attempted, not graded
    marks: int
    max_marks: int
    message: str = ""


class _Totals:
    """``marks`` and ``max_marks`` summed over the results a result is made of (named by ``_scored``)."""

    _scored = ""

    @property
    def marks(self) -> int:
        return sum(r.marks for r in getattr(self, self._scored))

    @property
    def max_marks(self) -> int:
        return sum(r.max_marks for r in getattr(self, self._scored))


@dataclass
class NotebookResult(_Totals):
    path: str
    exercise: str
    title: str
    parts: list[PartResult]
    problem: str = ""
    seconds: float = 0.0
    _scored = "parts"


@dataclass
class StudentResult(_Totals):
    student: str
    path: str
    notebooks: list[NotebookResult] = field(default_factory=list)
    problem: str = ""
    _scored = "notebooks"


def _part_result(part: key.Part, status: str, message: str = "") -> PartResult:
    return PartResult(part.key, part.title, status, part.marks if status == "correct" else 0, part.marks, message)


# ============================================================================ notebooks


#: The reader server of this grader (:mod:`.reader`): every notebook is read and parsed in a
#: child of it, under the notebook's limits, never in the grader's process.
_READER = reader.Reader()


def _read_notebook(path: Path, time_limit_s: float) -> reader.Read:
    """The code cells of the grader's copy of a notebook, read in a child under the notebook's
    time limit and a sandbox's memory and CPU limits."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    limits = sandbox.limits(int(time_limit_s) + 10)
    return _READER.read(fd, path.suffix, time_limit_s, limits, stopped=_SUPERVISOR.stopped.is_set)


def _read_problem(read: reader.Read, time_limit_s: float) -> str:
    """The report's message for a notebook that was not read (``read.end`` is not "read")."""
    if read.end == "time limit":
        return f"the time limit of {time_limit_s:g} s was reached while the notebook was read, before any cell ran"
    if read.end == "interrupted":
        return f"the grader was stopped ({_SUPERVISOR.signal_name or 'interrupted'}) while the notebook was read"
    return read.problem


def _publish_source(part: key.Part, plan: dict) -> str:
    return (
        "import roofline_lib.observer as _roofline_observer\n"
        f"_roofline_observer.publish({part.key!r}, globals(), {json.dumps(json.dumps(plan))})\n"
    )


def _graded_cells(cells, exercise: key.Exercise, plans: dict[str, dict]):
    """The student's code cells minus every check cell, with a publish cell after each part.

    Returns (cells, part_of_cell, publish_of_part): cells as ``{"source", "injected"}``;
    ``part_of_cell[i]`` is the part a failure in cell i is attributed to.
    """
    parts = key.parts_of(exercise.key)
    kept = [(s, t) for s, t in cells if not any(x.startswith("check-") for x in t)]
    last_answer = {}
    for i, (_, tags) in enumerate(kept):
        for t in tags:
            if t.startswith("answer-") and t[len("answer-") :] in plans:
                last_answer[t[len("answer-") :]] = i
    out, publish_of = [], {}
    for i, (source, _) in enumerate(kept):
        out.append({"source": source, "injected": False})
        for part in parts:
            if last_answer.get(part.key) == i:
                publish_of[part.key] = len(out)
                out.append({"source": _publish_source(part, plans[part.key]), "injected": True})
    for part in parts:
        if part.key not in last_answer:
            publish_of[part.key] = len(out)
            out.append({"source": _publish_source(part, plans[part.key]), "injected": True})
    order = sorted(publish_of.items(), key=lambda kv: kv[1])
    part_of_cell = {}
    for i in range(len(out)):
        part_of_cell[i] = next((p for p, idx in order if idx >= i), order[-1][0])
    return out, part_of_cell, publish_of


# ============================================================================ running one notebook


def _package_copy(root: Path, compiled: Path | None = None) -> Path:
    """A copy of roofline_lib without grading/ (the key, the grader), and the worker script beside it.

    ``compiled`` is such a copy already made, with its bytecode (:func:`_compiled_copy`): it is
    copied as it is. A kernel writes no bytecode, so without it every kernel compiled the whole
    package again before its first import (about 0.4 s of each notebook's time).
    """
    lib = root / "lib"
    if compiled is not None:
        shutil.copytree(compiled, lib)  # copy2: the sources keep the times their bytecode records
        os.chmod(lib, 0o755)
        return lib
    src = Path(__file__).resolve().parents[1]
    dest = lib / "roofline_lib"
    lib.mkdir(mode=0o755)
    shutil.copyfile(Path(__file__).with_name("worker.py"), lib / _WORKER_SCRIPT)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("grading", "__pycache__", "*.pyc"))
    # a stub, so that no other finder supplies the real subpackage instead
    (dest / "grading").mkdir()
    (dest / "grading" / "__init__.py").write_text(
        'raise ImportError("roofline_lib.grading is not available inside a graded kernel")\n'
    )
    return lib


def _compiled_copy(scratch_root: Path) -> Path:
    """One package copy for the whole run, compiled once, that each notebook's copy is made from."""
    (scratch_root / "compiled").mkdir(mode=0o700)
    lib = _package_copy(scratch_root / "compiled")
    compileall.compile_dir(str(lib / "roofline_lib"), quiet=1, workers=1)
    return lib


# Run by the kernel before the first cell: an editable install's finder would otherwise resolve
# ``roofline_lib.<anything>`` to the repository, key modules included, whatever the package copy
# on PYTHONPATH holds. The names are deleted so that the student's namespace stays clean.
_KERNEL_STARTUP = """\
import sys as _roofline_sys
_roofline_sys.meta_path[:] = [f for f in _roofline_sys.meta_path
                              if not str(getattr(f, "__module__", "")).startswith("__editable__")]
_roofline_name = None
for _roofline_name in [m for m in _roofline_sys.modules if m.startswith("__editable__")]:
    del _roofline_sys.modules[_roofline_name]
del _roofline_sys, _roofline_name
"""


def _scrubbed_env(scratch: Path, pythonpath: str, seen_as: str) -> dict:
    """The kernel's environment; ``scratch`` is the host folder, ``seen_as`` its path for the kernel."""
    for sub in ("", ".ipython", ".jupyter", "runtime", "data", "mpl", "tmp"):
        (scratch / "home" / sub).mkdir(parents=True, exist_ok=True)
    startup = scratch / "home" / ".ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-roofline-grading.py").write_text(_KERNEL_STARTUP)
    home = Path(seen_as) / "home"
    bindir = str(Path(sys.executable).parent)
    return {
        "PATH": os.pathsep.join([bindir, os.defpath]),
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONPATH": pythonpath,
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "IPYTHONDIR": str(home / ".ipython"),
        "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "MPLCONFIGDIR": str(home / "mpl"),
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "ROOFLINE_GRADING": "1",
    }


class SubmissionRefused(Exception):
    """A submission that is not read: a link, a special file, a path out of its folder."""


def _copy_regular(path: Path, dest: Path, limit: float) -> int:
    """Copy a regular file, opened without following a link, to the new file ``dest``, a MiB at a
    time; its size. Refuses anything else, and a file that is or grows past ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise SubmissionRefused(f"{_shown(path.name)} could not be opened ({type(err).__name__})") from None
    too_large = SubmissionRefused(f"{_shown(path.name)} is larger than {to_unit(limit, 'MB'):g} MB")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SubmissionRefused(f"{_shown(path.name)} is not a regular file")
        if info.st_size > limit:
            raise too_large
        dest.parent.mkdir(parents=True, exist_ok=True)
        copied = 0
        with open(dest, "xb") as out:
            while chunk := os.read(fd, 1 << 20):
                copied += len(chunk)
                if copied > limit:
                    raise too_large
                out.write(chunk)
        return copied
    finally:
        os.close(fd)


def snapshot(entry: Path, dest: Path, notebooks_only: Sequence[Path] = ()) -> dict[str, int]:
    """A submission copied into the folder ``dest`` (made, mode 0700) before any kernel starts:
    ``{relative path: bytes copied}``. The grader holds no file's contents: each is copied a MiB
    at a time, and a notebook is read and parsed later, by :mod:`.reader`.

    ``entry`` is a student's folder or a notebook. Every entry is examined with ``lstat`` and
    opened with ``O_NOFOLLOW``: a symbolic link (to a file or a folder), a special file (a FIFO,
    a socket, a device) or anything else that is not a regular file or a folder refuses the
    whole submission (SubmissionRefused, with a message that names the entry and never holds a
    file's contents), so nothing outside the submission is read. Files beyond 50 MB in all are
    left out, notebooks first in. What was copied of a refused submission stays in ``dest``.
    """
    info = os.lstat(entry)
    if stat.S_ISLNK(info.st_mode):
        raise SubmissionRefused(f"{_shown(entry.name)} is a symbolic link; hand in the files themselves")
    dest.mkdir(mode=0o700, parents=True)
    if stat.S_ISREG(info.st_mode):
        return {entry.name: _copy_regular(entry, dest / entry.name, _MAX_COPY_BYTES)}
    if not stat.S_ISDIR(info.st_mode):
        raise SubmissionRefused(f"{_shown(entry.name)} is not a regular file or a folder")
    found: list[tuple[str, Path]] = []
    todo = [(entry, "")]
    while todo:
        folder, prefix = todo.pop()
        with os.scandir(folder) as it:
            children = sorted(it, key=lambda d: d.name)
        for child in children:
            rel = f"{prefix}{child.name}"
            mode = os.lstat(child.path).st_mode
            if stat.S_ISLNK(mode):
                raise SubmissionRefused(f"{_shown(rel)} is a symbolic link; hand in the files themselves")
            if stat.S_ISDIR(mode):
                todo.append((Path(child.path), rel + "/"))
            elif stat.S_ISREG(mode):
                found.append((rel, Path(child.path)))
            else:
                raise SubmissionRefused(f"{_shown(rel)} is not a regular file or a folder")
    wanted = {p.name for p in notebooks_only}
    found.sort(key=lambda rp: (rp[1].name not in wanted or "/" in rp[0], rp[0]))
    files, total = {}, 0
    for rel, path in found:
        size = os.lstat(path).st_size
        if total + size > _MAX_COPY_BYTES and files:
            break
        files[rel] = _copy_regular(path, dest / rel, _MAX_COPY_BYTES)
        total += files[rel]
    return files


def _copy_snapshot(files: dict[str, int], seed: Path, dest: Path) -> None:
    """The files of a snapshot (:func:`snapshot`), from its folder ``seed`` into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(seed / rel, target)


def _own_scratch(scratch: Path, uid: int) -> None:
    """Hand the scratch folder to the sandbox's user (a root grader only)."""
    for path in [scratch, *scratch.rglob("*")]:
        if not path.is_symlink():
            os.chown(path, uid, uid)


def _run_worker(cells, scratch: Path, time_limit_s: float, sandboxed: bool, seconds_left: float | None = None):
    """Run the cells in a worker; returns (events by cell index, end, the cell it stopped at).

    The worker has ``seconds_left`` of the notebook's ``time_limit_s`` (what reading it left).

    ``end`` names how it stopped ("finished", "died", "time limit", "worker gone", "interrupted").
    ``scratch`` holds ``lib`` (the package copy, the worker script) and ``rw`` (the submission
    in ``work``, the kernel's home). Sandboxed, the worker and its kernel run in bubblewrap as a
    user of their own (a root grader); otherwise they run here, as the grader's user.
    """
    rw = scratch / "rw"
    lib_seen = sandbox.LIB if sandboxed else str(scratch / "lib")
    rw_seen = sandbox.SCRATCH if sandboxed else str(rw)
    kernel_env = _scrubbed_env(rw, lib_seen, rw_seen)
    secret = secrets.token_hex(32)
    limits = sandbox.limits(int(time_limit_s) + 10) if sandboxed else {}
    job = {"cells": cells, "kernel_env": kernel_env, "secret": secret, "limits": limits}
    if sandboxed:  # the worker copies the seed into the sandbox's own scratch space
        job["scratch"] = {"seed": sandbox.SEED, "path": sandbox.SCRATCH}
    with _sandbox_user(sandboxed) as uid, sandbox.filter_pipe() if sandboxed else _nothing() as filter_fd:
        worker = [sys.executable, f"{lib_seen}/{_WORKER_SCRIPT}"]
        argv, start_as = _worker_command(worker, scratch, sandboxed, uid, filter_fd)
        proc = _start_worker(argv, rw / "work", kernel_env, start_as)
        if proc is None:
            return _Events(end="interrupted")
        deadline = time.monotonic() + (time_limit_s if seconds_left is None else seconds_left)
        _send_job(proc, json.dumps(job))
        try:
            events = _read_events(proc, secret, deadline)
        finally:
            _stop_worker(proc)  # every process of the uid is gone before its lease ends
    return events


def _nothing():
    return contextlib.nullcontext(None)


def _sandbox_user(sandboxed: bool):
    """A lease on a uid of the sandbox's own (a root grader's sandbox), or a lease on nothing (None)."""
    if sandboxed and sandbox.mode() in ("root", "user"):
        return leases.sandbox_uid()
    return _nothing()


def _worker_command(
    argv: list[str], scratch: Path, sandboxed: bool, uid: int | None, filter_fd: int | None = None
) -> tuple[list[str], dict]:
    """The worker's command line, in bubblewrap when ``sandboxed``, and the Popen arguments that
    start it as the sandbox's user ``uid`` (with the system-call filter's descriptor). Called
    after the kernel's home is made: a root grader hands the seed folder over to that user."""
    lib, rw = scratch / "lib", scratch / "rw"
    if not sandboxed:
        return argv, {}
    if uid is not None:
        _own_scratch(rw, uid)
        os.chmod(scratch, 0o755)
    hidden = [str(_PACKAGE_DIR)]  # the installed roofline_lib: the key with it
    popen = {**sandbox.start_as(uid), "pass_fds": () if filter_fd is None else (filter_fd,)}
    return sandbox.command(argv, rw, lib, uid=uid, hidden=hidden, filter_fd=filter_fd), popen


def _start_worker(argv, cwd: Path, env: dict, start_as: dict) -> subprocess.Popen | None:
    """The worker's process, known to the supervisor; None when the grader is already stopping."""
    with _SUPERVISOR.lock:
        if _SUPERVISOR.stopped.is_set():
            return None
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            start_new_session=True,
            **start_as,
        )
        _SUPERVISOR.running.add(proc)
    return proc


def _send_job(proc: subprocess.Popen, job: str) -> None:
    """The job on the worker's stdin, closed; a worker already gone is found when reading."""
    try:
        proc.stdin.write(job.encode())
        proc.stdin.close()
    except OSError:
        pass


@dataclass
class _Events:
    """What one worker published: each cell's event by index, the cell begun last, how it ended."""

    cells: dict = field(default_factory=dict)
    begun: int = -1
    died_at: int | None = None
    end: str = "finished"
    finished: bool = False  # the worker said it was done ("finished" or "died")
    full_at: int | None = None  # the cell during which the sandbox's scratch space filled up
    why: str = ""  # why the kernel could not start, when it could not

    def take(self, event: dict) -> None:
        kind = event.get("event")
        if kind == "begin" and isinstance(event.get("index"), int):
            self.begun = event["index"]
        elif kind == "cell" and isinstance(event.get("index"), int):
            self.cells[event["index"]] = event
        elif kind == "full" and isinstance(event.get("index"), int) and self.full_at is None:
            self.full_at = event["index"]
        elif kind == "died":
            self.end, self.died_at = "died", event.get("index", self.begun)
            self.why = str(event.get("why", ""))[:200]
            self.finished = True
        elif kind == "finished":
            self.finished = True

    def outcome(self):
        """(events by cell index, end, the cell it stopped at), once the worker is dead."""
        end = self.end
        if end == "finished" and not self.finished:
            end = "worker gone"
        if _SUPERVISOR.stopped.is_set() and end != "finished":
            end = "interrupted"  # the supervisor killed it
        return self.cells, end, (self.died_at if self.died_at is not None else self.begun)


def _read_events(proc: subprocess.Popen, secret: str, deadline: float) -> _Events:
    """The worker's signed events until it is done, the deadline passes or the grader is stopped."""
    events = _Events()
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    lines = _Lines()
    try:
        while not events.finished:
            remaining = deadline - time.monotonic()
            if _SUPERVISOR.stopped.is_set():
                events.end = "interrupted"
                break
            if remaining <= 0:
                events.end = "time limit"
                break
            if not sel.select(timeout=min(remaining, 1.0)):
                continue
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                events.end = "worker gone"
                break
            for event in _signed_events(lines.feed(chunk), secret):
                events.take(event)
    finally:
        sel.close()
    return events


#: The longest line a worker writes: a cell's event with its observations, each at most
#: ``worker.MAX_OBSERVATION_BYTES``. A longer line is dropped as it arrives, never held whole.
_MAX_LINE_BYTES = 4 * MAX_OBSERVATION_BYTES


class _Lines:
    """The complete lines of a stream read in chunks; a line over ``_MAX_LINE_BYTES`` is dropped."""

    def __init__(self, max_bytes: int = _MAX_LINE_BYTES):
        self.max_bytes = max_bytes
        self.partial = bytearray()
        self.dropping = False  # inside a line that is too long, until its end

    def feed(self, chunk: bytes) -> list[bytes]:
        complete = []
        while chunk:
            end = chunk.find(b"\n")
            piece, chunk = (chunk, b"") if end < 0 else (chunk[:end], chunk[end + 1 :])
            if not self.dropping:
                self.partial += piece
                self.dropping = len(self.partial) > self.max_bytes
                if self.dropping:
                    self.partial.clear()
            if end >= 0:
                if not self.dropping:
                    complete.append(bytes(self.partial))
                self.partial.clear()
                self.dropping = False
        return complete


def _signed_events(lines: list[bytes], secret: str) -> list[dict]:
    """The events of the complete ``lines`` that our worker signed."""
    events = []
    for line in lines:
        mac, _, text = line.decode("utf-8", "replace").partition(" ")
        if not hmac.compare_digest(mac, sign(secret, text)):
            continue  # not written by our worker
        try:
            event = json.loads(text)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _stop_worker(proc: subprocess.Popen) -> None:
    """The worker's whole tree killed, as the host sees it (a pid the sandbox reports means nothing here)."""
    kill_tree(proc.pid, include_root=True)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    with _SUPERVISOR.lock:
        _SUPERVISOR.running.discard(proc)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass
    proc.stdout.close()


def _opaque(probes: list, rng: random.Random) -> list:
    """The probes with ids that say nothing (not "v0" or "r1") and in a shuffled order."""
    ids = random.Random(rng.getrandbits(64))
    probes = [replace(p, id=f"p{ids.getrandbits(40):010x}") for p in probes]
    ids.shuffle(probes)
    return probes


@dataclass(frozen=True)
class _Submission:
    """A student's snapshot: the folder it was copied into and the files it holds."""

    seed: Path
    files: dict[str, int]


def _grade_notebook(
    path: Path,
    submission: _Submission,
    rng: random.Random,
    time_limit_s: float,
    scratch_root: Path,
    label: str,
    sandboxed: bool,
) -> NotebookResult:
    """One notebook read (:func:`_read_notebook`), run in its worker and judged, in ``time_limit_s`` in all."""
    started = time.monotonic()
    exercise = exercise_of(path)
    parts = key.parts_of(exercise.key)
    read = _read_notebook(submission.seed / path.name, time_limit_s)
    if read.end != "read":
        problem = _read_problem(read, time_limit_s)  # never the notebook's text: it may quote a file
        results = [_part_result(p, "not graded", problem) for p in parts]
        return NotebookResult(_shown(path), exercise.key, exercise.title, results, problem, round(read.seconds, 2))
    probes = {p.key: _opaque(key.draw_probes(p, rng), rng) for p in parts}
    plans = {p.key: key.plan_of(p, probes[p.key]) for p in parts}
    graded, part_of_cell, publish_of = _graded_cells(read.cells, exercise, plans)
    seconds = (time_limit_s, time_limit_s - read.seconds)  # reading took some of the notebook's time
    ran = _run_in_scratch(graded, submission, scratch_root, label, seconds, sandboxed)
    events, end, stopped_at = ran.outcome()
    problem = _stop_problem(end, stopped_at, part_of_cell, parts[0].key, time_limit_s)
    if end == "died" and stopped_at == -1 and ran.why:
        problem = f"the notebook's kernel could not start ({ran.why})"
    if ran.full_at is not None:
        full = _FULL.format(mib=sandbox.SCRATCH_BYTES / 2**20, part=part_of_cell.get(ran.full_at, parts[0].key))
        problem = f"{problem}; {full}" if problem else full
    run = _Run(graded, events, part_of_cell, publish_of)
    results = [_judged(part, run, probes[part.key], problem) for part in parts]
    return NotebookResult(
        _shown(path), exercise.key, exercise.title, results, problem, round(time.monotonic() - started, 2)
    )


def _run_in_scratch(graded, submission: _Submission, scratch_root: Path, label: str, seconds, sandboxed: bool):
    """:func:`_run_worker` in a scratch folder of its own (the package copy, the submission), removed after.

    ``seconds`` is (the notebook's time limit, the seconds of it left for the worker).
    """
    scratch = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=scratch_root))
    compiled = scratch_root / "compiled" / "lib"
    try:
        _package_copy(scratch, compiled if compiled.is_dir() else None)
        _copy_snapshot(submission.files, submission.seed, scratch / "rw" / "work")
        return _run_worker(graded, scratch, seconds[0], sandboxed, seconds_left=seconds[1])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


_FULL = "the notebook wrote more than its {mib:g} MiB of scratch space (each notebook's own) during part {part}"


def _stop_problem(end: str, stopped_at: int, part_of_cell: dict, first_part: str, time_limit_s: float) -> str:
    """What stopped the notebook before its last cell, and in which part; "" when it finished."""
    where = part_of_cell.get(max(stopped_at, 0), first_part)
    if end == "died":
        return f"the kernel died during part {part_of_cell.get(stopped_at, first_part)}"
    if end == "time limit":
        return f"the time limit of {time_limit_s:g} s was reached during part {where}"
    if end == "worker gone":
        return f"the grading worker stopped (was it killed?) during part {where}"
    if end == "interrupted":
        return f"the grader was stopped ({_SUPERVISOR.signal_name or 'interrupted'}) during part {where}"
    return ""


@dataclass
class _Run:
    """One notebook's graded run: its cells, what each published, and which part each cell is."""

    cells: list[dict]
    events: dict[int, dict]
    part_of_cell: dict[int, str]
    publish_of: dict[str, int]


def _judged(part: key.Part, run: _Run, probes: list, problem: str) -> PartResult:
    """One part's result, from what its publish cell observed."""
    event = run.events.get(run.publish_of[part.key])
    if event is None:
        return _part_result(part, "not graded", problem or "the check did not run.")
    observations = event.get("observations") or []
    if not observations:
        return _part_result(part, "error", "the check published no result: was the observer replaced?")
    if len(observations) != 1:
        return _part_result(part, "error", "the check published more than one result.")
    verdict = key.judge(part, observations[0], probes)
    message = verdict.submit
    answer_errors = _answer_errors(part, run)
    if answer_errors and verdict.status != "correct":
        message = f"a cell of this part raised {answer_errors[0]}. {message}".strip()
    return _part_result(part, verdict.status, message)


def _answer_errors(part: key.Part, run: _Run) -> list[str]:
    """The errors the student's own cells of ``part`` raised, before its publish cell, explained."""
    return [
        _explained(run.events[i].get("error"))
        for i in range(run.publish_of[part.key])
        if run.part_of_cell.get(i) == part.key
        and i in run.events
        and run.events[i].get("error")
        and not run.cells[i]["injected"]
    ]


def _explained(error) -> str:
    """A cell's error, with the sandbox's limit named where the error is one of them."""
    error = str(error)
    if "[Errno 28]" in error:  # ENOSPC
        return f"{error} (the notebook's scratch space, {sandbox.SCRATCH_BYTES / 2**20:g} MiB, is full)"
    if "[Errno 27]" in error:  # EFBIG, past RLIMIT_FSIZE
        return f"{error} (a file may be at most {sandbox.limits(0)['file_size_bytes'] / 2**20:g} MiB)"
    return error


# ============================================================================ a class


def _student_notebooks(entry: Path) -> list[Path]:
    """Every file of a submission that names an exercise (one per exercise is chosen later)."""
    if entry.is_symlink():  # refused when it is snapshotted, with a message
        return [entry] if exercise_of(entry) else []
    if entry.is_dir():
        return sorted(p for p in entry.iterdir() if _is_candidate(p) and exercise_of(p))
    return [entry] if _is_candidate(entry) and exercise_of(entry) else []


def _not_graded(nb: Path, problem: str) -> NotebookResult:
    ex = exercise_of(nb)
    return NotebookResult(
        _shown(nb), ex.key, ex.title, [_part_result(p, "not graded", problem) for p in key.parts_of(ex.key)], problem
    )


def _clashed(clash: Clash) -> NotebookResult:
    """The result of an exercise handed in more than once: every part not graded, the files named."""
    ex = key.EXERCISES[clash.exercise]
    problem = clash.message(_shown)
    parts = [_part_result(p, "not graded", problem) for p in key.parts_of(ex.key)]
    return NotebookResult(", ".join(_shown(f) for f in clash.files), ex.key, ex.title, parts, problem)


def _in_exercise_order(notebooks: list[NotebookResult]) -> list[NotebookResult]:
    return sorted(notebooks, key=lambda n: (len(n.exercise), n.exercise))


def _snapshots(students, seeds: Path, rng_master: random.Random) -> tuple[list[tuple], dict[int, str]]:
    """Every submission copied into ``seeds`` before any kernel starts (:func:`snapshot`).

    Returns (one job per notebook: (student's index, notebook, its :class:`_Submission`, its
    random draws), the refusal of each submission refused, by student's index).
    """
    seeds.mkdir(mode=0o700)
    jobs, refused = [], {}
    for s_index, (_, root, notebooks) in enumerate(students):
        seed = seeds / f"s{s_index:03d}"
        try:
            files = snapshot(root, seed, notebooks) if notebooks or root.is_symlink() else {}
        except (SubmissionRefused, OSError) as err:
            message = str(err) if isinstance(err, SubmissionRefused) else f"could not be read ({type(err).__name__})"
            refused[s_index] = f"submission refused: {message}"
            shutil.rmtree(seed, ignore_errors=True)
            continue
        for nb in notebooks:
            jobs.append((s_index, nb, _Submission(seed, files), random.Random(rng_master.getrandbits(64))))
    return jobs, refused


def _grade_all(
    students: list[tuple[str, Path, list[Path]]],
    *,
    workers: int,
    time_limit_s: float,
    seed: int,
    sandboxed: bool,
) -> list[StudentResult]:
    rng_master = random.Random(seed)
    chosen = [one_per_exercise(candidates) for _, _, candidates in students]
    students = [(name, root, notebooks) for (name, root, _), (notebooks, _) in zip(students, chosen)]
    _READER.start()  # before the processes are counted: it serves the next class too
    before = set(descendants(os.getpid()))
    results: dict[tuple[int, str], NotebookResult] = {}
    with leases.scratch_folder() as scratch_root:  # a killed grader's folders are removed first
        os.chmod(scratch_root, 0o711)  # a sandbox started as its own user passes through, lists nothing
        jobs, refused = _snapshots(students, scratch_root / "seeds", rng_master)
        if jobs:
            _compiled_copy(scratch_root)  # no key in it: the same files every notebook's copy holds

        def one(job):
            s_index, nb, submission, rng = job
            label = f"s{s_index:03d}-{exercise_of(nb).key}"
            if _SUPERVISOR.stopped.is_set():
                return job, _not_graded(nb, f"not graded: the grader was stopped ({_SUPERVISOR.signal_name})")
            if nb.name not in submission.files:
                return job, _not_graded(nb, "not graded: the notebook was left out (the submission is over 50 MB)")
            try:
                return job, _grade_notebook(nb, submission, rng, time_limit_s, scratch_root, label, sandboxed)
            except Exception as err:  # noqa: BLE001 - one notebook never stops the class
                return job, _not_graded(nb, f"the grader could not run this notebook ({type(err).__name__})")

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for job, result in pool.map(one, jobs):
                results[(job[0], str(job[1]))] = result
        for pid in descendants(os.getpid()):  # anything a kernel left behind, before any report
            if pid not in before:
                kill_tree(pid, include_root=True)
    out = []
    for s_index, (name, root, notebooks) in enumerate(students):
        clashes = [_clashed(c) for c in chosen[s_index][1]]
        if s_index in refused:
            graded = [_not_graded(nb, refused[s_index]) for nb in notebooks]
        else:
            graded = [results[(s_index, str(nb))] for nb in notebooks]
        student = StudentResult(name, _shown(root), _in_exercise_order(graded + clashes))
        student.problem = refused.get(s_index, "")
        if not notebooks and not clashes and not student.problem:
            student.problem = "no exercise notebook in this submission (expected exN_*.md or .ipynb)"
        out.append(student)
    return out


def _default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover
        return max(1, os.cpu_count() or 1)


def isolation(unsandboxed: bool = False, *, practice: bool = False) -> tuple[bool, str]:
    """(sandboxed, what the reports say): a class is never graded outside the sandbox silently.

    A class (``practice=False``) without a sandbox raises GradeError saying why, unless
    ``unsandboxed``; one student's own notebooks (``roofline grade exercises/*.md``) are graded
    without one where none can start, and the report says so.
    """
    if unsandboxed:
        return False, NOT_ISOLATED
    why = sandbox.why_unavailable()
    if not why:
        return True, "sandboxed: each notebook ran in bubblewrap, as a user of its own"
    if practice:
        return False, f"not isolated (your own notebooks; no sandbox here: {why})"
    raise GradeError(
        f"cannot grade a class in a sandbox: {why}. Fix that (on Debian: `make install-sandbox` as root), "
        "or pass --unsandboxed to grade without isolation; every report then says the grades are not isolated"
    )


def grade_paths(
    paths: Sequence[str | os.PathLike],
    *,
    workers: int | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    seed: int | None = None,
    unsandboxed: bool = False,
) -> StudentResult:
    """Grade one student's exercise notebooks (``exercises/*.md``); usage errors raise GradeError."""
    files = [Path(p) for p in paths]
    _check_inputs(files)
    sandboxed, _ = isolation(unsandboxed, practice=True)
    seed = secrets.randbits(63) if seed is None else seed
    harden()
    chosen, clashes = one_per_exercise(files)  # across folders too: one student, one notebook per exercise
    students = []
    for folder in sorted({f.parent for f in chosen}, key=str):  # each folder read as one submission
        students.append(("you", folder, [f for f in chosen if f.parent == folder]))
    graded = _grade_all(
        students, workers=workers or _default_workers(), time_limit_s=time_limit_s, seed=seed, sandboxed=sandboxed
    )
    notebooks = [n for s in graded for n in s.notebooks] + [_clashed(c) for c in clashes]
    result = StudentResult("you", ", ".join(_shown(f) for f in files), _in_exercise_order(notebooks))
    result.problem = "; ".join(s.problem for s in graded if s.problem)
    return result


def _check_inputs(files: list[Path]) -> None:
    if not files:
        raise GradeError("give one or more exercise notebooks, e.g. exercises/*.md, or --submissions DIR")
    for f in files:
        if f.is_dir() and not f.is_symlink():
            raise GradeError(
                f"{f} is a folder, not an exercise notebook; to grade a class of submissions use --submissions DIR"
            )
        if not f.is_file() and not f.is_symlink():
            raise GradeError(f"no such file: {f}")
        if exercise_of(f) is None or f.suffix not in (".md", ".ipynb"):
            known = ", ".join(f"{e.stem}.md" for e in key.EXERCISES.values())
            raise GradeError(f"{f} is not an exercise notebook (expected one of {known}, or .ipynb)")


def _class_entries(root: Path) -> list[Path]:
    entries = []
    for p in sorted(root.iterdir()):
        if p.name.startswith("."):
            continue
        if p.is_symlink() or p.is_dir() or _is_candidate(p):
            entries.append(p)
    return entries


def grade_submissions(
    directory: str | os.PathLike,
    *,
    workers: int | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    seed: int | None = None,
    unsandboxed: bool = False,
) -> list[StudentResult]:
    """Grade a class: every folder or notebook directly in ``directory`` is one student.

    Each notebook runs in a sandbox; where none can start this raises GradeError, unless
    ``unsandboxed`` (then every report says the grades are not isolated).
    """
    root = Path(directory)
    if not root.is_dir():
        raise GradeError(f"--submissions {root}: not a folder of submissions")
    entries = _class_entries(root)
    students = []
    for e in entries:
        notebooks = _student_notebooks(e)
        if e.is_symlink() or notebooks or e.is_dir():
            name = e.stem if (e.is_file() and not e.is_symlink()) or e.suffix in (".md", ".ipynb") else e.name
            students.append((_shown(name), e, notebooks))
    if not any(nbs for _, _, nbs in students):
        raise GradeError(
            f"--submissions {root}: no submission holds an exercise notebook "
            "(expected one folder or notebook per student, named like exN_*.md)"
        )
    sandboxed, _ = isolation(unsandboxed)
    seed = secrets.randbits(63) if seed is None else seed
    harden()
    return _grade_all(
        students, workers=workers or _default_workers(), time_limit_s=time_limit_s, seed=seed, sandboxed=sandboxed
    )


# ============================================================================ reports


def _columns(students: Sequence[StudentResult]) -> list[str]:
    exercises = sorted({n.exercise for s in students for n in s.notebooks})
    return [p.key for ex in exercises for p in key.parts_of(ex)]


def _cell(text) -> str:
    """A CSV cell a spreadsheet shows as text: one starting with = + - @, a tab or CR gets a ' first."""
    text = _shown(str(text)) if isinstance(text, str) else str(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def gradebook_csv(students: Sequence[StudentResult], *, note: str = "", terminal: bool = False) -> str:
    """One row per student, one column per part (the marks), then total and max.

    ``note`` (the isolation warning of an unsandboxed class) is the first line when given. The
    total is the student's marks, the sum of the row's parts (one notebook per exercise: no part
    is counted twice). ``terminal``: names escaped for a terminal (:func:`.names.for_terminal`);
    a file keeps the real name, quoted.
    """
    cols = _columns(students)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    name = (lambda s: for_terminal(_cell(s))) if terminal else _cell
    if note:
        writer.writerow([_cell(note)])
    writer.writerow(["student", *cols, "total", "max"])
    max_total = sum(key.PARTS[c].marks for c in cols)
    for s in students:
        try:
            marks = _marks_by_part(s)
            writer.writerow([name(s.student), *[marks.get(c, 0) for c in cols], s.marks, max_total])
        except Exception as err:  # noqa: BLE001 - one student's row never stops the others'
            writer.writerow([name(s.student), *[0 for _ in cols], 0, max_total, f"row failed ({type(err).__name__})"])
    return buf.getvalue()


def _marks_by_part(student: StudentResult) -> dict[str, int]:
    """``{part: marks}``; a part that two notebooks hold would be counted twice, so it raises."""
    marks: dict[str, int] = {}
    for n in student.notebooks:
        for p in n.parts:
            if p.part in marks:
                raise ValueError(f"part {p.part} is graded twice for {student.student!r}")
            marks[p.part] = p.marks
    return marks


def report_json(
    students: Sequence[StudentResult],
    *,
    seed: int | None = None,
    time_limit_s: float | None = None,
    isolation: str = "",
    stopped: str = "",
) -> dict:
    report = {
        "seed": seed,  # --seed SEED draws the same probe inputs again
        "time_limit_s": time_limit_s,
        "isolation": isolation,
        "students": [],
    }
    if stopped:
        report["stopped"] = stopped
    for s in students:
        try:
            entry = {
                "student": _shown(s.student),
                "path": _shown(s.path),
                "marks": s.marks,
                "max_marks": s.max_marks,
                "problem": s.problem,
                "notebooks": [
                    {
                        **{k: v for k, v in asdict(n).items() if k != "parts"},
                        "marks": n.marks,
                        "max_marks": n.max_marks,
                        "parts": [asdict(p) for p in n.parts],
                    }
                    for n in s.notebooks
                ],
            }
        except Exception as err:  # noqa: BLE001 - one student's entry never stops the others'
            entry = {"student": _shown(str(s.student)), "problem": f"report entry failed ({type(err).__name__})"}
        report["students"].append(entry)
    return report


def format_table(students: Sequence[StudentResult], *, width: int = 100, detail: bool = True, note: str = "") -> str:
    """The score table, for a terminal: every text a student could have chosen is escaped
    (:func:`.names.for_terminal`), so no name or message can move the cursor or draw a row."""
    lines = [f"*** {note} ***", ""] if note else []
    for s in students:
        lines.append(f"{_shown(s.student)}   ({_shown(s.path)})   {s.marks}/{s.max_marks}")
        if s.problem:
            lines.append(f"    {s.problem}")
        for n in s.notebooks:
            lines.append(f"  {n.exercise:<5} {n.title}   {n.marks}/{n.max_marks}")
            if n.problem:
                lines.extend(textwrap.wrap(n.problem, width, initial_indent=" " * 6, subsequent_indent=" " * 6))
            if not detail:
                continue
            for p in n.parts:
                lines.append(f"    {p.part:<6} {p.title:<44.44} {p.status:<14} {p.marks}/{p.max_marks}")
                if p.message and p.status != "correct":
                    lines.extend(textwrap.wrap(p.message, width, initial_indent=" " * 11, subsequent_indent=" " * 11))
        lines.append("")
    return "\n".join(for_terminal(line) for line in lines).rstrip() + "\n"


def _check_output_path(path: str | None, flag: str) -> Path | None:
    """Refuse an output path that cannot be written, before any grading starts."""
    if path is None:
        return None
    p = Path(path)
    if p.is_dir():
        raise GradeError(f"{flag} {path}: is a folder; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise GradeError(f"{flag} {path}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise GradeError(f"{flag} {path}: the folder {parent} is not writable")
    return p


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _supervised(grade):
    """Run ``grade()`` with SIGTERM and SIGINT stopping the kernels instead of the grader."""
    if threading.current_thread() is not threading.main_thread():
        return grade()
    old = {s: signal.signal(s, _SUPERVISOR.stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        return grade()
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def run_grade(
    paths: Sequence[str] = (),
    *,
    json_path: str | None = None,
    submissions: str | None = None,
    csv_path: str | None = None,
    workers: int | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    seed: int | None = None,
    unsandboxed: bool = False,
) -> int:
    """The ``roofline grade`` command. Exit code 0 full marks, 1 a mark missing, 2 usage.

    Output paths are checked before any notebook runs; reports are written after the last
    kernel is dead, each atomically (a temporary file renamed over the target). SIGTERM or
    SIGINT stops the kernels; the reports are still written, with what was graded, and the
    exit code is 128 + the signal's number.
    """
    try:
        out_json = _check_output_path(json_path, "--json")
        out_csv = _check_output_path(csv_path, "--csv")
        _check_options(paths, submissions, csv_path, workers, time_limit_s)
        seed = secrets.randbits(63) if seed is None else seed
        options = dict(workers=workers, time_limit_s=time_limit_s, seed=seed, unsandboxed=unsandboxed)
        students, note = _graded(paths, submissions, options)
    except GradeError as err:
        print(f"roofline grade: error: {for_terminal(err)}", file=sys.stderr)
        return EXIT_USAGE
    stopped = _SUPERVISOR.signal_name if _SUPERVISOR.stopped.is_set() else ""
    warn = note if not note.startswith("sandboxed") else ""
    _print_results(students, submissions, warn)
    try:
        if out_csv:
            _write_atomically(out_csv, gradebook_csv(students, note=warn))
        if out_json:
            report = report_json(students, seed=seed, time_limit_s=time_limit_s, isolation=note, stopped=stopped)
            _write_atomically(out_json, json.dumps(report, indent=2) + "\n")
    except OSError as err:
        print(f"roofline grade: error: could not write the report: {err}", file=sys.stderr)
        return EXIT_USAGE
    return _exit_code(students, stopped)


def _check_options(paths, submissions, csv_path, workers, time_limit_s) -> None:
    """Refuse a combination of options, or a value, that cannot grade (GradeError)."""
    if submissions and paths:
        raise GradeError("give either notebooks or --submissions DIR, not both")
    if csv_path and not submissions:
        raise GradeError("--csv writes a class gradebook: use it with --submissions DIR")
    if workers is not None and workers < 1:
        raise GradeError(f"--workers must be a whole number of at least 1, got {workers}")
    if not time_limit_s > 0:
        raise GradeError(f"--time-limit must be a positive number of seconds, got {time_limit_s}")


def _graded(paths, submissions, options: dict) -> tuple[list[StudentResult], str]:
    """(the students graded, what the reports say of isolation): a class, or one student's notebooks."""
    if submissions:
        _, note = isolation(options["unsandboxed"])
        return _supervised(lambda: grade_submissions(submissions, **options)), note
    _, note = isolation(options["unsandboxed"], practice=True)
    return _supervised(lambda: [grade_paths(paths, **options)]), note


def _print_results(students, submissions, warn: str) -> None:
    """The score table on stdout (per part for one student), and a class's gradebook after it."""
    text = format_table(students, detail=not submissions, note=warn)
    if submissions:
        text += gradebook_csv(students, note=warn, terminal=True)
    sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace"))
    sys.stdout.flush()


def _exit_code(students, stopped: str) -> int:
    """128 + the signal that stopped the grader; else 0 for full marks with no problem, 1 otherwise."""
    if stopped:
        print(f"roofline grade: stopped by {stopped}; the reports hold what was graded", file=sys.stderr)
        return 128 + signal.Signals[stopped].value
    full = all(
        s.marks == s.max_marks and s.max_marks > 0 and not s.problem and not any(n.problem for n in s.notebooks)
        for s in students
    )
    return EXIT_OK if full else EXIT_WRONG


# ============================================================================ practice mode


def _practice_probes(part: key.Part) -> list:
    rng = random.Random(key.PRACTICE_SEED)
    return _opaque(key.draw_probes(part, rng), rng)


def _practice_reply(request) -> dict:
    if not isinstance(request, dict):
        return {"error": "bad request"}
    if "plan" in request:
        part = key.PARTS.get(request["plan"])
        if part is None:
            return {"error": f"unknown part {request['plan']!r}: this is not an official check cell"}
        return key.plan_of(part, _practice_probes(part))
    if "judge" in request:
        part = key.PARTS.get(request["judge"])
        if part is None:
            return {"line": f"[ERROR] unknown part {request['judge']!r}"}
        verdict = key.judge(part, request.get("observation"), _practice_probes(part))
        label = {"correct": "[OK]", "not attempted": "[TODO]"}.get(verdict.status, "[WRONG]")
        text = verdict.practice or {"correct": "correct."}.get(verdict.status, "")
        return {"line": f"{label} {part.key} {part.title}: {text}".rstrip()}
    return {"error": "bad request"}


def practice_server(stdin=None, stdout=None) -> int:
    """Serve practice checks: one JSON request per line in, one JSON reply per line out."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    if os.environ.get("ROOFLINE_GRADING"):
        stdout.write(json.dumps({"error": "practice feedback is off while grading"}) + "\n")
        stdout.flush()
        return EXIT_USAGE
    for line in stdin:
        try:
            reply = _practice_reply(json.loads(line))
        except Exception as err:  # noqa: BLE001 - one bad request never stops the server
            reply = {"error": f"bad request ({type(err).__name__})"}
        stdout.write(json.dumps(reply) + "\n")
        stdout.flush()
    return EXIT_OK
