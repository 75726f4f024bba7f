"""The playbook's entry points: diagnose composes the steps (its refusals, a mixed verdict in words),
measured_mfu judges a timed step by the one plausibility rule, and the names chapters 6 and 7 use."""

from __future__ import annotations

import pytest

import roofline_lib as rl
from roofline_lib import diagnose as D

# A roof with hand-countable numbers: 100 GFLOP/s over 10 GB/s, ridge 10 FLOP/B.
TOY = rl.Roof(100e9, 10e9, "toy machine")


def test_bad_input_is_refused_with_the_parameter_named():
    with pytest.raises(TypeError, match="profile must be"):
        D.diagnose(42, roof=TOY)
    with pytest.raises(ValueError, match="empty"):
        D.diagnose([], roof=TOY)
    with pytest.raises(ValueError, match="wall_seconds must be a positive"):
        D.diagnose([("mm", 1, 1e-3)], wall_seconds=0)
    with pytest.raises(ValueError, match="seconds of mm"):
        D.OpStat("mm", 1, -1.0)
    with pytest.raises(ValueError, match="a CPU profile needs this machine's roof"):
        D.diagnose([("mm", 1, 1e-3, 1e9, 1e9)])
    with pytest.raises(ValueError, match="no time"):
        D.diagnose([("mm", 1, 0.0)], roof=TOY)


def test_no_majority_is_mixed_and_says_the_shares():
    # compute 4 ms, memory 3 ms, idle 3 ms of a 10 ms wall: 40 / 30 / 30, no pile above half
    d = D.diagnose([("mm", 1, 4e-3, 1e12, 1e9), ("add", 1, 3e-3, 1e6, 1e8)], roof=TOY, wall_seconds=10e-3)
    assert d.regime == "mixed"
    assert d.shares["compute"] == pytest.approx(0.4) and d.shares["overhead"] == pytest.approx(0.3)
    text = str(d)
    assert text.startswith("mixed: compute 40%, memory 30%, overhead 30%")
    assert "start with the largest pile (compute:" in text


def test_measured_mfu_uses_the_one_plausibility_rule():
    # 1e9 FLOP in 10 ms = 100 GFLOP/s of a 100 GFLOP/s roof: 1.0; 4 % faster passes, 6 % does not
    assert D.measured_mfu(1e9, 10e-3, TOY) == pytest.approx(1.0)
    D.measured_mfu(1.04e9, 10e-3, TOY)
    with pytest.raises(rl.ImplausibleMeasurement, match="compute peak"):
        D.measured_mfu(1.06e9, 10e-3, TOY)


def test_measured_mfu_names_its_parameters_when_refusing():
    with pytest.raises(TypeError, match="ceilings must be a MeasuredCeilings"):
        D.measured_mfu(1e9, 1.0, 42)
    with pytest.raises(ValueError, match="model_flops must be a positive number of FLOP"):
        D.measured_mfu(0, 1.0, TOY)
    with pytest.raises(ValueError, match="has no fp8"):
        D.measured_mfu(1e9, 1.0, "A100", precision="fp8")


def test_the_names_the_chapters_use_are_reachable_from_diagnose():
    # chapters 6 and 7 and tools/trace_digest.py call diagnose.<name> for every step's public names
    from roofline_lib import playbook, profile_live, recorded_ops, trace_rows

    assert D.OpStat is trace_rows.OpStat and D.read_trace is trace_rows.read_trace
    assert D.TRIAGE_RULES is playbook.TRIAGE_RULES and D.REMEDIES is playbook.REMEDIES
    assert D.profile_run is profile_live.profile_run and D.count_op is recorded_ops.count_op
    assert all(hasattr(D, name) for name in D.__all__)
