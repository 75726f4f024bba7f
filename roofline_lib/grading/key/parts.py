"""The exercises and their parts: what each part asks for, how it is judged, its probes and marks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .judges import all_of, choice, dict_of_numbers, function, number
from .probes import ceiling_probes, joules_per_token_probes, step_probes, sweep_probes, tpot_probes, zero_probes
from .references import (
    ex1_bytes_per_s,
    ex1_intensity,
    ex3_cards,
    ex3_params,
    ex3_tokens_per_s,
    ex4_fused,
    ex4_naive,
    ex4_ridge,
    ex5_efficiency,
    ex6_comms_seconds,
    ex6_compute_seconds,
    ex6_exposed,
    ex7_activation_bytes,
    ex7_comms_seconds,
    ex7_compute_seconds,
    ex7_fits,
    ex7_gpus,
    ex7_hidden,
    ex7_micro_batch,
    ex7_params,
    ex7_phases,
    ex8_context,
    ex8_decode_bound,
    ex8_decode_seconds,
    ex8_kv_bytes_per_token,
    ex8_max_batch,
    ex8_max_chunk,
    ex8_max_requests,
    ex8_ttft,
    ex8_weight_bytes,
    ex9_capped_flops_per_s,
    ex9_decode_joules_per_token,
    ex9_decode_seconds,
    ex9_dollars_per_million_tokens,
    ex9_dominant_term,
    ex9_energy_ridge,
    ex9_gemm,
    ex9_joules,
    ex9_power_at_roof,
    ex9_seconds,
    ref_ceiling,
    ref_joules_per_token,
    ref_step_seconds,
    ref_sweep,
    ref_tpot_seconds,
    ref_zero_bytes_per_gpu,
)
from .scenarios import EX1, EX2, EX3, EX4, EX5, EX6, EX7, EX7_STATE, EX8, EX9, WIDTHS

__all__ = [
    "Exercise",
    "Part",
    "EXERCISES",
    "PARTS",
    "parts_of",
]


@dataclass(frozen=True)
class Exercise:
    key: str
    stem: str
    title: str


@dataclass(frozen=True)
class Part:
    key: str
    title: str
    names: tuple[str, ...]
    judge: Callable = None  # (entries, calls, probes) -> Verdict
    probes: Callable | None = None  # (random.Random) -> list[Probe]
    marks: int = 1

    @property
    def exercise(self) -> str:
        return self.key.split("-")[0]


EXERCISES: dict[str, Exercise] = {
    e.key: e
    for e in (
        Exercise("ex1", "ex1_layernorm_4_percent", "The LayerNorm at 4 % of peak"),
        Exercise("ex2", "ex2_ridge_points", "Two datasheets: ridge, bound, ceiling"),
        Exercise("ex3", "ex3_70b_budget", "A 70B config: training bill and decode"),
        Exercise("ex4", "ex4_naive_attention", "Naive QK^T: bytes, intensity, FlashAttention"),
        Exercise("ex5", "ex5_precision_sweep", "A precision sweep from a datasheet"),
        Exercise("ex6", "ex6_allreduce_overlap", "The gradient all-reduce and its overlap"),
        Exercise("ex7", "ex7_zero_layout", "A layout that fits and hides its comms"),
        Exercise("ex8", "ex8_serving_slo", "A deployment that meets its SLO"),
        Exercise("ex9", "ex9_energy_cost", "Joules, watts and dollars per token"),
    )
}


_SWEEP_FIELDS = ("bytes_moved", "intensity", "bound", "achieved_flops_per_s", "ceiling_flops_per_s", "efficiency")
_SWEEP_UNITS = {
    "bytes_moved": "bytes",
    "intensity": "FLOP/byte",
    "achieved_flops_per_s": "FLOP/s",
    "ceiling_flops_per_s": "FLOP/s",
    "efficiency": "fraction",
}

_ROOF = (
    "The roofline ceiling is the lower of two roofs: the compute peak, and the memory "
    "bandwidth times the arithmetic intensity."
)
_RIDGE = "The ridge point is where the two roofs meet: peak FLOP/s over bytes/s."
_INTENSITY = "Arithmetic intensity is FLOPs over the bytes that cross the memory bus, both directions."
_JUDGE_BY_ROOF = "A kernel is judged against the roof that binds it."


def _asks(key, title, judge, name, *args, **kwargs) -> Part:
    """A part that asks for the one entry ``name``, judged by ``judge(name, *args, **kwargs)``."""
    return Part(key, title, (name,), judge(name, *args, **kwargs))


def _function_part(key, title, name, reference, probes, refuse, concept, *, fields=None, units=None) -> Part:
    """A part that calls the student's function ``name`` on ``probes(rng, refuse=refuse)``."""
    return Part(
        key,
        title,
        (name,),
        function(name, reference, fields=fields, units=units, concept=concept),
        probes=lambda rng: probes(rng, refuse=refuse),
    )


def _write_and_refuse(keys, name, reference, probes, concept, refusal, *, refusal_title, units) -> tuple[Part, Part]:
    """Two parts on the student's function ``name``: "write name()" on fair probes, and
    "name() <refusal_title>" on probes it must refuse (``refusal`` is that part's concept)."""
    write_key, refuse_key = keys
    return (
        _function_part(write_key, f"write {name}()", name, reference, probes, False, concept, units=units),
        _function_part(refuse_key, f"{name}() {refusal_title}", name, reference, probes, True, refusal, units=units),
    )


def _ex2_ridge_part(key, chip) -> Part:
    """Exercise 2's ridge of chip ``chip`` ("p" or "q"); the inverted ratio is its trap."""
    peak, hbm = f"{chip}_bf16", f"{chip}_hbm"  # keys of EX2, read when judged
    return _asks(
        key,
        f"ridge of chip {chip.upper()}",
        number,
        f"ridge_{chip}",
        lambda: EX2[peak] / EX2[hbm],
        "FLOP/byte",
        _RIDGE,
        traps=[(lambda: EX2[hbm] / EX2[peak], "the ridge is FLOP per byte, not bytes per FLOP.")],
    )


def _ex2_ceiling_part(key, chip, trap) -> Part:
    """Exercise 2's roofline ceiling of chip ``chip`` at the kernel's intensity; ``trap`` is (value, hint)."""
    peak, hbm = f"{chip}_bf16", f"{chip}_hbm"  # keys of EX2, read when judged
    return _asks(
        key,
        f"ceiling on {chip.upper()}",
        number,
        f"ceiling_{chip}_flops_per_s",
        lambda: min(EX2[peak], EX2[hbm] * EX2["intensity"]),
        "FLOP/s",
        _ROOF,
        traps=[trap],
    )


_PART_LIST: list[Part] = [
    # ------------------------------------------------------------------ ex1
    _asks(
        "ex1-a",
        "intensity from the profile",
        number,
        "intensity",
        ex1_intensity,
        "FLOP/byte",
        _INTENSITY,
        traps=[(lambda: EX1["flop"] / EX1["read_bytes"], "the write of the output crosses the memory bus too.")],
    ),
    _asks(
        "ex1-b",
        "the fp32 ridge of the datasheet",
        number,
        "ridge_fp32",
        lambda: EX1["fp32_flops_per_s"] / EX1["hbm_bytes_per_s"],
        "FLOP/byte",
        _RIDGE,
        traps=[
            (
                lambda: EX1["bf16_flops_per_s"] / EX1["hbm_bytes_per_s"],
                "element-wise fp32 arithmetic runs on the vector units, not the matrix units: "
                "read the datasheet line of the precision the kernel computes in.",
            )
        ],
    ),
    _asks(
        "ex1-c",
        "which roof binds",
        choice,
        "binding_roof",
        lambda: "memory" if ex1_intensity() < EX1["fp32_flops_per_s"] / EX1["hbm_bytes_per_s"] else "compute",
        ("memory", "compute"),
        "Compare the intensity with the ridge.",
    ),
    _asks(
        "ex1-d",
        "fraction of the bandwidth roof",
        number,
        "fraction_of_bandwidth",
        lambda: ex1_bytes_per_s(EX1["seconds"]) / EX1["hbm_bytes_per_s"],
        "fraction",
        "Achieved bytes per second over the datasheet's bandwidth.",
        traps=[
            (
                lambda: EX1["flop"] / EX1["seconds"] / EX1["fp32_flops_per_s"],
                "that is the profiler's share of the compute peak; " + _JUDGE_BY_ROOF,
            )
        ],
    ),
    _asks(
        "ex1-e",
        "the best share of the fp32 peak",
        number,
        "best_share_of_peak",
        lambda: min(EX1["fp32_flops_per_s"], ex1_intensity() * EX1["hbm_bytes_per_s"]) / EX1["fp32_flops_per_s"],
        "fraction",
        "A perfect kernel runs on its ceiling. " + _ROOF,
    ),
    _asks(
        "ex1-f",
        "the measurement that settles it",
        choice,
        "settling_measurement",
        "C",
        ("A", "B", "C", "D"),
        _JUDGE_BY_ROOF,
    ),
    _asks("ex1-g", "why that measurement", choice, "settling_reason", 2, (1, 2, 3, 4), _JUDGE_BY_ROOF),
    _asks(
        "ex1-h",
        "the 110 us re-run",
        choice,
        "rerun_verdict",
        "D",
        ("A", "B", "C", "D"),
        "Turn the new time into bytes per second and hold it against the roof.",
    ),
    # ------------------------------------------------------------------ ex2
    _ex2_ridge_part("ex2-a", "p"),
    _ex2_ridge_part("ex2-b", "q"),
    _ex2_ceiling_part(
        "ex2-c", "p", (lambda: EX2["p_bf16"], "that is the compute roof; on which side of P's ridge is the kernel?")
    ),
    _ex2_ceiling_part(
        "ex2-d",
        "q",
        (
            lambda: EX2["q_hbm"] * EX2["intensity"],
            "that is the memory roof at this intensity, which lies above Q's compute roof.",
        ),
    ),
    _asks(
        "ex2-e",
        "what moving from Q to P does",
        choice,
        "machine_change",
        "A",
        ("A", "B", "C", "D"),
        "Decide the bound on each chip, then compare the ceilings.",
    ),
    _asks(
        "ex2-f",
        "why",
        choice,
        "machine_change_reason",
        3,
        (1, 2, 3, 4),
        "Where does each chip's ridge sit relative to the kernel?",
    ),
    *_write_and_refuse(
        ("ex2-g", "ex2-h"),
        "ceiling",
        ref_ceiling,
        ceiling_probes,
        _ROOF,
        "An accelerator without compute in a format has no roof for it, and an intensity "
        "must be a positive number of FLOP/byte.",
        refusal_title="refuses what has no answer",
        units={"result": "FLOP/s"},
    ),
    # ------------------------------------------------------------------ ex3
    _asks(
        "ex3-a",
        "parameters from the config",
        number,
        "n_params",
        ex3_params,
        "parameters",
        "Count every weight matrix of one layer (attention projections and the MLP), times the "
        "layers, plus the embedding and output matrices.",
        traps=[
            (
                lambda: ex3_params(kv_heads=EX3["num_attention_heads"]),
                "with grouped-query attention the key and value projections have only num_key_value_heads heads.",
            ),
            (lambda: ex3_params(mlp_matrices=2), "a gated MLP has three matrices, not two."),
            (lambda: ex3_params(tied=True), "the embeddings are not tied: the output head is a second matrix."),
        ],
    ),
    _asks(
        "ex3-b",
        "training FLOPs",
        number,
        "training_flops",
        lambda: 6 * ex3_params() * EX3["tokens"],
        "FLOP",
        "Training costs about 6 FLOP per parameter per token: 2 forward, 4 backward.",
        traps=[(lambda: 2 * ex3_params() * EX3["tokens"], "that counts the forward pass only.")],
    ),
    _asks(
        "ex3-c",
        "accelerator-days",
        number,
        "accelerator_days",
        lambda: 6 * ex3_params() * EX3["tokens"] / (EX3["mfu"] * EX3["bf16_flops_per_s"]) / 86400,
        "days",
        "MFU is the share of the dense peak that does model FLOPs; a day has 86,400 s.",
        rel_tol=0.02,
        traps=[
            (
                lambda: 6 * ex3_params() * EX3["tokens"] * EX3["mfu"] / EX3["bf16_flops_per_s"] / 86400,
                "MFU scales the peak down, so it lengthens the run.",
            )
        ],
    ),
    _asks(
        "ex3-d",
        "does it fit on one card",
        choice,
        "fits_on_one",
        lambda: ex3_params() * EX3["bytes_per_param"] <= EX3["memory_bytes"],
        (True, False),
        "Weights in bytes = parameters x bytes per parameter; compare with the card's memory.",
    ),
    _asks(
        "ex3-e",
        "the fewest cards",
        choice,
        "min_cards",
        ex3_cards,
        tuple(range(1, 17)),
        "A part of a card holds nothing: round the number of cards up.",
    ),
    _asks(
        "ex3-f",
        "the decode ceiling",
        number,
        "decode_tokens_per_s",
        lambda: ex3_tokens_per_s(ex3_cards()),
        "tokens/s",
        "Each token reads every weight once; the cards read their shares at the same time.",
        traps=[
            (lambda: ex3_tokens_per_s(1), "the weights do not fit on one card."),
            (lambda: ex3_tokens_per_s(ex3_cards() - 1), "count the cards that actually hold the weights."),
        ],
    ),
    _asks(
        "ex3-g",
        "what limits batch-1 decode",
        choice,
        "decode_limit",
        "B",
        ("A", "B", "C", "D"),
        "Work out decode's intensity and compare it with the ridge.",
    ),
    _asks(
        "ex3-h",
        "why",
        choice,
        "decode_limit_reason",
        1,
        (1, 2, 3, 4),
        "Work out decode's intensity and compare it with the ridge.",
    ),
    # ------------------------------------------------------------------ ex4
    _asks(
        "ex4-a",
        "QK^T FLOPs",
        number,
        "qk_flops",
        lambda: ex4_naive()[0],
        "FLOP",
        "A multiply-add is 2 FLOP.",
        traps=[(lambda: ex4_naive()[0] / 2, "a multiply-add counts as 2 FLOP.")],
    ),
    _asks(
        "ex4-b",
        "QK^T bytes",
        number,
        "qk_bytes",
        lambda: ex4_naive()[1],
        "bytes",
        "Every tensor that crosses the memory bus, once, at its width: both inputs and the output.",
        traps=[
            (
                lambda: EX4["bytes_per_elem"] * 2 * EX4["seq"] * EX4["head_dim"],
                "the naive kernel writes the whole score matrix to memory.",
            ),
            (lambda: EX4["bytes_per_elem"] * EX4["seq"] ** 2, "Q and K are read too."),
        ],
    ),
    _asks(
        "ex4-c",
        "QK^T intensity",
        number,
        "qk_intensity",
        lambda: ex4_naive()[0] / ex4_naive()[1],
        "FLOP/byte",
        _INTENSITY,
    ),
    _asks(
        "ex4-d",
        "where it sits",
        choice,
        "qk_bound",
        lambda: "memory" if ex4_naive()[0] / ex4_naive()[1] < ex4_ridge() else "compute",
        ("memory", "compute"),
        "Compare the intensity with this chip's ridge.",
    ),
    _asks(
        "ex4-e",
        "what FlashAttention changes",
        choice,
        "flash_change",
        "C",
        ("A", "B", "C", "D"),
        "Which count, FLOPs or bytes, does fusion change?",
    ),
    _asks("ex4-f", "why", choice, "flash_reason", 4, (1, 2, 3, 4), "Which count, FLOPs or bytes, does fusion change?"),
    Part(
        "ex4-g",
        "the fused kernel",
        ("fused_intensity", "fused_bound"),
        all_of(
            number(
                "fused_intensity",
                lambda: ex4_fused()[0] / ex4_fused()[1],
                "FLOP/byte",
                "Two matmuls' FLOPs over four s x d_h tensors' bytes.",
                traps=[(lambda: ex4_fused()[0] / 2 / ex4_fused()[1], "count both matmuls.")],
            ),
            choice(
                "fused_bound",
                lambda: "memory" if ex4_fused()[0] / ex4_fused()[1] < ex4_ridge() else "compute",
                ("memory", "compute"),
                "Compare the fused intensity with the ridge.",
            ),
        ),
    ),
    _asks(
        "ex4-h",
        "the naive intensity as s grows",
        number,
        "naive_intensity_limit",
        lambda: 2 * EX4["head_dim"] / EX4["bytes_per_elem"],
        "FLOP/byte",
        "Write the intensity as a function of s and let s grow: which terms dominate?",
    ),
    _asks(
        "ex4-i",
        "longer sequences",
        choice,
        "longer_sequence",
        "A",
        ("A", "B", "C", "D"),
        "Compare the limit of part h with the ridge.",
    ),
    # ------------------------------------------------------------------ ex5
    *(
        _function_part(
            key,
            title,
            "precision_sweep",
            ref_sweep,
            sweep_probes,
            refuse,
            concept,
            fields=_SWEEP_FIELDS,
            units=_SWEEP_UNITS,
        )
        for key, title, refuse, concept in (
            ("ex5-a", "write precision_sweep()", None, _ROOF),
            (
                "ex5-b",
                "refuse a precision the chip lacks",
                "precision",
                "A chip without compute in a format cannot have run the kernel in it.",
            ),
            (
                "ex5-c",
                "refuse an impossible timing",
                "timing",
                "No measurement can beat its roof; one that does is a measuring mistake.",
            ),
        )
    ),
    _asks(
        "ex5-d",
        "efficiency per width",
        dict_of_numbers,
        "efficiency_by_dtype",
        ex5_efficiency,
        "fraction",
        "Achieved FLOP/s over the ceiling at that width.",
    ),
    _asks(
        "ex5-e",
        "the fastest possible bf16 time on Ibis",
        number,
        "ibis_bf16_floor_seconds",
        lambda: EX5["elems"] * WIDTHS["bf16"] / EX5["ibis"]["hbm_bytes_per_s"],
        "seconds",
        "A memory-bound kernel can go no faster than its bytes over the bandwidth.",
        traps=[
            (
                lambda: EX5["elems"] * WIDTHS["fp32"] / EX5["ibis"]["hbm_bytes_per_s"],
                "bf16 is 2 bytes per element.",
            ),
            (
                lambda: EX5["flops"] / EX5["ibis"]["peak_flops_per_s"]["bf16"],
                "that is the compute roof's time; this kernel is far left of the ridge.",
            ),
        ],
    ),
    _asks(
        "ex5-f",
        "what is wrong with the copied sweep",
        choice,
        "copied_sweep",
        "D",
        ("A", "B", "C", "D"),
        "Check each row against the datasheet: the formats, then the roof.",
    ),
    _asks(
        "ex5-g",
        "why the bf16 row cannot be real",
        choice,
        "copied_sweep_reason",
        2,
        (1, 2, 3, 4),
        "No measurement can beat its roof.",
    ),
]

_OVERLAP = (
    "A gradient's all-reduce can start only once the backward pass has produced it, so "
    "it hides under the backward pass at most; what does not fit is exposed."
)
_RING = "A ring all-reduce is a reduce-scatter then an all-gather; in each, a rank sends n - 1 chunks of S / n."

_PART_LIST += [
    _asks(
        "ex6-a",
        "the gradient message",
        number,
        "gradient_bytes",
        lambda: EX6["n_params"] * EX6["grad_bytes_per_param"],
        "bytes",
        "One gradient per parameter, at the width the gradients are sent in.",
        traps=[(lambda: EX6["n_params"] * 4, "the gradients are sent in bf16, 2 bytes each.")],
    ),
    _asks(
        "ex6-b",
        "bytes each accelerator sends",
        number,
        "bytes_sent_per_gpu",
        lambda: 2 * (EX6["n_gpus"] - 1) / EX6["n_gpus"] * EX6["n_params"] * EX6["grad_bytes_per_param"],
        "bytes",
        _RING,
        traps=[
            (
                lambda: EX6["n_params"] * EX6["grad_bytes_per_param"],
                "each byte of the gradient leaves a rank about twice: once in the reduce-scatter, once in the all-gather.",
            ),
            (
                lambda: (EX6["n_gpus"] - 1) / EX6["n_gpus"] * EX6["n_params"] * EX6["grad_bytes_per_param"],
                "that is one of the two phases only.",
            ),
        ],
    ),
    _asks(
        "ex6-c",
        "the all-reduce time",
        number,
        "allreduce_seconds",
        lambda: ex6_comms_seconds(EX6["n_gpus"]),
        "seconds",
        "Alpha-beta: a fixed cost per message sent one after another, plus the bytes over the link bandwidth.",
        traps=[(lambda: ex6_comms_seconds(EX6["n_gpus"]) / 2, "count both phases of the ring.")],
    ),
    _asks(
        "ex6-d",
        "the compute time of a step",
        number,
        "compute_seconds",
        lambda: ex6_compute_seconds(EX6["tokens_per_gpu"]),
        "seconds",
        "Training costs about 6 FLOP per parameter per token; MFU is the share of the peak that does them.",
        traps=[
            (
                lambda: 6 * EX6["n_params"] * EX6["tokens_per_gpu"] / EX6["bf16_flops_per_s"],
                "the run reaches its MFU, not the peak.",
            )
        ],
    ),
    _asks(
        "ex6-e",
        "hidden at 16 accelerators?",
        choice,
        "hidden_at_16",
        lambda: ex6_exposed(EX6["n_gpus"], EX6["tokens_per_gpu"]) == 0,
        (True, False),
        _OVERLAP,
    ),
    _asks(
        "ex6-f",
        "exposed time at 128 accelerators",
        number,
        "exposed_seconds_128",
        lambda: ex6_exposed(EX6["n_gpus_large"], EX6["global_tokens"] / EX6["n_gpus_large"]),
        "seconds",
        _OVERLAP + " With the global batch fixed, each accelerator computes on fewer tokens.",
        traps=[
            (
                lambda: (
                    ex6_comms_seconds(EX6["n_gpus_large"])
                    - ex6_compute_seconds(EX6["global_tokens"] / EX6["n_gpus_large"])
                ),
                "the all-reduce cannot hide under the forward pass: its gradients do not exist yet.",
            ),
            (
                lambda: ex6_comms_seconds(EX6["n_gpus_large"]),
                "part of the all-reduce still hides under the backward pass.",
            ),
        ],
    ),
    *_write_and_refuse(
        ("ex6-g", "ex6-h"),
        "step_seconds",
        ref_step_seconds,
        step_probes,
        _OVERLAP,
        "A step needs at least one accelerator, a positive number of tokens and an MFU that is a fraction.",
        refusal_title="refuses impossible inputs",
        units={"result": "seconds"},
    ),
    _asks(
        "ex6-i",
        "why 128 accelerators stop scaling",
        choice,
        "scaling_limit",
        "B",
        ("A", "B", "C", "D"),
        "Compare how the compute and the all-reduce of one accelerator change with the count.",
    ),
    _asks(
        "ex6-j",
        "why",
        choice,
        "scaling_reason",
        1,
        (1, 2, 3, 4),
        "What does a ring all-reduce send per rank, as a function of n?",
    ),
]

_ZERO = (
    "ZeRO shards the optimizer state over the data-parallel cards at stage 1, the gradients too at "
    "stage 2 and the weights too at stage 3; what is not sharded is whole on every card."
)
_FITS = "A card must hold its share of the training state and the activations its micro-batch saves."
_HIERARCHY = (
    "Across nodes a collective is priced by the slower of two phases: each card's NVLink phase and "
    "each node's traffic through the NICs it has."
)
_ZERO3_OVERLAP = (
    "ZeRO-3 gathers the weights before the forward and again before the backward, and reduce-scatters "
    "the gradients during the backward: prefetched, they hide when they take no longer than the compute."
)

_PART_LIST += [
    _asks(
        "ex7-a",
        "parameters from the config",
        number,
        "model_params",
        ex7_params,
        "parameters",
        "Count every weight matrix of one layer (attention projections and the MLP), times the "
        "layers, plus the embedding and output matrices.",
        traps=[
            (
                lambda: ex7_params(kv_heads=EX7["num_attention_heads"]),
                "with grouped-query attention the key and value projections have only num_key_value_heads heads.",
            ),
            (lambda: ex7_params(tied=True), "the embeddings are not tied: the output head is a second matrix."),
        ],
    ),
    _asks(
        "ex7-b",
        "training state per parameter",
        number,
        "state_bytes_per_param",
        lambda: sum(EX7_STATE.values()),
        "bytes",
        "Mixed-precision Adam keeps a bf16 weight and gradient, and in fp32 a master copy, the momentum "
        "and the variance.",
        traps=[
            (lambda: EX7_STATE["weights"] + EX7_STATE["gradients"], "Adam's state and the master copy count too."),
            (lambda: sum(EX7_STATE.values()) - 4, "mixed precision keeps an fp32 master copy of every weight."),
        ],
    ),
    _asks(
        "ex7-c",
        "activations per card",
        number,
        "activation_bytes",
        ex7_activation_bytes,
        "bytes",
        "A layer keeps about 34 bytes per token per unit of width for its backward pass when the "
        "attention scores are not stored; every layer keeps its own.",
        traps=[
            (
                lambda: ex7_activation_bytes(scores=True),
                "with selective recompute the attention scores are recomputed, not stored.",
            ),
            (lambda: ex7_activation_bytes(layers=1), "that is one layer; every layer saves its own."),
        ],
    ),
    _asks(
        "ex7-d",
        "the lowest ZeRO stage that fits",
        choice,
        "lowest_stage",
        lambda: next(s for s in (0, 1, 2, 3) if ex7_fits(s)),
        (0, 1, 2, 3),
        _ZERO + " " + _FITS,
    ),
    _asks(
        "ex7-e",
        "ZeRO-3's collectives per step",
        number,
        "dp_comms_seconds",
        ex7_comms_seconds,
        "seconds",
        _HIERARCHY,
        traps=[
            (
                lambda: 3 * (ex7_gpus() - 1) / ex7_gpus() * 2 * ex7_params() / EX7["nic_bytes_per_s"],
                "a card does not send everything through one NIC: inside a node the traffic goes over "
                "NVLink, and only the node's share crosses its NICs, all of them at once.",
            ),
            (
                lambda: ex7_phases(3)[0],
                "that is the NVLink phase alone; price the NIC phase too and take the one that takes longer.",
            ),
            (
                lambda: max(ex7_phases(2)),
                "ZeRO-3 runs three collectives of the weights' size, not an all-reduce's two.",
            ),
            (lambda: max(ex7_phases(1)), "ZeRO-3 runs three collectives per step."),
        ],
    ),
    _asks(
        "ex7-f",
        "the compute roof of a step",
        number,
        "step_compute_seconds",
        ex7_compute_seconds,
        "seconds",
        "Training costs about 6 FLOP per parameter per token; the compute roof is the dense peak.",
        traps=[(lambda: ex7_compute_seconds(flops_per_param=2), "that is the forward pass only.")],
    ),
    _asks(
        "ex7-g", "hidden at one sequence per card?", choice, "hidden_at_1", ex7_hidden, (True, False), _ZERO3_OVERLAP
    ),
    _asks(
        "ex7-h",
        "the critical tokens per card",
        number,
        "critical_tokens_per_gpu",
        lambda: EX7["seq_len"] * EX7["micro_batch"] * ex7_comms_seconds() / ex7_compute_seconds(),
        "tokens",
        "The compute grows with the tokens per card, the data-parallel bytes do not: they meet where "
        "the compute equals the collectives' time.",
    ),
    _asks(
        "ex7-i",
        "the micro-batch that fits and hides",
        choice,
        "micro_batch",
        ex7_micro_batch,
        tuple(range(1, EX7["max_micro_batch"] + 1)),
        "More sequences per card lengthen the compute but add activations: " + _FITS,
    ),
    *_write_and_refuse(
        ("ex7-j", "ex7-k"),
        "zero_bytes_per_gpu",
        ref_zero_bytes_per_gpu,
        zero_probes,
        _ZERO,
        "ZeRO has stages 0 to 3, a model has a positive number of parameters, and data "
        "parallelism needs a whole number of at least one card.",
        refusal_title="refuses what has no answer",
        units={"result": "bytes"},
    ),
    _asks(
        "ex7-l",
        "the roof that binds at one sequence per card",
        choice,
        "step_binding_roof",
        "B",
        ("A", "B", "C", "D"),
        "Price each roof of the step: the compute, and each phase of the collectives.",
    ),
    _asks(
        "ex7-m",
        "why",
        choice,
        "step_binding_reason",
        3,
        (1, 2, 3, 4),
        _HIERARCHY,
    ),
]

_DECODE = (
    "A decode step reads every weight once for the whole batch, and each sequence's KV cache; it "
    "computes 2 FLOP per parameter per sequence. Its time is the longer of its two roofs."
)
_KV = "Each token keeps a key and a value per layer for each key-value head, head_dim wide."

_PART_LIST += [
    _asks(
        "ex8-a",
        "KV cache per token",
        number,
        "kv_bytes_per_token",
        ex8_kv_bytes_per_token,
        "bytes",
        _KV,
        traps=[
            (
                lambda: ex8_kv_bytes_per_token(heads=EX8["num_attention_heads"]),
                "with grouped-query attention only num_key_value_heads heads are cached.",
            ),
            (lambda: ex8_kv_bytes_per_token(tensors=1), "a token keeps a key and a value."),
        ],
    ),
    _asks(
        "ex8-b",
        "concurrent requests, paged",
        number,
        "max_requests",
        ex8_max_requests,
        "requests",
        "The cache gets the memory the weights leave; a paged request holds whole blocks, and a part "
        "of a request holds nothing.",
        rel_tol=1e-9,
        traps=[
            (
                lambda: ex8_max_requests(reserved=EX8["max_seq_len"]),
                "that is a contiguous allocator reserving max_seq_len per request; pages hold what is used.",
            ),
            (
                lambda: (EX8["memory_bytes"] - ex8_weight_bytes()) / ex8_kv_bytes_per_token() / ex8_context(),
                "round down to whole requests of whole blocks.",
            ),
            (
                lambda: EX8["memory_bytes"] // (ex8_kv_bytes_per_token() * 2512),
                "the weights take their share of the memory first.",
            ),
        ],
    ),
    _asks(
        "ex8-c",
        "a decode step at batch 64",
        number,
        "decode_step_seconds",
        lambda: ex8_decode_seconds(EX8["batch"]),
        "seconds",
        _DECODE,
        traps=[
            (
                lambda: 2 * EX8["n_params"] * EX8["batch"] / EX8["bf16_flops_per_s"],
                "that is the compute roof; decode at this batch is far left of the ridge.",
            ),
            (lambda: ex8_weight_bytes() / EX8["hbm_bytes_per_s"], "the KV caches are read too."),
            (
                lambda: EX8["batch"] * ex8_weight_bytes() / EX8["hbm_bytes_per_s"],
                "the weights are read once per step for the whole batch, not once per sequence.",
            ),
        ],
    ),
    _asks(
        "ex8-d",
        "its bound",
        choice,
        "decode_bound",
        lambda: ex8_decode_bound(EX8["batch"]),
        ("memory", "compute"),
        "Compare the step's FLOPs per byte with the ridge.",
    ),
    _asks(
        "ex8-e",
        "the largest batch within the TPOT",
        number,
        "max_batch",
        ex8_max_batch,
        "sequences",
        _DECODE + " Round down: a batch is whole sequences. The key tries every whole batch (1, 2, 3, ...), "
        "not only powers of two.",
        rel_tol=1e-9,
        traps=[
            (lambda: ex8_max_batch(weights=False), "the weights are read every step too."),
            (ex8_max_requests, "that is what the KV cache holds; the objective binds first."),
            (lambda: ex8_max_batch() + 1, "that batch's step takes longer than the objective; round down."),
            (lambda: 1 << (ex8_max_batch().bit_length() - 1), "that is a power of two; a batch need not be one."),
        ],
    ),
    _asks(
        "ex8-f",
        "TTFT of a prompt alone",
        number,
        "ttft_seconds",
        ex8_ttft,
        "seconds",
        "A prefill computes 2 FLOP per parameter per prompt token in one step; its time is the longer "
        "of its two roofs.",
        traps=[(lambda: ex8_ttft(roof="memory"), "that is the memory roof; a long prompt is compute-bound.")],
    ),
    *_write_and_refuse(
        ("ex8-g", "ex8-h"),
        "tpot_seconds",
        ref_tpot_seconds,
        tpot_probes,
        _DECODE,
        "A step needs a whole batch of at least one sequence, a context of at least one token and "
        "a memory that moves bytes.",
        refusal_title="refuses what has no answer",
        units={"result": "seconds"},
    ),
    _asks(
        "ex8-i",
        "the largest prefill chunk beside 80 decodes",
        number,
        "max_chunk_tokens",
        ex8_max_chunk,
        "tokens",
        "A mixed step computes 2 FLOP per parameter for every token in it, decode or prompt, and "
        "reads the weights once. The answer is the largest whole number of tokens whose step meets the "
        "objective (the key tries every one), so one token more is over it.",
        rel_tol=1e-9,
        traps=[
            (lambda: ex8_max_chunk(running=0), "the 80 decode tokens share the step's compute with the chunk."),
            (lambda: ex8_max_chunk() + 1, "that step takes longer than the objective; round down."),
        ],
    ),
    _asks(
        "ex8-j",
        "the technique that keeps the TPOT",
        choice,
        "technique",
        "C",
        ("A", "B", "C", "D"),
        "What does a running request wait for while a whole prompt is prefilled?",
    ),
    _asks(
        "ex8-k",
        "why",
        choice,
        "technique_reason",
        4,
        (1, 2, 3, 4),
        "Compare the roofs a decode step and a prefill use.",
    ),
]

_ENERGY = (
    "A kernel's energy is its FLOPs times the energy per FLOP, plus its HBM bytes times the energy per "
    "byte, plus the static power times its time."
)
_STATIC = "static power is paid for every second the card runs the kernel, busy or not."
_TDP = (
    "the TDP times the time is the most the card may draw, not what this work draws: price its FLOPs, "
    "its bytes and the static power."
)
_PER_BIT = "the HBM access energy is printed per bit: a byte is 8 bits."
_CAP = (
    "At a rate of R FLOP/s a kernel of intensity I draws the static power plus R times the energy per "
    "FLOP plus R / I times the energy per byte; under a cap that the roof's rate would pass, R falls until "
    "the draw meets the cap."
)


def _ex9_gemm_joules(**slips):
    return ex9_joules(*ex9_gemm(), **slips)


def _ex9_tdp_joules_per_token(batch):
    """The TDP slip: the card's TDP for the step's time, shared by the batch."""
    return EX9["tdp_watts"] * ex9_decode_seconds(batch) / batch


_PART_LIST += [
    _asks(
        "ex9-a",
        "the energy of the GEMM",
        number,
        "gemm_joules",
        _ex9_gemm_joules,
        "joules",
        _ENERGY + " At its roof a kernel's time is the longer of its two roofs.",
        traps=[
            (lambda: EX9["tdp_watts"] * ex9_seconds(*ex9_gemm()), _TDP),
            (lambda: _ex9_gemm_joules(static_watts=0), _STATIC),
            (lambda: _ex9_gemm_joules(joules_per_byte=EX9["hbm_joules_per_bit"]), _PER_BIT),
        ],
    ),
    _asks(
        "ex9-b",
        "the energy ridge",
        number,
        "energy_ridge",
        ex9_energy_ridge,
        "FLOP/byte",
        "The energy ridge is where a FLOP's energy times the intensity equals a byte's energy.",
        traps=[
            (
                lambda: EX9["bf16_flops_per_s"] / EX9["hbm_bytes_per_s"],
                "that is the time ridge, peak over bandwidth; the energy ridge compares the energies.",
            ),
            (lambda: ex9_energy_ridge(joules_per_byte=EX9["hbm_joules_per_bit"]), _PER_BIT),
            (lambda: 1 / ex9_energy_ridge(), "the ridge is FLOP per byte, not bytes per FLOP."),
        ],
    ),
    _asks(
        "ex9-c",
        "joules per token at batch 1",
        number,
        "joules_per_token_batch_1",
        lambda: ex9_decode_joules_per_token(1),
        "joules",
        _DECODE + " " + _ENERGY,
        traps=[
            (lambda: ex9_decode_joules_per_token(1, static_watts=0), _STATIC),
            (lambda: _ex9_tdp_joules_per_token(1), _TDP),
            (lambda: ex9_decode_joules_per_token(1, joules_per_byte=EX9["hbm_joules_per_bit"]), _PER_BIT),
            (lambda: ex9_decode_joules_per_token(1, kv=False), "the KV cache is read too."),
        ],
    ),
    _asks(
        "ex9-d",
        "the term that dominates at batch 1",
        choice,
        "dominant_term_batch_1",
        lambda: ex9_dominant_term(1),
        ("flops", "bytes", "static"),
        "Price each term of the step: its FLOPs, its HBM bytes and the static power for its time.",
    ),
    _asks(
        "ex9-e",
        "joules per token at batch 64",
        number,
        "joules_per_token_batch_64",
        lambda: ex9_decode_joules_per_token(EX9["batch"]),
        "joules",
        _DECODE + " " + _ENERGY,
        traps=[
            (
                lambda: ex9_decode_joules_per_token(EX9["batch"]) * EX9["batch"],
                "that is the whole step; it makes one token per sequence.",
            ),
            (
                lambda: ex9_decode_joules_per_token(1),
                "that is batch 1's energy per token: the weights are read once per step for the whole batch, "
                "not once per sequence.",
            ),
            (lambda: ex9_decode_joules_per_token(EX9["batch"], static_watts=0), _STATIC),
            (lambda: _ex9_tdp_joules_per_token(EX9["batch"]), _TDP),
        ],
    ),
    *_write_and_refuse(
        ("ex9-f", "ex9-g"),
        "joules_per_token",
        ref_joules_per_token,
        joules_per_token_probes,
        _DECODE + " " + _ENERGY,
        "A step needs a whole batch of at least one sequence, a context of at least one token and a "
        "memory that moves bytes, and no card draws negative power.",
        refusal_title="refuses what has no answer",
        units={"result": "joules"},
    ),
    _asks(
        "ex9-h",
        "dollars per million tokens at batch 64",
        number,
        "dollars_per_million_tokens",
        ex9_dollars_per_million_tokens,
        "dollars",
        "A card makes batch tokens per step, step after step; an hour of it costs its share of the node's rent.",
        traps=[
            (
                lambda: ex9_dollars_per_million_tokens(per_node=True),
                "the price is the node's, eight cards each serving its own copy: one card costs an eighth.",
            ),
            (
                lambda: ex9_dollars_per_million_tokens(tokens_per_step=1),
                "a step makes one token per sequence, batch tokens in all.",
            ),
            (
                lambda: ex9_dollars_per_million_tokens(batch=1),
                "that is batch 1's throughput; the card serves 64 sequences at once.",
            ),
        ],
    ),
    _asks(
        "ex9-i",
        "the GEMM's FLOP/s under the cap",
        number,
        "capped_gemm_flops_per_s",
        ex9_capped_flops_per_s,
        "FLOP/s",
        _CAP,
        traps=[
            (
                lambda: EX9["cap_watts"] / EX9["tdp_watts"] * EX9["bf16_flops_per_s"],
                "power is not proportional to FLOP/s from zero, and the GEMM does not draw the TDP at its peak: "
                "solve the draw at rate R for the cap.",
            ),
            (
                lambda: EX9["bf16_flops_per_s"],
                "at the peak this GEMM would draw more than the cap, so the cap binds.",
            ),
            (
                lambda: ex9_capped_flops_per_s(static_watts=0),
                "the static power is drawn whatever the clock: it comes off the cap first.",
            ),
            (
                lambda: EX9["cap_watts"] / ex9_power_at_roof(*ex9_gemm()) * EX9["bf16_flops_per_s"],
                "the static power does not fall with the clock: only the power above it scales with the rate.",
            ),
            (lambda: ex9_capped_flops_per_s(joules_per_byte=0), "the GEMM still moves bytes, and they draw power."),
        ],
    ),
    _asks(
        "ex9-j",
        "what the cap does to a GEMV",
        choice,
        "gemv_under_cap",
        "B",
        ("A", "B", "C", "D"),
        "Price the GEMV's draw at its own roof and hold it against the cap.",
    ),
    _asks(
        "ex9-k",
        "why",
        choice,
        "gemv_under_cap_reason",
        2,
        (1, 2, 3, 4),
        "A cap binds only on a kernel whose draw at its roof would pass it.",
    ),
]

PARTS: dict[str, Part] = {p.key: p for p in _PART_LIST}


def parts_of(exercise: str) -> list[Part]:
    return [p for p in _PART_LIST if p.exercise == exercise]
