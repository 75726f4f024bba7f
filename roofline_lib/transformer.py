"""Model-level counts of a decoder-only transformer: parameters, FLOPs and the conventions behind them.

Symbols: ``d`` = d_model, ``d_ff`` = FFN inner width, ``L`` = layers, ``s`` = sequence
length, ``V`` = vocabulary, ``H`` = query heads, ``G`` = key/value heads, ``h`` = head size.
A model is a :class:`TransformerConfig`; everything here is counted from the list of
weight matrices it holds (:meth:`TransformerConfig.weight_matrices`):

* attention: Q ``d x H h``, K and V ``d x G h`` each, O ``H h x d``. Multi-head attention has
  ``G = H``, grouped-query ``1 < G < H``, multi-query ``G = 1``; ``H h`` need not be ``d``
  (PaLM: 48 heads of 256 at ``d = 18432``).
* FFN: up and down ``d x d_ff`` (plain), plus a gate for a gated FFN (SwiGLU, GeGLU). In a
  mixture-of-experts layer each of ``n_experts`` experts is such an FFN, a router
  (``d x n_experts``) picks ``experts_per_token`` of them per token, and
  ``n_shared_experts`` more run for every token.

A matrix's forward FLOPs per token are :func:`roofline_lib.ops.gemm_flops` of one row times
that matrix (1 multiply-accumulate = 2 FLOP); a matrix that holds ``p`` weights costs ``2 p``.
The attention scores (``Q K^T`` and ``P V``) are :func:`roofline_lib.ops.attention_flops` for one
query: ``4 H h`` per key it sees. With a causal mask a query sees ``s / 2`` keys on average,
the convention of a kernel that skips masked blocks (FlashAttention, PyTorch's fused SDPA);
an implementation that computes the full square and masks it really does the full count.
The exact kept count is ``s (s + 1) / 2`` entries, not ``s**2 / 2``
(:func:`roofline_lib.ops.attention_score_entries`). Embedding lookups, norms, biases,
activations, softmax and residual adds are counted as 0 FLOPs (memory traffic, not matmuls).

Training costs about three forwards: the backward pass computes, for every weight
matmul, a gradient for its input and one for its weight, each as costly as the forward.
The named conventions for training FLOPs per token are in :data:`TRAINING_CONVENTIONS`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from types import MappingProxyType

from ._checks import _model_params, _positive, _positive_int
from .ops import attention_flops, gemm_flops

__all__ = [
    "TransformerFlops",
    "WeightMatrix",
    "transformer_flops_per_token",
    "TRAINING_CONVENTIONS",
    "training_convention",
    "training_flops_per_token",
    "inference_flops_per_token",
    "params_per_layer",
    "kappa",
    "score_to_body_ratio",
    "TransformerConfig",
    "LLAMA2_7B",
    "STACK_100M",
    "shipped_models",
    "model_config",
    "published_params",
]


def _flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value


@dataclass(frozen=True)
class TransformerFlops:
    """Forward FLOPs per token of a decoder-only transformer, split by where they go.

    ``*_total`` fields are summed over all layers. ``qkvo_total`` holds the four attention
    projections, ``ffn_total`` the FFN (for a mixture of experts: the experts a token uses,
    the shared experts and the router). Readable as attributes or as a mapping:
    ``f.ffn_total == f["ffn_total"]``.
    """

    fwd_per_token: int
    ffn_total: int
    qkvo_total: int
    scores_total: int
    unembed: int

    def __getitem__(self, key: str) -> int:
        if key not in self.keys():
            raise KeyError(f"{key!r}; known keys: {', '.join(self.keys())}")
        return getattr(self, key)

    def keys(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self))

    def items(self):
        return asdict(self).items()

    @property
    def fwd_bwd_per_token(self) -> int:
        """Forward plus backward: three forwards (the backward costs two)."""
        return 3 * self.fwd_per_token

    def share(self, key: str) -> float:
        """Fraction of the forward FLOPs that ``key`` accounts for."""
        return self[key] / self.fwd_per_token


@dataclass(frozen=True)
class WeightMatrix:
    """One weight matrix of a block: ``d_in x d_out``, held ``copies`` times, ``active`` used per token.

    ``copies`` > 1 for experts (``n_experts`` copies, ``experts_per_token`` active). ``term``
    is the :class:`TransformerFlops` field its FLOPs belong to (``"qkvo"`` or ``"ffn"``).
    """

    name: str
    d_in: int
    d_out: int
    copies: int = 1
    active: int = 1
    bias: bool = False
    term: str = "qkvo"

    @property
    def params_each(self) -> int:
        """Weights of one copy, plus its bias vector (``d_out``) when it has one."""
        return self.d_in * self.d_out + (self.d_out if self.bias else 0)

    @property
    def params(self) -> int:
        return self.copies * self.params_each

    @property
    def active_params(self) -> int:
        return self.active * self.params_each

    def flops_per_token(self) -> int:
        """Forward FLOPs of the copies one token uses: ``active`` GEMMs of one row (bias adds not counted)."""
        return self.active * gemm_flops(1, self.d_out, self.d_in)


_NORMS = ("rmsnorm", "layernorm")


@dataclass(frozen=True)
class TransformerConfig:
    """Sizes of a pre-norm decoder-only transformer.

    Required: ``d_model``, ``d_ff``, ``n_layers``, ``n_heads``, ``vocab`` and ``seq_len`` (the
    training context). The defaults describe a Llama-style model: gated FFN (SwiGLU), RMSNorm,
    no biases, rotary positions (no position table), untied embeddings, multi-head attention.

    * ``n_kv_heads``: key/value heads (``None``: as many as query heads). Must divide ``n_heads``.
    * ``head_dim``: size of one head (``None``: ``d_model // n_heads``, which must then divide).
      The resolved value is stored, so ``dataclasses.replace(cfg, n_heads=...)`` keeps the old
      head size unless you pass ``head_dim=None`` too.
    * ``tied_embeddings``: the unembedding reuses the input embedding matrix.
    * ``bias``: every linear layer of a block has a bias (GPT-2); ``qkv_bias``: only Q, K and V
      do (Qwen2).
    * ``norm``: ``"rmsnorm"`` (a gain of ``d``) or ``"layernorm"`` (gain and bias, ``2 d``);
      ``norms_per_layer`` of them per block, plus one before the unembedding.
    * ``learned_positions``: rows of a learned position table (GPT-2: 1024); ``None`` for rotary.
    * ``n_experts`` > 1 makes every FFN a mixture of experts: ``experts_per_token`` routed
      experts of width ``expert_d_ff`` (default ``d_ff``) per token, a ``d x n_experts`` router,
      and ``n_shared_experts`` experts every token uses.
    * ``sliding_window``: each query sees at most this many keys (Mistral 7B: 4096).
    * ``name``: a label; it takes no part in comparisons.
    """

    d_model: int
    d_ff: int
    n_layers: int
    n_heads: int
    vocab: int
    seq_len: int
    gated: bool = True
    tied_embeddings: bool = False
    n_kv_heads: int | None = None
    head_dim: int | None = None
    bias: bool = False
    qkv_bias: bool = False
    norm: str = "rmsnorm"
    norms_per_layer: int = 2
    learned_positions: int | None = None
    n_experts: int = 1
    experts_per_token: int = 1
    n_shared_experts: int = 0
    expert_d_ff: int | None = None
    sliding_window: int | None = None
    name: str = field(default="", compare=False)

    def __post_init__(self):
        _positive_int(self.d_model, "d_model", "features")
        _positive_int(self.d_ff, "d_ff", "features")
        _positive_int(self.n_layers, "n_layers", "layers")
        heads = _positive_int(self.n_heads, "n_heads", "attention heads")
        _positive_int(self.vocab, "vocab", "tokens in the vocabulary")
        _positive_int(self.seq_len, "seq_len", "tokens")
        for flag in ("gated", "tied_embeddings", "bias", "qkv_bias"):
            _flag(getattr(self, flag), flag)
        if self.head_dim is None:
            if self.d_model % heads:
                raise ValueError(
                    f"n_heads must divide d_model ({self.d_model} features) unless head_dim is "
                    f"given, got {self.n_heads!r}"
                )
            object.__setattr__(self, "head_dim", self.d_model // heads)
        else:
            _positive_int(self.head_dim, "head_dim", "features per head")
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", heads)
        else:
            kv = _positive_int(self.n_kv_heads, "n_kv_heads", "key/value heads")
            if kv > heads or heads % kv:
                raise ValueError(f"n_kv_heads must divide n_heads ({heads} query heads), got {self.n_kv_heads!r}")
        if self.norm not in _NORMS:
            raise ValueError(f"norm must be one of {', '.join(map(repr, _NORMS))}, got {self.norm!r}")
        _positive_int(self.norms_per_layer, "norms_per_layer", "norms per block")
        if self.learned_positions is not None:
            _positive_int(self.learned_positions, "learned_positions", "rows of the position table")
        experts = _positive_int(self.n_experts, "n_experts", "experts")
        per_token = _positive_int(self.experts_per_token, "experts_per_token", "experts per token")
        if per_token > experts:
            raise ValueError(
                f"experts_per_token must be at most n_experts ({experts} experts), got {self.experts_per_token!r}"
            )
        if (
            isinstance(self.n_shared_experts, bool)
            or not isinstance(self.n_shared_experts, int)
            or self.n_shared_experts < 0
        ):
            raise ValueError(
                f"n_shared_experts must be a whole number of experts, 0 or more, got {self.n_shared_experts!r}"
            )
        if self.expert_d_ff is None:
            object.__setattr__(self, "expert_d_ff", self.d_ff)
        else:
            _positive_int(self.expert_d_ff, "expert_d_ff", "features")
        if self.sliding_window is not None:
            _positive_int(self.sliding_window, "sliding_window", "tokens")
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {type(self.name).__name__} {self.name!r}")

    # --- shape ----------------------------------------------------------------------------

    @property
    def is_moe(self) -> bool:
        """True when the FFN is a mixture of experts (more than one expert)."""
        return self.n_experts > 1

    @property
    def attention_dim(self) -> int:
        """Query heads x head size: the width of Q and of the attention output."""
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Key/value heads x head size: the width of K and of V (and of a KV-cache row)."""
        return self.n_kv_heads * self.head_dim

    def weight_matrices(self) -> tuple[WeightMatrix, ...]:
        """The weight matrices of one block, each with its copies, active copies and bias."""
        d, b = self.d_model, self.bias
        qkv_b = self.bias or self.qkv_bias
        mats = [
            WeightMatrix("q", d, self.attention_dim, bias=qkv_b),
            WeightMatrix("k", d, self.kv_dim, bias=qkv_b),
            WeightMatrix("v", d, self.kv_dim, bias=qkv_b),
            WeightMatrix("o", self.attention_dim, d, bias=b),
        ]
        routed, active = self.n_experts, self.experts_per_token
        ff = self.expert_d_ff if self.is_moe else self.d_ff
        ffn_shapes = ([("gate", d, ff)] if self.gated else []) + [("up", d, ff), ("down", ff, d)]
        prefix = "expert_" if self.is_moe else "ffn_"
        for part, d_in, d_out in ffn_shapes:
            mats.append(WeightMatrix(prefix + part, d_in, d_out, routed, active, b, "ffn"))
        if self.n_shared_experts:
            for part, d_in, d_out in ffn_shapes:
                n = self.n_shared_experts
                mats.append(WeightMatrix("shared_" + part, d_in, d_out, n, n, b, "ffn"))
        if self.is_moe:
            mats.append(WeightMatrix("router", d, self.n_experts, term="ffn"))
        return tuple(mats)

    @property
    def kappa(self) -> float:
        """Weight-matrix parameters per layer in units of ``d_model**2`` (norms and biases aside)."""
        return self.params_per_layer() / (self.d_model * self.d_model)

    def params_per_layer(self) -> int:
        """Weights of one block's matrices, every expert included; norms and biases aside."""
        return sum(m.copies * m.d_in * m.d_out for m in self.weight_matrices())

    # --- parameters -----------------------------------------------------------------------

    def _norm_params(self) -> int:
        return (2 if self.norm == "layernorm" else 1) * self.d_model  # gain (+ bias)

    def params_breakdown(self, active=False) -> dict[str, int]:
        """Parameters by where they sit: attention, ffn, norms, embedding, unembedding, positions.

        ``active=True`` counts only the experts one token uses (a dense model is unchanged).
        ``unembedding`` is 0 when the embedding is tied (the same matrix is counted once).
        """
        active = _flag(active, "active")
        per = {"attention": 0, "ffn": 0}
        for m in self.weight_matrices():
            per["attention" if m.term == "qkvo" else "ffn"] += m.active_params if active else m.params
        d, L = self.d_model, self.n_layers
        return {
            "attention": L * per["attention"],
            "ffn": L * per["ffn"],
            "norms": (self.norms_per_layer * L + 1) * self._norm_params(),  # per block + the final one
            "embedding": self.vocab * d,
            "unembedding": 0 if self.tied_embeddings else self.vocab * d,
            "positions": (self.learned_positions or 0) * d,
        }

    def n_params(self, include_embedding=True, include_norms=True) -> int:
        """Total parameter count (every expert included).

        ``include_embedding=False`` drops the vocabulary matrices (input table, and the
        unembedding when untied) and the learned position table: the "non-embedding"
        count. ``include_norms=False`` drops the norm gains (and LayerNorm biases).
        """
        return self._count(False, include_embedding, include_norms)

    def active_params(self, include_embedding=True, include_norms=True) -> int:
        """Parameters one token uses: :meth:`n_params` with only ``experts_per_token`` routed experts."""
        return self._count(True, include_embedding, include_norms)

    def _count(self, active, include_embedding, include_norms) -> int:
        include_embedding = _flag(include_embedding, "include_embedding")
        include_norms = _flag(include_norms, "include_norms")
        parts = self.params_breakdown(active=active)
        n = parts["attention"] + parts["ffn"]
        if include_embedding:
            n += parts["embedding"] + parts["unembedding"] + parts["positions"]
        if include_norms:
            n += parts["norms"]
        return n

    # --- FLOPs ----------------------------------------------------------------------------

    def keys_seen(self, seq_len=None, causal=True) -> float:
        """Keys one query attends to, on average over a sequence of ``seq_len`` tokens.

        Full square: ``s`` (at most ``sliding_window``). Causal: ``s / 2``; with a window
        ``W < s``, ``W - W**2 / (2 s)`` (the first ``W`` queries see a growing triangle, the
        rest see ``W`` keys each).
        """
        s = self.seq_len if seq_len is None else _positive_int(seq_len, "seq_len", "tokens")
        causal = _flag(causal, "causal")
        w = self.sliding_window
        if not causal:
            return s if w is None else min(s, w)
        if w is None or w >= s:
            return s / 2
        return w - w * w / (2 * s)

    def flops_per_token(self, causal=True, seq_len=None) -> TransformerFlops:
        """Forward FLOPs for one token, by component (see the module docstring).

        Per layer: each matrix's :func:`~roofline_lib.ops.gemm_flops` for one row (only the
        experts a token uses), and the scores, ``ops.attention_flops`` of one query over
        :meth:`keys_seen` keys. Once: the unembedding, ``gemm_flops(1, V, d)``.
        """
        s = self.seq_len if seq_len is None else _positive_int(seq_len, "seq_len", "tokens")
        keys = self.keys_seen(s, causal)
        per_key = attention_flops(1, self.n_heads, 1, 1, self.head_dim)  # 4 H h: QK^T and PV
        scores = per_key * keys
        scores = int(scores) if float(scores).is_integer() else scores
        qkvo = sum(m.flops_per_token() for m in self.weight_matrices() if m.term == "qkvo")
        ffn = sum(m.flops_per_token() for m in self.weight_matrices() if m.term == "ffn")
        unembed = gemm_flops(1, self.vocab, self.d_model)
        L = self.n_layers
        return TransformerFlops(
            fwd_per_token=L * (qkvo + scores + ffn) + unembed,
            ffn_total=L * ffn,
            qkvo_total=L * qkvo,
            scores_total=L * scores,
            unembed=unembed,
        )

    def training_flops_per_token(self, convention="6N") -> float:
        """:func:`training_flops_per_token` for this model.

        ``n_params`` is :meth:`active_params` (all parameters for a dense model: for a mixture
        of experts, a token trains only the experts it is routed to) and the attention width
        is ``n_heads * head_dim``.
        """
        return training_flops_per_token(
            self.active_params(),
            self.n_layers,
            self.d_model,
            self.seq_len,
            convention,
            attention_dim=self.attention_dim,
        )

    def score_to_body_ratio(self) -> float:
        return score_to_body_ratio(self.seq_len, self.d_model, self.kappa)

    # --- Hugging Face configs -------------------------------------------------------------

    @classmethod
    def from_hf_config(cls, config, *, seq_len=None, name=None, ignore=()) -> "TransformerConfig":
        """Read the architecture of a Hugging Face ``config.json`` (a dict, or a path to the file).

        Families: ``model_type`` llama, mistral, mixtral, qwen2, gemma and gpt2. Nothing is
        downloaded. ``seq_len`` defaults to the config's context (``max_position_embeddings``
        or ``n_positions``). A key that would change the counts but that this reader cannot
        map raises ValueError naming it; keys that do not change the counts (token ids,
        dropout, rope settings, epsilons...) are skipped. ``ignore`` names further keys to skip
        on purpose.
        """
        from ._hf_config import config_kwargs  # a helper module: the key tables are long

        kwargs = config_kwargs(config, seq_len=seq_len, ignore=ignore)
        if name is not None:
            kwargs["name"] = name
        return cls(**kwargs)


def transformer_flops_per_token(d_model, d_ff, n_layers, seq_len, vocab, gated=False, causal=True) -> TransformerFlops:
    """Forward FLOPs for one token of a multi-head, dense decoder, by component.

    Per layer: ``qkvo = 8 d**2``, ``scores = 4 s d`` (halved to ``2 s d`` when ``causal``,
    the convention of a kernel that skips masked blocks), ``ffn = 4 d d_ff`` (``6 d d_ff``
    when ``gated``). Once: ``unembed = 2 d V``. The same count as
    :meth:`TransformerConfig.flops_per_token`; use that for GQA, other head sizes or experts.
    """
    cfg = TransformerConfig(
        d_model=d_model,
        d_ff=d_ff,
        n_layers=n_layers,
        n_heads=1,
        vocab=vocab,
        seq_len=seq_len,
        gated=gated,
    )
    return cfg.flops_per_token(causal=causal)


#: The named conventions for training FLOPs per token, what each counts and who uses it.
#: ``L`` layers, ``s`` training context, ``a`` = heads x head size (``d_model`` for most models).
TRAINING_CONVENTIONS = MappingProxyType(
    {
        "6N": (
            "6 N: forward 2N plus backward 4N, attention scores ignored. The scaling-law "
            "approximation C = 6 N D (Kaplan et al. 2020; Hoffmann et al. 2022, 'Chinchilla')."
        ),
        "three-term": (
            "6 N + 6 L s a: adds the causal score work (a query sees s/2 keys on average, 2 s a FLOP "
            "per layer forward) through forward and backward. The total of Kaplan et al. 2020, "
            "Table 1 (C_forward = 2N + 2 n_layer n_ctx d_attn)."
        ),
        "full-square": (
            "6 N + 12 L s a: the scores over the whole s x s square, masked half included, with "
            "a = heads x head size. PaLM's MFU (Chowdhery et al. 2022, Appendix B: 6N + 12 L H Q T), "
            "reused for MFU by Llama 3 (Dubey et al. 2024) and by nanoGPT's estimate_mfu; "
            "Megatron-LM's FLOP formula (Narayanan et al. 2021) also counts the full square."
        ),
    }
)

_CONVENTION_ALIASES = {"palm": "full-square", "kaplan": "three-term"}


def training_convention(convention) -> str:
    """The registered spelling of a convention name, matched case-insensitively ("palm" = full-square)."""
    if isinstance(convention, str):
        key = convention.strip().lower()
        key = _CONVENTION_ALIASES.get(key, key)
        for known in TRAINING_CONVENTIONS:
            if key == known.lower():
                return known
    raise ValueError(
        f"convention must be one of {', '.join(repr(c) for c in TRAINING_CONVENTIONS)}, got {convention!r}"
    )


def training_flops_per_token(
    n_params, n_layers=None, d_model=None, seq_len=None, convention="6N", *, attention_dim=None
) -> float:
    """Training (forward + backward) FLOPs per token under a named convention.

    * ``"6N"``: ``6 * n_params``. Every parameter takes part in one multiply-add in
      the forward (2 FLOP) and two in the backward (4 FLOP). Attention scores, which
      belong to no parameter, are left out.
    * ``"three-term"``: ``6 * n_params + 6 * n_layers * seq_len * a``. The second
      term is the causal ``2 s a`` score work per layer, carried through forward and
      backward (x3). Written out in full the model is ``6 N_body + 6 L s a + 6 d V``;
      with ``n_params`` counting a tied embedding once, the ``6 * n_params`` term
      already holds the ``6 d V`` of the unembedding (the tied matrix *is* the
      unembedding), so two terms in code stand for three in the model.
    * ``"full-square"``: ``6 * n_params + 12 * n_layers * seq_len * a``: the scores of the
      whole square, twice the causal term (PaLM's convention).

    ``a`` is ``attention_dim`` (query heads x head size), ``d_model`` when not given. What
    ``n_params`` should count is the caller's statement of convention: all parameters, the
    active ones of a mixture of experts, or non-embedding parameters. Report it beside any MFU.
    """
    n = _model_params(n_params)  # often a round figure such as 6.7e9; 7 (for 7B) is refused
    key = training_convention(convention)
    shape = {}
    for name, value, unit in (
        ("n_layers", n_layers, "layers"),
        ("d_model", d_model, "features"),
        ("seq_len", seq_len, "tokens"),
        ("attention_dim", attention_dim, "features (heads x head size)"),
    ):
        if value is not None:  # checked when given, even where the convention does not use it
            shape[name] = _positive_int(value, name, unit)
    if key == "6N":
        return 6 * n  # 2N forward + 4N backward; the shape arguments are not needed
    missing = [name for name in ("n_layers", "d_model", "seq_len") if name not in shape]
    if missing:
        raise ValueError(f"convention {key!r} needs n_layers, d_model and seq_len; missing: {', '.join(missing)}")
    a = shape.get("attention_dim", shape["d_model"])
    causal_scores = 2 * shape["n_layers"] * shape["seq_len"] * a  # 2 s a per layer, forward
    squares = 2 if key == "full-square" else 1  # the whole square is twice the causal half
    return 6 * n + 3 * squares * causal_scores  # x3: forward + backward


def inference_flops_per_token(n_params) -> int:
    """Forward FLOPs per generated token: ``2 * n_params`` (one multiply-add per weight).

    Leaves out attention over the context, ``~4 * L * context * d`` per token, which
    matters once the context is comparable to ``kappa * d / 2``.
    """
    n = _positive_int(n_params, "n_params", "parameters")
    return gemm_flops(1, n, 1)  # one row times n weights


def params_per_layer(d_model, d_ff, gated) -> int:
    """Weight-matrix parameters of one multi-head, dense block: ``4 d**2`` (Q, K, V, O) + FFN.

    FFN: ``2 d d_ff`` for up and down, ``3 d d_ff`` when ``gated`` (gate, up, down).
    Norm gains and biases are ignored (a few ``d`` against ``~12 d**2``). For GQA or
    experts use :meth:`TransformerConfig.params_per_layer`.
    """
    d = _positive_int(d_model, "d_model", "features")
    dff = _positive_int(d_ff, "d_ff", "features")
    gated = _flag(gated, "gated")
    return 4 * d * d + (3 if gated else 2) * d * dff


def kappa(d_model, d_ff, gated) -> float:
    """Non-embedding parameters per layer in units of ``d_model**2`` (norms ignored).

    ``4 + 2 d_ff / d`` plain, ``4 + 3 d_ff / d`` gated: 12 for a plain FFN with
    ``d_ff = 4d`` and for SwiGLU with ``d_ff = 8d/3``; 12.06 for Llama-2-7B's
    ``d_ff = 11008`` at ``d = 4096``.
    """
    d = _positive_int(d_model, "d_model", "features")
    return params_per_layer(d, d_ff, gated) / (d * d)


def score_to_body_ratio(seq_len, d_model, kappa) -> float:
    """Attention-score FLOPs over weight-matmul FLOPs in the body: ``s / (kappa d)``.

    Per layer and token, training: scores ``6 s d`` (causal ``2 s d``, x3) against the
    body's ``6 kappa d**2``. Small ``d`` or long ``s`` makes 6N under-count.
    """
    s = _positive_int(seq_len, "seq_len", "tokens")
    d = _positive_int(d_model, "d_model", "features")
    k = _positive(kappa, "kappa", "parameters per layer per d_model**2")
    return s / (k * d)


#: Llama-2-7B: 6,738,415,616 parameters by this count (see ``model_config("llama-2-7b")``).
LLAMA2_7B = TransformerConfig(
    d_model=4096,
    d_ff=11008,
    n_layers=32,
    n_heads=32,
    vocab=32000,
    seq_len=4096,
    gated=True,
    tied_embeddings=False,
    name="Llama-2-7B",
)

#: Stack-100M, the course's small deep model. The source gives N = 101.4M with the tied
#: embedding; solving 30 * (4 d**2 + 3 d d_ff) + V d + norms = 101.4M gives d_ff ~ 1153.
#: d_ff = 1152 (a multiple of 64, 2.25 d) gives 101,349,888 parameters, kappa = 10.75.
STACK_100M = TransformerConfig(
    d_model=512,
    d_ff=1152,
    n_layers=30,
    n_heads=8,
    vocab=32768,
    seq_len=2048,
    gated=True,
    tied_embeddings=True,
    name="Stack-100M",
)


# --- the shipped model configs ---------------------------------------------------------------

_PUBLISHED_FILE = "published.json"


def _models_dir():
    return resources.files("roofline_lib").joinpath("models")


def _published_table() -> dict:
    return json.loads(_models_dir().joinpath(_PUBLISHED_FILE).read_text(encoding="utf-8"))


def shipped_models() -> tuple[str, ...]:
    """Names of the model configs that ship with the library, for :func:`model_config`."""
    return tuple(_published_table())


def model_config(name, *, seq_len=None) -> TransformerConfig:
    """A shipped model as a :class:`TransformerConfig`: ``model_config("llama-3-8b")``.

    The configs are Hugging Face-style ``config.json`` files written from the authors'
    published architecture tables, read by :meth:`TransformerConfig.from_hf_config`.
    """
    if not isinstance(name, str):
        raise TypeError(f"model name must be a string such as 'llama-3-8b', got {type(name).__name__} {name!r}")
    if not name.strip():
        raise ValueError(f"name must name a shipped model, such as 'llama-3-8b', got an empty string {name!r}")
    table = _published_table()
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    if key not in table:
        raise ValueError(f"unknown model {name!r}; shipped models: {', '.join(table)}")
    text = _models_dir().joinpath(f"{key}.json").read_text(encoding="utf-8")
    return TransformerConfig.from_hf_config(json.loads(text), seq_len=seq_len, name=table[key]["name"])


def published_params(name) -> dict:
    """What the authors published about a shipped model's size, and where.

    Keys: ``name``, ``total`` (parameters), ``source``, and where given ``active`` (a mixture
    of experts), ``rounded_to`` (the unit of the last printed digit, when the figure is a
    rounded one such as "124M") and ``note``.
    """
    model_config(name)  # same validation and spelling rules
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    return dict(_published_table()[key])
