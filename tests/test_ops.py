"""Per-operation FLOPs and bytes, checked on shapes small enough to count by hand."""

import numpy as np
import pytest

import roofline_lib as rl

# --- GEMM and GEMV -----------------------------------------------------------------------


def test_gemm_counts_two_flops_per_multiply_add():
    assert rl.gemm_flops(2, 3, 4) == 48  # 2 * 2 * 3 * 4
    assert rl.gemm_flops(4096, 4096, 4096) == 2 * 4096**3


def test_gemm_bytes_read_a_read_b_write_c_once():
    # A 2x4 = 8, B 4x3 = 12, C 2x3 = 6 elements; 26 * 2 bytes
    assert rl.gemm_bytes(2, 3, 4) == 52
    assert rl.gemm_bytes(2, 3, 4, bytes_per_elem=4) == 104  # 26 * 4
    assert rl.gemm_bytes(2, 3, 4, bytes_per_elem=0.5) == 13  # 26 * 0.5 (fp4)
    assert isinstance(rl.gemm_bytes(2, 3, 4, bytes_per_elem=0.5), int)
    assert rl.gemm_bytes(1, 1, 1, bytes_per_elem=0.5) == 1.5  # 3 * 0.5


def test_gemm_opcount_and_intensity():
    op = rl.gemm(2, 3, 4)
    assert (op.flops, op.bytes_moved) == (48, 52)
    assert op.intensity == pytest.approx(48 / 52)
    # square bf16 GEMM: 2 n^3 / (3 n^2 * 2) = n / 3 FLOP/byte
    assert rl.gemm(3000, 3000, 3000).intensity == pytest.approx(1000)


def test_gemv_is_about_one_flop_per_byte_in_bf16():
    assert rl.gemv_flops(3, 4) == 24  # 2 * 3 * 4
    assert rl.gemv_bytes(3, 4) == 38  # (12 + 4 + 3) * 2
    big = rl.gemv(4096, 4096)
    assert big.intensity == pytest.approx(1.0, rel=1e-3)  # 2 m k / (m k * 2)


def test_an_opcount_feeds_kernel_verdict():
    op = rl.gemm(4096, 4096, 4096)  # 1.37e11 FLOP, 1.0e8 bytes
    verdict = rl.kernel_verdict(op.flops, op.bytes_moved, 1e-3, "a100-80gb-sxm")
    assert verdict.bound == "compute"  # 1365 FLOP/B is far above the A100's ridge of ~153
    assert verdict.flops == op.flops


def test_opcounts_add_like_two_kernels_run_back_to_back():
    both = rl.gemm(2, 3, 4) + rl.elementwise(6)
    assert (both.flops, both.bytes_moved) == (54, 88)  # 48 + 6, 52 + 36


# --- element-wise, norms, softmax ---------------------------------------------------------


def test_elementwise_add_is_one_sixth_flop_per_byte():
    assert rl.elementwise_flops(10) == 10
    assert rl.elementwise_flops(10, flops_per_elem=2) == 20  # a * x + y
    assert rl.elementwise_bytes(10) == 60  # (2 reads + 1 write) * 10 * 2 bytes
    assert rl.elementwise(10).intensity == pytest.approx(1 / 6)
    assert rl.elementwise_bytes(10, n_inputs=1, n_outputs=1, bytes_per_elem=4) == 80  # 2 * 10 * 4


def test_layernorm_and_rmsnorm():
    # 4 rows of 8: 32 elements
    assert rl.layernorm_flops(4, 8) == 224  # 7 * 32
    assert rl.layernorm_bytes(4, 8) == 160  # (x 32 + y 32 + gamma 8 + beta 8) * 2
    assert rl.rmsnorm_flops(4, 8) == 128  # 4 * 32
    assert rl.rmsnorm_bytes(4, 8) == 144  # (32 + 32 + gamma 8) * 2
    assert rl.rmsnorm(4, 8).intensity == pytest.approx(128 / 144)


def test_softmax():
    assert rl.softmax_flops(3, 5) == 75  # 5 * 15
    assert rl.softmax_bytes(3, 5) == 60  # read 15 + write 15, * 2 bytes
    assert rl.softmax(3, 5, bytes_per_elem=4).bytes_moved == 120


# --- attention ----------------------------------------------------------------------------


def test_score_entries_by_hand():
    assert rl.attention_score_entries(4, 4) == 16  # 4 * 4
    assert rl.attention_score_entries(4, 4, causal=True) == 10  # 1 + 2 + 3 + 4
    assert rl.attention_score_entries(2, 4, causal=True) == 3  # top-left: 1 + 2
    assert rl.attention_score_entries(2, 4, causal=True, alignment="bottom-right") == 7  # 3 + 4
    assert rl.attention_score_entries(4, 2, causal=True) == 7  # 1 + 2 + 2 + 2
    assert rl.attention_score_entries(4, 2, causal=True, alignment="bottom-right") == 3  # 0+0+1+2


@pytest.mark.parametrize("seq_q", [1, 3, 7, 16])
@pytest.mark.parametrize("seq_k", [1, 5, 7, 16])
def test_score_entries_match_the_mask_itself(seq_q, seq_k):
    ones = np.ones((seq_q, seq_k))
    top_left = np.tril(ones).sum()  # PyTorch is_causal: tril anchored at (0, 0)
    bottom_right = np.tril(ones, k=seq_k - seq_q).sum()
    assert rl.attention_score_entries(seq_q, seq_k, causal=True) == top_left
    assert rl.attention_score_entries(seq_q, seq_k, True, "bottom-right") == bottom_right


def test_attention_flops_full_and_causal():
    assert rl.attention_flops(1, 1, 4, 4, 8) == 512  # 16 entries * 4 * 8
    assert rl.attention_flops(1, 1, 4, 4, 8, causal=True) == 320  # 10 entries * 32
    assert rl.attention_flops(2, 3, 4, 4, 8) == 3072  # 2 * 3 * 512
    # long sequence: causal is just over half, (s + 1) / (2 s)
    s = 4096
    ratio = rl.attention_flops(1, 1, s, s, 64, causal=True) / rl.attention_flops(1, 1, s, s, 64)
    assert ratio == pytest.approx((s + 1) / (2 * s))


def test_attention_bytes_naive_counts_four_passes_over_the_scores():
    # Q, K, V, O: 4 * 4 * 8 = 128 elements; S written+read, P written+read: 4 * 16 = 64
    assert rl.attention_bytes_naive(1, 1, 4, 4, 8) == 384  # (128 + 64) * 2
    assert rl.attention_bytes_fused(1, 1, 4, 4, 8) == 256  # 128 * 2


def test_grouped_query_attention_reads_fewer_kv_bytes():
    # 2 query heads, 1 KV head: Q + O = 2 * 2 * 4 * 8 = 128, K + V = 2 * 1 * 4 * 8 = 64
    assert rl.attention_bytes_fused(1, 2, 4, 4, 8, kv_heads=1) == 384  # 192 * 2
    assert rl.attention_bytes_fused(1, 2, 4, 4, 8) == 512  # 256 * 2 without GQA


def test_attention_helper_fused_vs_naive():
    fused = rl.attention(1, 1, 4, 4, 8, causal=True)
    assert (fused.flops, fused.bytes_moved) == (320, 256)
    naive = rl.attention(1, 1, 4, 4, 8, causal=True, fused=False)
    assert (naive.flops, naive.bytes_moved) == (512, 384)  # masks, does not skip
    # at long sequence the fused kernel is far more intense than the naive one
    s = 4096
    assert rl.attention(1, 32, s, s, 128).intensity > 10 * rl.attention(1, 32, s, s, 128, fused=False).intensity


# --- failure paths ------------------------------------------------------------------------


def test_bad_shapes_name_the_parameter():
    with pytest.raises(ValueError, match="m must be a positive whole number of rows"):
        rl.gemm_flops(0, 3, 4)
    with pytest.raises(TypeError, match="k must be a whole number"):
        rl.gemm_flops(2, 3, 4.5)
    with pytest.raises(ValueError, match="bytes_per_elem must be a positive number of bytes per element"):
        rl.gemm_bytes(2, 3, 4, bytes_per_elem=0)
    with pytest.raises(ValueError, match="n must be a positive whole number of elements"):
        rl.elementwise_flops(-1)
    with pytest.raises(ValueError, match="flops_per_elem"):
        rl.elementwise_flops(10, flops_per_elem=0)
    with pytest.raises(ValueError, match="n_inputs"):
        rl.elementwise_bytes(10, n_inputs=0)
    with pytest.raises(ValueError, match="n_rows"):
        rl.layernorm_bytes(0, 8)
    with pytest.raises(ValueError, match="head_dim"):
        rl.attention_flops(1, 1, 4, 4, 0)
    with pytest.raises(ValueError, match="seq_k"):
        rl.attention_bytes_naive(1, 1, 4, 0, 8)


def test_bad_flags_and_options_are_refused():
    with pytest.raises(TypeError, match="causal must be True or False"):
        rl.attention_flops(1, 1, 4, 4, 8, causal="yes")
    with pytest.raises(ValueError, match="alignment"):
        rl.attention_score_entries(4, 4, True, alignment="diagonal")
    with pytest.raises(ValueError, match="kv_heads must divide heads"):
        rl.attention_bytes_fused(1, 2, 4, 4, 8, kv_heads=3)
    with pytest.raises(TypeError, match="fused must be True or False"):
        rl.attention(1, 1, 4, 4, 8, fused=1)
    with pytest.raises(ValueError, match="bytes_moved must be a positive number of bytes"):
        rl.OpCount(10, 0)


# --------------------------------------------------------------------------- recorded ops, exactly

from roofline_lib.evidence.recorded_ops import count_op  # noqa: E402  (the profiler's op names -> these counts)

F32, BF16 = "float", "c10::BFloat16"


def test_count_op_matmuls_exactly():
    # mm [2, 3] x [3, 5] in fp32: 2 * 2 * 3 * 5 = 60 FLOP; A 6 + B 15 + C 10 = 31 elements * 4 bytes
    assert count_op("aten::mm", [[2, 3], [3, 5]], [F32, F32]) == (60.0, 124.0, "matmul", "fp32")
    # a GEMM's FLOPs and bytes are symmetric in m, n and k, so a swapped m and n cannot show in
    # them: the inputs' roles are pinned by addmm's bias and bmm's batch below
    # addmm(bias [5], A [2, 3], B [3, 5]): the GEMM, plus one add per output (10) and the bias read
    # (5 * 4 bytes): the bias is the first input (read as A it would give another count)
    assert count_op("aten::addmm", [[5], [2, 3], [3, 5]], [F32] * 3) == (70.0, 144.0, "matmul", "fp32")
    # bmm of 4 batches: 4 * 60 = 240 FLOP, 4 * 31 * 2 bytes in bf16
    assert count_op("aten::bmm", [[4, 2, 3], [4, 3, 5]], [BF16, BF16]) == (240.0, 248.0, "matmul", "bf16")
    # mv [3, 4] x [4]: 2 * 3 * 4 = 24 FLOP; (12 + 4 + 3) * 4 bytes
    assert count_op("aten::mv", [[3, 4], [4]], [F32, F32]) == (24.0, 76.0, "matmul", "fp32")


def test_count_op_attention_exactly():
    # SDPA, q, k, v of (batch 1, heads 2, seq 8, head_dim 16): 4 * 16 FLOP per score entry,
    # 2 heads * 8 * 8 entries = 8,192 FLOP; Q, K, V and O 256 elements each, bf16: 2,048 bytes
    qkv = [[1, 2, 8, 16]] * 3
    assert count_op("aten::scaled_dot_product_attention", qkv, [BF16] * 3) == (8192.0, 2048.0, "attention", "bf16")
    # grouped-query: 4 query heads, 2 KV heads. FLOPs follow the query heads (16,384); bytes
    # Q 512 + K 256 + V 256 + O 512 = 1,536 elements, 3,072 bytes. Reading the heads from K
    # instead of Q would give 8,192 FLOP: the test tells Q from K.
    gqa = [[1, 4, 8, 16], [1, 2, 8, 16], [1, 2, 8, 16]]
    assert count_op("aten::scaled_dot_product_attention", gqa, [BF16] * 3) == (16384.0, 3072.0, "attention", "bf16")
    # the flash kernel's own entry point lays tensors out (batch, seq, heads, head_dim)
    bshd = [[1, 8, 4, 16], [1, 8, 2, 16], [1, 8, 2, 16]]
    assert count_op("aten::_flash_attention_forward", bshd, [BF16] * 3) == (16384.0, 3072.0, "attention", "bf16")
    # backward: 5/2 of the forward FLOPs (20,480), twice the bytes; its first input is dO
    back = [[1, 2, 8, 16]] * 4
    assert count_op("aten::_scaled_dot_product_flash_attention_backward", back, [BF16] * 4) == (
        20480.0,
        4096.0,
        "attention",
        "bf16",
    )


def test_count_op_other_families_exactly():
    # add with broadcast: [4, 8] + [8] -> 32 outputs, 1 FLOP each; read 32 + 8, write 32, fp32
    assert count_op("aten::add", [[4, 8], [8], []], [F32, F32, "Scalar"]) == (32.0, 288.0, "elementwise", "fp32")
    # sum of [4, 8]: one add per element read, 32 * 4 bytes
    assert count_op("aten::sum", [[4, 8]], [F32]) == (32.0, 128.0, "reduction", "fp32")
    # softmax over rows of 8: ops.softmax(4, 8), 5 FLOP per element; read + write 32 * 4 bytes
    assert count_op("aten::_softmax", [[4, 8], [], []], [F32, "int", "bool"]) == (160.0, 256.0, "softmax", "fp32")
    # layer_norm over d = 8 for 4 rows in bf16: read x 32, write y 32, gamma 8, beta 8 -> 160 bytes
    assert count_op("aten::native_layer_norm", [[4, 8], [8], [8]], [BF16] * 3) == (
        float(rms_or_ln_flops("layernorm", 4, 8)),
        160.0,
        "norm",
        "bf16",
    )
    # embedding: 6 indices into a [100, 8] table: 48 values read and written (bf16), 6 int64 indices
    assert count_op("aten::embedding", [[100, 8], [6]], [BF16, "long int"]) == (0.0, 240.0, "embedding", "bf16")
    # cat of two [2, 3] tensors: 12 elements read and written at 4 bytes (a list's dtype is not recorded)
    assert count_op("aten::cat", [[[2, 3], [2, 3]], []], ["TensorList", "int"]) == (0.0, 96.0, "copy", None)


def rms_or_ln_flops(kind, rows, d):
    return rl.layernorm_flops(rows, d) if kind == "layernorm" else rl.rmsnorm_flops(rows, d)
