"""Energy on the roofline: what a kernel or a serving step costs in joules, and a power cap as a ceiling.

The model (Choi, Vuduc et al. 2013's energy roofline), in SI units throughout:

    energy  = flops * joules_per_flop + bytes * joules_per_hbm_byte + idle_watts * seconds
    power   = idle_watts + rate * joules_per_flop + (rate / intensity) * joules_per_hbm_byte

"Bytes" are HBM traffic, as for the time roofline; ``idle_watts`` is the static power a GPU draws
every second a process holds it (a CUDA context, nothing running), so a slow kernel pays for its
slowness. The GPU's figures (TDP, static power, energy per byte of HBM and of a link) live in
``roofline_lib/core/data/energy.json``, each with its source and date. No datasheet prints an
energy per FLOP, so it is derived by :func:`joules_per_flop_at_tdp`: a GEMM at the ridge, running
at the compute peak and the full bandwidth at once, draws the whole TDP.

On that: :func:`power_spec` (a GPU's figures; :func:`gpus_with_power` lists the GPUs that have
them; :func:`power_figures` takes a card's figures from its datasheet, and every function that
takes a ``gpu`` or a ``server`` prices with them when given ``power=``), :func:`kernel_energy`,
:func:`judge_energy` (a measured energy against the model's),
:func:`energy_ridge` (the intensity where FLOPs and bytes cost the same energy),
:func:`power_capped_flops_per_s` and :func:`power_cap_window` (a power cap as one more ceiling),
and :func:`step_energy`, :func:`decode_energy`, :func:`prefill_energy`,
:func:`speculative_energy` (a serving step's joules per token, built on
:mod:`roofline_lib.workloads.serving`'s step prices). Money and carbon are in
:mod:`roofline_lib.workloads.energy_cost`; the published measurements the model is held against
in :mod:`roofline_lib.workloads.energy_published`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from ..core.checks import _positive, _positive_int
from ..core.formatting import data_size, energy_text, flop_count, power_text
from ..core.formatting import seconds as seconds_text
from ..core.hardware import GPUSpec, _precision_key, as_gpu, registry
from ..core.registry_data import read_records, si
from ..core.roofline import PLAUSIBILITY_TOLERANCE, roof
from .feasibility import Fit
from .serving import (
    Chunk,
    Server,
    SpeculativeDecoding,
    StepTime,
    _as_server,
    decode_step,
    prefill_step,
    server_fit,
    speculative_decoding,
    step_time,
)

__all__ = [
    "PowerSpec",
    "power_spec",
    "power_figures",
    "gpus_with_power",
    "joules_per_flop_at_tdp",
    "KernelEnergy",
    "kernel_energy",
    "EnergyJudgement",
    "judge_energy",
    "energy_ridge",
    "power_capped_flops_per_s",
    "CapWindow",
    "power_cap_window",
    "TokenEnergy",
    "step_energy",
    "decode_energy",
    "prefill_energy",
    "request_energy",
    "SpeculativeEnergy",
    "speculative_energy",
]

_CORE = "roofline_lib.core"
_DATA_FILE = "data/energy.json"  # in roofline_lib/core, beside the GPU registry
_FIGURES = ("tdp_watts", "idle_watts", "joules_per_hbm_byte", "joules_per_link_byte")


def _dated(figure, where: str) -> str:
    """``"<from> (<date>)"``: where a figure comes from and when; a figure without both is refused."""
    if not isinstance(figure, dict) or not figure.get("from") or not figure.get("date"):
        raise ValueError(f"{where} must give 'from' and 'date' (its source and when it was published), got {figure!r}")
    return f"{figure['from']} ({figure['date']})"


def _load() -> dict[str, dict]:
    """Every GPU's energy record of ``core/data/energy.json``, by GPU registry key, checked."""
    records = read_records(_CORE, _DATA_FILE, table="gpus", required=_FIGURES)
    known = registry()
    for key, record in records.items():
        if key not in known:
            raise ValueError(f"{_DATA_FILE}: GPU {key!r} is not a key of gpus.json")
        for name in _FIGURES:
            si(record[name], f"{_DATA_FILE}, GPU {key!r}, {name}")
            _dated(record[name], f"{_DATA_FILE}, GPU {key!r}, {name}")
    return records


_GPU_ENERGY = _load()


@dataclass(frozen=True)
class PowerSpec:
    """One GPU's power and energy figures, SI: watts, joules per FLOP (by precision) and per byte.

    ``joules_per_flop`` is derived (:func:`joules_per_flop_at_tdp`), every other figure is read
    from the registry (:func:`power_spec`) or given by the caller (:func:`power_figures`);
    ``sources`` says where each came from and when. ``joules_per_link_byte`` is None where no
    figure was given.
    """

    gpu_name: str
    tdp_watts: float
    idle_watts: float
    joules_per_flop: Mapping[str, float]
    joules_per_hbm_byte: float
    joules_per_link_byte: float | None
    sources: Mapping[str, str]

    def flop_joules(self, precision: str = "bf16") -> float:
        """Joules per FLOP in ``precision``; a precision the GPU lacks is refused by name."""
        key = _precision_key(precision)
        if key not in self.joules_per_flop:
            raise ValueError(
                f"{self.gpu_name} has no {key} peak (precision={precision!r}); it has: {', '.join(self.joules_per_flop)}"
            )
        return self.joules_per_flop[key]


def joules_per_flop_at_tdp(tdp_watts, idle_watts, peak_flops_per_s, hbm_bytes_per_s, joules_per_hbm_byte) -> float:
    """Energy per FLOP of a GPU, from its TDP: a GEMM at the ridge draws the whole TDP.

    At the ridge a kernel runs at the compute peak and moves bytes at the full bandwidth, so

        tdp = idle + peak * e_flop + bandwidth * e_byte
        e_flop = (tdp - idle - bandwidth * e_byte) / peak

    An assumption, stated: the TDP is what the GPU draws flat out, and every precision's peak is
    reached at it. Watts, FLOP/s, bytes/s and joules per byte in; joules per FLOP out.
    """
    tdp = _positive(tdp_watts, "tdp_watts", "watts")
    idle = _positive(idle_watts, "idle_watts", "watts", allow_zero=True)
    peak = _positive(peak_flops_per_s, "peak_flops_per_s", "FLOP per second")
    bandwidth = _positive(hbm_bytes_per_s, "hbm_bytes_per_s", "bytes per second")
    e_byte = _positive(joules_per_hbm_byte, "joules_per_hbm_byte", "joules per byte", allow_zero=True)
    memory_watts = bandwidth * e_byte  # the ridge moves bytes at the full bandwidth
    compute_watts = tdp - idle - memory_watts
    if compute_watts <= 0:
        raise ValueError(
            f"tdp_watts={tdp:g} W leaves no power for FLOPs after idle_watts={idle:g} W and the bytes' "
            f"{memory_watts:.4g} W (hbm_bytes_per_s * joules_per_hbm_byte): check the units (watts, joules per byte)"
        )
    return compute_watts / peak


def gpus_with_power() -> tuple[str, ...]:
    """The registry keys of every GPU with power and energy figures, in the GPU registry's order.

    >>> "h100-sxm" in gpus_with_power()
    True
    """
    return tuple(key for key in registry() if key in _GPU_ENERGY)


def _record(spec: GPUSpec) -> dict:
    """The energy record of a registry GPU; a GPU without one is refused, naming those that have one."""
    if spec.key not in _GPU_ENERGY:
        have = ", ".join(registry()[k].name for k in gpus_with_power())
        raise ValueError(
            f"gpu {spec.name!r} has no power and energy figures in the registry (roofline_lib/core/{_DATA_FILE}); GPUs that have them: {have}"
        )
    return _GPU_ENERGY[spec.key]


def _derived(spec: GPUSpec, tdp, idle, e_byte, e_link, sources: dict) -> PowerSpec:
    """Step: a :class:`PowerSpec` of ``spec`` from its watts and joules per byte, the joules per FLOP
    derived for every precision it has (:func:`joules_per_flop_at_tdp`, which checks the figures)."""
    per_flop = {
        p: joules_per_flop_at_tdp(tdp, idle, spec.peak_flops_per_s(p), spec.hbm_bytes_per_s, e_byte)
        for p in spec.precisions
    }
    sources["joules_per_flop"] = (
        "derived by joules_per_flop_at_tdp: (tdp_watts - idle_watts - HBM bandwidth * joules_per_hbm_byte) / "
        f"dense peak, with the peaks and bandwidth of the {spec.name} ({spec.source})"
    )
    return PowerSpec(
        gpu_name=spec.name,
        tdp_watts=float(tdp),
        idle_watts=float(idle),
        joules_per_flop=MappingProxyType(per_flop),
        joules_per_hbm_byte=float(e_byte),
        joules_per_link_byte=None if e_link is None else float(e_link),
        sources=MappingProxyType(sources),
    )


@functools.lru_cache(maxsize=64)
def _power_of(key: str) -> PowerSpec:
    """:class:`PowerSpec` of the registry GPU ``key`` (cached: a serving sweep asks it every step)."""
    record = _GPU_ENERGY[key]
    tdp, idle, e_byte, e_link = (si(record[n], f"{_DATA_FILE}, GPU {key!r}, {n}") for n in _FIGURES)
    return _derived(registry()[key], tdp, idle, e_byte, e_link, {n: _dated(record[n], n) for n in _FIGURES})


def power_spec(gpu) -> PowerSpec:
    """The power and energy figures of ``gpu`` (a registry name or a :class:`GPUSpec`), with their sources.

    >>> round(power_spec("H100").tdp_watts)
    700
    """
    spec = as_gpu(gpu)
    _record(spec)  # refuses a GPU without figures, naming those with them
    return _power_of(spec.key)


def power_figures(gpu, *, tdp_watts, idle_watts, joules_per_hbm_byte, joules_per_link_byte=None) -> PowerSpec:
    """The power figures of a card the energy registry lacks, as its datasheet prints them; SI units.

    ``gpu`` is a registry name or a :class:`GPUSpec` (:func:`~roofline_lib.core.hardware.accelerator`
    describes a chip the registry lacks): its dense peaks and HBM bandwidth derive the joules per
    FLOP (:func:`joules_per_flop_at_tdp`). Watts and joules per byte in (a datasheet's pJ/bit is
    ``pj * 1e-12 * 8`` joules per byte); ``joules_per_link_byte`` is None where none is printed.
    Hand the result to any energy function as ``power=``:

    >>> p = power_figures("H100", tdp_watts=700, idle_watts=100, joules_per_hbm_byte=50e-12)
    >>> round(p.flop_joules("bf16") * 1e12, 3)  # (700 - 100 - 3.35e12 * 50e-12) / 989.5e12, pJ
    0.437
    """
    spec = as_gpu(gpu)
    e_link = (
        None
        if joules_per_link_byte is None
        else _positive(joules_per_link_byte, "joules_per_link_byte", "joules per byte", allow_zero=True)
    )
    sources = {n: "given by the caller" for n in _FIGURES}
    if e_link is None:
        sources["joules_per_link_byte"] = "not given"
    return _derived(spec, tdp_watts, idle_watts, joules_per_hbm_byte, e_link, sources)


def _checked_power(power, device_name: str, param: str) -> PowerSpec:
    """``power`` if it is a :class:`PowerSpec` of the card named ``device_name``; else a refusal naming ``power``."""
    if not isinstance(power, PowerSpec):
        raise TypeError(
            "power must be a PowerSpec (rl.power_figures(gpu, tdp_watts=..., idle_watts=..., "
            f"joules_per_hbm_byte=...)), got {type(power).__name__} {power!r}"
        )
    if power.gpu_name != device_name:
        raise ValueError(
            f"power holds the figures of the {power.gpu_name}, not of the {device_name} ({param}): "
            "figures of another card; build them for this one with rl.power_figures"
        )
    return power


def _gpu_power(spec: GPUSpec, power: PowerSpec | None) -> PowerSpec:
    """The one place a GPU's figures are chosen: ``power`` (checked) if given, else the registry's."""
    return power_spec(spec) if power is None else _checked_power(power, spec.name, "gpu")


# --------------------------------------------------------------------------- a kernel


@dataclass(frozen=True)
class KernelEnergy:
    """A kernel's energy, by term. SI: FLOP, bytes, seconds, joules."""

    flops: float
    bytes_moved: float
    seconds: float
    flop_joules: float  # flops * joules_per_flop
    byte_joules: float  # bytes_moved * joules_per_hbm_byte
    static_joules: float  # idle_watts * seconds
    joules: float

    @property
    def average_watts(self) -> float:
        return self.joules / self.seconds

    def __str__(self) -> str:
        return (
            f"{flop_count(self.flops)} and {data_size(self.bytes_moved)} in {seconds_text(self.seconds)}: "
            f"{energy_text(self.joules)} ({_shares(self.flop_joules, self.byte_joules, self.static_joules)}), "
            f"{power_text(self.average_watts)} on average"
        )


def _shares(flop_joules: float, byte_joules: float, static_joules: float) -> str:
    """``"61% FLOPs, 9% HBM bytes, 30% static"``: each term's share of the whole."""
    total = flop_joules + byte_joules + static_joules
    return f"{flop_joules / total:.0%} FLOPs, {byte_joules / total:.0%} HBM bytes, {static_joules / total:.0%} static"


def kernel_energy(
    gpu, flops, bytes_moved, seconds: float | None = None, precision="bf16", *, power: PowerSpec | None = None
) -> KernelEnergy:
    """The energy of a kernel of ``flops`` and ``bytes_moved`` (HBM) on ``gpu`` in ``precision``.

    ``seconds`` is its measured time; ``None`` prices it at the roof, ``max(flops / peak,
    bytes / bandwidth)``, the fastest it can run and so its least static energy. A measured time
    faster than the roof allows is refused as the plausibility guard refuses any such measurement
    (:class:`~roofline_lib.core.roofline.ImplausibleMeasurement`). ``power`` is the card's figures
    (:func:`power_figures`); None reads the registry's (:func:`power_spec`).
    """
    spec = as_gpu(gpu)
    power = _gpu_power(spec, power)
    e_flop = power.flop_joules(precision)
    f = _positive(flops, "flops", "FLOP", allow_zero=True)
    b = _positive(bytes_moved, "bytes_moved", "bytes", allow_zero=True)
    the_roof = roof(spec, precision)
    at_roof = the_roof.seconds(f, b)  # refuses a kernel of no FLOPs and no bytes
    if seconds is None:
        t = at_roof
    else:
        t = _positive(seconds, "seconds", "seconds")
        the_roof.check(f / t, b / t, what=f"a kernel of these flops and bytes_moved in seconds={t:g}")
    flop_j, byte_j, static_j = f * e_flop, b * power.joules_per_hbm_byte, power.idle_watts * t
    return KernelEnergy(f, b, t, flop_j, byte_j, static_j, flop_j + byte_j + static_j)


@dataclass(frozen=True)
class EnergyJudgement:
    """A measured energy set against the model's for the same FLOPs, bytes and seconds. SI units.

    ``model`` is :func:`kernel_energy` at the measured time; ``flags`` holds what makes the
    measurement implausible (empty when nothing does).
    """

    gpu_name: str
    joules: float  # what the counter measured
    seconds: float
    model: KernelEnergy
    tdp_watts: float
    flags: tuple[str, ...]

    @property
    def average_watts(self) -> float:
        return self.joules / self.seconds

    @property
    def ratio(self) -> float:
        """Measured over modelled joules: 1.0 is the model exactly, 1.2 the GPU used 20 % more."""
        return self.joules / self.model.joules

    @property
    def floor_joules(self) -> float:
        """The model's FLOP and byte energy alone: what the work costs with no static power at all."""
        return self.model.flop_joules + self.model.byte_joules

    @property
    def plausible(self) -> bool:
        return not self.flags

    def __str__(self) -> str:
        text = (
            f"measured {energy_text(self.joules)} in {seconds_text(self.seconds)} ({power_text(self.average_watts)}) on the "
            f"{self.gpu_name}; the model {energy_text(self.model.joules)} ({power_text(self.model.average_watts)}), "
            f"{self.ratio:.2f} times"
        )
        return text if self.plausible else "IMPLAUSIBLE: " + "; ".join(self.flags) + ". " + text


def judge_energy(
    gpu, flops, bytes_moved, seconds, joules, precision="bf16", *, power: PowerSpec | None = None
) -> EnergyJudgement:
    """A measured ``joules`` for a kernel of ``flops`` and ``bytes_moved`` that took ``seconds`` on ``gpu``.

    The model is :func:`kernel_energy` at the measured time (which refuses a time faster than
    the roofline allows). The energy guard flags, beyond the roofline guard's tolerance
    (:data:`~roofline_lib.core.roofline.PLAUSIBILITY_TOLERANCE`), an average power above the
    GPU's TDP (a counter that counted more than this GPU, or the wrong seconds) and joules below
    the model's FLOP and byte energy with no static power at all (a counter that missed work, or
    joules per FLOP too high for this GPU). ``power`` as for :func:`kernel_energy`.
    """
    power = _gpu_power(as_gpu(gpu), power)
    model = kernel_energy(gpu, flops, bytes_moved, seconds, precision, power=power)
    measured = _positive(joules, "joules", "joules")
    watts, floor = measured / model.seconds, model.flop_joules + model.byte_joules
    flags = []
    if watts > power.tdp_watts * (1 + PLAUSIBILITY_TOLERANCE):
        flags.append(
            f"{power_text(watts)} on average is above the {power.gpu_name}'s TDP of {power_text(power.tdp_watts)}"
        )
    if measured < floor * (1 - PLAUSIBILITY_TOLERANCE):
        flags.append(
            f"{energy_text(measured)} is below the model's {energy_text(floor)} for the FLOPs and bytes alone, with no static power"
        )
    return EnergyJudgement(power.gpu_name, measured, model.seconds, model, power.tdp_watts, tuple(flags))


def energy_ridge(gpu, precision="bf16", *, power: PowerSpec | None = None) -> float:
    """The intensity (FLOP/byte) where a kernel's FLOPs and its HBM bytes cost the same energy.

    ``joules_per_hbm_byte / joules_per_flop``: below it the bytes cost more joules than the FLOPs.
    Compare the time ridge, :func:`~roofline_lib.core.roofline.ridge_point` (peak / bandwidth).
    ``power`` as for :func:`kernel_energy`.
    """
    power = _gpu_power(as_gpu(gpu), power)
    return power.joules_per_hbm_byte / power.flop_joules(precision)


# --------------------------------------------------------------------------- a power cap


def _cap(cap_watts, power: PowerSpec) -> float:
    """``cap_watts`` in watts, above the GPU's static power (a cap at or below it leaves nothing to run on)."""
    cap = _positive(cap_watts, "cap_watts", "watts")
    if cap <= power.idle_watts:
        raise ValueError(
            f"cap_watts={cap:g} W is at or below the {power.gpu_name}'s static power of {power.idle_watts:g} W "
            "(idle_watts): no power would be left to compute with; give a cap in watts above it"
        )
    return cap


def power_capped_flops_per_s(gpu, intensity, cap_watts, precision="bf16", *, power: PowerSpec | None = None):
    """The attainable FLOP/s of a kernel of ``intensity`` (FLOP/byte) under a power cap of ``cap_watts``.

    At rate ``R`` the GPU draws ``idle + R * e_flop + (R / intensity) * e_byte``. Where that is
    within the cap at the roofline rate ``min(peak, intensity * bandwidth)``, the roofline rate
    stands; else the clock drops until the power meets the cap:

        R = (cap_watts - idle_watts) / (e_flop + e_byte / intensity)

    The smaller of the two is the answer. ``intensity`` may be a numpy array (for plotting).
    ``power`` as for :func:`kernel_energy`.
    """
    spec = as_gpu(gpu)
    power = _gpu_power(spec, power)
    e_flop, e_byte = power.flop_joules(precision), power.joules_per_hbm_byte
    cap = _cap(cap_watts, power)
    if isinstance(intensity, np.ndarray):
        x = np.asarray(intensity, dtype=float)
        rate = roof(spec, precision).attainable_flops_per_s(x)  # refuses non-positive elements
        return np.minimum(rate, (cap - power.idle_watts) / (e_flop + e_byte / x))
    x = _positive(intensity, "intensity", "FLOP/byte")
    rate = roof(spec, precision).attainable_flops_per_s(x)
    return min(rate, (cap - power.idle_watts) / (e_flop + e_byte / x))


@dataclass(frozen=True)
class CapWindow:
    """The intensities (FLOP/byte) at which a power cap binds: from ``low_intensity`` to ``high_intensity``.

    ``high_intensity`` is None where the cap binds at every intensity above ``low_intensity``;
    a ``low_intensity`` of 0 means it binds from the first byte. The ridge is always inside.
    """

    gpu_name: str
    cap_watts: float
    low_intensity: float
    high_intensity: float | None
    ridge: float  # the time ridge, FLOP/byte

    def __str__(self) -> str:
        high = "every higher intensity" if self.high_intensity is None else f"{self.high_intensity:.3g} FLOP/B"
        return (
            f"a {power_text(self.cap_watts)} cap on the {self.gpu_name} binds from {self.low_intensity:.3g} FLOP/B "
            f"to {high} (ridge {self.ridge:.3g} FLOP/B)"
        )


def power_cap_window(gpu, cap_watts, precision="bf16", *, power: PowerSpec | None = None) -> CapWindow:
    """Where a power cap lowers the attainable FLOP/s: the window of intensities around the ridge.

    The power at the roofline rate rises along the memory roof (more FLOPs per byte at the full
    bandwidth) to the TDP at the ridge, then falls along the compute roof (fewer bytes per FLOP
    at the peak) towards ``idle + peak * e_flop``. So a cap below the TDP binds from

        low  = (cap - idle - bandwidth * e_byte) / (bandwidth * e_flop)     (0 if negative)
        high = peak * e_byte / (cap - idle - peak * e_flop)                 (None if the cap is below idle + peak * e_flop)

    A cap at or above the TDP never binds and is refused, as is one at or below the static power.
    ``power`` as for :func:`kernel_energy`.
    """
    spec = as_gpu(gpu)
    power = _gpu_power(spec, power)
    e_flop, e_byte = power.flop_joules(precision), power.joules_per_hbm_byte
    cap = _cap(cap_watts, power)
    if cap >= power.tdp_watts:
        raise ValueError(
            f"cap_watts={cap:g} W is at or above the {power.gpu_name}'s TDP of {power.tdp_watts:g} W: "
            "the cap never binds; give a cap in watts below the TDP"
        )
    the_roof = roof(spec, precision)
    bandwidth, peak, idle = the_roof.bytes_per_s, the_roof.peak_flops_per_s, power.idle_watts
    low = max(0.0, (cap - idle - bandwidth * e_byte) / (bandwidth * e_flop))
    compute_floor = idle + peak * e_flop  # the power at the peak with no bytes at all
    high = peak * e_byte / (cap - compute_floor) if cap > compute_floor else None
    return CapWindow(power.gpu_name, cap, low, high, the_roof.ridge)


# --------------------------------------------------------------------------- a serving step


@dataclass(frozen=True)
class TokenEnergy:
    """A serving step's energy per token. SI: seconds, joules, watts.

    ``tokens`` are the step's new tokens (one per sequence for a decode step, the prompts' tokens
    for a prefill). ``fit`` is the step's feasibility (:class:`~roofline_lib.workloads.feasibility.Fit`):
    a step that does not fit is still priced, and ``__str__`` says DOES NOT FIT first.
    """

    gpu_name: str
    tokens: int
    seconds: float
    flop_joules: float
    byte_joules: float
    static_joules: float
    joules: float
    joules_per_token: float
    average_watts: float
    fit: Fit
    cap_watts: float | None = None  # the power cap the step ran under, if any

    @property
    def feasible(self) -> bool:
        return self.fit.feasible

    def __str__(self) -> str:
        text = (
            f"{self.tokens:,} tokens in {seconds_text(self.seconds)} on the {self.gpu_name}: {energy_text(self.joules)}, "
            f"{energy_text(self.joules_per_token)} per token "
            f"({_shares(self.flop_joules, self.byte_joules, self.static_joules)}), {power_text(self.average_watts)}"
            + ("" if self.cap_watts is None else f" under a {power_text(self.cap_watts)} cap")
        )
        return self.fit.first(text)


def _server_power(server: Server, power: PowerSpec | None, param: str = "server") -> PowerSpec:
    """The one place a server's figures are chosen: ``power`` (checked against the GPU ``server`` runs
    on) if given, else the registry's; a server on a bare roof has none of its own."""
    if power is not None:
        return _checked_power(power, server.device, param)
    if not server.device_name:
        raise ValueError(
            f"server runs on {server.roof.label}, not a registry GPU: its power is unknown "
            "(build it with rl.serving_server(cfg, 'H100'))"
        )
    if server.device_name not in {spec.name for spec in registry().values()}:  # a chip the reader described
        raise ValueError(
            f"{param} runs on the {server.device_name}, which has no power and energy figures in the registry: "
            "give them as power=rl.power_figures(gpu, tdp_watts=..., idle_watts=..., joules_per_hbm_byte=...)"
        )
    return power_spec(server.device_name)


def _capped_seconds(step: StepTime, dynamic_joules: float, power: PowerSpec, cap_watts) -> float:
    """Step: the step's seconds under a power cap. Its FLOPs and bytes need ``dynamic_joules`` whatever
    the clock; where that over the roof's time exceeds the cap, the clock drops until the power meets
    it, ``dynamic_joules / (cap - idle)`` (:func:`power_capped_flops_per_s`'s rate); the overhead is
    not slowed."""
    if cap_watts is None:
        return step.seconds
    cap = _cap(cap_watts, power)
    return max(step.roof_seconds, dynamic_joules / (cap - power.idle_watts)) + step.overhead_seconds


def step_energy(
    server: Server, step: StepTime, cap_watts: float | None = None, *, power: PowerSpec | None = None
) -> TokenEnergy:
    """The energy of one priced serving step (:func:`~roofline_lib.workloads.serving.step_time` and kin) on ``server``.

    FLOPs at the joules per FLOP of the server's own compute roof (:func:`joules_per_flop_at_tdp`
    with its peak), the step's bytes (weights once, amortised over the batch, plus the KV cache)
    at the joules per HBM byte, and static power for the step's seconds (overhead included).
    ``cap_watts`` caps the GPU's power: a step that would draw more runs longer
    (:func:`_capped_seconds`) and pays static power for the longer time. The model has no voltage
    scaling, so a cap never lowers the dynamic joules (a real GPU's lower clock runs at a lower
    voltage and saves some). ``power`` is the GPU's figures (:func:`power_figures`); None reads the
    registry's.
    """
    server = _as_server(server)
    if not isinstance(step, StepTime):
        raise TypeError(f"step must be a StepTime (rl.decode_step(server, ...)), got {type(step).__name__} {step!r}")
    power = _server_power(server, power)
    e_flop = joules_per_flop_at_tdp(  # the server's roof is its GPU's dense peak and HBM bandwidth
        power.tdp_watts,
        power.idle_watts,
        server.roof.peak_flops_per_s,
        server.roof.bytes_per_s,
        power.joules_per_hbm_byte,
    )
    flop_j = step.flops * e_flop
    byte_j = step.bytes_moved * power.joules_per_hbm_byte
    seconds = _capped_seconds(step, flop_j + byte_j, power, cap_watts)
    static_j = power.idle_watts * seconds
    total = flop_j + byte_j + static_j
    tokens = step.prefill_tokens + step.decode_tokens
    return TokenEnergy(
        gpu_name=power.gpu_name,
        tokens=tokens,
        seconds=seconds,
        flop_joules=flop_j,
        byte_joules=byte_j,
        static_joules=static_j,
        joules=total,
        joules_per_token=total / tokens,
        average_watts=total / seconds,
        fit=step.fit,
        cap_watts=None if cap_watts is None else float(cap_watts),
    )


def decode_energy(
    server: Server, batch, context_len, *, cap_watts: float | None = None, power: PowerSpec | None = None
) -> TokenEnergy:
    """Joules per token of one decode step: ``batch`` sequences, each attending to ``context_len`` keys.

    The weights are read once for the whole batch, so their energy per token falls as 1 / batch;
    the KV cache and the FLOPs grow with it, and static power is paid for the step's time.
    ``cap_watts`` caps the GPU's power and ``power`` gives its figures (see :func:`step_energy`).
    """
    return step_energy(server, decode_step(server, batch, context_len), cap_watts, power=power)


def prefill_energy(
    server: Server, prompt_len, batch=1, *, cap_watts: float | None = None, power: PowerSpec | None = None
) -> TokenEnergy:
    """Joules per prompt token of prefilling ``batch`` prompts of ``prompt_len`` tokens in one step,
    under a power cap of ``cap_watts`` if given, with the figures ``power`` (see :func:`step_energy`)."""
    return step_energy(server, prefill_step(server, prompt_len, batch=batch), cap_watts, power=power)


def request_energy(
    server: Server, batch, prompt_len, output_len, *, cap_watts: float | None = None, power: PowerSpec | None = None
) -> TokenEnergy:
    """Joules per output token with ``batch`` requests always in flight, each ``prompt_len`` + ``output_len`` tokens.

    Per request: its prefill (a step of its own) and ``output_len`` decode tokens, each a
    ``1 / batch`` share of a decode step at the mean context ``prompt_len + output_len // 2``
    (:func:`~roofline_lib.workloads.serving.steady_state`'s). Exactly the continuous policy's steady
    state; the other policies arrange the same work into other steps. ``fit`` is the steady
    state's: ``batch`` requests at their full length. ``cap_watts`` and ``power`` as for :func:`step_energy`.
    """
    server = _as_server(server)
    b = _positive_int(batch, "batch", "sequences")
    p = _positive_int(prompt_len, "prompt_len", "tokens")
    o = _positive_int(output_len, "output_len", "tokens")
    decode = decode_energy(server, b, p + o // 2, cap_watts=cap_watts, power=power)
    prefill = prefill_energy(server, p, cap_watts=cap_watts, power=power)
    share = o / b  # one request's share of the decode steps: o tokens of b per step
    parts = [prefill.flop_joules + share * decode.flop_joules, prefill.byte_joules + share * decode.byte_joules]
    static = prefill.static_joules + share * decode.static_joules
    seconds = prefill.seconds + share * decode.seconds
    total = sum(parts) + static
    return TokenEnergy(
        gpu_name=decode.gpu_name,
        tokens=o,
        seconds=seconds,
        flop_joules=parts[0],
        byte_joules=parts[1],
        static_joules=static,
        joules=total,
        joules_per_token=total / o,
        average_watts=total / seconds,
        fit=server_fit(server, ((p + o, b),), p, 1),
        cap_watts=decode.cap_watts,
    )


# --------------------------------------------------------------------------- speculative decoding


@dataclass(frozen=True)
class SpeculativeEnergy:
    """Speculative decoding's energy per kept token against plain decode's. SI: joules.

    One speculative step is ``gamma`` draft decode steps (``draft``, one of them) and one check
    of the target on ``gamma + 1`` tokens per sequence (``check``); it keeps
    ``speculation.expected_tokens`` tokens per sequence. ``plain`` is the target's own decode
    step at the same batch and context.
    """

    speculation: SpeculativeDecoding
    draft: TokenEnergy  # one draft decode step
    check: TokenEnergy  # the target's check of gamma + 1 tokens per sequence
    plain: TokenEnergy  # one plain decode step of the target
    draft_joules: float  # gamma draft steps
    check_joules: float
    joules_per_token: float

    @property
    def ratio(self) -> float:
        """Speculative over plain joules per token: below 1 speculation saves energy."""
        return self.joules_per_token / self.plain.joules_per_token

    @property
    def fit(self) -> Fit:
        """The target and its draft together on the target's device (the speculation's fit)."""
        return self.speculation.fit

    @property
    def feasible(self) -> bool:
        return self.fit.feasible

    def __str__(self) -> str:
        s = self.speculation
        text = (
            f"speculative decoding, alpha {s.alpha:g}, gamma {s.gamma}, batch {s.batch}: "
            f"{energy_text(self.joules_per_token)} per token (drafts {energy_text(self.draft_joules)}, check "
            f"{energy_text(self.check_joules)} per step, {s.expected_tokens:.3g} tokens kept per sequence), "
            f"{self.ratio:.2f} of plain decode's {energy_text(self.plain.joules_per_token)}"
        )
        return self.fit.first(text)


def speculative_energy(
    target: Server, draft: Server, batch, context_len, alpha, gamma, *, power: PowerSpec | None = None
) -> SpeculativeEnergy:
    """Joules per token of speculative decoding: ``draft`` proposes ``gamma`` tokens that ``target`` checks.

    Built on :func:`~roofline_lib.workloads.serving.speculative_decoding`'s step, each part priced
    by :func:`step_energy`:

        drafts   = gamma * (one draft decode step of batch sequences at context_len)
        check    = the target on gamma + 1 tokens per sequence, after context_len - 1 cached keys
        per token = (drafts + check) / (batch * expected tokens per sequence)

    The check computes all ``gamma + 1`` tokens and keeps only the accepted ones, so the
    rejected tokens' FLOPs are paid for in full. The target and the draft share one GPU, so one
    ``power`` (:func:`power_figures`) prices both; None reads the registry's.
    """
    target, draft = _as_server(target, "target"), _as_server(draft, "draft")
    for server, param in ((target, "target"), (draft, "draft")) if power is not None else ():
        _server_power(server, power, param)  # one GPU: the figures must be both servers' card's
    speculation = speculative_decoding(target, draft, batch, context_len, alpha, gamma)
    b, c, g = speculation.batch, int(context_len), speculation.gamma
    draft_step = decode_energy(draft, b, c, power=power)
    check = step_energy(target, step_time(target, [Chunk(g + 1, c - 1, g + 1)] * b), power=power)  # gamma + 1 each
    drafts = g * draft_step.joules
    per_token = (drafts + check.joules) / (b * speculation.expected_tokens)
    return SpeculativeEnergy(
        speculation=speculation,
        draft=draft_step,
        check=check,
        plain=decode_energy(target, b, c, power=power),
        draft_joules=drafts,
        check_joules=check.joules,
        joules_per_token=per_token,
    )
