"""roofline_lib.scenarios: the shared worked examples, and the chapters that quote them.

The first half checks the scenarios themselves against hand-countable arithmetic; the second
half reads the chapters' text and asserts that they use the scenarios rather than re-typing
their inputs, and that the static explorers' ``data-*`` defaults agree with them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import roofline_lib as rl
from roofline_lib import scenarios as sc

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "notebooks"


# --- the scenarios ---------------------------------------------------------------------------


def test_llama2_7b_is_the_shipped_config_and_one_count():
    assert sc.LLAMA2_7B == rl.LLAMA2_7B == rl.model_config("llama-2-7b")
    assert sc.LLAMA2_7B.n_params() == 6_738_415_616  # the published count, which the library matches


def test_layernorm_is_the_training_step_shape():
    op = sc.LAYERNORM.op()
    assert (sc.LAYERNORM.rows, sc.LAYERNORM.d) == (8 * 2048, 4096)
    assert op.bytes_moved == 2 * (2 * 8 * 2048 * 4096 + 2 * 4096)  # read x, write y, gamma, beta; 2 bytes each
    assert op == rl.layernorm(8 * 2048, 4096)


def test_layernorm_times_follow_the_roof():
    a100 = rl.gpu("A100")
    op = sc.LAYERNORM.op()
    floor = sc.LAYERNORM.floor_seconds("A100")
    assert floor == pytest.approx(op.bytes_moved / a100.hbm_bytes_per_s)  # memory-bound: bytes / bandwidth
    assert sc.LAYERNORM.plausible_seconds("A100") == pytest.approx(floor / 0.85)
    # the widely repeated 90 microseconds is faster than the floor: impossible
    assert sc.LAYERNORM.claimed_seconds < floor
    with pytest.raises(rl.ImplausibleMeasurement):
        rl.kernel_verdict(op.flops, op.bytes_moved, sc.LAYERNORM.claimed_seconds, "A100")


def test_layernorm_example_refuses_bad_inputs():
    with pytest.raises(ValueError, match="good_bandwidth_fraction"):
        sc.LayerNormExample(rows=4, d=8, good_bandwidth_fraction=1.5)
    with pytest.raises(ValueError, match="rows"):
        sc.LayerNormExample(rows=0, d=8)
    with pytest.raises(ValueError, match="claimed_seconds"):
        sc.LayerNormExample(rows=4, d=8, claimed_seconds=-1.0)


def test_ffn_gemm_is_llama_shaped_and_composes_ops_gemm():
    assert sc.FFN_GEMM.op() == rl.gemm(16384, 11008, 4096)
    assert sc.FFN_GEMM.op(tokens=1) == rl.gemm(1, 11008, 4096)  # the GEMV of one decode token
    assert sc.FFN_GEMM.op(bytes_per_elem=4).bytes_moved == 2 * sc.FFN_GEMM.op().bytes_moved


def test_training_attention_like_for_like():
    # fused and unfused compute the same FLOPs when both count the full square
    full_unfused = sc.training_attention(causal=False, fused=False)
    full_fused = sc.training_attention(causal=False, fused=True)
    assert full_unfused.flops == full_fused.flops
    assert full_unfused.bytes_moved > full_fused.bytes_moved  # the scores' round trip to HBM
    # 2 matmuls x 2 FLOP x (8 x 32 heads) x 2048 x 2048 x 128 = 549,755,813,888
    assert full_fused.flops == 2 * 2 * 8 * 32 * 2048 * 2048 * 128


def test_training_runs_give_mfu_through_the_library():
    run = sc.STACK_100M_RUN
    assert run.mfu("6N") == pytest.approx(rl.mfu(rl.STACK_100M.n_params(), 220e3, 1, "A100"))
    assert run.mfu("three-term") > run.mfu("6N")  # the scores add FLOPs, so the same run scores higher
    ex = sc.MFU_EXAMPLE
    assert ex.mfu() == pytest.approx(6 * 6_738_415_616 * 1.5e6 / (256 * rl.gpu("A100").peak_flops_per_s("bf16")))


def test_training_run_refuses_bad_inputs():
    with pytest.raises(ValueError, match="tokens_per_s"):
        sc.TrainingRun(model=rl.STACK_100M, tokens_per_s=0, n_gpus=1, gpu="A100")
    with pytest.raises(ValueError, match="n_gpus"):
        sc.TrainingRun(model=rl.STACK_100M, tokens_per_s=1.0, n_gpus=0, gpu="A100")
