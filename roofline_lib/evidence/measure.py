"""Timing: time a function honestly on the device you name, and say which device that was.

:func:`time_fn` times a callable on the device you name (``device="cpu"`` or ``"cuda"``; there
is no default, so work on CPU tensors is never timed with GPU events just because a GPU is
visible). On a CUDA GPU it hands the work to ``triton.testing.do_bench`` (CUDA events, L2
flushed between repetitions, milliseconds converted to seconds here). On the CPU it warms up,
repeats many times, reports the median, and can *rotate* through several argument sets so that
consecutive calls touch different memory and the last-level cache does not flatter the result.
The :class:`Timing` it returns carries its device.

This machine's roofs, read from such timings, are :mod:`roofline_lib.evidence.measured_roofs`; who
measured a GPU number (driver, CUDA, versions) is :mod:`roofline_lib.evidence.provenance`.
The CUDA side of the timer is one private primitive, ``_time_cuda``, which the fake-GPU test of
the course replaces.

torch is imported inside the functions that need it, so ``from roofline_lib.evidence.measure import
Timing`` stays light.
"""

from __future__ import annotations

import gc
import math
import numbers
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core.checks import _positive_int
from ..core.formatting import from_unit
from ..core.formatting import seconds as _fmt_seconds

__all__ = [
    "DEVICES",
    "Timing",
    "device_label",
    "has_cuda",
    "resolve_device",
    "time_fn",
]

#: The devices a timing can name.
DEVICES = ("cpu", "cuda")

_FALLBACK_CACHE_BYTES = 32 * 2**20  # assumed last-level cache when the OS does not say
_MAX_ROTATION_SETS = 64  # never build more argument sets than this from a factory
_MAX_ROTATION_BYTES = 2e9  # ... nor more than 2 GB of them


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
    unit = {"K": "KiB", "M": "MiB", "G": "GiB"}
    if text and text[-1].upper() in unit:
        return int(from_unit(int(text[:-1]), unit[text[-1].upper()]))
    return int(text)


def _cache_bytes(device: str) -> int:
    if device == "cuda":
        import torch

        return int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or 50 * 2**20
    return _last_level_cache_bytes()


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
    times_s = [from_unit(t, "ms") for t in times_ms]  # do_bench reports milliseconds
    return Timing(
        median_s=statistics.median(times_s),
        min_s=min(times_s),
        max_s=max(times_s),
        reps=len(times_s),
        method="triton.testing.do_bench (CUDA events, L2 flushed between reps)",
        device="cuda",
    )
