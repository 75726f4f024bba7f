"""Energy measured live: read a hardware energy counter before and after a callable.

A counter is anything with ``name``, ``readings()`` (joules so far, one reading per domain: a
GPU, a CPU package) and ``wrap_joules`` (per domain, the value past which it rolls over to 0;
None for one that never does). Two implementations:

* :class:`NVMLCounter`: NVIDIA's total energy counter, ``nvmlDeviceGetTotalEnergyConsumption``
  (millijoules since the driver loaded; Volta and newer), through ``pynvml`` (the
  ``nvidia-ml-py`` package), imported only when a counter is made;
* :class:`RAPLCounter`: Intel's RAPL package counters, ``/sys/class/powercap/intel-rapl:N/energy_uj``
  (microjoules), which wrap at ``max_energy_range_uj``.

:func:`measure_energy` times a callable between two readings, and :func:`measure_repeated` repeats
one call of CUDA work for long enough that a counter resolves it (:func:`cuda_energy_counter`
finds the counter of CUDA's device 0 by its UUID); :func:`energy_between` turns two
readings into joules, counting one wrap of a counter that wraps and refusing a counter that goes
backwards. Where neither counter exists, :func:`find_counter` raises :class:`NoEnergyCounter`
saying so: the course's CPU machines have neither, and the chapter then shows a recorded figure.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..core.checks import _positive
from ..core.formatting import energy_text, power_text
from ..core.formatting import seconds as seconds_text

__all__ = [
    "NoEnergyCounter",
    "NVMLCounter",
    "RAPLCounter",
    "find_counter",
    "energy_between",
    "EnergyMeasurement",
    "measure_energy",
    "nvml_index",
    "cuda_energy_counter",
    "RepeatedEnergy",
    "measure_repeated",
]

#: Where Linux exposes RAPL's energy counters.
POWERCAP = Path("/sys/class/powercap")


class NoEnergyCounter(RuntimeError):
    """This machine has no energy counter the course can read."""


class NVMLCounter:
    """Every NVIDIA GPU's total energy counter through NVML (``pynvml``, from ``nvidia-ml-py``), in joules."""

    def __init__(self, device_indices=None):
        try:
            import pynvml
        except ImportError:
            raise NoEnergyCounter("no NVML: the pynvml module (pip install nvidia-ml-py) is not installed") from None
        try:
            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError as exc:
            raise NoEnergyCounter(f"no NVML device: {exc}") from None
        indices = range(count) if device_indices is None else device_indices
        self._nvml = pynvml
        self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in indices]
        if not self._handles:
            raise NoEnergyCounter("no NVML device: NVML sees no GPU")
        self.name = f"NVML total energy of {len(self._handles)} GPU(s)"
        self.wrap_joules = tuple(None for _ in self._handles)  # a 64-bit millijoule count: never wraps in practice

    def readings(self) -> tuple[float, ...]:
        """Joules each GPU has used since the driver loaded (the counter is in millijoules)."""
        return tuple(self._nvml.nvmlDeviceGetTotalEnergyConsumption(h) / 1e3 for h in self._handles)


class RAPLCounter:
    """Intel RAPL's package energy counters under ``/sys/class/powercap`` (``intel-rapl:N``), in joules."""

    def __init__(self, root: Path | None = None):
        root = POWERCAP if root is None else Path(root)
        domains = sorted(p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1)  # packages, not subzones
        if not domains:
            raise NoEnergyCounter(f"no RAPL: {root} has no intel-rapl:N package domains")
        unreadable = [d for d in domains if not _readable(d / "energy_uj")]
        if unreadable:
            raise NoEnergyCounter(
                f"no RAPL: {unreadable[0] / 'energy_uj'} is not readable by this user (root only on recent kernels)"
            )
        self._domains = domains
        self.name = f"RAPL energy of {len(domains)} CPU package(s)"
        self.wrap_joules = tuple(int((d / "max_energy_range_uj").read_text()) / 1e6 for d in domains)

    def readings(self) -> tuple[float, ...]:
        """Joules each package's counter holds now (it counts microjoules and wraps at its range)."""
        return tuple(int((d / "energy_uj").read_text()) / 1e6 for d in self._domains)


def _readable(path: Path) -> bool:
    try:
        path.read_text()
    except OSError:
        return False
    return True


def find_counter() -> NVMLCounter | RAPLCounter:
    """The energy counter this machine has: NVML's if a GPU answers, else RAPL's, else :class:`NoEnergyCounter`."""
    reasons = []
    for make in (NVMLCounter, RAPLCounter):
        try:
            return make()
        except NoEnergyCounter as exc:
            reasons.append(str(exc))
    raise NoEnergyCounter(
        "no energy counter on this machine (no NVML device, no /sys/class/powercap): " + "; ".join(reasons)
    )


def energy_between(before, after, wrap_joules) -> float:
    """Joules used between two readings of one counter (tuples, one reading per domain), summed over domains.

    A domain whose reading fell has wrapped once if it wraps (``after + wrap - before``; more
    than one wrap between the readings cannot be seen); a domain that never wraps and reads less
    than before went backwards, and is refused.
    """
    before, after, wraps = (
        _per_domain(v, n) for v, n in ((before, "before"), (after, "after"), (wrap_joules, "wrap_joules"))
    )
    if not len(before) == len(after) == len(wraps):
        raise ValueError(
            f"before, after and wrap_joules must hold one value per domain, got {len(before)}, {len(after)} and {len(wraps)}"
        )
    total = 0.0
    for i, (b, a, wrap) in enumerate(zip(before, after, wraps)):
        b = _positive(b, "before", "joules", allow_zero=True)
        a = _positive(a, "after", "joules", allow_zero=True)
        if a >= b:
            total += a - b
        elif wrap is not None and b <= _positive(wrap, "wrap_joules", "joules"):
            total += a + wrap - b  # rolled over past its range once
        else:
            raise ValueError(
                f"the energy counter went backwards in domain {i}: after={a:g} J < before={b:g} J, "
                "and it does not wrap (was the driver reloaded, or the GPU reset?)"
            )
    return total


def _per_domain(value, name: str) -> tuple:
    """``value`` as a tuple of one entry per domain; a string or a non-sequence is refused by name."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(
            f"{name} must be a sequence with one value in joules per domain, got {type(value).__name__} {value!r}"
        )
    return tuple(value)


@dataclass(frozen=True)
class EnergyMeasurement:
    """What a callable used between two readings of a counter. SI: joules, seconds."""

    joules: float
    seconds: float
    counter: str

    @property
    def average_watts(self) -> float:
        return self.joules / self.seconds

    def __str__(self) -> str:
        return (
            f"{energy_text(self.joules)} in {seconds_text(self.seconds)}, {power_text(self.average_watts)} on average "
            f"({self.counter})"
        )


def measure_energy(fn: Callable[[], object], counter=None) -> EnergyMeasurement:
    """Call ``fn()`` once between two readings of ``counter`` (default: :func:`find_counter`'s).

    The counter covers the whole device, not only ``fn``'s work: anything else running meanwhile
    is counted too, and its static power is paid for the whole call. GPU work is asynchronous:
    ``fn`` must wait for it (``torch.cuda.synchronize()``) or the second reading comes too early.
    A counter advances in steps (its hardware samples power, not every joule), so time something that
    takes at least a second: :func:`measure_repeated` does so for one call of CUDA work.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a callable taking no arguments, got {type(fn).__name__} {fn!r}")
    counter = find_counter() if counter is None else counter
    if not all(hasattr(counter, a) for a in ("readings", "wrap_joules", "name")):
        raise TypeError(
            f"counter must have readings(), wrap_joules and name (an NVMLCounter, a RAPLCounter), got {counter!r}"
        )
    before = counter.readings()
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    after = counter.readings()
    return EnergyMeasurement(energy_between(before, after, counter.wrap_joules), seconds, counter.name)


# --------------------------------------------------------------------------- a CUDA device's work, repeated

#: Calls launched between two synchronizes when work is repeated: the loop's clock, at no cost to the GPU.
BATCH_SECONDS = 0.1


def nvml_index(uuid: str) -> int:
    """NVML's index of the GPU whose UUID is ``uuid`` (as torch reports it, with or without ``GPU-``).

    NVML numbers GPUs by PCI bus; CUDA may number them otherwise (``CUDA_DEVICE_ORDER``,
    ``CUDA_VISIBLE_DEVICES``), so the counter of CUDA's device 0 is found by its UUID, not its index.
    """
    import pynvml

    pynvml.nvmlInit()
    want = uuid.lower().removeprefix("gpu-")
    for i in range(pynvml.nvmlDeviceGetCount()):
        found = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(i))
        found = found.decode() if isinstance(found, bytes) else found  # older bindings answer bytes
        if want and found.lower().removeprefix("gpu-") == want:
            return i
    raise NoEnergyCounter(f"no NVML device has torch's device 0's UUID {uuid!r}")


def cuda_energy_counter() -> NVMLCounter:
    """NVML's energy counter of torch's CUDA device 0, or :class:`NoEnergyCounter` saying why there is none."""
    import torch

    uuid = str(getattr(torch.cuda.get_device_properties(0), "uuid", "") or "")
    try:
        index = nvml_index(uuid)
    except ImportError:
        raise NoEnergyCounter("no NVML: the pynvml module (pip install nvidia-ml-py) is not installed") from None
    except NoEnergyCounter:
        raise
    except Exception as err:  # noqa: BLE001 - pynvml's NVMLError and kin: no counter, and why
        raise NoEnergyCounter(f"no NVML device: {err}") from None
    return NVMLCounter([index])


@dataclass(frozen=True)
class RepeatedEnergy:
    """One CUDA call repeated back to back between two counter readings: the measurement and how it was made."""

    measurement: EnergyMeasurement
    repetitions: int
    batch: int  # calls launched between two synchronizes
    one_call: str  # how one call was timed (measure.time_fn's method)

    @property
    def method(self) -> str:
        return (
            f"{self.repetitions} calls back to back in batches of {self.batch} between two counter readings "
            f"(one call: {self.one_call})"
        )


def measure_repeated(fn: Callable[[], object], seconds, counter) -> RepeatedEnergy:
    """``fn`` (one call of CUDA work) repeated for at least ``seconds`` between two readings of ``counter``.

    A counter advances in coarse steps and covers the whole device, so one kernel is too short to
    read: the calls go back to back, in batches of about :data:`BATCH_SECONDS` (one timed call sizes
    them), with a synchronize after each so that the loop knows when the time is up and the second
    reading comes after the last call has finished. The totals are one call's counts times
    ``repetitions``.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a callable taking no arguments, got {type(fn).__name__} {fn!r}")
    budget = _positive(seconds, "seconds", "seconds")
    import torch

    from .measure import time_fn

    once = time_fn(fn, device="cuda")
    batch = max(1, math.ceil(BATCH_SECONDS / once.median_s))
    reps = 0

    def run():
        nonlocal reps
        start = time.perf_counter()
        while reps == 0 or time.perf_counter() - start < budget:
            for _ in range(batch):
                fn()
            torch.cuda.synchronize()
            reps += batch

    torch.cuda.synchronize()  # nothing queued before the first reading
    return RepeatedEnergy(measure_energy(run, counter), reps, batch, once.method)
