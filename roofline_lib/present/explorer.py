"""The Explorer every ipywidgets explorer is: controls, a readout and a figure, and the pieces they share.

An :class:`Explorer` *is* an ipywidgets container (a VBox: the controls, a one-line readout, and
an Output widget holding the figure), so a notebook cell that ends with one shows it. For tests
and for the curious it also exposes:

* ``.update()`` - recompute and redraw from the controls' current values; returns the seconds
  the redraw took (each is meant to stay under 0.1 s);
* ``.controls`` - the control widgets by name, e.g. ``ex.controls["intensity"].value = 50``;
* ``.readout`` - an HTML widget whose ``.value`` is the sentence the numbers make;
* ``.figure`` - the persistent matplotlib Figure (updated in place, never re-created);
* ``.result`` - the numbers behind the readout; ``None`` while the readout shows an error;
* ``.site_attributes`` / ``.site_html()`` - the ``data-*`` attributes, and the
  ``<div class="roofline-explorer" ...>`` element, that start the website's kernel-free explorer
  (``book/_static/roofline-explorer.js``) where this one stands now. The still picture a static
  page shows (``_repr_mimebundle_``'s ``text/html``) carries that element, so a chapter never
  types those numbers itself.

Without an IPython kernel the figure is still rendered (so redraw time is honest) but not
displayed. The explorers themselves are in :mod:`~roofline_lib.present.widgets` (one per chapter
topic) and :mod:`~roofline_lib.present.widgets_parallel`; below the class are the controls, figure
and axes they share.
"""

from __future__ import annotations

import base64
import contextlib
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
from matplotlib.ticker import FixedFormatter, FixedLocator, FuncFormatter, LogLocator
from PIL import Image

from ..core.hardware import registry

__all__ = ["Explorer"]

_FIGSIZE = (6.4, 3.6)  # inches
_DPI = 80  # small enough to redraw and encode in well under 0.1 s


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
        self._frame = _Frame(figure)  # draws the axes once, the data on each redraw
        self._title = title
        self._recompute = recompute
        self._hooks = dict(hooks or {})  # name -> run before the redraw when that control changes
        self._quiet = False  # set while a hook rewrites another control, so the redraw happens once
        self._held = False  # set inside drawing_held(): changes are computed, the figure drawn at its end
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
                "notebook (<code>make lab</code>); the explorer below runs on this page, with no kernel.</figcaption>"
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
        if not self._held:
            self._show()
        return time.perf_counter() - start

    @contextlib.contextmanager
    def drawing_held(self):
        """Inside the block each change of a control is computed (``result`` and the readout follow
        it) but the figure is drawn once, when the block ends: for stepping a control through many
        values in code and reading the result at each, without encoding a picture at every step."""
        if self._held:  # nested: the outer block draws
            yield self
            return
        self._held = True
        try:
            yield self
        finally:
            self._held = False
            self._show()

    def show_error(self, message: str) -> None:
        """Say ``message`` in red where the readout goes; there is no result to show."""
        self.result = None
        self.readout.value = _error(message)

    def _show(self) -> None:
        self.last_png = self._frame.png()
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


class _Frame:
    """One figure as PNG, its still parts drawn once and its data drawn over them on each redraw.

    Most of a redraw is the axes: tick positions, tick labels, the grid (about three quarters of a
    roofline explorer's 0.07 s). They change only when a limit, a scale, a title, a label or a
    tick locator changes, which a slider move rarely does. So the figure is drawn once without its
    data (lines, bars, markers, texts, legends; the spines, which sit over the data, too) and that
    picture is kept; a redraw whose still parts are as they were pastes it back and draws only the
    data, in z-order, then encodes the canvas. When a still part has changed, the figure is drawn
    afresh in the same two passes. :attr:`full_draws` counts those (tests read it).
    """

    def __init__(self, figure: Figure):
        self.figure = figure
        self.full_draws = 0
        self._still = None  # the key of the picture kept in _background
        self._background = None

    def png(self) -> bytes:
        canvas = self.figure.canvas
        key = _still_key(self.figure)
        on_top = [(ax, _drawn_over(ax)) for ax in self.figure.axes]
        if key != self._still:
            hidden = [a for _, artists in on_top for a in artists if a.get_visible()]
            for a in hidden:
                a.set_visible(False)
            try:
                canvas.draw()
            finally:
                for a in hidden:
                    a.set_visible(True)
            self._background = canvas.copy_from_bbox(self.figure.bbox)
            self._still = key
            self.full_draws += 1
        else:
            canvas.restore_region(self._background)
        renderer = canvas.get_renderer()
        for ax, artists in on_top:
            for a in artists:
                if a.get_visible():
                    a.draw(renderer)
        width, height = canvas.get_width_height()
        image = Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        buffer = io.BytesIO()
        # Fast zlib level: the image lives for one redraw, and level 6 costs ~10 ms of the 0.1 s budget.
        image.save(buffer, format="png", compress_level=1, dpi=(self.figure.dpi, self.figure.dpi))
        return buffer.getvalue()


def _drawn_over(ax) -> list:
    """What a redraw draws in ``ax``: its data, its legend, and the spines drawn over them, in z-order.

    Where some data sits below the axis (bars under the grid), the axis is drawn with it, so the
    picture is the one a full draw makes.
    """
    artists = [*ax.lines, *ax.collections, *ax.patches, *ax.texts, *ax.images]
    axes_lines = (ax.xaxis, ax.yaxis)
    if artists and min(a.get_zorder() for a in artists) < min(a.get_zorder() for a in axes_lines):
        artists += axes_lines  # data under the grid (bars): the grid is drawn over it each time, as a full draw does
    artists += ax.spines.values()
    if ax.get_legend() is not None:
        artists.append(ax.get_legend())
    return sorted(artists, key=lambda a: a.get_zorder())  # a stable sort: ties keep the Axes' own order


def _ticker_key(ticker) -> tuple:
    """A locator or formatter as far as the picture goes: which object, and the fixed values it holds."""
    if isinstance(ticker, FixedLocator):
        fixed = ticker.locs
    elif isinstance(ticker, FixedFormatter):
        fixed = ticker.seq
    else:
        return (id(ticker),)  # where it places ticks follows from the limits, which the key holds
    return (id(ticker), tuple(np.asarray(fixed).ravel().tolist()))


def _still_key(figure: Figure) -> tuple:
    """Everything drawn once and kept: size, figure texts, and per Axes its box, limits, scales, titles,
    labels and tickers."""
    parts = [tuple(figure.get_size_inches()), figure.dpi, tuple(t.get_text() for t in figure.texts)]
    for ax in figure.axes:
        parts.append(
            (
                id(ax),
                ax.get_visible(),
                ax.axison,
                tuple(ax.get_position().bounds),
                tuple(ax.get_xlim()),
                tuple(ax.get_ylim()),
                ax.get_xscale(),
                ax.get_yscale(),
                tuple(ax.get_title(loc) for loc in ("left", "center", "right")),
                ax.get_xlabel(),
                ax.get_ylabel(),
                *(
                    _ticker_key(t)
                    for axis in (ax.xaxis, ax.yaxis)
                    for t in (axis.get_major_locator(), axis.get_major_formatter(), axis.get_minor_locator())
                ),
            )
        )
    return tuple(parts)


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
    # the grid under every bar and line: a redraw then draws the data over the kept axes (_Frame)
    ax.set_axisbelow(True)
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
