"""Today's families, exact against transformers: parameters, FLOPs and the runtime cache.

``hf_configs/tiny_families.json`` (written by ``hf_configs/record_families.py`` with the
transformers and torch versions under ``_versions``) holds, for a small random model of each
family, its config as ``to_dict()`` and ``to_diff_dict()`` (the hub's ``config.json`` form), the
parameters of the model transformers builds, the FLOPs ``FlopCounterMode`` counts for a forward
of 8 tokens and for one decode step after them (eager attention, eager experts), and the elements
the runtime cache holds after 8 and 9 tokens. The library reproduces each from either dict, with
no transformers installed.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import roofline_lib as rl
from roofline_lib.models import hf_config as _hf_config

HERE = Path(__file__).parent / "hf_configs"
RECORD = json.loads((HERE / "tiny_families.json").read_text(encoding="utf-8"))
#: the transformer families (state-space ones are in test_state_space.py), and the refusal on record
ATTENTION = [
    k for k in RECORD if not k.startswith("_") and k not in ("mamba", "mamba2", "jamba", "qwen2_qkv_bias_false")
]
FORMS = ("to_dict", "to_diff_dict")


def _read(key, form="to_diff_dict"):
    return rl.TransformerConfig.from_hf_config(RECORD[key][form], seq_len=8)


def test_the_record_says_which_transformers_counted_it():
    assert RECORD["_versions"]["transformers"].startswith("5.")
    assert RECORD["_versions"]["torch"]


def test_every_family_the_issue_lists_is_on_record():
    issue = {
        "qwen3", "qwen3_moe", "gemma3_text", "gemma3", "llama4_text", "llama4", "gpt_oss", "phimoe", "glm4",
        "glm4_moe", "granite", "granitemoe", "cohere", "cohere2", "opt", "gptj", "llava", "mistral3",
    }  # fmt: skip
    assert issue <= set(ATTENTION)
    mapped = {RECORD[k]["to_dict"]["model_type"] for k in ATTENTION}
    old = json.loads((HERE / "tiny_transformers.json").read_text(encoding="utf-8"))
    mapped |= {old[k]["to_dict"]["model_type"] for k in old if not k.startswith("_")}
    assert mapped == set(_hf_config._FAMILIES) | set(_hf_config._WRAPPERS)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("key", ATTENTION)
def test_parameters_and_prefill_flops_are_exact(key, form):
    record, cfg = RECORD[key], _read(key, form)
    assert cfg.n_params() == record["parameters"]
    if "forward_error" in record:  # transformers 5.24's Llama 4 wrapper cannot run on text alone
        assert key == "llama4"
        return
    # eager attention computes every score of the 8 x 8 square, windows and chunks masked afterwards
    assert cfg.flops_per_token(eager=True).fwd_per_token * 8 == record["forward_flops_8_tokens"]


@pytest.mark.parametrize("key", [k for k in ATTENTION if "cache_elements_8_tokens" in RECORD[k]])
def test_the_runtime_cache_and_the_decode_step_are_exact(key):
    record, cfg = RECORD[key], _read(key)
    assert cfg.kv_cache_bytes(8, 1, layout="transformers") == record["cache_elements_8_tokens"]
    assert cfg.kv_cache_bytes(9, 1, layout="transformers") == record["cache_elements_9_tokens"]
    # one new query over the cached keys and its own: a windowed layer reads its W - 1 and the new one.
    # transformers' chunked layers (Llama 4) read that rolling buffer too, masked to the chunk, and
    # run every expert, as in the prefill
    experts = cfg.n_experts if cfg.eager_dense_experts else cfg.experts_per_token
    decode = dataclasses.replace(cfg, chunked_attention=False, experts_per_token=experts)
    assert decode.flops_per_token(causal=False, seq_len=9).fwd_per_token == record["decode_flops_after_8_tokens"]


def test_the_two_cache_layouts_differ_where_transformers_keeps_less_or_more():
    gemma = _read("gemma3_text")  # 3 windowed layers of W = 4 and 1 global; 2 KV heads of 16
    row = 2 * 2 * 16
    assert gemma.kv_cache_bytes(8, 1) == (3 * 4 + 8) * row  # the model needs the window
    assert gemma.kv_cache_bytes(8, 1, layout="transformers") == (3 * 3 + 8) * row  # the cache keeps W - 1
    assert gemma.kv_cache_bytes(2, 1, layout="transformers") == gemma.kv_cache_bytes(2, 1) == 4 * 2 * row
    falcon = _read("falcon_new")  # 2 KV heads, broadcast to 4 before the cache
    assert falcon.kv_cache_bytes(8, 1, layout="transformers") == 2 * falcon.kv_cache_bytes(8, 1)
    with pytest.raises(ValueError, match="layout must be one of 'window', 'transformers', got 'paged'"):
        gemma.kv_cache_bytes(8, layout="paged")


def test_qwen2_qkv_bias_false_is_refused_because_transformers_ignores_it():
    record = RECORD["qwen2_qkv_bias_false"]
    config = dict(record["to_diff_dict"])
    with pytest.raises(ValueError, match=r"qkv_bias=False in a qwen2 config: transformers' Qwen2 has no such switch"):
        rl.TransformerConfig.from_hf_config(config)
    del config["qkv_bias"]  # transformers built the biases anyway: the count without the key is its count
    assert rl.TransformerConfig.from_hf_config(config).n_params() == record["parameters"]
    # Qwen2-MoE does read the key
    moe = json.loads((HERE / "tiny_transformers.json").read_text(encoding="utf-8"))["qwen2_moe"]["to_diff_dict"]
    with_b, without = (rl.TransformerConfig.from_hf_config({**moe, "qkv_bias": b}) for b in (True, False))
    assert with_b.n_params() - without.n_params() == with_b.n_layers * (with_b.attention_dim + 2 * with_b.kv_dim)


def test_each_new_design_is_counted_by_its_part():
    qwen3, gpt_oss, llama4 = _read("qwen3"), _read("gpt_oss"), _read("llama4_text")
    # Q and K norms of one head (16), shared by the heads, in each of 2 layers
    assert qwen3.params_breakdown()["norms"] == (2 * 2 + 1) * 64 + 2 * 2 * 16
    # gpt-oss: 4 sink logits a layer; biases on every expert and on the router
    plain = dataclasses.replace(gpt_oss, attention_sinks=False, router_bias=False, ffn_bias=False)
    assert gpt_oss.n_params() - plain.n_params() == 2 * (4 + 4 + 4 * (96 + 96 + 64))
    # Llama 4: 2 dense layers (80 wide) and 2 with 4 experts of 96 and a shared one; one routed per token
    assert [(n, len(m)) for n, m in llama4.layer_blocks()] == [(2, 7), (2, 11)]  # 4 attention, 3 FFN; 3 + 3 + router
    assert llama4.active_params() == llama4.n_params() - 2 * 3 * 3 * 64 * 96
    # transformers runs all 4 experts on every token: its eager count is 4x the routed one in those layers
    eager, routed = llama4.flops_per_token(eager=True), llama4.flops_per_token(causal=False)
    assert eager.ffn_total - routed.ffn_total == 2 * 3 * 6 * 64 * 96
    gptj = _read("gptj")
    assert gptj.params_breakdown()["unembedding"] == 128 * 64 + 128  # GPT-J's head has a bias
    assert _read("opt").params_breakdown()["positions"] == (64 + 2) * 64  # OPT's table has 2 extra rows


def test_chunked_attention_counts_each_query_within_its_chunk():
    llama4 = _read("llama4_text")  # chunks of 4 in 3 of 4 layers
    # 9 tokens: two whole chunks (4 x 4 each) and one of 1: 33 entries, 33 / 9 keys a query
    assert llama4._keys_seen(9, False, 4) == pytest.approx(33 / 9)
    assert llama4._keys_seen(9, True, 4) == pytest.approx(33 / 18)
    assert llama4.keys_seen(8) == pytest.approx((3 * 2 * 16 / 16 + 8 / 2) / 4)
    with pytest.raises(ValueError, match="chunked_attention=True needs the chunk length as sliding_window"):
        dataclasses.replace(llama4, sliding_window=None, window_layers=None)


def test_a_wrapper_is_read_as_its_text_model():
    wrapped, text = _read("gemma3"), _read("gemma3_text")
    assert wrapped == text
    llava = dict(RECORD["llava"]["to_diff_dict"])
    with pytest.raises(ValueError, match="cannot map these llava config fields to a count: vision_tower_layers"):
        rl.TransformerConfig.from_hf_config({**llava, "vision_tower_layers": 3})
    with pytest.raises(ValueError, match="a llava config needs its text model as text_config"):
        rl.TransformerConfig.from_hf_config({k: v for k, v in llava.items() if k != "text_config"})
    with pytest.raises(ValueError, match="text_config of a llava config has model_type 'bert'"):
        rl.TransformerConfig.from_hf_config({**llava, "text_config": {"model_type": "bert"}})
    # the wrapper's tie_word_embeddings rules: Mistral 3 ties by default, whatever its text config says
    assert _read("mistral3").tied_embeddings and not _read("llava").tied_embeddings


def test_what_the_reader_cannot_map_in_the_new_families_is_refused_by_name():
    opt = RECORD["opt"]["to_diff_dict"]
    with pytest.raises(ValueError, match="word_embed_proj_dim=32 with hidden_size=64 in an opt config"):
        rl.TransformerConfig.from_hf_config({**opt, "word_embed_proj_dim": 32})
    with pytest.raises(ValueError, match="do_layer_norm_before=False"):
        rl.TransformerConfig.from_hf_config({**opt, "do_layer_norm_before": False})
    llama4 = RECORD["llama4_text"]["to_diff_dict"]
    with pytest.raises(ValueError, match=r"moe_layers=\[7\] in a llama4_text config"):
        rl.TransformerConfig.from_hf_config({**llama4, "moe_layers": [7]})
    mixed = ["sliding_attention", "chunked_attention", "full_attention", "full_attention"]
    with pytest.raises(ValueError, match="mixes sliding and chunked attention"):
        rl.TransformerConfig.from_hf_config({**llama4, "sliding_window": 4, "layer_types": mixed})
    with pytest.raises(ValueError, match="cannot map these qwen3 config fields to a count: mlp_bias"):
        rl.TransformerConfig.from_hf_config({**RECORD["qwen3"]["to_diff_dict"], "mlp_bias": True})
    with pytest.raises(ValueError, match="model_type 'mamba' is a state-space model"):
        rl.TransformerConfig.from_hf_config(RECORD["mamba"]["to_diff_dict"])


def test_the_family_rules_give_the_layer_types_a_config_leaves_out():
    # a hub config written before layer_types: Gemma 3's every 6th layer global, gpt-oss alternating
    gemma = {k: v for k, v in RECORD["gemma3_text"]["to_diff_dict"].items() if k != "layer_types"}
    g = rl.TransformerConfig.from_hf_config({**gemma, "num_hidden_layers": 12, "sliding_window_pattern": 6})
    assert (g.window_layers, g.sliding_window) == (10, 4)
    oss = {k: v for k, v in RECORD["gpt_oss"]["to_diff_dict"].items() if k != "layer_types"}
    assert rl.TransformerConfig.from_hf_config({**oss, "num_hidden_layers": 6}).window_layers == 3
    llama4 = {
        k: v for k, v in RECORD["llama4_text"]["to_diff_dict"].items() if k not in ("layer_types", "no_rope_layers")
    }
    l4 = rl.TransformerConfig.from_hf_config({**llama4, "num_hidden_layers": 8, "moe_layers": [1, 3, 5, 7]})
    assert (l4.window_layers, l4.chunked_attention, l4.n_dense_layers) == (6, True, 4)


def test_live_against_transformers():
    transformers = pytest.importorskip("transformers", reason="transformers is not a dependency of the course")
    torch = pytest.importorskip("torch")
    for key in ("gpt_oss", "llama4_text", "gemma3"):
        hf = transformers.AutoConfig.for_model(**RECORD[key]["to_diff_dict"])
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(hf.get_text_config())
        assert _read(key).n_params() == sum(p.numel() for p in model.parameters())


def test_keys_that_older_hub_configs_carry_are_read_or_refused():
    def same(key, **extra):
        config = RECORD[key]["to_diff_dict"]
        return rl.TransformerConfig.from_hf_config({**config, **extra}) == rl.TransformerConfig.from_hf_config(config)

    assert same("opt", activation_dropout=0.0, prefix="</s>")
    assert same("gptj", rotary=True, gradient_checkpointing=False)
    assert same("gpt_oss", experts_per_token=2, initial_context_length=4096)
    assert same("gemma3_text", cache_implementation="hybrid", sliding_window_pattern=6)
    assert same("llava", ignore_index=-100, vocab_size=128)
    with pytest.raises(ValueError, match="experts_per_token=4 and num_experts_per_tok=2 disagree"):
        rl.TransformerConfig.from_hf_config({**RECORD["gpt_oss"]["to_diff_dict"], "experts_per_token": 4})
    with pytest.raises(ValueError, match="vocab_size=32064 in a llava config disagrees with its text_config's 128"):
        rl.TransformerConfig.from_hf_config({**RECORD["llava"]["to_diff_dict"], "vocab_size": 32064})
    with pytest.raises(ValueError, match="rotary=False in a gptj config"):
        rl.TransformerConfig.from_hf_config({**RECORD["gptj"]["to_diff_dict"], "rotary": False})
