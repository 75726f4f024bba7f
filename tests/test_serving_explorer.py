"""widgets.serving_explorer against roofline_lib.workloads.serving, and its website twin against both.

The explorer draws serving.steady_frontier for every policy and marks serving.best_steady_state
for the chosen one; the markup it writes carries serving.step_counts, from which the site's
``serving`` mode (book/_static/roofline-explorer.js) must reach the same operating point.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402

import pytest  # noqa: E402
from test_explorer_js import registry_js, run_js  # noqa: E402,F401  (the session's JavaScript engine)

import roofline_lib as rl  # noqa: E402
from roofline_lib import serving as sv  # noqa: E402
from roofline_lib import widgets  # noqa: E402


@pytest.fixture(scope="module")
def explorer():
    return widgets.serving_explorer()


def _library_best(model="llama-3-8b", gpu="H100", policy="chunked", ttft=0.5, tpot=0.03):
    server = sv.serving_server(rl.model_config(model), gpu)
    points = sv.steady_frontier(server, policy, 1024, 256, chunk_tokens=2048)
    return points, sv.best_steady_state(points, ttft, tpot)


def test_the_operating_point_is_the_librarys_best_under_the_slo(explorer):
    points, best = _library_best()
    assert explorer.result == best
    assert f"batch {best.batch}</b>" in explorer.readout.value
    limit = sv.kv_capacity(sv.serving_server(rl.model_config("llama-3-8b"), "H100"), 1024, 256).max_requests
    assert f"holds {limit:,} such requests" in explorer.readout.value
    assert points[-1].batch <= limit < 2 * points[-1].batch  # the frontier ends where the KV cache does
    line = explorer.figure.axes[0].get_lines()[sv.POLICIES.index("chunked")]
    sustainable = [p for p in points if p.sustainable]
    assert list(line.get_ydata()) == [p.tokens_per_s for p in sustainable]
    assert line.get_linewidth() == 2.5  # the chosen policy is the bold curve


def test_moving_the_controls_moves_the_point_as_the_library_does():
    ex = widgets.serving_explorer()
    ex.controls["policy"].value = "continuous"
    assert ex.result == _library_best(policy="continuous")[1]
    ex.controls["gpu"].value = rl.gpu("A100").key
    assert ex.result == _library_best(gpu="A100", policy="continuous")[1]
    ex.controls["slo_tpot_s"].value = 10.0
    ex.controls["slo_ttft_s"].value = 10.0
    loose = _library_best(gpu="A100", policy="continuous", ttft=10.0, tpot=10.0)[1]
    assert ex.result == loose and ex.result.batch >= 64  # a loose SLO lets the batch grow


def test_an_slo_nothing_meets_and_a_model_that_does_not_fit_are_said_not_drawn():
    ex = widgets.serving_explorer(policy="static")  # half a round of 255 decode steps: TTFT over 0.5 s
    assert ex.result is None and "no batch meets the SLO" in ex.readout.value
    ex.controls["gpu"].value = rl.gpu("L4").key  # 24 GB: a 70B model's 141 GB of weights do not fit
    big = widgets.serving_explorer(model="llama-2-70b", gpu="L4")
    assert big.result is None and "leave no room for a KV cache" in big.readout.value
    assert all(len(line.get_xdata()) == 0 for line in big.figure.axes[0].get_lines()[:4])


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"policy": "fifo"}, ValueError, "policy must be one of static, continuous"),
        ({"slo_tpot_s": 20.0}, ValueError, "slo_tpot_s must be between 0.001 and 10 seconds"),
        ({"slo_ttft_s": 0}, ValueError, "slo_ttft_s must be a positive"),
        ({"chunk_tokens": 0}, ValueError, "chunk_tokens must be a positive whole number"),
        ({"model": "mixtral-8x7b"}, ValueError, "experts or a sliding window"),
    ],
)
def test_bad_starting_values_are_refused_by_name(kwargs, error, message):
    with pytest.raises(error, match=message):
        widgets.serving_explorer(**kwargs)


def test_the_markup_carries_the_step_counts_and_follows_the_controls(explorer):
    attrs = explorer.site_attributes
    counts = sv.step_counts(sv.serving_server(rl.model_config("llama-3-8b"), "H100"))
    assert attrs["data-mode"] == "serving" and attrs["data-gpu"] == rl.gpu("H100").key
    assert int(attrs["data-body-flops"]) == counts.body_flops_per_token
    assert int(attrs["data-kv-bytes-per-token"]) == counts.kv_bytes_per_token == 131072  # 2 * 32 * 8 * 128 * 2
    assert int(attrs["data-stored-weight-bytes"]) == rl.model_config("llama-3-8b").n_params() * 2
    page = explorer._repr_mimebundle_()["text/html"]
    assert re.search(r'</figure><div class="roofline-explorer" data-mode="serving"[^>]*></div>$', page)
    ex = widgets.serving_explorer()
    ex.controls["policy"].value = "disaggregated"
    assert 'data-policy="disaggregated"' in ex._repr_mimebundle_()["text/html"]


@pytest.mark.parametrize(
    "gpu, policy, ttft, tpot",
    [("H100", "chunked", 0.5, 0.03), ("A100", "continuous", 0.2, 0.05), ("H200", "disaggregated", 1.0, 0.02)],
)
def test_the_website_explorer_starts_at_the_widgets_operating_point(run_js, gpu, policy, ttft, tpot):  # noqa: F811
    ex = widgets.serving_explorer(gpu=gpu, policy=policy, slo_ttft_s=ttft, slo_tpot_s=tpot)
    attrs = ex.site_attributes
    names = ("body_flops", "key_flops", "unembed_flops", "weight_bytes_fixed", "weight_bytes_per_token")
    counts = {n: float(attrs["data-" + n.replace("_", "-")]) for n in names}
    counts["kv_bytes_per_token"] = float(attrs["data-kv-bytes-per-token"])
    counts["stored_weight_bytes"] = float(attrs["data-stored-weight-bytes"])
    (best,) = run_js(
        [
            {
                "op": "best",
                "counts": counts,
                "gpu": attrs["data-gpu"],
                "policy": attrs["data-policy"],
                "prompt_len": int(attrs["data-prompt-len"]),
                "output_len": int(attrs["data-output-len"]),
                "chunk_tokens": int(attrs["data-chunk-tokens"]),
                "ttft_s": float(attrs["data-slo-ttft-s"]),
                "tpot_s": float(attrs["data-slo-tpot-s"]),
            }
        ]
    )
    assert best["batch"] == ex.result.batch, best
    assert best["tokensPerS"] == pytest.approx(ex.result.tokens_per_s, rel=1e-12)
    assert best["tpotS"] == pytest.approx(ex.result.tpot_s, rel=1e-12)
