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
    assert rl.training_flops_per_token(1000, 2, 3, 4) == 6000  # 6 * 1000
    # 6000 + 6 * L * s * d = 6000 + 6 * 2 * 4 * 3 = 6144
    assert rl.training_flops_per_token(1000, 2, 3, 4, convention="three-term") == 6144
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
    with pytest.raises(ValueError, match="'6N', 'three-term', 'full-square'"):
        rl.training_flops_per_token(1000, 2, 3, 4, convention="6ND")


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
        rl.training_flops_per_token(1000, 0, 3, 4)
    with pytest.raises(ValueError, match="kappa"):
        rl.score_to_body_ratio(2048, 512, 0)
    with pytest.raises(TypeError, match="gated must be True or False"):
        rl.kappa(64, 256, gated=None)


def test_config_validates_itself():
    with pytest.raises(ValueError, match="n_heads must divide d_model"):
        dataclasses.replace(rl.STACK_100M, n_heads=7, head_dim=None, n_kv_heads=None)
    with pytest.raises(ValueError, match="vocab"):
        dataclasses.replace(rl.STACK_100M, vocab=0)
    with pytest.raises(TypeError, match="tied_embeddings must be True or False"):
        dataclasses.replace(rl.STACK_100M, tied_embeddings="yes")
    with pytest.raises(ValueError, match="n_kv_heads must divide n_heads"):
        dataclasses.replace(rl.STACK_100M, n_kv_heads=3)
    with pytest.raises(ValueError, match="experts_per_token must be at most n_experts"):
        dataclasses.replace(rl.STACK_100M, n_experts=2, experts_per_token=3)
    with pytest.raises(ValueError, match="norm must be one of"):
        dataclasses.replace(rl.STACK_100M, norm="batchnorm")
    with pytest.raises(TypeError, match="bias must be True or False"):
        dataclasses.replace(rl.STACK_100M, bias=1)


# --- today's decoders: GQA, head size, biases, positions, experts ---------------------------

# a toy with room to tell heads apart: d = 4, 2 query heads of 3, one KV head, d_ff = 8, V = 10, s = 6
GQA = rl.TransformerConfig(
    d_model=4, d_ff=8, n_layers=1, n_heads=2, n_kv_heads=1, head_dim=3, vocab=10, seq_len=6, gated=False
)


def test_gqa_and_head_size_set_the_projection_count():
    # Q 4x6, K 4x3, V 4x3, O 6x4 = 24 + 12 + 12 + 24 = 72 weights; FFN 2 * 4 * 8 = 64
    assert GQA.attention_dim == 6 and GQA.kv_dim == 3
    assert GQA.params_per_layer() == 72 + 64
    f = GQA.flops_per_token(causal=False)
    assert f.qkvo_total == 144  # 2 FLOP per weight: 2 * 72
    assert f.scores_total == 144  # 4 * heads * head_dim * s = 4 * 2 * 3 * 6
    assert f.ffn_total == 128 and f.unembed == 80  # 2 * 64, 2 * 4 * 10
    # the same model with multi-head attention (2 KV heads) has K and V twice as wide: + 24 weights
    mha = dataclasses.replace(GQA, n_kv_heads=2)
    assert mha.params_per_layer() - GQA.params_per_layer() == 24


def test_llama_3_8b_projections_under_gqa():
    cfg = rl.model_config("llama-3-8b")
    # Q and O 4096 x 4096, K and V 4096 x 1024 (8 KV heads of 128): 2.5 d^2, not 4 d^2
    assert cfg.flops_per_token().qkvo_total == 32 * 2 * (2 * 4096**2 + 2 * 4096 * 1024)
    assert cfg.params_per_layer() == 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336


def test_biases_norms_and_learned_positions_count_for_gpt2():
    cfg = rl.model_config("gpt2-small")
    assert (cfg.norm, cfg.bias, cfg.gated, cfg.tied_embeddings, cfg.learned_positions) == (
        "layernorm",
        True,
        False,
        True,
        1024,
    )
    parts = cfg.params_breakdown()
    # per block: QKV 768 x 2304 + 2304, O 768^2 + 768, FFN 2 * 768 * 3072 + 3072 + 768
    assert parts["attention"] == 12 * (768 * 2304 + 2304 + 768 * 768 + 768)
    assert parts["ffn"] == 12 * (2 * 768 * 3072 + 3072 + 768)
    assert parts["norms"] == 25 * 2 * 768  # 2 LayerNorms per block + 1 final, gain and bias each
    assert parts["positions"] == 1024 * 768 and parts["unembedding"] == 0  # tied
    assert cfg.n_params() == 124_439_808  # the OpenAI checkpoint's tensors, summed by hand above


def test_mixture_of_experts_total_and_active():
    # 4 experts, 2 per token, 1 shared, plain FFN d = 2 -> 4 -> 2, one layer, V = 10, tied
    moe = rl.TransformerConfig(
        d_model=2,
        d_ff=4,
        n_layers=1,
        n_heads=1,
        vocab=10,
        seq_len=4,
        gated=False,
        tied_embeddings=True,
        n_experts=4,
        experts_per_token=2,
        n_shared_experts=1,
    )
    expert = 2 * 2 * 4  # up 2x4 + down 4x2 = 16 weights
    router = 2 * 4  # d x n_experts
    assert moe.params_breakdown()["ffn"] == (4 + 1) * expert + router  # 88
    assert moe.params_breakdown(active=True)["ffn"] == (2 + 1) * expert + router  # 56
    assert moe.n_params() - moe.active_params() == 2 * expert  # two idle experts
    assert moe.flops_per_token().ffn_total == 2 * 56  # 2 FLOP per active weight
    assert moe.is_moe and not rl.LLAMA2_7B.is_moe


def test_mixtral_active_is_a_quarter_of_its_experts():
    cfg = rl.model_config("mixtral-8x7b")
    expert = 3 * 4096 * 14336
    assert cfg.n_params() - cfg.active_params() == 32 * 6 * expert  # 6 of 8 experts idle
    f = cfg.flops_per_token()
    assert f.ffn_total == 32 * 2 * (2 * expert + 4096 * 8)  # two experts and the router


def test_sliding_window_caps_the_keys_a_query_sees():
    cfg = rl.model_config("mistral-7b", seq_len=8192)  # window 4096
    assert cfg.keys_seen(causal=False) == 4096
    assert cfg.keys_seen() == 4096 - 4096**2 / (2 * 8192)  # 3072: a triangle, then 4096 each
    assert cfg.keys_seen(seq_len=2048) == 1024  # shorter than the window: s / 2


# --- published parameter counts -------------------------------------------------------------


@pytest.mark.parametrize("name", rl.shipped_models())
def test_shipped_models_match_their_published_size(name):
    """Each shipped config against the figure its authors published (source in published.json)."""
    cfg = rl.model_config(name)
    pub = rl.published_params(name)
    assert pub["source"]
    # a rounded figure ("124M") is met within half its last digit, an exact one within 0.1 %
    tolerance = max(1e-3 * pub["total"], pub.get("rounded_to", 0) / 2)
    assert abs(cfg.n_params() - pub["total"]) <= tolerance, (cfg.n_params(), pub)
    if "active" in pub:
        tolerance = max(1e-3 * pub["active"], pub.get("active_rounded_to", 0) / 2)
        assert abs(cfg.active_params() - pub["active"]) <= tolerance, (cfg.active_params(), pub)


def test_the_eight_models_ship():
    assert set(rl.shipped_models()) == {
        "gpt2-small",
        "llama-2-7b",
        "llama-2-70b",
        "llama-3-8b",
        "llama-3-70b",
        "mistral-7b",
        "mixtral-8x7b",
        "qwen2-7b",
    }
    assert rl.model_config("Llama-2-7B") == rl.LLAMA2_7B  # the preset is the shipped config
    assert rl.model_config("llama-3-8b").name == "Llama-3-8B"
    with pytest.raises(ValueError, match="unknown model 'llama-4'; shipped models: gpt2-small"):
        rl.model_config("llama-4")


# --- reading a Hugging Face config.json ----------------------------------------------------

LLAMA_TOY = {
    "model_type": "llama",
    "hidden_size": 8,
    "intermediate_size": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "vocab_size": 10,
    "max_position_embeddings": 32,
    "rms_norm_eps": 1e-5,
    "torch_dtype": "bfloat16",
}


def test_from_hf_config_reads_a_dict_and_a_path(tmp_path):
    cfg = rl.TransformerConfig.from_hf_config(LLAMA_TOY)
    assert (cfg.d_model, cfg.d_ff, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim) == (8, 16, 2, 2, 1, 4)
    assert cfg.gated and not cfg.tied_embeddings
    # the context window is kept, but it is not the training length: seq_len is left to the caller
    assert cfg.context_window == 32 and cfg.seq_len is None
    path = tmp_path / "config.json"
    path.write_text(__import__("json").dumps(LLAMA_TOY))
    assert rl.TransformerConfig.from_hf_config(path, seq_len=16) == dataclasses.replace(cfg, seq_len=16)
    assert rl.TransformerConfig.from_hf_config(str(path)) == cfg


def test_from_hf_config_names_what_it_cannot_map(tmp_path):
    with pytest.raises(ValueError, match="cannot map these llama config fields to a count: q_lora_rank"):
        rl.TransformerConfig.from_hf_config({**LLAMA_TOY, "q_lora_rank": 64})
    # told to, it skips a key
    rl.TransformerConfig.from_hf_config({**LLAMA_TOY, "q_lora_rank": 64}, ignore=["q_lora_rank"])
    with pytest.raises(ValueError, match="model_type 't5' is not one this reader maps"):
        rl.TransformerConfig.from_hf_config({**LLAMA_TOY, "model_type": "t5"})
    with pytest.raises(ValueError, match="lacks intermediate_size"):
        rl.TransformerConfig.from_hf_config({k: v for k, v in LLAMA_TOY.items() if k != "intermediate_size"})
    with pytest.raises(ValueError, match="attention_bias=True with mlp_bias=False"):
        rl.TransformerConfig.from_hf_config({**LLAMA_TOY, "attention_bias": True})
    with pytest.raises(FileNotFoundError, match="nothing is downloaded"):
        rl.TransformerConfig.from_hf_config(tmp_path / "missing.json")
    with pytest.raises(TypeError, match="config must be a dict, the path of a config.json file or a transformers"):
        rl.TransformerConfig.from_hf_config(42)


GEMMA_7B = {
    "model_type": "gemma",
    "hidden_size": 3072,
    "intermediate_size": 24576,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "head_dim": 256,
    "vocab_size": 256000,
    "max_position_embeddings": 8192,
    "hidden_activation": "gelu_pytorch_tanh",
    "attention_bias": False,
}


def test_from_hf_config_families():
    qwen = rl.model_config("qwen2-7b")
    assert qwen.qkv_bias and not qwen.bias and qwen.n_kv_heads == 4
    gemma = rl.TransformerConfig.from_hf_config(GEMMA_7B)
    # Gemma 7B: 16 heads of 256 = 4096 wide on a 3072-wide stream; tied embeddings by default
    assert gemma.attention_dim == 4096 and gemma.tied_embeddings and gemma.gated
    assert (
        gemma.n_params()
        == 28 * (2 * 3072 * 4096 + 2 * 3072 * 4096 + 3 * 3072 * 24576 + 2 * 3072) + 256000 * 3072 + 3072
    )  # 8,537,680,896
    # Gemma Team (2024), Gemma report, Table 2: 786,432,000 embedding + 7,751,248,896 non-embedding
    assert gemma.n_params() == 786_432_000 + 7_751_248_896
    with pytest.raises(ValueError, match="attention_bias=True in a gemma config: a bias on Q, K, V and O"):
        rl.TransformerConfig.from_hf_config({**GEMMA_7B, "attention_bias": True})
    mixtral = rl.model_config("mixtral-8x7b")
    assert (mixtral.n_experts, mixtral.experts_per_token, mixtral.sliding_window) == (8, 2, None)


def test_the_fields_of_todays_families_by_hand():
    # d = 8, d_ff = 16, 2 layers, 2 heads of 4, one KV head, V = 10, untied; plain FFN
    base = rl.TransformerConfig(d_model=8, d_ff=16, n_layers=2, n_heads=2, n_kv_heads=1, vocab=10, gated=False)
    parts = base.params_breakdown()

    def more(**kw):
        return rl.TransformerConfig(**{**dataclasses.asdict(base), **kw}).n_params() - base.n_params()

    assert more(qk_head_norm=True) == 2 * 2 * 4  # a norm of head_dim on Q and on K, per layer
    assert more(ffn_bias=True) == 2 * (16 + 8)  # up and down biases; attention keeps none
    assert more(bias=True, ffn_bias=False) == 2 * (8 + 4 + 4 + 8)  # Q, K, V, O biases only
    assert more(unembedding_bias=True) == 10 and parts["unembedding"] == 80
    assert more(attention_sinks=True) == 2 * 2  # one logit per head and layer
    assert more(n_experts=4, experts_per_token=1, router_bias=True) - more(n_experts=4, experts_per_token=1) == 2 * 4
    # sinks, norms and biases do no matmul: the forward FLOPs stay
    sinks = dataclasses.replace(base, attention_sinks=True, qk_head_norm=True, seq_len=4)
    assert sinks.flops_per_token() == dataclasses.replace(base, seq_len=4).flops_per_token()
    for field, bad in (("ffn_bias", 1), ("qk_head_norm", "yes"), ("chunked_attention", None)):
        with pytest.raises((TypeError, ValueError), match=field):
            dataclasses.replace(base, **{field: bad})
    with pytest.raises(ValueError, match="cache_kv_heads must be"):
        dataclasses.replace(base, cache_kv_heads=0)
    with pytest.raises(ValueError, match="qk_head_norm, qkv_bias, bias and attention_sinks are not mapped"):
        dataclasses.replace(base, n_kv_heads=None, head_dim=None, mla=rl.MLA(8, 4, 2, 4), attention_sinks=True)


def test_eager_counts_the_whole_square_the_kernel_convention_does_not():
    # 2 layers, one windowed (W = 2), s = 4, H h = 8: 4 * 8 = 32 FLOPs per key and layer
    cfg = rl.TransformerConfig(
        d_model=8, d_ff=16, n_layers=2, n_heads=2, vocab=10, seq_len=4, sliding_window=2, window_layers=1
    )
    assert cfg.flops_per_token(eager=True).scores_total == 2 * 4 * 32  # every layer over all 4 keys
    assert cfg.flops_per_token(causal=False).scores_total == (2 + 4) * 32  # the window caps one layer
    assert cfg.flops_per_token().scores_total == (2 - 4 / 8 + 2) * 32  # causal: W - W^2 / 2s, and s / 2
    with pytest.raises(TypeError, match="eager must be True or False"):
        cfg.flops_per_token(eager="yes")
