"""A notebook's code cells, read and parsed in a child process under the notebook's own limits.

The grader never parses a submission itself: a 100k-cell text notebook once took 28 s of the
grader's time and 220 MB of its memory before any limit applied. Instead

* one **reader server** per grader (this file run as a script, :class:`Reader` starts it) imports
  jupytext and nbformat once and parses a small notebook of each kind, so that what it forks is
  warm;
* for each notebook the grader sends the server an open descriptor of the file and the write end
  of a pipe; the server forks a **child** that makes itself a user of no privilege (``nobody``,
  for a root grader), sets the notebook's address-space and CPU limits on itself, dies with the
  server, reads the file, parses it and writes back one JSON reply: the code cells (source, tags)
  or a problem that names the limit it met;
* the grader waits for the reply until the notebook's deadline and kills the child past it, so a
  file that takes too long to parse costs that student their time limit, and reads at most
  :data:`MAX_REPLY_BYTES` of it.

A notebook is refused, with a message, when it has more than :data:`MAX_CODE_CELLS` code cells
or more than :data:`MAX_CODE_BYTES` of code (an exercise has about 20 cells and 10 kB); both are
checked before the parse where a count is cheap (an ``.ipynb``'s cell list; a text notebook's
fence lines), and after it.

Run as a script, this file imports nothing from ``roofline_lib`` (the server starts without the
package and its key); the grader imports it for :class:`Reader`.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time

__all__ = [
    "MAX_CODE_BYTES",
    "MAX_CODE_CELLS",
    "MAX_REPLY_BYTES",
    "NotebookRefused",
    "Read",
    "Reader",
    "code_cells",
]

#: The most code cells a graded notebook may have (an exercise has about 20).
MAX_CODE_CELLS = 1000
#: The most code a graded notebook may hold, as JSON: its cells' sources and tags (an exercise holds about 10 kB).
MAX_CODE_BYTES = 2**20
#: The longest reply the grader reads: the code, and room for the JSON around it.
MAX_REPLY_BYTES = MAX_CODE_BYTES + 4096
#: Seconds the grader waits for the server to take a request (it starts in about 1 s, once).
SERVER_READY_TIMEOUT_S = 60
_CHILD_LIMITS = ("address_space_bytes", "cpu_seconds")  # of a sandbox's limits, those the child sets on itself
_NOBODY = 65534  # the uid and gid of a root grader's reading child: owns no file, holds no privilege
_PR_SET_PDEATHSIG = 1


class NotebookRefused(Exception):
    """A notebook that is not graded, with the reason, naming the limit it met; never its text."""


# ============================================================================ parsing (in the child)

#: A line that may open (or close) a fenced block in Markdown: every code cell of a text notebook
#: (jupytext's ``md`` and ``myst`` formats) opens with one, so there are at least as many of these
#: lines as code cells.
_FENCE_LINE = re.compile(rb"^ {0,3}(?:`{3,}|~{3,})", re.MULTILINE)


def _precount(data: bytes, suffix: str) -> None:
    """Refuse a notebook that cheaply counts as over :data:`MAX_CODE_CELLS`, before the slow parse."""
    if suffix == ".ipynb":
        try:
            nb = json.loads(data)
        except ValueError:
            return  # not JSON: the parser says so, in its own words
        sheets = nb.get("worksheets", [nb]) if isinstance(nb, dict) else []  # nbformat 3 keeps its cells in worksheets
        cells = [c for s in sheets if isinstance(s, dict) for c in s.get("cells", []) or []]
        count = sum(1 for c in cells if isinstance(c, dict) and c.get("cell_type") == "code")
        if count > MAX_CODE_CELLS:
            raise NotebookRefused(_too_many(count))
    else:
        fences = len(_FENCE_LINE.findall(data))
        if fences > 2 * MAX_CODE_CELLS:  # a code cell takes two of them, its opening and its closing
            raise NotebookRefused(
                f"it has {fences} fence lines (```), more than {MAX_CODE_CELLS} code cells can need; "
                f"a notebook may have at most {MAX_CODE_CELLS} code cells"
            )


def _too_many(count: int) -> str:
    return f"it has {count} code cells; a notebook may have at most {MAX_CODE_CELLS}"


def _parsed(data: bytes, suffix: str):
    text = data.decode("utf-8")
    if suffix == ".ipynb":
        import nbformat

        return nbformat.reads(text, as_version=4)
    import jupytext

    return jupytext.reads(text, fmt="md")


def code_cells(data: bytes, suffix: str) -> list[tuple[str, list[str]]]:
    """(source, tags) of each code cell of a notebook's bytes (``suffix`` ``.md`` or ``.ipynb``).

    Raises NotebookRefused past :data:`MAX_CODE_CELLS` or :data:`MAX_CODE_BYTES`, and the
    parser's own error on a notebook it cannot read.
    """
    _precount(data, suffix)
    cells = []
    for c in _parsed(data, suffix).cells:
        if c.get("cell_type") != "code":
            continue
        tags = c.get("metadata", {}).get("tags", [])
        tags = [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []
        source = c.get("source", "")
        cells.append(("".join(source) if isinstance(source, list) else str(source), tags))
    if len(cells) > MAX_CODE_CELLS:
        raise NotebookRefused(_too_many(len(cells)))
    if len(_encoded(cells)) > MAX_CODE_BYTES:
        raise NotebookRefused(f"its code cells hold more than {MAX_CODE_BYTES / 2**20:g} MiB of code")
    return cells


def _encoded(reply) -> bytes:
    """JSON as UTF-8; a lone surrogate (an ``.ipynb`` may escape one) travels as it is."""
    return json.dumps(reply, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _size(n_bytes: float) -> str:
    """A limit in bytes as people say it: ``3 GiB``, ``200 MiB``."""
    return f"{n_bytes / 2**30:g} GiB" if n_bytes >= 2**30 else f"{n_bytes / 2**20:g} MiB"


def _memory_problem(address_space_bytes: int) -> str:
    return f"reading it needs more than the {_size(address_space_bytes)} of memory a notebook may use"


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _reply(data_fd: int, request: dict) -> dict:
    """The child's reply to one request: ``{"cells": [...]}``, ``{"problem": why refused}`` or
    ``{"error": the parser's exception's name}``."""
    try:
        return {"cells": code_cells(_read_all(data_fd), request.get("suffix", ".md"))}
    except NotebookRefused as err:
        return {"problem": str(err)}
    except MemoryError:
        return {"problem": _memory_problem(request.get("address_space_bytes", 0))}
    except Exception as err:  # noqa: BLE001 - never the text of the error: it may quote the file
        return {"error": type(err).__name__}


# ============================================================================ the child and the server


def _die_with_parent() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _confine(request: dict) -> None:
    """The notebook's limits on this process, and no privilege: it reads nothing but its descriptor."""
    import resource

    for which, value in (
        (resource.RLIMIT_AS, request.get("address_space_bytes")),
        (resource.RLIMIT_CPU, request.get("cpu_seconds")),
        (resource.RLIMIT_FSIZE, 0),  # it writes no file (its reply goes into a pipe)
        (resource.RLIMIT_CORE, 0),
    ):
        if isinstance(value, int) and value >= 0:
            resource.setrlimit(which, (value, value))
    if os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(_NOBODY, _NOBODY, _NOBODY)
        os.setresuid(_NOBODY, _NOBODY, _NOBODY)


def _child(data_fd: int, reply_fd: int, request: dict) -> None:
    """Read, parse and reply; the process ends with ``os._exit`` after this, whatever happens."""
    _die_with_parent()
    _confine(request)
    reply = _reply(data_fd, request)
    os.close(data_fd)
    try:
        payload = _encoded(reply)
    except MemoryError:
        payload = _encoded({"problem": _memory_problem(request.get("address_space_bytes", 0))})
    view = memoryview(payload)
    while view:
        view = view[os.write(reply_fd, view) :]


#: Parsed by the server before it takes a request, so that each child starts warm.
_WARM_MD = b"---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n# A\n\n```{code-cell} ipython3\n:tags: [t]\nx = 1\n```\n"
_WARM_IPYNB = (
    b'{"cells": [{"cell_type": "code", "execution_count": null, "id": "a1", "metadata": {"tags": ["t"]},'
    b' "outputs": [], "source": ["x = 1"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
)


def _receive(sock: socket.socket) -> tuple[dict, list[int]] | None:
    """One request (a JSON line and its two descriptors, sent in one message, a few dozen bytes
    long); None when the grader has gone."""
    message, fds, _, _ = socket.recv_fds(sock, 4096, 2)
    if not message:
        for fd in fds:
            os.close(fd)
        return None
    try:
        request = json.loads(message)
    except ValueError:
        request = None
    if not isinstance(request, dict) or len(fds) != 2:
        for fd in fds:
            os.close(fd)
        return {}, []
    return request, fds


def serve(sock: socket.socket) -> None:
    """The server: warm up, then fork one child per request, until the grader closes its end."""
    code_cells(_WARM_MD, ".md")
    code_cells(_WARM_IPYNB, ".ipynb")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the children are reaped by the system
    while (got := _receive(sock)) is not None:
        request, fds = got
        if not fds:
            sock.sendall(b'{"pid": 0}\n')
            continue
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                _child(fds[0], fds[1], request)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")


# ============================================================================ the grader's side


class Read:
    """What reading one notebook gave, in ``seconds`` from the child's start. ``end`` is "read"
    (``cells`` holds the code cells), "refused" (``problem`` is the report's message: the limit
    met, or the parser's error by name), "time limit" or "interrupted" (the grader is stopping)."""

    def __init__(self, end: str, seconds: float, cells=None, problem: str = ""):
        self.end, self.seconds, self.cells, self.problem = end, seconds, cells, problem


class Reader:
    """The grader's end of a reader server: started once, started again when it is gone."""

    def __init__(self):
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None

    def start(self) -> None:
        """Start the server (in the background: it is ready about a second later), unless it runs."""
        with self._lock:
            self._start()

    def _start(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        self._close()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-P", os.path.abspath(__file__)],  # -P: nothing beside this file shadows a module
                stdin=theirs,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,  # the parsers' warnings (a duplicate cell id, ...) are not the grader's
                start_new_session=True,  # a Ctrl-C at the terminal is the grader's to handle
            )
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        self._sock = mine

    def _close(self) -> None:
        if self._sock is not None:
            self._sock.close()  # the server ends when it reads the end of its socket
            self._sock = None
        if self._proc is not None:
            try:
                self._proc.kill()
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):  # pragma: no cover - already gone
                pass
            self._proc = None

    def close(self) -> None:
        with self._lock:
            self._close()

    def _fork_child(self, data_fd: int, reply_w: int, request: dict) -> int:
        """Hand a request to the server and return the child's pid; a server that has gone is started again, once."""
        line = json.dumps(request).encode() + b"\n"
        with self._lock:
            for attempt in (1, 2):
                self._start()
                try:
                    socket.send_fds(self._sock, [line], [data_fd, reply_w])
                    return self._pid_reply()
                except (OSError, ValueError, KeyError):
                    self._close()
                    if attempt == 2:
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _pid_reply(self) -> int:
        self._sock.settimeout(SERVER_READY_TIMEOUT_S)
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = self._sock.recv(256)
            if not chunk:
                raise ConnectionError("the reader server has gone")
            reply += chunk
        pid = json.loads(reply)["pid"]
        if not isinstance(pid, int) or pid <= 0:
            raise ValueError("the reader server refused the request")
        return pid

    def read(self, data_fd: int, suffix: str, time_limit_s: float, limits: dict, stopped=lambda: False) -> Read:
        """Read the notebook open on ``data_fd`` (closed here) in a child, within ``time_limit_s``.

        ``limits`` holds the child's ``address_space_bytes`` and ``cpu_seconds``; ``stopped()``
        says the grader is stopping (checked every second). Raises OSError when no server can
        take the request.
        """
        reply_r, reply_w = os.pipe()
        try:
            request = {"suffix": suffix, **{k: v for k, v in limits.items() if k in _CHILD_LIMITS}}
            try:
                pid = self._fork_child(data_fd, reply_w, request)
            finally:
                os.close(data_fd)
                os.close(reply_w)  # the child holds the only write end now: its exit ends the reply
            started = time.monotonic()
            end = "time limit"
            try:
                payload, end = _collect(reply_r, started + time_limit_s, stopped)
            finally:
                if end != "read":
                    _kill(pid)
            return _outcome(payload, end, time.monotonic() - started, limits)
        finally:
            os.close(reply_r)


def _collect(fd: int, deadline: float, stopped) -> tuple[bytes, str]:
    """The reply on ``fd`` until it ends ("read"), the deadline ("time limit"), a stop
    ("interrupted") or more than :data:`MAX_REPLY_BYTES` ("too long")."""
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    chunks, size = [], 0
    while True:
        remaining = deadline - time.monotonic()
        if stopped():
            return b"", "interrupted"
        if remaining <= 0:
            return b"", "time limit"
        if not poll.poll(1000 * min(remaining, 1.0)):
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks), "read"
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            return b"", "too long"
        chunks.append(chunk)


def _kill(pid: int) -> None:
    """SIGKILL the child (the server reaps it); it still held the pipe, so the pid was still its own."""
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _outcome(payload: bytes, end: str, seconds: float, limits: dict) -> Read:
    """The :class:`Read` of a child's reply (``payload``) and of how waiting for it ended."""
    if end in ("time limit", "interrupted"):
        return Read(end, seconds)
    if end == "too long":
        return _refused(seconds, f"its code cells hold more than {MAX_CODE_BYTES / 2**20:g} MiB of code")
    try:
        reply = json.loads(payload.decode("utf-8", "surrogatepass"))
        if isinstance(reply.get("problem"), str):
            return _refused(seconds, reply["problem"][:300])
        if isinstance(reply.get("error"), str):
            return Read("refused", seconds, problem=f"cannot read the notebook ({reply['error'][:80]})")
        cells = [(str(source), [str(t) for t in tags]) for source, tags in reply["cells"]]
    except (ValueError, TypeError, KeyError, AttributeError):  # no reply: the child died, past one of its limits
        memory, cpu = _size(limits.get("address_space_bytes", 0)), limits.get("cpu_seconds", 0)
        return _refused(seconds, f"its reader was stopped by a limit ({memory} of memory, {cpu} s of CPU)")
    return Read("read", seconds, cells=cells)


def _refused(seconds: float, why: str) -> Read:
    return Read("refused", seconds, problem=f"cannot read the notebook: {why}")


if __name__ == "__main__":
    serve(socket.socket(fileno=0))  # the socket is stdin; a child closes it, and so holds nothing of the grader's
