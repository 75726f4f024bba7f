"""The hardware registry: the single source of every accelerator number in the course.

All figures are SI: bytes, bytes per second, FLOP per second. They are the
vendor's *datasheet* figures. NVIDIA and AMD print tensor-core figures "with
sparsity" (2:4 structured sparsity doubles them); the registry stores the dense
figure, which is the one a dense matmul can reach, and keeps the sparse figure
apart. ``peak_flops_per_s`` never returns a sparse figure unless asked by name.

Capacity convention: a part sold as "80 GB" is built from memory stacks of
power-of-two size and holds 80 GiB, 80 * 2**30 bytes, so ``hbm_capacity_bytes``
is the printed number times 2**30 (:data:`GIB`) for every entry. The driver keeps
a little of it back (under 1 % on current parts), which is not subtracted.
Bandwidths stay decimal, as printed (3.35 TB/s = 3.35e12 B/s).

Every entry carries ``source`` (the datasheet it came from) and ``notes`` (how
a number was derived when the datasheet does not print it directly). A chip the
registry lacks is described with :func:`accelerator`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .checks import _Registry, _text

__all__ = [
    "GIB",
    "PRECISIONS",
    "BYTES_PER_ELEMENT",
    "GPUSpec",
    "gpu",
    "known_gpus",
    "registry",
    "as_gpu",
    "accelerator",
    "bytes_per_element",
    "match_gpu",
]

#: Precisions the course speaks of, from widest to narrowest.
PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")

#: Storage size of one element in each precision. tf32 is stored in 32 bits.
BYTES_PER_ELEMENT = MappingProxyType({"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp4": 0.5})

_T = 1e12  # one tera
_G = 1e9  # one giga

#: One gibibyte, 2**30 bytes: the unit a memory capacity is really printed in (see above).
GIB = 2**30
_MB = 1e6  # datasheets quote cache sizes in decimal-ish MB; kept as printed


def bytes_per_element(precision: str) -> float:
    """Storage bytes of one element in ``precision`` (fp4 is half a byte)."""
    key = _precision_key(precision)
    return BYTES_PER_ELEMENT[key]


def _precision_key(precision) -> str:
    if not isinstance(precision, str):
        raise TypeError(f"precision must be a string such as 'bf16', got {type(precision).__name__} {precision!r}")
    key = precision.strip().lower()
    if key not in BYTES_PER_ELEMENT:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    return key


@dataclass(frozen=True)
class GPUSpec:
    """One GPU's datasheet numbers in SI units.

    ``dense_flops_per_s`` maps precision -> dense peak FLOP/s (int8 in OP/s).
    ``sparse_flops_per_s`` holds the 2:4-sparsity figures for reference only.
    ``fp32`` is the CUDA-core (non-tensor) peak; ``tf32`` and narrower are
    tensor-core peaks. ``hbm_capacity_bytes``, ``l2_bytes`` and ``sm_count`` may be
    ``None`` for a chip described by a reader (:func:`accelerator`); every field is
    checked when the spec is made.
    """

    name: str
    hbm_bytes_per_s: float
    hbm_capacity_bytes: float | None
    l2_bytes: float | None
    sm_count: int | None
    dense_flops_per_s: Mapping[str, float]
    sparse_flops_per_s: Mapping[str, float]
    source: str
    aliases: tuple[str, ...] = ()
    memory_kind: str = "HBM"
    l2_bytes_per_s: float | None = None
    notes: str = ""
    key: str = field(default="", compare=False)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise TypeError(f"name must be a non-empty string such as 'MI300X', got {self.name!r}")
        _rate(self.hbm_bytes_per_s, "hbm_bytes_per_s", "bytes per second", "TB/s", "3.35e12")
        if self.hbm_capacity_bytes is not None:
            _rate(self.hbm_capacity_bytes, "hbm_capacity_bytes", "bytes", "GB", "80 * 2**30")
        if self.l2_bytes is not None:
            _number(self.l2_bytes, "l2_bytes", "bytes")
        if self.l2_bytes_per_s is not None:
            _rate(self.l2_bytes_per_s, "l2_bytes_per_s", "bytes per second", "TB/s", "7.2e12")
        if self.sm_count is not None and (
            isinstance(self.sm_count, bool) or not isinstance(self.sm_count, int) or self.sm_count < 1
        ):
            raise ValueError(f"sm_count must be a positive whole number of SMs (or None), got {self.sm_count!r}")
        for attr, required in (("dense_flops_per_s", True), ("sparse_flops_per_s", False)):
            table = getattr(self, attr)
            if not isinstance(table, Mapping) or (required and not table):
                raise TypeError(f"{attr} must map precision names to FLOP/s, such as {{'bf16': 989e12}}, got {table!r}")
            for precision, value in table.items():
                _precision_key(precision)
                _rate(value, f"{attr}[{precision!r}]", "FLOP per second", "TFLOP/s", "989e12")
            object.__setattr__(self, attr, MappingProxyType(dict(table)))
        for precision, value in self.sparse_flops_per_s.items():
            dense = self.dense_flops_per_s.get(precision)
            if dense is not None and value < dense:
                raise ValueError(
                    f"sparse_flops_per_s[{precision!r}] = {value!r} is below the dense {dense!r}: "
                    "the sparse figure is the larger one (2:4 sparsity doubles the rate)"
                )
        if not isinstance(self.source, str) or not self.source.strip():
            raise ValueError(f"source must say where the numbers come from, got {self.source!r}")
        if isinstance(self.aliases, str) or not isinstance(self.aliases, (tuple, list)):
            raise TypeError(
                f"aliases must be a tuple of other names for the chip, such as ('h100',), "
                f"got {type(self.aliases).__name__} {self.aliases!r}"
            )
        for alias in self.aliases:
            _text(alias, "aliases", "a tuple of names, each")
        object.__setattr__(self, "aliases", tuple(self.aliases))
        _text(self.memory_kind, "memory_kind", "a memory kind such as 'HBM3'")
        for attr in ("notes", "key"):
            if not isinstance(getattr(self, attr), str):
                raise TypeError(f"{attr} must be a string (empty for none), got {getattr(self, attr)!r}")

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
        if not isinstance(sparse, bool):
            raise TypeError(f"sparse must be True or False, got {type(sparse).__name__} {sparse!r}")
        table = self.sparse_flops_per_s if sparse else self.dense_flops_per_s
        if key not in table:
            kind = "a sparse figure for" if sparse and key in self.dense_flops_per_s else ""
            has = ", ".join(p for p in PRECISIONS if p in table) or "none"
            what = f"{kind} {key}".strip()
            raise ValueError(f"{self.name} has no {what} (precision={precision!r}); it has: {has}")
        return table[key]


def _number(value, name: str, unit: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number of {unit}, got {value!r}")
    return float(value)


def _rate(value, name: str, unit: str, big_unit: str, example: str) -> float:
    """A positive figure of at least 1e9 ``unit``: anything smaller is a unit slip, not a chip."""
    x = _number(value, name, unit)
    if x < 1e9:
        raise ValueError(
            f"{name} must be in {unit}, got {value!r}, below 1e9: did you mean {big_unit}? "
            f"(write {example}, not the figure in {big_unit})"
        )
    return x


def accelerator(
    name,
    peak_flops_per_s,
    hbm_bytes_per_s,
    hbm_capacity_bytes=None,
    *,
    source="described by the reader",
    sparse_flops_per_s=None,
    memory_kind="HBM",
) -> GPUSpec:
    """Describe a chip the registry lacks: a name, dense peaks by precision, bandwidth, capacity.

    >>> chip = accelerator("My NPU", {"bf16": 400e12, "fp8": 800e12}, hbm_bytes_per_s=2.0e12,
    ...                    hbm_capacity_bytes=64 * GIB)
    >>> round(chip.peak_flops_per_s("bf16") / chip.hbm_bytes_per_s)  # its bf16 ridge, FLOP/byte
    200

    Everything is SI: FLOP/s, bytes/s, bytes. A bandwidth or a peak below 1e9 is refused
    with a hint ("did you mean TB/s?"): 2.0 means nothing as bytes per second. The result
    works wherever a GPU name does (``rl.decode_roofline(7e9, chip)``).
    """
    if not isinstance(peak_flops_per_s, Mapping) or not peak_flops_per_s:
        raise TypeError(
            "peak_flops_per_s must map precision names to FLOP/s (dense), such as {'bf16': 400e12}, "
            f"got {type(peak_flops_per_s).__name__} {peak_flops_per_s!r}"
        )
    _text(memory_kind, "memory_kind", "a memory kind such as 'HBM3'")
    return GPUSpec(
        name=name,
        hbm_bytes_per_s=hbm_bytes_per_s,
        hbm_capacity_bytes=hbm_capacity_bytes,
        l2_bytes=None,
        sm_count=None,
        dense_flops_per_s=peak_flops_per_s,
        sparse_flops_per_s={} if sparse_flops_per_s is None else sparse_flops_per_s,
        source=source,
        memory_kind=memory_kind,
    )


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

_H100_SXM_SPARSE = {"tf32": 989 * _T, "bf16": 1979 * _T, "fp16": 1979 * _T, "fp8": 3958 * _T, "int8": 3958 * _T}
_H100_PCIE_SPARSE = {"tf32": 756 * _T, "bf16": 1513 * _T, "fp16": 1513 * _T, "fp8": 3026 * _T, "int8": 3026 * _T}
# HGX B200 datasheet quotes an 8-GPU board; per GPU is the board figure / 8.
_B200_SPARSE = {
    "tf32": 18e15 / 8,
    "bf16": 36e15 / 8,
    "fp16": 36e15 / 8,
    "fp8": 72e15 / 8,
    "int8": 72e15 / 8,
    "fp4": 144e15 / 8,
}
_L4_SPARSE = {"tf32": 120 * _T, "bf16": 242 * _T, "fp16": 242 * _T, "fp8": 485 * _T, "int8": 485 * _T}
_MI300X_SPARSE = {
    "tf32": 1307.4 * _T,
    "bf16": 2614.9 * _T,
    "fp16": 2614.9 * _T,
    "fp8": 5229.8 * _T,
    "int8": 5229.8 * _T,
}
_SPARSE_NOTE = "Dense tensor-core figures are the datasheet's sparse figures halved."
_V100_SOURCE = "NVIDIA Tesla V100 GPU datasheet (2020), V100 SXM2 column"
_V100_NOTE = (
    "Volta has no sparsity and no bf16 or tf32: its tensor cores run fp16 (125 TFLOP/s, the "
    "datasheet's 'Tensor Performance'); fp32 is the CUDA-core peak. SM count and L2 from the Volta "
    "architecture whitepaper (GV100)."
)
_A10_SPARSE = {"tf32": 125 * _T, "bf16": 250 * _T, "fp16": 250 * _T, "int8": 500 * _T}
_MI250_NOTE = (
    "CDNA 2 has no structured sparsity: every figure is dense, as printed. fp32 is the FP32 matrix "
    "peak (the FP32 vector peak is {vector} TFLOP/s); no tf32. Two dies (GCDs) per package, each with "
    "8 MB of L2, and sm_count holds the {cus} compute units of both; a rank usually drives one die, "
    "half of every figure here."
)

_REGISTRY: dict[str, GPUSpec] = {
    spec.key: spec
    for spec in (
        _spec(
            "a100-80gb-sxm",
            "A100 80GB SXM",
            bw=2039 * _G,
            cap=80 * GIB,
            l2=40 * _MB,
            sms=108,
            dense={"fp32": 19.5 * _T, **_A100_TENSOR_DENSE},
            sparse={p: 2 * v for p, v in _A100_TENSOR_DENSE.items()},
            source=_A100_SOURCE,
            aliases=("a100", "a100-80gb", "a100 80gb", "a100-sxm", "a100 sxm"),
            memory_kind="HBM2e",
            l2_bytes_per_s=5120 * 1410e6,
            notes="The datasheet prints dense and sparse tensor figures. " + _A100_L2_NOTE,
        ),
        _spec(
            "a100-40gb-sxm",
            "A100 40GB SXM",
            bw=1555 * _G,
            cap=40 * GIB,
            l2=40 * _MB,
            sms=108,
            dense={"fp32": 19.5 * _T, **_A100_TENSOR_DENSE},
            sparse={p: 2 * v for p, v in _A100_TENSOR_DENSE.items()},
            source=_A100_SOURCE,
            aliases=("a100-40gb", "a100 40gb", "a100 pg509 200", "a100-pg509-200"),
            memory_kind="HBM2",
            l2_bytes_per_s=5120 * 1410e6,
            notes="Same compute as the 80 GB part, slower and smaller memory. " + _A100_L2_NOTE + " "
            "'A100-PG509-200' is the name torch reports for this SXM4 board (PG509) in a 40 GB build: "
            "its traces record 42,297,524,224 bytes (39.4 GiB) of device memory and 108 SMs.",
        ),
        _spec(
            "h100-sxm",
            "H100 SXM",
            bw=3.35 * _T,
            cap=80 * GIB,
            l2=50 * _MB,
            sms=132,
            dense={"fp32": 67 * _T, **_halves(_H100_SXM_SPARSE)},
            sparse=_H100_SXM_SPARSE,
            source="NVIDIA H100 Tensor Core GPU datasheet (2023), H100 SXM column",
            aliases=("h100", "h100-sxm5", "h100 sxm"),
            memory_kind="HBM3",
            notes=_SPARSE_NOTE,
        ),
        _spec(
            "h800",
            "H800 SXM",
            bw=3.35 * _T,
            cap=80 * GIB,
            l2=50 * _MB,
            sms=132,
            dense={"fp32": 67 * _T, **_halves(_H100_SXM_SPARSE)},
            sparse=_H100_SXM_SPARSE,
            source="NVIDIA H800 Tensor Core GPU datasheet (2023), H800 SXM5 column",
            aliases=("h800-sxm", "h800 sxm", "h800-sxm5"),
            memory_kind="HBM3",
            notes=_SPARSE_NOTE + " The H100 SXM's GH100 die and tensor-core peaks; NVLink cut to "
            "400 GB/s (both directions) and FP64 to 1 TFLOP/s. SM count and L2 as the H100 SXM.",
        ),
        _spec(
            "h100-pcie",
            "H100 PCIe",
            bw=2.0 * _T,
            cap=80 * GIB,
            l2=50 * _MB,
            sms=114,
            dense={"fp32": 51 * _T, **_halves(_H100_PCIE_SPARSE)},
            sparse=_H100_PCIE_SPARSE,
            source="NVIDIA H100 Tensor Core GPU datasheet (2023), H100 PCIe column",
            aliases=("h100 pcie",),
            memory_kind="HBM2e",
            notes=_SPARSE_NOTE,
        ),
        _spec(
            "h200",
            "H200 SXM",
            bw=4.8 * _T,
            cap=141 * GIB,
            l2=50 * _MB,
            sms=132,
            dense={"fp32": 67 * _T, **_halves(_H100_SXM_SPARSE)},
            sparse=_H100_SXM_SPARSE,
            source="NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM column",
            aliases=("h200-sxm", "h200 sxm"),
            memory_kind="HBM3e",
            notes=_SPARSE_NOTE + " SM count and L2 as the H100 SXM (same GH100 die).",
        ),
        _spec(
            "b200",
            "B200",
            bw=8 * _T,
            cap=180 * GIB,
            l2=126 * _MB,
            sms=148,
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
            "l4",
            "L4",
            bw=300 * _G,
            cap=24 * GIB,
            l2=48 * _MB,
            sms=58,
            dense={"fp32": 30.3 * _T, **_halves(_L4_SPARSE)},
            sparse=_L4_SPARSE,
            source="NVIDIA L4 Tensor Core GPU datasheet (2023)",
            aliases=("nvidia l4",),
            memory_kind="GDDR6",
            notes=_SPARSE_NOTE + " SM count and L2 from the Ada Lovelace architecture whitepaper (AD104).",
        ),
        _spec(
            "v100-sxm2-32gb",
            "V100 SXM2 32GB",
            bw=900 * _G,
            cap=32 * GIB,
            l2=6 * _MB,
            sms=80,
            dense={"fp32": 15.7 * _T, "fp16": 125 * _T},
            sparse={},
            source=_V100_SOURCE,
            aliases=("v100", "v100 32gb", "v100-32gb", "v100 sxm2 32gb"),
            memory_kind="HBM2",
            notes=_V100_NOTE,
        ),
        _spec(
            "v100-sxm2-16gb",
            "V100 SXM2 16GB",
            bw=900 * _G,
            cap=16 * GIB,
            l2=6 * _MB,
            sms=80,
            dense={"fp32": 15.7 * _T, "fp16": 125 * _T},
            sparse={},
            source=_V100_SOURCE,
            aliases=("v100 16gb", "v100-16gb", "v100 sxm2 16gb"),
            memory_kind="HBM2",
            notes=_V100_NOTE,
        ),
        _spec(
            "a10",
            "A10",
            bw=600 * _G,
            cap=24 * GIB,
            l2=6 * _MB,
            sms=72,
            dense={"fp32": 31.2 * _T, **_halves(_A10_SPARSE)},
            sparse=_A10_SPARSE,
            source="NVIDIA A10 Tensor Core GPU datasheet (2021)",
            aliases=("nvidia a10", "a10 pcie"),
            memory_kind="GDDR6",
            notes=_SPARSE_NOTE + " SM count and L2 from the Ampere GA102 whitepaper. Not the A10G: "
            "AWS's variant has no NVIDIA datasheet, so the registry does not guess its figures.",
        ),
        _spec(
            "mi250x",
            "MI250X",
            bw=3276.8 * _G,
            cap=128 * GIB,
            l2=16 * _MB,
            sms=220,
            dense={"fp32": 95.7 * _T, "bf16": 383 * _T, "fp16": 383 * _T, "int8": 383 * _T},
            sparse={},
            source="AMD Instinct MI250X accelerator data sheet (2021)",
            aliases=("amd mi250x", "instinct mi250x"),
            memory_kind="HBM2e",
            notes=_MI250_NOTE.format(vector="47.9", cus=220),
        ),
        _spec(
            "mi250",
            "MI250",
            bw=3276.8 * _G,
            cap=128 * GIB,
            l2=16 * _MB,
            sms=208,
            dense={"fp32": 90.5 * _T, "bf16": 362.1 * _T, "fp16": 362.1 * _T, "int8": 362.1 * _T},
            sparse={},
            source="AMD Instinct MI250 accelerator data sheet (2021)",
            aliases=("amd mi250", "instinct mi250"),
            memory_kind="HBM2e",
            notes=_MI250_NOTE.format(vector="45.3", cus=208),
        ),
        _spec(
            "mi300x",
            "MI300X",
            bw=5.3 * _T,
            cap=192 * GIB,
            l2=None,
            sms=304,
            dense={
                "fp32": 163.4 * _T,
                "tf32": 653.7 * _T,
                "bf16": 1307.4 * _T,
                "fp16": 1307.4 * _T,
                "fp8": 2614.9 * _T,
                "int8": 2614.9 * _T,
            },
            sparse=_MI300X_SPARSE,
            source="AMD Instinct MI300X accelerator data sheet (2023)",
            aliases=("amd mi300x", "instinct mi300x"),
            memory_kind="HBM3",
            notes="Dense and sparse matrix figures both as printed (the sparse ones are twice the "
            "dense to the data sheet's rounding); fp32 is its "
            "FP32 vector/matrix peak. sm_count holds the 304 compute units. l2_bytes is None: the "
            "part has 4 MB of L2 per compute die and a 256 MB memory-side Infinity Cache, not one L2.",
        ),
        _spec(
            "tpu-v4",
            "TPU v4",
            bw=1200 * _G,
            cap=32 * GIB,
            l2=None,
            sms=None,
            dense={"bf16": 275 * _T, "int8": 275 * _T},
            sparse={},
            source="Google Cloud TPU documentation, TPU v4 system architecture: per-chip figures",
            aliases=("tpuv4", "tpu v4", "v4"),
            memory_kind="HBM2",
            notes="Google prints dense figures only (no structured-sparsity rates). Per chip (two "
            "TensorCores); a pod slice multiplies them by its chip count. No L2 in the GPU sense.",
        ),
        _spec(
            "tpu-v5e",
            "TPU v5e",
            bw=819 * _G,
            cap=16 * GIB,
            l2=None,
            sms=None,
            dense={"bf16": 197 * _T, "int8": 394 * _T},
            sparse={},
            source="Google Cloud TPU documentation, TPU v5e system architecture: per-chip figures",
            aliases=("tpuv5e", "tpu v5e", "v5e", "tpu v5 lite"),
            memory_kind="HBM2",
            notes="Google prints dense figures only. One TensorCore per chip.",
        ),
    )
}

_GPUS = _Registry(_REGISTRY, what="GPU", example="H100")


def known_gpus() -> tuple[str, ...]:
    """Registry keys, in a stable order."""
    return _GPUS.keys()


def registry() -> Mapping[str, GPUSpec]:
    """A read-only view of the whole registry."""
    return _GPUS.view()


def gpu(name: str) -> GPUSpec:
    """Look a GPU up by name, case-insensitively, with aliases ("A100" is the 80 GB SXM part).

    >>> gpu("h100").name
    'H100 SXM'
    """
    return _gpu(name, "name")


def _gpu(name, param: str) -> GPUSpec:
    """:func:`gpu` for a caller whose parameter is called ``param`` (named in a refusal)."""
    return _GPUS.lookup(name, param)


def as_gpu(value) -> GPUSpec:
    """Accept a GPUSpec or a name; everything that takes ``gpu=`` goes through here."""
    if isinstance(value, GPUSpec):
        return value
    if isinstance(value, str):
        return gpu(value)
    raise TypeError(f"gpu must be a GPUSpec or a GPU name such as 'A100', got {type(value).__name__} {value!r}")


# --------------------------------------------------------------------------- device names


#: Words in a device name that never change which chip it is: the vendor, the SXM form factor
#: (the registry's default part), the memory technology, the memory size (the registry's
#: aliases say where a size does pick the part).
def _droppable(word: str) -> bool:
    return (
        word in ("nvidia", "amd", "instinct", "tesla", "gpu")
        or word.startswith(("sxm", "hbm"))
        or (word.endswith("gb") and word[:-2].isdigit())
    )


def match_gpu(device_name: str) -> GPUSpec:
    """The registry entry for a name as ``torch.cuda.get_device_name`` prints it.

    The registry's own lookup (:func:`roofline_lib.core.hardware.gpu`, with its aliases) decides; this
    only tries the name with fewer of the words that never change the chip (vendor, SXM, HBM
    generation, memory size), longest first: ``"NVIDIA A100-SXM4-40GB"`` -> ``"a100 40gb"`` ->
    A100 40GB SXM, ``"NVIDIA H100 80GB HBM3"`` -> ``"h100"`` -> H100 SXM. A word that does change
    the part (PCIe, NVL) is never dropped, so an A100 PCIe or an H100 NVL raises ValueError
    instead of borrowing a sibling's roofs.
    """
    if not isinstance(device_name, str) or not device_name.strip():
        raise TypeError(f"device_name must be a GPU name such as 'NVIDIA H200', got {device_name!r}")
    words = device_name.lower().replace("-", " ").replace("_", " ").split()
    optional = [i for i, w in enumerate(words) if _droppable(w)]
    for n_dropped in range(len(optional) + 1):
        for dropped in itertools.combinations(optional, n_dropped):
            kept = " ".join(w for i, w in enumerate(words) if i not in dropped)
            if not kept:
                continue
            try:
                return gpu(kept)
            except ValueError:
                continue
    raise ValueError(
        f"GPU {device_name!r} is not in the registry; add its datasheet to roofline_lib/core/hardware.py "
        f"first (known: {', '.join(known_gpus())})"
    )
