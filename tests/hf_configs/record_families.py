"""Write ``tiny_families.json``: small random models of today's families, counted by transformers.

Run with a Python that has transformers 5 and torch (neither is needed by the course's tests)::

    python tests/hf_configs/record_families.py

For each family: the config's ``to_diff_dict()`` (the form ``save_pretrained`` writes to a hub
``config.json``) and ``to_dict()``; the parameters of the model transformers builds (for a
multimodal wrapper, of its text model and head only); and, for one forward of 8 tokens and then
one decode step with the cache (eager attention, eager experts), the FLOPs ``FlopCounterMode``
counts (torch's own table, nothing added) and the elements the runtime cache holds afterwards
(keys and values per layer, or a state-space layer's convolution and recurrent states). Where the
installed transformers cannot build a family the record says why. The transformers and torch
versions are recorded under ``_versions``.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

TOKENS = 8
IDS = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
BASE = dict(
    vocab_size=128,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    **IDS,
)
MOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32)
ALTERNATE = ["sliding_attention"] * 3 + ["full_attention"]

#: family key -> (model_type, config keyword arguments)
FAMILIES = {
    "qwen3": ("qwen3", dict(BASE)),
    "qwen3_moe": ("qwen3_moe", dict(BASE, num_hidden_layers=3, mlp_only_layers=[0], **MOE)),
    "gemma3_text": (
        "gemma3_text",
        dict(BASE, num_hidden_layers=4, sliding_window=4, layer_types=ALTERNATE, query_pre_attn_scalar=16),
    ),
    "granite": (
        "granite",
        dict(BASE, attention_multiplier=0.5, residual_multiplier=0.3, embedding_multiplier=8.0, logits_scaling=4.0),
    ),
    "granitemoe": ("granitemoe", dict(BASE, num_local_experts=4, num_experts_per_tok=2)),
    "granitemoeshared": (
        "granitemoeshared",
        dict(BASE, num_local_experts=4, num_experts_per_tok=2, shared_intermediate_size=48),
    ),
    "cohere": ("cohere", dict(BASE, use_qk_norm=True)),
    "cohere2": ("cohere2", dict(BASE, num_hidden_layers=4, sliding_window=4, layer_types=ALTERNATE)),
    "glm4": ("glm4", dict(BASE)),
    "glm4_moe": (
        "glm4_moe",
        dict(
            BASE,
            num_hidden_layers=3,
            n_routed_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            n_shared_experts=1,
            first_k_dense_replace=1,
            use_qk_norm=True,
            n_group=1,
            topk_group=1,
        ),
    ),
    "opt": (
        "opt",
        dict(
            vocab_size=128,
            hidden_size=64,
            ffn_dim=96,
            num_hidden_layers=2,
            num_attention_heads=4,
            word_embed_proj_dim=64,
            max_position_embeddings=64,
            **IDS,
        ),
    ),
    "gptj": (
        "gptj",
        dict(vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_inner=96, rotary_dim=8, n_positions=64, **IDS),
    ),
    "phimoe": (
        "phimoe",
        dict(BASE, num_local_experts=4, num_experts_per_tok=2, attention_bias=True, lm_head_bias=True),
    ),
    "gpt_oss": (
        "gpt_oss",
        dict(
            BASE,
            num_local_experts=4,
            num_experts_per_tok=2,
            sliding_window=4,
            layer_types=["sliding_attention", "full_attention"],
        ),
    ),
    "llama4_text": (
        "llama4_text",
        dict(
            BASE,
            num_hidden_layers=4,
            intermediate_size_mlp=80,
            num_local_experts=4,
            num_experts_per_tok=1,
            interleave_moe_layer_step=2,
            attention_chunk_size=4,
            no_rope_layers=[1, 1, 1, 0],
        ),
    ),
    # the families read before: the runtime cache's layout (Falcon broadcasts K and V to every head)
    "falcon_new": (
        "falcon",
        dict(
            vocab_size=128,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_kv_heads=2,
            new_decoder_architecture=True,
            ffn_hidden_size=96,
            **IDS,
        ),
    ),
    # transformers' Qwen2 has no qkv_bias switch: the key is kept on the config and changes nothing
    "qwen2_qkv_bias_false": ("qwen2", dict(BASE, qkv_bias=False)),
    # state-space and hybrid models
    "mamba": (
        "mamba",
        dict(
            vocab_size=128,
            hidden_size=64,
            state_size=8,
            num_hidden_layers=2,
            expand=2,
            conv_kernel=4,
            time_step_rank=8,
            **IDS,
        ),
    ),
    "mamba2": (
        "mamba2",
        dict(
            vocab_size=128,
            hidden_size=64,
            state_size=8,
            num_hidden_layers=2,
            expand=2,
            num_heads=8,
            head_dim=16,
            n_groups=2,
            conv_kernel=4,
            chunk_size=4,
            time_step_rank=8,
            **IDS,
        ),
    ),
    "jamba": (
        "jamba",
        dict(
            BASE,
            num_hidden_layers=4,
            attn_layer_period=2,
            attn_layer_offset=1,
            expert_layer_period=2,
            expert_layer_offset=1,
            num_experts=4,
            num_experts_per_tok=2,
            mamba_d_state=8,
            mamba_d_conv=4,
            mamba_expand=2,
            mamba_dt_rank=8,
            use_mamba_kernels=False,
        ),
    ),
}
VISION = dict(
    hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=32, patch_size=8
)
#: multimodal wrapper -> (model_type, the text family it wraps, vision config keyword arguments)
WRAPPERS = {
    "llava": ("llava", "llama", VISION),
    "mistral3": ("mistral3", "mistral", VISION),
    "gemma3": ("gemma3", "gemma3_text", VISION),
    "llama4": (
        "llama4",
        "llama4_text",
        dict(VISION, vision_output_dim=32, projector_input_dim=32, projector_output_dim=64, pixel_shuffle_ratio=0.5),
    ),
}


def _tensors(value):
    """The tensors in a cache attribute: a tensor, a list of them, or a dict of layer -> tensor."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _cache_elements(out) -> int:
    cache = out.get("cache") or out.get("past_key_values") or out.get("cache_params")
    total = 0
    for layer in getattr(cache, "layers", []):
        for name in ("keys", "values", "conv_states", "recurrent_states"):
            total += sum(t.numel() for t in _tensors(getattr(layer, name, None)))
    for name in ("conv_states", "ssm_states", "key_cache", "value_cache"):
        total += sum(t.numel() for t in _tensors(getattr(cache, name, None)))
    return total, cache


def _record(config, model, text_parts=None) -> dict:
    parts = text_parts(model) if text_parts else [model]
    counts = {
        "to_diff_dict": config.to_diff_dict(),
        "to_dict": config.to_dict(),
        "parameters": sum(p.numel() for p in {id(p): p for part in parts for p in part.parameters()}.values()),
    }
    try:
        return {**counts, **_run(config, model)}
    except AttributeError as exc:  # transformers 5.24's Llama 4 wrapper cannot run text alone
        return {**counts, "forward_error": f"{type(exc).__name__}: {exc}"}


def _run(config, model) -> dict:
    torch.manual_seed(1)
    tokens = torch.randint(3, config.get_text_config().vocab_size, (1, TOKENS + 1))
    model.eval()
    with torch.no_grad():
        with FlopCounterMode(display=False) as prefill:
            out = model(tokens[:, :TOKENS], use_cache=True)
        prefill_cache, cache = _cache_elements(out)
        with FlopCounterMode(display=False) as decode:
            out = model(tokens[:, TOKENS:], past_key_values=cache, use_cache=True)
        decode_cache, _ = _cache_elements(out)
    return {
        f"forward_flops_{TOKENS}_tokens": prefill.get_total_flops(),
        f"cache_elements_{TOKENS}_tokens": prefill_cache,
        f"decode_flops_after_{TOKENS}_tokens": decode.get_total_flops(),
        f"cache_elements_{TOKENS + 1}_tokens": decode_cache,
    }


def _build(config, auto=transformers.AutoModelForCausalLM):
    torch.manual_seed(0)
    try:
        return auto.from_config(config, attn_implementation="eager", experts_implementation="eager")
    except (ValueError, TypeError):  # a family with no experts interface
        return auto.from_config(config, attn_implementation="eager")


def main() -> None:
    record = {
        "_about": "tiny models of today's families, counted by transformers: see record_families.py",
        "_versions": {
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
    }
    for key, (model_type, kwargs) in FAMILIES.items():
        config = transformers.AutoConfig.for_model(model_type, **kwargs)
        record[key] = _record(config, _build(config))
        print(key, record[key]["parameters"], record[key][f"forward_flops_{TOKENS}_tokens"])
    for key, (model_type, text_key, vision) in WRAPPERS.items():
        text_type, text_kwargs = FAMILIES.get(text_key, (text_key, dict(BASE)))
        config = transformers.AutoConfig.for_model(
            model_type, text_config=dict(text_kwargs, model_type=text_type), vision_config=vision
        )
        model = _build(config, transformers.AutoModelForImageTextToText)

        def text_parts(m):
            if hasattr(m, "language_model"):  # Llama 4: the text model holds its own head
                return [m.language_model]
            return [m.model.language_model, m.lm_head]

        record[key] = _record(config, model, text_parts)
        print(key, record[key]["parameters"])
    out = Path(__file__).with_name("tiny_families.json")
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
