"""Roofline arithmetic: ridge point, attainable performance, and the verdict on a kernel.

The model, in SI units throughout:

    attainable FLOP/s = min(peak FLOP/s, HBM bytes/s * intensity)
    intensity         = FLOP / HBM bytes moved        (FLOP/byte)
    ridge             = peak FLOP/s / HBM bytes/s     (FLOP/byte)

"Bytes moved" means traffic to the slow, large memory (HBM), not to caches or
registers. A kernel whose intensity is below the ridge is memory-bound; above
it, compute-bound.

The plausibility guard: a measurement that beats the roof that binds it cannot
be real. ``kernel_verdict`` raises :class:`ImplausibleMeasurement` when the
achieved rate exceeds its ceiling by more than ``PLAUSIBILITY_TOLERANCE``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._checks import _positive
from .hardware import GPUSpec, as_gpu

__all__ = [
    "PLAUSIBILITY_TOLERANCE",
    "ImplausibleMeasurement",
    "Verdict",
    "MEMORY_LEVELS",
    "memory_bytes_per_s",
    "ridge_point",
    "attainable_flops_per_s",
    "kernel_verdict",
    "check_plausible",
]

#: How far above its roof a measurement may sit before it is refused (5 %).
#: Clock boost and datasheet rounding explain a few percent; more than that is a bug.
PLAUSIBILITY_TOLERANCE = 0.05

_USUAL_CAUSES = (
    "usual causes: data resident in cache (L2 is tens of MB; reuse the same buffer and you time "
    "the cache, not HBM), unsynchronised timing (GPU work is asynchronous; time after "
    "torch.cuda.synchronize() or with triton.testing.do_bench), a sparse peak used as if it were "
    "dense, or a miscounted byte or FLOP"
)


class ImplausibleMeasurement(ValueError):
    """A measured rate is faster than the hardware can go."""


#: Memory levels a roof can be drawn for; intensity is then FLOP per byte moved from that level.
MEMORY_LEVELS = ("hbm", "l2")


def memory_bytes_per_s(gpu, memory: str = "hbm") -> float:
    """Bandwidth of one memory level in bytes/s: ``"hbm"`` (the datasheet figure) or ``"l2"``.

    The registry has an L2 figure only where one can be derived (the A100's, from its
    whitepaper); asking for it elsewhere raises ValueError naming the chips that have one.
    """
    spec = as_gpu(gpu)
    if memory == "hbm":
        return spec.hbm_bytes_per_s
    if memory == "l2":
        if spec.l2_bytes_per_s is None:
            from .hardware import registry

            have = ", ".join(s.name for s in registry().values() if s.l2_bytes_per_s is not None)
            raise ValueError(f"{spec.name} has no L2 bandwidth in the registry (memory='l2'); chips that do: {have}")
        return spec.l2_bytes_per_s
    raise ValueError(f"memory must be one of {', '.join(map(repr, MEMORY_LEVELS))}, got {memory!r}")


def ridge_point(gpu, precision: str = "bf16", memory: str = "hbm") -> float:
    """Intensity in FLOP/byte where the memory roof meets the compute roof: peak / bandwidth."""
    spec = as_gpu(gpu)
    return spec.peak_flops_per_s(precision) / memory_bytes_per_s(spec, memory)


def attainable_flops_per_s(intensity, gpu, precision: str = "bf16", memory: str = "hbm"):
    """The roofline ceiling ``min(peak, bandwidth * intensity)`` in FLOP/s.

    ``intensity`` (FLOP/byte) may be a number or a numpy array (for plotting);
    every element must be positive and finite. ``memory="l2"`` uses the L2 roof: the ceiling
    of a kernel whose data already sits in L2, with intensity per byte moved from L2.
    """
    spec = as_gpu(gpu)
    peak = spec.peak_flops_per_s(precision)
    bandwidth = memory_bytes_per_s(spec, memory)
    if isinstance(intensity, np.ndarray):
        arr = np.asarray(intensity, dtype=float)
        if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
            raise ValueError("intensity must hold positive finite numbers of FLOP/byte")
        return np.minimum(peak, bandwidth * arr)
    x = _positive(intensity, "intensity", "FLOP/byte")
    return min(peak, bandwidth * x)


@dataclass(frozen=True)
class Verdict:
    """Where a measured kernel sits on one GPU's roofline. All rates in SI units."""

    gpu: str
    precision: str
    flops: float
    bytes_moved: float
    seconds: float
    intensity: float  # FLOP/byte
    ridge: float  # FLOP/byte
    bound: str  # "memory" or "compute"
    achieved_flops_per_s: float
    achieved_bytes_per_s: float
    ceiling_flops_per_s: float
    efficiency: float  # achieved / ceiling, a fraction

    def __str__(self) -> str:
        return (
            f"{self.gpu} {self.precision}: intensity {self.intensity:.3g} FLOP/B "
            f"(ridge {self.ridge:.3g}) -> {self.bound}-bound; "
            f"achieved {self.achieved_flops_per_s / 1e12:.3g} TFLOP/s of a "
            f"{self.ceiling_flops_per_s / 1e12:.3g} TFLOP/s ceiling ({self.efficiency:.1%})"
        )


def check_plausible(
    achieved_flops_per_s: float,
    achieved_bytes_per_s: float,
    spec: GPUSpec,
    precision: str,
    *,
    tolerance: float = PLAUSIBILITY_TOLERANCE,
    what: str = "this measurement",
) -> None:
    """Raise ImplausibleMeasurement if either rate beats its roof by more than ``tolerance``."""
    peak = spec.peak_flops_per_s(precision)
    bw = spec.hbm_bytes_per_s
    limit = 1.0 + tolerance
    if achieved_bytes_per_s > bw * limit:
        raise ImplausibleMeasurement(
            f"{what} moves {achieved_bytes_per_s / 1e12:.3g} TB/s, {achieved_bytes_per_s / bw:.2f}x "
            f"the {spec.name} HBM bandwidth roof of {bw / 1e12:.3g} TB/s; {_USUAL_CAUSES}"
        )
    if achieved_flops_per_s > peak * limit:
        raise ImplausibleMeasurement(
            f"{what} reaches {achieved_flops_per_s / 1e12:.4g} TFLOP/s, "
            f"{achieved_flops_per_s / peak:.2f}x the {spec.name} dense {precision} compute peak of "
            f"{peak / 1e12:.4g} TFLOP/s; {_USUAL_CAUSES}"
        )


def kernel_verdict(flops, bytes_moved, seconds, gpu, precision: str = "bf16") -> Verdict:
    """Classify a measured kernel: intensity, bound, achieved rates, ceiling and efficiency.

    ``flops`` is the kernel's arithmetic (1 multiply-add = 2 FLOP), ``bytes_moved`` its HBM
    traffic in bytes and ``seconds`` its measured time. Raises ImplausibleMeasurement when
    the measurement beats the roof that binds it.
    """
    spec = as_gpu(gpu)
    f = _positive(flops, "flops", "FLOP")
    b = _positive(bytes_moved, "bytes_moved", "bytes")
    t = _positive(seconds, "seconds", "seconds")
    peak = spec.peak_flops_per_s(precision)  # also rejects a precision the chip lacks
    intensity = f / b
    ridge = spec.ridge_point(precision)
    achieved_flops = f / t
    achieved_bytes = b / t
    ceiling = min(peak, spec.hbm_bytes_per_s * intensity)
    check_plausible(achieved_flops, achieved_bytes, spec, precision, what="the kernel")
    return Verdict(
        gpu=spec.name,
        precision=precision.lower(),
        flops=f,
        bytes_moved=b,
        seconds=t,
        intensity=intensity,
        ridge=ridge,
        bound="memory" if intensity < ridge else "compute",
        achieved_flops_per_s=achieved_flops,
        achieved_bytes_per_s=achieved_bytes,
        ceiling_flops_per_s=ceiling,
        efficiency=achieved_flops / ceiling,
    )
