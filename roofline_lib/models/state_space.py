"""State-space models (Mamba, Mamba-2) and attention/state-space hybrids (Jamba): counts and decode state.

Symbols: ``d`` = d_model, ``E`` = d_inner (``expand * d``), ``N`` = d_state, ``K`` = d_conv,
``R`` = dt_rank (Mamba), ``H`` = SSM heads of ``P = E / H`` features and ``G`` = groups sharing
``B`` and ``C`` (Mamba-2), ``Q`` = Mamba-2's chunk length, ``V`` = vocabulary. One Mamba layer:

* Mamba (Gu & Dao 2023): ``in_proj`` ``d x 2E`` (x and the gate z), a depthwise causal
  convolution of ``K`` taps over ``E`` channels, ``x_proj`` ``E x (R + 2N)`` (dt, B and C),
  ``dt_proj`` ``R x E`` with a bias, ``A`` (``E x N``) and ``D`` (``E``), ``out_proj`` ``E x d``.
* Mamba-2 (Dao & Gu 2024): ``in_proj`` ``d x (2E + 2GN + H)``, the convolution over
  ``E + 2GN`` channels, ``A``, ``D`` and a dt bias per head, a gated RMSNorm of ``E``, ``out_proj``.

FLOPs follow the course's convention (one multiply-add = 2 FLOP, element-wise work 0): every
projection ``2 d_in d_out`` per token; the convolution ``2 K`` per channel and token (the taps a
causal convolution needs); Mamba's scan output ``y = C h``, ``2 E N`` per token (the state
update ``h = exp(dt A) h + dt B x`` is element-wise). Mamba-2's scan is counted as the chunked
algorithm computes it (the SSD form its kernels and transformers run), per sequence of ``s``
tokens padded to ``c = ceil(s / Q)`` chunks: ``2 c Q**2 H (N + P)`` inside the chunks (scores
``C B^T`` and their product with x), ``4 c Q H P N`` for the chunk states and their read-out,
and ``2 (c + 1)**2 H P N`` for the recurrence between chunks.

A decode step reads the weights and the **recurrent state**, which does not grow with the
context: per layer the last ``K - 1`` inputs of the convolution and the ``E x N`` SSM state
(transformers keeps ``K`` convolution inputs: ``layout="transformers"``). Its FLOPs are one
token's projections and convolution plus the state's read-out, ``2 E N``. A hybrid's attention
layers add their KV cache and their scores over the context, as in
:class:`~roofline_lib.models.transformer.TransformerConfig`.

What ``eager=True`` adds (transformers' reference PyTorch path, what ``FlopCounterMode`` sees):
its convolution pads both ends, so a prefill of ``s`` tokens computes ``s + K - 1`` outputs
per channel and keeps ``s``; its attention computes the whole score square.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..core.checks import _flag, _positive, _positive_int
from ..core.ops import gemm_flops
from .transformer import TransformerConfig

__all__ = ["StateSpaceConfig"]

_LAYOUTS = ("model", "transformers")


@dataclass(frozen=True)
class StateSpaceConfig:
    """A Mamba or Mamba-2 language model, or a hybrid whose ``attention`` layers are a transformer's.

    * ``d_model``, ``n_layers``, ``vocab``; ``d_inner`` (E), ``d_state`` (N), ``d_conv`` (K).
    * ``dt_rank`` (R): Mamba's low-rank dt projection. ``n_ssm_heads`` (H), ``n_groups`` (G) and
      ``chunk_size`` (Q): Mamba-2. Exactly one of ``dt_rank`` and ``n_ssm_heads`` is given.
    * ``conv_bias``, ``proj_bias``: biases on the convolution, and on ``in_proj`` and ``out_proj``.
    * ``dt_norms``: RMSNorms on dt (R), B and C (N each) inside the mixer (Jamba).
    * ``tied_embeddings``: the unembedding is the embedding table.
    * ``transformer``: for a hybrid, a :class:`TransformerConfig` of all ``n_layers`` whose FFNs
      (dense and experts, ``n_dense_layers`` of them dense) every layer has, and whose attention
      ``n_attention_layers`` of them use in place of a mixer. ``None``: a pure state-space
      model, one norm and one mixer per layer, no FFN.
    * ``name``: a label.
    """

    d_model: int
    n_layers: int
    vocab: int
    d_inner: int
    d_state: int
    d_conv: int
    dt_rank: int | None = None
    n_ssm_heads: int | None = None
    n_groups: int = 1
    chunk_size: int | None = None
    conv_bias: bool = True
    proj_bias: bool = False
    dt_norms: bool = False
    tied_embeddings: bool = False
    transformer: TransformerConfig | None = None
    n_attention_layers: int = 0
    name: str = field(default="", compare=False)

    def __post_init__(self):
        _positive_int(self.d_model, "d_model", "features")
        _positive_int(self.n_layers, "n_layers", "layers")
        _positive_int(self.vocab, "vocab", "tokens in the vocabulary")
        _positive_int(self.d_inner, "d_inner", "features")
        _positive_int(self.d_state, "d_state", "state features")
        _positive_int(self.d_conv, "d_conv", "convolution taps")
        for flag in ("conv_bias", "proj_bias", "dt_norms", "tied_embeddings"):
            _flag(getattr(self, flag), flag)
        if (self.dt_rank is None) == (self.n_ssm_heads is None):
            raise ValueError(
                "give exactly one of dt_rank (Mamba) and n_ssm_heads (Mamba-2), "
                f"got dt_rank={self.dt_rank!r}, n_ssm_heads={self.n_ssm_heads!r}"
            )
        if self.dt_rank is not None:
            _positive_int(self.dt_rank, "dt_rank", "features")
        else:
            heads = _positive_int(self.n_ssm_heads, "n_ssm_heads", "SSM heads")
            if self.d_inner % heads:
                raise ValueError(f"n_ssm_heads must divide d_inner ({self.d_inner} features), got {heads!r}")
            groups = _positive_int(self.n_groups, "n_groups", "groups")
            if heads % groups:
                raise ValueError(f"n_groups must divide n_ssm_heads ({heads} heads), got {groups!r}")
            _positive_int(self.chunk_size, "chunk_size", "tokens")
        self._check_hybrid()
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {type(self.name).__name__} {self.name!r}")

    def _check_hybrid(self) -> None:
        if self.transformer is None:
            if self.n_attention_layers:
                raise ValueError(f"n_attention_layers={self.n_attention_layers!r} needs a transformer for them")
            return
        t = self.transformer
        if not isinstance(t, TransformerConfig):
            raise TypeError(f"transformer must be a TransformerConfig or None, got {type(t).__name__}")
        if (t.d_model, t.n_layers, t.vocab, t.tied_embeddings) != (
            self.d_model,
            self.n_layers,
            self.vocab,
            self.tied_embeddings,
        ):
            raise ValueError("transformer must have this model's d_model, n_layers, vocab and tied_embeddings")
        if t.sliding_window is not None or t.learned_positions or t.mla is not None:
            raise ValueError("a hybrid's attention layers are mapped with full attention and rotary or no positions")
        if not 0 <= self.n_attention_layers < self.n_layers or isinstance(self.n_attention_layers, bool):
            raise ValueError(
                f"n_attention_layers must be from 0 to n_layers - 1 ({self.n_layers - 1}), got {self.n_attention_layers!r}"
            )

    # --- shape ------------------------------------------------------------------------------

    @property
    def is_mamba2(self) -> bool:
        return self.n_ssm_heads is not None

    @property
    def n_mixer_layers(self) -> int:
        """Layers with a state-space mixer (the others attend)."""
        return self.n_layers - self.n_attention_layers

    @property
    def conv_channels(self) -> int:
        """Channels of the convolution: E (Mamba), E + 2GN (Mamba-2: x, B and C)."""
        return self.d_inner + (2 * self.n_groups * self.d_state if self.is_mamba2 else 0)

    def _mixer_matrices(self) -> list[tuple[str, int, int, bool]]:
        """(name, d_in, d_out, bias) of one mixer's matrices."""
        d, E, N = self.d_model, self.d_inner, self.d_state
        if self.is_mamba2:
            inner = 2 * E + 2 * self.n_groups * N + self.n_ssm_heads  # z, x, B, C and dt per head
            return [("in_proj", d, inner, self.proj_bias), ("out_proj", E, d, self.proj_bias)]
        R = self.dt_rank
        return [
            ("in_proj", d, 2 * E, self.proj_bias),  # x and the gate z
            ("x_proj", E, R + 2 * N, False),  # dt (low rank), B and C
            ("dt_proj", R, E, True),
            ("out_proj", E, d, self.proj_bias),
        ]

    def _mixer_params(self) -> int:
        C, E, N = self.conv_channels, self.d_inner, self.d_state
        mats = sum(i * o + (o if b else 0) for _, i, o, b in self._mixer_matrices())
        conv = C * self.d_conv + (C if self.conv_bias else 0)
        if self.is_mamba2:
            per_head = 3 * self.n_ssm_heads  # A, D and the dt bias
            return mats + conv + per_head + E  # and the gated RMSNorm's gain
        scan = E * N + E  # A and D
        norms = self.dt_rank + 2 * N if self.dt_norms else 0
        return mats + conv + scan + norms

    # --- parameters ---------------------------------------------------------------------------

    def params_breakdown(self, active=False) -> dict[str, int]:
        """Parameters by part: embedding, mixer, attention, ffn, norms, unembedding."""
        active = _flag(active, "active")
        d, V = self.d_model, self.vocab
        mixer = self.n_mixer_layers * self._mixer_params()
        attention = ffn = 0
        if self.transformer is None:
            norms = (self.n_layers + 1) * d  # one RMSNorm a layer, and the final one
        else:
            parts = self.transformer.params_breakdown(active=active)
            per_layer = parts["attention"] // self.n_layers  # every layer's attention is the same
            attention = self.n_attention_layers * per_layer
            ffn = parts["ffn"]
            norms = parts["norms"]
        return {
            "embedding": V * d,
            "mixer": mixer,
            "attention": attention,
            "ffn": ffn,
            "norms": norms,
            "unembedding": 0 if self.tied_embeddings else V * d,
        }

    def n_params(self) -> int:
        return sum(self.params_breakdown().values())

    def active_params(self) -> int:
        """Parameters one token uses: the routed experts only, in a hybrid with experts."""
        return sum(self.params_breakdown(active=True).values())

    # --- FLOPs ---------------------------------------------------------------------------------

    def _mixer_token_flops(self) -> int:
        """One token through one mixer, without the scan: projections and the convolution's taps."""
        mats = sum(gemm_flops(1, o, i) for _, i, o, _ in self._mixer_matrices())
        return mats + gemm_flops(1, self.conv_channels, self.d_conv)  # K taps per channel

    def _ssd_flops(self, tokens: int) -> int:
        """Mamba-2's chunked scan of ``tokens`` (padded to whole chunks), as the SSD algorithm runs it."""
        Q, H, P, N = self.chunk_size, self.n_ssm_heads, self.d_inner // self.n_ssm_heads, self.d_state
        c = math.ceil(tokens / Q)
        inside = 2 * c * Q * Q * H * (N + P)  # C B^T, then its product with x, within each chunk
        states = 4 * c * Q * H * P * N  # each chunk's end state, and the read-out of its start state
        between = 2 * (c + 1) ** 2 * H * P * N  # the recurrence over the carried state and the c chunks
        return inside + states + between

    def forward_flops(self, tokens, *, eager=False) -> int:
        """FLOPs of one forward over a sequence of ``tokens`` tokens, every layer and the logits.

        Attention layers follow :meth:`TransformerConfig.flops_per_token` (causal, ``s / 2`` keys
        a query); ``eager=True`` counts what transformers' PyTorch path computes (see the module
        docstring): the convolution's padded outputs and the whole attention square.
        """
        s = _positive_int(tokens, "tokens", "tokens")
        eager = _flag(eager, "eager")
        mixer = s * self._mixer_token_flops()
        mixer += self._ssd_flops(s) if self.is_mamba2 else s * gemm_flops(1, self.d_inner, self.d_state)
        if eager:  # s + K - 1 outputs per channel, s kept
            mixer += gemm_flops(self.d_conv - 1, self.conv_channels, self.d_conv)
        total = self.n_mixer_layers * mixer + s * gemm_flops(1, self.vocab, self.d_model)
        if self.transformer is not None:
            t = self.transformer.flops_per_token(causal=not eager, seq_len=s)
            attention = (t.qkvo_total + t.scores_total) // self.n_layers * self.n_attention_layers
            total += s * (t.ffn_total + attention)
        return total

    def flops_per_token(self, seq_len) -> float:
        """Forward FLOPs per token over a sequence of ``seq_len`` tokens (the mean of :meth:`forward_flops`)."""
        s = _positive_int(seq_len, "seq_len", "tokens")
        total = self.forward_flops(s)
        return total // s if total % s == 0 else total / s

    def decode_flops_per_token(self, context_len=None) -> int:
        """FLOPs of one decode step: the mixers' recurrent step (``2 E N`` for the state's
        read-out), a hybrid's attention over ``context_len`` keys and its FFNs, the logits."""
        mixer = self._mixer_token_flops() + gemm_flops(1, self.d_inner, self.d_state)
        total = self.n_mixer_layers * mixer + gemm_flops(1, self.vocab, self.d_model)
        if self.transformer is not None:
            keys = 1 if context_len is None else _positive_int(context_len, "context_len", "tokens")
            t = self.transformer.flops_per_token(causal=False, seq_len=keys)
            scores = t.scores_total if context_len is not None else 0
            total += t.ffn_total + (t.qkvo_total + scores) // self.n_layers * self.n_attention_layers
        return total

    # --- the decode state ----------------------------------------------------------------------

    def state_bytes(self, bytes_per_elem=2, batch=1, *, layout="model") -> float:
        """Recurrent state of ``batch`` sequences, every mixer layer: the convolution's last inputs
        (``K - 1`` of them; ``layout="transformers"``: the ``K`` its cache keeps) and the ``E x N``
        SSM state. The same at any context."""
        b = _positive(bytes_per_elem, "bytes_per_elem", "bytes per element")
        sequences = _positive_int(batch, "batch", "sequences")
        if layout not in _LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(map(repr, _LAYOUTS))}, got {layout!r}")
        taps = self.d_conv - (1 if layout == "model" else 0)
        per_layer = self.conv_channels * taps + self.d_inner * self.d_state
        return sequences * self.n_mixer_layers * per_layer * b

    def kv_cache_bytes(self, context_len, bytes_per_elem=2, batch=1, *, layout="window") -> float:
        """KV cache of the attention layers (0 for a pure state-space model)."""
        if self.transformer is None:
            _positive_int(context_len, "context_len", "tokens")
            return 0
        per_layer = self.transformer.kv_cache_bytes(context_len, bytes_per_elem, batch, layout=layout) / self.n_layers
        return per_layer * self.n_attention_layers

    def decode_cache_bytes(self, context_len, bytes_per_elem=2, batch=1, *, layout="model") -> float:
        """What a decode step reads besides the weights: the recurrent state and any KV cache."""
        kv_layout = "window" if layout == "model" else layout
        return self.state_bytes(bytes_per_elem, batch, layout=layout) + self.kv_cache_bytes(
            context_len, bytes_per_elem, batch, layout=kv_layout
        )

    def decode_weight_bytes(self, bytes_per_param=2) -> float:
        """Weights one single-stream decode step reads: every active weight but the embedding table,
        of which one row; the unembedding in full (tied or not)."""
        b = _positive(bytes_per_param, "bytes_per_param", "bytes per parameter")
        parts = self.params_breakdown(active=True)
        unembedding = self.vocab * self.d_model
        read = parts["mixer"] + parts["attention"] + parts["ffn"] + parts["norms"] + unembedding + self.d_model
        return read * b

    def decode_ceiling(
        self, gpu, context_len=None, bytes_per_param=2, precision=None, *, kv_bytes_per_elem=None
    ) -> dict:
        """The single-stream decode ceiling on ``gpu``: the larger of bytes / HBM bandwidth and
        FLOPs / peak, with the bytes the weights read plus the state (and a hybrid's KV cache),
        whose elements are ``kv_bytes_per_elem`` wide (default: the weights' width)."""
        from ..core.hardware import as_gpu
        from ..core.roofline import Roof

        spec = as_gpu(gpu)
        b = _positive(bytes_per_param, "bytes_per_param", "bytes per parameter")
        if precision is None:
            precision = {4: "fp32", 2: "bf16", 1: "fp8", 0.5: "fp4"}.get(b, "bf16")
        roof = Roof.of_gpu(spec, precision)
        context = 1 if context_len is None else context_len
        kv = b if kv_bytes_per_elem is None else _positive(kv_bytes_per_elem, "kv_bytes_per_elem", "bytes per element")
        step_bytes = self.decode_weight_bytes(b) + self.decode_cache_bytes(context, kv)
        flops = self.decode_flops_per_token(context_len)
        seconds = roof.seconds(flops, step_bytes)
        stored = self.n_params() * b + self.decode_cache_bytes(context, kv)
        fits = spec.hbm_capacity_bytes is None or stored <= spec.hbm_capacity_bytes
        return {
            "gpu": spec.name,
            "bytes_per_step": step_bytes,
            "flops_per_step": flops,
            "tokens_per_s": 1 / seconds,
            "ms_per_token": seconds * 1e3,
            "bound": roof.bound(flops / step_bytes),
            "fits_in_memory": fits,
            "warning": None if fits else f"weights and state ({stored:.4g} bytes) exceed one {spec.name}",
        }

    # --- Hugging Face configs ------------------------------------------------------------------

    @classmethod
    def from_hf_config(cls, config, *, name=None, ignore=()) -> "StateSpaceConfig":
        """Read a mamba, mamba2 or jamba ``config.json`` (a path, its dict or a config object)."""
        from .hf_config import state_space_kwargs

        kwargs = state_space_kwargs(config, ignore=ignore)
        if isinstance(kwargs.get("transformer"), dict):
            kwargs["transformer"] = TransformerConfig(**kwargs["transformer"])
        if name is not None:
            kwargs["name"] = name
        return cls(**kwargs)
