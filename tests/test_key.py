"""The grading key against the library: every reference the key computes, on the scenario inputs.

The key (``roofline_lib.grading.key``) keeps its own formulas on purpose: it must not trust the
code it grades against. This file holds each of its references to the library's answer for the
same inputs, so the two cannot drift apart. References are read out of the key's parts (their
judges' closures); a part added to the key without a library counterpart here fails
:func:`test_every_key_reference_has_a_library_counterpart`.
"""

from __future__ import annotations

import random

import pytest

import roofline_lib as rl
from roofline_lib.core.roofline import ImplausibleMeasurement
from roofline_lib.grading import key as K


def _references(judge) -> list[tuple[str, str, object]]:
    """``(judge kind, entry name, reference)`` of every check inside a part's judge."""
    cells = dict(zip(judge.__code__.co_freevars, (c.cell_contents for c in judge.__closure__ or ())))
    if "judges" in cells:  # all_of(...)
        return [r for j in cells["judges"] for r in _references(j)]
    return [(judge.__name__, cells["name"], cells["reference"])]


REFERENCES = {name: (kind, ref) for part in K.PARTS.values() for kind, name, ref in _references(part.judge)}


def _value(name):
    kind, ref = REFERENCES[name]
    return ref() if callable(ref) else ref


# --------------------------------------------------------------------------- the scenarios, by the library

EX1, EX2, EX3, EX4, EX5, EX6, EX7, EX8, EX9 = K.EX1, K.EX2, K.EX3, K.EX4, K.EX5, K.EX6, K.EX7, K.EX8, K.EX9


def _ex1_roof(precision="fp32"):
    return rl.Roof(EX1[f"{precision}_flops_per_s"], EX1["hbm_bytes_per_s"], "Kestrel K1 " + precision)


def _ex1_op():
    return rl.OpCount(EX1["flop"], EX1["read_bytes"] + EX1["write_bytes"])


def _ex2_roof(chip):
    return rl.Roof(EX2[f"{chip}_bf16"], EX2[f"{chip}_hbm"], f"chip {chip.upper()}")


def _config_of(scenario):
    """The TransformerConfig of an exercise's config table (its config.json keys)."""
    return rl.TransformerConfig(
        d_model=scenario["hidden_size"],
        d_ff=scenario["intermediate_size"],
        n_layers=scenario["num_hidden_layers"],
        n_heads=scenario["num_attention_heads"],
        n_kv_heads=scenario["num_key_value_heads"],
        head_dim=scenario["head_dim"],
        vocab=scenario["vocab_size"],
    )


def _ex3_model():
    return _config_of(EX3)


def _ex3_n():
    return _ex3_model().n_params(include_norms=False)  # the key leaves the norm gains out (under 0.01 %)


def _k2(cards=1):
    return rl.accelerator(
        f"{cards} x Kestrel K2",
        {"bf16": cards * EX3["bf16_flops_per_s"]},
        cards * EX3["hbm_bytes_per_s"],
        hbm_capacity_bytes=cards * EX3["memory_bytes"],
    )


def _ex4_roof():
    return rl.Roof(EX4["bf16_flops_per_s"], EX4["hbm_bytes_per_s"], "O3 bf16")


def _ex4_naive():
    s, dh, b = EX4["seq"], EX4["head_dim"], EX4["bytes_per_elem"]
    return rl.gemm(s, s, dh, b)  # one head's S = Q K^T: read Q and K, write S


def _ex4_fused_intensity():
    s, dh, b = EX4["seq"], EX4["head_dim"], EX4["bytes_per_elem"]
    return rl.attention_flops(1, 1, s, s, dh) / rl.attention_bytes_fused(1, 1, s, s, dh, b)


def _chip(name, datasheet):
    return rl.accelerator(name, datasheet["peak_flops_per_s"], datasheet["hbm_bytes_per_s"])


def _ex6_step(n, tokens_per_gpu):
    at_mfu = rl.accelerator("Kestrel K2 at its MFU", {"bf16": EX6["mfu"] * EX6["bf16_flops_per_s"]}, 1e12)
    return rl.data_parallel_step(
        EX6["n_params"],
        tokens_per_gpu,
        n,
        at_mfu,
        EX6["link_bytes_per_s"],
        grad_bytes_per_param=EX6["grad_bytes_per_param"],
        alpha_seconds=EX6["alpha_seconds"],
        overlap_fraction=K.BACKWARD_SHARE,  # the backward pass, 4N of 6N
    )


def _ex7_model():
    return _config_of(EX7)


def _ex7_n():
    return _ex7_model().n_params(include_norms=False)


def _ex7_node():
    k3 = rl.accelerator(
        "Kestrel K3",
        {"bf16": EX7["bf16_flops_per_s"]},
        EX7["hbm_bytes_per_s"],
        hbm_capacity_bytes=EX7["memory_bytes"],
    )
    nvlink = rl.LinkSpec("K3 link", "nvlink", EX7["nvlink_bytes_per_s"], 1, "GPU", "the exercise")
    nic = rl.LinkSpec("K3 NIC", "infiniband", EX7["nic_bytes_per_s"], 1, "port", "the exercise")
    return rl.NodeSpec(
        "8x Kestrel K3", k3, EX7["gpus_per_node"], nvlink, nic, EX7["nics_per_node"], source="the exercise"
    )


def _ex7_gpus():
    return EX7["gpus_per_node"] * EX7["n_nodes"]


def _ex7_memory(stage, micro_batch=1):
    """ZeRO's state per card plus every layer's saved activations (selective recompute)."""
    state = rl.zero_memory(_ex7_n(), _ex7_gpus(), stage).total
    per_layer = rl.activation_bytes_per_layer(
        EX7["seq_len"], micro_batch, EX7["hidden_size"], EX7["num_attention_heads"], recompute="selective"
    )
    return state + per_layer * EX7["num_hidden_layers"]


def _ex7_gather():
    """One all-gather of the bf16 weights over the cluster, priced hierarchically."""
    return rl.node_collective_cost("all_gather", _ex7_n() * rl.bytes_per_element("bf16"), _ex7_gpus(), _ex7_node())


def _ex7_compute(micro_batch=1):
    tokens = EX7["seq_len"] * micro_batch
    return rl.training_flops_per_token(_ex7_n(), convention="6N") * tokens / EX7["bf16_flops_per_s"]


def _ex7_plan(micro_batch):
    return rl.plan(
        _ex7_model(),
        rl.cluster(_ex7_node(), _ex7_gpus()),
        dp=_ex7_gpus(),
        zero=3,
        global_batch=_ex7_gpus() * micro_batch,
        seq_len=EX7["seq_len"],
        micro_batch=micro_batch,
        recompute="selective",
    )


def _ex8_model():
    return _config_of(EX8)


def _ex8_server():
    k4 = rl.accelerator(
        "Kestrel K4", {"bf16": EX8["bf16_flops_per_s"]}, EX8["hbm_bytes_per_s"], hbm_capacity_bytes=EX8["memory_bytes"]
    )
    return rl.serving_server(_ex8_model(), k4, bytes_per_param=EX8["bytes_per_param"])


def _ex8_roof():
    return rl.Roof(EX8["bf16_flops_per_s"], EX8["hbm_bytes_per_s"], "Kestrel K4 bf16")


def _ex8_kv():
    c = EX8
    return rl.kv_cache_bytes_per_token(
        c["num_hidden_layers"], c["num_key_value_heads"], c["head_dim"], c["kv_bytes_per_elem"]
    )


def _ex8_step(decodes, new_tokens=0):
    """The exercise's step on the library's roof: 2N FLOP per token, the weights once, the decodes'
    caches read at the full context and the new tokens' caches written."""
    n, context = EX8["n_params"], EX8["prompt_len"] + EX8["output_len"]
    flops = rl.gemm(1, n, 1).flops * (decodes + new_tokens)  # 2 FLOP per parameter per token
    bytes_moved = n * EX8["bytes_per_param"] + (decodes * context + new_tokens) * _ex8_kv()
    return flops, bytes_moved


def _k5():
    return rl.accelerator(
        "Kestrel K5", {"bf16": EX9["bf16_flops_per_s"]}, EX9["hbm_bytes_per_s"], hbm_capacity_bytes=EX9["memory_bytes"]
    )


def _figures(chip, tdp_watts, static_watts, joules_per_flop, joules_per_byte):
    """A chip's power figures as the exercise prints them, for the library's ``power=``. The exercise
    prints its joules per FLOP, so they are given as is, not derived from the TDP (rl.power_figures)."""
    return rl.PowerSpec(
        chip.name, tdp_watts, static_watts, {"bf16": joules_per_flop}, joules_per_byte, None, {"all": "the exercise"}
    )


def _k5_priced(fn):
    """``fn(chip, power)``: the library's energy functions on the K5, given its datasheet lines as
    ``power=`` (HBM energy per bit x 8)."""
    c, chip = EX9, _k5()
    return fn(
        chip, _figures(chip, c["tdp_watts"], c["static_watts"], c["joules_per_flop"], 8 * c["hbm_joules_per_bit"])
    )


def _ex9_step(batch):
    """The exercise's decode step, counted with the library: 2N FLOP per sequence, the bf16 weights
    once, each sequence's KV cache at the full context."""
    c = EX9
    kv = rl.kv_cache_bytes_per_token(
        c["num_hidden_layers"], c["num_key_value_heads"], c["head_dim"], c["kv_bytes_per_elem"]
    )
    n = c["n_params"]
    return rl.gemm(1, n, 1).flops * batch, n * c["bytes_per_param"] + batch * c["context_len"] * kv


def _ex9_gemm():
    n = EX9["gemm_n"]
    return rl.gemm(n, n, n, EX9["bytes_per_param"])


def _ex9_decode_energy(batch):
    return _k5_priced(lambda chip, power: rl.kernel_energy(chip, *_ex9_step(batch), power=power))


def _ex9_terms(batch):
    e = _ex9_decode_energy(batch)
    return {"flops": e.flop_joules, "bytes": e.byte_joules, "static": e.static_joules}


def _ex9_gemv():
    n = EX9["gemm_n"]
    return rl.gemm(n, 1, n, EX9["bytes_per_param"])  # the matrix, the vector in and out


def _ex9_gemv_draw():
    return _k5_priced(
        lambda chip, power: (
            rl.kernel_energy(chip, _ex9_gemv().flops, _ex9_gemv().bytes_moved, power=power).average_watts
        )
    )


def _ex8_largest(fits, start):
    """The largest whole count from ``start`` down that ``fits``."""
    count = start
    while not fits(count):
        count -= 1
    return count


#: Each graded entry of the key, as the library answers it on the same scenario inputs.
LIBRARY = {
    # ex1
    "intensity": lambda: _ex1_op().intensity,
    "ridge_fp32": lambda: _ex1_roof().ridge,
    "binding_roof": lambda: _ex1_roof().bound(_ex1_op().intensity),
    "fraction_of_bandwidth": lambda: (
        _ex1_roof().verdict(EX1["flop"], _ex1_op().bytes_moved, EX1["seconds"]).achieved_bytes_per_s
        / EX1["hbm_bytes_per_s"]
    ),
    "best_share_of_peak": lambda: _ex1_roof().attainable_flops_per_s(_ex1_op().intensity) / EX1["fp32_flops_per_s"],
    # ex2
    "ridge_p": lambda: _ex2_roof("p").ridge,
    "ridge_q": lambda: _ex2_roof("q").ridge,
    "ceiling_p_flops_per_s": lambda: _ex2_roof("p").attainable_flops_per_s(EX2["intensity"]),
    "ceiling_q_flops_per_s": lambda: _ex2_roof("q").attainable_flops_per_s(EX2["intensity"]),
    # ex3
    "n_params": _ex3_n,
    "training_flops": lambda: rl.training_flops_per_token(_ex3_n(), convention="6N") * EX3["tokens"],
    "accelerator_days": lambda: rl.training_bill(_ex3_n(), EX3["tokens"], 1, _k2(), EX3["mfu"]).gpu_hours / 24,
    "fits_on_one": lambda: rl.decode_roofline(_ex3_n(), _k2()).fits_in_memory,
    "min_cards": lambda: rl.min_gpus_to_fit(_ex3_n() * EX3["bytes_per_param"], _k2()),
    "decode_tokens_per_s": lambda: rl.decode_roofline(_ex3_n(), _k2(_value("min_cards"))).tokens_per_s,
    # ex4
    "qk_flops": lambda: _ex4_naive().flops,
    "qk_bytes": lambda: _ex4_naive().bytes_moved,
    "qk_intensity": lambda: _ex4_naive().intensity,
    "qk_bound": lambda: _ex4_roof().bound(_ex4_naive().intensity),
    "fused_intensity": _ex4_fused_intensity,
    "fused_bound": lambda: _ex4_roof().bound(_ex4_fused_intensity()),
    # the naive intensity 2 s^2 h / (b (2 s h + s^2)) tends to 2 h / b: the library's at s = 2**40
    "naive_intensity_limit": lambda: rl.gemm(2**40, 2**40, EX4["head_dim"], EX4["bytes_per_elem"]).intensity,
    # ex5
    "efficiency_by_dtype": lambda: {
        d: row.efficiency
        for d, row in rl.precision_sweep(
            EX5["flops"], EX5["elems"], EX5["heron_seconds"], _chip("Heron", EX5["heron"])
        ).items()
    },
    "ibis_bf16_floor_seconds": lambda: rl.Roof(
        EX5["ibis"]["peak_flops_per_s"]["bf16"], EX5["ibis"]["hbm_bytes_per_s"], "Ibis bf16"
    ).seconds(EX5["flops"], EX5["elems"] * rl.bytes_per_element("bf16")),
    # ex6
    "gradient_bytes": lambda: EX6["n_params"] * rl.bytes_per_element("bf16"),
    "bytes_sent_per_gpu": lambda: rl.collective_bytes_per_rank(
        "all-reduce", EX6["n_params"] * EX6["grad_bytes_per_param"], EX6["n_gpus"]
    ),
    "allreduce_seconds": lambda: _ex6_step(EX6["n_gpus"], EX6["tokens_per_gpu"]).comms_seconds,
    "compute_seconds": lambda: _ex6_step(EX6["n_gpus"], EX6["tokens_per_gpu"]).compute_seconds,
    "hidden_at_16": lambda: _ex6_step(EX6["n_gpus"], EX6["tokens_per_gpu"]).hidden,
    "exposed_seconds_128": lambda: (
        _ex6_step(EX6["n_gpus_large"], EX6["global_tokens"] / EX6["n_gpus_large"]).exposed_comms_seconds
    ),
    # ex7
    "model_params": _ex7_n,
    "state_bytes_per_param": lambda: rl.state_bytes_per_param("adam", "mixed").total,
    "activation_bytes": lambda: _ex7_memory(3) - rl.zero_memory(_ex7_n(), _ex7_gpus(), 3).total,
    "lowest_stage": lambda: next(s for s in range(4) if _ex7_memory(s) <= EX7["memory_bytes"]),
    "dp_comms_seconds": lambda: 3 * _ex7_gather().seconds,  # all-gather forward and backward, reduce-scatter
    "step_compute_seconds": lambda: _ex7_compute(),
    "hidden_at_1": lambda: 3 * _ex7_gather().seconds <= _ex7_compute(),
    "critical_tokens_per_gpu": lambda: EX7["seq_len"] * 3 * _ex7_gather().seconds / _ex7_compute(),
    "micro_batch": lambda: next(
        b
        for b in range(1, EX7["max_micro_batch"] + 1)
        if 3 * _ex7_gather().seconds <= _ex7_compute(b) and _ex7_memory(3, b) <= EX7["memory_bytes"]
    ),
    # ex8
    "kv_bytes_per_token": _ex8_kv,
    # the library's server counts the norm gains too (0.8 MB of weights): the same whole requests
    "max_requests": lambda: (
        rl.kv_capacity(
            _ex8_server(), EX8["prompt_len"], EX8["output_len"], allocation="paged", block_tokens=EX8["block_tokens"]
        ).max_requests
    ),
    "decode_step_seconds": lambda: _ex8_roof().seconds(*_ex8_step(EX8["batch"])),
    "decode_bound": lambda: _ex8_roof().bound(rl.OpCount(*_ex8_step(EX8["batch"])).intensity),
    "max_batch": lambda: _ex8_largest(lambda b: _ex8_roof().seconds(*_ex8_step(b)) <= EX8["tpot_seconds"], 4096),
    "ttft_seconds": lambda: _ex8_roof().seconds(*_ex8_step(0, EX8["prompt_len"])),
    "max_chunk_tokens": lambda: _ex8_largest(
        lambda c: _ex8_roof().seconds(*_ex8_step(EX8["running"], c)) <= EX8["tpot_seconds"], 4096
    ),
    # ex9: the library's energy model on the K5's datasheet lines
    "gemm_joules": lambda: (
        _k5_priced(
            lambda chip, power: rl.kernel_energy(chip, _ex9_gemm().flops, _ex9_gemm().bytes_moved, power=power)
        ).joules
    ),
    "energy_ridge": lambda: _k5_priced(lambda chip, power: rl.energy_ridge(chip, power=power)),
    "joules_per_token_batch_1": lambda: _ex9_decode_energy(1).joules,
    "dominant_term_batch_1": lambda: max(_ex9_terms(1), key=_ex9_terms(1).get),
    "joules_per_token_batch_64": lambda: _ex9_decode_energy(EX9["batch"]).joules / EX9["batch"],
    "dollars_per_million_tokens": lambda: rl.cost_per_million_tokens(
        EX9["batch"] / _ex9_decode_energy(EX9["batch"]).seconds, EX9["node_dollars_per_hour"] / EX9["gpus_per_node"]
    ),
    "capped_gemm_flops_per_s": lambda: _k5_priced(
        lambda chip, power: rl.power_capped_flops_per_s(chip, _ex9_gemm().intensity, EX9["cap_watts"], power=power)
    ),
}


def _ibis_copied_rows_refused():
    ibis = _chip("Ibis", EX5["ibis"])
    refused = set()
    for dtype, seconds in EX5["ibis_copied_seconds"].items():
        try:
            rl.precision_sweep(EX5["flops"], EX5["elems"], {dtype: seconds}, ibis)
        except ValueError:  # no such compute, or faster than the roof (ImplausibleMeasurement)
            refused.add(dtype)
    return refused


#: Lettered answers, each decided by a library fact on the scenario inputs.
LETTERS = {
    # D: 110 us needs more bytes per second than the HBM delivers (150 us did not)
    "rerun_verdict": lambda: (
        "D" if _raises(lambda: _ex1_roof().verdict(EX1["flop"], _ex1_op().bytes_moved, EX1["rerun_seconds"])) else "?"
    ),
    # A: compute-bound on Q (ridge 125), memory-bound on P (ridge 200), and faster on P
    "machine_change": lambda: (
        "A"
        if (_ex2_roof("q").bound(EX2["intensity"]), _ex2_roof("p").bound(EX2["intensity"])) == ("compute", "memory")
        and _value("ceiling_p_flops_per_s") > _value("ceiling_q_flops_per_s")
        else "?"
    ),
    # B: batch-1 decode on the cards that hold the model is bound by HBM bandwidth
    "decode_limit": lambda: "B" if rl.decode_roofline(_ex3_n(), _k2(3)).bound == "memory" else "?",
    # A: the naive intensity's limit stays below the O3's ridge
    "longer_sequence": lambda: "A" if LIBRARY["naive_intensity_limit"]() < _ex4_roof().ridge else "?",
    # D: no fp8 on the Ibis, and the fp32 and bf16 times beat its memory roof
    "copied_sweep": lambda: "D" if _ibis_copied_rows_refused() == {"fp8", "fp32", "bf16"} else "?",
    # B: on 128 cards each card's compute is an eighth, its all-reduce about the same: exposed
    "scaling_limit": lambda: (
        "B"
        if _ex6_step(128, EX6["global_tokens"] / 128).comms_seconds
        < 1.1 * _ex6_step(16, EX6["global_tokens"] / 16).comms_seconds
        and not _ex6_step(128, EX6["global_tokens"] / 128).hidden
        else "?"
    ),
    # B: the planner's longest roof at one sequence per card is dp, and its gathers are NIC-bound
    "step_binding_roof": lambda: (
        "B" if _ex7_plan(1).binding == "dp" and _ex7_gather().binding == "node egress" else "?"
    ),
    # C: on the library's own step model, a lone prefill breaks the TPOT, the decodes beside it are
    # memory-bound, and a chunk of the key's size rides in a decode step within the objective
    "technique": lambda: (
        "C"
        if rl.prefill_step(_ex8_server(), EX8["prompt_len"]).seconds > EX8["tpot_seconds"]
        and rl.decode_step(_ex8_server(), EX8["running"], EX8["prompt_len"] + EX8["output_len"]).bound == "memory"
        and rl.mixed_step(
            _ex8_server(),
            [EX8["prompt_len"] + EX8["output_len"]] * EX8["running"],
            _value("max_chunk_tokens"),
            last=False,
        ).seconds
        <= EX8["tpot_seconds"]
        else "?"
    ),
    # B: under the cap the GEMV keeps its memory roof's rate, since at that rate it draws less than the cap
    "gemv_under_cap": lambda: (
        "B"
        if _ex9_gemv_draw() < EX9["cap_watts"]
        and _k5_priced(
            lambda chip, power: rl.power_capped_flops_per_s(chip, _ex9_gemv().intensity, EX9["cap_watts"], power=power)
        )
        == rl.Roof(EX9["bf16_flops_per_s"], EX9["hbm_bytes_per_s"], "K5").attainable_flops_per_s(_ex9_gemv().intensity)
        else "?"
    ),
}

#: Questions about reading or reasoning that no library function answers, each with why.
CONCEPT_ONLY = {
    "settling_measurement": "which of four measurements would settle the question: a reading of the options",
    "settling_reason": "why that measurement settles it",
    "machine_change_reason": "why the kernel changes side of the ridge",
    "decode_limit_reason": "why bandwidth limits batch-1 decode",
    "flash_change": "what fusion changes, bytes or FLOPs",
    "flash_reason": "why fusion leaves the FLOPs alone",
    "copied_sweep_reason": "how to tell an impossible timing",
    "scaling_reason": "why 128 cards stop paying",
    "step_binding_reason": "why the NICs bind: the two phases of a collective across nodes",
    "technique_reason": "why chunked prefill keeps the TPOT: decode leaves the compute roof idle",
    "gemv_under_cap_reason": "why a cap leaves a memory-bound kernel alone: its draw at its roof is under the cap",
}

#: The key's student functions and the library functions they stand for.
FUNCTIONS = {"ceiling", "precision_sweep", "step_seconds", "zero_bytes_per_gpu", "tpot_seconds", "joules_per_token"}


def _raises(fn) -> bool:
    try:
        fn()
    except (ValueError, ImplausibleMeasurement):
        return True
    return False


# --------------------------------------------------------------------------- the tests


def test_every_key_reference_has_a_library_counterpart():
    covered = set(LIBRARY) | set(LETTERS) | set(CONCEPT_ONLY) | FUNCTIONS
    assert set(REFERENCES) == covered, (
        f"key entries without a counterpart: {sorted(set(REFERENCES) - covered)}; "
        f"counterparts of no key entry: {sorted(covered - set(REFERENCES))}"
    )
    assert len(REFERENCES) == 79  # every graded entry of the nine exercises (a function counts once)


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_each_reference_is_the_librarys_answer(name):
    want, got = LIBRARY[name](), _value(name)
    if isinstance(got, dict):
        assert set(got) == set(want)
        for d in got:
            assert got[d] == pytest.approx(want[d], rel=1e-9), d
    elif isinstance(got, (bool, str)) or isinstance(want, (bool, str)):
        assert got == want
    else:
        assert float(got) == pytest.approx(float(want), rel=1e-9)


@pytest.mark.parametrize("name", sorted(LETTERS))
def test_each_lettered_answer_follows_from_the_library(name):
    assert LETTERS[name]() == _value(name)


def test_the_keys_element_widths_are_the_librarys():
    shared = set(K.WIDTHS) & set(rl.BYTES_PER_ELEMENT)
    assert shared == set(rl.BYTES_PER_ELEMENT)
    assert {d: K.WIDTHS[d] for d in shared} == dict(rl.BYTES_PER_ELEMENT)
    # the two formats the library's registry lacks, on purpose (probes the library cannot answer)
    assert (K.WIDTHS["fp6"], K.WIDTHS["int4"]) == (6 / 8, 4 / 8)


def _probes(part_key, seed):
    part = K.PARTS[part_key]
    return K.draw_probes(part, random.Random(seed))


def _library_ceiling(intensity, datasheet, dtype):
    if dtype not in datasheet["peak_flops_per_s"]:
        raise ValueError(f"no {dtype} compute")
    return rl.Roof(datasheet["peak_flops_per_s"][dtype], datasheet["hbm_bytes_per_s"], dtype).attainable_flops_per_s(
        intensity
    )


def _library_sweep(flops, elems, seconds_by_dtype, datasheet):
    rows = {}
    for dtype, seconds in seconds_by_dtype.items():
        if dtype not in datasheet["peak_flops_per_s"]:
            raise ValueError(f"no {dtype} compute")
        width = rl.bytes_per_element(dtype) if dtype in rl.BYTES_PER_ELEMENT else K.WIDTHS[dtype]
        roof = rl.Roof(datasheet["peak_flops_per_s"][dtype], datasheet["hbm_bytes_per_s"], dtype)
        rows[dtype] = roof.verdict(flops, elems * width, seconds)
    return rows


def _library_step(n_params, tokens_per_gpu, n_gpus, accelerator, link):
    chip = rl.accelerator("probe", {"bf16": accelerator["bf16_flops_per_s"]}, 1e12)
    compute = tokens_per_gpu / rl.expected_tokens_per_s(n_params, 1, chip, accelerator["mfu"])
    if n_gpus == 1:  # no all-reduce: the compute alone
        return compute
    comms = rl.collective_seconds("all-reduce", n_params * 2, n_gpus, link["alpha_seconds"], link["bytes_per_s"])
    return compute + rl.exposed_comms_seconds(compute, comms, K.BACKWARD_SHARE)  # the backward hides what it can


def _library_zero(n_params, dp, stage, state):
    """The library's sharding (Adam's mixed recipe, part by part) applied to the probe's own widths."""
    try:
        sharded = rl.zero_memory(n_params, dp, stage)
    except TypeError as err:  # the library refuses 7.5 cards as a type; the exercise asks ValueError
        raise ValueError(str(err)) from None
    adam = rl.state_bytes_per_param("adam", "mixed")
    return (
        state["weights"] * sharded.weights / adam.weights
        + state["gradients"] * sharded.gradients / adam.gradients
        + state["optimizer"] * sharded.optimizer / adam.optimizer
    )


def _library_tpot(n_params, kv_bytes_per_token, batch, context_len, accelerator):
    """The exercise's decode step on the library's roof (its Server needs a registry GPU's memory)."""
    for value, name in ((batch, "batch"), (context_len, "context_len")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number of at least 1")
    roof = rl.Roof(accelerator["bf16_flops_per_s"], accelerator["hbm_bytes_per_s"], "probe")  # refuses 0 B/s
    flops = rl.training_flops_per_token(n_params, convention="6N") / 3 * batch  # the forward's 2N per token
    return roof.seconds(flops, n_params * 2 + batch * context_len * kv_bytes_per_token)


def _library_joules_per_token(n_params, kv_bytes_per_token, batch, context_len, accelerator):
    """The exercise's decode step priced by the library's kernel energy, on a chip described by the probe."""
    for value, name in ((batch, "batch"), (context_len, "context_len")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number of at least 1")
    if accelerator["static_watts"] < 0:  # the registry's loader refuses such a figure; a PowerSpec takes it
        raise ValueError("static_watts must not be negative")
    chip = rl.accelerator(
        "probe", {"bf16": accelerator["bf16_flops_per_s"]}, accelerator["hbm_bytes_per_s"]
    )  # refuses 0 B/s
    figures = (accelerator["static_watts"], accelerator["joules_per_flop"], accelerator["joules_per_byte"])
    flops = rl.training_flops_per_token(n_params, convention="6N") / 3 * batch  # the forward's 2N per token
    power = _figures(chip, 1e9, *figures)  # the TDP is not a term of a kernel's energy
    bytes_moved = n_params * 2 + batch * context_len * kv_bytes_per_token
    return rl.kernel_energy(chip, flops, bytes_moved, power=power).joules / batch


@pytest.mark.parametrize("seed", [K.PRACTICE_SEED, 1, 2])
def test_the_keys_functions_agree_with_the_library_on_their_probes(seed):
    checked = 0
    for part_key, ref, lib in (
        ("ex2-h", K.ref_ceiling, _library_ceiling),
        ("ex5-c", K.ref_sweep, _library_sweep),
        ("ex5-b", K.ref_sweep, _library_sweep),
        ("ex6-h", K.ref_step_seconds, _library_step),
        ("ex7-k", K.ref_zero_bytes_per_gpu, _library_zero),
        ("ex8-h", K.ref_tpot_seconds, _library_tpot),
        ("ex9-g", K.ref_joules_per_token, _library_joules_per_token),
    ):
        for probe in _probes(part_key, seed):
            if probe.kind == "refuse":
                assert _raises(lambda: ref(*probe.args)) and _raises(lambda: lib(*probe.args)), probe.id
                continue
            want, got = lib(*probe.args), ref(*probe.args)
            if isinstance(got, dict):
                for dtype, row in got.items():
                    v = want[dtype]
                    assert row["bytes_moved"] == pytest.approx(v.bytes_moved, rel=1e-12)
                    assert row["intensity"] == pytest.approx(v.intensity, rel=1e-12)
                    assert row["bound"] == v.bound
                    assert row["ceiling_flops_per_s"] == pytest.approx(v.ceiling_flops_per_s, rel=1e-12)
                    assert row["efficiency"] == pytest.approx(v.efficiency, rel=1e-12)
            else:
                assert got == pytest.approx(want, rel=1e-9), probe.id
            checked += 1
    assert checked >= 30  # 5 ceilings, 4 + 4 sweeps, 5 steps, 10 ZeRO states, 4 + 4 decode steps, refusals


def test_the_keys_sweep_decides_the_bound_as_the_library_does_on_either_side_of_the_ridge():
    # Drawn probes may miss the band just below a ridge, so a key whose rule drifted there (a
    # ridge off by a factor of two) would pass the probe test above. A chip with 1e15 FLOP/s in
    # bf16, 2e15 in fp8 and 1e12 B/s has ridges of 1,000 and 2,000 FLOP/byte; each format is swept
    # at intensities from 0.3 to 3 times its ridge, the ridge itself included (compute-bound).
    datasheet = {"hbm_bytes_per_s": 1e12, "peak_flops_per_s": {"bf16": 1e15, "fp8": 2e15}}
    elems = 2**20
    seen = set()
    for dtype, peak in datasheet["peak_flops_per_s"].items():
        ridge = peak / datasheet["hbm_bytes_per_s"]
        for factor in (0.3, 0.55, 0.99, 1.0, 1.01, 3.0):
            flops = factor * ridge * elems * K.WIDTHS[dtype]  # intensity = factor * ridge
            roof_seconds = max(flops / peak, elems * K.WIDTHS[dtype] / datasheet["hbm_bytes_per_s"])
            seconds = {dtype: 2 * roof_seconds}  # half the roof: a plausible measurement
            got = K.ref_sweep(flops, elems, seconds, datasheet)[dtype]
            want = _library_sweep(flops, elems, seconds, datasheet)[dtype]
            assert got["bound"] == want.bound == ("memory" if factor < 1 else "compute"), (dtype, factor)
            assert got["ceiling_flops_per_s"] == pytest.approx(want.ceiling_flops_per_s, rel=1e-12)
            seen.add(got["bound"])
    assert seen == {"memory", "compute"}
