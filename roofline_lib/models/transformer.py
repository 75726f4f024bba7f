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

A matrix's forward FLOPs per token are :func:`roofline_lib.core.ops.gemm_flops` of one row times
that matrix (1 multiply-accumulate = 2 FLOP); a matrix that holds ``p`` weights costs ``2 p``.
The attention scores (``Q K^T`` and ``P V``) are :func:`roofline_lib.core.ops.attention_flops` for one
query: ``4 H h`` per key it sees. With a causal mask a query sees ``s / 2`` keys on average,
the convention of a kernel that skips masked blocks (FlashAttention, PyTorch's fused SDPA);
an implementation that computes the full square and masks it really does the full count.
The exact kept count is ``s (s + 1) / 2`` entries, not ``s**2 / 2``
(:func:`roofline_lib.core.ops.attention_score_entries`). Embedding lookups, norms, biases,
activations, softmax and residual adds are counted as 0 FLOPs (memory traffic, not matmuls).

Training costs about three forwards: the backward pass computes, for every weight
matmul, a gradient for its input and one for its weight, each as costly as the forward.
The named conventions for training FLOPs per token are in :data:`TRAINING_CONVENTIONS`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field, fields
from types import MappingProxyType

from ..core.checks import _flag, _model_params, _positive, _positive_int
from ..core.frozen import hash_once, hashed_once
from ..core.ops import attention_flops, gemm_flops
from ..core.registry_data import read_records, read_table

__all__ = [
    "TransformerFlops",
    "WeightMatrix",
    "MLA",
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


def _whole(value, name: str, unit: str) -> int:
    """A count that may be 0: experts, layers, features."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number of {unit}, 0 or more, got {value!r}")
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


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2 and V3): keys and values rebuilt from one small latent.

    Per layer, with ``H`` query heads (``qk = qk_nope_head_dim + qk_rope_head_dim``):

    * queries: ``d x q_lora_rank``, an RMSNorm of ``q_lora_rank`` and ``q_lora_rank x H qk``
      (``d x H qk`` directly when ``q_lora_rank`` is None);
    * keys and values: ``d x (kv_lora_rank + qk_rope_head_dim)`` (the latent, and one rotary key
      shared by every head), an RMSNorm of ``kv_lora_rank``, and
      ``kv_lora_rank x H (qk_nope_head_dim + v_head_dim)`` (each head's non-rotary key and its value);
    * output: ``H v_head_dim x d``.

    The KV cache holds ``kv_lora_rank + qk_rope_head_dim`` elements per token and layer, not
    ``2 G h``. Scores cost ``2 qk`` (``Q K^T``) plus ``2 v_head_dim`` (``P V``) per key and head,
    counted as transformers' implementation runs them (keys and values decompressed per token).
    """

    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None

    def __post_init__(self):
        _positive_int(self.kv_lora_rank, "kv_lora_rank", "latent features")
        _positive_int(self.qk_nope_head_dim, "qk_nope_head_dim", "features per head")
        _whole(self.qk_rope_head_dim, "qk_rope_head_dim", "features")
        _positive_int(self.v_head_dim, "v_head_dim", "features per head")
        if self.q_lora_rank is not None:
            _positive_int(self.q_lora_rank, "q_lora_rank", "latent features")

    @property
    def qk_head_dim(self) -> int:
        """Size of one query or key head: the non-rotary part plus the rotary part."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def cache_width(self) -> int:
        """Elements one token adds to one layer's KV cache: the latent and the rotary key."""
        return self.kv_lora_rank + self.qk_rope_head_dim


_NORMS = ("rmsnorm", "layernorm")
_KV_LAYOUTS = ("window", "transformers")


@hashed_once
@dataclass(frozen=True)
class TransformerConfig:
    """Sizes of a pre-norm decoder-only transformer.

    Required: ``d_model``, ``d_ff``, ``n_layers``, ``n_heads`` and ``vocab``. ``seq_len`` is the
    training length (the sequences the model was trained on, not its context window); it has no
    default, because it changes every count of the attention scores: a count that needs it and
    finds ``None`` asks for it. The defaults describe a Llama-style model: gated FFN (SwiGLU),
    RMSNorm, no biases, rotary positions (no position table), untied embeddings, multi-head
    attention.

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
    * ``sliding_window``: each query sees at most this many keys (Mistral 7B: 4096), in
      ``window_layers`` of the layers (``None``: all of them; Gemma 2 alternates, 13 of 26), the
      others attending to the whole context. A windowed layer's KV cache holds the window only.
    * ``qk_norm``: an RMSNorm over the whole Q and over the whole K projection output (OLMo 2).
    * ``embedding_norm``: a norm right after the embedding lookup (BLOOM).
    * ``shared_expert_d_ff``: the width of each shared expert (default ``expert_d_ff``);
      ``shared_expert_gate``: a ``d x 1`` sigmoid gate scales the shared experts' output (Qwen-MoE).
    * ``n_dense_layers``: in a mixture of experts, the first layers have a dense FFN of width
      ``d_ff`` instead (DeepSeek's ``first_k_dense_replace``); the rest use experts.
    * ``mla``: multi-head latent attention (:class:`MLA`) in place of Q, K, V and O.
    * ``qk_head_norm``: one RMSNorm of ``head_dim`` on the queries and one on the keys, shared by
      every head (Qwen 3, Gemma 3); ``qk_norm`` normalises the whole projection instead.
    * ``ffn_bias``: the FFN's linear layers (every expert's too) have biases; ``None``: as ``bias``
      says (GPT-J: ``bias=False, ffn_bias=True``).
    * ``unembedding_bias``: the unembedding has a bias of ``vocab`` (GPT-J, Phi-3.5-MoE's option).
    * ``router_bias``: the router has a bias of ``n_experts`` (gpt-oss).
    * ``attention_sinks``: each layer holds one learned sink logit per query head (gpt-oss): ``H``
      parameters, 0 FLOPs (one more column in the softmax).
    * ``chunked_attention``: the ``window_layers`` attend within fixed chunks of ``sliding_window``
      tokens (Llama 4's ``attention_chunk_size``) instead of a window that slides.
    * ``cache_kv_heads``: the heads transformers' cache stores per layer where that differs from
      ``n_kv_heads`` (Falcon's new architecture broadcasts K and V to every query head first); only
      :meth:`kv_cache_bytes` with ``layout="transformers"`` reads it.
    * ``eager_dense_experts``: transformers runs every expert on every token, scaled by the router's
      score (Llama 4); only :meth:`flops_per_token` with ``eager=True`` reads it.
    * ``name``: a label, and ``context_window``: the longest context the model accepts
      (``max_position_embeddings``); neither takes part in comparisons or counts.
    """

    d_model: int
    d_ff: int
    n_layers: int
    n_heads: int
    vocab: int
    seq_len: int | None = None
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
    window_layers: int | None = None
    qk_norm: bool = False
    embedding_norm: bool = False
    shared_expert_d_ff: int | None = None
    shared_expert_gate: bool = False
    n_dense_layers: int = 0
    mla: MLA | None = None
    qk_head_norm: bool = False
    ffn_bias: bool | None = None
    unembedding_bias: bool = False
    router_bias: bool = False
    attention_sinks: bool = False
    chunked_attention: bool = False
    name: str = field(default="", compare=False)
    context_window: int | None = field(default=None, compare=False)
    cache_kv_heads: int | None = field(default=None, compare=False)
    eager_dense_experts: bool = field(default=False, compare=False)

    def __post_init__(self):
        heads = self._check_sizes()
        self._resolve_latent_attention(heads)
        self._resolve_heads(heads)
        self._check_norms_and_positions()
        experts = self._resolve_experts()
        self._check_window()
        self._resolve_shared_experts(experts)
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {type(self.name).__name__} {self.name!r}")
        # hashed once: the serving simulator looks a config up in its caches several times a step,
        # and hashing some 30 fields each time was a tenth of its run
        hash_once(self)

    def _resolve(self, attr: str, value) -> None:
        """Store the resolved value of a field left as None (the dataclass is frozen)."""
        object.__setattr__(self, attr, value)

    def _check_sizes(self) -> int:
        """The required sizes, the lengths and the flags; returns the query heads."""
        _positive_int(self.d_model, "d_model", "features")
        _positive_int(self.d_ff, "d_ff", "features")
        _positive_int(self.n_layers, "n_layers", "layers")
        heads = _positive_int(self.n_heads, "n_heads", "attention heads")
        _positive_int(self.vocab, "vocab", "tokens in the vocabulary")
        if self.seq_len is not None:
            _positive_int(self.seq_len, "seq_len", "tokens")
        if self.context_window is not None:
            _positive_int(self.context_window, "context_window", "tokens")
        flags = ("gated", "tied_embeddings", "bias", "qkv_bias", "qk_norm", "embedding_norm", "shared_expert_gate")
        more = ("qk_head_norm", "unembedding_bias", "router_bias", "attention_sinks", "chunked_attention")
        for flag in (*flags, *more, "eager_dense_experts"):
            _flag(getattr(self, flag), flag)
        if self.ffn_bias is not None:
            _flag(self.ffn_bias, "ffn_bias")
        if self.cache_kv_heads is not None:
            _positive_int(self.cache_kv_heads, "cache_kv_heads", "key/value heads in the cache")
        return heads

    def _resolve_latent_attention(self, heads: int) -> None:
        """With ``mla``: its head size by default, one KV head per query head, no Q/K norm or bias."""
        if self.mla is None:
            return
        if not isinstance(self.mla, MLA):
            raise TypeError(f"mla must be an MLA(...) or None, got {type(self.mla).__name__} {self.mla!r}")
        if self.head_dim is None:
            self._resolve("head_dim", self.mla.qk_head_dim)
        if self.n_kv_heads not in (None, heads):
            raise ValueError(
                f"n_kv_heads must equal n_heads ({heads}) with multi-head latent attention (every head "
                f"rebuilds its own key and value from the latent), got {self.n_kv_heads!r}"
            )
        if self.qk_norm or self.qk_head_norm or self.qkv_bias or self.bias or self.attention_sinks:
            raise ValueError(
                "qk_norm, qk_head_norm, qkv_bias, bias and attention_sinks are not mapped for multi-head latent attention"
            )

    def _resolve_heads(self, heads: int) -> None:
        """``head_dim`` (default ``d_model // n_heads``) and ``n_kv_heads`` (default ``n_heads``)."""
        if self.head_dim is None:
            if self.d_model % heads:
                raise ValueError(
                    f"n_heads must divide d_model ({self.d_model} features) unless head_dim is "
                    f"given, got {self.n_heads!r}"
                )
            self._resolve("head_dim", self.d_model // heads)
        else:
            _positive_int(self.head_dim, "head_dim", "features per head")
        if self.n_kv_heads is None:
            self._resolve("n_kv_heads", heads)
        else:
            kv = _positive_int(self.n_kv_heads, "n_kv_heads", "key/value heads")
            if kv > heads or heads % kv:
                raise ValueError(f"n_kv_heads must divide n_heads ({heads} query heads), got {self.n_kv_heads!r}")

    def _check_norms_and_positions(self) -> None:
        if self.norm not in _NORMS:
            raise ValueError(f"norm must be one of {', '.join(map(repr, _NORMS))}, got {self.norm!r}")
        _positive_int(self.norms_per_layer, "norms_per_layer", "norms per block")
        if self.learned_positions is not None:
            _positive_int(self.learned_positions, "learned_positions", "rows of the position table")

    def _resolve_experts(self) -> int:
        """The routed experts, at most ``n_experts`` per token, and their width (default ``d_ff``)."""
        experts = _positive_int(self.n_experts, "n_experts", "experts")
        per_token = _positive_int(self.experts_per_token, "experts_per_token", "experts per token")
        if per_token > experts:
            raise ValueError(
                f"experts_per_token must be at most n_experts ({experts} experts), got {self.experts_per_token!r}"
            )
        _whole(self.n_shared_experts, "n_shared_experts", "experts")
        if self.expert_d_ff is None:
            self._resolve("expert_d_ff", self.d_ff)
        else:
            _positive_int(self.expert_d_ff, "expert_d_ff", "features")
        return experts

    def _check_window(self) -> None:
        """``sliding_window`` in tokens, and ``window_layers`` (which needs it) from 0 to ``n_layers``."""
        if self.sliding_window is not None:
            _positive_int(self.sliding_window, "sliding_window", "tokens")
        elif self.chunked_attention:
            raise ValueError("chunked_attention=True needs the chunk length as sliding_window (tokens)")
        if self.window_layers is None:
            return
        if self.sliding_window is None:
            raise ValueError(f"window_layers needs a sliding_window, got window_layers={self.window_layers!r}")
        if _whole(self.window_layers, "window_layers", "layers") > self.n_layers:
            raise ValueError(
                f"window_layers must be from 0 to n_layers ({self.n_layers} layers), got {self.window_layers!r}"
            )

    def _resolve_shared_experts(self, experts: int) -> None:
        """The shared experts' width (default ``expert_d_ff``) and gate, and the dense first layers."""
        if self.shared_expert_d_ff is None:
            self._resolve("shared_expert_d_ff", self.expert_d_ff)
        else:
            _positive_int(self.shared_expert_d_ff, "shared_expert_d_ff", "features")
        if self.shared_expert_gate and not self.n_shared_experts:
            raise ValueError("shared_expert_gate=True needs a shared expert (n_shared_experts >= 1)")
        if _whole(self.n_dense_layers, "n_dense_layers", "layers") and not (
            experts > 1 and 0 < self.n_dense_layers < self.n_layers
        ):
            raise ValueError(
                f"n_dense_layers must be from 0 to n_layers - 1 ({self.n_layers - 1}) in a mixture of experts "
                f"(n_experts > 1), got {self.n_dense_layers!r} with n_experts={experts}"
            )

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

    @property
    def score_dim(self) -> float:
        """The ``a`` of the score FLOPs, ``4 a`` per key: heads x head size, or with multi-head
        latent attention heads x the mean of the query/key and value head sizes."""
        if self.mla is None:
            return self.attention_dim
        width = self.n_heads * (self.mla.qk_head_dim + self.mla.v_head_dim) / 2
        return int(width) if width.is_integer() else width

    def _attention_matrices(self) -> list[WeightMatrix]:
        d, b = self.d_model, self.bias
        if self.mla is not None:
            m, heads = self.mla, self.n_heads
            q = (
                [WeightMatrix("q", d, heads * m.qk_head_dim)]
                if m.q_lora_rank is None
                else [WeightMatrix("q_a", d, m.q_lora_rank), WeightMatrix("q_b", m.q_lora_rank, heads * m.qk_head_dim)]
            )
            return q + [
                WeightMatrix("kv_a", d, m.cache_width),  # the latent and the shared rotary key
                WeightMatrix("kv_b", m.kv_lora_rank, heads * (m.qk_nope_head_dim + m.v_head_dim)),
                WeightMatrix("o", heads * m.v_head_dim, d),
            ]
        qkv_b = self.bias or self.qkv_bias
        return [
            WeightMatrix("q", d, self.attention_dim, bias=qkv_b),
            WeightMatrix("k", d, self.kv_dim, bias=qkv_b),
            WeightMatrix("v", d, self.kv_dim, bias=qkv_b),
            WeightMatrix("o", self.attention_dim, d, bias=b),
        ]

    @property
    def has_ffn_bias(self) -> bool:
        """Whether the FFN's linear layers have biases: ``ffn_bias``, or ``bias`` when that is None."""
        return self.bias if self.ffn_bias is None else self.ffn_bias

    def _ffn_matrices(self, experts: bool) -> list[WeightMatrix]:
        d, b = self.d_model, self.has_ffn_bias

        def shapes(width):
            return ([("gate", d, width)] if self.gated else []) + [("up", d, width), ("down", width, d)]

        if not experts:
            return [WeightMatrix("ffn_" + p, i, o, 1, 1, b, "ffn") for p, i, o in shapes(self.d_ff)]
        routed, active = self.n_experts, self.experts_per_token
        mats = [WeightMatrix("expert_" + p, i, o, routed, active, b, "ffn") for p, i, o in shapes(self.expert_d_ff)]
        n = self.n_shared_experts
        if n:
            mats += [WeightMatrix("shared_" + p, i, o, n, n, b, "ffn") for p, i, o in shapes(self.shared_expert_d_ff)]
        mats.append(WeightMatrix("router", d, self.n_experts, bias=self.router_bias, term="ffn"))
        if self.shared_expert_gate:
            mats.append(WeightMatrix("shared_gate", d, 1, term="ffn"))  # one sigmoid gate per token
        return mats

    def layer_blocks(self) -> tuple[tuple[int, tuple[WeightMatrix, ...]], ...]:
        """``(layers, matrices)`` for each kind of block, in order: one kind, or for a mixture of
        experts with ``n_dense_layers``, the dense blocks first and then the expert blocks."""
        attention = self._attention_matrices()
        if not self.is_moe:
            return ((self.n_layers, tuple(attention + self._ffn_matrices(False))),)
        blocks = []
        if self.n_dense_layers:
            blocks.append((self.n_dense_layers, tuple(attention + self._ffn_matrices(False))))
        blocks.append((self.n_layers - self.n_dense_layers, tuple(attention + self._ffn_matrices(True))))
        return tuple(blocks)

    def weight_matrices(self) -> tuple[WeightMatrix, ...]:
        """The weight matrices of one block, each with its copies, active copies and bias.

        For a mixture of experts whose first ``n_dense_layers`` are dense, these are an expert
        block's; :meth:`layer_blocks` lists both kinds with their layer counts.
        """
        return self.layer_blocks()[-1][1]

    @property
    def kappa(self) -> float:
        """Weight-matrix parameters per layer in units of ``d_model**2`` (norms and biases aside)."""
        return self.params_per_layer() / (self.d_model * self.d_model)

    def params_per_layer(self) -> int | float:
        """Weights of one block's matrices, every expert included; norms and biases aside.

        With dense and expert blocks mixed, the mean over the layers.
        """
        total = sum(n * sum(m.copies * m.d_in * m.d_out for m in mats) for n, mats in self.layer_blocks())
        return total // self.n_layers if total % self.n_layers == 0 else total / self.n_layers

    # --- parameters -----------------------------------------------------------------------

    def _norm_params(self, width=None) -> int:
        return (2 if self.norm == "layernorm" else 1) * (self.d_model if width is None else width)  # gain (+ bias)

    def params_breakdown(self, active=False) -> dict[str, int]:
        """Parameters by where they sit: attention, ffn, norms, embedding, unembedding, positions.

        ``active=True`` counts only the experts one token uses (a dense model is unchanged).
        ``unembedding`` is 0 when the embedding is tied (the same matrix is counted once).
        ``norms`` holds every norm: per block, the final one, and where the model has them the
        embedding norm, the Q/K norms and multi-head latent attention's latent norms.
        """
        active = _flag(active, "active")
        per = {"attention": 0, "ffn": 0}
        for n, mats in self.layer_blocks():
            for m in mats:
                per["attention" if m.term == "qkvo" else "ffn"] += n * (m.active_params if active else m.params)
        d, L = self.d_model, self.n_layers
        norms = (self.norms_per_layer * L + 1 + self.embedding_norm) * self._norm_params()  # per block + final
        if self.qk_norm:
            norms += L * (self._norm_params(self.attention_dim) + self._norm_params(self.kv_dim))
        if self.qk_head_norm:
            norms += L * 2 * self._norm_params(self.head_dim)  # one for the queries, one for the keys
        if self.attention_sinks:
            per["attention"] += L * self.n_heads  # one sink logit per head and layer
        if self.mla is not None:
            latents = self.mla.kv_lora_rank + (self.mla.q_lora_rank or 0)
            norms += L * self._norm_params(latents)  # an RMSNorm on each latent
        return {
            "attention": per["attention"],
            "ffn": per["ffn"],
            "norms": norms,
            "embedding": self.vocab * d,
            "unembedding": (0 if self.tied_embeddings else self.vocab * d)
            + (self.vocab if self.unembedding_bias else 0),
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

    # --- the KV cache ---------------------------------------------------------------------

    @property
    def kv_cache_width(self) -> int:
        """Elements one token adds to one layer's KV cache: ``2 G h`` (a key and a value per KV
        head), or with multi-head latent attention the latent and the rotary key."""
        return self.mla.cache_width if self.mla is not None else 2 * self.kv_dim

    def _window_groups(self) -> tuple[tuple[int, int | None], ...]:
        """``(layers, window)`` pairs: the windowed layers, then the full-attention ones."""
        w, L = self.sliding_window, self.n_layers
        if w is None:
            return ((L, None),)
        windowed = L if self.window_layers is None else self.window_layers
        return tuple((n, win) for n, win in ((windowed, w), (L - windowed, None)) if n)

    def kv_cache_bytes(self, context_len, bytes_per_elem=2, batch=1, *, layout="window") -> float:
        """KV cache of ``batch`` sequences of ``context_len`` tokens, in bytes, every layer summed.

        ``layout`` says which cache is counted:

        * ``"window"`` (the default): what the model needs, a rolling buffer of the window. Per
          layer ``min(context_len, sliding_window)`` tokens in a windowed layer, ``context_len`` in
          the others, each :attr:`kv_cache_width` elements. A chunked layer is counted as a buffer
          of one whole chunk, an upper bound (a query needs only the keys of its chunk so far).
        * ``"transformers"``: what transformers' ``DynamicCache`` holds after ``context_len``
          tokens. A windowed layer keeps ``sliding_window - 1`` tokens (the next query brings its
          own key), and a model whose attention broadcasts K and V before caching them stores
          ``cache_kv_heads`` heads (Falcon's new architecture: every query head).

        Each element is ``bytes_per_elem`` bytes.
        """
        tokens = _positive_int(context_len, "context_len", "tokens")
        b = _positive(bytes_per_elem, "bytes_per_elem", "bytes per element")
        sequences = _positive_int(batch, "batch", "sequences")
        if layout not in _KV_LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(map(repr, _KV_LAYOUTS))}, got {layout!r}")
        width, short = self.kv_cache_width, 0
        if layout == "transformers":
            short = 1
            if self.cache_kv_heads is not None:
                width = 2 * self.cache_kv_heads * self.head_dim
        kept = sum(n * (tokens if w is None else min(tokens, w - short)) for n, w in self._window_groups())
        return sequences * kept * width * b

    # --- FLOPs ----------------------------------------------------------------------------

    def _seq_len(self, seq_len, what: str) -> int:
        """``seq_len`` if given, else the config's; never a silent default."""
        if seq_len is not None:
            return _positive_int(seq_len, "seq_len", "tokens")
        if self.seq_len is None:
            window = (
                ""
                if self.context_window is None
                else f"; its context window of {self.context_window:,} tokens (max_position_embeddings) is not it"
            )
            raise ValueError(
                f"{what} needs seq_len, the training length of {self.name or 'this model'} (the sequence "
                f"length it was trained at{window}): pass seq_len=, or build the config with it, "
                "e.g. TransformerConfig.from_hf_config(config, seq_len=8192)"
            )
        return self.seq_len

    def _keys_seen(self, s: int, causal: bool, w: int | None) -> float:
        if w is not None and self.chunked_attention:  # whole chunks of w, and the last one's rest
            full, rest = divmod(s, w)
            entries = full * w * w + rest * rest
            return entries / s if not causal else entries / (2 * s)
        if not causal:
            return s if w is None else min(s, w)
        if w is None or w >= s:
            return s / 2
        return w - w * w / (2 * s)

    def keys_seen(self, seq_len=None, causal=True) -> float:
        """Keys one query attends to, on average over a sequence of ``seq_len`` tokens and the layers.

        Full square: ``s`` (at most ``sliding_window``). Causal: ``s / 2``; with a window
        ``W < s``, ``W - W**2 / (2 s)`` (the first ``W`` queries see a growing triangle, the
        rest see ``W`` keys each). Chunked layers (``chunked_attention``): a query sees its own
        chunk, ``(q W**2 + r**2) / s`` keys for ``s = q W + r`` (half of it causal). Where only
        ``window_layers`` are windowed, the mean over layers.
        """
        s = self._seq_len(seq_len, "keys_seen")
        causal = _flag(causal, "causal")
        groups = self._window_groups()
        if len(groups) == 1:
            return self._keys_seen(s, causal, groups[0][1])
        return sum(n * self._keys_seen(s, causal, w) for n, w in groups) / self.n_layers

    def flops_per_token(self, causal=True, seq_len=None, *, eager=False) -> TransformerFlops:
        """Forward FLOPs for one token, by component (see the module docstring).

        Per layer: each matrix's :func:`~roofline_lib.core.ops.gemm_flops` for one row (only the
        experts a token uses), and the scores, ``ops.attention_flops`` of one query over
        :meth:`keys_seen` keys (each windowed layer over its window). Once: the unembedding,
        ``gemm_flops(1, V, d)``.

        ``eager=True`` counts the scores as transformers' eager attention computes them: every
        entry of the ``s x s`` square in every layer, the causal mask, windows and chunks applied
        to the product afterwards (``causal`` is then not read). That is what ``FlopCounterMode``
        sees on a model built with ``attn_implementation="eager"``; where transformers runs every
        expert on every token (``eager_dense_experts``), every expert is counted too.
        """
        s = self._seq_len(seq_len, "the attention-score count")
        causal = _flag(causal, "causal")
        if _flag(eager, "eager"):
            dense = dataclasses.replace(
                self,
                sliding_window=None,
                window_layers=None,
                chunked_attention=False,
                experts_per_token=self.n_experts if self.eager_dense_experts else self.experts_per_token,
            )
            return dense.flops_per_token(causal=False, seq_len=s)
        if self.mla is None:
            per_key = attention_flops(1, self.n_heads, 1, 1, self.head_dim)  # 4 H h: QK^T and PV
        else:
            per_key = attention_flops(1, self.n_heads, 1, 1, self.mla.qk_head_dim, v_head_dim=self.mla.v_head_dim)
        scores = sum(n * per_key * self._keys_seen(s, causal, w) for n, w in self._window_groups())
        scores = int(scores) if float(scores).is_integer() else scores
        qkvo = ffn = 0
        for n, mats in self.layer_blocks():
            qkvo += n * sum(m.flops_per_token() for m in mats if m.term == "qkvo")
            ffn += n * sum(m.flops_per_token() for m in mats if m.term == "ffn")
        unembed = gemm_flops(1, self.vocab, self.d_model)
        return TransformerFlops(
            fwd_per_token=qkvo + scores + ffn + unembed,
            ffn_total=ffn,
            qkvo_total=qkvo,
            scores_total=scores,
            unembed=unembed,
        )

    def training_flops_per_token(self, convention="6N", seq_len=None) -> float:
        """:func:`training_flops_per_token` for this model.

        ``n_params`` is :meth:`active_params` (all parameters for a dense model: for a mixture
        of experts, a token trains only the experts it is routed to) and the attention width
        is :attr:`score_dim` (``n_heads * head_dim``). A convention with a score term needs the
        training length: ``seq_len``, or the config's; without either it is asked for.
        """
        key = training_convention(convention)
        s = None if key == "6N" else self._seq_len(seq_len, f"convention {key!r}")
        return training_flops_per_token(
            self.active_params(),
            self.n_layers,
            self.d_model,
            s,
            key,
            attention_dim=self.score_dim,
        )

    def score_to_body_ratio(self) -> float:
        return score_to_body_ratio(self._seq_len(None, "score_to_body_ratio"), self.d_model, self.kappa)

    # --- Hugging Face configs -------------------------------------------------------------

    @classmethod
    def from_hf_config(cls, config, *, seq_len=None, name=None, ignore=()) -> "TransformerConfig":
        """Read the architecture of a Hugging Face config: a ``config.json`` path, its dict, a
        transformers config object, or that object's ``to_dict()`` or ``to_diff_dict()``.

        Families (``model_type``, listed by :func:`~roofline_lib.models.hf_config.families`): llama,
        mistral, mixtral, qwen2, qwen2_moe, gemma, gemma2, phi3, olmo2, starcoder2, gpt2, gpt_neox,
        falcon, bloom, deepseek_v2, deepseek_v3, qwen3, qwen3_moe, gemma3_text, granite, granitemoe,
        granitemoeshared, cohere, cohere2, glm4, glm4_moe, opt, gptj, phimoe, gpt_oss and llama4_text,
        and the text model of the multimodal llava, mistral3, gemma3 and llama4 (state-space models:
        :func:`~roofline_lib.models.hf_config.read_model`). Nothing is downloaded. ``seq_len`` is the training length; it is not taken from the
        context window (``max_position_embeddings``, kept as ``context_window``), so a count
        that needs it asks for it. A key that would change the counts but that this reader
        cannot map raises ValueError naming it; keys known not to change any count (token ids,
        dropout, rope settings, epsilons, transformers' own bookkeeping...) are skipped.
        ``ignore`` names further keys to skip on purpose.
        """
        from .hf_config import config_kwargs  # a helper module: the key tables are long

        kwargs = config_kwargs(config, seq_len=seq_len, ignore=ignore)
        if isinstance(kwargs.get("mla"), dict):
            kwargs["mla"] = MLA(**kwargs["mla"])
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

_PUBLISHED_FILE = "configs/published.json"  # in roofline_lib/models
_PUBLISHED_FIELDS = ("name", "total", "source", "architecture", "seq_len", "seq_len_source")
_PUBLISHED_OPTIONAL = ("note", "rounded_to", "active", "active_rounded_to")


def _published_table() -> dict:
    return read_records(__package__, _PUBLISHED_FILE, required=_PUBLISHED_FIELDS, optional=_PUBLISHED_OPTIONAL)


def shipped_models() -> tuple[str, ...]:
    """Names of the model configs that ship with the library, for :func:`model_config`."""
    return tuple(_published_table())


def model_config(name, *, seq_len=None) -> TransformerConfig:
    """A shipped model as a :class:`TransformerConfig`: ``model_config("llama-3-8b")``.

    The configs are Hugging Face-style ``config.json`` files written from the authors'
    published architecture tables, read by :meth:`TransformerConfig.from_hf_config`. ``seq_len``
    defaults to the model's training length as its authors report it (``published_params``
    gives the figure and its source), not to its context window.
    """
    if not isinstance(name, str):
        raise TypeError(f"model name must be a string such as 'llama-3-8b', got {type(name).__name__} {name!r}")
    if not name.strip():
        raise ValueError(f"name must name a shipped model, such as 'llama-3-8b', got an empty string {name!r}")
    table = _published_table()
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    if key not in table:
        raise ValueError(f"unknown model {name!r}; shipped models: {', '.join(table)}")
    config = read_table(__package__, f"configs/{key}.json")  # a Hugging Face-style config.json
    trained_at = table[key]["seq_len"] if seq_len is None else seq_len
    return TransformerConfig.from_hf_config(config, seq_len=trained_at, name=table[key]["name"])


def published_params(name) -> dict:
    """What the authors published about a shipped model's size, and where.

    Keys: ``name``, ``total`` (parameters), ``source``, ``seq_len`` (the training length) and
    ``seq_len_source``, and where given ``active`` (a mixture of experts), ``rounded_to`` (the
    unit of the last printed digit, when the figure is a rounded one such as "124M") and ``note``.
    """
    model_config(name)  # same validation and spelling rules
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    return dict(_published_table()[key])
