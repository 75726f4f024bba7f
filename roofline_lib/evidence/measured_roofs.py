"""Measured roofs: this machine's two ceilings as measured here, and kernels timed here placed on them.

* :func:`stream_readings` and :func:`matmul_readings` time the kernels a roof is read from:
  copy and add on buffers far larger than the last-level cache (reads plus writes counted), and
  square matmuls (1 multiply-add = 2 FLOP).
* :func:`measure_ceilings` turns them into :class:`MeasuredCeilings` in a bounded time: the
  better of copy and add (called "copy" in labels) and the best matmul rate (fp32 on the CPU,
  bf16 on a GPU); :func:`best_of` keeps the fastest of several readings.
* :func:`measured_point` puts a kernel timed here next to its prediction on those measured
  roofs, and refuses a measurement that beats them (:class:`~roofline_lib.core.roofline.ImplausibleMeasurement`)
  or one timed on another device than the roofs were measured on.

The GPU is touched through two private primitives here (``_cuda_stream_timings``,
``_cuda_matmul_timing``) plus :mod:`~roofline_lib.evidence.measure`'s timer and ``torch.cuda``'s
queries; the fake-GPU test of the course replaces exactly those. torch is imported inside the
functions that need it, so ``from roofline_lib.evidence.measured_roofs import MeasuredCeilings`` stays
light (the plots and the command line rely on that).
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from ..core.checks import _positive, _positive_int
from ..core.formatting import seconds as _fmt_seconds
from ..core.formatting import to_unit
from ..core.hardware import bytes_per_element
from ..core.ops import gemm
from ..core.roofline import PLAUSIBILITY_TOLERANCE, Roof
from .measure import Timing, device_label, resolve_device, time_fn

__all__ = [
    "MAX_MATMUL_N",
    "MatmulReading",
    "MeasuredCeilings",
    "MeasuredKernel",
    "StreamReading",
    "best_of",
    "matmul_readings",
    "measure_ceilings",
    "measured_point",
    "stream_readings",
]

_DEFAULT_CPU_BUFFER_BYTES = 256e6  # bytes: far beyond any CPU's last-level cache (tens of MB)
_DEFAULT_GPU_BUFFER_BYTES = 1024e6  # bytes: far beyond a GPU's L2 (40-126 MB)
_CPU_MATMUL_MIN_N = 256  # smaller products are dominated by call overhead
_GPU_MATMUL_N = 8192  # 2 * 8192**3 = 1.1 TFLOP: about a millisecond on an H100

#: Largest square matmul side ``measure_ceilings`` accepts as ``matmul_n``, per device:
#: 2 * 4096**3 = 137 GFLOP is over a second on a laptop core; 2 * 32768**3 = 70 TFLOP is about
#: 0.1 s on an H100, with three bf16 operands of 2 GiB each.
MAX_MATMUL_N = MappingProxyType({"cpu": 4096, "cuda": 32768})
_CPU_MATMUL_MAX_N = MAX_MATMUL_N["cpu"]


# --------------------------------------------------------------------------- results


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
            f"copy {to_unit(self.bytes_per_s, 'GB/s'):.3g} GB/s, matmul {to_unit(self.flops_per_s, 'GFLOP/s'):.3g} GFLOP/s, "
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


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


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
    buf = _buffer_bytes(buffer_bytes, kind)
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
    report = _reporter(progress)
    kind = resolve_device(device)
    buf = _buffer_bytes(buffer_bytes, kind)
    must_reach = 0 if matmul_n is None else _matmul_side(matmul_n, kind)

    import torch

    start = time.perf_counter()
    name = torch.cuda.get_device_name(0) if kind == "cuda" else _cpu_name()
    report(f"measuring {name} on {kind} for about {budget_s:.3g} s")
    streams = _stream_roof(kind, buf, 0.4 * budget_s, report)
    if kind == "cuda":
        matmul = _gpu_matmul_roof(must_reach, report)
    else:
        remaining = max(budget_s - (time.perf_counter() - start), 0.25 * budget_s)
        matmul = _matmul_throughput(torch, remaining, report, must_reach)
    ceilings = _ceilings_record(torch, kind, name, streams, matmul)
    report(f"done in {time.perf_counter() - start:.2f} s: ridge {ceilings.ridge:.3g} FLOP/B")
    return ceilings


def _reporter(progress) -> Callable[[str], Any]:
    """``progress`` checked (a callable taking one line, or None for silence)."""
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable taking one string, got {progress!r}")
    return progress or (lambda message: None)


def _buffer_bytes(buffer_bytes, kind: str) -> float:
    """The stream buffers' size in bytes: the caller's, checked, or the device's default."""
    if buffer_bytes is None:
        buffer_bytes = _DEFAULT_GPU_BUFFER_BYTES if kind == "cuda" else _DEFAULT_CPU_BUFFER_BYTES
    return _positive(buffer_bytes, "buffer_bytes", "bytes")


def _stream_roof(kind: str, buf: float, budget_s: float, report) -> tuple[StreamReading, ...]:
    """Copy and add timed (:func:`stream_readings`), one progress line each."""
    streams = stream_readings(kind, buffer_bytes=buf, seconds=budget_s)
    for r in streams:
        report(
            f"{r.kernel}: {to_unit(r.buffer_bytes, 'MB'):.0f} MB buffers, best {_fmt_seconds(r.timing.min_s)} "
            f"-> {to_unit(r.best_bytes_per_s, 'GB/s'):.3g} GB/s"
        )
    return streams


def _gpu_matmul_roof(must_reach: int, report) -> tuple[float, int, str]:
    """The GPU's best bf16 square-matmul rate, at n = 8192 and the caller's own size."""
    sizes = sorted({_GPU_MATMUL_N, must_reach} - {0})
    best = max(matmul_readings("cuda", sizes, "bf16"), key=lambda r: r.best_flops_per_s)
    report(
        f"matmul: bf16 {best.n}x{best.n}, best {_fmt_seconds(best.timing.min_s)} -> "
        f"{to_unit(best.best_flops_per_s, 'TFLOP/s'):.3g} TFLOP/s"
    )
    return best.best_flops_per_s, best.n, "bf16"


def _ceilings_record(torch, kind: str, name: str, streams, matmul: tuple[float, int, str]) -> MeasuredCeilings:
    """The two roofs with what they were read on: the better stream, the best matmul, the versions."""
    flops_per_s, n, precision = matmul
    return MeasuredCeilings(
        bytes_per_s=max(r.best_bytes_per_s for r in streams),
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
        report(f"matmul: fp32 {n}x{n}, best {_fmt_seconds(one_s)} -> {to_unit(rate, 'GFLOP/s'):.3g} GFLOP/s")
        if rate > best_rate:
            best_rate, best_n = rate, n
        # Doubling n costs 8x per product; go on only if three of them fit what is left, or if the
        # caller's own size is still ahead.
        if n >= must_reach and 3 * 8 * one_s > deadline - time.perf_counter():
            break
    rate, n = best_rate, best_n
    report(f"matmul: fp32, best {to_unit(rate, 'GFLOP/s'):.3g} GFLOP/s at {n}x{n}")
    return rate, n, "fp32"


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
