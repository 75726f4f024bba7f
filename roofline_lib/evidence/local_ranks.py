"""Local ranks: start ``n`` processes of one script on this machine that meet over 127.0.0.1 only.

The live runs (:mod:`~roofline_lib.evidence.collectives_live`, :mod:`~roofline_lib.evidence.parallel_live`)
send each rank a script made of a few functions' source, run as ``python -c`` with its settings
as JSON: it imports only the standard library and torch, not roofline_lib. The ranks meet
through a file in a fresh temporary folder (a TCPStore would listen on every interface), gloo's
sockets are bound to the loopback interface on free ports the operating system picks, and no
process outlives the call.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
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


def _script(*functions) -> str:
    """The source of ``functions`` and a call to the last one: what each rank runs as ``python -c``."""
    return "\n\n".join(inspect.getsource(f) for f in functions) + f"\n{functions[-1].__name__}()\n"


def _start(code: str, configs: list, folder: str, env: dict, procs: list) -> None:
    """Start one process per config into ``procs``, each writing to its own files in ``folder``."""
    for rank, cfg in enumerate(configs):
        with open(_log(folder, rank, "out"), "w") as out, open(_log(folder, rank, "err"), "w") as err:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", code, json.dumps(cfg)],
                    env=env,
                    stdout=out,
                    stderr=err,
                    stdin=subprocess.DEVNULL,
                )
            )


def _log(folder: str, rank: int, kind: str) -> str:
    return os.path.join(folder, f"rank{rank}.{kind}")


def _wait_all(procs: list, folder: str, deadline: float, timeout: float) -> None:
    """Wait for every rank until ``deadline``; raise for the first that is late or failed."""
    n = len(procs)
    for rank, p in enumerate(procs):
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"rank {rank} of {n} did not finish within timeout_s = {timeout:g} seconds") from None
        if p.returncode != 0:
            with open(_log(folder, rank, "err")) as err:
                raise RuntimeError(f"rank {rank} of {n} failed (exit {p.returncode}): {err.read()[-2000:]}")


def _reap(procs: list) -> None:
    """Kill what is left, then reap it."""
    for p in procs:
        if p.poll() is None:
            p.kill()
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass


def _run_local_ranks(code: str, configs: list, folder: str, env: dict, timeout: float) -> list[str]:
    """Run ``code`` once per config as local processes (rank ``i`` gets ``configs[i]`` as JSON).

    Each rank writes to files in ``folder``, not pipes (a rank that writes much can never block
    on a full pipe). Waits up to ``timeout`` seconds in all; a rank that fails raises with the
    end of its stderr, one that is late raises TimeoutError. None outlives the call: what is left
    is killed and reaped. Returns what each rank printed.
    """
    procs: list = []
    deadline = time.monotonic() + timeout
    try:
        _start(code, configs, folder, env, procs)
        _wait_all(procs, folder, deadline, timeout)
        printed = []
        for rank in range(len(configs)):
            with open(_log(folder, rank, "out")) as out:
                printed.append(out.read())
        return printed
    finally:
        _reap(procs)


def _run_script(functions: tuple, configs: list, prefix: str, env: dict, timeout: float) -> str:
    """:func:`_script` of ``functions`` on one local rank per config, in a fresh temporary folder
    (removed after) that holds the rendezvous file; the last line rank 0 printed."""
    folder = tempfile.mkdtemp(prefix=prefix)
    store = {"store_path": os.path.join(folder, "store")}
    try:
        printed = _run_local_ranks(_script(*functions), [{**cfg, **store} for cfg in configs], folder, env, timeout)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return printed[0].strip().splitlines()[-1]
