"""Hugging Face configs of every common family: exact counts, the KV cache, refusals by name.

Two kinds of evidence, both runnable without transformers installed:

* ``hf_configs/tiny_transformers.json`` holds, for a tiny model of each family, the ``to_dict()``
  and ``to_diff_dict()`` of a transformers 5.24 config object, the parameter count of the model
  transformers builds from it (meta device) and the FLOPs FlopCounterMode counted for one
  forward pass of 8 tokens. The library must reproduce both exactly from either dict.
* ``hf_configs/<model>.json`` are the published ``config.json`` fields of one real model per
  newly read family; their parameter counts are written out by hand below and held to the
  published figures.

Where transformers is installed, one more test rebuilds the tiny models and counts them live.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import roofline_lib as rl
from roofline_lib.models import hf_config as _hf_config

HERE = Path(__file__).parent / "hf_configs"
TINY = json.loads((HERE / "tiny_transformers.json").read_text(encoding="utf-8"))
FAMILIES = [k for k in TINY if not k.startswith("_")]


def _real(name: str) -> rl.TransformerConfig:
    return rl.TransformerConfig.from_hf_config(HERE / f"{name}.json")


# --------------------------------------------------------------------------- exact against transformers


def test_the_tiny_record_covers_every_family_the_reader_maps():
    assert len(FAMILIES) == 18
    # the families read since are recorded in tiny_families.json (tests/test_families.py)
    assert {TINY[k]["to_dict"]["model_type"] for k in FAMILIES} <= set(_hf_config._FAMILIES)


@pytest.mark.parametrize("form", ["to_dict", "to_diff_dict"])
@pytest.mark.parametrize("key", FAMILIES)
def test_tiny_models_are_exact_against_transformers(key, form):
    record = TINY[key]
    cfg = rl.TransformerConfig.from_hf_config(record[form], seq_len=8)
    assert cfg.n_params() == record["parameters"]
    # eager attention fills the whole score square: the causal=False count, 8 tokens of it
    assert cfg.flops_per_token(causal=False).fwd_per_token * 8 == record["forward_flops_8_tokens"]


class _ConfigObject:
    """Stands in for a transformers config object: the reader asks it for ``to_dict()``."""

    def __init__(self, d):
        self._d = d

    def to_dict(self):
        return dict(self._d)


def test_a_config_object_is_read_through_its_to_dict():
    record = TINY["deepseek_v3"]
    assert rl.TransformerConfig.from_hf_config(_ConfigObject(record["to_dict"])) == rl.TransformerConfig.from_hf_config(
        record["to_diff_dict"]
    )


def test_live_against_transformers():
    transformers = pytest.importorskip("transformers", reason="transformers is not a dependency of the course")
    torch = pytest.importorskip("torch")
    for key in ("gemma2", "falcon_new", "deepseek_v2"):
        hf = transformers.AutoConfig.for_model(**TINY[key]["to_diff_dict"])
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(hf)
        assert rl.TransformerConfig.from_hf_config(hf).n_params() == sum(p.numel() for p in model.parameters())


# --------------------------------------------------------------------------- keys that change no count


def test_each_reason_for_skipping_a_key_is_exercised():
    # one key of every reason, added to a config the reader accepts, changes nothing
    base = TINY["llama"]["to_diff_dict"]
    reference = rl.TransformerConfig.from_hf_config(base)
    assert len(_hf_config._NO_COUNT_BY_REASON) == 10
    for reason, keys in _hf_config._NO_COUNT_BY_REASON.items():
        assert keys, reason
        assert rl.TransformerConfig.from_hf_config({**base, keys[-1]: "anything"}) == reference, reason


def test_every_other_unknown_key_is_refused_by_name():
    base = TINY["llama"]["to_dict"]
    with pytest.raises(ValueError, match="cannot map these llama config fields to a count: kv_lora_rank"):
        rl.TransformerConfig.from_hf_config({**base, "kv_lora_rank": 64})
    for key, bad in (
        ("is_encoder_decoder", True),
        ("add_cross_attention", True),
        ("use_bidirectional_attention", True),
    ):
        with pytest.raises(ValueError, match=f"{key}=True in a llama config is not mapped"):
            rl.TransformerConfig.from_hf_config({**base, key: bad})
    with pytest.raises(ValueError, match="layer_types has chunked_attention layers in a gemma2 config"):
        rl.TransformerConfig.from_hf_config({**TINY["gemma2"]["to_dict"], "layer_types": ["chunked_attention"] * 3})
    with pytest.raises(ValueError, match="dense layers among the expert ones are not mapped"):
        rl.TransformerConfig.from_hf_config({**TINY["qwen2_moe"]["to_dict"], "mlp_only_layers": [0]})


# --------------------------------------------------------------------------- one real model per new family

#: Parameters of each real model, counted by hand from its config, against the published figure.
#: Per layer: attention + FFN + norms (+ biases where the family has them); then the final norm
#: and the embedding (and the unembedding when untied).
PUBLISHED = {
    # 32 * (4 * 3072**2 + 3 * 3072 * 8192 + 2 * 3072) + 3072 + 2 * 32064 * 3072; Phi-3 report: 3.8B
    "phi-3-mini-4k": 3_821_079_552,
    # 42 * (3584 * 4096 * 2 + 3584 * 2048 * 2 + 3 * 3584 * 14336 + 4 * 3584) + 3584 + 256000 * 3584;
    # Gemma 2 report, Table 2: 917,504,000 embedding + 8,324,201,984 non-embedding
    "gemma-2-9b": 917_504_000 + 8_324_201_984,
    # 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096 (Q and K norms) + 2 * 4096) + 4096 + 2 * 100352 * 4096
    "olmo-2-1124-7b": 7_298_617_344,
    # 32 * (4544 * 73 * 64 + 4544**2 + 2 * 4544 * 18176 + 2 * 4544) + 2 * 4544 + 65024 * 4544 (tied)
    "falcon-7b": 6_921_720_704,
    # 44 * (6144 * 18432 + 18432 + 6144**2 + 6144 + 2 * 6144 * 24576 + 24576 + 6144 + 4 * 6144)
    #   + 2 * 6144 + 2 * 50432 * 6144
    "gpt-neox-20b": 20_554_567_680,
    # 32 * (2 * (4608**2 + 4608) + 2 * (4608 * 512 + 512) + 2 * 4608 * 18432 + 18432 + 4608 + 4 * 4608)
    #   + 2 * 4608 + 49152 * 4608 (tied)
    "starcoder2-7b": 7_173_923_840,
    # 30 * (4096 * 12288 + 12288 + 4096**2 + 4096 + 2 * 4096 * 16384 + 16384 + 4096 + 4 * 4096)
    #   + 2 * 4096 (final) + 2 * 4096 (embedding norm) + 250880 * 4096 (tied)
    "bloom-7b1": 7_069_016_064,
    # 24 * (3 * (2048**2 + 2048) + 2048**2 + 60 * 3 * 2048 * 1408 + 3 * 2048 * 5632 + 2048 * 60 + 2048
    #   + 2 * 2048) + 2048 + 2 * 151936 * 2048
    "qwen1.5-moe-a2.7b": 14_315_784_192,
    # layer 0 dense, 59 with 160 experts; see test_multi_head_latent_attention_is_counted_by_its_parts
    "deepseek-v2": 235_741_434_880,
    "deepseek-v3": 671_026_404_352,
}

#: Figures published rounded: (the figure, the unit of its last digit); the count must round to it.
ROUNDED = {
    "phi-3-mini-4k": (3.8e9, 0.1e9),
    "qwen1.5-moe-a2.7b": (14.3e9, 0.1e9),
    "deepseek-v2": (236e9, 1e9),
    "deepseek-v3": (671e9, 1e9),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_real_models_match_their_hand_count(name):
    cfg = _real(name)
    assert cfg.n_params() == PUBLISHED[name]
    if name in ROUNDED:
        figure, unit = ROUNDED[name]
        assert abs(cfg.n_params() - figure) <= unit / 2


def test_multi_head_latent_attention_is_counted_by_its_parts():
    v2 = _real("deepseek-v2")
    # attention per layer: q_a 5120 * 1536, q_b 1536 * 128 * 192, kv_a 5120 * (512 + 64),
    # kv_b 512 * 128 * (128 + 128), o 128 * 128 * 5120 = 149,225,472
    assert v2.params_breakdown()["attention"] == 60 * 149_225_472
    # KV cache: the 512-wide latent and the 64-wide rotary key, per layer and token, in bf16
    assert v2.kv_cache_bytes(1) == 60 * (512 + 64) * 2  # 69,120 bytes, not 60 * 2 * 128 * 192 * 2
    assert v2.kv_cache_bytes(4096, batch=2) == 2 * 4096 * 69_120
    # the first layer dense (3 * 5120 * 12288), the other 59 with experts: 6 of 160 routed, 2 shared
    assert [(n, len(m)) for n, m in v2.layer_blocks()] == [(1, 8), (59, 12)]
    assert v2.active_params() == 21_375_800_320  # published: 21B activated
    v3 = _real("deepseek-v3")
    assert v3.kv_cache_bytes(1) == 61 * 576 * 2  # 70,272 bytes
    assert round(v3.active_params() / 1e9) == 38  # 37.55e9; published: 37B activated


def test_gemma2_alternates_local_and_global_layers_in_its_kv_cache():
    g = _real("gemma-2-9b")
    assert (g.sliding_window, g.window_layers, g.n_layers) == (4096, 21, 42)
    per_token_layer = 2 * 8 * 256 * 2  # K and V, 8 KV heads of 256, bf16: 8,192 bytes
    at_8k = g.kv_cache_bytes(8192)
    assert at_8k == (21 * 4096 + 21 * 8192) * per_token_layer  # 2,113,929,216 bytes
    # every layer global would be a third too much, every layer windowed a third too little
    assert 42 * 8192 * per_token_layer / at_8k == pytest.approx(4 / 3)
    assert 42 * 4096 * per_token_layer / at_8k == pytest.approx(2 / 3)
    assert g.kv_cache_bytes(4096) == 42 * 4096 * per_token_layer  # within the window: no difference
    # the decode step reads the same cache
    assert rl.decode_step_bytes_of(g, 1, 8192).kv_cache == at_8k


def test_qwen_moe_has_a_gated_shared_expert():
    q = _real("qwen1.5-moe-a2.7b")
    names = [m.name for m in q.weight_matrices()]
    assert "shared_gate" in names and q.shared_expert_d_ff == 5632 and q.expert_d_ff == 1408
    # active: 4 of 60 experts, the shared expert and its gate: 24 * (16,783,360 + 4 * 3 * 2048 * 1408
    #   + 3 * 2048 * 5632 + 2048 * 60 + 2048 + 4096) + 2048 + 2 * 151936 * 2048
    assert q.active_params() == 2_689_173_504


def test_parallel_blocks_and_embedding_norms():
    falcon, neox, bloom = _real("falcon-7b"), _real("gpt-neox-20b"), _real("bloom-7b1")
    assert falcon.norms_per_layer == 1 and falcon.n_kv_heads == 1  # one LayerNorm feeds both branches; MQA
    assert neox.norms_per_layer == 2  # a parallel residual, but two LayerNorms a block
    assert bloom.embedding_norm and bloom.params_breakdown()["norms"] == (2 * 30 + 1 + 1) * 2 * 4096


# --------------------------------------------------------------------------- seq_len is asked for

LLAMA31_405B = {
    "model_type": "llama",
    "hidden_size": 16384,
    "intermediate_size": 53248,
    "num_hidden_layers": 126,
    "num_attention_heads": 128,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}


def test_the_context_window_is_never_taken_for_the_training_length():
    cfg = rl.TransformerConfig.from_hf_config(LLAMA31_405B)
    assert cfg.seq_len is None and cfg.context_window == 131072
    with pytest.raises(ValueError, match=r"training length .* context window of 131,072 tokens"):
        rl.mfu(cfg, 1e6, 16384, "H100", convention="full-square")
    with pytest.raises(ValueError, match="needs seq_len, the training length"):
        cfg.flops_per_token()
    assert rl.mfu(cfg, 1e6, 16384, "H100") > 0  # 6N counts no scores: nothing to ask
    right = rl.mfu(cfg, 1e6, 16384, "H100", convention="full-square", seq_len=8192)
    wrong = rl.mfu(cfg, 1e6, 16384, "H100", convention="full-square", seq_len=131072)
    # (6N + 12 L s a) at s = 131,072 over s = 8,192, N = 405.85e9, L = 126, a = 16384: the 2.15x
    assert wrong / right == pytest.approx(2.154, rel=1e-3)


def test_shipped_models_carry_their_published_training_length():
    for name in rl.shipped_models():
        assert rl.model_config(name).seq_len == rl.published_params(name)["seq_len"]
    assert rl.model_config("mistral-7b").seq_len == 8192  # Jiang et al. (2023), Table 1
    assert rl.model_config("llama-3-8b", seq_len=2048).seq_len == 2048


def test_the_new_fields_refuse_what_they_cannot_mean():
    base = dict(d_model=64, d_ff=128, n_layers=4, n_heads=4, vocab=100, seq_len=32)
    with pytest.raises(ValueError, match="window_layers needs a sliding_window"):
        rl.TransformerConfig(**base, window_layers=2)
    with pytest.raises(ValueError, match=r"window_layers must be from 0 to n_layers \(4 layers\), got 5"):
        rl.TransformerConfig(**base, sliding_window=8, window_layers=5)
    with pytest.raises(ValueError, match="n_dense_layers must be from 0 to n_layers - 1"):
        rl.TransformerConfig(**base, n_dense_layers=1)  # a dense model has no expert layers to precede
    with pytest.raises(ValueError, match="shared_expert_gate=True needs a shared expert"):
        rl.TransformerConfig(**base, n_experts=4, experts_per_token=2, shared_expert_gate=True)
    with pytest.raises(ValueError, match="n_kv_heads must equal n_heads"):
        rl.TransformerConfig(**base, n_kv_heads=2, mla=rl.MLA(16, 8, 4, 8))
    with pytest.raises(ValueError, match="qk_rope_head_dim must be a whole number of features"):
        rl.MLA(16, 8, -1, 8)
    with pytest.raises(TypeError, match=r"mla must be an MLA\(...\)"):
        rl.TransformerConfig(**base, mla={"kv_lora_rank": 16})
    # a window on half the layers: half the cache is capped at the window
    half = rl.TransformerConfig(**base, sliding_window=8, window_layers=2)
    assert half.kv_cache_bytes(32) == (2 * 8 + 2 * 32) * 2 * 64 * 2  # K and V of 64 features, bf16
