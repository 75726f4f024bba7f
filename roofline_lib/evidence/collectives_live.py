"""All-reduce and all-gather timed live on local ranks with torch.distributed, to fit alpha and beta.

:func:`measure_collectives` starts ``n_ranks`` local processes (:mod:`~roofline_lib.evidence.local_ranks`:
they talk over 127.0.0.1 only), times each collective at each size as the slowest rank saw it,
and returns the timings; :meth:`CollectiveMeasurement.fit` fits the alpha-beta model of
:mod:`~roofline_lib.workloads.comms` to them. NCCL on ``cuda:rank`` where this machine has a GPU
per rank, otherwise gloo on CPU tensors. torch is imported only inside the calls, so importing
this module stays light.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.checks import _positive, _positive_int
from ..workloads.comms import AlphaBetaFit, _collective_key, algorithm_bandwidth, bus_bandwidth, fit_alpha_beta
from .local_ranks import _join_group, _loopback_env, _run_script

__all__ = ["CollectiveMeasurement", "CollectiveTiming", "measure_collectives"]


@dataclass(frozen=True)
class CollectiveTiming:
    """One collective at one size: the best repeat's time per call, as the slowest rank saw it.

    The best (smallest) repeat, because on a shared machine noise only ever adds time.
    """

    collective: str
    n_ranks: int
    message_bytes: int  # NCCL's size S (all_gather: the whole gathered output)
    seconds: float
    repeats: tuple[float, ...]  # each repeat's slowest-rank time per call

    @property
    def algorithm_bytes_per_s(self) -> float:
        return algorithm_bandwidth(self.message_bytes, self.seconds)

    @property
    def bus_bytes_per_s(self) -> float:
        return bus_bandwidth(self.collective, self.message_bytes, self.seconds, self.n_ranks)


@dataclass(frozen=True)
class CollectiveMeasurement:
    """Every timing of one run of :func:`measure_collectives`, with what it ran on."""

    backend: str
    device: str
    n_ranks: int
    torch_version: str
    timings: tuple[CollectiveTiming, ...]
    wall_seconds: float

    def series(self, collective) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """(message_bytes, seconds) of one collective, smallest message first."""
        c = _collective_key(collective)
        rows = sorted((t for t in self.timings if t.collective == c), key=lambda t: t.message_bytes)
        if not rows:
            have = ", ".join(sorted({t.collective for t in self.timings}))
            raise ValueError(f"no timings of {c} in this measurement; it has: {have}")
        return tuple(r.message_bytes for r in rows), tuple(r.seconds for r in rows)

    def fit(self, collective, algorithm: str = "ring") -> AlphaBetaFit:
        """:func:`~roofline_lib.workloads.comms.fit_alpha_beta` on one collective's timings."""
        sizes, seconds = self.series(collective)
        return fit_alpha_beta(sizes, seconds, collective, self.n_ranks, algorithm)


_MEASURABLE = ("all_reduce", "all_gather")
_DEFAULT_SIZES = tuple(4**k for k in range(5, 13))  # 1 KiB to 16 MiB in steps of 4x

# ---------------------------------------------------------------------------------- on each rank


def _timed(call, iters: int, device) -> float:
    """Seconds per call of ``iters`` calls, as the slowest rank saw them."""
    import time

    import torch
    import torch.distributed as dist

    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        call()
    if device.type == "cuda":  # pragma: no cover - needs several GPUs
        torch.cuda.synchronize(device)
    elapsed = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # a collective ends with its slowest rank
    return float(elapsed)


def _collective_call(name: str, n_elem: int, n_ranks: int, device):
    """One call of collective ``name`` on ``n_elem`` float32 values (all_gather: S is the whole
    output, each rank brings S / n)."""
    import functools

    import torch
    import torch.distributed as dist

    if name == "all_reduce":
        return functools.partial(dist.all_reduce, torch.ones(n_elem, device=device))
    chunk = torch.ones(n_elem // n_ranks, device=device)
    out = torch.empty(chunk.numel() * n_ranks, device=device)
    return functools.partial(dist.all_gather_into_tensor, out, chunk)


def _cases(cfg: dict, device) -> list:
    """(name, bytes, call, calls per repeat) of every collective at every size, each warmed up."""
    cases = []
    for name in cfg["collectives"]:
        for size in cfg["sizes"]:
            n_elem = size // 4  # float32
            call = _collective_call(name, n_elem, cfg["n_ranks"], device)
            for _ in range(3):  # warm up: the first calls set up buffers and connections
                call()
            once = _timed(call, 1, device)  # every rank agrees on the call count: the slowest rank's view
            cases.append((name, int(n_elem * 4), call, max(1, min(1000, int(cfg["budget_s"] / max(once, 1e-7))))))
    return cases


def _worker_main(argv=None) -> None:
    """One rank: join the group over 127.0.0.1, time every collective at every size.

    Started by :func:`measure_collectives` with its settings as JSON in ``argv[1]``; rank 0
    prints the timings as one JSON line on stdout.
    """
    import json
    import sys

    cfg = json.loads((argv or sys.argv)[1])
    backend = cfg["backend"]
    dist = _join_group(cfg, backend)
    import torch

    device = torch.device("cuda", cfg["rank"]) if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":  # pragma: no cover - needs several GPUs
        torch.cuda.set_device(device)
    cases = _cases(cfg, device)
    per_call = [[] for _ in cases]
    for _ in range(cfg["repeats"]):  # round-robin: a burst of noise spoils one repeat of a size, not all
        for i, (_, _, call, iters) in enumerate(cases):
            per_call[i].append(_timed(call, iters, device))
    rows = [[name, size, times] for (name, size, _, _), times in zip(cases, per_call)]
    dist.barrier()
    dist.destroy_process_group()
    if cfg["rank"] == 0:
        print(json.dumps(rows), flush=True)


_GLOO_NEEDS_LOOPBACK = "gloo would bind to another address, and this measurement talks over 127.0.0.1 only"
_RANK_SCRIPT = (_join_group, _timed, _collective_call, _cases, _worker_main)

# ---------------------------------------------------------------------------------- the caller


def _checked_plan(n_ranks, message_bytes, collectives) -> tuple[int, tuple[str, ...], tuple[int, ...]]:
    """(ranks, collectives, sizes), refused before any process starts."""
    n = _positive_int(n_ranks, "n_ranks", "processes")
    if not 2 <= n <= 8:
        raise ValueError(f"n_ranks must be between 2 and 8 local processes, got {n_ranks!r}")
    names = tuple(_collective_key(c) for c in collectives)
    for c in names:
        if c not in _MEASURABLE:
            raise ValueError(f"collectives must be among {', '.join(_MEASURABLE)}, got {c!r}")
    sizes = tuple(int(_positive_int(s, "message_bytes", "bytes")) for s in message_bytes)
    if not sizes:
        raise ValueError("message_bytes must hold at least one size in bytes")
    for s in sizes:
        if s % (4 * n):
            raise ValueError(
                f"message_bytes must be multiples of 4 * n_ranks = {4 * n} bytes "
                f"(float32, split evenly across ranks), got {s}"
            )
    return n, names, sizes


def _backend(backend: str, n: int, torch) -> str:
    """'auto' is NCCL where this machine has a GPU per rank, gloo otherwise."""
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() and torch.cuda.device_count() >= n else "gloo"
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be 'auto', 'gloo' or 'nccl', got {backend!r}")
    if backend == "nccl":  # said here, before a rank starts, not in a rank's traceback
        import torch.distributed as dist

        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if not dist.is_nccl_available() or gpus < n:
            raise ValueError(
                f"backend 'nccl' needs a torch built with NCCL and a GPU per rank: n_ranks = {n}, this machine "
                f"has {gpus} GPU(s){'' if dist.is_nccl_available() else ' and a torch without NCCL'}; use 'gloo'"
            )
    return backend


def _timings(rows: list, n: int) -> tuple[CollectiveTiming, ...]:
    """rank 0's rows, [name, bytes, each repeat's time per call], as timings at their best repeat."""
    return tuple(
        CollectiveTiming(
            collective=name, n_ranks=n, message_bytes=size, seconds=float(min(per_call)), repeats=tuple(per_call)
        )
        for name, size, per_call in rows
    )


def measure_collectives(
    n_ranks: int = 2,
    message_bytes: Sequence[int] = _DEFAULT_SIZES,
    collectives: Sequence[str] = _MEASURABLE,
    *,
    repeats: int = 5,
    budget_s_per_repeat: float = 0.005,
    backend: str = "auto",
    timeout_s: float = 60.0,
) -> CollectiveMeasurement:
    """Time all-reduce and all-gather on ``n_ranks`` local processes with torch.distributed.

    Every process talks to the others over 127.0.0.1 only: the rendezvous is a file in a fresh
    temporary folder (so nothing listens on a network port for it), and gloo's sockets are bound
    to the loopback interface, on free ports the operating system picks. ``backend="auto"`` is NCCL
    on tensors on ``cuda:rank`` when this machine has at least ``n_ranks`` GPUs, otherwise gloo on
    CPU tensors. Sizes are float32 buffers of ``message_bytes`` (a multiple of ``4 * n_ranks``).
    Every worker is joined within ``timeout_s`` seconds or killed; none outlives the call. Takes a
    few seconds on CPU.
    """
    import torch

    n, names, sizes = _checked_plan(n_ranks, message_bytes, collectives)
    settings = {
        "n_ranks": n,
        "collectives": names,
        "sizes": sizes,
        "repeats": _positive_int(repeats, "repeats", "repeats"),
        "budget_s": _positive(budget_s_per_repeat, "budget_s_per_repeat", "seconds"),
        "timeout_s": _positive(timeout_s, "timeout_s", "seconds"),
    }
    settings["backend"] = _backend(backend, n, torch)
    gloo = settings["backend"] == "gloo"
    env = _loopback_env(_GLOO_NEEDS_LOOPBACK if gloo else None)
    started = time.perf_counter()
    configs = [{**settings, "rank": rank} for rank in range(n)]
    printed = _run_script(_RANK_SCRIPT, configs, "roofline-comms-", env, settings["timeout_s"])
    timings = _timings(json.loads(printed), n)
    return CollectiveMeasurement(
        backend=settings["backend"],
        device="cpu" if gloo else "cuda",
        n_ranks=n,
        torch_version=torch.__version__,
        timings=timings,
        wall_seconds=time.perf_counter() - started,
    )
