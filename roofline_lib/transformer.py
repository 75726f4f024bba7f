"""Model-level FLOP counts of a decoder-only transformer, and the conventions behind them.

Symbols: ``d`` = d_model, ``d_ff`` = FFN inner width, ``L`` = layers, ``s`` = sequence
length, ``V`` = vocabulary, ``N`` = parameters. 1 multiply-accumulate = 2 FLOP.

Forward FLOPs per token, per layer (what :func:`transformer_flops_per_token` adds up):

* Q, K, V and O projections, four ``d x d`` matrices: ``4 * 2 * d**2``.
* Attention scores, ``Q K^T`` and ``P V``: ``4 * s * d`` if every query saw all ``s``
  keys; ``2 * s * d`` with a causal mask, because on average a query sees ``s / 2``
  keys. The halving is the convention of a kernel that skips masked blocks
  (FlashAttention, PyTorch's fused SDPA kernels). An implementation that computes
  the full square and then masks it really does the ``4 * s * d``. The exact kept
  count is ``s * (s + 1) / 2`` entries, not ``s**2 / 2``: a ``(s + 1) / s`` difference
  (:func:`roofline_lib.ops.attention_score_entries`).
* FFN: two ``d x d_ff`` matrices (``4 * d * d_ff``), or three for a gated FFN such as
  SwiGLU (``6 * d * d_ff``).

Once per token: the unembedding (logits) ``2 * d * V``. Embedding lookups, norms,
activations, softmax and residual adds are counted as 0 (they are memory traffic,
not matmul FLOPs).

Training costs about three forwards: the backward pass computes, for every weight
matmul, a gradient for its input and one for its weight, each as costly as the
forward product.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from ._checks import _positive, _positive_int

__all__ = [
    "TransformerFlops",
    "transformer_flops_per_token",
    "TRAINING_CONVENTIONS",
    "training_flops_per_token",
    "inference_flops_per_token",
    "params_per_layer",
    "kappa",
    "score_to_body_ratio",
    "TransformerConfig",
    "LLAMA2_7B",
    "STACK_100M",
]


def _flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value


@dataclass(frozen=True)
class TransformerFlops:
    """Forward FLOPs per token of a decoder-only transformer, split by where they go.

    ``*_total`` fields are summed over all layers. Readable as attributes or as a
    mapping: ``f.ffn_total == f["ffn_total"]``.
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


def transformer_flops_per_token(
    d_model, d_ff, n_layers, seq_len, vocab, gated=False, causal=True
) -> TransformerFlops:
    """Forward FLOPs for one token of a decoder-only transformer, by component.

    Per layer: ``qkvo = 8 d**2``, ``scores = 4 s d`` (halved to ``2 s d`` when ``causal``,
    the convention of a kernel that skips masked blocks), ``ffn = 4 d d_ff`` (``6 d d_ff``
    when ``gated``). Once: ``unembed = 2 d V``. See the module docstring.
    """
    d = _positive_int(d_model, "d_model", "features")
    dff = _positive_int(d_ff, "d_ff", "features")
    n_layers = _positive_int(n_layers, "n_layers", "layers")
    s = _positive_int(seq_len, "seq_len", "tokens")
    v = _positive_int(vocab, "vocab", "tokens in the vocabulary")
    gated = _flag(gated, "gated")
    causal = _flag(causal, "causal")

    qkvo = 4 * 2 * d * d  # four d x d projections, 2 FLOP per MAC
    scores = 2 * 2 * s * d  # Q K^T and P V, each 2*s*d per query
    if causal:
        scores //= 2  # a query sees s/2 keys on average; the kernel skips the rest
    ffn = (6 if gated else 4) * d * dff  # 3 (gate, up, down) or 2 matrices of d x d_ff
    unembed = 2 * d * v
    per_layer = qkvo + scores + ffn
    return TransformerFlops(
        fwd_per_token=n_layers * per_layer + unembed,
        ffn_total=n_layers * ffn,
        qkvo_total=n_layers * qkvo,
        scores_total=n_layers * scores,
        unembed=unembed,
    )


#: Known training-FLOP conventions and what each counts, per token.
TRAINING_CONVENTIONS = {
    "6N": "6 * n_params: forward 2N plus backward 4N; attention scores ignored",
    "three-term": "6 * n_params + 6 * n_layers * seq_len * d_model: adds the causal score work",
}


def training_flops_per_token(n_params, n_layers=None, d_model=None, seq_len=None, convention="6N") -> float:
    """Training (forward + backward) FLOPs per token under a named convention.

    * ``"6N"``: ``6 * n_params``. Every parameter takes part in one multiply-add in
      the forward (2 FLOP) and two in the backward (4 FLOP). Attention scores, which
      belong to no parameter, are left out.
    * ``"three-term"``: ``6 * n_params + 6 * n_layers * seq_len * d_model``. The second
      term is the causal ``2 s d`` score work per layer, carried through forward and
      backward (x3). Written out in full the model is ``6 N_body + 6 L s d + 6 d V``;
      with ``n_params`` counting a tied embedding once, the ``6 * n_params`` term
      already holds the ``6 d V`` of the unembedding (the tied matrix *is* the
      unembedding), so two terms in code stand for three in the model.

    What ``n_params`` should count is the caller's statement of convention: all
    parameters (as above), or non-embedding parameters, which under-counts small
    models whose vocabulary matrix is a large share. Report it next to any MFU.
    """
    n = _positive(n_params, "n_params", "parameters")  # often a round figure such as 6.7e9
    key = _convention_key(convention)
    shape = {}
    for name, value, unit in (("n_layers", n_layers, "layers"), ("d_model", d_model, "features"),
                              ("seq_len", seq_len, "tokens")):
        if value is not None:  # checked when given, even where the convention does not use it
            shape[name] = _positive_int(value, name, unit)
    if key == "6N":
        return 6 * n  # 2N forward + 4N backward; the shape arguments are not needed
    missing = [name for name in ("n_layers", "d_model", "seq_len") if name not in shape]
    if missing:
        raise ValueError(
            "convention 'three-term' (6N + 6 L s d) needs n_layers, d_model and seq_len; "
            f"missing: {', '.join(missing)}"
        )
    n_layers, d, s = shape["n_layers"], shape["d_model"], shape["seq_len"]
    return 6 * n + 6 * n_layers * s * d  # + 3 x (causal 2 s d per layer)


def _convention_key(convention) -> str:
    """The registered spelling of a convention name, matched case-insensitively."""
    if isinstance(convention, str):
        for known in TRAINING_CONVENTIONS:
            if convention.strip().lower() == known.lower():
                return known
    raise ValueError(
        f"convention must be one of {', '.join(repr(c) for c in TRAINING_CONVENTIONS)}, "
        f"got {convention!r}"
    )


def inference_flops_per_token(n_params) -> int:
    """Forward FLOPs per generated token: ``2 * n_params`` (one multiply-add per weight).

    Leaves out attention over the context, ``~4 * L * context * d`` per token, which
    matters once the context is comparable to ``kappa * d / 2``.
    """
    return 2 * _positive_int(n_params, "n_params", "parameters")


def params_per_layer(d_model, d_ff, gated) -> int:
    """Weight-matrix parameters of one block: ``4 d**2`` (Q, K, V, O) + FFN.

    FFN: ``2 d d_ff`` for up and down, ``3 d d_ff`` when ``gated`` (gate, up, down).
    Norm gains and biases are ignored (a few ``d`` against ``~12 d**2``).
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


@dataclass(frozen=True)
class TransformerConfig:
    """Sizes of a decoder-only transformer (pre-norm, RMSNorm, no biases).

    ``seq_len`` is the training context. ``tied_embeddings``: the unembedding reuses
    the input embedding matrix.
    """

    d_model: int
    d_ff: int
    n_layers: int
    n_heads: int
    vocab: int
    seq_len: int
    gated: bool = True
    tied_embeddings: bool = False

    def __post_init__(self):
        _positive_int(self.d_model, "d_model", "features")
        _positive_int(self.d_ff, "d_ff", "features")
        _positive_int(self.n_layers, "n_layers", "layers")
        _positive_int(self.n_heads, "n_heads", "attention heads")
        _positive_int(self.vocab, "vocab", "tokens in the vocabulary")
        _positive_int(self.seq_len, "seq_len", "tokens")
        _flag(self.gated, "gated")
        _flag(self.tied_embeddings, "tied_embeddings")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"n_heads must divide d_model ({self.d_model} features), got {self.n_heads!r}"
            )

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kappa(self) -> float:
        return kappa(self.d_model, self.d_ff, self.gated)

    def params_per_layer(self) -> int:
        return params_per_layer(self.d_model, self.d_ff, self.gated)

    def n_params(self, include_embedding=True, include_norms=True) -> int:
        """Parameter count.

        Body: ``n_layers * params_per_layer``. Embedding: ``vocab * d_model``, twice when
        untied (input table and unembedding), once when tied. Norms: one gain vector of
        ``d_model`` per norm, two per layer plus the final one. ``include_embedding=False``
        drops every vocabulary-sized matrix.
        """
        include_embedding = _flag(include_embedding, "include_embedding")
        include_norms = _flag(include_norms, "include_norms")
        d = self.d_model
        n = self.n_layers * self.params_per_layer()
        if include_embedding:
            n += (1 if self.tied_embeddings else 2) * self.vocab * d
        if include_norms:
            n += (2 * self.n_layers + 1) * d  # two per block, one before the unembedding
        return n

    def flops_per_token(self, causal=True, seq_len=None) -> TransformerFlops:
        """:func:`transformer_flops_per_token` for this model (at ``seq_len`` if given)."""
        return transformer_flops_per_token(
            self.d_model,
            self.d_ff,
            self.n_layers,
            self.seq_len if seq_len is None else seq_len,
            self.vocab,
            gated=self.gated,
            causal=causal,
        )

    def training_flops_per_token(self, convention="6N") -> int:
        """:func:`training_flops_per_token` with ``n_params`` = all parameters."""
        return training_flops_per_token(
            self.n_params(), self.n_layers, self.d_model, self.seq_len, convention
        )

    def score_to_body_ratio(self) -> float:
        return score_to_body_ratio(self.seq_len, self.d_model, self.kappa)


#: Llama-2-7B: 6,738,415,616 parameters by this count, the published figure.
LLAMA2_7B = TransformerConfig(
    d_model=4096, d_ff=11008, n_layers=32, n_heads=32, vocab=32000, seq_len=4096,
    gated=True, tied_embeddings=False,
)

#: Stack-100M, the course's small deep model. The source gives N = 101.4M with the tied
#: embedding; solving 30 * (4 d**2 + 3 d d_ff) + V d + norms = 101.4M gives d_ff ~ 1153.
#: d_ff = 1152 (a multiple of 64, 2.25 d) gives 101,349,888 parameters, kappa = 10.75.
STACK_100M = TransformerConfig(
    d_model=512, d_ff=1152, n_layers=30, n_heads=8, vocab=32768, seq_len=2048,
    gated=True, tied_embeddings=True,
)
