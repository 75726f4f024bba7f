"""The sandbox each graded notebook runs in: bubblewrap (``bwrap``) around its worker and kernel.

Inside a sandbox a notebook's worker and kernel see

* the interpreter, the environment (the virtual environment, when there is one) and the system's
  ``/usr``, read-only;
* the copy of ``roofline_lib`` made for this notebook (without ``grading/``), read-only, at
  :data:`LIB`;
* one scratch folder, read-write, at :data:`SCRATCH`: the student's submission and the kernel's
  home;
* a ``/proc`` of their own PID namespace (the grader, the other workers and kernels are not
  there), a private ``/dev`` and ``/tmp``, no network (a loopback of their own: the kernel's TCP
  ports are private to the sandbox), and a user of their own.

A root grader (CI, a course server) starts ``bwrap`` as root, which sets the mounts up, drops
every capability but the two ``setpriv`` needs, and ``setpriv`` then runs the worker as a user no
other notebook shares (``uid`` from the grader), with no capability and ``no_new_privs``: the
interpreter may lie under a private home (mode 0700), because the mounts are made by root and
the user only sees the mount points. Any other grader starts ``bwrap`` as itself, in a user
namespace of its own.

Every process in the sandbox is under resource limits (:func:`limits`, set by the worker on
itself before it starts the kernel): address space, processes of its user, file size, CPU seconds. ``--die-with-parent`` kills the sandbox with the grader.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["available", "command", "limits", "LIB", "SCRATCH", "why_unavailable"]

LIB = "/grading/lib"  # the package copy and the worker script, read-only
SCRATCH = "/grading/scratch"  # the one read-write folder: the submission (work/) and the kernel's home


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


def command(argv: list[str], scratch: Path, lib: Path, *, uid: int | None, hidden: list[str] = ()) -> list[str]:
    """The command line that runs ``argv`` in a sandbox: ``scratch`` read-write, ``lib`` read-only.

    ``hidden`` are host folders that must not be seen even where a read-only root holds them
    (the real package, in an environment where it is installed rather than linked).
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise FileNotFoundError("bwrap")
    args = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not _root_grader():
        args.append("--unshare-user")
    args += ["--die-with-parent", "--new-session", "--hostname", "grading"]
    made: set[str] = set()
    for name in ("bin", "sbin", "lib", "lib32", "lib64"):
        host = "/" + name
        if os.path.islink(host):
            args += ["--symlink", os.readlink(host), host]
        elif os.path.isdir(host):
            args += ["--ro-bind", host, host]
    for root in _read_only_roots():
        args += _dirs_above(root, made) + ["--ro-bind", root, root]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for path in hidden:
        if any(path == r or path.startswith(r + "/") for r in _read_only_roots()) and os.path.isdir(path):
            args += ["--tmpfs", path]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    args += _dirs_above(LIB, made) + ["--ro-bind", str(lib), LIB, "--bind", str(scratch), SCRATCH]
    args += ["--chdir", f"{SCRATCH}/work"]
    if uid is not None and _root_grader():
        setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--"]
        args += [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all"]
        args += ["--bounding-set=-all", "--no-new-privs", "--"]
    else:
        args += ["--cap-drop", "ALL", "--"] if _root_grader() else ["--"]
    return args + list(argv)


@functools.lru_cache(maxsize=1)
def why_unavailable() -> str:
    """Why no sandbox can start here ("" when one can), found by starting one that runs Python."""
    if shutil.which("bwrap") is None:
        return (
            "bubblewrap (bwrap) is not installed; install Debian's bubblewrap package "
            "(`apt-get install bubblewrap`, or `make install-sandbox`)"
        )
    if _root_grader() and shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed: a root grader needs it to run kernels as a user of their own"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="roofline-sandbox-probe-") as tmp:
        scratch, lib = Path(tmp) / "scratch", Path(tmp) / "lib"
        (scratch / "work").mkdir(parents=True)
        lib.mkdir()
        uid = 60999 if _root_grader() else None
        if uid is not None:
            os.chown(scratch, uid, uid)
            os.chown(scratch / "work", uid, uid)
            os.chmod(tmp, 0o755)
        argv = [sys.executable, "-c", "import os; print(os.getuid())"]
        try:
            done = subprocess.run(
                command(argv, scratch, lib, uid=uid),
                capture_output=True,
                text=True,
                timeout=60,
                env={"PATH": os.defpath, "LANG": "C.UTF-8"},
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"bwrap could not be started ({type(err).__name__})"
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no message"])[-1][:200]
        return (
            f"bwrap could not create a sandbox here ({reason}); it needs user namespaces "
            "(sysctl kernel.unprivileged_userns_clone=1) or a root grader with CAP_SYS_ADMIN"
        )
    if uid is not None and done.stdout.strip() != str(uid):
        return f"the sandbox's kernel ran as uid {done.stdout.strip()!r}, not as its own user {uid}"
    return ""


def available() -> bool:
    return not why_unavailable()
