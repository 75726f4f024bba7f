"""``roofline model CONFIG|NAME``: a hub config.json or a shipped name, in words or as JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import roofline_lib as rl
from roofline_lib import cli

RECORD = json.loads((Path(__file__).parent / "hf_configs" / "tiny_families.json").read_text(encoding="utf-8"))
FAMILIES = [k for k in RECORD if not k.startswith("_") and k != "qwen2_qkv_bias_false"]


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _write(tmp_path, name, config):
    path = tmp_path / name
    path.write_text(json.dumps(config) if not isinstance(config, str) else config, encoding="utf-8")
    return path


def test_a_shipped_name_in_words_and_as_json(capsys):
    cfg = rl.model_config("llama-3-8b")
    code, out, err = run(capsys, "model", "llama-3-8b", "--gpu", "H100")
    assert code == 0 and not err
    assert f"{cfg.n_params():,}" in out and "8.03B" in out  # 8,030,261,248
    assert "a context of 4,096 tokens (--context)" in out and "memory-bound" in out
    code, out, _ = run(capsys, "model", "llama-3-8b", "--gpu", "H100", "--context", "8192", "--json")
    s = json.loads(out)
    assert code == 0 and s["parameters"]["total"] == cfg.n_params()
    assert s["parameters"]["attention"] + s["parameters"]["mlp_or_experts"] == cfg.n_params(
        include_embedding=False, include_norms=False
    )
    assert s["flops_per_token"]["decode"] == rl.decode_flops_per_token(cfg, 8192)
    assert s["cache"]["bytes_at_context"] == cfg.kv_cache_bytes(8192) == 8192 * 131_072  # 32 layers x 2 x 8 x 128 x 2 B
    assert s["weights_bytes"] == {
        "fp32": 4 * cfg.n_params(),
        "bf16": 2 * cfg.n_params(),
        "fp8": cfg.n_params(),
        "int4": cfg.n_params() / 2,
    }
    ceiling = rl.model_decode_ceiling(cfg, "H100", 1, 8192)
    assert s["decode_ceiling"]["tokens_per_s"] == ceiling.tokens_per_s


def test_every_family_reads_from_its_hub_config_file(tmp_path, capsys):
    for key in FAMILIES:
        path = _write(tmp_path, f"{key}.json", RECORD[key]["to_diff_dict"])
        code, out, err = run(capsys, "model", path, "--json", "--context", "8", "--gpu", "A100")
        assert code == 0, (key, err)
        s = json.loads(out)
        assert s["parameters"]["total"] == RECORD[key]["parameters"], key
        assert s["model_type"] == RECORD[key]["to_diff_dict"]["model_type"]
        assert s["decode_ceiling"]["tokens_per_s"] > 0


def test_state_space_and_hybrid_models_report_their_state(tmp_path, capsys):
    mamba = rl.read_model(RECORD["mamba"]["to_diff_dict"])
    code, out, _ = run(capsys, "model", _write(tmp_path, "config.json", RECORD["mamba"]["to_diff_dict"]), "--json")
    s = json.loads(out)
    assert code == 0 and s["kind"] == "state-space" and s["model"] == tmp_path.name  # config.json: its folder
    # 2 layers x (128 channels x 3 convolution inputs + 128 x 8 state) x 2 bytes, at any context
    assert s["cache"]["state_bytes"] == s["cache"]["bytes_at_context"] == 2 * (128 * 3 + 128 * 8) * 2
    assert s["flops_per_token"]["decode"] == mamba.decode_flops_per_token(4096)
    code, out, _ = run(
        capsys, "model", _write(tmp_path, "jamba.json", RECORD["jamba"]["to_diff_dict"]), "--context", "8"
    )
    assert code == 0 and "a hybrid model" in out and "recurrent state" in out and "KV cache" in out
    code, out, _ = run(capsys, "model", _write(tmp_path, "gemma3.json", RECORD["gemma3"]["to_diff_dict"]))
    assert code == 0 and "the vision tower is not counted" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not a JSON config file"),
        ("[1, 2]", "a config.json holds one JSON object, got list"),
        ({"model_type": "bert", "hidden_size": 8}, "model_type 'bert' is not one this reader maps"),
        ({"model_type": "llama", "num_hidden_layers": 2}, "the llama config lacks hidden_size"),
        (
            {**RECORD["qwen3"]["to_diff_dict"], "mystery_width": 7},
            "cannot map these qwen3 config fields to a count: mystery_width",
        ),
        (
            {**RECORD["mamba2"]["to_diff_dict"], "num_heads": 3},
            "num_heads \\* head_dim = 48 is not expand \\* hidden_size",
        ),
    ],
)
def test_a_broken_or_unknown_config_is_refused_with_exit_2(tmp_path, capsys, content, message):
    code, out, err = run(capsys, "model", _write(tmp_path, "config.json", content))
    assert code == 2 and not out
    assert err.startswith("roofline: error: CONFIG ") and re.search(message, err), err


def test_bad_arguments_are_refused_with_exit_2(tmp_path, capsys):
    code, _, err = run(capsys, "model", tmp_path / "missing.json")
    assert code == 2 and "no such file" in err and "llama-3-8b" in err
    code, _, err = run(capsys, "model", "llama-9-1t")
    assert code == 2 and "unknown model 'llama-9-1t'" in err
    code, _, err = run(capsys, "model", "llama-3-8b", "--context", "0")
    assert code == 2 and "--context: context_len must be" in err
    code, _, err = run(capsys, "model", "llama-3-8b", "--kv-bytes", "-1")
    assert code == 2 and "--kv-bytes: kv_bytes_per_elem must be" in err
    code, _, err = run(capsys, "model", "llama-3-8b", "--bytes-per-param", "nan")
    assert code == 2 and "--bytes-per-param: bytes_per_param must be" in err
    code, _, err = run(capsys, "model", "llama-3-8b", "--gpu", "H9000")
    assert code == 2 and err.startswith("roofline: error: --gpu:")
    code, _, err = run(capsys, "model", "llama-3-8b", "--context", "8", "--context", "9")
    assert code == 2 and "given twice" in err


def test_a_quantised_checkpoint_is_read_and_its_width_asked_for(tmp_path, capsys):
    config = {**RECORD["gpt_oss"]["to_diff_dict"], "quantization_config": {"quant_method": "mxfp4"}}
    code, out, _ = run(capsys, "model", _write(tmp_path, "config.json", config), "--gpu", "H100")
    assert code == 0 and "stores mxfp4 weights: give their width with --bytes-per-param" in out
    code, out, _ = run(capsys, "model", _write(tmp_path, "config.json", config), "--json", "--bytes-per-param", "0.5")
    s = json.loads(out)
    assert code == 0 and s["cache"]["bytes_per_elem"] == 2  # the KV cache stays bf16 (--kv-bytes)
    assert s["weights_bytes"]["int4"] == s["parameters"]["total"] / 2
