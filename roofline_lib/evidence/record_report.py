"""What a chapter shows of a recorded GPU run: provenance first, the course's targets, live beside recorded.

The record itself (schema, validation, files) is :mod:`roofline_lib.evidence.records`; this module only
presents one. A chapter that times GPU kernels shows the record on every machine and, when
:func:`live_gpu` says a GPU is present, its live numbers beside it (:func:`side_by_side`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable

from ..core.formatting import to_unit
from ..core.roofline import Roof
from ..workloads.energy import EnergyJudgement, judge_energy
from .records import GPURecord, KernelMeasurement, MeasuredEnergy

__all__ = [
    "REQUIRE_GPU_ENV",
    "live_gpu",
    "side_by_side",
    "Target",
    "check_targets",
    "describe_record",
    "energy_judgements",
    "describe_energy",
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
    roof = record.copy.best_bytes_per_s
    out = [_copy_target(record), _gemm_target(record)]
    for k in record.kernels:
        out.extend(_kernel_targets(record, k, roof))
    return tuple(out)


def _copy_target(record: GPURecord) -> Target:
    """Best memory-roof bandwidth against the datasheet HBM bandwidth."""
    spec, roof = record.spec, record.copy.best_bytes_per_s
    fraction = roof / spec.hbm_bytes_per_s
    return Target(
        "copy bandwidth",
        fraction,
        _COPY_TARGET,
        fraction >= _COPY_TARGET,
        f"{_tb_s(roof)} TB/s best ({record.copy.kernel}) = {fraction:.1%} of the datasheet "
        f"{_tb_s(spec.hbm_bytes_per_s)} TB/s (target {_COPY_TARGET:.0%})",
    )


def _gemm_target(record: GPURecord) -> Target:
    """Best bf16 GEMM against the datasheet dense bf16 peak."""
    gemm = record.best_gemm("bf16")
    peak = record.spec.peak_flops_per_s("bf16")
    fraction = gemm.best_flops_per_s / peak
    return Target(
        "bf16 GEMM",
        fraction,
        _GEMM_TARGET,
        fraction >= _GEMM_TARGET,
        f"{_tflop_s(gemm.best_flops_per_s)} TFLOP/s best at {gemm.m}x{gemm.n}x{gemm.k} = {fraction:.1%} "
        f"of the dense {_tflop_s(peak)} TFLOP/s (target {_GEMM_TARGET:.0%})",
    )


def _kernel_targets(record: GPURecord, k: KernelMeasurement, roof: float) -> list[Target]:
    """A fused kernel's bandwidth against the measured roof; a memory-bound one's time against its prediction."""
    out = []
    if k.name != "copy":
        best_rate = k.bytes_moved / k.best_seconds
        fraction = best_rate / roof
        out.append(
            Target(
                f"{k.name} bandwidth",
                fraction,
                _FUSED_TARGET,
                fraction >= _FUSED_TARGET,
                f"{_tb_s(best_rate)} TB/s best = {fraction:.1%} of the best measured memory roof "
                f"{_tb_s(roof)} TB/s (target {_FUSED_TARGET:.0%})",
            )
        )
    if Roof.of_gpu(record.spec, k.compute_precision).bound(k.intensity) == "memory":  # the one verdict
        error = (k.best_seconds - k.predicted_seconds) / k.predicted_seconds
        out.append(
            Target(
                f"{k.name} prediction",
                abs(error),
                _PREDICTION_BAND,
                abs(error) <= _PREDICTION_BAND,
                f"best {_us(k.best_seconds)} us vs predicted {_us(k.predicted_seconds)} us "
                f"({error:+.1%}; band +/-{_PREDICTION_BAND:.0%})",
            )
        )
    return out


def _tb_s(bytes_per_s: float) -> str:
    return f"{to_unit(bytes_per_s, 'TB/s'):.3g}"


def _tflop_s(flops_per_s: float) -> str:
    return f"{to_unit(flops_per_s, 'TFLOP/s'):.4g}"


def _us(seconds: float) -> str:
    return f"{to_unit(seconds, 'us'):.4g}"


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
        f"copy: {_tb_s(copy_rate)} TB/s best, {copy_rate / spec.hbm_bytes_per_s:.0%} of the "
        f"datasheet {_tb_s(spec.hbm_bytes_per_s)} TB/s ({record.copy.method})"
    )
    for precision in sorted({g.precision for g in record.gemm}):
        best = record.best_gemm(precision)
        peak = spec.peak_flops_per_s(precision)
        lines.append(
            f"{precision} GEMM {best.m}x{best.n}x{best.k}: {_tflop_s(best.best_flops_per_s)} TFLOP/s, "
            f"{best.best_flops_per_s / peak:.0%} of the dense {_tflop_s(peak)} TFLOP/s ({best.method})"
        )
    for k in record.kernels:
        lines.append(
            f"kernel {k.name} {k.dtype} {'x'.join(map(str, k.shape))}: {_us(k.seconds)} us "
            f"measured, {_us(k.predicted_seconds)} us predicted"
        )
    lines.extend(str(target) for target in check_targets(record))
    return "\n".join(lines)


def energy_judgements(record: GPURecord) -> tuple[tuple[MeasuredEnergy, EnergyJudgement], ...]:
    """Each recorded energy run beside :func:`~roofline_lib.workloads.energy.judge_energy`'s model of it.

    The model is :func:`~roofline_lib.workloads.energy.kernel_energy` for the run's FLOPs, bytes and
    seconds on the record's GPU; a GPU without power figures in the registry is refused by name.
    """
    if not isinstance(record, GPURecord):
        raise TypeError(f"record must be a GPURecord, got {type(record).__name__} {record!r}")
    return tuple(
        (e, judge_energy(record.spec, e.flops, e.bytes_moved, e.seconds, e.joules, e.precision)) for e in record.energy
    )


def describe_energy(record: GPURecord) -> str:
    """A record's energy runs, provenance first, each set against the energy model on that GPU.

    A run the energy guard flags (average power above the TDP, joules below the model's FLOP and
    byte energy) says IMPLAUSIBLE and why; a record without energy runs says why it has none.
    """
    if not isinstance(record, GPURecord):
        raise TypeError(f"record must be a GPURecord, got {type(record).__name__} {record!r}")
    lines = [record.label]
    if not record.energy:
        why = record.energy_note or "the record was made before gpu-check measured energy"
        return "\n".join([*lines, f"no energy measured in this run: {why}"])
    try:
        judged = energy_judgements(record)
    except ValueError as err:  # a GPU without power figures: the measurement stands, unmodelled
        return "\n".join(
            [*lines, *(f"{e.name}: {e.joules:.4g} J in {e.seconds:.3g} s; no model: {err}" for e in record.energy)]
        )
    for e, verdict in judged:
        lines.append(f"{e.name} {'x'.join(map(str, e.shape))}, {e.repetitions:,} times, {e.counter}: {verdict}")
    return "\n".join(lines)
