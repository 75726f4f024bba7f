"""The interconnect registry: the links between GPUs and between nodes, beside the GPU registry.

Every figure is SI: bytes per second **in one direction**. Vendors print link speeds two ways,
and mixing them is the interconnect's version of the sparse-peak bug:

* NVLink and PCIe datasheets print the sum of both directions ("NVLink 900 GB/s" on the H100 is
  450 GB/s out plus 450 GB/s in);
* InfiniBand prints one direction, in bits ("NDR 400 Gb/s" is 50e9 bytes/s each way).

The registry stores the one-direction figure (``bytes_per_s``), because that is what a rank can
send while it receives, and it is the figure the NCCL tests' *bus bandwidth* is compared with.
``bidirectional_bytes_per_s`` gives back the sum the NVLink and PCIe datasheets print. PCIe is
stored after its 128b/130b line code (31.5 GB/s each way for a PCIe 4.0 x16 slot, 63 GB/s for
PCIe 5.0, not the 32 and 64 of the raw transfer rate); packet headers leave a little less again,
and InfiniBand's and NVLink's figures are their signalling rates, so every figure here is a
ceiling, never an expectation.

Three tables:

* :func:`link` -- one kind of link (NVLink 3/4/5, PCIe 4/5 x16, InfiniBand HDR/NDR/XDR ports);
* :func:`gpu_links` -- which links each GPU of :mod:`roofline_lib.core.hardware` has;
* :func:`node` -- the 8-GPU boards the course uses (A100, H100, H800, B200), with their NVLink inside the
  node and their InfiniBand ports to other nodes.

The three tables live in one data file, ``roofline_lib/core/data/interconnect.json``, each speed as
its source prints it (both directions or one, bytes or bits) with where it comes from beside it;
this module reads it (through :mod:`roofline_lib.core.registry_data`) into :class:`LinkSpec` and
:class:`NodeSpec` records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .checks import _positive, _positive_int, _Registry
from .hardware import GPUSpec, as_gpu
from .hardware import registry as gpu_registry
from .registry_data import number, read_records, si

__all__ = [
    "LINK_KINDS",
    "LinkSpec",
    "NodeSpec",
    "as_link",
    "gpu_links",
    "gpu_links_source",
    "known_links",
    "known_nodes",
    "link",
    "link_registry",
    "node",
    "node_registry",
]

#: The families of link the registry knows.
LINK_KINDS = ("nvlink", "pcie", "infiniband")

_DATA_FILE = "data/interconnect.json"  # in roofline_lib/core


@dataclass(frozen=True)
class LinkSpec:
    """One link's datasheet speed, per GPU (NVLink, PCIe) or per port (InfiniBand), in SI units.

    ``bytes_per_s`` is one direction; ``lanes`` counts what the datasheet multiplies (NVLink links
    per GPU, PCIe lanes, InfiniBand lanes per port); ``per`` says what one figure belongs to.
    """

    name: str
    kind: str
    bytes_per_s: float
    lanes: int
    per: str
    source: str
    aliases: tuple[str, ...] = ()
    notes: str = ""
    key: str = field(default="", compare=False)

    def __post_init__(self):
        if self.kind not in LINK_KINDS:
            raise ValueError(f"kind must be one of {', '.join(LINK_KINDS)}, got {self.kind!r}")
        _positive(self.bytes_per_s, "bytes_per_s", "bytes per second (one direction)")
        _positive_int(self.lanes, "lanes", "links or lanes")

    @property
    def bidirectional_bytes_per_s(self) -> float:
        """Both directions together: the figure NVLink and PCIe datasheets print."""
        return 2 * self.bytes_per_s

    @property
    def bits_per_s(self) -> float:
        """One direction in bits per second: the figure InfiniBand names its speeds by."""
        return 8 * self.bytes_per_s


def _link(key: str, record: dict) -> LinkSpec:
    """One link's record of the data file as a :class:`LinkSpec` (which checks every field)."""
    fields = {name: record[name] for name in ("name", "kind", "lanes", "per", "source", "notes")}
    return LinkSpec(
        **fields,
        bytes_per_s=_one_direction(record["bytes_per_s"], f"{_DATA_FILE}, link {key!r}, bytes_per_s"),
        aliases=tuple(record["aliases"]),
        key=key,
    )


def _one_direction(figure: dict, where: str) -> float:
    """A printed link speed as bytes per second in one direction.

    The figure in SI, divided by the ``directions`` it sums (NVLink and PCIe datasheets print
    both, 2; InfiniBand one, 1), times ``payload_bits / wire_bits`` of its ``line_code`` if it
    has one (PCIe's 128b/130b).
    """
    speed = si(figure, where) / number({"value": figure.get("directions")}, f"{where}, directions")
    code = figure.get("line_code")
    if code is None:
        return speed
    return speed * (code["payload_bits"] / code["wire_bits"])  # the share of the wire's bits that carry data


_LINK_FIELDS = ("name", "kind", "aliases", "source", "bytes_per_s", "lanes", "per", "notes")
_LINKS: dict[str, LinkSpec] = {
    key: _link(key, record)
    for key, record in read_records(__package__, _DATA_FILE, table="links", required=_LINK_FIELDS).items()
}

# Which links each GPU of the GPU registry has, fastest first, with the datasheet that says so.
_GPU_LINKS: dict[str, tuple[tuple[str, ...], str]] = {
    gpu: (tuple(record["links"]), record["source"])
    for gpu, record in read_records(__package__, _DATA_FILE, table="gpu_links", required=("links", "source")).items()
}

_LINK_REGISTRY = _Registry(_LINKS, what="link", example="NVLink 4")


def known_links() -> tuple[str, ...]:
    """Link keys, in a stable order (NVLink, then PCIe, then InfiniBand)."""
    return _LINK_REGISTRY.keys()


def link_registry() -> Mapping[str, LinkSpec]:
    """A read-only view of every link."""
    return _LINK_REGISTRY.view()


def link(name: str) -> LinkSpec:
    """Look a link up by name, case-insensitively, with aliases ("NDR" is InfiniBand NDR).

    >>> link("nvlink 4").bytes_per_s
    450000000000.0
    """
    return _LINK_REGISTRY.lookup(name)


def as_link(value) -> LinkSpec:
    """Accept a LinkSpec or a name; everything that takes ``link=`` goes through here."""
    return _as_link(value, "value")


def _as_link(value, param: str) -> LinkSpec:
    """:func:`as_link` for a caller whose parameter is called ``param`` (named in a refusal)."""
    if isinstance(value, LinkSpec):
        return value
    if isinstance(value, str):
        return _LINK_REGISTRY.lookup(value, param)
    raise TypeError(
        f"link must be a LinkSpec or a link name such as 'NVLink 4', got {param}={value!r} ({type(value).__name__})"
    )


def gpu_links(gpu) -> tuple[LinkSpec, ...]:
    """The links a registry GPU has, fastest first (its NVLink, if any, then its PCIe slot)."""
    keys, _source = _links_entry(gpu)
    return tuple(_LINKS[k] for k in keys)


def _links_entry(gpu) -> tuple[tuple[str, ...], str]:
    spec: GPUSpec = as_gpu(gpu)
    if spec.key not in _GPU_LINKS:
        have = ", ".join(_GPU_LINKS)
        raise ValueError(f"the interconnect registry has no links for {spec.name!r} (gpu={gpu!r}); it has: {have}")
    return _GPU_LINKS[spec.key]


def gpu_links_source(gpu) -> str:
    """The datasheet that lists a registry GPU's links."""
    return _links_entry(gpu)[1]


@dataclass(frozen=True)
class NodeSpec:
    """One multi-GPU board: its GPUs, the link between them inside the node, and its network ports.

    ``scale_up`` joins every GPU of the node to every other (through NVSwitch chips), at its full
    per-GPU rate; ``scale_out`` is the kind of network port, ``scale_out_ports`` how many the node
    has for the compute network (one per GPU on every board here).
    """

    name: str
    gpu: GPUSpec
    n_gpus: int
    scale_up: LinkSpec
    scale_out: LinkSpec
    scale_out_ports: int
    source: str
    aliases: tuple[str, ...] = ()
    notes: str = ""
    key: str = field(default="", compare=False)

    def __post_init__(self):
        _positive_int(self.n_gpus, "n_gpus", "GPUs")
        _positive_int(self.scale_out_ports, "scale_out_ports", "ports")
        if not isinstance(self.gpu, GPUSpec):
            raise TypeError(f"gpu must be a GPUSpec, got {type(self.gpu).__name__} {self.gpu!r}")
        for name in ("scale_up", "scale_out"):
            if not isinstance(getattr(self, name), LinkSpec):
                raise TypeError(f"{name} must be a LinkSpec, got {getattr(self, name)!r}")

    @property
    def scale_up_bytes_per_s(self) -> float:
        """One GPU's one-direction bandwidth to the other GPUs of its node."""
        return self.scale_up.bytes_per_s

    @property
    def scale_out_bytes_per_s_per_gpu(self) -> float:
        """One GPU's one-direction share of the node's network ports."""
        return self.scale_out.bytes_per_s * self.scale_out_ports / self.n_gpus

    @property
    def scale_out_bytes_per_s(self) -> float:
        """The whole node's one-direction bandwidth to other nodes."""
        return self.scale_out.bytes_per_s * self.scale_out_ports

    @property
    def nic_count(self) -> int:
        """Network adapters (ports) of the compute network: what NCCL spreads its rings over."""
        return self.scale_out_ports

    @property
    def nic_bytes_per_s(self) -> float:
        """One network adapter port's one-direction bandwidth."""
        return self.scale_out.bytes_per_s


def _node(key: str, record: dict) -> NodeSpec:
    """One node's record of the data file as a :class:`NodeSpec`: its GPU and links by registry key."""
    fields = {name: record[name] for name in ("name", "n_gpus", "scale_out_ports", "source", "notes")}
    return NodeSpec(
        **fields,
        gpu=gpu_registry()[record["gpu"]],
        scale_up=_LINKS[record["scale_up"]],
        scale_out=_LINKS[record["scale_out"]],
        aliases=tuple(record["aliases"]),
        key=key,
    )


_NODE_FIELDS = ("name", "aliases", "source", "gpu", "n_gpus", "scale_up", "scale_out", "scale_out_ports", "notes")
_NODES: dict[str, NodeSpec] = {
    key: _node(key, record)
    for key, record in read_records(__package__, _DATA_FILE, table="nodes", required=_NODE_FIELDS).items()
}

_NODE_REGISTRY = _Registry(_NODES, what="node", example="8x H100")


def known_nodes() -> tuple[str, ...]:
    """Node keys, in a stable order."""
    return _NODE_REGISTRY.keys()


def node_registry() -> Mapping[str, NodeSpec]:
    """A read-only view of every node."""
    return _NODE_REGISTRY.view()


def node(name: str) -> NodeSpec:
    """Look a node up by name ("8x H100", "DGX H100", "8x-h100")."""
    return _NODE_REGISTRY.lookup(name)


def _as_node(value, param: str) -> NodeSpec:
    """A NodeSpec or a node name, for a caller whose parameter is called ``param`` (named in a refusal)."""
    if isinstance(value, NodeSpec):
        return value
    if isinstance(value, str):
        return _NODE_REGISTRY.lookup(value, param)
    raise TypeError(
        f"node must be a NodeSpec or a node name such as '8x H100', got {param}={value!r} ({type(value).__name__})"
    )
