"""Local ranks: start ``n`` processes of one script on this machine that meet over 127.0.0.1 only.

The live runs (:mod:`~roofline_lib.evidence.collectives_live`, :mod:`~roofline_lib.evidence.parallel_live`)
send each rank a script made of a few functions' source, with its settings as JSON: it imports
only the standard library and torch, not roofline_lib. One launcher process (``python -c``)
imports torch once and forks the ranks from it, so that each does not import torch again (about
2 CPU-seconds a rank). The ranks meet through a file in a fresh temporary folder (a TCPStore would
listen on every interface), gloo's sockets are bound to the loopback interface on free ports the
operating system picks, and no process outlives the call.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

__all__: list[str] = []  # private helpers: the live runs import them by name


def _loopback_interface() -> str | None:
    """The name of the loopback network interface ('lo' on Linux, 'lo0' on macOS), if one is found."""
    import socket

    try:
        names = [name for _, name in socket.if_nameindex()]
    except (OSError, AttributeError):  # pragma: no cover - platforms without if_nameindex
        return None
    for name in ("lo", "lo0"):
        if name in names:
            return name
    return None


def _loopback_env(required_because: str | None) -> dict:
    """The ranks' environment: one thread each, gloo's sockets on the loopback interface.

    Without a loopback interface, raises RuntimeError ending in ``required_because`` (None: go on
    without one, as NCCL on GPUs may).
    """
    loopback = _loopback_interface()
    if loopback is None and required_because:
        raise RuntimeError(f"no loopback network interface ('lo' or 'lo0') found: {required_because}")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", OMP_NUM_THREADS="1")  # ranks share the machine
    if loopback:
        env["GLOO_SOCKET_IFNAME"] = loopback  # gloo's pair sockets on 127.0.0.1 only
    return env


def _join_group(cfg: dict, backend: str):
    """Rank side: join the group of ``cfg["n_ranks"]`` through the file store; torch.distributed.

    Sent in each rank's script (see :func:`_script`), so it imports what it needs itself.
    """
    import datetime
    import os

    os.environ["OMP_NUM_THREADS"] = "1"  # ranks share the machine; do not oversubscribe it
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=cfg["timeout_s"])
    store = dist.FileStore(cfg["store_path"], cfg["n_ranks"])  # rendezvous through a file: no listening port
    store.set_timeout(timeout)
    dist.init_process_group(backend, store=store, rank=cfg["rank"], world_size=cfg["n_ranks"], timeout=timeout)
    return dist


def _run_rank(compiled, folder: str, rank: int, cfg: dict) -> None:
    """Rank side, in the process the launcher forked: stdout and stderr to the rank's own files,
    ``cfg`` as its one argument, run the rank's code; exit with its status, never return."""
    import json
    import os
    import sys
    import traceback

    status = 1
    try:
        for fd, kind in ((1, "out"), (2, "err")):
            target = os.open(os.path.join(folder, f"rank{rank}.{kind}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(target, fd)
            os.close(target)
        sys.argv = ["-c", json.dumps(cfg)]
        exec(compiled, {"__name__": "__main__"})
        status = 0
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _end_with_caller() -> None:
    """Launcher side: wait until stdin ends, then kill the launcher's session (itself and its ranks)."""
    import os
    import signal

    while os.read(0, 4096):  # the bare descriptor: a thread blocked in sys.stdin's buffer holds its lock
        pass  # at the launcher's exit, and Python aborts
    os.killpg(0, signal.SIGKILL)


def _launch(argv=None) -> None:
    """Launcher side: import the modules the ranks share once, then fork one process per rank.

    Sent as the source of a ``python -c`` script (see :func:`_start`), so it imports what it needs
    itself. Its one argument is JSON: the ranks' ``code``, their ``configs``, the ``folder`` for
    their files, the modules to ``preload``. Each rank's exit is written to the ``exits`` file as it
    happens, ``rank code`` a line; when one fails the others are killed, so that a rank that waits
    for a peer that is gone does not hold the run until its timeout.
    """
    import importlib
    import json
    import os
    import signal
    import sys
    import threading

    job = json.loads((argv or sys.argv)[1])
    os.environ["OMP_NUM_THREADS"] = "1"  # ranks share the machine; set before torch reads it
    for name in job["preload"]:
        importlib.import_module(name)
    compiled = compile(job["code"], "<rank>", "exec")
    pids = {}
    for rank, cfg in enumerate(job["configs"]):
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _run_rank(compiled, job["folder"], rank, cfg)
        pids[pid] = rank
    # The caller holds the other end of stdin and nothing else does: it closes when the caller exits,
    # however it exits (a kernel restarted in JupyterLab is killed), and the ranks go with it.
    threading.Thread(target=_end_with_caller, daemon=True).start()
    failed = False
    with open(os.path.join(job["folder"], "exits"), "w") as exits:
        while pids:
            pid, wait_status = os.wait()
            code = os.waitstatus_to_exitcode(wait_status)
            exits.write(f"{pids.pop(pid)} {code}\n")
            exits.flush()
            if code != 0 and not failed:
                failed = True
                for other in pids:
                    os.kill(other, signal.SIGKILL)
    sys.exit(1 if failed else 0)


def _script(*functions) -> str:
    """The source of ``functions`` and a call to the last one: a ``python -c`` script."""
    return "\n\n".join(inspect.getsource(f) for f in functions) + f"\n{functions[-1].__name__}()\n"


def _start(code: str, configs: list, folder: str, env: dict, preload: tuple) -> subprocess.Popen:
    """Start the launcher (:func:`_launch`), in a session of its own, for one rank per config; it ends
    with this process (:func:`_end_with_caller`)."""
    job = {"code": code, "configs": configs, "folder": folder, "preload": list(preload)}
    with open(os.path.join(folder, "launcher.log"), "w") as log:
        return subprocess.Popen(
            [sys.executable, "-c", _script(_run_rank, _end_with_caller, _launch), json.dumps(job)],
            env=env,
            stdout=log,
            stderr=log,
            stdin=subprocess.PIPE,  # its end closes when this process exits: the launcher ends with it
            start_new_session=True,  # its group holds the ranks: one signal reaches them all
        )


def _log(folder: str, rank: int, kind: str) -> str:
    return os.path.join(folder, f"rank{rank}.{kind}")


def _exits(folder: str) -> list[tuple[int, int]]:
    """(rank, exit code) of each rank that has ended, in the order they ended."""
    try:
        with open(os.path.join(folder, "exits")) as f:
            return [(int(rank), int(code)) for rank, code in (line.split() for line in f if line.strip())]
    except FileNotFoundError:
        return []


def _wait_all(launcher: subprocess.Popen, n: int, folder: str, deadline: float, timeout: float) -> None:
    """Wait for every rank until ``deadline``; raise for the first that failed, or the first that is late."""
    try:
        launcher.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        ended = dict(_exits(folder))
        late = min(set(range(n)) - set(ended), default=0)
        raise TimeoutError(f"rank {late} of {n} did not finish within timeout_s = {timeout:g} seconds") from None
    for rank, code in _exits(folder):
        if code != 0:  # the first to fail; the ranks killed after it come later in the file
            with open(_log(folder, rank, "err")) as err:
                raise RuntimeError(f"rank {rank} of {n} failed (exit {code}): {err.read()[-2000:]}")
    if launcher.returncode != 0:
        with open(os.path.join(folder, "launcher.log")) as log:
            raise RuntimeError(f"the ranks' launcher failed (exit {launcher.returncode}): {log.read()[-2000:]}")


def _reap(launcher: subprocess.Popen | None) -> None:
    """Kill what is left of the launcher's session (the launcher and its ranks), then reap the launcher."""
    if launcher is None:
        return
    launcher.stdin.close()
    try:
        os.killpg(launcher.pid, signal.SIGKILL)  # the ranks too: a rank the launcher left is still in its group
    except ProcessLookupError:
        pass
    try:
        launcher.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass


def _run_local_ranks(
    code: str, configs: list, folder: str, env: dict, timeout: float, preload: tuple = ()
) -> list[str]:
    """Run ``code`` once per config as local processes (rank ``i`` gets ``configs[i]`` as JSON),
    forked from one launcher that has imported the modules of ``preload``.

    Each rank writes to files in ``folder``, not pipes (a rank that writes much can never block
    on a full pipe). Waits up to ``timeout`` seconds in all; a rank that fails raises with the
    end of its stderr, one that is late raises TimeoutError. None outlives the call: what is left
    is killed and reaped. Returns what each rank printed.
    """
    launcher = None
    deadline = time.monotonic() + timeout
    try:
        launcher = _start(code, configs, folder, env, preload)
        _wait_all(launcher, len(configs), folder, deadline, timeout)
        printed = []
        for rank in range(len(configs)):
            with open(_log(folder, rank, "out")) as out:
                printed.append(out.read())
        return printed
    finally:
        _reap(launcher)


#: What every rank of a live run imports first: the launcher imports it once, before it forks.
RANK_PRELOAD = ("torch", "torch.distributed")


def _run_script(functions: tuple, configs: list, prefix: str, env: dict, timeout: float) -> str:
    """:func:`_script` of ``functions`` on one local rank per config, in a fresh temporary folder
    (removed after) that holds the rendezvous file; the last line rank 0 printed."""
    folder = tempfile.mkdtemp(prefix=prefix)
    store = {"store_path": os.path.join(folder, "store")}
    try:
        configs = [{**cfg, **store} for cfg in configs]
        printed = _run_local_ranks(_script(*functions), configs, folder, env, timeout, preload=RANK_PRELOAD)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return printed[0].strip().splitlines()[-1]
