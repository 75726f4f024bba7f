"""The tiny decoder: its parameters are the config's, it is causal and seeded, and it refuses what it cannot build."""

import dataclasses

import pytest
import torch

from roofline_lib import tiny_model

# --- its shape ----------------------------------------------------------------------


def test_tiny_decoder_parameter_count_matches_the_config():
    for tied in (False, True):
        cfg = dataclasses.replace(tiny_model.TINY_CONFIG, tied_embeddings=tied)
        model = tiny_model.tiny_decoder(cfg)
        assert sum(p.numel() for p in model.parameters()) == cfg.n_params()
    assert tiny_model.TINY_CONFIG.n_params() == 533_120
    tokens = tiny_model.random_tokens(batch=2, seq_len=16)
    assert tiny_model.tiny_decoder()(tokens).shape == (2, 16, 512)  # (batch, seq, vocab)


def test_tiny_decoder_is_causal_and_seeded():
    model = tiny_model.tiny_decoder(seed=3)
    tokens = tiny_model.random_tokens(seq_len=16)
    changed = tokens.clone()
    changed[0, 10] = (changed[0, 10] + 1) % 512
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    torch.testing.assert_close(a[:, :10], b[:, :10])  # earlier positions cannot see position 10
    assert not torch.allclose(a[:, 10:], b[:, 10:])
    with torch.no_grad():
        torch.testing.assert_close(tiny_model.tiny_decoder(seed=3)(tokens), a)


# --- failure paths --------------------------------------------------------------------------


def test_bad_arguments_are_refused():
    model, tokens = tiny_model.tiny_decoder(), tiny_model.random_tokens(seq_len=8)
    with pytest.raises(ValueError, match="tokens must be integer token ids"):
        model(tokens.float())
    with pytest.raises(TypeError, match="cfg must be a TransformerConfig"):
        tiny_model.tiny_decoder({"d_model": 64})
    # a shape the tiny decoder cannot build is refused, not silently built as multi-head attention
    with pytest.raises(ValueError, match="this config sets n_kv_heads"):
        tiny_model.tiny_decoder(dataclasses.replace(tiny_model.TINY_CONFIG, n_kv_heads=1))
    with pytest.raises(ValueError, match="batch must be a positive whole number of sequences"):
        tiny_model.random_tokens(batch=0)
