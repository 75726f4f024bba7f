"""Reading a Hugging Face config into :class:`~roofline_lib.models.transformer.TransformerConfig` fields.

Only the architecture is read; nothing is downloaded. A config may be a ``config.json`` path,
its dict, a transformers config object, or that object's ``to_dict()`` or ``to_diff_dict()``.
The rule: every key is either read by its family's reader, listed in :data:`_NO_COUNT` with the
reason it changes no parameter, FLOP or KV-cache count, or refused with an error that names
it, so an unknown design never turns into a silently wrong count.

The training length is never read from a config: ``max_position_embeddings`` is the longest
context the model accepts (kept as ``context_window``), not the length it was trained at.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

__all__: list[str] = []

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


def _windows(r: _Reader, kw: dict, *, every_layer: bool) -> None:
    """Sliding windows: every layer (Mistral, Phi-3, StarCoder2), or the layers ``layer_types``
    (transformers 5) or the family's rule marks as ``sliding_attention``."""
    window = r.get("sliding_window")
    types = r.get("layer_types")
    use_window = r.get("use_sliding_window")
    first_windowed = r.get("max_window_layers") or 0
    if types is not None:
        unknown = sorted(set(types) - {"full_attention", "sliding_attention"})
        if unknown:
            raise ValueError(f"layer_types holds {', '.join(unknown)}: only full and sliding attention are mapped")
        if len(types) != kw["n_layers"]:
            raise ValueError(f"layer_types lists {len(types)} layers, num_hidden_layers says {kw['n_layers']}")
        sliding = types.count("sliding_attention")
        if sliding:
            if not window:
                raise ValueError("layer_types has sliding_attention layers but the config has no sliding_window")
            kw["sliding_window"] = window
            if sliding < kw["n_layers"]:
                kw["window_layers"] = sliding
        return
    if r.model_type == "gemma2":  # before layer_types: even layers windowed, odd ones global
        kw["sliding_window"] = r.need("sliding_window")
        kw["window_layers"] = (kw["n_layers"] + 1) // 2
    elif r.model_type in ("qwen2", "qwen2_moe"):  # before layer_types: the layers past max_window_layers
        if use_window and window and first_windowed < kw["n_layers"]:
            kw["sliding_window"] = window
            kw["window_layers"] = kw["n_layers"] - first_windowed
    elif every_layer and window:
        kw["sliding_window"] = window


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
    kw["qkv_bias"] = bool(r.get("qkv_bias", True))  # Qwen2: biases on Q, K and V only
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
}


def config_kwargs(config, *, seq_len=None, ignore=()) -> dict:
    """TransformerConfig keyword arguments for a Hugging Face config (see the module docstring)."""
    cfg = _load(config)
    if isinstance(ignore, str) or not all(isinstance(k, str) for k in ignore):
        raise TypeError(f"ignore must be a list of config keys, got {ignore!r}")
    model_type = cfg.get("model_type")
    if model_type not in _FAMILIES:
        raise ValueError(
            f"model_type {model_type!r} is not one this reader maps; supported: "
            f"{', '.join(_FAMILIES)}. Describe the model with TransformerConfig(...) directly"
        )
    reader = _Reader(cfg, model_type)
    kwargs: dict = {"tied_embeddings": bool(reader.get("tie_word_embeddings", _TIED_BY_DEFAULT[model_type]))}
    _FAMILIES[model_type](reader, kwargs)
    window = reader.get("max_position_embeddings")
    if window is not None:
        kwargs["context_window"] = window
    for key, allowed in _MUST_BE.items():
        if key in cfg:
            reader.read.add(key)
            ok = cfg[key] in allowed if isinstance(allowed, tuple) else cfg[key] == allowed
            if not ok:
                raise ValueError(f"{key}={cfg[key]!r} in a {model_type} config is not mapped (only {allowed!r} is)")
    unknown = sorted(k for k in cfg if k not in reader.read and k not in _NO_COUNT and k not in ignore)
    if unknown:
        raise ValueError(
            f"cannot map these {model_type} config fields to a count: {', '.join(unknown)}. "
            "If they change no parameter or FLOP count, pass ignore=[...] with their names"
        )
    if seq_len is not None:
        kwargs["seq_len"] = seq_len
    return kwargs
