"""Tests for roofline_lib.present.widgets_parallel: the planner's explorer says what parallel.plan says.

The website's parallel mode is held to the same widget in test_explorer_js.py.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

import roofline_lib as rl  # noqa: E402
from roofline_lib import widgets_parallel  # noqa: E402
from roofline_lib.core.formatting import sig3  # noqa: E402

GIB = 2**30  # bytes in a GiB


def _chapter_9_plan(**layout):
    """parallel.plan for chapter 9's start (llama-3-70b on 64 H100s, tp 8), with ``layout`` changed."""
    args = dict(dp=8, tp=8, pp=1, zero=1, global_batch=64, seq_len=4096, recompute="selective") | layout
    return rl.plan("llama-3-70b", rl.cluster("8x-h100", 64), **args)


def test_the_explorer_starts_at_the_planners_step():
    ex = widgets_parallel.parallel_explorer()  # 64 GPUs / (tp 8 x pp 1) = dp 8
    p = _chapter_9_plan()
    assert ex.result == p
    assert f"<b>{p.binding}</b> binds" in ex.readout.value
    # three figures, as the website prints it: 98.7 %, not 99%
    assert f"MFU at most <b>{sig3(100 * p.mfu)} %</b>" in ex.readout.value and "%</b>" in ex.readout.value
    assert "Global batch 64 sequences of 4,096 tokens." in ex.readout.value
    ax = ex.figure.axes[0]
    assert "dp=8 tp=8 pp=1 ZeRO-1" in ax.get_title()
    # memory written in GiB (2**30 bytes), whole numbers in the title
    assert f"memory {p.memory.total / GIB:.0f} of {p.memory.capacity / GIB:.0f} GiB" in ax.get_title()
    bars = {label.get_text(): bar for label, bar in zip(ax.get_yticklabels(), ax.patches)}
    assert set(bars) == {"critical path", *p.roofs}  # the critical path, then one bar per roof
    # tp's all-reduces wait between GEMMs: the critical path, compute + tp, binds and is the red bar
    assert p.binding == "compute + tp" and bars["critical path"].get_width() == pytest.approx(p.step_seconds)
    assert p.step_seconds == pytest.approx(p.roofs["compute"] + p.roofs["tp"])
    for name, bar in bars.items():
        assert bar.get_width() == pytest.approx(p.roofs.get(name, p.critical_seconds))
        assert (bar.get_facecolor() == to_rgba("C3")) == (name == "critical path")  # the binding one red
    assert p.assumption in ex.readout.value and "DOES NOT FIT" not in ex.readout.value


def test_a_layout_that_does_not_fit_says_so_first_and_a_rounded_batch_says_so():
    ex = widgets_parallel.parallel_explorer()
    ex.controls["tp"].value = 1  # dp 64, ZeRO-1: each GPU holds 141 GB of weights and gradients
    assert not ex.result.feasible
    assert ex.readout.value.startswith("<b style='color:#b00020'>DOES NOT FIT: Llama-3-70B training at dp=64")
    assert ex.figure.axes[0].get_title().startswith("DOES NOT FIT. ")
    assert "raised" not in ex.readout.value and "rounded" not in ex.readout.value  # 64 split over dp = 64
    ex.controls["n_gpus"].value = 128  # dp 128: the batch of 64 cannot split, and becomes 128
    raised = "The global batch is raised from 64 to 128 sequences: each of the dp = 128 data-parallel ranks"
    # said in bold, before the step it changed (it was the readout's last sentence, easy to miss)
    assert f"<b>{raised}" in ex.readout.value
    assert ex.readout.value.index(raised) < ex.readout.value.index("binds")
    assert widgets_parallel._batch_note(96, 100, 8) == (
        "The global batch of 100 sequences is rounded down to 96, a multiple of dp = 8."
    )
    assert widgets_parallel._batch_note(64, 64, 8) == ""


def test_dp_is_what_tp_and_pp_leave_and_the_batch_becomes_a_multiple_of_it():
    ex = widgets_parallel.parallel_explorer()
    ex.controls["tp"].value = 1  # 64 / (1 x 1) = dp 64; the batch of 64 stays 64
    assert ex.result == _chapter_9_plan(dp=64, tp=1)
    ex.controls["n_gpus"].value = 128  # dp 128 > 64 sequences: the batch grows to 128, one each
    assert ex.result == rl.plan(
        "llama-3-70b",
        rl.cluster("8x-h100", 128),
        dp=128,
        tp=1,
        pp=1,
        zero=1,
        global_batch=128,
        seq_len=4096,
        recompute="selective",
    )


def test_a_layout_that_does_not_divide_the_gpus_is_refused_in_words():
    ex = widgets_parallel.parallel_explorer()
    ex.controls["n_gpus"].value = 8
    ex.controls["pp"].value = 2  # tp 8 x pp 2 = 16 GPUs, more than the 8 there are
    assert ex.result is None
    assert "tp x pp = 16 GPUs must divide n_gpus = 8 GPUs" in ex.readout.value
    assert ex.figure.axes[0].get_title() == "layout refused" and not ex.figure.axes[0].patches


def test_a_bad_start_is_refused_before_any_widget():
    with pytest.raises(ValueError):
        widgets_parallel.parallel_explorer(model="no-such-model")
