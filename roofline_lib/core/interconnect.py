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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .checks import _positive, _positive_int, _Registry
from .hardware import GPUSpec, as_gpu
from .hardware import registry as gpu_registry

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

_G = 1e9  # one giga (bytes or bits)
_GBIT = 1e9 / 8  # one gigabit, in bytes
_PCIE_128B_130B = 128 / 130  # PCIe 3.0 and later: 128 payload bits in every 130 on the wire


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


def _link(key, name, **fields) -> LinkSpec:
    """A registry entry: its key and name first, then the LinkSpec fields by keyword."""
    return LinkSpec(name=name, key=key, **fields)


_PER_GPU = "GPU (all its links of this kind together)"
_PER_PORT = "port (one network adapter port)"
_PER_SLOT = "x16 slot"

_LINKS: dict[str, LinkSpec] = {
    spec.key: spec
    for spec in (
        _link(
            "nvlink3",
            "NVLink 3",
            kind="nvlink",
            bytes_per_s=600 * _G / 2,
            lanes=12,
            per=_PER_GPU,
            source="NVIDIA A100 Tensor Core GPU datasheet (2021): NVLink 600 GB/s",
            aliases=("nvlink 3", "nvlink-3", "nvlink3.0", "a100 nvlink"),
            notes="The datasheet's 600 GB/s is both directions of 12 links (25 GB/s each way per link).",
        ),
        _link(
            "nvlink4",
            "NVLink 4",
            kind="nvlink",
            bytes_per_s=900 * _G / 2,
            lanes=18,
            per=_PER_GPU,
            source="NVIDIA H100 Tensor Core GPU datasheet (2023), H100 SXM column: NVLink 900 GB/s",
            aliases=("nvlink 4", "nvlink-4", "h100 nvlink"),
            notes="The datasheet's 900 GB/s is both directions of 18 links (25 GB/s each way per link).",
        ),
        _link(
            "nvlink4-h800",
            "NVLink 4 (H800, 8 links)",
            kind="nvlink",
            bytes_per_s=400 * _G / 2,
            lanes=8,
            per=_PER_GPU,
            source="NVIDIA H800 Tensor Core GPU datasheet (2023), H800 SXM5 column: NVLink 400 GB/s",
            aliases=("h800 nvlink", "nvlink 4 h800"),
            notes="The datasheet's 400 GB/s is both directions of 8 links (25 GB/s each way per link); "
            "DeepSeek-AI (2024), section 3.2.2, reaches about 160 GB/s of it.",
        ),
        _link(
            "nvlink4-bridge",
            "NVLink 4 bridge (H100 PCIe pairs)",
            kind="nvlink",
            bytes_per_s=600 * _G / 2,
            lanes=12,
            per="GPU pair joined by NVLink bridges",
            source="NVIDIA H100 Tensor Core GPU datasheet (2023), H100 PCIe column: NVLink 600 GB/s",
            aliases=("nvlink bridge", "h100 pcie nvlink"),
            notes="Bridges join two cards only; there is no switch, so it reaches one peer.",
        ),
        _link(
            "nvlink5",
            "NVLink 5",
            kind="nvlink",
            bytes_per_s=1.8e12 / 2,
            lanes=18,
            per=_PER_GPU,
            source="NVIDIA HGX B200 datasheet (2024): fifth-generation NVLink, 1.8 TB/s per GPU",
            aliases=("nvlink 5", "nvlink-5", "b200 nvlink"),
            notes="The datasheet's 1.8 TB/s is both directions of 18 links (50 GB/s each way per link).",
        ),
        _link(
            "pcie4-x16",
            "PCIe 4.0 x16",
            kind="pcie",
            bytes_per_s=16 * 16 * _GBIT * _PCIE_128B_130B,  # 16 GT/s x 16 lanes, 128b/130b
            lanes=16,
            per=_PER_SLOT,
            source="PCI-SIG PCI Express Base Specification 4.0 (2017): 16 GT/s per lane; "
            "NVIDIA A100 datasheet: PCIe Gen4 64 GB/s",
            aliases=("pcie4", "pcie 4", "pcie gen4", "pcie 4.0", "pcie4 x16"),
            notes="16 GT/s x 16 lanes / 8 bits = 32 GB/s of raw signalling each way (64 GB/s both, as "
            "datasheets print); the 128b/130b line code leaves 31.5 GB/s each way, the figure stored.",
        ),
        _link(
            "pcie5-x16",
            "PCIe 5.0 x16",
            kind="pcie",
            bytes_per_s=32 * 16 * _GBIT * _PCIE_128B_130B,  # 32 GT/s x 16 lanes, 128b/130b
            lanes=16,
            per=_PER_SLOT,
            source="PCI-SIG PCI Express Base Specification 5.0 (2019): 32 GT/s per lane; "
            "NVIDIA H100 datasheet: PCIe Gen5 128 GB/s",
            aliases=("pcie5", "pcie 5", "pcie gen5", "pcie 5.0", "pcie5 x16"),
            notes="32 GT/s x 16 lanes / 8 bits = 64 GB/s of raw signalling each way (128 GB/s both, as "
            "datasheets print); the 128b/130b line code leaves 63 GB/s each way, the figure stored.",
        ),
        _link(
            "ib-hdr",
            "InfiniBand HDR",
            kind="infiniband",
            bytes_per_s=200 * _GBIT,
            lanes=4,
            per=_PER_PORT,
            source="NVIDIA ConnectX-6 VPI adapter datasheet: HDR InfiniBand, 200 Gb/s per port",
            aliases=("hdr", "infiniband hdr", "ib hdr", "hdr200", "connectx-6"),
            notes="200 Gb/s each way = 25 GB/s.",
        ),
        _link(
            "ib-ndr",
            "InfiniBand NDR",
            kind="infiniband",
            bytes_per_s=400 * _GBIT,
            lanes=4,
            per=_PER_PORT,
            source="NVIDIA ConnectX-7 adapter datasheet: NDR InfiniBand, 400 Gb/s per port",
            aliases=("ndr", "infiniband ndr", "ib ndr", "ndr400", "connectx-7"),
            notes="400 Gb/s each way = 50 GB/s.",
        ),
        _link(
            "ib-xdr",
            "InfiniBand XDR",
            kind="infiniband",
            bytes_per_s=800 * _GBIT,
            lanes=4,
            per=_PER_PORT,
            source="NVIDIA ConnectX-8 SuperNIC datasheet: XDR InfiniBand, 800 Gb/s per port",
            aliases=("xdr", "infiniband xdr", "ib xdr", "xdr800", "connectx-8"),
            notes="800 Gb/s each way = 100 GB/s.",
        ),
    )
}

# Which links each GPU of the GPU registry has, fastest first, with the datasheet that says so.
_GPU_LINKS: dict[str, tuple[tuple[str, ...], str]] = {
    "a100-80gb-sxm": (("nvlink3", "pcie4-x16"), "NVIDIA A100 datasheet: NVLink 600 GB/s, PCIe Gen4 64 GB/s"),
    "a100-40gb-sxm": (("nvlink3", "pcie4-x16"), "NVIDIA A100 datasheet: NVLink 600 GB/s, PCIe Gen4 64 GB/s"),
    "h100-sxm": (("nvlink4", "pcie5-x16"), "NVIDIA H100 datasheet, SXM: NVLink 900 GB/s, PCIe Gen5 128 GB/s"),
    "h800": (("nvlink4-h800", "pcie5-x16"), "NVIDIA H800 datasheet, SXM5: NVLink 400 GB/s, PCIe Gen5 128 GB/s"),
    "h100-pcie": (
        ("nvlink4-bridge", "pcie5-x16"),
        "NVIDIA H100 datasheet, PCIe: NVLink bridge 600 GB/s, PCIe Gen5 128 GB/s",
    ),
    "h200": (("nvlink4", "pcie5-x16"), "NVIDIA H200 datasheet, SXM: NVLink 900 GB/s, PCIe Gen5 128 GB/s"),
    "b200": (
        ("nvlink5", "pcie5-x16"),
        "NVIDIA HGX B200 datasheet: NVLink 1.8 TB/s per GPU; NVIDIA DGX B200 user guide: PCIe Gen5 host",
    ),
    "l4": (("pcie4-x16",), "NVIDIA L4 datasheet: PCIe Gen4 x16 64 GB/s, no NVLink"),
    "v100-sxm2-32gb": (
        (),
        "NVIDIA Tesla V100 datasheet, SXM2: NVLink 2 300 GB/s and PCIe Gen3 32 GB/s, not in this registry",
    ),
    "v100-sxm2-16gb": (
        (),
        "NVIDIA Tesla V100 datasheet, SXM2: NVLink 2 300 GB/s and PCIe Gen3 32 GB/s, not in this registry",
    ),
    "a10": (("pcie4-x16",), "NVIDIA A10 datasheet: PCIe Gen4 x16 64 GB/s, no NVLink"),
    "mi250x": (
        ("pcie4-x16",),
        "AMD Instinct MI250X data sheet: PCIe Gen4 x16 host interface; its Infinity Fabric links are not in this registry",
    ),
    "mi250": (
        ("pcie4-x16",),
        "AMD Instinct MI250 data sheet: PCIe Gen4 x16 host interface; its Infinity Fabric links are not in this registry",
    ),
    "mi300x": (
        ("pcie5-x16",),
        (
            "AMD Instinct MI300X data sheet: PCIe Gen5 x16 host interface; its "
            "Infinity Fabric links between GPUs are not in this registry"
        ),
    ),
    "tpu-v4": (
        (),
        (
            "Google Cloud TPU documentation: TPU v4 chips join through the inter-chip "
            "interconnect (ICI), which is not in this registry"
        ),
    ),
    "tpu-v5e": (
        (),
        (
            "Google Cloud TPU documentation: TPU v5e chips join through the inter-chip "
            "interconnect (ICI), which is not in this registry"
        ),
    ),
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


def _node(key, name, *, gpu, n_gpus, scale_up, scale_out, ports, source, aliases=(), notes=""):
    return NodeSpec(
        name=name,
        gpu=gpu_registry()[gpu],
        n_gpus=n_gpus,
        scale_up=_LINKS[scale_up],
        scale_out=_LINKS[scale_out],
        scale_out_ports=ports,
        source=source,
        aliases=tuple(aliases),
        notes=notes,
        key=key,
    )


_NODES: dict[str, NodeSpec] = {
    spec.key: spec
    for spec in (
        _node(
            "8x-a100",
            "8x A100 80GB SXM (DGX A100 / HGX A100 8-GPU)",
            gpu="a100-80gb-sxm",
            n_gpus=8,
            scale_up="nvlink3",
            scale_out="ib-hdr",
            ports=8,
            source="NVIDIA DGX A100 datasheet: 8x A100, six NVSwitches, 8x single-port ConnectX-6 "
            "200 Gb/s HDR InfiniBand for the compute network",
            aliases=("dgx a100", "hgx a100", "8xa100", "a100 node"),
        ),
        _node(
            "8x-h100",
            "8x H100 SXM (DGX H100 / HGX H100 8-GPU)",
            gpu="h100-sxm",
            n_gpus=8,
            scale_up="nvlink4",
            scale_out="ib-ndr",
            ports=8,
            source="NVIDIA DGX H100/H200 documentation: 8x H100 SXM, four NVSwitch chips, "
            "eight single-port ConnectX-7 at up to 400 Gb/s for the compute network",
            aliases=("dgx h100", "hgx h100", "8xh100", "h100 node"),
        ),
        _node(
            "8x-h800",
            "8x H800 SXM (HGX H800 8-GPU)",
            gpu="h800",
            n_gpus=8,
            scale_up="nvlink4-h800",
            scale_out="ib-ndr",
            ports=8,
            source="DeepSeek-AI (2024), DeepSeek-V3 technical report, section 3.1: 8 H800 per node on "
            "NVLink and NVSwitch, InfiniBand between nodes; Zhao et al. (2025), Insights into DeepSeek-V3, "
            "section 4: eight 400 Gb/s InfiniBand ConnectX-7 NICs per node",
            aliases=("hgx h800", "8xh800", "h800 node"),
        ),
        _node(
            "8x-b200",
            "8x B200 (DGX B200 / HGX B200)",
            gpu="b200",
            n_gpus=8,
            scale_up="nvlink5",
            scale_out="ib-ndr",
            ports=8,
            source="NVIDIA DGX B200 user guide: 8x B200, two fifth-generation NVLink switches "
            "(14.4 TB/s aggregate), 8x single-port ConnectX-7 at up to 400 Gb/s InfiniBand",
            aliases=("dgx b200", "hgx b200 node", "8xb200", "b200 node"),
            notes="14.4 TB/s aggregate = 8 GPUs x 1.8 TB/s, both directions.",
        ),
    )
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
