"""The published energy figures are read as their sources print them, each with its source and date."""

from __future__ import annotations

import json
from importlib import resources

import pytest

import roofline_lib as rl


def test_the_llama_3_1_model_card_figures_as_printed():
    runs = {r.key: r for r in rl.published_training_energy()}
    assert list(runs) == ["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b"]
    printed = {  # model card, Training Energy Use table: GPU hours, W, location-based t CO2eq
        "llama-3.1-8b": (1.46e6, 700, 420),
        "llama-3.1-70b": (7.0e6, 700, 2040),
        "llama-3.1-405b": (30.84e6, 700, 8930),
    }
    for key, (hours, watts, tonnes) in printed.items():
        r = runs[key]
        assert (r.gpu_hours, r.training_power_watts, r.location_based_tco2eq) == (hours, watts, tonnes)
        assert r.gpu_name == "H100 SXM" and r.date == "2024-07-23" and "MODEL_CARD.md" in r.source
    assert sum(r.gpu_hours for r in runs.values()) == pytest.approx(39.3e6)  # the card's total, 39.3M
    assert runs["llama-3.1-405b"].tokens == 15.6e12 and runs["llama-3.1-8b"].tokens == 15e12
    assert runs["llama-3.1-405b"].n_params == 405e9 and runs["llama-3.1-405b"].published_mfu == 0.41
    assert runs["llama-3.1-8b"].published_mfu is None


def test_the_405bs_mfu_span_and_effective_time_are_the_reports_figures():
    run = {r.key: r for r in rl.published_training_energy()}["llama-3.1-405b"]
    assert run.mfu_span == (0.38, 0.43)  # Grattafiori et al. 2024, Table 4: 38 % to 43 % BF16 MFU
    assert run.mfu_span[0] <= run.published_mfu <= run.mfu_span[1]  # the 41 % row inside the span
    assert run.effective_training_time == 0.90 and run.effective_time_span == (0.90, 1.0)  # "higher than 90%"
    small = {r.key: r for r in rl.published_training_energy()}["llama-3.1-8b"]
    assert small.mfu_span is None and small.effective_time_span is None  # none printed for the 8B


def test_an_mfu_span_needs_both_ends_and_shares(monkeypatch):
    from roofline_lib.workloads import energy_published

    record = {
        "model": "M",
        "n_params": {"value": 1, "unit": "B params", "from": "x"},
        "tokens": {"value": 1, "unit": "T tokens", "from": "x"},
        "gpu": "h100-sxm",
        "gpu_hours": {"value": 1.0, "from": "x"},
        "training_power_watts": {"value": 700, "unit": "W", "from": "x"},
        "location_based_tco2eq": {"value": 1, "from": "x"},
        "market_based_tco2eq": {"value": 0, "from": "x"},
        "source": "x",
        "date": "2024-07-23",
    }
    with pytest.raises(ValueError, match="must give both mfu_low and mfu_high"):
        energy_published._training("m", {**record, "mfu_low": {"value": 0.38, "from": "x"}})
    with pytest.raises(ValueError, match="0 < low <= high < 1"):
        energy_published._training(
            "m", {**record, "mfu_low": {"value": 0.5, "from": "x"}, "mfu_high": {"value": 0.4, "from": "x"}}
        )
    with pytest.raises(ValueError, match="effective_training_time must be a share"):
        energy_published._training("m", {**record, "effective_training_time": {"value": 90, "from": "x"}})


def test_every_figure_in_the_energy_registry_says_where_it_comes_from_and_when():
    data = json.loads(resources.files("roofline_lib.core").joinpath("data/energy.json").read_text(encoding="utf-8"))
    figures = []
    for table in ("gpus", "prices", "published_training", "published_token_energy", "published_op_energy"):
        for key, record in data[table].items():
            figures += [(table, key, name, f) for name, f in record.items() if isinstance(f, dict)]
            if table != "gpus":
                assert record.get("date"), f"{table}, {key}: no date"
    assert len(figures) > 30
    for table, key, name, figure in figures:
        assert isinstance(figure.get("value"), (int, float)), (table, key, name)
        assert figure.get("from"), (table, key, name)
        if table == "gpus":
            assert figure.get("date"), (table, key, name)


def test_a_figure_borrowed_from_a_sibling_part_says_so():
    h200 = rl.power_spec("H200").sources["idle_watts"]
    assert h200.startswith("not measured on an H200")
    assert "not measured" not in rl.power_spec("H100").sources["idle_watts"]
