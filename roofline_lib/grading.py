"""The checks behind the autograded exercises, and the grader that runs them.

Every exercise notebook (``exercises/exN_*.md``) is a sequence of *parts*. Each part is an
answer cell tagged ``answer-<part>`` (e.g. ``answer-ex2-a``), where the student sets one or
more names, followed by the official check cell tagged ``check-<part>``, whose whole source is
:func:`check_cell_source`::

    from roofline_lib import grading
    grading.check("ex2-a", globals())

How a mark is decided, and why editing the notebook gains nothing:

1. **Observe.** Inside the notebook's kernel, :func:`check` reads the part's names from the
   student's namespace and turns them into plain JSON: a value, ``...`` ("not attempted"), a
   missing name, or, for a function, what it returned or raised on fixed probe inputs. Student
   code that raises is caught and recorded, never re-raised: a check cell never fails.
2. **Judge.** The observation is compared with the reference that ``roofline_lib`` computes
   (``rl.ridge_point``, ``rl.training_bill``, ``rl.precision_sweep``...), with a tolerance that
   fits the question. A wrong answer gets a message naming the quantity, the direction it is
   off and a hint about the convention; it never prints the reference value.
3. **Report.** The check shows one line of feedback and publishes the observation as a
   ``display_data`` output with the MIME type :data:`MIME_TYPE`.

The grader (:func:`run_grade`, behind ``roofline grade PATH...``) never trusts a notebook's own
check cells or their verdicts. It drops every cell tagged ``check-*``, re-injects a fresh
official check cell (generated here, and identical to the one in ``exercises/``; a test holds
them equal) after each answer cell, executes the result with nbval (lax mode) in a subprocess,
collects each cell's outputs from outside the kernel, reads the observation only from the
outputs of the cells it injected, and judges it again in its own process. A deleted check cell
is restored, an edited one is replaced, a fake "correct" printed anywhere counts for nothing, and
a redefined ``check`` or ``grading`` name is rebound by the fresh import in the official cell.

What this does not defend against: code that rewrites files on disk (the library itself) or that
forges an observation holding the right answers. An observation is just the student's answers,
so forging one means knowing them; the grader still judges it.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import roofline_lib as rl

__all__ = [
    "MIME_TYPE",
    "Exercise",
    "Part",
    "EXERCISES",
    "PARTS",
    "STATUSES",
    "parts_of",
    "PartResult",
    "ExerciseResult",
    "check",
    "check_cell_source",
    "observe",
    "judge",
    "grade",
    "format_table",
    "run_grade",
    "main",
]

#: MIME type of the observation a check cell publishes; the grader reads only this.
MIME_TYPE = "application/vnd.roofline-course.grade+json"

#: Statuses a part can end in, best first.
STATUSES = ("correct", "wrong", "error", "not attempted")

_CELL_TIMEOUT_S = 60  # one cell of student code may run this long under the grader


# ============================================================================ exercises and parts


@dataclass(frozen=True)
class Exercise:
    """One exercise notebook: ``key`` "ex2", file stem "ex2_ridge_points", a short title."""

    key: str
    stem: str
    title: str


@dataclass(frozen=True)
class Part:
    """One gradeable part: the names its answer cell sets and the judge of their values.

    ``judge`` receives the observed entries by name (all attempted) and returns a list of
    problems, each ``("wrong" | "error", message)``; an empty list means correct. ``probes``
    names the probe inputs a function answer is called on.
    """

    key: str
    title: str
    names: tuple[str, ...]
    judge: Callable[[Mapping[str, dict]], list[tuple[str, str]]] = field(repr=False)
    probes: tuple[str, ...] = ()
    marks: int = 1

    @property
    def exercise(self) -> str:
        return self.key.split("-")[0]


EXERCISES: dict[str, Exercise] = {
    e.key: e
    for e in (
        Exercise("ex1", "ex1_layernorm_4_percent", "The LayerNorm at 4 % of peak"),
        Exercise("ex2", "ex2_ridge_points", "H100 and A100: ridge, bound, ceiling"),
        Exercise("ex3", "ex3_70b_budget", "A 70B model: training compute and decode"),
        Exercise("ex4", "ex4_naive_attention", "Naive QK^T: bytes, intensity, FlashAttention"),
        Exercise("ex5", "ex5_precision_sweep", "Implementing the precision sweep"),
    )
}

# ---------------------------------------------------------------------------- exercise inputs
# The inputs that define each exercise. The notebooks type the same numbers; the solutions
# passing every check is what holds the two equal.

EX1 = dict(gpu="H100", n_rows=16384, d=4096, bytes_per_elem=4, precision="fp32", seconds=175e-6)
EX2 = dict(intensity=40.0)  # FLOP/byte
EX3 = dict(n_params=70e9, n_tokens=2e12, mfu=0.40, gpu="A100", bytes_per_param=2)
EX4 = dict(seq=8192, head_dim=128, bytes_per_elem=2, gpu="A100")
_EX5_N = 8 * 2048 * 4096  # elements of the element-wise kernel's input
EX5 = dict(
    flops=2 * _EX5_N,  # about 2 FLOP per element
    elems=2 * _EX5_N,  # read each input once, write each output once
    h100_seconds={"fp32": 175e-6, "bf16": 90e-6, "fp8": 48e-6},  # physically possible on an H100
    source_a100_seconds={"fp32": 200e-6, "bf16": 100e-6, "fp8": 50e-6},  # the source's, impossible
)

#: Probe inputs a student's ``precision_sweep`` is called on: (flops, elems, seconds_by_dtype, gpu).
#: A GPU given as a GPUSpec (not a name) checks that the function accepts both.
_PROBES: dict[str, Callable[[], tuple]] = {
    "h100-sweep": lambda: (EX5["flops"], EX5["elems"], dict(EX5["h100_seconds"]), "H100"),
    "a100-compute-bound": lambda: (1e12, 1e8, {"fp32": 0.06, "bf16": 0.004}, rl.gpu("A100")),
    "a100-fp8": lambda: (EX5["flops"], EX5["elems"], {"bf16": 200e-6, "fp8": 100e-6}, "A100"),
    "a100-too-fast": lambda: (EX5["flops"], EX5["elems"],  # the source's timings, fp8 left out
                              {d: EX5["source_a100_seconds"][d] for d in ("fp32", "bf16")}, "A100"),
}

_SWEEP_FIELDS = ("bytes_moved", "intensity", "bound", "achieved_flops_per_s",
                 "ceiling_flops_per_s", "efficiency")


def _ex1_op():
    return rl.layernorm(EX1["n_rows"], EX1["d"], EX1["bytes_per_elem"])


def _ex1_verdict():
    op = _ex1_op()
    return rl.kernel_verdict(op.flops, op.bytes_moved, EX1["seconds"], EX1["gpu"], EX1["precision"])


def _ex3_bill():
    return rl.training_bill(EX3["n_params"], EX3["n_tokens"], 1, EX3["gpu"], EX3["mfu"])


def _ex3_decode_one_card():
    return rl.decode_roofline(EX3["n_params"], EX3["gpu"], EX3["bytes_per_param"])


def _ex3_decode_split():
    """Decode with the weights split evenly over the fewest cards that hold them.

    Each card streams its share at the same time, so one card holding ``n_params / cards``
    gives the step time of the whole group (communication between cards ignored).
    """
    cards = _ex3_decode_one_card().min_gpus_to_fit
    return rl.decode_roofline(EX3["n_params"] / cards, EX3["gpu"], EX3["bytes_per_param"])


def _ex4_naive():
    s, dh, b = EX4["seq"], EX4["head_dim"], EX4["bytes_per_elem"]
    return rl.gemm(s, s, dh, b)  # S[s x s] = Q[s x dh] @ K^T[dh x s]


def _ex4_fused():
    s, dh, b = EX4["seq"], EX4["head_dim"], EX4["bytes_per_elem"]
    return rl.attention(1, 1, s, s, dh, causal=False, fused=True, bytes_per_elem=b)


# ============================================================================ judges


def _fmt(x) -> str:
    """A student's own value, shown back to them."""
    if isinstance(x, float):
        return f"{x:.6g}"
    return repr(x)


_UNIT_SLIPS = {
    "FLOP/s": "the course works in SI units: FLOP/s, not TFLOP/s or GFLOP/s",
    "bytes/s": "the course works in SI units: bytes per second, not GB/s or TB/s",
    "bytes": "the course works in SI units: bytes, not MB or GB",
    "FLOP": "give plain FLOP, not TFLOP or GFLOP",
    "fraction": "give a fraction between 0 and 1 (0.25), not a percentage (25)",
}


def _as_number(entry: dict):
    """The observed value as a float, or None with the reason it is not a number."""
    value = entry.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, dict) and "nonfinite" in value:
            return None, f"is {value['nonfinite']}, not a finite number"
        return None, f"should be a number, got {entry.get('type', type(value).__name__)} {_fmt(value)}"
    return float(value), None


def _number(name: str, reference: float, *, unit: str, rel_tol: float, hint: str,
            traps: Sequence[tuple[float, str]] = ()) -> Callable:
    """Judge a number against ``reference`` within ``rel_tol`` (relative).

    ``traps`` are values a known mistake produces, each with the hint that mistake needs.
    A factor of 10**k (|k| >= 2) off the reference is reported as a unit slip.
    """

    def judge_one(entries):
        value, why = _as_number(entries[name])
        if why:
            return [("wrong", f"`{name}` {why} (in {unit}).")]
        ref = float(reference() if callable(reference) else reference)
        if math.isclose(value, ref, rel_tol=rel_tol):
            return []
        if value == 0 or (value < 0) != (ref < 0):
            return [("wrong", f"`{name}` = {_fmt(value)} has the wrong sign or is zero. {hint}")]
        for trap_value, trap_hint in traps:
            trap = float(trap_value() if callable(trap_value) else trap_value)
            if math.isclose(value, trap, rel_tol=min(rel_tol, 0.005)):
                direction = "high" if value > ref else "low"
                return [("wrong", f"`{name}` = {_fmt(value)} is too {direction}: {trap_hint}")]
        ratio = value / ref
        k = round(math.log10(ratio))
        if abs(k) >= 2 and math.isclose(ratio, 10.0 ** k, rel_tol=rel_tol):
            size = "large" if k > 0 else "small"
            slip = _UNIT_SLIPS.get(unit, f"give it in {unit}")
            return [("wrong", f"`{name}` = {_fmt(value)} is 10^{abs(k)} times too {size}: {slip}.")]
        direction = "high" if ratio > 1 else "low"
        if abs(ratio - 1) < 0.1:
            how = f"slightly too {direction} (within 10 %, outside the {rel_tol:.1%} tolerance)"
        elif 0.5 <= ratio <= 2:
            how = f"too {direction}"
        else:
            how = f"too {direction} by more than a factor of 2"
        return [("wrong", f"`{name}` = {_fmt(value)} ({unit}) is {how}. {hint}")]

    return judge_one


def _normalise_choice(value):
    if isinstance(value, str):
        return value.strip().strip(".").lower()
    return value


def _choice(name: str, reference, options: Sequence, hint: str) -> Callable:
    """Judge a structured choice: one of ``options`` (strings compared case-insensitively)."""

    def judge_one(entries):
        value = _normalise_choice(entries[name].get("value"))
        allowed = [_normalise_choice(o) for o in options]
        if isinstance(value, bool) != isinstance(allowed[0], bool) or value not in allowed:
            shown = ", ".join(repr(o) for o in options)
            return [("wrong", f"`{name}` must be one of {shown}; got {_fmt(entries[name].get('value'))}.")]
        ref = _normalise_choice(reference() if callable(reference) else reference)
        if value != ref:
            return [("wrong", f"`{name}` = {_fmt(entries[name].get('value'))} is not right. {hint}")]
        return []

    return judge_one


def _integer(name: str, reference, hint: str) -> Callable:
    def judge_one(entries):
        value = entries[name].get("value")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
            return [("wrong", f"`{name}` should be a whole number, got {_fmt(value)}.")]
        ref = int(reference() if callable(reference) else reference)
        if int(value) != ref:
            direction = "too many" if value > ref else "too few"
            return [("wrong", f"`{name}` = {int(value)} is {direction}. {hint}")]
        return []

    return judge_one


def _first(*judges: Callable) -> Callable:
    """Run judges in order and stop at the first that finds a problem."""

    def judge_first(entries):
        for j in judges:
            problems = j(entries)
            if problems:
                return problems
        return []

    return judge_first


def _all(*judges: Callable) -> Callable:
    def judge_all(entries):
        problems = []
        for j in judges:
            problems.extend(j(entries))
        return problems

    return judge_all


# ---------------------------------------------------------------------------- function answers


def _probe_outcome(entry: dict, probe: str):
    outcome = entry.get("probes", {}).get(probe)
    if not isinstance(outcome, dict):
        return None, ("error", f"the check has no result for probe {probe!r} (was the check cell edited?)")
    return outcome, None


def _raised_text(outcome: dict) -> str:
    return f"{outcome.get('raised', 'an exception')}: {outcome.get('message', '')}".rstrip(": ")


def _describe_probe(probe: str) -> str:
    flops, elems, seconds, gpu = _PROBES[probe]()
    spec = rl.as_gpu(gpu)
    times = ", ".join(f"{k}: {v * 1e6:g} us" for k, v in seconds.items())
    return f"precision_sweep({flops:.4g}, {elems:.4g}, {{{times}}}, {spec.name!r})"


_MISSING = object()


def _compare_rows(probe: str, returned) -> list[tuple[str, str]]:
    """Compare a student's sweep result with ``rl.precision_sweep`` on the same probe."""
    flops, elems, seconds, gpu = _PROBES[probe]()
    reference = rl.precision_sweep(flops, elems, seconds, gpu)
    where = f"on {_describe_probe(probe)}"
    if not isinstance(returned, dict):
        return [("wrong", f"`precision_sweep` should return a dict of dtype -> row {where}; "
                          f"it returned {_fmt(returned)[:80]}.")]
    missing = [d for d in reference if d not in returned]
    if missing:
        return [("wrong", f"the result {where} has no row for {', '.join(map(repr, missing))}: "
                          "one row per dtype of seconds_by_dtype, keyed by the dtype name.")]
    problems = []
    for dtype, ref_row in reference.items():
        row = returned[dtype]
        if not isinstance(row, dict):
            problems.append(("wrong", f"row {dtype!r} {where} should be a dict (or a dataclass) "
                                      f"with keys {', '.join(_SWEEP_FIELDS)}."))
            continue
        for name in _SWEEP_FIELDS:
            got = row.get(name, _MISSING)
            ref = getattr(ref_row, name)
            label = f"row {dtype!r} field {name!r} {where}"
            if got is _MISSING:
                problems.append(("wrong", f"{label} is missing."))
            elif name == "bound":
                if _normalise_choice(got) != ref:
                    problems.append(("wrong", f"{label} = {_fmt(got)} is not right: 'memory' below "
                                              "the ridge of this dtype on this GPU, 'compute' above it."))
            else:
                unit = {"bytes_moved": "bytes", "intensity": "FLOP/byte",
                        "efficiency": "fraction"}.get(name, "FLOP/s")
                hint = _SWEEP_HINTS[name]
                sub = _number("x", ref, unit=unit, rel_tol=1e-3, hint=hint)({"x": {"value": got}})
                problems.extend((kind, msg.replace("`x`", label, 1)) for kind, msg in sub)
            if len(problems) >= 3:
                return problems
    return problems


_SWEEP_HINTS = {
    "bytes_moved": "Bytes = elems x bytes per element of that dtype (rl.bytes_per_element).",
    "intensity": "Intensity = flops / bytes_moved of that dtype.",
    "achieved_flops_per_s": "Achieved = flops / measured seconds.",
    "ceiling_flops_per_s": "Ceiling = min(dense peak of that dtype, HBM bandwidth x intensity).",
    "efficiency": "Efficiency = achieved / ceiling, a fraction.",
}


def _sweep_runs(probe: str) -> Callable:
    """Part a: the function's rows match the reference on a valid probe."""

    def judge_one(entries):
        outcome, problem = _probe_outcome(entries["precision_sweep"], probe)
        if problem:
            return [problem]
        if "raised" in outcome:
            return [("error", f"`precision_sweep` raised {_raised_text(outcome)} on "
                              f"{_describe_probe(probe)}, an input it should handle.")]
        return _compare_rows(probe, outcome.get("returned"))

    return judge_one


def _sweep_refuses(probe: str, control: str, why: str) -> Callable:
    """Parts b, c: raise ValueError on the trap probe, and still work on the control probe."""

    def judge_one(entries):
        entry = entries["precision_sweep"]
        outcome, problem = _probe_outcome(entry, probe)
        if problem:
            return [problem]
        if "raised" not in outcome:
            return [("wrong", f"`precision_sweep` returned a result for {_describe_probe(probe)}; "
                              f"it should raise ValueError. {why}")]
        if not outcome.get("value_error"):
            return [("wrong", f"`precision_sweep` raised {_raised_text(outcome)[:160]} for "
                              f"{_describe_probe(probe)}; raise ValueError (or a subclass such as "
                              f"rl.ImplausibleMeasurement), which is what callers catch. {why}")]
        control_outcome, problem = _probe_outcome(entry, control)
        if problem:
            return [problem]
        if "raised" in control_outcome:
            return [("error", f"`precision_sweep` also raised {_raised_text(control_outcome)[:160]} "
                              f"on {_describe_probe(control)}, a valid input: refuse only the trap.")]
        return []

    return judge_one


def _reference_is_not_the_answer(entries):
    if entries["precision_sweep"].get("is_reference"):
        return [("wrong", "`precision_sweep` is the library's own rl.precision_sweep: write your "
                          "own function (it may call rl.kernel_verdict, as the reference does).")]
    return []


def _dict_of_numbers(name: str, reference: Callable[[], Mapping[str, float]], *, unit: str,
                     rel_tol: float, hint: str) -> Callable:
    def judge_one(entries):
        value = entries[name].get("value")
        ref = reference()
        if not isinstance(value, dict):
            return [("wrong", f"`{name}` should be a dict of dtype -> {unit}, got {_fmt(value)[:80]}.")]
        missing = [k for k in ref if k not in value]
        if missing:
            return [("wrong", f"`{name}` has no entry for {', '.join(map(repr, missing))}.")]
        problems = []
        for key, ref_value in ref.items():
            sub = _number("x", ref_value, unit=unit, rel_tol=rel_tol, hint=hint)({"x": {"value": value[key]}})
            problems.extend((kind, msg.replace("`x`", f"`{name}[{key!r}]`", 1)) for kind, msg in sub)
        return problems

    return judge_one


# ---------------------------------------------------------------------------- the parts

_H100_DENSE = "the dense bf16 peak (the datasheet's 'with sparsity' figure halved)"
_REGISTRY_BW = ("use the registry's bandwidth, rl.gpu('A100').hbm_bytes_per_s (the datasheet's "
                "2,039 GB/s), not the rounded 2.0 TB/s")


def _h100_sparse_ridge():
    return rl.gpu("H100").peak_flops_per_s("bf16", sparse=True) / rl.gpu("H100").hbm_bytes_per_s


def _a100_rounded(quantity: str):
    spec = rl.gpu("A100")
    rounded_bw = 2.0e12  # the rounded figure the source used
    if quantity == "ridge":
        return spec.peak_flops_per_s("bf16") / rounded_bw
    if quantity == "ceiling":
        return rounded_bw * EX2["intensity"]
    raise ValueError(quantity)


def _ex3_rounded_tokens_per_s():
    return _ex3_decode_split().tokens_per_s * 2.0e12 / rl.gpu("A100").hbm_bytes_per_s


_PART_LIST: list[Part] = [
    # ------------------------------------------------------------------ ex1: LayerNorm at 4 %
    Part("ex1-a", "intensity of the fp32 LayerNorm", ("layernorm_intensity",), _number(
        "layernorm_intensity", lambda: _ex1_op().intensity, unit="FLOP/byte", rel_tol=0.02,
        hint="Use the library's convention (rl.layernorm): 7 FLOP per element of x; bytes = read x "
             "+ write y + read gamma and beta, at 4 bytes per element in fp32.",
        traps=[(lambda: 2 * _ex1_op().intensity,
                "twice the intended value: this LayerNorm is fp32 (4 bytes per element), and it "
                "both reads x and writes y.")])),
    Part("ex1-b", "which roof binds", ("binding_roof",), _choice(
        "binding_roof", lambda: _ex1_verdict().bound, ("memory", "compute"),
        "Compare the intensity with the H100's fp32 ridge, rl.ridge_point('H100', 'fp32').")),
    Part("ex1-c", "the measurement that settles it", ("settling_measurement",), _choice(
        "settling_measurement", "B", ("A", "B", "C", "D"),
        "Judge a kernel against the roof that binds it: which resource is this kernel limited by?")),
    Part("ex1-d", "achieved HBM bytes/s", ("achieved_bytes_per_s",), _number(
        "achieved_bytes_per_s", lambda: _ex1_verdict().achieved_bytes_per_s, unit="bytes/s",
        rel_tol=0.01,
        hint="Achieved bytes/s = bytes moved / measured seconds; rl.kernel_verdict(flops, "
             "bytes_moved, seconds, gpu, precision) computes it.")),
    Part("ex1-e", "fraction of the bandwidth roof", ("fraction_of_hbm_roof",), _number(
        "fraction_of_hbm_roof", lambda: _ex1_verdict().efficiency, unit="fraction", rel_tol=0.01,
        hint="Divide the achieved bytes/s by the H100's HBM bytes/s (for a memory-bound kernel "
             "this is the verdict's efficiency).")),
    Part("ex1-f", "best possible share of the fp32 peak", ("best_share_of_peak",), _number(
        "best_share_of_peak",
        lambda: rl.attainable_flops_per_s(_ex1_op().intensity, EX1["gpu"], EX1["precision"])
        / rl.gpu(EX1["gpu"]).peak_flops_per_s(EX1["precision"]),
        unit="fraction", rel_tol=0.01,
        hint="The best a kernel can do is its roofline ceiling, rl.attainable_flops_per_s(intensity, "
             "gpu, 'fp32'); divide it by the fp32 peak.")),
    Part("ex1-g", "is the colleague right?", ("colleague_is_right",), _choice(
        "colleague_is_right", False, (True, False),
        "Compare the 4 % the profiler shows with the best possible share you found in part f.")),
    # ------------------------------------------------------------------ ex2: ridge points
    Part("ex2-a", "H100 ridge point", ("ridge_h100",), _number(
        "ridge_h100", lambda: rl.ridge_point("H100"), unit="FLOP/byte", rel_tol=0.01,
        hint="Ridge = dense bf16 peak FLOP/s / HBM bytes/s, both from rl.gpu('H100').",
        traps=[(_h100_sparse_ridge, f"that uses the sparse peak; use {_H100_DENSE}.")])),
    Part("ex2-b", "bound on the H100 at 40 FLOP/byte", ("bound_h100",), _choice(
        "bound_h100", lambda: "memory" if EX2["intensity"] < rl.ridge_point("H100") else "compute",
        ("memory", "compute"), "Below the ridge the memory roof binds; above it, compute.")),
    Part("ex2-c", "ceiling on the H100", ("ceiling_h100_flops_per_s",), _number(
        "ceiling_h100_flops_per_s", lambda: rl.attainable_flops_per_s(EX2["intensity"], "H100"),
        unit="FLOP/s", rel_tol=0.01,
        hint="Ceiling = min(peak, bandwidth x intensity).",
        traps=[(lambda: rl.gpu("H100").peak_flops_per_s("bf16"),
                "that is the compute roof, but a kernel below the ridge sits under the memory "
                "roof: bandwidth x intensity.")])),
    Part("ex2-d", "A100 ridge point", ("ridge_a100",), _number(
        "ridge_a100", lambda: rl.ridge_point("A100"), unit="FLOP/byte", rel_tol=0.01,
        hint="Ridge = dense bf16 peak FLOP/s / HBM bytes/s, both from rl.gpu('A100').",
        traps=[(lambda: _a100_rounded("ridge"), _REGISTRY_BW + ".")])),
    Part("ex2-e", "bound on the A100", ("bound_a100",), _choice(
        "bound_a100", lambda: "memory" if EX2["intensity"] < rl.ridge_point("A100") else "compute",
        ("memory", "compute"), "Compare 40 FLOP/byte with the A100's ridge from part d.")),
    Part("ex2-f", "ceiling on the A100", ("ceiling_a100_flops_per_s",), _number(
        "ceiling_a100_flops_per_s", lambda: rl.attainable_flops_per_s(EX2["intensity"], "A100"),
        unit="FLOP/s", rel_tol=0.01, hint="Ceiling = min(peak, bandwidth x intensity).",
        traps=[(lambda: _a100_rounded("ceiling"), _REGISTRY_BW + ".")])),
    Part("ex2-g", "what the change of machine does", ("machine_change",), _choice(
        "machine_change", "B", ("A", "B", "C"),
        "Compare the bound you found on each machine, then the ceilings.")),
    # ------------------------------------------------------------------ ex3: 70B
    Part("ex3-a", "training FLOPs", ("training_flops",), _number(
        "training_flops", lambda: _ex3_bill().total_flops, unit="FLOP", rel_tol=0.01,
        hint="Training costs 6 N FLOP per token (forward 2N, backward 4N), times the tokens.",
        traps=[(lambda: _ex3_bill().total_flops / 3,
                "that is 2 N per token, the forward pass only; training adds the backward (4 N).")])),
    Part("ex3-b", "A100-days at 40 % MFU", ("a100_days",), _number(
        "a100_days", lambda: _ex3_bill().gpu_hours / 24, unit="A100-days", rel_tol=0.02,
        hint="Useful FLOP/s of one card = MFU x dense bf16 peak; days = FLOP / that / 86,400.",
        traps=[(lambda: _ex3_bill().gpu_hours / 24 * EX3["mfu"],
                "that assumes 100 % MFU; the run reaches 40 % of the peak."),
               (lambda: _ex3_bill().gpu_hours / 48,
                "that uses the sparse (2:4) peak; MFU is against the dense peak."),
               (lambda: _ex3_bill().gpu_hours,
                "those are A100-hours; the question asks for days.")])),
    Part("ex3-c", "does it fit on one A100?", ("fits_on_one_a100",), _choice(
        "fits_on_one_a100", lambda: _ex3_decode_one_card().fits_in_memory, (True, False),
        "Compare the weights' bytes (parameters x 2 bytes in bf16) with the card's 80 GB.")),
    Part("ex3-d", "fewest A100s that hold the weights", ("min_a100s",), _integer(
        "min_a100s", lambda: _ex3_decode_one_card().min_gpus_to_fit,
        "Divide the weights' bytes by one card's capacity and round up (weights only).")),
    Part("ex3-e", "single-stream decode tokens/s", ("decode_tokens_per_s",), _number(
        "decode_tokens_per_s", lambda: _ex3_decode_split().tokens_per_s, unit="tokens/s",
        rel_tol=0.01,
        hint="Every token streams every weight once; split over the cards, each streams its share "
             "at the same time, so the step time is one card's share / one card's bandwidth.",
        traps=[(lambda: _ex3_decode_one_card().tokens_per_s,
                "that is one card streaming all 140 GB, but the weights do not fit on one card; "
                "use the cards from part d, each streaming its share in parallel."),
               (_ex3_rounded_tokens_per_s, _REGISTRY_BW + ".")])),
    Part("ex3-f", "share of the bf16 peak decode uses", ("decode_share_of_peak",), _number(
        "decode_share_of_peak", lambda: _ex3_decode_split().share_of_peak, unit="fraction",
        rel_tol=0.01,
        hint="Achieved FLOP/s per card = 2 FLOP per weight it holds x tokens/s; divide by that "
             "card's dense bf16 peak.")),
    # ------------------------------------------------------------------ ex4: naive QK^T
    Part("ex4-a", "FLOPs of QK^T", ("qk_flops",), _number(
        "qk_flops", lambda: _ex4_naive().flops, unit="FLOP", rel_tol=0.005,
        hint="Each of the s x s scores is a dot product of length d_h: d_h multiply-adds, "
             "and 1 multiply-add = 2 FLOP.",
        traps=[(lambda: _ex4_naive().flops / 2, "that counts multiply-adds; 1 MAC = 2 FLOP."),
               (lambda: _ex4_naive().flops * 2, "that also counts P V; the question is QK^T alone.")])),
    Part("ex4-b", "HBM bytes of naive QK^T", ("qk_bytes",), _number(
        "qk_bytes", lambda: _ex4_naive().bytes_moved, unit="bytes", rel_tol=0.005,
        hint="Count, in bytes (2 per bf16 element): read Q (s x d_h), read K (s x d_h), "
             "write S (s x s).",
        traps=[(lambda: _ex4_naive().bytes_moved / 2,
                "that counts elements; a bf16 element is 2 bytes."),
               (lambda: EX4["seq"] ** 2 * EX4["bytes_per_elem"],  # S written, nothing read
                "that counts S alone; the kernel also reads Q and K.")])),
    Part("ex4-c", "intensity of naive QK^T", ("qk_intensity",), _number(
        "qk_intensity", lambda: _ex4_naive().intensity, unit="FLOP/byte", rel_tol=0.01,
        hint="Intensity = the FLOPs of part a / the bytes of part b.")),
    Part("ex4-d", "bound on the A100", ("qk_bound_a100",), _choice(
        "qk_bound_a100", lambda: "memory" if _ex4_naive().intensity < rl.ridge_point("A100") else "compute",
        ("memory", "compute"), "Compare with the A100's ridge, rl.ridge_point('A100'): it is close.")),
    Part("ex4-e", "what FlashAttention changes", ("flash_change",), _choice(
        "flash_change", "B", ("A", "B", "C", "D"),
        "FlashAttention computes exactly the same scores; ask what it stops sending to HBM.")),
    Part("ex4-f", "fused intensity and bound", ("fused_intensity", "fused_bound"), _all(
        _number("fused_intensity", lambda: _ex4_fused().intensity, unit="FLOP/byte", rel_tol=0.01,
                hint="With S kept on chip, HBM traffic is Q, K, V read and O written (2 bytes each); "
                     "the FLOPs are QK^T plus PV, or QK^T alone against Q and K: the ratio is the same."),
        _choice("fused_bound",
                lambda: "memory" if _ex4_fused().intensity < rl.ridge_point("A100") else "compute",
                ("memory", "compute"), "Compare the fused intensity with the A100's ridge."))),
    # ------------------------------------------------------------------ ex5: precision sweep
    Part("ex5-a", "precision_sweep gives the right rows", ("precision_sweep",), _first(
        _reference_is_not_the_answer, _sweep_runs("h100-sweep"), _sweep_runs("a100-compute-bound")),
        probes=("h100-sweep", "a100-compute-bound")),
    Part("ex5-b", "refuses a precision the chip lacks", ("precision_sweep",), _sweep_refuses(
        "a100-fp8", "h100-sweep",
        "An A100 has no fp8 tensor cores, so an fp8 timing on it cannot be real "
        "(rl.gpu(...).peak_flops_per_s raises for a precision the chip lacks)."),
        probes=("a100-fp8", "h100-sweep")),
    Part("ex5-c", "refuses a timing faster than HBM", ("precision_sweep",), _sweep_refuses(
        "a100-too-fast", "h100-sweep",
        "Those timings move more bytes per second than the A100's HBM can (rl.kernel_verdict "
        "raises rl.ImplausibleMeasurement, a ValueError)."),
        probes=("a100-too-fast", "h100-sweep")),
    Part("ex5-d", "efficiency of each width on the H100", ("efficiency_by_dtype",), _dict_of_numbers(
        "efficiency_by_dtype",
        lambda: {d: row.efficiency for d, row in rl.precision_sweep(
            EX5["flops"], EX5["elems"], EX5["h100_seconds"], "H100").items()},
        unit="fraction", rel_tol=0.01,
        hint="Efficiency = achieved FLOP/s / roofline ceiling of that dtype, a fraction.")),
]

PARTS: dict[str, Part] = {p.key: p for p in _PART_LIST}


def parts_of(exercise: str) -> list[Part]:
    """The parts of one exercise, in order."""
    return [p for p in _PART_LIST if p.exercise == exercise]


def check_cell_source(part: str) -> str:
    """The whole source of the official check cell of ``part``."""
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}; known parts: {', '.join(PARTS)}")
    return f'from roofline_lib import grading\ngrading.check("{part}", globals())'


# ============================================================================ observe (in the kernel)


def _to_jsonable(obj, depth: int = 0):
    """Plain JSON for a student's value: numbers, strings, bools, lists, dicts, dataclasses."""
    if depth > 4:
        return {"unserialisable": type(obj).__name__}
    if obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        x = float(obj)
        return x if math.isfinite(x) else {"nonfinite": repr(x)}
    if isinstance(obj, str):
        return str.__str__(obj)[:500]
    if isinstance(obj, Mapping):
        return {str(k): _to_jsonable(v, depth + 1) for k, v in list(obj.items())[:50]}
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _to_jsonable(getattr(obj, f.name), depth + 1) for f in fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [_to_jsonable(v, depth + 1) for v in obj[:50]]
    if hasattr(obj, "item") and callable(obj.item):  # a 0-d numpy or torch value
        try:
            return _to_jsonable(obj.item(), depth + 1)
        except Exception:  # noqa: BLE001 - any failure means "not a plain value"
            pass
    return {"unserialisable": type(obj).__name__, "repr": repr(obj)[:200]}


def _run_probe(func, probe: str) -> dict:
    try:
        returned = func(*_PROBES[probe]())
    except NotImplementedError as err:
        return {"raised": "NotImplementedError", "message": str(err)[:300], "stub": True}
    except BaseException as err:  # noqa: BLE001 - student code: record everything, re-raise nothing
        return {"raised": type(err).__name__, "message": str(err)[:300],
                "value_error": isinstance(err, ValueError)}
    return {"returned": _to_jsonable(returned)}


def _observe_name(spec: Part, namespace: Mapping, name: str) -> dict:
    if name not in namespace:
        return {"state": "missing"}
    value = namespace[name]
    if value is Ellipsis:
        return {"state": "stub"}
    if spec.probes and callable(value):
        probes = {p: _run_probe(value, p) for p in spec.probes}
        if all(o.get("stub") for o in probes.values()):
            return {"state": "stub"}
        return {"state": "function", "probes": probes,
                "is_reference": value is getattr(rl, "precision_sweep", None)}
    if spec.probes:
        return {"state": "value", "value": _to_jsonable(value), "type": type(value).__name__,
                "not_callable": True}
    return {"state": "value", "value": _to_jsonable(value), "type": type(value).__name__}


def observe(part: str, namespace: Mapping | None) -> dict:
    """Read ``part``'s names from ``namespace`` into a JSON observation (never raises for student code)."""
    spec = PARTS[part]
    if not isinstance(namespace, Mapping):
        return {"part": part, "names": {n: {"state": "missing"} for n in spec.names}}
    return {"part": part, "names": {n: _observe_name(spec, namespace, n) for n in spec.names}}


# ============================================================================ judge (kernel and grader)


@dataclass
class PartResult:
    """The outcome of one part: status (one of STATUSES), marks, and the feedback message."""

    part: str
    title: str
    status: str
    marks: int
    max_marks: int
    message: str = ""

    def line(self) -> str:
        symbol = {"correct": "PASS", "wrong": "FAIL", "error": "ERROR", "not attempted": "TODO"}
        text = f"[{symbol.get(self.status, '?')}] {self.part} {self.title}: {self.status} ({self.marks}/{self.max_marks})"
        return f"{text}\n    {self.message}" if self.message else text


def _result(spec: Part, status: str, message: str = "") -> PartResult:
    marks = spec.marks if status == "correct" else 0
    return PartResult(spec.key, spec.title, status, marks, spec.marks, message)


def judge(part: str, observation) -> PartResult:
    """Turn an observation into a result. Malformed observations score nothing."""
    spec = PARTS[part]
    names = observation.get("names") if isinstance(observation, dict) else None
    if not isinstance(names, dict) or observation.get("part") != part:
        return _result(spec, "error", "the check's result is malformed; re-run the official check cell.")
    entries = {n: names.get(n) if isinstance(names.get(n), dict) else {"state": "missing"} for n in spec.names}
    states = {n: e.get("state") for n, e in entries.items()}
    stubs = [f"`{n}`" for n, s in states.items() if s == "stub"]
    missing = [f"`{n}`" for n, s in states.items() if s == "missing"]
    if stubs or missing:
        msgs = []
        if stubs and spec.probes:
            msgs.append(f"write {' and '.join(stubs)}: it still raises NotImplementedError.")
        elif stubs:
            msgs.append(f"replace the `...` in {' and '.join(stubs)} with your answer.")
        if missing:
            msgs.append(f"{' and '.join(missing)} not defined: run the answer cell above, keeping the name.")
        return _result(spec, "not attempted", " ".join(msgs))
    for n, e in entries.items():
        if spec.probes and e.get("state") != "function":
            return _result(spec, "wrong", f"`{n}` should be a function; got {e.get('type', 'a value')}.")
    try:
        problems = spec.judge(entries)
    except Exception as err:  # noqa: BLE001 - a malformed observation must not crash the grader
        return _result(spec, "error", f"could not judge the answer ({type(err).__name__}: {err}).")
    if not problems:
        return _result(spec, "correct")
    status = "error" if any(kind == "error" for kind, _ in problems) else "wrong"
    return _result(spec, status, " ".join(msg for _, msg in problems))


def check(part: str, namespace: Mapping | None = None) -> None:
    """The official check of one part: observe, judge, show one line, publish the observation.

    Never raises. In a notebook the observation goes out as ``display_data`` with
    :data:`MIME_TYPE`; outside one, the feedback line is printed.
    """
    try:
        spec = PARTS[part]
    except (KeyError, TypeError):
        print(f"[ERROR] unknown part {part!r}: this is not an official check cell.")
        return
    if namespace is None:  # the notebook's globals, as the official cell passes them
        namespace = sys._getframe(1).f_globals
    try:
        observation = observe(part, namespace)
    except BaseException as err:  # noqa: BLE001 - a check cell never fails
        observation = {"part": part, "error": f"{type(err).__name__}: {err}"[:300]}
    result = judge(part, observation)
    if observation.get("error"):
        result = _result(spec, "error", f"the check itself failed: {observation['error']}")
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            payload = {"part": part, "observation": observation, "result": result.__dict__}
            display({MIME_TYPE: payload, "text/plain": result.line()}, raw=True)
            return
    except ImportError:  # pragma: no cover - IPython ships with the course environment
        pass
    print(result.line())


# ============================================================================ the grader


@dataclass
class ExerciseResult:
    """One graded notebook: its exercise, the parts' results and any notebook-level problem."""

    path: str
    exercise: str
    title: str
    parts: list[PartResult]
    problem: str = ""

    @property
    def marks(self) -> int:
        return sum(p.marks for p in self.parts)

    @property
    def max_marks(self) -> int:
        return sum(p.max_marks for p in self.parts) or 1  # an unreadable notebook is worth a mark lost


def _exercise_of(path: Path) -> Exercise | None:
    for ex in EXERCISES.values():
        if path.stem == ex.stem:
            return ex
    m = re.match(r"(ex\d+)[_\-\s.]", path.name)
    return EXERCISES.get(m.group(1)) if m else None


def _read_notebook(path: Path):
    if path.suffix == ".ipynb":
        import nbformat

        return nbformat.read(str(path), as_version=4)
    import jupytext

    return jupytext.read(path)


def _tags(cell) -> list[str]:
    tags = cell.get("metadata", {}).get("tags", [])
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def _regraded(nb, exercise: Exercise):
    """The student's cells minus every check cell, plus a fresh official check after each answer.

    Returns the notebook and two maps from nbval code-cell number to part: injected checks and
    answer cells. A part whose answer cell is missing gets its check at the end, so an answer
    left in an untagged cell still counts.
    """
    import nbformat

    parts = parts_of(exercise.key)
    cells = [c for c in nb.cells if not any(t.startswith("check-") for t in _tags(c))]
    last_answer: dict[str, int] = {}
    for i, c in enumerate(cells):
        for t in _tags(c):
            if t.startswith("answer-") and t[len("answer-"):] in PARTS and c.cell_type == "code":
                last_answer[t[len("answer-"):]] = i
    out, checks, answers = [], {}, {}
    code_num = 0

    def add(cell, *, check_of=None, answer_of=None):
        nonlocal code_num
        cell["id"] = f"cell-{len(out)}"
        out.append(cell)
        if cell.cell_type == "code":
            if check_of:
                checks[code_num] = check_of
            for part in answer_of or ():
                answers.setdefault(part, []).append(code_num)
            code_num += 1

    def official(part: str):
        return nbformat.v4.new_code_cell(check_cell_source(part), metadata={"tags": [f"check-{part}"]})

    for i, c in enumerate(cells):
        if c.cell_type == "code":
            answer_tags = [t[len("answer-"):] for t in _tags(c) if t.startswith("answer-")]
            add(nbformat.v4.new_code_cell(c.source, metadata={"tags": _tags(c)}), answer_of=answer_tags)
        elif c.cell_type == "markdown":
            add(nbformat.v4.new_markdown_cell(c.source))
        for part, idx in last_answer.items():
            if idx == i and PARTS[part].exercise == exercise.key:
                add(official(part), check_of=part)
    for p in parts:
        if p.key not in last_answer:
            add(official(p.key), check_of=p.key)
    regraded = nbformat.v4.new_notebook(cells=out, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    regraded.nbformat_minor = 5
    return regraded, checks, answers


class _OutputCapture:
    """A pytest plugin that keeps every nbval cell's outputs, read from outside the kernel."""

    def __init__(self):
        self.notebooks: dict[str, dict[str, dict]] = {}

    def pytest_runtest_makereport(self, item, call):
        if call.when != "call" or not hasattr(item, "cell_num"):
            return None
        outputs = getattr(item, "test_outputs", None)
        error = None
        if call.excinfo is not None:
            error = f"{call.excinfo.typename}: {str(call.excinfo.value)[:300]}"
        path = getattr(item, "path", None) or item.fspath
        self.notebooks.setdefault(Path(str(path)).name, {})[str(item.cell_num)] = {
            "outputs": json.loads(json.dumps(outputs, default=str)) if outputs is not None else None,
            "error": error,
        }
        return None


def _nbval_capture_main(argv: Sequence[str]) -> int:
    """Subprocess entry point: run nbval (lax) over notebooks, write every cell's outputs as JSON."""
    import pytest

    out_path, cell_timeout, *notebooks = argv
    capture = _OutputCapture()
    code = pytest.main(
        ["--nbval-lax", "--nbval-current-env", f"--nbval-cell-timeout={cell_timeout}",
         "-p", "no:cacheprovider", "-q", "--no-header", "-W", "ignore", *notebooks],
        plugins=[capture],
    )
    Path(out_path).write_text(json.dumps(capture.notebooks))
    return int(code)


def _run_nbval(notebooks: list[Path], workdir: Path, cell_timeout: int) -> tuple[dict, str]:
    out = workdir / "cells.json"
    (workdir / "pytest.ini").write_text("[pytest]\n")  # keep the course's own pytest settings out
    package_parent = str(Path(rl.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    cmd = [sys.executable, "-c",
           "import sys; from roofline_lib.grading import _nbval_capture_main as m; "
           "sys.exit(m(sys.argv[1:]))",
           str(out), str(cell_timeout), *[str(n) for n in notebooks]]
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
    log = proc.stdout[-4000:] + proc.stderr[-2000:]
    if not out.exists():
        return {}, log
    return json.loads(out.read_text()), log


def _observations(outputs) -> list:
    found = []
    for o in outputs or []:
        if isinstance(o, dict) and o.get("output_type") in ("display_data", "execute_result"):
            data = o.get("data") or {}
            if MIME_TYPE in data:
                payload = data[MIME_TYPE]
                if isinstance(payload, str):
                    try:
                        payload = json.loads(payload)
                    except ValueError:
                        payload = None
                found.append(payload)
    return found


def _cell_error(cell: dict | None) -> str:
    if not cell:
        return ""
    for o in cell.get("outputs") or []:
        if isinstance(o, dict) and o.get("output_type") == "error":
            return f"{o.get('ename')}: {o.get('evalue')}"[:300]
    return cell.get("error") or ""


def grade(paths: Sequence[str | os.PathLike], *, cell_timeout: int = _CELL_TIMEOUT_S) -> list[ExerciseResult]:
    """Grade notebooks with the official checks re-injected; one :class:`ExerciseResult` each."""
    results: list[ExerciseResult | None] = []
    jobs = []  # (index, exercise, notebook file name, checks, answers)
    with tempfile.TemporaryDirectory(prefix="roofline-grade-") as tmp:
        workdir = Path(tmp)
        for i, raw in enumerate(paths):
            path = Path(raw)
            exercise = _exercise_of(path)
            if exercise is None:
                known = ", ".join(f"{e.stem}.md" for e in EXERCISES.values())
                results.append(ExerciseResult(str(raw), "?", "", [], f"not an exercise notebook (expected one of {known})"))
                continue
            try:
                nb = _read_notebook(path)
            except Exception as err:  # noqa: BLE001 - unreadable input is reported, not raised
                results.append(ExerciseResult(str(raw), exercise.key, exercise.title,
                                              [_result(p, "error", "notebook not graded") for p in parts_of(exercise.key)],
                                              f"cannot read {raw}: {type(err).__name__}: {err}"))
                continue
            import nbformat

            regraded, checks, answers = _regraded(nb, exercise)
            name = f"{i:02d}_{exercise.stem}.ipynb"
            nbformat.write(regraded, str(workdir / name))
            results.append(None)
            jobs.append((i, exercise, name, checks, answers, str(raw)))
        cells, log = ({}, "")
        if jobs:
            cells, log = _run_nbval([workdir / j[2] for j in jobs], workdir, cell_timeout)
    for i, exercise, name, checks, answers, raw in jobs:
        nb_cells = cells.get(name, {})
        problem = "" if nb_cells else "the notebook did not run under nbval:\n" + log.strip()[-1500:]
        by_part = {part: num for num, part in checks.items()}
        part_results = []
        for spec in parts_of(exercise.key):
            cell = nb_cells.get(str(by_part[spec.key]))
            observations = _observations(cell.get("outputs") if cell else None)
            if len(observations) == 1:
                result = judge(spec.key, (observations[0] or {}).get("observation"))
            elif len(observations) > 1:
                result = _result(spec, "error", "the official check produced more than one result: "
                                 "something in the notebook writes into other cells' output.")
            else:
                why = _cell_error(cell) or (
                    "it published nothing: code in the notebook may have replaced roofline_lib.grading's "
                    "functions, or the kernel died or an earlier cell timed out")
                result = _result(spec, "error", f"the official check gave no result ({why}).")
            answer_errors = [e for e in (_cell_error(nb_cells.get(str(n))) for n in answers.get(spec.key, [])) if e]
            if answer_errors and result.status != "correct":
                result.message = f"your answer cell raised {answer_errors[0]}. " + result.message
                if result.status == "not attempted":
                    result.status = "error"
            part_results.append(result)
        results[i] = ExerciseResult(raw, exercise.key, exercise.title, part_results, problem)
    return [r for r in results if r is not None]


def format_table(results: Sequence[ExerciseResult], *, width: int = 100) -> str:
    """A score table per exercise and part, with feedback under each part that lost marks."""
    lines = []
    total = sum(r.marks for r in results)
    total_max = sum(r.max_marks for r in results)
    for r in results:
        lines.append(f"{r.exercise:<5} {r.title}   ({r.path})")
        if r.problem:
            lines.extend("      " + ln for ln in textwrap.wrap(r.problem, width - 6) or [""])
        for p in r.parts:
            lines.append(f"  {p.part:<6} {p.title:<42.42} {p.status:<14} {p.marks}/{p.max_marks}")
            if p.message and p.status in ("wrong", "error"):
                lines.extend(textwrap.wrap(p.message, width, initial_indent=" " * 9, subsequent_indent=" " * 9))
        lines.append(f"  {'total':<6} {'':<42} {'':<14} {r.marks}/{r.max_marks}")
        lines.append("")
    pct = 100 * total / total_max if total_max else 0.0
    lines.append(f"Score: {total}/{total_max} ({pct:.0f} %)")
    return "\n".join(lines)


def _as_json(results: Sequence[ExerciseResult]) -> dict:
    return {
        "marks": sum(r.marks for r in results),
        "max_marks": sum(r.max_marks for r in results),
        "exercises": [
            {"path": r.path, "exercise": r.exercise, "title": r.title, "marks": r.marks,
             "max_marks": r.max_marks, "problem": r.problem, "parts": [p.__dict__ for p in r.parts]}
            for r in results
        ],
    }


def run_grade(paths: Sequence[str | os.PathLike], json_path: str | os.PathLike | None = None) -> int:
    """Grade ``paths``, print the score table, optionally write JSON; exit code 0 only on full marks.

    Returns 2 when no notebook was given, 1 when any mark is missing, 0 on full marks.
    """
    if not paths:
        print("roofline grade: give one or more exercise notebooks, e.g. exercises/*.md", file=sys.stderr)
        return 2
    missing = [str(p) for p in paths if not Path(p).is_file()]
    if missing:
        print(f"roofline grade: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    results = grade(paths)
    print(format_table(results))
    if json_path is not None:
        Path(json_path).write_text(json.dumps(_as_json(results), indent=2) + "\n")
    full = all(r.marks == r.max_marks and not r.problem for r in results) and bool(results)
    return 0 if full else 1


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m roofline_lib.grading PATH... [--json OUT]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m roofline_lib.grading", description=run_grade.__doc__)
    parser.add_argument("paths", nargs="*", help="exercise notebooks (.md or .ipynb)")
    parser.add_argument("--json", dest="json_path", help="also write the scores as JSON here")
    args = parser.parse_args(argv)
    return run_grade(args.paths, json_path=args.json_path)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
