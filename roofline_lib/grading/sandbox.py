"""The sandbox each graded notebook runs in: bubblewrap (``bwrap``) around its worker and kernel.

Inside a sandbox a notebook's worker and kernel see

* the interpreter, the environment (the virtual environment, when there is one) and the system's
  ``/usr``, read-only;
* the copy of ``roofline_lib`` made for this notebook (without ``grading/``), read-only, at
  :data:`LIB`;
* the notebook's seed, read-only, at :data:`SEED`: the student's submission (``work/``) and the
  kernel's home, which the worker copies into
* a scratch space of its own, read-write, at :data:`SCRATCH`: a memory file system of
  :data:`SCRATCH_BYTES` that no other sandbox sees, so a notebook that fills it (``No space left
  on device``) fails itself and no other; its ``/tmp`` is one of :data:`TMP_BYTES`;
* a ``/proc`` of their own PID namespace (the grader, the other workers and kernels are not
  there), a private ``/dev``, no network (a loopback of their own: the kernel's TCP ports are
  private to the sandbox), and a user of their own. Every other path is read-only, the
  sandbox's root included;
* a system-call filter (:mod:`.syscall_filter`, bwrap's ``--seccomp``): no new namespaces, no
  ``ptrace``, no keyrings, BPF, ``io_uring`` or mounts, like a container engine's default.

A root grader (CI, a course server) starts ``bwrap`` as root, which sets the mounts up, drops
every capability but the two ``setpriv`` needs, and ``setpriv`` then runs the worker as a user no
other notebook shares (``uid`` from the grader), with no capability and ``no_new_privs``: the
interpreter may lie under a private home (mode 0700), because the mounts are made by root and
the user only sees the mount points. Any other grader starts ``bwrap`` as itself, in a user
namespace of its own. The grader leases each sandbox's uid (:mod:`.leases`), so that no two
notebooks share one, in this grader or in another on the machine.

Every process in the sandbox is under resource limits (:func:`limits`, set by the worker on
itself before it starts the kernel): address space, processes of its user, file size, CPU seconds. ``--die-with-parent`` kills the sandbox with the grader.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import syscall_filter

__all__ = [
    "available",
    "command",
    "filter_pipe",
    "limits",
    "mode",
    "start_as",
    "why_unavailable",
    "LIB",
    "MODES",
    "SCRATCH",
    "SCRATCH_BYTES",
    "SEED",
    "SYSCALL_FILTER",
    "TMP_BYTES",
]

LIB = "/grading/lib"  # the package copy and the worker script, read-only
SEED = "/grading/seed"  # the submission (work/) and the kernel's home as the grader wrote them, read-only
SCRATCH = "/grading/scratch"  # the read-write space the worker copies the seed into
#: The size of a sandbox's scratch space: the submission (at most 50 MB), the kernel's home and
#: whatever the notebook writes. A memory file system, so this much memory per notebook at most.
SCRATCH_BYTES = 256 * 2**20
TMP_BYTES = 64 * 2**20  # the sandbox's /tmp, also a memory file system of its own


def limits(cpu_seconds: int) -> dict:
    """The rlimits of one sandbox; the worker sets them on itself, so every process in it has them."""
    return {
        "address_space_bytes": 3 * 2**30,  # per process; a kernel with numpy loaded maps about 1 GiB
        "processes": 256,  # processes and threads of the sandbox's user (a kernel runs about 20 threads)
        "file_size_bytes": 64 * 2**20,  # the largest file a kernel may write
        "cpu_seconds": int(cpu_seconds),  # per process
    }


def _root_grader() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _read_only_roots() -> list[str]:
    """The host folders a kernel needs, read-only: the system, the interpreter, the environment."""
    roots = ["/usr"]
    for p in (sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))):
        real = os.path.realpath(p)
        if not any(real == r or real.startswith(r + "/") for r in roots):
            roots.append(real)
            if p != real and os.path.isdir(p):
                roots.append(p)
    return roots


#: /etc entries a Python kernel reads (the loader's cache, names of users and hosts, time zone, fonts).
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "passwd", "group", "hosts", "fonts")


def _dirs_above(path: str, made: set[str]) -> list[str]:
    """``--dir`` arguments for every folder above ``path``, world-readable (bwrap makes them 0700)."""
    args = []
    parts = Path(path).parts[1:-1]
    for i in range(1, len(parts) + 1):
        d = "/" + "/".join(parts[:i])
        if d not in made:
            made.add(d)
            args += ["--perms", "0755", "--dir", d]
    return args


#: How a sandbox is started, chosen by :func:`mode`:
#: ``root``  a root grader starts bwrap as root (it needs CAP_SYS_ADMIN); bwrap makes the mounts, keeps
#:           only the two capabilities setpriv needs, and setpriv runs the worker as ``uid`` with none;
#: ``user``  a root grader that cannot do that starts bwrap as ``uid`` itself, in a user namespace
#:           (every read-only root must then be reachable by that user);
#: ``self``  any other grader starts bwrap as itself, in a user namespace.
MODES = ("root", "user", "self")


def command(
    argv: list[str], seed: Path, lib: Path, *, uid: int | None, mode: str = "", hidden=(), filter_fd: int | None = None
) -> list[str]:
    """The command line that runs ``argv`` in a sandbox: ``seed`` at :data:`SEED`, ``lib`` at
    :data:`LIB`, both read-only, and an empty :data:`SCRATCH` of its own, the working folder.

    ``uid`` is the sandbox's own user (a root grader's); in mode ``user`` the command must also be
    started as that user (:func:`start_as`). ``hidden`` are host folders that must not be seen
    even where a read-only root holds them (the real package, where it is installed rather than
    linked into the environment). ``filter_fd`` holds the system-call filter (:mod:`.syscall_filter`);
    it must be passed to bwrap (``pass_fds``), which reads it to its end (:func:`filter_pipe`).
    """
    mode = mode or globals()["mode"]()
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise FileNotFoundError("bwrap")
    args = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if mode != "root":
        args.append("--unshare-user")
    args += ["--die-with-parent", "--new-session", "--hostname", "grading"]
    made: set[str] = set()
    for name in ("bin", "sbin", "lib", "lib32", "lib64"):
        host = "/" + name
        if os.path.islink(host):
            args += ["--symlink", os.readlink(host), host]
        elif os.path.isdir(host):
            args += ["--ro-bind", host, host]
    # /proc, /dev and /tmp first: a read-only root under /tmp (an environment in a scratch clone)
    # is then bound over the private /tmp instead of hidden by it.
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    roots = _read_only_roots()
    for root in roots:
        args += _dirs_above(root, made) + ["--ro-bind", root, root]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for path in hidden:
        if any(path == r or path.startswith(r + "/") for r in roots) and os.path.isdir(path):
            args += ["--perms", "0555", "--size", "4096", "--tmpfs", path]  # an empty folder, nothing to write
    args += _dirs_above(LIB, made) + ["--ro-bind", str(lib), LIB, "--ro-bind", str(seed), SEED]
    args += ["--perms", "0777", "--size", str(SCRATCH_BYTES), "--tmpfs", SCRATCH, "--chdir", SCRATCH]
    args += ["--remount-ro", "/"]  # the sandbox's root file system: nothing can be written outside the two above
    if filter_fd is not None:
        args += ["--seccomp", str(filter_fd)]
    if mode == "root":
        if uid is None:
            raise ValueError("uid must be a user id (a whole number) for a root grader's sandbox, got None")
        setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--"]
        args += [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all"]
        args += ["--bounding-set=-all", "--no-new-privs", "--"]
    else:
        args += ["--"]
    return args + list(argv)


#: Whether sandboxes run under the system-call filter of :mod:`.syscall_filter` (where it has one).
SYSCALL_FILTER = True


@contextlib.contextmanager
def filter_pipe():
    """A descriptor from which one bwrap reads the system-call filter (a pipe), or None without one."""
    program = syscall_filter.program() if SYSCALL_FILTER else None
    if program is None:
        yield None
        return
    read_end, write_end = os.pipe()  # the program is some 600 bytes: less than a pipe holds
    try:
        os.write(write_end, program)
        os.close(write_end)
        write_end = None
        yield read_end
    finally:
        if write_end is not None:
            os.close(write_end)
        os.close(read_end)


def start_as(uid: int | None, mode: str = "") -> dict:
    """Keywords for ``subprocess.Popen`` that start bwrap as the right user (mode ``user`` only)."""
    if (mode or globals()["mode"]()) == "user" and uid is not None:
        return {"user": uid, "group": uid, "extra_groups": []}
    return {}


def _probe(mode: str) -> str:
    """Start a sandbox in ``mode`` that runs Python; "" when it ran as its own user, else why not."""
    import tempfile

    uid = 60999 if mode in ("root", "user") else None
    with tempfile.TemporaryDirectory(prefix="roofline-sandbox-probe-") as tmp:
        scratch, lib = Path(tmp) / "scratch", Path(tmp) / "lib"
        (scratch / "work").mkdir(parents=True)
        lib.mkdir()
        if uid is not None:
            for path in (scratch, scratch / "work"):
                os.chown(path, uid, uid)
            os.chmod(tmp, 0o755)
        argv = [sys.executable, "-c", "import os; print(os.getuid())"]
        try:
            with filter_pipe() as fd:
                done = subprocess.run(
                    command(argv, scratch, lib, uid=uid, mode=mode, filter_fd=fd),
                    capture_output=True,
                    text=True,
                    timeout=60,
                    env={"PATH": os.defpath, "LANG": "C.UTF-8"},
                    pass_fds=() if fd is None else (fd,),
                    **start_as(uid, mode),
                )
        except (OSError, subprocess.SubprocessError) as err:
            return f"bwrap could not be started ({type(err).__name__})"
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or ["no message"])[-1][:200]
    if uid is not None and done.stdout.strip() != str(uid):
        return f"the sandbox ran as uid {done.stdout.strip()!r}, not as its own user {uid}"
    return ""


@functools.lru_cache(maxsize=1)
def _choice() -> tuple[str, str]:
    """(mode, "") for the first mode that works here, or ("", why none does)."""
    if shutil.which("bwrap") is None:
        return "", (
            "bubblewrap (bwrap) is not installed; install Debian's bubblewrap package "
            "(`apt-get install bubblewrap`, or `make install-sandbox`)"
        )
    if not _root_grader():
        why = _probe("self")
        return (
            ("self", "")
            if not why
            else (
                "",
                f"bwrap could not create a sandbox here ({why}); it needs user "
                "namespaces (sysctl kernel.unprivileged_userns_clone=1)",
            )
        )
    if shutil.which("setpriv") is None:
        return "", "setpriv (util-linux) is not installed: a root grader needs it to run kernels as a user of their own"
    as_root = _probe("root")
    if not as_root:
        return "root", ""
    as_user = _probe("user")
    if not as_user:
        return "user", ""
    return "", (
        f"bwrap could not create a sandbox here: as root ({as_root}), and as a user of its own ({as_user}). "
        "A root grader needs CAP_SYS_ADMIN, or user namespaces with the interpreter and the environment "
        "outside any private (mode 0700) folder"
    )


def mode() -> str:
    """How sandboxes start here (one of :data:`MODES`), or "" where none can."""
    return _choice()[0]


def why_unavailable() -> str:
    """Why no sandbox can start here ("" when one can), found by starting one that runs Python."""
    return _choice()[1]


def available() -> bool:
    return bool(mode())
