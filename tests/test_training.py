"""Worked examples for roofline_lib.workloads.training: MFU, HFU, training bills, the precision sweep.

Registry figures used below (dense): A100 80GB 312e12 FLOP/s bf16, 19.5e12 fp32, 624e12 int8,
2039e9 B/s; A100 40GB 1555e9 B/s; H100 SXM 3.35e12 B/s, 1979e12 fp8.
"""

import dataclasses

import pytest

import roofline_lib as rl
from roofline_lib import training as tr

# Stack-100M: N = 101.4e6 (tied embedding included), L = 30, d = 512, s = 2048
STACK = dict(n_layers=30, d_model=512, seq_len=2048)


# --------------------------------------------------------------------------- FLOP per token


def test_training_flops_per_token_conventions():
    assert rl.training_flops_per_token(1e9) == pytest.approx(6e9)  # 6 * 1e9
    # tiny three-term: 6*1000 + 6*2 layers*4 tokens*3 width = 6000 + 144 = 6144
    assert rl.training_flops_per_token(1000, convention="three-term", n_layers=2, d_model=3, seq_len=4) == 6144
    # full square: 6000 + 12*2*4*3 = 6288; with 2 heads of 2 (a = 4): 6000 + 12*2*4*4 = 6384
    assert rl.training_flops_per_token(1000, 2, 3, 4, "full-square") == 6288
    assert rl.training_flops_per_token(1000, 2, 3, 4, "palm", attention_dim=4) == 6384
    # shape arguments are unused under 6N
    assert rl.training_flops_per_token(1000, convention="6N", n_layers=2, d_model=3, seq_len=4) == 6000


def test_stack_100m_three_term_is_797_mflop():
    # 6N = 6 * 101.4e6 = 608.4e6; attention = 6 * 30 * 2048 * 512 = 188,743,680
    # total = 797,143,680 FLOP per token; the attention term is 31 % on top of 6N
    total = rl.training_flops_per_token(101.4e6, convention="three-term", **STACK)
    assert total == pytest.approx(797_143_680)
    assert total / (6 * 101.4e6) - 1 == pytest.approx(0.310, abs=1e-3)


def test_three_term_needs_its_shape():
    with pytest.raises(ValueError, match="missing: seq_len"):
        rl.training_flops_per_token(1e8, convention="three-term", n_layers=30, d_model=512)
    with pytest.raises(ValueError, match="missing: n_layers, d_model, seq_len"):
        rl.mfu(1e8, 1e5, 1, "A100", convention="three-term")
    with pytest.raises(ValueError, match="convention must be one of"):
        rl.mfu(1e8, 1e5, 1, "A100", convention="7N")


# --------------------------------------------------------------------------- MFU and HFU


def test_mfu_7b_on_256_a100():
    # 6 * 6.7e9 * 1.5e6 / (256 * 312e12) = 6.03e16 / 7.9872e16 = 0.755
    assert rl.mfu(6.7e9, 1.5e6, 256, "A100") == pytest.approx(0.75496, rel=1e-4)


def test_mfu_small_numbers():
    # 6 * 1e9 * 1e4 = 6e13 FLOP/s on one A100: 6e13 / 312e12 = 0.1923
    assert rl.mfu(1e9, 1e4, 1, "A100") == pytest.approx(6e13 / 312e12)
    # the same run on two cards halves it
    assert rl.mfu(1e9, 1e4, 2, "A100") == pytest.approx(6e13 / 624e12)


def test_mfu_convention_changes_the_answer_for_a_thin_model():
    # Stack-100M at 1.96e5 tok/s on one A100:
    # 6N:         608.4e6 * 1.96e5 / 312e12 = 0.3822
    # three-term: 797.14e6 * 1.96e5 / 312e12 = 0.5008
    six_n = rl.mfu(101.4e6, 1.96e5, 1, "A100")
    three = rl.mfu(101.4e6, 1.96e5, 1, "A100", convention="three-term", **STACK)
    assert six_n == pytest.approx(0.3822, rel=1e-3)
    assert three == pytest.approx(0.5008, rel=1e-3)


def test_mfu_above_one_is_refused_with_causes():
    # global tokens/s divided over half the cards: 6.03e16 / (128 * 312e12) = 1.51
    with pytest.raises(rl.ImplausibleMeasurement, match="MFU of 151.0% is impossible") as err:
        rl.mfu(6.7e9, 1.5e6, 128, "A100")
    assert isinstance(err.value, ValueError)
    for cause in ("sparse", "GPU count", "per GPU", "parameter count", "counted twice"):
        assert cause in str(err.value)


def test_mfu_refuses_unknown_gpu_and_bad_input():
    with pytest.raises(ValueError, match="unknown GPU"):
        rl.mfu(6.7e9, 1.5e6, 256, "K80")
    with pytest.raises(ValueError, match="tokens_per_s"):
        rl.mfu(6.7e9, 0, 256, "A100")
    with pytest.raises(ValueError, match="n_gpus"):
        rl.mfu(6.7e9, 1.5e6, 0, "A100")
    with pytest.raises(ValueError, match="has no fp8"):
        rl.mfu(6.7e9, 1.5e6, 256, "A100", precision="fp8")


def test_hfu_adds_recomputation():
    # full checkpointing: 8N instead of 6N -> 8e13 / 312e12 = 0.2564
    assert rl.hfu(1e9, 1e4, 1, "A100", recompute_fraction=1.0) == pytest.approx(8e13 / 312e12)
    # half a forward recomputed: 7N -> 7e13 / 312e12 = 0.2244
    assert rl.hfu(1e9, 1e4, 1, "A100", recompute_fraction=0.5) == pytest.approx(7e13 / 312e12)
    # no recomputation: HFU == MFU
    assert rl.hfu(1e9, 1e4, 1, "A100") == pytest.approx(rl.mfu(1e9, 1e4, 1, "A100"))


def test_hfu_names_what_is_recomputed():
    # 1e9 params, three-term with L = 2, s = 4, d = 3: 6e9 + 6*2*4*3 = 6e9 + 144 FLOP per token
    shape = dict(n_layers=2, d_model=3, seq_len=4)
    mfu = rl.mfu(1e9, 1e4, 1, "A100", convention="three-term", **shape)
    none = rl.hfu(1e9, 1e4, 1, "A100", convention="three-term", recompute="none", **shape)
    assert none == mfu
    # selective: the causal score forward again, 2*2*4*3 = 48 FLOP: (6e9 + 144 + 48) * 1e4 / 312e12
    sel = rl.hfu(1e9, 1e4, 1, "A100", convention="three-term", recompute="attention", **shape)
    assert sel == pytest.approx((6e9 + 192) * 1e4 / 312e12, rel=1e-12)
    # full: one more forward of everything, (6e9 + 144) / 3: 8e9 + 192
    full = rl.hfu(1e9, 1e4, 1, "A100", convention="three-term", recompute="full", **shape)
    assert full == pytest.approx((8e9 + 192) * 1e4 / 312e12, rel=1e-12)
    assert mfu < sel < full


def test_hfu_recompute_is_checked():
    with pytest.raises(ValueError, match="does not count"):  # 6N has no score term to recompute
        rl.hfu(1e9, 1e4, 1, "A100", recompute="attention")
    with pytest.raises(ValueError, match="recompute must be one of"):
        rl.hfu(1e9, 1e4, 1, "A100", recompute="selective")
    with pytest.raises(ValueError, match="not both"):
        rl.hfu(1e9, 1e4, 1, "A100", recompute="full", recompute_fraction=1.0)


def test_mfu_of_a_config_uses_its_active_parameters_and_shape():
    cfg = rl.model_config("mixtral-8x7b")
    per_token = 6 * cfg.active_params() + 12 * 32 * 32768 * 4096  # full square, a = 32 x 128
    assert rl.mfu(cfg, 1e5, 64, "H100", convention="full-square") == pytest.approx(per_token * 1e5 / (64 * 989.5e12))
    with pytest.raises(ValueError, match="not both"):
        rl.mfu(cfg, 1e5, 64, "H100", convention="three-term", n_layers=32)


def test_palm_540b_mfu_reproduces_the_paper():
    # Chowdhery et al. 2022, section 4.1 and Appendix B: N = 540.35e9, 238.3e3 tokens/s on 6144 TPU v4
    # chips at 275e12 bf16 FLOP/s; 118 layers, 48 heads of 256, sequence 2048.
    # 6N: 6 * 540.35e9 * 238.3e3 / (6144 * 275e12) = 0.4573; the paper prints 45.7 %
    assert rl.mfu(540.35e9, 238.3e3, 6144, "tpu-v4") == pytest.approx(0.457, abs=5e-4)
    # with its attention term 12 * 118 * 48 * 256 * 2048 = 3.56e10 FLOP/token: 46.2 % in the paper
    full = rl.mfu(
        540.35e9,
        238.3e3,
        6144,
        "tpu-v4",
        convention="full-square",
        n_layers=118,
        d_model=18432,
        seq_len=2048,
        attention_dim=48 * 256,
    )
    assert full == pytest.approx(0.462, abs=5e-4)


def test_hfu_is_never_below_mfu():
    for r in (0.0, 0.25, 0.5, 1.0):
        assert rl.hfu(101.4e6, 1e5, 1, "A100", convention="three-term", recompute_fraction=r, **STACK) >= rl.mfu(
            101.4e6, 1e5, 1, "A100", convention="three-term", **STACK
        )


def test_hfu_above_one_is_refused():
    # the 7B run at 75.5 % MFU on 240 cards instead of 256, under full checkpointing, would need
    # HFU = 0.755 * 256/240 * 8/6 = 1.074: above the peak by more than the 5 % tolerance
    with pytest.raises(rl.ImplausibleMeasurement, match="HFU"):
        rl.hfu(6.7e9, 1.5e6, 240, "A100", recompute_fraction=1.0)
    # 256 cards give 1.007: within the one plausibility rule's 5 % (clock and rounding)
    assert rl.hfu(6.7e9, 1.5e6, 256, "A100", recompute_fraction=1.0) == pytest.approx(1.007, rel=1e-3)
    with pytest.raises(ValueError, match="recompute_fraction"):
        rl.hfu(1e9, 1e4, 1, "A100", recompute_fraction=1.5)
    with pytest.raises(ValueError, match="recompute_fraction"):
        rl.hfu(1e9, 1e4, 1, "A100", recompute_fraction=-0.1)


def test_expected_tokens_per_s_inverts_mfu():
    # 0.5 * 256 * 312e12 / (6 * 6.7e9) = 3.9936e16 / 4.02e10 = 993,433 tok/s
    rate = rl.expected_tokens_per_s(6.7e9, 256, "A100", 0.5)
    assert rate == pytest.approx(993_433, rel=1e-5)
    assert rl.mfu(6.7e9, rate, 256, "A100") == pytest.approx(0.5)
    with pytest.raises(ValueError, match="target_mfu"):
        rl.expected_tokens_per_s(6.7e9, 256, "A100", 1.2)


# --------------------------------------------------------------------------- training bill


def test_stack_100m_bill_on_one_a100():
    # tokens/s = 0.5 * 312e12 / 797,143,680 = 195,699 ~= 1.96e5
    # seconds  = 20e9 / 195,699 = 102,198 s; GPU-hours = 102,198 / 3600 = 28.39
    bill = rl.training_bill(101.4e6, 20e9, 1, "A100", 0.5, convention="three-term", **STACK)
    assert bill.flops_per_token == pytest.approx(797_143_680)
    assert bill.total_flops == pytest.approx(797_143_680 * 20e9)  # 1.594e19 FLOP
    assert bill.tokens_per_s == pytest.approx(195_699, rel=1e-5)
    assert bill.seconds == pytest.approx(102_198, rel=1e-5)
    assert bill.gpu_hours == pytest.approx(28.39, rel=1e-3)
    assert bill.cost is None
    assert bill.convention == "three-term"


def test_bill_with_a_price_and_more_cards():
    # at 2 dollars per GPU-hour: 28.39 * 2 = 56.78
    bill = rl.training_bill(101.4e6, 20e9, 1, "A100", 0.5, convention="three-term", **STACK, usd_per_gpu_hour=2.0)
    assert bill.cost == pytest.approx(56.78, rel=1e-3)
    # eight cards: one eighth of the wall-clock, the same GPU-hours
    eight = rl.training_bill(101.4e6, 20e9, 8, "A100", 0.5, convention="three-term", **STACK)
    assert eight.seconds == pytest.approx(bill.seconds / 8)
    assert eight.gpu_hours == pytest.approx(bill.gpu_hours)
    with pytest.raises(dataclasses.FrozenInstanceError):
        eight.cost = 0.0


def test_bill_rejects_bad_input():
    with pytest.raises(ValueError, match="mfu"):
        rl.training_bill(1e9, 1e9, 1, "A100", 0)
    with pytest.raises(ValueError, match="mfu"):
        rl.training_bill(1e9, 1e9, 1, "A100", 1.5)
    with pytest.raises(ValueError, match="n_tokens"):
        rl.training_bill(1e9, -1, 1, "A100", 0.5)
    with pytest.raises(ValueError, match="usd_per_gpu_hour"):
        rl.training_bill(1e9, 1e9, 1, "A100", 0.5, usd_per_gpu_hour=-2.0)


# --------------------------------------------------------------------------- precision sweep

N = 8 * 2048 * 4096  # 67,108,864 values
FLOPS = 2 * N  # about two FLOP per value
ELEMS = 2 * N  # read once and written once: 134,217,728 values touched


def test_sweep_refuses_fp8_on_an_a100():
    with pytest.raises(ValueError, match="has no fp8.*it has: fp32, tf32, bf16, fp16, int8"):
        rl.precision_sweep(FLOPS, ELEMS, {"fp8": 50e-6}, "A100")


def test_sweep_refuses_timings_faster_than_hbm():
    # fp32: 134,217,728 * 4 = 536,870,912 bytes in 200 us = 2.68e12 B/s = 1.32x the A100's 2.039e12
    with pytest.raises(rl.ImplausibleMeasurement, match="fp32 timing.*1.32x"):
        rl.precision_sweep(FLOPS, ELEMS, {"fp32": 200e-6, "bf16": 100e-6}, "A100")
    # bf16: 268,435,456 bytes in 100 us is the same 2.68e12 B/s
    with pytest.raises(rl.ImplausibleMeasurement, match="bf16 timing"):
        rl.precision_sweep(FLOPS, ELEMS, {"bf16": 100e-6}, "A100")
    # the 40 GB part (1.555e12 B/s) is even further off: 1.73x
    with pytest.raises(rl.ImplausibleMeasurement, match="1.73x"):
        rl.precision_sweep(FLOPS, ELEMS, {"bf16": 100e-6}, "A100 40GB")


def test_sweep_at_82_percent_of_bandwidth_on_an_a100():
    # 320, 160, 80 us for 536.9, 268.4, 134.2 MB: 1.678e12 B/s each = 82.3 % of 2.039e12
    rows = rl.precision_sweep(FLOPS, ELEMS, {"fp32": 320e-6, "bf16": 160e-6, "int8": 80e-6}, "A100")
    assert list(rows) == ["fp32", "bf16", "int8"]
    assert [r.bytes_moved for r in rows.values()] == [536_870_912, 268_435_456, 134_217_728]
    assert [r.intensity for r in rows.values()] == pytest.approx([0.25, 0.5, 1.0])  # 2N / (2N * b)
    assert all(r.bound == "memory" for r in rows.values())
    # each ceiling is 2.039e12 * intensity: halving the width doubles it
    assert [r.ceiling_flops_per_s for r in rows.values()] == pytest.approx([509.75e9, 1019.5e9, 2039e9])
    assert [r.efficiency for r in rows.values()] == pytest.approx([0.8228] * 3, rel=1e-3)
    assert rows["bf16"].achieved_bytes_per_s == pytest.approx(1.6777e12, rel=1e-4)
    assert rows["int8"].achieved_flops_per_s == pytest.approx(2 * rows["bf16"].achieved_flops_per_s)
    # ridges: fp32 19.5e12 / 2039e9 = 9.56, int8 624e12 / 2039e9 = 306.0
    assert rows["fp32"].ridge == pytest.approx(9.5635, rel=1e-4)
    assert rows["int8"].ridge == pytest.approx(306.03, rel=1e-4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rows["bf16"].bound = "compute"


def test_sweep_source_timings_are_possible_on_an_h100():
    # the same 2.68e12 B/s is 80 % of the H100 SXM's 3.35e12, and the H100 has fp8
    rows = rl.precision_sweep(FLOPS, ELEMS, {"fp32": 200e-6, "bf16": 100e-6, "fp8": 50e-6}, "H100")
    assert [r.efficiency for r in rows.values()] == pytest.approx([0.8013] * 3, rel=1e-3)
    assert rows["fp8"].intensity == pytest.approx(1.0)  # 2N / (2N * 1 byte)


def test_sweep_rejects_bad_input():
    with pytest.raises(ValueError, match="non-empty mapping"):
        rl.precision_sweep(FLOPS, ELEMS, {}, "A100")
    with pytest.raises(ValueError, match="precision must be one of"):
        rl.precision_sweep(FLOPS, ELEMS, {"fp6": 1e-3}, "A100")
    with pytest.raises(ValueError, match="seconds"):
        rl.precision_sweep(FLOPS, ELEMS, {"bf16": 0}, "A100")


def test_package_exports_the_training_names():
    for name in tr.__all__:
        assert getattr(rl, name) is getattr(tr, name)


# --------------------------------------------------------------------------- the one MFU core


def test_flops_utilisation_is_achieved_over_the_roofs_peak():
    roof = rl.Roof(100e12, 1e12, "paper chip")
    assert tr.flops_utilisation(40e12, roof) == pytest.approx(0.4)  # 40 / 100
    assert tr.flops_utilisation(105e12, roof) == pytest.approx(1.05)  # at the 5 % tolerance: allowed
    with pytest.raises(rl.ImplausibleMeasurement, match="1.06x"):
        tr.flops_utilisation(106e12, roof)  # above it: refused by the one plausibility rule
    with pytest.raises(TypeError, match="roof must be a Roof"):
        tr.flops_utilisation(40e12, "H100")


def test_mfu_is_the_core_over_every_cards_peak():
    # 6 * 1e9 FLOP/token * 1e4 tokens/s = 6e13 FLOP/s over 2 x 989.4e12 (H100 dense bf16)
    cluster = rl.Roof(2 * rl.gpu("H100").peak_flops_per_s("bf16"), 2 * rl.gpu("H100").hbm_bytes_per_s, "2 x H100")
    assert tr.mfu(1e9, 1e4, 2, "H100") == tr.flops_utilisation(6e13, cluster)
