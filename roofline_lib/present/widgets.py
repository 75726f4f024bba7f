"""ipywidgets explorers: move a slider, watch the roofline answer.

Each function returns an :class:`Explorer`, which *is* an ipywidgets container (a VBox: the
controls, a one-line readout, and an Output widget holding the figure), so a notebook cell that
ends with ``roofline_explorer()`` shows it. For tests and for the curious it also exposes:

* ``.update()`` - recompute and redraw from the controls' current values; returns the seconds
  the redraw took (each is meant to stay under 0.1 s);
* ``.controls`` - the control widgets by name, e.g. ``ex.controls["intensity"].value = 50``;
* ``.readout`` - an HTML widget whose ``.value`` is the sentence the numbers make;
* ``.figure`` - the persistent matplotlib Figure (updated in place, never re-created);
* ``.result`` - the numbers behind the readout: a dict (roofline), the library's record
  (decode, FLOP shares) or the MFU fraction; ``None`` while the readout shows an error;
* ``.site_attributes`` / ``.site_html()`` - the ``data-*`` attributes, and the
  ``<div class="roofline-explorer" ...>`` element, that start the website's kernel-free explorer
  (``book/_static/roofline-explorer.js``) where this one stands now. The still picture a static
  page shows (``_repr_mimebundle_``'s ``text/html``) carries that element, so a chapter never
  types those numbers itself.

Every number comes from the library (``roofline``, ``inference``, ``training``,
``transformer``); the explorers only arrange it. Without an IPython kernel the figure is still
rendered (so redraw time is honest) but not displayed.
"""

from __future__ import annotations

import base64
import functools
import html
import io
import re
import time
from typing import Callable

import ipywidgets as w
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, PercentFormatter

from ..core.checks import _positive, _positive_int
from ..core.formatting import num as _fmt
from ..core.formatting import seconds as _seconds
from ..core.formatting import sig3 as _sig3
from ..core.hardware import as_gpu, registry
from ..core.roofline import ImplausibleMeasurement, attainable_flops_per_s, ridge_point, roof

__all__ = [
    "Explorer",
    "roofline_explorer",
    "decode_explorer",
    "flop_share_explorer",
    "mfu_explorer",
    "collective_explorer",
    "serving_explorer",
]

_TERA = 1e12  # FLOP/s -> TFLOP/s at the edge
_FIGSIZE = (6.4, 3.6)  # inches
_DPI = 80  # small enough to redraw and encode in well under 0.1 s
_INTENSITY_LOG10 = (-2.0, 4.0)  # slider span: 0.01 to 10,000 FLOP/byte
_TOKENS_LOG10 = (1.0, 9.0)  # training tokens/s, all cards together: 10 to 1e9
_PARAMS_LOG10 = (7.0, 12.5)  # model size in the MFU explorer: 10 million to 3.2 trillion parameters


class Explorer(w.VBox):
    """A VBox of controls, readout and figure, with the hooks tests and readers use."""

    def __init__(
        self,
        controls: dict[str, w.Widget],
        figure: Figure,
        recompute: Callable[[], None],
        *,
        title: str,
        hooks: dict[str, Callable[[object], None]] | None = None,
        site_mode: str | None = None,
        site_state: Callable[[], dict[str, object]] | None = None,
    ):
        if (site_mode is None) != (site_state is None):
            raise ValueError("site_mode and site_state go together: give both (a website explorer) or neither")
        self.controls = controls
        self.figure = figure
        self.readout = w.HTML(layout=w.Layout(min_height="2.6em"))
        self.output = w.Output()
        self.result = None
        self.last_png: bytes = b""
        self._title = title
        self._recompute = recompute
        self._hooks = dict(hooks or {})  # name -> run before the redraw when that control changes
        self._quiet = False  # set while a hook rewrites another control, so the redraw happens once
        self._sliders_named = False  # whether this explorer has sent _NAME_SLIDERS_JS to the page
        self._site_mode = site_mode  # the JS explorer's data-mode
        self._site_state = site_state  # -> its other data-* values, read from the current controls
        super().__init__(
            [
                w.HTML(f"<b>{html.escape(title)}</b>"),
                w.HBox(list(controls.values()), layout=w.Layout(flex_flow="row wrap")),
                self.readout,
                self.output,
            ]
        )
        for name, control in controls.items():
            control.observe(functools.partial(self._on_change, name), names="value")

    @property
    def widget(self) -> "Explorer":
        """The container itself (kept so ``ex.widget`` reads naturally in a notebook)."""
        return self

    @property
    def alt_text(self) -> str:
        """The figure and readout in words: the title and the readout's sentence, as plain text."""
        sentence = html.unescape(re.sub(r"<[^>]+>", "", self.readout.value))
        return f"{self._title}: {self.figure.axes[0].get_title()}. {sentence}".strip()

    @property
    def site_attributes(self) -> dict[str, str]:
        """The website explorer's attributes for the controls' current values, as strings.

        Keys are the attribute names (``data-mode``, ``data-gpu``, ...); values are what the
        JavaScript reads: numbers in a form ``Number()`` parses back to the same value, booleans as
        ``true``/``false``. Empty for an explorer with no website counterpart.
        """
        if self._site_mode is None:
            return {}
        attrs = {"data-mode": self._site_mode}
        for name, value in self._site_state().items():
            attrs["data-" + name.replace("_", "-")] = _attribute(value, name)
        return attrs

    def site_html(self) -> str:
        """The ``<div class="roofline-explorer" ...>`` that starts the website explorer here ("" if none)."""
        attrs = self.site_attributes
        if not attrs:
            return ""
        pairs = "".join(f' {name}="{html.escape(value, quote=True)}"' for name, value in attrs.items())
        return f'<div class="roofline-explorer"{pairs}></div>'

    def _repr_mimebundle_(self, **kwargs):
        """The live widget for JupyterLab, plus a still picture of it for a page with no kernel.

        JupyterLab draws the widget view. A static page (myst-nb is told to skip widget views)
        shows the ``text/html``: the figure as it was when the page was built, with alt text and
        one line saying where the controls are live, followed by the element from which the
        page's script builds the kernel-free explorer, starting from the same control values.
        """
        data = super()._repr_mimebundle_(**kwargs)
        if data is not None and self.last_png:
            png = base64.b64encode(self.last_png).decode("ascii")
            data["text/html"] = (
                '<figure class="roofline-snapshot">'
                f'<img src="data:image/png;base64,{png}" alt="{html.escape(self.alt_text)}">'
                "<figcaption>A snapshot taken when this page was built. Its controls are live in the "
                "notebook (<code>make lab</code>); on this page, the kernel-free explorer is.</figcaption>"
                "</figure>" + self.site_html()
            )
        return data

    def _on_change(self, name: str, change) -> None:
        if self._quiet:
            return
        hook = self._hooks.get(name)
        if hook is not None:
            self._quiet = True
            try:
                hook(change["new"])
            finally:
                self._quiet = False
        self.update()

    def update(self) -> float:
        """Recompute from the controls, redraw the figure; return the seconds it took."""
        start = time.perf_counter()
        self._recompute()
        self._show()
        return time.perf_counter() - start

    def _show(self) -> None:
        buffer = io.BytesIO()
        # Fast zlib level: the image lives for one redraw, and level 6 costs ~10 ms of the 0.1 s budget.
        self.figure.canvas.print_png(buffer, pil_kwargs={"compress_level": 1})
        self.last_png = buffer.getvalue()
        try:
            from IPython import get_ipython
            from IPython.display import HTML, Javascript, clear_output, display
        except ImportError:  # pragma: no cover - IPython comes with ipywidgets
            return
        if get_ipython() is None:
            return  # no kernel: rendered for timing, nothing to show it in
        png = base64.b64encode(self.last_png).decode("ascii")
        with self.output:
            clear_output(wait=True)
            # an <img> with alt text: JupyterLab draws an image/png output with none
            display(HTML(f'<img src="data:image/png;base64,{png}" alt="{html.escape(self.alt_text)}">'))
            if not self._sliders_named:
                display(Javascript(_NAME_SLIDERS_JS))
                self._sliders_named = True


# ipywidgets draws a slider's handle as role="slider" with no accessible name (its description
# is a <label> beside it, which names nothing), so a screen reader announces "slider" alone and
# axe-core flags it. This script, sent once per explorer to JupyterLab (the website's snapshot
# never carries widget output), gives every unnamed handle on the page its widget's description,
# now and as new sliders are drawn.
_NAME_SLIDERS_JS = """
(() => {
  const name = () => document.querySelectorAll('.widget-slider [role="slider"]:not([aria-label])').forEach(handle => {
    const label = handle.closest('.widget-slider').querySelector('.widget-label');
    handle.setAttribute('aria-label', (label && label.textContent.trim()) || 'value');
  });
  name();
  if (!window.__rooflineSliderNames) {
    window.__rooflineSliderNames = new MutationObserver(name);
    window.__rooflineSliderNames.observe(document.body, {childList: true, subtree: true});
  }
})();
"""


def _figure() -> tuple[Figure, object]:
    fig = Figure(figsize=_FIGSIZE, dpi=_DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    # fixed margins, so no layout pass per redraw: room on the left for a "100,000" tick and the
    # y label beside it (at 0.13 the label was cut off), and on the right for the last tick label
    fig.subplots_adjust(left=0.17, right=0.94, bottom=0.15, top=0.9)
    return fig, ax


def _gpu_dropdown(spec) -> w.Dropdown:
    return w.Dropdown(
        options=[(s.name, key) for key, s in registry().items()],
        value=spec.key,
        description="GPU",
        layout=w.Layout(width="16em"),
    )


def _span(log10_range: tuple[float, float]) -> tuple[float, float]:
    """The values at the two ends of a log slider over ``10**log10_range``."""
    return 10 ** log10_range[0], 10 ** log10_range[1]


def _in_span(value: float, log10_range: tuple[float, float], name: str, unit: str) -> float:
    """``value`` if a log slider over ``10**log10_range`` can show it; a ValueError naming it if not.

    (A slider would silently clamp it, and every number read from the slider would be for another input.)
    """
    lo, hi = _span(log10_range)
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo:g} and {hi:g} {unit}, got {value!r}")
    return value


def _log_slider(value: float, log10_range: tuple[float, float], description: str) -> w.FloatLogSlider:
    """A base-10 log slider over ``10**log10_range``, read out to three figures, updated on release."""
    return w.FloatLogSlider(
        value=value,
        base=10,
        min=log10_range[0],
        max=log10_range[1],
        step=0.01,
        description=description,
        readout_format=".3g",
        continuous_update=False,
    )


def _powers_of_two_slider(initial: int, exponents: range, description: str) -> w.SelectionSlider:
    """A slider whose notches are ``2**k`` for ``k`` in ``exponents``, plus the starting value."""
    options = tuple(sorted({2**k for k in exponents} | {initial}))
    return w.SelectionSlider(options=options, value=initial, description=description, continuous_update=False)


def _plain(value, _pos=None) -> str:
    return f"{value:g}"


def _error(message: str) -> str:
    return f"<span style='color:#b00020'>{html.escape(message)}</span>"


_EXACT_INT = 2**53  # below this a whole float converts to int and back without loss (and so does JS)


def _attribute(value, name: str) -> str:
    """One website-explorer attribute value as the JavaScript reads it.

    ``True`` -> ``"true"``; a whole number -> its digits (``6738415616.0`` -> ``"6738415616"``);
    any other float -> Python's shortest round-trip form (``5e-06``, ``2.6875``), which JavaScript's
    ``Number()`` reads back to the same double; a string as it is (escaped when written out).
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if not np.isfinite(x):
            raise ValueError(f"{name} must be a finite number for the website explorer, got {value!r}")
        return str(int(x)) if x.is_integer() and abs(x) < _EXACT_INT else repr(x)
    raise TypeError(f"{name} must be a number, a string or a bool for the website explorer, got {value!r}")


def _log_axes(ax, xlabel: str, ylabel: str, *, xlim=None, x_base: int = 10, x_ticks=_plain, y_ticks=_plain) -> None:
    """The log-log axes the explorers share: scales, optional x range, tick labels, axis labels, grid.

    ``x_ticks``/``y_ticks`` format the tick labels (``None`` keeps matplotlib's powers of ten).
    """
    ax.set_xscale("log", base=x_base)
    ax.set_yscale("log")
    if xlim is not None:
        ax.set_xlim(*xlim)
    for axis, ticks, base in ((ax.xaxis, x_ticks, x_base), (ax.yaxis, y_ticks, 10)):
        if ticks is not None:
            axis.set_major_formatter(FuncFormatter(ticks))
        if base == 10:
            # Minor ticks at 2 and 5 only: eight per decade cost ~40 % of a redraw, over the budget.
            axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)


# --------------------------------------------------------------------------- roofline


def roofline_explorer(gpu="A100", precision: str = "bf16", intensity: float = 10.0) -> Explorer:
    """A GPU, a precision and an arithmetic intensity -> the attainable TFLOP/s and the bound.

    The precision list follows the chosen GPU (an A100 offers no fp8). The figure shows the
    roof, the dotted ridge, and the kernel's point on the roof.
    """
    spec = as_gpu(gpu)
    spec.peak_flops_per_s(precision)  # refuses a precision the chip lacks, naming what it has
    x0 = _in_span(_positive(intensity, "intensity", "FLOP/byte"), _INTENSITY_LOG10, "intensity", "FLOP/byte")
    lo, hi = _span(_INTENSITY_LOG10)

    controls = {
        "gpu": _gpu_dropdown(spec),
        "precision": w.Dropdown(
            options=list(spec.precisions),
            value=precision.strip().lower(),
            description="precision",
            layout=w.Layout(width="12em"),
        ),
        "intensity": _log_slider(x0, _INTENSITY_LOG10, "FLOP/byte"),
    }
    fig, ax = _figure()
    xs = np.geomspace(lo, hi, 200)
    (roof_line,) = ax.plot(xs, xs, lw=2, color="C0", label="roof")
    ridge_line = ax.axvline(1.0, ls=":", color="C0", lw=1)
    ridge_label = ax.text(1.0, 1.0, "", fontsize=8, color="C0")
    (kernel_dot,) = ax.plot([x0], [1.0], "o", color="C3", ms=8, label="your kernel")
    _log_axes(ax, "arithmetic intensity (FLOP/byte)", "attainable TFLOP/s", xlim=(lo, hi))

    def recompute() -> None:
        chip = as_gpu(controls["gpu"].value)
        prec = controls["precision"].value
        x = controls["intensity"].value
        peak = chip.peak_flops_per_s(prec)
        ridge = ridge_point(chip, prec)
        attainable = attainable_flops_per_s(x, chip, prec)
        bound = roof(chip, prec).bound(x)  # the one verdict at the ridge
        roof_line.set_ydata(attainable_flops_per_s(xs, chip, prec) / _TERA)
        ridge_line.set_xdata([ridge, ridge])
        ridge_label.set_position((ridge * 1.1, peak / _TERA * 0.35))
        ridge_label.set_text(f"ridge {_fmt(ridge)}")
        kernel_dot.set_data([x], [attainable / _TERA])
        ax.set_ylim(chip.hbm_bytes_per_s * lo / _TERA / 2, peak / _TERA * 3)
        ax.set_title(
            f"{chip.name}, {prec}: {_fmt(peak / _TERA)} TFLOP/s, {_fmt(chip.hbm_bytes_per_s / _TERA)} TB/s", fontsize=10
        )
        explorer.result = {
            "attainable_flops_per_s": attainable,
            "ridge": ridge,
            "bound": bound,
            "peak_flops_per_s": peak,
        }
        explorer.readout.value = (
            f"At {_fmt(x)} FLOP/byte the {html.escape(chip.name)} ({prec}) attains at most "
            f"<b>{_fmt(attainable / _TERA)} TFLOP/s</b> ({attainable / peak:.0%} of its peak): "
            f"<b>{bound}-bound</b>, the ridge is at {_fmt(ridge)} FLOP/byte."
        )

    def on_gpu(key) -> None:
        """Offer only the new chip's precisions; keep the current one when it has it."""
        chip = as_gpu(key)
        current = controls["precision"].value
        controls["precision"].options = list(chip.precisions)
        controls["precision"].value = (
            current if chip.has(current) else ("bf16" if chip.has("bf16") else chip.precisions[0])
        )

    def site_state() -> dict[str, object]:
        return {
            "gpu": controls["gpu"].value,
            "precision": controls["precision"].value,
            "intensity": controls["intensity"].value,
        }

    explorer = Explorer(
        controls,
        fig,
        recompute,
        title="Roofline explorer",
        hooks={"gpu": on_gpu},
        site_mode="intensity",
        site_state=site_state,
    )
    explorer.update()
    return explorer


# --------------------------------------------------------------------------- decode


_BARE_COUNT = ""  # the decode explorer's model menu entry for a bare parameter count
_BATCH_LOG2_MAX = 12  # decode batch sliders end at 2**12 = 4096 sequences, in Lab and on the site
_WHOLE_LABEL = {"description_width": "initial"}  # a description shown whole, not cut to a fixed width


def _decode_controls(n, spec, bytes_per_param, batch, tokens, model) -> dict:
    """The decode explorer's controls: model menu, GPU, weight width, batch and tokens."""
    from ..models import transformer

    # "" (not None) stands for the bare parameter count: a Dropdown whose value is None shows
    # nothing selected, so JupyterLab drew the menu blank
    model_options = [(f"{n / 1e9:.3g}B parameters", _BARE_COUNT)] + [
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
    Steps: check the start, build the controls (:func:`_decode_controls`) and the batch grid
    (:func:`_decode_batches`), then on every change price each batch and write the readout
    (:func:`_decode_readout`).
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
    batches = _decode_batches(controls["batch"])
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

    def recompute() -> None:
        chip = as_gpu(controls["gpu"].value)
        bpp = controls["bytes_per_param"].value
        bsz = controls["batch"].value
        name = controls["model"].value or None
        subject = n if name is None else transformer.model_config(name)
        label = f"{n / 1e9:.3g}B params" if name is None else subject.name
        try:
            rows = [inference.decode_roofline(subject, chip, bytes_per_param=bpp, batch=int(b)) for b in batches]
        except ValueError as exc:  # e.g. 1 B/param asks for fp8 math on a chip without it
            explorer.result = None
            explorer.readout.value = _error(str(exc))
            curve.set_ydata(np.full_like(batches, np.nan))
            dot.set_data([], [])
            return
        row = rows[list(batches).index(bsz)]
        rates = np.array([r.tokens_per_s for r in rows])
        curve.set_ydata(rates)
        dot.set_data([bsz], [row.tokens_per_s])
        ax.set_ylim(rates.min() / 2, rates.max() * 2)
        ax.set_title(f"{chip.name}: {label} at {bpp:g} B/param", fontsize=10)
        explorer.result = row
        explorer.readout.value = _decode_readout(row, bsz, controls["tokens"].value)

    def site_state() -> dict[str, object]:
        """The page's decode explorer reads weights in its precision's width: name that precision."""
        name = controls["model"].value or None
        state = {
            "gpu": controls["gpu"].value,
            "precision": inference.precision_for_bytes(controls["bytes_per_param"].value),
        }
        state.update({"n_params": n} if name is None else {"model": name})
        state["batch"] = controls["batch"].value
        return state

    explorer = Explorer(
        controls, fig, recompute, title="Decode ceiling explorer", site_mode="decode", site_state=site_state
    )
    explorer.update()
    return explorer


# --------------------------------------------------------------------------- FLOP shares


_SHARE_KEYS = ("ffn_total", "qkvo_total", "scores_total", "unembed")
_SHARE_LABELS = ("FFN", "QKVO", "scores", "unembed")


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
    from ..models import transformer

    d0 = _positive_int(d_model, "d_model", "features")
    s0 = _positive_int(seq_len, "seq_len", "tokens")
    ratio = _positive(ffn_ratio, "ffn_ratio", "d_ff per d_model")
    layers = _positive_int(n_layers, "n_layers", "layers")
    v = _positive_int(vocab, "vocab", "tokens in the vocabulary")

    def counts(d: int, s: int):
        return transformer.transformer_flops_per_token(
            d, max(1, round(ratio * d)), layers, s, v, gated=gated, causal=causal
        )

    counts(d0, s0)  # checks gated and causal before any widget exists
    controls = {
        "seq_len": _powers_of_two_slider(s0, range(7, 18), "seq_len"),
        "d_model": _powers_of_two_slider(d0, range(8, 15), "d_model"),
    }
    fig, ax = _figure()
    bars = ax.bar(_SHARE_LABELS, [0.25] * 4, color=["C0", "C1", "C2", "C4"])
    labels = [ax.text(i, 0.0, "", ha="center", va="bottom", fontsize=9) for i in range(4)]
    ax.set_ylim(0, 1.08)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel("share of forward FLOPs per token")
    ax.grid(True, axis="y", alpha=0.3)

    def recompute() -> None:
        d = controls["d_model"].value
        s = controls["seq_len"].value
        f = counts(d, s)
        shares = [f.share(k) for k in _SHARE_KEYS]
        for bar, label, share in zip(bars, labels, shares):
            bar.set_height(share)
            label.set_y(share + 0.01)
            label.set_text(f"{share:.1%}")
        ax.set_title(f"d_model {d}, seq_len {s}, {layers} layers, vocab {v}", fontsize=10)
        largest = _SHARE_LABELS[int(np.argmax(shares))]
        explorer.result = f
        explorer.readout.value = (
            f"{_fmt(f.fwd_per_token / 1e9)} GFLOP per token forward; "
            + ", ".join(f"{name} {share:.1%}" for name, share in zip(_SHARE_LABELS, shares))
            + f". The largest share is <b>{largest}</b>."
        )

    def site_state() -> dict[str, object]:
        return {
            "d_model": controls["d_model"].value,
            "seq_len": controls["seq_len"].value,
            "n_layers": layers,
            "vocab": v,
            "ffn_ratio": ratio,
            "gated": bool(gated),
            "causal": bool(causal),
        }

    explorer = Explorer(controls, fig, recompute, title="Where the FLOPs go", site_mode="flops", site_state=site_state)
    explorer.update()
    return explorer


# --------------------------------------------------------------------------- MFU


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
    if tokens_per_s is None:  # the rate at 40 % MFU, brought inside the slider's span
        lo, hi = _span(_TOKENS_LOG10)
        tokens_per_s = min(max(training.expected_tokens_per_s(n0, g0, spec, 0.4, precision=precision), lo), hi)
    r0 = _in_span(
        _positive(tokens_per_s, "tokens_per_s", "tokens per second"), _TOKENS_LOG10, "tokens_per_s", "tokens/s"
    )
    training.mfu(n0, r0, g0, spec, precision)  # checks every input, refuses an impossible start

    controls = {
        "gpu": _gpu_dropdown(spec),
        "n_params": _log_slider(n0, _PARAMS_LOG10, "params"),
        "tokens_per_s": _log_slider(r0, _TOKENS_LOG10, "tokens/s"),
        "n_gpus": _powers_of_two_slider(g0, range(0, 15), "GPUs"),
    }
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

    def recompute() -> None:
        chip = as_gpu(controls["gpu"].value)
        n = controls["n_params"].value
        rate = controls["tokens_per_s"].value
        cards = controls["n_gpus"].value
        try:
            value = training.mfu(n, rate, cards, chip, precision)
            message = None
        except ImplausibleMeasurement as exc:
            # MFU is proportional to tokens/s: the MFU of one token/s, scaled, shows how far over.
            value = training.mfu(n, 1.0, cards, chip, precision) * rate
            message = str(exc)
        except ValueError as exc:  # e.g. a precision the chip lacks
            explorer.result = None
            explorer.readout.value = _error(str(exc))
            bar.set_width(0.0)
            value_label.set_text("")
            return
        shown = min(value, 1.5)
        bar.set_width(shown)
        bar.set_color("#b00020" if message else "C2")
        value_label.set_color("white" if value > 1.2 else "black")
        value_label.set_position((min(shown, 1.2) + 0.02, 0.0))
        value_label.set_text(f"{value:.1%}")
        ax.set_title(
            f"{n / 1e9:.3g}B params, {_fmt(rate)} tokens/s on {cards} x {chip.name} ({precision})", fontsize=10
        )
        explorer.result = value
        if message:
            explorer.readout.value = _error(message)
        else:
            explorer.readout.value = (
                f"MFU <b>{value:.1%}</b>: 6 x {n:.3g} params x {_fmt(rate)} tokens/s against "
                f"{cards} x {_fmt(chip.peak_flops_per_s(precision) / _TERA)} TFLOP/s dense {precision}."
            )

    def site_state() -> dict[str, object]:
        return {
            "gpu": controls["gpu"].value,
            "precision": precision,
            "n_params": controls["n_params"].value,
            "tokens_per_s": controls["tokens_per_s"].value,
            "n_gpus": controls["n_gpus"].value,
            "convention": "6N",  # the numerator this explorer uses: training.mfu's 6 x N per token
        }

    explorer = Explorer(controls, fig, recompute, title="MFU explorer", site_mode="mfu", site_state=site_state)
    explorer.update()
    return explorer


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
    lo, hi = _span(_MESSAGE_LOG10)
    start = comms.collective_cost(collective, s0, n0, alpha, spec, algorithm)  # checks the rest
    choice = (start.collective, start.algorithm)

    controls = {
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
    fig, ax = _figure()
    sizes = np.geomspace(lo, hi, 200)
    (curve,) = ax.plot(sizes, sizes, lw=2, color="C0", label="alpha-beta model")
    (limits,) = ax.plot(sizes, sizes, ls="--", lw=1, color="0.5", label="latency and link limits")
    cross_line = ax.axvline(1.0, ls=":", color="C0", lw=1)
    (dot,) = ax.plot([s0], [1.0], "o", color="C3", ms=8, label="your message")
    _log_axes(ax, "message size (bytes)", "bus bandwidth (GB/s)", xlim=(lo, hi), x_ticks=None, y_ticks=None)
    ax.legend(fontsize=7, loc="lower right")

    def recompute() -> None:
        link_spec = interconnect.link(controls["link"].value)
        name, algo = controls["collective"].value
        n = controls["n_ranks"].value
        s = controls["message_bytes"].value
        cost = comms.collective_cost(name, s, n, alpha, link_spec, algo)
        crossover = comms.latency_crossover_bytes(name, n, alpha, link_spec, algo)
        bus = np.array([comms.collective_cost(name, x, n, alpha, link_spec, algo).bus_bytes_per_s for x in sizes])
        factor = comms.bus_bandwidth_factor(name, n)
        per_byte = comms.collective_bytes_per_rank(name, 1.0, n, algo)
        flat = link_spec.bytes_per_s * factor / per_byte  # the large-message limit
        slope = factor / (cost.steps * alpha)  # the small-message limit: size * factor / latency
        curve.set_ydata(bus / 1e9)
        limits.set_ydata(np.minimum(flat, slope * sizes) / 1e9)
        cross_line.set_xdata([crossover, crossover])
        dot.set_data([s], [cost.bus_bytes_per_s / 1e9])
        # six decades below the link, or lower where latency holds small messages further down
        # (100 bytes on 512 ranks): the whole curve is drawn, never cut off at the axis
        ax.set_ylim(min(flat / 1e6, bus.min() / 3) / 1e9, flat / 1e9 * 3)
        ax.set_title(
            f"{algo} {name} on {n} ranks over {link_spec.name} "
            f"({_fmt(link_spec.bytes_per_s / 1e9)} GB/s one way), alpha {alpha * 1e6:.3g} us",
            fontsize=9,
        )
        explorer.result = cost
        explorer.readout.value = (
            f"{_fmt(s)} bytes: {cost.steps:,} steps x {alpha * 1e6:.3g} us = {_seconds(cost.steps * alpha)} of "
            f"latency, + {_fmt(cost.bytes_per_rank)} bytes on the wire: <b>{_seconds(cost.seconds)}</b>; bus bandwidth "
            f"<b>{_fmt(cost.bus_bytes_per_s / 1e9)} GB/s</b> ({cost.bus_bytes_per_s / link_spec.bytes_per_s:.0%} "
            f"of the link), latency {cost.latency_share:.0%} of the time. Latency stops dominating at "
            f"{_fmt(crossover)} bytes."
        )

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
        controls, fig, recompute, title="Collective cost explorer", site_mode="comms", site_state=site_state
    )
    explorer.update()
    return explorer


# --------------------------------------------------------------------------- serving

_SLO_LOG10 = (-3.0, 1.0)  # SLO sliders: 1 ms to 10 s
_POLICY_LABELS = {
    "static": "static batching",
    "continuous": "continuous batching",
    "chunked": "continuous + chunked prefill",
    "disaggregated": "disaggregated prefill/decode",
}


def _serving_precision(spec) -> str:
    """The 2-byte precision a chip serves in: bf16, else fp16 (a V100 has no bf16)."""
    return "bf16" if spec.has("bf16") else "fp16"


def _serving_readout(label: str, best, limit: int) -> str:
    """The sentence under the serving figure: the operating point and what bounds it."""
    return (
        f"{label}: best under the SLO at <b>batch {best.batch}</b>, "
        f"<b>{_fmt(best.tokens_per_s)} output tokens/s per GPU</b>, TPOT {best.tpot_s * 1e3:.3g} ms, "
        f"TTFT {best.ttft_s * 1e3:.3g} ms; decode is {best.decode_bound}-bound there. "
        f"The paged KV cache holds {limit:,} such requests at most."
    )


def serving_explorer(
    model: str = "llama-3-8b",
    gpu="H100",
    policy: str = "chunked",
    prompt_len: int = 1024,
    output_len: int = 256,
    chunk_tokens: int = 2048,
    slo_ttft_s: float = 0.5,
    slo_tpot_s: float = 0.03,
) -> Explorer:
    """A GPU, a batching policy and an SLO -> the latency-throughput frontier and the best point on it.

    Each curve is :func:`~roofline_lib.workloads.serving.steady_frontier` for one policy: batch 1, 2, 4, ...
    up to what the paged KV cache allows, TPOT against output tokens/s per GPU (sustainable
    points only). The chosen policy is drawn bold, the TPOT objective as a dashed line, and the
    operating point (:func:`~roofline_lib.workloads.serving.best_steady_state`) as a ring. ``model`` is a
    dense shipped model without a sliding window (the website explorer computes from its
    :func:`~roofline_lib.workloads.serving.step_counts`), in bf16 weights and KV cache (fp16 on a chip
    without bf16); ``result`` is the best :class:`~roofline_lib.workloads.serving.SteadyState`.
    """
    from ..models import transformer
    from ..workloads import serving

    cfg = transformer.model_config(model)
    spec = as_gpu(gpu)
    if not isinstance(policy, str) or policy not in serving.POLICIES:
        raise ValueError(f"policy must be one of {', '.join(serving.POLICIES)}, got {policy!r}")
    ttft0 = _in_span(_positive(slo_ttft_s, "slo_ttft_s", "seconds"), _SLO_LOG10, "slo_ttft_s", "seconds")
    tpot0 = _in_span(_positive(slo_tpot_s, "slo_tpot_s", "seconds"), _SLO_LOG10, "slo_tpot_s", "seconds")
    p0 = _positive_int(prompt_len, "prompt_len", "tokens")
    o0 = _positive_int(output_len, "output_len", "tokens")
    c0 = _positive_int(chunk_tokens, "chunk_tokens", "tokens")
    counts = serving.step_counts(serving.serving_server(cfg, spec, precision=_serving_precision(spec)))  # dense only

    controls = {
        "gpu": _gpu_dropdown(spec),
        "policy": w.Dropdown(
            options=[(label, key) for key, label in _POLICY_LABELS.items()],
            value=policy,
            description="policy",
            layout=w.Layout(width="22em"),
        ),
        "slo_tpot_s": _log_slider(tpot0, _SLO_LOG10, "TPOT SLO (s)"),
        "slo_ttft_s": _log_slider(ttft0, _SLO_LOG10, "TTFT SLO (s)"),
    }
    fig, ax = _figure()
    lines = {}
    for i, key in enumerate(serving.POLICIES):
        (lines[key],) = ax.plot([1.0], [1.0], "-o", ms=3, lw=1, color=f"C{i}", label=_POLICY_LABELS[key])
    slo_line = ax.axvline(tpot0 * 1e3, ls="--", color="0.4", lw=1)
    (dot,) = ax.plot([1.0], [1.0], "o", color="C3", ms=10, mfc="none", mew=2, label="best under the SLO")
    _log_axes(ax, "TPOT (ms per output token)", "output tokens/s per GPU", x_ticks=None, y_ticks=lambda v, _p: _fmt(v))
    ax.legend(fontsize=7, loc="lower right")

    def fail(message: str, title: str) -> None:
        explorer.result = None
        explorer.readout.value = _error(message)
        dot.set_data([], [])
        if title:
            ax.set_title(title, fontsize=9)

    def recompute() -> None:
        chip = as_gpu(controls["gpu"].value)
        chosen = controls["policy"].value
        ttft, tpot = controls["slo_ttft_s"].value, controls["slo_tpot_s"].value
        slo_line.set_xdata([tpot * 1e3, tpot * 1e3])
        server = serving.serving_server(cfg, chip, precision=_serving_precision(chip))
        try:
            limit = serving.kv_capacity(server, p0, o0).max_requests
            curves = {key: serving.steady_frontier(server, key, p0, o0, chunk_tokens=c0) for key in serving.POLICIES}
        except ValueError as exc:  # the weights leave no room for a KV cache on this chip
            for line in lines.values():
                line.set_data([], [])
            fail(str(exc), f"{cfg.name} on {chip.name}: does not fit")
            return
        everything = []
        for key, points in curves.items():
            ok = [p for p in points if p.sustainable]
            lines[key].set_data([p.tpot_s * 1e3 for p in ok], [p.tokens_per_s for p in ok])
            lines[key].set_linewidth(2.5 if key == chosen else 0.8)
            lines[key].set_alpha(1.0 if key == chosen else 0.5)
            everything += ok
        xs = [p.tpot_s * 1e3 for p in everything] + [tpot * 1e3]
        ys = [p.tokens_per_s for p in everything] or [1.0, 10.0]
        ax.set_xlim(min(xs) / 1.5, max(xs) * 1.5)
        ax.set_ylim(min(ys) / 2, max(ys) * 2)
        ax.set_title(
            f"{cfg.name} on {chip.name}, {p0} prompt + {o0} output tokens: frontier over batch size", fontsize=9
        )
        try:
            best = serving.best_steady_state(curves[chosen], ttft, tpot)
        except ValueError as exc:
            fail(f"{_POLICY_LABELS[chosen]}: {exc}", "")
            return
        dot.set_data([best.tpot_s * 1e3], [best.tokens_per_s])
        explorer.result = best
        explorer.readout.value = _serving_readout(_POLICY_LABELS[chosen], best, limit)

    def site_state() -> dict[str, object]:
        return {
            "gpu": controls["gpu"].value,
            "policy": controls["policy"].value,
            "slo_ttft_s": controls["slo_ttft_s"].value,
            "slo_tpot_s": controls["slo_tpot_s"].value,
            "model_name": cfg.name,
            "prompt_len": p0,
            "output_len": o0,
            "chunk_tokens": c0,
            "body_flops": counts.body_flops_per_token,
            "key_flops": counts.score_flops_per_key,
            "unembed_flops": counts.unembed_flops_per_row,
            "weight_bytes_fixed": counts.weight_bytes_fixed,
            "weight_bytes_per_token": counts.weight_bytes_per_token,
            "kv_bytes_per_token": counts.kv_bytes_per_token,
            "stored_weight_bytes": counts.stored_weight_bytes,
        }

    explorer = Explorer(
        controls, fig, recompute, title="Serving frontier explorer", site_mode="serving", site_state=site_state
    )
    explorer.update()
    return explorer
