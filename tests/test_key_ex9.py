"""Exercise 9 graded part by part: the references worked by hand, the traps, the refusals, and the
key's energy formulas against the library's on the GPUs the library prices.

Each reference is recomputed here from the scenario's datasheet lines with the arithmetic beside
it, and each known slip is shown to get its hint, so a key that drifted, or a trap that no longer
fires, fails here. No kernel starts: the judges are called as the grader calls them.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

# the judges as the grader calls them: one set of helpers, shared with test_grader
from test_grader import _judge, _judge_function  # noqa: E402

import roofline_lib as rl
from roofline_lib.grading import key
from roofline_lib.grading.key import references as R

# 40 layers of 2 * 3840 * 3840 (Q, O) + 2 * 3840 * 768 (K, V: 6 heads of 128) + 3 * 3840 * 10240 (MLP),
# plus 2 * 131072 * 3840 (embedding and head): 40 * 153,354,240 + 1,006,632,960 = 7,140,802,560
N = 7_140_802_560
W = 2 * N  # bf16 weights: 14.28 GB
KV = 2 * 40 * 6 * 128 * 2  # K and V, 40 layers, 6 KV heads of 128, bf16: 122,880 bytes per token
CTX = 2048
E_FLOP, E_BYTE, STATIC = 0.40e-12, 4.0e-12 * 8, 100  # 0.40 pJ per FLOP; 4.0 pJ per bit is 32 pJ per byte
PEAK, BW = 1000e12, 4.0e12

GEMM_FLOPS = 2 * 8192**3  # 1.0995e12 FLOP
GEMM_BYTES = 3 * 8192**2 * 2  # A, B and C in bf16: 402,653,184 bytes
GEMM_SECONDS = GEMM_FLOPS / PEAK  # 1.0995 ms; its bytes take 0.10 ms: compute-bound
GEMM_J = GEMM_FLOPS * E_FLOP + GEMM_BYTES * E_BYTE + STATIC * GEMM_SECONDS  # 0.4398 + 0.0129 + 0.1100 = 0.5626 J


def _step(batch, *, e_byte=E_BYTE, static=STATIC, kv=KV):
    """(joules of one decode step, its seconds): FLOPs, bytes and static power at the roof."""
    flops, moved = 2 * N * batch, W + batch * CTX * kv
    seconds = max(flops / PEAK, moved / BW)
    return flops * E_FLOP + moved * e_byte + static * seconds, seconds


J1 = _step(1)[0]  # 3.633 ms: 0.0057 (FLOPs) + 0.4651 (bytes) + 0.3633 (static) = 0.8341 J per token
J64 = _step(64)[0] / 64  # 7.597 ms: (0.3656 + 0.9724 + 0.7597) / 64 = 0.03278 J per token
DOLLARS = 36.00 / 8 / (64 / _step(64)[1] * 3600) * 1e6  # $4.50 a GPU-hour over 30.3M tokens an hour: $0.1484
INTENSITY = GEMM_FLOPS / GEMM_BYTES  # 8192 / 3 = 2,731 FLOP/byte
# at the peak it would draw 100 + 1e15 * 0.4e-12 + 1e15 / 2731 * 32e-12 = 100 + 400 + 11.7 = 511.7 W > 400 W
CAPPED = (400 - STATIC) / (E_FLOP + E_BYTE / INTENSITY)  # 300 / 0.41172e-12 = 7.287e14 FLOP/s


def test_ex9_the_config_is_the_model_cards_count():
    assert 40 * (2 * 3840 * 3840 + 2 * 3840 * 768 + 3 * 3840 * 10240) + 2 * 131072 * 3840 == N
    assert key.EX9["n_params"] == N


def test_ex9_the_references_worked_by_hand():
    assert GEMM_J == pytest.approx(0.56264, rel=1e-4)
    assert _judge("ex9-a", gemm_joules=GEMM_J).status == "correct"
    assert _judge("ex9-b", energy_ridge=32 / 0.4).status == "correct"  # 32 pJ a byte over 0.4 pJ a FLOP = 80
    assert J1 == pytest.approx(0.83411, rel=1e-4)
    assert _judge("ex9-c", joules_per_token_batch_1=J1).status == "correct"
    # batch 1: bytes 14.53e9 * 32e-12 = 0.465 J beat the static 100 W * 3.633 ms = 0.363 J; FLOPs 0.006 J
    assert _judge("ex9-d", dominant_term_batch_1="bytes").status == "correct"
    assert [_judge("ex9-d", dominant_term_batch_1=t).status for t in ("flops", "static")] == ["wrong", "wrong"]
    assert J64 == pytest.approx(0.032777, rel=1e-4)
    assert _judge("ex9-e", joules_per_token_batch_64=J64).status == "correct"
    assert DOLLARS == pytest.approx(0.14838, rel=1e-4)
    assert _judge("ex9-h", dollars_per_million_tokens=DOLLARS).status == "correct"
    assert CAPPED == pytest.approx(7.2865e14, rel=1e-4)
    assert _judge("ex9-i", capped_gemm_flops_per_s=CAPPED).status == "correct"
    assert _judge("ex9-j", gemv_under_cap="B").status == "correct"
    assert _judge("ex9-k", gemv_under_cap_reason=2).status == "correct"


def test_ex9_the_cap_binds_on_the_gemm_and_not_on_the_gemv_or_the_decode_step():
    gemm_draw = STATIC + PEAK * E_FLOP + PEAK / INTENSITY * E_BYTE  # 511.7 W
    gemv_bytes = (8192 * 8192 + 2 * 8192) * 2  # the matrix, the vector in and out
    gemv_rate = BW * (2 * 8192 * 8192 / gemv_bytes)  # at the memory roof: 4.0e12 FLOP/s at ~1 FLOP/byte
    gemv_draw = STATIC + gemv_rate * E_FLOP + BW * E_BYTE  # 100 + 1.6 + 128 = 229.6 W
    decode_draw = _step(64)[0] / _step(64)[1]  # 2.098 J / 7.597 ms = 276 W
    assert gemm_draw > 400 > decode_draw > gemv_draw
    assert R.ex9_power_at_roof(*R.ex9_gemm()) == pytest.approx(gemm_draw)
    assert R.ex9_power_at_roof(*R.ex9_gemv()) == pytest.approx(gemv_draw)
    # and the TDP is never reached without a cap: at the ridge, 100 + 400 + 128 = 628 W < 700 W
    assert STATIC + PEAK * E_FLOP + BW * E_BYTE < key.EX9["tdp_watts"]


def test_ex9_the_energy_ridge_is_the_batch_where_the_weight_read_costs_what_the_flops_do():
    # a decode step's weight GEMMs do 2B FLOP per 2-byte weight: intensity B; at B = 80 the weights'
    # bytes per token (W * 32 pJ / 80) cost the FLOPs' 2N * 0.4 pJ
    assert W * E_BYTE / 80 == pytest.approx(2 * N * E_FLOP)


def _assert_slip_gets_its_hint(part, name, value, hint):
    """A known slip is wrong, and both modes name it by its hint, not by "too high/low"."""
    verdict = _judge(part, **{name: value})
    assert verdict.status == "wrong"
    assert hint in verdict.submit and hint in verdict.practice
    assert "high" not in verdict.submit and "low" not in verdict.submit


@pytest.mark.parametrize(
    "part, name, value, hint",
    [
        ("ex9-a", "gemm_joules", 700 * GEMM_SECONDS, "TDP times the time"),  # 0.770 J
        ("ex9-a", "gemm_joules", GEMM_J - STATIC * GEMM_SECONDS, "static power is paid"),  # 0.4527 J
        ("ex9-a", "gemm_joules", GEMM_J - GEMM_BYTES * (E_BYTE - 4e-12), "per bit"),  # 4 pJ a byte: 0.5514 J
        ("ex9-b", "energy_ridge", 250, "time ridge"),  # 1e15 / 4e12
        ("ex9-b", "energy_ridge", 10, "per bit"),  # 4 / 0.4
        ("ex9-b", "energy_ridge", 1 / 80, "not bytes per FLOP"),
        ("ex9-c", "joules_per_token_batch_1", _step(1, static=0)[0], "static power is paid"),  # 0.4708 J
        ("ex9-c", "joules_per_token_batch_1", 700 * _step(1)[1], "TDP times the time"),  # 2.543 J
        ("ex9-c", "joules_per_token_batch_1", _step(1, e_byte=4e-12)[0], "per bit"),  # 0.4272 J
        ("ex9-c", "joules_per_token_batch_1", _step(1, kv=0)[0], "KV cache is read too"),  # 0.8198 J
        ("ex9-e", "joules_per_token_batch_64", J64 * 64, "one token per sequence"),  # 2.098 J
        ("ex9-e", "joules_per_token_batch_64", J1, "once per step for the whole batch"),  # weights per sequence
        ("ex9-e", "joules_per_token_batch_64", _step(64, static=0)[0] / 64, "static power is paid"),
        ("ex9-e", "joules_per_token_batch_64", 700 * _step(64)[1] / 64, "TDP times the time"),  # 0.0831 J
        ("ex9-h", "dollars_per_million_tokens", DOLLARS * 8, "an eighth"),  # the node's $36 an hour
        ("ex9-h", "dollars_per_million_tokens", DOLLARS * 64, "batch tokens in all"),  # one token a step
        ("ex9-h", "dollars_per_million_tokens", 4.5 / (1 / _step(1)[1] * 3600) * 1e6, "batch 1's throughput"),
        ("ex9-i", "capped_gemm_flops_per_s", 400 / 700 * PEAK, "not proportional"),  # 5.71e14
        ("ex9-i", "capped_gemm_flops_per_s", PEAK, "the cap binds"),
        ("ex9-i", "capped_gemm_flops_per_s", 400 / (E_FLOP + E_BYTE / INTENSITY), "comes off the cap first"),
        ("ex9-i", "capped_gemm_flops_per_s", 400 / 511.71875 * PEAK, "does not fall with the clock"),  # 7.82e14
        ("ex9-i", "capped_gemm_flops_per_s", 300 / E_FLOP, "still moves bytes"),  # 7.5e14
    ],
    ids=["a-tdp", "a-no-static", "a-per-bit", "b-time-ridge", "b-per-bit", "b-inverted", "c-no-static", "c-tdp",
         "c-per-bit", "c-no-kv", "e-per-step", "e-weights-per-sequence", "e-no-static", "e-tdp", "h-per-node",
         "h-per-step", "h-batch-1", "i-tdp-ratio", "i-peak", "i-no-static", "i-draw-ratio", "i-no-bytes"],
)  # fmt: skip
def test_ex9_each_known_slip_gets_its_hint_in_both_modes(part, name, value, hint):
    _assert_slip_gets_its_hint(part, name, value, hint)


def test_ex9_a_unit_slip_is_named_and_a_wrong_sign_too():
    assert "10^3" in _judge("ex9-a", gemm_joules=GEMM_J * 1e3).submit  # millijoules
    assert "10^12" in _judge("ex9-e", joules_per_token_batch_64=J64 * 1e12).submit  # picojoules
    assert "10^-12" in _judge("ex9-i", capped_gemm_flops_per_s=CAPPED / 1e12).submit  # TFLOP/s
    assert "sign" in _judge("ex9-c", joules_per_token_batch_1=-J1).submit


@pytest.mark.parametrize(
    "name, part, value",
    [
        ("gemm_joules", "ex9-a", np.float64(GEMM_J)),
        ("energy_ridge", "ex9-b", np.asarray(80.0)),  # 0-d
        ("joules_per_token_batch_1", "ex9-c", np.float32(J1)),
        ("dominant_term_batch_1", "ex9-d", np.str_("bytes")),
        ("joules_per_token_batch_64", "ex9-e", np.float64(J64)),
        ("dollars_per_million_tokens", "ex9-h", np.float64(DOLLARS)),
        ("capped_gemm_flops_per_s", "ex9-i", np.float64(CAPPED)),
        ("gemv_under_cap", "ex9-j", np.str_("B")),
        ("gemv_under_cap_reason", "ex9-k", np.int64(2)),
    ],
)
def test_ex9_numpy_answers_are_read_by_value(name, part, value):
    assert _judge(part, **{name: value}).status == "correct"


def test_ex9_the_stub_and_the_letters_of_other_exercises_earn_nothing():
    for part in key.parts_of("ex9"):
        if part.probes:
            continue
        assert _judge(part.key, **{part.names[0]: ...}).status == "not attempted", part.key
    assert _judge("ex9-j", gemv_under_cap="A").status == "wrong"  # slowed like the GEMM
    assert _judge("ex9-k", gemv_under_cap_reason=4).status == "wrong"


# --------------------------------------------------------------------------- the function part


def _jpt(n_params, kv, batch, context_len, acc, *, static=True, per_token=True, weights_once=True, roofs=2):
    for value in (batch, context_len):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError("a whole number of at least 1")
    if not acc["hbm_bytes_per_s"] > 0 or acc["static_watts"] < 0:
        raise ValueError("no bandwidth, or negative static power")
    flops = 2 * n_params * batch
    moved = (1 if weights_once else batch) * 2 * n_params + batch * context_len * kv
    memory = moved / acc["hbm_bytes_per_s"]
    seconds = max(flops / acc["bf16_flops_per_s"], memory) if roofs == 2 else memory
    joules = flops * acc["joules_per_flop"] + moved * acc["joules_per_byte"] + static * acc["static_watts"] * seconds
    return joules / (batch if per_token else 1)


def _jpt_no_refusals(n_params, kv, batch, context_len, acc):
    flops, moved = 2 * n_params * batch, 2 * n_params + batch * context_len * kv
    seconds = max(flops / acc["bf16_flops_per_s"], moved / max(acc["hbm_bytes_per_s"], 1.0))
    return (flops * acc["joules_per_flop"] + moved * acc["joules_per_byte"] + acc["static_watts"] * seconds) / batch


def _jpt_registry_h100(n_params, kv, batch, context_len, acc):
    """Prices every card as the library's H100: the registry's figures, not the probe's."""
    return _jpt(n_params, kv, batch, context_len, {**acc, **_card("H100")})


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    "fn, earned",
    [
        (_jpt, {"ex9-f", "ex9-g"}),
        (lambda *a: np.float64(_jpt(*a)), {"ex9-f", "ex9-g"}),  # a numpy result is read by value
        (lambda *a: _jpt(*a, static=False), set()),
        (lambda *a: _jpt(*a, per_token=False), set()),  # the batch-1 probe alone is right
        (lambda *a: _jpt(*a, weights_once=False), set()),
        (lambda *a: _jpt(*a, roofs=1), set()),  # batch 1024 or 4096 probes are compute-bound
        (_jpt_no_refusals, {"ex9-f"}),
        (_jpt_registry_h100, set()),
        (lambda n, kv, b, c, acc: rl.decode_energy(acc, b, c).joules_per_token, set()),  # a dict is no server
        (lambda *a: (_ for _ in ()).throw(ValueError("no")), set()),
    ],
    ids=["correct", "numpy-result", "no-static", "per-step", "weights-per-sequence", "memory-only", "no-refusals", "registry-h100",
         "wrapped-library", "always-refuses"],
)  # fmt: skip
def test_ex9_joules_per_token_is_earned_only_by_doing_the_work(fn, earned, seed):
    got = {p for p in ("ex9-f", "ex9-g") if _judge_function(p, fn, seed).status == "correct"}
    assert got == earned


def test_ex9_the_refusal_probes_are_the_ones_the_notebook_names():
    probes = key.draw_probes(key.PARTS["ex9-g"], random.Random(3))
    refused = [p.args for p in probes if p.kind == "refuse"]
    assert len(refused) == 5
    assert any(a[2] == 0 for a in refused) and any(isinstance(a[2], float) for a in refused)  # no batch; 8.5
    assert any(a[3] < 0 for a in refused)  # a negative context
    assert any(a[4]["hbm_bytes_per_s"] == 0 for a in refused) and any(a[4]["static_watts"] < 0 for a in refused)
    for args in refused:
        with pytest.raises(ValueError):
            key.ref_joules_per_token(*args)


@pytest.mark.parametrize("seed", range(40))
def test_ex9_every_draw_has_a_compute_bound_probe_and_a_batch_of_one(seed):
    # so a function with the memory roof alone, or one that forgets to divide by the batch, fails every run
    valid = [p.args for p in key.draw_probes(key.PARTS["ex9-f"], random.Random(seed)) if p.kind == "valid"]
    n, kv, batch, ctx, acc = valid[-1]  # the large batch of short contexts on a low ridge
    assert 2 * n * batch / acc["bf16_flops_per_s"] > (2 * n + batch * ctx * kv) / acc["hbm_bytes_per_s"]
    assert valid[0][2] == 1 and all(args[2] > 1 for args in valid[1:])


# --------------------------------------------------------------------------- the key against the library


def _card(gpu):
    """The library's figures of a registry GPU, as the exercise's accelerator dict (bf16)."""
    power, spec = rl.power_spec(gpu), rl.gpu(gpu)
    return {
        "bf16_flops_per_s": spec.peak_flops_per_s("bf16"),
        "hbm_bytes_per_s": spec.hbm_bytes_per_s,
        "static_watts": power.idle_watts,
        "joules_per_flop": power.flop_joules("bf16"),
        "joules_per_byte": power.joules_per_hbm_byte,
    }


PRICED = ["H100", "H200", "A100"]  # GPUs with power figures in the library's registry


@pytest.mark.parametrize("gpu", PRICED)
@pytest.mark.parametrize("batch, context", [(1, 128), (16, 2048), (256, 8192), (4096, 64)])
def test_the_keys_joules_per_token_is_the_librarys_kernel_energy_of_the_step(gpu, batch, context):
    # the exercise's step (2N FLOP per sequence, the bf16 weights once, every KV cache) priced by the library
    n, kv = 8e9, 131072
    flops, moved = 2 * n * batch, 2 * n + batch * context * kv
    library = rl.kernel_energy(gpu, flops, moved).joules / batch
    assert key.ref_joules_per_token(n, kv, batch, context, _card(gpu)) == pytest.approx(library, rel=1e-12)


@pytest.mark.parametrize("gpu", PRICED)
@pytest.mark.parametrize("intensity", [0.5, 1.0, 30.0, 295.0, 1000.0, 8192 / 3])
@pytest.mark.parametrize("cap_watts", [150.0, 300.0, 450.0, 1000.0])
def test_the_keys_power_cap_is_the_librarys(gpu, intensity, cap_watts):
    if cap_watts <= rl.power_spec(gpu).idle_watts:
        pytest.skip("a cap at or below the static power has no rate")  # both refuse it: tested below
    library = rl.power_capped_flops_per_s(gpu, intensity, cap_watts)
    assert key.ref_capped_flops_per_s(intensity, cap_watts, _card(gpu)) == pytest.approx(library, rel=1e-12)


def test_both_refuse_a_cap_at_the_static_power():
    idle = rl.power_spec("H100").idle_watts
    with pytest.raises(ValueError):
        rl.power_capped_flops_per_s("H100", 100.0, idle)
    with pytest.raises(ValueError):
        key.ref_capped_flops_per_s(100.0, idle, _card("H100"))


@pytest.mark.parametrize("gpu", PRICED)
def test_the_keys_energy_ridge_is_the_librarys(gpu):
    card = _card(gpu)
    assert card["joules_per_byte"] / card["joules_per_flop"] == pytest.approx(rl.energy_ridge(gpu), rel=1e-12)


def test_the_keys_price_per_million_tokens_is_the_librarys():
    tokens_per_s = 64 / R.ex9_decode_seconds(64)
    assert R.ex9_dollars_per_million_tokens() == pytest.approx(rl.cost_per_million_tokens(tokens_per_s, 4.5))


def test_the_keys_step_is_within_a_few_percent_of_the_librarys_own_serving_energy():
    # The library's decode step also counts the attention scores' FLOPs and reads one embedding row
    # per token, not the whole table (1.0 GB, 7 % of the weights' 14.3 GB): at batch 1, where the
    # weight read is most of the energy, 0.928 J against the exercise's 0.996 J on an H100; at
    # batch 64, 0.0382 J against 0.0391 J.
    cfg = rl.TransformerConfig(d_model=3840, d_ff=10240, n_layers=40, n_heads=30, n_kv_heads=6, head_dim=128,
                               vocab=131072)  # fmt: skip
    server = rl.serving_server(cfg, "H100")
    for batch, within in ((1, 0.08), (64, 0.03)):
        library = rl.decode_energy(server, batch, CTX).joules_per_token
        assert key.ref_joules_per_token(N, KV, batch, CTX, _card("H100")) == pytest.approx(library, rel=within)
