"""Profiling a run here: ``torch.profiler`` around a function, the fixed cost of one op call, a quiet log.

What :func:`~roofline_lib.evidence.diagnose.diagnose` reads from a live run: a
:class:`ProfiledRun` holds the profile, the wall-clock seconds it covered and the fixed cost of
one op call measured under the same profiler. torch is imported only by the functions that
profile.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
from dataclasses import dataclass
from typing import Callable

from ..core.checks import _positive_int
from ..core.formatting import from_unit

__all__ = ["ProfiledRun", "profile_run", "measure_fixed_cost", "quiet_profiler_log", "export_profile"]


@dataclass(frozen=True)
class ProfiledRun:
    """A torch profiler result, the wall-clock seconds of the run it recorded, and the fixed cost
    of one op call measured under the same profiler (:func:`measure_fixed_cost`)."""

    profile: object
    wall_seconds: float
    calls: int = 1
    fixed_cost_seconds: float | None = None


def export_profile(profile) -> dict:
    """The Chrome trace of a live ``torch.profiler.profile``, parsed: one reader for both inputs."""
    import tempfile

    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        try:
            try:  # the Python writer leaves kineto's one native save to the reader's own export
                profile.export_chrome_trace(path, use_python_export=True)
            except TypeError:  # a profiler without that option
                profile.export_chrome_trace(path)
        except (AssertionError, RuntimeError) as err:
            raise ValueError(f"the profiler holds no results yet ({err}); profile something first") from None
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    finally:
        os.unlink(path)


def measure_fixed_cost(*, calls: int = 300, with_flops: bool = True) -> float:
    """The fixed cost of one op call on this CPU under the profiler, in seconds.

    Profiles ``calls`` negations of a one-element tensor (no work to speak of) with shapes
    recorded and returns the median self time of one: what any op costs before it does anything.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    n = _positive_int(calls, "calls", "calls")
    one = torch.ones(1)
    for _ in range(20):
        torch.neg(one)
    with (
        quiet_profiler_log(),
        profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=with_flops) as prof,
    ):
        for _ in range(n):
            torch.neg(one)
    times = [
        from_unit(e["dur"], "us")
        for e in export_profile(prof)["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e.get("name") == "aten::neg"
    ]
    if not times:
        raise RuntimeError("the profiler recorded no aten::neg call while measuring the fixed cost per call")
    return statistics.median(times)


_PROFILER_NOISE = re.compile(r"^USDT:.*\] profiler_(start|stop)\s*$")


@contextlib.contextmanager
def quiet_profiler_log():
    """Keep torch.profiler's ``USDT: ... profiler_start`` / ``profiler_stop`` lines out of the output.

    Kineto writes them straight to the process's stderr (file descriptor 2) whenever a profile
    starts or stops, so a notebook shows them as a red stderr block although nothing is wrong.
    Inside this block file descriptor 2 goes to a temporary file; afterwards every other line
    written there is passed on to ``sys.stderr``, so a real error still shows.
    """
    import sys
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            kept = [
                line
                for line in sink.read().decode(errors="replace").splitlines(keepends=True)
                if not _PROFILER_NOISE.match(line)
            ]
            if kept:
                sys.stderr.write("".join(kept))


def profile_run(
    fn: Callable,
    *args,
    device=None,
    warmup: int = 1,
    calls: int = 1,
    with_flops: bool = True,
    record_shapes: bool = True,
    **kwargs,
) -> ProfiledRun:
    """Run ``fn(*args, **kwargs)`` ``calls`` times under ``torch.profiler`` and time it.

    ``device`` must be named, as in :func:`~roofline_lib.evidence.measure.time_fn`: with ``"cuda"`` the
    profile records CUDA activity too and the clock stops after ``torch.cuda.synchronize()``;
    with ``"cpu"`` it records the host alone. ``warmup`` untimed, unprofiled calls come first.
    Shapes are recorded (the triage needs them). On the CPU the fixed cost of one op call is
    measured under the same profiler settings, for :func:`~roofline_lib.evidence.diagnose.diagnose`.
    """
    import time

    import torch
    from torch.profiler import ProfilerActivity, profile

    from .measure import resolve_device

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__} {fn!r}")
    n_calls = _positive_int(calls, "calls", "calls")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a whole number of calls (0 or more), got {warmup!r}")
    cuda = resolve_device(device) == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for _ in range(warmup):
        fn(*args, **kwargs)
    sync()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with (
        quiet_profiler_log(),
        profile(activities=activities, with_flops=with_flops, record_shapes=record_shapes) as prof,
    ):
        start = time.perf_counter()
        for _ in range(n_calls):
            fn(*args, **kwargs)
        sync()
        wall = time.perf_counter() - start
    fixed = None if cuda else measure_fixed_cost(with_flops=with_flops)
    return ProfiledRun(profile=prof, wall_seconds=wall, calls=n_calls, fixed_cost_seconds=fixed)
