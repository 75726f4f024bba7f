"""Communication, the third roof: the alpha-beta cost of collectives and a roofline for parallel steps.

The alpha-beta model prices one collective on ``n`` ranks as

    seconds = steps * alpha + bytes_per_rank / bytes_per_s

``alpha`` (seconds) is the fixed cost of one message: software, launch and wire latency.
``bytes_per_s`` is one rank's one-direction link bandwidth (``1 / beta``); ``bytes_per_rank`` is
what each rank must send (and receive) for the collective, and ``steps`` how many messages in a
row it sends. For a message of ``S`` bytes (the conventions of the NCCL tests, below):

=================  ===============  ======================  =====================================
collective         steps            bytes_per_rank          bus-bandwidth factor (NCCL tests)
=================  ===============  ======================  =====================================
all-reduce, ring   2 (n - 1)        2 (n - 1) / n * S       2 (n - 1) / n
all-reduce, tree   2 ceil(log2 n)   2 ceil(log2 n) S        2 (n - 1) / n
all-gather         n - 1            (n - 1) / n * S         (n - 1) / n
reduce-scatter     n - 1            (n - 1) / n * S         (n - 1) / n
all-to-all         n - 1            (n - 1) / n * S         (n - 1) / n
point-to-point     1                S                       1
=================  ===============  ======================  =====================================

``S`` is what the NCCL tests call the size: the buffer every rank holds for all-reduce, the
whole gathered output for all-gather, the whole input for reduce-scatter, and a rank's whole send
buffer (its chunks for every rank, its own included) for all-to-all. The ring is NCCL's ring:
a reduce-scatter then an all-gather, each ``n - 1`` steps of ``S / n``. The tree is Thakur,
Rabenseifner and Gropp's binomial tree (2005, section 4): a reduce to the root then a broadcast
from it, each ``ceil(log2 n)`` steps that send the whole message, so both terms carry the same
``2 ceil(log2 n)``: ``t = 2 ceil(log2 n) (alpha + S / B)`` (``bytes_per_rank`` counts the bytes on
the busiest rank's path, the root's). It is latency-optimal and bandwidth-poor. NCCL's own tree,
the double binary tree, pipelines the message in chunks over two trees to send about ``2 S`` per
rank at a logarithmic latency; it is not modelled here.
All-to-all assumes a switch (full bisection), as NVSwitch and a non-blocking fat tree provide.
Reductions inside the switch (NVLink SHARP, NCCL's NVLS) are not modelled: there each GPU sends an
all-reduce's data about once, not ``2 (n - 1) / n`` times, and its bus bandwidth can exceed the link.

**Across nodes** (:func:`node_collective_cost`) a collective is hierarchical, as NCCL runs it on
multi-NIC nodes: each of the node's ``g`` GPUs works over NVLink inside the node and drives its
own network adapter (rail) to the same GPU of the other ``m`` nodes. Priced by its two wires,

    seconds = steps * alpha + max(intra bytes per GPU / NVLink, egress bytes per node / node egress)

where for a ring all-reduce the intra phase moves ``2 (g - 1) / g * S`` per GPU and the node sends
``2 (m - 1) / m * S`` through all its adapters together (``g`` shards of ``S / g``). The phases
pipeline over chunks, so the slower one sets the pace. A GPU's own port is not the limit: the
node's egress is.

*Algorithm bandwidth* is ``S / seconds``; *bus bandwidth* is the algorithm bandwidth times the
factor, chosen so that it is comparable with the link's one-direction bandwidth whatever ``n``
(a ring all-reduce's bus bandwidth tends to ``bytes_per_s`` for large messages).

The communication roofline sets a parallel step's **comms intensity**, FLOPs computed per byte a
GPU sends, against the **network ridge**, the GPU's peak FLOP/s over the link's bytes/s. Below the
ridge the wire takes longer than the arithmetic: the step is comms-bound unless the
communication hides under the compute (*overlap*).

The live measurement (:func:`measure_collectives`) runs ``torch.distributed`` in local
processes; torch is imported only there, so ``import roofline_lib`` stays light.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..core.checks import _fraction, _positive, _positive_int
from ..core.hardware import as_gpu, bytes_per_element
from ..core.interconnect import LinkSpec, NodeSpec, _as_link, _as_node
from ..core.roofline import Roof
from ..models.transformer import (
    inference_flops_per_token,
    params_per_layer,
    training_flops_per_token,
)

__all__ = [
    "ALGORITHMS",
    "COLLECTIVES",
    "AlphaBetaFit",
    "CollectiveCost",
    "CollectiveMeasurement",
    "CollectiveTiming",
    "CommsVerdict",
    "algorithm_bandwidth",
    "bus_bandwidth",
    "bus_bandwidth_factor",
    "collective_bytes_per_rank",
    "collective_cost",
    "collective_seconds",
    "collective_steps",
    "comms_intensity",
    "comms_verdict",
    "data_parallel_step",
    "exposed_comms_seconds",
    "fit_alpha_beta",
    "latency_crossover_bytes",
    "measure_collectives",
    "network_ridge",
    "network_roof",
    "NodeCollectiveCost",
    "as_node",
    "node_collective_cost",
    "tensor_parallel_layer",
]

#: The collectives the model prices, in the names torch.distributed uses (point_to_point: send/recv).
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "point_to_point")

#: Algorithms for all-reduce; every other collective is priced as a ring (or direct exchange).
ALGORITHMS = ("ring", "tree")

_SPELLINGS = {
    "allreduce": "all_reduce",
    "allgather": "all_gather",
    "reducescatter": "reduce_scatter",
    "alltoall": "all_to_all",
    "pointtopoint": "point_to_point",
    "p2p": "point_to_point",
    "sendrecv": "point_to_point",
}


def _collective_key(collective) -> str:
    """The registered name of a collective: 'all-reduce', 'AllReduce' and 'all_reduce' are one."""
    if isinstance(collective, str):
        squashed = "".join(ch for ch in collective.lower() if ch.isalnum())
        if squashed in _SPELLINGS:
            return _SPELLINGS[squashed]
    raise ValueError(f"collective must be one of {', '.join(COLLECTIVES)}, got {collective!r}")


def _algorithm_key(algorithm, collective: str) -> str:
    if not isinstance(algorithm, str) or algorithm.strip().lower() not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    key = algorithm.strip().lower()
    if key == "tree" and collective != "all_reduce":
        raise ValueError(f"algorithm 'tree' is modelled for all_reduce only, got collective {collective!r}")
    return key


def _ranks(n_ranks, collective: str, name: str = "n_ranks") -> int:
    n = _positive_int(n_ranks, name, "ranks")
    if n < 2:
        raise ValueError(f"{name} must be at least 2 ranks for a {collective}, got {n_ranks!r}")
    return n


def collective_steps(collective, n_ranks, algorithm: str = "ring") -> int:
    """Messages each rank sends one after another: the count that multiplies ``alpha``."""
    c = _collective_key(collective)
    n = _ranks(n_ranks, c)
    a = _algorithm_key(algorithm, c)
    if c == "point_to_point":
        return 1
    if c == "all_reduce":
        # ring: reduce-scatter (n - 1) + all-gather (n - 1); binomial tree: reduce then broadcast,
        # ceil(log2 n) steps each
        return 2 * (n - 1) if a == "ring" else 2 * math.ceil(math.log2(n))
    return n - 1  # all-gather, reduce-scatter, all-to-all: one message to (or from) each other rank


def collective_bytes_per_rank(collective, message_bytes, n_ranks, algorithm: str = "ring") -> float:
    """Bytes each rank sends (and receives) for a collective on ``message_bytes`` (NCCL's size S)."""
    c = _collective_key(collective)
    s = _positive(message_bytes, "message_bytes", "bytes")
    n = _ranks(n_ranks, c)
    a = _algorithm_key(algorithm, c)
    if c == "point_to_point":
        return s
    if c == "all_reduce":
        if a == "ring":
            return 2 * (n - 1) / n * s
        return 2 * math.ceil(math.log2(n)) * s  # binomial tree: the whole message at each of its steps
    return (n - 1) / n * s  # every rank's n - 1 chunks of S / n that live elsewhere


def bus_bandwidth_factor(collective, n_ranks) -> float:
    """The NCCL tests' factor from algorithm to bus bandwidth (doc/PERFORMANCE.md of nccl-tests)."""
    c = _collective_key(collective)
    n = _ranks(n_ranks, c)
    if c == "all_reduce":
        return 2 * (n - 1) / n
    if c == "point_to_point":
        return 1.0
    return (n - 1) / n


@dataclass(frozen=True)
class CollectiveCost:
    """One collective priced by the alpha-beta model, in named steps. All SI."""

    collective: str
    algorithm: str
    n_ranks: int
    message_bytes: float
    steps: int
    bytes_per_rank: float
    alpha_seconds: float
    bytes_per_s: float
    latency_seconds: float  # steps * alpha
    bandwidth_seconds: float  # bytes_per_rank / bytes_per_s
    seconds: float  # their sum
    algorithm_bytes_per_s: float  # message_bytes / seconds
    bus_bytes_per_s: float  # algorithm bandwidth * the NCCL tests' factor

    @property
    def latency_share(self) -> float:
        """The fraction of the time that is latency (above 0.5: latency dominates)."""
        return self.latency_seconds / self.seconds

    def __str__(self) -> str:
        return (
            f"{self.algorithm} {self.collective} of {self.message_bytes:.3g} B on {self.n_ranks} ranks: "
            f"{self.steps} x {self.alpha_seconds * 1e6:.3g} us + {self.bytes_per_rank:.3g} B / "
            f"{self.bytes_per_s / 1e9:.3g} GB/s = {self.seconds * 1e6:.4g} us "
            f"(algbw {self.algorithm_bytes_per_s / 1e9:.3g} GB/s, busbw {self.bus_bytes_per_s / 1e9:.3g} GB/s)"
        )


# A number below this is a bandwidth typed in GB/s or TB/s: the slowest link the course models,
# 1 Gb Ethernet, moves 125e6 B/s, so 1 MB/s leaves two orders of magnitude of room.
_SLOWEST_LINK_BYTES_PER_S = 1e6


def _bandwidth(value, name: str = "bytes_per_s") -> float:
    """A link bandwidth given as bytes/s, a LinkSpec or a link name; ``name`` is the caller's parameter."""
    if isinstance(value, (LinkSpec, str)):
        return _as_link(value, name).bytes_per_s
    bytes_per_s = _positive(value, name, "bytes per second (one direction)")
    if bytes_per_s < _SLOWEST_LINK_BYTES_PER_S:
        raise ValueError(
            f"{name} must be in bytes per second, got {value!r}, below 1e6 (1 MB/s) which no link is: "
            "did you mean GB/s? (write 50e9 for 50 GB/s, or pass a link name such as 'NVLink 4')"
        )
    return bytes_per_s


def collective_cost(
    collective, message_bytes, n_ranks, alpha_seconds, bytes_per_s, algorithm: str = "ring"
) -> CollectiveCost:
    """The alpha-beta price of one collective (see the module's table).

    ``bytes_per_s`` is one rank's one-direction link bandwidth, as a number, a
    :class:`~roofline_lib.core.interconnect.LinkSpec` or a link name ("NVLink 4").
    ``alpha_seconds`` may be 0 (a bandwidth-only estimate).
    """
    c = _collective_key(collective)
    a = _algorithm_key(algorithm, c)
    s = _positive(message_bytes, "message_bytes", "bytes")
    n = _ranks(n_ranks, c)
    alpha = _positive(alpha_seconds, "alpha_seconds", "seconds", allow_zero=True)
    bw = _bandwidth(bytes_per_s)
    steps = collective_steps(c, n, a)
    per_rank = collective_bytes_per_rank(c, s, n, a)
    latency = steps * alpha
    wire = per_rank / bw
    seconds = latency + wire
    algbw = s / seconds
    return CollectiveCost(
        collective=c,
        algorithm=a,
        n_ranks=n,
        message_bytes=s,
        steps=steps,
        bytes_per_rank=per_rank,
        alpha_seconds=alpha,
        bytes_per_s=bw,
        latency_seconds=latency,
        bandwidth_seconds=wire,
        seconds=seconds,
        algorithm_bytes_per_s=algbw,
        bus_bytes_per_s=algbw * bus_bandwidth_factor(c, n),
    )


def collective_seconds(
    collective, message_bytes, n_ranks, alpha_seconds, bytes_per_s, algorithm: str = "ring"
) -> float:
    """Seconds of one collective under the alpha-beta model (:func:`collective_cost`'s total)."""
    return collective_cost(collective, message_bytes, n_ranks, alpha_seconds, bytes_per_s, algorithm).seconds


def algorithm_bandwidth(message_bytes, seconds) -> float:
    """The NCCL tests' algorithm bandwidth: size over time, bytes/s."""
    return _positive(message_bytes, "message_bytes", "bytes") / _positive(seconds, "seconds", "seconds")


def bus_bandwidth(collective, message_bytes, seconds, n_ranks) -> float:
    """The NCCL tests' bus bandwidth: algorithm bandwidth times :func:`bus_bandwidth_factor`."""
    return algorithm_bandwidth(message_bytes, seconds) * bus_bandwidth_factor(collective, n_ranks)


def latency_crossover_bytes(collective, n_ranks, alpha_seconds, bytes_per_s, algorithm: str = "ring") -> float:
    """The message size where the latency term equals the bandwidth term.

    Below it latency dominates; at it the collective reaches half its large-message bus
    bandwidth. For a ring all-reduce it is ``n * alpha * bytes_per_s``.
    """
    c = _collective_key(collective)
    alpha = _positive(alpha_seconds, "alpha_seconds", "seconds")
    bw = _bandwidth(bytes_per_s)
    per_byte = collective_bytes_per_rank(c, 1.0, n_ranks, algorithm)  # bytes sent per byte of message
    return collective_steps(c, n_ranks, algorithm) * alpha * bw / per_byte


# ---------------------------------------------------------------------------------- across nodes


def as_node(value) -> NodeSpec:
    """Accept a :class:`~roofline_lib.core.interconnect.NodeSpec` or a node name ("8x H100")."""
    return _as_node(value, "value")


_HIERARCHICAL = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")


@dataclass(frozen=True)
class NodeCollectiveCost:
    """One collective on ``n_gpus`` GPUs of ``n_nodes`` nodes, priced hierarchically. All SI.

    ``intra_seconds`` is the NVLink phase (``intra_bytes_per_gpu`` over one GPU's NVLink),
    ``egress_seconds`` the network phase (``egress_bytes_per_node`` over all the node's
    adapters together); the slower one, ``binding``, sets the wire time.
    """

    collective: str
    node: str
    n_gpus: int
    n_nodes: int
    gpus_per_node: int
    message_bytes: float
    intra_bytes_per_gpu: float
    intra_bytes_per_s: float
    intra_seconds: float
    egress_bytes_per_node: float
    egress_bytes_per_s: float  # the node's adapters together, one direction
    egress_seconds: float
    steps: int
    latency_seconds: float
    bandwidth_seconds: float  # max(intra, egress)
    seconds: float
    binding: str  # "NVLink inside the node", "node egress" or "" on one node with no traffic
    bytes_per_gpu: float  # what a flat ring would have each GPU send: the NCCL tests' accounting
    bus_bytes_per_s: float  # algorithm bandwidth * the NCCL tests' factor

    @property
    def effective_bytes_per_s(self) -> float:
        """The one-GPU link speed a flat collective would need to take as long: ``bytes_per_gpu``
        over the wire time. Held against a GPU's peak, it is the cluster's network ridge."""
        return self.bytes_per_gpu / self.bandwidth_seconds

    def __str__(self) -> str:
        return (
            f"{self.collective} of {self.message_bytes:.3g} B on {self.n_gpus} GPUs ({self.n_nodes} x {self.node}): "
            f"NVLink phase {self.intra_seconds * 1e3:.4g} ms, egress {self.egress_seconds * 1e3:.4g} ms, "
            f"latency {self.latency_seconds * 1e6:.3g} us -> {self.seconds * 1e3:.4g} ms ({self.binding} binds)"
        )


def node_collective_cost(
    collective, message_bytes, n_gpus, node, alpha_seconds=0.0, *, gpus_per_node=None
) -> NodeCollectiveCost:
    """A collective across whole nodes, hierarchical and rail-aligned (see the module docstring).

    ``node`` is a :class:`~roofline_lib.core.interconnect.NodeSpec` or its name; ``n_gpus`` either fits
    in one node (then it is a ring on NVLink) or is a whole number of nodes. With ``g`` GPUs per
    node and ``m`` nodes, for a message of ``S`` bytes:

    ==============  ============================  ===============================  ==================
    collective      NVLink bytes per GPU          egress bytes per node            steps
    ==============  ============================  ===============================  ==================
    all-reduce      2 (g - 1) / g * S             2 (m - 1) / m * S                2 (g - 1) + 2 (m - 1)
    all-gather      (g - 1) / g * S               (m - 1) / m * S                  (g - 1) + (m - 1)
    reduce-scatter  (g - 1) / g * S               (m - 1) / m * S                  (g - 1) + (m - 1)
    all-to-all      (g - 1) / n * S               g (n - g) / n * S                n - 1
    ==============  ============================  ===============================  ==================

    ``seconds = steps * alpha + max(NVLink bytes / NVLink, egress bytes / node egress)``.

    ``gpus_per_node`` (default: as many as fit, up to the node's) is how many of the group's GPUs
    share each node, for a group laid across nodes with a stride (a data-parallel group beside
    a tensor-parallel one): the group then drives only its members' NICs, ``g / n_gpus_of_node``
    of the node's egress.
    """
    c = _collective_key(collective)
    if c not in _HIERARCHICAL:
        raise ValueError(f"collective must be one of {', '.join(_HIERARCHICAL)} across nodes, got {collective!r}")
    spec = _as_node(node, "node")
    s = _positive(message_bytes, "message_bytes", "bytes")
    n = _ranks(n_gpus, c, "n_gpus")
    alpha = _positive(alpha_seconds, "alpha_seconds", "seconds", allow_zero=True)
    g_node = spec.n_gpus
    if gpus_per_node is not None:
        g_node = _positive_int(gpus_per_node, "gpus_per_node", "GPUs of the group in each node")
        if g_node > spec.n_gpus:
            raise ValueError(f"gpus_per_node must be at most the node's {spec.n_gpus} GPUs, got {gpus_per_node!r}")
    if n <= g_node:
        g, m = n, 1
    elif n % g_node:
        raise ValueError(
            f"n_gpus must fill whole nodes of {g_node} GPUs ({spec.name}) or fit in one, got {n_gpus!r}: "
            f"use a multiple of {g_node}"
        )
    else:
        g, m = g_node, n // g_node
    up = spec.scale_up_bytes_per_s
    egress_bw = spec.scale_out_bytes_per_s_per_gpu * g  # the group's members' NICs
    if c == "all_to_all":
        intra = (g - 1) / n * s  # the chunks for the node's other GPUs
        egress = g * (n - g) / n * s  # every GPU's chunks for the other nodes
        steps = n - 1
    else:
        intra = collective_bytes_per_rank(c, s, g) if g > 1 else 0.0
        egress = collective_bytes_per_rank(c, s, m) if m > 1 else 0.0  # the node's g shards of S / g
        steps = (collective_steps(c, g) if g > 1 else 0) + (collective_steps(c, m) if m > 1 else 0)
    intra_s, egress_s = intra / up, egress / egress_bw
    wire = max(intra_s, egress_s)
    latency = steps * alpha
    seconds = latency + wire
    flat = collective_bytes_per_rank(c, s, n)
    if wire == 0.0:  # pragma: no cover - two or more ranks always move bytes
        binding = ""
    else:
        binding = "node egress" if egress_s > intra_s else "NVLink inside the node"
    return NodeCollectiveCost(
        collective=c,
        node=spec.name,
        n_gpus=n,
        n_nodes=m,
        gpus_per_node=g,
        message_bytes=s,
        intra_bytes_per_gpu=intra,
        intra_bytes_per_s=up,
        intra_seconds=intra_s,
        egress_bytes_per_node=egress,
        egress_bytes_per_s=egress_bw,
        egress_seconds=egress_s,
        steps=steps,
        latency_seconds=latency,
        bandwidth_seconds=wire,
        seconds=seconds,
        binding=binding,
        bytes_per_gpu=flat,
        bus_bytes_per_s=s / seconds * bus_bandwidth_factor(c, n),
    )


# ---------------------------------------------------------------------------------- the comms roofline


def comms_intensity(flops, bytes_sent) -> float:
    """FLOPs a GPU computes per byte it sends over the link during a parallel step (FLOP/byte)."""
    return _positive(flops, "flops", "FLOP") / _positive(bytes_sent, "bytes_sent", "bytes")


def _link_name(link) -> str:
    if isinstance(link, (LinkSpec, str)):
        return _as_link(link, "link").name
    return f"{_bandwidth(link, 'link') / 1e9:.4g} GB/s link"


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
        memory_label=f"{name} link bandwidth (one direction)",
    )


def network_ridge(gpu, link, precision: str = "bf16") -> float:
    """Peak FLOP/s over the link's one-direction bytes/s: the comms intensity where the roofs meet."""
    return network_roof(gpu, link, precision).ridge


def exposed_comms_seconds(compute_seconds, comms_seconds, overlap_fraction=0.0) -> float:
    """Communication time left on the critical path once overlap has hidden what it can.

    ``overlap_fraction`` is the share of the compute time under which communication can run
    (0: none, every byte waits; 1: all of it; 2/3 for a data-parallel gradient all-reduce that
    can start only during the backward pass, which is 4N of 6N). Hidden time is at most that
    window and at most the communication itself.
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
            f"(ridge {self.ridge:.4g}) -> {self.bound}-bound; compute {self.compute_seconds * 1e3:.3g} ms, "
            f"comms {self.comms_seconds * 1e3:.3g} ms, exposed after {self.overlap_fraction:.0%} overlap "
            f"{self.exposed_comms_seconds * 1e3:.3g} ms; step >= {self.step_seconds * 1e3:.3g} ms"
        )
        if self.measured_seconds is not None:
            text += f"; measured {self.measured_seconds * 1e3:.3g} ms ({self.efficiency:.1%} of the floor)"
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


# ---------------------------------------------------------------------------------- fitting alpha, beta


@dataclass(frozen=True)
class AlphaBetaFit:
    """Alpha and link bandwidth fitted to timings of one collective on ``n_ranks``."""

    collective: str
    algorithm: str
    n_ranks: int
    alpha_seconds: float
    bytes_per_s: float
    message_bytes: tuple[float, ...]
    seconds: tuple[float, ...]
    max_relative_residual: float  # the worst |model - measured| / measured over the points

    @property
    def beta_seconds_per_byte(self) -> float:
        return 1.0 / self.bytes_per_s

    def predict_seconds(self, message_bytes) -> float:
        """The fitted model's time for a message of ``message_bytes``."""
        return collective_seconds(
            self.collective, message_bytes, self.n_ranks, self.alpha_seconds, self.bytes_per_s, self.algorithm
        )

    def crossover_bytes(self) -> float:
        """Where latency stops dominating, under the fitted alpha and bandwidth."""
        return latency_crossover_bytes(
            self.collective, self.n_ranks, self.alpha_seconds, self.bytes_per_s, self.algorithm
        )

    def __str__(self) -> str:
        return (
            f"{self.collective} on {self.n_ranks} ranks: alpha = {self.alpha_seconds * 1e6:.3g} us per step, "
            f"link = {self.bytes_per_s / 1e9:.3g} GB/s (beta = {self.beta_seconds_per_byte * 1e9:.3g} ns/B); "
            f"worst residual {self.max_relative_residual:.1%}"
        )


def _series(values, name: str, unit: str) -> np.ndarray:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of numbers of {unit}, got {type(values).__name__}")
    return np.array([_positive(v, f"{name}[{i}]", unit) for i, v in enumerate(values)], dtype=float)


def fit_alpha_beta(
    message_bytes: Sequence[float],
    seconds: Sequence[float],
    collective="all_reduce",
    n_ranks=2,
    algorithm: str = "ring",
) -> AlphaBetaFit:
    """Fit ``seconds = steps * alpha + bytes_per_rank / bytes_per_s`` to measured timings.

    A straight line ``t = a + b * S`` by least squares on *relative* error (each point weighted
    by ``1 / t``, so a 1 kB message counts as much as a 16 MB one); then ``alpha = a / steps``
    and ``bytes_per_s = (bytes_per_rank per byte of message) / b``. Needs at least two
    distinct sizes. Raises ValueError, naming the number, when the data give a negative
    latency or a non-positive bandwidth: the model does not fit them.
    """
    c = _collective_key(collective)
    a = _algorithm_key(algorithm, c)
    n = _ranks(n_ranks, c)
    sizes = _series(message_bytes, "message_bytes", "bytes")
    times = _series(seconds, "seconds", "seconds")
    if len(sizes) != len(times):
        raise ValueError(f"message_bytes and seconds must have the same length, got {len(sizes)} and {len(times)}")
    if len(np.unique(sizes)) < 2:
        raise ValueError("message_bytes must hold at least two different sizes in bytes to fit a line")
    weights = 1.0 / times
    design = np.column_stack([np.ones_like(sizes), sizes]) * weights[:, None]
    (intercept, slope), *_ = np.linalg.lstsq(design, times * weights, rcond=None)
    steps = collective_steps(c, n, a)
    per_byte = collective_bytes_per_rank(c, 1.0, n, a)
    if slope <= 0:
        raise ValueError(
            f"the timings do not grow with message size (slope {slope:.3g} s/byte): no positive "
            "bandwidth fits them; time larger messages, or more repetitions of each"
        )
    if intercept < 0:
        raise ValueError(
            f"the fitted latency is negative ({intercept:.3g} s at 0 bytes): the alpha-beta model does "
            "not fit these timings; include small messages, or more repetitions of each"
        )
    alpha = intercept / steps
    bw = per_byte / slope
    predicted = intercept + slope * sizes
    worst = float(np.max(np.abs(predicted - times) / times))
    return AlphaBetaFit(
        collective=c,
        algorithm=a,
        n_ranks=n,
        alpha_seconds=float(alpha),
        bytes_per_s=float(bw),
        message_bytes=tuple(float(x) for x in sizes),
        seconds=tuple(float(x) for x in times),
        max_relative_residual=worst,
    )


# ---------------------------------------------------------------------------------- measuring live


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
        """:func:`fit_alpha_beta` on one collective's timings."""
        sizes, seconds = self.series(collective)
        return fit_alpha_beta(sizes, seconds, collective, self.n_ranks, algorithm)


_MEASURABLE = ("all_reduce", "all_gather")
_DEFAULT_SIZES = tuple(4**k for k in range(5, 13))  # 1 KiB to 16 MiB in steps of 4x


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


def _worker_main(argv=None) -> None:
    """One rank: join the group over 127.0.0.1, time every collective at every size.

    Started by :func:`measure_collectives` as ``python -c <this function's source>`` with its
    settings as JSON in ``argv[1]``; it imports only the standard library and torch (not
    roofline_lib). Rank 0 prints the timings as one JSON line on stdout.
    """
    import datetime
    import functools
    import json
    import os
    import sys
    import time

    cfg = json.loads((argv or sys.argv)[1])
    rank, n_ranks, backend = cfg["rank"], cfg["n_ranks"], cfg["backend"]
    os.environ["OMP_NUM_THREADS"] = "1"  # ranks share the machine; do not oversubscribe it
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=cfg["timeout_s"])
    store = dist.FileStore(cfg["store_path"], n_ranks)  # rendezvous through a file: no listening port
    store.set_timeout(timeout)
    dist.init_process_group(backend, store=store, rank=rank, world_size=n_ranks, timeout=timeout)
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":  # pragma: no cover - needs several GPUs
        torch.cuda.set_device(device)

    def sync():
        if backend == "nccl":  # pragma: no cover
            torch.cuda.synchronize(device)

    def timed(call, iters: int) -> float:
        """Seconds per call of ``iters`` calls, as the slowest rank saw them."""
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            call()
        sync()
        elapsed = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # a collective ends with its slowest rank
        return float(elapsed)

    cases = []  # (name, bytes, call, calls per repeat)
    for name in cfg["collectives"]:
        for size in cfg["sizes"]:
            n_elem = size // 4  # float32
            if name == "all_reduce":
                buf = torch.ones(n_elem, device=device)
                call = functools.partial(dist.all_reduce, buf)
            else:  # all_gather: S is the whole output, each rank brings S / n
                chunk = torch.ones(n_elem // n_ranks, device=device)
                out = torch.empty(chunk.numel() * n_ranks, device=device)
                call = functools.partial(dist.all_gather_into_tensor, out, chunk)
            for _ in range(3):  # warm up: the first calls set up buffers and connections
                call()
            once = timed(call, 1)  # every rank agrees on the call count: the slowest rank's view
            cases.append((name, int(n_elem * 4), call, max(1, min(1000, int(cfg["budget_s"] / max(once, 1e-7))))))
    per_call = [[] for _ in cases]
    for _ in range(cfg["repeats"]):  # round-robin: a burst of noise spoils one repeat of a size, not all
        for i, (_, _, call, iters) in enumerate(cases):
            per_call[i].append(timed(call, iters))
    rows = [[name, size, times] for (name, size, _, _), times in zip(cases, per_call)]
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(json.dumps(rows), flush=True)


def _run_local_ranks(code: str, configs: list, folder: str, env: dict, timeout: float) -> list[str]:
    """Run ``code`` once per config as local processes (rank ``i`` gets ``configs[i]`` as JSON).

    Each rank writes to files in ``folder``, not pipes (a rank that writes much can never block
    on a full pipe). Waits up to ``timeout`` seconds in all; a rank that fails raises with the
    end of its stderr, one that is late raises TimeoutError. None outlives the call: what is left
    is killed and reaped. Returns what each rank printed.
    """
    import json
    import os
    import subprocess
    import sys
    import time

    procs: list = []
    n = len(configs)

    def log(rank: int, kind: str) -> str:
        return os.path.join(folder, f"rank{rank}.{kind}")

    deadline = time.monotonic() + timeout
    try:
        for rank, cfg in enumerate(configs):
            with open(log(rank, "out"), "w") as out, open(log(rank, "err"), "w") as err:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-c", code, json.dumps(cfg)],
                        env=env,
                        stdout=out,
                        stderr=err,
                        stdin=subprocess.DEVNULL,
                    )
                )
        for rank, p in enumerate(procs):
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise TimeoutError(
                    f"rank {rank} of {n} did not finish within timeout_s = {timeout:g} seconds"
                ) from None
            if p.returncode != 0:
                with open(log(rank, "err")) as err:
                    raise RuntimeError(f"rank {rank} of {n} failed (exit {p.returncode}): {err.read()[-2000:]}")
        printed = []
        for rank in range(n):
            with open(log(rank, "out")) as out:
                printed.append(out.read())
        return printed
    finally:
        for p in procs:  # kill what is left, then reap it
            if p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass


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
    to the loopback interface, on free ports the operating system picks. ``backend="auto"`` is NCCL on tensors on ``cuda:rank`` when this
    machine has at least ``n_ranks`` GPUs, otherwise gloo on CPU tensors. Sizes are float32
    buffers of ``message_bytes`` (a multiple of ``4 * n_ranks``). Every worker is joined within
    ``timeout_s`` seconds or killed; none outlives the call. Takes a few seconds on CPU.
    """
    import inspect
    import json
    import os
    import shutil
    import tempfile
    import time

    import torch

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
    reps = _positive_int(repeats, "repeats", "repeats")
    budget = _positive(budget_s_per_repeat, "budget_s_per_repeat", "seconds")
    timeout = _positive(timeout_s, "timeout_s", "seconds")
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() and torch.cuda.device_count() >= n else "gloo"
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be 'auto', 'gloo' or 'nccl', got {backend!r}")

    # Rendezvous through a file in a fresh temporary folder (a TCPStore would listen on every
    # interface); the ranks' own gloo sockets take free ports on the loopback interface.
    folder = tempfile.mkdtemp(prefix="roofline-comms-")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", OMP_NUM_THREADS="1")
    loopback = _loopback_interface()
    if loopback is None and backend == "gloo":
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(
            "no loopback network interface ('lo' or 'lo0') found: gloo would bind to another "
            "address, and this measurement talks over 127.0.0.1 only"
        )
    if loopback:
        env["GLOO_SOCKET_IFNAME"] = loopback  # gloo's pair sockets on 127.0.0.1 only
    code = inspect.getsource(_worker_main) + "\n_worker_main()\n"  # the worker needs no roofline_lib

    started = time.perf_counter()
    configs = [
        {
            "rank": rank,
            "n_ranks": n,
            "store_path": os.path.join(folder, "store"),
            "backend": backend,
            "collectives": names,
            "sizes": sizes,
            "repeats": reps,
            "budget_s": budget,
            "timeout_s": timeout,
        }
        for rank in range(n)
    ]
    try:
        printed = _run_local_ranks(code, configs, folder, env, timeout)[0]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    payload = json.loads(printed.strip().splitlines()[-1])
    wall = time.perf_counter() - started
    timings = tuple(
        CollectiveTiming(
            collective=name, n_ranks=n, message_bytes=size, seconds=float(min(per_call)), repeats=tuple(per_call)
        )
        for name, size, per_call in payload
    )
    device = "cuda" if backend == "nccl" else "cpu"
    return CollectiveMeasurement(
        backend=backend, device=device, n_ranks=n, torch_version=torch.__version__, timings=timings, wall_seconds=wall
    )
