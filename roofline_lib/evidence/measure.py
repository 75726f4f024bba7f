"""Measurement: time a function honestly, measure this machine's two roofs, place kernels on them.

Three tools, in the order a measured example uses them:

* :func:`time_fn` times a callable on the device you name (``device="cpu"`` or ``"cuda"``;
  there is no default, so work on CPU tensors is never timed with GPU events just because a
  GPU is visible). On a CUDA GPU it hands the work to ``triton.testing.do_bench`` (CUDA
  events, L2 flushed between repetitions, milliseconds converted to seconds here). On the CPU
  it warms up, repeats many times, reports the median, and can *rotate* through several
  argument sets so that consecutive calls touch different memory and the last-level cache does
  not flatter the result. The :class:`Timing` it returns carries its device.
* :func:`measure_ceilings` measures the machine in front of you: streaming bandwidth (bytes/s,
  the better of a copy and an add, reads plus writes counted, on buffers far larger than the
  last-level cache; called "copy" in labels) and matmul throughput
  (FLOP/s, fp32 on the CPU, bf16 on a GPU; 1 multiply-add = 2 FLOP), in a bounded time.
* :func:`measured_point` puts a kernel timed here next to its prediction on those measured
  roofs, and refuses a measurement that beats them (:class:`~roofline_lib.core.roofline.ImplausibleMeasurement`)
  or one timed on another device than the roofs were measured on.

The CUDA side touches the GPU through three private primitives only (``_time_cuda``,
``_cuda_stream_timings``, ``_cuda_matmul_timing``) plus ``torch.cuda``'s queries; the
fake-GPU test of the course replaces exactly those. :func:`gpu_identity` reads the provenance
a GPU number must carry (name, driver, CUDA, torch and triton versions), from ``nvidia-smi``
where it can.

torch is imported inside the functions that need it, so ``from roofline_lib.evidence.measure import
MeasuredCeilings`` stays light (the plots and the command line rely on that).
"""

from __future__ import annotations

import gc
import math
import numbers
import os
import platform
import re
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from ..core.checks import _positive, _positive_int
from ..core.formatting import seconds as _fmt_seconds  # diagnose still imports the name from here
from ..core.hardware import GIB, bytes_per_element
from ..core.ops import gemm
from ..core.roofline import PLAUSIBILITY_TOLERANCE, Roof

__all__ = [
    "DEVICES",
    "MAX_MATMUL_N",
    "UNKNOWN",
    "GPUIdentity",
    "MatmulReading",
    "MeasuredCeilings",
    "MeasuredKernel",
    "StreamReading",
    "Timing",
    "best_of",
    "device_label",
    "gpu_identity",
    "has_cuda",
    "matmul_readings",
    "measure_ceilings",
    "measured_point",
    "parse_smi_rows",
    "resolve_device",
    "stream_readings",
    "time_fn",
]

#: The devices a timing can name.
DEVICES = ("cpu", "cuda")

_MB = 1e6
_DEFAULT_CPU_BUFFER_BYTES = 256 * _MB  # far beyond any CPU's last-level cache (tens of MB)
_DEFAULT_GPU_BUFFER_BYTES = 1024 * _MB  # far beyond a GPU's L2 (40-126 MB)
_FALLBACK_CACHE_BYTES = 32 * 2**20  # assumed last-level cache when the OS does not say
_MAX_ROTATION_SETS = 64  # never build more argument sets than this from a factory
_MAX_ROTATION_BYTES = 2e9  # ... nor more than 2 GB of them
_CPU_MATMUL_MIN_N = 256  # smaller products are dominated by call overhead
_GPU_MATMUL_N = 8192  # 2 * 8192**3 = 1.1 TFLOP: about a millisecond on an H100

#: Largest square matmul side ``measure_ceilings`` accepts as ``matmul_n``, per device:
#: 2 * 4096**3 = 137 GFLOP is over a second on a laptop core; 2 * 32768**3 = 70 TFLOP is about
#: 0.1 s on an H100, with three bf16 operands of 2 GiB each.
MAX_MATMUL_N = MappingProxyType({"cpu": 4096, "cuda": 32768})
_CPU_MATMUL_MAX_N = MAX_MATMUL_N["cpu"]
_SMI_TIMEOUT_S = 30  # nvidia-smi answers in well under a second; a hung driver must not hang us


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Timing:
    """How long one call of a function took, in seconds, over ``reps`` timed calls.

    ``median_s`` is the number to use; ``min_s`` and ``max_s`` show the spread.
    ``method`` says how the times were taken, ``device`` where ("cpu" or "cuda").
    """

    median_s: float
    min_s: float
    max_s: float
    reps: int
    method: str
    device: str = "cpu"

    def __str__(self) -> str:
        return (
            f"median {_fmt_seconds(self.median_s)} (min {_fmt_seconds(self.min_s)}, "
            f"max {_fmt_seconds(self.max_s)}) over {self.reps} reps on {device_label(self.device)}; "
            f"{self.method}"
        )


@dataclass(frozen=True)
class MeasuredCeilings:
    """This machine's two roofs as measured here, in SI units.

    ``bytes_per_s`` counts bytes read plus bytes written by the faster of a large copy and a
    large add (STREAM-style); ``flops_per_s`` is
    the best square-matmul rate in ``precision`` (1 multiply-add = 2 FLOP).
    """

    bytes_per_s: float
    flops_per_s: float
    device_name: str
    precision: str
    n_threads: int
    date: str  # ISO 8601, UTC
    torch_version: str
    device: str = "cpu"  # "cpu" or "cuda"
    matmul_n: int = 0  # side of the square matmul that set flops_per_s
    buffer_bytes: float = 0.0  # size of each copy buffer that set bytes_per_s

    @property
    def label(self) -> str:
        """Which device these roofs belong to, for titles and legends: ``"Intel Xeon (CPU)"``."""
        return f"{self.device_name} ({device_label(self.device)})"

    @property
    def roof(self) -> Roof:
        """These ceilings as a :class:`~roofline_lib.core.roofline.Roof`: ridge, ceiling, time, guard."""
        return Roof.measured(self)

    @property
    def ridge(self) -> float:
        """Intensity (FLOP/byte) where this machine's measured roofs meet (:attr:`Roof.ridge`)."""
        return self.roof.ridge

    def attainable_flops_per_s(self, intensity: float) -> float:
        """``min(flops_per_s, bytes_per_s * intensity)`` on the measured roofs (asks the roof)."""
        return self.roof.attainable_flops_per_s(intensity)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable record (the form kept under book/data/measurements)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> MeasuredCeilings:
        """Rebuild a record written by :meth:`to_dict`; unknown keys are an error."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(record) - names)
        if unknown:
            raise ValueError(f"unknown field(s) in a MeasuredCeilings record: {', '.join(unknown)}")
        ceilings = cls(**record)
        _positive(ceilings.bytes_per_s, "bytes_per_s", "bytes per second")
        _positive(ceilings.flops_per_s, "flops_per_s", "FLOP per second")
        return ceilings

    def __str__(self) -> str:
        threads = f"{self.n_threads} threads, " if self.device == "cpu" else ""
        return (
            f"{device_label(self.device)} {self.device_name} ({threads}{self.precision}): "
            f"copy {self.bytes_per_s / 1e9:.3g} GB/s, matmul {self.flops_per_s / 1e9:.3g} GFLOP/s, "
            f"ridge {self.ridge:.3g} FLOP/B"
        )


@dataclass(frozen=True)
class MeasuredKernel:
    """A kernel timed on this machine, beside the time its measured roofs predict.

    ``predicted_seconds = max(flops / flops_per_s, bytes_moved / bytes_per_s)`` on the
    :class:`MeasuredCeilings`; ``fraction_of_prediction`` is predicted / measured time, so 1.0
    means the kernel runs at its roof and 0.25 means four times slower than the roof allows.
    """

    name: str
    flops: float
    bytes_moved: float
    seconds: float
    predicted_seconds: float
    intensity: float  # FLOP/byte
    achieved_flops_per_s: float
    achieved_bytes_per_s: float
    ceiling_flops_per_s: float  # the measured roof at this intensity
    bound: str  # "memory" or "compute", against the measured ridge

    @property
    def fraction_of_prediction(self) -> float:
        return self.predicted_seconds / self.seconds

    def __str__(self) -> str:
        return (
            f"{self.name}: {_fmt_seconds(self.seconds)} measured, "
            f"{_fmt_seconds(self.predicted_seconds)} predicted ({self.bound}-bound, "
            f"intensity {self.intensity:.3g} FLOP/B); "
            f"{self.fraction_of_prediction:.0%} of the measured roof"
        )


# --------------------------------------------------------------------------- devices


def has_cuda() -> bool:
    """True when torch is installed and sees a CUDA GPU."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def device_label(device) -> str:
    """``"cpu"`` -> ``"CPU"``, ``"cuda"`` -> ``"GPU"``: the word a label or a title uses.

    ``device`` is a device name or a torch.device (its ``type``); another name is returned as it is.
    """
    name = str(device) if isinstance(getattr(device, "type", None), str) else device  # a torch.device
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"device must be a device name such as 'cpu' or 'cuda', got {type(device).__name__} {device!r}")
    return {"cpu": "CPU", "cuda": "GPU"}.get(name, name)


def resolve_device(device) -> str:
    """The device a timing was asked for, checked: "cpu" or "cuda" (a GPU must be present).

    There is no default. Guessing "cuda" whenever a GPU is visible once timed work on CPU tensors
    with GPU events (the host-side work finished before the events, and read as about 0 s).
    """
    if device is None:
        raise TypeError(
            "device must be named: 'cpu' for work on CPU tensors, 'cuda' for work on the GPU "
            "(there is no default, so CPU work is never timed with GPU events)"
        )
    kind = getattr(device, "type", device)  # a torch.device carries .type
    if not isinstance(kind, str):
        raise TypeError(f"device must be 'cpu', 'cuda' or a torch.device, got {device!r}")
    kind = kind.split(":")[0].strip().lower()
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if kind == "cuda" and not has_cuda():
        raise ValueError(f"device={device!r} asked for a CUDA GPU, but torch sees none")
    return kind


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _last_level_cache_bytes() -> int:
    """Size of the CPU's last-level cache as the OS reports it; 32 MiB when it does not."""
    root = "/sys/devices/system/cpu/cpu0/cache"
    best_level, best_size = -1, 0
    try:
        entries = os.listdir(root)
    except OSError:
        return _FALLBACK_CACHE_BYTES
    for entry in entries:
        if not entry.startswith("index"):
            continue
        try:
            with open(os.path.join(root, entry, "level"), encoding="utf-8") as fh:
                level = int(fh.read().strip())
            with open(os.path.join(root, entry, "size"), encoding="utf-8") as fh:
                size = _parse_cache_size(fh.read().strip())
        except (OSError, ValueError):
            continue
        if level > best_level or (level == best_level and size > best_size):
            best_level, best_size = level, size
    return best_size or _FALLBACK_CACHE_BYTES


def _parse_cache_size(text: str) -> int:
    """'32768K' -> 33554432; the kernel writes K or M suffixes in powers of two."""
    scale = {"K": 2**10, "M": 2**20, "G": GIB}
    if text and text[-1].upper() in scale:
        return int(text[:-1]) * scale[text[-1].upper()]
    return int(text)


def _cache_bytes(device: str) -> int:
    if device == "cuda":
        import torch

        return int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or 50 * 2**20
    return _last_level_cache_bytes()


# --------------------------------------------------------------------------- timing


def _as_call(argument_set) -> tuple[tuple, dict]:
    """A tuple is positional arguments, a dict keyword arguments, anything else one argument."""
    if isinstance(argument_set, tuple):
        return argument_set, {}
    if isinstance(argument_set, dict):
        return (), argument_set
    return (argument_set,), {}


def _nbytes(obj) -> int:
    """Bytes held by the tensors and arrays inside ``obj`` (nested tuples, lists, dicts)."""
    if hasattr(obj, "element_size") and hasattr(obj, "nelement"):  # a torch.Tensor
        return int(obj.element_size() * obj.nelement())
    if hasattr(obj, "nbytes") and not isinstance(obj, (bytes, bytearray)):  # a numpy array
        return int(obj.nbytes)
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(v) for v in obj)
    return 0


def _argument_sets(rotate, device: str) -> list[tuple[tuple, dict]]:
    """Turn ``rotate`` into the list of (args, kwargs) the timing loop cycles through.

    A factory is called up front, enough times that the sets together hold at least twice
    the last-level cache (at least 2 sets, at most 64 or 2 GB), so that by the time a set
    comes round again it has been evicted.
    """
    if rotate is None:
        return [((), {})]
    if callable(rotate):
        first = rotate()
        size = _nbytes(first)
        if size == 0:
            n_sets = 2
        else:
            wanted = math.ceil(2 * _cache_bytes(device) / size) + 1
            affordable = max(2, int(_MAX_ROTATION_BYTES // size))
            n_sets = max(2, min(wanted, _MAX_ROTATION_SETS, affordable))
        sets = [first] + [rotate() for _ in range(n_sets - 1)]
        return [_as_call(s) for s in sets]
    if isinstance(rotate, (str, bytes)) or not isinstance(rotate, Sequence):
        raise TypeError(
            f"rotate must be a list of argument sets or a factory returning one, got {type(rotate).__name__}"
        )
    if len(rotate) == 0:
        raise ValueError("rotate must hold at least one argument set, got an empty list")
    return [_as_call(s) for s in rotate]


def _count(value, name: str, *, allow_zero: bool) -> int:
    if allow_zero and isinstance(value, numbers.Integral) and not isinstance(value, bool) and value == 0:
        return 0
    return _positive_int(value, name, "calls")


def time_fn(
    fn: Callable,
    *,
    device=None,
    warmup: int = 3,
    reps: int = 30,
    rotate=None,
) -> Timing:
    """Time ``fn`` and return a :class:`Timing` in seconds.

    ``rotate`` feeds ``fn`` its arguments: ``None`` calls ``fn()``; a list of argument sets is
    cycled in order (a tuple is positional arguments, a dict keyword arguments, anything else a
    single argument); a factory (a zero-argument callable returning one argument set) is called
    up front until the sets together are at least twice the last-level cache. Building the
    sets is never timed.

    ``device`` must be named: ``"cpu"`` for work on CPU tensors, ``"cuda"`` for GPU work.
    On CUDA the timing is ``triton.testing.do_bench``,
    which flushes the L2 between repetitions and chooses its own counts from a 25 ms warm-up
    and 100 ms of repetitions; ``warmup`` and ``reps`` are the CPU path's counts of untimed and
    timed calls. The CPU path times each call with ``time.perf_counter`` with the garbage
    collector paused, and reports the median.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__} {fn!r}")
    n_warmup = _count(warmup, "warmup", allow_zero=True)
    n_reps = _count(reps, "reps", allow_zero=False)
    kind = resolve_device(device)
    sets = _argument_sets(rotate, kind)
    if kind == "cuda":
        return _time_cuda(fn, sets)
    return _time_cpu(fn, sets, n_warmup, n_reps)


def _time_cpu(fn, sets, n_warmup: int, n_reps: int) -> Timing:
    n_sets = len(sets)
    times: list[float] = []
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a collection inside a timed call is noise, not the kernel
    try:
        for i in range(n_warmup):
            args, kwargs = sets[i % n_sets]
            fn(*args, **kwargs)
        for i in range(n_reps):
            args, kwargs = sets[(n_warmup + i) % n_sets]
            start = time.perf_counter()
            fn(*args, **kwargs)
            times.append(time.perf_counter() - start)
    finally:
        if gc_was_enabled:
            gc.enable()
    rotation = f", rotating {n_sets} argument sets" if n_sets > 1 else ""
    return Timing(
        median_s=statistics.median(times),
        min_s=min(times),
        max_s=max(times),
        reps=n_reps,
        method=f"CPU time.perf_counter, {n_warmup} warm-up calls, median of {n_reps}{rotation}",
        device="cpu",
    )


def _time_cuda(fn, sets) -> Timing:  # pragma: no cover - needs a GPU
    """A CUDA primitive: ``fn`` cycled through ``sets`` under ``do_bench``, in seconds."""
    from triton.testing import do_bench

    n_sets = len(sets)
    counter = [0]

    def call():
        args, kwargs = sets[counter[0] % n_sets]
        counter[0] += 1
        return fn(*args, **kwargs)

    times_ms = do_bench(call, return_mode="all")
    times_s = [t / 1e3 for t in times_ms]  # do_bench reports milliseconds
    return Timing(
        median_s=statistics.median(times_s),
        min_s=min(times_s),
        max_s=max(times_s),
        reps=len(times_s),
        method="triton.testing.do_bench (CUDA events, L2 flushed between reps)",
        device="cuda",
    )


# --------------------------------------------------------------------------- ceilings


@dataclass(frozen=True)
class StreamReading:
    """One streaming kernel over fp32 buffers of ``buffer_bytes`` each, and its timing.

    ``kernel`` is "copy" (``dst.copy_(src)``: read + write, ``bytes_moved = 2 * buffer_bytes``)
    or "add" (``torch.add(a, b, out=c)``: two reads + one write, ``3 * buffer_bytes``).
    """

    kernel: str
    buffer_bytes: float
    bytes_moved: float
    timing: Timing

    @property
    def best_bytes_per_s(self) -> float:
        """The fastest repetition's rate: what a roof is made of."""
        return self.bytes_moved / self.timing.min_s

    @property
    def median_bytes_per_s(self) -> float:
        return self.bytes_moved / self.timing.median_s


@dataclass(frozen=True)
class MatmulReading:
    """One square ``n x n x n`` product in ``precision`` and its timing (1 multiply-add = 2 FLOP)."""

    n: int
    precision: str
    timing: Timing

    @property
    def flops(self) -> int:
        return gemm(self.n, self.n, self.n).flops

    @property
    def best_flops_per_s(self) -> float:
        return self.flops / self.timing.min_s

    @property
    def median_flops_per_s(self) -> float:
        return self.flops / self.timing.median_s


_STREAM_KERNELS = {"copy": 2, "add": 3}  # buffers moved per call: copy reads 1, writes 1; add reads 2, writes 1


def stream_readings(device, *, buffer_bytes: float | None = None, seconds: float = 1.0) -> tuple[StreamReading, ...]:
    """Time the two streaming kernels, copy and add, on fp32 buffers of ``buffer_bytes`` each.

    The memory roof is the better of the two (STREAM reports the best of its kernels):
    ``max(r.best_bytes_per_s for r in readings)``. Buffers default to 256 MB on a CPU and 1 GB
    on a GPU, far beyond the last-level cache. On the CPU each kernel gets half of ``seconds``
    (at least 3 repetitions); on a GPU ``do_bench`` sets its own counts.

    On a CPU a write to memory that is not in cache first reads the line (write-allocate), which
    the count does not see; it costs copy a larger share of its traffic (1 hidden read per 2
    counted) than add (1 per 3), so add often shows the higher counted rate. Taking the better of
    the two means a streaming kernel timed later cannot beat the roof through that accounting.
    """
    kind = resolve_device(device)
    if buffer_bytes is None:
        buffer_bytes = _DEFAULT_GPU_BUFFER_BYTES if kind == "cuda" else _DEFAULT_CPU_BUFFER_BYTES
    buf = _positive(buffer_bytes, "buffer_bytes", "bytes")
    budget_s = _positive(seconds, "seconds", "seconds")
    width = bytes_per_element("fp32")  # the stream kernels run on fp32 buffers
    n_elems = max(1, int(buf // width))
    if kind == "cuda":
        timings = _cuda_stream_timings(n_elems)
    else:
        timings = _cpu_stream_timings(n_elems, budget_s)
    nbytes = width * n_elems
    return tuple(
        StreamReading(kernel=k, buffer_bytes=nbytes, bytes_moved=_STREAM_KERNELS[k] * nbytes, timing=timings[k])
        for k in _STREAM_KERNELS
    )


def _cpu_stream_timings(n_elems: int, budget_s: float) -> dict[str, Timing]:
    import torch

    a = torch.ones(n_elems, dtype=torch.float32)  # first touch: pages are real
    b = torch.ones(n_elems, dtype=torch.float32)
    c = torch.zeros(n_elems, dtype=torch.float32)
    kernels = {"copy": lambda: c.copy_(a), "add": lambda: torch.add(a, b, out=c)}
    out = {}
    for label, fn in kernels.items():
        fn()  # warm-up
        deadline = time.perf_counter() + budget_s / len(kernels)
        times: list[float] = []
        while len(times) < 3 or (time.perf_counter() < deadline and len(times) < 200):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        out[label] = Timing(
            median_s=statistics.median(times),
            min_s=min(times),
            max_s=max(times),
            reps=len(times),
            method=f"CPU time.perf_counter, 1 warm-up call, {len(times)} timed calls",
            device="cpu",
        )
    return out


def _cuda_stream_timings(n_elems: int) -> dict[str, Timing]:  # pragma: no cover - needs a GPU
    """A CUDA primitive: copy and add over three fp32 buffers of ``n_elems`` on the GPU."""
    import torch

    a = torch.ones(n_elems, dtype=torch.float32, device="cuda")
    b = torch.ones(n_elems, dtype=torch.float32, device="cuda")
    c = torch.zeros(n_elems, dtype=torch.float32, device="cuda")
    return {
        "copy": time_fn(lambda: c.copy_(a), device="cuda"),
        "add": time_fn(lambda: torch.add(a, b, out=c), device="cuda"),
    }


def _matmul_operands(torch, n: int, precision: str, device: str = "cuda"):
    """``(fn, label)``: a closure computing one ``n x n x n`` product in ``precision`` on ``device``."""
    if precision == "bf16":
        a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
        return (lambda: a @ b), "torch.matmul, bf16 in and out"
    if precision == "fp8":
        a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)  # row-major, as _scaled_mm wants
        b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()  # column-major
        one = torch.tensor(1.0, device=device)
        return (
            lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16, use_fast_accum=True),
            "torch._scaled_mm, e4m3 in, bf16 out, per-tensor scales, fast accumulation",
        )
    raise ValueError(f"precision must be 'bf16' or 'fp8' for a GPU matmul, got {precision!r}")


def _cuda_matmul_timing(n: int, precision: str) -> Timing:  # pragma: no cover - needs a GPU
    """A CUDA primitive: one square product of side ``n`` in ``precision`` under ``do_bench``."""
    import torch

    fn, label = _matmul_operands(torch, n, precision)
    timing = time_fn(fn, device="cuda")
    return replace(timing, method=f"{label}; {timing.method}")


def matmul_readings(device, sizes: Sequence[int], precision: str = "bf16") -> tuple[MatmulReading, ...]:
    """Time one square product per side in ``sizes`` on ``device`` ("cuda": bf16 or fp8)."""
    kind = resolve_device(device)
    if kind != "cuda":
        raise ValueError(f"matmul_readings times GPU products; on {device!r} use measure_ceilings")
    if precision not in ("bf16", "fp8"):
        raise ValueError(f"precision must be 'bf16' or 'fp8' for a GPU matmul, got {precision!r}")
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence) or not sizes:
        raise TypeError(f"sizes must be a non-empty list of matrix sides in rows, got {sizes!r}")
    out = []
    for n in sizes:
        side = _matmul_side(n, kind)
        out.append(MatmulReading(n=side, precision=precision, timing=_cuda_matmul_timing(side, precision)))
    return tuple(out)


def _matmul_side(n, kind: str) -> int:
    side = _positive_int(n, "matmul_n", "rows of a square matrix")
    limit = MAX_MATMUL_N[kind]
    if side > limit:
        raise ValueError(f"matmul_n must be at most {limit} rows on {device_label(kind)} ({kind}), got {n!r}")
    return side


def measure_ceilings(
    seconds: float = 5.0,
    device=None,
    progress: Callable[[str], Any] | None = None,
    *,
    buffer_bytes: float | None = None,
    matmul_n: int | None = None,
) -> MeasuredCeilings:
    """Measure the copy bandwidth and matmul throughput of ``device`` within about ``seconds``.

    ``device`` must be named: ``"cpu"`` for the roofs CPU work is judged against, ``"cuda"`` for
    the GPU's. Bandwidth: the better of a copy and an add (:func:`stream_readings`) on fp32
    buffers of ``buffer_bytes`` each (256 MB on a CPU, 1 GB on a GPU: far beyond the last-level
    cache), as STREAM reports the best of its kernels. Matmul: square ``n x n`` products,
    ``2 * n**3`` FLOP each (n**3 multiply-adds), fp32 on the CPU with ``n`` grown while it fits
    the budget, bf16 at n = 8192 on a GPU. Each roof is the *best* repetition: a ceiling is the
    fastest the machine showed.

    On a CPU about 40 % of ``seconds`` goes to the copy and 60 % to the matmul; setting up the
    buffers comes on top (a fraction of a second). On a GPU ``do_bench`` sets the counts (a few
    hundred milliseconds in all). ``progress`` is called with one line per step.

    ``matmul_n``: the largest square product you will compare against this roof, at most
    :data:`MAX_MATMUL_N` for the device (4096 on a CPU, 32768 on a GPU). The sweep always
    reaches it, whatever the time budget, because larger products run closer to peak: a roof
    read only at smaller sizes would be beaten by an honest larger product.
    """
    budget_s = _positive(seconds, "seconds", "seconds")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable taking one string, got {progress!r}")
    report = progress or (lambda message: None)
    kind = resolve_device(device)
    if buffer_bytes is None:
        buffer_bytes = _DEFAULT_GPU_BUFFER_BYTES if kind == "cuda" else _DEFAULT_CPU_BUFFER_BYTES
    buf = _positive(buffer_bytes, "buffer_bytes", "bytes")
    must_reach = 0 if matmul_n is None else _matmul_side(matmul_n, kind)

    import torch

    start = time.perf_counter()
    name = torch.cuda.get_device_name(0) if kind == "cuda" else _cpu_name()
    report(f"measuring {name} on {kind} for about {budget_s:.3g} s")

    streams = stream_readings(kind, buffer_bytes=buf, seconds=0.4 * budget_s)
    for r in streams:
        report(
            f"{r.kernel}: {r.buffer_bytes / 1e6:.0f} MB buffers, best {_fmt_seconds(r.timing.min_s)} "
            f"-> {r.best_bytes_per_s / 1e9:.3g} GB/s"
        )
    bytes_per_s = max(r.best_bytes_per_s for r in streams)
    if kind == "cuda":
        sizes = sorted({_GPU_MATMUL_N, must_reach} - {0})
        best = max(matmul_readings("cuda", sizes, "bf16"), key=lambda r: r.best_flops_per_s)
        report(
            f"matmul: bf16 {best.n}x{best.n}, best {_fmt_seconds(best.timing.min_s)} -> "
            f"{best.best_flops_per_s / 1e12:.3g} TFLOP/s"
        )
        flops_per_s, n, precision = best.best_flops_per_s, best.n, "bf16"
    else:
        remaining = max(budget_s - (time.perf_counter() - start), 0.25 * budget_s)
        flops_per_s, n, precision = _matmul_throughput(torch, remaining, report, must_reach)

    ceilings = MeasuredCeilings(
        bytes_per_s=bytes_per_s,
        flops_per_s=flops_per_s,
        device_name=name,
        precision=precision,
        n_threads=int(torch.get_num_threads()),
        date=datetime.now(UTC).isoformat(timespec="seconds"),
        torch_version=str(torch.__version__),
        device=kind,
        matmul_n=n,
        buffer_bytes=float(streams[0].buffer_bytes),
    )
    report(f"done in {time.perf_counter() - start:.2f} s: ridge {ceilings.ridge:.3g} FLOP/B")
    return ceilings


def best_of(*readings: MeasuredCeilings) -> MeasuredCeilings:
    """One set of ceilings from several readings of the same machine: the fastest rate each saw.

    A ceiling is the fastest the machine has shown, so on a shared, noisy machine take several
    readings and keep the best of each roof. All readings must come from one device.
    """
    if not readings:
        raise ValueError("best_of needs at least one MeasuredCeilings reading, got none")
    for r in readings:
        if not isinstance(r, MeasuredCeilings):
            raise TypeError(f"best_of takes MeasuredCeilings readings, got {type(r).__name__} {r!r}")
    devices = {(r.device, r.device_name) for r in readings}
    if len(devices) > 1:
        raise ValueError(f"best_of combines readings of one device only, got {sorted(devices)}")
    return replace(
        readings[0],
        bytes_per_s=max(r.bytes_per_s for r in readings),
        flops_per_s=max(r.flops_per_s for r in readings),
    )


def _matmul_throughput(torch, budget_s: float, report, must_reach: int = 0) -> tuple[float, int, str]:
    """The CPU's best fp32 square-matmul rate, sizes grown while the budget allows."""
    # Try growing sizes and keep the best rate: small products can hit slow library paths and
    # large ones need time, so no single n is right on every CPU.
    deadline = time.perf_counter() + budget_s
    best_rate, best_n = 0.0, 0
    sizes = sorted({_CPU_MATMUL_MIN_N * 2**i for i in range(5)} | ({must_reach} if must_reach else set()))
    sizes = [s for s in sizes if _CPU_MATMUL_MIN_N <= s <= _CPU_MATMUL_MAX_N] or [must_reach]
    for n in sizes:
        a = torch.randn(n, n, dtype=torch.float32)
        b = torch.randn(n, n, dtype=torch.float32)
        t0 = time.perf_counter()
        a @ b  # warm-up, and an estimate of one product's time
        one_s = time.perf_counter() - t0
        slice_deadline = time.perf_counter() + 0.3 * max(deadline - time.perf_counter(), 0.0)
        reps = 0
        while reps < 3 or (time.perf_counter() < slice_deadline and reps < 500):
            t0 = time.perf_counter()
            a @ b
            one_s = min(one_s, time.perf_counter() - t0)
            reps += 1
        rate = gemm(n, n, n).flops / one_s
        report(f"matmul: fp32 {n}x{n}, best {_fmt_seconds(one_s)} -> {rate / 1e9:.3g} GFLOP/s")
        if rate > best_rate:
            best_rate, best_n = rate, n
        # Doubling n costs 8x per product; go on only if three of them fit what is left, or if the
        # caller's own size is still ahead.
        if n >= must_reach and 3 * 8 * one_s > deadline - time.perf_counter():
            break
    rate, n = best_rate, best_n
    report(f"matmul: fp32, best {rate / 1e9:.3g} GFLOP/s at {n}x{n}")
    return rate, n, "fp32"


# --------------------------------------------------------------------------- kernels


def measured_point(
    name: str,
    flops: float,
    bytes_moved: float,
    seconds,
    ceilings: MeasuredCeilings,
    *,
    tolerance: float = PLAUSIBILITY_TOLERANCE,
) -> MeasuredKernel:
    """Place a kernel timed here next to the time the measured roofs predict for it.

    ``flops`` (1 multiply-add = 2 FLOP) and ``bytes_moved`` (bytes to and from main memory) are
    the kernel's counts; ``seconds`` its measured time (a :class:`Timing` gives its median).
    Raises ImplausibleMeasurement when the kernel beats a measured roof by more than
    ``tolerance`` (5 %): it was timed from cache, or a count is wrong. A :class:`Timing` taken on
    another device than ``ceilings`` is refused (ValueError): CPU work judged against a GPU's
    roofs, or the reverse, says nothing about either.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    if not isinstance(ceilings, MeasuredCeilings):
        raise TypeError(f"ceilings must be a MeasuredCeilings from measure_ceilings(), got {type(ceilings).__name__}")
    if isinstance(seconds, Timing) and seconds.device != ceilings.device:
        raise ValueError(
            f"seconds was timed on the {device_label(seconds.device)} ({seconds.device}) but ceilings are "
            f"the roofs of {ceilings.label}; judge work against the roofs of the device it ran on"
        )
    t = seconds.median_s if isinstance(seconds, Timing) else seconds
    v = ceilings.roof.verdict(flops, bytes_moved, t, tolerance=tolerance, what=name)  # the roof's guard
    return MeasuredKernel(
        name=name,
        flops=v.flops,
        bytes_moved=v.bytes_moved,
        seconds=v.seconds,
        predicted_seconds=v.time_at_roof_seconds,
        intensity=v.intensity,
        achieved_flops_per_s=v.achieved_flops_per_s,
        achieved_bytes_per_s=v.achieved_bytes_per_s,
        ceiling_flops_per_s=v.ceiling_flops_per_s,
        bound=v.bound,
    )


# --------------------------------------------------------------------------- provenance

#: What :func:`gpu_identity` asks nvidia-smi for, and the key each clock is kept under (MHz).
_SMI_FIELDS = ("index", "uuid", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem")
_SMI_CLOCKS = {
    "clocks.sm": "sm_mhz",
    "clocks.mem": "mem_mhz",
    "clocks.max.sm": "max_sm_mhz",
    "clocks.max.mem": "max_mem_mhz",
}
#: What a provenance field holds when it could not be read: the record keeps everything else.
UNKNOWN = "unknown"


@dataclass(frozen=True)
class GPUIdentity:
    """Who measured a GPU number: the device and every version its figures depend on.

    A field that could not be read holds ``"unknown"`` instead of voiding the rest; ``clocks``
    (MHz) holds only the clocks nvidia-smi could read, and may be empty.
    """

    device_name: str
    driver: str
    cuda: str
    torch: str
    triton: str
    uuid: str = UNKNOWN
    clocks: Mapping[str, float] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.device_name}, driver {self.driver}, CUDA {self.cuda}, torch {self.torch}, triton {self.triton}"


def parse_smi_rows(text: str, fields: Sequence[str]) -> list[dict[str, str]]:
    """Rows of ``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits``, by field name.

    Lines that are not rows of exactly ``len(fields)`` comma-separated values (a warning printed
    first, a blank line) are skipped, and so is a row whose ``index`` field is not a whole
    number. Values nvidia-smi cannot read ("[N/A]", "[Not Supported]", "N/A") are left out of
    their row.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be nvidia-smi's output as a string, got {type(text).__name__}")
    rows = []
    for line in text.splitlines():
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(fields):
            continue
        row = {
            f: v
            for f, v in zip(fields, values)
            if v and not v.startswith("[") and v.lower() not in ("n/a", "not supported")
        }
        if "index" in fields and not row.get("index", "").isdigit():
            continue
        rows.append(row)
    return rows


def _visible_selector() -> str | None:
    """The first entry of CUDA_VISIBLE_DEVICES (an index or a GPU-UUID): torch's device 0."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    first = value.split(",")[0].strip()
    return first or None


def _pick_smi_row(rows: list[dict[str, str]], uuid: str | None) -> dict[str, str]:
    """nvidia-smi's row for torch's device 0: by UUID, else by CUDA_VISIBLE_DEVICES, else the first row."""
    if not rows:
        return {}
    if uuid:
        want = uuid.lower().removeprefix("gpu-")
        for row in rows:
            if row.get("uuid", "").lower().removeprefix("gpu-") == want:
                return row
    selector = _visible_selector()
    if selector is not None:
        for row in rows:
            if selector.isdigit() and row.get("index") == selector:
                return row
            if selector.lower().startswith("gpu-") and row.get("uuid", "").lower().startswith(selector.lower()):
                return row
        return {}  # the visible GPU is not among the rows: better unknown than another GPU's driver
    return rows[0]


def _read_smi(fields: Sequence[str]) -> str | None:
    """nvidia-smi's answer for every GPU (``-i`` would ignore CUDA_VISIBLE_DEVICES), or None."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    cmd = [exe, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
    try:
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=_SMI_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _driver_fallback(torch) -> str:
    """The driver version without nvidia-smi: the kernel module's banner, then the CUDA driver API."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as fh:
            match = re.search(r"Kernel Module\s+(?:for \S+\s+)?([0-9][0-9.]+)", fh.read())
        if match:
            return match.group(1)
    except OSError:
        pass
    getter = getattr(getattr(torch, "_C", None), "_cuda_getDriverVersion", None)  # private: may not exist
    try:
        api = int(getter()) if getter is not None else 0
    except Exception:  # noqa: BLE001 - a private call; provenance must never crash a run
        api = 0
    if api > 0:
        return f"{UNKNOWN} (supports CUDA {api // 1000}.{api % 1000 // 10})"
    return UNKNOWN


def gpu_identity() -> GPUIdentity:
    """The provenance of torch's CUDA device 0: name, driver, CUDA, torch and triton, clocks.

    nvidia-smi is asked about every GPU, and the row of torch's device 0 is chosen by its UUID,
    else by the first entry of CUDA_VISIBLE_DEVICES (nvidia-smi numbers GPUs physically, torch
    numbers the visible ones). Warning lines in its output are skipped. Without nvidia-smi the
    driver comes from the kernel module's banner or the CUDA driver API; whatever cannot be
    read is ``"unknown"``.
    """
    if not has_cuda():
        raise RuntimeError("gpu_identity needs a CUDA GPU, and torch sees none")
    import torch

    props = torch.cuda.get_device_properties(0)
    uuid = str(getattr(props, "uuid", "") or "") or None
    text = _read_smi(_SMI_FIELDS)
    row = _pick_smi_row(parse_smi_rows(text, _SMI_FIELDS), uuid) if text else {}
    clocks = {}
    for name, key in _SMI_CLOCKS.items():
        try:
            clocks[key] = _positive(float(row[name]), name, "MHz")
        except (KeyError, TypeError, ValueError):
            continue
    try:
        import triton

        triton_version = str(triton.__version__)
    except ImportError:
        triton_version = UNKNOWN
    return GPUIdentity(
        device_name=str(torch.cuda.get_device_name(0)) or UNKNOWN,
        driver=row.get("driver_version") or _driver_fallback(torch),
        cuda=str(torch.version.cuda or UNKNOWN),
        torch=str(torch.__version__),
        triton=triton_version,
        uuid=uuid or row.get("uuid", UNKNOWN),
        clocks=MappingProxyType(clocks),
    )
