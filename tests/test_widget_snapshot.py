"""widgets.Explorer on a page with no kernel: a still figure with alt text, and where it is live."""

from __future__ import annotations

import base64
import re

from roofline_lib import widgets

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
