"""What a grader holds on its machine while it runs, by file locks that die with it.

* **Sandbox user ids.** A root grader runs each notebook as a user of its own, and the kernel's
  process limit counts every process of that user on the machine. :func:`sandbox_uid` leases a
  uid from :data:`UIDS` that no other notebook holds, in this grader or in any other grader on
  the machine: uid ``u`` is held while a process holds an exclusive ``flock`` on the file
  ``uid-u.lock`` in :func:`uid_lock_dir`. The kernel releases the lock when the holder exits,
  however it exits (SIGKILL included), so no uid stays taken by a dead grader.
* **The scratch folder.** :func:`scratch_folder` makes the grader's temporary folder and holds a
  lock on it while grading. When it starts, it removes every folder of the same prefix that no
  live grader holds: the submissions an earlier grader copied before it was killed.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

__all__ = ["SCRATCH_PREFIX", "UIDS", "NoFreeUid", "remove_stale", "sandbox_uid", "scratch_folder", "uid_lock_dir"]

#: The uids a root grader's sandboxes run as: no login, no files, no name in /etc/passwd.
UIDS = range(61000, 65000)
#: The prefix of a grader's scratch folder. Not ``roofline-grade-``, the prefix of the unlocked
#: folders earlier graders made: a grader of that kind may still run beside this one (another clone
#: of the course), and a folder it holds without a lock must not be taken for a dead grader's.
SCRATCH_PREFIX = "roofline-grading-"
_turns = itertools.count()  # where the next search for a free uid starts, so uids are used in turn


class NoFreeUid(RuntimeError):
    """Every uid of the range is held (more notebooks at once than uids, or locks held by others)."""


def uid_lock_dir() -> Path:
    """The folder of the uid locks, one for every grader on the machine (made, mode 0700, when missing).

    In ``/run`` when it is writable (always, for the root graders that lease uids), so that
    every grader finds it whatever its ``TMPDIR``; else in the temporary folder.
    """
    base = Path("/run") if os.access("/run", os.W_OK) else Path(tempfile.gettempdir())
    folder = base / "roofline-grading-uids"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise PermissionError(f"{folder} must be a folder of this user's, not a link or another user's")
    return folder


def _try_lock(path: Path) -> int | None:
    """An open descriptor holding an exclusive lock on ``path``, or None when another holds it."""
    return _locked(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))


def _locked(fd: int) -> int | None:
    """``fd`` holding an exclusive lock, or None (``fd`` closed) when another holds the lock."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


@contextmanager
def sandbox_uid(lock_dir: Path | None = None, uids: range = UIDS):
    """A uid from ``uids`` that no other holder of a lease has, for the ``with`` block."""
    folder = Path(lock_dir) if lock_dir is not None else uid_lock_dir()
    start = next(_turns) % len(uids)
    for i in range(len(uids)):
        uid = uids[(start + i) % len(uids)]
        fd = _try_lock(folder / f"uid-{uid}.lock")
        if fd is not None:
            break
    else:
        raise NoFreeUid(f"all {len(uids)} sandbox uids ({uids.start}-{uids.stop - 1}) are held")
    try:
        yield uid
    finally:
        os.close(fd)  # the lock goes with the descriptor


def _locked_dir(path: Path) -> int | None:
    """A descriptor of the folder ``path`` holding an exclusive lock on it; None when another holds it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    return _locked(fd)


def remove_stale(parent: Path, prefix: str = SCRATCH_PREFIX) -> list[str]:
    """Remove the folders ``prefix*`` in ``parent`` that are this user's and that no live grader holds.

    Returns their names. Call it with ``parent`` locked (:func:`scratch_folder` does), so that a
    folder another grader has just made but not yet locked is not taken for a dead one's.
    """
    removed = []
    for entry in os.scandir(parent):
        if not entry.name.startswith(prefix) or not entry.is_dir(follow_symlinks=False):
            continue
        if entry.stat(follow_symlinks=False).st_uid != os.geteuid():
            continue
        fd = _locked_dir(Path(entry.path))
        if fd is None:
            continue  # a live grader's
        try:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.name)
        finally:
            os.close(fd)
    return removed


@contextmanager
def scratch_folder(parent: str | os.PathLike | None = None, prefix: str = SCRATCH_PREFIX):
    """A new temporary folder, locked while the ``with`` block runs and removed after it.

    Before it is made, the stale folders of dead graders in ``parent`` (the temporary folder by
    default) are removed; ``parent`` is locked meanwhile, so two graders starting together do not
    take each other's new folders for stale ones.
    """
    parent = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    guard = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(guard, fcntl.LOCK_EX)
        remove_stale(parent, prefix)
        folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        held = _locked_dir(folder)
    finally:
        os.close(guard)  # releases the parent's lock
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if held is not None:
            os.close(held)
