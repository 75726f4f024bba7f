"""Reading a Hugging Face config into :class:`~roofline_lib.models.transformer.TransformerConfig` fields.

Only the architecture is read; nothing is downloaded. A config may be a ``config.json`` path,
its dict, a transformers config object, or that object's ``to_dict()`` or ``to_diff_dict()``.
The rule: every key is either read by its family's reader, listed in :data:`_NO_COUNT` with the
reason it changes no parameter, FLOP or KV-cache count, or refused with an error that names
it, so an unknown design never turns into a silently wrong count.

A multimodal wrapper (llava, mistral3, gemma3, llama4) is read as its ``text_config``; mamba,
mamba2 and jamba are read into a :class:`~roofline_lib.models.state_space.StateSpaceConfig`
(:func:`read_model` returns whichever fits). Where transformers' runtime differs from what the
model needs (its cache keeps ``W - 1`` tokens of a window, Falcon's new architecture caches K and V
for every head, Llama 4 runs every expert on every token), the config records it for the counts
that ask for transformers' layout.

The training length is never read from a config: ``max_position_embeddings`` is the longest
context the model accepts (kept as ``context_window``), not the length it was trained at.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["read_model", "families"]

#: Keys that change no count in any family, by reason. Each reason is tested with a key.
_NO_COUNT_BY_REASON = {
    "what a file or a transformers object says about itself": (
        "architectures",
        "transformers_version",
        "_name_or_path",
        "dtype",
        "torch_dtype",
        "tokenizer_class",
    ),
    "transformers' switches for what a forward returns": (
        "output_hidden_states",
        "output_attentions",
        "return_dict",
        "use_cache",
        "chunk_size_feed_forward",
        "problem_type",
        "id2label",
        "label2id",
        "output_router_logits",
        "task_specific_params",
        "cache_implementation",
        "gradient_checkpointing",
    ),
    "token ids": ("bos_token_id", "eos_token_id", "pad_token_id"),
    "initialisation, epsilons and dropout": (
        "initializer_range",
        "rms_norm_eps",
        "layer_norm_eps",
        "layer_norm_epsilon",
        "norm_epsilon",
        "attention_dropout",
        "hidden_dropout",
        "resid_pdrop",
        "embd_pdrop",
        "attn_pdrop",
        "embedding_dropout",
        "residual_dropout",
        "classifier_dropout",
        "summary_first_dropout",
        "attention_probs_dropout_prob",
        "hidden_dropout_prob",
        "activation_dropout",
    ),
    "rotary settings (rotary and ALiBi positions hold no parameters; partial rotary included)": (
        "rope_theta",
        "rope_scaling",
        "rope_parameters",
        "rope_interleave",
        "rotary_pct",
        "rotary_emb_base",
        "partial_rotary_factor",
        "original_max_position_embeddings",
        "alibi",
    ),
    "activations (gated or plain is the family's) and element-wise scalings, 0 FLOPs as every activation": (
        "hidden_act",
        "hidden_activation",
        "activation_function",
        "activation",
        "attn_logit_softcapping",
        "final_logit_softcapping",
        "query_pre_attn_scalar",
        "scale_attn_weights",
        "scale_attn_by_inverse_layer_idx",
        "reorder_and_upcast_attn",
        "routed_scaling_factor",
    ),
    "which experts a token is routed to, not how many": (
        "router_aux_loss_coef",
        "router_jitter_noise",
        "norm_topk_prob",
        "topk_method",
        "n_group",
        "topk_group",
        "scoring_func",
        "aux_loss_alpha",
        "seq_aux",
    ),
    "the order of the same operations": (
        "pretraining_tp",
        "use_parallel_residual",
        "apply_residual_connection_post_layernorm",
        "slow_but_exact",
        "is_decoder",
    ),
    "how the weights are stored, not how many (bytes_per_param sets their width)": ("quantization_config",),
    "GPT-2's classification head, which a causal LM does not build": (
        "summary_activation",
        "summary_proj_to_labels",
        "summary_type",
        "summary_use_proj",
        "n_ctx",
    ),
}

#: Every key that changes no count (the union of :data:`_NO_COUNT_BY_REASON`).
_NO_COUNT = frozenset(k for keys in _NO_COUNT_BY_REASON.values() for k in keys)

#: Keys that change no count only at this value; any other value is refused by name.
_MUST_BE = {
    "is_encoder_decoder": False,  # an encoder-decoder is not a decoder-only model
    "add_cross_attention": False,  # cross-attention layers hold weights this reader does not count
    "use_bidirectional_attention": (None, False),  # no causal mask: a different score count
    "moe_layer_freq": 1,  # DeepSeek: every layer past the dense ones has experts
}

#: Families and their default for ``tie_word_embeddings``.
_TIED_BY_DEFAULT = {
    "llama": False,
    "mistral": False,
    "mixtral": False,
    "qwen2": False,
    "qwen2_moe": False,
    "gemma": True,
    "gemma2": True,
    "phi3": False,
    "olmo2": False,
    "starcoder2": True,
    "gpt2": True,
    "gpt_neox": False,
    "falcon": True,
    "bloom": True,
    "deepseek_v2": False,
    "deepseek_v3": False,
    "qwen3": False,
    "qwen3_moe": False,
    "gemma3_text": True,
    "granite": False,
    "granitemoe": False,
    "granitemoeshared": False,
    "cohere": True,
    "cohere2": True,
    "glm4": False,
    "glm4_moe": False,
    "opt": True,
    "gptj": False,
    "phimoe": False,
    "gpt_oss": False,
    "llama4_text": False,
}


def _load(config) -> dict:
    if isinstance(config, Mapping):
        return dict(config)
    if isinstance(config, (str, os.PathLike)):
        path = Path(config)
        if not path.is_file():
            raise FileNotFoundError(
                f"config must be a dict or the path of a config.json file; no file at {str(path)!r} "
                "(nothing is downloaded: save the model's config.json first)"
            )
        return json.loads(path.read_text(encoding="utf-8"))
    if callable(getattr(config, "to_dict", None)):  # a transformers config object
        return dict(config.to_dict())
    raise TypeError(
        "config must be a dict, the path of a config.json file or a transformers config object, "
        f"got {type(config).__name__} {config!r}"
    )


class _Reader:
    """A config dict whose keys are marked as they are read, so the rest can be refused by name."""

    def __init__(self, cfg: dict, model_type: str):
        self.cfg, self.model_type, self.read = cfg, model_type, {"model_type"}

    def get(self, key, default=None):
        self.read.add(key)
        value = self.cfg.get(key)
        return default if value is None else value

    def need(self, key, *others):
        """The first of ``key`` and ``others`` the config holds; refused by name when none is there."""
        for k in (key, *others):
            value = self.get(k)
            if value is not None:
                return value
        names = " or ".join((key, *others))
        raise ValueError(f"the {self.model_type} config lacks {names}, needed for the counts")

    def refuse_if(self, key, what: str) -> None:
        if self.get(key):
            raise ValueError(f"{key}={self.cfg[key]!r} in a {self.model_type} config: {what} is not mapped")


def _decoder(r: _Reader, kw: dict) -> None:
    """The keys most decoder families share, Llama's names."""
    kw["d_model"] = r.need("hidden_size")
    kw["d_ff"] = r.need("intermediate_size")
    kw["n_layers"] = r.need("num_hidden_layers")
    kw["n_heads"] = r.need("num_attention_heads")
    kw["vocab"] = r.need("vocab_size")
    kv = r.get("num_key_value_heads")
    if kv is not None:
        kw["n_kv_heads"] = kv
    head = r.get("head_dim")
    if head is not None:
        kw["head_dim"] = head


def _pattern(layers: int, every: int) -> list[str]:
    """Gemma 3's and Cohere 2's rule: every ``every``-th layer global, the others windowed."""
    return ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(layers)]


def _types_by_rule(r: _Reader, kw: dict, window) -> list[str] | None:
    """The layer types a family's config derives when it lists none (transformers' own rules)."""
    L, mt = kw["n_layers"], r.model_type
    if mt == "gemma2":  # even layers windowed, odd ones global
        return ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(L)]
    if mt in ("gemma3_text", "cohere2"):
        every = r.get("sliding_window_pattern") or r.get("_sliding_window_pattern") or (6 if mt == "gemma3_text" else 4)
        return _pattern(L, every)
    if mt == "gpt_oss":
        return _pattern(L, 2)
    if mt == "llama4_text":  # chunked where rotary positions are used: every layer but each 4th
        every = r.get("no_rope_layer_interval", 4)
        rope = r.get("no_rope_layers") or [int((i + 1) % every != 0) for i in range(L)]
        chunked = r.get("attention_chunk_size") is not None
        return ["chunked_attention" if on and chunked else "full_attention" for on in rope]
    if mt in ("qwen2", "qwen2_moe", "qwen3"):  # the layers past max_window_layers, if windows are on
        first = r.get("max_window_layers") or 0
        on = r.get("use_sliding_window") and window
        return ["sliding_attention" if on and i >= first else "full_attention" for i in range(L)]
    if mt == "qwen3_moe":  # every layer, if windows are on
        return ["sliding_attention" if r.get("use_sliding_window") and window else "full_attention"] * L
    return None


def _windows(r: _Reader, kw: dict, *, every_layer: bool) -> None:
    """Sliding windows: every layer (Mistral, Phi-3, StarCoder2), or the layers ``layer_types``
    (transformers 5) or the family's rule marks as ``sliding_attention``; Llama 4's
    ``chunked_attention`` layers attend within chunks of ``attention_chunk_size``."""
    window = r.get("sliding_window")
    r.get("use_sliding_window")
    r.get("max_window_layers")
    types = r.get("layer_types")
    if types is None:
        types = _types_by_rule(r, kw, window)
    if types is None:
        if every_layer and window:
            kw["sliding_window"] = window
        return
    unknown = sorted(set(types) - {"full_attention", "sliding_attention", "chunked_attention"})
    if unknown:
        raise ValueError(f"layer_types holds {', '.join(unknown)}: only full, sliding and chunked attention are mapped")
    if len(types) != kw["n_layers"]:
        raise ValueError(f"layer_types lists {len(types)} layers, num_hidden_layers says {kw['n_layers']}")
    sliding, chunked = types.count("sliding_attention"), types.count("chunked_attention")
    if sliding and chunked:
        raise ValueError("layer_types mixes sliding and chunked attention: one kind of local layer is mapped")
    if chunked:
        if r.model_type != "llama4_text":
            raise ValueError(f"layer_types has chunked_attention layers in a {r.model_type} config: not mapped")
        kw["sliding_window"] = r.need("attention_chunk_size")
        kw["chunked_attention"] = True
    elif sliding:
        if not window:
            raise ValueError("layer_types has sliding_attention layers but the config has no sliding_window")
        kw["sliding_window"] = window
    local = sliding + chunked
    if local and local < kw["n_layers"]:
        kw["window_layers"] = local


def _llama(r, kw):
    _decoder(r, kw)
    attn_b, mlp_b = bool(r.get("attention_bias", False)), bool(r.get("mlp_bias", False))
    if attn_b != mlp_b:
        raise ValueError(
            f"attention_bias={attn_b} with mlp_bias={mlp_b}: biases on only one of the two "
            "are not mapped (bias=True puts them on every linear layer)"
        )
    kw["bias"] = attn_b


def _no_attention_bias(r, kw):
    r.refuse_if("attention_bias", "a bias on Q, K, V and O (its models have none)")
    r.refuse_if("mlp_bias", "a bias on the FFN (its models have none)")


def _mistral(r, kw):
    _decoder(r, kw)
    _no_attention_bias(r, kw)
    _windows(r, kw, every_layer=True)


def _mixtral(r, kw):
    _mistral(r, kw)
    kw["n_experts"] = r.get("num_local_experts", 8)
    kw["experts_per_token"] = r.get("num_experts_per_tok", 2)


def _qwen2(r, kw):
    _decoder(r, kw)
    _no_attention_bias(r, kw)
    # transformers' Qwen2 always puts biases on Q, K and V (and none on O or the FFN); it has no
    # switch for them, so a ``qkv_bias`` key changes nothing there: false is refused, not obeyed
    qkv = r.get("qkv_bias", True)
    if r.model_type == "qwen2" and qkv is not True:
        raise ValueError(
            f"qkv_bias={qkv!r} in a qwen2 config: transformers' Qwen2 has no such switch and always "
            "builds biases on Q, K and V (counted here); a model without them is not mapped"
        )
    kw["qkv_bias"] = bool(qkv)  # Qwen2-MoE reads it: biases on Q, K and V only, or none
    _windows(r, kw, every_layer=False)


def _qwen2_moe(r, kw):
    _qwen2(r, kw)
    kw["n_experts"] = r.need("num_experts")
    kw["experts_per_token"] = r.need("num_experts_per_tok")
    kw["expert_d_ff"] = r.need("moe_intermediate_size")
    shared = r.get("shared_expert_intermediate_size", 0)
    if shared:
        kw["n_shared_experts"] = 1
        kw["shared_expert_d_ff"] = shared
        kw["shared_expert_gate"] = True  # a d x 1 sigmoid gate on the shared expert's output
    if r.get("mlp_only_layers", []) or r.get("decoder_sparse_step", 1) != 1:
        raise ValueError(
            "mlp_only_layers or decoder_sparse_step != 1: dense layers among the expert ones are not mapped"
        )


def _gemma(r, kw):
    _decoder(r, kw)
    _no_attention_bias(r, kw)


def _gemma2(r, kw):
    _gemma(r, kw)
    kw["norms_per_layer"] = 4  # before and after attention, before and after the FFN
    _windows(r, kw, every_layer=False)


def _phi3(r, kw):
    _decoder(r, kw)  # fused qkv_proj and gate_up_proj hold the same weights as Llama's
    _no_attention_bias(r, kw)
    _windows(r, kw, every_layer=True)


def _olmo2(r, kw):
    _decoder(r, kw)
    _no_attention_bias(r, kw)
    kw["qk_norm"] = True  # RMSNorm over the whole Q and K outputs; the block's two norms follow each sublayer


def _starcoder2(r, kw):
    _decoder(r, kw)
    kw.update(gated=False, norm="layernorm", bias=bool(r.get("use_bias", True)))
    _windows(r, kw, every_layer=True)


def _gpt2(r, kw):
    kw.update(gated=False, bias=True, norm="layernorm")
    kw["d_model"] = r.need("n_embd")
    kw["n_layers"] = r.need("n_layer")
    kw["n_heads"] = r.need("n_head")
    kw["vocab"] = r.need("vocab_size")
    kw["d_ff"] = r.get("n_inner") or 4 * kw["d_model"]  # n_inner is null in GPT-2's own configs
    positions = r.get("n_positions")
    if positions is not None:
        kw["learned_positions"] = positions  # a learned table of n_positions rows
        kw["context_window"] = positions
    act = r.cfg.get("activation_function", "gelu_new")
    if "glu" in str(act).lower():
        raise ValueError(f"activation_function {act!r}: a gated FFN in a gpt2 config is not mapped")


def _gpt_neox(r, kw):
    _decoder(r, kw)
    if not r.get("attention_bias", True):
        raise ValueError("attention_bias=False in a gpt_neox config: the FFN keeps its biases, which is not mapped")
    kw.update(gated=False, norm="layernorm", bias=True)  # parallel residual or not: two LayerNorms a block


def _falcon(r, kw):
    kw.update(gated=False, norm="layernorm", bias=bool(r.get("bias", False)))
    kw["d_model"] = d = r.need("hidden_size")
    kw["n_layers"] = r.need("num_hidden_layers")
    kw["n_heads"] = heads = r.need("num_attention_heads")
    kw["vocab"] = r.need("vocab_size")
    kw["d_ff"] = r.get("ffn_hidden_size") or 4 * d
    new_arch, parallel = bool(r.get("new_decoder_architecture", False)), bool(r.get("parallel_attn", True))
    multi_query = bool(r.get("multi_query", True))
    lns = r.get("num_ln_in_parallel_attn")
    if new_arch:
        kw["n_kv_heads"] = r.need("num_kv_heads")
        kw["cache_kv_heads"] = heads  # transformers broadcasts K and V to every query head, then caches them
        lns = 2 if lns is None else lns  # transformers' default for the new architecture
    else:
        kw["n_kv_heads"] = 1 if multi_query else heads
        r.get("num_kv_heads")
    # ln_attn and ln_mlp; else one input LayerNorm, and a second only where the block is not parallel
    kw["norms_per_layer"] = 2 if (new_arch and lns == 2) or not parallel else 1


def _bloom(r, kw):
    kw.update(gated=False, norm="layernorm", bias=True, embedding_norm=True)  # a LayerNorm after the lookup
    kw["d_model"] = d = r.need("hidden_size", "n_embed")
    kw["n_layers"] = r.need("n_layer", "num_hidden_layers")
    kw["n_heads"] = r.need("n_head", "num_attention_heads")
    kw["vocab"] = r.need("vocab_size")
    kw["d_ff"] = 4 * d  # BLOOM's FFN is 4 d wide


def _deepseek(r, kw):
    _decoder(r, kw)
    r.refuse_if("attention_bias", "a bias on the attention projections (DeepSeek's models have none)")
    r.refuse_if("mlp_bias", "a bias on the FFN (DeepSeek's models have none)")
    kw.pop("head_dim", None)  # transformers' head_dim here is the rotary size, read below
    kw["mla"] = mla = {  # MLA(...) fields; transformer.py builds the MLA
        "kv_lora_rank": r.need("kv_lora_rank"),
        "qk_nope_head_dim": r.need("qk_nope_head_dim"),
        "qk_rope_head_dim": r.need("qk_rope_head_dim"),
        "v_head_dim": r.need("v_head_dim"),
        "q_lora_rank": r.get("q_lora_rank"),
    }
    qk = r.get("qk_head_dim")
    if qk is not None and qk != mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"]:
        raise ValueError(f"qk_head_dim={qk} is not qk_nope_head_dim + qk_rope_head_dim")
    experts = r.get("n_routed_experts")
    if experts:
        kw["n_experts"] = experts
        kw["experts_per_token"] = r.need("num_experts_per_tok")
        kw["expert_d_ff"] = r.need("moe_intermediate_size")
        kw["n_shared_experts"] = r.get("n_shared_experts", 0)
        kw["n_dense_layers"] = r.get("first_k_dense_replace", 0)
    r.get("num_nextn_predict_layers")  # DeepSeek-V3's multi-token-prediction module: not built by transformers


def _attention_bias_only(r, kw, key="attention_bias"):
    """``attention_bias`` on Q, K, V and O; the FFN has none (Qwen 3, Gemma 3, Cohere, Llama 4)."""
    if r.get(key, False):
        kw.update(bias=True, ffn_bias=False)


def _experts(r, kw, count_key="num_local_experts", *others):
    kw["n_experts"] = r.need(count_key, *others)
    kw["experts_per_token"] = r.need("num_experts_per_tok")


def _qwen3(r, kw):
    _decoder(r, kw)
    _attention_bias_only(r, kw)
    kw["qk_head_norm"] = True  # an RMSNorm of head_dim on Q and on K, shared by the heads
    _windows(r, kw, every_layer=False)


def _qwen3_moe(r, kw):
    _qwen3(r, kw)
    _experts(r, kw, "num_experts", "num_local_experts")
    kw["expert_d_ff"] = r.need("moe_intermediate_size")
    # dense layers (of intermediate_size): those listed, and those decoder_sparse_step skips
    only, step = r.get("mlp_only_layers", []), r.get("decoder_sparse_step", 1)
    dense = sum(1 for i in range(kw["n_layers"]) if i in only or (i + 1) % step)
    if dense:
        kw["n_dense_layers"] = dense


def _gemma3_text(r, kw):
    _decoder(r, kw)
    _attention_bias_only(r, kw)
    kw["norms_per_layer"] = 4  # before and after attention, before and after the FFN
    kw["qk_head_norm"] = True
    r.get("rope_local_base_freq")  # the local layers' rotary base: no parameters
    r.get("sliding_window_pattern")  # the rule behind layer_types, read there when the list is absent
    r.get("_sliding_window_pattern")
    _windows(r, kw, every_layer=False)


def _granite(r, kw):
    _decoder(r, kw)
    attn_b, mlp_b = bool(r.get("attention_bias", False)), bool(r.get("mlp_bias", False))
    kw["bias"] = attn_b
    if mlp_b != attn_b:
        kw["ffn_bias"] = mlp_b
    _granite_scalings(r)


def _granitemoe(r, kw):
    _decoder(r, kw)
    _no_attention_bias(r, kw)
    _granite_scalings(r)
    _experts(r, kw)
    shared = r.get("shared_intermediate_size", 0) if r.model_type == "granitemoeshared" else 0
    if shared:
        kw["n_shared_experts"] = 1
        kw["shared_expert_d_ff"] = shared


def _granite_scalings(r):
    """Granite's scalings of activations: no parameters, 0 FLOPs."""
    for key in ("embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling"):
        r.get(key)


def _cohere(r, kw):
    _decoder(r, kw)
    _attention_bias_only(r, kw)
    # one bias-free LayerNorm feeds attention and FFN in parallel: a gain of d, counted as RMSNorm's
    kw["norms_per_layer"] = 1
    r.get("logit_scale")
    if r.model_type == "cohere":
        kw["qk_norm"] = bool(r.get("use_qk_norm", False))  # a gain per head: H h and G h
    else:
        r.get("sliding_window_pattern")
        _windows(r, kw, every_layer=False)


def _glm4(r, kw):
    _decoder(r, kw)
    r.refuse_if("mlp_bias", "a bias on the FFN")
    kw["qkv_bias"] = bool(r.get("attention_bias", True))  # biases on Q, K and V; none on O
    kw["norms_per_layer"] = 4  # GLM-4 adds a norm after attention and after the FFN


def _glm4_moe(r, kw):
    _decoder(r, kw)
    kw["qkv_bias"] = bool(r.get("attention_bias", False))
    kw["qk_head_norm"] = bool(r.get("use_qk_norm", False))
    kw["n_experts"] = r.need("n_routed_experts")
    kw["experts_per_token"] = r.need("num_experts_per_tok")
    kw["expert_d_ff"] = r.need("moe_intermediate_size")
    kw["n_shared_experts"] = r.get("n_shared_experts", 0)  # one MLP n times as wide: the same weights
    kw["n_dense_layers"] = r.get("first_k_dense_replace", 0)
    r.get("num_nextn_predict_layers")  # the multi-token-prediction layer: not built by transformers


def _opt(r, kw):
    kw.update(gated=False, norm="layernorm")
    kw["d_model"] = d = r.need("hidden_size")
    kw["d_ff"] = r.need("ffn_dim")
    kw["n_layers"] = r.need("num_hidden_layers")
    kw["n_heads"] = r.need("num_attention_heads")
    kw["vocab"] = r.need("vocab_size")
    kw["bias"] = bool(r.get("enable_bias", True))
    positions = r.need("max_position_embeddings")
    kw["learned_positions"] = positions + 2  # OPT's table keeps two rows past the context (an offset of 2)
    proj = r.get("word_embed_proj_dim", d)
    if proj != d:
        raise ValueError(
            f"word_embed_proj_dim={proj} with hidden_size={d} in an opt config: the projections in and out "
            "of a narrower embedding (OPT-350m) are not mapped"
        )
    if not r.get("do_layer_norm_before", True) or r.get("_remove_final_layer_norm", False):
        raise ValueError(
            "do_layer_norm_before=False or _remove_final_layer_norm=True in an opt config: a post-norm block "
            "without the final LayerNorm (OPT-350m) is not mapped"
        )
    if not r.get("layer_norm_elementwise_affine", True):
        raise ValueError(
            "layer_norm_elementwise_affine=False in an opt config: LayerNorms without weights are not mapped"
        )
    for key in ("dropout", "layerdrop", "init_std", "prefix"):  # training settings, and the tokenizer's prefix
        r.get(key)


def _gptj(r, kw):
    # attention and FFN in parallel after one LayerNorm; Q, K, V, O without biases, the FFN and the
    # unembedding with them; rotary positions on rotary_dim of each head
    kw.update(gated=False, norm="layernorm", norms_per_layer=1, bias=False, ffn_bias=True, unembedding_bias=True)
    kw["d_model"] = d = r.need("n_embd")
    kw["n_layers"] = r.need("n_layer")
    kw["n_heads"] = r.need("n_head")
    kw["vocab"] = r.need("vocab_size")
    kw["d_ff"] = r.get("n_inner") or 4 * d
    r.get("rotary_dim")
    if r.get("rotary") is False:
        raise ValueError("rotary=False in a gptj config: GPT-J without rotary positions is not mapped")
    positions = r.get("n_positions")
    if positions is not None:
        kw["context_window"] = positions
    act = r.cfg.get("activation_function", "gelu_new")
    if "glu" in str(act).lower():
        raise ValueError(f"activation_function {act!r}: a gated FFN in a gptj config is not mapped")


def _phimoe(r, kw):
    _decoder(r, kw)
    kw["norm"] = "layernorm"
    if r.get("attention_bias", False):
        kw.update(bias=True, ffn_bias=False)
    kw["unembedding_bias"] = bool(r.get("lm_head_bias", False))
    _experts(r, kw)
    r.get("input_jitter_noise")
    _windows(r, kw, every_layer=True)


def _gpt_oss(r, kw):
    _decoder(r, kw)
    # every expert has biases (always), the router too; Q, K, V and O have them by attention_bias;
    # one learned sink logit per head and layer
    kw.update(bias=bool(r.get("attention_bias", True)), ffn_bias=True, router_bias=True, attention_sinks=True)
    _experts(r, kw)
    alias = r.get("experts_per_token")  # the original checkpoints' name for num_experts_per_tok
    if alias is not None and alias != kw["experts_per_token"]:
        raise ValueError(f"experts_per_token={alias} and num_experts_per_tok={kw['experts_per_token']} disagree")
    r.get("initial_context_length")  # the context the rotary scaling starts from: no parameters
    kw["expert_d_ff"] = kw["d_ff"]
    for key in ("swiglu_alpha", "swiglu_limit"):
        r.get(key)  # the clamped SwiGLU: an activation, 0 FLOPs
    _windows(r, kw, every_layer=False)


def _llama4_text(r, kw):
    _decoder(r, kw)
    _attention_bias_only(r, kw)
    L = kw["n_layers"]
    kw["expert_d_ff"] = kw["d_ff"]  # intermediate_size: each expert and the shared expert
    kw["d_ff"] = r.need("intermediate_size_mlp")  # the dense layers' FFN
    _experts(r, kw)
    kw["n_shared_experts"] = 1
    step = r.get("interleave_moe_layer_step", 1)
    moe = r.get("moe_layers")
    moe = list(range(step - 1, L, step)) if moe is None else moe
    if not moe or any(not 0 <= i < L for i in moe):
        raise ValueError(f"moe_layers={moe!r} in a llama4_text config: the expert layers must be among 0..{L - 1}")
    if len(moe) < L:
        kw["n_dense_layers"] = L - len(set(moe))  # where they sit changes no count
    # transformers runs every expert on every token, scaled by its router score (0 for the others)
    kw["eager_dense_experts"] = True
    for key in ("use_qk_norm", "attn_temperature_tuning", "floor_scale", "attn_scale"):
        r.get(key)  # an L2 norm without weights, and scalings of the queries: no parameters
    r.get("for_llm_compressor")  # a flag for a quantisation tool
    r.get("no_rope_layers")  # which layers skip rotary positions (and so which are chunked, read below)
    r.get("no_rope_layer_interval")
    _windows(r, kw, every_layer=False)


_FAMILIES = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "phi3": _phi3,
    "olmo2": _olmo2,
    "starcoder2": _starcoder2,
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "falcon": _falcon,
    "bloom": _bloom,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "gemma3_text": _gemma3_text,
    "granite": _granite,
    "granitemoe": _granitemoe,
    "granitemoeshared": _granitemoe,
    "cohere": _cohere,
    "cohere2": _cohere,
    "glm4": _glm4,
    "glm4_moe": _glm4_moe,
    "opt": _opt,
    "gptj": _gptj,
    "phimoe": _phimoe,
    "gpt_oss": _gpt_oss,
    "llama4_text": _llama4_text,
}


#: Families that are not transformers, and where they are read.
_NOT_TRANSFORMERS = {
    "mamba": "a state-space model, not a transformer: read it with rl.read_model(config) (a StateSpaceConfig)",
    "mamba2": "a state-space model, not a transformer: read it with rl.read_model(config) (a StateSpaceConfig)",
    "jamba": "a hybrid of attention and state-space layers: read it with rl.read_model(config) (a StateSpaceConfig)",
    **{
        name: "a hybrid whose state-space or linear-attention mixers this reader does not map (mamba, mamba2 "
        "and jamba are mapped); describe its attention part with TransformerConfig(...) and count the rest by hand"
        for name in ("bamba", "falcon_h1", "zamba", "zamba2", "nemotron_h", "granitemoehybrid", "qwen3_next", "lfm2")
    },
}

#: Multimodal wrappers: the text family they hold (when text_config names none), and the default of
#: their own ``tie_word_embeddings``, which transformers obeys over the text config's.
_WRAPPERS = {
    "llava": ("llama", False),
    "mistral3": ("mistral", True),
    "gemma3": ("gemma3_text", True),
    "llama4": ("llama4_text", False),
}

#: A wrapper's keys about images: they change no count of the text model (the vision tower and the
#: projector are not counted; the model's text counts are).
_WRAPPER_NO_COUNT = frozenset(
    {
        "vision_config",
        "image_token_index",
        "image_token_id",
        "image_seq_length",
        "projector_hidden_act",
        "vision_feature_select_strategy",
        "vision_feature_layer",
        "multimodal_projector_bias",
        "spatial_merge_size",
        "mm_tokens_per_image",
        "boi_token_index",
        "eoi_token_index",
        "initializer_range",
        "ignore_index",
    }
)


def _check_must_be(cfg: dict, model_type: str) -> None:
    for key, allowed in _MUST_BE.items():
        if key in cfg:
            ok = cfg[key] in allowed if isinstance(allowed, tuple) else cfg[key] == allowed
            if not ok:
                raise ValueError(f"{key}={cfg[key]!r} in a {model_type} config is not mapped (only {allowed!r} is)")


def _unwrap(cfg: dict, ignore) -> dict:
    """The text config of a multimodal wrapper, with the wrapper's ``tie_word_embeddings``."""
    wrapper = cfg["model_type"]
    text_type, tied = _WRAPPERS[wrapper]
    unknown = sorted(
        k
        for k in cfg
        if k not in _WRAPPER_NO_COUNT
        and k not in _NO_COUNT
        and k not in ignore
        and k not in _MUST_BE
        and k not in ("model_type", "text_config", "tie_word_embeddings", "vocab_size")
    )
    _check_must_be(cfg, wrapper)
    if unknown:
        raise ValueError(
            f"cannot map these {wrapper} config fields to a count: {', '.join(unknown)}. "
            "If they change no parameter or FLOP count, pass ignore=[...] with their names"
        )
    text = cfg.get("text_config")
    if not isinstance(text, Mapping):
        raise ValueError(f"a {wrapper} config needs its text model as text_config (a dict), got {text!r}")
    text = dict(text)
    text.setdefault("model_type", text_type)
    vocab = cfg.get("vocab_size")  # older llava configs put it at the top
    if vocab is not None and text.setdefault("vocab_size", vocab) != vocab:
        raise ValueError(
            f"vocab_size={vocab} in a {wrapper} config disagrees with its text_config's {text['vocab_size']}"
        )
    if text["model_type"] in _WRAPPERS or text["model_type"] not in _FAMILIES:
        raise ValueError(
            f"the text_config of a {wrapper} config has model_type {text['model_type']!r}, which this reader does not map"
        )
    text["tie_word_embeddings"] = cfg.get("tie_word_embeddings", tied)
    return text


def config_kwargs(config, *, seq_len=None, ignore=()) -> dict:
    """TransformerConfig keyword arguments for a Hugging Face config (see the module docstring).

    A multimodal wrapper (llava, mistral3, gemma3, llama4) is read as its text model: the
    ``text_config``, with the wrapper's ``tie_word_embeddings``; the vision tower is not counted.
    """
    cfg = _load(config)
    if isinstance(ignore, str) or not all(isinstance(k, str) for k in ignore):
        raise TypeError(f"ignore must be a list of config keys, got {ignore!r}")
    if cfg.get("model_type") in _WRAPPERS:
        cfg = _unwrap(cfg, ignore)
    model_type = cfg.get("model_type")
    if model_type in _NOT_TRANSFORMERS:
        raise ValueError(f"model_type {model_type!r} is {_NOT_TRANSFORMERS[model_type]}")
    if model_type not in _FAMILIES:
        raise ValueError(
            f"model_type {model_type!r} is not one this reader maps; supported: "
            f"{', '.join((*_FAMILIES, *_WRAPPERS))}. Describe the model with TransformerConfig(...) directly"
        )
    reader = _Reader(cfg, model_type)
    kwargs: dict = {"tied_embeddings": bool(reader.get("tie_word_embeddings", _TIED_BY_DEFAULT[model_type]))}
    _FAMILIES[model_type](reader, kwargs)
    window = reader.get("max_position_embeddings")
    if window is not None:
        kwargs["context_window"] = window
    reader.read.update(k for k in _MUST_BE if k in cfg)
    _check_must_be(cfg, model_type)
    unknown = sorted(k for k in cfg if k not in reader.read and k not in _NO_COUNT and k not in ignore)
    if unknown:
        raise ValueError(
            f"cannot map these {model_type} config fields to a count: {', '.join(unknown)}. "
            "If they change no parameter or FLOP count, pass ignore=[...] with their names"
        )
    if seq_len is not None:
        kwargs["seq_len"] = seq_len
    return kwargs


# --- state-space and hybrid models ------------------------------------------------------------

#: State-space keys that change no count, by reason.
_SSM_NO_COUNT = frozenset(
    {
        # initialisation of dt and of the residual path
        "time_step_scale",
        "time_step_min",
        "time_step_max",
        "time_step_init_scheme",
        "time_step_floor",
        "time_step_limit",
        "rescale_prenorm_residual",
        # which implementation runs the same scan
        "use_mambapy",
        "use_associative_scan",
        "use_mamba_kernels",
        "residual_in_fp32",
        "norm_before_gate",  # the order of the gate and the norm: the same operations
    }
)

#: Families and their default for ``tie_word_embeddings``.
_SSM_TIED_BY_DEFAULT = {"mamba": True, "mamba2": False, "jamba": False}


def _dt_rank(r: _Reader, key: str, d: int) -> int:
    rank = r.get(key, "auto")
    return math.ceil(d / 16) if rank == "auto" else rank  # transformers' "auto": ceil(d / 16)


def _mamba(r: _Reader, kw: dict) -> None:
    kw["d_model"] = d = r.need("hidden_size")
    kw["n_layers"] = r.need("num_hidden_layers")
    kw["vocab"] = r.need("vocab_size")
    kw["d_state"] = r.need("state_size")
    kw["d_conv"] = r.get("conv_kernel", 4)
    expand = r.get("expand", 2)
    kw["d_inner"] = inner = int(expand * d)
    given = r.get("intermediate_size")
    if given is not None and given != inner:
        raise ValueError(f"intermediate_size={given} is not expand * hidden_size ({inner}) in a {r.model_type} config")
    kw["conv_bias"] = bool(r.get("use_conv_bias", True))
    kw["proj_bias"] = bool(r.get("use_bias", False))
    if r.model_type == "mamba":
        kw["dt_rank"] = _dt_rank(r, "time_step_rank", d)
        return
    r.get("time_step_rank")  # Mamba-2 has no dt projection: dt comes out of in_proj, one per head
    heads, head = r.need("num_heads"), r.need("head_dim")
    if heads * head != inner:
        raise ValueError(
            f"num_heads * head_dim = {heads * head} is not expand * hidden_size ({inner}) in a mamba2 config"
        )
    if r.get("rms_norm", True) is not True:
        raise ValueError("rms_norm=False in a mamba2 config: a mixer without its gated RMSNorm is not mapped")
    kw["n_ssm_heads"] = heads
    kw["n_groups"] = r.get("n_groups", 1)
    kw["chunk_size"] = r.get("chunk_size", 256)


def _jamba(r: _Reader, kw: dict) -> None:
    kw["d_model"] = d = r.need("hidden_size")
    kw["n_layers"] = L = r.need("num_hidden_layers")
    kw["vocab"] = r.need("vocab_size")
    kw["d_state"] = r.get("mamba_d_state", 16)
    kw["d_conv"] = r.get("mamba_d_conv", 4)
    kw["d_inner"] = r.get("mamba_expand", 2) * d
    kw["dt_rank"] = _dt_rank(r, "mamba_dt_rank", d)
    kw["conv_bias"] = bool(r.get("mamba_conv_bias", True))
    kw["proj_bias"] = bool(r.get("mamba_proj_bias", False))
    kw["dt_norms"] = True  # RMSNorms on dt, B and C inside every Jamba mixer
    period, offset = r.get("attn_layer_period", 8), r.get("attn_layer_offset", 4)
    attention = sum(1 for i in range(L) if i % period == offset)
    e_period, e_offset = r.get("expert_layer_period", 2), r.get("expert_layer_offset", 1)
    experts = r.get("num_experts", 16)
    moe = sum(1 for i in range(L) if i % e_period == e_offset) if experts > 1 else 0
    t = {  # every layer's FFN, and the attention of the attention layers
        "d_model": d,
        "d_ff": r.need("intermediate_size"),
        "n_layers": L,
        "n_heads": r.need("num_attention_heads"),
        "n_kv_heads": r.get("num_key_value_heads"),
        "vocab": kw["vocab"],
        "tied_embeddings": kw["tied_embeddings"],
    }
    head = r.get("head_dim")
    if head is not None:
        t["head_dim"] = head
    if moe:
        t.update(n_experts=experts, experts_per_token=r.need("num_experts_per_tok"))
        if moe < L:
            t["n_dense_layers"] = L - moe
    kw["transformer"] = t
    kw["n_attention_layers"] = attention
    r.get("max_position_embeddings")  # no position table: Jamba's attention has no positions at all


_SSM_FAMILIES = {"mamba": _mamba, "mamba2": _mamba, "jamba": _jamba}


def state_space_kwargs(config, *, ignore=()) -> dict:
    """StateSpaceConfig keyword arguments for a mamba, mamba2 or jamba config (same rules as
    :func:`config_kwargs`: every key read, skipped for a stated reason, or refused by name)."""
    cfg = _load(config)
    if isinstance(ignore, str) or not all(isinstance(k, str) for k in ignore):
        raise TypeError(f"ignore must be a list of config keys, got {ignore!r}")
    model_type = cfg.get("model_type")
    if model_type not in _SSM_FAMILIES:
        raise ValueError(
            f"model_type {model_type!r} is not a state-space family this reader maps; supported: "
            f"{', '.join(_SSM_FAMILIES)}"
        )
    reader = _Reader(cfg, model_type)
    kwargs: dict = {"tied_embeddings": bool(reader.get("tie_word_embeddings", _SSM_TIED_BY_DEFAULT[model_type]))}
    _SSM_FAMILIES[model_type](reader, kwargs)
    reader.read.update(k for k in _MUST_BE if k in cfg)
    _check_must_be(cfg, model_type)
    unknown = sorted(
        k for k in cfg if k not in reader.read and k not in _NO_COUNT and k not in _SSM_NO_COUNT and k not in ignore
    )
    if unknown:
        raise ValueError(
            f"cannot map these {model_type} config fields to a count: {', '.join(unknown)}. "
            "If they change no parameter or FLOP count, pass ignore=[...] with their names"
        )
    return kwargs


def read_model(config, *, seq_len=None, name=None, ignore=()):
    """Any family this reader maps, from a Hugging Face config: a
    :class:`~roofline_lib.models.transformer.TransformerConfig`, or for mamba, mamba2 and jamba a
    :class:`~roofline_lib.models.state_space.StateSpaceConfig` (``seq_len`` is a transformer's
    training length; a state-space config has none)."""
    from .state_space import StateSpaceConfig
    from .transformer import TransformerConfig

    cfg = _load(config)
    if cfg.get("model_type") in _SSM_FAMILIES:
        return StateSpaceConfig.from_hf_config(cfg, name=name, ignore=ignore)
    return TransformerConfig.from_hf_config(cfg, seq_len=seq_len, name=name, ignore=ignore)


def families() -> dict[str, str]:
    """Every ``model_type`` the reader maps, with what it reads as: ``"transformer"``,
    ``"state-space"``, ``"hybrid"``, or ``"wrapper of <text family>"`` (multimodal: the text model)."""
    out = {name: "transformer" for name in _FAMILIES}
    out.update({name: f"wrapper of {text}" for name, (text, _) in _WRAPPERS.items()})
    out.update({"mamba": "state-space", "mamba2": "state-space", "jamba": "hybrid"})
    return out
