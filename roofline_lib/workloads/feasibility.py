"""Whether a priced job can run at all: its memory against the device's, its context against the model's.

The course's one feasibility rule, asked by every function that prices a step, a serve or a
layout (decode, prefill and mixed steps, the scheduler, speculative decoding, the KV capacity,
the steady-state frontier, the training planner, both explorers):

* **memory**: what one device must hold (the weights it stores, every running sequence's KV cache,
  the activations of the step; for training, gradients, optimizer state and saved activations)
  against its capacity, both in bytes;
* **context**: the longest context in the job against the model's maximum position
  (``context_window``, ``max_position_embeddings``; else its learned position table).

The rule never raises for a job that does not fit: the price is still worked out (a reader may
want to see what a too-big model would cost), and the result carries a :class:`Fit` whose
``feasible`` is False and whose ``reason`` names what is needed, what there is, and what would
fit (the fewest such devices, or the largest context). Every result's ``__str__`` puts that
reason first; every search (the frontier's best point, the best run under an SLO, the planner's
layouts) leaves infeasible results out. Bad *input* (a negative batch, a context of 0 tokens) is
still refused with a ValueError naming the parameter.

A device whose capacity is unknown (a CPU's measured roofs, a bare Roof) cannot be checked: its
fit is feasible, with a ``note`` saying the memory was not checked.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ..core.checks import _positive, _positive_int
from ..core.formatting import gib, memory_size
from ..models.transformer import TransformerConfig

__all__ = [
    "Fit",
    "memory_fit",
    "max_context",
    "context_problem",
    "inference_activation_bytes",
    "fewest_devices",
    "ACTIVATION_BYTES",
    "LOGIT_BYTES",
]

#: Bytes of one activation value while a step runs (bf16).
ACTIVATION_BYTES = 2
#: Bytes of one logit: the unembedding's output is kept in fp32 for the softmax and sampling.
LOGIT_BYTES = 4


@dataclass(frozen=True)
class Fit:
    """One job against one device: the bytes it needs by part, the capacity, the context. SI units.

    ``feasible`` is False when the memory or the context rules it out; ``reason`` then says why,
    with what would fit. ``note`` is set when something could not be checked.
    """

    feasible: bool
    need_bytes: float  # per device
    capacity_bytes: float | None  # None: not known
    parts: tuple  # (name, bytes) pairs that add up to need_bytes
    context_len: int | None  # the longest context in the job, tokens
    max_context: int | None  # the model's maximum position, tokens (None: not on record)
    min_devices: int | None  # fewest devices of this capacity whose memory holds need_bytes
    reason: str | None
    note: str | None = None

    @property
    def headline(self) -> str:
        """One line a reader sees first: ``DOES NOT FIT: ...`` or ``fits: 17.2 GiB of 80 GiB``."""
        if not self.feasible:
            return f"DOES NOT FIT: {self.reason}"
        if self.capacity_bytes is None:
            return f"fit not checked: {self.note}"
        return f"fits: {gib(self.need_bytes)} of {gib(self.capacity_bytes)}"

    def first(self, text: str) -> str:
        """``text`` as a priced result prints it: under the headline when it does not fit, else as is."""
        return text if self.feasible else f"{self.headline}\n{text}"

    def __str__(self) -> str:
        return self.headline


def _cfg(cfg) -> TransformerConfig:
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig (rl.model_config(name)), got {type(cfg).__name__} {cfg!r}")
    return cfg


def max_context(cfg: TransformerConfig) -> int | None:
    """The longest context ``cfg`` accepts, tokens: its context window, else its learned position table."""
    cfg = _cfg(cfg)
    if cfg.context_window is not None:
        return int(cfg.context_window)
    if cfg.learned_positions is not None:
        return int(cfg.learned_positions)
    return None


def context_problem(cfg: TransformerConfig, context_len: int | None) -> str | None:
    """Why ``context_len`` tokens is beyond ``cfg``'s reach, or None when it is not (or not known)."""
    cfg = _cfg(cfg)
    if context_len is not None:
        context_len = _positive_int(context_len, "context_len", "tokens")
    return _context_problem(cfg, context_len)


def _context_problem(cfg: TransformerConfig, context_len: int | None) -> str | None:
    """:func:`context_problem` on checked input (the pricing functions' inner loop)."""
    limit = max_context(cfg)
    if context_len is None or limit is None or context_len <= limit:
        return None
    window = ""
    if cfg.sliding_window is not None:
        window = f" (its sliding window of {cfg.sliding_window:,} tokens does not lift that limit)"
    return (
        f"a context of {context_len:,} tokens is beyond {cfg.name or 'the model'}'s maximum position of "
        f"{limit:,} tokens{window}; the largest context it takes is {limit:,} tokens"
    )


def fewest_devices(need_bytes: float, capacity_bytes: float) -> int:
    """Fewest devices of ``capacity_bytes`` each whose memory together holds ``need_bytes`` (split evenly)."""
    need = _positive(need_bytes, "need_bytes", "bytes", allow_zero=True)
    capacity = _positive(capacity_bytes, "capacity_bytes", "bytes")
    return _fewest_devices(need, capacity)


def _fewest_devices(need: float, capacity: float) -> int:
    return max(1, math.ceil(need / capacity * (1 - 1e-12)))  # 1e-12: forgive float noise on exact fits


def memory_fit(
    parts,
    capacity_bytes,
    *,
    device: str,
    what: str,
    context_len=None,
    cfg: TransformerConfig | None = None,
    largest_context=None,
    would_fit: str | None = None,
) -> Fit:
    """The rule itself: ``parts`` (name -> bytes per device) against ``capacity_bytes``, and the context.

    ``what`` names the job ("llama-2-70b, batch 1 at 2,048 tokens"); ``largest_context`` (tokens),
    when given, is the longest context that would fit in memory at this batch, said in the reason;
    ``would_fit`` replaces the default "the fewest such devices" advice (the planner says which
    layout would).
    """
    items = tuple((name, float(b)) for name, b in dict(parts).items() if b)
    need = sum(b for _, b in items)
    limit = None if cfg is None else max_context(cfg)
    reasons = []
    context = None if cfg is None else _context_problem(cfg, context_len)
    if context:
        reasons.append(context)
    note = None
    devices = None
    if capacity_bytes is None:
        note = f"{device} has no memory capacity on record, so whether {what} fits was not checked"
    else:
        devices = _fewest_devices(need, capacity_bytes)
        if need > capacity_bytes:
            split = " + ".join(f"{name} {memory_size(b)}" for name, b in items)
            advice = would_fit
            if advice is None:
                advice = f"the fewest such devices whose memory holds it: {devices}"
                if largest_context is not None and largest_context >= 1:
                    advice += f"; on one, the largest context that fits is {int(largest_context):,} tokens"
            reasons.append(f"{what} needs {gib(need)} ({split}) and the {device} has {gib(capacity_bytes)}; {advice}")
    return Fit(
        feasible=not reasons,
        need_bytes=need,
        capacity_bytes=capacity_bytes,
        parts=items,
        context_len=None if context_len is None else int(context_len),
        max_context=limit,
        min_devices=devices,
        reason="; and ".join(reasons) if reasons else None,
        note=note,
    )


def inference_activation_bytes(cfg: TransformerConfig, tokens: int, logits_rows: int) -> float:
    """Bytes of activations alive while a step of ``tokens`` new tokens runs, the largest layer's.

    Layers run one after another and free what they made, so the peak is one layer's: the
    residual stream and its normed copy (``2 d`` per token) plus the wider of the attention's
    projections (Q, K and V, ``(n_heads + 2 n_kv_heads) head_dim``) and the FFN's intermediate
    (``2 d_ff`` gated, ``d_ff`` plain; ``k`` experts' worth per token in a mixture of experts), at
    :data:`ACTIVATION_BYTES` each; plus ``logits_rows`` rows of ``vocab`` logits at
    :data:`LOGIT_BYTES`. Attention scores are not stored (flash attention). An estimate: a real
    runtime adds its workspace, which is what a server's reserved fraction is for.
    """
    cfg = _cfg(cfg)
    tokens = int(_positive(tokens, "tokens", "tokens", allow_zero=True))
    logits_rows = int(_positive(logits_rows, "logits_rows", "rows", allow_zero=True))
    per_token, per_row = _activation_parts(cfg)
    return tokens * per_token + logits_rows * per_row


@functools.lru_cache(maxsize=256)
def _activation_parts(cfg: TransformerConfig) -> tuple[float, float]:
    """(bytes per new token, bytes per logits row) of :func:`inference_activation_bytes`, for ``cfg``."""
    attention = (cfg.n_heads + 2 * cfg.n_kv_heads) * cfg.head_dim
    width = cfg.expert_d_ff if cfg.is_moe else cfg.d_ff
    ffn = (2 if cfg.gated else 1) * width * (cfg.experts_per_token if cfg.is_moe else 1)
    per_token = (2 * cfg.d_model + max(attention, ffn)) * ACTIVATION_BYTES
    return float(per_token), float(cfg.vocab * LOGIT_BYTES)
