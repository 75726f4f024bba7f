"""Serving: step times, TTFT/TPOT, KV capacity, speculative decoding, prefix caching, the live loop.

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


def test_the_toy_counts_are_the_ones_worked_by_hand(toy):
    assert TOY.n_params() == 204  # 64 + 64 + 12 + 32 + 32
    assert toy.kv_bytes_per_token == 8  # 2 * 1 * 1 * 4 * 1 byte


# --------------------------------------------------------------------------- step times


def test_a_decode_step_counts_weights_once_and_each_sequences_cache(toy):
    step = sv.decode_step(toy, batch=2, context_len=3)
    assert step.flops == 736  # 2 * (256 + 16 * 3 keys + 64)
    assert step.weight_bytes == 180  # 172 + 4 * 2 rows
    assert step.kv_bytes == 48  # 2 sequences * 3 tokens * 8
    assert step.seconds == pytest.approx(2.28)  # 228 bytes / 100 B/s beats 736 / 1000 FLOP/s
    assert step.bound == "memory" and step.decode_tokens == 2 and step.prefill_tokens == 0


def test_a_prefill_counts_the_causal_keys_and_one_logits_row(toy):
    short, long = sv.prefill_step(toy, 4), sv.prefill_step(toy, 16)
    assert short.flops == 1248  # 4 * 256 + (1 + 2 + 3 + 4) keys * 16 + 64
    assert short.bytes_moved == 220  # 172 + 4 * 4 rows + 4 tokens * 8 written
    assert short.bound == "memory"  # 1248 / 220 = 5.7 < 10
    assert long.flops == 6336  # 16 * 256 + 136 keys * 16 + 64
    assert long.bound == "compute" and long.seconds == pytest.approx(6.336)  # 6336 / 364 = 17 > 10


def test_a_mixed_step_adds_the_decodes_and_the_chunk_in_one_pass(toy):
    step = sv.mixed_step(toy, [3], prefill_tokens=4, prefill_offset=2)
    assert step.flops == 1744  # 5 tokens * 256 + (3 + 4 * 2 + 10) keys * 16 + 2 rows * 64
    assert step.weight_bytes == 192  # 172 + 5 rows * 4
    assert step.kv_bytes == 72  # read 2 + 2 cached, write 1 + 4 new: 9 * 8
    assert step.seconds == pytest.approx(2.64) and step.bound == "memory"


def test_the_bound_comes_from_the_roof_even_exactly_at_the_ridge():
    # 256 + 16 + 64 = 336 FLOP over 172 + 4 + 8 = 184 bytes; a roof whose ridge is that ratio
    at_ridge = rl.Roof(336.0, 184.0, "ridge roof")
    step = sv.decode_step(sv.serving_server(TOY, at_ridge, bytes_per_param=1), 1, 1)
    assert step.intensity == pytest.approx(at_ridge.ridge)
    assert step.bound == at_ridge.bound(step.intensity) == "compute"


def test_a_decode_step_on_a_gpu_matches_the_model_decode_ceiling():
    cfg = rl.model_config("llama-3-8b")
    server = sv.serving_server(cfg, "H100")
    for batch, context in ((1, 1024), (64, 4096)):
        ceiling = rl.model_decode_ceiling(cfg, "H100", batch=batch, context_len=context)
        step = sv.decode_step(server, batch, context)
        assert step.seconds == pytest.approx(ceiling.seconds_per_step, rel=1e-12)
        assert step.bound == ceiling.bound


def test_a_sliding_window_caps_the_keys_and_the_cache(toy):
    windowed = sv.serving_server(dataclasses.replace(TOY, sliding_window=2), TOY_ROOF, bytes_per_param=1)
    step = sv.decode_step(windowed, 1, 5)
    assert step.flops == 256 + 16 * 2 + 64  # two keys, not five
    assert step.kv_bytes == 2 * 8


def test_overhead_is_added_to_every_step(toy):
    slow = dataclasses.replace(toy, overhead_seconds=0.5)
    assert sv.decode_step(slow, 2, 3).seconds == pytest.approx(2.28 + 0.5)


# --------------------------------------------------------------------------- TTFT and TPOT


def test_ttft_and_tpot_of_one_request():
    t = sv.RequestTimes(arrival_s=1.0, first_token_s=1.5, finish_s=2.5, output_tokens=5)
    assert t.ttft_s == 0.5 and t.tpot_s == 0.25 and t.latency_s == 1.5  # (2.5 - 1.5) / 4 gaps


# --------------------------------------------------------------------------- KV capacity


def test_paged_blocks_fit_more_requests_than_contiguous_slabs(toy):
    server = dataclasses.replace(toy, capacity_bytes=1204.0)  # 1204 - 204 of weights = 1000 bytes = 125 tokens
    paged = sv.kv_capacity(server, 10, 10, block_tokens=16)
    assert (paged.tokens, paged.reserved_per_request, paged.max_requests) == (125, 32, 3)  # 125 // 32
    assert paged.waste_fraction == pytest.approx(0.375)  # 1 - 20 / 32
    slab = sv.kv_capacity(server, 10, 10, allocation="contiguous", max_seq_len=64)
    assert slab.max_requests == 1  # 125 // 64
    narrow = sv.kv_capacity(dataclasses.replace(server, kv_bytes_per_elem=0.5), 10, 10, block_tokens=16)
    assert narrow.max_requests == 7  # 4 bytes a token: 250 tokens // 32


# --------------------------------------------------------------------------- speculative decoding


@pytest.mark.parametrize("alpha, gamma, tokens", [(0, 4, 1.0), (1, 4, 5.0), (0.5, 2, 1.75)])
def test_expected_tokens_per_verification(alpha, gamma, tokens):
    assert sv.expected_tokens_per_step(alpha, gamma) == pytest.approx(tokens)  # (1 - 0.125) / 0.5 = 1.75


def test_expected_tokens_approach_gamma_plus_one_as_alpha_approaches_one():
    assert sv.expected_tokens_per_step(1 - 1e-9, 4) == pytest.approx(5.0, rel=1e-6)


def _draft():
    return rl.TransformerConfig(
        d_model=1024, d_ff=2816, n_layers=8, n_heads=8, vocab=128256, seq_len=8192, name="draft"
    )


def test_speculation_pays_while_decode_is_memory_bound_and_loses_at_a_large_batch():
    target = sv.serving_server(rl.model_config("llama-3-8b"), "H100")
    draft = sv.serving_server(_draft(), "H100")
    small = sv.speculative_decoding(target, draft, 1, 128, 0.8, 4)
    large = sv.speculative_decoding(target, draft, 512, 128, 0.8, 4)  # short contexts: the weights dominate
    assert small.verify_bound == "memory" and small.speedup > 1.5
    assert large.verify_bound == "compute" and large.speedup < 1
    nothing = sv.speculative_decoding(target, draft, 1, 1024, 0.0, 4)
    assert nothing.speedup < 1  # every draft rejected: the draft's time is pure loss


def test_leviathans_speedup_closed_form_by_hand():
    # alpha 0.5, gamma 2: E = 1.75 tokens; a draft step costing 0.125 of the target's: 1.75 / (2 * 0.125 + 1) = 1.4
    assert sv.speculative_speedup(0.5, 2, 0.125) == pytest.approx(1.4)
    assert sv.speculative_speedup(0.0, 4, 0.1) == pytest.approx(1 / 1.4)  # nothing accepted: pure loss
    assert sv.speculative_speedup(1.0, 4, 0.0) == 5.0  # a free, perfect draft: gamma + 1
    with pytest.raises(ValueError, match="draft_cost must be"):
        sv.speculative_speedup(0.5, 2, -1)


def test_speculation_matches_leviathans_closed_form_when_the_check_costs_one_step():
    target = sv.serving_server(rl.model_config("llama-3-8b"), "H100")
    draft = sv.serving_server(_draft(), "H100")
    s = sv.speculative_decoding(target, draft, 1, 1024, 0.7, 3)
    c = s.draft_seconds / 3 / s.plain_seconds  # the draft's cost per step, relative
    closed = (1 - 0.7**4) / ((1 - 0.7) * (3 * c + 1))
    assert sv.speculative_speedup(0.7, 3, c) == pytest.approx(closed)
    assert s.verify_seconds == pytest.approx(s.plain_seconds, rel=1e-3)  # memory-bound: the same bytes
    assert s.speedup == pytest.approx(closed, rel=1e-3)


# --------------------------------------------------------------------------- prefix caching and steady state


def test_a_cached_prefix_saves_its_matmuls_but_not_the_keys_it_provides(toy):
    saved = sv.prefix_cache_savings(toy, 16, 8)
    assert saved.flops_full == 6336
    assert saved.flops_cached == 3712  # 8 * 256 + (8 * 8 + 36) keys * 16 + 64
    assert saved.fraction_saved == pytest.approx(2624 / 6336)


def test_steady_state_policies_on_the_toy(toy):
    b, p, o = 2, 4, 4
    decode = sv.decode_step(toy, b, p + o // 2).seconds
    prefill = sv.prefill_step(toy, p).seconds
    cont = sv.steady_state(toy, "continuous", b, p, o)
    assert cont.tpot_s == pytest.approx(decode + b / o * prefill) and cont.ttft_s == prefill
    assert cont.tokens_per_s == pytest.approx(b / cont.tpot_s)
    static = sv.steady_state(toy, "static", b, p, o)
    round_s = sv.prefill_step(toy, p, batch=b).seconds + (o - 1) * decode
    assert static.tokens_per_s == pytest.approx(b * o / round_s)
    chunk = sv.steady_state(toy, "chunked", b, p, o, chunk_tokens=4)
    assert chunk.sustainable  # 4 - 2 decodes leave 2 tokens, and 2 * 4 / 4 = 2 are needed
    assert not sv.steady_state(toy, "chunked", b, p, o, chunk_tokens=3).sustainable
    disagg = sv.steady_state(toy, "disaggregated", b, p, o)
    assert disagg.devices == 2 and disagg.tpot_s == decode


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda s: sv.decode_step(s, 0, 8), "batch must be a positive whole number of sequences"),
        (lambda s: sv.decode_step(s, 1, 0), "context_len must be a positive whole number of tokens"),
        (lambda s: sv.prefill_step(s, 8, cached_prefix=8), "cached_prefix must be fewer tokens"),
        (lambda s: sv.step_time(s, []), "chunks must be one or more Chunk"),
        (lambda s: sv.Chunk(2, -1), "offset must be a whole number of cached tokens"),
        (lambda s: sv.Chunk(2, 0, 3), "logits must be a whole number of rows"),
        (lambda s: sv.kv_capacity(s, 8, 8), "no memory capacity on record"),
        (lambda s: sv.expected_tokens_per_step(1.5, 4), "alpha must be an acceptance probability"),
        (lambda s: sv.steady_state(s, "fifo", 1, 8, 8), "policy must be one of static, continuous"),
        (lambda s: sv.steady_state(s, "chunked", 1, 8, 8), "chunk_tokens"),
    ],
)
def test_bad_input_is_refused_naming_the_parameter_and_unit(toy, call, message):
    with pytest.raises(ValueError, match=message):
        call(toy)


def test_a_server_needs_a_model_config():
    with pytest.raises(TypeError, match="cfg must be a TransformerConfig"):
        sv.serving_server("llama-3-8b", "H100")


# --------------------------------------------------------------------------- live, on this CPU

SMALL = rl.TransformerConfig(d_model=32, d_ff=64, n_layers=2, n_heads=4, vocab=64, seq_len=64, name="small")


@pytest.fixture(scope="module")
def small_live():
    from roofline_lib.evidence.serving_live import LiveServer

    return LiveServer(SMALL, max_slots=4, max_len=64)


def test_the_cached_loop_gives_the_logits_of_a_full_forward(small_live):
    from roofline_lib.evidence.serving_live import max_logit_gap

    assert max_logit_gap(small_live, prompt_len=10, new_tokens=4) < 1e-4


def test_static_and_continuous_batching_generate_the_same_tokens(small_live):
    trace = sch.poisson_trace(6, 50.0, (4, 12), (3, 6), seed=2)
    outputs = {}
    for policy in ("static", "continuous", "chunked"):
        small_live.reset()
        run = sch.run_policy(trace, small_live.execute, policy, max_batch=3, chunk_tokens=8)
        assert len(run.times) == 6 and all(t.ttft_s > 0 for t in run.times)
        outputs[policy] = dict(small_live.outputs)
    assert outputs["static"] == outputs["continuous"] == outputs["chunked"]  # batching changes when, not what
    assert [len(outputs["static"][r.id]) for r in trace] == [r.output_len for r in trace]


def test_the_live_server_refuses_more_requests_than_slots(small_live):
    small_live.reset()
    trace = sch.poisson_trace(6, 1e3, 4, 3, seed=0)
    with pytest.raises(ValueError, match="no free KV slot"):
        sch.run_policy(trace, small_live.execute, "continuous", max_batch=6)
    small_live.reset()


#: The live decode step of the serving decoder against the model on this machine's measured roofs.
#: Below: half the model. The roof is a copy's bandwidth with reads and writes counted, and a
#: decode step only reads its weights, which a CPU does up to about 1.2x faster (a copy's writes
#: also cost a read the count leaves out); on a shared machine the roof and the step are also
#: timed under different loads. Above: 25x, because Python and per-operator dispatch add a few
#: milliseconds to every step of a model this small (about 17 M parameters).
LIVE_TPOT_BAND = (0.5, 25.0)


@pytest.mark.measures
def test_the_live_tpot_sits_within_a_stated_band_of_the_model_on_measured_roofs():
    from roofline_lib import measured_roofs
    from roofline_lib.evidence.serving_live import SERVE_CONFIG, LiveServer

    # The roofs as chapter 10 reads them: on buffers the size of the weights a decode step streams
    # (68 MB in fp32, which a large last-level cache holds: on the 256 MB default buffers the step at
    # (4, 256) took 0.30 of the model in one run of `make test`), and the best of a reading before
    # and one after the timings (one taken while the other side of `make test` streamed memory is low).
    weights_bytes = SERVE_CONFIG.n_params() * 4

    def reading():
        return measured_roofs.measure_ceilings(seconds=1.0, device="cpu", buffer_bytes=weights_bytes)

    before = reading()
    live = LiveServer(max_slots=4, max_len=256)
    timed = {shape: live.time_decode(*shape) for shape in ((1, 64), (4, 256))}
    model = sv.serving_server(SERVE_CONFIG, measured_roofs.best_of(before, reading()), bytes_per_param=4)
    for (batch, context), seconds in timed.items():
        ratio = seconds / sv.decode_step(model, batch, context).seconds
        assert LIVE_TPOT_BAND[0] <= ratio <= LIVE_TPOT_BAND[1], (batch, context, ratio)
