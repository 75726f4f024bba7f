"""The parallelism planner: each dimension's bytes and roof, memory per GPU, and its refusals."""

from __future__ import annotations

import math

import pytest

import roofline_lib as rl
from roofline_lib.workloads.parallel import data_parallel_bytes, pipeline_bubble_fraction, tensor_parallel_bytes

TINY = rl.TransformerConfig(d_model=512, d_ff=2048, n_layers=8, n_heads=8, vocab=32000, seq_len=1024, name="tiny")


def test_bubble_is_stages_minus_one_over_micro_batches():
    assert pipeline_bubble_fraction(4, 8) == 3 / 8  # (4 - 1) / 8
    assert pipeline_bubble_fraction(4, 8, 2) == 3 / 16  # interleaved: v = 2 halves it
    assert pipeline_bubble_fraction(1, 8) == 0.0


def test_data_parallel_bytes_by_hand():
    # N = 1e9 bf16 gradients on 8 GPUs: all-reduce 2 * 7/8 * 2e9 = 3.5e9 bytes
    assert data_parallel_bytes(1e9, 8, 0) == pytest.approx(3.5e9)
    assert data_parallel_bytes(1e9, 8, 2) == pytest.approx(3.5e9)  # ZeRO-1/2: the same bytes
    assert data_parallel_bytes(1e9, 8, 3) == pytest.approx(5.25e9)  # 3 * 7/8 * 2e9
    assert data_parallel_bytes(1e9, 1, 0) == 0.0


def test_tensor_parallel_bytes_by_hand():
    # 1024 tokens x 4096 x 2 bytes = 8,388,608 bytes; 4 all-reduces of 2 * 7/8 of it per layer
    assert tensor_parallel_bytes(1024, 4096, 8, 1) == pytest.approx(4 * 1.75 * 8_388_608)
    assert tensor_parallel_bytes(1024, 4096, 8, 2, collectives_per_layer=2) == pytest.approx(4 * 1.75 * 8_388_608)
    assert tensor_parallel_bytes(1024, 4096, 1, 1) == 0.0


def test_expert_params_of_mixtral():
    moe = rl.model_config("mixtral-8x7b")
    per_expert = 3 * moe.d_model * moe.d_ff * moe.n_layers  # SwiGLU: three d x d_ff matrices per expert per layer
    assert rl.expert_params(moe) == pytest.approx(8 * per_expert)
    assert rl.expert_params(TINY) == 0.0


def test_the_planners_dp_roof_is_data_parallel_bytes():
    c = rl.cluster("8x H100", 16)
    p = rl.plan(TINY, c, dp=16, zero=0, global_batch=32, seq_len=1024)
    dp = p.roof("dp")
    assert dp.bytes_per_gpu == pytest.approx(data_parallel_bytes(TINY.n_params(), 16, 0))
    assert dp.group == 16 and dp.gpus_per_node == 8
    # two nodes: the egress carries 2 (m - 1) / m * S = S per node over 8 NICs of 50 GB/s
    s = TINY.n_params() * 2
    assert dp.seconds == pytest.approx(max(s / 400e9, 2 * 7 / 8 * s / 450e9))
    z3 = rl.plan(TINY, c, dp=16, zero=3, global_batch=32, seq_len=1024).roof("dp")
    assert z3.bytes_per_gpu == pytest.approx(1.5 * dp.bytes_per_gpu)


def test_tp_roof_and_its_intensity_against_the_ridge():
    c = rl.cluster("8x H100", 8)
    p = rl.plan(TINY, c, dp=1, tp=8, global_batch=4, seq_len=1024)
    tp = p.roof("tp")
    # 4 micro-batches x 8 layers x 4 all-reduces of 1024 x 512 x 2 bytes, 2 * 7/8 of each
    assert tp.count == 4 * 8 * 4
    assert tp.bytes_per_gpu == pytest.approx(tensor_parallel_bytes(4 * 1024, 512, 8, 8))
    assert tp.link.startswith("NVLink 4")
    # the roof is longer than the compute exactly when the intensity is under the ridge
    assert (tp.seconds > p.compute_seconds) == (tp.intensity < tp.ridge)
    assert tp.critical_tokens_per_gpu in (0.0, math.inf)  # bytes grow with the tokens


def test_context_parallel_gathers_the_keys_and_values_of_the_whole_sequence():
    # plan() called TransformerConfig.kv_cache_width (a property) as a method: every cp > 1 raised
    # TypeError. Llama-3-8B, 16 H100s, dp 4 x tp 2 x cp 2, 8 sequences of 8,192 tokens.
    cfg = rl.model_config("llama-3-8b")
    p = rl.plan(cfg, rl.cluster("8x H100", 16), dp=4, tp=2, cp=2, global_batch=8, seq_len=8192)
    cp = p.roof("cp")
    # K and V of 8 KV heads of 128 per token: 2 x 8 x 128 = 2,048 elements, split over tp 2, bf16:
    # 8,192 x 2,048 x 2 bytes / 2 = 16.8 MB gathered per layer and micro-batch
    assert cfg.kv_cache_width == 2 * 8 * 128
    assert cp.message_bytes == 8192 * 2048 * 2 / 2
    assert cp.seconds > 0 and "cp" in p.roofs


def test_dp_critical_tokens_hide_the_gradients():
    c = rl.cluster("8x H100", 64)
    p = rl.plan(TINY, c, dp=64, global_batch=64, seq_len=1024)
    dp = p.roof("dp")
    # at the critical tokens per GPU the compute equals the gradient all-reduce's time
    per_token = p.compute_seconds / 1024
    assert dp.critical_tokens_per_gpu * per_token == pytest.approx(dp.seconds)


def test_tp_waits_on_the_critical_path_dp_overlaps_and_serial_is_the_sum():
    c = rl.cluster("8x H100", 16)
    p = rl.plan("llama-3-8b", c, dp=2, tp=8, global_batch=8, seq_len=4096)
    tp, dp = p.roof("tp").seconds, p.roof("dp").seconds
    # tp's all-reduces sit between dependent GEMMs: added to the compute; dp's overlap the backward
    assert p.exposed == {"tp": tp}
    assert p.critical_seconds == pytest.approx(p.compute_seconds + p.bubble_seconds + tp)
    assert p.step_seconds == max(p.critical_seconds, p.hbm_seconds, dp) == p.critical_seconds
    assert p.binding == "compute + tp"
    assert "tp on the critical path" in p.assumption and "dp overlapped" in p.assumption
    assert p.assumption in str(p)
    assert p.serial_seconds == pytest.approx(p.compute_seconds + p.bubble_seconds + tp + dp)
    assert 0 < p.mfu_no_overlap <= p.mfu <= 1
    # letting tp overlap too is the old, looser bound: the longest roof alone
    loose = rl.plan("llama-3-8b", c, dp=2, tp=8, global_batch=8, seq_len=4096, overlap=("tp", "dp"))
    assert loose.step_seconds == max(loose.roofs.values()) < p.step_seconds
    assert loose.binding == max(loose.roofs, key=loose.roofs.get) and loose.mfu > p.mfu
    assert "tp and dp overlapped" in loose.assumption


@pytest.mark.parametrize(
    "overlap, error, match",
    [("tp", TypeError, "overlap must be a tuple"), (("tp", "zz"), ValueError, r"overlap must name .*'zz'")],
)
def test_overlap_names_parallel_dimensions(overlap, error, match):
    with pytest.raises(error, match=match):
        rl.plan(TINY, rl.cluster("8x H100", 8), dp=8, global_batch=8, seq_len=128, overlap=overlap)


def test_memory_per_gpu_composes_zero_and_activations():
    cfg = rl.model_config("llama-3-8b")
    c = rl.cluster("8x H100", 8)
    p = rl.plan(cfg, c, dp=8, zero=1, global_batch=8, seq_len=4096, recompute="full")
    z = rl.zero_memory(cfg.n_params(), 8, 1)
    assert p.memory.state == pytest.approx(z.total)
    # full recompute: 2 s b h per layer, 32 layers
    assert p.memory.activations == pytest.approx(32 * 2 * 4096 * cfg.d_model)
    assert p.fits


def test_a_70b_model_without_sharding_does_not_fit_and_says_so_first():
    p = rl.plan("llama-3-70b", rl.cluster("8x H100", 8), dp=8, global_batch=8, seq_len=4096)
    assert not p.fits and not p.feasible  # 70.6e9 * 16 bytes = 1.1 TB per GPU
    assert str(p).startswith("DOES NOT FIT: ") and "the H100 SXM has 80 GiB" in str(p)
    # the training state alone, 16 bytes x 70.6e9 = 1129 GB = 1051 GiB, needs ceil(1051 / 80) = 14 GPUs
    assert "needs at least 14 such GPUs" in p.fit.reason
    assert p.fit.need_bytes == pytest.approx(p.memory.total)


def test_a_sequence_beyond_the_models_window_is_marked_infeasible():
    # llama-3-8b takes 8,192 positions; 16,384 fits in memory with tp 8 but not in the model
    p = rl.plan("llama-3-8b", rl.cluster("8x H100", 8), dp=1, tp=8, zero=0, global_batch=1, seq_len=16384)
    assert p.fits and not p.feasible
    assert str(p).startswith("DOES NOT FIT: a context of 16,384 tokens is beyond")
    assert "8,192 tokens" in p.fit.reason


def test_moe_layout_prices_the_all_to_all():
    moe = rl.model_config("mixtral-8x7b")
    p = rl.plan(moe, rl.cluster("8x H100", 16), dp=16, ep=8, zero=1, global_batch=16, seq_len=4096)
    ep = p.roof("ep")
    assert ep.collective == "all_to_all" and ep.count == 4 * moe.n_layers * 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(dp=3), r"dp x tp x pp x cp must equal the cluster's 16 GPUs, got 3 x 1 x 1 x 1 = 3 GPUs"),
        (dict(dp=4, tp=4, global_batch=6), r"global_batch must be a multiple of dp x micro_batch = 4 sequences"),
        (dict(dp=16, ep=2), r"ep must be 1 for a dense model"),
        (dict(dp=8, cp=2, seq_len=1023), r"cp must divide seq_len = 1023 tokens"),
        (dict(dp=1, pp=16), r"pp must be at most the model's 8 layers"),
        (dict(dp=2, tp=8, zero=5), r"zero must be a ZeRO stage"),
        (dict(dp=16, recompute="partial"), r"recompute must be one of none, selective, full"),
        (dict(dp=4, pp=4, virtual_stages=2, global_batch=8), r"virtual_stages = 2 needs"),
        (dict(dp=2, tp=8, allow_cross_node_tp="yes"), r"allow_cross_node_tp"),
    ],
)
def test_refusals_name_the_parameter_and_unit(kwargs, match):
    args = dict(global_batch=16, seq_len=1024) | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        rl.plan(TINY, rl.cluster("8x H100", 16), **args)


def test_tp_heads_and_cluster_refusals():
    odd = rl.TransformerConfig(d_model=384, d_ff=1536, n_layers=4, n_heads=6, vocab=1000, seq_len=128)
    with pytest.raises(ValueError, match="tp must divide the model's 6 attention heads, got tp = 4 GPUs"):
        rl.plan(odd, rl.cluster("8x H100", 8), dp=2, tp=4, global_batch=2, seq_len=128)
    with pytest.raises(ValueError, match="n_gpus must fill whole nodes of 8 GPUs"):
        rl.cluster("8x H100", 12)
    with pytest.raises(TypeError, match="cluster must be a Cluster"):
        rl.plan(TINY, "8x H100", dp=8, global_batch=8, seq_len=128)
    # tp x dp = 8 fill a node, so the two pipeline stages sit in different nodes: over the GPU's NIC
    p = rl.plan(TINY, rl.cluster("8x H100", 16), dp=1, tp=8, pp=2, global_batch=4, seq_len=1024)
    assert p.roof("pp").link.startswith("InfiniBand NDR")
    wide = rl.TransformerConfig(d_model=1024, d_ff=4096, n_layers=4, n_heads=16, vocab=1000, seq_len=128)
    with pytest.raises(ValueError, match="tp = 16 GPUs spans more than one node of 8 GPUs"):
        rl.plan(wide, rl.cluster("8x H100", 16), dp=1, tp=16, global_batch=1, seq_len=128)
    crossed = rl.plan(
        wide, rl.cluster("8x H100", 16), dp=1, tp=16, global_batch=1, seq_len=128, allow_cross_node_tp=True
    )
    assert "2 nodes" in crossed.roof("tp").link  # said so: then priced across the network


def test_the_planner_and_chapter_8s_step_ask_the_one_gradient_overlap_rule():
    # chapter 9's Problem 2: Llama-3-8B data-parallel on 64 H100s, 4096 tokens per GPU. The
    # planner's threshold and chapter 8's (data_parallel_step, then gradient_hiding_tokens) are
    # one number: only the backward pass, 2/3 of the 6N compute, hides the gradients.
    cfg = rl.model_config("llama-3-8b")
    p = rl.plan(cfg, rl.cluster("8x H100", 64), dp=64, zero=0, global_batch=64, seq_len=4096)
    step = rl.data_parallel_step(cfg.n_params(), 4096, 64, "H100", rl.node("8x H100"))
    assert p.roof("dp").seconds == pytest.approx(step.comms_seconds)
    assert p.model_compute_seconds == pytest.approx(step.compute_seconds)  # 6N T at the peak
    by_chapter_8 = rl.gradient_hiding_tokens(4096, step.comms_seconds, step.compute_seconds)
    assert p.gradient_hiding_tokens_per_gpu == pytest.approx(by_chapter_8)
    # selective recompute's second forward of the scores is compute, not model FLOPs: the planner's
    # compute is longer than 6N T, and the rule's window is two thirds of the 6N T alone
    assert p.recompute == "selective" and p.compute_seconds > p.model_compute_seconds
    none = rl.plan(cfg, rl.cluster("8x H100", 64), dp=64, zero=0, global_batch=64, seq_len=4096, recompute="none")
    assert none.compute_seconds == pytest.approx(none.model_compute_seconds)
    # the roof's critical tokens ask only that it be no longer than the whole compute, a lower bar
    assert p.gradient_hiding_tokens_per_gpu > p.roof("dp").critical_tokens_per_gpu
