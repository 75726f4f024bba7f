"""A collective across whole nodes: NVLink inside each node, the network between, and which binds.

Across nodes a collective is hierarchical, as NCCL runs it on multi-NIC nodes: each of the node's
``g`` GPUs works over NVLink inside the node and drives its own network adapter (rail) to the
same GPU of the other ``m`` nodes. Priced by its two wires,

    seconds = steps * alpha + max(intra bytes per GPU / NVLink, egress bytes per node / node egress)

where for a ring all-reduce the intra phase moves ``2 (g - 1) / g * S`` per GPU and the node sends
``2 (m - 1) / m * S`` through all its adapters together (``g`` shards of ``S / g``). The phases
pipeline over chunks, so the slower one sets the pace. A GPU's own port is not the limit: the
node's egress is. Each phase is the flat ring of :mod:`~roofline_lib.workloads.comms`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.checks import _positive, _positive_int
from ..core.formatting import to_unit
from ..core.interconnect import NodeSpec, _as_node
from .comms import _collective_key, _ranks, bus_bandwidth_factor, collective_bytes_per_rank, collective_steps

__all__ = ["NodeCollectiveCost", "as_node", "node_collective_cost"]


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
            f"NVLink phase {to_unit(self.intra_seconds, 'ms'):.4g} ms, "
            f"egress {to_unit(self.egress_seconds, 'ms'):.4g} ms, "
            f"latency {to_unit(self.latency_seconds, 'us'):.3g} us -> {to_unit(self.seconds, 'ms'):.4g} ms "
            f"({self.binding} binds)"
        )


def _group_shape(n: int, spec: NodeSpec, gpus_per_node, n_gpus) -> tuple[int, int]:
    """(GPUs of the group in each node, nodes): the whole group in one node, or whole nodes."""
    g_node = spec.n_gpus
    if gpus_per_node is not None:
        g_node = _positive_int(gpus_per_node, "gpus_per_node", "GPUs of the group in each node")
        if g_node > spec.n_gpus:
            raise ValueError(f"gpus_per_node must be at most the node's {spec.n_gpus} GPUs, got {gpus_per_node!r}")
    if n <= g_node:
        return n, 1
    if n % g_node:
        raise ValueError(
            f"n_gpus must fill whole nodes of {g_node} GPUs ({spec.name}) or fit in one, got {n_gpus!r}: "
            f"use a multiple of {g_node}"
        )
    return g_node, n // g_node


def _phases(c: str, s: float, n: int, g: int, m: int) -> tuple[float, float, int]:
    """(NVLink bytes per GPU, egress bytes per node, steps) of the two phases (the table above)."""
    if c == "all_to_all":
        intra = (g - 1) / n * s  # the chunks for the node's other GPUs
        egress = g * (n - g) / n * s  # every GPU's chunks for the other nodes
        return intra, egress, n - 1
    intra = collective_bytes_per_rank(c, s, g) if g > 1 else 0.0
    egress = collective_bytes_per_rank(c, s, m) if m > 1 else 0.0  # the node's g shards of S / g
    steps = (collective_steps(c, g) if g > 1 else 0) + (collective_steps(c, m) if m > 1 else 0)
    return intra, egress, steps


def _binding(intra_seconds: float, egress_seconds: float) -> str:
    """Which wire sets the pace: the slower phase."""
    if max(intra_seconds, egress_seconds) == 0.0:  # pragma: no cover - two or more ranks always move bytes
        return ""
    return "node egress" if egress_seconds > intra_seconds else "NVLink inside the node"


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
    share each node, for a group laid across nodes with a stride (a data-parallel group beside a
    tensor-parallel one): it then drives only its members' NICs, ``g / n_gpus_of_node`` of the egress.
    """
    c = _collective_key(collective)
    if c not in _HIERARCHICAL:
        raise ValueError(f"collective must be one of {', '.join(_HIERARCHICAL)} across nodes, got {collective!r}")
    spec = _as_node(node, "node")
    s = _positive(message_bytes, "message_bytes", "bytes")
    n = _ranks(n_gpus, c, "n_gpus")
    alpha = _positive(alpha_seconds, "alpha_seconds", "seconds", allow_zero=True)
    g, m = _group_shape(n, spec, gpus_per_node, n_gpus)
    intra, egress, steps = _phases(c, s, n, g, m)
    up = spec.scale_up_bytes_per_s
    egress_bw = spec.scale_out_bytes_per_s_per_gpu * g  # the group's members' NICs
    intra_s, egress_s = intra / up, egress / egress_bw
    wire = max(intra_s, egress_s)
    latency = steps * alpha
    seconds = latency + wire
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
        binding=_binding(intra_s, egress_s),
        bytes_per_gpu=collective_bytes_per_rank(c, s, n),
        bus_bytes_per_s=s / seconds * bus_bandwidth_factor(c, n),
    )
