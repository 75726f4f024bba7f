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

The numbers live in a data file, ``roofline_lib/core/data/gpus.json``, each as its
source prints it (dense or sparse, per GPU or per board) with where it comes from beside it;
this module reads it (through :mod:`roofline_lib.core.registry_data`) into :class:`GPUSpec`
records. Every entry carries ``source`` (the datasheet it came from) and ``notes`` (how
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
from .formatting import GIB  # one gibibyte, 2**30 bytes: the unit a capacity is printed in (above)
from .registry_data import number, read_records, si

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


_DATA_FILE = "data/gpus.json"  # in roofline_lib/core
_FIELDS = (
    "name",
    "aliases",
    "memory_kind",
    "source",
    "hbm_bytes_per_s",
    "hbm_capacity_bytes",
    "l2_bytes",
    "sm_count",
    "flops_per_s",
    "notes",
)


def _load_registry() -> dict[str, GPUSpec]:
    """Every GPU of ``core/data/gpus.json``, by key, in the file's order."""
    records = read_records(__package__, _DATA_FILE, table="gpus", required=_FIELDS, optional=("l2_bytes_per_s",))
    return {key: _spec(key, record) for key, record in records.items()}


def _spec(key: str, record: dict) -> GPUSpec:
    """One GPU's record of the data file as a :class:`GPUSpec` (which checks every field)."""
    where = f"{_DATA_FILE}, GPU {key!r}"
    dense, sparse = _peaks(record["flops_per_s"], f"{where}, flops_per_s")
    return GPUSpec(
        name=record["name"],
        hbm_bytes_per_s=si(record["hbm_bytes_per_s"], f"{where}, hbm_bytes_per_s"),
        hbm_capacity_bytes=_optional(si, record, "hbm_capacity_bytes", where),
        l2_bytes=_optional(si, record, "l2_bytes", where),
        sm_count=_optional(number, record, "sm_count", where),
        dense_flops_per_s=dense,
        sparse_flops_per_s=sparse,
        source=record["source"],
        aliases=record["aliases"],
        memory_kind=record["memory_kind"],
        l2_bytes_per_s=_optional(si, record, "l2_bytes_per_s", where),
        notes=record["notes"],
        key=key,
    )


def _optional(read, record: dict, name: str, where: str):
    """A figure the data file may leave out or give as null (None here)."""
    figure = record.get(name)
    return None if figure is None else read(figure, f"{where}, {name}")


def _peaks(table: dict, where: str) -> tuple[dict[str, float], dict[str, float]]:
    """Dense and sparse peaks in FLOP/s per GPU from a ``flops_per_s`` table of printed figures.

    Each precision gives its ``dense`` figure, its ``sparse`` one (2:4 sparsity), or both, in
    the table's ``unit`` (or its own); a board figure is divided by ``board_gpus``. A precision
    printed only sparse has half its sparse figure as its dense one (2:4 sparsity doubles it).
    """
    board_gpus = table.get("board_gpus", 1)
    dense: dict[str, float] = {}
    sparse: dict[str, float] = {}
    for precision, printed in table["peaks"].items():
        unit = printed.get("unit", table["unit"])
        if set(printed) - {"dense", "sparse", "unit"} or not set(printed) & {"dense", "sparse"}:
            raise ValueError(f"{where}[{precision!r}] must give 'dense', 'sparse' or both, got {printed!r}")
        per_gpu = {
            kind: si({"value": printed[kind], "unit": unit}, f"{where}[{precision!r}]") / board_gpus
            for kind in ("dense", "sparse")
            if kind in printed
        }
        if "sparse" in per_gpu:
            sparse[precision] = per_gpu["sparse"]
        dense[precision] = per_gpu["dense"] if "dense" in per_gpu else per_gpu["sparse"] / 2
    return dense, sparse


_REGISTRY: dict[str, GPUSpec] = _load_registry()

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
        f"GPU {device_name!r} is not in the registry; add its datasheet to roofline_lib/core/data/gpus.json "
        f"first (known: {', '.join(known_gpus())})"
    )
