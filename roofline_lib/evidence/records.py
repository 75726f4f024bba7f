"""Recorded GPU measurements: the schema of a record and its files.

``make gpu-check`` on a CUDA machine measures the chip's roofs and times the course's demo
kernels, then writes one JSON record per GPU, ``<registry key>.json``, into a folder the caller
names (the course keeps them in ``book/data/measurements/``; this module does not know that).

* The record's parts are frozen dataclasses in SI units: :class:`Provenance`,
  :class:`CopyMeasurement`, :class:`GemmMeasurement`, :class:`KernelMeasurement`,
  :class:`MeasuredEnergy`, :class:`NotebookRun` and :class:`GPURecord`. Each field says in its metadata what JSON value
  it holds (a positive number of seconds, a name, a list of rows...), and one generic loader
  (:func:`from_json`) and one writer (:func:`to_json`) serve every class.
* :func:`validate_record` refuses a record that lacks its provenance, names a GPU the registry
  does not know, holds a rate that disagrees with its counts, or holds any number that beats
  its GPU's datasheet roof (the plausibility guard, applied to every recorded rate).
* :func:`load_record`, :func:`list_records`, :func:`latest_record` and :func:`write_record`
  read and write a folder the caller passes in.

What a chapter shows of a record (its targets, the table beside live numbers) lives in
:mod:`roofline_lib.evidence.record_report`. Only the standard library, the registry, the roofline guard
and the operation counts are imported here, so reading a record never pulls in torch.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Mapping

from ..core.checks import _positive
from ..core.formatting import to_unit
from ..core.hardware import GPUSpec, as_gpu, bytes_per_element, known_gpus, match_gpu
from ..core.ops import gemm as _gemm_count
from ..core.roofline import check_plausible

__all__ = [
    "SCHEMA_VERSION",
    "REQUIRED_PROVENANCE",
    "RecordError",
    "NoRecord",
    "Provenance",
    "CopyMeasurement",
    "GemmMeasurement",
    "KernelMeasurement",
    "MeasuredEnergy",
    "NotebookRun",
    "GPURecord",
    "from_json",
    "to_json",
    "match_gpu",
    "validate_record",
    "load_record",
    "list_records",
    "latest_record",
    "write_record",
    "record_path",
]

#: Version of the JSON layout below; a record with another version is refused. Fields added
#: since (``energy``, ``energy_note``) are optional, so every version-1 record stays valid.
SCHEMA_VERSION = 1

#: Provenance fields every record must carry as non-empty strings.
REQUIRED_PROVENANCE = ("device_name", "driver", "cuda", "torch", "triton", "date")

#: A stored rate must equal the one recomputed from its counts and seconds to this relative
#: precision; anything looser means the JSON was edited by hand.
_DERIVED_RTOL = 1e-6


class RecordError(ValueError):
    """A measurement record is malformed, lacks provenance, or names an unknown GPU."""


class NoRecord(LookupError):
    """No measurement record exists (yet) for what was asked."""


# --------------------------------------------------------------------------- what a field holds


@dataclass(frozen=True)
class _Kind:
    """What one JSON value must be; ``load`` checks and converts it, ``dump`` writes it back.

    ``what`` is spoken in errors. Kinds: ``string`` (any string), ``number`` (finite, positive, or >= 0 with
    ``allow_zero``), ``whole`` (an int >= ``minimum``), ``text`` (a non-empty string; ``choices``
    and ``precision`` narrow it), ``date`` (ISO 8601), ``texts`` (a list of strings),
    ``sizes`` (a non-empty list of whole numbers >= 1), ``numbers`` / ``texts_by_name`` /
    ``object`` (a JSON object of numbers, of non-empty strings, or of anything), ``part`` and
    ``parts`` (one nested record part or a list of them).
    """

    kind: str
    what: str = ""
    allow_zero: bool = False
    minimum: int = 1
    choices: tuple[str, ...] = ()
    precision: bool = False
    part: type | None = None
    non_empty: bool = False

    def load(self, value, where: str):
        """``value`` read from a record at ``where``, checked against this kind (RecordError if not)."""
        loader = _LOADERS.get(self.kind)
        if loader is None:  # pragma: no cover - a schema typo
            raise AssertionError(f"unknown kind {self.kind!r}")
        return loader(self, value, where)

    def _string(self, value, where: str):  # any string, even empty
        if not isinstance(value, str):
            raise RecordError(f"{where} must be a string ({self.what}), got {value!r}")
        return value

    def _number(self, value, where: str):
        try:
            return _positive(value, where, self.what, allow_zero=self.allow_zero)
        except (TypeError, ValueError) as err:
            raise RecordError(str(err)) from None

    def _whole(self, value, where: str):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < self.minimum:
            raise RecordError(f"{where} must be a whole number >= {self.minimum} of {self.what}, got {value!r}")
        return int(value)

    def _text(self, value, where: str):  # "text" and "date"
        if not isinstance(value, str) or not value.strip():
            raise RecordError(f"{where} must be a non-empty string ({self.what}), got {value!r}")
        if self.choices and value not in self.choices:
            raise RecordError(f"{where} must be {' or '.join(map(repr, self.choices))}, got {value!r}")
        if self.precision:
            value = value.strip().lower()
            try:
                bytes_per_element(value)
            except ValueError as err:
                raise RecordError(f"{where}: {err}") from None
        if self.kind == "date":
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise RecordError(
                    f"{where} must be an ISO 8601 date such as 2026-05-01T12:00:00+00:00, got {value!r}"
                ) from None
        return value

    def _list(self, value, where: str):  # "texts", "sizes" and "parts"
        if not isinstance(value, (list, tuple)) or (self.non_empty and not value):
            need = "a non-empty list" if self.non_empty else "a list"
            raise RecordError(f"{where} must be {need} of {self.what}, got {value!r}")
        if self.kind == "texts":
            if not all(isinstance(v, str) for v in value):
                raise RecordError(f"{where} must be a list of {self.what}, got {value!r}")
            return tuple(value)
        if self.kind == "sizes":
            if any(isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1 for v in value):
                raise RecordError(f"{where} must hold positive whole numbers, got {value!r}")
            return tuple(int(v) for v in value)
        return tuple(from_json(self.part, v, f"{where}[{i}]") for i, v in enumerate(value))

    def _mapping(self, value, where: str):  # "numbers", "texts_by_name" and "object"
        if self.kind == "texts_by_name" and not (
            isinstance(value, Mapping)
            and all(isinstance(n, str) and n and isinstance(v, str) and v.strip() for n, v in value.items())
        ):
            raise RecordError(f"{where} must map each {self.what}, got {value!r}")
        if not isinstance(value, Mapping):
            raise RecordError(f"{where} must be a JSON object ({self.what}), got {value!r}")
        for name, v in value.items():
            if not isinstance(name, str) or not name:
                raise RecordError(f"{where} has a key that is not a name: {name!r}")
            if self.kind == "numbers":
                _Kind("number", self.what).load(v, f"{where}.{name}")
        return MappingProxyType(dict(value))

    def _part(self, value, where: str):
        return None if value is None else from_json(self.part, value, where)

    def dump(self, value):
        if self.kind == "part":
            return None if value is None else to_json(value)
        if self.kind == "parts":
            return [to_json(v) for v in value]
        if self.kind in ("texts", "sizes"):
            return list(value)
        if self.kind in ("numbers", "texts_by_name", "object"):
            return dict(value)
        return value


#: Which check reads each kind of value.
_LOADERS = {
    "string": _Kind._string,
    "number": _Kind._number,
    "whole": _Kind._whole,
    "text": _Kind._text,
    "date": _Kind._text,
    "texts": _Kind._list,
    "sizes": _Kind._list,
    "parts": _Kind._list,
    "numbers": _Kind._mapping,
    "texts_by_name": _Kind._mapping,
    "object": _Kind._mapping,
    "part": _Kind._part,
}


def _json(kind: str, what: str = "", **options) -> dict:
    """Field metadata: what the field holds in JSON."""
    return {"json": _Kind(kind, what, **options)}


def _field(kind: str, what: str = "", *, default=dataclasses.MISSING, factory=dataclasses.MISSING, **options):
    """A dataclass field that says what JSON value it holds."""
    return field(default=default, default_factory=factory, metadata=_json(kind, what, **options))


def from_json(cls, data, where: str | None = None):
    """Build record part ``cls`` from its parsed JSON object: the one loader every part uses.

    Each field's value is checked by its metadata; a missing field takes its default or is an
    error; a field the class does not know is an error, except the derived rates named in
    ``cls.DERIVED``, which must agree with the ones recomputed from the counts. Then the part's
    own ``_consistent(where)`` check runs (best time under median, a prediction under its roof...).
    """
    where = where or cls.WHERE
    if not isinstance(data, Mapping):
        raise RecordError(f"{where} must be a JSON object, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(data) - set(fields) - set(cls.DERIVED)
    if unknown:
        raise RecordError(f"{where} has unknown field(s): {', '.join(sorted(unknown))}")
    values = {}
    for name, f in fields.items():
        at = name if where == GPURecord.WHERE else f"{where}.{name}"  # "provenance.driver", not "record.provenance..."
        if name in data:
            values[name] = f.metadata["json"].load(data[name], at)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise RecordError(f"{at} is missing ({f.metadata['json'].what})")
    part = cls(**values)
    for name in cls.DERIVED:
        if name in data:
            _agrees(data[name], getattr(part, name), f"{where}.{name}")
    part._consistent(where)
    return part


def to_json(part) -> dict[str, Any]:
    """The JSON object of a record part: every field, then its derived rates for human readers."""
    out = {f.name: f.metadata["json"].dump(getattr(part, f.name)) for f in dataclasses.fields(part)}
    out.update({name: getattr(part, name) for name in part.DERIVED})
    return out


def _agrees(stored, computed: float, where: str) -> None:
    """A derived rate kept for human readers must match the one recomputed from the counts."""
    if isinstance(stored, bool) or not isinstance(stored, numbers.Real) or not math.isfinite(stored):
        raise RecordError(f"{where} must be a finite number, got {stored!r}")
    if abs(stored - computed) > _DERIVED_RTOL * abs(computed):
        raise RecordError(
            f"{where} is {stored:.6g} but its counts and seconds give {computed:.6g}; "
            "derived rates must not be edited by hand"
        )


class _Part:
    """What every record part shares: the JSON name it is reported under, its derived rates."""

    WHERE: ClassVar[str] = "record"
    DERIVED: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_dict(cls, data, where: str | None = None):
        """:func:`from_json` for this part."""
        return from_json(cls, data, where)

    def to_dict(self) -> dict[str, Any]:
        """:func:`to_json` of this part."""
        return to_json(self)

    def _consistent(self, where: str) -> None:
        """Checks across fields; none by default."""


class _Timed(_Part):
    """A part timed twice over: ``seconds`` is the median repetition, ``best_seconds`` the fastest."""

    def _consistent(self, where: str) -> None:
        if self.best_seconds > self.seconds:
            raise RecordError(f"{where}.best_seconds ({self.best_seconds}) exceeds the median seconds ({self.seconds})")

    @staticmethod
    def _guard(spec: GPUSpec, flops, bytes_moved, seconds, precision: str, what: str) -> None:
        """The plausibility guard on the FLOP/s and bytes/s of ``flops`` and ``bytes_moved`` done in ``seconds``."""
        check_plausible(flops / seconds, bytes_moved / seconds, spec, precision, what=what)


# --------------------------------------------------------------------------- record parts


@dataclass(frozen=True)
class Provenance(_Part):
    """Where a record came from: enough to reproduce it or to doubt it.

    ``date`` is ISO 8601. ``clocks`` holds whatever clocks ``nvidia-smi`` could read, in MHz
    (for example ``{"sm_mhz": 1980, "mem_mhz": 2619}``); it may be empty. ``commit`` is the
    course's git commit when it was known.
    """

    WHERE: ClassVar[str] = "provenance"

    device_name: str = _field("text", "the GPU's name as torch prints it")
    driver: str = _field("text", "the driver version")
    cuda: str = _field("text", "the CUDA version")
    torch: str = _field("text", "the torch version")
    triton: str = _field("text", "the triton version")
    date: str = _field("date", "an ISO 8601 date")
    clocks: Mapping[str, float] = _field("numbers", "MHz", factory=dict)
    commit: str = _field("string", "a git commit", default="")

    @property
    def day(self) -> str:
        """The date without its time: ``2026-05-01``."""
        return datetime.fromisoformat(self.date).date().isoformat()


@dataclass(frozen=True)
class CopyMeasurement(_Timed):
    """The memory roof: the better of a copy and an add over buffers of ``buffer_bytes`` each.

    ``kernel`` says which one set it (``measured_roofs.stream_readings``' definition): "copy" reads one
    buffer and writes one, "add" reads two and writes one. ``seconds`` is the median time of
    one call, ``best_seconds`` the fastest repetition.
    """

    WHERE: ClassVar[str] = "copy"
    DERIVED: ClassVar[tuple[str, ...]] = ("bytes_per_s", "best_bytes_per_s")

    buffer_bytes: float = _field("number", "bytes")
    seconds: float = _field("number", "seconds")
    best_seconds: float = _field("number", "seconds")
    method: str = _field("text", "how it was timed")
    kernel: str = _field("text", "the kernel that set the roof", default="copy", choices=("copy", "add"))

    @property
    def bytes_moved(self) -> float:
        if self.kernel == "add":
            return 3 * self.buffer_bytes  # read a, read b, write c
        return 2 * self.buffer_bytes  # read the source + write the destination

    @property
    def bytes_per_s(self) -> float:
        """Median bandwidth (bytes read + bytes written, per second)."""
        return self.bytes_moved / self.seconds

    @property
    def best_bytes_per_s(self) -> float:
        """Fastest repetition's bandwidth: the measured memory roof."""
        return self.bytes_moved / self.best_seconds

    def check(self, spec: GPUSpec) -> None:
        """The plausibility guard: the fastest copy may not beat the HBM roof."""
        self._guard(spec, 0.0, self.bytes_moved, self.best_seconds, "bf16", "the recorded copy")


@dataclass(frozen=True)
class GemmMeasurement(_Timed):
    """One ``(m x k) @ (k x n)`` product in ``precision``, counted by :func:`roofline_lib.core.ops.gemm`."""

    WHERE: ClassVar[str] = "gemm[]"
    DERIVED: ClassVar[tuple[str, ...]] = ("flops_per_s", "best_flops_per_s")

    precision: str = _field("text", "a precision such as bf16", precision=True)
    m: int = _field("whole", "rows")
    n: int = _field("whole", "columns")
    k: int = _field("whole", "elements")
    seconds: float = _field("number", "seconds")
    best_seconds: float = _field("number", "seconds")
    method: str = _field("text", "how it was timed")

    @property
    def _count(self):
        return _gemm_count(self.m, self.n, self.k, bytes_per_element(self.precision))

    @property
    def flops(self) -> float:
        return self._count.flops

    @property
    def bytes_moved(self) -> float:
        """Read A and B, write C once each, in the record's precision (the ideal floor)."""
        return self._count.bytes_moved

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.seconds

    @property
    def best_flops_per_s(self) -> float:
        return self.flops / self.best_seconds

    def check(self, spec: GPUSpec) -> None:
        """The guard: the fastest repetition may not beat the dense peak in its precision."""
        what = f"the recorded {self.precision} GEMM {self.m}x{self.n}x{self.k}"
        self._guard(spec, self.flops, self.bytes_moved, self.best_seconds, self.precision, what)


@dataclass(frozen=True)
class KernelMeasurement(_Timed):
    """One demo kernel timed on a GPU, beside its prediction and its unfused torch version.

    ``flops`` and ``bytes_moved`` are the fused kernel's counts (ideal HBM traffic);
    ``predicted_seconds = max(flops / compute roof, bytes_moved / memory_roof_bytes_per_s)``
    where the memory roof is the measured one (``memory_roof_source``) and the compute roof the
    datasheet peak in ``compute_precision``. ``torch_bytes_moved`` counts the traffic of the
    unfused torch sequence, pass by pass, and ``torch_seconds`` is its median.
    """

    WHERE: ClassVar[str] = "kernels[]"
    DERIVED: ClassVar[tuple[str, ...]] = ("achieved_bytes_per_s", "achieved_flops_per_s")

    name: str = _field("text", "the demo's name")
    shape: tuple[int, ...] = _field("sizes", "sizes", non_empty=True)
    dtype: str = _field("text", "a precision such as bf16", precision=True)
    flops: float = _field("number", "FLOP", allow_zero=True)
    bytes_moved: float = _field("number", "bytes")
    seconds: float = _field("number", "seconds")
    best_seconds: float = _field("number", "seconds")
    predicted_seconds: float = _field("number", "seconds")
    memory_roof_bytes_per_s: float = _field("number", "bytes per second")
    memory_roof_source: str = _field("text", "where the memory roof came from")
    compute_precision: str = _field("text", "a precision such as fp32", precision=True)
    torch_seconds: float = _field("number", "seconds")
    torch_bytes_moved: float = _field("number", "bytes")
    max_abs_error: float = _field("number", "the largest difference from the reference", allow_zero=True)
    method: str = _field("text", "how it was timed")
    config: Mapping[str, Any] = _field("object", "the launch configuration", factory=dict)

    @property
    def intensity(self) -> float:
        """FLOP per HBM byte: the kernel's x on the roofline (0 for a pure copy)."""
        return self.flops / self.bytes_moved

    @property
    def achieved_bytes_per_s(self) -> float:
        return self.bytes_moved / self.seconds

    @property
    def achieved_flops_per_s(self) -> float:
        return self.flops / self.seconds

    @property
    def fraction_of_prediction(self) -> float:
        """predicted / measured seconds: 1.0 runs at the roof, 0.5 twice as slow."""
        return self.predicted_seconds / self.seconds

    @property
    def prediction_error(self) -> float:
        """``(measured - predicted) / predicted``: +0.10 means 10 % slower than predicted."""
        return (self.seconds - self.predicted_seconds) / self.predicted_seconds

    @property
    def speedup_over_torch(self) -> float:
        return self.torch_seconds / self.seconds

    def _consistent(self, where: str) -> None:
        super()._consistent(where)
        floor = self.bytes_moved / self.memory_roof_bytes_per_s
        if self.predicted_seconds < floor * (1 - _DERIVED_RTOL):
            raise RecordError(
                f"{where}.predicted_seconds ({self.predicted_seconds:.3g} s) is below bytes_moved / "
                f"memory roof ({floor:.3g} s): a prediction cannot beat its own roof"
            )

    def check(self, spec: GPUSpec) -> None:
        """The guard on every rate in the row: kernel, unfused torch, and the roof it was predicted on."""
        what = f"the recorded {self.name} kernel"
        precision = self.compute_precision
        self._guard(spec, self.flops, self.bytes_moved, self.best_seconds, precision, what)
        torch = f"the recorded unfused torch {self.name}"
        self._guard(spec, self.flops, self.torch_bytes_moved, self.torch_seconds, precision, torch)
        check_plausible(0.0, self.memory_roof_bytes_per_s, spec, precision, what=f"{what}'s memory roof")

    def __str__(self) -> str:
        return (
            f"{self.name} {'x'.join(map(str, self.shape))} {self.dtype}: {to_unit(self.seconds, 'us'):.4g} us, "
            f"{to_unit(self.achieved_bytes_per_s, 'TB/s'):.3g} TB/s; predicted {to_unit(self.predicted_seconds, 'us'):.4g} us "
            f"({self.prediction_error:+.0%}); unfused torch {to_unit(self.torch_seconds, 'us'):.4g} us "
            f"({self.speedup_over_torch:.2f}x the fused time)"
        )


@dataclass(frozen=True)
class MeasuredEnergy(_Part):
    """A kernel repeated for seconds between two readings of the GPU's energy counter.

    ``flops`` and ``bytes_moved`` are the totals of all ``repetitions`` (ideal HBM traffic, as
    for the roofline); ``seconds`` is the wall time between the two readings and ``joules`` what
    the counter (``counter``, e.g. NVML's total energy) says the whole GPU used meanwhile.
    ``precision`` is the one its FLOPs ran in. Whether the joules are *plausible* (at most the
    TDP on average, at least the model's FLOP and byte energy) is judged against the energy
    model by :func:`roofline_lib.workloads.energy.judge_energy`, not here: a record holds what
    the counter said.
    """

    WHERE: ClassVar[str] = "energy[]"
    DERIVED: ClassVar[tuple[str, ...]] = ("average_watts",)

    name: str = _field("text", "what ran, such as 'bf16 GEMM'")
    precision: str = _field("text", "a precision such as bf16", precision=True)
    shape: tuple[int, ...] = _field("sizes", "sizes", non_empty=True)
    repetitions: int = _field("whole", "repetitions")
    flops: float = _field("number", "FLOP", allow_zero=True)
    bytes_moved: float = _field("number", "bytes")
    seconds: float = _field("number", "seconds")
    joules: float = _field("number", "joules")
    counter: str = _field("text", "the energy counter read")
    method: str = _field("text", "how it was measured")

    @property
    def average_watts(self) -> float:
        return self.joules / self.seconds

    def check(self, spec: GPUSpec) -> None:
        """The roofline guard on the run's rates: its repetitions may not beat the GPU's roofs."""
        what = f"the energy run of {self.name} ({self.repetitions} repetitions)"
        check_plausible(self.flops / self.seconds, self.bytes_moved / self.seconds, spec, self.precision, what=what)


@dataclass(frozen=True)
class NotebookRun(_Part):
    """What nbval said on the GPU machine: every notebook, strict where it has a reference record.

    ``skipped`` must be 0 on a GPU run; ``make gpu-check`` fails otherwise.
    """

    WHERE: ClassVar[str] = "notebooks"

    passed: int = _field("whole", "notebook cells", minimum=0)
    failed: int = _field("whole", "notebook cells", minimum=0)
    skipped: int = _field("whole", "notebook cells", minimum=0)
    strict: tuple[str, ...] = _field("texts", "notebook paths", factory=tuple)
    lax: tuple[str, ...] = _field("texts", "notebook paths", factory=tuple)

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.skipped == 0


# --------------------------------------------------------------------------- the record


@dataclass(frozen=True)
class GPURecord(_Part):
    """One ``make gpu-check`` run on one GPU. ``gpu`` is the registry key (``"h200"``).

    ``gemm`` holds the bf16 sweep and, where the chip has fp8, the fp8 sweep. ``notebooks`` is
    ``None`` only when the run was told to skip them (``--no-notebooks``). ``failures`` maps
    each step that failed (a demo kernel, an fp8 sweep) to its error, kept beside the valid
    measurements instead of voiding them. ``energy`` holds the runs measured on the GPU's
    energy counter (empty in a record made before they were, or where no counter answered);
    ``energy_note`` says why it is empty when the run could not measure energy.
    """

    WHERE: ClassVar[str] = "record"

    gpu: str = _field("text", "a registry key")
    provenance: Provenance = _field("part", "GPU name, driver, CUDA, torch, triton, date", part=Provenance)
    copy: CopyMeasurement = _field("part", "the memory roof", part=CopyMeasurement)
    gemm: tuple[GemmMeasurement, ...] = _field("parts", "GEMM measurements", part=GemmMeasurement, non_empty=True)
    kernels: tuple[KernelMeasurement, ...] = _field("parts", "kernel measurements", part=KernelMeasurement)
    notebooks: NotebookRun | None = _field("part", "the notebook run", default=None, part=NotebookRun)
    schema_version: int = _field("whole", "the layout version", default=SCHEMA_VERSION)
    failures: Mapping[str, str] = _field("texts_by_name", "failed step to its error message", factory=dict)
    energy: tuple[MeasuredEnergy, ...] = _field("parts", "energy measurements", part=MeasuredEnergy, factory=tuple)
    energy_note: str = _field("string", "why no energy was measured", default="")

    @property
    def spec(self) -> GPUSpec:
        return as_gpu(self.gpu)

    @property
    def label(self) -> str:
        """The provenance line a chapter prints beside every recorded number."""
        p = self.provenance
        return (
            f"Recorded on {p.device_name} ({self.spec.name} in the registry) on {p.day}: "
            f"driver {p.driver}, CUDA {p.cuda}, torch {p.torch}, triton {p.triton}"
        )

    def best_gemm(self, precision: str = "bf16") -> GemmMeasurement:
        """The fastest product in ``precision``: the measured compute roof."""
        key = precision.strip().lower()
        rows = [g for g in self.gemm if g.precision == key]
        if not rows:
            have = ", ".join(sorted({g.precision for g in self.gemm})) or "none"
            raise NoRecord(f"the {self.spec.name} record has no {key} GEMM; it has: {have}")
        return max(rows, key=lambda g: g.best_flops_per_s)

    def kernel(self, name: str) -> KernelMeasurement:
        for row in self.kernels:
            if row.name == name:
                return row
        have = ", ".join(k.name for k in self.kernels) or "none"
        raise NoRecord(f"the {self.spec.name} record has no kernel {name!r}; it has: {have}")

    def ceilings(self):
        """The recorded roofs as a :class:`~roofline_lib.evidence.measured_roofs.MeasuredCeilings` (best copy, best bf16 GEMM)."""
        from .measured_roofs import MeasuredCeilings

        gemm = self.best_gemm("bf16")
        return MeasuredCeilings(
            bytes_per_s=self.copy.best_bytes_per_s,
            flops_per_s=gemm.best_flops_per_s,
            device_name=self.provenance.device_name,
            precision="bf16",
            n_threads=0,  # host threads play no part in a GPU's roofs
            date=self.provenance.date,
            torch_version=self.provenance.torch,
            device="cuda",
            matmul_n=gemm.n,
            buffer_bytes=self.copy.buffer_bytes,
        )

    def _consistent(self, where: str) -> None:
        if self.schema_version != SCHEMA_VERSION:
            raise RecordError(f"schema_version must be {SCHEMA_VERSION}, got {self.schema_version!r}")
        if self.gpu not in known_gpus():
            raise RecordError(
                f"gpu must be a registry key ({', '.join(known_gpus())}), got {self.gpu!r}; a record for a GPU "
                "the registry does not hold has no roofs to be checked against"
            )
        try:
            named = match_gpu(self.provenance.device_name).key
        except ValueError:
            named = self.gpu  # an unusual name: trust the key the run was told to use
        if named != self.gpu:
            raise RecordError(
                f"the record says gpu={self.gpu!r} but its device {self.provenance.device_name!r} is "
                f"{named!r} in the registry"
            )

    def check(self) -> None:
        """Apply the plausibility guard to every number against this GPU's registry roofs."""
        spec = self.spec
        self.copy.check(spec)
        for g in self.gemm:
            g.check(spec)
        for k in self.kernels:
            k.check(spec)
        for e in self.energy:
            e.check(spec)


# --------------------------------------------------------------------------- validation and files


def validate_record(data: Mapping) -> GPURecord:
    """Parse a record's JSON object and refuse it unless it is complete, known and plausible.

    Raises :class:`RecordError` for a wrong schema, missing provenance or an unknown GPU, and
    :class:`~roofline_lib.core.roofline.ImplausibleMeasurement` for a number faster than the GPU's
    datasheet roof (by more than the 5 % tolerance).
    """
    if not isinstance(data, Mapping):
        raise RecordError(f"a record must be a JSON object, got {type(data).__name__}")
    if data.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        raise RecordError(f"schema_version must be {SCHEMA_VERSION}, got {data.get('schema_version')!r}")
    if "provenance" not in data:
        raise RecordError("the record has no provenance (GPU name, driver, CUDA, torch, triton, date)")
    record = from_json(GPURecord, data)
    record.check()
    return record


def _folder(directory) -> Path:
    if directory is None or isinstance(directory, bool) or not isinstance(directory, (str, Path)):
        raise TypeError(f"directory must be the folder of the records (a path), got {directory!r}")
    return Path(directory)


def record_path(gpu, directory) -> Path:
    """Where the record of ``gpu`` (a name or GPUSpec) lives: ``<directory>/<registry key>.json``."""
    return _folder(directory) / f"{as_gpu(gpu).key}.json"


def load_record(path) -> GPURecord:
    """Read and validate one record file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise RecordError(f"{path.name} is not valid JSON: {err}") from None
    try:
        return validate_record(data)
    except ValueError as err:  # RecordError and ImplausibleMeasurement: say which file
        raise type(err)(f"{path.name}: {err}") from None


def _when(record: GPURecord) -> datetime:
    """The record's date as an aware datetime (a date without a zone is taken as UTC)."""
    moment = datetime.fromisoformat(record.provenance.date)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def list_records(directory) -> tuple[GPURecord, ...]:
    """Every record in ``directory``, oldest first.

    An empty tuple when none has been made yet (or the folder does not exist); a malformed or
    implausible file raises, so a bad record cannot sit unnoticed beside good ones.
    """
    root = _folder(directory)
    if not root.is_dir():
        return ()
    found = [load_record(p) for p in sorted(root.glob("*.json"))]
    return tuple(sorted(found, key=_when))


def latest_record(directory, gpu=None) -> GPURecord:
    """The newest record in ``directory``, of ``gpu`` (a name or GPUSpec) when given.

    Raises :class:`NoRecord` with instructions when none exists; use :func:`list_records` to
    test for presence without an exception.
    """
    spec = None if gpu is None else as_gpu(gpu)
    found = [r for r in list_records(directory) if spec is None or r.gpu == spec.key]
    if not found:
        what = "any GPU" if spec is None else spec.name
        raise NoRecord(
            f"no measurement record for {what} in {_folder(directory).name}/ yet; "
            "run `make gpu-check` on a CUDA machine to make one"
        )
    return found[-1]


def write_record(record: GPURecord, directory) -> Path:
    """Validate ``record`` and write it as ``<directory>/<registry key>.json``; returns the path."""
    if not isinstance(record, GPURecord):
        raise TypeError(f"record must be a GPURecord, got {type(record).__name__}")
    data = to_json(record)
    validate_record(json.loads(json.dumps(data)))  # exactly what a reader will see
    path = record_path(record.gpu, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path
