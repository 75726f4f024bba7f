"""What a chapter shows of a recorded GPU run: provenance first, the course's targets, live beside recorded.

The record itself (schema, validation, files) is :mod:`roofline_lib.evidence.records`; this module only
presents one. A chapter that times GPU kernels shows the record on every machine and, when
:func:`live_gpu` says a GPU is present, its live numbers beside it (:func:`side_by_side`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable

from ..core.roofline import Roof
from .records import GPURecord, KernelMeasurement

__all__ = [
    "REQUIRE_GPU_ENV",
    "live_gpu",
    "side_by_side",
    "Target",
    "check_targets",
    "describe_record",
]

#: Set to 1 by ``make gpu-check``: a chapter cell that would fall back to the record because no
#: GPU is visible raises instead, so a GPU run cannot quietly show only recorded numbers.
REQUIRE_GPU_ENV = "ROOFLINE_REQUIRE_GPU"

# Targets the course sets for a good run (issue: "Targets on an H200"); reported, not enforced.
_COPY_TARGET = 0.90  # best memory-roof bandwidth / datasheet HBM bandwidth
_GEMM_TARGET = 0.80  # best bf16 GEMM / datasheet dense bf16 peak
_FUSED_TARGET = 0.90  # fused kernel's best bandwidth / best measured memory roof
_PREDICTION_BAND = 0.15  # |best - predicted| / predicted for memory-bound kernels


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
    out.append(
        Target(
            "copy bandwidth",
            copy_fraction,
            _COPY_TARGET,
            copy_fraction >= _COPY_TARGET,
            f"{roof / 1e12:.3g} TB/s best ({record.copy.kernel}) = {copy_fraction:.1%} of the datasheet "
            f"{spec.hbm_bytes_per_s / 1e12:.3g} TB/s (target {_COPY_TARGET:.0%})",
        )
    )
    gemm = record.best_gemm("bf16")
    peak = spec.peak_flops_per_s("bf16")
    gemm_fraction = gemm.best_flops_per_s / peak
    out.append(
        Target(
            "bf16 GEMM",
            gemm_fraction,
            _GEMM_TARGET,
            gemm_fraction >= _GEMM_TARGET,
            f"{gemm.best_flops_per_s / 1e12:.4g} TFLOP/s best at {gemm.m}x{gemm.n}x{gemm.k} = {gemm_fraction:.1%} "
            f"of the dense {peak / 1e12:.4g} TFLOP/s (target {_GEMM_TARGET:.0%})",
        )
    )
    for k in record.kernels:
        best_rate = k.bytes_moved / k.best_seconds
        if k.name != "copy":
            fraction = best_rate / roof
            out.append(
                Target(
                    f"{k.name} bandwidth",
                    fraction,
                    _FUSED_TARGET,
                    fraction >= _FUSED_TARGET,
                    f"{best_rate / 1e12:.3g} TB/s best = {fraction:.1%} of the best measured memory roof "
                    f"{roof / 1e12:.3g} TB/s (target {_FUSED_TARGET:.0%})",
                )
            )
        if Roof.of_gpu(spec, k.compute_precision).bound(k.intensity) == "memory":  # the one verdict
            error = (k.best_seconds - k.predicted_seconds) / k.predicted_seconds
            out.append(
                Target(
                    f"{k.name} prediction",
                    abs(error),
                    _PREDICTION_BAND,
                    abs(error) <= _PREDICTION_BAND,
                    f"best {k.best_seconds * 1e6:.4g} us vs predicted {k.predicted_seconds * 1e6:.4g} us "
                    f"({error:+.1%}; band +/-{_PREDICTION_BAND:.0%})",
                )
            )
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
    lines.append(
        f"copy: {copy_rate / 1e12:.3g} TB/s best, {copy_rate / spec.hbm_bytes_per_s:.0%} of the "
        f"datasheet {spec.hbm_bytes_per_s / 1e12:.3g} TB/s ({record.copy.method})"
    )
    for precision in sorted({g.precision for g in record.gemm}):
        best = record.best_gemm(precision)
        peak = spec.peak_flops_per_s(precision)
        lines.append(
            f"{precision} GEMM {best.m}x{best.n}x{best.k}: {best.best_flops_per_s / 1e12:.4g} TFLOP/s, "
            f"{best.best_flops_per_s / peak:.0%} of the dense {peak / 1e12:.4g} TFLOP/s ({best.method})"
        )
    for k in record.kernels:
        lines.append(
            f"kernel {k.name} {k.dtype} {'x'.join(map(str, k.shape))}: {k.seconds * 1e6:.4g} us "
            f"measured, {k.predicted_seconds * 1e6:.4g} us predicted"
        )
    lines.extend(str(target) for target in check_targets(record))
    return "\n".join(lines)
