"""``roofline model CONFIG|NAME``: a model's counts from a hub ``config.json`` or a shipped name."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ._common import EXIT_OK, Once, UsageError, subcommand

ORDER = 15  # its place in ``roofline --help``: after gpus, before verdict

#: Weight widths shown, bytes per parameter.
PRECISIONS = {"fp32": 4, "bf16": 2, "fp8": 1, "int4": 0.5}
DEFAULT_CONTEXT = 4096


def add(sub) -> None:
    p = subcommand(sub, "model", "a model's parameters, FLOPs, KV cache and decode ceiling from its config.json")
    p.add_argument(
        "config",
        metavar="CONFIG|NAME",
        help="a Hugging Face config.json (nothing is downloaded), or a shipped model such as llama-3-8b",
    )
    p.add_argument(
        "--context",
        type=int,
        default=DEFAULT_CONTEXT,
        action=Once,
        help=f"tokens of context for the FLOPs, the KV cache and the decode step (default {DEFAULT_CONTEXT})",
    )
    p.add_argument("--gpu", action=Once, help="a registry GPU (see 'roofline gpus'): adds the decode ceiling")
    p.add_argument(
        "--bytes-per-param",
        type=float,
        default=2,
        action=Once,
        help="weight width for the decode ceiling (default 2: bf16)",
    )
    p.add_argument(
        "--kv-bytes",
        type=float,
        default=2,
        action=Once,
        help="width of a KV-cache (or recurrent-state) element (default 2: bf16)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.set_defaults(run=run)


def _is_path(text: str) -> bool:
    return text.endswith(".json") or "/" in text or "\\" in text or Path(text).exists()


def load(text: str):
    """The model a CONFIG|NAME argument names, its ``model_type``, where it came from, and the
    config's ``quantization_config`` (None when it has none)."""
    from ..models.hf_config import read_model
    from ..models.transformer import model_config, shipped_models

    if not _is_path(text):
        try:
            return model_config(text), "shipped", f"shipped model {text}", None
        except (TypeError, ValueError) as exc:
            raise UsageError(f"CONFIG|NAME {text!r}: not a file, and {exc}") from exc
    path = Path(text)
    if not path.is_file():
        raise UsageError(
            f"CONFIG {text}: no such file (save the model's config.json first; shipped names: "
            f"{', '.join(shipped_models())})"
        )
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"CONFIG {text}: not a JSON config file ({exc})") from exc
    if not isinstance(config, dict):
        raise UsageError(f"CONFIG {text}: a config.json holds one JSON object, got {type(config).__name__}")
    name = config.get("_name_or_path") or (path.parent.name if path.stem == "config" else path.stem)
    try:
        model = read_model(config, name=str(name))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"CONFIG {text}: {exc}") from exc
    return model, str(config.get("model_type")), str(path), config.get("quantization_config")


def summary(model, context: int, gpu=None, bytes_per_param: float = 2, kv_bytes: float = 2) -> dict:
    """Everything ``roofline model`` prints, as plain numbers (SI units: parameters, FLOP, bytes)."""
    from ..models.state_space import StateSpaceConfig

    if isinstance(model, StateSpaceConfig):
        return _state_space_summary(model, context, gpu, bytes_per_param, kv_bytes)
    return _transformer_summary(model, context, gpu, bytes_per_param, kv_bytes)


def _weights(n_params: int) -> dict:
    return {name: n_params * b for name, b in PRECISIONS.items()}


def _transformer_summary(cfg, context, gpu, bytes_per_param, kv_bytes) -> dict:
    from ..workloads.inference import decode_flops_per_token, model_decode_ceiling

    parts = cfg.params_breakdown()
    out = {
        "model": cfg.name,
        "kind": "transformer",
        "parameters": {
            "embedding": parts["embedding"] + parts["positions"],
            "attention": parts["attention"],
            "mlp_or_experts": parts["ffn"],
            "norms": parts["norms"],
            "unembedding": parts["unembedding"],
            "total": cfg.n_params(),
            "active": cfg.active_params(),
        },
        "context_len": context,
        "flops_per_token": {
            "forward": cfg.flops_per_token(causal=True, seq_len=context).fwd_per_token,
            "decode": decode_flops_per_token(cfg, context),
        },
        "cache": {
            "kind": "kv",
            "bytes_per_token": cfg.kv_cache_bytes(1, kv_bytes),
            "bytes_at_context": cfg.kv_cache_bytes(context, kv_bytes),
            "bytes_per_elem": kv_bytes,
        },
        "weights_bytes": _weights(cfg.n_params()),
    }
    if gpu is not None:
        ceiling = model_decode_ceiling(cfg, gpu, 1, context, bytes_per_param, kv_bytes)
        out["decode_ceiling"] = {
            "gpu": ceiling.gpu,
            "bytes_per_step": ceiling.bytes.total,
            "flops_per_step": ceiling.flops_per_step,
            "tokens_per_s": ceiling.tokens_per_s,
            "ms_per_token": ceiling.ms_per_token,
            "bound": ceiling.bound,
            "fits_in_memory": ceiling.fits_in_memory,
            "warning": ceiling.warning,
        }
    return out


def _state_space_summary(cfg, context, gpu, bytes_per_param, kv_bytes) -> dict:
    parts = cfg.params_breakdown()
    out = {
        "model": cfg.name,
        "kind": "hybrid" if cfg.n_attention_layers else "state-space",
        "parameters": {
            "embedding": parts["embedding"],
            "attention": parts["attention"],
            "mixer": parts["mixer"],
            "mlp_or_experts": parts["ffn"],
            "norms": parts["norms"],
            "unembedding": parts["unembedding"],
            "total": cfg.n_params(),
            "active": cfg.active_params(),
        },
        "context_len": context,
        "flops_per_token": {
            "forward": cfg.flops_per_token(seq_len=context),
            "decode": cfg.decode_flops_per_token(context),
        },
        "cache": {
            "kind": "recurrent state" + (" + kv" if cfg.n_attention_layers else ""),
            "state_bytes": cfg.state_bytes(kv_bytes),
            "bytes_per_token": cfg.kv_cache_bytes(1, kv_bytes) if cfg.n_attention_layers else 0,
            "bytes_at_context": cfg.decode_cache_bytes(context, kv_bytes),
            "bytes_per_elem": kv_bytes,
        },
        "weights_bytes": _weights(cfg.n_params()),
    }
    if gpu is not None:
        out["decode_ceiling"] = cfg.decode_ceiling(gpu, context, bytes_per_param, kv_bytes_per_elem=kv_bytes)
    return out


def _count(n: float) -> str:
    """A parameter count as people say it: 8.03B, 124M, 70.0K."""
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g}{unit}"
    return f"{n:g}"


def _bytes(n: float) -> str:
    """Bytes in SI units: 16.1 GB, 131 kB."""
    from ..core.formatting import to_unit

    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{to_unit(n, unit):.4g} {unit}"
    return f"{n:.4g} B"


def _print(s: dict, source: str) -> None:
    p = s["parameters"]
    print(f"{s['model'] or 'model'} ({source}): a {s['kind']} model")
    if s.get("note"):
        print(f"  ({s['note']})")
    print("parameters")
    for key in ("embedding", "attention", "mixer", "mlp_or_experts", "norms", "unembedding"):
        if p.get(key) or key in ("embedding", "unembedding"):  # a tied unembedding shows as 0
            print(f"  {key.replace('_', ' '):<16} {p[key]:>18,}  {_count(p[key]):>7}")
    print(f"  {'total':<16} {p['total']:>18,}  {_count(p['total']):>7}")
    if p["active"] != p["total"]:
        print(f"  {'active per token':<16} {p['active']:>18,}  {_count(p['active']):>7}")
    f = s["flops_per_token"]
    print(f"FLOPs per token at a context of {s['context_len']:,} tokens (--context)")
    print(f"  {'forward':<16} {f['forward']:>18,.0f}  (the mean over a causal {s['context_len']:,}-token sequence)")
    print(f"  {'decode':<16} {f['decode']:>18,.0f}  (one new token after the context)")
    c = s["cache"]
    width = f"{c['bytes_per_elem']:g}-byte elements"
    if "state_bytes" in c:
        print(f"decode state ({width}): {_bytes(c['state_bytes'])} of recurrent state, whatever the context")
    if c["bytes_per_token"]:
        print(
            f"KV cache ({width}): {_bytes(c['bytes_per_token'])} per token, {_bytes(c['bytes_at_context'])} at the context"
        )
    print("weights: " + ", ".join(f"{_bytes(v)} in {k}" for k, v in s["weights_bytes"].items()))
    if s.get("quantization"):
        print(f"note: {s['quantization']}")
    d = s.get("decode_ceiling")
    if d:
        print(
            f"single-stream decode on {d['gpu']}: {d['tokens_per_s']:.4g} tokens/s at most "
            f"({d['ms_per_token']:.3g} ms a token, {_bytes(d['bytes_per_step'])} read a step, {d['bound']}-bound)"
        )
        if d["warning"]:
            print(f"  WARNING: {d['warning']}")


def run(args) -> int:
    from ..core.checks import _positive, _positive_int
    from ..core.hardware import as_gpu
    from ..models.hf_config import families

    try:
        context = _positive_int(args.context, "context_len", "tokens")
        width = _positive(args.bytes_per_param, "bytes_per_param", "bytes per parameter")
        kv_width = _positive(args.kv_bytes, "kv_bytes_per_elem", "bytes per element")
    except (TypeError, ValueError) as exc:
        flag = {"context_len": "--context", "bytes_per_param": "--bytes-per-param"}.get(
            str(exc).split()[0], "--kv-bytes"
        )
        raise UsageError(f"{flag}: {exc}") from exc
    gpu = None
    if args.gpu is not None:
        try:
            gpu = as_gpu(args.gpu)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"--gpu: {exc}") from exc
    model, model_type, source, quantised = load(args.config)
    try:
        s = summary(model, context, gpu, width, kv_width)
    except (TypeError, ValueError) as exc:  # e.g. no peak for the precision this width implies
        raise UsageError(str(exc)) from exc
    s["model_type"] = model_type
    s["source"] = source
    read_as = families().get(model_type, "")
    if quantised:
        method = quantised.get("quant_method", "quantised") if isinstance(quantised, dict) else "quantised"
        s["quantization"] = (
            f"the checkpoint stores {method} weights: give their width with --bytes-per-param "
            f"(the decode ceiling assumes {width:g} bytes a parameter)"
        )
    if read_as.startswith("wrapper of "):
        s["note"] = (
            f"the text model ({read_as[len('wrapper of ') :]}) of a {model_type} config; the vision tower is not counted"
        )
    if args.json:
        print(json.dumps(s, indent=1, default=lambda v: None if isinstance(v, float) and math.isnan(v) else v))
    else:
        _print(s, source)
    return EXIT_OK
