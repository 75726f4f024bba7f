"""Recorded GPU measurements: what a machine without a GPU shows, labelled with where it came from.

``make gpu-check`` on a CUDA machine measures the chip's ceilings and times the course's demo
kernels, then writes one JSON record per GPU to ``book/data/measurements/<registry key>.json``.
This module is the schema of those records and the only way the course reads them:

* :class:`GPURecord` and its parts (:class:`Provenance`, :class:`CopyMeasurement`,
  :class:`GemmMeasurement`, :class:`KernelMeasurement`) hold the numbers in SI units;
* :func:`validate_record` turns a parsed JSON document into a :class:`GPURecord`, refusing a
  record that lacks its provenance (GPU name, driver, CUDA, torch and triton versions, date),
  names a GPU the registry does not know, or holds any number that beats that GPU's datasheet
  roof by more than :data:`~roofline_lib.roofline.PLAUSIBILITY_TOLERANCE` (the plausibility
  guard, applied to every recorded rate);
* :func:`list_records`, :func:`latest_record` and :func:`load_record` read the directory;
  :func:`write_record` validates before it writes.

A chapter that times GPU kernels shows the record on every machine and, when
:func:`live_gpu` says a GPU is present, its live numbers beside it (:func:`side_by_side`).

Only the standard library, the registry and the roofline guard are imported here, so reading a
record never pulls in torch or triton.
"""
from __future__ import annotations

import json
import math
import numbers
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from ._checks import _positive, _positive_int
from .hardware import GPUSpec, as_gpu, bytes_per_element, gpu as _lookup_gpu, known_gpus
from .roofline import check_plausible, ridge_point

__all__ = [
    "SCHEMA_VERSION",
    "MEASUREMENTS_DIR",
    "MEASUREMENTS_DIR_ENV",
    "describe_record",
    "REQUIRE_GPU_ENV",
    "REQUIRED_PROVENANCE",
    "RecordError",
    "NoRecord",
    "Provenance",
    "CopyMeasurement",
    "GemmMeasurement",
    "KernelMeasurement",
    "NotebookRun",
    "GPURecord",
    "Target",
    "match_gpu",
    "validate_record",
    "load_record",
    "list_records",
    "latest_record",
    "write_record",
    "record_path",
    "live_gpu",
    "side_by_side",
    "check_targets",
]

#: Version of the JSON layout below; a record with another version is refused.
SCHEMA_VERSION = 1

#: Where the course keeps its records (one JSON file per GPU, named by registry key).
MEASUREMENTS_DIR = Path(__file__).resolve().parents[1] / "book" / "data" / "measurements"

#: Set to 1 by ``make gpu-check``: a chapter cell that would fall back to the record because no
#: GPU is visible raises instead, so a GPU run cannot quietly show only recorded numbers.
REQUIRE_GPU_ENV = "ROOFLINE_REQUIRE_GPU"

#: Provenance fields every record must carry as non-empty strings.
REQUIRED_PROVENANCE = ("device_name", "driver", "cuda", "torch", "triton", "date")

#: A stored rate must equal the one recomputed from its counts and seconds to this relative
#: precision; anything looser means the JSON was edited by hand.
_DERIVED_RTOL = 1e-6

# Targets the course sets for a good run (issue: "Targets on an H200"); reported, not enforced.
_COPY_TARGET = 0.90  # copy bandwidth / datasheet HBM bandwidth
_GEMM_TARGET = 0.80  # best bf16 GEMM / datasheet dense bf16 peak
_FUSED_TARGET = 0.90  # fused kernel bandwidth / measured copy bandwidth
_PREDICTION_BAND = 0.15  # |measured - predicted| / predicted for memory-bound kernels


class RecordError(ValueError):
    """A measurement record is malformed, lacks provenance, or names an unknown GPU."""


class NoRecord(LookupError):
    """No measurement record exists (yet) for what was asked."""


# --------------------------------------------------------------------------- small checks


def _text(data: Mapping, key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise RecordError(f"{where}.{key} must be a non-empty string, got {value!r}")
    return value


def _number(data: Mapping, key: str, where: str, unit: str) -> float:
    if key not in data:
        raise RecordError(f"{where}.{key} is missing (a positive number of {unit})")
    try:
        return _positive(data[key], f"{where}.{key}", unit)
    except (TypeError, ValueError) as err:
        raise RecordError(str(err)) from None


def _whole(data: Mapping, key: str, where: str, unit: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise RecordError(f"{where}.{key} must be a whole number of {unit}, got {value!r}")
    return _positive_int(value, f"{where}.{key}", unit)


def _count0(data: Mapping, key: str, where: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise RecordError(f"{where}.{key} must be a whole number >= 0, got {value!r}")
    return int(value)


def _mapping(data: Mapping, key: str, where: str) -> Mapping:
    value = data.get(key)
    if not isinstance(value, Mapping):
        raise RecordError(f"{where}.{key} must be a JSON object, got {type(value).__name__}")
    return value


def _agrees(stored: Mapping, key: str, computed: float, where: str) -> None:
    """A derived rate kept for human readers must match the one recomputed from the counts."""
    if key not in stored:
        return
    value = stored[key]
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise RecordError(f"{where}.{key} must be a finite number, got {value!r}")
    if abs(value - computed) > _DERIVED_RTOL * abs(computed):
        raise RecordError(
            f"{where}.{key} is {value:.6g} but its counts and seconds give {computed:.6g}; "
            "derived rates must not be edited by hand"
        )


def _stream_kernel(data: Mapping, where: str) -> str:
    kernel = data.get("kernel", "copy")  # records written before the add joined the memory roof
    if kernel not in ("copy", "add"):
        raise RecordError(f"{where}.kernel must be 'copy' or 'add', got {kernel!r}")
    return kernel


def _failures(data: Mapping) -> Mapping[str, str]:
    value = data.get("failures", {})
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and k and isinstance(v, str) and v.strip() for k, v in value.items()
    ):
        raise RecordError(f"failures must map each failed step to its error message, got {value!r}")
    return MappingProxyType(dict(value))


# --------------------------------------------------------------------------- record parts


@dataclass(frozen=True)
class Provenance:
    """Where a record came from: enough to reproduce it or to doubt it.

    ``date`` is ISO 8601. ``clocks`` holds whatever clocks ``nvidia-smi`` could read, in MHz
    (for example ``{"sm_mhz": 1980, "mem_mhz": 2619}``); it may be empty. ``commit`` is the
    course's git commit when it was known.
    """

    device_name: str
    driver: str
    cuda: str
    torch: str
    triton: str
    date: str
    clocks: Mapping[str, float] = field(default_factory=dict)
    commit: str = ""

    @classmethod
    def from_dict(cls, data: Mapping) -> "Provenance":
        where = "provenance"
        if not isinstance(data, Mapping):
            raise RecordError(f"{where} must be a JSON object, got {type(data).__name__}")
        values = {key: _text(data, key, where) for key in REQUIRED_PROVENANCE}
        try:
            datetime.fromisoformat(values["date"])
        except ValueError:
            raise RecordError(
                f"{where}.date must be an ISO 8601 date such as 2026-05-01T12:00:00+00:00, "
                f"got {values['date']!r}"
            ) from None
        clocks = data.get("clocks", {})
        if not isinstance(clocks, Mapping):
            raise RecordError(f"{where}.clocks must be a JSON object of MHz, got {clocks!r}")
        for name in clocks:
            _number(clocks, name, f"{where}.clocks", "MHz")
        commit = data.get("commit", "")
        if not isinstance(commit, str):
            raise RecordError(f"{where}.commit must be a string, got {commit!r}")
        unknown = set(data) - set(REQUIRED_PROVENANCE) - {"clocks", "commit"}
        if unknown:
            raise RecordError(f"{where} has unknown field(s): {', '.join(sorted(unknown))}")
        return cls(**values, clocks=MappingProxyType(dict(clocks)), commit=commit)

    def to_dict(self) -> dict[str, Any]:
        out = {key: getattr(self, key) for key in REQUIRED_PROVENANCE}
        out["clocks"] = dict(self.clocks)
        out["commit"] = self.commit
        return out

    @property
    def day(self) -> str:
        """The date without its time: ``2026-05-01``."""
        return datetime.fromisoformat(self.date).date().isoformat()


@dataclass(frozen=True)
class CopyMeasurement:
    """The memory roof: the better of a copy and an add over buffers of ``buffer_bytes`` each.

    ``kernel`` says which one set it (``measure.stream_readings``' definition): "copy" reads one
    buffer and writes one, "add" reads two and writes one. ``seconds`` is the median time of
    one call, ``best_seconds`` the fastest repetition.
    """

    buffer_bytes: float
    seconds: float
    best_seconds: float
    method: str
    kernel: str = "copy"

    @property
    def bytes_moved(self) -> float:
        if self.kernel == "add":
            return 3 * self.buffer_bytes  # read a, read b, write c
        return 2 * self.buffer_bytes  # read the source + write the destination

    @property
    def bytes_per_s(self) -> float:
        """Median copy bandwidth (bytes read + bytes written, per second)."""
        return self.bytes_moved / self.seconds

    @property
    def best_bytes_per_s(self) -> float:
        """Fastest repetition's bandwidth: the measured memory roof."""
        return self.bytes_moved / self.best_seconds

    @classmethod
    def from_dict(cls, data: Mapping) -> "CopyMeasurement":
        where = "copy"
        copy = cls(
            buffer_bytes=_number(data, "buffer_bytes", where, "bytes"),
            seconds=_number(data, "seconds", where, "seconds"),
            best_seconds=_number(data, "best_seconds", where, "seconds"),
            method=_text(data, "method", where),
            kernel=_stream_kernel(data, where),
        )
        if copy.best_seconds > copy.seconds:
            raise RecordError(f"{where}.best_seconds ({copy.best_seconds}) exceeds the median seconds ({copy.seconds})")
        _agrees(data, "bytes_per_s", copy.bytes_per_s, where)
        _agrees(data, "best_bytes_per_s", copy.best_bytes_per_s, where)
        return copy

    def to_dict(self) -> dict[str, Any]:
        return {
            "buffer_bytes": self.buffer_bytes,
            "seconds": self.seconds,
            "best_seconds": self.best_seconds,
            "method": self.method,
            "kernel": self.kernel,
            "bytes_per_s": self.bytes_per_s,
            "best_bytes_per_s": self.best_bytes_per_s,
        }

    def check(self, spec: GPUSpec) -> None:
        """The plausibility guard: the fastest copy may not beat the HBM roof."""
        check_plausible(0.0, self.best_bytes_per_s, spec, "bf16", what="the recorded copy")


@dataclass(frozen=True)
class GemmMeasurement:
    """One ``(m x k) @ (k x n)`` product in ``precision``: ``2 * m * n * k`` FLOP (1 MAC = 2 FLOP)."""

    precision: str
    m: int
    n: int
    k: int
    seconds: float
    best_seconds: float
    method: str

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k  # m*n*k multiply-adds, 2 FLOP each

    @property
    def bytes_moved(self) -> float:
        """Read A and B, write C once each, in the record's precision (the ideal floor)."""
        return (self.m * self.k + self.k * self.n + self.m * self.n) * bytes_per_element(self.precision)

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.seconds

    @property
    def best_flops_per_s(self) -> float:
        return self.flops / self.best_seconds

    @classmethod
    def from_dict(cls, data: Mapping, where: str = "gemm[]") -> "GemmMeasurement":
        precision = _text(data, "precision", where).lower()
        try:
            bytes_per_element(precision)
        except ValueError as err:
            raise RecordError(f"{where}.precision: {err}") from None
        gemm = cls(
            precision=precision,
            m=_whole(data, "m", where, "rows"),
            n=_whole(data, "n", where, "columns"),
            k=_whole(data, "k", where, "elements"),
            seconds=_number(data, "seconds", where, "seconds"),
            best_seconds=_number(data, "best_seconds", where, "seconds"),
            method=_text(data, "method", where),
        )
        if gemm.best_seconds > gemm.seconds:
            raise RecordError(f"{where}.best_seconds exceeds its median seconds")
        _agrees(data, "flops_per_s", gemm.flops_per_s, where)
        _agrees(data, "best_flops_per_s", gemm.best_flops_per_s, where)
        return gemm

    def to_dict(self) -> dict[str, Any]:
        return {
            "precision": self.precision,
            "m": self.m,
            "n": self.n,
            "k": self.k,
            "seconds": self.seconds,
            "best_seconds": self.best_seconds,
            "method": self.method,
            "flops_per_s": self.flops_per_s,
            "best_flops_per_s": self.best_flops_per_s,
        }

    def check(self, spec: GPUSpec) -> None:
        """The guard: the fastest repetition may not beat the dense peak in its precision."""
        check_plausible(
            self.best_flops_per_s,
            self.bytes_moved / self.best_seconds,
            spec,
            self.precision,
            what=f"the recorded {self.precision} GEMM {self.m}x{self.n}x{self.k}",
        )


@dataclass(frozen=True)
class KernelMeasurement:
    """One demo kernel timed on a GPU, beside its prediction and its unfused torch version.

    ``flops`` and ``bytes_moved`` are the fused kernel's counts (ideal HBM traffic);
    ``predicted_seconds = max(flops / compute roof, bytes_moved / memory_roof_bytes_per_s)``
    where the memory roof is the measured copy bandwidth (``memory_roof_source``) and the
    compute roof the datasheet peak in ``compute_precision``. ``torch_bytes_moved`` counts the
    traffic of the unfused torch sequence, pass by pass, and ``torch_seconds`` is its median.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    flops: float
    bytes_moved: float
    seconds: float
    best_seconds: float
    predicted_seconds: float
    memory_roof_bytes_per_s: float
    memory_roof_source: str
    compute_precision: str
    torch_seconds: float
    torch_bytes_moved: float
    max_abs_error: float
    config: Mapping[str, Any]
    method: str

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

    @classmethod
    def from_dict(cls, data: Mapping, where: str = "kernels[]") -> "KernelMeasurement":
        shape = data.get("shape")
        if not isinstance(shape, (list, tuple)) or not shape:
            raise RecordError(f"{where}.shape must be a non-empty list of sizes, got {shape!r}")
        for size in shape:
            if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
                raise RecordError(f"{where}.shape must hold positive whole numbers, got {shape!r}")
        precision = _text(data, "compute_precision", where).lower()
        dtype = _text(data, "dtype", where).lower()
        for key, value in (("compute_precision", precision), ("dtype", dtype)):
            try:
                bytes_per_element(value)
            except ValueError as err:
                raise RecordError(f"{where}.{key}: {err}") from None
        flops = data.get("flops")
        if isinstance(flops, bool) or not isinstance(flops, numbers.Real) or not math.isfinite(flops) or flops < 0:
            raise RecordError(f"{where}.flops must be a number of FLOP >= 0, got {flops!r}")
        error = data.get("max_abs_error")
        if isinstance(error, bool) or not isinstance(error, numbers.Real) or not (0 <= error < math.inf):
            raise RecordError(f"{where}.max_abs_error must be a finite number >= 0, got {error!r}")
        config = data.get("config", {})
        if not isinstance(config, Mapping):
            raise RecordError(f"{where}.config must be a JSON object, got {config!r}")
        kernel = cls(
            name=_text(data, "name", where),
            shape=tuple(int(s) for s in shape),
            dtype=dtype,
            flops=float(flops),
            bytes_moved=_number(data, "bytes_moved", where, "bytes"),
            seconds=_number(data, "seconds", where, "seconds"),
            best_seconds=_number(data, "best_seconds", where, "seconds"),
            predicted_seconds=_number(data, "predicted_seconds", where, "seconds"),
            memory_roof_bytes_per_s=_number(data, "memory_roof_bytes_per_s", where, "bytes per second"),
            memory_roof_source=_text(data, "memory_roof_source", where),
            compute_precision=precision,
            torch_seconds=_number(data, "torch_seconds", where, "seconds"),
            torch_bytes_moved=_number(data, "torch_bytes_moved", where, "bytes"),
            max_abs_error=float(error),
            config=MappingProxyType(dict(config)),
            method=_text(data, "method", where),
        )
        if kernel.best_seconds > kernel.seconds:
            raise RecordError(f"{where}.best_seconds exceeds its median seconds")
        floor = kernel.bytes_moved / kernel.memory_roof_bytes_per_s
        if kernel.predicted_seconds < floor * (1 - _DERIVED_RTOL):
            raise RecordError(
                f"{where}.predicted_seconds ({kernel.predicted_seconds:.3g} s) is below bytes_moved / "
                f"memory roof ({floor:.3g} s): a prediction cannot beat its own roof"
            )
        _agrees(data, "achieved_bytes_per_s", kernel.achieved_bytes_per_s, where)
        _agrees(data, "achieved_flops_per_s", kernel.achieved_flops_per_s, where)
        return kernel

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "flops": self.flops,
            "bytes_moved": self.bytes_moved,
            "seconds": self.seconds,
            "best_seconds": self.best_seconds,
            "predicted_seconds": self.predicted_seconds,
            "memory_roof_bytes_per_s": self.memory_roof_bytes_per_s,
            "memory_roof_source": self.memory_roof_source,
            "compute_precision": self.compute_precision,
            "torch_seconds": self.torch_seconds,
            "torch_bytes_moved": self.torch_bytes_moved,
            "max_abs_error": self.max_abs_error,
            "config": dict(self.config),
            "method": self.method,
            "achieved_bytes_per_s": self.achieved_bytes_per_s,
            "achieved_flops_per_s": self.achieved_flops_per_s,
        }

    def check(self, spec: GPUSpec) -> None:
        """The guard on every rate in the row: kernel, unfused torch, and the roof it was predicted on."""
        what = f"the recorded {self.name} kernel"
        check_plausible(
            self.flops / self.best_seconds,
            self.bytes_moved / self.best_seconds,
            spec,
            self.compute_precision,
            what=what,
        )
        check_plausible(
            self.flops / self.torch_seconds,
            self.torch_bytes_moved / self.torch_seconds,
            spec,
            self.compute_precision,
            what=f"the recorded unfused torch {self.name}",
        )
        check_plausible(0.0, self.memory_roof_bytes_per_s, spec, self.compute_precision, what=f"{what}'s memory roof")

    def __str__(self) -> str:
        return (
            f"{self.name} {'x'.join(map(str, self.shape))} {self.dtype}: {self.seconds * 1e6:.4g} us, "
            f"{self.achieved_bytes_per_s / 1e12:.3g} TB/s; predicted {self.predicted_seconds * 1e6:.4g} us "
            f"({self.prediction_error:+.0%}); unfused torch {self.torch_seconds * 1e6:.4g} us "
            f"({self.speedup_over_torch:.2f}x the fused time)"
        )


@dataclass(frozen=True)
class NotebookRun:
    """What nbval said on the GPU machine: every notebook, strict where it has a reference record.

    ``skipped`` must be 0 on a GPU run; ``make gpu-check`` fails otherwise.
    """

    strict: tuple[str, ...]
    lax: tuple[str, ...]
    passed: int
    failed: int
    skipped: int

    @classmethod
    def from_dict(cls, data: Mapping) -> "NotebookRun":
        where = "notebooks"
        files = {}
        for key in ("strict", "lax"):
            value = data.get(key, [])
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise RecordError(f"{where}.{key} must be a list of notebook paths, got {value!r}")
            files[key] = tuple(value)
        return cls(
            **files,
            passed=_count0(data, "passed", where),
            failed=_count0(data, "failed", where),
            skipped=_count0(data, "skipped", where),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "strict": list(self.strict),
            "lax": list(self.lax),
            "passed": self.passed,
            "failed": self.failed,
            "skipped": self.skipped,
        }

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.skipped == 0


# --------------------------------------------------------------------------- the record


@dataclass(frozen=True)
class GPURecord:
    """One ``make gpu-check`` run on one GPU. ``gpu`` is the registry key (``"h200"``).

    ``gemm`` holds the bf16 sweep and, where the chip has fp8, the fp8 sweep. ``notebooks`` is
    ``None`` only when the run was told to skip them (``--no-notebooks``). ``failures`` maps
    each step that failed (a demo kernel, an fp8 sweep) to its error, kept beside the valid
    measurements instead of voiding them.
    """

    gpu: str
    provenance: Provenance
    copy: CopyMeasurement
    gemm: tuple[GemmMeasurement, ...]
    kernels: tuple[KernelMeasurement, ...]
    notebooks: NotebookRun | None = None
    schema_version: int = SCHEMA_VERSION
    failures: Mapping[str, str] = field(default_factory=dict)

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
        """The recorded roofs as a :class:`~roofline_lib.measure.MeasuredCeilings` (best copy, best bf16 GEMM)."""
        from .measure import MeasuredCeilings

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

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "gpu": self.gpu,
            "provenance": self.provenance.to_dict(),
            "copy": self.copy.to_dict(),
            "gemm": [g.to_dict() for g in self.gemm],
            "kernels": [k.to_dict() for k in self.kernels],
            "notebooks": None if self.notebooks is None else self.notebooks.to_dict(),
            "failures": dict(self.failures),
        }

    def check(self) -> None:
        """Apply the plausibility guard to every number against this GPU's registry roofs."""
        spec = self.spec
        self.copy.check(spec)
        for g in self.gemm:
            g.check(spec)
        for k in self.kernels:
            k.check(spec)


def match_gpu(device_name: str) -> GPUSpec:
    """The registry entry for a name as ``torch.cuda.get_device_name`` prints it.

    ``"NVIDIA H200"`` -> H200 SXM, ``"NVIDIA A100-SXM4-80GB"`` -> A100 80GB SXM,
    ``"NVIDIA H100 80GB HBM3"`` -> H100 SXM. Parts the registry does not hold (an H100 NVL, an
    A100 PCIe) raise ValueError instead of borrowing a sibling's roofs.
    """
    if not isinstance(device_name, str) or not device_name.strip():
        raise TypeError(f"device_name must be a GPU name such as 'NVIDIA H200', got {device_name!r}")
    name = " ".join(device_name.lower().replace("nvidia", " ").replace("-", " ").split())
    words = set(name.split())

    def pick(key: str) -> GPUSpec:
        return _lookup_gpu(key)

    if "nvl" in words or "gh200" in words:
        raise ValueError(f"{device_name!r} is not in the registry (its memory differs from the SXM part)")
    if "h200" in words:
        return pick("h200")
    if "h100" in words:
        return pick("h100-pcie") if "pcie" in words else pick("h100-sxm")
    if "a100" in words:
        if "pcie" in words:
            raise ValueError(f"{device_name!r} is not in the registry (the PCIe A100 has other bandwidth)")
        return pick("a100-40gb-sxm") if "40gb" in words else pick("a100-80gb-sxm")
    if "b200" in words:
        return pick("b200")
    if "l4" in words:
        return pick("l4")
    try:
        return _lookup_gpu(device_name)
    except ValueError:
        raise ValueError(
            f"GPU {device_name!r} is not in the registry; add its datasheet to roofline_lib/hardware.py "
            f"first (known: {', '.join(known_gpus())})"
        ) from None


def validate_record(data: Mapping) -> GPURecord:
    """Parse a record's JSON object and refuse it unless it is complete, known and plausible.

    Raises :class:`RecordError` for a wrong schema, missing provenance or an unknown GPU, and
    :class:`~roofline_lib.roofline.ImplausibleMeasurement` for a number faster than the GPU's
    datasheet roof (by more than the 5 % tolerance).
    """
    if not isinstance(data, Mapping):
        raise RecordError(f"a record must be a JSON object, got {type(data).__name__}")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise RecordError(f"schema_version must be {SCHEMA_VERSION}, got {version!r}")
    unknown = set(data) - {"schema_version", "gpu", "provenance", "copy", "gemm", "kernels", "notebooks", "failures"}
    if unknown:
        raise RecordError(f"unknown field(s) in the record: {', '.join(sorted(unknown))}")
    key = data.get("gpu")
    if not isinstance(key, str) or key not in known_gpus():
        raise RecordError(
            f"gpu must be a registry key ({', '.join(known_gpus())}), got {key!r}; a record for a GPU "
            "the registry does not hold has no roofs to be checked against"
        )
    if "provenance" not in data:
        raise RecordError("the record has no provenance (GPU name, driver, CUDA, torch, triton, date)")
    provenance = Provenance.from_dict(data["provenance"])
    try:
        named = match_gpu(provenance.device_name).key
    except ValueError:
        named = key  # an unusual name: trust the key the run was told to use
    if named != key:
        raise RecordError(
            f"the record says gpu={key!r} but its device {provenance.device_name!r} is {named!r} in the registry"
        )
    gemm = data.get("gemm")
    kernels = data.get("kernels")
    if not isinstance(gemm, list) or not gemm:
        raise RecordError("gemm must be a non-empty list of GEMM measurements")
    if not isinstance(kernels, list):
        raise RecordError("kernels must be a list of kernel measurements")
    notebooks = data.get("notebooks")
    record = GPURecord(
        gpu=key,
        provenance=provenance,
        copy=CopyMeasurement.from_dict(_mapping(data, "copy", "record")),
        gemm=tuple(GemmMeasurement.from_dict(g, f"gemm[{i}]") for i, g in enumerate(gemm)),
        kernels=tuple(KernelMeasurement.from_dict(k, f"kernels[{i}]") for i, k in enumerate(kernels)),
        notebooks=None if notebooks is None else NotebookRun.from_dict(_mapping(data, "notebooks", "record")),
        failures=_failures(data),
    )
    record.check()
    return record


#: Points the record readers at another folder (tests, or a reader's own GPU runs).
MEASUREMENTS_DIR_ENV = "ROOFLINE_MEASUREMENTS_DIR"


def _directory(directory) -> Path:
    if directory is not None:
        return Path(directory)
    override = os.environ.get(MEASUREMENTS_DIR_ENV)
    return Path(override) if override else MEASUREMENTS_DIR


def record_path(gpu, directory=None) -> Path:
    """Where the record of ``gpu`` (a name or GPUSpec) lives: ``<directory>/<registry key>.json``."""
    return _directory(directory) / f"{as_gpu(gpu).key}.json"


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


def list_records(directory=None) -> tuple[GPURecord, ...]:
    """Every record in ``directory`` (the course's by default), oldest first.

    An empty tuple when none has been made yet; a malformed or implausible file raises, so a bad
    record cannot sit unnoticed beside good ones.
    """
    root = _directory(directory)
    if not root.is_dir():
        return ()
    found = [load_record(p) for p in sorted(root.glob("*.json"))]
    return tuple(sorted(found, key=_when))


def _when(record: GPURecord) -> datetime:
    """The record's date as an aware datetime (a date without a zone is taken as UTC)."""
    moment = datetime.fromisoformat(record.provenance.date)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def latest_record(gpu=None, directory=None) -> GPURecord:
    """The newest record, of ``gpu`` (a name or GPUSpec) when given.

    Raises :class:`NoRecord` with instructions when none exists; use :func:`list_records` to
    test for presence without an exception.
    """
    spec = None if gpu is None else as_gpu(gpu)
    found = [r for r in list_records(directory) if spec is None or r.gpu == spec.key]
    if not found:
        what = "any GPU" if spec is None else spec.name
        raise NoRecord(
            f"no measurement record for {what} in {_directory(directory).name}/ yet; "
            "run `make gpu-check` on a CUDA machine to make one"
        )
    return found[-1]


def write_record(record: GPURecord, directory=None) -> Path:
    """Validate ``record`` and write it as ``<registry key>.json``; returns the path."""
    if not isinstance(record, GPURecord):
        raise TypeError(f"record must be a GPURecord, got {type(record).__name__}")
    data = record.to_dict()
    validate_record(json.loads(json.dumps(data)))  # exactly what a reader will see
    path = record_path(record.gpu, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------- chapters


def live_gpu() -> bool:
    """True when a CUDA GPU is visible, so a chapter can run its GPU cells live.

    Without one it returns False and the chapter shows the record alone, unless the environment
    sets ``ROOFLINE_REQUIRE_GPU=1`` (``make gpu-check`` does): then a missing GPU raises
    RuntimeError, because a GPU run that falls back to recorded numbers has silently skipped
    its GPU cells.
    """
    from .measure import has_cuda

    if has_cuda():
        return True
    if os.environ.get(REQUIRE_GPU_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        raise RuntimeError(
            f"{REQUIRE_GPU_ENV}=1 but torch sees no CUDA GPU, so this GPU cell would have been "
            "skipped; is the CPU build of torch installed on the GPU machine?"
        )
    return False


def side_by_side(record: GPURecord, live: Iterable[KernelMeasurement] = ()) -> list[dict[str, Any]]:
    """Rows for a table of the recorded kernels, with live timings beside them where given.

    Each row: ``name``, ``recorded_seconds``, ``recorded_bytes_per_s``, ``predicted_seconds``,
    ``live_seconds`` and ``live_bytes_per_s`` (``None`` in a row with no live measurement:
    an empty table cell, on a machine without a GPU).
    """
    if not isinstance(record, GPURecord):
        raise TypeError(f"record must be a GPURecord, got {type(record).__name__}")
    live_by_name = {}
    for row in live:
        if not isinstance(row, KernelMeasurement):
            raise TypeError(f"live must hold KernelMeasurement rows, got {type(row).__name__}")
        live_by_name[row.name] = row
    rows = []
    for k in record.kernels:
        now = live_by_name.get(k.name)
        rows.append(
            {
                "name": k.name,
                "recorded_seconds": k.seconds,
                "recorded_bytes_per_s": k.achieved_bytes_per_s,
                "predicted_seconds": k.predicted_seconds,
                "live_seconds": None if now is None else now.seconds,
                "live_bytes_per_s": None if now is None else now.achieved_bytes_per_s,
            }
        )
    return rows


@dataclass(frozen=True)
class Target:
    """One of the course's targets for a GPU run, and whether this record reached it."""

    name: str
    value: float
    goal: float
    met: bool
    detail: str

    def __str__(self) -> str:
        mark = "met " if self.met else "MISS"
        return f"[{mark}] {self.name}: {self.detail}"


def check_targets(record: GPURecord) -> tuple[Target, ...]:
    """The targets the course sets for a run (met or missed; reported, never enforced).

    One statistic on both sides of every target: the **best** repetition (the fastest of the
    timed calls), because a roof is the fastest the machine showed, and a median measured
    against a best (or against a datasheet peak) judges a healthy GPU as a miss.

    * best memory-roof bandwidth >= 90 % of the datasheet HBM bandwidth;
    * best bf16 GEMM >= 80 % of the datasheet dense bf16 peak;
    * each fused kernel's (every kernel but ``copy``) best bandwidth >= 90 % of the best measured
      memory roof;
    * each memory-bound kernel's best time within 15 % of its prediction (made from that roof).
    """
    spec = record.spec
    out = []
    roof = record.copy.best_bytes_per_s
    copy_fraction = roof / spec.hbm_bytes_per_s
    out.append(Target(
        "copy bandwidth", copy_fraction, _COPY_TARGET, copy_fraction >= _COPY_TARGET,
        f"{roof / 1e12:.3g} TB/s best ({record.copy.kernel}) = {copy_fraction:.1%} of the datasheet "
        f"{spec.hbm_bytes_per_s / 1e12:.3g} TB/s (target {_COPY_TARGET:.0%})",
    ))
    gemm = record.best_gemm("bf16")
    peak = spec.peak_flops_per_s("bf16")
    gemm_fraction = gemm.best_flops_per_s / peak
    out.append(Target(
        "bf16 GEMM", gemm_fraction, _GEMM_TARGET, gemm_fraction >= _GEMM_TARGET,
        f"{gemm.best_flops_per_s / 1e12:.4g} TFLOP/s best at {gemm.m}x{gemm.n}x{gemm.k} = {gemm_fraction:.1%} "
        f"of the dense {peak / 1e12:.4g} TFLOP/s (target {_GEMM_TARGET:.0%})",
    ))
    for k in record.kernels:
        best_rate = k.bytes_moved / k.best_seconds
        if k.name != "copy":
            fraction = best_rate / roof
            out.append(Target(
                f"{k.name} bandwidth", fraction, _FUSED_TARGET, fraction >= _FUSED_TARGET,
                f"{best_rate / 1e12:.3g} TB/s best = {fraction:.1%} of the best measured memory roof "
                f"{roof / 1e12:.3g} TB/s (target {_FUSED_TARGET:.0%})",
            ))
        ridge = ridge_point(spec, k.compute_precision)
        if k.intensity < ridge:
            error = (k.best_seconds - k.predicted_seconds) / k.predicted_seconds
            out.append(Target(
                f"{k.name} prediction", abs(error), _PREDICTION_BAND, abs(error) <= _PREDICTION_BAND,
                f"best {k.best_seconds * 1e6:.4g} us vs predicted {k.predicted_seconds * 1e6:.4g} us "
                f"({error:+.1%}; band +/-{_PREDICTION_BAND:.0%})",
            ))
    return tuple(out)


def describe_record(record: GPURecord) -> str:
    """What a chapter shows of a recorded GPU run: its provenance first, then every roof and kernel.

    Each rate is printed beside the roof it is judged against, so a reader sees both the number
    and where it came from.
    """
    if not isinstance(record, GPURecord):
        raise TypeError(f"record must be a GPURecord, got {type(record).__name__} {record!r}")
    spec = record.spec
    lines = [record.label]
    copy_rate = record.copy.best_bytes_per_s
    lines.append(f"copy: {copy_rate / 1e12:.3g} TB/s best, {copy_rate / spec.hbm_bytes_per_s:.0%} of the "
                 f"datasheet {spec.hbm_bytes_per_s / 1e12:.3g} TB/s ({record.copy.method})")
    for precision in sorted({g.precision for g in record.gemm}):
        best = record.best_gemm(precision)
        peak = spec.peak_flops_per_s(precision)
        lines.append(f"{precision} GEMM {best.m}x{best.n}x{best.k}: {best.best_flops_per_s / 1e12:.4g} TFLOP/s, "
                     f"{best.best_flops_per_s / peak:.0%} of the dense {peak / 1e12:.4g} TFLOP/s ({best.method})")
    for k in record.kernels:
        lines.append(f"kernel {k.name} {k.dtype} {'x'.join(map(str, k.shape))}: {k.seconds * 1e6:.4g} us "
                     f"measured, {k.predicted_seconds * 1e6:.4g} us predicted")
    lines.extend(str(target) for target in check_targets(record))
    return "\n".join(lines)
