"""Data, fully sharded and tensor parallelism trained live on two local gloo ranks, against the library."""

from __future__ import annotations

import pytest

from roofline_lib import local_ranks, parallel_live


@pytest.fixture(scope="module")
def live():
    pytest.importorskip("torch")
    # fewer steps than the chapter's run (5 and 2 of warm-up): bytes and state do not depend on them,
    # and the run takes 5 s instead of 8
    return parallel_live.measure_parallel(steps=2, warmup=1)


def test_live_bytes_match_the_planner(live):
    from roofline_lib.evidence.parallel_live import compare_parallel

    cmp = compare_parallel(live)
    for mode in ("ddp", "fsdp"):
        assert cmp[mode].bytes_ratio == pytest.approx(1.0, abs=0.05), mode
    assert cmp["tp"].bytes_ratio == pytest.approx(1.0, abs=0.05)
    # gloo runs FSDP's reduce-scatter as an all-reduce: its wire carries 2 + 1 + 1 = 4 units, not 3
    assert cmp["fsdp"].wire_bytes == pytest.approx(4 / 3 * cmp["fsdp"].measured_bytes, rel=0.05)


def test_live_memory_matches_train_memory(live):
    from roofline_lib.evidence.parallel_live import compare_parallel

    for mode, c in compare_parallel(live).items():
        assert c.state_ratio == pytest.approx(1.0, abs=0.02), mode
    ddp, fsdp = live.runs["ddp"], live.runs["fsdp"]
    assert fsdp.param_bytes == pytest.approx(ddp.param_bytes / 2, rel=0.01)  # ZeRO-3 on 2 ranks: half each
    assert "torch" in live.label and "gloo" in live.label


def test_measure_parallel_refuses_bad_input_before_starting_anything(monkeypatch):
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match="n_ranks must be 2 \\(the tensor-parallel split is 2-way\\), got 4"):
        parallel_live.measure_parallel(n_ranks=4)
    with pytest.raises(ValueError, match="d_ff must split evenly over the 2 ranks, got 1023 features"):
        parallel_live.measure_parallel(d_ff=1023)
    with pytest.raises(ValueError, match="steps must be a positive whole number of steps"):
        parallel_live.measure_parallel(steps=0)
    monkeypatch.setattr(local_ranks, "_loopback_interface", lambda: None)
    with pytest.raises(RuntimeError, match="no loopback network interface .*: the ranks talk over 127.0.0.1 only"):
        parallel_live.measure_parallel()


def test_compare_parallel_takes_only_a_live_measurement():
    with pytest.raises(TypeError, match="measurement must be a LiveMeasurement"):
        parallel_live.compare_parallel({"ddp": None})
