"""Inference on the roofline: weight-GEMM intensity, decode ceilings, the KV cache, quantisation.

Counting conventions used throughout (all SI: FLOP, bytes, seconds):

* One multiply-accumulate is 2 FLOP (:data:`roofline_lib.core.ops.FLOP_PER_MAC`), so a forward pass
  costs ``2 * n_params`` FLOP per token.
* "Bytes" means HBM traffic. One decode step streams the weights it uses from HBM once, however
  many sequences share the step; each sequence also reads its own KV cache once per step. Given a
  :class:`~roofline_lib.models.transformer.TransformerConfig`, the step reads only what it uses: one
  embedding row per sequence (not the whole table), and for a mixture of experts only the experts
  the batch's tokens are routed to (:func:`decode_step_bytes_of`).
* Capacities follow the registry: a part sold as "80 GB" holds 80 GiB (80 * ``hardware.GIB`` bytes).
  Whether a model fits is decided once, in bytes, by :func:`_fits` (its warning shows GiB).

The one rule behind this module: a weight matmul's intensity is set by the number of tokens that
share one read of the weights. In bf16 it is about that token count in FLOP/byte, so single-stream
decode (one token) sits near 1 FLOP/byte, far below every ridge, and its speed is the bandwidth
divided by the model's size in bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.checks import _fraction, _model_params, _positive, _positive_int
from ..core.formatting import gib, to_unit
from ..core.hardware import as_gpu, bytes_per_element
from ..core.ops import FLOP_PER_MAC, gemm
from ..core.roofline import Roof, ridge_point
from ..models.transformer import TransformerConfig

__all__ = [
    "weight_gemm_intensity",
    "weight_gemm_intensity_limit",
    "tokens_to_reach_ridge",
    "tokens_to_reach_ridge_exact",
    "precision_for_bytes",
    "DecodeCeiling",
    "decode_roofline",
    "min_gpus_to_fit",
    "kv_cache_bytes_per_token",
    "kv_cache_bytes",
    "max_batch_for_context",
    "kv_crossover_context",
    "QuantisationRow",
    "quantisation_table",
    "expected_experts_touched",
    "DecodeStepBytes",
    "decode_step_bytes_of",
    "decode_flops_per_token",
    "ModelDecodeCeiling",
    "model_decode_ceiling",
    "decode_batch_to_reach_ridge",
]

#: Which compute precision a weight width implies when the math runs at the storage width.
_PRECISION_FOR_BYTES = {4: "fp32", 2: "bf16", 1: "fp8", 0.5: "fp4"}


# --------------------------------------------------------------------------- weight GEMM intensity


def weight_gemm_intensity(tokens, d_in, d_out, bytes_per_elem=2) -> float:
    """Arithmetic intensity (FLOP/byte) of ``tokens`` rows times a ``d_in x d_out`` weight.

    Counting: FLOP = 2 * M * d_in * d_out (1 MAC = 2 FLOP). Bytes moved, each once through HBM:
    the weight (d_in * d_out elements), the input activations (M * d_in) and the output
    activations (M * d_out), all at ``bytes_per_elem`` bytes.

    For small M the weight dominates the bytes and the intensity tends to 2M / b
    (:func:`weight_gemm_intensity_limit`); in bf16 (b = 2) that is I ~= M: the intensity *is*
    the token count. For large M it saturates near 2 d_in d_out / (b (d_in + d_out)).

    >>> round(weight_gemm_intensity(1, 4096, 4096), 4)  # one decode token in bf16: about 1 FLOP/byte
    0.9995
    """
    m = _positive_int(tokens, "tokens", "tokens")
    k = _positive_int(d_in, "d_in", "elements")
    n = _positive_int(d_out, "d_out", "elements")
    return gemm(m, n, k, bytes_per_elem).intensity  # (M x K) activations times a K x N weight


def weight_gemm_intensity_limit(tokens, bytes_per_elem=2) -> float:
    """The small-M approximation 2M / b (FLOP/byte): only the weight read is counted.

    Each weight element (b bytes) is read once and used in one MAC (2 FLOP) per token.
    """
    m = _positive(tokens, "tokens", "tokens")
    b = _positive(bytes_per_elem, "bytes_per_elem", "bytes per element")
    return FLOP_PER_MAC * m / b


def _storage_bytes(precision, bytes_per_elem) -> float:
    if bytes_per_elem is None:
        return bytes_per_element(precision)
    return _positive(bytes_per_elem, "bytes_per_elem", "bytes per element")


def tokens_to_reach_ridge(gpu, precision: str = "bf16", bytes_per_elem=None) -> float:
    """Tokens M sharing one weight read for a weight GEMM to reach the ridge: 2M / b = ridge.

    So M = ridge * b / 2. ``bytes_per_elem`` defaults to the storage size of ``precision``; pass
    it to model weights stored narrower than the math (weight-only quantisation). The answer is a
    real number; a batch must be at least its ceiling. Uses the small-M approximation; see
    :func:`tokens_to_reach_ridge_exact` for a given weight shape.
    """
    spec = as_gpu(gpu)
    ridge = ridge_point(spec, precision)
    b = _storage_bytes(precision, bytes_per_elem)
    return ridge * b / FLOP_PER_MAC


def tokens_to_reach_ridge_exact(gpu, d_in, d_out, precision: str = "bf16", bytes_per_elem=None) -> float:
    """Tokens M at which :func:`weight_gemm_intensity` equals the ridge, counting activations too.

    Solving 2 M K N / (b (K N + M K + M N)) = R for M gives
    M = R b K N / (2 K N - R b (K + N)). Activation traffic makes M a little larger than the
    small-M estimate. Raises ValueError when the shape cannot reach the ridge at any M: its
    intensity saturates at 2 K N / (b (K + N)), which must exceed the ridge.
    """
    spec = as_gpu(gpu)
    k = _positive_int(d_in, "d_in", "elements")
    n = _positive_int(d_out, "d_out", "elements")
    ridge = ridge_point(spec, precision)
    b = _storage_bytes(precision, bytes_per_elem)
    denominator = FLOP_PER_MAC * k * n - ridge * b * (k + n)
    if denominator <= 0:
        ceiling = FLOP_PER_MAC * k * n / (b * (k + n))
        raise ValueError(
            f"a {k} x {n} weight never reaches the {spec.name} {precision} ridge of {ridge:.4g} "
            f"FLOP/byte: however many tokens share it, its intensity stays below {ceiling:.4g} "
            f"FLOP/byte"
        )
    return ridge * b * k * n / denominator


# --------------------------------------------------------------------------- decode ceiling


def precision_for_bytes(bytes_per_param) -> str:
    """The precision whose storage width is ``bytes_per_param``: 4 fp32, 2 bf16, 1 fp8, 0.5 fp4."""
    b = _positive(bytes_per_param, "bytes_per_param", "bytes per parameter")
    if b not in _PRECISION_FOR_BYTES:
        widths = ", ".join(f"{w:g} ({p})" for w, p in _PRECISION_FOR_BYTES.items())
        raise ValueError(
            f"bytes_per_param={bytes_per_param!r} has no matching precision; known widths in "
            f"bytes per parameter: {widths}. Pass precision= to say which math precision to use."
        )
    return _PRECISION_FOR_BYTES[b]


def _peak_for(spec, precision: str, bytes_per_param: float) -> float:
    """The dense peak, with a hint about weight-only quantisation when the chip lacks it."""
    try:
        return spec.peak_flops_per_s(precision)
    except ValueError as err:
        raise ValueError(
            f"{err}. If the weights are stored at bytes_per_param={bytes_per_param:g} but the "
            f"math runs in bf16 (weight-only quantisation), pass precision='bf16'"
        ) from None


def _fits(spec, stored_bytes: float, what: str) -> tuple[bool, str | None]:
    """The one fits-in-memory rule: ``stored_bytes`` against the card's capacity, both in bytes.

    Returns ``(fits, warning)``. ``what`` names what is stored ("the weights", "weights plus KV
    cache"); the warning shows both sizes in GiB, the unit a capacity is printed in. A chip
    described without a capacity fits, with a warning that the fit was not checked.
    """
    capacity = spec.hbm_capacity_bytes
    if capacity is None:
        return True, f"{spec.name} has no memory capacity on record: whether {what} fit was not checked"
    if stored_bytes <= capacity:
        return True, None
    return False, (
        f"{what} ({gib(stored_bytes)}) do not fit in the {spec.name}'s {gib(capacity)}, "
        "so this ceiling is unreachable on one card"
    )


def _capacity(spec) -> float:
    if spec.hbm_capacity_bytes is None:
        raise ValueError(
            f"{spec.name} has no memory capacity on record; pass hbm_capacity_bytes to rl.accelerator(...)"
        )
    return spec.hbm_capacity_bytes


def min_gpus_to_fit(weight_bytes, gpu, reserve_fraction=0.0) -> int:
    """Fewest cards whose memory holds ``weight_bytes`` (weights only, split evenly).

    ``reserve_fraction`` of each card is kept back for the KV cache, activations and the runtime.
    A 70e9-parameter model in bf16 is 140e9 bytes: two "80 GB" (80 GiB) cards, before any KV cache.
    """
    w = _positive(weight_bytes, "weight_bytes", "bytes")
    r = _fraction(reserve_fraction, "reserve_fraction", allow_zero=True)
    spec = as_gpu(gpu)
    usable_bytes = _capacity(spec) * (1.0 - r)
    if usable_bytes <= 0:
        raise ValueError(f"reserve_fraction must leave some memory free, got {reserve_fraction!r}")
    cards = w / usable_bytes
    return max(1, math.ceil(cards * (1 - 1e-12)))  # 1e-12: forgive float noise on exact fits


@dataclass(frozen=True)
class DecodeCeiling:
    """The roofline ceiling of autoregressive decode on one card. SI units.

    ``tokens_per_s`` counts tokens from all ``batch`` sequences; ``ms_per_token`` is the time of
    one step, which is also the gap between two tokens of any one sequence.
    """

    gpu: str
    n_params: float
    bytes_per_param: float
    precision: str  # the precision of the compute peak
    batch: int
    weight_bytes: float
    capacity_bytes: float | None  # None for a chip described without one
    fits_in_memory: bool
    min_gpus_to_fit: int
    memory_seconds: float  # time to stream the weights once
    compute_seconds: float  # time for 2 N FLOP per token times batch at the dense peak
    seconds_per_step: float
    ms_per_token: float
    tokens_per_s: float
    achieved_flops_per_s: float
    peak_flops_per_s: float
    share_of_peak: float  # achieved / peak, a fraction
    bound: str  # "memory" or "compute"
    warning: str | None  # set when the ceiling cannot be reached on one card

    def __str__(self) -> str:
        text = (
            f"{self.gpu}, {to_unit(self.n_params, 'B params'):.4g}B params at {self.bytes_per_param:g} B/param "
            f"({to_unit(self.weight_bytes, 'GB'):.4g} GB read per step), batch {self.batch}: "
            f"{self.tokens_per_s:.4g} tok/s ceiling, {self.ms_per_token:.4g} ms per step, "
            f"{self.bound}-bound, {self.share_of_peak:.2%} of the {self.precision} peak"
        )
        if self.warning:
            text = f"WARNING: {self.warning}\n{text}"
        return text


def decode_roofline(n_params, gpu, bytes_per_param=2, precision=None, batch=1) -> DecodeCeiling:
    """The decode ceiling: each step streams the weights once and serves ``batch`` tokens.

    Steps, each checkable by hand:

    * weight_bytes    = n_params * bytes_per_param
    * memory_seconds  = weight_bytes / HBM bytes/s           (the bandwidth wall)
    * compute_seconds = 2 * n_params * batch / dense peak    (the compute wall; 1 MAC = 2 FLOP)
    * seconds_per_step = the larger; tokens_per_s = batch / seconds_per_step

    ``n_params`` may be a :class:`~roofline_lib.models.transformer.TransformerConfig`. Then
    ``weight_bytes`` is what a step really reads (:func:`decode_step_bytes_of` without a KV
    cache: one embedding row per sequence instead of the whole table, and for a mixture of
    experts the experts the batch touches) and the FLOPs are the model's matmuls for the active
    parameters; ``n_params`` reports the total, which is what must fit in memory.

    The KV cache and activations are not counted here (see :func:`model_decode_ceiling`).

    ``precision`` is the precision the math runs in, which sets the compute peak. By default it
    follows the weight width (2 -> bf16, 1 -> fp8, 0.5 -> fp4, 4 -> fp32), and a chip without
    that precision is refused with the list of what it has. For weight-only quantisation (weights
    stored in int8/fp8/fp4, dequantised and multiplied in bf16) pass ``precision="bf16"``: the
    bytes shrink, the peak stays the bf16 one.

    A model too big for the card is not refused: ``fits_in_memory`` is False, ``warning`` says the
    ceiling cannot be reached on one card, and ``min_gpus_to_fit`` says how many it needs. A chip
    described without a capacity gives ``fits_in_memory=True`` and ``min_gpus_to_fit=1``, with a
    warning that the fit was not checked.
    """
    spec = as_gpu(gpu)
    b = _positive(bytes_per_param, "bytes_per_param", "bytes per parameter")
    batch = _positive_int(batch, "batch", "sequences")
    n, weight_bytes, flops_per_token = _decode_step_counts(n_params, batch, b)
    if precision is None:
        precision = precision_for_bytes(b)
    peak = _peak_for(spec, precision, b)

    stored_bytes = n * b  # every weight is stored, whether or not this step reads it
    fits, warning, gpus_needed = _weights_fit(spec, stored_bytes)
    return DecodeCeiling(
        gpu=spec.name,
        n_params=n,
        bytes_per_param=b,
        precision=precision.strip().lower(),
        batch=batch,
        weight_bytes=weight_bytes,
        capacity_bytes=spec.hbm_capacity_bytes,
        fits_in_memory=fits,
        min_gpus_to_fit=gpus_needed,
        **_decode_step_on_roof(
            Roof(peak, spec.hbm_bytes_per_s, f"{spec.name} {precision}"), flops_per_token, batch, weight_bytes
        ),
        warning=warning,
    )


def _decode_step_on_roof(roof: Roof, flops_per_token: float, batch: int, weight_bytes: float) -> dict[str, float | str]:
    """One decode step on ``roof``: the two walls, the larger, and the rates that follow from it."""
    flops_per_step = flops_per_token * batch
    seconds_per_step = roof.seconds(flops_per_step, weight_bytes)  # the larger of the two walls
    tokens_per_s = batch / seconds_per_step
    achieved = flops_per_token * tokens_per_s
    return dict(
        memory_seconds=weight_bytes / roof.bytes_per_s,
        compute_seconds=flops_per_step / roof.peak_flops_per_s,
        seconds_per_step=seconds_per_step,
        ms_per_token=seconds_per_step * 1e3,
        tokens_per_s=tokens_per_s,
        achieved_flops_per_s=achieved,
        peak_flops_per_s=roof.peak_flops_per_s,
        share_of_peak=achieved / roof.peak_flops_per_s,
        bound=roof.bound(flops_per_step / weight_bytes),  # the one verdict: Roof.bound at the step's intensity
    )


def _decode_step_counts(n_params, batch: int, b: float) -> tuple[float, float, float]:
    """(total parameters, weight bytes one decode step reads, FLOPs per token) for a count or a config."""
    if isinstance(n_params, TransformerConfig):
        cfg = n_params
        weight_bytes = decode_step_bytes_of(cfg, batch, bytes_per_param=b).weights
        return float(cfg.n_params()), weight_bytes, decode_flops_per_token(cfg, None)
    n = _model_params(n_params)  # 70 means 70e9: refused with a hint about the unit
    return n, n * b, FLOP_PER_MAC * n  # one multiply-accumulate per weight


def _weights_fit(spec, stored_bytes: float) -> tuple[bool, str | None, int]:
    """(fits on one card, the warning if any, cards the weights need): the capacity check of a decode ceiling."""
    fits, warning = _fits(spec, stored_bytes, "the weights")
    gpus_needed = 1 if spec.hbm_capacity_bytes is None else min_gpus_to_fit(stored_bytes, spec)
    if not fits:
        warning += f"; the weights alone need at least {gpus_needed} cards"
    return fits, warning, gpus_needed


# --------------------------------------------------------------------------- KV cache


def kv_cache_bytes_per_token(n_layers, n_kv_heads, head_dim, bytes_per_elem=2) -> float:
    """Bytes of KV cache one token adds: 2 (K and V) * layers * KV heads * head_dim * b.

    With grouped-query attention ``n_kv_heads`` is the number of KV heads, not query heads.
    """
    layers = _positive_int(n_layers, "n_layers", "layers")
    heads = _positive_int(n_kv_heads, "n_kv_heads", "heads")
    dim = _positive_int(head_dim, "head_dim", "elements")
    b = _positive(bytes_per_elem, "bytes_per_elem", "bytes per element")
    return 2 * layers * heads * dim * b  # 2: one K and one V vector per head per layer


def kv_cache_bytes(n_layers, n_kv_heads, head_dim, context_len, batch=1, bytes_per_elem=2) -> float:
    """KV cache of ``batch`` sequences of ``context_len`` tokens each, in bytes."""
    per_token = kv_cache_bytes_per_token(n_layers, n_kv_heads, head_dim, bytes_per_elem)
    tokens = _positive_int(context_len, "context_len", "tokens")
    sequences = _positive_int(batch, "batch", "sequences")
    return per_token * tokens * sequences


def max_batch_for_context(gpu, weight_bytes, kv_bytes_per_token, context_len, reserve_fraction=0.0) -> int:
    """How many sequences of ``context_len`` tokens fit in the KV cache beside the weights.

    free = capacity * (1 - reserve_fraction) - weight_bytes; the answer is
    floor(free / (kv_bytes_per_token * context_len)), and 0 when not even one sequence fits
    (or the weights alone overflow the card).
    """
    spec = as_gpu(gpu)
    w = _positive(weight_bytes, "weight_bytes", "bytes")
    kv = _positive(kv_bytes_per_token, "kv_bytes_per_token", "bytes per token")
    tokens = _positive_int(context_len, "context_len", "tokens")
    r = _fraction(reserve_fraction, "reserve_fraction", allow_zero=True)
    free_bytes = _capacity(spec) * (1.0 - r) - w
    if free_bytes <= 0:
        return 0
    return math.floor(free_bytes / (kv * tokens) * (1 + 1e-12))  # 1e-12: forgive float noise


def kv_crossover_context(weight_bytes, kv_bytes_per_token, batch=1) -> float:
    """Context length (tokens) at which the batch's KV reads equal the weight reads per step.

    weight_bytes / (batch * kv_bytes_per_token). Beyond it, the KV cache is most of the traffic.
    """
    w = _positive(weight_bytes, "weight_bytes", "bytes")
    kv = _positive(kv_bytes_per_token, "kv_bytes_per_token", "bytes per token")
    sequences = _positive_int(batch, "batch", "sequences")
    return w / (sequences * kv)


# --------------------------------------------------------------------------- quantisation


@dataclass(frozen=True)
class QuantisationRow:
    """One weight width in :func:`quantisation_table`. SI units."""

    bytes_per_param: float
    precision: str  # the precision of that storage width
    weight_bytes: float
    tokens_per_s: float  # batch-1 decode ceiling
    fits_in_memory: bool
    math_precision: str  # precision behind tokens_per_s: the width's own, else bf16 (weight-only)
    ridge: float | None  # FLOP/byte in ``precision``; None when the chip lacks it
    tokens_to_reach_ridge: float | None  # ridge * bytes_per_param / 2
    reason: str | None  # why ridge is None


def quantisation_table(n_params, gpu, bytes_per_param=(2, 1, 0.5)) -> tuple[QuantisationRow, ...]:
    """What narrower weights buy at decode: one row per weight width.

    Halving the bytes per parameter halves the bytes per step and so doubles the batch-1 decode
    ceiling. When the math runs at the same narrow precision, the chip's peak roughly doubles as
    well, so the ridge doubles and the tokens needed to reach it (ridge * b / 2) barely move:
    narrow weights make a given batch faster; they do not remove the need to batch.

    A width whose precision the chip lacks (fp8 or fp4 on an A100) gets ``ridge=None`` and a
    ``reason``; its decode ceiling is then the weight-only-quantisation one (math in bf16).
    """
    spec = as_gpu(gpu)
    n = _model_params(n_params)
    widths = (bytes_per_param,) if not isinstance(bytes_per_param, (tuple, list)) else tuple(bytes_per_param)
    if not widths:
        raise ValueError("bytes_per_param must name at least one width in bytes per parameter, got ()")
    rows = []
    for width in widths:
        precision = precision_for_bytes(width)
        b = float(width)
        if spec.has(precision):
            math_precision = precision
            ridge = ridge_point(spec, precision)
            tokens = tokens_to_reach_ridge(spec, precision, bytes_per_elem=b)
            reason = None
        else:
            math_precision = "bf16"
            ridge = None
            tokens = None
            has = ", ".join(spec.precisions)
            reason = (
                f"{spec.name} has no {precision} math (it has: {has}); the decode ceiling assumes "
                f"weight-only quantisation with the math in bf16"
            )
        decode = decode_roofline(n, spec, bytes_per_param=b, precision=math_precision)
        rows.append(
            QuantisationRow(
                bytes_per_param=b,
                precision=precision,
                weight_bytes=decode.weight_bytes,
                tokens_per_s=decode.tokens_per_s,
                fits_in_memory=decode.fits_in_memory,
                math_precision=math_precision,
                ridge=ridge,
                tokens_to_reach_ridge=tokens,
                reason=reason,
            )
        )
    return tuple(rows)


# --------------------------------------------------------------------------- a model's decode step


def expected_experts_touched(n_experts, experts_per_token, tokens) -> float:
    """Expected number of distinct experts (per layer) that ``tokens`` tokens are routed to.

    Assumption: uniform, independent routing; each token picks ``experts_per_token`` distinct
    experts out of ``n_experts``, every expert equally likely. One token leaves a given expert
    out with probability ``1 - k/E``, so ``tokens`` tokens touch ``E * (1 - (1 - k/E)**tokens)``
    experts on average: ``k`` for one token, all ``E`` for a large batch. A real router is
    skewed, which touches fewer distinct experts for the same batch; uniform routing is the
    most experts (and bytes) a batch can expect.
    """
    e = _positive_int(n_experts, "n_experts", "experts")
    k = _positive_int(experts_per_token, "experts_per_token", "experts per token")
    t = _positive_int(tokens, "tokens", "tokens")
    if k > e:
        raise ValueError(f"experts_per_token must be at most n_experts ({e}), got {experts_per_token!r}")
    return e * (1.0 - (1.0 - k / e) ** t)


@dataclass(frozen=True)
class DecodeStepBytes:
    """HBM bytes one decode step of a model reads, by part. SI units (bytes).

    ``weights`` is everything but the KV cache: ``attention + ffn + norms + embedding_gather +
    unembedding``; ``total`` adds ``kv_cache``.
    """

    batch: int
    context_len: int | None
    attention: float  # Q, K, V, O weights (and biases) of every layer
    ffn: float  # dense FFN, or the experts the batch touches + shared experts + router
    experts_touched: float  # expected distinct routed experts per layer (n_experts for a dense FFN: 1)
    norms: float
    embedding_gather: float  # one embedding row (and position row) per sequence
    unembedding: float  # the whole vocab x d_model matrix, for the logits
    kv_cache: float  # every sequence's K and V for its context
    weights: float
    total: float


def decode_step_bytes_of(cfg, batch=1, context_len=None, bytes_per_param=2, kv_bytes_per_elem=None) -> DecodeStepBytes:
    """What one decode step of ``cfg`` reads from HBM, serving ``batch`` sequences.

    * weights actually read: every attention matrix; the dense FFN, or for a mixture of
      experts the :func:`expected_experts_touched` by ``batch`` tokens (uniform routing) plus
      the shared experts and the router; the norms; the unembedding in full (every logit needs
      every row);
    * the embedding *gather*: one row of ``d_model`` per sequence (and one row of the learned
      position table, where there is one), not the whole table;
    * the KV cache, :meth:`~roofline_lib.models.transformer.TransformerConfig.kv_cache_bytes`:
      ``batch * keys * 2 * n_layers * n_kv_heads * head_dim * kv_bytes_per_elem``, with
      ``keys = min(context_len, sliding_window)`` in a windowed layer (multi-head latent
      attention caches its latent instead); none when ``context_len`` is None.

    ``bytes_per_param`` is the weight width; ``kv_bytes_per_elem`` the cache's (default: the same).
    Activations and the new token's K and V written back are small and not counted.
    """
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig (rl.model_config('llama-3-8b')), got {type(cfg).__name__}")
    batch = _positive_int(batch, "batch", "sequences")
    b = _positive(bytes_per_param, "bytes_per_param", "bytes per parameter")
    kv_b = b if kv_bytes_per_elem is None else _positive(kv_bytes_per_elem, "kv_bytes_per_elem", "bytes per element")
    attention = ffn = 0.0
    touched = 1.0
    if cfg.is_moe:
        touched = expected_experts_touched(cfg.n_experts, cfg.experts_per_token, batch)
    for layers, mats in cfg.layer_blocks():
        for m in mats:
            if m.term == "qkvo":
                attention += layers * m.params * b
            elif m.copies > 1 and m.name.startswith("expert_"):
                ffn += layers * touched * m.params_each * b  # only the experts this batch is routed to
            else:
                ffn += layers * m.params * b
    d = cfg.d_model
    parts = cfg.params_breakdown()
    norms = parts["norms"] * b
    rows = batch * (2 if cfg.learned_positions else 1)  # a token row, and a position row
    gather = rows * d * b
    unembedding = cfg.vocab * d * b
    kv = 0.0
    if context_len is not None:  # a windowed layer's rolling buffer holds only the window
        kv = cfg.kv_cache_bytes(context_len, kv_b, batch)
    weights = attention + ffn + norms + gather + unembedding
    return DecodeStepBytes(
        batch=batch,
        context_len=None if context_len is None else int(context_len),
        attention=attention,
        ffn=ffn,
        experts_touched=touched,
        norms=norms,
        embedding_gather=gather,
        unembedding=unembedding,
        kv_cache=kv,
        weights=weights,
        total=weights + kv,
    )


def decode_flops_per_token(cfg, context_len=None) -> float:
    """Matmul FLOPs of one decode token: the active weights, plus the scores over the context.

    The new query attends to every cached key (no mask to skip), so the scores are the
    full-square count at ``seq_len = context_len``; without a context there are none.
    """
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig (rl.model_config('llama-3-8b')), got {type(cfg).__name__}")
    if context_len is None:
        f = cfg.flops_per_token(causal=False, seq_len=1)
        return f.fwd_per_token - f.scores_total
    keys = _positive_int(context_len, "context_len", "tokens")
    return cfg.flops_per_token(causal=False, seq_len=keys).fwd_per_token


@dataclass(frozen=True)
class ModelDecodeCeiling:
    """The roofline ceiling of one decode step of a model, weights and KV cache read. SI units."""

    gpu: str
    model: str
    batch: int
    context_len: int | None
    bytes: DecodeStepBytes
    flops_per_step: float
    intensity: float  # FLOP per byte of the whole step
    ridge: float  # FLOP per byte, in ``precision``
    memory_seconds: float
    compute_seconds: float
    seconds_per_step: float
    ms_per_token: float
    tokens_per_s: float  # all sequences together
    bound: str  # "memory" or "compute"
    fits_in_memory: bool  # all weights stored + the batch's KV cache, against the capacity
    warning: str | None

    def __str__(self) -> str:
        text = (
            f"{self.model} on {self.gpu}, batch {self.batch}"
            f"{'' if self.context_len is None else f' x {self.context_len} tokens'}: "
            f"{to_unit(self.bytes.total, 'GB'):.4g} GB per step ({self.bytes.kv_cache / self.bytes.total:.0%} KV cache), "
            f"{self.intensity:.3g} FLOP/byte against a ridge of {self.ridge:.3g}, "
            f"{self.tokens_per_s:.4g} tok/s ceiling, {self.bound}-bound"
        )
        return f"WARNING: {self.warning}\n{text}" if self.warning else text


def model_decode_ceiling(
    cfg, gpu, batch=1, context_len=None, bytes_per_param=2, kv_bytes_per_elem=None, precision=None
) -> ModelDecodeCeiling:
    """Decode ceiling of a model: bytes from :func:`decode_step_bytes_of`, FLOPs from its matmuls.

    * bytes_per_step  = weights read + KV cache (:class:`DecodeStepBytes`)
    * flops_per_step  = batch * (active matmul FLOPs + scores over ``context_len`` keys)
    * memory_seconds  = bytes / HBM bytes/s;  compute_seconds = FLOPs / dense peak
    * seconds_per_step = the larger;  tokens_per_s = batch / seconds_per_step
    """
    spec = as_gpu(gpu)
    step = decode_step_bytes_of(cfg, batch, context_len, bytes_per_param, kv_bytes_per_elem)
    if precision is None:
        precision = precision_for_bytes(float(bytes_per_param))
    peak = _peak_for(spec, precision, float(bytes_per_param))
    flops = step.batch * decode_flops_per_token(cfg, context_len)
    memory_seconds = step.total / spec.hbm_bytes_per_s
    compute_seconds = flops / peak
    roof = Roof(peak, spec.hbm_bytes_per_s, f"{spec.name} {precision}")
    seconds = roof.seconds(flops, step.total)  # the larger of the two times
    stored = cfg.n_params() * float(bytes_per_param) + step.kv_cache
    fits, warning = _fits(spec, stored, "weights plus KV cache")
    return ModelDecodeCeiling(
        gpu=spec.name,
        model=cfg.name or "model",
        batch=step.batch,
        context_len=step.context_len,
        bytes=step,
        flops_per_step=flops,
        intensity=flops / step.total,
        ridge=roof.ridge,
        memory_seconds=memory_seconds,
        compute_seconds=compute_seconds,
        seconds_per_step=seconds,
        ms_per_token=seconds * 1e3,
        tokens_per_s=step.batch / seconds,
        bound=roof.bound(flops / step.total),  # the one verdict: Roof.bound at the step's intensity
        fits_in_memory=fits,
        warning=warning,
    )


def decode_batch_to_reach_ridge(
    cfg, gpu, context_len=None, bytes_per_param=2, kv_bytes_per_elem=None, precision=None
) -> int:
    """Smallest batch whose decode step reaches the ridge (compute time >= memory time).

    The intensity ``batch * F / (W(batch) + batch * K)`` grows with the batch: ``F`` FLOPs per
    token, ``W`` the weights read (which grow with the batch only through the experts it
    touches), ``K`` the per-sequence bytes (embedding row, KV cache). It tends to ``F / K``, so
    with a long context the ridge may be out of reach at any batch: then ValueError says so,
    with that limit. Memory capacity is not considered (see :func:`max_batch_for_context`).
    """
    spec = as_gpu(gpu)
    if precision is None:
        precision = precision_for_bytes(_positive(bytes_per_param, "bytes_per_param", "bytes per parameter"))
    ridge = ridge_point(spec, precision)

    def intensity(batch):
        return model_decode_ceiling(
            cfg, spec, batch, context_len, bytes_per_param, kv_bytes_per_elem, precision
        ).intensity

    one = decode_step_bytes_of(cfg, 1, context_len, bytes_per_param, kv_bytes_per_elem)
    per_sequence = one.kv_cache + one.embedding_gather
    limit = decode_flops_per_token(cfg, context_len) / per_sequence
    if limit <= ridge:
        raise ValueError(
            f"{cfg.name or 'this model'} never reaches the {spec.name} {precision} ridge of {ridge:.4g} "
            f"FLOP/byte at a context of {context_len} tokens: each sequence brings its own "
            f"{to_unit(per_sequence, 'MB'):.4g} MB (mostly KV cache) for "
            f"{to_unit(decode_flops_per_token(cfg, context_len), 'GFLOP'):.4g} GFLOP, so however large the batch the intensity stays below {limit:.4g} FLOP/byte"
        )
    low, high = 0, 1
    while intensity(high) < ridge:  # doubling, then bisection: intensity rises with the batch
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        if intensity(mid) >= ridge:
            high = mid
        else:
            low = mid
    return high
