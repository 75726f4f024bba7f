"""Tests for roofline_lib.present.explorer: the Explorer every explorer is, and the pieces they share.

On a page with no kernel an Explorer is a still figure with alt text, followed by the element that
starts the website's explorer; its ``data-*`` values are written so the script reads them back.
"""

from __future__ import annotations

import base64
import html
import io
import re

import ipywidgets as w
import numpy as np
import pytest
from PIL import Image

from roofline_lib import explorer, widgets, widgets_parallel

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _img(bundle: dict) -> tuple[bytes, str]:
    m = re.search(r'<img src="data:image/png;base64,([^"]+)" alt="([^"]+)">', bundle["text/html"])
    assert m, bundle["text/html"][:200]
    return base64.b64decode(m.group(1)), m.group(2)


def test_the_bundle_has_the_live_view_and_a_still_figure_of_the_same_state():
    ex = widgets.roofline_explorer(gpu="A100", precision="bf16", intensity=10.0)
    bundle = ex._repr_mimebundle_()
    assert WIDGET_VIEW in bundle  # JupyterLab draws the live widget from this
    png, alt = _img(bundle)
    assert png == ex.last_png and png[:8] == b"\x89PNG\r\n\x1a\n"
    # 2.039e12 B/s * 10 FLOP/byte = 20.39e12 FLOP/s -> "20.4 TFLOP/s", below the ridge (153)
    assert "A100" in alt and "20.4 TFLOP/s" in alt and "memory-bound" in alt, alt
    assert "<b>" not in alt and "&lt;" not in alt  # the readout's words, not its markup
    caption = re.search(r"<figcaption>(.*)</figcaption>", bundle["text/html"]).group(1)
    assert "live in the notebook" in caption and "make lab" in caption


def test_the_still_figure_follows_the_controls():
    ex = widgets.roofline_explorer(gpu="A100", precision="bf16", intensity=10.0)
    png_before, alt_before = _img(ex._repr_mimebundle_())
    ex.controls["intensity"].value = 1000.0  # past the ridge: 312 TFLOP/s, compute-bound
    png_after, alt_after = _img(ex._repr_mimebundle_())
    assert png_after != png_before
    assert "312 TFLOP/s" in alt_after and "compute-bound" in alt_after, alt_after


def test_every_explorer_describes_itself():
    for make in (widgets.decode_explorer, widgets.flop_share_explorer, widgets.mfu_explorer):
        ex = make()
        alt = _img(ex._repr_mimebundle_())[1]
        assert len(alt) > 40 and re.search(r"\d", alt), (make.__name__, alt)


def test_the_still_figure_is_followed_by_the_element_of_the_kernel_free_explorer():
    ex = widgets.decode_explorer(n_params=7e9, gpu="H100", batch=1)
    page = ex._repr_mimebundle_()["text/html"]
    # the figure first, then the element the page's script turns into the live explorer, nothing else
    assert page.startswith('<figure class="roofline-snapshot">')
    assert page.endswith("</figure>" + ex.site_html())
    assert page.count('class="roofline-explorer"') == 1
    assert 'data-mode="decode"' in page and 'data-n-params="7000000000"' in page and 'data-batch="1"' in page
    ex.controls["batch"].value = 64  # what the page starts from follows the widget's state
    assert 'data-batch="64"' in ex._repr_mimebundle_()["text/html"]


def test_every_explorer_brings_its_kernel_free_explorer_to_the_page():
    for make in (
        widgets.roofline_explorer,
        widgets.decode_explorer,
        widgets.flop_share_explorer,
        widgets.mfu_explorer,
        widgets.collective_explorer,
    ):
        page = make()._repr_mimebundle_()["text/html"]
        assert re.search(r'</figure><div class="roofline-explorer" data-mode="[a-z]+"[^>]*></div>$', page), (
            make.__name__,
            page[-300:],
        )


# ------------------------------------------------------------------ the website explorer's element


def test_markup_values_are_escaped():
    ex = widgets.roofline_explorer()
    ex._site_state = lambda: {"gpu": 'A"100<b>&'}  # a value no registry has, to see the escaping
    assert 'data-gpu="A&quot;100&lt;b&gt;&amp;"' in ex.site_html()
    (value,) = re.findall(r'data-gpu="([^"]*)"', ex.site_html())
    assert html.unescape(value) == 'A"100<b>&'


def test_an_explorer_without_a_website_twin_writes_no_markup():
    fig = explorer._figure()[0]
    ex = explorer.Explorer({}, fig, lambda: None, title="bare")
    assert ex.site_attributes == {} and ex.site_html() == ""
    with pytest.raises(ValueError, match="site_mode and site_state go together"):
        explorer.Explorer({}, fig, lambda: None, title="half", site_mode="intensity")


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (True, "true"),
        (False, "false"),
        (256, "256"),
        (6738415616.0, "6738415616"),  # whole: digits, no ".0"
        (2.0**53, "9007199254740992.0"),  # past 2**53 a float is not an exact int: Python's shortest form
        (1.75, "1.75"),
        (0.1, "0.1"),  # the shortest form that reads back as the same double, not 0.1000000000000000055
        (5e-6, "5e-06"),
        ("NVLink 4", "NVLink 4"),
    ],
)
def test_attribute_values_are_written_as_the_script_reads_them(value, written):
    assert explorer._attribute(value, "x") == written
    if isinstance(value, float):
        assert float(written) == value  # the round trip is exact


def test_attribute_values_refuse_what_the_script_cannot_read():
    with pytest.raises(ValueError, match="message_bytes must be a finite number"):
        explorer._attribute(float("nan"), "message_bytes")
    with pytest.raises(TypeError, match="link must be a number, a string or a bool"):
        explorer._attribute(None, "link")


# ------------------------------------------------------------------ the machinery


def test_a_control_redraws_once_and_a_hook_runs_before_the_redraw():
    fig, ax = explorer._figure()
    slider = w.IntSlider(value=1, min=0, max=10)
    other = w.IntSlider(value=0, min=0, max=100)
    redraws = []

    def recompute():
        redraws.append((slider.value, other.value))
        ax.set_title(f"{slider.value} and {other.value}")

    def hook(new):  # moves a second control; that move must not redraw on its own
        other.value = new * 10

    ex = explorer.Explorer({"a": slider, "b": other}, fig, recompute, title="hooked", hooks={"a": hook})
    slider.value = 3
    assert redraws == [(3, 30)]  # one redraw, after the hook: 3 * 10 = 30
    assert ex.alt_text == "hooked: 3 and 30."
    other.value = 5
    assert redraws[-1] == (3, 5) and len(redraws) == 2


def test_a_held_explorer_computes_each_change_and_draws_once_at_the_end():
    ex = widgets.roofline_explorer(gpu="A100", precision="bf16", intensity=10.0)
    first_png, pictures = ex.last_png, []
    with ex.drawing_held():
        for intensity in (20.0, 1000.0):
            ex.controls["intensity"].value = intensity
            pictures.append(ex.last_png)
            # computed at once: 2.039e12 B/s times the intensity, up to the 312 TFLOP/s roof
            assert ex.result["attainable_flops_per_s"] == pytest.approx(min(2.039e12 * intensity, 312e12))
        assert "compute-bound" in ex.readout.value  # 1000 FLOP/byte, past the A100's ridge (153)
        with ex.drawing_held():  # nested: the outer block draws
            ex.controls["intensity"].value = 500.0
        assert ex.last_png is first_png
    assert pictures == [first_png, first_png]  # nothing drawn inside the block
    held_png = ex.last_png
    assert held_png != first_png and held_png[:4] == b"\x89PNG"
    ex.update()
    assert ex.last_png == held_png  # the picture drawn at the end is the controls' last state
    with pytest.raises(RuntimeError), ex.drawing_held():
        ex.controls["intensity"].value = 30.0
        raise RuntimeError("a step failed")
    assert ex.last_png != held_png  # drawn even so: the figure never stays behind the controls


def test_an_error_replaces_the_readout_and_the_result():
    fig = explorer._figure()[0]
    ex = explorer.Explorer({}, fig, lambda: None, title="bare")
    ex.result = 42
    ex.show_error("batch must be <= 8, got 9")
    assert ex.result is None
    assert ex.readout.value == "<span style='color:#b00020'>batch must be &lt;= 8, got 9</span>"


def test_a_log_slider_spans_its_decades_and_a_start_outside_is_refused():
    slider = explorer._log_slider(10.0, (-2.0, 4.0), "FLOP/byte")
    assert (slider.min, slider.max, slider.base) == (-2.0, 4.0, 10) and slider.value == 10.0
    assert explorer._span((-2.0, 4.0)) == (0.01, 10000.0)
    assert explorer._in_span(0.01, (-2.0, 4.0), "intensity", "FLOP/byte") == 0.01  # the end is inside
    with pytest.raises(ValueError, match=re.escape("intensity must be between 0.01 and 10000 FLOP/byte, got 0.005")):
        explorer._in_span(0.005, (-2.0, 4.0), "intensity", "FLOP/byte")


def test_widgets_hands_out_the_same_explorer_class():
    # chapters and tests that reach Explorer through widgets get this module's class
    assert widgets.Explorer is explorer.Explorer and isinstance(widgets.roofline_explorer(), explorer.Explorer)


# --------------------------------------------------------------------------- the kept axes


def _pixels_of_a_full_draw(ex):
    ex.figure.canvas.draw()
    return np.asarray(ex.figure.canvas.buffer_rgba()).copy()


def _pixels_shown(ex):
    return np.asarray(Image.open(io.BytesIO(ex.last_png)).convert("RGBA"))


def _ends(control) -> list:
    """A control's far values: a menu's last option, a slider's maximum and minimum, a box's other state."""
    options = getattr(control, "options", None)
    if options:
        last = list(options)[-1]
        return [last[1] if isinstance(last, tuple) else last]
    if isinstance(control.value, bool):
        return [not control.value]
    if hasattr(control, "max"):
        return [control.max, control.min]
    return []


ALL_EXPLORERS = [
    widgets.roofline_explorer,
    widgets.decode_explorer,
    widgets.flop_share_explorer,
    widgets.mfu_explorer,
    widgets.collective_explorer,
    widgets.serving_explorer,
    widgets_parallel.parallel_explorer,
]


@pytest.mark.parametrize("make", ALL_EXPLORERS, ids=lambda f: f.__name__)
def test_a_redraw_over_the_kept_axes_is_the_picture_a_full_draw_makes(make):
    ex = make()
    for control in ex.controls.values():
        for value in _ends(control):
            control.value = value  # the explorer redraws (the last control may be refused: the readout says so)
            assert np.array_equal(_pixels_shown(ex), _pixels_of_a_full_draw(ex)), (control.description, value)


def test_a_slider_move_draws_the_data_only_and_a_new_gpu_the_whole_figure():
    ex = widgets.roofline_explorer(gpu="A100", intensity=10.0)
    frame = ex._frame
    before = frame.full_draws
    ex.controls["intensity"].value = 300.0  # the dot moves along the same axes
    assert frame.full_draws == before
    ex.controls["gpu"].value = "h100-sxm"  # a higher roof: the y range and the title change
    assert frame.full_draws == before + 1
    assert "H100" in ex.figure.axes[0].get_title()
    assert np.array_equal(_pixels_shown(ex), _pixels_of_a_full_draw(ex))


def test_the_kept_axes_follow_a_change_the_key_knows_and_a_stale_key_would_show():
    ex = widgets.roofline_explorer(gpu="A100", intensity=10.0)
    ax = ex.figure.axes[0]
    ax.set_xlim(0.1, 1000.0)  # a change a chapter might make by hand
    ex.update()
    assert np.array_equal(_pixels_shown(ex), _pixels_of_a_full_draw(ex))
    ex._frame._still = explorer._still_key(ex.figure)  # as if the key missed the next change ...
    ax.set_xlabel("a label the kept picture does not have")
    ex._frame._still = explorer._still_key(ex.figure)
    ex.update()
    assert not np.array_equal(_pixels_shown(ex), _pixels_of_a_full_draw(ex))  # ... the picture would be stale
