"""A collective across whole nodes: the NVLink phase, the node's egress, and which of them binds."""

from __future__ import annotations

import pytest

import roofline_lib as rl


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
