"""Reading a Hugging Face ``config.json`` into :class:`~roofline_lib.transformer.TransformerConfig` fields.

Only the architecture is read; nothing is downloaded. The rule: every key is either mapped,
known not to change any count (token ids, dropout rates, rope settings, epsilons), or refused
with an error that names it, so an unknown design never turns into a silently wrong count.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__: list[str] = []

#: Keys that change no parameter, FLOP or byte count, in any supported family.
_NO_COUNT = frozenset(
    {
        "architectures",
        "model_type",
        "torch_dtype",
        "dtype",
        "transformers_version",
        "_name_or_path",
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "initializer_range",
        "use_cache",
        "rms_norm_eps",
        "layer_norm_eps",
        "layer_norm_epsilon",
        "rope_theta",
        "rope_scaling",
        "attention_dropout",
        "hidden_dropout",
        "resid_pdrop",
        "embd_pdrop",
        "attn_pdrop",
        "pretraining_tp",
        "tokenizer_class",
        "output_router_logits",
        "router_aux_loss_coef",
        "router_jitter_noise",
        "summary_activation",
        "summary_first_dropout",
        "summary_proj_to_labels",
        "summary_type",
        "summary_use_proj",
        "task_specific_params",
        "scale_attn_weights",
        "scale_attn_by_inverse_layer_idx",
        "reorder_and_upcast_attn",
        "n_ctx",
        "max_window_layers",
        "attn_logit_softcapping",
        "final_logit_softcapping",
        "id2label",
        "label2id",
        "use_sliding_window",
        "hidden_act",
        "hidden_activation",
        "activation_function",
    }
)

_LLAMA_LIKE = {
    "hidden_size": "d_model",
    "intermediate_size": "d_ff",
    "num_hidden_layers": "n_layers",
    "num_attention_heads": "n_heads",
    "num_key_value_heads": "n_kv_heads",
    "head_dim": "head_dim",
    "vocab_size": "vocab",
    "max_position_embeddings": "seq_len",
}

_GPT2 = {
    "n_embd": "d_model",
    "n_inner": "d_ff",
    "n_layer": "n_layers",
    "n_head": "n_heads",
    "vocab_size": "vocab",
    "n_positions": "seq_len",
}

#: model_type -> (key map, fixed fields, default for tie_word_embeddings, extra keys handled below)
_FAMILIES = {
    "llama": (_LLAMA_LIKE, {"gated": True}, False, {"tie_word_embeddings", "attention_bias", "mlp_bias"}),
    "mistral": (_LLAMA_LIKE, {"gated": True}, False, {"tie_word_embeddings", "sliding_window", "attention_bias"}),
    "mixtral": (
        _LLAMA_LIKE,
        {"gated": True},
        False,
        {"tie_word_embeddings", "sliding_window", "num_local_experts", "num_experts_per_tok", "attention_bias"},
    ),
    "qwen2": (_LLAMA_LIKE, {"gated": True, "qkv_bias": True}, False, {"tie_word_embeddings", "sliding_window"}),
    "gemma": (_LLAMA_LIKE, {"gated": True}, True, {"tie_word_embeddings", "attention_bias"}),
    "gpt2": (_GPT2, {"gated": False, "bias": True, "norm": "layernorm"}, True, {"tie_word_embeddings"}),
}


def _load(config) -> dict:
    if isinstance(config, dict):
        return config
    if isinstance(config, (str, os.PathLike)):
        path = Path(config)
        if not path.is_file():
            raise FileNotFoundError(
                f"config must be a dict or the path of a config.json file; no file at {str(path)!r} "
                "(nothing is downloaded: save the model's config.json first)"
            )
        return json.loads(path.read_text(encoding="utf-8"))
    raise TypeError(f"config must be a dict or the path of a config.json file, got {type(config).__name__} {config!r}")


def config_kwargs(config, *, seq_len=None, ignore=()) -> dict:
    """TransformerConfig keyword arguments for a Hugging Face config (dict or path)."""
    cfg = _load(config)
    if isinstance(ignore, str) or not all(isinstance(k, str) for k in ignore):
        raise TypeError(f"ignore must be a list of config keys, got {ignore!r}")
    model_type = cfg.get("model_type")
    if model_type not in _FAMILIES:
        raise ValueError(
            f"model_type {model_type!r} is not one this reader maps; supported: "
            f"{', '.join(_FAMILIES)}. Describe the model with TransformerConfig(...) directly"
        )
    key_map, fixed, tie_default, extra = _FAMILIES[model_type]
    unknown = sorted(k for k in cfg if k not in key_map and k not in extra and k not in _NO_COUNT and k not in ignore)
    if unknown:
        raise ValueError(
            f"cannot map these {model_type} config fields to a count: {', '.join(unknown)}. "
            "If they change no parameter or FLOP count, pass ignore=[...] with their names"
        )
    kwargs = dict(fixed)
    for hf_key, ours in key_map.items():
        if cfg.get(hf_key) is not None:
            kwargs[ours] = cfg[hf_key]
    kwargs["tied_embeddings"] = bool(cfg.get("tie_word_embeddings", tie_default))

    if model_type == "gpt2":
        if "d_ff" not in kwargs:  # n_inner is null in GPT-2's own configs
            kwargs["d_ff"] = 4 * kwargs["d_model"]  # GPT-2's default inner width
        if "seq_len" in kwargs:
            kwargs["learned_positions"] = kwargs["seq_len"]  # a learned table of n_positions rows
        act = cfg.get("activation_function", "gelu_new")
        if "glu" in str(act).lower():
            raise ValueError(f"activation_function {act!r}: a gated FFN in a gpt2 config is not mapped")
    if model_type == "llama":
        attn_b, mlp_b = bool(cfg.get("attention_bias", False)), bool(cfg.get("mlp_bias", False))
        if attn_b != mlp_b:
            raise ValueError(
                f"attention_bias={attn_b} with mlp_bias={mlp_b}: biases on only one of the two "
                "are not mapped (bias=True puts them on every linear layer)"
            )
        kwargs["bias"] = attn_b
    elif cfg.get("attention_bias"):
        raise ValueError(f"attention_bias=True in a {model_type} config is not mapped (its models have none)")
    if model_type in ("mistral", "mixtral") and cfg.get("sliding_window") is not None:
        kwargs["sliding_window"] = cfg["sliding_window"]
    if model_type == "qwen2" and cfg.get("use_sliding_window") and cfg.get("sliding_window") is not None:
        raise ValueError(
            "use_sliding_window=True: Qwen2 windows only the layers past max_window_layers, which is not mapped"
        )
    if model_type == "mixtral":
        kwargs["n_experts"] = cfg.get("num_local_experts", 8)
        kwargs["experts_per_token"] = cfg.get("num_experts_per_tok", 2)
    missing = [k for k in ("d_model", "d_ff", "n_layers", "n_heads", "vocab") if k not in kwargs]
    if missing:
        names = {v: k for k, v in key_map.items()}
        raise ValueError(f"the {model_type} config lacks {', '.join(names[m] for m in missing)}, needed for the counts")
    if seq_len is not None:
        kwargs["seq_len"] = seq_len
    elif "seq_len" not in kwargs:
        raise ValueError(
            f"the config has no context length ({'n_positions' if model_type == 'gpt2' else 'max_position_embeddings'}); "
            "pass seq_len="
        )
    return kwargs
