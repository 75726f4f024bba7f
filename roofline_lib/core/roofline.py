"""Roofline arithmetic: one roof value, and every answer the course asks of it.

The model, in SI units throughout:

    intensity         = FLOP / bytes moved                       (FLOP/byte)
    ridge             = peak FLOP/s / bytes/s                    (FLOP/byte)
    attainable FLOP/s = min(peak FLOP/s, bytes/s * intensity)
    time at the roof  = max(FLOP / peak FLOP/s, bytes / bytes/s) (seconds)

"Bytes moved" means traffic to the memory level the roof is drawn for: HBM (or DRAM) unless
stated, not caches or registers. Below the ridge a kernel is memory-bound; at or above it,
compute-bound.

A :class:`Roof` is a compute peak and a memory bandwidth with a label. It comes from a registry
GPU in a precision (:meth:`Roof.of_gpu`) or from the ceilings measured on this machine
(:meth:`Roof.measured`); :func:`roof` turns either, or a roof, into one. Ridge, attainable
FLOP/s, time at the roof, the plausibility check and the verdict are methods of the roof, and
the module's functions (``ridge_point``, ``attainable_flops_per_s``, ``time_at_roof_seconds``,
``kernel_verdict``) only build a roof and ask it.

The plausibility rule, stated once: **a rate is refused when it exceeds the roof that binds it by
more than** :data:`PLAUSIBILITY_TOLERANCE` (achieved > roof x (1 + tolerance)).
:func:`check_plausible` is the only place it is applied; it raises
:class:`ImplausibleMeasurement`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .checks import _bytes_and_seconds, _efficiency, _positive
from .formatting import rate as _rate
from .hardware import GPUSpec, _gpu, as_gpu

__all__ = [
    "PLAUSIBILITY_TOLERANCE",
    "MAX_PLAUSIBILITY_TOLERANCE",
    "ImplausibleMeasurement",
    "Roof",
    "roof",
    "Verdict",
    "MEMORY_LEVELS",
    "memory_bytes_per_s",
    "ridge_point",
    "attainable_flops_per_s",
    "time_at_roof_seconds",
    "kernel_verdict",
    "check_plausible",
]

#: How far above its roof a measurement may sit before it is refused (5 %).
#: Clock boost and datasheet rounding explain a few percent; more than that is a bug.
PLAUSIBILITY_TOLERANCE = 0.05

#: The largest tolerance :func:`check_plausible` accepts. Clocks and rounding never explain a
#: quarter; a wider tolerance would switch the guard off (tolerance=4 lets 5x the roof through).
MAX_PLAUSIBILITY_TOLERANCE = 0.25

_USUAL_CAUSES = (
    "usual causes: data resident in cache (L2 is tens of MB; reuse the same buffer and you time "
    "the cache, not main memory: rotate buffers larger than the last-level cache), unsynchronised "
    "timing (GPU work is asynchronous; time after torch.cuda.synchronize() or with "
    "triton.testing.do_bench), a sparse peak used as if it were dense, a narrower precision than "
    "the roof's, or a miscounted byte or FLOP (1 multiply-add = 2 FLOP)"
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


@dataclass(frozen=True)
class Roof:
    """A compute peak and a memory bandwidth, with a label: everything the roofline needs.

    ``peak_flops_per_s`` is the compute roof (FLOP/s), ``bytes_per_s`` the memory roof (bytes/s).
    ``compute_label`` and ``memory_label`` name each roof in messages ("H100 SXM dense bf16
    compute peak", "copy bandwidth measured on ..."). Build one with :meth:`of_gpu` or
    :meth:`measured`, or let :func:`roof` decide.
    """

    peak_flops_per_s: float
    bytes_per_s: float
    label: str
    compute_label: str = "compute peak"
    memory_label: str = "memory bandwidth roof"

    def __post_init__(self):
        _positive(self.peak_flops_per_s, "peak_flops_per_s", "FLOP per second")
        _positive(self.bytes_per_s, "bytes_per_s", "bytes per second")
        for name in ("label", "compute_label", "memory_label"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise TypeError(f"{name} must be a non-empty string naming the roof, got {value!r}")

    @classmethod
    def of_gpu(cls, gpu, precision: str = "bf16", memory: str = "hbm") -> "Roof":
        """The datasheet roof of a registry GPU: dense peak in ``precision``, ``memory`` bandwidth."""
        spec = as_gpu(gpu)
        peak = spec.peak_flops_per_s(precision)  # rejects a precision the chip lacks
        bandwidth = memory_bytes_per_s(spec, memory)
        level = memory.upper()  # "HBM" (the datasheet figure; GDDR on some cards) or "L2"
        return cls(
            peak,
            bandwidth,
            f"{spec.name} {precision.lower()}" + ("" if memory == "hbm" else " (L2)"),
            compute_label=f"{spec.name} dense {precision.lower()} compute peak",
            memory_label=f"{spec.name} {level} bandwidth roof",
        )

    @classmethod
    def measured(cls, ceilings) -> "Roof":
        """The roof measured on this machine, from a :class:`~roofline_lib.evidence.measured_roofs.MeasuredCeilings`."""
        if not (hasattr(ceilings, "flops_per_s") and hasattr(ceilings, "bytes_per_s")):
            raise TypeError(
                "ceilings must be a MeasuredCeilings (measured_roofs.measure_ceilings()), "
                f"got {type(ceilings).__name__} {ceilings!r}"
            )
        where = getattr(ceilings, "device_name", "this machine")
        precision = getattr(ceilings, "precision", "")
        return cls(
            ceilings.flops_per_s,
            ceilings.bytes_per_s,
            f"measured on {where}",
            compute_label=f"{precision} matmul rate measured on {where}".strip(),
            memory_label=f"copy bandwidth measured on {where}",
        )

    @property
    def ridge(self) -> float:
        """Intensity (FLOP/byte) where the memory roof meets the compute roof: peak / bandwidth."""
        return self.peak_flops_per_s / self.bytes_per_s

    def attainable_flops_per_s(self, intensity):
        """The roofline ceiling ``min(peak, bandwidth * intensity)`` in FLOP/s.

        ``intensity`` (FLOP/byte) may be a number or a numpy array (for plotting); every element
        must be positive and finite.
        """
        if isinstance(intensity, np.ndarray):
            arr = np.asarray(intensity, dtype=float)
            if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
                raise ValueError("intensity must hold positive finite numbers of FLOP/byte")
            return np.minimum(self.peak_flops_per_s, self.bytes_per_s * arr)
        x = _positive(intensity, "intensity", "FLOP/byte")
        return min(self.peak_flops_per_s, self.bytes_per_s * x)

    def bound(self, intensity) -> str:
        """``"memory"`` below the ridge, ``"compute"`` at or above it (intensity 0 is memory)."""
        x = _positive(intensity, "intensity", "FLOP/byte", allow_zero=True)
        return "memory" if x < self.ridge else "compute"

    def seconds(self, flops, bytes_moved) -> float:
        """Time at the roof: ``max(flops / peak, bytes_moved / bandwidth)`` in seconds.

        The fastest the work can run on this roof; either count may be 0 (a copy does no FLOPs),
        not both.
        """
        f = _positive(flops, "flops", "FLOP", allow_zero=True)
        b = _positive(bytes_moved, "bytes_moved", "bytes", allow_zero=True)
        if f == 0 and b == 0:
            raise ValueError("flops and bytes_moved cannot both be 0: there is no work to time")
        return max(f / self.peak_flops_per_s, b / self.bytes_per_s)

    def check(
        self, flops_per_s, bytes_per_s, *, tolerance: float = PLAUSIBILITY_TOLERANCE, what: str = "this measurement"
    ) -> None:
        """:func:`check_plausible` against this roof."""
        check_plausible(flops_per_s, bytes_per_s, self, tolerance=tolerance, what=what)

    def verdict(
        self, flops, bytes_moved, seconds, *, tolerance: float = PLAUSIBILITY_TOLERANCE, what: str = "the kernel"
    ) -> "Verdict":
        """Place a measured kernel on this roof; raises ImplausibleMeasurement if it beats it."""
        f = _positive(flops, "flops", "FLOP")
        b = _positive(bytes_moved, "bytes_moved", "bytes")
        t = _positive(seconds, "seconds", "seconds")
        _bytes_and_seconds(b, t)  # under 1 KB in over 1 s: MB and microseconds were meant
        achieved_flops, achieved_bytes = f / t, b / t
        self.check(achieved_flops, achieved_bytes, tolerance=tolerance, what=what)
        intensity = f / b
        ceiling = self.attainable_flops_per_s(intensity)
        _efficiency(achieved_flops / ceiling)
        return Verdict(
            roof=self,
            flops=f,
            bytes_moved=b,
            seconds=t,
            intensity=intensity,
            ridge=self.ridge,
            bound=self.bound(intensity),
            achieved_flops_per_s=achieved_flops,
            achieved_bytes_per_s=achieved_bytes,
            ceiling_flops_per_s=ceiling,
            efficiency=achieved_flops / ceiling,
            time_at_roof_seconds=self.seconds(f, b),
        )


def roof(source, precision: str = "bf16", memory: str = "hbm") -> Roof:
    """Any roof-like thing as a :class:`Roof`.

    ``source`` may be a :class:`Roof` (returned as is), a registry GPU (a :class:`GPUSpec` or a
    name; ``precision`` and ``memory`` then choose its roofs) or measured ceilings
    (:class:`~roofline_lib.evidence.measured_roofs.MeasuredCeilings`).
    """
    if isinstance(source, Roof):
        return source
    if isinstance(source, str):
        return Roof.of_gpu(_gpu(source, "source"), precision, memory)
    if isinstance(source, GPUSpec):
        return Roof.of_gpu(source, precision, memory)
    if hasattr(source, "flops_per_s") and hasattr(source, "bytes_per_s"):
        return Roof.measured(source)
    raise TypeError(
        "a roof must be a Roof, a GPU (a GPUSpec or a registry name) or a MeasuredCeilings, "
        f"got source={source!r} ({type(source).__name__})"
    )


def ridge_point(gpu, precision: str = "bf16", memory: str = "hbm") -> float:
    """Intensity in FLOP/byte where the memory roof meets the compute roof (:attr:`Roof.ridge`)."""
    return roof(gpu, precision, memory).ridge


def attainable_flops_per_s(intensity, gpu, precision: str = "bf16", memory: str = "hbm"):
    """The roofline ceiling ``min(peak, bandwidth * intensity)`` in FLOP/s (:meth:`Roof.attainable_flops_per_s`).

    ``memory="l2"`` uses the L2 roof: the ceiling of a kernel whose data already sits in L2,
    with intensity per byte moved from L2.
    """
    return roof(gpu, precision, memory).attainable_flops_per_s(intensity)


def time_at_roof_seconds(flops, bytes_moved, gpu, precision: str = "bf16", memory: str = "hbm") -> float:
    """The fastest ``flops`` and ``bytes_moved`` can run on ``gpu``'s roofs (:meth:`Roof.seconds`)."""
    return roof(gpu, precision, memory).seconds(flops, bytes_moved)


@dataclass(frozen=True)
class Verdict:
    """Where a measured kernel sits on one roof. All rates in SI units."""

    roof: Roof
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
    time_at_roof_seconds: float  # the fastest this kernel could run on the roof

    def __str__(self) -> str:
        return (
            f"{self.roof.label}: intensity {self.intensity:.3g} FLOP/B "
            f"(ridge {self.ridge:.3g}) -> {self.bound}-bound; "
            f"achieved {_rate(self.achieved_flops_per_s, 'FLOP/s')} of a "
            f"{_rate(self.ceiling_flops_per_s, 'FLOP/s')} ceiling ({self.efficiency:.1%})"
        )


def check_plausible(
    achieved_flops_per_s,
    achieved_bytes_per_s,
    spec,
    precision: str | None = None,
    *,
    tolerance: float = PLAUSIBILITY_TOLERANCE,
    what: str = "this measurement",
) -> None:
    """The one plausibility rule: refuse a rate above its roof by more than ``tolerance``.

    ``spec`` is a :class:`Roof`, or a :class:`GPUSpec` with ``precision`` (its dense peak and
    HBM bandwidth). Rates are FLOP/s and bytes/s; 0 means "not measured". ``tolerance`` is a
    fraction from 0 to :data:`MAX_PLAUSIBILITY_TOLERANCE`. Raises ImplausibleMeasurement naming
    the roof and the usual causes; ValueError or TypeError for bad input.
    """
    if isinstance(spec, GPUSpec):
        the_roof = Roof.of_gpu(spec, precision if precision is not None else "bf16")
    elif isinstance(spec, Roof):
        the_roof = spec
    else:
        raise TypeError(
            "spec must be a Roof (rl.roof(...)) or a GPUSpec (rl.gpu(name)), "
            f"got {type(spec).__name__} {spec!r}"
            + ("; pass rl.gpu(name) instead of the name" if isinstance(spec, str) else "")
        )
    flops_rate = _positive(achieved_flops_per_s, "achieved_flops_per_s", "FLOP per second", allow_zero=True)
    bytes_rate = _positive(achieved_bytes_per_s, "achieved_bytes_per_s", "bytes per second", allow_zero=True)
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real):
        raise TypeError(f"tolerance must be a fraction (0 to {MAX_PLAUSIBILITY_TOLERANCE}), got {tolerance!r}")
    tol = _positive(tolerance, "tolerance", "fraction", allow_zero=True)
    if tol > MAX_PLAUSIBILITY_TOLERANCE:
        raise ValueError(
            f"tolerance must be a fraction from 0 to {MAX_PLAUSIBILITY_TOLERANCE}, got {tolerance!r}: "
            f"a tolerance of {tol:g} would accept {1 + tol:g}x the roof"
        )
    limit = 1.0 + tol
    bw, peak = the_roof.bytes_per_s, the_roof.peak_flops_per_s
    if bytes_rate > bw * limit:
        raise ImplausibleMeasurement(
            f"{what} moves {_rate(bytes_rate, 'B/s')}, {bytes_rate / bw:.2f}x the {the_roof.memory_label} "
            f"of {_rate(bw, 'B/s')}; {_USUAL_CAUSES}"
        )
    if flops_rate > peak * limit:
        raise ImplausibleMeasurement(
            f"{what} reaches {_rate(flops_rate, 'FLOP/s')}, {flops_rate / peak:.2f}x the "
            f"{the_roof.compute_label} of {_rate(peak, 'FLOP/s')}; {_USUAL_CAUSES}"
        )


def kernel_verdict(flops, bytes_moved, seconds, gpu, precision: str = "bf16") -> Verdict:
    """Classify a measured kernel: intensity, bound, achieved rates, ceiling and efficiency.

    ``flops`` is the kernel's arithmetic (1 multiply-add = 2 FLOP), ``bytes_moved`` its HBM
    traffic in bytes and ``seconds`` its measured time; ``gpu`` a registry GPU (with
    ``precision``), a MeasuredCeilings or a :class:`Roof`. Raises ImplausibleMeasurement when the
    measurement beats the roof that binds it.
    """
    the_roof = roof(gpu, precision)
    return the_roof.verdict(flops, bytes_moved, seconds)
