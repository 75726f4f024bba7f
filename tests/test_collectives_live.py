"""All-reduce and all-gather measured live on two local gloo ranks over 127.0.0.1."""

from __future__ import annotations

import math
import os
import sys

import pytest
from test_local_ranks import _children  # the process-tree reader the launcher's tests use

import roofline_lib as rl
from roofline_lib import local_ranks
from roofline_lib.evidence.collectives_live import measure_collectives


def test_measure_collectives_refuses_bad_input_before_starting_anything():
    with pytest.raises(ValueError, match="n_ranks must be between 2 and 8"):
        measure_collectives(1)
    with pytest.raises(ValueError, match="multiples of 4 \\* n_ranks = 8 bytes"):
        measure_collectives(2, message_bytes=[1001])
    with pytest.raises(ValueError, match="collectives must be among all_reduce, all_gather"):
        measure_collectives(2, collectives=["all_to_all"])
    with pytest.raises(ValueError, match="backend must be 'auto', 'gloo' or 'nccl'"):
        measure_collectives(2, backend="mpi")


def test_measure_collectives_refuses_to_leave_the_loopback_interface(monkeypatch):
    monkeypatch.setattr(local_ranks, "_loopback_interface", lambda: None)
    with pytest.raises(RuntimeError, match="no loopback network interface"):
        measure_collectives(2, message_bytes=[1024], backend="gloo")


def test_gloo_measurement_on_two_local_ranks_and_no_process_left_behind():
    before = _children(os.getpid()) if sys.platform == "linux" else set()
    m = measure_collectives(
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


def test_nccl_without_a_gpu_per_rank_is_refused_before_any_rank_starts():
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() >= 2:
        pytest.skip("this machine can run NCCL on 2 ranks")
    with pytest.raises(
        ValueError, match=r"backend 'nccl' needs a torch built with NCCL and a GPU per rank: n_ranks = 2"
    ):
        measure_collectives(2, backend="nccl")
