"""The hardware registry: the single source of every GPU number in the course.

All figures are SI: bytes, bytes per second, FLOP per second. Capacities are
the decimal gigabytes the datasheets print (80 GB = 80e9 bytes). They are the
vendor's *datasheet* figures. NVIDIA prints tensor-core figures "with sparsity"
(2:4 structured sparsity doubles them); the registry stores the dense figure,
which is the one a dense matmul can reach, and keeps the sparse figure apart.
``peak_flops_per_s`` never returns a sparse figure unless asked by name.

Every entry carries ``source`` (the datasheet it came from) and ``notes`` (how
a number was derived when the datasheet does not print it directly).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

__all__ = [
    "PRECISIONS",
    "BYTES_PER_ELEMENT",
    "GPUSpec",
    "gpu",
    "known_gpus",
    "registry",
    "as_gpu",
    "bytes_per_element",
]

#: Precisions the course speaks of, from widest to narrowest.
PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")

#: Storage size of one element in each precision. tf32 is stored in 32 bits.
BYTES_PER_ELEMENT = MappingProxyType(
    {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp4": 0.5}
)

_T = 1e12  # one tera
_G = 1e9  # one giga
_MB = 1e6  # datasheets quote cache sizes in decimal-ish MB; kept as printed


def bytes_per_element(precision: str) -> float:
    """Storage bytes of one element in ``precision`` (fp4 is half a byte)."""
    key = _precision_key(precision)
    return BYTES_PER_ELEMENT[key]


def _precision_key(precision) -> str:
    if not isinstance(precision, str):
        raise TypeError(
            f"precision must be a string such as 'bf16', got {type(precision).__name__} {precision!r}"
        )
    key = precision.strip().lower()
    if key not in BYTES_PER_ELEMENT:
        raise ValueError(
            f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}"
        )
    return key


@dataclass(frozen=True)
class GPUSpec:
    """One GPU's datasheet numbers in SI units.

    ``dense_flops_per_s`` maps precision -> dense peak FLOP/s (int8 in OP/s).
    ``sparse_flops_per_s`` holds the 2:4-sparsity figures for reference only.
    ``fp32`` is the CUDA-core (non-tensor) peak; ``tf32`` and narrower are
    tensor-core peaks.
    """

    name: str
    hbm_bytes_per_s: float
    hbm_capacity_bytes: float
    l2_bytes: float
    sm_count: int
    dense_flops_per_s: Mapping[str, float]
    sparse_flops_per_s: Mapping[str, float]
    source: str
    aliases: tuple[str, ...] = ()
    memory_kind: str = "HBM"
    l2_bytes_per_s: float | None = None
    notes: str = ""
    key: str = field(default="", compare=False)

    @property
    def precisions(self) -> tuple[str, ...]:
        """The precisions this chip has, in the registry's order."""
        return tuple(p for p in PRECISIONS if p in self.dense_flops_per_s)

    def has(self, precision: str) -> bool:
        return _precision_key(precision) in self.dense_flops_per_s

    def peak_flops_per_s(self, precision: str = "bf16", *, sparse: bool = False) -> float:
        """Dense peak FLOP/s in ``precision`` (the 2:4-sparse figure only if ``sparse=True``).

        Raises ValueError naming the precisions the chip has when it lacks one,
        e.g. fp8 on an A100.
        """
        key = _precision_key(precision)
        table = self.sparse_flops_per_s if sparse else self.dense_flops_per_s
        if key not in table:
            kind = "a sparse figure for" if sparse and key in self.dense_flops_per_s else ""
            has = ", ".join(p for p in PRECISIONS if p in table) or "none"
            what = f"{kind} {key}".strip()
            raise ValueError(
                f"{self.name} has no {what} (precision={precision!r}); it has: {has}"
            )
        return table[key]


def _spec(key, name, *, bw, cap, l2, sms, dense, sparse, source, aliases=(), **kw) -> GPUSpec:
    return GPUSpec(
        name=name,
        hbm_bytes_per_s=bw,
        hbm_capacity_bytes=cap,
        l2_bytes=l2,
        sm_count=sms,
        dense_flops_per_s=MappingProxyType(dict(dense)),
        sparse_flops_per_s=MappingProxyType(dict(sparse)),
        source=source,
        aliases=tuple(aliases),
        key=key,
        **kw,
    )


def _halves(sparse: dict[str, float]) -> dict[str, float]:
    """Dense figure = sparse figure / 2 (2:4 structured sparsity doubles the rate)."""
    return {p: v / 2 for p, v in sparse.items()}


_A100_TENSOR_DENSE = {"tf32": 156 * _T, "bf16": 312 * _T, "fp16": 312 * _T, "int8": 624 * _T}
_A100_SOURCE = "NVIDIA A100 Tensor Core GPU datasheet (2021), SXM column"
_A100_L2_NOTE = (
    "l2_bytes_per_s from the A100 whitepaper: 5120 bytes/clock of L2 read bandwidth "
    "at the 1410 MHz boost clock (an upper bound, not a datasheet figure)."
)

_H100_SXM_SPARSE = {"tf32": 989 * _T, "bf16": 1979 * _T, "fp16": 1979 * _T,
                    "fp8": 3958 * _T, "int8": 3958 * _T}
_H100_PCIE_SPARSE = {"tf32": 756 * _T, "bf16": 1513 * _T, "fp16": 1513 * _T,
                     "fp8": 3026 * _T, "int8": 3026 * _T}
# HGX B200 datasheet quotes an 8-GPU board; per GPU is the board figure / 8.
_B200_SPARSE = {"tf32": 18e15 / 8, "bf16": 36e15 / 8, "fp16": 36e15 / 8,
                "fp8": 72e15 / 8, "int8": 72e15 / 8, "fp4": 144e15 / 8}
_L4_SPARSE = {"tf32": 120 * _T, "bf16": 242 * _T, "fp16": 242 * _T,
              "fp8": 485 * _T, "int8": 485 * _T}
_SPARSE_NOTE = "Dense tensor-core figures are the datasheet's sparse figures halved."

_REGISTRY: dict[str, GPUSpec] = {
    spec.key: spec
    for spec in (
        _spec(
            "a100-80gb-sxm", "A100 80GB SXM",
            bw=2039 * _G, cap=80 * _G, l2=40 * _MB, sms=108,
            dense={"fp32": 19.5 * _T, **_A100_TENSOR_DENSE},
            sparse={p: 2 * v for p, v in _A100_TENSOR_DENSE.items()},
            source=_A100_SOURCE,
            aliases=("a100", "a100-80gb", "a100 80gb", "a100-sxm", "a100 sxm"),
            memory_kind="HBM2e",
            l2_bytes_per_s=5120 * 1410e6,
            notes="The datasheet prints dense and sparse tensor figures. " + _A100_L2_NOTE,
        ),
        _spec(
            "a100-40gb-sxm", "A100 40GB SXM",
            bw=1555 * _G, cap=40 * _G, l2=40 * _MB, sms=108,
            dense={"fp32": 19.5 * _T, **_A100_TENSOR_DENSE},
            sparse={p: 2 * v for p, v in _A100_TENSOR_DENSE.items()},
            source=_A100_SOURCE,
            aliases=("a100-40gb", "a100 40gb"),
            memory_kind="HBM2",
            l2_bytes_per_s=5120 * 1410e6,
            notes="Same compute as the 80 GB part, slower and smaller memory. " + _A100_L2_NOTE,
        ),
        _spec(
            "h100-sxm", "H100 SXM",
            bw=3.35 * _T, cap=80 * _G, l2=50 * _MB, sms=132,
            dense={"fp32": 67 * _T, **_halves(_H100_SXM_SPARSE)},
            sparse=_H100_SXM_SPARSE,
            source="NVIDIA H100 Tensor Core GPU datasheet (2023), H100 SXM column",
            aliases=("h100", "h100-sxm5", "h100 sxm"),
            memory_kind="HBM3",
            notes=_SPARSE_NOTE,
        ),
        _spec(
            "h100-pcie", "H100 PCIe",
            bw=2.0 * _T, cap=80 * _G, l2=50 * _MB, sms=114,
            dense={"fp32": 51 * _T, **_halves(_H100_PCIE_SPARSE)},
            sparse=_H100_PCIE_SPARSE,
            source="NVIDIA H100 Tensor Core GPU datasheet (2023), H100 PCIe column",
            aliases=("h100 pcie",),
            memory_kind="HBM2e",
            notes=_SPARSE_NOTE,
        ),
        _spec(
            "h200", "H200 SXM",
            bw=4.8 * _T, cap=141 * _G, l2=50 * _MB, sms=132,
            dense={"fp32": 67 * _T, **_halves(_H100_SXM_SPARSE)},
            sparse=_H100_SXM_SPARSE,
            source="NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM column",
            aliases=("h200-sxm", "h200 sxm"),
            memory_kind="HBM3e",
            notes=_SPARSE_NOTE + " SM count and L2 as the H100 SXM (same GH100 die).",
        ),
        _spec(
            "b200", "B200",
            bw=8 * _T, cap=180 * _G, l2=126 * _MB, sms=148,
            dense={"fp32": 600e12 / 8, **_halves(_B200_SPARSE)},
            sparse=_B200_SPARSE,
            source="NVIDIA HGX B200 datasheet (2024): 8-GPU board figures divided by 8",
            aliases=("b200-sxm", "hgx b200"),
            memory_kind="HBM3e",
            notes=_SPARSE_NOTE + " SM count and L2 size are not in the datasheet; they are what "
            "a published microbenchmark study of the shipping part reports (74 of 80 SMs enabled on "
            "each of its two dies; 126 MB of L2 split across the dies).",
        ),
        _spec(
            "l4", "L4",
            bw=300 * _G, cap=24 * _G, l2=48 * _MB, sms=58,
            dense={"fp32": 30.3 * _T, **_halves(_L4_SPARSE)},
            sparse=_L4_SPARSE,
            source="NVIDIA L4 Tensor Core GPU datasheet (2023)",
            aliases=("nvidia l4",),
            memory_kind="GDDR6",
            notes=_SPARSE_NOTE + " SM count and L2 from the Ada Lovelace architecture whitepaper (AD104).",
        ),
    )
}

_ALIASES: dict[str, str] = {}
for _key, _s in _REGISTRY.items():
    for _name in (_key, _s.name.lower(), *_s.aliases):
        _ALIASES[_name.lower()] = _key


def _normalise(name: str) -> str:
    return " ".join(name.strip().lower().replace("_", "-").split())


def known_gpus() -> tuple[str, ...]:
    """Registry keys, in a stable order."""
    return tuple(_REGISTRY)


def registry() -> Mapping[str, GPUSpec]:
    """A read-only view of the whole registry."""
    return MappingProxyType(_REGISTRY)


def gpu(name: str) -> GPUSpec:
    """Look a GPU up by name, case-insensitively, with aliases ("A100" is the 80 GB SXM part).

    >>> gpu("h100").name
    'H100 SXM'
    """
    if not isinstance(name, str):
        raise TypeError(f"gpu name must be a string such as 'H100', got {type(name).__name__} {name!r}")
    norm = _normalise(name)
    for candidate in (norm, norm.replace(" ", "-"), norm.replace("-", " ")):
        if candidate in _ALIASES:
            return _REGISTRY[_ALIASES[candidate]]
    known = ", ".join(f"{k} ({s.name})" for k, s in _REGISTRY.items())
    raise ValueError(f"unknown GPU {name!r}; known GPUs: {known}")


def as_gpu(value) -> GPUSpec:
    """Accept a GPUSpec or a name; everything that takes ``gpu=`` goes through here."""
    if isinstance(value, GPUSpec):
        return value
    if isinstance(value, str):
        return gpu(value)
    raise TypeError(
        f"gpu must be a GPUSpec or a GPU name such as 'A100', got {type(value).__name__} {value!r}"
    )
