"""Mamba, Mamba-2 and Jamba against transformers: parameters, FLOPs, and the state a decode step reads.

The records are in ``hf_configs/tiny_families.json`` (see tests/test_families.py for the format):
Mamba d = 64, E = 128, N = 8, K = 4, R = 8, 2 layers; Mamba-2 the same with H = 8 heads of 16,
G = 2 groups and chunks of Q = 4; Jamba 4 layers, attention in layers 1 and 3 and 4 experts there.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import roofline_lib as rl

RECORD = json.loads((Path(__file__).parent / "hf_configs" / "tiny_families.json").read_text(encoding="utf-8"))
KEYS = ("mamba", "mamba2", "jamba")


@pytest.mark.parametrize("form", ["to_dict", "to_diff_dict"])
@pytest.mark.parametrize("key", KEYS)
def test_parameters_prefill_flops_and_runtime_state_are_exact(key, form):
    record, m = RECORD[key], rl.read_model(RECORD[key][form])
    assert isinstance(m, rl.StateSpaceConfig)
    assert m.n_params() == record["parameters"]
    assert m.forward_flops(8, eager=True) == record["forward_flops_8_tokens"]
    for tokens in (8, 9):  # the state does not grow; a hybrid's KV cache does
        assert m.decode_cache_bytes(tokens, 1, layout="transformers") == record[f"cache_elements_{tokens}_tokens"]


def test_mamba_by_hand():
    m = rl.read_model(RECORD["mamba"]["to_diff_dict"])
    # per layer: in 64 x 256, conv 128 x 4 + 128, x_proj 128 x 24, dt_proj 8 x 128 + 128, A 128 x 8, D 128,
    # out 128 x 64 = 30,592; 2 layers, 3 norms of 64, a tied table of 128 x 64
    assert m.params_breakdown()["mixer"] == 2 * 30_592 and m.n_params() == 2 * 30_592 + 3 * 64 + 128 * 64
    # per token and layer: 2 x (64 x 256 + 128 x 24 + 8 x 128 + 128 x 64) projections, 2 x 128 x 4 conv,
    # 2 x 128 x 8 for y = C h: 59,392 + 1,024 = 60,416; 2 layers and the logits 2 x 64 x 128
    assert m.flops_per_token(8) == m.decode_flops_per_token(4096) == 2 * 60_416 + 16_384
    # transformers' convolution pads both ends: 8 + 3 outputs a channel for 8 kept
    assert m.forward_flops(8, eager=True) - m.forward_flops(8) == 2 * 2 * 128 * 4 * 3
    # the decode state: 3 convolution inputs (transformers keeps 4) and the 128 x 8 state a layer
    assert m.state_bytes(2) == 2 * (128 * 3 + 128 * 8) * 2
    assert m.state_bytes(2, layout="transformers") - m.state_bytes(2) == 2 * 128 * 2
    assert m.kv_cache_bytes(4096) == 0


def test_the_decode_step_against_transformers_reference_path():
    # the library counts the recurrent step a decode kernel runs; transformers' PyTorch path does more,
    # and the surplus is exactly its convolution and (Mamba-2) its chunked scan run on one token
    mamba, mamba2, jamba = (rl.read_model(RECORD[k]["to_diff_dict"]) for k in KEYS)
    decode = {k: RECORD[k]["decode_flops_after_8_tokens"] for k in KEYS}
    # Mamba: the 4 kept inputs, padded: 7 outputs a channel, 1 used: 2 x 128 x 4 x 6 a layer
    assert decode["mamba"] - mamba.decode_flops_per_token(9) == 2 * (2 * 128 * 4 * 6)
    # Mamba-2: the same over 160 channels, and the chunked scan of 1 token in place of 2 E N
    extra_scan = mamba2._ssd_flops(1) - 2 * 128 * 8  # 30,720 - 2,048
    assert decode["mamba2"] - mamba2.decode_flops_per_token(9) == 2 * (2 * 160 * 4 * 6 + extra_scan)
    # Jamba: 5 inputs unpadded, 2 outputs, 1 used: 2 x 128 x 4 a mixer layer
    assert decode["jamba"] - jamba.decode_flops_per_token(9) == 2 * (2 * 128 * 4)


def test_mamba2_counts_the_chunked_scan():
    m = rl.read_model(RECORD["mamba2"]["to_diff_dict"])
    # 8 tokens in 2 chunks of 4, H = 8, P = 16, N = 8: inside 2 x 2 x 16 x 8 x 24 = 12,288; states
    # 4 x 2 x 4 x 8 x 16 x 8 = 32,768; between 2 x 3**2 x 8 x 16 x 8 = 18,432
    assert m._ssd_flops(8) == 12_288 + 32_768 + 18_432
    assert m._ssd_flops(7) == m._ssd_flops(8)  # padded to whole chunks
    assert m.conv_channels == 128 + 2 * 2 * 8  # x, B and C


def test_jamba_prices_decode_by_its_state_and_its_attention_layers():
    j = rl.read_model(RECORD["jamba"]["to_diff_dict"])
    assert (j.n_mixer_layers, j.n_attention_layers) == (2, 2)
    assert j.params_breakdown()["attention"] == 2 * (64 * 64 * 2 + 64 * 32 * 2)
    # the state is fixed; only the 2 attention layers' KV cache grows: 2 x 2 x 32 x 2 bytes a token
    short, long = j.decode_cache_bytes(1000), j.decode_cache_bytes(2000)
    assert long - short == 1000 * 2 * 2 * 32 * 2
    assert short - j.kv_cache_bytes(1000) == j.state_bytes()
    # the same model as a transformer with attention in every layer would cache twice as much per token
    assert j.transformer.kv_cache_bytes(1) == 2 * j.kv_cache_bytes(1)
    ceiling = j.decode_ceiling("H100", 4096)
    assert ceiling["bytes_per_step"] == j.decode_weight_bytes() + j.decode_cache_bytes(4096)
    assert ceiling["bound"] == "memory" and ceiling["fits_in_memory"]


def test_what_cannot_be_mapped_is_refused():
    base = RECORD["mamba"]["to_diff_dict"]
    with pytest.raises(ValueError, match="cannot map these mamba config fields to a count: mixer_depth"):
        rl.read_model({**base, "mixer_depth": 2})
    with pytest.raises(ValueError, match="intermediate_size=100 is not expand \\* hidden_size \\(128\\)"):
        rl.read_model({**base, "intermediate_size": 100})
    with pytest.raises(ValueError, match="model_type 'mamba' is a state-space model"):
        rl.TransformerConfig.from_hf_config(base)
    mamba2 = RECORD["mamba2"]["to_diff_dict"]
    with pytest.raises(ValueError, match="rms_norm=False in a mamba2 config"):
        rl.read_model({**mamba2, "rms_norm": False})
    assert rl.read_model({**mamba2, "rms_norm": True, "norm_before_gate": False}) == rl.read_model(mamba2)
    m = rl.read_model(base)
    with pytest.raises(ValueError, match="give exactly one of dt_rank"):
        dataclasses.replace(m, n_ssm_heads=8, chunk_size=4)
    with pytest.raises(ValueError, match="n_ssm_heads must divide d_inner \\(128 features\\), got 3"):
        dataclasses.replace(m, dt_rank=None, n_ssm_heads=3, chunk_size=4)
    with pytest.raises(ValueError, match="layout must be one of 'model', 'transformers', got 'paged'"):
        m.state_bytes(layout="paged")
    with pytest.raises(ValueError, match="n_attention_layers=1 needs a transformer"):
        dataclasses.replace(m, n_attention_layers=1)
    with pytest.raises(ValueError, match="tokens must be"):
        m.forward_flops(0)
