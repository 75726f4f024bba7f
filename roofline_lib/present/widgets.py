"""One ipywidgets explorer per chapter topic: move a slider, watch the roofline answer.

Each function returns an :class:`~roofline_lib.present.explorer.Explorer` (an ipywidgets VBox of
controls, a readout and a figure, with ``.update()``, ``.controls``, ``.readout``, ``.figure``,
``.result`` and the website explorer's ``.site_html()``), so a notebook cell that ends with
``roofline_explorer()`` shows it. ``.result`` holds the numbers behind the readout: a dict
(roofline), the library's record (decode, FLOP shares, collectives, serving) or the MFU fraction.

Every number comes from the library (``roofline``, ``inference``, ``training``, ``transformer``,
``comms``, ``serving``); the explorers only arrange it. Each builder reads as the same steps:
check the start, build the controls and the figure, then on every change compute, redraw and
write the readout, each step a function of its own below it.
"""

from __future__ import annotations

import functools
import html
import math
from dataclasses import dataclass

import ipywidgets as w
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from ..core.checks import _positive, _positive_int
from ..core.formatting import num as _fmt
from ..core.formatting import seconds as _seconds
from ..core.formatting import sig3 as _sig3
from ..core.formatting import to_unit
from ..core.hardware import as_gpu
from ..core.roofline import ImplausibleMeasurement, attainable_flops_per_s, ridge_point, roof
from .explorer import (
    _FIGSIZE,
    Explorer,
    _error,
    _figure,
    _gpu_dropdown,
    _in_span,
    _log_axes,
    _log_slider,
    _powers_of_two_slider,
    _span,
)

__all__ = [
    "Explorer",
    "roofline_explorer",
    "decode_explorer",
    "flop_share_explorer",
    "mfu_explorer",
    "collective_explorer",
    "serving_explorer",
]

_INTENSITY_LOG10 = (-2.0, 4.0)  # slider span: 0.01 to 10,000 FLOP/byte
_TOKENS_LOG10 = (1.0, 9.0)  # training tokens/s, all cards together: 10 to 1e9
_PARAMS_LOG10 = (7.0, 12.5)  # model size in the MFU explorer: 10 million to 3.2 trillion parameters


def _tflops(flops_per_s):
    """FLOP/s (or bytes/s times FLOP/byte) in TFLOP/s, for an axis or a label."""
    return to_unit(flops_per_s, "TFLOP/s")


def _values(controls: dict[str, w.Widget]) -> dict[str, object]:
    """Every control's current value by name."""
    return {name: control.value for name, control in controls.items()}


def _started(explorer: Explorer) -> Explorer:
    """``explorer`` after its first redraw, ready to show."""
    explorer.update()
    return explorer


# --------------------------------------------------------------------------- roofline


@dataclass
class _RooflineView:
    """The roofline explorer's figure and the artists each redraw moves."""

    fig: Figure
    ax: object
    xs: np.ndarray  # the intensities the roof is drawn at, FLOP/byte
    roof_line: object
    ridge_line: object
    ridge_label: object
    kernel_dot: object


def _roofline_controls(spec, precision: str, x0: float) -> dict[str, w.Widget]:
    """GPU, precision (the chip's own list) and intensity."""
    return {
        "gpu": _gpu_dropdown(spec),
        "precision": w.Dropdown(
            options=list(spec.precisions),
            value=precision.strip().lower(),
            description="precision",
            layout=w.Layout(width="12em"),
        ),
        "intensity": _log_slider(x0, _INTENSITY_LOG10, "FLOP/byte"),
    }


def _roofline_view(x0: float) -> _RooflineView:
    """The roof, the dotted ridge with its label, and the kernel's dot, on the shared log-log axes."""
    lo, hi = _span(_INTENSITY_LOG10)
    fig, ax = _figure()
    xs = np.geomspace(lo, hi, 200)
    (roof_line,) = ax.plot(xs, xs, lw=2, color="C0", label="roof")
    ridge_line = ax.axvline(1.0, ls=":", color="C0", lw=1)
    ridge_label = ax.text(1.0, 1.0, "", fontsize=8, color="C0")
    (kernel_dot,) = ax.plot([x0], [1.0], "o", color="C3", ms=8, label="your kernel")
    _log_axes(ax, "arithmetic intensity (FLOP/byte)", "attainable TFLOP/s", xlim=(lo, hi))
    return _RooflineView(fig, ax, xs, roof_line, ridge_line, ridge_label, kernel_dot)


def _roofline_numbers(chip, prec: str, x: float) -> dict[str, object]:
    """The explorer's result: what the library says about intensity ``x`` on ``chip`` in ``prec``."""
    return {
        "attainable_flops_per_s": attainable_flops_per_s(x, chip, prec),
        "ridge": ridge_point(chip, prec),
        "bound": roof(chip, prec).bound(x),  # the one verdict at the ridge
        "peak_flops_per_s": chip.peak_flops_per_s(prec),
    }


def _draw_roofline(view: _RooflineView, chip, prec: str, x: float, numbers: dict) -> None:
    lo = _span(_INTENSITY_LOG10)[0]
    peak, ridge = numbers["peak_flops_per_s"], numbers["ridge"]
    view.roof_line.set_ydata(_tflops(attainable_flops_per_s(view.xs, chip, prec)))
    view.ridge_line.set_xdata([ridge, ridge])
    view.ridge_label.set_position((ridge * 1.1, _tflops(peak) * 0.35))
    view.ridge_label.set_text(f"ridge {_fmt(ridge)}")
    view.kernel_dot.set_data([x], [_tflops(numbers["attainable_flops_per_s"])])
    view.ax.set_ylim(_tflops(chip.hbm_bytes_per_s * lo) / 2, _tflops(peak) * 3)
    hbm = _fmt(to_unit(chip.hbm_bytes_per_s, "TB/s"))
    view.ax.set_title(f"{chip.name}, {prec}: {_fmt(_tflops(peak))} TFLOP/s, {hbm} TB/s", fontsize=10)


def _roofline_readout(chip, prec: str, x: float, numbers: dict) -> str:
    """The sentence under the roofline figure: the ceiling, its share of the peak, the bound and the ridge."""
    attainable = numbers["attainable_flops_per_s"]
    return (
        f"At {_fmt(x)} FLOP/byte the {html.escape(chip.name)} ({prec}) attains at most "
        f"<b>{_fmt(_tflops(attainable))} TFLOP/s</b> ({attainable / numbers['peak_flops_per_s']:.0%} of its peak): "
        f"<b>{numbers['bound']}-bound</b>, the ridge is at {_fmt(numbers['ridge'])} FLOP/byte."
    )


def _offer_precisions(menu: w.Dropdown, key) -> None:
    """Offer only the new chip's precisions; keep the current one when it has it."""
    chip = as_gpu(key)
    current = menu.value
    menu.options = list(chip.precisions)
    menu.value = current if chip.has(current) else ("bf16" if chip.has("bf16") else chip.precisions[0])


def roofline_explorer(gpu="A100", precision: str = "bf16", intensity: float = 10.0) -> Explorer:
    """A GPU, a precision and an arithmetic intensity -> the attainable TFLOP/s and the bound.

    The precision list follows the chosen GPU (an A100 offers no fp8). The figure shows the
    roof, the dotted ridge, and the kernel's point on the roof.
    """
    spec = as_gpu(gpu)
    spec.peak_flops_per_s(precision)  # refuses a precision the chip lacks, naming what it has
    x0 = _in_span(_positive(intensity, "intensity", "FLOP/byte"), _INTENSITY_LOG10, "intensity", "FLOP/byte")
    controls = _roofline_controls(spec, precision, x0)
    view = _roofline_view(x0)

    def recompute() -> None:
        chip, prec, x = as_gpu(controls["gpu"].value), controls["precision"].value, controls["intensity"].value
        explorer.result = numbers = _roofline_numbers(chip, prec, x)
        _draw_roofline(view, chip, prec, x, numbers)
        explorer.readout.value = _roofline_readout(chip, prec, x, numbers)

    explorer = Explorer(
        controls,
        view.fig,
        recompute,
        title="Roofline explorer",
        hooks={"gpu": functools.partial(_offer_precisions, controls["precision"])},
        site_mode="intensity",
        site_state=functools.partial(_values, controls),  # gpu, precision, intensity
    )
    return _started(explorer)


# --------------------------------------------------------------------------- decode


_BARE_COUNT = ""  # the decode explorer's model menu entry for a bare parameter count
_BATCH_LOG2_MAX = 12  # decode batch sliders end at 2**12 = 4096 sequences, in Lab and on the site
_WHOLE_LABEL = {"description_width": "initial"}  # a description shown whole, not cut to a fixed width


def _billions(n_params: float) -> str:
    """A bare parameter count as the decode explorer names it: ``7e9 -> '7'`` (billions, three figures)."""
    return f"{to_unit(n_params, 'B params'):.3g}"


def _decode_controls(n, spec, bytes_per_param, batch, tokens, model) -> dict:
    """The decode explorer's controls: model menu, GPU, weight width, batch and tokens."""
    from ..models import transformer

    # "" (not None) stands for the bare parameter count: a Dropdown whose value is None shows
    # nothing selected, so JupyterLab drew the menu blank
    model_options = [(f"{_billions(n)}B parameters", _BARE_COUNT)] + [
        (transformer.model_config(m).name, m) for m in transformer.shipped_models()
    ]
    widths = sorted({2, 1, 0.5, float(bytes_per_param)}, reverse=True)
    return {
        "model": w.Dropdown(
            options=model_options,
            value=_BARE_COUNT if model is None else model,
            description="model",
            style=_WHOLE_LABEL,
            layout=w.Layout(width="20em"),
        ),
        "gpu": _gpu_dropdown(spec),
        "bytes_per_param": w.Dropdown(
            options=[(f"{b:g} B/param", b) for b in widths],
            value=float(bytes_per_param),
            description="weights",
            style=_WHOLE_LABEL,
            layout=w.Layout(width="15em"),
        ),
        # 1 .. 4096, the website explorer's span (BATCH_LOG2_MAX in roofline-explorer.js)
        "batch": _powers_of_two_slider(batch, range(0, _BATCH_LOG2_MAX + 1), "batch"),
        "tokens": w.IntSlider(
            value=tokens, min=1, max=max(4096, tokens), step=1, description="tokens", continuous_update=False
        ),
    }


def _decode_batches(batch_slider) -> np.ndarray:
    """Every whole batch size a log grid touches, and the slider's: the knee is drawn where it is."""
    grid = np.unique(np.round(np.geomspace(1, batch_slider.options[-1], 96)).astype(int))
    return np.unique(np.concatenate([grid, batch_slider.options])).astype(float)


@dataclass
class _DecodeView:
    """The decode explorer's figure: the ceiling over every batch in ``batches``, and the chosen batch's dot."""

    fig: Figure
    ax: object
    batches: np.ndarray
    curve: object
    dot: object

    def clear(self) -> None:
        """Draw nothing: the library refused these inputs."""
        self.curve.set_ydata(np.full_like(self.batches, np.nan))
        self.dot.set_data([], [])


def _decode_view(batches: np.ndarray, b0: int) -> _DecodeView:
    fig, ax = _figure()
    (curve,) = ax.plot(batches, batches, "-", lw=2, color="C0")
    (dot,) = ax.plot([b0], [1.0], "o", color="C3", ms=8)
    _log_axes(
        ax,
        "batch (sequences decoded together)",
        "tokens/s ceiling (all sequences)",
        x_base=2,
        y_ticks=lambda v, _p: _fmt(v),
    )
    return _DecodeView(fig, ax, batches, curve, dot)


def _decode_subject(n: float, name: str | None):
    """What the decode rows price, and its name on the figure: the bare count ``n``, or shipped model ``name``."""
    from ..models import transformer

    if name is None:
        return n, f"{_billions(n)}B params"
    cfg = transformer.model_config(name)
    return cfg, cfg.name


def _draw_decode(view: _DecodeView, rows, batch: int, title: str):
    """Draw the ceiling of every row and the dot at ``batch``; return the row at ``batch``."""
    row = rows[list(view.batches).index(batch)]
    rates = np.array([r.tokens_per_s for r in rows])
    view.curve.set_ydata(rates)
    view.dot.set_data([batch], [row.tokens_per_s])
    view.ax.set_ylim(rates.min() / 2, rates.max() * 2)
    view.ax.set_title(title, fontsize=10)
    return row


def _decode_readout(row, batch: int, n_tokens: int) -> str:
    """The sentence under the decode figure: the ceiling at ``batch``, its bound, and the generation time."""
    generate_s = n_tokens * row.seconds_per_step  # one token per sequence per step
    warning = f"<br>{_error(row.warning)}" if row.warning else ""
    return (
        f"Batch {batch}: at most <b>{_sig3(row.tokens_per_s)} tokens/s</b> "
        f"({_sig3(row.tokens_per_s / batch)} per sequence), {_sig3(row.ms_per_token)} ms per step, "
        f"<b>{row.bound}-bound</b>, {row.share_of_peak:.1%} of the {row.precision} peak. "
        f"{n_tokens} tokens per sequence take at least {generate_s:.3g} s.{warning}"
    )


def _decode_site_state(controls: dict, n: float) -> dict[str, object]:
    """The page's decode explorer reads weights in its precision's width: name that precision."""
    from ..workloads import inference

    name = controls["model"].value or None
    state = {
        "gpu": controls["gpu"].value,
        "precision": inference.precision_for_bytes(controls["bytes_per_param"].value),
    }
    state.update({"n_params": n} if name is None else {"model": name})
    state["batch"] = controls["batch"].value
    return state


def decode_explorer(
    n_params: float = 7e9,
    gpu="A100",
    bytes_per_param: float = 2,
    batch: int = 1,
    tokens: int = 256,
    model: str | None = None,
) -> Explorer:
    """Decode on one card: batch size and tokens to generate -> the tokens/s ceiling and its bound.

    Every step streams the weights once (``inference.decode_roofline``); a bigger batch
    shares that stream, until the compute roof takes over. The figure plots the ceiling against
    the batch size and marks the chosen one. The model menu offers a bare parameter count
    (``n_params``) or one of the shipped models (``transformer.shipped_models()``), whose steps
    read what they use: one embedding row per sequence, and only the experts a batch touches.
    """
    from ..models import transformer
    from ..workloads import inference

    n = _positive(n_params, "n_params", "parameters")
    spec = as_gpu(gpu)
    b0 = _positive_int(batch, "batch", "sequences")
    t0 = _positive_int(tokens, "tokens", "tokens")
    inference.decode_roofline(n, spec, bytes_per_param=bytes_per_param, batch=b0)  # checks the inputs
    if model is not None:
        transformer.model_config(model)  # an unknown name is refused with the shipped ones listed
    controls = _decode_controls(n, spec, bytes_per_param, b0, t0, model)
    view = _decode_view(_decode_batches(controls["batch"]), b0)

    def recompute() -> None:
        chip, bpp, bsz = as_gpu(controls["gpu"].value), controls["bytes_per_param"].value, controls["batch"].value
        subject, label = _decode_subject(n, controls["model"].value or None)
        try:
            rows = [inference.decode_roofline(subject, chip, bytes_per_param=bpp, batch=int(b)) for b in view.batches]
        except ValueError as exc:  # e.g. 1 B/param asks for fp8 math on a chip without it
            explorer.show_error(str(exc))
            view.clear()
            return
        explorer.result = _draw_decode(view, rows, bsz, f"{chip.name}: {label} at {bpp:g} B/param")
        explorer.readout.value = _decode_readout(explorer.result, bsz, controls["tokens"].value)

    site_state = functools.partial(_decode_site_state, controls, n)
    explorer = Explorer(
        controls, view.fig, recompute, title="Decode ceiling explorer", site_mode="decode", site_state=site_state
    )
    return _started(explorer)


# --------------------------------------------------------------------------- FLOP shares


_SHARE_KEYS = ("ffn_total", "qkvo_total", "scores_total", "unembed")
_SHARE_LABELS = ("FFN", "QKVO", "scores", "unembed")


@dataclass(frozen=True)
class _Shape:
    """The FLOP-share explorer's fixed shape: everything but the width and the sequence length."""

    ffn_ratio: float
    n_layers: int
    vocab: int
    gated: bool
    causal: bool

    def counts(self, d_model: int, seq_len: int):
        """``transformer.transformer_flops_per_token`` at this width and length, ``d_ff = round(ffn_ratio * d)``."""
        from ..models import transformer

        d_ff = max(1, round(self.ffn_ratio * d_model))
        return transformer.transformer_flops_per_token(
            d_model, d_ff, self.n_layers, seq_len, self.vocab, gated=self.gated, causal=self.causal
        )


def _share_view():
    """Four bars (one per share) with their percentages above them; returns (fig, ax, bars, labels)."""
    fig, ax = _figure()
    bars = ax.bar(_SHARE_LABELS, [0.25] * 4, color=["C0", "C1", "C2", "C4"])
    labels = [ax.text(i, 0.0, "", ha="center", va="bottom", fontsize=9) for i in range(4)]
    ax.set_ylim(0, 1.08)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel("share of forward FLOPs per token")
    ax.grid(True, axis="y", alpha=0.3)
    return fig, ax, bars, labels


def _share_readout(counts, shares: list[float]) -> str:
    """The sentence under the bars: the forward GFLOP per token, every share, and the largest."""
    largest = _SHARE_LABELS[int(np.argmax(shares))]
    return (
        f"{_fmt(to_unit(counts.fwd_per_token, 'GFLOP'))} GFLOP per token forward; "
        + ", ".join(f"{name} {share:.1%}" for name, share in zip(_SHARE_LABELS, shares))
        + f". The largest share is <b>{largest}</b>."
    )


def flop_share_explorer(
    d_model: int = 4096,
    seq_len: int = 2048,
    n_layers: int = 32,
    vocab: int = 32000,
    ffn_ratio: float = 4.0,
    gated: bool = False,
    causal: bool = True,
) -> Explorer:
    """Sequence length and width -> where a token's forward FLOPs go (FFN, QKVO, scores, unembed).

    ``d_ff = round(ffn_ratio * d_model)``; counts come from
    ``transformer.transformer_flops_per_token``. Long sequences and narrow models hand the
    attention scores a growing share.
    """
    d0 = _positive_int(d_model, "d_model", "features")
    s0 = _positive_int(seq_len, "seq_len", "tokens")
    ratio = _positive(ffn_ratio, "ffn_ratio", "d_ff per d_model")
    layers = _positive_int(n_layers, "n_layers", "layers")
    v = _positive_int(vocab, "vocab", "tokens in the vocabulary")
    shape = _Shape(ratio, layers, v, gated, causal)
    shape.counts(d0, s0)  # checks gated and causal before any widget exists
    controls = {
        "seq_len": _powers_of_two_slider(s0, range(7, 18), "seq_len"),
        "d_model": _powers_of_two_slider(d0, range(8, 15), "d_model"),
    }
    fig, ax, bars, labels = _share_view()

    def recompute() -> None:
        d, s = controls["d_model"].value, controls["seq_len"].value
        explorer.result = f = shape.counts(d, s)
        shares = [f.share(k) for k in _SHARE_KEYS]
        for bar, label, share in zip(bars, labels, shares):
            bar.set_height(share)
            label.set_y(share + 0.01)
            label.set_text(f"{share:.1%}")
        ax.set_title(f"d_model {d}, seq_len {s}, {layers} layers, vocab {v}", fontsize=10)
        explorer.readout.value = _share_readout(f, shares)

    def site_state() -> dict[str, object]:
        fixed = {"n_layers": layers, "vocab": v, "ffn_ratio": ratio, "gated": bool(gated), "causal": bool(causal)}
        return {"d_model": controls["d_model"].value, "seq_len": controls["seq_len"].value, **fixed}

    explorer = Explorer(controls, fig, recompute, title="Where the FLOPs go", site_mode="flops", site_state=site_state)
    return _started(explorer)


# --------------------------------------------------------------------------- MFU


@dataclass
class _MfuView:
    """The MFU explorer's figure: one horizontal bar against the 100 % line, its value beside it."""

    fig: Figure
    ax: object
    bar: object
    value_label: object

    def clear(self) -> None:
        """Draw no bar: the library refused these inputs."""
        self.bar.set_width(0.0)
        self.value_label.set_text("")

    def draw(self, value: float, implausible: bool, title: str) -> None:
        """The bar at ``value`` (cut at 150 %), red when the library refused it as impossible."""
        shown = min(value, 1.5)
        self.bar.set_width(shown)
        self.bar.set_color("#b00020" if implausible else "C2")
        self.value_label.set_color("white" if value > 1.2 else "black")
        self.value_label.set_position((min(shown, 1.2) + 0.02, 0.0))
        self.value_label.set_text(f"{value:.1%}")
        self.ax.set_title(title, fontsize=10)


def _mfu_view() -> _MfuView:
    fig, ax = _figure()
    fig.set_size_inches(_FIGSIZE[0], 1.8)
    fig.subplots_adjust(left=0.08, right=0.97, bottom=0.32, top=0.8)
    (bar,) = ax.barh([0], [0.4], height=0.6, color="C2")
    ax.axvline(1.0, color="black", lw=1.5)
    ax.text(1.0, 0.45, " 100 %: the dense peak", fontsize=8, va="center")
    value_label = ax.text(0.0, 0.0, "", va="center", fontsize=10)
    ax.set_xlim(0, 1.5)
    ax.set_ylim(-0.6, 0.7)
    ax.set_yticks([])
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("model FLOPs utilisation")
    return _MfuView(fig, ax, bar, value_label)


def _mfu_start(n0: float, g0: int, spec, precision: str, tokens_per_s: float | None) -> float:
    """The starting tokens/s: as given, or the rate at 40 % MFU brought inside the slider's span."""
    from ..workloads import training

    if tokens_per_s is None:
        lo, hi = _span(_TOKENS_LOG10)
        tokens_per_s = min(max(training.expected_tokens_per_s(n0, g0, spec, 0.4, precision=precision), lo), hi)
    rate = _positive(tokens_per_s, "tokens_per_s", "tokens per second")
    return _in_span(rate, _TOKENS_LOG10, "tokens_per_s", "tokens/s")


def _mfu_of(n: float, rate: float, cards: int, chip, precision: str) -> tuple[float, str | None]:
    """MFU, and the library's reason when it refuses the number as impossible (a ValueError for bad inputs)."""
    from ..workloads import training

    try:
        return training.mfu(n, rate, cards, chip, precision), None
    except ImplausibleMeasurement as exc:
        # MFU is proportional to tokens/s: the MFU of one token/s, scaled, shows how far over.
        return training.mfu(n, 1.0, cards, chip, precision) * rate, str(exc)


def _mfu_readout(value: float, n: float, rate: float, cards: int, chip, precision: str) -> str:
    peak = _fmt(_tflops(chip.peak_flops_per_s(precision)))
    return (
        f"MFU <b>{value:.1%}</b>: 6 x {n:.3g} params x {_fmt(rate)} tokens/s against "
        f"{cards} x {peak} TFLOP/s dense {precision}."
    )


def mfu_explorer(
    n_params: float = 7e9, tokens_per_s: float | None = None, n_gpus: int = 8, gpu="A100", precision: str = "bf16"
) -> Explorer:
    """Model size, global training tokens/s, GPU count and GPU -> MFU under the 6N convention.

    ``tokens_per_s=None`` starts at the rate that gives 40 % MFU. Above 100 % the library refuses
    the number; the readout shows its reason and the bar turns red.
    """
    from ..workloads import training

    n0 = _in_span(_positive(n_params, "n_params", "parameters"), _PARAMS_LOG10, "n_params", "parameters")
    g0 = _positive_int(n_gpus, "n_gpus", "GPUs")
    spec = as_gpu(gpu)
    r0 = _mfu_start(n0, g0, spec, precision, tokens_per_s)
    training.mfu(n0, r0, g0, spec, precision)  # checks every input, refuses an impossible start
    controls = {
        "gpu": _gpu_dropdown(spec),
        "n_params": _log_slider(n0, _PARAMS_LOG10, "params"),
        "tokens_per_s": _log_slider(r0, _TOKENS_LOG10, "tokens/s"),
        "n_gpus": _powers_of_two_slider(g0, range(0, 15), "GPUs"),
    }
    view = _mfu_view()

    def recompute() -> None:
        chip, n = as_gpu(controls["gpu"].value), controls["n_params"].value
        rate, cards = controls["tokens_per_s"].value, controls["n_gpus"].value
        try:
            value, message = _mfu_of(n, rate, cards, chip, precision)
        except ValueError as exc:  # e.g. a precision the chip lacks
            explorer.show_error(str(exc))
            view.clear()
            return
        title = f"{_billions(n)}B params, {_fmt(rate)} tokens/s on {cards} x {chip.name} ({precision})"
        view.draw(value, message is not None, title)
        explorer.result = value
        explorer.readout.value = _error(message) if message else _mfu_readout(value, n, rate, cards, chip, precision)

    def site_state() -> dict[str, object]:
        # convention: the numerator this explorer uses, training.mfu's 6 x N per token
        return {"gpu": controls["gpu"].value, "precision": precision} | _values(controls) | {"convention": "6N"}

    explorer = Explorer(controls, view.fig, recompute, title="MFU explorer", site_mode="mfu", site_state=site_state)
    return _started(explorer)


# --------------------------------------------------------------------------- communication


_COMMS_CHOICES = (  # (label, (collective, algorithm)) as comms.collective_cost takes them
    ("all-reduce (ring)", ("all_reduce", "ring")),
    ("all-reduce (tree)", ("all_reduce", "tree")),
    ("all-gather", ("all_gather", "ring")),
    ("reduce-scatter", ("reduce_scatter", "ring")),
    ("all-to-all", ("all_to_all", "ring")),
    ("point-to-point", ("point_to_point", "ring")),
)
_MESSAGE_LOG10 = (2.0, 11.0)  # 100 bytes to 100 GB


def _collective_controls(spec, choice: tuple[str, str], n0: int, s0: float) -> dict[str, w.Widget]:
    """Link, collective (with its algorithm), rank count and message size."""
    from ..core import interconnect

    return {
        "link": w.Dropdown(
            options=[(s.name, key) for key, s in interconnect.link_registry().items()],
            value=spec.key,
            description="link",
            layout=w.Layout(width="20em"),
        ),
        "collective": w.Dropdown(
            options=list(_COMMS_CHOICES), value=choice, description="collective", layout=w.Layout(width="18em")
        ),
        "n_ranks": _powers_of_two_slider(n0, range(1, 11), "ranks"),
        "message_bytes": _log_slider(s0, _MESSAGE_LOG10, "bytes"),
    }


@dataclass
class _CollectiveView:
    """The collective explorer's figure: bus bandwidth over ``sizes``, its two limits, the crossover and the message."""

    fig: Figure
    ax: object
    sizes: np.ndarray  # message sizes the curve is drawn at, bytes
    curve: object
    limits: object
    cross_line: object
    dot: object


def _collective_view(s0: float) -> _CollectiveView:
    lo, hi = _span(_MESSAGE_LOG10)
    fig, ax = _figure()
    sizes = np.geomspace(lo, hi, 200)
    (curve,) = ax.plot(sizes, sizes, lw=2, color="C0", label="alpha-beta model")
    (limits,) = ax.plot(sizes, sizes, ls="--", lw=1, color="0.5", label="latency and link limits")
    cross_line = ax.axvline(1.0, ls=":", color="C0", lw=1)
    (dot,) = ax.plot([s0], [1.0], "o", color="C3", ms=8, label="your message")
    _log_axes(ax, "message size (bytes)", "bus bandwidth (GB/s)", xlim=(lo, hi), x_ticks=None, y_ticks=None)
    ax.legend(fontsize=7, loc="lower right")
    return _CollectiveView(fig, ax, sizes, curve, limits, cross_line, dot)


def _draw_collective(view: _CollectiveView, name, algo, n, s, alpha, link_spec, cost, crossover) -> None:
    """The model's bus bandwidth at every size, its large-message (link) and small-message (latency) limits."""
    from ..workloads import comms

    sizes = view.sizes
    bus = np.array([comms.collective_cost(name, x, n, alpha, link_spec, algo).bus_bytes_per_s for x in sizes])
    factor = comms.bus_bandwidth_factor(name, n)
    per_byte = comms.collective_bytes_per_rank(name, 1.0, n, algo)
    flat = link_spec.bytes_per_s * factor / per_byte  # the large-message limit
    slope = factor / (cost.steps * alpha)  # the small-message limit: size * factor / latency
    view.curve.set_ydata(to_unit(bus, "GB/s"))
    view.limits.set_ydata(to_unit(np.minimum(flat, slope * sizes), "GB/s"))
    view.cross_line.set_xdata([crossover, crossover])
    view.dot.set_data([s], [to_unit(cost.bus_bytes_per_s, "GB/s")])
    # six decades below the link, or lower where latency holds small messages further down
    # (100 bytes on 512 ranks): the whole curve is drawn, never cut off at the axis
    view.ax.set_ylim(to_unit(min(flat / 1e6, bus.min() / 3), "GB/s"), to_unit(flat, "GB/s") * 3)
    view.ax.set_title(
        f"{algo} {name} on {n} ranks over {link_spec.name} "
        f"({_fmt(to_unit(link_spec.bytes_per_s, 'GB/s'))} GB/s one way), alpha {to_unit(alpha, 'us'):.3g} us",
        fontsize=9,
    )


def _collective_readout(s: float, cost, alpha: float, link_spec, crossover: float) -> str:
    """The sentence under the figure: latency and wire time, the bus bandwidth, and where latency stops dominating."""
    return (
        f"{_fmt(s)} bytes: {cost.steps:,} steps x {to_unit(alpha, 'us'):.3g} us = "
        f"{_seconds(cost.steps * alpha)} of latency, + {_fmt(cost.bytes_per_rank)} bytes on the wire: "
        f"<b>{_seconds(cost.seconds)}</b>; bus bandwidth <b>{_fmt(to_unit(cost.bus_bytes_per_s, 'GB/s'))} GB/s</b> "
        f"({cost.bus_bytes_per_s / link_spec.bytes_per_s:.0%} of the link), latency {cost.latency_share:.0%} "
        f"of the time. Latency stops dominating at {_fmt(crossover)} bytes."
    )


def collective_explorer(
    link="NVLink 4",
    n_ranks: int = 8,
    message_bytes: float = 1e8,
    alpha_seconds: float = 5e-6,
    collective: str = "all_reduce",
    algorithm: str = "ring",
) -> Explorer:
    """A link, a rank count, a message size and a collective -> time and bus bandwidth.

    The figure draws the alpha-beta model's bus bandwidth against message size (the NCCL tests'
    busbw), its two limits (latency for small messages, the link for large ones) and the chosen
    message on the curve. ``alpha_seconds`` is the per-step latency the model assumes.
    """
    from ..core import interconnect
    from ..workloads import comms

    spec = interconnect._as_link(link, "link")
    n0 = _positive_int(n_ranks, "n_ranks", "ranks")
    s0 = _in_span(_positive(message_bytes, "message_bytes", "bytes"), _MESSAGE_LOG10, "message_bytes", "bytes")
    alpha = _positive(alpha_seconds, "alpha_seconds", "seconds")
    start = comms.collective_cost(collective, s0, n0, alpha, spec, algorithm)  # checks the rest
    controls = _collective_controls(spec, (start.collective, start.algorithm), n0, s0)
    view = _collective_view(s0)

    def recompute() -> None:
        link_spec = interconnect.link(controls["link"].value)
        (name, algo), n, s = controls["collective"].value, controls["n_ranks"].value, controls["message_bytes"].value
        cost = comms.collective_cost(name, s, n, alpha, link_spec, algo)
        crossover = comms.latency_crossover_bytes(name, n, alpha, link_spec, algo)
        _draw_collective(view, name, algo, n, s, alpha, link_spec, cost, crossover)
        explorer.result = cost
        explorer.readout.value = _collective_readout(s, cost, alpha, link_spec, crossover)

    def site_state() -> dict[str, object]:
        name, algo = controls["collective"].value
        return {
            "link": controls["link"].value,
            "n_ranks": controls["n_ranks"].value,
            "message_bytes": controls["message_bytes"].value,
            "alpha_seconds": alpha,
            "collective": name,
            "algorithm": algo,
        }

    explorer = Explorer(
        controls, view.fig, recompute, title="Collective cost explorer", site_mode="comms", site_state=site_state
    )
    return _started(explorer)


# --------------------------------------------------------------------------- serving

_SLO_LOG10 = (-3.0, 1.0)  # SLO sliders: 1 ms to 10 s
_TPOT_MARGIN_LOG10 = 0.03  # the TPOT slider reaches 7 % past the TPOTs between which the best point moves
_POLICY_LABELS = {
    "static": "static batching",
    "continuous": "continuous batching",
    "chunked": "continuous + chunked prefill",
    "disaggregated": "disaggregated prefill/decode",
}


def _ms(seconds: float) -> float:
    """Seconds in milliseconds, the unit of the serving figure's x axis and its readout."""
    return to_unit(seconds, "ms")


def _serving_precision(spec) -> str:
    """The 2-byte precision a chip serves in: bf16, else fp16 (a V100 has no bf16)."""
    return "bf16" if spec.has("bf16") else "fp16"


@dataclass(frozen=True)
class _Request:
    """The serving explorer's fixed request shape: prompt and output tokens, and the prefill chunk."""

    prompt_len: int
    output_len: int
    chunk_tokens: int

    def __str__(self) -> str:
        return f"{self.prompt_len} prompt + {self.output_len} output tokens"


def _serving_request(policy, prompt_len, output_len, chunk_tokens) -> _Request:
    """The fixed inputs, checked: a known policy and three positive token counts."""
    from ..workloads import serving

    if not isinstance(policy, str) or policy not in serving.POLICIES:
        raise ValueError(f"policy must be one of {', '.join(serving.POLICIES)}, got {policy!r}")
    return _Request(
        _positive_int(prompt_len, "prompt_len", "tokens"),
        _positive_int(output_len, "output_len", "tokens"),
        _positive_int(chunk_tokens, "chunk_tokens", "tokens"),
    )


@functools.lru_cache(maxsize=32)
def _frontiers(server, request: _Request):
    """The paged KV cache's capacity for ``request`` and every policy's steady frontier (batch 1, 2, 3, ...).

    When not one request fits (:attr:`KVCapacity.feasible` is False), the frontiers are empty.
    Kept per (server, request), both frozen (callers only read what it returns): the serving explorers
    on a page, and each one's GPU menu, ask for the same few, each a steady state per policy and batch.
    """
    from ..workloads import serving

    p0, o0 = request.prompt_len, request.output_len
    capacity = serving.kv_capacity(server, p0, o0)
    curves = {
        k: serving.steady_frontier(server, k, p0, o0, chunk_tokens=request.chunk_tokens) for k in serving.POLICIES
    }
    return capacity, curves


def _tpot_span(points, ttft_s: float) -> tuple[float, float]:
    """log10 of the TPOT objective slider's ends, in seconds, for one policy's frontier and TTFT objective.

    Of the sustainable points within the TTFT objective: 7 % below the fastest TPOT
    (there no batch meets the objective) to 7 % above the TPOT of the point with the most
    tokens/s (from there on the best point is that one, however loose the objective). In between,
    a move of the slider moves the best point. On the slider's 0.01 grid, inside 1 ms to 10 s; the
    whole of that when no point qualifies. The website's ``tpotSpan`` is the same rule (a test holds
    the two together).
    """
    ok = [p for p in points if p.sustainable and p.feasible and p.ttft_s <= ttft_s]
    if not ok:
        return _SLO_LOG10
    top = max(ok, key=lambda p: p.tokens_per_s)  # the first on a tie, as best_steady_state takes it
    lo = math.floor((math.log10(min(p.tpot_s for p in ok)) - _TPOT_MARGIN_LOG10) * 100) / 100
    hi = math.ceil((math.log10(top.tpot_s) + _TPOT_MARGIN_LOG10) * 100) / 100
    return max(lo, _SLO_LOG10[0]), min(hi, _SLO_LOG10[1])


def _fit_tpot_slider(slider: w.FloatLogSlider, span: tuple[float, float]) -> None:
    """Give the TPOT slider ``span``; an objective outside it moves to the nearer end, where the slider shows it."""
    with slider.hold_trait_notifications():
        slider.max = max(span[1], slider.min)  # never below the old min for a moment: min <= max throughout
        slider.min = span[0]
        slider.max = span[1]
        lo, hi = _span(span)
        slider.value = min(max(slider.value, lo), hi)


def _serving_controls(spec, policy: str, tpot0: float, ttft0: float, tpot_span) -> dict[str, w.Widget]:
    return {
        "gpu": _gpu_dropdown(spec),
        "policy": w.Dropdown(
            options=[(label, key) for key, label in _POLICY_LABELS.items()],
            value=policy,
            description="policy",
            layout=w.Layout(width="22em"),
        ),
        "slo_tpot_s": _log_slider(tpot0, tpot_span, "TPOT SLO (s)"),
        "slo_ttft_s": _log_slider(ttft0, _SLO_LOG10, "TTFT SLO (s)"),
    }


@dataclass
class _ServingView:
    """The serving explorer's figure: one frontier per policy, the TPOT objective, and the operating point."""

    fig: Figure
    ax: object
    lines: dict  # policy -> its frontier's line
    slo_line: object
    dot: object

    def fail(self, title: str = "", *, frontiers: bool = True) -> None:
        """No operating point to mark (and no frontiers, with ``frontiers=False``); ``title`` (if any) says why."""
        if not frontiers:
            for line in self.lines.values():
                line.set_data([], [])
        self.dot.set_data([], [])
        if title:
            self.ax.set_title(title, fontsize=9)

    def draw_frontiers(self, curves: dict, chosen: str, tpot: float, title: str) -> None:
        """Every policy's sustainable points that fit, ``chosen`` bold, the axes fitted to them and to the objective."""
        everything = []
        for key, points in curves.items():
            ok = [p for p in points if p.sustainable and p.feasible]
            self.lines[key].set_data([_ms(p.tpot_s) for p in ok], [p.tokens_per_s for p in ok])
            self.lines[key].set_linewidth(2.5 if key == chosen else 0.8)
            self.lines[key].set_alpha(1.0 if key == chosen else 0.5)
            everything += ok
        xs = [_ms(p.tpot_s) for p in everything] + [_ms(tpot)]
        ys = [p.tokens_per_s for p in everything] or [1.0, 10.0]
        self.ax.set_xlim(min(xs) / 1.5, max(xs) * 1.5)
        self.ax.set_ylim(min(ys) / 2, max(ys) * 2)
        self.ax.set_title(title, fontsize=9)


def _serving_view(tpot0: float) -> _ServingView:
    from ..workloads import serving

    fig, ax = _figure()
    lines = {}
    for i, key in enumerate(serving.POLICIES):
        (lines[key],) = ax.plot([1.0], [1.0], "-o", ms=3, lw=1, color=f"C{i}", label=_POLICY_LABELS[key])
    slo_line = ax.axvline(_ms(tpot0), ls="--", color="0.4", lw=1, label="TPOT objective")
    (dot,) = ax.plot([1.0], [1.0], "o", color="C3", ms=10, mfc="none", mew=2, label="best under the SLO")
    _log_axes(ax, "TPOT (ms per output token)", "output tokens/s per GPU", x_ticks=None, y_ticks=lambda v, _p: _fmt(v))
    ax.legend(fontsize=7, loc="lower right")
    return _ServingView(fig, ax, lines, slo_line, dot)


def _serving_readout(label: str, best, limit: int) -> str:
    """The sentence under the serving figure: the operating point and what bounds it."""
    return (
        f"{label}: best under the SLO at <b>batch {best.batch}</b>, "
        f"<b>{_fmt(best.tokens_per_s)} output tokens/s per GPU</b>, TPOT {_ms(best.tpot_s):.3g} ms, "
        f"TTFT {_ms(best.ttft_s):.3g} ms; decode is {best.decode_bound}-bound there. "
        f"The paged KV cache holds {limit:,} such requests at most."
    )


def _serving_site_state(controls: dict, cfg, request: _Request, counts) -> dict[str, object]:
    """The controls, the request, and the step counts the page's serving explorer computes from."""
    return {
        "gpu": controls["gpu"].value,
        "policy": controls["policy"].value,
        "slo_ttft_s": controls["slo_ttft_s"].value,
        "slo_tpot_s": controls["slo_tpot_s"].value,
        "model_name": cfg.name,
        "prompt_len": request.prompt_len,
        "output_len": request.output_len,
        "chunk_tokens": request.chunk_tokens,
        "body_flops": counts.body_flops_per_token,
        "key_flops": counts.score_flops_per_key,
        "unembed_flops": counts.unembed_flops_per_row,
        "weight_bytes_fixed": counts.weight_bytes_fixed,
        "weight_bytes_per_token": counts.weight_bytes_per_token,
        "kv_bytes_per_token": counts.kv_bytes_per_token,
        "stored_weight_bytes": counts.stored_weight_bytes,
        "activation_bytes_per_token": counts.activation_bytes_per_token,
        "activation_bytes_per_row": counts.activation_bytes_per_row,
        "max_context_tokens": counts.max_context_tokens,
    }


_DEFAULT_TPOT_S = 0.01  # the serving explorer's TPOT objective when none is given, in seconds


def serving_explorer(
    model: str = "llama-3-8b",
    gpu="H100",
    policy: str = "chunked",
    prompt_len: int = 1024,
    output_len: int = 256,
    chunk_tokens: int = 2048,
    slo_ttft_s: float = 0.5,
    slo_tpot_s: float | None = None,
) -> Explorer:
    """A GPU, a batching policy and an SLO -> the latency-throughput frontier and the best point on it.

    Each curve is :func:`~roofline_lib.workloads.serving.steady_frontier` for one policy: every batch 1, 2,
    3, ... up to what the paged KV cache allows, TPOT against output tokens/s per GPU (sustainable
    points only). The chosen policy is drawn bold, the TPOT objective as a dashed line, and the
    operating point (:func:`~roofline_lib.workloads.serving.best_steady_state`) as a ring. ``model`` is a
    dense shipped model without a sliding window (the website explorer computes from its
    :func:`~roofline_lib.workloads.serving.step_counts`), in bf16 weights and KV cache (fp16 on a chip
    without bf16); ``result`` is the best :class:`~roofline_lib.workloads.serving.SteadyState`.
    The TPOT slider spans what the policy's frontier reaches; ``slo_tpot_s`` left out is 10 ms, or
    the slider's nearer end where 10 ms lies outside it (a value given outside it is refused).
    """
    from ..models import transformer
    from ..workloads import serving

    cfg = transformer.model_config(model)
    spec = as_gpu(gpu)
    request = _serving_request(policy, prompt_len, output_len, chunk_tokens)
    ttft0 = _in_span(_positive(slo_ttft_s, "slo_ttft_s", "seconds"), _SLO_LOG10, "slo_ttft_s", "seconds")
    counts = serving.step_counts(serving.serving_server(cfg, spec, precision=_serving_precision(spec)))  # dense only
    known: dict[str, tuple] = {}  # chip key -> (capacity, frontiers): a GPU's frontiers are drawn once

    def frontiers(key):
        if key not in known:
            chip = as_gpu(key)
            known[key] = _frontiers(serving.serving_server(cfg, chip, precision=_serving_precision(chip)), request)
        return known[key]

    # the TPOT slider spans what the chosen policy's frontier reaches on the chosen GPU (_tpot_span)
    span0 = _tpot_span(frontiers(spec.key)[1][policy], ttft0)
    if slo_tpot_s is None:  # Qwen2-7B on an H100, say: its frontier ends below 10 ms, past its slider
        lo, hi = _span(span0)
        tpot0 = min(max(_DEFAULT_TPOT_S, lo), hi)
    else:
        tpot0 = _in_span(_positive(slo_tpot_s, "slo_tpot_s", "seconds"), span0, "slo_tpot_s", "seconds")
    controls = _serving_controls(spec, policy, tpot0, ttft0, span0)
    view = _serving_view(tpot0)

    def fit_tpot(_new) -> None:  # a hook: the GPU, the policy or the TTFT objective changed the frontier's span
        curves = frontiers(as_gpu(controls["gpu"].value).key)[1]
        span = _tpot_span(curves[controls["policy"].value], controls["slo_ttft_s"].value)
        _fit_tpot_slider(controls["slo_tpot_s"], span)

    def recompute() -> None:
        chip, chosen = as_gpu(controls["gpu"].value), controls["policy"].value
        ttft, tpot = controls["slo_ttft_s"].value, controls["slo_tpot_s"].value
        view.slo_line.set_xdata([_ms(tpot), _ms(tpot)])
        capacity, curves = frontiers(chip.key)
        if not capacity.feasible:  # not one request fits beside the weights on this chip: say so first
            explorer.show_error(capacity.fit.headline)
            view.fail(f"{cfg.name} on {chip.name}: DOES NOT FIT", frontiers=False)
            return
        limit = capacity.max_requests
        view.draw_frontiers(curves, chosen, tpot, f"{cfg.name} on {chip.name}, {request}: frontier over batch size")
        try:
            best = serving.best_steady_state(curves[chosen], ttft, tpot)
        except ValueError as exc:
            explorer.show_error(f"{_POLICY_LABELS[chosen]}: {exc}")
            view.fail()
            return
        view.dot.set_data([_ms(best.tpot_s)], [best.tokens_per_s])
        explorer.result = best
        explorer.readout.value = _serving_readout(_POLICY_LABELS[chosen], best, limit)

    site_state = functools.partial(_serving_site_state, controls, cfg, request, counts)
    explorer = Explorer(
        controls,
        view.fig,
        recompute,
        title="Serving frontier explorer",
        hooks={"gpu": fit_tpot, "policy": fit_tpot, "slo_ttft_s": fit_tpot},
        site_mode="serving",
        site_state=site_state,
    )
    return _started(explorer)
