"""The alpha-beta collective model: steps, bytes per rank, the NCCL tests' bandwidths, and the fit."""

from __future__ import annotations

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


# ------------------------------------------------------------------ the package stays light; the widget reads the model


def test_import_roofline_lib_does_not_import_torch():
    code = "import sys, roofline_lib; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"


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
