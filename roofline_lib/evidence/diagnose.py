"""The playbook's triage as code: read a profile, place its time on the roofline, name the regime.

Every second of a profile is put in one of five piles by the rules in :data:`TRIAGE_RULES`, in
order; the chapter draws the same rules as a decision tree (:func:`plot_triage`):

1. time the device sat idle -- gaps in the merged kernel window on a GPU timeline, wall-clock
   time outside every op on a CPU -- is **overhead**;
2. a collective (an NCCL or RCCL kernel) is **communication**, set against the network roof of
   chapter 8 where the link is known (``link=``): only its exposed time counts, the part no
   computation kernel overlaps;
3. on a CPU, the measured fixed cost of each op call (:func:`measure_fixed_cost`) is **overhead**;
   a GPU kernel's time never is: its launch cost shows up as idle gaps, not inside the kernel;
4. an op whose FLOPs or minimum bytes cannot be counted is **unclassified** -- never guessed
   from its name -- with the reason (no formula for the op, a torch.compile region, no shapes);
5. an op that does no arithmetic and moves no data (a view, an allocation, a composite op's own
   dispatch time outside the ops it calls) is **overhead**;
6. otherwise the op's intensity (FLOP per minimum byte) against the ridge of the roof in use
   decides: below it **memory**, at or above it **compute**.

The verdict is the pile that holds more than half of the time, or **mixed** when none does
(:data:`MAJORITY`). The remedy follows the verdict and the kind of op that dominates it.

FLOPs and minimum bytes come from each op's recorded input shapes and dtypes through the
library's op formulas (:mod:`roofline_lib.core.ops`, :mod:`roofline_lib.evidence.recorded_ops`); minimum bytes
count every input read once and every output written once. The roof in use is this machine's
measured roof for a CPU profile and the GPU's datasheet roof in the op's precision for a GPU
trace (TF32 for fp32 GEMMs whose kernel names say they ran on tensor cores); every verdict names
its roof and the precisions of the work placed under it. Traces are read by
:mod:`roofline_lib.evidence.traces`.

Inputs :func:`diagnose` accepts:

* a :class:`ProfiledRun` from :func:`profile_run`, or a ``torch.profiler.profile`` object (CPU or
  CUDA), recorded with ``record_shapes=True``;
* a Chrome-trace JSON exported by ``torch.profiler`` (``prof.export_chrome_trace(path)``): a path,
  or the parsed dict -- so a GPU run can be diagnosed on a laptop;
* a list of :class:`OpStat` rows, dicts with the same keys, or ``(name, calls, seconds)`` tuples.

Times are SI seconds throughout (torch's traces hold microseconds; they are converted on the way
in). torch is imported only by the functions that profile.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import statistics
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

from ..core.checks import _positive, _positive_int
from ..core.formatting import seconds as _fmt_seconds
from ..core.hardware import GPUSpec, _gpu, _precision_key, as_gpu
from ..core.roofline import PLAUSIBILITY_TOLERANCE, Roof, check_plausible
from ..core.roofline import roof as _as_roof
from . import traces
from .recorded_ops import count_op

__all__ = [
    "PILES",
    "VERDICTS",
    "MAJORITY",
    "Rule",
    "TRIAGE_RULES",
    "REMEDIES",
    "OpStat",
    "Trace",
    "Diagnosis",
    "count_op",
    "read_trace",
    "ProfiledRun",
    "profile_run",
    "quiet_profiler_log",
    "measure_fixed_cost",
    "diagnose",
    "plot_triage",
    "measured_mfu",
]

#: Where each second of a profile can land.
PILES = ("compute", "memory", "communication", "overhead", "unclassified")

#: What :func:`diagnose` can say: a pile holding the majority, or "mixed".
VERDICTS = (*PILES, "mixed")

#: A pile names the verdict only with more than this share of the time.
MAJORITY = 0.5

_US = 1e-6  # Chrome traces hold microseconds


@dataclass(frozen=True)
class Rule:
    """One branch point of the triage: a question and where each answer leads.

    ``yes`` and ``no`` are a pile (:data:`PILES`) or the ``key`` of the next rule.
    """

    key: str
    question: str
    yes: str
    no: str


#: The triage, in the order :func:`diagnose` applies it to each slice of time.
TRIAGE_RULES = (
    Rule("idle", "device idle?\n(gap between kernels; CPU\nwall time outside every op)", "overhead", "comm"),
    Rule("comm", "a collective?\n(NCCL/RCCL kernel, time\nno computation hides)", "communication", "fixed"),
    Rule("fixed", "fixed cost of a call?\n(CPU: the measured cost\nof an empty op, per call)", "overhead", "counted"),
    Rule("counted", "FLOPs and minimum bytes\nknown? (shapes, dtypes)", "work", "unclassified"),
    Rule("work", "does any arithmetic or\nmoves any data?", "ridge", "overhead"),
    Rule("ridge", "intensity below the ridge\nof the roof in use?", "memory", "compute"),
)
_RULES = {r.key: r for r in TRIAGE_RULES}


def _walk(facts: Mapping[str, bool]) -> str:
    """Follow :data:`TRIAGE_RULES` from the first rule with the answers in ``facts``; return the pile."""
    node = TRIAGE_RULES[0].key
    while node in _RULES:
        rule = _RULES[node]
        node = rule.yes if facts[rule.key] else rule.no
    return node


#: The playbook's next step for each verdict (memory-bound weight reads get their own, below).
REMEDIES = MappingProxyType(
    {
        "compute": "raise the compute roof or do fewer FLOPs: a narrower precision (bf16, fp8) on "
        "tensor cores, a better-tiled GEMM, shapes that are multiples of the tile size, fewer "
        "FLOPs per token",
        "memory": "move fewer bytes per FLOP: fuse chains of element-wise, norm and softmax ops "
        "(torch.compile) so intermediates stay on chip, keep attention tiles on chip "
        "(FlashAttention), narrower activations",
        "memory-matmul": "batch more sequences per weight read, or store weights in fewer bits "
        "(int8, fp8, int4): every weight byte read then serves more FLOPs",
        "compute-cpu": "do fewer FLOPs or run them faster: a BLAS/oneDNN kernel instead of a loop of "
        "small ops, shapes that fill the vector units, more threads; a narrower precision only "
        "where this CPU has matrix units for it (time it first: bf16 without them is slower)",
        "communication": "hide or shrink the collectives: overlap them with computation (bucketed "
        "gradient all-reduce, prefetching in FSDP), send fewer bytes (bf16 gradients, larger "
        "buckets, fewer, bigger messages), or a faster link; set them against the link's roof "
        "with link= (chapter 8)",
        "overhead": "stop paying per call: batch the work into fewer, larger calls, fuse tiny "
        "ops, capture the step in a CUDA graph, remove host syncs (.item(), .cpu()) inside the loop",
        "unclassified": "record the profile with torch.profiler.profile(record_shapes=True, "
        "with_flops=True) so each op's FLOPs and bytes can be counted, or give rows their flops= "
        "and bytes_moved=",
        "unclassified-recorded": "count what is left: the shapes were recorded, so each op's reason is "
        "in the evidence -- profile torch.compile regions without torch.compile, and give ops with no "
        "formula their counts (rows with flops= and bytes_moved=)",
        "mixed": "no single fix: start with the largest pile",
    }
)


# --------------------------------------------------------------------------- rows


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

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise TypeError(f"name must be a non-empty string naming the operation, got {self.name!r}")
        object.__setattr__(self, "calls", _positive_int(self.calls, f"calls of {self.name}", "calls"))
        object.__setattr__(
            self, "seconds", _positive(self.seconds, f"seconds of {self.name}", "seconds", allow_zero=True)
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
    """A profile read into rows: what :func:`diagnose` works on.

    ``timeline`` is "cpu" (op self times on the host), "device" (GPU kernels) or "rows" (hand-made).
    ``window_seconds`` is the span read; ``busy_seconds`` the time covered by ops or kernels
    (their union), so ``window - busy`` is idle. ``gpu`` is the GPU the trace names, if any;
    ``has_shapes`` says whether shapes were recorded. ``notes`` say how the trace was read;
    ``collectives`` hold ``(kernel, collective, message_bytes, kernel_seconds, group_size)`` for
    each collective kernel (None where the trace does not say); ``distributed`` is the trace's
    ``distributedInfo`` (backend, rank, world size).
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


def _merge(rows) -> tuple[OpStat, ...]:
    merged: dict[tuple, dict] = {}
    for r in rows:
        key = (r.name, r.family, r.precision, r.counted)
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
        )
        for (name, family, precision, counted), m in merged.items()
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


_NO_SHAPES = (
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
    its own self time: that time is work, counted or unclassified, never overhead.)
    """

    def hands_off(e) -> bool:
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
        seconds = max(float(e["dur"]) - child_time.get(id(e), 0.0), 0.0) * _US
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
    """A kernel's name without its return type, template and parameter lists."""
    name = kernel_name.split("(")[0].split("<")[0].strip()
    name = name[5:] if name.startswith("void ") else name
    return name.strip() or "kernel"


def _kernel_rows(kept, exposed, parent, counts) -> tuple[list[OpStat], list[tuple]]:
    """Step: rows from the kernels. Kernels of one op call make one row (their exposed time, one count);
    copies and collectives are rows of their own. Returns (rows, collectives)."""
    groups: dict[int, list] = {}
    owner: dict[int, dict | None] = {}
    rows, collectives = [], []
    for t in kept:
        k = t.kernel
        kind = traces.kernel_kind(k)
        short = _short(str(k.get("name", "")))
        seconds, own = exposed[id(k)] * _US, float(k["dur"]) * _US
        if kind == "copy":
            b = (k.get("args") or {}).get("bytes")
            moved = float(b) if b else None
            rows.append(
                OpStat(
                    short,
                    1,
                    seconds,
                    0.0 if moved else None,
                    moved,
                    "copy",
                    note="" if moved else "no bytes recorded",
                    kernel_seconds=own,
                )
            )
            continue
        if kind == "communication":
            message = _message_bytes(k, t.op)
            name, ranks = _collective(k, t.op)
            rows.append(OpStat(short, 1, seconds, 0.0, message, "communication", kernel_seconds=own))
            collectives.append((short, name, message, own, ranks))
            continue
        op = _counted_op(t.op, parent, counts) or t.op
        key = id(op) if op is not None else id(k)
        groups.setdefault(key, []).append(k)
        owner[key] = op
    for key, ks in groups.items():
        op = owner[key]
        seconds = sum(exposed[id(k)] for k in ks) * _US
        own = sum(float(k["dur"]) for k in ks) * _US
        if op is None:
            rows.append(
                OpStat(
                    _short(str(ks[0].get("name", ""))),
                    len(ks),
                    seconds,
                    note="kernel not tied to any recorded op",
                    kernel_seconds=own,
                )
            )
            continue
        name, c = str(op.get("name")), counts.get(id(op))
        if c is None:
            rows.append(OpStat(name, 1, seconds, note=_why_uncounted(op), kernel_seconds=own))
            continue
        flops, moved, family, precision = c
        if precision == "fp32" and any(traces.runs_tf32(str(k.get("name", ""))) for k in ks):
            precision = "tf32"  # fp32 tensors on tensor cores: the kernel names say TF32
        rows.append(OpStat(name, 1, seconds, flops, moved, family, precision, kernel_seconds=own))
    return rows, collectives


def _device_names(meta, kernels) -> str | None:
    props = [p for p in meta.get("deviceProperties") or [] if isinstance(p, Mapping) and p.get("name")]
    used = {(k.get("args") or {}).get("device") for k in kernels}
    named = [str(p["name"]) for p in props if p.get("id") in used]
    names = sorted({str(p["name"]) for p in props})
    return named[0] if named else (names[0] if names else None)


def read_trace(trace, *, allow_empty: bool = False, whole: bool = False) -> Trace:
    """Read a Chrome trace exported by ``torch.profiler`` (a path, or its parsed dict) into a :class:`Trace`.

    The reading is :mod:`roofline_lib.evidence.traces`'s, in steps. CPU ops (``cpu_op``, or ``Operator`` in
    older traces) give each op's self time and, from "Input Dims", "Input type" and "Concrete
    Inputs", its counts (:func:`count_op`). When the trace holds GPU kernels, the kernels are the
    timeline: each is tied to its launch by correlation id and to the op enclosing the launch by
    time, and takes the counts of the innermost enclosing op that has them. Only kernels of complete
    ``ProfilerStep``\\ s are read (``whole=True`` reads every kernel, as HTA does). Shares are taken over
    the merged kernel window of each device: a kernel's time is its exposed time
    (:func:`roofline_lib.evidence.traces.device_timeline`), so overlapping streams are not counted twice.
    """
    loaded = traces.load_trace(trace)
    events = traces.sort_events(loaded)
    cpu, kernels = events.cpu_ops, events.kernels
    if not cpu and not kernels:
        if allow_empty:
            raise ValueError(
                "the profile recorded no op and no kernel, so there is nothing to diagnose: profile a "
                "function that runs torch ops (profile_run(fn, ...) with fn doing the work)"
            )
        raise ValueError(
            "the trace holds no ops and no kernels (no 'cpu_op'/'Operator' or 'kernel'/'Kernel' events): "
            "pass a trace whose work ran inside the profiler (with a schedule, export after its active steps)"
        )
    has_shapes = any("Input Dims" in (e.get("args") or {}) for e in cpu) or not cpu
    parent, child_time = traces.nest_ops(cpu)
    counts = _op_counts(cpu)
    bounds = traces.step_bounds(events)
    if kernels:
        ties = traces.tie_kernels(events)
        kept, left_out = _kept_ties(ties, None if whole else bounds)
        if not kept:
            raise ValueError(
                "no kernel was launched inside the trace's ProfilerSteps: pass whole=True to read every kernel"
            )
        by_device: dict = {}
        for t in kept:
            by_device.setdefault((t.kernel.get("args") or {}).get("device"), []).append(t.kernel)
        timelines = [traces.device_timeline(ks, dev) for dev, ks in sorted(by_device.items(), key=lambda i: str(i[0]))]
        exposed = {key: v for tl in timelines for key, v in tl.exposed.items()}
        rows, collectives = _kernel_rows(kept, exposed, parent, counts)
        window = sum(tl.window for tl in timelines) * _US
        busy = sum(tl.busy for tl in timelines) * _US
        notes = []
        if bounds is not None and not whole:
            notes.append(
                f"read {len(kept):,} kernels of {bounds[2]} complete ProfilerSteps"
                + (f" ({left_out:,} launched outside them left out)" if left_out else "")
            )
        notes.append(
            "shares over the merged kernel window of "
            + ("each device" if len(timelines) > 1 else "the device")
            + ": overlapping kernels share their time, collectives hidden behind computation cost nothing"
        )
        gpu = _device_names(events.meta, [t.kernel for t in kept])
        return Trace(
            _merge(rows),
            "device",
            window,
            busy,
            gpu,
            has_shapes,
            tuple(notes),
            tuple(collectives),
            MappingProxyType(dict(events.meta.get("distributedInfo") or {})),
        )
    composite = _composites(cpu, parent, child_time, counts)
    rows = _cpu_rows(cpu, counts, composite, child_time)
    spans = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in cpu]
    busy = _union(spans) * _US
    frame = [(float(s["ts"]), float(s["ts"]) + float(s["dur"])) for s in events.steps] or spans
    window = (max(b for _, b in frame) - min(a for a, _ in frame)) * _US
    return Trace(_merge(rows), "cpu", window, busy, None, has_shapes)


# --------------------------------------------------------------------------- profiling live


@dataclass(frozen=True)
class ProfiledRun:
    """A torch profiler result, the wall-clock seconds of the run it recorded, and the fixed cost
    of one op call measured under the same profiler (:func:`measure_fixed_cost`)."""

    profile: object
    wall_seconds: float
    calls: int = 1
    fixed_cost_seconds: float | None = None


def _export(profile) -> dict:
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
        (e["dur"]) * _US
        for e in _export(prof)["traceEvents"]
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
    measured under the same profiler settings, for :func:`diagnose`.
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


def _read(profile) -> Trace:
    obj = profile
    if isinstance(obj, ProfiledRun):
        obj = obj.profile
    if isinstance(obj, Trace):
        return obj
    if obj is None or isinstance(obj, (bytes, int, float, bool)):
        raise TypeError(
            "profile must be a torch profiler result, a ProfiledRun, a Chrome-trace JSON (path or dict) "
            f"or a list of OpStat rows, got {type(obj).__name__} {obj!r}"
        )
    if callable(getattr(obj, "export_chrome_trace", None)):
        return read_trace(_export(obj), allow_empty=isinstance(profile, ProfiledRun))
    if isinstance(obj, (str, os.PathLike, Mapping)):
        return read_trace(obj)
    if isinstance(obj, (list, tuple)):
        if obj and all(isinstance(i, Mapping) and "ph" in i for i in obj):
            return read_trace(list(obj))
        rows = _from_plain(list(obj))
        if not rows:
            raise ValueError("the profile is empty: no rows")
        return Trace(_merge(rows), "rows", None, None)
    raise TypeError(
        "profile must be a torch profiler result, a ProfiledRun, a Chrome-trace JSON (path or dict) "
        f"or a list of OpStat rows, got {type(obj).__name__}"
    )


# --------------------------------------------------------------------------- the verdict


@dataclass(frozen=True)
class Diagnosis:
    """The verdict of :func:`diagnose`: a regime, the shares behind it, and the evidence.

    ``shares`` and ``seconds`` are keyed by pile (:data:`PILES`); the shares add up to 1.
    ``regime`` is the pile holding more than :data:`MAJORITY` of the time, or "mixed".
    ``rows`` holds every row and ``placed`` the pile each row's work time went to, in order.
    ``roof_label`` names the roof (or roofs) used; ``precisions`` the share of the placed work
    (compute and memory) in each precision. ``remedy`` is the playbook's next step for this verdict.
    """

    regime: str
    evidence: tuple[str, ...]
    shares: Mapping[str, float]
    seconds: Mapping[str, float]
    total_seconds: float
    timeline: str
    roof_label: str
    rows: tuple[OpStat, ...]
    placed: tuple[str, ...]
    remedy: str
    precisions: Mapping[str, float] = field(default_factory=dict)

    def __str__(self) -> str:
        if self.regime == "mixed":
            head = "mixed: " + ", ".join(f"{p} {self.shares[p]:.0%}" for p in PILES if self.shares[p] >= 0.005)
        else:
            head = f"{self.regime}-bound ({self.shares[self.regime]:.0%} of the time)"
            if self.regime == "unclassified":
                head = f"unclassified ({self.shares[self.regime]:.0%} of the time could not be counted)"
        return "\n".join([head, *(f"  - {line}" for line in self.evidence), f"  next: {self.remedy}"])


def _roof_for(row: OpStat, roof_arg, trace: Trace, precision, cache) -> Roof | None:
    """The roof a row is placed against: the caller's, or the trace's GPU in the row's precision
    (None when the GPU has no roof in that precision: the row is then unclassified)."""
    source = roof_arg
    if source is None:
        if trace.timeline != "device":
            raise ValueError(
                "a CPU profile needs this machine's roof: pass roof=measure.measure_ceilings(device='cpu') "
                "(or a Roof, or a GPU for hand-made rows)"
            )
        if trace.gpu is None:
            raise ValueError(
                "the trace names no GPU (it has no 'deviceProperties'): pass roof=<a registry GPU name, "
                "e.g. 'H100'> or roof=rl.Roof(peak_flops_per_s, bytes_per_s, label)"
            )
        source = _gpu_of(trace.gpu)
    if isinstance(source, (GPUSpec, str)):
        spec = as_gpu(source) if not isinstance(source, GPUSpec) else source
        p = precision or row.precision or "fp32"
        if precision is None and p not in spec.precisions:  # an fp64 op: no roof in the registry to place it under
            return None
        key = (spec.name, p)
        if key not in cache:
            cache[key] = Roof.of_gpu(spec, p)
        return cache[key]
    return _as_roof(source)


def _gpu_of(name: str) -> GPUSpec:
    try:
        return as_gpu(name)
    except ValueError:
        pass
    from .records import match_gpu  # torch's device names ("NVIDIA H100 80GB HBM3") -> registry

    try:
        return match_gpu(name)
    except (ValueError, TypeError):
        from ..core.hardware import known_gpus

        raise ValueError(
            f"the trace was recorded on {name!r}, which the registry does not know (it knows: "
            f"{', '.join(known_gpus())}): pass roof=<the nearest registry GPU> or "
            "roof=rl.Roof(peak_flops_per_s, bytes_per_s, label) with your GPU's datasheet figures"
        ) from None


def _names(rows, limit: int = 3, with_intensity: bool = False) -> str:
    rows = sorted(rows, key=lambda r: -r.seconds)
    parts = []
    for r in rows[:limit]:
        bit = f"{r.name} x{r.calls}"
        if with_intensity and r.intensity is not None:
            bit += f" at {r.intensity:.3g} FLOP/B"
        parts.append(bit)
    return ", ".join(parts) + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


@dataclass
class _Placement:
    """What placing the rows gives: the seconds per pile and the evidence gathered on the way."""

    piles: dict
    placed: list
    used_roofs: list
    fixed_total: float = 0.0
    idle: float = 0.0
    no_data_rows: list = None
    fast_rows: list = None
    roof_precision: dict = None  # id(roof) -> the precision it was read in (None: as given)


def _check_args(profile, wall_seconds, fixed_cost_seconds, precision):
    """Step: the keyword arguments checked, a ProfiledRun's own wall time and fixed cost taken."""
    wall = None if wall_seconds is None else _positive(wall_seconds, "wall_seconds", "seconds")
    fixed = (
        None
        if fixed_cost_seconds is None
        else _positive(fixed_cost_seconds, "fixed_cost_seconds", "seconds", allow_zero=True)
    )
    if isinstance(profile, ProfiledRun):
        wall = wall if wall is not None else profile.wall_seconds
        fixed = fixed if fixed is not None else profile.fixed_cost_seconds
    if precision is not None and not isinstance(precision, str):
        raise TypeError(f"precision must be a precision name such as 'bf16', got {precision!r}")
    return wall, fixed


def _idle(trace: Trace, wall, op_seconds, evidence) -> float:
    """Step: the idle time -- the span read minus the time the ops or kernels cover."""
    span = wall if wall is not None else trace.window_seconds
    busy = trace.busy_seconds if trace.busy_seconds is not None else op_seconds
    if span is None:
        return 0.0
    if span >= busy:
        return span - busy
    evidence.append(
        f"the ops cover {_fmt_seconds(busy)}, more than the {_fmt_seconds(span)} span read: they "
        "overlap across threads or streams; no idle time counted"
    )
    return 0.0


def _place(rows, trace: Trace, roof, precision, fixed: float, idle: float) -> _Placement:
    """Step: walk :data:`TRIAGE_RULES` for every row; its work goes to one pile."""
    out = _Placement(dict.fromkeys(PILES, 0.0), [], [], no_data_rows=[], fast_rows=[], roof_precision={})
    out.idle = idle
    out.piles[_walk({"idle": True})] += idle
    roofs: dict = {}
    for r in rows:
        comm = r.family == "communication"
        fixed_part = 0.0 if comm else min(r.seconds, fixed * r.calls)
        out.fixed_total += fixed_part
        if fixed_part:
            out.piles[_walk({"idle": False, "comm": False, "fixed": True})] += fixed_part
        work = r.seconds - fixed_part
        facts = {
            "idle": False,
            "comm": comm,
            "fixed": False,
            "counted": r.counted,
            "work": bool(r.counted and (r.flops or r.bytes_moved)),
        }
        the_roof = _roof_for(r, roof, trace, precision, roofs) if facts["work"] and not comm else None
        if facts["work"] and not comm and the_roof is None:
            facts["counted"] = facts["work"] = False  # counted, but no roof in its precision
        if the_roof is not None:
            if the_roof not in out.used_roofs:
                out.used_roofs.append(the_roof)
            facts["ridge"] = r.flops < the_roof.ridge * r.bytes_moved  # intensity below the ridge
            run = r.kernel_seconds if r.kernel_seconds is not None else r.seconds
            if run > 0:
                try:
                    check_plausible(
                        r.flops / run, r.bytes_moved / run, the_roof, tolerance=PLAUSIBILITY_TOLERANCE, what=r.name
                    )
                except ValueError:
                    out.fast_rows.append(r)
        pile = _walk(facts)
        if pile == "overhead" and facts["counted"]:
            out.no_data_rows.append(r)
        out.placed.append(pile)
        out.piles[pile] += work
    return out


def _roof_and_precision(rows, placed, used_roofs, roof, trace: Trace, precision) -> tuple[str, dict, list[str]]:
    """Step: the label of the roof(s) used, the share of placed work per precision, and what to say
    about a precision the roof was not measured in."""
    labels = sorted({f"{ro.label} (ridge {ro.ridge:.3g} FLOP/B)" for ro in used_roofs})
    roof_label = "; ".join(labels) if labels else "none needed"
    work = {}
    for r, p in zip(rows, placed):
        if p in ("compute", "memory") and r.family != "copy":
            key = precision or r.precision or "unknown"
            work[key] = work.get(key, 0.0) + r.seconds
    total = sum(work.values())
    shares = {k: v / total for k, v in sorted(work.items(), key=lambda i: -i[1])} if total else {}
    lines = []
    measured_in = getattr(roof, "precision", None)
    if shares:
        text = ", ".join(f"{k} {v:.0%}" for k, v in shares.items())
        where = {
            "device": "each kernel's op read under the GPU's datasheet roof in its own precision"
            if precision is None and not isinstance(roof, Roof)
            else f"all work read under the {precision or 'given'} roof",
            "cpu": f"the roof was measured here in {measured_in}" if measured_in else "the roof given",
            "rows": f"the roof given ({precision or 'each row in its own precision'})",
        }[trace.timeline]
        lines.append(f"precision of the placed work: {text}; {where}")
        if measured_in and any(k not in (measured_in, "unknown") for k in shares):
            other = ", ".join(k for k in shares if k not in (measured_in, "unknown"))
            lines.append(
                f"{other} work is placed against this machine's {measured_in} roof, the only one measured "
                f"here: a {other} rate on this CPU may be lower or higher -- time it before choosing a precision"
            )
    else:
        lines.append(
            "precision of the placed work: none -- no counted arithmetic was placed (memory copies at most, "
            "which no precision changes)"
        )
    return roof_label, shares, lines


def _communication_lines(rows, placed, shares, trace: Trace, link) -> list[str]:
    """Step: the communication pile against the network roof (chapter 8) where the link is known."""
    members = [r for r, p in zip(rows, placed) if p == "communication"]
    if not members:
        return []
    summed = sum(r.kernel_seconds or r.seconds for r in members)
    line = (
        f"communication: {shares['communication']:.0%} exposed ({_names(members)}; "
        f"{_fmt_seconds(summed)} of collective kernels, the rest hidden behind computation)"
    )
    known = [c for c in trace.collectives if c[1] and c[2] and c[4] and c[4] >= 2]
    if link is None:
        size = trace.distributed.get("world_size") if trace.distributed else None
        line += (
            "; the trace does not say which link carried them"
            + (f" ({size} ranks)" if size else "")
            + ": pass link=<a chapter 8 link, e.g. 'NVLink 3'> to set them against its roof"
        )
        return [line]
    from ..core.interconnect import as_link
    from ..workloads import comms

    spec = as_link(link)

    def modelled(c) -> bool:  # a collective chapter 8 prices (no broadcast, say)
        try:
            comms.bus_bandwidth_factor(c[1], c[4])
        except ValueError:
            return False
        return True

    known = [c for c in known if modelled(c)]
    if not known:
        return [
            line + f"; no collective chapter 8 prices records its message size and group, so none is set "
            f"against {spec.name}"
        ]
    moved = sum(c[2] for c in known)
    seconds = sum(c[3] for c in known)
    bus = sum(comms.bus_bandwidth(c[1], c[2], c[3], c[4]) * c[3] for c in known) / seconds
    line += (
        f"; {len(known)} collectives moved {moved / 1e6:.3g} MB at a bus bandwidth of {bus / 1e9:.3g} GB/s, "
        f"{bus / spec.bytes_per_s:.0%} of the {spec.name} roof ({spec.bytes_per_s / 1e9:.3g} GB/s one way)"
    )
    return [line]


def _evidence(out: _Placement, rows, shares, total, trace: Trace, fixed, roof_label, extra) -> list[str]:
    """Step: the evidence, pile by pile."""
    clock = {
        "cpu": "op self time on the CPU",
        "device": "the merged GPU kernel window",
        "rows": "the rows given",
    }[trace.timeline]
    n_calls = sum(r.calls for r in rows)
    lines = [f"{_fmt_seconds(total)} read from {clock}, {n_calls:,} calls of {len(rows)} ops; roof: {roof_label}"]
    lines += list(trace.notes) + extra["precision"]
    for pile in ("memory", "compute"):
        members = [r for r, p in zip(rows, out.placed) if p == pile]
        if members:
            lines.append(
                f"{pile}-bound work, intensity {'below' if pile == 'memory' else 'at or above'} the "
                f"ridge: {shares[pile]:.0%} ({_names(members, with_intensity=True)})"
            )
    lines += extra["communication"]
    parts = []
    if out.idle:
        parts.append(
            ("idle gaps between kernels" if trace.timeline == "device" else "wall time outside every op")
            + f" {out.idle / total:.0%}"
        )
    if out.fixed_total:
        parts.append(f"fixed cost {_fmt_seconds(fixed)} x {n_calls:,} calls {out.fixed_total / total:.0%}")
    if out.no_data_rows:
        moved = sum(r.seconds for r in out.no_data_rows) / total
        parts.append(f"ops that move no data ({_names(out.no_data_rows)}) {moved:.0%}")
    if shares["overhead"] or parts:
        lines.append(f"overhead: {shares['overhead']:.0%}" + (f" ({'; '.join(parts)})" if parts else ""))
    unclassified = [r for r, p in zip(rows, out.placed) if p == "unclassified"]
    if unclassified:
        why = sorted(
            {r.note for r in unclassified if r.note}, key=lambda n: -sum(r.seconds for r in unclassified if r.note == n)
        )
        line = f"unclassified: {shares['unclassified']:.0%} ({_names(unclassified)})"
        if not trace.has_shapes:
            line += f"; {_NO_SHAPES}"
        elif why:
            line += "; " + "; ".join(why[:4]) + (f"; and {len(why) - 4} more reasons" if len(why) > 4 else "")
        lines.append(line)
    if out.fast_rows:
        lines.append(_faster_than_roof(out.fast_rows, trace, extra["roof_precision"]))
    return lines


def _faster_than_roof(fast_rows, trace: Trace, roof_precision: str | None) -> str:
    """An op above its roof: first a precision the trace implies (TF32 from fp32 GEMMs on a GPU,
    bf16 or fp16 from the dtypes when the roof is a wider precision's), then the cache."""
    line = f"faster than the roof in use: {_names(fast_rows)} --"
    fp32 = [r for r in fast_rows if r.precision == "fp32"]
    narrow = sorted({r.precision for r in fast_rows if r.precision in ("bf16", "fp16", "fp8")})
    if fp32 and trace.timeline == "device":
        line += (
            " their fp32 work may run in TF32 on tensor cores (torch.backends.cuda.matmul.allow_tf32): pass "
            "precision='tf32' to read it under the TF32 roof; otherwise"
        )
    elif narrow and roof_precision in ("fp32", "tf32", "fp64"):
        dtypes = "/".join(narrow)
        line += (
            f" their dtypes are {dtypes} but the roof is {roof_precision}'s: place them under a {dtypes} roof "
            f"(precision='{narrow[0]}', or a roof measured in {narrow[0]}); otherwise"
        )
    return (
        line + " the roof understates what they reach (data served from cache, a read-only stream beating the "
        "measured copy, or a roof read under load); the regime still follows from intensity"
    )


def diagnose(
    profile,
    *,
    roof=None,
    precision: str | None = None,
    wall_seconds: float | None = None,
    fixed_cost_seconds: float | None = None,
    link=None,
) -> Diagnosis:
    """Say whether a profiled program is compute-, memory-, communication- or overhead-bound, or mixed.

    ``profile``: a :class:`ProfiledRun`, a torch profiler result, a Chrome-trace JSON (path or
    dict) or hand-made rows (see the module docstring). ``roof``: the roof to place ops against --
    a :class:`~roofline_lib.evidence.measure.MeasuredCeilings` or :class:`~roofline_lib.core.roofline.Roof`, or a
    registry GPU (then each op is read in its own precision unless ``precision`` is given). A CPU
    profile needs it; a GPU trace defaults to the GPU it names. ``wall_seconds``: the span the
    profile covers (a ProfiledRun brings its own); what the ops do not cover is idle.
    ``fixed_cost_seconds``: the fixed cost of one CPU op call (a ProfiledRun brings one measured
    by :func:`measure_fixed_cost`); ignored on a GPU timeline. ``link``: the link the collectives
    ran over (a chapter 8 link name such as ``"NVLink 3"``, or a LinkSpec), to set the
    communication pile against its roof.

    Each slice of time is placed by :data:`TRIAGE_RULES`; the verdict is the pile with more than
    half the time, else "mixed". Raises TypeError for something that is not a profile, ValueError
    for an empty one (no verdict: nothing ran) or a missing roof.
    """
    wall, fixed = _check_args(profile, wall_seconds, fixed_cost_seconds, precision)
    trace = _read(profile)
    rows = trace.rows
    op_seconds = sum(r.seconds for r in rows)
    if op_seconds <= 0:
        raise ValueError("the profile holds no time: every row has 0 seconds; pass a profile of work that ran")
    fixed = 0.0 if trace.timeline == "device" else (fixed or 0.0)  # a kernel's time is work
    evidence: list[str] = []
    out = _place(rows, trace, roof, precision, fixed, _idle(trace, wall, op_seconds, evidence))

    total = sum(out.piles.values())
    shares = {k: v / total for k, v in out.piles.items()}
    top = max(PILES, key=lambda k: shares[k])
    regime = top if shares[top] > MAJORITY else "mixed"
    roof_label, precisions, precision_lines = _roof_and_precision(
        rows, out.placed, out.used_roofs, roof, trace, precision
    )
    extra = {
        "roof_precision": getattr(roof, "precision", None) or precision,
        "precision": precision_lines,
        "communication": _communication_lines(rows, out.placed, shares, trace, link),
    }
    evidence += _evidence(out, rows, shares, total, trace, fixed, roof_label, extra)
    if regime == "mixed":
        evidence.append(f"no pile holds more than {MAJORITY:.0%} of the time; the largest is {top}")
    remedy = _remedy(regime if regime != "mixed" else top, rows, out.placed, trace)
    if regime == "mixed":
        remedy = f"{REMEDIES['mixed']} ({top}: {remedy})"
    return Diagnosis(
        regime=regime,
        evidence=tuple(evidence),
        shares=MappingProxyType(shares),
        seconds=MappingProxyType(out.piles),
        total_seconds=total,
        timeline=trace.timeline,
        roof_label=roof_label,
        rows=rows,
        placed=tuple(out.placed),
        remedy=remedy,
        precisions=MappingProxyType(precisions),
    )


def _remedy(pile: str, rows, placed, trace: Trace) -> str:
    if pile == "memory":
        by_family: dict[str, float] = {}
        for r, p in zip(rows, placed):
            if p == "memory":
                by_family[r.family] = by_family.get(r.family, 0.0) + r.seconds
        if by_family and max(by_family, key=by_family.get) == "matmul":
            return REMEDIES["memory-matmul"]
    if pile == "compute" and trace.timeline == "cpu":
        return REMEDIES["compute-cpu"]
    if pile == "unclassified" and trace.has_shapes and trace.timeline != "rows":
        return REMEDIES["unclassified-recorded"]
    return REMEDIES[pile]


# --------------------------------------------------------------------------- the tree, drawn


def plot_triage(diagnosis: Diagnosis | None = None):
    """Draw :data:`TRIAGE_RULES` as a decision tree (matplotlib); returns the figure.

    Each box is a rule's question, each arrow its yes/no answer, each leaf a pile -- read from the
    same rules :func:`diagnose` walks. Given a ``diagnosis``, each leaf shows its share of time.
    """
    from matplotlib.figure import Figure  # not pyplot: no global figure left open

    fig = Figure(figsize=(9.5, 6.2))
    ax = fig.add_subplot()
    ax.set_axis_off()
    n = len(TRIAGE_RULES)
    colors = {
        "compute": "#f4a582",
        "memory": "#92c5de",
        "communication": "#c2a5cf",
        "overhead": "#d9d9d9",
        "unclassified": "#ffffbf",
    }
    y = {r.key: 1 - i / (n + 0.2) for i, r in enumerate(TRIAGE_RULES)}
    box = dict(boxstyle="round,pad=0.4", fc="white", ec="black")
    for r in TRIAGE_RULES:
        ax.text(0.38, y[r.key], r.question, ha="center", va="center", fontsize=8.5, bbox=box)
    for r in TRIAGE_RULES:
        for answer, target, dx in (("yes", r.yes, 1), ("no", r.no, 0)):
            if target in _RULES:  # the next question, below
                start, end = (0.38, y[r.key] - 0.055), (0.38, y[target] + 0.055)
                ax.annotate("", end, start, arrowprops=dict(arrowstyle="->"))
                ax.text(0.39, (y[r.key] + y[target]) / 2, answer, fontsize=8, va="center")
            else:  # a pile, to the side
                side = 0.82 if dx else 0.05
                label = target
                if diagnosis is not None:
                    label += f"\n{diagnosis.shares[target]:.0%} of the time"
                ax.annotate(
                    "",
                    (side - 0.07 if dx else side + 0.08, y[r.key]),
                    (0.56 if dx else 0.2, y[r.key]),
                    arrowprops=dict(arrowstyle="->"),
                )
                ax.text(
                    (0.56 + side - 0.07) / 2 if dx else (0.2 + side + 0.08) / 2,
                    y[r.key] + 0.015,
                    answer,
                    fontsize=8,
                    ha="center",
                )
                ax.text(
                    side + (0.0 if dx else 0.0),
                    y[r.key],
                    label,
                    ha="left" if dx else "center",
                    va="center",
                    fontsize=9,
                    bbox=dict(boxstyle="round,pad=0.35", fc=colors[target], ec="black"),
                )
    verdict = f"verdict: the pile with more than {MAJORITY:.0%} of the time; none -> mixed"
    if diagnosis is not None:
        verdict += f"\nhere: {diagnosis.regime}"
    ax.text(
        0.5,
        -0.04,
        verdict,
        ha="center",
        va="center",
        fontsize=9.5,
        bbox=dict(boxstyle="round,pad=0.4", fc="#e5f5e0", ec="black"),
    )
    ax.set_xlim(0, 1.05)
    ax.set_ylim(0.02, 1.08)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- MFU measured here


def measured_mfu(
    model_flops, seconds, ceilings, *, precision: str = "bf16", tolerance: float = PLAUSIBILITY_TOLERANCE
) -> float:
    """Model FLOPs utilisation of a step timed here: ``model_flops / seconds / peak``.

    ``model_flops`` is the step's model FLOP count under a convention you state (6N, three-term,
    or a FlopCounterMode audit); ``seconds`` a float or a Timing (its median); ``ceilings`` a
    MeasuredCeilings (its matmul rate is the peak), a Roof, or a GPU name/spec (its dense peak in
    ``precision``). Raises ImplausibleMeasurement by the one plausibility rule: a step cannot beat
    the matmul roof.
    """
    f = _positive(model_flops, "model_flops", "FLOP")
    t = _positive(getattr(seconds, "median_s", seconds), "seconds", "seconds")
    _precision_key(precision)
    if ceilings is None:
        raise TypeError("ceilings must be a MeasuredCeilings, a Roof, a GPUSpec or a GPU name, got None")
    if isinstance(ceilings, str):
        ceilings = _gpu(ceilings, "ceilings")
    try:
        the_roof = _as_roof(ceilings, precision)
    except TypeError:
        raise TypeError(
            "ceilings must be a MeasuredCeilings, a Roof, a GPUSpec or a GPU name, "
            f"got {type(ceilings).__name__} {ceilings!r}"
        ) from None
    achieved = f / t
    check_plausible(achieved, 0.0, the_roof, tolerance=tolerance, what="the measured step")
    return achieved / the_roof.peak_flops_per_s
