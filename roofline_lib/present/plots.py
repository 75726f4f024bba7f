"""Roofline pictures with matplotlib: datasheet roofs, measured roofs and kernel points.

Everything inside is SI (FLOP/s, bytes/s); the axes convert at the edge: attainable TFLOP/s
on the y axis, arithmetic intensity in FLOP/byte on the x axis, both logarithmic.

The figures are built with :class:`matplotlib.figure.Figure` directly, not through pyplot, so
they work under any backend (Agg included), never pile up in pyplot's figure list, and show
once when a notebook cell returns them. Each figure carries a plain-text description for
readers who cannot see it in ``fig.roofline_alt`` (also returned by :func:`alt_text`).
"""

from __future__ import annotations

import base64
import inspect
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from ..core.checks import _positive
from ..core.formatting import flops_rate as _flops_rate
from ..core.formatting import num as _num
from ..core.formatting import to_unit
from ..core.hardware import GPUSpec, as_gpu
from ..core.roofline import ridge_point
from .prose import ROLE as PROSE_ROLE

__all__ = [
    "Point",
    "RooflineFigure",
    "CaptionedFigure",
    "plot_roofline",
    "plot_ridge_by_precision",
    "alt_text",
    "save_roofline",
    "show",
    "figure_text",
]

_MEMORY_STYLES = {"hbm": "-", "l2": (0, (1, 1))}  # HBM solid, L2 dotted
_MEMORY_ROOFS = tuple(_MEMORY_STYLES)
_POINT_KINDS = ("predicted", "measured")
_SUFFIXES = (".png", ".svg")
# One line style per precision, the same on every chip. bf16 is solid like the HBM roof, so the
# classic two-segment roofline reads as one line; dotted is kept for L2 (thick) and ridges (thin).
_COMPUTE_STYLES = {
    "fp32": "-.",
    "tf32": (0, (8, 2)),
    "bf16": "-",
    "fp16": (0, (4, 2)),
    "fp8": "--",
    "int8": (0, (3, 1, 1, 1, 1, 1)),
    "fp4": (0, (2, 2)),
}
_MEASURED_COLOR = "0.15"  # near-black: measured roofs stand apart from the coloured datasheet ones
_MEASURED_STYLE = (0, (6, 2, 1, 2))  # dash-dot: both roofs of a measured machine


def _tflops(flops_per_s):
    """FLOP/s in TFLOP/s, the y axis's unit (converted at the edge only)."""
    return to_unit(flops_per_s, "TFLOP/s")


class RooflineFigure(Figure):
    """A Figure that shows itself as a PNG when a notebook cell returns it.

    Without pyplot nobody registers matplotlib's notebook display hook, so the figure carries
    its own. ``roofline_alt`` holds the figure's plain-text description.
    """

    roofline_alt: str = ""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=100)
        return buffer.getvalue()


@dataclass(frozen=True)
class Point:
    """A kernel on the roofline: ``intensity`` in FLOP/byte, ``flops_per_s`` in FLOP/s.

    ``kind`` is "predicted" (drawn hollow) or "measured" (drawn filled).
    """

    label: str
    intensity: float
    flops_per_s: float
    kind: str = "predicted"

    def __post_init__(self) -> None:
        if not isinstance(self.label, str):
            raise TypeError(f"label must be a string, got {type(self.label).__name__} {self.label!r}")
        _positive(self.intensity, "intensity", "FLOP/byte")
        _positive(self.flops_per_s, "flops_per_s", "FLOP per second")
        if self.kind not in _POINT_KINDS:
            raise ValueError(f"kind must be 'predicted' or 'measured', got {self.kind!r}")


@dataclass(frozen=True)
class _Roof:
    """One line to draw. ``slope`` (bytes/s) for a memory roof, ``peak`` (FLOP/s) for compute."""

    owner: str  # the GPU's name, or "measured: <device>"
    label: str
    color: str
    style: str
    slope: float | None = None
    peak: float | None = None
    top: float | None = None  # where a memory roof stops: the highest compute roof beside it
    ridge: float | None = None


@dataclass
class _Plan:
    lo: float
    hi: float
    title: str
    roofs: list[_Roof] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # roofs asked for but absent


# --------------------------------------------------------------------------- inputs


def _as_tuple(value, name: str) -> tuple:
    if isinstance(value, (str, GPUSpec)) or not isinstance(value, Iterable):
        return (value,)
    out = tuple(value)
    if not out and name != "points":
        raise ValueError(f"{name} must name at least one entry, got an empty sequence")
    return out


def _as_points(points) -> list[Point]:
    out: list[Point] = []
    for p in _as_tuple(points, "points") if points is not None else ():
        if isinstance(p, Point):
            out.append(p)
        elif hasattr(p, "achieved_flops_per_s") and hasattr(p, "ceiling_flops_per_s"):
            # a measure.MeasuredKernel: the measured dot and, above it, its prediction
            out.append(Point(p.name, p.intensity, p.achieved_flops_per_s, "measured"))
            out.append(Point(f"{p.name} (predicted)", p.intensity, p.ceiling_flops_per_s, "predicted"))
        else:
            raise TypeError(f"points must hold Point or MeasuredKernel objects, got {type(p).__name__} {p!r}")
    return out


def _range(intensity_range) -> tuple[float, float]:
    try:
        lo, hi = intensity_range
    except (TypeError, ValueError):
        raise ValueError(f"intensity_range must be a pair (low, high) in FLOP/byte, got {intensity_range!r}") from None
    lo = _positive(lo, "intensity_range low end", "FLOP/byte")
    hi = _positive(hi, "intensity_range high end", "FLOP/byte")
    if not lo < hi:
        raise ValueError(f"intensity_range must rise from low to high, got {intensity_range!r}")
    return lo, hi


def _plan(gpus, precisions, points, memory_roofs, measured, title, intensity_range) -> _Plan:
    lo, hi = _range(intensity_range)
    specs = [as_gpu(g) for g in _as_tuple(gpus, "gpus")] if gpus is not None else []
    precs = [str(p).strip().lower() for p in _as_tuple(precisions, "precisions")]
    mems = [str(m).strip().lower() for m in _as_tuple(memory_roofs, "memory_roofs")]
    for m in mems:
        if m not in _MEMORY_ROOFS:
            raise ValueError(f"memory_roofs may hold 'hbm' and 'l2', got {m!r}")
    meas = [] if measured is None else list(_as_tuple(measured, "measured"))
    for m in meas:
        if not (hasattr(m, "bytes_per_s") and hasattr(m, "flops_per_s") and hasattr(m, "ridge")):
            raise TypeError(
                f"measured must be a MeasuredCeilings from measured_roofs.measure_ceilings(), got {type(m).__name__}"
            )
    if not specs and not meas:
        raise ValueError("nothing to draw: give at least one GPU in gpus or a measured machine")

    names = [s.name for s in specs] + [f"{m.device_name} (measured)" for m in meas]
    plan = _Plan(lo=lo, hi=hi, title=title if title is not None else "Roofline: " + ", ".join(names))
    colors = [f"C{i % 10}" for i in range(len(specs))]

    for spec, color in zip(specs, colors):
        present = [p for p in precs if spec.has(p)]
        missing = [p for p in precs if not spec.has(p)]
        if not present:
            raise ValueError(
                f"{spec.name} has none of the precisions {', '.join(precs)}; it has: {', '.join(spec.precisions)}"
            )
        if missing:
            plan.notes.append(f"{spec.name} has no {', '.join(missing)} roof, so none is drawn.")
        top = max(spec.peak_flops_per_s(p) for p in present)
        for mem in mems:
            bytes_per_s = spec.hbm_bytes_per_s if mem == "hbm" else spec.l2_bytes_per_s
            if not bytes_per_s:  # the registry has every HBM figure, not every L2 one
                plan.notes.append(f"{spec.name} has no L2 bandwidth in the registry, so no L2 roof is drawn.")
                continue
            label = (
                f"{spec.name} {spec.memory_kind if mem == 'hbm' else 'L2'} {_num(to_unit(bytes_per_s, 'TB/s'))} TB/s"
            )
            plan.roofs.append(_Roof(spec.name, label, color, _MEMORY_STYLES[mem], slope=bytes_per_s, top=top))
        for p in present:
            peak = spec.peak_flops_per_s(p)
            unit = "CUDA cores" if p == "fp32" else "tensor cores"
            label = f"{spec.name} {p} ({unit}) {_num(_tflops(peak))} TFLOP/s"
            plan.roofs.append(_Roof(spec.name, label, color, _COMPUTE_STYLES[p], peak=peak, ridge=ridge_point(spec, p)))

    for m in meas:
        owner = f"measured: {m.device_name}"
        copy = f"{owner} copy {_num(to_unit(m.bytes_per_s, 'GB/s'))} GB/s"
        matmul = f"{owner} {m.precision} matmul {_num(to_unit(m.flops_per_s, 'GFLOP/s'))} GFLOP/s"
        plan.roofs += [
            _Roof(owner, copy, _MEASURED_COLOR, _MEASURED_STYLE, slope=m.bytes_per_s, top=m.flops_per_s),
            _Roof(owner, matmul, _MEASURED_COLOR, _MEASURED_STYLE, peak=m.flops_per_s, ridge=m.ridge),
        ]
    plan.points = _as_points(points)
    return plan


# --------------------------------------------------------------------------- text


def _describe(plan: _Plan) -> str:
    sentences = [
        "Log-log roofline chart: attainable performance in TFLOP/s against arithmetic "
        f"intensity in FLOP/byte, from {_num(plan.lo)} to {_num(plan.hi)} FLOP/byte."
    ]
    owners = list(dict.fromkeys(r.owner for r in plan.roofs))
    for owner in owners:
        roofs = [r for r in plan.roofs if r.owner == owner]
        memory = [r.label.removeprefix(owner).strip() for r in roofs if r.slope is not None]
        compute = [
            f"{r.label.removeprefix(owner).strip()} with its ridge at {_num(r.ridge)} FLOP/byte"
            for r in roofs
            if r.peak is not None
        ]
        parts = []
        if memory:
            parts.append(("memory roofs " if len(memory) > 1 else "memory roof ") + " and ".join(memory))
        if compute:
            parts.append(("compute roofs " if len(compute) > 1 else "compute roof ") + "; ".join(compute))
        sentences.append(f"{owner}: " + "; ".join(parts) + ".")
    sentences.extend(plan.notes)
    for p in plan.points:
        sentences.append(
            f"{p.kind.capitalize()} point '{p.label}' at {_num(p.intensity)} FLOP/byte and {_flops_rate(p.flops_per_s)}."
        )
    return " ".join(sentences)


def alt_text(fig: Figure | None = None, **kwargs) -> str:
    """Plain-text description of a roofline figure, for the book's alt text.

    Pass the Figure that :func:`plot_roofline` returned, or the same keyword arguments you
    would pass to it (nothing is drawn then).
    """
    if fig is not None:
        if kwargs:
            raise TypeError("alt_text takes either a figure or plot_roofline's keyword arguments, not both")
        text = getattr(fig, "roofline_alt", None)
        if text is None:
            raise ValueError("this figure was not drawn by plot_roofline, so it carries no roofline_alt text")
        return text
    defaults = _plot_defaults()
    args = dict(defaults, **kwargs)
    unknown = sorted(set(args) - set(defaults))
    if unknown:
        raise TypeError(f"alt_text got unexpected keyword argument(s): {', '.join(unknown)}")
    args.pop("ax")
    return _describe(_plan(**args))


# --------------------------------------------------------------------------- drawing


def plot_roofline(
    gpus=("A100",),
    precisions=("bf16",),
    points=(),
    ax=None,
    memory_roofs=("hbm",),
    measured=None,
    title: str | None = None,
    intensity_range=(1 / 16, 4096),
) -> Figure:
    """Draw a log-log roofline and return its Figure (alt text in ``fig.roofline_alt``).

    One compute roof per (GPU, precision) the chip has (fp32 is the CUDA-core roof, narrower
    precisions the tensor-core roofs; a precision a chip lacks is left out and said so in the
    alt text), its HBM roof, an L2 roof with ``memory_roofs=("hbm", "l2")`` where the registry
    has the L2 bandwidth, and each ridge as a dotted vertical with its value. ``measured`` takes
    one or more :class:`~roofline_lib.evidence.measured_roofs.MeasuredCeilings`, drawn in dark dash-dots beside
    the datasheet roofs. ``points`` takes :class:`Point` objects, or MeasuredKernel results,
    drawn as a filled measured dot under a hollow predicted one.
    """
    plan = _plan(gpus, precisions, points, memory_roofs, measured, title, intensity_range)
    own_figure = ax is None
    if own_figure:
        fig = RooflineFigure(figsize=(9.0, 5.2), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    _draw(plan, ax, legend_outside=True)
    fig.roofline_alt = _describe(plan)
    return fig


def _draw(plan: _Plan, ax, *, legend_outside: bool) -> None:
    """Draw ``plan`` on ``ax``: its roofs and ridges, its points and their labels, then the axes and legend."""
    y_values = [_draw_roof(ax, roof, plan.lo, plan.hi) for roof in plan.roofs]
    labels = [_draw_point(ax, p, plan.lo, plan.hi) for p in plan.points]
    y_values += [p.flops_per_s for p in plan.points]
    _dress_axes(ax, plan, y_values)
    _legend(ax, {p.kind for p in plan.points}, legend_outside)
    _untangle(ax, labels)


def _draw_roof(ax, roof: _Roof, lo: float, hi: float) -> float:
    """One roof across ``lo..hi`` FLOP/byte (a compute roof with its ridge); returns its lowest FLOP/s on the axis."""
    if roof.slope is not None:
        xs = np.geomspace(lo, hi, 256)
        x_stop = min(hi, roof.top / roof.slope)
        x = xs[xs <= x_stop]
        x = np.append(x, x_stop) if x.size == 0 or x[-1] < x_stop else x
        ax.plot(x, _tflops(roof.slope * x), color=roof.color, ls=roof.style, lw=2, label=roof.label)
        return roof.slope * lo
    x_start = min(max(lo, roof.ridge), hi)
    ax.plot([x_start, hi], [_tflops(roof.peak)] * 2, color=roof.color, ls=roof.style, lw=2, label=roof.label)
    if lo < roof.ridge < hi:
        _draw_ridge(ax, roof)
    return roof.peak


def _draw_ridge(ax, roof: _Roof) -> None:
    """The ridge as a thin dotted vertical, its value along the foot, clear of the roofs and the kernel labels."""
    ax.axvline(roof.ridge, color=roof.color, ls=":", lw=1, alpha=0.7)
    ax.annotate(
        f"ridge {_num(roof.ridge)}",
        (roof.ridge, 0.02),
        xycoords=("data", "axes fraction"),
        xytext=(-3, 0),
        textcoords="offset points",
        rotation=90,
        ha="right",
        va="bottom",
        fontsize=9,
        color=roof.color,
    )


def _draw_point(ax, p: Point, lo: float, hi: float):
    """A kernel's marker (filled if measured, a hollow square if predicted) and its label; returns the label."""
    filled = p.kind == "measured"
    y = _tflops(p.flops_per_s)
    ax.plot(
        [p.intensity],
        [y],
        ls="none",
        marker="o" if filled else "s",
        ms=7,
        color="black",
        markerfacecolor="black" if filled else "white",
        zorder=5,
    )
    # Labels of points in the right third of the axis go to their left, away from the legend.
    right = np.log(p.intensity / lo) > (2 / 3) * np.log(hi / lo)
    return ax.annotate(
        p.label,
        (p.intensity, y),
        xytext=(-6 if right else 6, -11 if filled else 4),
        textcoords="offset points",
        fontsize=9,
        ha="right" if right else "left",
    )


def _dress_axes(ax, plan: _Plan, y_values: list[float]) -> None:
    """Log-log axes with plain tick labels, spanning the plan's intensities and every drawn FLOP/s."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain = FuncFormatter(lambda value, _pos: f"{value:g}")  # 0.1, 1, 10 rather than 10^-1
    ax.xaxis.set_major_formatter(plain)
    ax.yaxis.set_major_formatter(plain)
    ax.set_xlim(plan.lo, plan.hi)
    ax.set_ylim(_tflops(min(y_values)) / 2, _tflops(max(y_values)) * 2.5)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable TFLOP/s")
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(plan.title)


def _legend(ax, kinds: set[str], outside: bool) -> None:
    """The legend, with one entry per kind of point drawn; beside the axes when ``outside``."""
    if "predicted" in kinds:
        ax.plot([], [], ls="none", marker="s", color="black", markerfacecolor="white", label="predicted point")
    if "measured" in kinds:
        ax.plot([], [], ls="none", marker="o", color="black", label="measured point")
    if outside:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    else:
        ax.legend(fontsize=9)


def _untangle(ax, labels) -> None:
    """Move a point's label that would overlap an earlier one: below its point, then to its other side.

    Two points close together on the roof (decode at batch 256 and a prefill, just either side of
    a ridge) had their labels drawn over each other. The labels are measured where the laid-out
    figure puts them, and each takes the first place, of four around its point, clear of those
    placed before it (the last one if none is).
    """
    if len(labels) < 2:
        return
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.transforms import Bbox

    fig = ax.figure
    if not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    fig.draw_without_rendering()  # apply the layout, so the extents are where the text will be
    renderer = fig.canvas.get_renderer()
    half = 5 * fig.dpi / 72  # a marker of 7 points, and a little room
    placed = []
    for label in labels:  # every point's marker, so no label is drawn over another point
        x, y = ax.transData.transform(label.xy)
        placed.append(Bbox.from_extents(x - half, y - half, x + half, y + half))
    for label in labels:
        dx, dy = label.xyann
        side = label.get_ha()
        other = "left" if side == "right" else "right"
        for xy, ha in (((dx, dy), side), ((dx, -11), side), ((-dx, dy), other), ((-dx, -11), other)):
            label.xyann = xy
            label.set_horizontalalignment(ha)
            box = label.get_window_extent(renderer)
            if not any(box.overlaps(b) for b in placed):
                break
        placed.append(label.get_window_extent(renderer))


def _plot_defaults() -> dict:
    """plot_roofline's keyword defaults, read from its signature so they are written once."""
    return {name: p.default for name, p in inspect.signature(plot_roofline).parameters.items()}


def save_roofline(path, **kwargs) -> Figure:
    """Draw :func:`plot_roofline` with ``kwargs`` and write it as PNG or SVG, chosen by suffix.

    Returns the Figure (its alt text is ``fig.roofline_alt``). Any other suffix is a ValueError,
    raised before anything is drawn.
    """
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in _SUFFIXES:
        raise ValueError(f"path must end in .png or .svg, got {str(path)!r} (suffix {suffix or 'none'!r})")
    if "ax" in kwargs:
        raise TypeError("save_roofline draws its own figure; do not pass ax")
    fig = plot_roofline(**kwargs)
    # No timestamp and fixed element ids in SVG: the same figure writes the same bytes (clean diffs).
    metadata = {"Date": None} if suffix == ".svg" else None
    with rc_context({"svg.hashsalt": "roofline"}):
        fig.savefig(target, format=suffix[1:], dpi=150, metadata=metadata)
    return fig


def plot_ridge_by_precision(gpus=("A100", "H100", "H200", "B200")) -> RooflineFigure:
    """Ridge point (FLOP/byte, log scale) against precision, one line per GPU.

    A precision a chip lacks leaves a gap in its line rather than an invented value. The
    description for readers who cannot see the figure is in ``fig.roofline_alt``.
    """
    from ..core.hardware import PRECISIONS  # the registry's order, widest first

    specs = [as_gpu(g) for g in _as_tuple(gpus, "gpus")]  # refuses an empty sequence
    fig = RooflineFigure(figsize=(8.0, 4.2), layout="constrained")
    ax = fig.add_subplot()
    xs = np.arange(len(PRECISIONS))
    sentences = ["Ridge point in FLOP per byte against precision, log scale."]
    for spec in specs:
        ridges = [ridge_point(spec, p) if spec.has(p) else np.nan for p in PRECISIONS]
        ax.plot(xs, ridges, marker="o", label=spec.name)
        have = [f"{p} {_num(r)}" for p, r in zip(PRECISIONS, ridges) if not np.isnan(r)]
        sentences.append(f"{spec.name}: " + ", ".join(have) + ".")
    ax.set_xticks(xs, PRECISIONS)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.set_xlabel("precision (narrower to the right)")
    ax.set_ylabel("ridge point (FLOP/byte)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    fig.roofline_alt = " ".join(sentences)
    return fig


# --------------------------------------------------------------------------- figures in JupyterLab

_PAGE_FOLDERS = ("notebooks", "exercises", "solutions")
_PAGE_CACHE: dict[Path, tuple[int, dict[str, tuple[str, str]]]] = {}


def _figure_cells(path: Path) -> dict[str, tuple[str, str]]:
    """name -> (caption, alt text) of every figure cell of one jupytext page, cached by mtime."""
    stamp = path.stat().st_mtime_ns
    cached = _PAGE_CACHE.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    import jupytext

    found = {}
    for cell in jupytext.read(path).cells:
        mystnb = cell.metadata.get("mystnb") if cell.cell_type == "code" else None
        figure = mystnb.get("figure") if isinstance(mystnb, dict) else None
        if isinstance(figure, dict) and figure.get("name"):
            image = mystnb.get("image") if isinstance(mystnb.get("image"), dict) else {}
            found[str(figure["name"])] = (str(figure.get("caption", "")), str(image.get("alt", "")))
    _PAGE_CACHE[path] = (stamp, found)
    return found


def figure_text(name: str, folder=None) -> tuple[str, str] | None:
    """The caption and alt text the page's own figure cell ``name`` gives, or None if no page has it.

    A chapter's figure cell keeps both in its ``mystnb`` metadata, which the website reads and
    JupyterLab ignores. The pages searched are the ``.md`` files in ``folder`` (default: the current
    directory, where a kernel starts beside its notebook) and in the course's page folders beside it.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a figure cell's name (a non-empty string such as 'fig-roofline'), got {name!r}")
    here = Path.cwd() if folder is None else Path(folder)
    candidates = [here, *(here.parent / sub for sub in _PAGE_FOLDERS if here.parent / sub != here)]
    needle = f"name: {name}"
    pages = (path for directory in candidates if directory.is_dir() for path in sorted(directory.glob("*.md")))
    for path in pages:
        text = _page_figure_text(path, name, needle)
        if text is not None:
            return text
    return None


def _page_figure_text(path: Path, name: str, needle: str) -> tuple[str, str] | None:
    """The caption and alt text of figure cell ``name`` on page ``path``; None if it has none or cannot be read."""
    try:
        if needle in path.read_text(encoding="utf-8"):
            return _figure_cells(path).get(name)
    except (OSError, UnicodeDecodeError, ValueError):
        pass  # an unreadable page holds no caption for us
    return None


def _fill_prose_roles(text: str) -> str:
    """Replace each {eval}`prose["key:spec"]` with the value the running notebook's ``prose`` holds."""

    def value(match: re.Match) -> str:
        try:
            from IPython import get_ipython

            prose = get_ipython().user_ns["prose"]
            return str(prose[match.group(2)])
        except Exception:  # not in a notebook, or the value is not set yet
            return "…"

    return PROSE_ROLE.sub(value, text)


def _png_of(fig: Figure) -> bytes:
    if hasattr(fig, "_repr_png_"):
        return fig._repr_png_()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.dpi, bbox_inches="tight")  # as IPython draws a Figure
    return buffer.getvalue()


def _markdown_escape_alt(text: str) -> str:
    return " ".join(text.split()).replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


class CaptionedFigure:
    """A figure as a notebook cell shows it: a PNG for the website, a captioned image for JupyterLab.

    The bundle holds ``image/png`` (the website prefers it, and myst-nb adds the caption and alt text
    from the cell's metadata) and ``text/markdown``: the same image with its alt text, and the
    caption under it, which JupyterLab, reading no cell metadata, would otherwise never show.
    """

    def __init__(self, fig: Figure, name: str, caption: str = "", alt: str = ""):
        self.figure, self.name, self.caption, self.alt = fig, name, caption, alt

    def _repr_mimebundle_(self, include=None, exclude=None):
        png = base64.b64encode(_png_of(self.figure)).decode("ascii")
        data = {"image/png": png, "text/plain": f"<figure {self.name}>"}
        if self.caption or self.alt:
            caption = _fill_prose_roles(self.caption)
            alt = _markdown_escape_alt(_fill_prose_roles(self.alt) or caption)
            data["text/markdown"] = f"![{alt}](data:image/png;base64,{png})\n\n**Figure.** {caption}\n"
        return data


def show(fig: Figure, name: str) -> CaptionedFigure:
    """``fig`` as the output of figure cell ``name``, with that cell's caption and alt text.

    End a figure cell with ``plots.show(fig, "fig-name")``, ``name`` being the cell's own
    ``mystnb.figure.name``. The website draws the PNG with the caption and alt text myst-nb reads
    from the metadata; JupyterLab draws the Markdown beside it, so its readers see both too. A
    cell run away from its page (no page here names the figure) shows the bare image.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    text = figure_text(name)
    caption, alt = text if text is not None else ("", "")
    return CaptionedFigure(fig, name, caption, alt)
