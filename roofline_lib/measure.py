"""Measurement: time a function honestly, measure this machine's two roofs, place kernels on them.

Three tools, in the order a measured example uses them:

* :func:`time_fn` times a callable. On a CUDA GPU it hands the work to
  ``triton.testing.do_bench`` (CUDA events, L2 flushed between repetitions, milliseconds
  converted to seconds here). On the CPU it warms up, repeats many times, reports the median,
  and can *rotate* through several argument sets so that consecutive calls touch different
  memory and the last-level cache does not flatter the result.
* :func:`measure_ceilings` measures the machine in front of you: streaming bandwidth (bytes/s,
  the better of a copy and an add, reads plus writes counted, on buffers far larger than the
  last-level cache; called "copy" in labels) and matmul throughput
  (FLOP/s, fp32 on the CPU, bf16 on a GPU; 1 multiply-add = 2 FLOP), in a bounded time.
* :func:`measured_point` puts a kernel timed here next to its prediction on those measured
  roofs, and refuses a measurement that beats them (:class:`~roofline_lib.roofline.ImplausibleMeasurement`).

torch is imported inside the functions that need it, so ``from roofline_lib.measure import
MeasuredCeilings`` stays light (the plots and the command line rely on that).
"""
from __future__ import annotations

import gc
import math
import numbers
import os
import platform
import statistics
import time
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

from ._checks import _positive, _positive_int
from .roofline import PLAUSIBILITY_TOLERANCE, Roof

__all__ = [
    "Timing",
    "MeasuredCeilings",
    "MeasuredKernel",
    "has_cuda",
    "time_fn",
    "measure_ceilings",
    "measured_point",
    "best_of",
]

_MB = 1e6
_DEFAULT_CPU_BUFFER_BYTES = 256 * _MB  # far beyond any CPU's last-level cache (tens of MB)
_DEFAULT_GPU_BUFFER_BYTES = 1024 * _MB  # far beyond a GPU's L2 (40-126 MB)
_FALLBACK_CACHE_BYTES = 32 * 2**20  # assumed last-level cache when the OS does not say
_MAX_ROTATION_SETS = 64  # never build more argument sets than this from a factory
_MAX_ROTATION_BYTES = 2e9  # ... nor more than 2 GB of them
_CPU_MATMUL_MIN_N = 256  # smaller products are dominated by call overhead
_CPU_MATMUL_MAX_N = 4096  # 2 * 4096**3 = 137 GFLOP: over a second on a laptop core
_GPU_MATMUL_N = 8192  # 2 * 8192**3 = 1.1 TFLOP: about a millisecond on an H100


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Timing:
    """How long one call of a function took, in seconds, over ``reps`` timed calls.

    ``median_s`` is the number to use; ``min_s`` and ``max_s`` show the spread.
    ``method`` says how the times were taken.
    """

    median_s: float
    min_s: float
    max_s: float
    reps: int
    method: str

    def __str__(self) -> str:
        return (
            f"median {_fmt_seconds(self.median_s)} (min {_fmt_seconds(self.min_s)}, "
            f"max {_fmt_seconds(self.max_s)}) over {self.reps} reps; {self.method}"
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
    def roof(self) -> Roof:
        """These ceilings as a :class:`~roofline_lib.roofline.Roof`: ridge, ceiling, time, guard."""
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
    def from_dict(cls, record: dict[str, Any]) -> "MeasuredCeilings":
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
        return (
            f"{self.device_name} ({self.n_threads} threads, {self.precision}): "
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


def _resolve_device(device) -> str:
    """``None`` -> "cuda" when a GPU is present, else "cpu"; otherwise check what was asked."""
    if device is None:
        return "cuda" if has_cuda() else "cpu"
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
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}
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
            "rotate must be a list of argument sets or a factory returning one, "
            f"got {type(rotate).__name__}"
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

    On CUDA (the default when a GPU is present) the timing is ``triton.testing.do_bench``,
    which flushes the L2 between repetitions and chooses its own counts from a 25 ms warm-up
    and 100 ms of repetitions; ``warmup`` and ``reps`` are the CPU path's counts of untimed and
    timed calls. The CPU path times each call with ``time.perf_counter`` with the garbage
    collector paused, and reports the median.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__} {fn!r}")
    n_warmup = _count(warmup, "warmup", allow_zero=True)
    n_reps = _count(reps, "reps", allow_zero=False)
    kind = _resolve_device(device)
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
    )


def _time_cuda(fn, sets) -> Timing:  # pragma: no cover - needs a GPU
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
    )


# --------------------------------------------------------------------------- ceilings


def measure_ceilings(
    seconds: float = 5.0,
    device=None,
    progress: Callable[[str], Any] | None = None,
    *,
    buffer_bytes: float | None = None,
    matmul_n: int | None = None,
) -> MeasuredCeilings:
    """Measure this machine's copy bandwidth and matmul throughput within about ``seconds``.

    Bandwidth: the better of ``dst.copy_(src)`` (counting ``2 * buffer_bytes``: read + write)
    and ``torch.add(a, b, out=c)`` (``3 * buffer_bytes``) on fp32 buffers of ``buffer_bytes``
    each (256 MB on a CPU, 1 GB on a GPU: far beyond the last-level cache), as STREAM reports
    the best of its kernels. Matmul: square ``n x n`` products, ``2 * n**3`` FLOP each (n**3
    multiply-adds), fp32 on the CPU with ``n`` grown while it fits the budget, bf16 n = 8192 on
    a GPU. Each roof is the *best* repetition: a ceiling is the fastest the machine showed.

    About 40 % of ``seconds`` goes to the copy and 60 % to the matmul; setting up the buffers
    comes on top (a fraction of a second). ``progress`` is called with one line per step.

    ``matmul_n`` (CPU): the largest square product you will compare against this roof. The
    sweep always reaches it, whatever the time budget, because larger products run closer to
    peak: a roof read only at smaller sizes (on a busy machine the budget runs out early) would
    be beaten by an honest larger product.
    """
    budget_s = _positive(seconds, "seconds", "seconds")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable taking one string, got {progress!r}")
    report = progress or (lambda message: None)
    kind = _resolve_device(device)
    if buffer_bytes is None:
        buffer_bytes = _DEFAULT_GPU_BUFFER_BYTES if kind == "cuda" else _DEFAULT_CPU_BUFFER_BYTES
    buf = _positive(buffer_bytes, "buffer_bytes", "bytes")

    import torch

    start = time.perf_counter()
    name = torch.cuda.get_device_name(0) if kind == "cuda" else _cpu_name()
    report(f"measuring {name} on {kind} for about {budget_s:.3g} s")

    must_reach = 0 if matmul_n is None else _positive_int(matmul_n, "matmul_n", "rows of a square matrix")
    if must_reach > _CPU_MATMUL_MAX_N:
        raise ValueError(f"matmul_n must be at most {_CPU_MATMUL_MAX_N} rows, got {matmul_n!r}")

    bytes_per_s = _copy_bandwidth(torch, kind, buf, 0.4 * budget_s, report)
    remaining = max(budget_s - (time.perf_counter() - start), 0.25 * budget_s)
    flops_per_s, n, precision = _matmul_throughput(torch, kind, remaining, report, must_reach)

    ceilings = MeasuredCeilings(
        bytes_per_s=bytes_per_s,
        flops_per_s=flops_per_s,
        device_name=name,
        precision=precision,
        n_threads=int(torch.get_num_threads()),
        date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        torch_version=str(torch.__version__),
        device=kind,
        matmul_n=n,
        buffer_bytes=buf,
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


def _sync(torch, kind: str) -> None:
    if kind == "cuda":
        torch.cuda.synchronize()


def _copy_bandwidth(torch, kind: str, buffer_bytes: float, budget_s: float, report) -> float:
    """The best streaming rate of two kernels, STREAM-style: copy and add, bytes counted as moved.

    ``dst.copy_(src)`` counts 2 buffers (read + write), ``torch.add(a, b, out=c)`` counts 3. On a
    CPU a write to memory that is not in cache first reads the line (write-allocate), which the
    count does not see; it costs copy a larger share of its traffic (1 hidden read per 2 counted)
    than add (1 per 3), so add often shows the higher counted rate. The roof is the best of the two,
    so a streaming kernel timed later cannot beat it through that accounting alone.
    """
    n_elems = max(1, int(buffer_bytes // 4))  # fp32: 4 bytes per element
    nbytes = 4 * n_elems
    a = torch.ones(n_elems, dtype=torch.float32, device=kind)  # first touch: pages are real
    b = torch.ones(n_elems, dtype=torch.float32, device=kind)
    c = torch.zeros(n_elems, dtype=torch.float32, device=kind)
    kernels = {
        "copy": (lambda: c.copy_(a), 2 * nbytes),  # read a + write c
        "add": (lambda: torch.add(a, b, out=c), 3 * nbytes),  # read a, read b, write c
    }
    best_rate = 0.0
    for label, (fn, moved) in kernels.items():
        if kind == "cuda":  # pragma: no cover - needs a GPU
            best_s = time_fn(fn, device="cuda").min_s
        else:
            fn()  # warm-up
            deadline = time.perf_counter() + budget_s / len(kernels)
            best_s = math.inf
            reps = 0
            while reps < 3 or (time.perf_counter() < deadline and reps < 200):
                t0 = time.perf_counter()
                fn()
                best_s = min(best_s, time.perf_counter() - t0)
                reps += 1
        rate = moved / best_s
        report(f"{label}: {nbytes / 1e6:.0f} MB buffers, best {_fmt_seconds(best_s)} -> {rate / 1e9:.3g} GB/s")
        best_rate = max(best_rate, rate)
    return best_rate


def _matmul_throughput(torch, kind: str, budget_s: float, report, must_reach: int = 0) -> tuple[float, int, str]:
    if kind == "cuda":  # pragma: no cover - needs a GPU
        n = _GPU_MATMUL_N
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        best_s = time_fn(lambda: a @ b, device="cuda").min_s
        rate = 2 * n**3 / best_s  # n**3 multiply-adds, 2 FLOP each
        report(f"matmul: bf16 {n}x{n}, best {_fmt_seconds(best_s)} -> {rate / 1e12:.3g} TFLOP/s")
        return rate, n, "bf16"

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
        rate = 2 * n**3 / one_s  # n**3 multiply-adds, 2 FLOP each
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
    ``tolerance`` (5 %): it was timed from cache, or a count is wrong.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    if not isinstance(ceilings, MeasuredCeilings):
        raise TypeError(
            f"ceilings must be a MeasuredCeilings from measure_ceilings(), got {type(ceilings).__name__}"
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


def _fmt_seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.3g} us"
    return f"{s * 1e9:.3g} ns"
