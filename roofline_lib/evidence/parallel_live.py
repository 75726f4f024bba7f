"""Data, fully sharded and tensor parallelism measured live with torch.distributed on this machine.

:func:`measure_parallel` starts ``n_ranks`` local processes (gloo on CPU tensors, rendezvous through
a file, sockets on the loopback interface: :mod:`~roofline_lib.evidence.local_ranks`) and trains one small residual MLP three ways, a few Adam steps each:

* **DDP**: ``DistributedDataParallel``, every rank a whole replica (ZeRO stage 0);
* **FSDP**: ``torch.distributed.fsdp.fully_shard`` on every block and on the root (ZeRO-3);
* **TP**: ``torch.distributed.tensor.parallel.parallelize_module``, each block's first linear
  column-parallel and its second row-parallel (Megatron's MLP split).

For each it reads, on every rank, the bytes of parameters, gradients and optimizer state it holds
(local shards of DTensors), the step time, and every collective one profiled step issued: the
PyTorch profiler records the ``c10d::`` operation the framework asked for and the ``gloo:`` call
that ran it, with its tensor's size. :func:`compare_parallel` prices those collectives with the
library's ring accounting (:func:`~roofline_lib.workloads.comms.collective_bytes_per_rank`) and sets them, and
the memory, beside what :mod:`~roofline_lib.workloads.parallel` and :mod:`~roofline_lib.workloads.train_memory` predict.

Gloo has no reduce-scatter of its own: it runs FSDP's reduce-scatter as an all-reduce and keeps
one shard, so its wire carries more than the collective issued. Both counts are kept apart
(``issued`` and ``wire``); NCCL on GPUs runs the reduce-scatter itself. Nothing here is a GPU run.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import time
from dataclasses import dataclass

from ..core.checks import _positive, _positive_int
from ..workloads.comms import collective_bytes_per_rank
from ..workloads.parallel import data_parallel_bytes, tensor_parallel_bytes
from ..workloads.train_memory import zero_memory
from .local_ranks import _join_group, _loopback_env, _run_script

__all__ = ["LiveRun", "LiveMeasurement", "ParallelComparison", "compare_parallel", "measure_parallel"]

MODES = ("ddp", "fsdp", "tp")

_ISSUED = {  # the c10d operation the framework called -> the collective it is
    "c10d::allreduce_": "all_reduce",
    "c10d::allreduce_coalesced_": "all_reduce",
    "c10d::_allgather_base_": "all_gather",
    "c10d::allgather_": "all_gather",
    "c10d::allgather_into_tensor_coalesced_": "all_gather",
    "c10d::_reduce_scatter_base_": "reduce_scatter",
    "c10d::reduce_scatter_": "reduce_scatter",
    "c10d::reduce_scatter_tensor_coalesced_": "reduce_scatter",
    "c10d::broadcast_": "broadcast",
}


@dataclass(frozen=True)
class LiveRun:
    """One way of training, measured on one rank. Bytes are this rank's; seconds per step."""

    mode: str
    n_ranks: int
    n_params: int  # the whole model's
    param_bytes: int
    grad_bytes: int
    optimizer_bytes: int  # Adam's two moments (the step counters, one number per tensor, left out)
    step_seconds: float
    collectives: tuple  # (issued, ran_as, elements of the tensor gloo was given) per call
    element_bytes: int

    def _priced(self, which: int) -> float:
        total = 0.0
        for call in self.collectives:
            kind, elems = call[which], call[2]
            size = elems * self.element_bytes
            if kind == "all_gather":  # gloo is given this rank's piece; the collective's S is all of them
                size *= self.n_ranks
            if kind == "broadcast":
                continue  # DDP's start-up broadcast, outside the step
            total += collective_bytes_per_rank(kind, size, self.n_ranks)
        return total

    @property
    def issued_bytes(self) -> float:
        """Bytes this rank sends per step for the collectives the framework issued (ring accounting)."""
        return self._priced(0)

    @property
    def wire_bytes(self) -> float:
        """Bytes this rank sends per step for what gloo ran (a reduce-scatter as an all-reduce)."""
        return self._priced(1)


@dataclass(frozen=True)
class LiveMeasurement:
    """The three runs, and what they ran on."""

    runs: dict  # mode -> LiveRun (rank 0)
    model: dict  # d_model, d_ff, n_blocks, tokens per rank per step
    backend: str
    torch_version: str
    cpu: str
    cores: int
    date: str
    wall_seconds: float

    @property
    def label(self) -> str:
        return (
            f"torch {self.torch_version}, {self.backend}, {self.runs['ddp'].n_ranks} ranks on {self.cpu} "
            f"({self.cores} cores), {self.date}"
        )


@dataclass(frozen=True)
class ParallelComparison:
    """One live run beside the library's prediction for it."""

    mode: str
    measured_bytes: float  # issued, per rank per step
    wire_bytes: float
    predicted_bytes: float
    measured_state_bytes: float  # parameters + gradients + optimizer state, per rank
    predicted_state_bytes: float
    step_seconds: float

    @property
    def bytes_ratio(self) -> float:
        return self.measured_bytes / self.predicted_bytes

    @property
    def state_ratio(self) -> float:
        return self.measured_state_bytes / self.predicted_state_bytes


# ---------------------------------------------------------------------------------- on each rank


def _residual_mlp(d: int, f: int, blocks: int):
    """The same model on every rank: a ``d x d`` input layer, then ``blocks`` residual blocks
    ``d -> f -> d`` with a GELU between."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.up, self.act, self.down = nn.Linear(d, f), nn.GELU(), nn.Linear(f, d)

        def forward(self, x):
            return x + self.down(self.act(self.up(x)))

    torch.manual_seed(0)  # the same weights on every rank
    return nn.Sequential(nn.Linear(d, d), *[Block() for _ in range(blocks)])


def _wrapped(mode: str, model, mesh, blocks: int):
    """``model`` made DDP, FSDP (every block and the root) or TP (Megatron's MLP split)."""
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    from torch.nn.parallel import DistributedDataParallel

    if mode == "ddp":
        return DistributedDataParallel(model)
    if mode == "fsdp":
        for m in model:
            fully_shard(m, mesh=mesh)
        return fully_shard(model, mesh=mesh)
    plan = {f"{i + 1}.up": ColwiseParallel() for i in range(blocks)}
    plan.update({f"{i + 1}.down": RowwiseParallel() for i in range(blocks)})
    return parallelize_module(model, mesh, plan)


def _local_bytes(tensors) -> int:
    """Bytes of the tensors this rank holds (a DTensor's local shard)."""
    local = [t.to_local() if hasattr(t, "to_local") else t for t in tensors if t is not None]
    return sum(t.numel() * t.element_size() for t in local)


def _profiled_collectives(step) -> list:
    """Run ``step`` once under the profiler: [c10d operation issued, gloo call that ran it, elements
    of the tensor gloo was given] per collective call."""
    import math

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        step()
    calls, issued = [], None
    for e in sorted(prof.events(), key=lambda e: e.time_range.start):
        if e.name.startswith("c10d::"):
            issued = e.name
        elif e.name.startswith("gloo:") and e.input_shapes and e.input_shapes[0]:
            calls.append([issued, e.name[len("gloo:") :], math.prod(e.input_shapes[0])])
    return calls


def _train(mode: str, cfg: dict, mesh, gen) -> dict:
    """Train one way a few Adam steps; what this rank holds, its step time and one step's collectives."""
    import time

    import torch
    import torch.distributed as dist

    model = _wrapped(mode, _residual_mlp(cfg["d_model"], cfg["d_ff"], cfg["n_blocks"]), mesh, cfg["n_blocks"])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(cfg["tokens"], cfg["d_model"], generator=gen)
    if mode == "tp":  # every TP rank sees the same tokens
        dist.broadcast(x, 0)

    def step():
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)

    for _ in range(cfg["warmup"]):
        step()
    calls = _profiled_collectives(step)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(cfg["steps"]):
        step()
    dist.barrier()
    params = list(model.parameters())
    return {
        "n_params": sum(p.numel() for p in params),  # DTensors count their global size
        "param_bytes": _local_bytes(params),
        "grad_bytes": _local_bytes(p.grad for p in params),
        "optimizer_bytes": _local_bytes(v for s in opt.state.values() for k, v in s.items() if k != "step"),
        "step_seconds": (time.perf_counter() - start) / cfg["steps"],
        "collectives": calls,
        "element_bytes": 4,  # float32 throughout
    }


def _worker_main(argv=None) -> None:
    """One rank: build the model, train it DDP, FSDP and TP, print what it measured as JSON.

    Started by :func:`measure_parallel` with its settings as JSON in ``argv[1]``.
    """
    import json
    import sys

    cfg = json.loads((argv or sys.argv)[1])
    dist = _join_group(cfg, "gloo")
    import torch
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("cpu", (cfg["n_ranks"],))
    gen = torch.Generator().manual_seed(1 + (cfg["rank"] if cfg["shard_data"] else 0))
    results = {mode: _train(mode, cfg, mesh, gen) for mode in cfg["modes"]}
    dist.barrier()
    dist.destroy_process_group()
    print(json.dumps(results), flush=True)


_RANK_SCRIPT = (_join_group, _residual_mlp, _wrapped, _local_bytes, _profiled_collectives, _train, _worker_main)

# ---------------------------------------------------------------------------------- the caller


def _model_sizes(d_model, d_ff, n_blocks, tokens, n_ranks) -> tuple[dict, int]:
    """The model's sizes and the ranks, refused before any process starts."""
    sizes = {
        "d_model": _positive_int(d_model, "d_model", "features"),
        "d_ff": _positive_int(d_ff, "d_ff", "features"),
        "n_blocks": _positive_int(n_blocks, "n_blocks", "blocks"),
        "tokens": _positive_int(tokens, "tokens", "tokens per rank"),
    }
    n = _positive_int(n_ranks, "n_ranks", "processes")
    if n != 2:
        raise ValueError(f"n_ranks must be 2 (the tensor-parallel split is 2-way), got {n_ranks!r}")
    if sizes["d_ff"] % n:
        raise ValueError(f"d_ff must split evenly over the {n} ranks, got {d_ff!r} features")
    return sizes, n


def _live_runs(payload: dict, n: int) -> dict:
    """Rank 0's JSON, one LiveRun per mode; each collective named as the framework issued it."""
    return {
        mode: LiveRun(
            mode=mode,
            n_ranks=n,
            n_params=int(r["n_params"]),
            param_bytes=int(r["param_bytes"]),
            grad_bytes=int(r["grad_bytes"]),
            optimizer_bytes=int(r["optimizer_bytes"]),
            step_seconds=float(r["step_seconds"]),
            collectives=tuple((_ISSUED.get(c[0], c[1]), c[1], int(c[2])) for c in r["collectives"]),
            element_bytes=int(r["element_bytes"]),
        )
        for mode, r in payload.items()
    }


def measure_parallel(
    *,
    d_model: int = 256,
    d_ff: int = 1024,
    n_blocks: int = 2,
    tokens: int = 64,
    steps: int = 5,
    warmup: int = 2,
    n_ranks: int = 2,
    timeout_s: float = 120.0,
) -> LiveMeasurement:
    """Train a residual MLP DDP, FSDP and 2-way TP on ``n_ranks`` local gloo processes (module
    docstring). ``tokens`` rows of width ``d_model`` per rank and step; ``n_blocks`` blocks of
    ``d_model -> d_ff -> d_model`` after one ``d_model x d_model`` input layer. A few seconds."""
    import torch

    sizes, n = _model_sizes(d_model, d_ff, n_blocks, tokens, n_ranks)
    timeout = _positive(timeout_s, "timeout_s", "seconds")
    env = _loopback_env("the ranks talk over 127.0.0.1 only")
    base = {
        **sizes,
        "n_ranks": n,
        "modes": list(MODES),
        "steps": _positive_int(steps, "steps", "steps"),
        "warmup": _positive_int(warmup, "warmup", "steps"),
        "timeout_s": timeout,
        "shard_data": True,
    }
    started = time.perf_counter()
    configs = [{**base, "rank": rank} for rank in range(n)]
    runs = _live_runs(json.loads(_run_script(_RANK_SCRIPT, configs, "roofline-parallel-", env, timeout)), n)
    return LiveMeasurement(
        runs=runs,
        model={**sizes, "n_params": runs["ddp"].n_params},
        backend="gloo",
        torch_version=torch.__version__,
        cpu=platform.processor() or platform.machine(),
        cores=os.cpu_count() or 1,
        date=datetime.date.today().isoformat(),
        wall_seconds=time.perf_counter() - started,
    )


def compare_parallel(measurement) -> dict:
    """Each live run beside the library: bytes per rank per step, model state per rank, step time.

    Predictions (fp32 throughout, Adam): DDP sends one all-reduce of every gradient and holds a
    whole replica (ZeRO-0, :func:`~roofline_lib.workloads.train_memory.zero_memory`); FSDP sends ZeRO-3's
    two all-gathers and one reduce-scatter and holds ``1 / n`` of everything; TP sends two
    all-reduces of the activations per block (forward after the row-parallel linear, backward
    before the column-parallel one) and holds ``1 / n`` of the split matrices and all of the rest.
    """
    if not isinstance(measurement, LiveMeasurement):
        raise TypeError(f"measurement must be a LiveMeasurement (from measure_parallel), got {measurement!r}")
    m = measurement.model
    n = measurement.runs["ddp"].n_ranks
    p = m["n_params"]
    elem = 4  # float32
    split = m["n_blocks"] * (2 * m["d_model"] * m["d_ff"] + m["d_ff"])  # the TP-split weights and up-biases
    predicted = {
        "ddp": (data_parallel_bytes(p, n, 0, elem), zero_memory(p, n, 0, precision="fp32").total),
        "fsdp": (data_parallel_bytes(p, n, 3, elem), zero_memory(p, n, 3, precision="fp32").total),
        "tp": (
            tensor_parallel_bytes(m["tokens"], m["d_model"], n, m["n_blocks"], elem, collectives_per_layer=2),
            zero_memory(split / n + (p - split), 1, 0, precision="fp32").total,
        ),
    }
    out = {}
    for mode, run in measurement.runs.items():
        b, s = predicted[mode]
        out[mode] = ParallelComparison(
            mode=mode,
            measured_bytes=run.issued_bytes,
            wire_bytes=run.wire_bytes,
            predicted_bytes=b,
            measured_state_bytes=float(run.param_bytes + run.grad_bytes + run.optimizer_bytes),
            predicted_state_bytes=s,
            step_seconds=run.step_seconds,
        )
    return out
