"""The playbook's triage as code: read a profile and say compute-, memory- or overhead-bound.

A profile is a list of operations, each with a name, a number of calls and the time spent
inside it (its *self* time: without the operations it called, so nothing is counted twice).
:func:`diagnose` sorts that time into four buckets and names the largest of the first three:

* **compute** -- matrix-multiply-like operations (``mm``, ``addmm``, ``bmm``, ``linear``,
  convolutions, attention kernels; on a GPU the ``gemm``/``cutlass``/``flash`` kernels).
* **memory** -- element-wise, normalisation, softmax, reduction and copy operations: a few
  FLOPs per byte, far below any ridge point.
* **overhead** -- time that moves neither roof: calls shorter than ``tiny_call_seconds`` each
  (their time is the framework's fixed cost per call, not the work), operations that only
  re-describe memory (``view``, ``transpose``, ``expand``...), host-side ranges (the profiler's
  ``ProfilerStep#`` and ``record_function`` ranges, autograd's own bookkeeping), communication
  (``c10d::``, NCCL kernels: the playbook's "overhead or comms" branch), and, when
  ``wall_seconds`` is given, the wall-clock time that no operation accounts for (Python between
  calls on a CPU; an idle GPU between kernels).
* **other** -- calls long enough to matter that the classifier does not recognise. They do not
  vote; an evidence line names them, and ``classify=`` lets you name them yourself.

When a row carries both its FLOPs and its bytes and the machine's ceilings are given, the row
is placed by its arithmetic intensity against the ridge (compute at or above, memory below)
instead of by its name: a matrix-vector product is a "matmul" by name but memory-bound by
the roofline. Rates computed from a profile pass through the plausibility guard: a row or a
program that beats its ceiling raises :class:`~roofline_lib.roofline.ImplausibleMeasurement`.

Inputs :func:`diagnose` accepts, all read as self time:

* a :class:`ProfiledRun` from :func:`profile_run` (a profile plus the wall-clock of the run it
  recorded), a ``torch.profiler.profile`` object, the ``EventList`` of its ``key_averages()`` or
  its ``events()`` -- CPU-side op rows when the profile has no device activity, the device
  (kernel) rows when it has;
* a list of :class:`OpStat`, of dicts with the same keys, or of ``(name, calls, seconds)``
  tuples -- for hand-made, hand-countable examples.

:func:`measured_mfu` is the playbook's first step on a machine measured here: model FLOPs per
second over a measured (or datasheet) matmul roof, refused above the roof.

Times are SI seconds throughout (torch's profiler reports microseconds; the conversion happens
on the way in). Only :func:`profile_run` imports torch, when it is called.
"""
from __future__ import annotations

import contextlib
import numbers
import os
import re
import statistics
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Callable, Iterable, Mapping

from ._checks import _positive, _positive_int
from .hardware import GPUSpec, as_gpu
from .roofline import PLAUSIBILITY_TOLERANCE, ImplausibleMeasurement

__all__ = [
    "REGIMES",
    "KINDS",
    "REMEDIES",
    "TINY_CALL_SECONDS",
    "OpStat",
    "Diagnosis",
    "classify_op",
    "op_stats",
    "ProfiledRun",
    "profile_run",
    "quiet_profiler_log",
    "diagnose",
    "measured_mfu",
]

#: The three verdicts :func:`diagnose` can return.
REGIMES = ("compute", "memory", "overhead")

#: What :func:`classify_op` can call an operation.
KINDS = ("matmul", "elementwise", "view", "host", "comms", "other")

#: A call shorter than this (seconds) is treated as fixed per-call cost. On a CPU one PyTorch
#: op costs a few microseconds of dispatch before any work; a GPU kernel launch costs about as
#: much. Ten microseconds is a few times either.
TINY_CALL_SECONDS = 10e-6

#: What the playbook does next in each regime.
REMEDIES = MappingProxyType(
    {
        "compute": "raise the compute roof or do fewer FLOPs: a narrower precision (bf16, fp8) on "
        "tensor cores, a better-tiled GEMM, shapes that are multiples of the tile size, fewer "
        "FLOPs per token (smaller d_ff, mixture of experts)",
        "memory": "move fewer bytes per FLOP: fuse chains of element-wise and norm ops "
        "(torch.compile), keep intermediates on chip (FlashAttention), narrower activations "
        "and weights, batch more tokens per weight read",
        "overhead": "stop paying per call: batch the work into fewer, larger calls, fuse tiny "
        "ops, capture the step in a CUDA graph, remove host syncs (.item(), .cpu()) inside the "
        "loop, overlap communication with compute",
    }
)

_US = 1e-6  # torch's profiler reports microseconds

# Exact aten op names (after normalisation: no "aten::", no leading "_", no trailing "_",
# no "_backward", no "_for_cpu") that do matrix-multiply work.
_MATMUL_OPS = frozenset(
    """
    mm addmm bmm baddbmm matmul linear mv addmv dot vdot inner outer einsum tensordot
    addbmm scaled_mm int_mm convolution conv1d conv2d conv3d conv_transpose1d
    conv_transpose2d conv_transpose3d cudnn_convolution mkldnn_convolution
    convolution_overrideable slow_conv2d slow_conv3d
    scaled_dot_product_attention scaled_dot_product_flash_attention
    scaled_dot_product_efficient_attention scaled_dot_product_cudnn_attention
    scaled_dot_product_attention_math flash_attention_forward efficient_attention_forward
    flex_attention linear_backward mkldnn_linear
    """.split()
)

# Element-wise, normalisation, softmax, reduction, copy and gather/scatter ops.
_ELEMENTWISE_OPS = frozenset(
    """
    add sub rsub mul div neg exp exp2 expm1 log log2 log1p pow sqrt rsqrt reciprocal square
    abs sign tanh sigmoid silu gelu relu relu6 leaky_relu elu selu mish hardswish hardtanh
    softplus clamp clamp_min clamp_max threshold where lerp addcmul addcdiv maximum minimum
    softmax log_softmax safe_softmax layer_norm native_layer_norm rms_norm fused_rms_norm
    group_norm native_group_norm batch_norm native_batch_norm instance_norm dropout
    native_dropout copy clone contiguous to to_copy fill zero zeros zeros_like ones
    ones_like full full_like cat stack where masked_fill sum mean var std var_mean amax
    amin max min argmax argmin norm linalg_vector_norm embedding embedding_dense
    index_select index index_put gather scatter scatter_add cumsum cumprod sort topk
    nll_loss nll_loss_forward nll_loss2d cross_entropy mse_loss l1_loss
    binary_cross_entropy rand randn randint uniform normal bernoulli erf erfinv sin cos
    floor ceil round trunc fmod remainder bitwise_and bitwise_or eq ne lt le gt ge
    logical_and logical_or logical_not isnan isinf nan_to_num type_as repeat tile flip roll
    tril triu arange linspace one_hot pad constant_pad_nd upsample_nearest2d
    """.split()
)

# Ops that only re-describe memory (shape, strides, allocation): no bytes move.
_VIEW_OPS = frozenset(
    """
    view reshape reshape_alias unsafe_view transpose t permute expand expand_as as_strided
    select slice narrow split split_with_sizes chunk unbind unsqueeze squeeze flatten
    unflatten detach alias lift_fresh empty empty_like empty_strided new_empty
    new_empty_strided resize resolve_conj resolve_neg conj numpy_t unsafe_split
    view_as_real view_as_complex result_type item local_scalar_dense set is_nonzero
    """.split()
)

# GPU kernel names carry no "aten::" prefix; recognise them by fragments of their names.
_MATMUL_KERNEL = re.compile(
    r"gemm|gemv|cutlass|xmma|wgmma|cublas|sm\d+_.*(?:mma|gemm)|flash_(?:fwd|bwd)|fmha|"
    r"flash_attn|attention_kernel|conv(?:olution)?_?(?:fprop|dgrad|wgrad)|implicit_gemm",
    re.IGNORECASE,
)
_ELEMENTWISE_KERNEL = re.compile(
    r"elementwise|vectorized|unrolled|reduce|norm|softmax|copy|fill|cat_|catarray|index|"
    r"embedding|dropout|scatter|gather|triton_poi|triton_per|triton_red|memcpy|memset",
    re.IGNORECASE,
)
_AUTOGRAD_NODE = re.compile(r"Backward\d*$")
_COMMS = re.compile(r"^c10d::|nccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast_", re.IGNORECASE)
# Host-side ranges: the profiler's step marker, autograd's engine, CUDA runtime calls on the CPU.
_HOST_PREFIXES = ("ProfilerStep", "autograd::", "torch::autograd::", "Optimizer.")
_CUDA_RUNTIME = re.compile(r"^cu(?:da|Launch)[A-Z]")  # cudaLaunchKernel, cudaMemcpyAsync, cuLaunchKernel
_SUFFIXES = ("_backward", "_for_cpu", "_forward", "_out")


@dataclass(frozen=True)
class OpStat:
    """One row of a profile: an operation, its calls and the self time they took together.

    ``seconds`` is the total self time of all ``calls`` (SI seconds). ``flops`` and
    ``bytes_moved``, when known, are totals over all calls too. ``kind`` forces a
    classification (one of :data:`KINDS`); left empty, :func:`classify_op` decides by name.
    ``typical_call_seconds`` is the median call, when the calls were seen one by one; a
    single slow call (the OS preempting the process) then does not make a tiny op look big.
    """

    name: str
    calls: int
    seconds: float
    flops: float | None = None
    bytes_moved: float | None = None
    kind: str = ""
    typical_call_seconds: float | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise TypeError(f"name must be a non-empty string naming the operation, got {self.name!r}")
        object.__setattr__(self, "calls", _positive_int(self.calls, f"calls of {self.name}", "calls"))
        object.__setattr__(
            self, "seconds", _positive(self.seconds, f"seconds of {self.name}", "seconds", allow_zero=True)
        )
        for attr, unit in (("flops", "FLOP"), ("bytes_moved", "bytes"), ("typical_call_seconds", "seconds")):
            value = getattr(self, attr)
            if value is not None:
                object.__setattr__(self, attr, _positive(value, f"{attr} of {self.name}", unit, allow_zero=True))
        if self.kind and self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)} (or empty), got {self.kind!r}")

    @property
    def seconds_per_call(self) -> float:
        """The typical call: the median when known, else the mean (seconds / calls)."""
        if self.typical_call_seconds is not None:
            return self.typical_call_seconds
        return self.seconds / self.calls


def classify_op(name: str) -> str:
    """Say what kind of work an operation name stands for: one of :data:`KINDS`.

    ``aten::`` ops are looked up by their base name (``aten::addmm`` -> matmul,
    ``aten::native_layer_norm_backward`` -> elementwise, ``aten::view`` -> view); autograd
    nodes (``MmBackward0``), ``autograd::`` engine ranges and ``ProfilerStep#`` are host-side
    bookkeeping; other names are matched as GPU kernel names (``..._gemm_...`` -> matmul,
    ``vectorized_elementwise_kernel`` -> elementwise). Anything else is "other".
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string naming an operation, got {type(name).__name__} {name!r}")
    if name.startswith(_HOST_PREFIXES) or _AUTOGRAD_NODE.search(name) or _CUDA_RUNTIME.match(name):
        return "host"
    if _COMMS.search(name):
        return "comms"
    namespace, sep, op = name.partition("::")
    if sep and namespace in ("aten", "prims"):
        base = op.split(".")[0].lower().strip("_")
        for suffix in _SUFFIXES:
            base = base.removesuffix(suffix).strip("_")
        if base in _MATMUL_OPS or base.startswith(("conv", "scaled_dot_product", "flash_attention")):
            return "matmul"
        if base in _VIEW_OPS:
            return "view"
        if base in _ELEMENTWISE_OPS or base.startswith("foreach"):
            return "elementwise"
        return "other"
    if _MATMUL_KERNEL.search(name):
        return "matmul"
    if _ELEMENTWISE_KERNEL.search(name):
        return "elementwise"
    return "other"


# --------------------------------------------------------------------------- reading profiles


def _device_name(event) -> str:
    dt = getattr(event, "device_type", None)
    return str(getattr(dt, "name", dt) or "CPU").upper().removeprefix("DEVICETYPE.")


def _is_torch_event(item) -> bool:
    return hasattr(item, "self_cpu_time_total") and (hasattr(item, "key") or hasattr(item, "name"))


def _from_torch(events: list) -> tuple[list[OpStat], str]:
    """OpStats from torch FunctionEvents or FunctionEventAvgs, merged by name.

    Returns the rows and the timeline read: "device" (kernel rows) when the profile holds
    device activity, else "cpu" (op rows). Single events (``events()``) also give each op's
    median call.
    """
    # kernels only: a GPU-side user annotation (ProfilerStep#) spans kernels and would count twice
    on_device = [e for e in events if _device_name(e) != "CPU"
                 and not getattr(e, "is_user_annotation", False)
                 and float(getattr(e, "self_device_time_total", 0) or 0) > 0]
    timeline = "device" if on_device else "cpu"
    chosen = on_device if on_device else events
    totals: dict[str, dict] = {}
    for e in chosen:
        name = getattr(e, "key", None) or getattr(e, "name", None)
        field_name = "self_device_time_total" if timeline == "device" else "self_cpu_time_total"
        seconds = max(float(getattr(e, field_name, 0) or 0), 0.0) * _US
        calls = int(getattr(e, "count", 1) or 1)
        host = timeline == "cpu" and (
            bool(getattr(e, "is_user_annotation", False)) or getattr(e, "scope", 0) == 1
        )
        row = totals.setdefault(name, {"calls": 0, "seconds": 0.0, "flops": 0.0, "host": False, "each": []})
        row["calls"] += calls
        row["seconds"] += seconds
        row["flops"] += float(getattr(e, "flops", 0) or 0)
        row["host"] = row["host"] or host
        if hasattr(e, "time_range"):  # a single call, not an average
            row["each"].append(seconds)
    return [
        OpStat(
            name, r["calls"], r["seconds"], flops=r["flops"] or None, kind="host" if r["host"] else "",
            typical_call_seconds=statistics.median(r["each"]) if len(r["each"]) == r["calls"] else None,
        )
        for name, r in totals.items()
    ], timeline


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
        elif isinstance(item, tuple) and len(item) in (3, 4, 5):
            out.append(OpStat(*item))
        else:
            raise TypeError(
                f"profile row {i} must be an OpStat, a dict with its fields, a (name, calls, seconds) "
                f"tuple or a torch profiler event, got {type(item).__name__} {item!r}"
            )
    return out


def op_stats(profile_or_events) -> tuple[list[OpStat], str]:
    """Read any accepted profile form into ``(rows, timeline)``; timeline is "cpu" or "device".

    Rows with the same name are merged (calls, seconds and FLOPs added). Raises TypeError for
    something that is not a profile and ValueError for an empty one.
    """
    obj = profile_or_events
    if obj is None or isinstance(obj, (str, bytes, numbers.Number)):
        raise TypeError(
            "profile_or_events must be a torch profiler result (profile, key_averages() or events()) "
            f"or a list of OpStat rows, got {type(obj).__name__} {obj!r}"
        )
    if isinstance(obj, ProfiledRun):
        obj = obj.profile
    if callable(getattr(obj, "events", None)) and callable(getattr(obj, "key_averages", None)):
        try:
            obj = obj.events()  # one event per call: medians as well as totals
        except (AssertionError, RuntimeError) as err:  # a profile that never ran
            raise ValueError(f"the profiler holds no results yet ({err}); profile something first") from None
        if obj is None:
            raise ValueError("the profiler holds no results yet; profile something first")
    if not isinstance(obj, Iterable):
        raise TypeError(
            f"profile_or_events must be iterable rows or a torch profiler result, got {type(obj).__name__}"
        )
    items = list(obj)
    if not items:
        raise ValueError(
            "the profile is empty: no operation was recorded (did the work run inside the profiler, "
            "and did a schedule's cycle end and clear it? use schedule(..., repeat=1) or acc_events=True)"
        )
    if all(_is_torch_event(i) for i in items):
        rows, timeline = _from_torch(items)
    else:
        rows, timeline = _merge(_from_plain(items)), "cpu"
    if not any(r.seconds > 0 for r in rows):
        raise ValueError("the profile holds no time: every row has 0 seconds")
    return rows, timeline


def _merge(rows: list[OpStat]) -> list[OpStat]:
    merged: dict[str, OpStat] = {}
    for r in rows:
        if r.name not in merged:
            merged[r.name] = r
            continue
        m = merged[r.name]
        merged[r.name] = OpStat(
            r.name, m.calls + r.calls, m.seconds + r.seconds,
            flops=_add(m.flops, r.flops), bytes_moved=_add(m.bytes_moved, r.bytes_moved),
            kind=m.kind or r.kind,
        )
    return list(merged.values())


def _add(a, b):
    return None if a is None and b is None else (a or 0.0) + (b or 0.0)


@dataclass(frozen=True)
class ProfiledRun:
    """A torch profiler result and the wall-clock seconds of the run it recorded.

    :func:`diagnose` reads both: the op rows from ``profile`` and, unless told otherwise,
    ``wall_seconds`` for the time no op accounts for.
    """

    profile: object
    wall_seconds: float
    calls: int = 1


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
            kept = [line for line in sink.read().decode(errors="replace").splitlines(keepends=True)
                    if not _PROFILER_NOISE.match(line)]
            if kept:
                sys.stderr.write("".join(kept))


def profile_run(fn: Callable, *args, warmup: int = 1, calls: int = 1, with_flops: bool = True,
                record_shapes: bool = False, **kwargs) -> ProfiledRun:
    """Run ``fn(*args, **kwargs)`` ``calls`` times under ``torch.profiler`` and time it.

    ``warmup`` untimed, unprofiled calls come first (allocator, thread pools, library
    dispatch). The wall clock runs inside the profiler, so ops and wall-clock share its
    overhead. With a CUDA GPU present the profile records CUDA activity too and the clock
    stops after ``torch.cuda.synchronize()``. ``with_flops=True`` lets torch fill FLOP counts
    for matmul rows (its own formulas).
    """
    import time

    import torch
    from torch.profiler import ProfilerActivity, profile

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__} {fn!r}")
    n_calls = _positive_int(calls, "calls", "calls")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a whole number of calls (0 or more), got {warmup!r}")
    cuda = torch.cuda.is_available()
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for _ in range(warmup):
        fn(*args, **kwargs)
    sync()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with quiet_profiler_log(), profile(activities=activities, with_flops=with_flops,
                                       record_shapes=record_shapes) as prof:
        start = time.perf_counter()
        for _ in range(n_calls):
            fn(*args, **kwargs)
        sync()
        wall = time.perf_counter() - start
    return ProfiledRun(profile=prof, wall_seconds=wall, calls=n_calls)


# --------------------------------------------------------------------------- ceilings


def _read_ceilings(ceilings, precision) -> tuple[float, float, str] | None:
    """(peak FLOP/s, bytes/s, description) from a MeasuredCeilings-like object or a GPU."""
    if ceilings is None:
        return None
    if isinstance(ceilings, (GPUSpec, str)):
        spec = as_gpu(ceilings)
        return spec.peak_flops_per_s(precision), spec.hbm_bytes_per_s, f"{spec.name} datasheet ({precision})"
    if hasattr(ceilings, "flops_per_s") and hasattr(ceilings, "bytes_per_s"):
        peak = _positive(ceilings.flops_per_s, "ceilings.flops_per_s", "FLOP per second")
        bw = _positive(ceilings.bytes_per_s, "ceilings.bytes_per_s", "bytes per second")
        where = getattr(ceilings, "device_name", "this machine")
        return peak, bw, f"measured on {where}"
    raise TypeError(
        "ceilings must be a MeasuredCeilings (measure.measure_ceilings()), a GPUSpec or a GPU name, "
        f"got {type(ceilings).__name__} {ceilings!r}"
    )


def _guard(what, flops_per_s, bytes_per_s, roofs, tolerance):
    if roofs is None:
        return
    peak, bw, where = roofs
    limit = 1.0 + tolerance
    if bytes_per_s is not None and bytes_per_s > bw * limit:
        raise ImplausibleMeasurement(
            f"{what} moves {bytes_per_s / 1e9:.3g} GB/s, {bytes_per_s / bw:.2f}x the memory roof "
            f"({bw / 1e9:.3g} GB/s, {where}): the data came from a cache, the time is too short, or "
            "bytes_moved counts traffic that never happened"
        )
    if flops_per_s is not None and flops_per_s > peak * limit:
        raise ImplausibleMeasurement(
            f"{what} reaches {flops_per_s / 1e9:.3g} GFLOP/s, {flops_per_s / peak:.2f}x the compute "
            f"roof ({peak / 1e9:.3g} GFLOP/s, {where}): a FLOP is miscounted (1 multiply-add = 2 FLOP), "
            "the roof is for a wider precision than the work used, or the timing stopped early"
        )


# --------------------------------------------------------------------------- the verdict


@dataclass(frozen=True)
class Diagnosis:
    """The verdict of :func:`diagnose`: a regime and the evidence that chose it.

    ``shares`` and ``seconds`` are keyed by bucket ("compute", "memory", "overhead", "other");
    the shares add up to 1. ``timeline`` says whose clock was read ("cpu": op self times on the
    host; "device": kernel times on the GPU). ``top`` holds the rows with the most self time,
    each with its ``kind`` filled in. Achieved rates are None when the counts were not given.
    """

    regime: str
    evidence: tuple[str, ...]
    shares: Mapping[str, float]
    seconds: Mapping[str, float]
    total_seconds: float
    timeline: str
    n_calls: int
    top: tuple[OpStat, ...]
    achieved_flops_per_s: float | None
    achieved_bytes_per_s: float | None

    @property
    def remedy(self) -> str:
        """The playbook's next step for this regime (:data:`REMEDIES`)."""
        return REMEDIES[self.regime]

    def __str__(self) -> str:
        lines = [f"{self.regime}-bound ({self.shares[self.regime]:.0%} of the time)"]
        lines += [f"  - {line}" for line in self.evidence]
        lines.append(f"  next: {self.remedy}")
        return "\n".join(lines)


_BUCKET_OF_KIND = {"matmul": "compute", "elementwise": "memory", "view": "overhead",
                   "host": "overhead", "comms": "overhead", "other": "other"}


def _kind(row: OpStat, classify, roofs) -> str:
    if row.kind:
        return row.kind
    if roofs is not None and row.flops and row.bytes_moved:
        peak, bw, _ = roofs
        return "matmul" if row.flops / row.bytes_moved >= peak / bw else "elementwise"
    if classify is not None:
        kind = classify(row.name)
        if kind is not None:
            if kind not in KINDS:
                raise ValueError(f"classify({row.name!r}) must return one of {', '.join(KINDS)} or None, got {kind!r}")
            return kind
    return classify_op(row.name)


def _pct(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 or x == 0 else f"{x * 100:.2g}%"


def _seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"


def _names(rows: list[OpStat], limit: int = 3) -> str:
    rows = sorted(rows, key=lambda r: -r.seconds)
    shown = ", ".join(f"{r.name} x{r.calls}" for r in rows[:limit])
    return shown + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


def diagnose(
    profile_or_events,
    *,
    flops: float | None = None,
    bytes_moved: float | None = None,
    ceilings=None,
    precision: str = "bf16",
    wall_seconds: float | None = None,
    tiny_call_seconds: float = TINY_CALL_SECONDS,
    classify: Callable[[str], str | None] | None = None,
    top_n: int = 5,
    tolerance: float = PLAUSIBILITY_TOLERANCE,
) -> Diagnosis:
    """Say whether a profiled program is compute-, memory- or overhead-bound, with evidence.

    ``profile_or_events``: a torch profiler result or a list of rows (see the module docstring).
    ``flops`` and ``bytes_moved``: the whole program's work (1 multiply-add = 2 FLOP; bytes to
    and from main memory), used for the achieved-versus-ceiling evidence. ``ceilings``: a
    :class:`~roofline_lib.measure.MeasuredCeilings` or a GPU (with ``precision``), the roofs to
    compare with. ``wall_seconds``: the program's wall-clock time; what the rows do not account
    for counts as overhead (idle). ``classify(name)`` may return a kind from :data:`KINDS` (or
    None to fall back on :func:`classify_op`).

    The verdict is the largest of the compute, memory and overhead shares of time. Raises
    ValueError for an empty profile or bad numbers, TypeError for something that is not a
    profile, and ImplausibleMeasurement when a rate beats its roof by more than ``tolerance``.
    """
    tiny = _positive(tiny_call_seconds, "tiny_call_seconds", "seconds")
    tol = _positive(tolerance, "tolerance", "fraction", allow_zero=True)
    n_top = _positive_int(top_n, "top_n", "rows")
    if classify is not None and not callable(classify):
        raise TypeError(f"classify must be a callable taking an op name, got {classify!r}")
    f_total = None if flops is None else _positive(flops, "flops", "FLOP", allow_zero=True)
    b_total = None if bytes_moved is None else _positive(bytes_moved, "bytes_moved", "bytes", allow_zero=True)
    wall = None if wall_seconds is None else _positive(wall_seconds, "wall_seconds", "seconds")
    roofs = _read_ceilings(ceilings, precision)

    if wall is None and isinstance(profile_or_events, ProfiledRun):
        wall = profile_or_events.wall_seconds
    rows, timeline = op_stats(profile_or_events)
    kinds = [replace(r, kind=_kind(r, classify, roofs)) for r in rows]

    buckets = {"compute": 0.0, "memory": 0.0, "overhead": 0.0, "other": 0.0}
    tiny_rows, view_host_rows, comms_rows, other_rows = [], [], [], []
    for r in kinds:
        if r.seconds == 0:
            continue
        if r.kind in ("view", "host"):
            view_host_rows.append(r)  # no work to speed up, whatever the call's length
            buckets["overhead"] += r.seconds
        elif r.kind == "comms":
            comms_rows.append(r)  # waiting on other chips: the playbook's overhead/comms branch
            buckets["overhead"] += r.seconds
        elif r.seconds_per_call < tiny:
            tiny_rows.append(r)
            buckets["overhead"] += r.seconds
        else:
            buckets[_BUCKET_OF_KIND[r.kind]] += r.seconds
            if r.kind == "other":
                other_rows.append(r)
    op_seconds = sum(buckets.values())

    evidence: list[str] = []
    idle = 0.0
    if wall is not None:
        if wall >= op_seconds:
            idle = wall - op_seconds
        else:
            evidence.append(
                f"the rows add up to {_seconds(op_seconds)}, more than the {_seconds(wall)} wall-clock: "
                "they overlap (several threads or streams) or the profiler slowed them; no idle time counted"
            )
    buckets["overhead"] += idle
    total = op_seconds + idle
    shares = {k: v / total for k, v in buckets.items()}
    regime = max(REGIMES, key=lambda k: shares[k])

    n_calls = sum(r.calls for r in kinds)
    matmul_rows = [r for r in kinds if r.kind == "matmul" and r.seconds_per_call >= tiny]
    memory_rows = [r for r in kinds if r.kind == "elementwise" and r.seconds_per_call >= tiny]
    clock = "GPU kernel time" if timeline == "device" else "op self time on the CPU"
    evidence.append(f"{_seconds(total)} read from {clock}, {n_calls:,} calls over {len(kinds)} distinct ops")
    evidence.append(
        f"matmul-like ops: {shares['compute']:.0%} of the time"
        + (f" ({_names(matmul_rows)})" if matmul_rows else "")
    )
    evidence.append(
        f"element-wise, norm and copy ops: {shares['memory']:.0%} of the time"
        + (f" ({_names(memory_rows)})" if memory_rows else "")
    )
    tiny_calls = sum(r.calls for r in tiny_rows)
    parts = []
    if tiny_rows:
        parts.append(f"{tiny_calls:,} calls under {_seconds(tiny)} each take "
                     f"{sum(r.seconds for r in tiny_rows) / total:.0%}")
    if view_host_rows:
        parts.append(f"views and host-side ranges take {sum(r.seconds for r in view_host_rows) / total:.0%}")
    if comms_rows:
        parts.append(f"communication ({_names(comms_rows)}) takes {sum(r.seconds for r in comms_rows) / total:.0%}")
    if idle:
        parts.append(f"wall-clock time outside every op takes {idle / total:.0%}")
    parts = [p for p in parts if not p.endswith(" 0%")]  # a part that rounds to nothing is clutter
    evidence.append(f"overhead: {shares['overhead']:.0%} of the time" + (f" ({'; '.join(parts)})" if parts else ""))
    if other_rows:
        evidence.append(
            f"unrecognised ops: {shares['other']:.0%} of the time ({_names(other_rows)}); "
            "pass classify= to name them"
            + ("; they outweigh the verdict's share, so treat it with care"
               if shares["other"] > shares[regime] else "")
        )

    # per-kind rates from rows that carry FLOPs (torch's with_flops=True fills matmul rows)
    counted = [r for r in matmul_rows if r.flops]
    if counted and roofs is not None:
        f_rows = sum(r.flops for r in counted)
        t_rows = sum(r.seconds for r in counted)
        rate = f_rows / t_rows
        _guard("the matmul rows", rate, None, roofs, tol)
        evidence.append(
            f"matmul rows ran at {rate / 1e9:.3g} GFLOP/s, {rate / roofs[0]:.0%} of the compute roof "
            f"({roofs[2]})"
        )

    achieved_f = achieved_b = None
    if f_total is not None or b_total is not None:
        seconds = wall if wall is not None else total
        achieved_f = None if f_total is None else f_total / seconds
        achieved_b = None if b_total is None else b_total / seconds
        _guard("the program", achieved_f, achieved_b, roofs, tol)
        if roofs is not None:
            peak, bw, where = roofs
            bits = []
            if achieved_f is not None:
                bits.append(f"{achieved_f / 1e9:.3g} GFLOP/s = {_pct(achieved_f / peak)} of the compute roof")
            if achieved_b is not None:
                bits.append(f"{achieved_b / 1e9:.3g} GB/s = {_pct(achieved_b / bw)} of the memory roof")
            line = f"whole program over {_seconds(seconds)}: " + ", ".join(bits) + f" ({where})"
            if f_total and b_total:
                ridge = peak / bw
                intensity = f_total / b_total
                side = "at or above" if intensity >= ridge else "below"
                line += f"; intensity {intensity:.3g} FLOP/B is {side} the ridge of {ridge:.3g}"
            evidence.append(line)

    top = tuple(sorted(kinds, key=lambda r: -r.seconds)[:n_top])
    return Diagnosis(
        regime=regime,
        evidence=tuple(evidence),
        shares=MappingProxyType(shares),
        seconds=MappingProxyType(dict(buckets)),
        total_seconds=total,
        timeline=timeline,
        n_calls=n_calls,
        top=top,
        achieved_flops_per_s=achieved_f,
        achieved_bytes_per_s=achieved_b,
    )


def measured_mfu(model_flops, seconds, ceilings, *, precision: str = "bf16",
                 tolerance: float = PLAUSIBILITY_TOLERANCE) -> float:
    """Model FLOPs utilisation of a step timed here: ``model_flops / seconds / peak``.

    ``model_flops`` is the step's model FLOP count under a convention you state (6N, three-term,
    or a FlopCounterMode audit); ``seconds`` a float or a Timing (its median); ``ceilings`` a
    MeasuredCeilings (its matmul rate is the peak) or a GPU name/spec (its dense peak in
    ``precision``).
    Raises ImplausibleMeasurement above ``1 + tolerance``: a step cannot beat the matmul roof.
    """
    f = _positive(model_flops, "model_flops", "FLOP")
    t = _positive(getattr(seconds, "median_s", seconds), "seconds", "seconds")
    roofs = _read_ceilings(ceilings, precision)
    if roofs is None:
        raise TypeError("ceilings must be a MeasuredCeilings, a GPUSpec or a GPU name, got None")
    tol = _positive(tolerance, "tolerance", "fraction", allow_zero=True)
    achieved = f / t
    _guard("the measured step", achieved, None, roofs, tol)
    return achieved / roofs[0]
