"""Money and carbon: GPU-hour prices, dollars per million tokens, kg CO2e, and a training run's energy
held against the GPU-hours and emissions Meta published for Llama 3.1."""

from __future__ import annotations

import pytest

import roofline_lib as rl


def _run(key):
    (run,) = [r for r in rl.published_training_energy() if r.key == key]
    return run


# --------------------------------------------------------------------------- prices and carbon


def test_a_gpu_hour_price_carries_its_source_and_date():
    price = rl.gpu_hour_price("H100")
    assert price.dollars_per_hour == 4.916 and price.date == "2024-Q4"
    assert "Capacity Blocks" in price.source and "p5.48xlarge" in price.detail
    assert rl.gpu_hour_price("H200").dollars_per_hour == 5.408
    with pytest.raises(ValueError, match=r"gpu 'A100 80GB SXM' has no GPU-hour price.*dollars_per_hour"):
        rl.gpu_hour_price("A100")


def test_cost_per_million_tokens_by_hand():
    # 1000 tokens/s = 3.6e6 tokens an hour; $3.60 an hour / 3.6e6 tokens * 1e6 = $1.00 per million tokens
    assert rl.cost_per_million_tokens(1000, 3.6) == pytest.approx(1.0)
    assert rl.cost_per_million_tokens(1000, 0) == 0  # a GPU you already own, if power is free
    with pytest.raises(ValueError, match="tokens_per_s must be a positive number of tokens per second"):
        rl.cost_per_million_tokens(0, 3.6)
    with pytest.raises(ValueError, match="dollars_per_hour must be a non-negative number of US dollars"):
        rl.cost_per_million_tokens(1000, -1)


def test_emissions_by_hand_and_no_default_grid():
    # 3.6e9 J = 1000 kWh; at 400 g/kWh: 400,000 g = 400 kg
    assert rl.emissions_kg(3.6e9, 400) == pytest.approx(400)
    assert rl.emissions_kg(3.6e9, 0) == 0
    with pytest.raises(ValueError, match="grid_g_per_kwh must be a non-negative number of grams of CO2e per kWh"):
        rl.emissions_kg(3.6e9, -20)
    with pytest.raises(ValueError, match="grid_g_per_kwh must be a finite number"):
        rl.emissions_kg(3.6e9, float("nan"))
    with pytest.raises(TypeError):
        rl.emissions_kg(3.6e9)  # the grid is the reader's: there is no default


# --------------------------------------------------------------------------- a training run


def test_a_training_run_by_hand():
    # 6 * 7e9 params * 1e12 tokens = 4.2e22 FLOP; at 40 % of 989.5 TFLOP/s: 4.2e22 / 395.8e12 = 1.0612e8 GPU-s
    t = rl.training_energy(7e9, 1e12, "H100", 0.4, n_gpus=64)
    assert t.flops == pytest.approx(4.2e22)
    assert t.gpu_hours == pytest.approx(4.2e22 / (0.4 * 989.5e12) / 3600)  # 29,478 GPU-hours
    assert t.wall_seconds == pytest.approx(t.gpu_hours * 3600 / 64)
    assert t.tdp_joules == pytest.approx(700 * t.gpu_hours * 3600)  # 74.3 TJ = 20.6 MWh
    p = rl.power_spec("H100")
    assert t.flop_joules == pytest.approx(4.2e22 * p.flop_joules("bf16"))
    assert t.byte_joules == pytest.approx(4.2e22 / rl.ridge_point("H100") * p.joules_per_hbm_byte)  # bytes at the ridge
    assert t.static_joules == pytest.approx(121.7 * t.gpu_hours * 3600)
    assert t.model_joules == pytest.approx(t.flop_joules + t.byte_joules + t.static_joules)
    assert t.model_joules < t.tdp_joules  # at 40 % MFU the modelled GPU draws well under its TDP
    assert rl.training_energy(7e9, 1e12, "H100", 0.4, pue=1.2).tdp_joules == pytest.approx(1.2 * t.tdp_joules)
    assert rl.training_energy(7e9, 1e12, "H100", 0.4).wall_seconds is None  # no GPU count, no wall-clock


def test_a_training_run_refuses_bad_input_by_name():
    with pytest.raises(ValueError, match="pue must be a power usage effectiveness of 1 or more"):
        rl.training_energy(7e9, 1e12, "H100", 0.4, pue=0.9)
    with pytest.raises(ValueError, match="n_gpus must be a positive whole number"):
        rl.training_energy(7e9, 1e12, "H100", 0.4, n_gpus=0)
    with pytest.raises(TypeError, match="n_gpus must be a whole number"):
        rl.training_energy(7e9, 1e12, "H100", 0.4, n_gpus=False)
    with pytest.raises(ValueError, match="mfu must be a fraction"):
        rl.training_energy(7e9, 1e12, "H100", 41)
    with pytest.raises(ValueError, match="method must be 'tdp' or 'model'"):
        rl.training_energy(7e9, 1e12, "H100", 0.4).kg_co2e(400, method="meter")


def test_llama_3_1_405b_gpu_hours_from_6nt_at_its_published_mfu():
    """6 N T at the report's 41 % MFU accounts for 84 % of the published 30.84M GPU-hours.

    6 * 405e9 * 15.6e12 = 3.7908e25 FLOP; / (0.41 * 989.5e12) / 3600 = 25.96M GPU-hours. The
    published hours also hold what 6 N T at a steady MFU does not: restarts and lost work (the
    report gives ~90 % effective training time), the long-context and annealing stages, and
    post-training. The uncertainty the chapter states: the published hours are up to 20 % above 6 N T.
    """
    run = _run("llama-3.1-405b")
    t = rl.training_energy(run.n_params, run.tokens, "H100", run.published_mfu)
    assert t.flops == pytest.approx(3.7908e25, rel=1e-4)
    assert 0.80 < t.gpu_hours / run.gpu_hours < 1.0  # 0.842
    assert run.implied_mfu() == pytest.approx(0.3451, rel=1e-3)  # below the report's 38-43 %: more than pre-training
    exact = rl.training_energy(run.n_params, run.tokens, "H100", run.implied_mfu())
    assert exact.gpu_hours == pytest.approx(run.gpu_hours)  # at the implied MFU, 6 N T gives the published hours


def test_the_published_emissions_are_gpu_hours_times_700_w_times_one_grid():
    # all three: 11,390 t over (1.46 + 7.0 + 30.84)M GPU-h * 0.7 kW = 27.51M kWh: 414.0 g CO2e per kWh
    runs = rl.published_training_energy()
    tonnes = sum(r.location_based_tco2eq for r in runs)
    kwh = sum(r.gpu_hours * r.training_power_watts / 1000 for r in runs)
    assert tonnes == 11390 and kwh == pytest.approx(27.51e6)
    grid = tonnes * 1e6 / kwh  # 414.0 g/kWh
    for r in runs:
        recomputed = rl.emissions_kg(r.gpu_hours * 3600 * 700, grid) / 1000  # tonnes
        assert recomputed == pytest.approx(r.location_based_tco2eq, rel=0.01)  # 8B: 423 against 420
        assert r.implied_grid_g_per_kwh == pytest.approx(grid, rel=0.01)
        assert r.market_based_tco2eq == 0


def test_the_tdp_convention_and_the_energy_model_for_the_405b_run():
    run = _run("llama-3.1-405b")
    t = rl.training_energy(run.n_params, run.tokens, "H100", run.implied_mfu())
    assert t.tdp_joules == pytest.approx(run.joules)  # 30.84M GPU-h * 700 W = 21,588 MWh: the card's own product
    assert t.tdp_mwh == pytest.approx(21588, rel=1e-4)
    # the model: at 34.5 % MFU a GPU draws 121.7 W static + 0.345 * 471.9 W of FLOPs + the bytes: about 320 W
    assert 250 < t.model_average_watts < 400
    assert t.kg_co2e(414.0) == pytest.approx(8930e3, rel=0.01)  # the published 8,930 t, from the TDP energy
    assert t.kg_co2e(414.0, method="model") < t.kg_co2e(414.0)


def test_the_smaller_runs_imply_lower_mfu():
    # 8B: 6 * 8e9 * 15e12 / (1.46e6 * 3600 * 989.5e12) = 7.2e23 / 5.2009e24 = 0.138
    assert _run("llama-3.1-8b").implied_mfu() == pytest.approx(0.1384, rel=1e-3)
    # 70B: 6 * 70e9 * 15e12 / (7.0e6 * 3600 * 989.5e12) = 6.3e24 / 2.4935e25 = 0.253
    assert _run("llama-3.1-70b").implied_mfu() == pytest.approx(0.2527, rel=1e-3)
