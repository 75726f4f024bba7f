"""The alpha-beta model: the time of one collective on ``n`` ranks, its two bandwidths, and its fit.

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

*Algorithm bandwidth* is ``S / seconds``; *bus bandwidth* is the algorithm bandwidth times the
factor, chosen so that it is comparable with the link's one-direction bandwidth whatever ``n``
(a ring all-reduce's bus bandwidth tends to ``bytes_per_s`` for large messages).

A collective across whole nodes (NVLink inside, the network between) is priced in
:mod:`~roofline_lib.workloads.node_collectives`; the communication roofline that sets a step's
FLOPs against these bytes is :mod:`~roofline_lib.workloads.comms_roofline`; a live measurement
of both terms, to fit (:func:`fit_alpha_beta`), is :mod:`~roofline_lib.evidence.collectives_live`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.checks import _positive, _positive_int
from ..core.formatting import to_unit
from ..core.interconnect import LinkSpec, _as_link

__all__ = [
    "ALGORITHMS",
    "COLLECTIVES",
    "AlphaBetaFit",
    "CollectiveCost",
    "algorithm_bandwidth",
    "bus_bandwidth",
    "bus_bandwidth_factor",
    "collective_bytes_per_rank",
    "collective_cost",
    "collective_seconds",
    "collective_steps",
    "fit_alpha_beta",
    "latency_crossover_bytes",
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
            f"{self.steps} x {to_unit(self.alpha_seconds, 'us'):.3g} us + {self.bytes_per_rank:.3g} B / "
            f"{to_unit(self.bytes_per_s, 'GB/s'):.3g} GB/s = {to_unit(self.seconds, 'us'):.4g} us "
            f"(algbw {to_unit(self.algorithm_bytes_per_s, 'GB/s'):.3g} GB/s, "
            f"busbw {to_unit(self.bus_bytes_per_s, 'GB/s'):.3g} GB/s)"
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
            f"{self.collective} on {self.n_ranks} ranks: alpha = {to_unit(self.alpha_seconds, 'us'):.3g} us per step, "
            f"link = {to_unit(self.bytes_per_s, 'GB/s'):.3g} GB/s "
            f"(beta = {to_unit(self.beta_seconds_per_byte, 'ns'):.3g} ns/B); "
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
