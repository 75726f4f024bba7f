"""Kernels named by what they do: names as real traces spell them, each read for its kind, its work
and its precision, and a trace without shapes placed by those names (and said to be)."""

from __future__ import annotations

import pytest
from kineto_events import simple_trace

from roofline_lib import diagnose as D
from roofline_lib import kernel_names as K

# (name as Kineto records it, kind, what, precision): from HTA's A100, V100 and MI250 test traces,
# and from the libraries named in kernel_names.NAME_PATTERNS
NAMES = [
    ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "communication", "collective", None),
    (
        "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>(...)",
        "memory",
        "GEMV",
        "fp32",
    ),
    (
        "void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false>(...)",
        "memory",
        "reduction",
        "fp32",
    ),
    ("triton_tem_fused_addmm_0", "compute", "GEMM template", None),
    ("triton_poi_fused_add_cos_sin_0", "memory", "fused element-wise", None),
    ("triton_red_fused__softmax_1", "memory", "fused element-wise", None),
    (
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 32, 4, false, false, cutlass::bfloat16_t>>",
        "compute",
        "attention",
        "bf16",
    ),
    (
        "fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<...>::Params)",
        "compute",
        "attention",
        "fp16",
    ),
    ("void fbgemm_gpu::f8f8bf16_rowwise_kernel<128, 128>(...)", "compute", "GEMM", "fp8"),
    (
        "sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x128_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
        "compute",
        "GEMM",
        "fp8",
    ),
    (
        "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float, ...)",
        "memory",
        "normalisation",
        "fp32",
    ),
    (
        "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4",
        "compute",
        "convolution",
        "tf32",
    ),
    ("cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", "compute", "convolution", "fp32"),
    (
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4::Params)",
        "compute",
        "GEMM",
        "tf32",
    ),
    ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", "compute", "GEMM", "bf16"),
    (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
        "compute",
        "GEMM",
        "bf16",
    ),
    ("volta_sgemm_128x64_nn", "compute", "GEMM", "fp32"),
    ("volta_dgemm_128x64_nn", "compute", "GEMM", "fp64"),
    ("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0_AFC1", "compute", "GEMM", "fp32"),
    ("Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x224x64_MI16x16x1", "compute", "GEMM", "bf16"),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, ...)",
        "memory",
        "element-wise",
        "bf16",
    ),
    (
        "void split_embedding_codegen_forward_unweighted_kernel<float, float, float, long, 2ul>(at::GenericPackedTensorAccessor<...>)",
        "memory",
        "element-wise",
        "fp32",
    ),
    (
        "void fbgemm_gpu::permute_2D_data_kernel<true, int, float>(int, int, int const*)",
        "memory",
        "element-wise",
        "fp32",
    ),
    ("epilogue::impl::globalKernel<8, 32, float, float>", "other", "unknown", "fp32"),
]


@pytest.mark.parametrize(("name", "kind", "what", "precision"), NAMES)
def test_a_kernel_name_says_its_kind_its_work_and_its_precision(name, kind, what, precision):
    named = K.name_kernel(name)
    assert (named.kind, named.what, named.precision) == (kind, what, precision)


def test_every_pattern_names_a_kernel_seen_and_cites_its_source():
    hit = {K.name_kernel(name).source for name, *_ in NAMES}
    assert {source for *_, source in K.NAME_PATTERNS} <= hit  # no row of the table is dead
    assert all(source for *_, source in K.NAME_PATTERNS)
    assert K.name_kernel("Memcpy DtoD (Device -> Device)", "gpu_memcpy").what == "copy"
    with pytest.raises(TypeError, match="kernel_name must be a kernel's name"):
        K.name_kernel(None)


def test_wrapper_kernels_are_named_by_what_they_wrap():
    assert K.short_name(NAMES[13][0]) == "cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4"
    assert K.short_name(NAMES[20][0]) == "vectorized_elementwise_kernel<CUDAFunctor_add>"
    assert K.short_name("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float>(float*)") == (
        "at::native::CatArrayBatchedCopy"
    )


def test_a_trace_without_shapes_is_placed_by_kernel_names_and_says_so():
    # no shapes: a bf16 GEMM kernel (60 us), a GEMV kernel (20 us), an unknown kernel (10 us),
    # back to back from 0 to 90 us: compute 60/90, memory 20/90, unclassified 10/90
    trace = simple_trace([("aten::mm", [], [], 0.0, 60.0), ("aten::mv", [], [], 60.0, 20.0), ("aten::foo", [], [], 80.0, 10.0)],
                         shapes=False)  # fmt: skip
    names = ["ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", "gemv2T_kernel_val", "my_kernel"]
    for event, name in zip([e for e in trace["traceEvents"] if e["cat"] == "kernel"], names):
        event["name"] = name
    d = D.diagnose(trace)
    assert d.shares["compute"] == pytest.approx(60 / 90) and d.shares["memory"] == pytest.approx(20 / 90)
    assert d.shares["unclassified"] == pytest.approx(10 / 90)
    assert d.regime == "compute" and str(d).startswith(
        "compute-bound (67% of the time; 67% placed by kernel name only)"
    )
    assert dict(zip([r.name for r in d.rows], d.placed_by)) == {names[0]: "name", names[1]: "name", "aten::foo": ""}
    assert d.precisions == {"bf16": pytest.approx(0.75), "unknown": pytest.approx(0.25)}  # 60 and 20 us placed
    assert any(x.startswith("placed by kernel name only") for x in d.evidence)
    assert any("record_shapes=True" in x for x in d.evidence if x.startswith("unclassified"))
