"""Parallelism on the roofline: what each way of splitting a training step costs, and a planner.

A training step on ``n`` GPUs is split up to five ways at once (Shoeybi et al. 2019; Narayanan
et al. 2021; Korthikanti et al. 2022; the scaling book's training chapter). Ranks are laid out
innermost first, as Megatron-LM lays them: ``tp`` neighbours share a node, then ``cp``, then
``dp`` (``ep`` is carved out of the ``dp x cp`` ranks), and ``pp`` is outermost.

=====  ====================================  ============================================  ======
dim    what crosses the wire, per GPU        collectives per step                          grows
=====  ====================================  ============================================  ======
tp     activations, ``b s h`` values          4 all-reduces per layer and micro-batch        tokens
       (Megatron's f and g operators)         (6 with full recompute: the forward's again)
cp     keys and values of the whole           all-gather forward, all-gather and             tokens
       sequence, per layer                    reduce-scatter backward: 3 per layer
dp     gradients of the GPU's weights         ZeRO 0-2: one all-reduce's bytes; ZeRO-3       fixed
                                              (FSDP): 2 all-gathers and a reduce-scatter
ep     each token to its ``k`` experts         4 all-to-alls per MoE layer (dispatch and      tokens
       and back                               combine, forward and backward)
pp     a micro-batch's activations at a       2 point-to-point sends per micro-batch and     tokens
       stage boundary                         virtual stage (forward, and its gradient back)
=====  ====================================  ============================================  ======

Each collective is priced by :func:`~roofline_lib.workloads.node_collectives.node_collective_cost` (hierarchical and
rail-aligned; a group strided across nodes drives only its members' NICs). The pipeline's idle
*bubble* is ``(pp - 1) / (v m)`` of the compute (:func:`pipeline_bubble_fraction`).

:func:`plan` turns each into a **roof**, seconds per step: ``compute`` (the busiest stage's FLOPs at
the dense peak, plus its bubble), ``hbm`` (weights, gradients, optimizer state and saved
activations through HBM) and one per parallel dimension. The step at the *longest* roof is the
fastest the layout can go if every communication hid under the compute; it cannot: a tensor-parallel
all-reduce sits between two dependent GEMMs, and an expert all-to-all before the experts' GEMMs, so
the planner adds those to the compute (the *critical path*) and lets only the data-, context- and
pipeline-parallel traffic overlap it (:data:`OVERLAPPED_COMMS`; ``overlap=`` changes it, and
:attr:`Plan.assumption` says which it made). The step is the longest of the critical path and the
roofs that overlap it; the *sum* of every roof is the step with nothing hidden. Real runs land between, below both: GEMMs reach 60-80 % of the peak, not 100 %.

A roof whose bytes grow with the batch (tp, cp, ep, pp) has a fixed comms intensity: it hides at
any batch or at none, whatever the batch (``critical_tokens_per_gpu`` is 0 or ``inf``). The
data-parallel bytes are fixed per step, so enough tokens per GPU hide them: its critical tokens
per GPU are ``tokens_per_gpu * dp_seconds / compute_seconds``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.checks import _flag, _positive, _positive_int
from ..core.formatting import memory_size
from ..core.formatting import seconds as seconds_text
from ..core.hardware import GPUSpec
from ..core.interconnect import NodeSpec
from ..core.roofline import Roof
from ..models.transformer import TransformerConfig, model_config
from .comms import collective_bytes_per_rank
from .comms_roofline import gradient_hiding_tokens
from .feasibility import Fit, fewest_devices, memory_fit
from .node_collectives import as_node, node_collective_cost
from .train_memory import ACTIVATION_RECOMPUTE, _key, _stage, activation_bytes_per_layer, state_bytes_per_param
from .training import flops_utilisation

__all__ = [
    "Cluster",
    "CommsRoof",
    "MemoryPerGPU",
    "OVERLAPPED_COMMS",
    "Plan",
    "cluster",
    "data_parallel_bytes",
    "expert_params",
    "pipeline_bubble_fraction",
    "plan",
    "tensor_parallel_bytes",
]

_WIRE_BYTES = 2  # activations, keys/values and gradients cross the wire in bf16


@dataclass(frozen=True)
class Cluster:
    """``n_gpus`` GPUs in nodes of one kind (whole nodes, or part of one)."""

    node: NodeSpec
    n_gpus: int

    @property
    def gpu(self) -> GPUSpec:
        return self.node.gpu

    @property
    def n_nodes(self) -> int:
        return math.ceil(self.n_gpus / self.node.n_gpus)

    def __str__(self) -> str:
        return f"{self.n_gpus} GPUs in {self.n_nodes} x {self.node.name}"


def cluster(node, n_gpus) -> Cluster:
    """A cluster of ``n_gpus`` in nodes of one kind ("8x H100"): part of one node, or whole nodes."""
    spec = as_node(node)
    n = _positive_int(n_gpus, "n_gpus", "GPUs")
    if n > spec.n_gpus and n % spec.n_gpus:
        raise ValueError(
            f"n_gpus must fill whole nodes of {spec.n_gpus} GPUs ({spec.name}) or fit in one, got {n_gpus!r}"
        )
    return Cluster(spec, n)


def pipeline_bubble_fraction(pp, micro_batches, virtual_stages=1) -> float:
    """The 1F1B pipeline's idle time over its busy time, ``(pp - 1) / (v m)`` (Narayanan et al.
    2021, sections 2.2.1-2.2.2: ``m`` micro-batches per step, ``v`` virtual stages per GPU in the
    interleaved schedule). ``pp = 4, m = 8``: 3 / 8 of the compute again, idle."""
    p = _positive_int(pp, "pp", "pipeline stages")
    m = _positive_int(micro_batches, "micro_batches", "micro-batches")
    v = _positive_int(virtual_stages, "virtual_stages", "virtual stages per GPU")
    return (p - 1) / (v * m)


def data_parallel_bytes(n_params, dp, zero, bytes_per_value=2) -> float:
    """Bytes each GPU sends per step for data parallelism over ``dp`` GPUs, ring accounting.

    ZeRO 0, 1 and 2: the gradients reduced once, an all-reduce's ``2 (dp - 1) / dp * N b`` (stage
    1 and 2 run it as a reduce-scatter then an all-gather of the updated weights: the same bytes).
    ZeRO-3 / FSDP: the weights all-gathered forward and again backward, and the gradients
    reduce-scattered, ``3 (dp - 1) / dp * N b``: 1.5 times as much (Rajbhandari et al. 2020, 7.2).
    ``N = 1e9, dp = 8, b = 2``: ``2 * 7 / 8 * 2e9 = 3.5e9`` bytes; ZeRO-3 ``5.25e9``.
    """
    n = _positive(n_params, "n_params", "parameters")
    d = _positive_int(dp, "dp", "data-parallel GPUs")
    z = _stage(zero)
    b = _positive(bytes_per_value, "bytes_per_value", "bytes per gradient value")
    if d == 1:
        return 0.0
    if z == 3:
        return 3 * collective_bytes_per_rank("all_gather", n * b, d)  # AG forward, AG backward, RS
    return collective_bytes_per_rank("all_reduce", n * b, d)


def tensor_parallel_bytes(tokens, d_model, tp, n_layers, bytes_per_value=2, *, collectives_per_layer=4) -> float:
    """Bytes each GPU sends per step for Megatron tensor parallelism, ring accounting.

    Every layer all-reduces its ``tokens x d_model`` activations ``collectives_per_layer`` times:
    4 for a transformer layer (attention and MLP, forward and backward: Shoeybi et al. 2019,
    Figure 3's f and g), 2 for an MLP block alone. Sequence parallelism swaps each all-reduce for
    an all-gather and a reduce-scatter of the same bytes. ``4 * 2 (tp - 1) / tp * tokens d b``
    per layer: ``tokens = 1024, d = 4096, tp = 8, b = 2`` sends ``4 * 1.75 * 8.39e6 = 5.87e7`` bytes.
    """
    t = _positive_int(tokens, "tokens", "tokens")
    h = _positive_int(d_model, "d_model", "features")
    g = _positive_int(tp, "tp", "tensor-parallel GPUs")
    layers = _positive_int(n_layers, "n_layers", "layers")
    b = _positive(bytes_per_value, "bytes_per_value", "bytes per activation value")
    k = _positive_int(collectives_per_layer, "collectives_per_layer", "all-reduces per layer")
    if g == 1:
        return 0.0
    return k * layers * collective_bytes_per_rank("all_reduce", t * h * b, g)


def expert_params(model) -> float:
    """Parameters of the routed experts, all layers, from the model's own counts.

    A token uses ``k`` of the ``E`` routed experts, so total minus active parameters is
    ``(E - k) / E`` of them (shared experts and dense layers are in both counts and cancel).
    """
    cfg = _model(model)
    if not cfg.is_moe or cfg.experts_per_token == cfg.n_experts:
        return 0.0
    idle = cfg.n_params() - cfg.active_params()
    return idle * cfg.n_experts / (cfg.n_experts - cfg.experts_per_token)


@dataclass(frozen=True)
class CommsRoof:
    """One parallel dimension's communication in one step, for one GPU. All SI.

    ``group`` GPUs take part, ``gpus_per_node`` of them in each node; ``count`` collectives of
    ``message_bytes`` each. ``bytes_per_gpu`` is what a flat ring would have each GPU send (the
    NCCL tests' accounting), ``seconds`` the hierarchical price. ``intensity`` is the GPU's step
    FLOPs over ``bytes_per_gpu``; ``ridge`` the peak over the bytes/s the group really gets: below
    the ridge this roof is longer than the compute.
    """

    name: str  # "tp", "cp", "dp", "ep", "pp"
    what: str
    collective: str
    group: int
    gpus_per_node: int
    link: str
    count: int
    message_bytes: float
    bytes_per_gpu: float
    seconds: float
    intensity: float
    ridge: float
    critical_tokens_per_gpu: float

    @property
    def hidden(self) -> bool:
        """True when this roof is no longer than the compute (it can hide under it)."""
        return self.intensity >= self.ridge


@dataclass(frozen=True)
class MemoryPerGPU:
    """Bytes per GPU: model state after ZeRO (:mod:`~roofline_lib.workloads.train_memory`) and the saved
    activations of the micro-batches in flight (Korthikanti et al. 2022)."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    capacity: float

    @property
    def state(self) -> float:
        return self.weights + self.gradients + self.optimizer

    @property
    def total(self) -> float:
        return self.state + self.activations

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity


@dataclass(frozen=True)
class Plan:
    """A layout priced on the roofline. ``step_seconds`` is the bound with every communication hidden
    that the layout lets hide (``assumption`` says which), ``serial_seconds`` compute plus every
    communication (nothing hidden). ``fit`` is the feasibility rule: memory per GPU against the
    GPU's, and ``seq_len`` against the model's maximum position; an infeasible plan is priced,
    marked, and never chosen by :func:`fit_layouts`."""

    model: str
    cluster: str
    layout: dict
    recompute: str  # "none", "selective" or "full": what the backward recomputes
    tokens_per_step: float
    micro_batches: int
    layers_per_stage: int
    compute_seconds: float  # the busiest stage at the dense peak, recompute included, no bubble
    bubble_seconds: float
    hbm_seconds: float
    comms: tuple[CommsRoof, ...]
    roofs: dict  # name -> seconds: compute (with bubble), hbm, and each parallel dimension, alone
    exposed: dict  # name -> seconds of communication on the critical path (added to the compute)
    critical_seconds: float  # compute + bubble + exposed communication
    step_seconds: float  # the longest of the critical path and the roofs that overlap it
    binding: str  # "compute", "compute + tp", ... or the overlapping roof that is longer ("hbm", "pp", "cp")
    serial_seconds: float
    assumption: str  # which communication the bound lets overlap, in words
    memory: MemoryPerGPU
    fit: Fit
    model_flops_per_step: float
    hardware_flops_per_step: float
    peak_flops_per_s: float  # one GPU's dense peak in the compute precision
    n_gpus: int
    hbm_bytes_per_s: float  # one GPU's HBM bandwidth

    def _utilisation(self, seconds: float, flops: float, what: str) -> float:
        """training.flops_utilisation, the course's one MFU core, on the roof of every GPU here."""
        cluster = Roof(self.n_gpus * self.peak_flops_per_s, self.n_gpus * self.hbm_bytes_per_s, self.cluster)
        return flops_utilisation(flops / seconds, cluster, what=what)

    @property
    def fits(self) -> bool:
        """Memory per GPU within the GPU's capacity (``feasible`` also checks the context)."""
        return self.memory.fits

    @property
    def feasible(self) -> bool:
        return self.fit.feasible

    @property
    def mfu(self) -> float:
        """Model FLOPs over ``step_seconds``: the most this layout can reach under ``assumption``."""
        return self._utilisation(self.step_seconds, self.model_flops_per_step, "MFU")

    @property
    def mfu_no_overlap(self) -> float:
        """Model FLOPs over the serial step (nothing hidden)."""
        return self._utilisation(self.serial_seconds, self.model_flops_per_step, "MFU")

    @property
    def hardware_flops_per_s_per_gpu(self) -> float:
        """What each GPU computes per second at the longest roof, recompute included (the figure
        Megatron-LM's papers print as 'TFLOP/s per GPU')."""
        return self.hardware_flops_per_step / (self.n_gpus * self.step_seconds)

    @property
    def model_compute_seconds(self) -> float:
        """The busiest stage's model FLOPs (the convention's count, no recompute) at the dense peak."""
        return self.compute_seconds * self.model_flops_per_step / self.hardware_flops_per_step

    @property
    def gradient_hiding_tokens_per_gpu(self) -> float:
        """Tokens per GPU per step from which the data-parallel traffic hides under the backward pass.

        The one rule of :func:`~roofline_lib.workloads.comms_roofline.gradient_hiding_tokens`: only the
        backward pass, two thirds of the model compute, can overlap the gradients. (The ``dp`` roof's
        ``critical_tokens_per_gpu`` is looser: the tokens at which that roof is no longer than the
        whole compute.)"""
        dp = self.roof("dp")
        return gradient_hiding_tokens(self.tokens_per_step / dp.group, dp.seconds, self.model_compute_seconds)

    def roof(self, name: str) -> CommsRoof:
        """The communication roof of one dimension ("tp", "dp", ...)."""
        for r in self.comms:
            if r.name == name:
                return r
        raise KeyError(f"this layout has no {name!r} communication; it has: {', '.join(r.name for r in self.comms)}")

    def __str__(self) -> str:
        lay = ", ".join(f"{k}={v}" for k, v in self.layout.items())
        text = (
            f"{self.model} on {self.cluster} ({lay}): memory {memory_size(self.memory.total)} per GPU of "
            f"{memory_size(self.memory.capacity)} ({'fits' if self.fits else 'does not fit'}); step >= "
            f"{seconds_text(self.step_seconds)} ({self.binding} binds; {seconds_text(self.serial_seconds)} if nothing "
            f"overlaps), MFU <= {self.mfu:.1%}; {self.assumption}"
        )
        return self.fit.first(text)


def _model(model) -> TransformerConfig:
    if isinstance(model, TransformerConfig):
        return model
    if isinstance(model, str):
        return model_config(model)
    raise TypeError(
        f"model must be a TransformerConfig or a shipped model's name, got {type(model).__name__} {model!r}"
    )


def _as_cluster(value) -> Cluster:
    if isinstance(value, Cluster):
        return value
    raise TypeError(f"cluster must be a Cluster, such as rl.cluster('8x H100', 64), got {value!r}")


def _members_per_node(group: int, stride: int, gpus_per_node: int, dim: str) -> int:
    """How many of a group's GPUs share a node when its members sit ``stride`` ranks apart."""
    if stride >= gpus_per_node:
        if stride % gpus_per_node:
            raise ValueError(
                f"{dim}'s inner ranks ({stride}) must fill whole nodes of {gpus_per_node} GPUs "
                "or divide one, so each group lies the same way in every node"
            )
        return 1
    if gpus_per_node % stride:
        raise ValueError(f"{dim}'s inner ranks ({stride}) must divide the node's {gpus_per_node} GPUs")
    per_node = min(group, gpus_per_node // stride)
    if group % per_node:
        raise ValueError(
            f"{dim} = {group} GPUs must be a multiple of the {per_node} that share each node "
            f"(or at most {per_node}), so its group fills whole nodes"
        )
    return per_node


def _cost(collective, message, group, stride, c: Cluster, alpha, count, dim):
    """``count`` collectives of ``message`` bytes on ``group`` GPUs ``stride`` ranks apart: seconds,
    bytes per GPU (flat accounting), members per node and the link named."""
    per_node = _members_per_node(group, stride, c.node.n_gpus, dim)
    cost = node_collective_cost(collective, message, group, c.node, alpha, gpus_per_node=per_node)
    if cost.n_nodes == 1:
        link = f"{c.node.scale_up.name}, inside a node"
    else:
        link = f"{cost.n_nodes} nodes, {per_node} GPU(s) each; {cost.binding} binds"
    return count * cost.seconds, count * cost.bytes_per_gpu, per_node, link


def _check_layout(cfg: TransformerConfig, c: Cluster, dp, tp, pp, ep, cp, s, gb, mb, v, cross_node_tp):
    if dp * tp * pp * cp != c.n_gpus:
        raise ValueError(
            f"dp x tp x pp x cp must equal the cluster's {c.n_gpus} GPUs, got "
            f"{dp} x {tp} x {pp} x {cp} = {dp * tp * pp * cp} GPUs (ep is a sub-group of dp x cp)"
        )
    if cfg.n_heads % tp:
        raise ValueError(f"tp must divide the model's {cfg.n_heads} attention heads, got tp = {tp} GPUs")
    gpn = c.node.n_gpus
    if tp > gpn and not cross_node_tp:
        raise ValueError(
            f"tp = {tp} GPUs spans more than one node of {gpn} GPUs: its all-reduces, four per layer and "
            "micro-batch, would cross the network; keep tp <= the node's GPUs, or pass allow_cross_node_tp=True"
        )
    if pp > cfg.n_layers:
        raise ValueError(f"pp must be at most the model's {cfg.n_layers} layers, got pp = {pp} stages")
    if ep > 1 and not cfg.is_moe:
        raise ValueError(f"ep must be 1 for a dense model (it has no experts to spread), got ep = {ep} GPUs")
    if cfg.n_experts % ep:
        raise ValueError(f"ep must divide the model's {cfg.n_experts} experts, got ep = {ep} GPUs")
    if (dp * cp) % ep:
        raise ValueError(f"ep must divide dp x cp = {dp * cp} GPUs (experts spread over them), got ep = {ep} GPUs")
    if s % cp:
        raise ValueError(f"cp must divide seq_len = {s} tokens, got cp = {cp} GPUs")
    if gb % (dp * mb):
        raise ValueError(
            f"global_batch must be a multiple of dp x micro_batch = {dp * mb} sequences, got {gb} sequences"
        )
    m = gb // (dp * mb)
    if v > 1 and (pp == 1 or m % pp):
        raise ValueError(
            f"virtual_stages = {v} needs pp > 1 and micro-batches per step ({m}) a multiple of pp ({pp}) "
            "(the interleaved schedule's rule)"
        )
    return m


@dataclass(frozen=True)
class _Layout:
    """The checked layout and step: every rank count, the ZeRO stage, the batch and its split."""

    dp: int
    tp: int
    pp: int
    ep: int
    cp: int
    zero: int
    seq_len: int
    global_batch: int
    micro_batch: int
    v: int  # virtual stages per GPU
    recompute: str
    alpha: float
    m: int  # micro-batches per step on each data-parallel rank

    def keywords(self) -> dict:
        """The layout as :class:`Plan` reports it."""
        keys = ("dp", "tp", "pp", "ep", "cp", "zero", "micro_batch", "v")
        return {k: getattr(self, k) for k in keys}


@dataclass(frozen=True)
class _Compute:
    """The step's FLOPs and what the busiest stage's GPU spends on them."""

    tokens: int
    layers_per_stage: int
    model_flops: float
    hardware_flops: float  # recompute included
    flops_per_gpu: float  # the busiest stage's
    seconds: float  # at the dense peak, no bubble
    bubble: float
    tokens_per_gpu: float  # tokens each pipeline's GPUs see per step
    peak: float


def _layout(cfg, c, dp, tp, pp, ep, cp, zero, seq_len, global_batch, micro_batch, v, recompute, alpha, cross):
    """Every layout keyword checked, naming the parameter, and the micro-batches per step."""
    dp, tp, pp, ep, cp = (
        _positive_int(value, name, "GPUs")
        for name, value in (("dp", dp), ("tp", tp), ("pp", pp), ("ep", ep), ("cp", cp))
    )
    z = _stage(zero)
    s = _positive_int(seq_len, "seq_len", "tokens")
    gb = _positive_int(global_batch, "global_batch", "sequences")
    mb = _positive_int(micro_batch, "micro_batch", "sequences")
    v = _positive_int(v, "virtual_stages", "virtual stages per GPU")
    mode = _key(recompute, ACTIVATION_RECOMPUTE, "recompute")
    a = _positive(alpha, "alpha_seconds", "seconds", allow_zero=True)
    cross = _flag(cross, "allow_cross_node_tp")
    m = _check_layout(cfg, c, dp, tp, pp, ep, cp, s, gb, mb, v, cross)
    return _Layout(dp, tp, pp, ep, cp, z, s, gb, mb, v, mode, a, m)


def _peak(c: Cluster, compute_precision) -> float:
    try:
        return c.gpu.peak_flops_per_s(compute_precision)
    except (TypeError, ValueError) as err:
        raise type(err)(f"compute_precision: {err}") from None


def _compute(cfg: TransformerConfig, c: Cluster, lay: _Layout, convention, peak: float) -> _Compute:
    """The busiest stage's share of the step's FLOPs, recompute included, and its bubble."""
    tokens = lay.global_batch * lay.seq_len
    layers_per_stage = math.ceil(cfg.n_layers / lay.pp)
    model_flops = cfg.training_flops_per_token(convention, seq_len=lay.seq_len) * tokens
    forward = cfg.training_flops_per_token("6N") / 3 * tokens  # 2N per token: one forward
    scores_forward = (cfg.training_flops_per_token("three-term", seq_len=lay.seq_len) / 3 * tokens) - forward
    extra = {"none": 0.0, "selective": scores_forward, "full": forward + scores_forward}[lay.recompute]
    hardware_flops = model_flops + extra
    stage_share = layers_per_stage * lay.pp / cfg.n_layers  # >= 1: the busiest stage's extra layers
    flops_per_gpu = hardware_flops / c.n_gpus * stage_share
    seconds = flops_per_gpu / peak
    return _Compute(
        tokens=tokens,
        layers_per_stage=layers_per_stage,
        model_flops=model_flops,
        hardware_flops=hardware_flops,
        flops_per_gpu=flops_per_gpu,
        seconds=seconds,
        bubble=seconds * pipeline_bubble_fraction(lay.pp, lay.m, lay.v),
        tokens_per_gpu=tokens / (lay.dp * lay.cp),
        peak=peak,
    )


def _roof(work: _Compute, name, what, collective, group, cost, count, message, grows: bool) -> CommsRoof:
    """One dimension's roof from its priced collectives: intensity, ridge and critical tokens."""
    seconds, sent, per_node, link = cost
    intensity = work.flops_per_gpu / sent
    ridge = work.peak * seconds / sent  # peak over the bytes/s the group gets: the roofs meet here
    if grows:
        critical = 0.0 if seconds <= work.seconds else math.inf
    else:
        critical = work.tokens_per_gpu * seconds / work.seconds
    return CommsRoof(
        name, what, collective, group, per_node, link, count, message, sent, seconds, intensity, ridge, critical
    )


def _activation_message(cfg: TransformerConfig, lay: _Layout) -> float:
    return lay.micro_batch * (lay.seq_len // lay.cp) * cfg.d_model * _WIRE_BYTES  # one micro-batch, one layer


def _tp_roof(cfg, c, lay: _Layout, work: _Compute) -> CommsRoof:
    act_msg = _activation_message(cfg, lay)
    count = (6 if lay.recompute == "full" else 4) * work.layers_per_stage * lay.m
    cost = _cost("all_reduce", act_msg, lay.tp, 1, c, lay.alpha, count, "tp")
    return _roof(
        work, "tp", "activations, all-reduced 4 times per layer", "all_reduce", lay.tp, cost, count, act_msg, True
    )


def _cp_roof(cfg, c, lay: _Layout, work: _Compute) -> CommsRoof:
    kv_msg = lay.micro_batch * lay.seq_len * cfg.kv_cache_width * _WIRE_BYTES / lay.tp  # K and V of the sequence
    count = 3 * work.layers_per_stage * lay.m
    cost = _cost("all_gather", kv_msg, lay.cp, lay.tp, c, lay.alpha, count, "cp")
    return _roof(work, "cp", "keys and values gathered per layer", "all_gather", lay.cp, cost, count, kv_msg, True)


def _dp_roof(cfg, c, lay: _Layout, work: _Compute) -> CommsRoof:
    """The gradients (ZeRO-3: the weights twice, then the gradients) over ``dp x cp``; each routed
    expert's gradients over its own replicas besides."""
    n_moe = expert_params(cfg)
    n_dense = cfg.n_params() - n_moe
    group, tp, ep, pp = lay.dp * lay.cp, lay.tp, lay.ep, lay.pp
    kind, count = ("all_gather", 3) if lay.zero == 3 else ("all_reduce", 1)  # ZeRO-3: AG, AG, RS
    grad_msg = n_dense / (tp * pp) * _WIRE_BYTES
    seconds, sent, per_node, link = _cost(kind, grad_msg, group, tp, c, lay.alpha, count, "dp x cp")
    if n_moe and group // ep > 1:  # each expert's gradients over its own replicas
        e_msg = n_moe / (tp * ep * pp) * _WIRE_BYTES
        x_s, x_b, *_ = _cost(kind, e_msg, group // ep, tp * ep, c, lay.alpha, count, "dp x cp / ep")
        seconds, sent = seconds + x_s, sent + x_b
    what = "weights gathered twice, gradients reduce-scattered" if lay.zero == 3 else "gradients all-reduced once"
    return _roof(work, "dp", what, kind, group, (seconds, sent, per_node, link), count, grad_msg, False)


def _ep_roof(cfg, c, lay: _Layout, work: _Compute) -> CommsRoof:
    moe_layers = cfg.n_layers - cfg.n_dense_layers if cfg.is_moe else 0
    moe_layers_per_stage = math.ceil(moe_layers / lay.pp) if moe_layers else 0
    a2a_msg = _activation_message(cfg, lay) * cfg.experts_per_token / lay.tp  # k copies of each token
    count = 4 * moe_layers_per_stage * lay.m
    cost = _cost("all_to_all", a2a_msg, lay.ep, lay.tp, c, lay.alpha, count, "ep")
    return _roof(work, "ep", "tokens to their experts and back", "all_to_all", lay.ep, cost, count, a2a_msg, True)


def _pp_roof(cfg, c, lay: _Layout, work: _Compute) -> CommsRoof:
    """Point-to-point sends between stages: over NVLink, or the GPU's NIC once the inner ranks fill a node."""
    across = lay.tp * lay.cp * lay.dp >= c.node.n_gpus
    bw = c.node.scale_out_bytes_per_s_per_gpu if across else c.node.scale_up_bytes_per_s
    p_msg = _activation_message(cfg, lay) / lay.tp  # sequence parallel: each TP rank sends its shard
    count = 2 * lay.m * lay.v
    p_bytes = count * p_msg
    link = f"{c.node.scale_out.name}, the GPU's NIC" if across else f"{c.node.scale_up.name}, inside a node"
    cost = (p_bytes / bw + count * lay.alpha, p_bytes, 1, link)
    return _roof(work, "pp", "activations between stages", "point_to_point", lay.pp, cost, count, p_msg, True)


def _comms_roofs(cfg, c, lay: _Layout, work: _Compute) -> tuple[CommsRoof, ...]:
    """One roof per parallel dimension that has more than one GPU, in the module docstring's order."""
    sizes = {"tp": lay.tp, "cp": lay.cp, "dp": lay.dp * lay.cp, "ep": lay.ep, "pp": lay.pp}
    roofs = {"tp": _tp_roof, "cp": _cp_roof, "dp": _dp_roof, "ep": _ep_roof, "pp": _pp_roof}
    return tuple(roofs[name](cfg, c, lay, work) for name, size in sizes.items() if size > 1)


def _memory(cfg, c, lay: _Layout, work: _Compute, per) -> tuple[MemoryPerGPU, float]:
    """Bytes per GPU after ZeRO with the activations in flight, and the HBM bytes of one step."""
    n_moe = expert_params(cfg)
    dense_gpu = (cfg.n_params() - n_moe) / (lay.tp * lay.pp)
    moe_gpu = n_moe / (lay.tp * lay.ep * lay.pp)
    dp_group = lay.dp * lay.cp
    moe_shard = max(1, dp_group // lay.ep)

    def state(bytes_per_param, level):
        if lay.zero >= level:
            return bytes_per_param * (dense_gpu / dp_group + moe_gpu / moe_shard)
        return bytes_per_param * (dense_gpu + moe_gpu)

    act_layer = activation_bytes_per_layer(
        lay.seq_len // lay.cp, lay.micro_batch, cfg.d_model, cfg.n_heads, tp=lay.tp, sequence_parallel=lay.tp > 1,
        recompute=lay.recompute,
    )  # fmt: skip
    pp, v = lay.pp, lay.v
    in_flight = min(pp, lay.m) * ((1 + (pp - 1) / (pp * v)) if v > 1 else 1)  # 1F1B, first stage
    memory = MemoryPerGPU(
        weights=state(per.weights, 3),
        gradients=state(per.gradients, 2),
        optimizer=state(per.optimizer, 1),
        activations=act_layer * work.layers_per_stage * in_flight,
        capacity=float(c.gpu.hbm_capacity_bytes),
    )
    hbm_bytes = (
        lay.m * (3 * per.weights + 2 * per.gradients) * (dense_gpu + moe_gpu)  # weights read fwd + 2x bwd; grads
        + 2 * memory.state  # the optimizer step reads and writes the GPU's state once
        + 2 * act_layer * work.layers_per_stage * lay.m  # activations written forward, read backward
    )
    return memory, hbm_bytes


#: The parallel dimensions whose communication the planner lets overlap the compute, by default.
#: ``dp``: gradient buckets all-reduce while the backward runs (PyTorch DDP, Megatron's
#: overlap-grad-reduce; FSDP prefetches its all-gathers). ``cp``: ring attention passes the next
#: block of keys and values while it computes on this one. ``pp``: sends between stages are
#: asynchronous. Not ``tp``: each all-reduce sits between two dependent GEMMs (Megatron's f and g),
#: and the next one waits for it. Not ``ep``: the dispatch must arrive before the experts' GEMMs and
#: the combine before the next layer; a schedule that runs two micro-batches against each other
#: (DeepSeek's DualPipe) hides it, which ``overlap=(..., "ep")`` says.
OVERLAPPED_COMMS = ("dp", "cp", "pp")

_DIMS = ("tp", "cp", "dp", "ep", "pp")


def _overlap(value) -> frozenset:
    """The ``overlap`` keyword checked: some of tp, cp, dp, ep and pp, in a tuple, list or set."""
    if isinstance(value, str) or not isinstance(value, (tuple, list, set, frozenset)):
        raise TypeError(f"overlap must be a tuple of parallel dimensions (some of {', '.join(_DIMS)}), got {value!r}")
    unknown = [d for d in value if d not in _DIMS]
    if unknown:
        raise ValueError(f"overlap must name parallel dimensions among {', '.join(_DIMS)}, got {unknown!r}")
    return frozenset(value)


def _words(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _assumption(comms, overlap: frozenset) -> str:
    """Which communication the bound puts on the critical path and which it lets hide, in words."""
    exposed = [r.name for r in comms if r.name not in overlap]
    hidden = [r.name for r in comms if r.name in overlap]
    if not comms:
        return "no communication (one GPU's work)"
    parts = []
    if exposed:
        parts.append(f"{_words(exposed)} on the critical path (waited for, added to the compute)")
    if hidden:
        parts.append(f"{_words(hidden)} overlapped with the compute")
    return "assumes " + "; ".join(parts)


def _plan_fit(cfg, c: Cluster, lay: _Layout, memory: MemoryPerGPU, state_bytes: float) -> Fit:
    """The feasibility rule for a layout: memory per GPU against the GPU's, ``seq_len`` against the model's."""
    parts = {
        "weights": memory.weights,
        "gradients": memory.gradients,
        "optimizer state": memory.optimizer,
        "activations": memory.activations,
    }
    lay_text = ", ".join(f"{k}={v}" for k, v in lay.keywords().items() if v != 1 or k in ("dp", "zero"))
    fewest = fewest_devices(state_bytes, memory.capacity)
    return memory_fit(
        parts,
        memory.capacity,
        device=c.gpu.name,
        what=f"{cfg.name or 'the model'} training at {lay_text} on {c.n_gpus} GPUs",
        context_len=lay.seq_len,
        cfg=cfg,
        would_fit=f"its training state alone ({memory_size(state_bytes)}) needs at least {fewest:,} such GPUs, "
        "fully sharded; fit_layouts finds a layout that fits",
    )


def _priced(
    cfg,
    c: Cluster,
    lay: _Layout,
    work: _Compute,
    comms,
    memory: MemoryPerGPU,
    hbm_bytes: float,
    overlap: frozenset,
    state_bytes: float,
) -> Plan:
    """Every roof in seconds. The critical path is the compute, its bubble and the communication
    that cannot overlap it; the step is the longest of that and the roofs that do overlap (HBM and
    the ``overlap`` dimensions). Their sum is the step with nothing hidden."""
    hbm = hbm_bytes / c.gpu.hbm_bytes_per_s
    roofs = {"compute": work.seconds + work.bubble, "hbm": hbm, **{r.name: r.seconds for r in comms}}
    exposed = {r.name: r.seconds for r in comms if r.name not in overlap}
    critical = roofs["compute"] + sum(exposed.values())
    beside = {"hbm": hbm, **{r.name: r.seconds for r in comms if r.name in overlap}}
    longest = max(beside, key=beside.get)
    if beside[longest] > critical:
        binding, step = longest, beside[longest]
    else:
        binding, step = " + ".join(["compute", *(n for n, s in exposed.items() if s > 0)]), critical
    return Plan(
        model=cfg.name or "model",
        cluster=str(c),
        layout=lay.keywords(),
        recompute=lay.recompute,
        tokens_per_step=float(work.tokens),
        micro_batches=lay.m,
        layers_per_stage=work.layers_per_stage,
        compute_seconds=work.seconds,
        bubble_seconds=work.bubble,
        hbm_seconds=hbm,
        comms=comms,
        roofs=roofs,
        exposed=exposed,
        critical_seconds=critical,
        step_seconds=step,
        binding=binding,
        serial_seconds=work.seconds + work.bubble + sum(r.seconds for r in comms),
        assumption=_assumption(comms, overlap),
        memory=memory,
        fit=_plan_fit(cfg, c, lay, memory, state_bytes),
        model_flops_per_step=work.model_flops,
        hardware_flops_per_step=work.hardware_flops,
        peak_flops_per_s=work.peak,
        n_gpus=c.n_gpus,
        hbm_bytes_per_s=c.gpu.hbm_bytes_per_s,
    )


def plan(
    model,
    cluster,
    *,
    dp: int,
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    cp: int = 1,
    zero: int = 0,
    global_batch: int,
    seq_len: int,
    micro_batch: int = 1,
    virtual_stages: int = 1,
    recompute: str = "selective",
    optimizer: str = "adam",
    precision: str = "mixed",
    compute_precision: str = "bf16",
    convention: str = "6N",
    alpha_seconds=0.0,
    allow_cross_node_tp: bool = False,
    overlap=OVERLAPPED_COMMS,
) -> Plan:
    """Price one training step of ``model`` on ``cluster`` under a layout (module docstring).

    ``global_batch`` is in sequences of ``seq_len`` tokens; ``micro_batch`` sequences go through the
    pipeline at a time, so each data-parallel rank runs ``m = global_batch / (dp micro_batch)``
    micro-batches per step. Refuses, naming the parameter: ranks whose product is not the cluster's
    GPUs, ``tp`` that does not divide the heads or (unless ``allow_cross_node_tp``) leaves the
    node, ``ep`` on a dense model or not dividing the experts or ``dp x cp``, ``cp`` not dividing
    the sequence, a batch that does not split into micro-batches, ``pp`` above the layers, and
    groups that would lie unevenly across nodes. Uneven stages are allowed: the busiest holds
    ``ceil(layers / pp)`` layers and sets the pace. Embeddings and the logits are spread evenly.

    ``overlap`` names the dimensions whose communication may hide under the compute
    (:data:`OVERLAPPED_COMMS`: dp, cp and pp); the others' collectives are added to the compute on
    the critical path, and :attr:`Plan.assumption` says which is which. A layout whose memory per
    GPU exceeds the GPU's, or whose ``seq_len`` is beyond the model's maximum position, is still
    priced and marked infeasible (:attr:`Plan.fit`, shown first by ``str``); :func:`fit_layouts`
    never ranks it.
    """
    cfg = _model(model)
    c = _as_cluster(cluster)
    lay = _layout(
        cfg, c, dp, tp, pp, ep, cp, zero, seq_len, global_batch, micro_batch, virtual_stages, recompute,
        alpha_seconds, allow_cross_node_tp,
    )  # fmt: skip
    peak = _peak(c, compute_precision)
    per = state_bytes_per_param(optimizer, precision)
    work = _compute(cfg, c, lay, convention, peak)
    comms = _comms_roofs(cfg, c, lay, work)
    memory, hbm_bytes = _memory(cfg, c, lay, work, per)
    state_bytes = per.total * cfg.n_params()  # the whole model's training state, unsharded
    return _priced(cfg, c, lay, work, comms, memory, hbm_bytes, _overlap(overlap), state_bytes)
