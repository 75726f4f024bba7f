"""The probe inputs a student's function is called on, drawn at random, and the plan a kernel sees."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from .scenarios import WIDTHS

if TYPE_CHECKING:
    from .parts import Part

__all__ = [
    "PRACTICE_SEED",
    "Probe",
    "ceiling_probes",
    "sweep_probes",
    "step_probes",
    "zero_probes",
    "tpot_probes",
    "joules_per_token_probes",
    "draw_probes",
    "plan_of",
]


#: Seed of the probe inputs practice mode uses; the grader draws fresh ones every run.
PRACTICE_SEED = 20240611


@dataclass(frozen=True)
class Probe:
    """One input a student's function is called on: ``kind`` says what it must do with it."""

    id: str
    function: str
    args: tuple
    kind: str  # "valid" (return the right result) or "refuse" (raise ValueError)


def _datasheet(rng: random.Random, dtypes):
    bw = round(rng.uniform(1.0, 8.0), 2) * 1e12
    return {"hbm_bytes_per_s": bw, "peak_flops_per_s": {d: round(rng.uniform(15, 4000), 1) * 1e12 for d in dtypes}}


def _dtypes(rng, k, *, unusual=False):
    """k distinct formats; with ``unusual`` at least one the course library's registry lacks."""
    names = rng.sample(sorted(WIDTHS), k)
    if unusual and not set(names) & {"fp6", "int4"}:
        names[0] = rng.choice(["fp6", "int4"])
    return list(dict.fromkeys(names))


def ceiling_probes(rng, *, refuse: bool):
    probes = []
    for i in range(5):
        dtypes = _dtypes(rng, 3, unusual=i < 2)
        ds = _datasheet(rng, dtypes)
        d = dtypes[0]
        ridge = ds["peak_flops_per_s"][d] / ds["hbm_bytes_per_s"]
        intensity = round(ridge * rng.choice([0.05, 0.3, 0.8, 1.25, 3.0, 40.0]), 3)
        probes.append(Probe(f"v{i}", "ceiling", (intensity, ds, d), "valid"))
    if refuse:
        dtypes = _dtypes(rng, 2)
        lacking = rng.choice([d for d in WIDTHS if d not in dtypes])
        ds = _datasheet(rng, dtypes)
        probes.append(Probe("r0", "ceiling", (round(rng.uniform(1, 500), 2), ds, lacking), "refuse"))
        ds = _datasheet(rng, dtypes)
        probes.append(
            Probe("r1", "ceiling", (rng.choice([0.0, -round(rng.uniform(1, 100), 1)]), ds, dtypes[0]), "refuse")
        )
    return probes


def _sweep_times(rng, flops, elems, ds, dtypes, lo, hi):
    out = {}
    for d in dtypes:
        t_min = max(flops / ds["peak_flops_per_s"][d], elems * WIDTHS[d] / ds["hbm_bytes_per_s"])
        out[d] = t_min * rng.uniform(lo, hi)
    return out


def sweep_probes(rng, *, refuse: str | None):
    probes = []
    for i in range(4):
        dtypes = _dtypes(rng, rng.choice([2, 3]), unusual=i < 2)
        ds = _datasheet(rng, dtypes)
        elems = rng.choice([2, 4, 8, 16]) * 2 ** rng.randint(18, 24)
        flops = elems * rng.choice([0.5, 2, 8, 300, 5000])
        seconds = _sweep_times(rng, flops, elems, ds, dtypes, 1.02, 4.0)
        probes.append(Probe(f"v{i}", "precision_sweep", (flops, elems, seconds, ds), "valid"))
    if refuse == "precision":
        for i in range(2):
            dtypes = _dtypes(rng, 3)
            ds = _datasheet(rng, dtypes[:2])  # the chip lacks the third format
            elems = 2 ** rng.randint(20, 26)
            seconds = _sweep_times(rng, 2 * elems, elems, _datasheet(rng, dtypes), dtypes, 2.0, 4.0)
            probes.append(Probe(f"r{i}", "precision_sweep", (2 * elems, elems, seconds, ds), "refuse"))
    if refuse == "timing":
        for i in range(2):
            dtypes = _dtypes(rng, 2)
            ds = _datasheet(rng, dtypes)
            elems = 2 ** rng.randint(20, 26)
            flops = elems * rng.choice([1, 4000])
            seconds = _sweep_times(rng, flops, elems, ds, dtypes, 1.5, 3.0)
            fast = dtypes[i % 2]
            seconds[fast] = _sweep_times(rng, flops, elems, ds, [fast], 0.3, 0.9)[fast]  # beats its roof
            probes.append(Probe(f"r{i}", "precision_sweep", (flops, elems, seconds, ds), "refuse"))
        dtypes = _dtypes(rng, 2)
        ds = _datasheet(rng, dtypes)
        elems = 2**22
        near = _sweep_times(rng, 2 * elems, elems, ds, dtypes, 1.005, 1.01)  # close to, not over, the roof
        probes.append(Probe("v-near-roof", "precision_sweep", (2 * elems, elems, near, ds), "valid"))
    return probes


def step_probes(rng, *, refuse: bool):
    probes = []
    for i, n in enumerate([1, 2, rng.choice([8, 16]), rng.choice([64, 128]), rng.choice([512, 1024])]):
        accelerator = {
            "bf16_flops_per_s": round(rng.uniform(100, 2500), 1) * 1e12,
            "mfu": round(rng.uniform(0.2, 0.6), 3),
        }
        link = {
            "alpha_seconds": round(rng.uniform(1, 50), 2) * 1e-6,
            "bytes_per_s": round(rng.uniform(10, 450), 1) * 1e9,
        }
        args = (rng.choice([1.3e9, 7e9, 13e9, 70e9]), rng.choice([1024, 4096, 16384, 65536]), n, accelerator, link)
        probes.append(Probe(f"v{i}", "step_seconds", args, "valid"))
    if refuse:
        base = probes[2].args
        probes.append(Probe("r0", "step_seconds", (base[0], base[1], 0, base[3], base[4]), "refuse"))
        probes.append(Probe("r1", "step_seconds", (base[0], -base[1], base[2], base[3], base[4]), "refuse"))
        probes.append(
            Probe(
                "r2",
                "step_seconds",
                (base[0], base[1], base[2], {**base[3], "mfu": round(rng.uniform(1.5, 40), 1)}, base[4]),
                "refuse",
            )
        )
    return probes


def zero_probes(rng, *, refuse: bool):
    probes = []
    for i, dp in enumerate([1, rng.choice([2, 4, 8]), rng.choice([48, 64, 96]), rng.choice([512, 1024, 2048])]):
        for stage in (0, 1, 2, 3) if i in (1, 2) else (rng.randint(0, 3),):
            state = {
                "weights": rng.choice([4, 2, 1, 0.5]),  # fp32, bf16, fp8, fp4: formats the library names otherwise
                "gradients": rng.choice([4, 2, 1]),
                "optimizer": rng.choice([16, 12, 8, 6, 4, 0]),
            }
            n_params = rng.choice([1.3e9, 7e9, 13e9, 70e9, 405e9]) * rng.uniform(0.9, 1.1)
            probes.append(Probe(f"v{len(probes)}", "zero_bytes_per_gpu", (n_params, dp, stage, state), "valid"))
    if refuse:
        base = probes[2].args
        probes.append(Probe("r0", "zero_bytes_per_gpu", (base[0], base[1], rng.choice([4, 5, -1]), base[3]), "refuse"))
        probes.append(Probe("r1", "zero_bytes_per_gpu", (base[0], 0, base[2], base[3]), "refuse"))
        probes.append(Probe("r2", "zero_bytes_per_gpu", (base[0], rng.choice([2.5, 7.5]), base[2], base[3]), "refuse"))
        probes.append(Probe("r3", "zero_bytes_per_gpu", (-base[0], base[1], base[2], base[3]), "refuse"))
    return probes


def tpot_probes(rng, *, refuse: bool):
    probes = []
    for i, batch in enumerate([1, rng.choice([8, 16, 32]), rng.choice([64, 128, 256]), rng.choice([1024, 4096])]):
        large = i == 3  # a large batch of short contexts on a low ridge: compute-bound, whatever is drawn
        accelerator = {
            "bf16_flops_per_s": round(rng.uniform(100, 400 if large else 2500), 1) * 1e12,
            "hbm_bytes_per_s": round(rng.uniform(2.0 if large else 0.8, 8.0), 2) * 1e12,
        }
        n_params = rng.choice([8e9, 12e9, 70e9] if large else [1.3e9, 8e9, 12e9, 70e9]) * rng.uniform(0.9, 1.1)
        kv = 32768 if large else rng.choice([2, 4, 8]) * 1024 * rng.choice([16, 40, 80])  # bytes per token
        context = rng.choice([64, 128]) if large else rng.choice([128, 2048, 8192, 32768])
        args = (n_params, kv, batch, context, accelerator)
        probes.append(Probe(f"v{i}", "tpot_seconds", args, "valid"))
    if refuse:
        n, kv, batch, ctx, acc = probes[1].args
        probes.append(Probe("r0", "tpot_seconds", (n, kv, 0, ctx, acc), "refuse"))
        probes.append(Probe("r1", "tpot_seconds", (n, kv, batch + 0.5, ctx, acc), "refuse"))
        probes.append(Probe("r2", "tpot_seconds", (n, kv, batch, -ctx, acc), "refuse"))
        probes.append(Probe("r3", "tpot_seconds", (n, kv, batch, ctx, {**acc, "hbm_bytes_per_s": 0.0}), "refuse"))
    return probes


def _energy_card(rng, *, large):
    """An accelerator dict of EX9's kind: a roof and three energy figures, none of them a registry GPU's."""
    return {
        "bf16_flops_per_s": round(rng.uniform(100, 400 if large else 2500), 1) * 1e12,
        "hbm_bytes_per_s": round(rng.uniform(2.0 if large else 0.8, 8.0), 2) * 1e12,
        "static_watts": round(rng.uniform(30, 250), 1),
        "joules_per_flop": round(rng.uniform(0.1, 2.0), 3) * 1e-12,
        "joules_per_byte": round(rng.uniform(5, 80), 2) * 1e-12,
    }


def joules_per_token_probes(rng, *, refuse: bool):
    probes = []
    for i, batch in enumerate([1, rng.choice([8, 16, 32]), rng.choice([64, 128, 256]), rng.choice([1024, 4096])]):
        large = i == 3  # a large batch of short contexts on a low ridge: compute-bound, whatever is drawn
        n_params = rng.choice([8e9, 12e9, 70e9] if large else [1.3e9, 8e9, 12e9, 70e9]) * rng.uniform(0.9, 1.1)
        kv = 32768 if large else rng.choice([2, 4, 8]) * 1024 * rng.choice([16, 40, 80])  # bytes per token
        context = rng.choice([64, 128]) if large else rng.choice([128, 2048, 8192, 32768])
        args = (n_params, kv, batch, context, _energy_card(rng, large=large))
        probes.append(Probe(f"v{i}", "joules_per_token", args, "valid"))
    if refuse:
        n, kv, batch, ctx, card = probes[1].args
        probes.append(Probe("r0", "joules_per_token", (n, kv, 0, ctx, card), "refuse"))
        probes.append(Probe("r1", "joules_per_token", (n, kv, batch + 0.5, ctx, card), "refuse"))
        probes.append(Probe("r2", "joules_per_token", (n, kv, batch, -ctx, card), "refuse"))
        probes.append(Probe("r3", "joules_per_token", (n, kv, batch, ctx, {**card, "hbm_bytes_per_s": 0.0}), "refuse"))
        negative = {**card, "static_watts": -card["static_watts"]}
        probes.append(Probe("r4", "joules_per_token", (n, kv, batch, ctx, negative), "refuse"))
    return probes


def draw_probes(part: Part, rng: random.Random) -> list[Probe]:
    return part.probes(rng) if part.probes else []


def plan_of(part: Part, probes: Sequence[Probe]) -> dict:
    """What the kernel may see: the names and the probe inputs, never an expectation."""
    plan = {"names": list(part.names)}
    if probes:
        by_fn: dict[str, list] = {}
        for p in probes:
            by_fn.setdefault(p.function, []).append([p.id, json.dumps(list(p.args))])
        plan["probes"] = by_fn
    return plan
