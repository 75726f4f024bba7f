"""Triton demo kernels: a plain copy, a fused bias + GELU, and a fused residual add + RMSNorm.

Each demo follows the course's order for anything measured:

1. a **reference** in torch, written the unfused way eager PyTorch runs it (one kernel per op);
2. a **correctness check** of the Triton kernel against it (:func:`check_demo`);
3. **timing** with :func:`roofline_lib.evidence.measure.time_fn` (``triton.testing.do_bench`` on CUDA);
4. its **point on the roofline** beside the prediction from its FLOP and byte counts
   (:func:`run_demo` returns a :class:`~roofline_lib.evidence.records.KernelMeasurement`, a row of the
   GPU record).

Fusion pays because element-wise kernels are memory-bound: the fused kernel reads each input
and writes each output once, while the unfused sequence writes every intermediate to HBM and
reads it back. The ``*_count`` functions give the fused traffic, the ``*_unfused_count``
functions the unfused sequence's, pass by pass.

Running without a GPU. ``@triton.jit`` decides at import whether to compile or interpret: set
``TRITON_INTERPRET=1`` in the environment *before this module is imported* and the kernels run
on CPU tensors through Triton's interpreter (correct results, meaningless timings). The course's
CPU tests do exactly that. ``import roofline_lib`` does not import this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import torch
import triton
import triton.language as tl

from ..core import ops
from ..core.checks import _positive, _positive_int
from ..core.hardware import as_gpu, bytes_per_element
from ..core.ops import OpCount
from ..core.roofline import Roof
from .records import KernelMeasurement

__all__ = [
    "MAX_RMSNORM_ROW",
    "INTERPRETED",
    "GELU_FLOPS_PER_ELEM",
    "KernelMismatch",
    "Demo",
    "DEMOS",
    "copy",
    "copy_reference",
    "copy_count",
    "copy_unfused_count",
    "bias_gelu",
    "bias_gelu_reference",
    "bias_gelu_count",
    "bias_gelu_unfused_count",
    "add_rmsnorm",
    "add_rmsnorm_reference",
    "add_rmsnorm_count",
    "add_rmsnorm_unfused_count",
    "check_demo",
    "run_demo",
]

#: True when this module was imported with TRITON_INTERPRET=1: kernels run on CPU tensors.
INTERPRETED = bool(triton.knobs.runtime.interpret)

#: Exact (erf) GELU, per element: scale by 1/sqrt(2) (1), erf (1), add 1 (1), multiply by the
#: input (1), halve (1). erf counts as one step, like exp in the softmax count.
GELU_FLOPS_PER_ELEM = 5

_FP32_BYTES = 4  # the unfused RMSNorm does its arithmetic in fp32, as Llama's reference does

#: Widest row :func:`add_rmsnorm` accepts, in elements. The kernel keeps one row in registers as
#: fp32: 16384 * 4 B = 64 KiB per program, the limit Triton's own layer-norm tutorial sets. With 16
#: warps (512 threads) that is 32 registers per thread for each row-sized value, and about four are
#: live at once (x + r, h, the normalised row, the weight): 128 of a thread's 255. Wider rows spill
#: to local memory, and beyond 2**20 elements Triton does not compile the block at all.
MAX_RMSNORM_ROW = 16384

_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}

#: (rtol, atol) for comparing a kernel with its reference. bf16 keeps 8 significant bits
#: (1 ulp = 2**-7 relative); the interpreter truncates where a GPU rounds, and roundings stack
#: across the steps of a norm, so a few ulps are allowed.
_TOLERANCE = {
    torch.float32: (1e-4, 1e-5),
    torch.float16: (4e-3, 4e-3),
    torch.bfloat16: (3e-2, 3e-2),
}


class KernelMismatch(AssertionError):
    """A Triton kernel's output differs from its torch reference beyond the dtype's tolerance."""


# --------------------------------------------------------------------------- kernels


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK: tl.constexpr):
    # One program copies BLOCK consecutive elements; offsets are 64-bit so any size fits.
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offsets = start + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def _bias_gelu_kernel(x_ptr, bias_ptr, y_ptr, d, BLOCK: tl.constexpr):
    # y = GELU(x + bias) on a (rows, d) tensor. Program (row, j) takes columns j*BLOCK ...
    # (j+1)*BLOCK - 1 of one row, so the bias index is just the column: no per-element modulo,
    # which costs dozens of integer instructions and would make this kernel compute-bound.
    row_start = tl.program_id(0).to(tl.int64) * d
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < d
    x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(bias_ptr + cols, mask=mask, other=0.0).to(tl.float32)  # from cache after the first row
    t = x + b
    y = 0.5 * t * (1.0 + tl.math.erf(t * 0.7071067811865476))  # 1/sqrt(2)
    tl.store(y_ptr + row_start + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _add(a, b):
    # The sum for tl.reduce. It stands in for tl.sum, a @triton.jit helper inside triton itself:
    # that one is compiled or interpreted according to how *triton* was first imported, so an
    # interpreted kernel calling it fails when something imported triton before us.
    return a + b


@triton.jit
def _add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, h_ptr, y_ptr, d, eps, BLOCK: tl.constexpr):
    # One program per row: h = x + r (the new residual stream), y = RMSNorm(h) * w.
    row_start = tl.program_id(0).to(tl.int64) * d
    cols = tl.arange(0, BLOCK)
    mask = cols < d
    x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + row_start + cols, mask=mask, other=0.0).to(tl.float32)
    h = (x + r).to(h_ptr.dtype.element_ty)  # stored, and normalised as stored
    tl.store(h_ptr + row_start + cols, h, mask=mask)
    hf = h.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.reduce(hf * hf, 0, _add) / d + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    normed = (hf * rstd).to(y_ptr.dtype.element_ty).to(tl.float32)  # rounded as the reference rounds
    tl.store(y_ptr + row_start + cols, (normed * w).to(y_ptr.dtype.element_ty), mask=mask)


# --------------------------------------------------------------------------- launchers


def _check_tensor(t, name: str, ndim: int | None = None) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in _DTYPE_NAMES:
        raise TypeError(f"{name} must be fp32, bf16 or fp16, got {t.dtype}")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(t.shape)}")
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous (call .contiguous() first)")
    if t.numel() == 0:
        raise ValueError(f"{name} must hold at least one element, got shape {tuple(t.shape)}")
    if t.device.type != "cuda" and not INTERPRETED:
        raise RuntimeError(
            f"{name} is on {t.device.type}; compiled Triton kernels need a CUDA GPU. To run them "
            "on the CPU, set TRITON_INTERPRET=1 in the environment before importing "
            "roofline_lib.evidence.kernels (results are exact; timings are not)"
        )


def _launch(kernel, grid: tuple, *args, **meta) -> None:
    """Launch ``kernel`` on ``grid``. An interpreted kernel also needs the interpreter switched on
    while it runs (Triton imports parts of itself lazily and checks the switch), so it is turned
    on for the launch even if TRITON_INTERPRET was unset after this module was imported."""
    if not INTERPRETED:
        kernel[grid](*args, **meta)
        return
    with triton.knobs.runtime.scope():
        triton.knobs.runtime.interpret = True
        kernel[grid](*args, **meta)


def copy(x: torch.Tensor, *, BLOCK: int = 1024, num_warps: int = 4) -> torch.Tensor:
    """A new tensor holding ``x``, copied by a Triton kernel ``BLOCK`` elements per program."""
    _check_tensor(x, "x")
    out = torch.empty_like(x)
    n = x.numel()
    _launch(_copy_kernel, (triton.cdiv(n, BLOCK),), x, out, n, BLOCK=BLOCK, num_warps=num_warps)
    return out


def copy_reference(x: torch.Tensor) -> torch.Tensor:
    """torch's own device copy."""
    return x.clone()


def bias_gelu(x: torch.Tensor, bias: torch.Tensor, *, BLOCK: int = 1024, num_warps: int = 4) -> torch.Tensor:
    """``GELU(x + bias)`` (exact erf GELU) in one pass; ``x`` is (rows, d), ``bias`` is (d,).

    Each program takes ``BLOCK`` columns of one row. The sum stays in fp32 registers; only the
    result is rounded to ``x``'s dtype.
    """
    _check_tensor(x, "x", ndim=2)
    _check_tensor(bias, "bias", ndim=1)
    d = x.shape[1]
    if bias.shape[0] != d or bias.dtype != x.dtype or bias.device != x.device:
        raise ValueError(
            f"bias must be a ({d},) tensor of x's dtype and device, got {tuple(bias.shape)} {bias.dtype} on {bias.device}"
        )
    y = torch.empty_like(x)
    grid = (x.shape[0], triton.cdiv(d, BLOCK))  # rows on axis 0: it allows 2**31 - 1 programs
    _launch(_bias_gelu_kernel, grid, x, bias, y, d, BLOCK=BLOCK, num_warps=num_warps)
    return y


def bias_gelu_reference(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The unfused version: ``x + bias`` is written to memory, then GELU reads it back."""
    return torch.nn.functional.gelu(x + bias)


def add_rmsnorm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6, *, num_warps: int = 8
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused ``h = x + residual; y = RMSNorm(h) * weight``; returns ``(y, h)``.

    This is the step between a transformer's sub-layers: the residual stream ``h`` is kept for
    the next addition and its normalised copy ``y`` feeds the next sub-layer. ``x`` and
    ``residual`` are (rows, d), ``weight`` is (d,). One program handles one row, held whole in
    registers, so ``d`` may be at most :data:`MAX_RMSNORM_ROW` elements; a wider row is refused
    (ValueError) rather than left to spill or to fail in the compiler.
    """
    _check_tensor(x, "x", ndim=2)
    _check_tensor(residual, "residual", ndim=2)
    _check_tensor(weight, "weight", ndim=1)
    eps = _positive(eps, "eps", "units of the mean square (a small guard against dividing by 0)")
    rows, d = x.shape
    if d > MAX_RMSNORM_ROW:
        raise ValueError(
            f"x has rows of d = {d} elements, but add_rmsnorm holds a whole row in registers: d must be "
            f"at most {MAX_RMSNORM_ROW} elements ({MAX_RMSNORM_ROW * _FP32_BYTES // 1024} KiB of fp32 per "
            "row); use add_rmsnorm_reference for wider rows"
        )
    if residual.shape != x.shape or residual.dtype != x.dtype or residual.device != x.device:
        raise ValueError(
            f"residual must match x {tuple(x.shape)} {x.dtype}, got {tuple(residual.shape)} {residual.dtype}"
        )
    if weight.shape[0] != d or weight.dtype != x.dtype or weight.device != x.device:
        raise ValueError(f"weight must be a ({d},) tensor of x's dtype, got {tuple(weight.shape)} {weight.dtype}")
    h = torch.empty_like(x)
    y = torch.empty_like(x)
    block = triton.next_power_of_2(d)  # the whole row sits in registers
    _launch(_add_rmsnorm_kernel, (rows,), x, residual, weight, h, y, d, eps, BLOCK=block, num_warps=num_warps)
    return y, h


def add_rmsnorm_reference(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """The unfused version, as Llama's reference code writes it: fp32 arithmetic, one kernel per op."""
    h = x + residual
    hf = h.float()
    normed = hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + eps)
    return normed.type_as(h) * weight, h


# --------------------------------------------------------------------------- counts


def _bytes(elements: int, bytes_per_elem) -> float:
    total = elements * _positive(bytes_per_elem, "bytes_per_elem", "bytes per element")
    return int(total) if float(total).is_integer() else total


def copy_count(n, bytes_per_elem=2) -> OpCount:
    """A copy of ``n`` elements: 0 FLOP; read ``n``, write ``n`` elements."""
    return OpCount(0, ops.elementwise_bytes(n, n_inputs=1, n_outputs=1, bytes_per_elem=bytes_per_elem))


def copy_unfused_count(n, bytes_per_elem=2) -> OpCount:
    """torch's copy is one pass too: the same traffic as :func:`copy_count`."""
    return copy_count(n, bytes_per_elem)


def bias_gelu_count(n_rows, d, bytes_per_elem=2) -> OpCount:
    """Fused bias + GELU: ``(1 + GELU_FLOPS_PER_ELEM) * n_rows * d`` FLOP (add, then GELU).

    Bytes: read x, write y (``n_rows * d`` each), read the bias row once (``d``).
    """
    rows = _positive_int(n_rows, "n_rows", "rows")
    d = _positive_int(d, "d", "elements per row")
    n = rows * d
    flops = ops.elementwise_flops(n, 1 + GELU_FLOPS_PER_ELEM)  # add the bias, then GELU
    moved = ops.elementwise_bytes(n, n_inputs=1, n_outputs=1, bytes_per_elem=bytes_per_elem) + _bytes(d, bytes_per_elem)
    return OpCount(flops, moved)


def bias_gelu_unfused_count(n_rows, d, bytes_per_elem=2) -> OpCount:
    """Eager ``gelu(x + bias)``: two kernels, the sum written to HBM and read back.

    Pass 1, ``t = x + bias``: read x (``n``) and the bias (``d``), write t (``n``).
    Pass 2, ``gelu(t)``: read t, write y (``n`` each). Total ``4n + d`` elements, against
    ``2n + d`` fused. Same FLOPs.
    """
    fused = bias_gelu_count(n_rows, d, bytes_per_elem)
    n = int(n_rows) * int(d)
    extra = _bytes(2 * n, bytes_per_elem)  # write t, read t back
    return OpCount(fused.flops, fused.bytes_moved + extra)


def add_rmsnorm_count(n_rows, d, bytes_per_elem=2) -> OpCount:
    """Fused residual add + RMSNorm.

    FLOPs: the add (1 per element) plus :func:`~roofline_lib.core.ops.rmsnorm_flops` (4 per element).
    Bytes: read x and the residual, write h and y (``n_rows * d`` each), read the weight (``d``).
    """
    rows = _positive_int(n_rows, "n_rows", "rows")
    d = _positive_int(d, "d", "elements per row")
    n = rows * d
    flops = ops.elementwise_flops(n, 1) + ops.rmsnorm_flops(rows, d)  # add, then normalise
    moved = ops.elementwise_bytes(n, n_inputs=2, n_outputs=2, bytes_per_elem=bytes_per_elem) + _bytes(d, bytes_per_elem)
    return OpCount(flops, moved)


def _add_rmsnorm_passes(n_rows: int, d: int, e) -> list[tuple[str, float, float]]:
    """(op, bytes read, bytes written) for each kernel eager torch launches in the reference."""
    n, f = n_rows * d, _FP32_BYTES
    passes = [("h = x + residual", 2 * n * e, n * e)]
    if e != f:
        passes.append(("hf = h.float()", n * e, n * f))
    passes += [
        ("hf.pow(2)", n * f, n * f),
        (".mean(-1)", n * f, n_rows * f),
        ("+ eps", n_rows * f, n_rows * f),
        ("rsqrt", n_rows * f, n_rows * f),
        ("hf * rstd", n * f + n_rows * f, n * f),
    ]
    if e != f:
        passes.append((".type_as(h)", n * f, n * e))
    passes.append(("* weight", n * e + d * e, n * e))
    return passes


def add_rmsnorm_unfused_count(n_rows, d, bytes_per_elem=2) -> OpCount:
    """Eager Llama-style ``add + RMSNorm``: one kernel per op, intermediates in fp32.

    Pass by pass (``n = n_rows * d``, ``e`` bytes per stored element, ``f = 4`` for fp32):
    add (read 2n e, write n e); upcast (read n e, write n f; skipped when e = f); square
    (read n f, write n f); mean (read n f, write n_rows f); + eps and rsqrt (n_rows f each way);
    scale (read n f + n_rows f, write n f); downcast (read n f, write n e; skipped when e = f);
    times weight (read n e + d e, write n e). Same FLOPs as the fused kernel.
    """
    rows = _positive_int(n_rows, "n_rows", "rows")
    d = _positive_int(d, "d", "elements per row")
    e = _positive(bytes_per_elem, "bytes_per_elem", "bytes per element")
    moved = sum(read + written for _, read, written in _add_rmsnorm_passes(rows, d, e))
    moved = int(moved) if float(moved).is_integer() else moved
    return OpCount(add_rmsnorm_count(rows, d, e).flops, moved)


# --------------------------------------------------------------------------- demos


@dataclass(frozen=True)
class Demo:
    """One demo: how to build its inputs, run it both ways, and count it.

    ``shape`` is ``(n,)`` for the copy and ``(rows, d)`` otherwise. ``configs`` are the launch
    settings :func:`run_demo` tries on a GPU (it keeps the fastest, as ``triton.autotune``
    would); the first one is used everywhere else.
    """

    name: str
    summary: str
    make_inputs: Callable[[tuple, torch.dtype, str, torch.Generator], tuple]
    triton_fn: Callable[..., Any]
    torch_fn: Callable[..., Any]
    count: Callable[..., OpCount]
    unfused_count: Callable[..., OpCount]
    cpu_shape: tuple[int, ...]
    gpu_shape: tuple[int, ...]
    configs: tuple[Mapping[str, int], ...]
    compute_precision: str = "fp32"


def _randn(shape, dtype, device, gen):
    # Drawn on the generator's device (the GPU in run_demo: fast at hundreds of MB), then moved.
    return torch.randn(shape, generator=gen, dtype=torch.float32, device=gen.device).to(device=device, dtype=dtype)


def _copy_inputs(shape, dtype, device, gen):
    return (_randn(shape, dtype, device, gen),)


def _bias_gelu_inputs(shape, dtype, device, gen):
    rows, d = shape
    return (_randn((rows, d), dtype, device, gen), _randn((d,), dtype, device, gen))


def _add_rmsnorm_inputs(shape, dtype, device, gen):
    rows, d = shape
    return (
        _randn((rows, d), dtype, device, gen),
        _randn((rows, d), dtype, device, gen),
        1.0 + 0.1 * _randn((d,), dtype, device, gen),  # a weight near 1, as after training starts
    )


_ELEMENTWISE_CONFIGS = (
    {"BLOCK": 1024, "num_warps": 4},
    {"BLOCK": 2048, "num_warps": 8},
    {"BLOCK": 4096, "num_warps": 8},
)

#: The course's demos by name. GPU shapes move hundreds of MB per call, far beyond any L2.
DEMOS: Mapping[str, Demo] = {
    demo.name: demo
    for demo in (
        Demo(
            name="copy",
            summary="a plain copy: the memory roof a Triton kernel can reach",
            make_inputs=_copy_inputs,
            triton_fn=copy,
            torch_fn=copy_reference,
            count=lambda shape, e: copy_count(shape[0], e),
            unfused_count=lambda shape, e: copy_unfused_count(shape[0], e),
            cpu_shape=(1000,),
            gpu_shape=(2**28,),  # 268M elements: 512 MiB each way in bf16
            configs=_ELEMENTWISE_CONFIGS,
        ),
        Demo(
            name="bias_gelu",
            summary="GELU(x + bias) in one pass against eager torch's two",
            make_inputs=_bias_gelu_inputs,
            triton_fn=bias_gelu,
            torch_fn=bias_gelu_reference,
            count=lambda shape, e: bias_gelu_count(*shape, e),
            unfused_count=lambda shape, e: bias_gelu_unfused_count(*shape, e),
            cpu_shape=(6, 100),
            gpu_shape=(16384, 8192),  # 128M elements: 256 MiB per tensor in bf16
            configs=_ELEMENTWISE_CONFIGS,
        ),
        Demo(
            name="add_rmsnorm",
            summary="residual add + RMSNorm in one pass against eager torch's chain of kernels",
            make_inputs=_add_rmsnorm_inputs,
            triton_fn=add_rmsnorm,
            torch_fn=add_rmsnorm_reference,
            count=lambda shape, e: add_rmsnorm_count(*shape, e),
            unfused_count=lambda shape, e: add_rmsnorm_unfused_count(*shape, e),
            cpu_shape=(6, 100),
            gpu_shape=(16384, 8192),
            configs=({"num_warps": 8}, {"num_warps": 16}, {"num_warps": 4}),
        ),
    )
}


def _demo(name) -> Demo:
    if name not in DEMOS:
        raise ValueError(f"unknown demo {name!r}; the demos are: {', '.join(DEMOS)}")
    return DEMOS[name]


def _torch_dtype(dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype) and dtype in _DTYPE_NAMES:
        return dtype
    if isinstance(dtype, str) and dtype.strip().lower() in _DTYPES:
        return _DTYPES[dtype.strip().lower()]
    raise ValueError(f"dtype must be one of {', '.join(_DTYPES)}, got {dtype!r}")


def _shape(demo: Demo, shape) -> tuple[int, ...]:
    want = len(demo.cpu_shape)
    if not isinstance(shape, (tuple, list)) or len(shape) != want:
        form = "(n,)" if want == 1 else "(rows, d)"
        raise ValueError(f"shape for {demo.name} must be {form}, got {shape!r}")
    return tuple(_positive_int(s, "shape", "elements") for s in shape)


def _outputs(value) -> tuple[torch.Tensor, ...]:
    return value if isinstance(value, tuple) else (value,)


def _max_error(demo: Demo, got, want, dtype: torch.dtype) -> float:
    rtol, atol = _TOLERANCE[dtype]
    worst = 0.0
    for i, (g, w) in enumerate(zip(_outputs(got), _outputs(want))):
        diff = (g.float() - w.float()).abs()
        worst = max(worst, float(diff.max()))
        allowed = atol + rtol * w.float().abs()
        if not bool((diff <= allowed).all()):
            bad = int((diff > allowed).sum())
            raise KernelMismatch(
                f"{demo.name}: output {i} differs from the torch reference in {bad} of {diff.numel()} "
                f"elements (max abs error {float(diff.max()):.3g}; allowed {atol:g} + {rtol:g} * |reference| "
                f"for {_DTYPE_NAMES[dtype]})"
            )
    return worst


def _device(device) -> str:
    if device is None:
        return "cuda" if torch.cuda.is_available() and not INTERPRETED else "cpu"
    kind = getattr(device, "type", device)
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    return kind


def check_demo(name: str, *, device=None, shape=None, dtype="fp32", seed: int = 0, config=None) -> float:
    """Run demo ``name`` and its torch reference on the same inputs; return the max abs error.

    Raises :class:`KernelMismatch` when any element differs by more than the dtype's tolerance.
    ``shape`` defaults to the demo's small CPU shape (sizes that exercise the masks: 1000 is not a
    multiple of the block, 100 not a power of two). On a CPU, import this module with
    ``TRITON_INTERPRET=1``.
    """
    demo = _demo(name)
    kind = _device(device)
    dt = _torch_dtype(dtype)
    shape = _shape(demo, demo.cpu_shape if shape is None else shape)
    gen = torch.Generator().manual_seed(seed)
    inputs = demo.make_inputs(shape, dt, kind, gen)
    got = demo.triton_fn(*inputs, **dict(config or demo.configs[0]))
    want = demo.torch_fn(*inputs)
    return _max_error(demo, got, want, dt)


def run_demo(name: str, gpu, *, bytes_per_s=None, shape=None, dtype="bf16", seed: int = 0) -> KernelMeasurement:
    """Check, time and place demo ``name`` on ``gpu``'s roofline; returns a record row.

    Needs a CUDA GPU and compiled kernels (not the interpreter). Steps: build the inputs at the
    demo's GPU shape; check every launch config against the torch reference; time each with
    :func:`~roofline_lib.evidence.measure.time_fn` and keep the fastest; time the unfused torch version;
    predict the time from the counts as the time at the roof (:meth:`~roofline_lib.core.roofline.Roof.seconds`) on the measured copy bandwidth
    ``bytes_per_s`` (the datasheet's when not given) and ``gpu``'s fp32 peak. The row passes the
    plausibility guard against ``gpu``'s datasheet roofs before it is returned.
    """
    from .measure import time_fn

    demo = _demo(name)
    spec = as_gpu(gpu)
    _require_compiled_gpu()
    dt = _torch_dtype(dtype)
    shape = _shape(demo, demo.gpu_shape if shape is None else shape)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    inputs = demo.make_inputs(shape, dt, "cuda", gen)
    fastest = _fastest_config(demo, inputs, dt)
    torch_timing = time_fn(lambda: demo.torch_fn(*inputs), device="cuda")
    roof = spec.hbm_bytes_per_s if bytes_per_s is None else _positive(bytes_per_s, "bytes_per_s", "bytes per second")
    source = "datasheet HBM bandwidth" if bytes_per_s is None else "measured copy bandwidth"
    row = _demo_row(demo, spec, shape, dt, roof=(roof, source), fastest=fastest, torch_timing=torch_timing)
    row.check(spec)
    return row


def _require_compiled_gpu() -> None:
    """Refuse to time interpreted kernels, or kernels on a machine without a CUDA GPU."""
    from .measure import has_cuda

    if INTERPRETED or not has_cuda():
        raise RuntimeError(
            "run_demo times compiled kernels on a CUDA GPU; "
            + ("TRITON_INTERPRET=1 is set, so these kernels are interpreted" if INTERPRETED else "torch sees no GPU")
            + ". Use check_demo for correctness alone."
        )


def _fastest_config(demo: Demo, inputs, dt: torch.dtype):
    """Every launch config checked against the torch reference and timed: (max error, fastest config, its timing)."""
    from .measure import time_fn

    want = demo.torch_fn(*inputs)
    worst, best = 0.0, None
    for config in demo.configs:
        worst = max(worst, _max_error(demo, demo.triton_fn(*inputs, **config), want, dt))
        timing = time_fn(lambda config=config: demo.triton_fn(*inputs, **config), device="cuda")
        if best is None or timing.median_s < best[1].median_s:
            best = (config, timing)
    del want
    config, timing = best
    return worst, config, timing


def _demo_row(demo: Demo, spec, shape, dt: torch.dtype, *, roof, fastest, torch_timing) -> KernelMeasurement:
    """The record row: the fused kernel's counts and times beside the time its roof predicts.

    ``roof`` is (memory roof in bytes/s, where it came from); ``fastest`` is what
    :func:`_fastest_config` returns.
    """
    roof, source = roof
    worst, config, timing = fastest
    e = bytes_per_element(_DTYPE_NAMES[dt])
    fused = demo.count(shape, e)
    unfused = demo.unfused_count(shape, e)
    # gpu's fp32 (CUDA-core) peak beside the memory roof in use: element-wise work runs there
    time_roof = Roof(spec.peak_flops_per_s(demo.compute_precision), roof, f"{spec.name} ({demo.compute_precision})")
    return KernelMeasurement(
        name=demo.name,
        shape=shape,
        dtype=_DTYPE_NAMES[dt],
        flops=float(fused.flops),
        bytes_moved=float(fused.bytes_moved),
        seconds=timing.median_s,
        best_seconds=timing.min_s,
        predicted_seconds=time_roof.seconds(fused.flops, fused.bytes_moved),
        memory_roof_bytes_per_s=roof,
        memory_roof_source=source,
        compute_precision=demo.compute_precision,
        torch_seconds=torch_timing.median_s,
        torch_bytes_moved=float(unfused.bytes_moved),
        max_abs_error=worst,
        config=dict(config),
        method=timing.method,
    )
