"""The published runs: each architecture as its paper printed it, and the planner's bound above it."""

from __future__ import annotations

import pytest

import roofline_lib as rl


def test_published_runs_are_the_three_of_the_chapter():
    runs = {r.key: r for r in rl.published_runs()}
    assert set(runs) == {"llama3-405b", "megatron-1t", "deepseek-v3"}
    assert runs["llama3-405b"].model.n_params() == pytest.approx(405e9, rel=0.01)
    assert runs["megatron-1t"].model.n_params() == pytest.approx(1008e9, rel=0.002)  # Table 1: 1008.0B
    ds = runs["deepseek-v3"].model
    assert ds.n_params() == pytest.approx(671e9, rel=0.01) and ds.active_params() == pytest.approx(37e9, rel=0.03)


@pytest.mark.parametrize("run", rl.published_runs(), ids=lambda r: r.key)
def test_every_published_run_fits_and_runs_below_the_planners_bound(run):
    c = rl.compare_run(run)
    assert c.plan.fits
    assert 0.2 < c.published_model_mfu < c.predicted_mfu <= 1  # the roofline is a bound, not a forecast
