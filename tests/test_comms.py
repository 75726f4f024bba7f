"""The alpha-beta collective model, the communication roofline, the fit, and the live gloo run."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

import roofline_lib as rl

# ------------------------------------------------------------------ the alpha-beta model


def test_ring_all_reduce_on_four_ranks_counted_by_hand():
    # n = 4, S = 4 MB, alpha = 10 us, 1 GB/s each way
    cost = rl.collective_cost("all_reduce", 4e6, 4, 10e-6, 1e9)
    assert cost.steps == 6  # reduce-scatter 3 + all-gather 3 = 2 (n - 1)
    assert cost.bytes_per_rank == 6e6  # 2 * 3 / 4 * 4 MB
    assert cost.latency_seconds == pytest.approx(60e-6)  # 6 * 10 us
    assert cost.bandwidth_seconds == pytest.approx(6e-3)  # 6 MB / 1 GB/s
    assert cost.seconds == pytest.approx(6.06e-3)
    assert cost.algorithm_bytes_per_s == pytest.approx(4e6 / 6.06e-3)  # S / t
    assert cost.bus_bytes_per_s == pytest.approx(4e6 / 6.06e-3 * 1.5)  # algbw * 2 * 3 / 4
    assert rl.collective_seconds("allreduce", 4e6, 4, 10e-6, 1e9) == cost.seconds


def test_tree_all_reduce_is_thakurs_binomial_tree_with_matching_terms():
    # reduce to the root then broadcast from it: ceil(log2 n) steps each, every step the whole S,
    # so t = 2 ceil(log2 n) (alpha + S / B) (Thakur, Rabenseifner and Gropp 2005)
    assert rl.collective_steps("all_reduce", 8, "tree") == 6  # 2 * log2(8)
    assert rl.collective_steps("all_reduce", 5, "tree") == 6  # 2 * ceil(log2 5) = 2 * 3
    assert rl.collective_steps("all_reduce", 64, "ring") == 126  # 2 * 63
    assert rl.collective_steps("all_reduce", 64, "tree") == 12  # 2 * 6
    assert rl.collective_bytes_per_rank("all_reduce", 1e6, 8, "tree") == 6e6  # 6 steps x 1 MB
    cost = rl.collective_cost("all_reduce", 1e6, 8, 10e-6, 1e9, "tree")
    assert cost.seconds == pytest.approx(6 * (10e-6 + 1e-3))  # 6 x (10 us + 1 MB / 1 GB/s) = 6.06 ms
    # small message, many ranks: the tree wins; 1 kB on 64 ranks at 5 us and 50 GB/s
    ring = rl.collective_seconds("all_reduce", 1e3, 64, 5e-6, 50e9)
    tree = rl.collective_seconds("all_reduce", 1e3, 64, 5e-6, 50e9, algorithm="tree")
    assert tree < ring  # 12 * (5 us + 1 kB / 50 GB/s) = 60.24 us against 126 * 5 us + ...
    # large message: the ring wins; 1 GB on 64 ranks: ring 2 * 63 / 64 * 20 ms, tree 12 * 20 ms
    assert rl.collective_seconds("all_reduce", 1e9, 64, 0.0, 50e9, algorithm="tree") == pytest.approx(0.24)
    assert rl.collective_seconds("all_reduce", 1e9, 64, 0.0, 50e9) == pytest.approx(0.039375)


# ------------------------------------------------------------------ across nodes


def test_all_reduce_across_h100_nodes_is_bound_by_node_egress_not_one_port():
    # 2 nodes of 8 H100s, S = 8 GB, no latency:
    #   NVLink phase: 2 * 7 / 8 * 8 GB = 14 GB per GPU at 450 GB/s = 31.1 ms
    #   egress: 2 * 1 / 2 * 8 GB = 8 GB per node through 8 x 50 GB/s = 400 GB/s = 20 ms
    cost = rl.node_collective_cost("all_reduce", 8e9, 16, "8x H100")
    assert (cost.n_nodes, cost.gpus_per_node) == (2, 8)
    assert cost.intra_bytes_per_gpu == 14e9
    assert cost.intra_seconds == pytest.approx(14e9 / 450e9)
    assert cost.egress_bytes_per_node == 8e9
    assert cost.egress_seconds == pytest.approx(0.02)
    assert cost.seconds == pytest.approx(14e9 / 450e9)
    assert cost.binding == "NVLink inside the node"
    # the old flat model sent 2 * 15 / 16 * 8 GB through one 50 GB/s port: 300 ms, ten times more
    flat = rl.collective_seconds("all_reduce", 8e9, 16, 0.0, "ndr")
    assert flat == pytest.approx(0.3) and flat > 9 * cost.seconds
    # 8 nodes: egress 2 * 7 / 8 * 8 GB = 14 GB / 400 GB/s = 35 ms > NVLink's 31.1 ms: egress binds
    eight = rl.node_collective_cost("all_reduce", 8e9, 64, rl.node("8x H100"), alpha_seconds=5e-6)
    assert eight.egress_seconds == pytest.approx(0.035)
    assert eight.binding == "node egress"
    assert eight.steps == 28  # 2 * 7 inside + 2 * 7 across
    assert eight.seconds == pytest.approx(0.035 + 28 * 5e-6)
    assert eight.bytes_per_gpu == pytest.approx(2 * 63 / 64 * 8e9)  # what the NCCL tests count


def test_one_node_is_a_ring_on_nvlink_and_other_collectives_across_nodes():
    one = rl.node_collective_cost("all_gather", 8e9, 4, "8x A100")
    assert one.n_nodes == 1 and one.egress_bytes_per_node == 0.0
    assert one.seconds == pytest.approx(rl.collective_seconds("all_gather", 8e9, 4, 0.0, "nvlink3"))  # 6 GB / 300 GB/s
    # all-gather on 4 A100 nodes: NVLink 7 / 8 * 8 GB = 7 GB / 300 GB/s = 23.3 ms;
    # egress 3 / 4 * 8 GB = 6 GB through 8 x 25 GB/s = 200 GB/s = 30 ms
    ag = rl.node_collective_cost("all_gather", 8e9, 32, "8x A100")
    assert ag.egress_seconds == pytest.approx(0.03) and ag.binding == "node egress"
    # all-to-all on 2 nodes of 8: each GPU sends 8 GB / 16 to each of 15 others; 8 of them off node
    a2a = rl.node_collective_cost("all_to_all", 8e9, 16, "8x H100")
    assert a2a.egress_bytes_per_node == pytest.approx(8 * 8 / 16 * 8e9)  # 32 GB per node
    assert a2a.intra_bytes_per_gpu == pytest.approx(7 / 16 * 8e9)  # 3.5 GB per GPU
    assert a2a.egress_seconds == pytest.approx(0.08)  # 32 GB / 400 GB/s


def test_node_collectives_refuse_partial_nodes_and_unknown_collectives():
    with pytest.raises(ValueError, match="n_gpus must fill whole nodes of 8 GPUs .* got 12"):
        rl.node_collective_cost("all_reduce", 1e9, 12, "8x H100")
    with pytest.raises(ValueError, match="collective must be one of all_reduce, all_gather"):
        rl.node_collective_cost("point_to_point", 1e9, 16, "8x H100")
    with pytest.raises(TypeError, match="node must be a NodeSpec or a node name"):
        rl.node_collective_cost("all_reduce", 1e9, 16, 400e9)
    with pytest.raises(ValueError, match="algorithm must be 'ring' across nodes"):
        rl.data_parallel_step(7e9, 4096, 16, "H100", rl.node("8x H100"), algorithm="tree")


def test_data_parallel_step_across_nodes_uses_the_hierarchy():
    # 7e9 params, bf16: S = 14 GB; 64 H100s in 8 nodes: egress 2 * 7 / 8 * 14 GB / 400 GB/s = 61.25 ms
    v = rl.data_parallel_step(7e9, 8192, 64, "H100", rl.node("8x H100"))
    assert v.comms_seconds == pytest.approx(0.06125)
    # compute 6 * 7e9 * 8192 / 989.5e12 = 348 ms: compute-bound, where one 50 GB/s port said comms
    assert v.bound == "compute"
    assert rl.data_parallel_step(7e9, 8192, 64, "H100", "ndr").bound == "comms"
    assert "node egress binds" in v.link


def test_other_collectives_counted_by_hand():
    # all-gather and reduce-scatter: n - 1 steps of S / n; S = 8 MB on 4 ranks
    for name in ("all_gather", "reduce-scatter", "AllToAll"):
        assert rl.collective_steps(name, 4) == 3
        assert rl.collective_bytes_per_rank(name, 8e6, 4) == 6e6  # 3 / 4 * 8 MB
        assert rl.bus_bandwidth_factor(name, 4) == 0.75
    assert rl.collective_steps("p2p", 2) == 1
    assert rl.collective_bytes_per_rank("send/recv", 8e6, 2) == 8e6
    assert rl.bus_bandwidth_factor("point_to_point", 2) == 1.0
    assert rl.bus_bandwidth_factor("all_reduce", 8) == 1.75  # 2 * 7 / 8


def test_bus_bandwidth_of_a_latency_free_ring_is_the_link():
    # with alpha = 0 a ring moves exactly bytes_per_rank at the link speed, so bus bandwidth = link
    for name in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "point_to_point"):
        for n in (2, 3, 8):
            cost = rl.collective_cost(name, 1e8, n, 0.0, 450e9)
            assert cost.bus_bytes_per_s == pytest.approx(450e9), (name, n)
    # the algorithm bandwidth of an 8-rank all-reduce is lower: 450 / 1.75 = 257 GB/s
    assert rl.collective_cost("all_reduce", 1e8, 8, 0.0, 450e9).algorithm_bytes_per_s == pytest.approx(450e9 / 1.75)


def test_link_names_are_accepted_for_the_bandwidth():
    by_name = rl.collective_seconds("all_reduce", 1e9, 8, 0.0, "NVLink 4")
    assert by_name == rl.collective_seconds("all_reduce", 1e9, 8, 0.0, 450e9)
    assert by_name == pytest.approx(1.75e9 / 450e9)  # 2 * 7 / 8 * 1 GB at 450 GB/s


def test_algorithm_and_bus_bandwidth_as_the_nccl_tests_define_them():
    # 1 MB in 1 ms: algbw 1 GB/s; all-reduce on 4 ranks: busbw = 1 GB/s * 2 * 3 / 4 = 1.5 GB/s
    assert rl.algorithm_bandwidth(1e6, 1e-3) == pytest.approx(1e9)
    assert rl.bus_bandwidth("all_reduce", 1e6, 1e-3, 4) == pytest.approx(1.5e9)
    assert rl.bus_bandwidth("all_gather", 1e6, 1e-3, 4) == pytest.approx(0.75e9)


def test_latency_crossover_is_where_latency_equals_bandwidth_time():
    # ring all-reduce: n * alpha * B = 8 * 5 us * 450 GB/s = 18 MB
    s = rl.latency_crossover_bytes("all_reduce", 8, 5e-6, 450e9)
    assert s == pytest.approx(18e6)
    cost = rl.collective_cost("all_reduce", s, 8, 5e-6, 450e9)
    assert cost.latency_share == pytest.approx(0.5)
    assert cost.bus_bytes_per_s == pytest.approx(450e9 / 2)  # half the link, there
    # all-gather: (n - 1) alpha B / ((n - 1) / n) = n alpha B, the same 18 MB
    assert rl.latency_crossover_bytes("all_gather", 8, 5e-6, 450e9) == pytest.approx(18e6)
    # point to point: alpha * B = 5 us * 450 GB/s = 2.25 MB
    assert rl.latency_crossover_bytes("p2p", 2, 5e-6, 450e9) == pytest.approx(2.25e6)


def test_bad_input_names_the_parameter_and_unit():
    with pytest.raises(ValueError, match="n_ranks must be at least 2 ranks"):
        rl.collective_seconds("all_reduce", 1e6, 1, 1e-6, 1e9)
    with pytest.raises(ValueError, match="message_bytes must be a positive number of bytes, got 0"):
        rl.collective_seconds("all_reduce", 0, 4, 1e-6, 1e9)
    with pytest.raises(ValueError, match="alpha_seconds must be a non-negative number of seconds"):
        rl.collective_seconds("all_reduce", 1e6, 4, -1e-6, 1e9)
    with pytest.raises(ValueError, match="bytes_per_s must be a positive number of bytes per second"):
        rl.collective_seconds("all_reduce", 1e6, 4, 1e-6, 0)
    with pytest.raises(ValueError, match="collective must be one of all_reduce, .*got 'broadcast'"):
        rl.collective_steps("broadcast", 4)
    with pytest.raises(ValueError, match="algorithm must be one of ring, tree, got 'bcube'"):
        rl.collective_steps("all_reduce", 4, "bcube")
    with pytest.raises(ValueError, match="'tree' is modelled for all_reduce only"):
        rl.collective_steps("all_gather", 4, "tree")
    with pytest.raises(ValueError, match="alpha_seconds must be a positive number of seconds, got 0"):
        rl.latency_crossover_bytes("all_reduce", 4, 0, 1e9)
    with pytest.raises(ValueError, match="unknown link"):
        rl.collective_seconds("all_reduce", 1e6, 4, 1e-6, "token ring")


# ------------------------------------------------------------------ the communication roofline


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


# ------------------------------------------------------------------ fitting alpha and beta


def _synthetic(alpha, bytes_per_s, n_ranks, collective, sizes):
    return [rl.collective_seconds(collective, s, n_ranks, alpha, bytes_per_s) for s in sizes]


def test_fit_recovers_alpha_and_bandwidth_of_an_exact_series():
    sizes = [4**k for k in range(5, 13)]
    # 2 ranks, all-reduce: t = 2 * 50 us + S / 2 GB/s
    fit = rl.fit_alpha_beta(sizes, _synthetic(50e-6, 2e9, 2, "all_reduce", sizes), "all_reduce", 2)
    assert fit.alpha_seconds == pytest.approx(50e-6, rel=1e-9)
    assert fit.bytes_per_s == pytest.approx(2e9, rel=1e-9)
    assert fit.beta_seconds_per_byte == pytest.approx(0.5e-9)
    assert fit.max_relative_residual < 1e-9
    assert fit.crossover_bytes() == pytest.approx(2 * 50e-6 * 2e9)  # n alpha B = 200 kB
    # 4 ranks, all-gather: t = 3 alpha + 3/4 S / B
    fit4 = rl.fit_alpha_beta(sizes, _synthetic(20e-6, 5e9, 4, "all_gather", sizes), "all_gather", 4)
    assert fit4.alpha_seconds == pytest.approx(20e-6) and fit4.bytes_per_s == pytest.approx(5e9)


def test_fit_recovers_alpha_and_bandwidth_through_noise():
    rng = np.random.default_rng(0)
    sizes = [4**k for k in range(5, 13) for _ in range(3)]
    exact = np.array(_synthetic(50e-6, 2e9, 2, "all_reduce", sizes))
    noisy = exact * (1 + 0.03 * rng.standard_normal(len(sizes)))  # 3 % jitter
    fit = rl.fit_alpha_beta(sizes, noisy, "all_reduce", 2)
    assert fit.alpha_seconds == pytest.approx(50e-6, rel=0.1)
    assert fit.bytes_per_s == pytest.approx(2e9, rel=0.1)
    assert fit.predict_seconds(1e6) == pytest.approx(rl.collective_seconds("all_reduce", 1e6, 2, 50e-6, 2e9), rel=0.1)


def test_fit_refuses_data_the_model_does_not_fit():
    with pytest.raises(ValueError, match="do not grow with message size"):
        rl.fit_alpha_beta([1e3, 1e6], [1e-3, 1e-4])
    with pytest.raises(ValueError, match="fitted latency is negative"):
        rl.fit_alpha_beta([1e3, 1e6, 1e7], [1e-9, 1e-3, 1e-2 + 1e-3])
    with pytest.raises(ValueError, match="at least two different sizes"):
        rl.fit_alpha_beta([1e3, 1e3], [1e-3, 2e-3])
    with pytest.raises(ValueError, match="same length, got 2 and 3"):
        rl.fit_alpha_beta([1e3, 1e4], [1e-3, 2e-3, 3e-3])
    with pytest.raises(ValueError, match=r"seconds\[1\] must be a positive number of seconds"):
        rl.fit_alpha_beta([1e3, 1e4], [1e-3, 0])


# ------------------------------------------------------------------ measured live, gloo on 127.0.0.1


def test_import_roofline_lib_does_not_import_torch():
    code = "import sys, roofline_lib; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"


def test_measure_collectives_refuses_bad_input_before_starting_anything():
    with pytest.raises(ValueError, match="n_ranks must be between 2 and 8"):
        rl.measure_collectives(1)
    with pytest.raises(ValueError, match="multiples of 4 \\* n_ranks = 8 bytes"):
        rl.measure_collectives(2, message_bytes=[1001])
    with pytest.raises(ValueError, match="collectives must be among all_reduce, all_gather"):
        rl.measure_collectives(2, collectives=["all_to_all"])
    with pytest.raises(ValueError, match="backend must be 'auto', 'gloo' or 'nccl'"):
        rl.measure_collectives(2, backend="mpi")


def test_measure_collectives_refuses_to_leave_the_loopback_interface(monkeypatch):
    from roofline_lib import comms

    monkeypatch.setattr(comms, "_loopback_interface", lambda: None)
    with pytest.raises(RuntimeError, match="no loopback network interface"):
        rl.measure_collectives(2, message_bytes=[1024], backend="gloo")


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.add(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


def test_gloo_measurement_on_two_local_ranks_and_no_process_left_behind():
    before = _children(os.getpid()) if sys.platform == "linux" else set()
    m = rl.measure_collectives(
        2, message_bytes=[1024, 1 << 20], repeats=2, budget_s_per_repeat=0.002, backend="gloo", timeout_s=120
    )
    assert m.backend == "gloo" and m.device == "cpu" and m.n_ranks == 2
    sizes, seconds = m.series("all_reduce")
    assert sizes == (1024, 1 << 20)
    assert all(t > 0 and math.isfinite(t) for t in seconds)
    assert m.series("all-gather")[0] == (1024, 1 << 20)
    for t in m.timings:
        assert t.seconds == min(t.repeats) and len(t.repeats) == 2
        assert t.bus_bytes_per_s == pytest.approx(t.algorithm_bytes_per_s * rl.bus_bandwidth_factor(t.collective, 2))
    if sys.platform == "linux":
        assert _children(os.getpid()) <= before  # every rank was reaped
    with pytest.raises(ValueError, match="no timings of reduce_scatter"):
        m.series("reduce_scatter")


# ------------------------------------------------------------------ the widget


def test_collective_explorer_reads_the_library_and_refuses_bad_input():
    pytest.importorskip("ipywidgets")
    from roofline_lib import widgets

    ex = widgets.collective_explorer(link="NVLink 4", n_ranks=8, message_bytes=1e8, alpha_seconds=5e-6)
    # 14 x 5 us + 175 MB / 450 GB/s = 70 us + 388.9 us = 458.9 us
    assert ex.result == rl.collective_cost("all_reduce", 1e8, 8, 5e-6, "nvlink4")
    assert "459 us" in ex.readout.value
    ex.controls["link"].value = "ib-ndr"
    ex.controls["collective"].value = ("all_gather", "ring")
    assert ex.result == rl.collective_cost("all_gather", 1e8, 8, 5e-6, "ib-ndr")
    assert ex.update() < 1.0  # one redraw; meant to stay well under a second even on a busy machine
    with pytest.raises(ValueError, match="message_bytes must be between 100 and 1e\\+11 bytes"):
        widgets.collective_explorer(message_bytes=1e12)
    with pytest.raises(ValueError, match="unknown link"):
        widgets.collective_explorer(link="token ring")
    with pytest.raises(ValueError, match="n_ranks must be at least 2"):
        widgets.collective_explorer(n_ranks=1)


def test_a_bandwidth_typed_in_gb_per_s_is_refused_with_a_unit_hint():
    # 7 "bytes per second" for a link is a figure in GB/s or TB/s: 50 GB/s is 50e9
    for call in (
        lambda: rl.collective_seconds("all_reduce", 1e6, 4, 1e-6, 7),
        lambda: rl.network_ridge("H100", 7),
        lambda: rl.network_roof("H100", 400),
    ):
        with pytest.raises(ValueError, match=r"did you mean GB/s"):
            call()
    assert rl.collective_seconds("all_reduce", 1e6, 4, 0.0, 1e6) > 0  # 1 MB/s itself is accepted
