"""Training on the roofline: MFU and HFU, what a run costs, and a precision sweep of one kernel.

Counting conventions (all SI: FLOP, bytes, seconds):

* ``"6N"``: 6 N FLOP per trained token (forward 2N, backward 4N; 1 multiply-accumulate = 2 FLOP).
* ``"three-term"``: 6 N + 6 L s d FLOP per token. The added term is the causal attention-score
  work (2 s d per layer forward, each query seeing s/2 keys on average) carried through forward
  and backward. It matters for deep, thin or long-context models, where 6N under-counts.
* ``"full-square"``: 6 N + 12 L s a, the whole score square with a = heads x head size: the
  convention PaLM reported MFU with, and several large-model papers after it.

MFU (model FLOPs utilisation) counts only the FLOPs the model defines; HFU (hardware FLOPs
utilisation) adds the forward passes recomputed by activation checkpointing, so HFU >= MFU.
Both divide by the *dense* peak of every card in the run. Always report which convention you used.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.checks import _finite_result, _fraction, _positive, _positive_int
from ..core.formatting import to_unit
from ..core.hardware import as_gpu, bytes_per_element
from ..core.roofline import PLAUSIBILITY_TOLERANCE, ImplausibleMeasurement, Roof, check_plausible, kernel_verdict
from ..models.transformer import TransformerConfig, training_convention, training_flops_per_token

__all__ = [
    "RECOMPUTE",
    "flops_utilisation",
    "mfu",
    "hfu",
    "expected_tokens_per_s",
    "TrainingBill",
    "training_bill",
    "SweepRow",
    "precision_sweep",
]

#: What activation recomputation re-runs in the backward pass, for :func:`hfu`.
RECOMPUTE = {
    "none": "nothing is recomputed: hardware FLOPs = model FLOPs",
    "attention": (
        "selective recompute: only the attention core (Q K^T, softmax, P V) runs again, "
        "one more forward of the score term (Korthikanti et al. 2022)"
    ),
    "full": "full activation checkpointing: the whole forward runs again (6N becomes 8N)",
}

_MFU_CAUSES = (
    "likely causes: a sparse (2:4) peak used instead of the dense one, the wrong GPU count, "
    "tokens/s counted per GPU but divided by every GPU (or global tokens/s divided by one), "
    "the wrong parameter count N, or tokens counted twice (e.g. once per data-parallel rank "
    "and again globally)"
)


def _flops_per_token(n_params, convention, n_layers, d_model, seq_len, attention_dim=None) -> float:
    """Training FLOP per token under ``convention``; the formula lives in the transformer layer.

    ``n_params`` may be a :class:`~roofline_lib.models.transformer.TransformerConfig`: its active
    parameters and its shape are then used, and the shape arguments must be left out, except
    ``seq_len``, the training length, which a convention with a score term needs when the
    config has none (it is never taken from the context window).
    """
    if isinstance(n_params, TransformerConfig):
        given = [
            k
            for k, v in (
                ("n_layers", n_layers),
                ("d_model", d_model),
                ("attention_dim", attention_dim),
            )
            if v is not None
        ]
        if given:
            raise ValueError(f"pass either a TransformerConfig or {', '.join(given)}, not both")
        return n_params.training_flops_per_token(convention, seq_len=seq_len)
    return training_flops_per_token(n_params, n_layers, d_model, seq_len, convention, attention_dim=attention_dim)


def _cluster_peak(spec, cards: int, precision) -> float:
    """The dense ``precision`` peak of ``cards`` cards of ``spec``, in FLOP/s."""
    return cards * spec.peak_flops_per_s(precision)


def flops_utilisation(
    achieved_flops_per_s, roof, *, what: str = "MFU", tolerance: float = PLAUSIBILITY_TOLERANCE
) -> float:
    """The one utilisation core behind MFU and HFU: achieved FLOP/s over the roof's compute peak.

    ``roof`` is a :class:`~roofline_lib.core.roofline.Roof` (one card, a cluster, or ceilings measured
    here). The rate is held to the one plausibility rule first
    (:func:`~roofline_lib.core.roofline.check_plausible`), so a utilisation above 1 by more than
    ``tolerance`` raises ImplausibleMeasurement instead of being returned.
    """
    if not isinstance(roof, Roof):
        raise TypeError(f"roof must be a Roof (rl.roof(...)), got {type(roof).__name__} {roof!r}")
    achieved = _positive(achieved_flops_per_s, "achieved_flops_per_s", "FLOP per second")
    check_plausible(achieved, 0.0, roof, tolerance=tolerance, what=what)
    return achieved / roof.peak_flops_per_s


def _utilisation(flops_per_token, tokens_per_s, n_gpus, gpu, precision, what) -> float:
    spec = as_gpu(gpu)
    rate = _positive(tokens_per_s, "tokens_per_s", "tokens per second")
    cards = _positive_int(n_gpus, "n_gpus", "GPUs")
    achieved_flops_per_s = flops_per_token * rate
    peak_flops_per_s = _cluster_peak(spec, cards, precision)
    cluster = Roof(  # the peak of every card
        peak_flops_per_s,
        cards * spec.hbm_bytes_per_s,
        f"{cards} x {spec.name}",
        compute_label=f"dense {precision} peak of {cards} x {spec.name}",
    )
    try:
        return flops_utilisation(achieved_flops_per_s, cluster, what=what)
    except ImplausibleMeasurement:
        util = achieved_flops_per_s / peak_flops_per_s
        raise ImplausibleMeasurement(
            f"{what} of {util:.1%} is impossible: {to_unit(achieved_flops_per_s, 'PFLOP/s'):.4g} PFLOP/s against "
            f"{cards} x {spec.name} at a dense {precision} peak of "
            f"{to_unit(peak_flops_per_s, 'PFLOP/s'):.4g} PFLOP/s; {_MFU_CAUSES}"
        ) from None


def mfu(
    n_params,
    tokens_per_s,
    n_gpus,
    gpu,
    precision="bf16",
    convention="6N",
    n_layers=None,
    d_model=None,
    seq_len=None,
    *,
    attention_dim=None,
) -> float:
    """Model FLOPs utilisation: model FLOP/s over the dense peak of all ``n_gpus`` cards.

    flops_per_token  = 6 N ("6N"), 6 N + 6 L s a ("three-term") or 6 N + 12 L s a ("full-square"),
                       a = ``attention_dim`` (heads x head size, default d_model); see
                       :data:`~roofline_lib.models.transformer.TRAINING_CONVENTIONS` for who uses which.
                       ``n_params`` may be a TransformerConfig (its active parameters and shape).
    achieved FLOP/s  = flops_per_token * tokens_per_s   (global tokens/s, all cards together)
    peak FLOP/s      = n_gpus * dense peak in ``precision``
    MFU              = achieved / peak, a fraction

    Raises ImplausibleMeasurement (a ValueError) when the result is above 1 by more than the
    plausibility tolerance (``roofline.PLAUSIBILITY_TOLERANCE``), naming the usual
    mistakes behind such a number.
    """
    per_token = _flops_per_token(n_params, convention, n_layers, d_model, seq_len, attention_dim)
    return _utilisation(per_token, tokens_per_s, n_gpus, gpu, precision, "MFU")


def hfu(
    n_params,
    tokens_per_s,
    n_gpus,
    gpu,
    precision="bf16",
    convention="6N",
    n_layers=None,
    d_model=None,
    seq_len=None,
    recompute_fraction=0.0,
    *,
    recompute=None,
    attention_dim=None,
) -> float:
    """Hardware FLOPs utilisation: MFU plus the FLOPs spent recomputing activations.

    Say what is recomputed with ``recompute`` (see :data:`RECOMPUTE`):

    * ``"none"``: hardware FLOP per token = model FLOP per token.
    * ``"attention"`` (selective recompute, Korthikanti et al. 2022): the attention core runs
      again, adding one forward of the convention's score term (``2 L s a`` causal,
      ``4 L s a`` full-square). Under ``"6N"``, which counts no scores, this is refused.
    * ``"full"``: the whole forward runs again, one third of the training FLOPs: 8N for 6N.

    Or, the older way, ``recompute_fraction``: the extra forward work as a fraction of one
    forward pass (1.0 = full, 0.0 = none): model FLOP * (1 + recompute_fraction / 3).
    HFU >= MFU always; both are refused above the peak by the one plausibility rule.
    """
    r = _fraction(recompute_fraction, "recompute_fraction", allow_zero=True)
    per_token = _flops_per_token(n_params, convention, n_layers, d_model, seq_len, attention_dim)
    forward = per_token / 3  # the forward is one third: the backward costs two forwards
    if recompute is None:
        extra = r * forward
    else:
        if recompute not in RECOMPUTE:
            raise ValueError(f"recompute must be one of {', '.join(map(repr, RECOMPUTE))}, got {recompute!r}")
        if r:
            raise ValueError("pass recompute= or recompute_fraction=, not both")
        if recompute == "full":
            extra = forward
        elif recompute == "none":
            extra = 0.0
        else:
            n = n_params.active_params() if isinstance(n_params, TransformerConfig) else n_params
            scores_fwd = (per_token - 6 * float(n)) / 3  # the convention's score term, forward only
            if scores_fwd <= 0:
                raise ValueError(
                    f"recompute='attention' adds the attention-score forward, which convention "
                    f"{training_convention(convention)!r} does not count; use 'three-term' or 'full-square'"
                )
            extra = scores_fwd
    return _utilisation(per_token + extra, tokens_per_s, n_gpus, gpu, precision, "HFU")


def expected_tokens_per_s(
    n_params,
    n_gpus,
    gpu,
    target_mfu,
    precision="bf16",
    convention="6N",
    n_layers=None,
    d_model=None,
    seq_len=None,
    *,
    attention_dim=None,
) -> float:
    """Global training tokens/s that ``target_mfu`` implies: MFU * n_gpus * dense peak / FLOP per token."""
    spec = as_gpu(gpu)
    cards = _positive_int(n_gpus, "n_gpus", "GPUs")
    target = _fraction(target_mfu, "target_mfu")
    per_token = _flops_per_token(n_params, convention, n_layers, d_model, seq_len, attention_dim)
    return target * _cluster_peak(spec, cards, precision) / per_token


@dataclass(frozen=True)
class TrainingBill:
    """What a training run costs at a given MFU. SI units; ``cost`` in the price's currency."""

    gpu: str
    n_gpus: int
    n_tokens: float
    mfu: float
    convention: str
    flops_per_token: float
    total_flops: float
    tokens_per_s: float  # global, all cards together
    seconds: float  # wall-clock
    gpu_hours: float
    cost: float | None  # gpu_hours * usd_per_gpu_hour; None when no price was given

    def __str__(self) -> str:
        price = "" if self.cost is None else f", cost {self.cost:,.0f}"
        return (
            f"{self.n_tokens:.3g} tokens on {self.n_gpus} x {self.gpu} at {self.mfu:.0%} MFU "
            f"({self.convention}): {self.total_flops:.3g} FLOP, {self.tokens_per_s:.3g} tok/s, "
            f"{self.seconds / 3600:.3g} h wall-clock, {self.gpu_hours:.3g} GPU-hours{price}"
        )


def training_bill(
    n_params,
    n_tokens,
    n_gpus,
    gpu,
    mfu,
    precision="bf16",
    convention="6N",
    n_layers=None,
    d_model=None,
    seq_len=None,
    usd_per_gpu_hour=None,
    *,
    attention_dim=None,
) -> TrainingBill:
    """Turn a plan (model, tokens, cards, MFU) into FLOP, time, GPU-hours and, given a price, cost.

    flops_per_token = per ``convention``;  total_flops = flops_per_token * n_tokens
    tokens_per_s    = mfu * n_gpus * dense peak / flops_per_token
    seconds         = n_tokens / tokens_per_s;  gpu_hours = seconds * n_gpus / 3600
    """
    spec = as_gpu(gpu)
    tokens = _positive(n_tokens, "n_tokens", "tokens")
    cards = _positive_int(n_gpus, "n_gpus", "GPUs")
    target = _fraction(mfu, "mfu")
    price = None
    if usd_per_gpu_hour is not None:
        price = _positive(usd_per_gpu_hour, "usd_per_gpu_hour", "US dollars per GPU-hour", allow_zero=True)
    per_token = _flops_per_token(n_params, convention, n_layers, d_model, seq_len, attention_dim)
    total_flops = _finite_result(per_token * tokens, "total_flops", "n_params and n_tokens")
    tokens_per_s = expected_tokens_per_s(
        n_params, cards, spec, target, precision, convention, n_layers, d_model, seq_len, attention_dim=attention_dim
    )
    seconds = tokens / tokens_per_s
    gpu_hours = _finite_result(seconds * cards / 3600, "gpu_hours", "n_tokens and n_gpus")  # 3600 s per hour
    return TrainingBill(
        gpu=spec.name,
        n_gpus=cards,
        n_tokens=tokens,
        mfu=target,
        convention=training_convention(convention),
        flops_per_token=per_token,
        total_flops=total_flops,
        tokens_per_s=tokens_per_s,
        seconds=seconds,
        gpu_hours=gpu_hours,
        cost=None if price is None else gpu_hours * price,
    )


@dataclass(frozen=True)
class SweepRow:
    """One dtype of :func:`precision_sweep`: the kernel's verdict at that width. SI units."""

    dtype: str
    seconds: float
    bytes_moved: float
    intensity: float  # FLOP/byte
    ridge: float  # FLOP/byte, in this dtype
    bound: str  # "memory" or "compute"
    achieved_flops_per_s: float
    achieved_bytes_per_s: float
    ceiling_flops_per_s: float
    efficiency: float  # achieved / ceiling, a fraction


def precision_sweep(flops, elems, seconds_by_dtype, gpu) -> dict[str, SweepRow]:
    """The same kernel at several widths: bytes, intensity, bound and efficiency per dtype.

    ``flops`` is the kernel's arithmetic (the same at every width), ``elems`` the number of values
    it reads plus writes, and ``seconds_by_dtype`` maps a dtype name to its measured time. Each
    dtype's bytes are ``elems * bytes_per_element(dtype)`` and its row comes from
    :func:`roofline_lib.kernel_verdict` with ``precision=dtype``: a dtype the chip lacks (fp8 on an
    A100) raises ValueError naming what it has, and a timing faster than the roof raises
    ImplausibleMeasurement.

    For a memory-bound kernel, halving the width halves the bytes and doubles the intensity, so
    the ceiling doubles.
    """
    spec = as_gpu(gpu)
    f = _positive(flops, "flops", "FLOP")
    n = _positive(elems, "elems", "elements")
    if not hasattr(seconds_by_dtype, "items") or not seconds_by_dtype:
        raise ValueError(
            f"seconds_by_dtype must be a non-empty mapping of dtype name -> measured seconds, got {seconds_by_dtype!r}"
        )
    rows: dict[str, SweepRow] = {}
    for dtype, seconds in seconds_by_dtype.items():
        bytes_moved = n * bytes_per_element(dtype)
        try:
            verdict = kernel_verdict(f, bytes_moved, seconds, spec, precision=dtype)
        except ImplausibleMeasurement as err:
            raise ImplausibleMeasurement(f"{dtype} timing of {seconds!r} s: {err}") from None
        rows[dtype] = SweepRow(
            dtype=str(dtype).lower(),
            seconds=verdict.seconds,
            bytes_moved=verdict.bytes_moved,
            intensity=verdict.intensity,
            ridge=verdict.ridge,
            bound=verdict.bound,
            achieved_flops_per_s=verdict.achieved_flops_per_s,
            achieved_bytes_per_s=verdict.achieved_bytes_per_s,
            ceiling_flops_per_s=verdict.ceiling_flops_per_s,
            efficiency=verdict.efficiency,
        )
    return rows
