"""Training memory: bytes per parameter, ZeRO stages and activation memory, counted by hand."""

from __future__ import annotations

import pytest

import roofline_lib as rl
from roofline_lib.workloads.train_memory import activation_bytes_per_layer, state_bytes_per_param, zero_memory


def test_mixed_precision_adam_is_sixteen_bytes_per_parameter():
    per = state_bytes_per_param("adam", "mixed")
    # bf16 weights 2 + bf16 gradients 2 + fp32 master 4 + momentum 4 + variance 4 = 16
    assert (per.weights, per.gradients, per.optimizer, per.total) == (2, 2, 12, 16)


@pytest.mark.parametrize(
    "optimizer, precision, total",
    [
        ("sgd_momentum", "mixed", 12),  # 2 + 2 + (4 master + 4 momentum)
        ("sgd", "mixed", 8),  # 2 + 2 + 4 master
        ("adam", "fp32", 16),  # 4 + 4 + (4 + 4): the weights are their own master copy
        ("adam", "bf16", 8),  # 2 + 2 + (2 + 2), no master copy
        ("SGD", " FP32 ", 8),  # 4 + 4, names are read case-insensitively
    ],
)
def test_other_recipes(optimizer, precision, total):
    assert state_bytes_per_param(optimizer, precision).total == total


def test_zero_papers_own_example():
    # Rajbhandari et al. (2020), Figure 1: 7.5B parameters, mixed-precision Adam (K = 12), 64 GPUs
    stages = [zero_memory(7.5e9, 64, s).total / 1e9 for s in range(4)]
    assert stages[0] == pytest.approx(120.0)  # (2 + 2 + 12) * 7.5 = 120 GB
    assert stages[1] == pytest.approx(31.40625)  # 2*7.5 + 2*7.5 + 12*7.5/64 = 15 + 15 + 1.40625: "31.4 GB"
    assert stages[2] == pytest.approx(16.640625)  # 15 + (2 + 12) * 7.5 / 64 = 15 + 1.640625: "16.6 GB"
    assert stages[3] == pytest.approx(1.875)  # 16 * 7.5 / 64 = 1.875: the figure's "1.9 GB"


def test_zero_shards_one_more_part_per_stage():
    n, dp = 1000.0, 4
    z = [zero_memory(n, dp, s) for s in range(4)]
    assert (z[0].weights, z[0].gradients, z[0].optimizer) == (2000, 2000, 12000)
    assert (z[1].weights, z[1].gradients, z[1].optimizer) == (2000, 2000, 3000)  # 12000 / 4
    assert (z[2].weights, z[2].gradients, z[2].optimizer) == (2000, 500, 3000)
    assert (z[3].weights, z[3].gradients, z[3].optimizer) == (500, 500, 3000)
    assert zero_memory(n, 1, 3).total == 16000  # one GPU: nothing to shard over


def test_training_state_of_a_shipped_model_is_its_parameters_times_sixteen():
    cfg = rl.model_config("llama-3-8b")
    assert rl.training_state_bytes(cfg) == pytest.approx(cfg.n_params() * 16)
    moe = rl.model_config("mixtral-8x7b")
    assert rl.training_state_bytes(moe) == pytest.approx(moe.n_params() * 16)  # every expert, not the active ones


def test_activation_memory_follows_korthikanti():
    s, b, h, a = 2048, 1, 4096, 32
    sbh = s * b * h
    # no parallelism: s b h (34 + 5 a s / h) = sbh * (34 + 5 * 32 * 2048 / 4096) = sbh * (34 + 80)
    assert activation_bytes_per_layer(s, b, h, a) == sbh * 114
    # tensor parallel t = 8: sbh (10 + 24 / 8 + 80 / 8) = sbh * 23
    assert activation_bytes_per_layer(s, b, h, a, tp=8) == pytest.approx(sbh * 23)
    # and sequence parallel: sbh / 8 * 114
    assert activation_bytes_per_layer(s, b, h, a, tp=8, sequence_parallel=True) == pytest.approx(sbh * 114 / 8)
    # selective recompute drops the scores: sbh * 34, and sbh * (10 + 3) with TP alone
    assert activation_bytes_per_layer(s, b, h, a, recompute="selective") == sbh * 34
    assert activation_bytes_per_layer(s, b, h, a, tp=8, recompute="selective") == pytest.approx(sbh * 13)
    # full recompute keeps the layer's input only: 2 s b h bytes
    assert activation_bytes_per_layer(s, b, h, a, recompute="full") == 2 * sbh


def test_refusals_name_the_parameter():
    with pytest.raises(ValueError, match="optimizer must be one of adam"):
        state_bytes_per_param("lion")
    with pytest.raises(ValueError, match="zero must be a ZeRO stage"):
        zero_memory(1e9, 8, 4)
    with pytest.raises(ValueError, match="dp must be"):
        zero_memory(1e9, 0, 1)
    with pytest.raises(ValueError, match="recompute must be one of none, selective, full"):
        activation_bytes_per_layer(128, 1, 64, 4, recompute="some")
    with pytest.raises(TypeError, match="sequence_parallel must be True or False"):
        activation_bytes_per_layer(128, 1, 64, 4, sequence_parallel=1)
    with pytest.raises(TypeError, match="model must be a TransformerConfig"):
        rl.training_state_bytes("llama-3-8b")
