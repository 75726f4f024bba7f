"""Reading Kineto traces (``torch.profiler``'s Chrome-trace JSON): events, ties and the GPU timeline.

The first step of the playbook's diagnosis, on the raw events (:mod:`roofline_lib.evidence.trace_rows`
makes the triage's rows of them). It reads a trace the way Holistic Trace Analysis (HTA) does --
by correlation id and by time interval -- in named steps:

1. :func:`load_trace` -- a path (plain or gzip, told apart by the file's first bytes, not its
   name), a parsed dict or an event list, with an error that names the path when the file is
   truncated or is not JSON;
2. :func:`sort_events` -- the complete events by kind, under both spellings Kineto has used
   (``cpu_op``/``kernel``/``cuda_runtime`` since 2023, ``Operator``/``Kernel``/``Runtime``
   before), and a refusal by name of a trace from a device that is not CUDA or ROCm (MTIA, say);
3. :func:`nest_ops` -- each CPU op's parent on its thread and the time spent in its children;
4. :func:`tie_kernels` -- each kernel to its launch by **correlation id** and to the innermost CPU op
   that encloses the launch **by time interval** (one sorted sweep per thread, no rescans). A
   kernel's "External id" is used only when the trace has no launch events: in traces from 2023 it
   collides with CPU-op ids;
5. :func:`step_bounds` -- the span of the complete ``ProfilerStep#N`` annotations, so kernels
   launched outside the steps (warm-up, the profiler's own start and stop) are left out;
6. :func:`device_timeline` -- per device, the merged kernel window and each kernel's **exposed**
   time in it: at each instant the time goes to the running computation kernels (split evenly),
   else to running memory copies and sets, else to running collectives, else it is idle. So
   overlapping streams are never counted twice, and communication hidden behind computation
   costs nothing -- the same split as HTA's temporal breakdown (idle, compute, non-compute). A
   kernel of zero duration covers no instant; each device (a kernel's ``device`` argument, else
   its ``pid``) has a window of its own.

A folder is not a trace (:mod:`roofline_lib.evidence.trace_ranks` reads a folder of ranks), and a
trace of the CUPTI range profiler's counters has no kernel timeline: both are refused with what to
pass instead.

All times here are the trace's microseconds; :mod:`roofline_lib.evidence.trace_rows` converts to seconds.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

from .kernel_names import precision_of

__all__ = [
    "KERNEL_CATEGORIES",
    "COPY_CATEGORIES",
    "RUNTIME_CATEGORIES",
    "CPU_OP_CATEGORIES",
    "TraceEvents",
    "Tie",
    "DeviceTimeline",
    "load_trace",
    "sort_events",
    "nest_ops",
    "tie_kernels",
    "step_bounds",
    "device_timeline",
    "span",
    "device_of",
    "kernel_kind",
    "runs_tf32",
]

#: GPU kernel events, in the 2023+ and the older (2022) spelling.
KERNEL_CATEGORIES = frozenset({"kernel", "Kernel"})
#: GPU memory copies and sets.
COPY_CATEGORIES = frozenset({"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"})
#: Host-side launches (cudaLaunchKernel and friends) that carry the correlation id.
RUNTIME_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "Driver"})
#: CPU operators (aten ops, autograd nodes, modules).
CPU_OP_CATEGORIES = frozenset({"cpu_op", "Operator", "operator"})

# Device categories of accelerators that are not CUDA or ROCm: the triage does not read them.
_OTHER_DEVICES = {"mtia": "an MTIA accelerator", "xpu": "an Intel XPU", "hpu": "a Gaudi HPU", "tpu": "a TPU"}

_STEP = re.compile(r"^ProfilerStep#\d+$")
# collective kernels: NCCL (NVIDIA) and RCCL (AMD), and the collectives' own names
_COMM = re.compile(r"nccl|rccl|c10d::|allreduce|all_reduce|allgather|reducescatter|alltoall", re.IGNORECASE)


@dataclass(frozen=True)
class TraceEvents:
    """The complete ("X") events of one trace, sorted by kind (each a list of the raw dicts).

    ``meta`` holds everything outside ``traceEvents`` (``deviceProperties``, ``distributedInfo``).
    """

    meta: Mapping
    cpu_ops: list
    kernels: list
    launches: list
    steps: list


@dataclass(frozen=True)
class Tie:
    """One kernel, its launch (None when untied) and the innermost CPU op enclosing that launch."""

    kernel: dict
    launch: dict | None
    op: dict | None


@dataclass(frozen=True)
class DeviceTimeline:
    """One device's merged kernel window, in microseconds.

    ``window`` is first kernel start to last kernel end; ``busy`` the union of the kernels'
    intervals; ``exposed`` maps ``id(kernel)`` to the part of the window that kernel is charged
    with (see :func:`device_timeline`); ``by_kind`` sums exposed time by :func:`kernel_kind`.
    """

    device: object
    window: float
    busy: float
    exposed: Mapping[int, float]
    by_kind: Mapping[str, float]

    @property
    def idle(self) -> float:
        return self.window - self.busy


def load_trace(trace) -> dict:
    """A trace as a dict with a ``traceEvents`` list, from a path, a dict or a list of events.

    A file is read as gzip when it starts with gzip's magic bytes, whatever its name says, and as
    plain JSON otherwise. A truncated or corrupt file raises ValueError naming the path.
    """
    if isinstance(trace, (str, os.PathLike)):
        trace = _read_file(os.fspath(trace))
    if isinstance(trace, list):
        trace = {"traceEvents": trace}
    if not isinstance(trace, Mapping) or not isinstance(trace.get("traceEvents"), list):
        raise TypeError(
            "a Chrome trace must be a dict with a 'traceEvents' list (json.load of the file "
            f"prof.export_chrome_trace wrote), got {type(trace).__name__}: pass the file's path or its parsed dict"
        )
    return trace


def _read_file(path: str) -> dict:
    if os.path.isdir(path):
        raise ValueError(
            f"{path!r} is a folder, not a trace file: pass one rank's trace file, or diagnose the folder's "
            "rank traces together with diagnose.diagnose_ranks(folder) (roofline diagnose FOLDER)"
        )
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no trace file at {path!r}: pass the path of a file prof.export_chrome_trace(path) wrote"
        ) from None
    zipped = raw[:2] == b"\x1f\x8b"
    try:
        text = gzip.decompress(raw) if zipped else raw
    except (EOFError, OSError, zlib.error) as err:
        raise ValueError(
            f"{path!r} is a truncated or corrupt gzip file ({type(err).__name__}: {err}): pass a complete "
            "copy of the trace (re-download or re-export it)"
        ) from None
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        kind = "gzip-compressed, " if zipped else ""
        hint = " (its name ends in .gz but it is not gzip)" if path.endswith(".gz") and not zipped else ""
        raise ValueError(
            f"{path!r} is not a Chrome-trace JSON file ({kind}incomplete or not JSON){hint}: {err}; pass the file "
            "prof.export_chrome_trace(path) wrote, whole"
        ) from None


def sort_events(trace: Mapping) -> TraceEvents:
    """Sort a loaded trace's complete events by kind; refuse a trace from a non-CUDA device by name."""
    lists: dict[str, list] = {"cpu": [], "kernel": [], "launch": [], "step": []}
    other: dict[str, str] = {}  # another accelerator's device events: its prefix -> a category seen
    ranges = 0  # kernels the CUPTI range profiler replayed for their counters
    for e in trace["traceEvents"]:
        if not isinstance(e, Mapping) or e.get("ph") != "X" or "dur" not in e or "ts" not in e:
            continue
        cat = str(e.get("cat", ""))
        if cat == _COUNTER_RANGES:
            ranges += 1
        kinds = _kinds(cat, str(e.get("name", "")))
        for kind in kinds:
            lists[kind].append(e)
        if not kinds and cat.split("_")[0].lower() in _OTHER_DEVICES:
            other.setdefault(cat.split("_")[0].lower(), cat)
    meta = {k: v for k, v in trace.items() if k != "traceEvents"}
    if other and not lists["kernel"]:
        _refuse_other_device(other, meta)
    if ranges and not lists["kernel"]:
        _refuse_counter_ranges(ranges, meta)
    return TraceEvents(
        meta, cpu_ops=lists["cpu"], kernels=lists["kernel"], launches=lists["launch"], steps=lists["step"]
    )


def _kinds(cat: str, name: str) -> tuple[str, ...]:
    """Which lists of :class:`TraceEvents` an event of category ``cat`` goes to (none: not read)."""
    if cat in CPU_OP_CATEGORIES:  # the older traces file steps as operators
        return ("cpu", "step") if _STEP.match(name) else ("cpu",)
    if cat in KERNEL_CATEGORIES or cat in COPY_CATEGORIES:
        return ("kernel",)
    if cat in RUNTIME_CATEGORIES:
        return ("launch",)
    if cat == "user_annotation" and _STEP.match(name):
        return ("step",)
    return ()


def _refuse_other_device(other: Mapping[str, str], meta: Mapping) -> None:
    """A trace of another accelerator's events and no GPU kernel: refused, naming the device."""
    prefix, cat = next(iter(other.items()))
    names = sorted(
        {str(p.get("name")) for p in meta.get("deviceProperties") or () if isinstance(p, Mapping) and p.get("name")}
    )
    on = f" ({', '.join(names)})" if names else ""
    raise ValueError(
        f"this trace records {_OTHER_DEVICES[prefix]}{on} (its device events are {cat!r}), not CUDA or ROCm "
        "kernels: the triage reads GPU kernel timelines only. Pass a trace recorded on a GPU with "
        "ProfilerActivity.CUDA, or pass rows (OpStat) of that device's ops with roof=rl.Roof(peak_flops_per_s, "
        "bytes_per_s, label) from its datasheet"
    )


def device_of(kernel: Mapping):
    """The device a kernel ran on: its ``device`` argument, else its ``pid`` (Kineto files each
    device's kernels under a process of the device's id)."""
    device = (kernel.get("args") or {}).get("device")
    return kernel.get("pid") if device is None else device


# Kineto's category for the kernels the CUPTI range profiler measured (torch.profiler's
# experimental_config=_ExperimentalConfig(profiler_metrics=[...])): one event per kernel, with
# hardware counters as its args, and times taken while the profiler replayed it.
_COUNTER_RANGES = "cuda_profiler_range"


def _refuse_counter_ranges(n: int, meta: Mapping) -> None:
    """A trace of the CUPTI range profiler's counters and no kernel timeline: refused, saying why."""
    raise ValueError(
        f"this trace was recorded by the CUPTI range profiler: {n:,} kernels with hardware counters "
        "('cuda_profiler_range' events, from torch.profiler's experimental_config profiler_metrics), each "
        "replayed to read them, so their times are the profiler's and there is no kernel timeline to "
        "diagnose. Its counters (FLOP instructions per kernel) are read by HTA's CuptiCounterAnalysis. "
        "To diagnose the run, record it again with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] "
        "and no profiler_metrics"
    )


def span(e) -> tuple[float, float]:
    """An event's ``(start, end)`` in the trace's microseconds."""
    start = float(e["ts"])
    return start, start + float(e["dur"])


def _thread(e) -> tuple:
    return (e.get("pid"), e.get("tid"))


def nest_ops(cpu_ops) -> tuple[dict, dict]:
    """Each CPU op's parent (the innermost op containing it on its thread) and its children's time.

    Returns ``(parent, child_time)`` keyed by ``id(op)``; a top-level op's parent is None.
    """
    by_thread: dict[tuple, list] = {}
    for e in cpu_ops:
        by_thread.setdefault(_thread(e), []).append(e)
    parent: dict[int, dict | None] = {}
    child_time: dict[int, float] = {}
    for evs in by_thread.values():
        evs.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack: list[tuple[float, dict]] = []
        for e in evs:
            start, end = span(e)
            while stack and stack[-1][0] <= start:
                stack.pop()
            top = stack[-1][1] if stack else None
            parent[id(e)] = top
            if top is not None:
                child_time[id(top)] = child_time.get(id(top), 0.0) + float(e["dur"])
            stack.append((end, e))
    return parent, child_time


def _arg(e, *names):
    args = e.get("args") or {}
    for n in names:
        if n in args:
            return args[n]
    return None


def tie_kernels(events: TraceEvents) -> list[Tie]:
    """Tie every kernel to its launch (correlation id) and the innermost CPU op enclosing the launch.

    The op is found by time interval: the launches and the ops of each thread are swept once in
    time order with a stack of the ops still open. Only when the trace holds no launch event for
    a kernel's correlation id is its "External id" matched to a CPU op's.
    """
    by_corr = {}
    for launch in events.launches:
        corr = _arg(launch, "correlation")
        if corr is not None:
            by_corr[corr] = launch
    launch_of = {id(k): by_corr.get(_arg(k, "correlation")) for k in events.kernels}
    tied = [launch_of[id(k)] for k in events.kernels if launch_of[id(k)] is not None]

    # one sweep per thread: ops and launches in time order, ops first at equal times
    by_thread: dict[tuple, list] = {}
    for e in events.cpu_ops:
        if not _STEP.match(str(e.get("name", ""))):
            by_thread.setdefault(_thread(e), []).append((float(e["ts"]), 0, -float(e["dur"]), e))
    for launch in {id(x): x for x in tied}.values():
        by_thread.setdefault(_thread(launch), []).append((float(launch["ts"]), 1, 0.0, launch))
    enclosing: dict[int, dict | None] = {}
    for items in by_thread.values():
        items.sort(key=lambda t: t[:3])
        stack: list[tuple[float, dict]] = []
        for ts, is_launch, _, e in items:
            while stack and stack[-1][0] < ts:
                stack.pop()
            if is_launch:
                enclosing[id(e)] = stack[-1][1] if stack else None
            else:
                stack.append((ts + float(e["dur"]), e))

    by_external = None
    ties = []
    for k in events.kernels:
        launch = launch_of[id(k)]
        if launch is not None:
            ties.append(Tie(k, launch, enclosing.get(id(launch))))
            continue
        if by_external is None:
            by_external = {}
            for e in events.cpu_ops:
                ext = _arg(e, "External id", "external id")
                if ext is not None:
                    by_external.setdefault(ext, []).append(e)
        found = by_external.get(_arg(k, "External id", "external id")) or []
        ties.append(Tie(k, None, found[0] if len(found) == 1 else None))
    return ties


def step_bounds(events: TraceEvents) -> tuple[float, float, int] | None:
    """``(start, end, n_steps)`` of the complete ``ProfilerStep#N`` annotations, or None when there are none.

    The last step is left out when there are two or more, as HTA leaves it out: the profiler stops
    inside it, so the kernels it launched may be missing from the trace. ``end`` is then the last
    step's start; a kernel launched from ``start`` up to ``end`` belongs to a complete step.
    """
    if not events.steps:
        return None
    spans = sorted({str(s.get("name")): span(s) for s in events.steps}.values())
    if len(spans) == 1:
        return spans[0][0], spans[0][1], 1
    return spans[0][0], spans[-1][0], len(spans) - 1


def kernel_kind(kernel: Mapping) -> str:
    """``"copy"`` for memory copies and sets, ``"communication"`` for collectives, else ``"compute"``.

    "compute" here means a kernel that is not a copy or a collective (HTA's "computation"); the
    roofline then decides whether its op is compute- or memory-bound.
    """
    if str(kernel.get("cat")) in COPY_CATEGORIES:
        return "copy"
    return _kind_of_name(str(kernel.get("name", "")))


@lru_cache(maxsize=1 << 16)
def _kind_of_name(name: str) -> str:
    """A non-copy kernel's kind by its name (each name read once: a trace repeats a few hundred)."""
    return "communication" if _COMM.search(name) else "compute"


def runs_tf32(kernel_name: str) -> bool:
    """True when a kernel's name says it is a TF32 tensor-core kernel (``s1688gemm``, ``..._tf32...``):
    the precision :func:`roofline_lib.evidence.kernel_names.precision_of` reads in the name."""
    return precision_of(kernel_name) == "tf32"


_PRIORITY = ("compute", "copy", "communication")


def device_timeline(kernels, device=None) -> DeviceTimeline:
    """The merged window of one device's kernels and the exposed time of each (microseconds).

    Sweeping the window in time, each instant goes to the computation kernels running then,
    split evenly among them; if none runs, to the running copies and sets; if none, to the running
    collectives; if nothing runs, it is idle. Exposed times add up to the busy time (the union
    of the kernels' intervals), so the piles and the idle time add up to the window.

    A kernel of zero (or negative) duration covers no instant: it is charged nothing and opens
    nothing, though its time stamp still bounds the window (Kineto records tiny memsets and fills
    that way; left in the sweep, such a kernel was never closed and every later gap read as busy).
    """
    if not kernels:
        return DeviceTimeline(device, 0.0, 0.0, {}, dict.fromkeys(_PRIORITY, 0.0))
    kinds = {id(k): kernel_kind(k) for k in kernels}
    active: dict[str, dict[int, dict]] = {kind: {} for kind in _PRIORITY}
    exposed = {id(k): 0.0 for k in kernels}
    by_kind = dict.fromkeys(_PRIORITY, 0.0)
    busy = 0.0
    edges = _edges(kernels)
    last = edges[0][0] if edges else 0.0
    for t, step, k in edges:
        busy += _charge(active, t - last, exposed, by_kind)
        last = t
        if step > 0:
            active[kinds[id(k)]][id(k)] = k
        else:
            del active[kinds[id(k)]][id(k)]
    window = max(span(k)[1] for k in kernels) - min(float(k["ts"]) for k in kernels)
    return DeviceTimeline(device, window, busy, exposed, by_kind)


def _edges(kernels) -> list[tuple[float, int, dict]]:
    """Every kernel's start (+1) and end (-1), in time order, ends first at equal times.

    Only kernels that last: with ends first, a zero-length kernel's end would come before its own
    start and leave it running for ever.
    """
    edges = []
    for k in kernels:
        a, b = span(k)
        if b > a:
            edges.append((a, 1, k))
            edges.append((b, -1, k))
    edges.sort(key=lambda t: (t[0], t[1]))
    return edges


def _charge(active, length: float, exposed, by_kind) -> float:
    """Give ``length`` microseconds to the running kernels of the first kind in :data:`_PRIORITY`
    that has any, split evenly among them; returns the time charged (0 when nothing runs: idle)."""
    if length <= 0:
        return 0.0
    for kind in _PRIORITY:
        running = active[kind]
        if running:
            share = length / len(running)
            for key in running:
                exposed[key] += share
            by_kind[kind] += length
            return length
    return 0.0
