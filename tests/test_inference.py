"""Worked examples for roofline_lib.workloads.inference: decode ceilings, weight-GEMM intensity, KV cache.

Registry figures used below (dense): A100 80GB 2039e9 B/s, 312e12 FLOP/s bf16, 80e9 bytes;
H100 SXM 3.35e12 B/s, 989.5e12 bf16, 1979e12 fp8; B200 8e12 B/s, 2.25e15 bf16, 4.5e15 fp8, 9e15 fp4.
"""

import dataclasses

import pytest

import roofline_lib as rl
from roofline_lib import inference as inf

# --------------------------------------------------------------------------- weight GEMM intensity


def test_weight_gemm_intensity_counts_weights_and_activations():
    # 1 token x (4 x 6) weight in bf16: FLOP = 2*1*4*6 = 48; bytes = 2*(24 + 4 + 6) = 68
    assert inf.weight_gemm_intensity(1, 4, 6) == pytest.approx(48 / 68)
    # 4 tokens: FLOP = 2*4*4*6 = 192; bytes = 2*(24 + 16 + 24) = 128 -> 1.5 FLOP/byte
    assert inf.weight_gemm_intensity(4, 4, 6) == pytest.approx(1.5)
    # fp32 doubles every byte: 192 / 256 = 0.75
    assert inf.weight_gemm_intensity(4, 4, 6, bytes_per_elem=4) == pytest.approx(0.75)


def test_small_m_intensity_tends_to_token_count_in_bf16():
    # one decode token against a 4096 x 4096 bf16 weight: 4096 / (4096 + 2) = 0.99951
    assert inf.weight_gemm_intensity(1, 4096, 4096) == pytest.approx(4096 / 4098)
    # 8 tokens: 2*8*4096^2 / (2*(4096^2 + 16*4096)) = 8*4096 / 4112 = 7.969 ~= M
    assert inf.weight_gemm_intensity(8, 4096, 4096) == pytest.approx(8 * 4096 / 4112)
    assert inf.weight_gemm_intensity_limit(8) == pytest.approx(8.0)  # 2*8 / 2
    # the full count is always below the weights-only limit (activations add bytes)
    assert inf.weight_gemm_intensity(8, 4096, 4096) < inf.weight_gemm_intensity_limit(8)


def test_intensity_limit_doubles_when_bytes_halve():
    assert inf.weight_gemm_intensity_limit(4, bytes_per_elem=2) == pytest.approx(4.0)  # 2*4/2
    assert inf.weight_gemm_intensity_limit(4, bytes_per_elem=1) == pytest.approx(8.0)  # 2*4/1
    assert inf.weight_gemm_intensity_limit(4, bytes_per_elem=0.5) == pytest.approx(16.0)  # 2*4/0.5


def test_intensity_rejects_bad_shapes():
    with pytest.raises(ValueError, match="tokens"):
        inf.weight_gemm_intensity(0, 4, 6)
    with pytest.raises(TypeError, match="d_in"):
        inf.weight_gemm_intensity(1, 4.5, 6)
    with pytest.raises(ValueError, match="bytes_per_elem"):
        inf.weight_gemm_intensity_limit(1, bytes_per_elem=0)


# --------------------------------------------------------------------------- tokens to reach the ridge


def test_tokens_to_reach_ridge_a100_and_h100():
    # A100 bf16 ridge = 312e12 / 2039e9 = 153.02 FLOP/byte; M = 153.02 * 2 / 2 = 153.02
    assert inf.tokens_to_reach_ridge("A100") == pytest.approx(312e12 / 2039e9)
    # H100 bf16: 989.5e12 / 3.35e12 = 295.37 tokens
    assert inf.tokens_to_reach_ridge("H100") == pytest.approx(295.37, rel=1e-4)


def test_low_precision_math_leaves_token_threshold_unchanged():
    # H100 fp8: ridge 1979e12 / 3.35e12 = 590.7, stored in 1 byte -> M = 590.7 * 1 / 2 = 295.4
    bf16 = inf.tokens_to_reach_ridge("H100", "bf16")
    fp8 = inf.tokens_to_reach_ridge("H100", "fp8")
    assert fp8 == pytest.approx(bf16)


def test_weight_only_quantisation_halves_token_threshold():
    # int8 weights (1 byte) with bf16 math on an A100: M = 153.02 * 1 / 2 = 76.5
    m = inf.tokens_to_reach_ridge("A100", "bf16", bytes_per_elem=1)
    assert m == pytest.approx(312e12 / 2039e9 / 2)


def test_tokens_to_reach_ridge_refuses_missing_precision():
    with pytest.raises(ValueError, match="has no fp8.*it has: fp32, tf32, bf16, fp16, int8"):
        inf.tokens_to_reach_ridge("A100", "fp8")


def test_exact_threshold_for_a_square_weight():
    # K = N = 4096, b = 2: M = R*b*K*N / (2KN - R*b*(K+N)) = R*K / (K - 2R)
    ridge = 312e12 / 2039e9  # 153.02
    m = inf.tokens_to_reach_ridge_exact("A100", 4096, 4096)
    assert m == pytest.approx(ridge * 4096 / (4096 - 2 * ridge))  # = 165.37
    assert m == pytest.approx(165.37, rel=1e-4)
    # at that M the full intensity sits exactly on the ridge
    spec = rl.gpu("A100")
    flops = 2 * m * 4096 * 4096
    bytes_moved = 2 * (4096 * 4096 + 2 * m * 4096)
    assert flops / bytes_moved == pytest.approx(ridge)
    # and it is a little above the small-M estimate of 153 tokens
    assert m > inf.tokens_to_reach_ridge(spec)


def test_exact_threshold_refuses_a_shape_that_never_reaches_the_ridge():
    # 256 x 256 bf16 saturates at 2*256*256 / (2*512) = 64 FLOP/byte < 153
    with pytest.raises(ValueError, match="never reaches"):
        inf.tokens_to_reach_ridge_exact("A100", 256, 256)


# --------------------------------------------------------------------------- decode ceiling


def test_decode_13b_bf16_on_a100():
    r = inf.decode_roofline(13e9, "A100")
    assert r.weight_bytes == pytest.approx(26e9)  # 13e9 * 2
    assert r.tokens_per_s == pytest.approx(78.42, rel=1e-3)  # 2039e9 / 26e9
    assert r.ms_per_token == pytest.approx(12.75, rel=1e-3)  # 26e9 / 2039e9 s
    # achieved = 2 * 13e9 * 78.42 = 2039e9 FLOP/s: in bf16 the FLOP rate equals the byte rate
    assert r.achieved_flops_per_s == pytest.approx(2039e9)
    assert r.share_of_peak == pytest.approx(2039e9 / 312e12)  # 0.65 % of peak
    assert r.bound == "memory"
    assert r.precision == "bf16"
    assert r.fits_in_memory and r.warning is None
    assert r.capacity_bytes == 80 * 2**30  # "80 GB" is 80 GiB
    assert r.min_gpus_to_fit == 1


def test_decode_70b_bf16_does_not_fit_on_an_80gb_a100():
    r = inf.decode_roofline(70e9, "A100")
    assert r.weight_bytes == pytest.approx(140e9)  # 70e9 * 2 > 80 * 2**30 = 85.9e9
    assert not r.fits_in_memory
    assert r.min_gpus_to_fit == 2  # ceil(140 / 80)
    assert r.tokens_per_s == pytest.approx(2039 / 140)  # 14.56, still computed
    assert "do not fit" in r.warning and "unreachable on one card" in r.warning
    assert str(r).startswith("WARNING:")
    assert "unreachable on one card" in repr(r)


def test_batch_serves_more_tokens_until_compute_binds():
    # memory time = 26e9 / 2039e9 = 12.751 ms; compute time per token = 26e9 / 312e12 = 0.0833 ms
    # crossover batch = 12.751 / 0.0833 = 153.02 (the ridge again)
    b153 = inf.decode_roofline(13e9, "A100", batch=153)
    assert b153.bound == "memory"
    assert b153.tokens_per_s == pytest.approx(153 * 2039e9 / 26e9)
    b154 = inf.decode_roofline(13e9, "A100", batch=154)
    assert b154.bound == "compute"
    # at batch 256 the step takes 2*13e9*256 / 312e12 = 21.33 ms -> 312e12 / 26e9 = 12000 tok/s
    b256 = inf.decode_roofline(13e9, "A100", batch=256)
    assert b256.tokens_per_s == pytest.approx(12000)
    assert b256.ms_per_token == pytest.approx(21.333, rel=1e-4)
    assert b256.share_of_peak == pytest.approx(1.0)


def test_decode_precision_follows_weight_width():
    # H100, 70e9 params in fp8: 70e9 bytes; 3.35e12 / 70e9 = 47.86 tok/s, fp8 peak 1979e12
    r = inf.decode_roofline(70e9, "H100", bytes_per_param=1)
    assert r.precision == "fp8"
    assert r.peak_flops_per_s == pytest.approx(1979e12)
    assert r.tokens_per_s == pytest.approx(47.857, rel=1e-4)
    assert r.fits_in_memory  # 70 GB <= 80 GB
    assert inf.decode_roofline(1e9, "A100", bytes_per_param=4).precision == "fp32"


def test_decode_refuses_fp8_on_a100_but_allows_weight_only_override():
    with pytest.raises(ValueError, match="has no fp8.*precision='bf16'"):
        inf.decode_roofline(7e9, "A100", bytes_per_param=1)
    # weights stored in 1 byte, math in bf16: 7e9 bytes -> 2039e9 / 7e9 = 291.3 tok/s
    r = inf.decode_roofline(7e9, "A100", bytes_per_param=1, precision="bf16")
    assert r.tokens_per_s == pytest.approx(2039 / 7)
    assert r.peak_flops_per_s == pytest.approx(312e12)


def test_decode_rejects_bad_input():
    with pytest.raises(ValueError, match="no matching precision"):
        inf.decode_roofline(7e9, "A100", bytes_per_param=0.75)
    with pytest.raises(ValueError, match="n_params"):
        inf.decode_roofline(0, "A100")
    with pytest.raises(ValueError, match="batch"):
        inf.decode_roofline(7e9, "A100", batch=0)
    with pytest.raises(ValueError, match="unknown GPU"):
        inf.decode_roofline(7e9, "K80")


def test_decode_result_is_frozen():
    r = inf.decode_roofline(13e9, "A100")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.tokens_per_s = 1e6


def test_min_gpus_to_fit():
    assert inf.min_gpus_to_fit(140e9, "A100") == 2  # 140 / 80 = 1.75 -> 2
    assert inf.min_gpus_to_fit(160e9, "A100") == 2  # exactly 2 cards
    assert inf.min_gpus_to_fit(1e9, "A100") == 1
    # keeping 25 % of each card free leaves 60 GB: 140 / 60 = 2.33 -> 3
    assert inf.min_gpus_to_fit(140e9, "A100", reserve_fraction=0.25) == 3
    with pytest.raises(ValueError, match="reserve_fraction"):
        inf.min_gpus_to_fit(140e9, "A100", reserve_fraction=1.0)


# --------------------------------------------------------------------------- KV cache


def test_kv_cache_bytes_per_token():
    assert inf.kv_cache_bytes_per_token(2, 3, 4) == 96  # 2 (K,V) * 2 layers * 3 heads * 4 dims * 2 bytes
    # a 7B-class model: 2 * 32 layers * 32 heads * 128 dims * 2 bytes = 524288 bytes (0.5 MiB)
    assert inf.kv_cache_bytes_per_token(32, 32, 128) == 524288
    # grouped-query attention with 8 KV heads: a quarter of that
    assert inf.kv_cache_bytes_per_token(32, 8, 128) == 131072


def test_kv_cache_bytes():
    assert inf.kv_cache_bytes(2, 3, 4, context_len=5, batch=6) == 2880  # 96 * 5 * 6
    # one 4096-token sequence of the 7B-class model: 524288 * 4096 = 2.147e9 bytes
    assert inf.kv_cache_bytes(32, 32, 128, 4096) == 2**31
    with pytest.raises(ValueError, match="context_len"):
        inf.kv_cache_bytes(2, 3, 4, context_len=0)


def test_max_batch_for_context():
    # 6.7e9 params in bf16 = 13.4e9 bytes; free = 80 * 2**30 - 13.4e9 = 72.4993e9
    # one 4096-token sequence = 2**31 = 2.147e9 bytes -> floor(72.4993e9 / 2.147e9) = floor(33.76) = 33
    assert inf.max_batch_for_context("A100", 13.4e9, 524288, 4096) == 33
    # keep 10 % back: (77.3094e9 - 13.4e9) / 2.147e9 = 29.76 -> 29
    assert inf.max_batch_for_context("A100", 13.4e9, 524288, 4096, reserve_fraction=0.1) == 29
    # 85.8894e9 bytes of weights leave 10.35e6 bytes; 1000 tokens * 4000 bytes = 4e6 per sequence -> 2
    assert inf.max_batch_for_context("A100", 80 * 2**30 - 10.35e6, 4000, 1000) == 2


def test_max_batch_is_zero_when_nothing_fits():
    assert inf.max_batch_for_context("A100", 140e9, 524288, 4096) == 0  # weights alone overflow
    # 85e9 of weights leave 0.9e9 free < 2.147e9 for one sequence
    assert inf.max_batch_for_context("A100", 85e9, 524288, 4096) == 0
    with pytest.raises(ValueError, match="no memory capacity on record"):
        inf.max_batch_for_context(rl.accelerator("X", {"bf16": 1e15}, 3e12), 1e9, 1000, 10)


def test_kv_crossover_context():
    # KV equals the weights at 13.4e9 / (8 * 524288) = 3194.8 tokens of context for batch 8
    assert inf.kv_crossover_context(13.4e9, 524288, batch=8) == pytest.approx(3194.8, rel=1e-4)


# --------------------------------------------------------------------------- one fit rule, one verdict

_TIE_CHIP = rl.accelerator("Tie chip", {"bf16": 2e12}, 1e12, hbm_capacity_bytes=80 * rl.GIB)  # ridge 2 FLOP/byte


def test_decode_at_the_ridge_gets_the_roofs_verdict():
    # 1e9 params at batch 2 in bf16: 4e9 FLOP (2 * 1e9 * 2) over 2e9 bytes = 2 FLOP/byte, the ridge exactly;
    # both walls take 2 ms (2e9 / 1e12 s and 4e9 / 2e12 s). Roof.bound calls the ridge compute-bound.
    r = inf.decode_roofline(1e9, _TIE_CHIP, batch=2)
    assert r.memory_seconds == r.compute_seconds == pytest.approx(2e-3)
    assert rl.roof(_TIE_CHIP).bound(2.0) == "compute"
    assert r.bound == rl.roof(_TIE_CHIP).bound(2.0)
    assert inf.decode_roofline(1e9, _TIE_CHIP, batch=1).bound == "memory"  # 1 FLOP/byte, below the ridge


def test_model_decode_at_the_ridge_gets_the_roofs_verdict():
    cfg = rl.TransformerConfig(d_model=64, d_ff=128, n_layers=2, n_heads=4, vocab=256, seq_len=64)
    one = inf.model_decode_ceiling(cfg, _TIE_CHIP, batch=1)
    # a chip whose ridge is this step's intensity exactly: peak = intensity * bandwidth
    chip = rl.accelerator("Tie chip 2", {"bf16": one.intensity * 1e12}, 1e12, hbm_capacity_bytes=rl.GIB)
    r = inf.model_decode_ceiling(cfg, chip, batch=1)
    assert r.intensity == r.ridge
    assert r.bound == "compute"  # at the ridge, as Roof.bound says


def test_the_fit_rule_is_in_bytes_and_shows_gib():
    # 80 GiB is 85,899,345,920 bytes: one byte more does not fit, exactly that many does
    fits, warning = inf._fits(rl.gpu("A100"), 80 * rl.GIB, "the weights")
    assert fits and warning is None
    fits, warning = inf._fits(rl.gpu("A100"), 80 * rl.GIB + 1, "the weights")
    assert not fits
    assert warning == (
        "the weights (80 GiB) do not fit in the A100 80GB SXM's 80 GiB, so this ceiling is unreachable on one card"
    )
    fits, warning = inf._fits(rl.accelerator("Paper chip", {"bf16": 5e14}, 2e12), 1e12, "the weights")
    assert fits and "not checked" in warning


# --------------------------------------------------------------------------- quantisation


def test_quantisation_halving_bytes_doubles_decode_ceiling():
    rows = inf.quantisation_table(70e9, "H100")
    assert [row.precision for row in rows] == ["bf16", "fp8", "fp4"]
    # 3.35e12 / 140e9 = 23.93; / 70e9 = 47.86; / 35e9 = 95.71 tok/s
    assert [row.tokens_per_s for row in rows] == pytest.approx([23.93, 47.86, 95.71], rel=1e-3)
    assert [row.fits_in_memory for row in rows] == [False, True, True]  # 140 GB > 80 GB
    # the token threshold does not move: 295.37 in bf16 and in fp8
    assert rows[0].tokens_to_reach_ridge == pytest.approx(rows[1].tokens_to_reach_ridge)
    assert rows[1].ridge == pytest.approx(2 * rows[0].ridge)  # fp8 ridge doubles
    # the H100 has no fp4 math
    assert rows[2].ridge is None and rows[2].tokens_to_reach_ridge is None
    assert "no fp4" in rows[2].reason and rows[2].math_precision == "bf16"


def test_quantisation_on_b200_keeps_threshold_at_every_width():
    # ridges 2.25e15/8e12 = 281.25, 562.5, 1125; thresholds 281.25*2/2 = 562.5*1/2 = 1125*0.5/2 = 281.25
    rows = inf.quantisation_table(70e9, "B200")
    assert [row.ridge for row in rows] == pytest.approx([281.25, 562.5, 1125.0])
    assert [row.tokens_to_reach_ridge for row in rows] == pytest.approx([281.25] * 3)
    assert all(row.reason is None for row in rows)


def test_quantisation_on_a100_explains_missing_precisions():
    rows = inf.quantisation_table(70e9, "A100", bytes_per_param=(2, 1))
    assert rows[0].tokens_to_reach_ridge == pytest.approx(312e12 / 2039e9)  # 153.02
    assert rows[1].ridge is None
    assert "no fp8" in rows[1].reason
    assert rows[1].tokens_per_s == pytest.approx(2039 / 70)  # 29.13 tok/s, weight-only
    with pytest.raises(dataclasses.FrozenInstanceError):
        rows[0].ridge = 1.0


def test_quantisation_rejects_unknown_width():
    with pytest.raises(ValueError, match="no matching precision"):
        inf.quantisation_table(70e9, "A100", bytes_per_param=(2, 0.75))
    with pytest.raises(ValueError, match="at least one width"):
        inf.quantisation_table(70e9, "A100", bytes_per_param=())


def test_package_exports_the_inference_names():
    for name in inf.__all__:
        assert getattr(rl, name) is getattr(inf, name)


# --------------------------------------------------------------------------- a model's decode step

# d = 4, two query heads of 2, one KV head, plain FFN 4 -> 8 -> 4, one layer, V = 10
TOY = rl.TransformerConfig(d_model=4, d_ff=8, n_layers=1, n_heads=2, n_kv_heads=1, vocab=10, seq_len=16, gated=False)


def test_expected_experts_touched_under_uniform_routing():
    assert inf.expected_experts_touched(8, 2, 1) == pytest.approx(2)  # 8 * (1 - 6/8)
    assert inf.expected_experts_touched(8, 2, 2) == pytest.approx(3.5)  # 8 * (1 - (6/8)**2)
    assert inf.expected_experts_touched(8, 2, 64) == pytest.approx(8, abs=1e-6)  # every expert
    with pytest.raises(ValueError, match="experts_per_token must be at most n_experts"):
        inf.expected_experts_touched(2, 3, 1)


def test_decode_step_bytes_of_a_toy_by_hand():
    step = inf.decode_step_bytes_of(TOY, batch=3, context_len=5)  # bf16 weights and cache
    assert step.attention == 2 * (16 + 8 + 8 + 16)  # Q 4x4, K 4x2, V 4x2, O 4x4: 96 bytes
    assert step.ffn == 2 * (32 + 32)  # up 4x8, down 8x4: 128
    assert step.norms == 2 * 3 * 4  # 2 per block + 1 final, 4 wide: 24
    assert step.embedding_gather == 2 * 3 * 4  # one 4-wide row per sequence: 24, not the 80-byte table
    assert step.unembedding == 2 * 10 * 4  # 80
    assert step.kv_cache == 3 * 5 * 2 * 1 * 1 * 2 * 2  # batch * context * (K, V) * L * G * h * 2 B = 120
    assert step.weights == 352 and step.total == 472


def test_decode_reads_one_embedding_row_not_the_table():
    cfg = rl.LLAMA2_7B
    r = inf.decode_roofline(cfg, "A100")
    # all weights minus the 32000 x 4096 input table plus one 4096-wide row, 2 bytes each
    assert r.weight_bytes == 2 * (6_738_415_616 - 32000 * 4096 + 4096)
    assert r.n_params == 6_738_415_616
    plain = inf.decode_roofline(cfg.n_params(), "A100")
    assert r.tokens_per_s / plain.tokens_per_s - 1 == pytest.approx(0.0198, abs=1e-4)  # 1.9 % faster
    l3 = rl.model_config("llama-3-8b")  # a 128256-row table: 6.5 % of its weights skipped
    assert 1 - inf.decode_roofline(l3, "H100").weight_bytes / (2 * l3.n_params()) == pytest.approx(0.0654, abs=1e-4)


def test_moe_decode_reads_the_experts_a_batch_touches():
    cfg = rl.model_config("mixtral-8x7b")
    expert = 2 * 3 * 4096 * 14336  # bytes of one expert, bf16
    one = inf.decode_step_bytes_of(cfg, batch=1)
    many = inf.decode_step_bytes_of(cfg, batch=256)
    assert one.experts_touched == pytest.approx(2)
    assert many.ffn - one.ffn == pytest.approx(32 * (8 - 2) * expert, rel=1e-9)  # all 8 vs 2 per layer
    assert one.weights < 0.3 * 2 * cfg.n_params()  # batch 1 reads about 13B of the 46.7B


def test_model_decode_ceiling_adds_the_kv_cache_under_gqa():
    l2, l3 = rl.LLAMA2_7B, rl.model_config("llama-3-8b")
    # KV per token: 2 * 32 layers * 32 heads * 128 * 2 B = 524,288 (Llama-2-7B) vs 8 KV heads: 131,072
    a = inf.model_decode_ceiling(l2, "H100", batch=8, context_len=4096)
    b = inf.model_decode_ceiling(l3, "H100", batch=8, context_len=4096)
    assert a.bytes.kv_cache == 8 * 4096 * 524_288
    assert b.bytes.kv_cache == 8 * 4096 * 131_072
    assert a.bound == b.bound == "memory"
    assert a.seconds_per_step == pytest.approx(a.bytes.total / 3.35e12)


def test_batch_to_reach_the_ridge():
    cfg = rl.LLAMA2_7B
    batch = inf.decode_batch_to_reach_ridge(cfg, "A100")  # weights only
    ridge = rl.ridge_point("A100")  # 153.0 FLOP/byte
    assert inf.model_decode_ceiling(cfg, "A100", batch).intensity >= ridge
    assert inf.model_decode_ceiling(cfg, "A100", batch - 1).intensity < ridge
    assert 150 < batch < 160  # about ridge * 2 bytes / 2 FLOP = 153 tokens
    # at a 4096-token context each sequence's KV cache (2.1 GB) caps the intensity near 16 FLOP/byte
    with pytest.raises(ValueError, match="never reaches the A100 80GB SXM bf16 ridge"):
        inf.decode_batch_to_reach_ridge(cfg, "A100", context_len=4096)


def test_a_described_chip_works_and_says_the_fit_was_not_checked():
    chip = rl.accelerator("Paper chip", {"bf16": 500e12}, 2e12)
    r = inf.decode_roofline(7e9, chip)
    assert r.tokens_per_s == pytest.approx(2e12 / 14e9)  # bandwidth / weight bytes
    assert "not checked" in r.warning and r.fits_in_memory
    with pytest.raises(ValueError, match="no real model has under 1,000"):
        inf.decode_roofline(70, "A100")
