"""The planner's search: every layout of a training step on a cluster, the ones that fit ranked.

:func:`fit_layouts` prices each way of splitting ``n`` GPUs that :func:`~.parallel.plan` accepts
(tensor-parallel widths inside a node that divide the heads, pipeline depths up to the layers,
data parallelism taking the rest, the widest expert-parallel group for a mixture of experts,
every ZeRO stage and recompute mode) and ranks the feasible ones by their step. A layout that
does not fit (:attr:`Plan.fit`) is kept apart and never ranked. When none fits, the search says
why: a sequence beyond the model's reach, or memory, with the fewest GPUs of the same node on
which some layout fits (found by doubling the GPU count, then bisecting the last doubling).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.checks import _positive_int
from ..core.formatting import memory_size
from ..models.transformer import TransformerConfig
from .feasibility import context_problem
from .parallel import OVERLAPPED_COMMS, Cluster, Plan, _as_cluster, _model, cluster, plan
from .train_memory import ACTIVATION_RECOMPUTE, _key, _stage

__all__ = ["LayoutSearch", "fit_layouts", "MAX_SEARCH_GPUS"]

#: The largest cluster the search for the fewest GPUs that fit tries.
MAX_SEARCH_GPUS = 65536

_ZERO_STAGES = (0, 1, 2, 3)


@dataclass(frozen=True)
class LayoutSearch:
    """Every layout priced on one cluster: the feasible ones fastest first, the rest apart. SI units.

    ``fewest_gpus`` and ``fewest`` are set when no layout fits in memory (the context is within
    the model's reach): the fewest GPUs of the same node on which one does, and the fastest layout
    there. ``reason`` says why nothing fits, with what would.
    """

    model: str
    cluster: str
    n_gpus: int
    plans: tuple[Plan, ...]  # feasible, fastest first (then least communication, least memory)
    infeasible: tuple[Plan, ...]  # priced, does not fit; least memory per GPU first
    fewest_gpus: int | None = None
    fewest: Plan | None = None
    reason: str | None = None

    @property
    def feasible(self) -> bool:
        return bool(self.plans)

    @property
    def best(self) -> Plan:
        """The fastest layout that fits; ValueError (saying why and what would fit) when none does."""
        if not self.plans:
            raise ValueError(self.headline)
        return self.plans[0]

    @property
    def headline(self) -> str:
        """The line a reader sees first: ``fits: ...`` with the best layout, or ``DOES NOT FIT: ...``."""
        if self.plans:
            p = self.plans[0]
            return (
                f"fits: {len(self.plans)} of {len(self.plans) + len(self.infeasible)} layouts on {self.n_gpus} GPUs; "
                f"the fastest holds {memory_size(p.memory.total)} per GPU of {memory_size(p.memory.capacity)}"
            )
        return f"DOES NOT FIT: {self.reason}"

    def __str__(self) -> str:
        lines = [self.headline]
        lines += [f"  {i}. {p}" for i, p in enumerate(self.plans[:5], 1)]
        if self.fewest is not None:
            lines.append(f"  on {self.fewest_gpus} GPUs: {self.fewest}")
        return "\n".join(lines)


def _widths(c: Cluster, cfg: TransformerConfig) -> list[int]:
    """Tensor-parallel widths: powers of two inside one node that divide the GPUs and the heads."""
    widths, t = [], 1
    while t <= min(c.node.n_gpus, c.n_gpus):
        if c.n_gpus % t == 0 and cfg.n_heads % t == 0:
            widths.append(t)
        t *= 2
    return widths


def _depths(n: int, cfg: TransformerConfig) -> list[int]:
    """Pipeline depths: every divisor of ``n`` up to the model's layers."""
    return [p for p in range(1, min(n, cfg.n_layers) + 1) if n % p == 0]


def _expert_width(cfg: TransformerConfig, dp: int) -> int:
    """The widest expert-parallel group that divides both the experts and ``dp`` (1 for a dense model)."""
    if not cfg.is_moe:
        return 1
    return max(e for e in range(1, dp + 1) if dp % e == 0 and cfg.n_experts % e == 0)


def _layouts(cfg, c: Cluster, global_batch: int, micro_batch: int, zeros, modes):
    """Every (tp, pp, dp, ep, zero, recompute) that splits ``c`` and ``global_batch`` evenly."""
    for tp in _widths(c, cfg):
        for pp in _depths(c.n_gpus // tp, cfg):
            dp = c.n_gpus // (tp * pp)
            if global_batch % (dp * micro_batch):
                continue
            ep = _expert_width(cfg, dp)
            for zero in zeros:
                for mode in modes:
                    yield {"dp": dp, "tp": tp, "pp": pp, "ep": ep, "zero": zero, "recompute": mode}


def _priced(cfg, c: Cluster, layouts, options: dict) -> list[Plan]:
    """Each layout planned; one whose groups would lie unevenly across nodes is not a layout, and is skipped."""
    plans = []
    for lay in layouts:
        try:
            plans.append(plan(cfg, c, **lay, **options))
        except ValueError:  # _members_per_node: a group that cannot lie the same way in every node
            continue
    return plans


def _any_fits(cfg, c: Cluster, global_batch: int, options: dict) -> Plan | None:
    """The fastest of the most frugal layouts (ZeRO-3, full recompute) that fits on ``c``, or None."""
    frugal = _layouts(cfg, c, global_batch, options["micro_batch"], (3,), ("full",))
    fits = [p for p in _priced(cfg, c, frugal, options) if p.feasible]
    return min(fits, key=lambda p: p.step_seconds) if fits else None


def _gpu_counts(c: Cluster):
    """Cluster sizes to try after ``c``: doubling inside a node, then whole nodes doubling."""
    n, per_node = c.n_gpus, c.node.n_gpus
    while n < MAX_SEARCH_GPUS:
        n = min(2 * n, per_node) if n < per_node else 2 * n
        yield n


def _fewest(cfg, c: Cluster, global_batch: int, options: dict) -> tuple[int, Plan] | None:
    """Fewest GPUs of ``c``'s node on which a layout fits: double until one does, then bisect in whole nodes."""
    low = c.n_gpus
    for n in _gpu_counts(c):
        found = _any_fits(cfg, cluster(c.node, n), global_batch, options)
        if found is None:
            low = n
            continue
        per_node = c.node.n_gpus
        lo, hi = max(low // per_node, 0), n // per_node  # in nodes: lo does not fit (or is part of one), hi does
        while hi - lo > 1 and n > per_node:
            mid = (lo + hi) // 2
            there = _any_fits(cfg, cluster(c.node, mid * per_node), global_batch, options)
            lo, hi, found = (lo, mid, there) if there is not None else (mid, hi, found)
        return found.n_gpus, found
    return None


def fit_layouts(
    model,
    cluster,
    *,
    global_batch,
    seq_len,
    micro_batch=1,
    zero=_ZERO_STAGES,
    recompute=ACTIVATION_RECOMPUTE,
    optimizer: str = "adam",
    precision: str = "mixed",
    compute_precision: str = "bf16",
    convention: str = "6N",
    overlap=OVERLAPPED_COMMS,
) -> LayoutSearch:
    """Every layout of ``model`` on ``cluster`` (module docstring), the feasible ones fastest first.

    ``global_batch`` sequences of ``seq_len`` tokens per step, ``micro_batch`` at a time; ``zero``
    and ``recompute`` are the stages and modes to try. A layout that does not fit, in memory or in
    the model's context, is never ranked: :attr:`LayoutSearch.plans` holds only those that fit.
    Refuses bad input naming the parameter, as :func:`~.parallel.plan` does.
    """
    cfg = _model(model)
    c = _as_cluster(cluster)
    gb = _positive_int(global_batch, "global_batch", "sequences")
    s = _positive_int(seq_len, "seq_len", "tokens")
    mb = _positive_int(micro_batch, "micro_batch", "sequences")
    zeros = tuple(_stage(z) for z in (zero if isinstance(zero, (tuple, list)) else (zero,)))
    modes = tuple(
        _key(m, ACTIVATION_RECOMPUTE, "recompute")
        for m in (recompute if isinstance(recompute, (tuple, list)) else (recompute,))
    )
    if not zeros or not modes:
        raise ValueError(f"zero and recompute must each name at least one choice, got {zero!r} and {recompute!r}")
    options = dict(
        seq_len=s, global_batch=gb, micro_batch=mb, optimizer=optimizer, precision=precision,
        compute_precision=compute_precision, convention=convention, overlap=overlap,
    )  # fmt: skip
    # one plain layout first, so that a bad option is refused by name rather than skipped with every layout
    plan(cfg, c, dp=c.n_gpus, zero=zeros[0], recompute=modes[0], **(options | {"global_batch": c.n_gpus * mb}))
    everything = _priced(cfg, c, _layouts(cfg, c, gb, mb, zeros, modes), options)
    fits = sorted(
        (p for p in everything if p.feasible), key=lambda p: (p.step_seconds, p.serial_seconds, p.memory.total)
    )
    rest = sorted((p for p in everything if not p.feasible), key=lambda p: p.memory.total)
    name = cfg.name or "the model"
    if fits:
        return LayoutSearch(name, str(c), c.n_gpus, tuple(fits), tuple(rest))
    if not everything:
        reason = (
            f"no layout splits global_batch = {gb} sequences of micro_batch {mb} over {c.n_gpus} GPUs "
            "(dp x micro_batch must divide it)"
        )
        return LayoutSearch(name, str(c), c.n_gpus, (), (), reason=reason)
    context = context_problem(cfg, s)
    if context:
        return LayoutSearch(name, str(c), c.n_gpus, (), tuple(rest), reason=context)
    least = rest[0]
    found = _fewest(cfg, c, gb, options)
    reason = (
        f"no layout of {name} fits on {c}: the least memory per GPU is {memory_size(least.memory.total)} "
        f"({_layout_text(least)}) against the {c.gpu.name}'s {memory_size(least.memory.capacity)}; "
    )
    if found is None:
        reason += f"no cluster of up to {MAX_SEARCH_GPUS:,} GPUs holds it at a global batch of {gb}"
        return LayoutSearch(name, str(c), c.n_gpus, (), tuple(rest), reason=reason)
    n, there = found
    reason += f"the fewest GPUs of this node on which one fits: {n:,} ({_layout_text(there)})"
    return LayoutSearch(name, str(c), c.n_gpus, (), tuple(rest), fewest_gpus=n, fewest=there, reason=reason)


def _layout_text(p: Plan) -> str:
    """``dp=2, tp=8, pp=4, zero=1, recompute selective``: the ranks above 1, the stage and the recompute."""
    ranks = ", ".join(f"{k}={v}" for k, v in p.layout.items() if v != 1 or k == "zero")
    return f"{ranks}, recompute {p.recompute}"
