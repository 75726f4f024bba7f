"""The energy model: a kernel's joules, the energy ridge, a power cap as a ceiling, a serving step's J/token.

The H100 SXM's figures, worked once here and used below:

    TDP 700 W, static 121.7 W, HBM 3.35e12 B/s, 3.97 pJ/bit = 31.76 pJ/B, dense bf16 peak 1979 / 2 = 989.5 TFLOP/s
    the bytes at full bandwidth: 3.35e12 * 31.76e-12 = 106.396 W
    e_flop(bf16) = (700 - 121.7 - 106.396) / 989.5e12 = 471.904 / 989.5e12 = 0.476912 pJ/FLOP
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import roofline_lib as rl
from roofline_lib.core import formatting as fmt

E_BYTE = 3.97e-12 * 8  # 31.76 pJ per byte
E_FLOP = (700 - 121.7 - 3.35e12 * E_BYTE) / 989.5e12  # 0.476912 pJ per FLOP
IDLE = 121.7


@pytest.fixture(scope="module")
def server():
    return rl.serving_server(rl.model_config("llama-3-8b"), "H100")


# --------------------------------------------------------------------------- the figures


def test_the_h100s_figures_come_from_the_registry_with_their_sources():
    p = rl.power_spec("H100")
    assert (p.tdp_watts, p.idle_watts) == (700, 121.7)
    assert p.joules_per_hbm_byte == pytest.approx(31.76e-12)  # 3.97 pJ/bit * 8 bits
    assert p.joules_per_link_byte == pytest.approx(10.4e-12)  # 1.3 pJ/bit * 8 bits
    assert p.flop_joules("bf16") == pytest.approx(0.476912e-12, rel=1e-5)
    assert p.flop_joules("fp8") == pytest.approx(p.flop_joules("bf16") / 2)  # twice the peak, the same watts
    assert set(p.joules_per_flop) >= {"fp32", "bf16", "fp16", "fp8"}
    for field in ("tdp_watts", "idle_watts", "joules_per_hbm_byte", "joules_per_link_byte"):
        assert p.sources[field].endswith(")") and "(20" in p.sources[field]  # "... (2023)": a source and a date
    assert "derived" in p.sources["joules_per_flop"]


def test_every_gpu_with_figures_derives_a_positive_energy_per_flop():
    for name in ("H100", "H200", "A100", "A100 40GB"):
        p = rl.power_spec(name)
        assert 0 < p.idle_watts < p.tdp_watts
        assert all(0 < e < 1e-10 for e in p.joules_per_flop.values())  # under 100 pJ/FLOP, every precision
    assert rl.power_spec("A100").flop_joules("bf16") == pytest.approx((400 - 80 - 2.039e12 * E_BYTE) / 312e12)


def test_energy_per_flop_at_tdp_by_hand():
    # (700 W - 100 W idle - 2e12 B/s * 50e-12 J/B) / 1e15 FLOP/s = (700 - 100 - 100) / 1e15 = 5e-13 J/FLOP
    assert rl.joules_per_flop_at_tdp(700, 100, 1e15, 2e12, 50e-12) == pytest.approx(5e-13)
    with pytest.raises(ValueError, match="tdp_watts=700 W leaves no power"):
        rl.joules_per_flop_at_tdp(700, 650, 1e15, 2e12, 50e-12)  # 650 + 100 > 700
    with pytest.raises(ValueError, match="idle_watts"):
        rl.joules_per_flop_at_tdp(700, -1, 1e15, 2e12, 50e-12)


def test_a_gpu_without_figures_is_refused_naming_those_with_them():
    with pytest.raises(ValueError, match=r"gpu 'L4' has no power and energy figures.*H100 SXM"):
        rl.power_spec("L4")
    chip = rl.accelerator("My NPU", {"bf16": 400e12}, hbm_bytes_per_s=2e12)
    with pytest.raises(ValueError, match="My NPU"):
        rl.kernel_energy(chip, 1e9, 1e6)


# --------------------------------------------------------------------------- a card the registry lacks

# The Kestrel K5 by its datasheet lines: 1000 TFLOP/s bf16, 4 TB/s, TDP 700 W, static 100 W, 4 pJ/bit of HBM
#   the bytes at full bandwidth: 4e12 * 32e-12 = 128 W
#   e_flop(bf16) = (700 - 100 - 128) / 1e15 = 0.472 pJ/FLOP


@pytest.fixture(scope="module")
def k5():
    chip = rl.accelerator("Kestrel K5", {"bf16": 1000e12}, hbm_bytes_per_s=4e12, hbm_capacity_bytes=96e9)
    return chip, rl.power_figures(chip, tdp_watts=700, idle_watts=100, joules_per_hbm_byte=4e-12 * 8)


def test_a_card_given_by_its_datasheet_lines_is_priced_by_the_formula(k5):
    chip, power = k5
    assert power.gpu_name == "Kestrel K5" and power.flop_joules("bf16") == pytest.approx(0.472e-12)
    assert power.joules_per_link_byte is None and power.sources["tdp_watts"] == "given by the caller"
    # 1e12 FLOP and 1e9 bytes at the roof: max(1e12 / 1e15, 1e9 / 4e12) = max(1e-3, 2.5e-4) = 1e-3 s
    k = rl.kernel_energy(chip, 1e12, 1e9, power=power)
    assert k.seconds == pytest.approx(1e-3)
    assert k.flop_joules == pytest.approx(0.472)  # 1e12 * 0.472e-12
    assert k.byte_joules == pytest.approx(0.032)  # 1e9 * 32e-12
    assert k.static_joules == pytest.approx(0.1)  # 100 W * 1e-3 s
    assert k.joules == pytest.approx(0.604)  # 0.472 + 0.032 + 0.1
    assert rl.energy_ridge(chip, power=power) == pytest.approx(32 / 0.472)  # 67.8 FLOP/byte
    # a 600 W cap on a compute-bound GEMM: (600 - 100) / (0.472e-12 + 32e-12 / 1000) = 500 / 0.504e-12 FLOP/s
    assert rl.power_capped_flops_per_s(chip, 1000.0, 600, power=power) == pytest.approx(500 / 0.504e-12)
    assert rl.power_cap_window(chip, 600, power=power).gpu_name == "Kestrel K5"
    assert rl.judge_energy(chip, 1e12, 1e9, 1e-3, 0.604, power=power).ratio == pytest.approx(1.0)


def test_a_server_on_a_card_the_registry_lacks_is_priced_with_its_figures(k5):
    chip, power = k5
    server = rl.serving_server(rl.model_config("llama-3-8b"), chip)
    step = rl.decode_step(server, 8, 2048)
    e = rl.decode_energy(server, 8, 2048, power=power)
    assert e.gpu_name == "Kestrel K5"
    assert e.joules == pytest.approx(step.flops * 0.472e-12 + step.bytes_moved * 32e-12 + 100 * step.seconds)
    assert rl.request_energy(server, 8, 512, 128, power=power).gpu_name == "Kestrel K5"
    assert rl.prefill_energy(server, 512, power=power).joules > 0
    spec = rl.speculative_energy(server, server, 1, 2048, 0.8, 4, power=power)
    assert spec.plain.joules == pytest.approx(rl.decode_energy(server, 1, 2048, power=power).joules)
    with pytest.raises(ValueError, match="has no power and energy figures"):
        rl.decode_energy(server, 8, 2048)  # without power=, the registry's figures, which it lacks


def test_the_registrys_figures_given_as_power_change_nothing():
    assert rl.kernel_energy("H100", 1e12, 1e9, power=rl.power_spec("H100")) == rl.kernel_energy("H100", 1e12, 1e9)


@pytest.mark.parametrize(
    "figures, error, message",
    [
        ({"tdp_watts": -1}, ValueError, "tdp_watts must be a positive number of watts"),
        ({"idle_watts": math.nan}, ValueError, "idle_watts must be a finite number of watts"),
        (
            {"joules_per_hbm_byte": -1e-12},
            ValueError,
            "joules_per_hbm_byte must be a non-negative number of joules per byte",
        ),
        ({"joules_per_link_byte": "10 pJ"}, TypeError, "joules_per_link_byte must be a number of joules per byte"),
        ({"tdp_watts": "700 W"}, TypeError, "tdp_watts must be a number of watts"),
        # 4 pJ/bit typed as 4 J/byte: 4e12 B/s * 4 J/B = 1.6e13 W, far above the TDP
        ({"joules_per_hbm_byte": 4.0}, ValueError, "tdp_watts=700 W leaves no power for FLOPs"),
        ({"idle_watts": 650}, ValueError, "tdp_watts=700 W leaves no power for FLOPs"),  # 650 + 128 > 700
    ],
)
def test_bad_power_figures_are_refused_naming_the_parameter_and_its_unit(k5, figures, error, message):
    given = {"tdp_watts": 700, "idle_watts": 100, "joules_per_hbm_byte": 32e-12, **figures}
    with pytest.raises(error, match=message):
        rl.power_figures(k5[0], **given)


def test_figures_of_another_card_are_refused_by_name(k5, server):
    chip, power = k5
    with pytest.raises(ValueError, match=r"power holds the figures of the Kestrel K5, not of the H100 SXM \(gpu\)"):
        rl.kernel_energy("H100", 1e12, 1e9, power=power)
    with pytest.raises(ValueError, match=r"not of the H100 SXM \(server\)"):
        rl.decode_energy(server, 1, 128, power=power)
    a100 = rl.serving_server(rl.model_config("llama-3-8b"), "A100")
    with pytest.raises(ValueError, match=r"the H100 SXM, not of the A100 80GB SXM \(draft\)"):
        rl.speculative_energy(server, a100, 1, 128, 0.8, 4, power=rl.power_spec("H100"))
    with pytest.raises(TypeError, match="power must be a PowerSpec"):
        rl.energy_ridge(chip, power={"tdp_watts": 700})


# --------------------------------------------------------------------------- a kernel


def test_the_energy_of_a_hand_countable_kernel():
    # 1e12 FLOP and 1e9 bytes at the roof: max(1e12 / 989.5e12, 1e9 / 3.35e12) = max(1.0106e-3, 2.985e-4) s
    k = rl.kernel_energy("H100", 1e12, 1e9)
    assert k.seconds == pytest.approx(1e12 / 989.5e12)
    assert k.flop_joules == pytest.approx(0.476912, rel=1e-5)  # 1e12 * 0.476912e-12
    assert k.byte_joules == pytest.approx(0.03176)  # 1e9 * 31.76e-12
    assert k.static_joules == pytest.approx(121.7 * 1.010611e-3, rel=1e-5)  # 0.12299 J
    assert k.joules == pytest.approx(0.476912 + 0.03176 + 0.122991, rel=1e-5)  # 0.63166 J
    assert k.average_watts == pytest.approx(k.joules / k.seconds)  # 625 W: under the 700 W TDP
    assert str(k).startswith("1 TFLOP and 1 GB in 1.01 ms: 632 mJ (76% FLOPs, 5% HBM bytes, 19% static)")


def test_a_slow_kernel_pays_static_power_for_its_slowness():
    fast, slow = rl.kernel_energy("H100", 1e12, 1e9), rl.kernel_energy("H100", 1e12, 1e9, seconds=2e-3)
    assert slow.flop_joules == fast.flop_joules and slow.byte_joules == fast.byte_joules
    assert slow.static_joules == pytest.approx(121.7 * 2e-3)  # 0.2434 J
    assert slow.joules - fast.joules == pytest.approx(121.7 * (2e-3 - 1e12 / 989.5e12))


def test_a_kernel_faster_than_its_roof_is_refused_by_the_plausibility_guard():
    with pytest.raises(rl.ImplausibleMeasurement, match="compute peak"):
        rl.kernel_energy("H100", 1e12, 1e9, seconds=0.5e-3)  # 2e15 FLOP/s, twice the 989.5 TFLOP/s peak
    with pytest.raises(ValueError, match="flops and bytes_moved cannot both be 0"):
        rl.kernel_energy("H100", 0, 0)
    with pytest.raises(ValueError, match="H100 SXM has no fp4"):
        rl.kernel_energy("H100", 1e9, 1e6, precision="fp4")


def test_the_energy_ridge_sits_below_the_time_ridge():
    # 31.76e-12 / 0.476912e-12 = 66.6 FLOP/B, against the time ridge 989.5e12 / 3.35e12 = 295.4 FLOP/B
    assert rl.energy_ridge("H100") == pytest.approx(66.594, rel=1e-4)
    assert rl.energy_ridge("H100") < rl.ridge_point("H100")
    at = rl.energy_ridge("H100") * 1e9  # a kernel of 1e9 bytes at the energy ridge
    k = rl.kernel_energy("H100", at, 1e9)
    assert k.flop_joules == pytest.approx(k.byte_joules)  # the FLOPs and the bytes cost the same joules


# --------------------------------------------------------------------------- a power cap


def test_a_power_cap_lowers_a_compute_bound_kernel_and_leaves_a_memory_bound_one():
    # intensity 1000 at the peak: 121.7 + 471.904 + 989.5e12 / 1000 * 31.76e-12 = 625.03 W > 500 W, so the clock drops:
    # R = (500 - 121.7) / (0.476912e-12 + 31.76e-12 / 1000) = 378.3 / 0.508672e-12 = 743.70 TFLOP/s
    assert rl.power_capped_flops_per_s("H100", 1000, 500) == pytest.approx(743.70e12, rel=1e-4)
    assert rl.attainable_flops_per_s(1000, "H100") == pytest.approx(989.5e12)
    # intensity 1 on the memory roof: 121.7 + 3.35e12 * 0.476912e-12 + 106.396 = 229.7 W < 500 W: untouched
    assert rl.power_capped_flops_per_s("H100", 1, 500) == rl.attainable_flops_per_s(1, "H100") == 3.35e12
    # a cap at the TDP never binds: the roofline's power peaks at exactly the TDP, at the ridge
    x = np.array([1.0, 66.6, 295.4, 1000.0])
    assert np.allclose(rl.power_capped_flops_per_s("H100", x, 700), rl.attainable_flops_per_s(x, "H100"))


def test_the_window_where_a_cap_binds():
    # 500 W: from (500 - 121.7 - 106.396) / (3.35e12 * 0.476912e-12) = 271.904 / 1.597655 = 170.19 FLOP/B up,
    # with no upper end: 500 W is below 121.7 + 471.904 = 593.6 W, the power at the peak with no bytes
    w = rl.power_cap_window("H100", 500)
    assert w.low_intensity == pytest.approx(170.19, rel=1e-4) and w.high_intensity is None
    at_low = rl.power_capped_flops_per_s("H100", w.low_intensity, 500)
    assert at_low == pytest.approx(rl.attainable_flops_per_s(w.low_intensity, "H100"))  # where it starts to bind
    # 650 W: from (650 - 228.096) / 1.597655 = 264.08 to 989.5e12 * 31.76e-12 / (650 - 593.604) = 557.2 FLOP/B
    w = rl.power_cap_window("H100", 650)
    assert (w.low_intensity, w.high_intensity) == (pytest.approx(264.08, rel=1e-4), pytest.approx(557.2, rel=1e-3))
    assert w.low_intensity < w.ridge < w.high_intensity
    assert str(w).startswith("a 650 W cap on the H100 SXM binds from 264 FLOP/B to 557 FLOP/B")


def test_a_cap_at_or_below_the_static_power_or_above_the_tdp_is_refused():
    with pytest.raises(ValueError, match=r"cap_watts=121.7 W is at or below the H100 SXM's static power of 121.7 W"):
        rl.power_capped_flops_per_s("H100", 10, 121.7)
    with pytest.raises(ValueError, match="cap_watts must be a positive number of watts"):
        rl.power_capped_flops_per_s("H100", 10, -5)
    with pytest.raises(ValueError, match=r"cap_watts=700 W is at or above the H100 SXM's TDP of 700 W"):
        rl.power_cap_window("H100", 700)


# --------------------------------------------------------------------------- serving


def test_a_decode_step_is_priced_from_its_flops_bytes_and_seconds(server):
    step = rl.decode_step(server, 8, 2048)
    e = rl.decode_energy(server, 8, 2048)
    assert e.flop_joules == pytest.approx(step.flops * E_FLOP, rel=1e-6)
    assert e.byte_joules == pytest.approx(step.bytes_moved * E_BYTE)
    assert e.static_joules == pytest.approx(IDLE * step.seconds)
    assert e.tokens == 8 and e.joules_per_token == pytest.approx(e.joules / 8)
    assert e.average_watts == pytest.approx(e.joules / step.seconds)


def test_joules_per_token_fall_with_batch_and_level_off(server):
    per_token = {b: rl.decode_energy(server, b, 2048).joules_per_token for b in (1, 8, 64, 256)}
    assert per_token[1] > per_token[8] > per_token[64] > per_token[256]
    assert per_token[1] / per_token[8] > 5  # the weight read, 16 GB a step, is shared by 8 instead of 1
    assert per_token[64] / per_token[256] < 1.5  # what is left grows with the batch: FLOPs, KV cache, its time
    # the floor: a token's own FLOPs and KV bytes never amortise
    step = rl.decode_step(server, 1, 2048)
    own = (step.flops * E_FLOP) + step.kv_bytes * E_BYTE
    assert per_token[256] > own
    # batch 1 on the memory roof: ~16.06 GB / 3.35e12 B/s = 4.8 ms at 121.7 + 106.4 W + a little: about 1 J a token
    assert per_token[1] == pytest.approx(1.05, rel=0.02)


def test_prefill_costs_far_less_per_token_than_decode_at_batch_one(server):
    prefill = rl.prefill_energy(server, 2048)
    assert prefill.tokens == 2048
    assert prefill.joules_per_token < rl.decode_energy(server, 1, 2048).joules_per_token / 50
    assert prefill.flop_joules > prefill.byte_joules  # 2048 tokens share one weight read: FLOPs dominate


def test_a_power_cap_slows_a_compute_bound_prefill_and_not_a_memory_bound_decode(server):
    free, capped = rl.prefill_energy(server, 2048), rl.prefill_energy(server, 2048, cap_watts=400)
    dynamic = free.flop_joules + free.byte_joules
    assert free.average_watts > 400 and capped.seconds == pytest.approx(dynamic / (400 - IDLE))
    assert capped.average_watts == pytest.approx(400)
    assert capped.joules > free.joules  # no voltage scaling in this model: the longer step only adds static energy
    d = rl.decode_energy(server, 1, 2048)
    assert rl.decode_energy(server, 1, 2048, cap_watts=400).seconds == d.seconds  # 230 W < 400 W


def test_a_step_that_does_not_fit_is_priced_and_says_so_first(server):
    e = rl.decode_energy(server, 1024, 2048)  # 1024 * 2048 tokens of KV cache: 256 GiB on an 80 GiB card
    assert not e.feasible and e.joules > 0
    assert str(e).startswith("DOES NOT FIT: Llama-3-8B with 1024 sequences")


def test_a_request_pays_its_prefill_and_its_share_of_the_decode_steps(server):
    r = rl.request_energy(server, 64, 1024, 256)
    decode, prefill = rl.decode_energy(server, 64, 1024 + 128), rl.prefill_energy(server, 1024)
    # one prefill, and 256 tokens each 1/64 of a decode step at the mean context 1024 + 256 // 2
    assert r.joules == pytest.approx(prefill.joules + 256 / 64 * decode.joules)
    assert r.joules_per_token == pytest.approx(r.joules / 256)
    assert r.feasible


def test_a_server_on_a_bare_roof_has_no_power_figures():
    bare = rl.serving_server(rl.model_config("llama-3-8b"), rl.roof("H100"))
    with pytest.raises(ValueError, match="server runs on H100 SXM bf16, not a registry GPU"):
        rl.decode_energy(bare, 1, 128)
    with pytest.raises(TypeError, match="server must be a Server"):
        rl.decode_energy("H100", 1, 128)
    with pytest.raises(TypeError, match="step must be a StepTime"):
        rl.step_energy(rl.serving_server(rl.model_config("llama-3-8b"), "H100"), 3)


def test_the_model_is_a_floor_under_the_published_measurement(server):
    """ML.ENERGY measured Llama 3.1 8B on an H100 at max_num_seqs 64: 0.12 J per output token (vLLM 0.11.1).

    The model prices the same work at the roof with no engine overheads, no idle gaps between steps
    and no host: below the measurement, and within an order of magnitude of it.
    """
    (v3,) = [r for r in rl.published_token_energy() if r.key == "llama-3.1-8b-h100-v3"]
    assert (v3.library_model, v3.gpu_name, v3.max_batch, v3.joules_per_token) == ("llama-3-8b", "H100 SXM", 64, 0.12)
    modelled = rl.request_energy(server, 64, 1024, 256).joules_per_token  # 0.070 J
    assert v3.joules_per_token / 10 < modelled < v3.joules_per_token
    (v2,) = [r for r in rl.published_token_energy() if r.key == "llama-3.1-8b-h100-v2"]
    assert v2.joules_per_token == 0.20 and "2026" in v2.date


def test_the_published_op_energies_are_horowitzs_45nm_figures():
    ops = {o.key: o for o in rl.published_op_energies()}
    assert ops["fp16-mult"].joules == pytest.approx(1.1e-12) and ops["fp16-add"].joules == pytest.approx(0.4e-12)
    # a 45 nm fp16 multiply-add: (1.1 + 0.4) pJ for 2 FLOPs = 0.75 pJ/FLOP, the same scale as the H100's derived 0.48
    fma = (ops["fp16-mult"].joules + ops["fp16-add"].joules) / 2
    assert 1 < fma / rl.power_spec("H100").flop_joules("bf16") < 2
    assert ops["dram-read-32b"].joules / 32 == pytest.approx(20e-12)  # 20 pJ/bit, five times HBM2's 3.97
    assert all("Horowitz (2014)" in o.source for o in ops.values())


def test_the_gpus_with_power_figures_in_the_registrys_order():
    keys = rl.gpus_with_power()
    assert keys == tuple(k for k in rl.registry() if k in keys)  # the registry's order, not energy.json's
    assert {"h100-sxm", "h200", "a100-80gb-sxm"} <= set(keys) and "l4" not in keys
    for key in keys:
        assert rl.power_spec(key).tdp_watts > 0  # every one listed has figures ...
    for key in set(rl.registry()) - set(keys):
        with pytest.raises(ValueError, match="has no power and energy figures"):
            rl.power_spec(key)  # ... and every one left out has none
    with pytest.raises(ValueError) as refused:
        rl.power_spec("L4")
    assert str(refused.value).endswith(", ".join(rl.gpu(k).name for k in keys))  # named in that order


# --------------------------------------------------------------------------- a measurement against the model


def test_a_measured_energy_is_set_against_the_model_for_the_same_work():
    # 1e12 FLOP and 1e9 B in 2 ms on an H100: 0.476912 + 0.03176 + 121.7 * 2e-3 = 0.752072 J by the model
    j = rl.judge_energy("H100", 1e12, 1e9, 2e-3, 0.9)
    assert j.model.joules == pytest.approx(0.476912 + 0.03176 + 0.2434, rel=1e-5)
    assert j.ratio == pytest.approx(0.9 / 0.752072, rel=1e-5)  # 1.197: the GPU used 20 % more
    assert j.average_watts == pytest.approx(450)  # 0.9 J / 2 ms
    assert j.floor_joules == pytest.approx(0.508672, rel=1e-5)  # FLOPs and bytes alone
    assert j.plausible and j.flags == ()
    assert str(j).startswith("measured 900 mJ in 2 ms (450 W) on the H100 SXM; the model 752 mJ")


def test_the_energy_guard_flags_power_above_tdp_and_joules_below_the_floor():
    hot = rl.judge_energy("H100", 1e12, 1e9, 2e-3, 1.6)  # 1.6 J / 2 ms = 800 W > 700 W * 1.05
    assert not hot.plausible and "800 W on average is above the H100 SXM's TDP of 700 W" in hot.flags[0]
    assert str(hot).startswith("IMPLAUSIBLE: 800 W")
    cold = rl.judge_energy("H100", 1e12, 1e9, 2e-3, 0.4)  # 0.4 J < 0.508672 J * 0.95 for the FLOPs and bytes alone
    assert cold.flags == ("400 mJ is below the model's 509 mJ for the FLOPs and bytes alone, with no static power",)
    edge = rl.judge_energy("H100", 1e12, 1e9, 2e-3, 1.4 * 1.05)  # 735 W: at the TDP within the guard's 5 %
    assert edge.plausible
    with pytest.raises(rl.ImplausibleMeasurement):
        rl.judge_energy("H100", 1e12, 1e9, 0.5e-3, 0.3)  # faster than the compute peak: the roofline guard
    with pytest.raises(ValueError, match="joules must be a positive"):
        rl.judge_energy("H100", 1e12, 1e9, 2e-3, 0)


# --------------------------------------------------------------------------- speculative decoding


@pytest.fixture(scope="module")
def draft():
    cfg = rl.TransformerConfig(d_model=1024, d_ff=2816, n_layers=8, n_heads=8, vocab=128256, seq_len=8192, name="draft")
    return rl.serving_server(cfg, "H100")


def test_speculative_energy_is_drafts_plus_check_over_the_tokens_kept(server, draft):
    e = rl.speculative_energy(server, draft, 1, 2048, 0.8, 4)
    # tokens kept per check: (1 - 0.8**5) / (1 - 0.8) = (1 - 0.32768) / 0.2 = 3.3616
    assert e.speculation.expected_tokens == pytest.approx(3.3616)
    assert e.draft_joules == pytest.approx(4 * rl.decode_energy(draft, 1, 2048).joules)  # gamma = 4 draft steps
    assert e.check.seconds == pytest.approx(e.speculation.verify_seconds)  # the check chapter 10 priced
    assert e.check.tokens == 5  # gamma + 1 tokens computed for the one sequence
    assert e.joules_per_token == pytest.approx((e.draft_joules + e.check_joules) / (1 * 3.3616))
    # memory-bound at batch 1: the check reads the weights once, as a plain step does, and does 5 tokens' FLOPs
    assert e.check.byte_joules == pytest.approx(e.plain.byte_joules, rel=0.01)
    assert e.check.flop_joules == pytest.approx(5 * e.plain.flop_joules, rel=0.01)
    assert e.ratio == pytest.approx(0.35, abs=0.01)  # 0.365 J of 1.05 J: saves energy as it saves time
    assert e.feasible and str(e).startswith("speculative decoding, alpha 0.8, gamma 4, batch 1: 365 mJ per token")


def test_speculation_costs_energy_where_the_check_is_compute_bound(server, draft):
    e = rl.speculative_energy(server, draft, 512, 128, 0.8, 4)
    assert e.speculation.speedup < 1 and e.ratio > 1  # the rejected tokens' FLOPs are paid in full
    assert e.joules_per_token == pytest.approx((e.draft_joules + e.check_joules) / (512 * 3.3616))
    with pytest.raises(TypeError, match="draft must be a Server"):
        rl.speculative_energy(server, "draft", 1, 2048, 0.8, 4)
    with pytest.raises(ValueError, match="gamma"):
        rl.speculative_energy(server, draft, 1, 2048, 0.8, 0)


# --------------------------------------------------------------------------- the one formatter


def test_energy_and_power_are_written_by_the_formatter():
    assert fmt.energy_text(1234) == "1.23 kJ" and fmt.energy_text(0.0419) == "41.9 mJ"
    assert fmt.energy_text(33.5e12) == "33.5 TJ" and fmt.energy_text(2.5) == "2.5 J"
    assert fmt.power_text(412.3) == "412 W" and fmt.power_text(5600) == "5.6 kW" and fmt.power_text(2.2e7) == "22 MW"
    assert fmt.to_unit(3.6e9, "MWh") == 1 and fmt.to_unit(3.6e6, "kWh") == 1
    assert fmt.from_unit(3.97, "pJ/bit") == pytest.approx(31.76e-12)  # 8 bits a byte
    assert fmt.from_unit(700, "W") == 700 and math.isclose(fmt.from_unit(0.5, "pJ/FLOP"), 0.5e-12)
