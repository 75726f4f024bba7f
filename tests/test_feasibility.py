"""One feasibility rule for every price: a model that does not fit, a context beyond the window.

Every public function that prices a step, a serve or a layout is given Llama-2-70B on one H100
(69.0e9 parameters x 2 bytes = 138 GB of bf16 weights against 80 GiB) and a context beyond a
model's maximum position, and each answers the same way: the price is still worked out, the
result's ``fit`` is infeasible, ``feasible`` is False, and its ``str`` starts with the fit's
headline, ``DOES NOT FIT: ...``. Searches never choose an infeasible point.
"""

from __future__ import annotations

import pytest

import roofline_lib as rl
from roofline_lib.workloads import feasibility as fz
from roofline_lib.workloads import serving as sv

GIB = 2**30


@pytest.fixture(scope="module")
def big():
    """Llama-2-70B in bf16 on one H100: 128.5 GiB of weights, 80 GiB of memory."""
    return rl.serving_server(rl.model_config("llama-2-70b"), "H100")


@pytest.fixture(scope="module")
def small():
    """Llama-2-7B on one H100: it fits, and its maximum position is 4,096 tokens."""
    return rl.serving_server(rl.model_config("llama-2-7b"), "H100")


def _marked(result, *words):
    """The rule's one answer: priced, infeasible, and the headline first in ``str``."""
    assert not result.feasible and not result.fit.feasible
    text = str(result)
    assert text.startswith("DOES NOT FIT: ") and text.startswith(result.fit.headline), text
    for w in words:
        assert w in result.fit.reason, (w, result.fit.reason)
    return text


_MEMORY = "and the H100 SXM has 80 GiB"
_WINDOW = "beyond Llama-2-7B's maximum position of 4,096 tokens"


def test_decode_step_of_a_model_that_does_not_fit_is_priced_and_marked(big):
    step = sv.decode_step(big, 1, 2048)
    # the reading: 41.22 ms, still priced (138.1 GB of weights over 3.35 TB/s)
    assert step.seconds == pytest.approx(0.04122, rel=1e-3)
    _marked(step, _MEMORY, "the fewest such devices whose memory holds it: 2")
    # 69.0e9 x 2 bytes = 128.5 GiB of weights, the KV cache and activations on top
    assert step.fit.need_bytes > big.weight_bytes == pytest.approx(128.5 * GIB, rel=1e-3)


def test_decode_prefill_mixed_and_step_time_beyond_the_window(small):
    # 10,000,000 tokens against 4,096: the context fails, and the KV cache (4.9 TB) does not fit either
    _marked(sv.decode_step(small, 1, 10_000_000), _WINDOW, _MEMORY)
    _marked(sv.prefill_step(small, 5000), _WINDOW)
    _marked(sv.mixed_step(small, [4000, 4100], 64), _WINDOW)
    _marked(sv.step_time(small, [sv.Chunk(1, 4096)]), _WINDOW)  # the 4,097th token
    within = sv.step_time(small, [sv.Chunk(1, 4095)])  # the 4,096th: within reach
    assert within.feasible and str(within).startswith("0 prefill + 1 decode tokens")
    assert within.fit.headline.startswith("fits: ") and "of 80 GiB" in within.fit.headline


def test_prefill_and_mixed_steps_of_a_model_that_does_not_fit(big):
    _marked(sv.prefill_step(big, 512), _MEMORY)
    _marked(sv.mixed_step(big, [1024] * 4, 256), _MEMORY, "with 5 sequences of up to")  # 4 decodes + the chunk


def test_a_sliding_window_does_not_lift_the_maximum_position():
    mistral = rl.serving_server(rl.model_config("mistral-7b"), "H100")
    text = _marked(sv.prefill_step(mistral, 9000), "maximum position of 8,192 tokens")
    assert "its sliding window of 4,096 tokens does not lift that limit" in text


def test_kv_capacity_says_none_fit_instead_of_raising(big, small):
    cap = sv.kv_capacity(big, 1024, 256)
    assert cap.max_requests == 0 and cap.kv_bytes_available == 0
    _marked(cap, _MEMORY, "with one request of 1,280 tokens")
    long = sv.kv_capacity(small, 4000, 500)  # 4,500 tokens > 4,096
    assert long.max_requests == 0
    _marked(long, _WINDOW)
    fits = sv.kv_capacity(small, 1024, 256)
    assert fits.feasible and fits.max_requests > 0 and str(fits).startswith(f"{fits.max_requests} requests")


def test_the_steady_state_and_its_frontier(big, small):
    _marked(sv.steady_state(big, "continuous", 1, 1024, 256), _MEMORY)
    _marked(sv.steady_state(small, "continuous", 1, 4000, 500), _WINDOW)
    # not one request fits: the frontier is empty, and the best point says so
    assert sv.steady_frontier(big, "continuous", 1024, 256) == ()
    with pytest.raises(ValueError, match="not one request fits"):
        sv.best_steady_state((), 1.0, 0.05)
    # every point infeasible: the best says why, in the rule's words
    with pytest.raises(ValueError, match="no point can run: DOES NOT FIT: "):
        sv.best_steady_state([sv.steady_state(big, "continuous", 1, 1024, 256)], 10.0, 10.0)


def test_the_frontier_tries_every_batch_the_cache_holds(small):
    cap = sv.kv_capacity(small, 1024, 256).max_requests
    batches = sv.frontier_batches(small, 1024, 256)
    assert list(batches) == list(range(1, min(cap, sv.FRONTIER_MAX_BATCH) + 1))  # 1, 2, 3, ..., not powers of two
    assert 1 < cap < sv.FRONTIER_MAX_BATCH


def test_a_feasible_point_beats_an_infeasible_faster_one(small):
    # static batching prefills the whole batch at once: its activations grow with b x prompt
    points = sv.steady_frontier(small, "static", 1024, 256)
    assert all(p.feasible for p in points[:8])
    forged = [
        *points[:2],
        sv.steady_state(rl.serving_server(rl.model_config("llama-2-70b"), "H100"), "static", 64, 1024, 256),
    ]
    assert forged[-1].tokens_per_s > max(p.tokens_per_s for p in points[:2])
    assert sv.best_steady_state(forged, 100.0, 100.0) in points[:2]  # the faster one cannot run


def test_the_simulator_marks_a_run_that_cannot_run(big, small):
    trace = rl.poisson_trace(3, 2.0, prompt_len=128, output_len=4, seed=0)
    run = rl.simulate(trace, big, "continuous", max_batch=4)
    _marked(run, _MEMORY)
    assert not rl.SLO(ttft_s=100.0, tpot_s=100.0).met_by(run)  # a run that cannot run never meets an SLO
    disagg = rl.simulate_disaggregated(trace, big, small, "nvlink4", max_batch=4)
    _marked(disagg, _MEMORY)  # its prefill device cannot hold the model
    long = rl.poisson_trace(2, 2.0, prompt_len=5000, output_len=4, seed=0)
    _marked(rl.simulate(long, small, "chunked", max_batch=4, chunk_tokens=512), _WINDOW)
    ok = rl.simulate(trace, small, "continuous", max_batch=4)
    assert ok.feasible and ok.fit.feasible and not str(ok).startswith("DOES NOT FIT")


def test_a_frontier_of_runs_that_cannot_run_refuses_to_pick_one(big):
    points = rl.frontier(big, "continuous", (2.0,), n_requests=2, prompt_len=64, output_len=2, seed=0, max_batch=2)
    with pytest.raises(ValueError, match="no point can run: DOES NOT FIT: "):
        rl.best_under_slo(points, rl.SLO(ttft_s=100.0, tpot_s=100.0))


def test_speculative_decoding_counts_the_draft_beside_the_target(big, small):
    _marked(sv.speculative_decoding(big, small, 1, 1024, 0.8, 4), _MEMORY, "target weights", "draft weights")
    _marked(sv.speculative_decoding(small, small, 1, 5000, 0.8, 4), _WINDOW)
    pair = sv.speculative_decoding(small, small, 1, 1024, 0.8, 4)
    assert pair.feasible and pair.fit.need_bytes > 2 * small.weight_bytes  # both models' weights, and KV


def test_prefix_cache_savings_carries_the_prefills_fit(big):
    saved = sv.prefix_cache_savings(big, 1024, 512)
    assert not saved.feasible and saved.fit.headline.startswith("DOES NOT FIT: ")


def test_the_planner_marks_and_the_search_never_ranks_a_layout_that_does_not_fit():
    c = rl.cluster("8x H100", 8)
    p = rl.plan("llama-3-70b", c, dp=8, global_batch=8, seq_len=4096)
    text = _marked(p, "and the H100 SXM has 80 GiB")
    assert "MFU <= " in text and "assumes dp overlapped with the compute" in text  # priced, its assumption said
    search = rl.fit_layouts("llama-3-70b", c, global_batch=8, seq_len=4096)
    assert not search.feasible and search.plans == () and all(not q.feasible for q in search.infeasible)
    assert str(search).startswith("DOES NOT FIT: no layout of Llama-3-70B fits on 8 GPUs")
    with pytest.raises(ValueError, match="DOES NOT FIT: "):
        search.best
    # the fewest GPUs of this node on which some layout fits, and that layout
    assert search.fewest_gpus == 16 and search.fewest.feasible and search.fewest.n_gpus == 16
    assert "the fewest GPUs of this node on which one fits: 16" in search.reason


def test_the_search_beyond_the_window_says_so_and_finds_no_more_gpus():
    search = rl.fit_layouts("llama-3-8b", rl.cluster("8x H100", 8), global_batch=8, seq_len=16384)
    assert not search.feasible and search.fewest_gpus is None
    assert search.reason.startswith("a context of 16,384 tokens is beyond Llama-3-8B's maximum position of 8,192")


def test_the_search_ranks_only_layouts_that_fit_fastest_first():
    search = rl.fit_layouts("llama-3-8b", rl.cluster("8x H100", 8), global_batch=8, seq_len=4096)
    assert search.feasible and search.infeasible  # some fit, some do not
    steps = [p.step_seconds for p in search.plans]
    assert steps == sorted(steps) and search.best is search.plans[0]
    assert all(p.feasible for p in search.plans) and search.headline.startswith("fits: ")


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"global_batch": 0}, ValueError, "global_batch must be"),
        ({"seq_len": "long"}, TypeError, "seq_len must be"),
        ({"zero": (0, 5)}, ValueError, "zero"),
        ({"recompute": "partial"}, ValueError, "recompute must be one of"),
        ({"optimizer": "lion"}, ValueError, "optimizer must be one of"),
    ],
)
def test_the_search_refuses_bad_input_by_name(kwargs, error, match):
    args = {"global_batch": 8, "seq_len": 128} | kwargs
    with pytest.raises(error, match=match):
        rl.fit_layouts("llama-3-8b", rl.cluster("8x H100", 8), **args)


def test_the_rules_own_arithmetic():
    # 100 GiB over 80 GiB devices: 2; exactly 80 GiB: 1 (float noise forgiven)
    assert fz.fewest_devices(100 * GIB, 80 * GIB) == 2 and fz.fewest_devices(80 * GIB, 80 * GIB) == 1
    fit = fz.memory_fit({"weights": 60 * GIB, "KV cache": 0}, 80 * GIB, device="X1", what="a job")
    assert fit.feasible and fit.parts == (("weights", 60 * GIB),) and fit.headline == "fits: 60 GiB of 80 GiB"
    unknown = fz.memory_fit({"weights": 1e12}, None, device="a CPU", what="a job")
    assert unknown.feasible and unknown.headline.startswith("fit not checked: a CPU has no memory capacity")
    cfg = rl.model_config("gpt2-small")
    assert fz.max_context(cfg) == 1024 and fz.context_problem(cfg, 1024) is None
    assert "1,025 tokens is beyond GPT-2 small's maximum position of 1,024" in fz.context_problem(cfg, 1025)
    # a token's activations: 2 d + the wider of QKV and the FFN, in bf16; a logits row: vocab fp32 values
    per_token = (2 * 768 + max(3 * 768, 3072)) * 2
    assert fz.inference_activation_bytes(cfg, 10, 1) == 10 * per_token + 50257 * 4


def test_one_formatter_for_bytes_and_flops_in_human_units(small):
    from roofline_lib.core.formatting import data_size, flop_count, memory_size

    assert data_size(1.381e11) == "138.1 GB" and data_size(512) == "512 B"  # not "1.381e+05 MB"
    assert flop_count(2.635e13) == "26.35 TFLOP" and memory_size(80 * GIB) == "80 GiB"
    assert memory_size(262 * 2**20) == "262 MiB"
    text = str(sv.decode_step(small, 1, 2048))
    assert " GB (" in text and "e+" not in text
