"""The scheduler: requests arrive, a policy batches them into steps; worked by hand on toy step times.

The toy model below is small enough to count by hand (bytes_per_param = 1, so parameters = bytes):

* d_model 4, one head of 4, d_ff 8 (not gated), one layer, vocabulary 8, untied embeddings;
* weights read by a step of T new tokens: Q, K, V, O 4 * 16 = 64, FFN 2 * 4 * 8 = 64, norms
  2 * 4 + 4 = 12, unembedding 8 * 4 = 32, and one embedding row of 4 per token: 172 + 4 T;
* FLOPs: 2 * (64 + 64) = 256 per token of matmuls, 4 * 1 head * 4 = 16 per key attended to,
  2 * 8 * 4 = 64 per logits row;
* KV cache: 2 (K and V) * 1 layer * 1 head * 4 = 8 bytes per token.

On the toy roof (1000 FLOP/s, 100 B/s: ridge 10 FLOP/byte) every answer is a small fraction.
"""

from __future__ import annotations

import dataclasses

import pytest

import roofline_lib as rl
from roofline_lib import scheduler as sch
from roofline_lib import serving as sv

TOY = rl.TransformerConfig(d_model=4, d_ff=8, n_layers=1, n_heads=1, vocab=8, seq_len=64, gated=False, name="toy")
TOY_ROOF = rl.Roof(1000.0, 100.0, "toy roof")


@pytest.fixture(scope="module")
def toy():
    return sv.serving_server(TOY, TOY_ROOF, bytes_per_param=1)


TRACE = (sch.Request(0, 0.0, 4, 3), sch.Request(1, 0.5, 4, 2))


def _flat(work):  # a prefill step 1 s, a decode step 0.1 s
    return 1.0 if any(not s.decoding for s, _ in work) else 0.1


def test_continuous_batching_prefills_a_newcomer_while_the_running_decode_waits():
    run = sch.run_policy(TRACE, _flat, "continuous", max_batch=4)
    r0, r1 = run.times
    # t 0-1 prefill R0; 1-2 prefill R1 (arrived at 0.5); 2-2.1 decode both (R1 done); 2.1-2.2 R0 done
    assert (r0.ttft_s, r0.tpot_s) == pytest.approx((1.0, 0.6))  # (2.2 - 1.0) / 2
    assert (r1.ttft_s, r1.tpot_s) == pytest.approx((1.5, 0.1))
    assert run.steps == 4


def test_the_gaps_between_tokens_show_the_stall_a_prefill_puts_in_the_running_decode():
    run = sch.run_policy(TRACE, _flat, "continuous", max_batch=4)
    # R0's first token at 1.0, its second waits for R1's prefill (1-2) and a decode: 2.1 - 1.0 = 1.1;
    # then R1 2.0 -> 2.1 and R0 2.1 -> 2.2, 0.1 each
    assert run.gaps_s == pytest.approx((1.1, 0.1, 0.1))
    assert run.tbt(100) == pytest.approx(1.1)  # the worst gap
    assert run.times[0].tpot_s == pytest.approx(0.6)  # the mean, (1.1 + 0.1) / 2, hides half of it
    static = sch.run_policy(TRACE, _flat, "static", max_batch=4)
    assert static.tbt(100) == pytest.approx(0.1)  # static never puts a prefill between two tokens


def test_static_batching_makes_a_newcomer_wait_for_the_whole_batch():
    run = sch.run_policy(TRACE, _flat, "static", max_batch=4)
    r0, r1 = run.times
    # t 0-1 prefill R0; 1.1 and 1.2 decode R0; 1.2-2.2 prefill R1; 2.3 decode R1
    assert (r0.ttft_s, r0.tpot_s) == pytest.approx((1.0, 0.1))
    assert (r1.ttft_s, r1.tpot_s) == pytest.approx((1.7, 0.1))


def test_chunked_prefill_splits_prompts_and_carries_decodes_in_the_same_step():
    run = sch.run_policy(
        TRACE, lambda work: 0.1 * sum(c.tokens for _, c in work), "chunked", max_batch=4, chunk_tokens=3
    )
    r0, r1 = run.times
    # 0-0.3 R0 chunk of 3; 0.3-0.4 its last token; 0.4-0.5 decode; 0.5-0.8 decode R0 + 2 of R1 (R0 done);
    # 0.8-1.0 the rest of R1; 1.0-1.1 decode R1
    assert (r0.ttft_s, r0.tpot_s) == pytest.approx((0.4, 0.2))
    assert (r1.ttft_s, r1.tpot_s) == pytest.approx((0.5, 0.1))


def test_kv_capacity_holds_back_admission():
    # each request reserves ceil(7 / 4) * 4 = 8 tokens; 8 tokens of cache fit one at a time
    run = sch.run_policy(TRACE, _flat, "continuous", max_batch=4, kv_capacity_tokens=8, block_tokens=4)
    r0, r1 = run.times
    assert r0.finish_s == pytest.approx(1.2)  # prefill 1.0 + two decodes, R1 waiting for cache
    assert r1.first_token_s == pytest.approx(2.2)  # admitted when R0 frees its 8 tokens at 1.2, then 1 s of prefill
    free = sch.run_policy(TRACE, _flat, "continuous", max_batch=4, kv_capacity_tokens=16, block_tokens=4)
    assert free.times[1].first_token_s == pytest.approx(2.0)  # room for both: as without a limit


def test_disaggregated_serving_prices_the_kv_transfer_on_the_link(toy):
    one = (sch.Request(0, 0.0, 16, 2),)
    run = sch.simulate_disaggregated(one, toy, toy, 64e6, max_batch=4)
    (r,) = run.times
    assert r.ttft_s == pytest.approx(6.336)  # the prefill of 16 tokens (compute-bound; test_serving prices it)
    # 16 tokens * 8 bytes = 128 bytes at 64 MB/s = 2 us; decode at context 17: (176 + 17 * 8) / 100 = 3.12 s
    assert r.finish_s == pytest.approx(6.336 + 2e-6 + 3.12, abs=1e-9)
    assert run.gaps_s == pytest.approx((2e-6 + 3.12,))  # the second token waits for the transfer too
    assert run.devices == 2


def test_the_same_seed_gives_the_same_trace_and_another_seed_another():
    a = sch.poisson_trace(20, 5.0, (10, 20), 8, seed=3)
    assert a == sch.poisson_trace(20, 5.0, (10, 20), 8, seed=3)
    assert a != sch.poisson_trace(20, 5.0, (10, 20), 8, seed=4)
    assert a[0].arrival_s == 0 and all(10 <= r.prompt_len <= 20 and r.output_len == 8 for r in a)


def test_the_frontier_trades_latency_for_throughput_and_the_slo_picks_a_point(toy):
    fast = dataclasses.replace(toy, roof=rl.Roof(1e6, 1e5, "fast toy"))  # steps of milliseconds
    points = sch.frontier(
        fast, "continuous", [1.0, 20.0, 200.0], n_requests=30, prompt_len=8, output_len=8, seed=0, max_batch=8
    )
    assert points[0].tokens_per_s < points[-1].tokens_per_s
    assert points[0].ttft_p99_s < points[-1].ttft_p99_s
    loose = sch.SLO(ttft_s=10.0, tpot_s=10.0)
    assert sch.best_under_slo(points, loose) is max(points, key=lambda p: p.tokens_per_s)
    with pytest.raises(ValueError, match="no point meets the SLO"):
        sch.best_under_slo(points, sch.SLO(ttft_s=1e-9, tpot_s=1e-9))


def test_the_rate_search_finds_the_edge_a_coarse_grid_misses(toy):
    fast = dataclasses.replace(toy, roof=rl.Roof(1e6, 1e5, "fast toy"))  # steps of milliseconds
    common = dict(n_requests=30, prompt_len=8, output_len=8, seed=0, max_batch=8)
    slo = sch.SLO(ttft_s=0.05, tpot_s=0.01)
    found = sch.best_rate_under_slo(
        fast, "continuous", slo, low_per_s=1.0, high_per_s=200.0, resolution_per_s=1.0, **common
    )
    assert slo.met_by(found.best.run) and found.resolution_per_s <= 1.0
    rates = [p.rate_per_s for p in found.points]
    assert rates == sorted(rates) and found.best in found.points
    # just above the best rate the SLO fails: the bracket closed on the edge
    above = min(r for r in rates if r > found.best.rate_per_s)
    assert above - found.best.rate_per_s <= 1.0 and not slo.met_by(found.points[rates.index(above)].run)
    # the grid 1, 20, 200 reads at most the search's best, never more
    grid = sch.best_under_slo(sch.frontier(fast, "continuous", [1.0, 20.0, 200.0], **common), slo)
    assert grid.tokens_per_s <= found.best.tokens_per_s
    assert str(found).startswith("continuous: best ") and "to within" in str(found)
    with pytest.raises(ValueError, match="low_per_s must be below high_per_s"):
        sch.best_rate_under_slo(fast, "continuous", slo, low_per_s=5.0, high_per_s=5.0, **common)
    with pytest.raises(ValueError, match="no point meets the SLO"):
        sch.best_rate_under_slo(fast, "continuous", sch.SLO(1e-9, 1e-9), low_per_s=1.0, high_per_s=2.0, **common)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda s: sch.Request(0, 0.0, 8, 1), "output_len must be at least 2 tokens"),
        (lambda s: sch.simulate(TRACE, s, "fifo", max_batch=2), "policy must be one of"),
        (lambda s: sch.simulate(TRACE, s, "chunked", max_batch=2), "chunk_tokens"),
        (lambda s: sch.simulate(TRACE, s, "continuous", max_batch=2, kv_capacity_tokens=4), "over kv_capacity_tokens"),
        (
            lambda s: sch.simulate(TRACE, s, "continuous", max_batch=2, kv_capacity_tokens=64, allocation="contiguous"),
            "max_seq_len",
        ),
        (
            lambda s: sch.poisson_trace(4, 0, 8, 8, seed=0),
            "rate_per_s must be a positive number of requests per second",
        ),
    ],
)
def test_bad_input_is_refused_naming_the_parameter_and_unit(toy, call, message):
    with pytest.raises(ValueError, match=message):
        call(toy)


def _fit_by_pricing_every_step(server, trace, policy, **limits):
    """The fit a run keeps, found the slow way: every step priced in full, its fit written out."""
    kept = None

    def execute(work):
        nonlocal kept
        step = sv.step_time(server, [c for _, c in work])
        f = step.fit
        if kept is None or (kept.feasible and (not f.feasible or f.need_bytes > kept.need_bytes)):
            kept = f
        return step.seconds

    run = sch.run_policy(trace, execute, policy, **limits)
    return run, kept


@pytest.mark.parametrize(
    ("model", "gpu", "prompt", "expect_fit"),
    [
        ("llama-3-8b", "H100 SXM", (64, 512), True),
        ("llama-2-70b", "H100 SXM", (64, 512), False),
        ("llama-2-7b", "H100 SXM", (3000, 3900), False),
    ],
    ids=("fits", "weights-too-big", "past-the-context"),
)
def test_a_simulated_run_keeps_the_fit_that_pricing_every_step_in_full_keeps(model, gpu, prompt, expect_fit):
    # simulate writes out a step's fit only when it is the one the run keeps (the first that does
    # not fit, else the largest): the same fit, and the same times, as writing every step's out
    server = rl.serving_server(rl.model_config(model), gpu)
    trace = rl.poisson_trace(24, 40.0, prompt, (200, 400), seed=1)
    for policy in ("continuous", "chunked"):
        limits = dict(max_batch=16, chunk_tokens=512 if policy == "chunked" else None)
        fast = rl.simulate(trace, server, policy, **limits)
        slow, kept = _fit_by_pricing_every_step(server, trace, policy, **limits)
        assert fast.fit == kept and fast.fit.feasible is expect_fit, (policy, fast.fit)
        assert fast.times == slow.times and fast.steps == slow.steps and fast.busy_s == slow.busy_s
