"""A tiny decoder-only transformer in torch, sized by a TransformerConfig, to count, time and profile.

Its parameter count equals ``cfg.n_params()``; :func:`~roofline_lib.models.audit.crosscheck`
counts its FLOPs against the analytic model, and the chapters profile and serve it on a CPU.
It imports torch: ``from roofline_lib.models import tiny_model`` imports torch when asked.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..core.checks import _positive_int
from .transformer import TransformerConfig

__all__ = ["TINY_CONFIG", "TinyDecoder", "random_tokens", "tiny_decoder"]

#: A decoder small enough to audit in well under a second on a CPU: d_ff = 352 is
#: 8d/3 = 341 rounded up to a multiple of 32; 533,120 parameters.
TINY_CONFIG = TransformerConfig(
    d_model=128,
    d_ff=352,
    n_layers=2,
    n_heads=4,
    vocab=512,
    seq_len=128,
    gated=True,
    tied_embeddings=False,
)


class _Attention(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, d_model, bias=False)
        self.o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape

        def split_heads(t):  # (b, s, d) -> (b, heads, s, head_dim)
            return t.view(b, s, self.n_heads, d // self.n_heads).transpose(1, 2)

        y = F.scaled_dot_product_attention(
            split_heads(self.q(x)), split_heads(self.k(x)), split_heads(self.v(x)), is_causal=True
        )
        return self.o(y.transpose(1, 2).reshape(b, s, d))


class _FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, gated: bool):
        super().__init__()
        self.gated = gated
        self.gate = nn.Linear(d_model, d_ff, bias=False) if gated else None
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gated:
            return self.down(F.silu(self.gate(x)) * self.up(x))  # SwiGLU
        return self.down(F.gelu(self.up(x)))


class _Block(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.attn_norm = nn.RMSNorm(cfg.d_model, eps=1e-6)
        self.attn = _Attention(cfg.d_model, cfg.n_heads)
        self.ffn_norm = nn.RMSNorm(cfg.d_model, eps=1e-6)
        self.ffn = _FeedForward(cfg.d_model, cfg.d_ff, cfg.gated)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x))
        return x + self.ffn(self.ffn_norm(x))


class TinyDecoder(nn.Module):
    """A pre-norm decoder-only transformer sized by a :class:`TransformerConfig`.

    Token embedding, ``n_layers`` blocks of RMSNorm -> causal SDPA attention (separate
    bias-free Q, K, V, O projections) and RMSNorm -> FFN (SwiGLU when ``cfg.gated``,
    GELU otherwise), a final RMSNorm and an unembedding, tied to the embedding when
    ``cfg.tied_embeddings``. It has no position encoding: it exists to be counted,
    timed and profiled, not trained to speak, and position encodings add no matmul
    FLOPs. Its parameter count equals ``cfg.n_params()``.

    ``forward(tokens)`` takes integer token ids of shape (batch, seq) and returns logits
    of shape (batch, seq, vocab).
    """

    def __init__(self, cfg: TransformerConfig, *, seed: int = 0, dtype=torch.float32, device=None):
        super().__init__()
        if not isinstance(cfg, TransformerConfig):
            raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
        plain = dict(
            n_kv_heads=cfg.n_heads,
            head_dim=cfg.d_model // cfg.n_heads,
            bias=False,
            qkv_bias=False,
            norm="rmsnorm",
            norms_per_layer=2,
            learned_positions=None,
            n_experts=1,
            sliding_window=None,
            qk_norm=False,
            embedding_norm=False,
            mla=None,
        )
        unsupported = [k for k, v in plain.items() if getattr(cfg, k) != v]
        if unsupported or cfg.d_model % cfg.n_heads:
            raise ValueError(
                "TinyDecoder builds multi-head, dense, bias-free RMSNorm blocks only; this config sets "
                f"{', '.join(unsupported) or 'head_dim'}, which it would not honour"
            )
        self.cfg = cfg
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.embed = nn.Embedding(cfg.vocab, cfg.d_model)
            self.blocks = nn.ModuleList(_Block(cfg) for _ in range(cfg.n_layers))
            self.norm = nn.RMSNorm(cfg.d_model, eps=1e-6)
            self.unembed = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        if cfg.tied_embeddings:
            self.unembed.weight = self.embed.weight
        self.to(dtype=dtype, device=device)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.dim() != 2 or tokens.dtype not in (torch.int64, torch.int32):
            raise ValueError(
                f"tokens must be integer token ids of shape (batch, seq), got "
                f"{tokens.dtype} of shape {tuple(tokens.shape)}"
            )
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.unembed(self.norm(x))


def tiny_decoder(
    cfg: TransformerConfig = TINY_CONFIG, *, seed: int = 0, dtype=torch.float32, device=None
) -> TinyDecoder:
    """A :class:`TinyDecoder` for ``cfg`` (default :data:`TINY_CONFIG`), weights seeded by ``seed``."""
    return TinyDecoder(cfg, seed=seed, dtype=dtype, device=device)


def random_tokens(
    cfg: TransformerConfig = TINY_CONFIG, batch=1, seq_len=None, *, seed: int = 0, device=None
) -> torch.Tensor:
    """Random token ids of shape (batch, seq_len), seq_len defaulting to ``cfg.seq_len``."""
    batch = _positive_int(batch, "batch", "sequences")
    s = cfg.seq_len if seq_len is None else _positive_int(seq_len, "seq_len", "tokens")
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, cfg.vocab, (batch, s), generator=gen).to(device)
