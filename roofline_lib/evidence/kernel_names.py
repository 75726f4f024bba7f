"""Kernels named by what they do: a GPU kernel's name read for its kind, its work and its precision.

When a trace holds no input shapes (or a kernel's op has no formula, or runs inside a compiled
region), no FLOP or byte can be counted, and the roofline cannot place the kernel by intensity.
Its name still says a great deal: ``ampere_bf16_s16816gemm_bf16_128x128`` is a bf16 GEMM,
``flash_fwd_kernel`` attention, ``triton_poi_fused_add_0`` a fused element-wise kernel. This module
reads those names with one table, :data:`NAME_PATTERNS`, each row citing where its names come from.

A name is a weaker witness than a count: a GEMM by name is placed as compute although a GEMV-shaped
GEMM is memory-bound by the roofline, so every row placed this way is said to be placed *by name
only*, and a count always wins over a name (:mod:`roofline_lib.evidence.trace_rows` asks for a
name only when there is no count).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

__all__ = ["KernelName", "NAME_PATTERNS", "KINDS", "name_kernel", "precision_of", "short_name"]

#: What a kernel can be by its name: placed as compute or memory work, a collective, or unknown.
KINDS = ("compute", "memory", "communication", "other")

# Kineto's categories of memory copies and sets (traces.COPY_CATEGORIES names the same ones).
_COPY_CATEGORIES = frozenset({"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"})


@dataclass(frozen=True)
class KernelName:
    """What a kernel's name says: its ``kind`` (:data:`KINDS`), ``what`` it does ("GEMM",
    "attention", "element-wise", ...), its ``precision`` when the name tells it (else None), and
    ``source``: the library whose naming the matching pattern follows."""

    kind: str
    what: str
    precision: str | None
    source: str


#: ``(pattern, kind, what, source)``, tried in order; the first match names the kernel. Each source
#: says where names of that shape come from. The order matters where names share words: a GEMV
#: (memory-bound: each weight read once per use) before a GEMM, cuDNN's batch-norm and layout
#: kernels before its convolutions, FBGEMM's fp8 GEMMs before its embedding kernels.
NAME_PATTERNS: tuple[tuple[re.Pattern, str, str, str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), kind, what, source)
    for pattern, kind, what, source in (
        # NCCL's kernels are ncclKernel_<Collective>_<algo>_<proto>_<op>_<type> (ncclDevKernel_ since
        # NCCL 2.19); RCCL, AMD's port, keeps NCCL's kernel names
        (r"nccl|rccl", "communication", "collective", "NCCL/RCCL kernel names"),
        # cuBLAS's matrix-vector kernels, as Kineto records them: gemv2T_kernel_val, gemv2N_kernel,
        # gemvNSP_kernel, dot_kernel (seen in HTA's A100 and V100 test traces)
        (r"gemv|\bdot_kernel", "memory", "GEMV", "cuBLAS matrix-vector kernels"),
        # cuBLAS's split-K GEMMs end in a reduction kernel of the partial products
        (r"splitKreduce", "memory", "reduction", "cuBLAS split-K reduction"),
        # Inductor (torch.compile) names each Triton kernel triton_<category[:3]>_...: tem(plate) for
        # its GEMM, convolution and flex-attention templates; poi(ntwise), red(uction),
        # per(sistent_reduction), for(each), spl(it_scan) for fused element-wise work
        # (torch/_inductor/codegen/triton.py, define_kernel)
        (r"^triton_tem_", "compute", "GEMM template", "Inductor Triton template kernels"),
        (r"^triton_(poi|red|per|for|spl)_", "memory", "fused element-wise", "Inductor Triton fused kernels"),
        # FlashAttention 2 (Dao-AILab/flash-attention, csrc/flash_attn: flash_fwd_kernel,
        # flash_bwd_dq_dk_dv_loop_kernel, flash_fwd_splitkv_kernel; PyTorch's copy is pytorch_flash::);
        # FlashAttention 3's flash::FlashAttnFwdSm90; PyTorch's memory-efficient attention
        # (from xFormers) fmha_cutlassF/fmha_cutlassB; cuDNN's cudnn_generated_fort_native_sdpa;
        # composable kernel's ck_fmha / ck_tile::Fmha on ROCm
        (r"flash|fmha|_sdpa|attention", "compute", "attention", "FlashAttention / SDPA kernels"),
        # FBGEMM's fp8 GEMMs (fbgemm_gpu/experimental/gen_ai: f8f8bf16, f8f8bf16_rowwise) and the
        # CUTLASS fp8 GEMMs torch._scaled_mm runs (e4m3/e5m2 in the name)
        (r"f8f8|e4m3|e5m2", "compute", "GEMM", "FBGEMM / CUTLASS fp8 GEMMs"),
        # cuDNN's batch norm (cudnn::bn_fw_tr_1C11_kernel_NCHW, cudnn::bn_bw_1C11_kernel_new) and its
        # layout changes (cudnn::ops::nchwToNhwcKernel, nhwcToNchwKernel, scalePackedTensor_kernel),
        # as in HTA's A100 test traces: memory-bound passes over the activations (with the index
        # helpers cask_cudnn_*::compute*OffsetsKernel that its convolutions launch)
        (
            r"cudnn::bn_|cudnn::ops::|batch_?norm|\bbn_(fw|bw)|Offsets?Kernel",
            "memory",
            "normalisation",
            "cuDNN batch norm and layout kernels",
        ),
        # cuDNN's and MIOpen's convolutions: sm80_xmma_fprop/dgrad/wgrad_implicit_gemm_*,
        # cudnn_{infer,train}_*_scudnn_*, cutlass_cudnn_* and cask_cudnn_*, winograd, fft2d_*,
        # dgrad_engine, wgrad_alg0_engine (HTA's A100/V100 traces); MIOpen's MIOpenConv*, igemm_*,
        # naive_conv_* (ROCm's convolution library)
        (
            r"fprop|dgrad|wgrad|scudnn|cudnn_infer|cudnn_train|cutlass_cudnn|cask_cudnn|winograd|fft2d|"
            r"implicit_?gemm|implicit_convolve|conv2d|convolution|miopen|igemm_|naive_conv",
            "compute",
            "convolution",
            "cuDNN / MIOpen convolution kernels",
        ),
        # dense GEMMs: cuBLAS's {volta,turing,ampere}_{s,h,d}gemm_*, ampere_bf16_s16816gemm_*,
        # sm80/sm90_xmma_gemm_* (cuBLAS 11-12); CUTLASS's cutlass_80_tensorop_s1688gemm_* inside
        # cutlass::Kernel<...>; MAGMA's magma_sgemmEx_kernel; Tensile's Cijk_A..._B..._ GEMMs (rocBLAS and
        # hipBLASLt on ROCm, seen in HTA's MI250 test trace); composable kernel's ck::kernel_gemm_*
        # (FBGEMM's own kernels, fbgemm_gpu::..., are not GEMMs for the word in their namespace)
        (
            r"(?<!fb)gemm|xmma|^Cijk_|cutlass|tensorop|ck::kernel_gemm|wgmma",
            "compute",
            "GEMM",
            "cuBLAS / CUTLASS / Tensile GEMMs",
        ),
        # PyTorch's own CUDA kernels (aten/src/ATen/native/cuda): element-wise loops, reductions,
        # norms, softmax, indexing, concatenation, fills and copies, the fused optimizers'
        # multi_tensor_apply_kernel, layer norm's GammaBetaBackward and RowwiseMoments; CUB's sorts and
        # scans; cuBLAS's scal_kernel; FBGEMM's embedding-table, permutation and fp8 quantisation
        # kernels (split_embedding_*, permute_*, _compute_FP8_quantize_cuda_kernel) -- each a pass
        # over memory with little arithmetic per byte
        (
            r"elementwise|reduce_kernel|norm|softmax|dropout|embedding|index|gather|scatter|CatArray|"
            r"copy|fill|transpose|multi_tensor_apply|pool|cub::|radix|scan|permute|bucketize|"
            r"fused_|clamp|relu|gelu|silu|bounds_check|linearize_index|sort|GammaBeta|Moments|"
            r"scal_kernel|quantize|to_float|qparam|offsets_range|fbgemm_gpu::",
            "memory",
            "element-wise",
            "PyTorch / CUB / FBGEMM memory-bound kernels",
        ),
    )
)

# A precision a kernel's name spells out, tried in order (the narrowest first: a bf16 GEMM with fp32
# accumulation, sm90_xmma_gemm_bf16bf16_bf16f32_f32, is a bf16 GEMM). cuBLAS and CUTLASS write the
# input type (ampere_bf16_s16816gemm, ampere_fp16_s16816gemm, h1688gemm, sgemm, dgemm,
# sm80_xmma_gemm_f32f32_tf32f32); a tensor-core "s1688"/"s16816" tile on fp32 inputs is TF32;
# cuDNN's "scudnn" kernels are fp32; PyTorch's kernels carry their C++ type (float, c10::BFloat16).
_PRECISIONS = (
    ("fp8", re.compile(r"e4m3|e5m2|f8f8|fp8", re.IGNORECASE)),
    ("bf16", re.compile(r"bf16|bfloat16", re.IGNORECASE)),
    ("fp16", re.compile(r"fp16|f16f16|\bh(884|1688|16816)|hgemm|c10::Half|\bhalf\b|_f16_", re.IGNORECASE)),
    ("tf32", re.compile(r"tf32|s1688|s16816", re.IGNORECASE)),
    ("fp64", re.compile(r"dgemm|f64|\bdouble\b|d884", re.IGNORECASE)),
    ("fp32", re.compile(r"sgemm|f32|scudnn|\bfloat\b", re.IGNORECASE)),
)
# Tensile names a GEMM Cijk_<A's index order>_<B's index order>_<type code>_...: the code's first
# letter is the input type (S single, D double, H half, B bfloat16, F8 fp8, I8 int8): Cijk_Alik_Bljk_SB
# is fp32, Cijk_Ailk_Bljk_BBS_BH bf16
_TENSILE = re.compile(r"^Cijk_A[a-z]+_B[a-z]+_([A-Z][A-Z0-9]*)_")
_TENSILE_TYPES = (("F8", "fp8"), ("I8", "int8"), ("S", "fp32"), ("D", "fp64"), ("H", "fp16"), ("B", "bf16"))


def precision_of(kernel_name: str) -> str | None:
    """The precision a kernel's name spells out ("bf16", "tf32", ...), or None when it says none."""
    if not isinstance(kernel_name, str):
        raise TypeError(f"kernel_name must be a kernel's name (a string), got {type(kernel_name).__name__}")
    return _precision_of(kernel_name)


# A trace repeats a few hundred kernel names thousands of times: each name is read once.
_NAMES_KEPT = 1 << 16


@lru_cache(maxsize=_NAMES_KEPT)
def _precision_of(kernel_name: str) -> str | None:
    m = _TENSILE.match(kernel_name)
    if m:
        return next((p for code, p in _TENSILE_TYPES if m.group(1).startswith(code)), None)
    return next((p for p, pattern in _PRECISIONS if pattern.search(kernel_name)), None)


def name_kernel(kernel_name: str, category: str = "kernel") -> KernelName:
    """What a kernel's name (and its Kineto category) says it is: the first row of
    :data:`NAME_PATTERNS` that matches, a copy for Kineto's memcpy/memset categories, else "other"."""
    if not isinstance(kernel_name, str):
        raise TypeError(f"kernel_name must be a kernel's name (a string), got {type(kernel_name).__name__}")
    return _name_kernel(kernel_name, category)


@lru_cache(maxsize=_NAMES_KEPT)
def _name_kernel(kernel_name: str, category: str) -> KernelName:
    if category in _COPY_CATEGORIES:
        return KernelName("memory", "copy", None, "Kineto memory copy or set")
    bare = _bare(kernel_name)
    for pattern, kind, what, source in NAME_PATTERNS:
        if pattern.search(bare):
            return KernelName(kind, what, _precision_of(bare) if kind != "communication" else None, source)
    return KernelName("other", "unknown", _precision_of(bare), "no pattern")


def _bare(kernel_name: str) -> str:
    """A kernel's name and template arguments: without the ``void`` of its return type, its
    parameter list (whose types would match any pattern) and ``(anonymous namespace)::``."""
    name = kernel_name.strip().replace("(anonymous namespace)::", "")
    name = name[5:] if name.startswith("void ") else name
    depth = 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return name[:i].strip()
    return name


# Wrappers whose own name says nothing: the kernel is named by their first template argument
# (cutlass::Kernel<cutlass_80_tensorop_s1688gemm_...>) or by the functor they run
# (vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, ...>).
_WRAPPERS = re.compile(r"(^|::)(Kernel2?|\w*elementwise_kernel|multi_tensor_apply_kernel|reduce_kernel)$")


@lru_cache(maxsize=_NAMES_KEPT)
def short_name(kernel_name: str) -> str:
    """A kernel's name for a table: without return type and parameters, templates dropped except
    where the kernel is a wrapper named by what it wraps (``cutlass::Kernel<cutlass_80_..._gemm>``
    becomes ``cutlass_80_..._gemm``, an element-wise loop takes its functor's name)."""
    base, _, rest = _bare(kernel_name).partition("<")
    base = base.strip()
    if rest and _WRAPPERS.search(base):
        inner = _first_named_argument(rest)
        if inner:
            return inner if base.endswith(("Kernel", "Kernel2")) else f"{base.split('::')[-1]}<{inner}>"
    return base or "kernel"


def _first_named_argument(template_args: str) -> str | None:
    """The first template argument that is a name, not a number, stripped of its namespaces and its
    own template arguments: ``4, at::native::CUDAFunctor_add<float>, ...`` -> ``CUDAFunctor_add``."""
    depth, current, parts = 0, "", []
    for ch in template_args:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
            if depth < 0:
                break
        elif ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        if depth == 0 and ch != ">":
            current += ch
    parts.append(current)
    for part in parts:
        word = part.strip()
        skip = ("(", "{", "at::detail", "unsigned", "bool", "true", "false")
        if word and not word[0].isdigit() and not word.startswith(skip) and "lambda" not in word:
            return word.split("::")[-1] or None
    return None


def name_counts(kernels) -> Mapping[str, int]:
    """How many of ``kernels`` (Kineto event dicts) each kind of :data:`KINDS` holds, by name."""
    counts = dict.fromkeys(KINDS, 0)
    for k in kernels:
        counts[name_kernel(str(k.get("name", "")), str(k.get("cat", ""))).kind] += 1
    return counts
