"""Tests for roofline_lib.present.plots: what the roofline figure draws, says and writes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import base64  # noqa: E402
import math  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import roofline_lib as rl  # noqa: E402
from roofline_lib import plots  # noqa: E402
from roofline_lib.evidence.measured_roofs import MeasuredCeilings, measured_point  # noqa: E402
from roofline_lib.present.plots import Point  # noqa: E402


def _lines(fig):
    return {line.get_label(): line for line in fig.axes[0].get_lines()}


def _line(fig, fragment):
    matches = [line for label, line in _lines(fig).items() if fragment in label]
    assert len(matches) == 1, f"expected one line labelled like {fragment!r}, got {list(_lines(fig))}"
    return matches[0]


def _cpu():
    """A made-up measured CPU: 50 GB/s copy, 200 GFLOP/s fp32 matmul, ridge 4 FLOP/B."""
    return MeasuredCeilings(50e9, 200e9, "test CPU", "fp32", 2, "2025-01-01T00:00:00+00:00", "2.x")


def test_default_figure_is_the_a100_bf16_roofline():
    fig = plots.plot_roofline()
    ax = fig.axes[0]
    assert isinstance(fig, Figure)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "TFLOP/s" in ax.get_ylabel() and "FLOP/byte" in ax.get_xlabel()
    hbm = _line(fig, "HBM2e 2.04 TB/s")
    x, y = hbm.get_data()
    assert x[0] == pytest.approx(1 / 16)
    assert y[0] == pytest.approx(2039e9 / 16 / 1e12)  # 2.039 TB/s * 1/16 FLOP/B = 0.127 TFLOP/s
    compute = _line(fig, "bf16 (tensor cores) 312 TFLOP/s")
    assert list(compute.get_ydata()) == pytest.approx([312, 312])
    assert compute.get_xdata()[0] == pytest.approx(312e12 / 2039e9)  # the roof starts at the ridge, 153


def test_the_ridge_is_a_dotted_vertical_with_its_value():
    fig = plots.plot_roofline(gpus="A100", precisions="bf16")
    ridges = [
        line for line in fig.axes[0].get_lines() if line.get_linestyle() == ":" and len(set(line.get_xdata())) == 1
    ]
    assert len(ridges) == 1
    assert ridges[0].get_xdata()[0] == pytest.approx(153.0, rel=1e-3)  # 312e12 / 2039e9 = 153.0
    assert any(t.get_text() == "ridge 153" for t in fig.axes[0].texts)


def test_one_compute_roof_per_gpu_and_precision_it_has():
    fig = plots.plot_roofline(gpus=("A100", "H100"), precisions=("fp32", "bf16", "fp8"))
    labels = list(_lines(fig))
    assert sum("TFLOP/s" in label for label in labels) == 5  # A100: fp32, bf16; H100: fp32, bf16, fp8
    assert any("A100 80GB SXM fp32 (CUDA cores) 19.5 TFLOP/s" in label for label in labels)
    assert any("H100 SXM fp8 (tensor cores) 1,979 TFLOP/s" in label for label in labels)
    assert "A100 80GB SXM has no fp8 roof" in fig.roofline_alt


def test_a_chip_with_none_of_the_precisions_is_an_error():
    with pytest.raises(ValueError, match="has none of the precisions fp8; it has"):
        plots.plot_roofline(gpus="A100", precisions="fp8")


def test_l2_roof_where_the_registry_has_it():
    fig = plots.plot_roofline(gpus=("A100", "H100"), memory_roofs=("hbm", "l2"))
    l2 = _line(fig, "L2 7.22 TB/s")  # 5120 B/clock * 1.41e9 clock/s = 7.22e12 B/s
    x, y = l2.get_data()
    assert y[0] == pytest.approx(5120 * 1410e6 * x[0] / 1e12)
    assert y[-1] == pytest.approx(312, rel=1e-6)  # the L2 roof stops where it meets the bf16 peak
    assert "H100 SXM has no L2 bandwidth" in fig.roofline_alt


def test_unknown_memory_roof_is_an_error():
    with pytest.raises(ValueError, match="memory_roofs"):
        plots.plot_roofline(memory_roofs=("dram",))


def test_points_are_labelled_and_styled_by_kind():
    fig = plots.plot_roofline(points=[Point("LayerNorm", 0.5, 1e12), Point("GEMM", 400, 250e12, "measured")])
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"LayerNorm", "GEMM"} <= texts
    dots = {
        tuple(line.get_xdata()): line
        for line in fig.axes[0].get_lines()
        if line.get_marker() in ("o", "s") and len(line.get_xdata()) == 1
    }
    assert dots[(0.5,)].get_markerfacecolor() == "white"  # predicted: hollow
    assert dots[(400,)].get_ydata()[0] == pytest.approx(250)  # 250e12 FLOP/s = 250 TFLOP/s
    assert "Measured point 'GEMM' at 400 FLOP/byte and 250 TFLOP/s" in fig.roofline_alt


def test_point_rejects_bad_values():
    with pytest.raises(ValueError, match="intensity"):
        Point("x", 0, 1e12)
    with pytest.raises(ValueError, match="kind"):
        Point("x", 1, 1e12, "guessed")


def test_measured_machine_is_drawn_beside_the_datasheet():
    cpu = _cpu()
    kernel = measured_point("copy", 1e9, 8e9, 0.32, cpu)  # 8e9 B / 0.32 s = 25 GB/s, 3.1 GFLOP/s
    fig = plots.plot_roofline(measured=cpu, points=[kernel])
    copy = _line(fig, "measured: test CPU copy 50 GB/s")
    matmul = _line(fig, "measured: test CPU fp32 matmul 200 GFLOP/s")
    assert copy.get_color() == matmul.get_color() == plots._MEASURED_COLOR
    assert matmul.get_ydata()[0] == pytest.approx(0.2)  # 200 GFLOP/s = 0.2 TFLOP/s
    low, _ = fig.axes[0].get_ylim()
    assert low < 50e9 / 16 / 1e12  # the CPU's copy roof at 1/16 FLOP/B (0.0031 TFLOP/s) is on the chart
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"copy", "copy (predicted)", "ridge 4"} <= texts
    assert "measured: test CPU: memory roof copy 50 GB/s" in fig.roofline_alt


def test_measured_must_be_measured_ceilings():
    with pytest.raises(TypeError, match="MeasuredCeilings"):
        plots.plot_roofline(measured="my laptop")


@pytest.mark.parametrize("bad", [(4, 1), (-1, 2), (1,), "wide"])
def test_intensity_range_must_be_a_rising_positive_pair(bad):
    with pytest.raises(ValueError, match="intensity_range"):
        plots.plot_roofline(intensity_range=bad)


def test_drawing_into_a_given_axes_and_not_into_pyplot():
    before = plt.get_fignums()
    fig = Figure()
    ax = fig.add_subplot()
    assert plots.plot_roofline(ax=ax) is fig
    assert plots.plot_roofline() is not fig
    assert plt.get_fignums() == before  # no figures left behind in pyplot's list


def test_alt_text_from_a_figure_or_from_arguments():
    fig = plots.plot_roofline(gpus="H100")
    assert plots.alt_text(fig) == fig.roofline_alt
    assert plots.alt_text(gpus="H100") == fig.roofline_alt
    assert (
        "H100 SXM: memory roof HBM3 3.35 TB/s; compute roof bf16 (tensor cores) 990 TFLOP/s "
        "with its ridge at 295 FLOP/byte." in fig.roofline_alt
    )  # 989.5e12 / 3.35e12 = 295.4
    with pytest.raises(TypeError):
        plots.alt_text(fig, gpus="H100")
    with pytest.raises(ValueError, match="roofline_alt"):
        plots.alt_text(Figure())
    with pytest.raises(TypeError, match="colour"):
        plots.alt_text(colour="red")


def test_save_png_and_svg(tmp_path):
    png = tmp_path / "roof.png"
    fig = plots.save_roofline(png, gpus=("A100", "H100"))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "H100" in fig.roofline_alt
    svg = tmp_path / "roof.SVG"
    plots.save_roofline(svg)
    first = svg.read_bytes()
    assert b"<svg" in first
    plots.save_roofline(svg)
    assert svg.read_bytes() == first  # no timestamp: the same figure writes the same bytes


def test_save_refuses_other_suffixes_before_drawing(tmp_path):
    target = tmp_path / "roof.pdf"
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        plots.save_roofline(target)
    assert not target.exists()
    with pytest.raises(TypeError, match="ax"):
        plots.save_roofline(tmp_path / "x.png", ax=None)


def test_a_figure_returned_by_a_notebook_cell_shows_as_png():
    fig = plots.plot_roofline()
    assert isinstance(fig, plots.RooflineFigure)
    assert fig._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"  # what IPython calls when pyplot is not in use


def test_ridge_by_precision_leaves_gaps_for_missing_modes():
    from roofline_lib import plots

    fig = plots.plot_ridge_by_precision(["A100", "B200"])
    a100_line, b200_line = fig.axes[0].get_lines()
    a100 = dict(zip(rl.PRECISIONS, a100_line.get_ydata()))
    # A100 bf16: 312e12 / 2039e9 = 153.0 ; no fp8 mode, so no point there
    assert a100["bf16"] == pytest.approx(153.0, abs=0.1)
    assert math.isnan(a100["fp8"])
    # B200 fp4: (144e15 / 8 / 2) / 8e12 = 1125
    assert dict(zip(rl.PRECISIONS, b200_line.get_ydata()))["fp4"] == pytest.approx(1125)
    assert "A100 80GB SXM: fp32" in fig.roofline_alt and "fp8" not in fig.roofline_alt.split("B200")[0]


def test_ridge_by_precision_needs_a_gpu():
    from roofline_lib import plots

    with pytest.raises(ValueError, match="gpus must name at least one"):
        plots.plot_ridge_by_precision([])


def test_labels_of_points_close_together_are_drawn_apart():
    # chapter 4's figure: decode at batch 256 (intensity 228) and a 2,048-token prefill (1,024)
    # sit either side of the H100's bf16 ridge (295); their labels were drawn over each other
    from matplotlib.transforms import Bbox

    h100 = rl.gpu("H100")
    points = [
        plots.Point(label, i, rl.attainable_flops_per_s(i, h100))
        for label, i in (("decode, batch 256", 228.0), ("prefill, 2048 tokens", 1024.0), ("decode, batch 16", 16.0))
    ]
    fig = plots.plot_roofline(gpus="H100", precisions="bf16", points=points, intensity_range=(0.25, 32768))
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts if t.get_text() in {p.label for p in points}]
    assert len(boxes) == 3
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
    half = 3.5 * fig.dpi / 72  # half a 7-point marker
    for p in points:
        x, y = ax.transData.transform((p.intensity, p.flops_per_s / 1e12))
        marker = Bbox.from_extents(x - half, y - half, x + half, y + half)
        assert not any(marker.overlaps(b) for b in boxes), p.label


# --------------------------------------------------------------------------- plots.show


_PAGE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A page

```{code-cell} ipython3
---
mystnb:
  figure:
    caption: Two roofs; the ridge sits at {eval}`prose["ridge:.0f"]` FLOP/byte.
    name: fig-planted
  image:
    alt: A roofline [log-log] with one ridge.
---
plots.show(fig, "fig-planted")
```
"""


def test_show_gives_jupyterlab_the_caption_and_alt_text_of_its_cell(tmp_path, monkeypatch):
    from roofline_lib.present.plots import CaptionedFigure, figure_text, show

    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "page.md").write_text(_PAGE, encoding="utf-8")
    monkeypatch.chdir(tmp_path / "notebooks")  # a kernel starts beside its notebook
    caption, alt = figure_text("fig-planted")
    assert caption.startswith("Two roofs") and alt == "A roofline [log-log] with one ridge."
    out = show(plots.plot_roofline(gpus=["A100"]), "fig-planted")
    assert isinstance(out, CaptionedFigure)
    bundle = out._repr_mimebundle_()
    assert bundle["image/png"] and base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    markdown = bundle["text/markdown"]
    # alt text in the image's brackets (escaped), the caption under it; outside a kernel a prose
    # value is not known, so its role shows an ellipsis rather than its key
    assert markdown.startswith("![A roofline \\[log-log\\] with one ridge.](data:image/png;base64,")
    assert "**Figure.** Two roofs; the ridge sits at … FLOP/byte." in markdown
    assert "prose[" not in markdown


def test_show_fills_prose_values_from_the_running_notebook(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import IPython

    from roofline_lib.present.plots import show
    from roofline_lib.present.prose import Prose

    (tmp_path / "page.md").write_text(_PAGE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    prose = Prose()
    prose("ridge", 153.2)
    monkeypatch.setattr(IPython, "get_ipython", lambda: SimpleNamespace(user_ns={"prose": prose}))
    markdown = show(plots.plot_roofline(gpus=["A100"]), "fig-planted")._repr_mimebundle_()["text/markdown"]
    assert "the ridge sits at 153 FLOP/byte" in markdown  # :.0f of 153.2


def test_show_away_from_its_page_gives_the_bare_image_and_refuses_what_is_no_figure(tmp_path, monkeypatch):
    from roofline_lib.present.plots import figure_text, show

    monkeypatch.chdir(tmp_path)  # no page here names the figure
    assert figure_text("fig-planted") is None
    bundle = show(plots.plot_roofline(gpus=["A100"]), "fig-planted")._repr_mimebundle_()
    assert set(bundle) == {"image/png", "text/plain"}
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure, got str"):
        show("fig", "fig-planted")
    with pytest.raises(TypeError, match="name must be a figure cell's name"):
        figure_text("")


def test_figure_text_sees_an_edited_caption(tmp_path, monkeypatch):
    import os

    from roofline_lib.present.plots import figure_text

    page = tmp_path / "page.md"
    page.write_text(_PAGE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert figure_text("fig-planted")[0].startswith("Two roofs")
    page.write_text(_PAGE.replace("Two roofs", "Both roofs"), encoding="utf-8")
    stat = page.stat()
    os.utime(page, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a later save
    assert figure_text("fig-planted")[0].startswith("Both roofs")
