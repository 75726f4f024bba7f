"""Model-level FLOP counts and conventions, on models small enough to add up by hand."""
import dataclasses

import pytest

import roofline_lib as rl

# a toy model: d = 2, d_ff = 8, one layer, s = 4, V = 10
TOY = dict(d_model=2, d_ff=8, n_layers=1, seq_len=4, vocab=10)


def test_forward_flops_per_token_by_hand():
    f = rl.transformer_flops_per_token(**TOY, gated=False, causal=False)
    assert f.qkvo_total == 32  # 4 * 2 * 2**2
    assert f.scores_total == 32  # 4 * s * d = 4 * 4 * 2
    assert f.ffn_total == 64  # 4 * d * d_ff = 4 * 2 * 8
    assert f.unembed == 40  # 2 * d * V = 2 * 2 * 10
    assert f.fwd_per_token == 168  # 32 + 32 + 64 + 40


def test_causal_halves_the_scores_and_gating_adds_a_matrix():
    f = rl.transformer_flops_per_token(**TOY)  # gated=False, causal=True by default
    assert f.scores_total == 16  # 2 * s * d
    assert f.fwd_per_token == 152  # 32 + 16 + 64 + 40
    g = rl.transformer_flops_per_token(**TOY, gated=True)
    assert g.ffn_total == 96  # 6 * d * d_ff
    assert g.fwd_per_token == 184  # 32 + 16 + 96 + 40


def test_layers_multiply_the_body_not_the_unembedding():
    f = rl.transformer_flops_per_token(**{**TOY, "n_layers": 3})
    assert f.fwd_per_token == 376  # 3 * (32 + 16 + 64) + 40
    assert f.fwd_bwd_per_token == 1128  # 3 * 376


def test_result_reads_like_a_mapping():
    f = rl.transformer_flops_per_token(**TOY)
    assert f["ffn_total"] == f.ffn_total == 64
    assert set(f.keys()) == {"fwd_per_token", "ffn_total", "qkvo_total", "scores_total", "unembed"}
    assert dict(f.items())["unembed"] == 40
    assert f.share("ffn_total") == pytest.approx(64 / 152)
    with pytest.raises(KeyError, match="known keys"):
        f["attention"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.unembed = 0


def test_llama2_7b_forward_is_dominated_by_the_ffn():
    f = rl.LLAMA2_7B.flops_per_token()
    assert f.ffn_total == 32 * 6 * 4096 * 11008  # 8.66 GFLOP
    assert f.qkvo_total == 32 * 8 * 4096**2  # 4.29 GFLOP
    assert f.scores_total == 32 * 2 * 4096 * 4096  # 1.07 GFLOP at s = 4096, causal
    assert f.ffn_total > f.qkvo_total > f.scores_total
    # 3x forward lands within 10 % of 6N with the real parameter count
    assert f.fwd_bwd_per_token / (6 * rl.LLAMA2_7B.n_params()) == pytest.approx(1.06, abs=0.01)


def test_training_conventions_by_hand():
    assert rl.training_flops_per_token(100, 2, 3, 4) == 600  # 6 * 100
    # 600 + 6 * L * s * d = 600 + 6 * 2 * 4 * 3 = 744
    assert rl.training_flops_per_token(100, 2, 3, 4, convention="three-term") == 744
    assert rl.inference_flops_per_token(100) == 200  # 2 * 100


def test_stack_100m_three_term_adds_about_31_percent():
    cfg = rl.STACK_100M
    assert cfg.n_params() == 101_349_888  # the source's 101.4M, d_ff = 1152
    six_n = cfg.training_flops_per_token("6N")
    three = cfg.training_flops_per_token("three-term")
    assert six_n == 608_099_328  # 6 * 101,349,888, "608 MFLOP/token"
    assert three - six_n == 188_743_680  # 6 * 30 * 2048 * 512
    assert three == 796_843_008  # "797 MFLOP/token"
    assert (three - six_n) / six_n == pytest.approx(0.31, abs=0.005)


def test_three_term_is_three_forwards_when_the_embedding_is_tied():
    # 3 * (L (8 d^2 + 2 s d + 6 d d_ff) + 2 d V) = 6 N_body + 6 L s d + 6 d V, and with a tied
    # embedding N (norms aside) is N_body + d V: the two forms are the same number
    cfg = rl.STACK_100M
    n = cfg.n_params(include_norms=False)
    assert rl.training_flops_per_token(n, cfg.n_layers, cfg.d_model, cfg.seq_len, "three-term") == (
        cfg.flops_per_token().fwd_bwd_per_token
    )
    # untied, N also holds the input table, which costs no FLOPs: 6 d V too many
    cfg = rl.LLAMA2_7B
    n = cfg.n_params(include_norms=False)
    three = rl.training_flops_per_token(n, cfg.n_layers, cfg.d_model, cfg.seq_len, "three-term")
    assert three - cfg.flops_per_token().fwd_bwd_per_token == 6 * 4096 * 32000


def test_unknown_convention_lists_the_known_ones():
    with pytest.raises(ValueError, match="'6N', 'three-term'"):
        rl.training_flops_per_token(100, 2, 3, 4, convention="6ND")


def test_params_per_layer_and_kappa():
    assert rl.params_per_layer(2, 8, gated=False) == 48  # 4 * 2^2 + 2 * 2 * 8
    assert rl.params_per_layer(2, 8, gated=True) == 64  # 16 + 3 * 2 * 8
    assert rl.kappa(64, 256, gated=False) == 12  # 4 + 2 * 4
    assert rl.kappa(96, 256, gated=True) == 12  # SwiGLU at d_ff = 8d/3: 4 + 3 * 8/3
    assert rl.kappa(4096, 11008, gated=True) == pytest.approx(12.0625)  # 4 + 3 * 11008/4096
    assert rl.STACK_100M.kappa == 10.75  # 4 + 3 * 1152/512


def test_score_to_body_ratio():
    assert rl.score_to_body_ratio(2048, 512, 11) == pytest.approx(0.364, abs=1e-3)  # 2048 / 5632
    assert rl.score_to_body_ratio(2048, 4096, 11) == pytest.approx(0.0455, abs=1e-4)
    assert rl.STACK_100M.score_to_body_ratio() == pytest.approx(2048 / (10.75 * 512))  # 0.372


def test_parameter_counts_of_the_presets():
    assert rl.LLAMA2_7B.n_params() == 6_738_415_616  # the published Llama-2-7B count
    # without the two 32000 x 4096 vocabulary matrices
    assert rl.LLAMA2_7B.n_params(include_embedding=False) == 6_738_415_616 - 2 * 32000 * 4096
    # Stack-100M: 30 * (4 * 512^2 + 3 * 512 * 1152) + 32768 * 512 + 61 * 512
    assert rl.STACK_100M.n_params() == 30 * 2_818_048 + 16_777_216 + 31_232
    assert rl.STACK_100M.head_dim == 64  # 512 / 8


def test_bad_inputs_name_the_parameter_and_unit():
    with pytest.raises(ValueError, match="d_model must be a positive whole number of features"):
        rl.transformer_flops_per_token(0, 8, 1, 4, 10)
    with pytest.raises(TypeError, match="seq_len must be a whole number of tokens"):
        rl.transformer_flops_per_token(2, 8, 1, 4.5, 10)
    with pytest.raises(TypeError, match="causal must be True or False"):
        rl.transformer_flops_per_token(2, 8, 1, 4, 10, causal="yes")
    with pytest.raises(ValueError, match="n_params must be a positive whole number of parameters"):
        rl.inference_flops_per_token(0)
    with pytest.raises(ValueError, match="n_layers"):
        rl.training_flops_per_token(100, 0, 3, 4)
    with pytest.raises(ValueError, match="kappa"):
        rl.score_to_body_ratio(2048, 512, 0)
    with pytest.raises(TypeError, match="gated must be True or False"):
        rl.kappa(64, 256, gated=None)


def test_config_validates_itself():
    with pytest.raises(ValueError, match="n_heads must divide d_model"):
        dataclasses.replace(rl.STACK_100M, n_heads=7)
    with pytest.raises(ValueError, match="vocab"):
        dataclasses.replace(rl.STACK_100M, vocab=0)
    with pytest.raises(TypeError, match="tied_embeddings must be True or False"):
        dataclasses.replace(rl.STACK_100M, tied_embeddings="yes")
