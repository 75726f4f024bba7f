"""Tests for roofline_lib.present.widgets_energy: the energy explorer says what energy.decode_energy says.

The website's energy mode is held to the same widget in test_explorer_js.py.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

import roofline_lib as rl  # noqa: E402
from roofline_lib import widgets_energy  # noqa: E402


@pytest.fixture(scope="module")
def h100():
    return rl.serving_server(rl.model_config("llama-3-8b"), "H100")


def test_the_explorer_starts_at_the_librarys_decode_energy(h100):
    ex = widgets_energy.energy_explorer()  # Llama-3-8B, H100, bf16, 400 W, batch 64, 2,048 keys
    view = ex.result
    free = rl.decode_energy(h100, 64, 2048)
    assert view.chosen.batch == 64 and view.chosen.free == free
    assert view.chosen.capped == rl.decode_energy(h100, 64, 2048, cap_watts=400)
    # at batch 64 the step draws 279 W: a 400 W cap does not bind, and the energy is the same
    assert not view.chosen.cap_binds and view.chosen.capped.joules == pytest.approx(free.joules)
    price = rl.gpu_hour_price("H100")
    # $4.916 / (64 / 9.61 ms * 3600) * 1e6 = $0.205 per million tokens
    assert view.chosen.dollars_per_million == pytest.approx(
        rl.cost_per_million_tokens(64 / free.seconds, price.dollars_per_hour)
    )
    assert view.price == price and [p.batch for p in view.points] == [2**k for k in range(11)]
    readout = ex.readout.value
    assert "<b>41.9 mJ per token</b>" in readout and "279 W" in readout and "does not bind" in readout
    assert "<b>$0.205 per million tokens</b>" in readout and price.date in readout
    assert "DOES NOT FIT" not in readout


def test_a_cap_below_what_the_step_draws_binds_and_slows_it(h100):
    ex = widgets_energy.energy_explorer(cap_watts=200)
    p = ex.result.chosen
    # the dynamic joules over (200 - 121.7) W: 1.513 J / 78.3 W = 19.3 ms, from 9.61 ms at the roof
    dynamic = p.free.flop_joules + p.free.byte_joules
    assert p.cap_binds and p.capped.seconds == pytest.approx(dynamic / (200 - 121.7))
    assert p.capped.average_watts == pytest.approx(200)  # it draws the cap exactly
    assert p.capped.joules_per_token > p.free.joules_per_token  # the same FLOPs and bytes, more static power
    assert p.capped_dollars_per_million > p.dollars_per_million
    assert "A 200 W cap binds: the step slows from 9.61 to 19.3 ms" in ex.readout.value


def test_joules_per_token_fall_with_the_batch_on_both_lines():
    ex = widgets_energy.energy_explorer()
    ok = [p for p in ex.result.points if p.feasible]
    assert [p.batch for p in ok] == [1, 2, 4, 8, 16, 32, 64, 128, 256]  # 512 at 2,048 keys does not fit in 80 GiB
    energies = [p.free.joules_per_token for p in ok]
    assert energies == sorted(energies, reverse=True)
    left, right = ex.figure.axes
    free, capped, chosen = left.lines
    assert list(free.get_xdata()) == [p.batch for p in ok] and list(free.get_ydata()) == energies
    assert list(chosen.get_xdata()) == [64]
    assert list(right.lines[0].get_ydata()) == [p.dollars_per_million for p in ok]


def test_fp8_weights_halve_the_bytes_and_the_explorer_follows(h100):
    ex = widgets_energy.energy_explorer()
    ex.controls["bytes_per_param"].value = 1
    fp8 = rl.serving_server(rl.model_config("llama-3-8b"), "H100", bytes_per_param=1)  # fp8 weights, KV and math
    assert ex.result.chosen.free == rl.decode_energy(fp8, 64, 2048)
    # half the bytes: half the byte joules and, at the memory roof, half the step's static joules
    bf16 = rl.decode_energy(h100, 64, 2048)
    assert ex.result.chosen.free.byte_joules == pytest.approx(bf16.byte_joules / 2)
    assert ex.result.chosen.free.static_joules == pytest.approx(bf16.static_joules / 2)


def test_a_step_that_does_not_fit_says_so_first():
    ex = widgets_energy.energy_explorer(batch=512)  # 512 sequences of 2,048 keys: 128 GiB of KV cache
    assert not ex.result.chosen.feasible
    assert ex.readout.value.startswith("<b style='color:#b00020'>DOES NOT FIT: Llama-3-8B with 512 sequences")
    assert 512 not in list(ex.figure.axes[0].lines[0].get_xdata())  # not drawn as a point that could run


def test_a_gpu_with_no_price_shows_energy_and_says_why_no_cost():
    ex = widgets_energy.energy_explorer(gpu="A100")  # the A100 80GB: power figures, no price on record
    assert ex.result.price is None and ex.result.chosen.dollars_per_million is None
    assert "No GPU-hour price is on record for the A100 80GB SXM" in ex.readout.value
    assert list(ex.figure.axes[1].lines[0].get_xdata()) == []
    assert "no GPU-hour price" in ex.figure.axes[1].get_title()


def test_bad_input_shows_the_librarys_refusal_and_no_result():
    ex = widgets_energy.energy_explorer()
    ex.controls["cap_watts"].value = 110  # below the H100's 121.7 W of static power
    assert ex.result is None
    assert "cap_watts=110 W is at or below the H100 SXM&#x27;s static power of 121.7 W" in ex.readout.value
    assert list(ex.figure.axes[0].lines[0].get_xdata()) == []
    ex.controls["cap_watts"].value = 300
    ex.controls["gpu"].value = "a100-80gb-sxm"
    ex.controls["bytes_per_param"].value = 1  # the A100 has no fp8
    assert ex.result is None and "A100 80GB SXM has no fp8" in ex.readout.value
    ex.controls["bytes_per_param"].value = 2
    assert ex.result.gpu_name == "A100 80GB SXM"  # recovers when the input is good again


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"gpu": "L4"}, "has no power and energy figures"),
        ({"cap_watts": 50}, "cap_watts must be between 100 and 1000 watts"),
        ({"bytes_per_param": 4}, "bytes_per_param must be 2 \\(bf16\\) or 1 \\(fp8\\)"),
        ({"model": "mixtral-8x7b"}, "experts or a sliding window"),
        ({"cap_watts": 120}, "at or below the H100 SXM's static power"),
    ],
)
def test_a_bad_start_is_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        widgets_energy.energy_explorer(**kwargs)


def test_the_website_attributes_carry_the_counts_per_byte_of_width():
    ex = widgets_energy.energy_explorer()
    attrs = ex.site_attributes
    assert attrs["data-mode"] == "energy" and attrs["data-gpu"] == "h100-sxm" and attrs["data-cap-watts"] == "400"
    cfg = rl.model_config("llama-3-8b")
    two = rl.step_counts(rl.serving_server(cfg, "H100"))
    # every byte count at 2 bytes is twice the count at 1 byte: 8,030,261,248 parameters -> 16.06 GB stored
    assert 2 * float(attrs["data-stored-params"]) == two.stored_weight_bytes == 2 * cfg.n_params()
    assert 2 * float(attrs["data-weight-params-fixed"]) == two.weight_bytes_fixed
    assert 2 * float(attrs["data-kv-elements-per-token"]) == two.kv_bytes_per_token
    assert float(attrs["data-body-flops"]) == two.body_flops_per_token
    ex.controls["batch"].value = 8
    assert ex.site_attributes["data-batch"] == "8"  # the page starts where the widget stands


@pytest.mark.measures  # the redraw budget: timed alone, never beside another test process
def test_each_redraw_stays_fast():
    ex = widgets_energy.energy_explorer()
    seconds = []
    for cap in (350, 300, 250, 200):
        ex.controls["cap_watts"].value = cap
        seconds.append(ex.update())
    assert min(seconds) < 0.1, seconds


def test_only_gpus_with_power_figures_are_offered():
    assert list(widgets_energy.energy_gpus()) == ["a100-80gb-sxm", "a100-40gb-sxm", "h100-sxm", "h200"]
    ex = widgets_energy.energy_explorer()
    assert [key for _, key in ex.controls["gpu"].options] == list(widgets_energy.energy_gpus())
