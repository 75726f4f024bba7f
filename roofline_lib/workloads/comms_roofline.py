"""The communication roofline: FLOPs a GPU computes per byte it sends, against the network ridge.

The communication roofline sets a parallel step's **comms intensity**, FLOPs computed per byte a
GPU sends, against the **network ridge**, the GPU's peak FLOP/s over the link's bytes/s. Below the
ridge the wire takes longer than the arithmetic: the step is comms-bound unless the
communication hides under the compute (*overlap*). The bytes are the alpha-beta model's
(:mod:`~roofline_lib.workloads.comms`), on one link or across whole nodes
(:mod:`~roofline_lib.workloads.node_collectives`); the roof is the library's one
:class:`~roofline_lib.core.roofline.Roof`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.checks import _fraction, _positive, _positive_int
from ..core.formatting import to_unit
from ..core.hardware import as_gpu, bytes_per_element
from ..core.interconnect import LinkSpec, NodeSpec, _as_link
from ..core.roofline import Roof
from ..models.transformer import inference_flops_per_token, params_per_layer, training_flops_per_token
from .comms import _algorithm_key, _bandwidth, _ranks, collective_bytes_per_rank, collective_steps
from .node_collectives import node_collective_cost

__all__ = [
    "GRADIENT_OVERLAP_FRACTION",
    "CommsVerdict",
    "comms_intensity",
    "comms_verdict",
    "data_parallel_step",
    "exposed_comms_seconds",
    "gradient_hiding_tokens",
    "gradient_overlap_seconds",
    "network_ridge",
    "network_roof",
    "tensor_parallel_layer",
]


def comms_intensity(flops, bytes_sent) -> float:
    """FLOPs a GPU computes per byte it sends over the link during a parallel step (FLOP/byte)."""
    return _positive(flops, "flops", "FLOP") / _positive(bytes_sent, "bytes_sent", "bytes")


def _link_name(link) -> str:
    if isinstance(link, (LinkSpec, str)):
        return _as_link(link, "link").name
    return f"{to_unit(_bandwidth(link, 'link'), 'GB/s'):.4g} GB/s link"


def network_roof(gpu, link, precision: str = "bf16") -> Roof:
    """The communication roofline as a :class:`~roofline_lib.core.roofline.Roof`: the GPU's dense peak
    over the link's one-direction bandwidth, so its ridge, time at the roof and plausibility
    check are the library's one rule, with bytes on the wire in place of bytes from memory."""
    spec = as_gpu(gpu)
    name = _link_name(link)
    p = precision.lower() if isinstance(precision, str) else precision
    return Roof(
        spec.peak_flops_per_s(precision),
        _bandwidth(link, "link"),
        f"{spec.name} {p} over {name}",
        compute_label=f"{spec.name} dense {p} compute peak",
        memory_label=f"{name if name.endswith(' link') else name + ' link'} bandwidth (one direction)",
    )


def network_ridge(gpu, link, precision: str = "bf16") -> float:
    """Peak FLOP/s over the link's one-direction bytes/s: the comms intensity where the roofs meet."""
    return network_roof(gpu, link, precision).ridge


#: The share of a training step's compute under which its data-parallel gradient traffic can run:
#: the backward pass, 4N of the 6N FLOPs per token (the forward pass, 2N, has no gradient to send
#: yet). The one overlap rule for gradients; chapters 8 and 9 both ask the functions below.
GRADIENT_OVERLAP_FRACTION = 4 / 6  # backward FLOPs per token over forward + backward


def gradient_overlap_seconds(compute_seconds) -> float:
    """The window under which a step's gradient traffic can hide: the backward pass.

    ``compute_seconds`` is the step's model compute, 6N FLOPs per token at the peak (no recompute);
    the window is :data:`GRADIENT_OVERLAP_FRACTION` of it, the backward's 4N.
    """
    return GRADIENT_OVERLAP_FRACTION * _positive(compute_seconds, "compute_seconds", "seconds")


def gradient_hiding_tokens(tokens_per_gpu, gradient_seconds, compute_seconds) -> float:
    """Tokens per GPU per step from which the gradient traffic hides under the backward pass.

    The gradients' bytes are fixed per step while the compute grows with the tokens, so at
    ``tokens_per_gpu`` tokens, with ``gradient_seconds`` of communication and ``compute_seconds``
    of model compute (6N per token at the peak), the traffic just fills the window of
    :func:`gradient_overlap_seconds` at ``tokens_per_gpu * gradient_seconds / window`` tokens:
    4096 tokens, 70 ms of gradients and 199.5 ms of compute give 4096 * 70 / 133 = 2,156.
    """
    tokens = _positive(tokens_per_gpu, "tokens_per_gpu", "tokens")
    comms = _positive(gradient_seconds, "gradient_seconds", "seconds", allow_zero=True)
    return tokens * comms / gradient_overlap_seconds(compute_seconds)


def exposed_comms_seconds(compute_seconds, comms_seconds, overlap_fraction=0.0) -> float:
    """Communication time left on the critical path once overlap has hidden what it can.

    ``overlap_fraction`` is the share of the compute time under which communication can run
    (0: none, every byte waits; 1: all of it; :data:`GRADIENT_OVERLAP_FRACTION` for a
    data-parallel gradient all-reduce, which can run only during the backward pass). Hidden time
    is at most that window and at most the communication itself.
    """
    compute = _positive(compute_seconds, "compute_seconds", "seconds", allow_zero=True)
    comms = _positive(comms_seconds, "comms_seconds", "seconds", allow_zero=True)
    f = _fraction(overlap_fraction, "overlap_fraction", allow_zero=True)
    return comms - min(comms, f * compute)


@dataclass(frozen=True)
class CommsVerdict:
    """Where a parallel step sits on the communication roofline of one GPU and one link. All SI."""

    gpu: str
    link: str
    precision: str
    flops: float  # per GPU, per step
    bytes_sent: float  # per GPU, per step
    intensity: float  # FLOP per byte sent
    ridge: float  # peak FLOP/s over link bytes/s
    bound: str  # "compute" or "comms": whichever takes longer
    compute_seconds: float  # flops at the dense peak
    comms_seconds: float  # latency + bytes_sent at the link's bandwidth
    overlap_fraction: float
    exposed_comms_seconds: float  # what overlap cannot hide
    step_seconds: float  # compute + exposed comms: the fastest this step can go with this overlap
    comms_share: float  # exposed comms over the step
    measured_seconds: float | None = None
    efficiency: float | None = None  # step_seconds / measured_seconds

    @property
    def hidden(self) -> bool:
        """True when overlap hides all the communication."""
        return self.exposed_comms_seconds == 0.0

    def __str__(self) -> str:
        text = (
            f"{self.gpu} over {self.link} ({self.precision}): comms intensity {self.intensity:.4g} FLOP/B "
            f"(ridge {self.ridge:.4g}) -> {self.bound}-bound; compute {to_unit(self.compute_seconds, 'ms'):.3g} ms, "
            f"comms {to_unit(self.comms_seconds, 'ms'):.3g} ms, exposed after {self.overlap_fraction:.0%} overlap "
            f"{to_unit(self.exposed_comms_seconds, 'ms'):.3g} ms; step >= {to_unit(self.step_seconds, 'ms'):.3g} ms"
        )
        if self.measured_seconds is not None:
            text += f"; measured {to_unit(self.measured_seconds, 'ms'):.3g} ms ({self.efficiency:.1%} of the floor)"
        return text


def comms_verdict(
    flops,
    bytes_sent,
    gpu,
    link,
    precision: str = "bf16",
    *,
    latency_seconds=0.0,
    overlap_fraction=0.0,
    measured_seconds=None,
) -> CommsVerdict:
    """Classify a parallel step: comms intensity against the network ridge, and what overlap hides.

    ``flops`` and ``bytes_sent`` are per GPU per step (``bytes_sent`` as
    :func:`collective_bytes_per_rank` counts it); ``latency_seconds`` adds the collectives'
    alpha terms to the wire time. ``bound`` names whichever of compute and communication takes
    longer (with no latency this is intensity against ridge). A ``measured_seconds`` faster than
    the arithmetic at peak, or than the bytes at the link's speed, raises ImplausibleMeasurement.
    """
    spec = as_gpu(gpu)
    the_roof = network_roof(spec, link, precision)
    bw = the_roof.bytes_per_s
    f = _positive(flops, "flops", "FLOP")
    b = _positive(bytes_sent, "bytes_sent", "bytes")
    lat = _positive(latency_seconds, "latency_seconds", "seconds", allow_zero=True)
    overlap = _fraction(overlap_fraction, "overlap_fraction", allow_zero=True)
    peak = the_roof.peak_flops_per_s
    compute = f / peak
    comms = lat + b / bw
    exposed = exposed_comms_seconds(compute, comms, overlap)
    step = compute + exposed
    measured = efficiency = None
    if measured_seconds is not None:
        measured = _positive(measured_seconds, "measured_seconds", "seconds")
        the_roof.check(f / measured, b / measured, what="this parallel step")  # the one plausibility rule
        efficiency = step / measured if measured >= step else 1.0
    return CommsVerdict(
        gpu=spec.name,
        link=_link_name(link),
        precision=precision.lower(),
        flops=f,
        bytes_sent=b,
        intensity=f / b,
        ridge=the_roof.ridge,
        bound="comms" if comms > compute else "compute",
        compute_seconds=compute,
        comms_seconds=comms,
        overlap_fraction=overlap,
        exposed_comms_seconds=exposed,
        step_seconds=step,
        comms_share=exposed / step,
        measured_seconds=measured,
        efficiency=efficiency,
    )


def _all_reduce_step(
    flops, message, n, count, gpu, link, precision, algorithm, alpha_seconds, overlap_fraction, measured_seconds
) -> CommsVerdict:
    """:func:`comms_verdict` of a step that computes ``flops`` and runs ``count`` all-reduces of
    ``message`` bytes on ``n`` ranks: each rank sends ``count`` times
    :func:`collective_bytes_per_rank` and waits ``count * collective_steps * alpha``. A ``link``
    that is a :class:`~roofline_lib.core.interconnect.NodeSpec` prices each all-reduce with
    :func:`node_collective_cost` (hierarchical, rail-aligned) and holds the GPU against the
    cluster's effective per-GPU bandwidth."""
    alpha = _positive(alpha_seconds, "alpha_seconds", "seconds", allow_zero=True)
    if isinstance(link, NodeSpec):
        if _algorithm_key(algorithm, "all_reduce") != "ring":
            raise ValueError(f"algorithm must be 'ring' across nodes (hierarchical rings), got {algorithm!r}")
        cost = node_collective_cost("all_reduce", message, n, link, alpha)
        verdict = comms_verdict(
            flops,
            count * cost.bytes_per_gpu,
            gpu,
            cost.effective_bytes_per_s,
            precision,
            latency_seconds=count * cost.latency_seconds,
            overlap_fraction=overlap_fraction,
            measured_seconds=measured_seconds,
        )
        where = f"{cost.n_nodes} x {link.name}" if cost.n_nodes > 1 else f"{link.scale_up.name} in one {link.name}"
        return replace(verdict, link=f"{where} ({cost.binding} binds)")
    per_rank = count * collective_bytes_per_rank("all_reduce", message, n, algorithm)
    return comms_verdict(
        flops,
        per_rank,
        gpu,
        link,
        precision,
        latency_seconds=count * collective_steps("all_reduce", n, algorithm) * alpha,
        overlap_fraction=overlap_fraction,
        measured_seconds=measured_seconds,
    )


def data_parallel_step(
    n_params,
    tokens_per_gpu,
    n_gpus,
    gpu,
    link,
    precision: str = "bf16",
    *,
    grad_bytes_per_param=None,
    alpha_seconds=0.0,
    algorithm: str = "ring",
    overlap_fraction=0.0,
    measured_seconds=None,
) -> CommsVerdict:
    """One data-parallel training step: 6N FLOPs per token, then an all-reduce of every gradient.

    Per GPU: ``flops = 6 * n_params * tokens_per_gpu`` (the 6N convention); the gradient
    message is ``n_params * grad_bytes_per_param`` (default: the precision's element size)
    and each GPU sends :func:`collective_bytes_per_rank` of it. The comms intensity of a ring is
    ``3 * tokens_per_gpu * n / ((n - 1) * grad_bytes_per_param)``: the model size cancels.
    ``link`` is one GPU's link (a flat ring on it) or a node
    (:func:`~roofline_lib.core.interconnect.node`): then the all-reduce is hierarchical across whole
    nodes (:func:`node_collective_cost`), bound by NVLink or by the node's egress.
    """
    n = _ranks(n_gpus, "data-parallel all_reduce", "n_gpus")
    tokens = _positive(tokens_per_gpu, "tokens_per_gpu", "tokens")
    grad_bytes = (
        bytes_per_element(precision)
        if grad_bytes_per_param is None
        else _positive(grad_bytes_per_param, "grad_bytes_per_param", "bytes per parameter")
    )
    flops = training_flops_per_token(n_params) * tokens
    message = _positive(n_params, "n_params", "parameters") * grad_bytes
    return _all_reduce_step(
        flops, message, n, 1, gpu, link, precision, algorithm, alpha_seconds, overlap_fraction, measured_seconds
    )


#: All-reduces per transformer layer under Megatron-style tensor parallelism, per pass: one after
#: attention's output projection, one after the FFN's down projection.
_TP_ALL_REDUCES_PER_LAYER = 2


def tensor_parallel_layer(
    d_model,
    d_ff,
    tokens,
    tp,
    gpu,
    link,
    precision: str = "bf16",
    *,
    gated: bool = True,
    alpha_seconds=0.0,
    algorithm: str = "ring",
    overlap_fraction=0.0,
    measured_seconds=None,
) -> CommsVerdict:
    """One transformer layer's forward under ``tp``-way tensor parallelism (Megatron style).

    Per GPU: its ``1 / tp`` of the layer's weight FLOPs, ``2 * params_per_layer / tp`` per token
    (attention scores left out), and two all-reduces of the ``tokens x d_model`` activations in
    the precision. With a ring the comms intensity is ``params_per_layer / (2 d (tp - 1) b)``,
    about ``6 d / ((tp - 1) b)`` for 12 d^2 weights: independent of the batch, so the batch only
    moves the latency share. ``tokens`` is batch x sequence length.
    """
    t = _ranks(tp, "tensor-parallel all_reduce", "tp")
    d = _positive_int(d_model, "d_model", "features")
    n_tokens = _positive(tokens, "tokens", "tokens")
    flops = inference_flops_per_token(params_per_layer(d, d_ff, gated)) * n_tokens / t
    message = n_tokens * d * bytes_per_element(precision)  # the activations, one per token
    return _all_reduce_step(
        flops,
        message,
        t,
        _TP_ALL_REDUCES_PER_LAYER,
        gpu,
        link,
        precision,
        algorithm,
        alpha_seconds,
        overlap_fraction,
        measured_seconds,
    )
