"""The communication roofline: comms intensity against the network ridge, overlap, and the verdicts."""

from __future__ import annotations

import pytest

import roofline_lib as rl


def test_data_parallel_step_across_nodes_uses_the_hierarchy():
    # 7e9 params, bf16: S = 14 GB; 64 H100s in 8 nodes: egress 2 * 7 / 8 * 14 GB / 400 GB/s = 61.25 ms
    v = rl.data_parallel_step(7e9, 8192, 64, "H100", rl.node("8x H100"))
    assert v.comms_seconds == pytest.approx(0.06125)
    # compute 6 * 7e9 * 8192 / 989.5e12 = 348 ms: compute-bound, where one 50 GB/s port said comms
    assert v.bound == "compute"
    assert rl.data_parallel_step(7e9, 8192, 64, "H100", "ndr").bound == "comms"
    assert "node egress binds" in v.link
    with pytest.raises(ValueError, match="algorithm must be 'ring' across nodes"):
        rl.data_parallel_step(7e9, 4096, 16, "H100", rl.node("8x H100"), algorithm="tree")


def test_network_ridge_is_peak_over_link():
    # H100 SXM dense bf16 989.5 TFLOP/s over NVLink 4's 450 GB/s and NDR's 50 GB/s
    assert rl.network_ridge("H100", "nvlink4") == pytest.approx(989.5e12 / 450e9)
    assert rl.network_ridge("H100", "ndr") == pytest.approx(989.5e12 / 50e9)
    assert rl.comms_intensity(1e12, 1e9) == 1000.0
    r = rl.network_roof("H100", "ndr")
    assert r.bytes_per_s == 50e9 and r.ridge == rl.network_ridge("H100", "ndr")
    assert r.seconds(1e12, 1e9) == pytest.approx(0.02)  # the wire's 20 ms beats the compute's 1 ms


def test_exposed_comms_after_overlap_counted_by_hand():
    # compute 10 ms, comms 4 ms
    assert rl.exposed_comms_seconds(10e-3, 4e-3, 0.0) == pytest.approx(4e-3)  # nothing hidden
    assert rl.exposed_comms_seconds(10e-3, 4e-3, 0.25) == pytest.approx(1.5e-3)  # 4 - 0.25 * 10
    assert rl.exposed_comms_seconds(10e-3, 4e-3, 0.5) == 0.0  # a 5 ms window covers 4 ms
    assert rl.exposed_comms_seconds(2e-3, 4e-3, 1.0) == pytest.approx(2e-3)  # at most the compute
    with pytest.raises(ValueError, match="overlap_fraction must be a fraction between 0 and 1, got 1.5"):
        rl.exposed_comms_seconds(1.0, 1.0, 1.5)


def test_comms_verdict_counted_by_hand():
    # 1e12 FLOP on an H100 (989.5 TFLOP/s) and 1 GB over NDR (50 GB/s)
    v = rl.comms_verdict(1e12, 1e9, "H100", "ndr")
    assert v.intensity == 1000.0 and v.ridge == pytest.approx(19790.0)
    assert v.compute_seconds == pytest.approx(1e12 / 989.5e12)  # ~1.01 ms
    assert v.comms_seconds == pytest.approx(0.02)  # 1 GB / 50 GB/s
    assert v.bound == "comms" and not v.hidden
    assert v.step_seconds == pytest.approx(v.compute_seconds + 0.02)
    # latency counts as wire time: 1e12 FLOP, 1 kB over NVLink 4 with 2 ms of latency
    assert rl.comms_verdict(1e12, 1e3, "H100", "nvlink4", latency_seconds=2e-3).bound == "comms"
    # plenty of compute and full overlap: all hidden
    big = rl.comms_verdict(1e15, 1e9, "H100", "ndr", overlap_fraction=1.0)
    assert big.bound == "compute" and big.hidden and big.step_seconds == big.compute_seconds


def test_comms_verdict_refuses_impossible_measurements():
    # 1e12 FLOP cannot finish in 0.5 ms on an H100: that is 2000 TFLOP/s, twice the dense peak
    with pytest.raises(rl.ImplausibleMeasurement, match="dense bf16 compute peak"):
        rl.comms_verdict(1e15, 1e6, "H100", "nvlink4", measured_seconds=0.5)
    # 1 GB cannot cross NDR in 10 ms: 100 GB/s, twice the 50 GB/s port
    with pytest.raises(rl.ImplausibleMeasurement, match=r"2.00x the InfiniBand NDR link bandwidth \(one direction\)"):
        rl.comms_verdict(1e9, 1e9, "H100", "ndr", measured_seconds=0.01)
    ok = rl.comms_verdict(1e9, 1e9, "H100", "ndr", measured_seconds=0.04)
    assert ok.efficiency == pytest.approx(ok.step_seconds / 0.04)
    with pytest.raises(ValueError, match="measured_seconds must be a positive number of seconds"):
        rl.comms_verdict(1e9, 1e9, "H100", "ndr", measured_seconds=0)


def test_data_parallel_intensity_does_not_depend_on_model_size():
    # ring: 6 N T / (2 (n - 1) / n * N b) = 3 T n / ((n - 1) b) = 3 * 4096 * 8 / (7 * 2) = 7021.7
    small = rl.data_parallel_step(1e8, 4096, 8, "H100", "ndr")
    large = rl.data_parallel_step(7e9, 4096, 8, "H100", "ndr")
    assert small.intensity == pytest.approx(3 * 4096 * 8 / (7 * 2))
    assert large.intensity == pytest.approx(small.intensity)
    assert large.flops == 6 * 7e9 * 4096
    assert large.bytes_sent == pytest.approx(2 * 7 / 8 * 7e9 * 2)  # bf16 gradients
    # fp32 gradients halve it
    fp32 = rl.data_parallel_step(7e9, 4096, 8, "H100", "ndr", grad_bytes_per_param=4)
    assert fp32.intensity == pytest.approx(small.intensity / 2)
    with pytest.raises(ValueError, match="tokens_per_gpu must be a positive number of tokens"):
        rl.data_parallel_step(7e9, 0, 8, "H100", "ndr")


def test_tensor_parallel_intensity_is_six_d_over_tp_minus_one_bytes():
    # plain FFN d_ff = 4d: 12 d^2 weights per layer; per GPU 24 d^2 T / tp FLOP against
    # 2 all-reduces * 2 (tp - 1) / tp * T d b bytes -> 6 d / ((tp - 1) b) = 6 * 1024 / (3 * 2) = 1024
    for tokens in (1, 512, 65536):
        v = rl.tensor_parallel_layer(1024, 4096, tokens, 4, "H100", "nvlink4", gated=False)
        assert v.intensity == pytest.approx(1024.0)
    # with latency, small batches spend their time waiting: 2 all-reduces * 6 steps * 5 us = 60 us
    tiny = rl.tensor_parallel_layer(1024, 4096, 1, 4, "H100", "nvlink4", gated=False, alpha_seconds=5e-6)
    assert tiny.comms_seconds == pytest.approx(60e-6 + tiny.bytes_sent / 450e9)
    assert tiny.bound == "comms"


def test_the_link_roof_is_named_once_whether_the_link_is_a_name_or_a_number():
    by_number = rl.comms_roofline.network_roof("H100 SXM", 450e9)
    by_name = rl.comms_roofline.network_roof("H100 SXM", "NVLink 4")
    assert by_number.memory_label == "450 GB/s link bandwidth (one direction)"
    assert by_name.memory_label == "NVLink 4 link bandwidth (one direction)"


def test_only_the_backward_pass_can_hide_the_gradients():
    # the backward pass is 4N of the 6N FLOPs per token: a 300 ms step has a 200 ms window
    assert rl.GRADIENT_OVERLAP_FRACTION == pytest.approx(4 / 6)
    assert rl.gradient_overlap_seconds(0.3) == pytest.approx(0.2)
    # 4096 tokens, 50 ms of gradients under a 200 ms window: 4096 * 0.05 / 0.2 = 1,024 tokens hide them
    assert rl.gradient_hiding_tokens(4096, 0.05, 0.3) == pytest.approx(1024)
    # and not the whole step: against all 300 ms it would have said 4096 * 0.05 / 0.3 = 683
    assert rl.gradient_hiding_tokens(4096, 0.05, 0.3) > 4096 * 0.05 / 0.3
    with pytest.raises(ValueError, match="compute_seconds must be a positive .* seconds, got 0"):
        rl.gradient_overlap_seconds(0)
    with pytest.raises(ValueError, match="tokens_per_gpu"):
        rl.gradient_hiding_tokens(-1, 0.05, 0.3)
    with pytest.raises(ValueError, match="gradient_seconds"):
        rl.gradient_hiding_tokens(4096, float("nan"), 0.3)


def test_at_the_hiding_tokens_the_data_parallel_step_exposes_nothing_and_below_it_something():
    # the gradients' bytes are fixed and the compute grows with the tokens: the threshold that
    # gradient_hiding_tokens names is where data_parallel_step's exposed time reaches zero
    node = rl.node("8x H100")
    at_4096 = rl.data_parallel_step(7e9, 4096, 64, "H100", node, overlap_fraction=rl.GRADIENT_OVERLAP_FRACTION)
    threshold = rl.gradient_hiding_tokens(4096, at_4096.comms_seconds, at_4096.compute_seconds)
    at = rl.data_parallel_step(7e9, threshold, 64, "H100", node, overlap_fraction=rl.GRADIENT_OVERLAP_FRACTION)
    below = rl.data_parallel_step(
        7e9, threshold * 0.99, 64, "H100", node, overlap_fraction=rl.GRADIENT_OVERLAP_FRACTION
    )
    assert at.exposed_comms_seconds == pytest.approx(0.0, abs=1e-12)
    assert below.exposed_comms_seconds > 0
