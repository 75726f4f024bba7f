"""What a grader holds on its machine: sandbox uids no other grader shares, a scratch folder a killed one frees.

Two graders are two processes here: a child that takes a lease and waits, and this process.
No notebook is graded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile

import pytest

from roofline_lib.grading import leases

UIDS = range(70000, 70002)  # two uids, so that every way of sharing them shows

# A second grader: leases one uid, says which, and holds it until it is killed.
_OTHER_GRADER = """
import importlib.util, time
from pathlib import Path
spec = importlib.util.spec_from_file_location("leases", {path!r})  # the module alone: no package import
leases = importlib.util.module_from_spec(spec)
spec.loader.exec_module(leases)
with leases.sandbox_uid(Path({folder!r}), range({first}, {stop})) as uid:
    print(uid, flush=True)
    time.sleep(60)
"""


@pytest.fixture
def other_grader(tmp_path):
    """(the uid a second grader process holds, the process)."""
    code = _OTHER_GRADER.format(path=leases.__file__, folder=str(tmp_path), first=UIDS.start, stop=UIDS.stop)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        yield int(proc.stdout.readline()), proc
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_a_uid_another_grader_holds_is_never_handed_out(tmp_path, other_grader):
    theirs, _ = other_grader
    with leases.sandbox_uid(tmp_path, UIDS) as mine:
        assert mine != theirs and mine in UIDS
        with pytest.raises(leases.NoFreeUid, match="all 2 sandbox uids"):
            with leases.sandbox_uid(tmp_path, UIDS):  # a second notebook of this grader: none is left
                pass


def test_a_killed_grader_s_uid_is_free_again(tmp_path, other_grader):
    theirs, proc = other_grader
    proc.send_signal(signal.SIGKILL)  # no clean-up runs: the kernel drops its lock
    proc.wait(timeout=30)
    with leases.sandbox_uid(tmp_path, UIDS) as first, leases.sandbox_uid(tmp_path, UIDS) as second:
        assert {first, second} == set(UIDS)


def test_a_uid_is_free_again_when_its_notebook_ends(tmp_path):
    with leases.sandbox_uid(tmp_path, range(70000, 70001)) as uid:
        assert uid == 70000
    with leases.sandbox_uid(tmp_path, range(70000, 70001)) as again:
        assert again == 70000


def test_the_uid_locks_live_in_one_folder_for_every_grader(monkeypatch, tmp_path):
    folder = leases.uid_lock_dir()
    assert folder.is_dir() and (os.stat(folder).st_mode & 0o777) == 0o700
    if not os.access("/run", os.W_OK):
        pytest.skip("no writable /run here: the locks are in the temporary folder")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # a grader with another TMPDIR
    assert leases.uid_lock_dir() == folder


def test_a_killed_grader_s_scratch_folder_is_removed_when_the_next_one_starts(tmp_path):
    dead = tmp_path / f"{leases.SCRATCH_PREFIX}dead"
    (dead / "s000-ex2" / "rw" / "work").mkdir(parents=True)
    (dead / "s000-ex2" / "rw" / "work" / "ex2_ridge_points.md").write_text("a copied submission")
    live = tmp_path / f"{leases.SCRATCH_PREFIX}live"
    live.mkdir()
    held = leases._locked_dir(live)  # a grader that is still running holds its folder
    other = tmp_path / "unrelated"
    other.mkdir()
    older = tmp_path / "roofline-grade-abc"  # an earlier kind of grader's, unlocked: perhaps still running
    older.mkdir()
    try:
        with leases.scratch_folder(tmp_path) as mine:
            assert mine.is_dir() and mine.name.startswith(leases.SCRATCH_PREFIX)
            assert not dead.exists() and live.is_dir() and other.is_dir() and older.is_dir()
        assert not mine.exists()  # its own folder is gone after it
    finally:
        os.close(held)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([f"{leases.SCRATCH_PREFIX}live", "roofline-grade-abc", "unrelated"])
