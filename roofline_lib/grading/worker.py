"""One graded notebook, run in a fresh kernel: the grader's worker process.

The grader copies this file beside the kernel's copy of ``roofline_lib`` (which has no
``grading/``) and runs it as a script, in the notebook's sandbox (``sandbox.py``) as the
sandbox's own user, in a new session, in the submission's scratch folder, with a scrubbed
environment; it writes the job (a JSON list of cell sources, the injected ones marked, and the
resource limits) to its stdin. The worker

* makes itself a *child subreaper*, so a process the kernel detaches (double fork, ``setsid``)
  is re-parented to the worker instead of escaping, and kills every descendant before it exits;
* makes itself non-dumpable, so the kernel (same user) cannot open ``/proc/<worker>/fd/...``
  and write into the pipe the grader reads;
* sets the job's resource limits (address space, processes, file size, CPU seconds) on itself,
  so the kernel inherits them and cannot raise them again;
* in a sandbox, copies the seed (the submission, the kernel's home; read-only) into the
  sandbox's own size-limited scratch space and works there (:func:`enter_scratch`), and says
  once when that space fills up (a ``full`` event, :class:`Space`);
* starts the kernel with its standard streams on ``/dev/null``: the kernel inherits no
  descriptor of the grader's pipe;
* signs every line it writes with a key the grader sent on stdin (HMAC-SHA256), so a line that
  another process manages to write into the pipe (a root kernel can) is ignored;
* runs the cells one by one and writes one JSON line per event to stdout: ``kernel`` (its pid),
  ``begin`` (cell i starts), ``cell`` (cell i ended: the observations of an injected cell, the
  error of any cell), ``full`` (the scratch space filled up during cell i), ``died`` (the
  kernel process is gone) and ``finished``. An injected cell's observations are kept up to
  two, each at most :data:`MAX_OBSERVATION_BYTES` of JSON (:func:`bounded`), so no line is
  larger than the grader reads.

It judges nothing and holds no key: the observations are the kernel's, judged by the grader.
"""

from __future__ import annotations

import ctypes
import hashlib
import hmac
import json
import os
import shutil
import signal
import subprocess
import sys
import time

try:
    from ..observer import MAX_ANSWER_BYTES, MIME_TYPE
except ImportError:  # run as a script, beside the kernel's copy of the package
    # observer.py imports nothing from roofline_lib, so it is loaded alone: through the package it
    # brought the whole library (its __init__, numpy) into every graded notebook's worker, about
    # 0.3 CPU-seconds of each notebook's grading
    import importlib.util

    _spec = importlib.util.spec_from_file_location(
        "roofline_observer", os.path.join(os.path.dirname(os.path.abspath(__file__)), "roofline_lib", "observer.py")
    )
    _observer = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_observer)
    MAX_ANSWER_BYTES, MIME_TYPE = _observer.MAX_ANSWER_BYTES, _observer.MIME_TYPE
    del _spec, _observer

__all__ = ["descendants", "kill_tree", "harden", "bounded", "enter_scratch", "Space"]

_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36


def harden() -> None:
    """Child subreaper and non-dumpable (Linux); silently nothing elsewhere."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _parents() -> dict[int, int]:
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:  # pragma: no cover - no procfs
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        rest = stat[stat.rfind(")") + 2 :].split()
        if len(rest) >= 2 and rest[0] != "Z":
            table[int(name)] = int(rest[1])
    return table


def descendants(root: int) -> list[int]:
    """Live (non-zombie) processes below ``root``, read from /proc."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _parents().items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def kill_tree(root: int, *, include_root: bool = False, rounds: int = 20) -> None:
    """SIGKILL every descendant of ``root`` (and its process group), until none is left."""
    for _ in range(rounds):
        pids = descendants(root)
        if include_root:
            pids.append(root)
        alive = False
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                alive = True
            except (ProcessLookupError, PermissionError):
                pass
        _reap()
        if not alive:
            return
        time.sleep(0.02)


def sign(secret: str, line: str) -> str:
    return hmac.new(secret.encode(), line.encode(), hashlib.sha256).hexdigest()


def _emit(stream, event: dict, secret: str) -> None:
    line = json.dumps(event)
    stream.write(f"{sign(secret, line)} {line}\n")
    stream.flush()


#: Observations of one injected cell that are sent on; one is right, a second is reported as an error.
_KEPT_OBSERVATIONS = 2
#: The most an observation may weigh as JSON here: the observer refuses a part's answers past
#: MAX_ANSWER_BYTES by its estimate, so one larger than twice that was not written by the observer.
MAX_OBSERVATION_BYTES = 2 * MAX_ANSWER_BYTES


def bounded(observation):
    """``observation``, or a refusal in its place when its JSON is over :data:`MAX_OBSERVATION_BYTES`."""
    try:
        size = len(json.dumps(observation))
    except (TypeError, ValueError):
        return {"unreadable": True}
    if size > MAX_OBSERVATION_BYTES:
        return {"too_large": {"name": "", "limit_bytes": MAX_ANSWER_BYTES}}
    return observation


#: Free bytes below which a notebook's scratch space counts as full (it wrote nearly all of it).
FULL_BELOW_BYTES = 2**20


class Space:
    """Watches the notebook's scratch space (``path``; None: nothing to watch) and says once when it fills up."""

    def __init__(self, path: str | None, emit):
        self.path, self.emit, self.reported = path, emit, False

    def check(self, index: int) -> None:
        if self.reported or not self.path:
            return
        try:
            vfs = os.statvfs(self.path)
        except OSError:
            return
        if vfs.f_bavail * vfs.f_frsize < FULL_BELOW_BYTES:
            self.reported = True
            self.emit({"event": "full", "index": index, "limit_bytes": vfs.f_blocks * vfs.f_frsize})


def enter_scratch(place: dict | None) -> None:
    """Copy the seed (the submission, the kernel's home) into the sandbox's own scratch space and
    work there; ``place`` is the job's ``{"seed", "path"}``, None outside a sandbox."""
    if not place:
        return
    for name in os.listdir(place["seed"]):  # the scratch space itself is the sandbox's mount point: left as it is
        shutil.copytree(os.path.join(place["seed"], name), os.path.join(place["path"], name), symlinks=True)
    os.chdir(os.path.join(place["path"], "work"))


def _run_cell(km, kc, source: str, injected: bool, idle=lambda: None):
    """Execute one cell; returns (observations, error, died). ``idle()`` runs whenever the kernel is quiet."""
    msg_id = kc.execute(source, store_history=False, allow_stdin=False)
    observations, error = [], None
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=0.5)
        except Exception:  # noqa: BLE001 - queue.Empty: check the kernel is still there
            idle()
            if not km.is_alive():
                return observations, error, True
            continue
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind, content = msg.get("msg_type"), msg.get("content", {})
        if kind in ("display_data", "execute_result") and injected:
            data = content.get("data", {})
            if MIME_TYPE in data and len(observations) < _KEPT_OBSERVATIONS:  # more are not kept
                observations.append(bounded(data[MIME_TYPE]))
        elif kind == "error":
            error = f"{content.get('ename', '')}: {content.get('evalue', '')}"[:300]
        elif kind == "status" and content.get("execution_state") == "idle":
            return observations, error, False


#: Kernels started before one answers. A kernel that dies or stays silent before its first reply
#: ran no student code. Causes seen: a lost race for one of its TCP ports (drawn from the range
#: outgoing connections use), likelier when many kernels start at once, and ipykernel 7's known
#: hang at start.
KERNEL_START_ATTEMPTS = 3
#: Seconds a kernel has to answer before another is started (one answers in about 1 s). The
#: notebook's time limit runs from the start of the first kernel, so a long wait here would be
#: taken from the student's time.
KERNEL_READY_TIMEOUT_S = 30


def start_kernel(job: dict, manager=None):
    """Start the kernel a notebook is graded in; return its manager and a ready client.

    Raises RuntimeError when ``KERNEL_START_ATTEMPTS`` kernels in a row die before answering.
    ``manager`` makes the KernelManager (a parameter for the tests).
    """
    if manager is None:
        from jupyter_client.manager import KernelManager as manager
    launch = dict(
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        cwd=os.getcwd(),
        env=job["kernel_env"],
    )
    for attempt in range(1, KERNEL_START_ATTEMPTS + 1):
        km = manager(kernel_name="python3")
        km.start_kernel(**launch)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=KERNEL_READY_TIMEOUT_S)
            return km, kc
        except RuntimeError:
            kc.stop_channels()
            try:
                km.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001 - it is already gone
                pass
            if attempt == KERNEL_START_ATTEMPTS:
                raise


def set_limits(limits: dict) -> None:
    """The sandbox's rlimits, soft and hard, on this process and everything it starts."""
    import resource

    chosen = {
        resource.RLIMIT_AS: limits.get("address_space_bytes"),
        resource.RLIMIT_NPROC: limits.get("processes"),
        resource.RLIMIT_FSIZE: limits.get("file_size_bytes"),
        resource.RLIMIT_CPU: limits.get("cpu_seconds"),
        resource.RLIMIT_CORE: 0 if limits else None,
    }
    for which, value in chosen.items():
        if isinstance(value, int) and value >= 0:
            resource.setrlimit(which, (value, value))


def main() -> int:
    harden()
    out = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)  # nothing the libraries print can reach the grader's pipe
    os.dup2(devnull, 2)
    job = json.loads(sys.stdin.read())
    secret = job.pop("secret")
    set_limits(job.get("limits") or {})

    def emit(event):
        _emit(out, event, secret)

    km = kc = None
    space = Space((job.get("scratch") or {}).get("path"), emit)
    try:
        enter_scratch(job.get("scratch"))
        km, kc = start_kernel(job)
        for i, cell in enumerate(job["cells"]):
            emit({"event": "begin", "index": i})
            observations, error, died = _run_cell(
                km, kc, cell["source"], cell.get("injected", False), idle=lambda i=i: space.check(i)
            )
            space.check(i)
            if died:
                emit({"event": "died", "index": i})
                break
            emit({"event": "cell", "index": i, "observations": observations, "error": error})
        else:
            emit({"event": "finished"})
    except (RuntimeError, OSError) as err:  # the kernel never became ready, or the seed could not be copied
        emit({"event": "died", "index": -1, "why": f"{type(err).__name__}: {err}"[:200]})
    finally:
        try:
            kc.stop_channels()
        except Exception:  # noqa: BLE001
            pass
        kill_tree(os.getpid())
        try:
            km.cleanup_resources()
        except Exception:  # noqa: BLE001
            pass
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
