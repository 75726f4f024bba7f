"""A profile read into rows: the :class:`OpStat` rows and the :class:`Trace` the triage places.

Reads a Chrome trace exported by ``torch.profiler`` (its events read by
:mod:`roofline_lib.evidence.traces`), a live profile (:mod:`roofline_lib.evidence.profile_live`)
or hand-made rows. On a CPU each op call is a row of its own self time; on a GPU each kernel is
charged its exposed time in the merged kernel window and takes the counts of the innermost
enclosing op that has them. FLOPs and minimum bytes come from each op's recorded input shapes and
dtypes (:func:`roofline_lib.evidence.recorded_ops.count_op`): every input read once and every
output written once. A kernel no count reaches (no shapes, no formula, a compiled region, no op
tied to it) is a row of its own name, placed *by name only* where the name says what it does
(:mod:`roofline_lib.evidence.kernel_names`); the GPU a trace names is found in the registry by
:mod:`roofline_lib.evidence.trace_devices`.

Times are SI seconds here (the traces hold microseconds; they are converted on the way in).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from ..core.checks import _positive, _positive_int
from ..core.formatting import from_unit
from . import kernel_names, traces
from .profile_live import ProfiledRun, export_profile
from .recorded_ops import FILLED_FACTORIES, count_op

__all__ = ["OpStat", "Trace", "read_trace", "as_trace", "merge_rows", "NO_SHAPES"]


@dataclass(frozen=True)
class OpStat:
    """One row of a profile: an op, its calls and the time they took together (SI seconds).

    ``seconds`` is the total self time of all ``calls`` on the timeline read (CPU op self time,
    or GPU kernel time). ``flops`` and ``bytes_moved`` are totals over all calls; None means
    unknown (the row is then unclassified). ``family`` says which formula counted the op
    (:func:`count_op`; "communication" for collectives, "copy" for memory copies); ``precision``
    the precision its roof is read in; ``note`` why the counts are missing. ``kernel_seconds`` is
    the kernels' own run time when it differs from ``seconds`` (a GPU kernel overlapping others is
    charged only its exposed share of the window): rates are checked against the roof with it.
    ``named`` is "compute" or "memory" for a row without counts whose kernels' names say what they
    do (:mod:`roofline_lib.evidence.kernel_names`): it is placed *by name only*; "" otherwise.
    """

    name: str
    calls: int
    seconds: float
    flops: float | None = None
    bytes_moved: float | None = None
    family: str = ""
    precision: str | None = None
    note: str = ""
    kernel_seconds: float | None = None
    named: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise TypeError(f"name must be a non-empty string naming the operation, got {self.name!r}")
        object.__setattr__(self, "calls", _positive_int(self.calls, f"calls of {self.name}", "calls"))
        object.__setattr__(
            self, "seconds", _positive(self.seconds, f"seconds of {self.name}", "seconds", allow_zero=True)
        )
        if self.named not in ("", "compute", "memory"):
            raise ValueError(
                f"named must be '', 'compute' or 'memory' (the pile a kernel's name says), got {self.named!r}"
            )
        for attr, unit in (("flops", "FLOP"), ("bytes_moved", "bytes"), ("kernel_seconds", "seconds")):
            value = getattr(self, attr)
            if value is not None:
                object.__setattr__(self, attr, _positive(value, f"{attr} of {self.name}", unit, allow_zero=True))

    @property
    def counted(self) -> bool:
        return self.flops is not None and self.bytes_moved is not None

    @property
    def intensity(self) -> float | None:
        """FLOP per byte, None when uncounted or when the op moves no bytes."""
        if not self.counted or not self.bytes_moved:
            return None
        return self.flops / self.bytes_moved


@dataclass(frozen=True)
class Trace:
    """A profile read into rows: what the triage places (:mod:`roofline_lib.evidence.triage`).

    ``timeline`` is "cpu" (op self times on the host), "device" (GPU kernels) or "rows" (hand-made).
    ``window_seconds`` is the span read; ``busy_seconds`` the time covered by ops or kernels
    (their union), so ``window - busy`` is idle. ``gpu`` is the GPU the trace names, if any;
    ``has_shapes`` says whether shapes were recorded. ``notes`` say how the trace was read;
    ``collectives`` hold ``(kernel, collective, message_bytes, kernel_seconds, group_size)`` for
    each collective kernel (None where the trace does not say); ``distributed`` is the trace's
    ``distributedInfo`` (backend, rank, world size); ``device`` the ``deviceProperties`` entry of
    the GPU named (its compute units and capability tell AMD parts and dies apart); ``steps`` the
    number of complete ProfilerSteps read (None when the kernels were read without steps);
    ``kernel_spans`` each kernel's ``(start, end, exposed_seconds, row_index)`` on the trace's clock
    (seconds), in time order, for a picture of the piles over time.
    """

    rows: tuple[OpStat, ...]
    timeline: str
    window_seconds: float | None
    busy_seconds: float | None
    gpu: str | None = None
    has_shapes: bool = True
    notes: tuple[str, ...] = ()
    collectives: tuple[tuple, ...] = ()
    distributed: Mapping = field(default_factory=dict)
    device: Mapping = field(default_factory=dict)
    steps: int | None = None
    kernel_spans: tuple = ()


def merge_rows(rows) -> tuple[OpStat, ...]:
    """Rows of one op, family, precision, countedness and name class summed into one row (their
    calls, seconds and counts)."""
    merged: dict[tuple, dict] = {}
    for r in rows:
        key = _merge_key(r)
        m = merged.setdefault(
            key, {"calls": 0, "seconds": 0.0, "flops": 0.0, "bytes": 0.0, "note": r.note, "own": None}
        )
        m["calls"] += r.calls
        m["seconds"] += r.seconds
        if r.kernel_seconds is not None:
            m["own"] = (m["own"] or 0.0) + r.kernel_seconds
        if r.counted:
            m["flops"] += r.flops
            m["bytes"] += r.bytes_moved
    return tuple(
        OpStat(
            name,
            m["calls"],
            m["seconds"],
            m["flops"] if counted else None,
            m["bytes"] if counted else None,
            family,
            precision,
            m["note"],
            m["own"],
            named,
        )
        for (name, family, precision, counted, named), m in merged.items()
    )


def _from_plain(items: list) -> list[OpStat]:
    out = []
    for i, item in enumerate(items):
        if isinstance(item, OpStat):
            out.append(item)
        elif isinstance(item, Mapping):
            try:
                out.append(OpStat(**item))
            except TypeError as err:
                raise TypeError(f"profile row {i} {dict(item)!r} is not an OpStat: {err}") from None
        elif isinstance(item, tuple) and 3 <= len(item) <= 5:
            out.append(OpStat(*item))
        else:
            raise TypeError(
                f"profile row {i} must be an OpStat, a dict with its fields or a (name, calls, seconds"
                f"[, flops, bytes_moved]) tuple, got {type(item).__name__} {item!r}"
            )
    return out


def _union(intervals) -> float:
    """Total length covered by (start, end) intervals."""
    total, end = 0.0, -math.inf
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


#: What to do when a profile holds no shapes (no op can be counted).
NO_SHAPES = (
    "this profile has no input shapes, so no op's FLOPs or bytes can be counted: record it with "
    "torch.profiler.profile(activities=..., record_shapes=True, with_flops=True)"
)

# torch.compile's regions: the aten ops run inside the compiled graph are not in the trace
_COMPILED = re.compile(r"CompiledFunction|Torch-Compiled Region|CompiledFxGraph|torch_compile", re.IGNORECASE)


def _op_counts(cpu_ops) -> dict[int, tuple | None]:
    """Step: each CPU op's counts (:func:`count_op`), keyed by ``id(op)``."""
    counts = {}
    for e in cpu_ops:
        args = e.get("args") or {}
        counts[id(e)] = count_op(
            str(e.get("name")), args.get("Input Dims"), args.get("Input type"), args.get("Concrete Inputs")
        )
    return counts


def _composites(cpu_ops, parent, child_time, counts) -> set[int]:
    """Step: the ops that hand their work to the ops they call (their own self time is dispatch).

    A composite op (softmax -> _softmax, linear -> addmm) spends less time itself than in the ops
    it calls, and either has no formula while calling counted work, or calls an op that moves at
    least half the bytes its own count says it moves. (x * 1.5 calls a copy of the scalar 1.5: 4
    bytes against megabytes, so mul keeps its work. A fused op with no formula, such as
    _addmm_activation, or an addmm that copies its bias into the output first, runs its GEMM in
    its own self time: that time is work, counted or unclassified, never overhead.) A factory that
    allocates and then fills (zeros, full, ones_like...) always hands off, however long it ran.
    """

    def hands_off(e) -> bool:
        if str(e.get("name")).removeprefix("aten::").split(".")[0] in FILLED_FACTORIES:
            return True  # its fill is the work, whatever the clock says of its own time
        own_seconds = float(e.get("dur", 0.0)) - child_time.get(id(e), 0.0)
        return own_seconds <= child_time.get(id(e), 0.0)

    composite: set[int] = set()
    for e in cpu_ops:
        c = counts[id(e)]
        if c is None or not (c[0] or c[1]):
            continue
        p = parent[id(e)]
        while p is not None:
            own = counts[id(p)]
            if hands_off(p) and (own is None or (own[1] and c[1] >= 0.5 * own[1])):
                composite.add(id(p))
            p = parent[id(p)]
    return composite


def _why_uncounted(op) -> str:
    """The true reason an op has no counts."""
    name = str(op.get("name"))
    if _COMPILED.search(name):
        return f"compiled region: counts are inside {name} (profile without torch.compile to count them)"
    if "Input Dims" not in (op.get("args") or {}):
        return "no shapes recorded"
    return f"no formula for {name}"


def _cpu_rows(cpu_ops, counts, composite, child_time) -> list[OpStat]:
    """Step: one row per CPU op call, its self time, placed by its own counts."""
    rows = []
    for e in cpu_ops:
        seconds = from_unit(max(float(e["dur"]) - child_time.get(id(e), 0.0), 0.0), "us")
        name = str(e.get("name"))
        c = counts[id(e)]
        if id(e) in composite:
            rows.append(OpStat(name, 1, seconds, 0.0, 0.0, "dispatch"))
        elif c is None:
            rows.append(OpStat(name, 1, seconds, note=_why_uncounted(e)))
        else:
            rows.append(OpStat(name, 1, seconds, *c))
    return rows


def _counted_op(op, parent, counts):
    """The op whose counts a kernel takes: the innermost enclosing op with work counted, else None."""
    while op is not None:
        c = counts.get(id(op))
        if c is not None and (c[0] or c[1]):
            return op
        op = parent.get(id(op))
    return None


def _kept_ties(ties, bounds):
    """Step: the kernels of complete ProfilerSteps -- launched inside the steps' span; a kernel with no
    launch is kept when it starts inside the span of the kept ones. Returns (kept, n_left_out)."""
    if bounds is None:
        return list(ties), 0
    start, end, _ = bounds
    kept = [t for t in ties if t.launch is not None and start <= float(t.launch["ts"]) < end]
    last = max((float(t.kernel["ts"]) + float(t.kernel["dur"]) for t in kept), default=end)
    kept += [t for t in ties if t.launch is None and start <= float(t.kernel["ts"]) < last]
    return kept, len(ties) - len(kept)


_DTYPE_BYTES = {"float": 4, "double": 8, "half": 2, "bfloat16": 2, "int": 4, "long": 8, "int8": 1, "byte": 1}


def _message_bytes(kernel, op) -> float | None:
    """A collective's message size in bytes, from the kernel's or its record_param_comms op's args."""
    for src in (kernel, op):
        args = (src or {}).get("args") or {}
        n = args.get("In msg nelems")
        size = _DTYPE_BYTES.get(str(args.get("dtype", "")).lower())
        if n and size:
            return float(n) * size
    return None


def _collective(kernel, op) -> tuple[str | None, int | None]:
    """The collective's name and its group's size, where the trace records them."""
    for src in (kernel, op):
        args = (src or {}).get("args") or {}
        if args.get("Collective name"):
            return str(args["Collective name"]), int(args.get("Group size") or 0) or None
    name = str(kernel.get("name", ""))
    m = re.search(r"nccl(?:Dev)?Kernel_([A-Za-z]+)", name)
    return (m.group(1) if m else None), None


def _short(kernel_name: str) -> str:
    """A kernel's name for a row (:func:`roofline_lib.evidence.kernel_names.short_name`)."""
    return kernel_names.short_name(kernel_name)


def _copy_row(kernel, exposed) -> OpStat:
    """A memory copy or set: its bytes (when the trace records them) and no FLOPs."""
    b = (kernel.get("args") or {}).get("bytes")
    moved = float(b) if b else None
    return OpStat(
        _short(str(kernel.get("name", ""))),
        1,
        from_unit(exposed[id(kernel)], "us"),
        0.0 if moved else None,
        moved,
        "copy",
        note="" if moved else "no bytes recorded",
        kernel_seconds=from_unit(float(kernel["dur"]), "us"),
    )


def _collective_row(tie, exposed) -> tuple[OpStat, tuple]:
    """A collective kernel: its row (the message as its bytes) and ``(kernel, collective,
    message_bytes, kernel_seconds, group_size)`` for the communication evidence."""
    k = tie.kernel
    short = _short(str(k.get("name", "")))
    own = from_unit(float(k["dur"]), "us")
    message = _message_bytes(k, tie.op)
    name, ranks = _collective(k, tie.op)
    row = OpStat(short, 1, from_unit(exposed[id(k)], "us"), 0.0, message, "communication", kernel_seconds=own)
    return row, (short, name, message, own, ranks)


def _op_row(op, kernels, exposed, counts) -> OpStat:
    """The kernels of one counted op call as one row: their exposed time and the op's count (TF32
    when the kernel names say fp32 tensors ran on tensor cores)."""
    seconds = from_unit(sum(exposed[id(k)] for k in kernels), "us")
    own = from_unit(sum(float(k["dur"]) for k in kernels), "us")
    flops, moved, family, precision = counts[id(op)]
    if precision == "fp32" and any(traces.runs_tf32(str(k.get("name", ""))) for k in kernels):
        precision = "tf32"  # fp32 tensors on tensor cores: the kernel names say TF32
    return OpStat(str(op.get("name")), 1, seconds, flops, moved, family, precision, kernel_seconds=own)


def _named_row(op, kernels, exposed, named: kernel_names.KernelName) -> OpStat:
    """Kernels with no count and one name class as one row. A kernel whose name says what it does is
    a row of its own name, placed by name only (its op, if any, in the note); any other stays a row
    of its op call (or its own name when untied), unclassified with the reason it has no count."""
    seconds = from_unit(sum(exposed[id(k)] for k in kernels), "us")
    own = from_unit(sum(float(k["dur"]) for k in kernels), "us")
    why = _why_uncounted(op) if op is not None else "kernel not tied to any recorded op"
    if named.kind in ("compute", "memory"):
        where = f" (launched by {op.get('name')})" if op is not None and str(op.get("name")) not in why else ""
        return OpStat(
            _short(str(kernels[0].get("name", ""))),
            len(kernels),
            seconds,
            note=why + where,
            family=named.what,
            precision=named.precision,
            kernel_seconds=own,
            named=named.kind,
        )
    name = str(op.get("name")) if op is not None else _short(str(kernels[0].get("name", "")))
    calls = 1 if op is not None else len(kernels)
    return OpStat(name, calls, seconds, note=why, precision=named.precision, kernel_seconds=own)


def _kernel_rows(kept, exposed, parent, counts) -> tuple[list[OpStat], list[tuple], list[tuple]]:
    """Step: rows from the kernels. Kernels of one counted op call make one row (their exposed time,
    one count); kernels with no count make one row per op call (or kernel name) and kind by name;
    copies and collectives are rows of their own. Returns (rows, collectives, owners): ``owners``
    pairs each kernel with the row it went to."""
    counted: dict[int, tuple[dict, list]] = {}
    named: dict[tuple, tuple] = {}
    rows, collectives, owners = [], [], []
    for t in kept:
        kind = traces.kernel_kind(t.kernel)
        if kind == "copy":
            rows.append(_copy_row(t.kernel, exposed))
            owners.append((t.kernel, rows[-1]))
        elif kind == "communication":
            row, collective = _collective_row(t, exposed)
            rows.append(row)
            owners.append((t.kernel, row))
            collectives.append(collective)
        elif (op := _counted_op(t.op, parent, counts)) is not None:
            counted.setdefault(id(op), (op, []))[1].append(t.kernel)
        else:
            by_name = kernel_names.name_kernel(str(t.kernel.get("name", "")), str(t.kernel.get("cat", "")))
            short = _short(str(t.kernel.get("name", "")))
            # a kernel named by what it does is a row of its name; any other, of its op call
            where = short if by_name.kind in ("compute", "memory") or t.op is None else id(t.op)
            named.setdefault((where, by_name), (t.op, by_name, []))[2].append(t.kernel)
    for op, ks in counted.values():
        rows.append(_op_row(op, ks, exposed, counts))
        owners += [(k, rows[-1]) for k in ks]
    for op, by_name, ks in named.values():
        rows.append(_named_row(op, ks, exposed, by_name))
        owners += [(k, rows[-1]) for k in ks]
    return rows, collectives, owners


def _merge_key(r: OpStat) -> tuple:
    """What :func:`merge_rows` merges rows by."""
    return (r.name, r.family, r.precision, r.counted, r.named)


def _kernel_spans(owners, exposed, merged) -> tuple[tuple[float, float, float, int], ...]:
    """Step: each kernel's ``(start, end, exposed)`` in seconds and the index of its merged row."""
    index = {_merge_key(r): i for i, r in enumerate(merged)}
    spans = []
    for k, row in owners:
        start, end = traces.span(k)
        spans.append(
            (from_unit(start, "us"), from_unit(end, "us"), from_unit(exposed[id(k)], "us"), index[_merge_key(row)])
        )
    spans.sort()
    return tuple(spans)


def _device_props(meta, kernels) -> Mapping:
    """The ``deviceProperties`` entry of the device the kernels ran on (the first named, else any)."""
    props = [p for p in meta.get("deviceProperties") or [] if isinstance(p, Mapping) and p.get("name")]
    used = {traces.device_of(k) for k in kernels}
    named = [p for p in props if p.get("id") in used]
    chosen = named[0] if named else (min(props, key=lambda p: str(p["name"])) if props else {})
    return MappingProxyType(dict(chosen))


def read_trace(trace, *, allow_empty: bool = False, whole: bool = False, expect_cpu: bool = False) -> Trace:
    """Read a Chrome trace exported by ``torch.profiler`` (a path, or its parsed dict) into a :class:`Trace`.

    The reading is :mod:`roofline_lib.evidence.traces`'s, in steps. CPU ops (``cpu_op``, or ``Operator`` in
    older traces) give each op's self time and, from "Input Dims", "Input type" and "Concrete
    Inputs", its counts (:func:`count_op`). When the trace holds GPU kernels, the kernels are the
    timeline: each is tied to its launch by correlation id and to the op enclosing the launch by
    time, and takes the counts of the innermost enclosing op that has them. Only kernels of complete
    ``ProfilerStep``\\ s are read (``whole=True`` reads every kernel, as HTA does). Shares are taken over
    the merged kernel window of each device: a kernel's time is its exposed time
    (:func:`roofline_lib.evidence.traces.device_timeline`), so overlapping streams are not counted twice.
    A trace without GPU kernels is read as CPU work, and its notes say so (``expect_cpu=True``, for a
    profile recorded on the CPU on purpose, leaves that note out).
    """
    events = traces.sort_events(traces.load_trace(trace))
    _refuse_empty(events, allow_empty)
    cpu = events.cpu_ops
    has_shapes = any("Input Dims" in (e.get("args") or {}) for e in cpu) or not cpu
    parent, child_time = traces.nest_ops(cpu)
    counts = _op_counts(cpu)
    if events.kernels:
        return _device_trace(events, parent, counts, has_shapes, whole)
    return _cpu_trace(events, parent, child_time, counts, has_shapes, expect_cpu)


def _refuse_empty(events, allow_empty: bool) -> None:
    """Step: a trace with no op and no kernel has nothing to diagnose (a live profile says what to profile)."""
    if events.cpu_ops or events.kernels:
        return
    if allow_empty:
        raise ValueError(
            "the profile recorded no op and no kernel, so there is nothing to diagnose: profile a "
            "function that runs torch ops (profile_run(fn, ...) with fn doing the work)"
        )
    raise ValueError(
        "the trace holds no ops and no kernels (no 'cpu_op'/'Operator' or 'kernel'/'Kernel' events): "
        "pass a trace whose work ran inside the profiler (with a schedule, export after its active steps)"
    )


def _device_timelines(kept) -> list:
    """Step: one merged kernel window per device, in the order of the devices' ids."""
    by_device: dict = {}
    for t in kept:
        by_device.setdefault(traces.device_of(t.kernel), []).append(t.kernel)
    return [traces.device_timeline(ks, dev) for dev, ks in sorted(by_device.items(), key=lambda i: str(i[0]))]


def _device_notes(bounds, n_kept: int, left_out: int, n_devices: int) -> list[str]:
    """Step: how a GPU trace was read -- which steps' kernels, over which window."""
    notes = []
    if bounds is not None:
        notes.append(
            f"read {n_kept:,} kernels of {bounds[2]} complete ProfilerSteps"
            + (f" ({left_out:,} launched outside them left out)" if left_out else "")
        )
    notes.append(
        "shares over the merged kernel window of "
        + ("each device" if n_devices > 1 else "the device")
        + ": overlapping kernels share their time, collectives hidden behind computation cost nothing"
    )
    return notes


def _device_trace(events, parent, counts, has_shapes: bool, whole: bool) -> Trace:
    """Step: a trace with GPU kernels, read on the kernels' timeline."""
    bounds = None if whole else traces.step_bounds(events)
    kept, left_out = _kept_ties(traces.tie_kernels(events), bounds)
    if not kept:
        raise ValueError(
            "no kernel was launched inside the trace's ProfilerSteps: pass whole=True to read every kernel"
        )
    timelines = _device_timelines(kept)
    device = _device_props(events.meta, [t.kernel for t in kept])
    exposed = {key: v for tl in timelines for key, v in tl.exposed.items()}
    rows, collectives, owners = _kernel_rows(kept, exposed, parent, counts)
    merged = merge_rows(rows)
    return Trace(
        merged,
        "device",
        from_unit(sum(tl.window for tl in timelines), "us"),
        from_unit(sum(tl.busy for tl in timelines), "us"),
        device.get("name"),
        has_shapes,
        tuple(_device_notes(bounds, len(kept), left_out, len(timelines))),
        tuple(collectives),
        MappingProxyType(dict(events.meta.get("distributedInfo") or {})),
        device,
        bounds[2] if bounds is not None else None,
        _kernel_spans(owners, exposed, merged),
    )


def _cpu_trace(events, parent, child_time, counts, has_shapes: bool, expect_cpu: bool) -> Trace:
    """Step: a trace of CPU ops alone, read on the host: each op's self time; the window is the
    steps' span (or the ops' own)."""
    cpu = events.cpu_ops
    composite = _composites(cpu, parent, child_time, counts)
    rows = _cpu_rows(cpu, counts, composite, child_time)
    spans = [traces.span(e) for e in cpu]
    busy = from_unit(_union(spans), "us")
    frame = [traces.span(s) for s in events.steps] or spans
    window = from_unit(max(b for _, b in frame) - min(a for a, _ in frame), "us")
    notes = () if expect_cpu else (_no_kernels_note(events.meta),)
    return Trace(merge_rows(rows), "cpu", window, busy, None, has_shapes, notes)


def _no_kernels_note(meta) -> str:
    """Step: what a trace without GPU kernels is read as, and why there are none when GPUs were there."""
    gpus = sorted(
        {str(p["name"]) for p in meta.get("deviceProperties") or () if isinstance(p, Mapping) and p.get("name")}
    )
    if gpus:
        return (
            f"no GPU kernels in this trace although it lists {', '.join(gpus)}: read as CPU work only (op self "
            "times on the host); record with ProfilerActivity.CUDA to see the GPU"
        )
    return "no GPU kernels in this trace: read as CPU work only (op self times on the host)"


def as_trace(profile) -> Trace:
    """Any profile :func:`~roofline_lib.evidence.diagnose.diagnose` accepts, read into a :class:`Trace`.

    A :class:`Trace` (as it is), a :class:`~roofline_lib.evidence.profile_live.ProfiledRun` or a
    ``torch.profiler.profile`` (its Chrome trace exported), a Chrome-trace JSON (a path, the parsed
    dict or its event list), or rows (:class:`OpStat`, dicts with its fields, or tuples).
    """
    obj = profile.profile if isinstance(profile, ProfiledRun) else profile
    if isinstance(obj, Trace):
        return obj
    if obj is None or isinstance(obj, (bytes, int, float, bool)):
        raise TypeError(
            "profile must be a torch profiler result, a ProfiledRun, a Chrome-trace JSON (path or dict) "
            f"or a list of OpStat rows, got {type(obj).__name__} {obj!r}"
        )
    if callable(getattr(obj, "export_chrome_trace", None)):
        return read_trace(export_profile(obj), allow_empty=isinstance(profile, ProfiledRun), expect_cpu=True)
    if isinstance(obj, (str, os.PathLike, Mapping)):
        return read_trace(obj)
    if isinstance(obj, (list, tuple)):
        if obj and all(isinstance(i, Mapping) and "ph" in i for i in obj):
            return read_trace(list(obj))
        rows = _from_plain(list(obj))
        if not rows:
            raise ValueError("the profile is empty: no rows")
        return Trace(merge_rows(rows), "rows", None, None)
    raise TypeError(
        "profile must be a torch profiler result, a ProfiledRun, a Chrome-trace JSON (path or dict) "
        f"or a list of OpStat rows, got {type(obj).__name__}"
    )
