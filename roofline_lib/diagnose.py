"""The playbook's triage as code: read a profile, place its time on the roofline, name the regime.

Every second of a profile is put in one of four piles by the rules in :data:`TRIAGE_RULES`, in
order; the chapter draws the same rules as a decision tree (:func:`plot_triage`):

1. time the device sat idle -- gaps between kernels on a GPU timeline, wall-clock time outside
   every op on a CPU -- is **overhead**;
2. on a CPU, the measured fixed cost of each op call (:func:`measure_fixed_cost`) is **overhead**;
   a GPU kernel's time never is: its launch cost shows up as idle gaps, not inside the kernel;
3. an op whose FLOPs or minimum bytes cannot be counted is **unclassified** -- never guessed
   from its name;
4. an op that does no arithmetic and moves no data (a view, an allocation, a composite op's own
   dispatch time outside the ops it calls) is **overhead**;
5. otherwise the op's intensity (FLOP per minimum byte) against the ridge of the roof in use
   decides: below it **memory**, at or above it **compute**.

The verdict is the pile that holds more than half of the time, or **mixed** when none does
(:data:`MAJORITY`). The remedy follows the verdict and the kind of op that dominates it.

FLOPs and minimum bytes come from each op's recorded input shapes and dtypes through the
library's op formulas (:mod:`roofline_lib.ops`); minimum bytes count every input read once and
every output written once. The roof in use is this machine's measured roof for a CPU profile
and the GPU's datasheet roof in the op's precision for a GPU trace.

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
import gzip
import json
import math
import os
import re
import statistics
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

from . import ops
from ._checks import _positive, _positive_int
from .hardware import GPUSpec, _gpu, _precision_key, as_gpu
from .measure import _fmt_seconds
from .roofline import PLAUSIBILITY_TOLERANCE, Roof, check_plausible
from .roofline import roof as _as_roof

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
PILES = ("compute", "memory", "overhead", "unclassified")

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
    Rule("idle", "device idle?\n(gap between kernels; CPU\nwall time outside every op)", "overhead", "fixed"),
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
        "overhead": "stop paying per call: batch the work into fewer, larger calls, fuse tiny "
        "ops, capture the step in a CUDA graph, remove host syncs (.item(), .cpu()) inside the loop",
        "unclassified": "record the profile with torch.profiler.profile(record_shapes=True, "
        "with_flops=True) so each op's FLOPs and bytes can be counted, or give rows their flops= "
        "and bytes_moved=",
        "mixed": "no single fix: start with the largest pile",
    }
)


# --------------------------------------------------------------------------- counting ops

# dtype names as torch's profiler writes them ("Input type") -> (bytes per element, precision)
_DTYPES = {
    "float": (4, "fp32"),
    "double": (8, "fp64"),
    "c10::Half": (2, "fp16"),
    "c10::BFloat16": (2, "bf16"),
    "c10::Float8_e4m3fn": (1, "fp8"),
    "c10::Float8_e5m2": (1, "fp8"),
    "c10::Float8_e4m3fnuz": (1, "fp8"),
    "c10::Float8_e5m2fnuz": (1, "fp8"),
    "long int": (8, None),
    "int": (4, None),
    "short int": (2, None),
    "signed char": (1, None),
    "unsigned char": (1, None),
    "bool": (1, None),
    "c10::complex<float>": (8, None),
    "c10::complex<double>": (16, None),
}

# ops that only re-describe or allocate memory: no FLOPs, no bytes (their count needs no shapes)
_NO_DATA = frozenset(
    """
    view reshape _reshape_alias _unsafe_view t transpose permute expand expand_as as_strided
    unsqueeze squeeze select slice narrow split split_with_sizes chunk unbind alias detach
    lift_fresh empty empty_like empty_strided new_empty new_empty_strided resolve_conj
    resolve_neg result_type resize_ set_ flatten unflatten view_as numpy_T _nested_view_from_buffer
    """.split()
)
_MATMUL = frozenset("mm addmm bmm baddbmm mv addmv".split())
_ELEMENTWISE = frozenset(
    """
    add sub rsub mul div neg exp exp2 expm1 log log2 log1p pow sqrt rsqrt reciprocal square abs sign
    tanh sigmoid silu gelu relu relu6 leaky_relu elu selu mish hardswish hardtanh softplus clamp
    clamp_min clamp_max threshold where lerp addcmul addcdiv maximum minimum sin cos erf floor ceil
    round trunc fmod remainder eq ne lt le gt ge logical_not logical_and logical_or bitwise_and
    bitwise_or masked_fill nan_to_num clone contiguous _to_copy copy_ fill_ zero_ tril triu
    """.split()
)
_WRITE_ONLY = frozenset("fill_ zero_ normal_ uniform_ random_ bernoulli_".split())
_REDUCTIONS = frozenset(
    "sum mean amax amin max min var std norm linalg_vector_norm argmax argmin prod logsumexp".split()
)
_SOFTMAX = frozenset("softmax _softmax log_softmax _log_softmax _safe_softmax".split())
_LAYERNORM = frozenset("layer_norm native_layer_norm".split())
_RMSNORM = frozenset("rms_norm _fused_rms_norm".split())
_ATTENTION = frozenset(
    """
    scaled_dot_product_attention _scaled_dot_product_flash_attention_for_cpu
    _scaled_dot_product_flash_attention _scaled_dot_product_efficient_attention
    _scaled_dot_product_cudnn_attention _flash_attention_forward _efficient_attention_forward
    """.split()
)


@dataclass(frozen=True)
class _Nothing:
    """The count of an op that moves no data (OpCount refuses zero bytes)."""

    flops: float = 0.0
    bytes_moved: float = 0.0


_NOTHING = _Nothing()


def _numel(shape) -> int:
    return math.prod(int(d) for d in shape)


def _broadcast(shapes) -> list[int]:
    width = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[[1] * (width - len(s)) + list(s) for s in shapes]):
        out.append(max(int(d) for d in dims))
    return out


def count_op(name: str, shapes, dtypes) -> tuple[float, float, str, str | None] | None:
    """FLOPs and minimum bytes of one call of a recorded op, from its input shapes and dtypes.

    ``name`` is the profiler's op name (``"aten::mm"``), ``shapes`` its "Input Dims" and ``dtypes``
    its "Input type" lists, as torch's profiler records them. Returns ``(flops, bytes_moved,
    family, precision)`` -- the family ("matmul", "elementwise", "reduction", "softmax", "norm",
    "attention", "embedding", "no data") says which library formula counted it -- or None when
    the op has no formula here or its shapes are missing. Minimum bytes: every tensor input read
    once and every output written once (a reduction's small output is left out).
    """
    found = _count(name, shapes, dtypes)
    if found is None:
        return None
    count, family, precision = found
    return float(count.flops), float(count.bytes_moved), family, precision


def _count(name: str, shapes, dtypes):
    namespace, _, op = name.partition("::")
    if namespace != "aten":
        return None
    op = op.split(".")[0]
    if op in _NO_DATA:
        return _NOTHING, "no data", None
    shapes = list(shapes or ())
    dtypes = list(dtypes or ())
    tensors = [
        (list(s), _DTYPES[t][0], _DTYPES[t][1])
        for s, t in zip(shapes, dtypes)
        if isinstance(s, (list, tuple)) and t in _DTYPES
    ]
    if not tensors:
        return None
    shape0, e, _ = tensors[0]
    precision = next((p for _, _, p in tensors if p is not None), None)
    try:
        if op in _MATMUL:
            mats = tensors[1:] if op.startswith(("add", "badd")) else tensors
            (a, ea, _), (b, _, _) = mats[0], mats[1]
            if op in ("mv", "addmv"):
                count = ops.gemv(a[0], a[1], ea)
            else:
                batch = a[0] if len(a) == 3 else 1
                m, k, n = a[-2], a[-1], b[-1]
                one = ops.gemm(m, n, k, ea)
                count = ops.OpCount(batch * one.flops, batch * one.bytes_moved)
            if op.startswith(("add", "badd")):  # the added input: read once, one add per output
                bias, eb, _ = tensors[0]
                out = count.flops / (2 * (a[-1] if op not in ("mv", "addmv") else a[1]))
                count = count + ops.OpCount(out, _numel(bias) * eb)
            return count, "matmul", precision
        if op in _ELEMENTWISE or (op.endswith("_") and op[:-1] in _ELEMENTWISE):  # add_, clamp_min_: in place
            inplace = op.endswith("_")
            out_shape = shape0 if inplace else _broadcast([s for s, _, _ in tensors])
            n_out = _numel(out_shape)
            if op in _WRITE_ONLY:
                return ops.OpCount(0, n_out * e), "elementwise", precision
            if op == "copy_":
                src, es, _ = tensors[1] if len(tensors) > 1 else tensors[0]
                return ops.OpCount(0, _numel(src) * es + n_out * e), "elementwise", precision
            reads = sum(_numel(s) * eb for s, eb, _ in tensors)
            flops = 0 if op in ("clone", "contiguous", "_to_copy") else n_out
            return ops.OpCount(flops, reads + n_out * e), "elementwise", precision
        if op in _REDUCTIONS:
            return ops.OpCount(_numel(shape0), _numel(shape0) * e), "reduction", precision
        if op in _SOFTMAX:
            cols = shape0[-1]
            return ops.softmax(_numel(shape0) // cols, cols, e), "softmax", precision
        if op in _LAYERNORM or op in _RMSNORM:
            d = shape0[-1]
            rows = _numel(shape0) // d
            count = ops.layernorm(rows, d, e) if op in _LAYERNORM else ops.rmsnorm(rows, d, e)
            return count, "norm", precision
        if op in _ATTENTION:
            q, k = tensors[0][0], tensors[1][0]
            b, h, sq, dh = q
            sk = k[-2]
            flops = ops.attention_flops(b, h, sq, sk, dh)
            moved = ops.attention_bytes_fused(b, h, sq, sk, dh, e, kv_heads=k[1])
            return ops.OpCount(flops, moved), "attention", precision
        if op == "embedding":
            (weight, ew, _), (idx, ei, _) = tensors[0], tensors[1]
            rows = _numel(idx) * weight[-1]
            return ops.OpCount(0, 2 * rows * ew + _numel(idx) * ei), "embedding", precision
    except (IndexError, ValueError, TypeError, ZeroDivisionError):
        return None  # shapes that do not fit the formula: better unclassified than wrong
    return None


# --------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class OpStat:
    """One row of a profile: an op, its calls and the time they took together (SI seconds).

    ``seconds`` is the total self time of all ``calls`` on the timeline read (CPU op self time,
    or GPU kernel time). ``flops`` and ``bytes_moved`` are totals over all calls; None means
    unknown (the row is then unclassified). ``family`` says which formula counted the op
    (:func:`count_op`); ``precision`` the dtype its roof is read in on a GPU; ``note`` why the
    counts are missing.
    """

    name: str
    calls: int
    seconds: float
    flops: float | None = None
    bytes_moved: float | None = None
    family: str = ""
    precision: str | None = None
    note: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise TypeError(f"name must be a non-empty string naming the operation, got {self.name!r}")
        object.__setattr__(self, "calls", _positive_int(self.calls, f"calls of {self.name}", "calls"))
        object.__setattr__(
            self, "seconds", _positive(self.seconds, f"seconds of {self.name}", "seconds", allow_zero=True)
        )
        for attr, unit in (("flops", "FLOP"), ("bytes_moved", "bytes")):
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
    ``has_shapes`` says whether shapes were recorded.
    """

    rows: tuple[OpStat, ...]
    timeline: str
    window_seconds: float | None
    busy_seconds: float | None
    gpu: str | None = None
    has_shapes: bool = True


def _merge(rows) -> tuple[OpStat, ...]:
    merged: dict[tuple, dict] = {}
    for r in rows:
        key = (r.name, r.family, r.precision, r.counted)
        m = merged.setdefault(key, {"calls": 0, "seconds": 0.0, "flops": 0.0, "bytes": 0.0, "note": r.note})
        m["calls"] += r.calls
        m["seconds"] += r.seconds
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


def read_trace(trace, *, allow_empty: bool = False) -> Trace:
    """Read a Chrome trace exported by ``torch.profiler`` (a path, or its parsed dict) into a :class:`Trace`.

    CPU ops (``cat`` "cpu_op") give each op's self time (its time minus the ops nested in it on
    the same thread) and, from "Input Dims" and "Input type", its counts (:func:`count_op`). When
    the trace holds GPU kernels (``cat`` "kernel", "gpu_memcpy", "gpu_memset"), the kernels are
    the timeline: each is tied to the op that launched it ("External id", or its launch's
    "correlation"), and takes that op's counts; idle is the time between kernels.
    """
    if isinstance(trace, (str, os.PathLike)):
        path = os.fspath(trace)
        opener = gzip.open if path.endswith(".gz") else open
        try:
            with opener(path, "rt", encoding="utf-8") as fh:
                trace = json.load(fh)
        except FileNotFoundError:
            raise FileNotFoundError(
                f"no trace file at {path!r} (export one with prof.export_chrome_trace(path))"
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError, OSError) as err:
            raise ValueError(f"{path!r} is not a Chrome-trace JSON file: {err}") from None
    if isinstance(trace, list):
        trace = {"traceEvents": trace}
    if not isinstance(trace, Mapping) or not isinstance(trace.get("traceEvents"), list):
        raise TypeError(
            "a Chrome trace must be a dict with a 'traceEvents' list (json.load of the file "
            f"prof.export_chrome_trace wrote), got {type(trace).__name__}"
        )
    events = [e for e in trace["traceEvents"] if isinstance(e, Mapping) and e.get("ph") == "X" and "dur" in e]
    cpu = [e for e in events if e.get("cat") in ("cpu_op", "operator")]
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    steps = [
        e for e in events if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep")
    ]
    if not cpu and not kernels:
        if allow_empty:  # a live run that called no op at all: all its wall time is idle
            return Trace((), "cpu", None, 0.0)
        raise ValueError(
            "the trace holds no ops and no kernels (no 'cpu_op' or 'kernel' events): did the work run "
            "inside the profiler, and did a schedule's active steps end before the export?"
        )
    has_shapes = any("Input Dims" in e.get("args", {}) for e in cpu) or not cpu

    # nest CPU ops per thread: parent = innermost op that contains it
    by_thread: dict[tuple, list] = {}
    for e in cpu:
        by_thread.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    parent: dict[int, dict | None] = {}
    child_time: dict[int, float] = {}
    for evs in by_thread.values():
        evs.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack: list[dict] = []
        for e in evs:
            start = float(e["ts"])
            while stack and float(stack[-1]["ts"]) + float(stack[-1]["dur"]) <= start:
                stack.pop()
            parent[id(e)] = stack[-1] if stack else None
            if stack:
                child_time[id(stack[-1])] = child_time.get(id(stack[-1]), 0.0) + float(e["dur"])
            stack.append(e)

    counts: dict[int, tuple | None] = {}
    for e in cpu:
        args = e.get("args", {})
        counts[id(e)] = count_op(str(e.get("name")), args.get("Input Dims"), args.get("Input type"))

    # A composite op hands its work to the ops it calls (softmax -> _softmax, linear -> addmm):
    # its own self time is dispatch. It is composite when it spends less time itself than in the
    # ops it calls, and either has no formula while calling counted work, or calls an op that moves
    # at least half the bytes its own count says it moves. (x * 1.5 calls a copy of the scalar 1.5:
    # 4 bytes against megabytes, so mul keeps its work. A fused op with no formula, such as
    # _addmm_activation, or an addmm that copies its bias into the output first, runs its GEMM in
    # its own self time: that time is work, counted or unclassified, never overhead.)
    def _hands_off(e) -> bool:
        own_seconds = float(e.get("dur", 0.0)) - child_time.get(id(e), 0.0)
        return own_seconds <= child_time.get(id(e), 0.0)

    composite: set[int] = set()
    for e in cpu:
        c = counts[id(e)]
        if c is None or not (c[0] or c[1]):
            continue
        p = parent[id(e)]
        while p is not None:
            own = counts[id(p)]
            if _hands_off(p) and (own is None or (own[1] and c[1] >= 0.5 * own[1])):
                composite.add(id(p))
            p = parent[id(p)]

    def row_for(e, seconds, calls=1) -> OpStat:
        name = str(e.get("name"))
        if id(e) in composite:
            return OpStat(name, calls, seconds, 0.0, 0.0, "dispatch")
        c = counts[id(e)]
        if c is None:
            note = "no shapes recorded" if "Input Dims" not in e.get("args", {}) else "no formula for this op"
            return OpStat(name, calls, seconds, note=note)
        return OpStat(name, calls, seconds, *c)

    device_props = trace.get("deviceProperties") or []
    if kernels:
        by_external = {}
        for e in cpu:
            ext = e.get("args", {}).get("External id")
            if ext is not None:
                by_external[ext] = e
        runtime = {e.get("args", {}).get("correlation"): e for e in events if e.get("cat") == "cuda_runtime"}
        groups: dict[int, list] = {}
        launcher: dict[int, dict | None] = {}
        for k in kernels:
            args = k.get("args", {})
            op = by_external.get(args.get("External id"))
            if op is None and args.get("correlation") in runtime:
                launch = runtime[args["correlation"]]
                t = float(launch["ts"])
                inside = [
                    e
                    for e in by_thread.get((launch.get("pid"), launch.get("tid")), [])
                    if float(e["ts"]) <= t <= float(e["ts"]) + float(e["dur"])
                ]
                op = min(inside, key=lambda e: float(e["dur"])) if inside else None
            key = id(op) if op is not None else id(k)
            groups.setdefault(key, []).append(k)
            launcher[key] = op
        rows = []
        for key, ks in groups.items():
            seconds = sum(float(k["dur"]) for k in ks) * _US
            op = launcher[key]
            if op is None:
                k = ks[0]
                b = k.get("args", {}).get("bytes")
                if k.get("cat") in ("gpu_memcpy", "gpu_memset") and b:
                    rows.append(OpStat(str(k.get("name")), len(ks), seconds, 0.0, float(b) * len(ks), "copy"))
                else:
                    rows.append(OpStat(str(k.get("name")), len(ks), seconds, note="kernel not tied to any recorded op"))
                continue
            c = counts[id(op)]
            name = str(op.get("name"))
            if c is None:
                note = "no shapes recorded" if "Input Dims" not in op.get("args", {}) else "no formula for this op"
                rows.append(OpStat(name, len(ks), seconds, note=note))
            else:
                flops, moved, family, precision = c
                rows.append(
                    OpStat(name, len(ks), seconds, flops, moved, family, precision)
                )  # one op call, all its kernels
        spans = [(float(k["ts"]), float(k["ts"]) + float(k["dur"])) for k in kernels]
        busy = _union(spans) * _US
        window = (max(b for _, b in spans) - min(a for a, _ in spans)) * _US
        names = {str(p.get("name")) for p in device_props if isinstance(p, Mapping) and p.get("name")}
        used = {k.get("args", {}).get("device") for k in kernels}
        named = [str(p.get("name")) for p in device_props if isinstance(p, Mapping) and p.get("id") in used]
        gpu = named[0] if named else (sorted(names)[0] if names else None)
        return Trace(_merge(rows), "device", window, busy, gpu, has_shapes)

    rows = [row_for(e, max(float(e["dur"]) - child_time.get(id(e), 0.0), 0.0) * _US) for e in cpu]
    spans = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in cpu]
    busy = _union(spans) * _US
    frame = [(float(s["ts"]), float(s["ts"]) + float(s["dur"])) for s in steps] or spans
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

    ``device`` must be named, as in :func:`~roofline_lib.measure.time_fn`: with ``"cuda"`` the
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
    ``rows`` holds every row and ``placed`` the pile each row's work time went to, in order. ``remedy`` is the
    playbook's next step for this verdict.
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
        from .hardware import known_gpus

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


def diagnose(
    profile,
    *,
    roof=None,
    precision: str | None = None,
    wall_seconds: float | None = None,
    fixed_cost_seconds: float | None = None,
) -> Diagnosis:
    """Say whether a profiled program is compute-, memory- or overhead-bound, or mixed, with evidence.

    ``profile``: a :class:`ProfiledRun`, a torch profiler result, a Chrome-trace JSON (path or
    dict) or hand-made rows (see the module docstring). ``roof``: the roof to place ops against --
    a :class:`~roofline_lib.measure.MeasuredCeilings` or :class:`~roofline_lib.roofline.Roof`, or a
    registry GPU (then each op is read in its own precision unless ``precision`` is given). A CPU
    profile needs it; a GPU trace defaults to the GPU it names. ``wall_seconds``: the span the
    profile covers (a ProfiledRun brings its own); what the ops do not cover is idle.
    ``fixed_cost_seconds``: the fixed cost of one CPU op call (a ProfiledRun brings one measured
    by :func:`measure_fixed_cost`); ignored on a GPU timeline.

    Each slice of time is placed by :data:`TRIAGE_RULES`; the verdict is the pile with more than
    half the time, else "mixed". Raises TypeError for something that is not a profile, ValueError
    for an empty one or a missing roof.
    """
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
    trace = _read(profile)
    rows = trace.rows
    op_seconds = sum(r.seconds for r in rows)
    if op_seconds <= 0 and not (rows == () and wall):
        raise ValueError("the profile holds no time: every row has 0 seconds")
    if trace.timeline == "device":
        fixed = 0.0  # a kernel's time is work; launch cost shows up as idle gaps
    fixed = fixed or 0.0

    piles = dict.fromkeys(PILES, 0.0)
    placed: list[str] = []
    evidence: list[str] = []
    span = wall if wall is not None else trace.window_seconds
    busy = trace.busy_seconds if trace.busy_seconds is not None else op_seconds
    idle = 0.0
    if span is not None:
        if span >= busy:
            idle = span - busy
        else:
            evidence.append(
                f"the ops cover {_fmt_seconds(busy)}, more than the {_fmt_seconds(span)} span read: they "
                "overlap across threads or streams; no idle time counted"
            )
    piles[_walk({"idle": True})] += idle

    roofs: dict = {}
    used_roofs: list[Roof] = []
    fixed_total = 0.0
    no_data_rows, fast_rows = [], []
    for r in rows:
        fixed_part = min(r.seconds, fixed * r.calls)
        fixed_total += fixed_part
        piles[_walk({"idle": False, "fixed": True})] += fixed_part
        work = r.seconds - fixed_part
        facts = {
            "idle": False,
            "fixed": False,
            "counted": r.counted,
            "work": bool(r.counted and (r.flops or r.bytes_moved)),
        }
        the_roof = _roof_for(r, roof, trace, precision, roofs) if facts["work"] else None
        if facts["work"] and the_roof is None:
            facts["counted"] = facts["work"] = False  # counted, but no roof in its precision
        if facts["work"]:
            if the_roof not in used_roofs:
                used_roofs.append(the_roof)
            facts["ridge"] = r.flops < the_roof.ridge * r.bytes_moved  # intensity below the ridge
            if r.seconds > 0:
                try:
                    check_plausible(
                        r.flops / r.seconds,
                        r.bytes_moved / r.seconds,
                        the_roof,
                        tolerance=PLAUSIBILITY_TOLERANCE,
                        what=r.name,
                    )
                except ValueError:
                    fast_rows.append(r)
        pile = _walk(facts)
        if pile == "overhead" and facts["counted"]:
            no_data_rows.append(r)
        placed.append(pile)
        piles[pile] += work

    total = sum(piles.values())
    shares = {k: v / total for k, v in piles.items()}
    top = max(PILES, key=lambda k: shares[k])
    regime = top if shares[top] > MAJORITY else "mixed"

    # evidence, pile by pile
    clock = {"cpu": "op self time on the CPU", "device": "GPU kernel time", "rows": "the rows given"}[trace.timeline]
    n_calls = sum(r.calls for r in rows)
    labels = sorted({f"{ro.label} (ridge {ro.ridge:.3g} FLOP/B)" for ro in used_roofs})
    roof_label = "; ".join(labels) if labels else "none needed"
    evidence.append(
        f"{_fmt_seconds(total)} read from {clock}, {n_calls:,} calls of {len(rows)} ops; roof: {roof_label}"
    )
    for pile in ("memory", "compute"):
        members = [r for r, p in zip(rows, placed) if p == pile]
        if members:
            evidence.append(
                f"{pile}-bound work, intensity {'below' if pile == 'memory' else 'at or above'} the "
                f"ridge: {shares[pile]:.0%} ({_names(members, with_intensity=True)})"
            )
    parts = []
    if idle:
        parts.append(
            ("idle gaps between kernels" if trace.timeline == "device" else "wall time outside every op")
            + f" {idle / total:.0%}"
        )
    if fixed_total:
        parts.append(f"fixed cost {_fmt_seconds(fixed)} x {n_calls:,} calls {fixed_total / total:.0%}")
    if no_data_rows:
        parts.append(
            f"ops that move no data ({_names(no_data_rows)}) {sum(r.seconds for r in no_data_rows) / total:.0%}"
        )
    if shares["overhead"] or parts:
        evidence.append(f"overhead: {shares['overhead']:.0%}" + (f" ({'; '.join(parts)})" if parts else ""))
    unclassified = [r for r, p in zip(rows, placed) if p == "unclassified"]
    if unclassified:
        why = sorted({r.note for r in unclassified if r.note})
        line = f"unclassified: {shares['unclassified']:.0%} ({_names(unclassified)})"
        if not trace.has_shapes:
            line += f"; {_NO_SHAPES}"
        elif why:
            line += "; " + ", ".join(why)
        evidence.append(line)
    if fast_rows:
        evidence.append(
            f"faster than the roof in use: {_names(fast_rows)} -- the roof understates what they reach "
            "(data served from cache, a read-only stream beating the measured copy, or a roof read under "
            "load); the regime still follows from intensity"
        )
    if regime == "mixed":
        evidence.append(f"no pile holds more than {MAJORITY:.0%} of the time; the largest is {top}")

    remedy = _remedy(regime if regime != "mixed" else top, rows, placed)
    if regime == "mixed":
        remedy = f"{REMEDIES['mixed']} ({top}: {remedy})"
    return Diagnosis(
        regime=regime,
        evidence=tuple(evidence),
        shares=MappingProxyType(shares),
        seconds=MappingProxyType(piles),
        total_seconds=total,
        timeline=trace.timeline,
        roof_label=roof_label,
        rows=rows,
        placed=tuple(placed),
        remedy=remedy,
    )


def _remedy(pile: str, rows, placed) -> str:
    if pile == "memory":
        by_family: dict[str, float] = {}
        for r, p in zip(rows, placed):
            if p == "memory":
                by_family[r.family] = by_family.get(r.family, 0.0) + r.seconds
        if by_family and max(by_family, key=by_family.get) == "matmul":
            return REMEDIES["memory-matmul"]
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
    colors = {"compute": "#f4a582", "memory": "#92c5de", "overhead": "#d9d9d9", "unclassified": "#ffffbf"}
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
