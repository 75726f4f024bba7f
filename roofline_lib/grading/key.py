"""The answer key of the exercises: scenarios, references, probe expectations and letters.

Only the grader's process and the practice judge's process import this module; an exercise
kernel never does (it runs ``roofline_lib.observer`` alone). Every reference is computed here
from the scenario's typed inputs, which are the same numbers the exercise notebooks type; the
solutions earning full marks is what holds the two equal.

Each part's judge returns a :class:`Verdict` with two messages:

* ``practice`` (shown in the notebook by ``observer.check``): what is wrong, the *direction* of
  a numeric error and the convention to revisit;
* ``submit`` (the grader's report): what is wrong in kind only: not attempted, not a number,
  the wrong sign, a power of ten off (a unit slip), a known convention slip, or just "not
  right". It never says high or low, so re-submitting cannot bisect a number.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

__all__ = [
    "Exercise",
    "Part",
    "Probe",
    "Verdict",
    "EXERCISES",
    "PARTS",
    "parts_of",
    "plan_of",
    "draw_probes",
    "judge",
    "PRACTICE_SEED",
    "WIDTHS",
]

#: Seed of the probe inputs practice mode uses; the grader draws fresh ones every run.
PRACTICE_SEED = 20240611


@dataclass(frozen=True)
class Exercise:
    key: str
    stem: str
    title: str


@dataclass(frozen=True)
class Probe:
    """One input a student's function is called on: ``kind`` says what it must do with it."""

    id: str
    function: str
    args: tuple
    kind: str  # "valid" (return the right result) or "refuse" (raise ValueError)


@dataclass(frozen=True)
class Verdict:
    status: str  # "correct", "wrong", "not attempted"
    practice: str = ""
    submit: str = ""


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
    )
}

# ============================================================================ scenarios
# Typed inputs, the same numbers the exercise notebooks print.

EX1 = dict(
    fp32_flops_per_s=78e12,
    bf16_flops_per_s=900e12,
    hbm_bytes_per_s=4.0e12,  # "Kestrel K1"
    flop=469_762_048,
    read_bytes=268_468_224,
    write_bytes=268_435_456,
    seconds=150e-6,
    rerun_seconds=110e-6,
)
EX2 = dict(p_bf16=1200e12, p_hbm=6.0e12, q_bf16=500e12, q_hbm=4.0e12, intensity=150.0)
EX3 = dict(
    hidden_size=8192,
    num_hidden_layers=80,
    intermediate_size=28672,
    num_attention_heads=64,
    num_key_value_heads=8,
    head_dim=128,
    vocab_size=128256,
    tokens=2e12,
    mfu=0.40,
    bytes_per_param=2,
    bf16_flops_per_s=750e12,
    hbm_bytes_per_s=3.2e12,
    memory_bytes=64e9,  # "Kestrel K2"
)
EX4 = dict(seq=8192, head_dim=128, bytes_per_elem=2, bf16_flops_per_s=300e12, hbm_bytes_per_s=2.0e12)
_EX5_N = 8 * 2048 * 4096
EX5 = dict(
    flops=2 * _EX5_N,
    elems=2 * _EX5_N,
    heron={"hbm_bytes_per_s": 3.0e12, "peak_flops_per_s": {"fp32": 60e12, "bf16": 1000e12, "fp8": 2000e12}},
    heron_seconds={"fp32": 190e-6, "bf16": 100e-6, "fp8": 55e-6},
    ibis={"hbm_bytes_per_s": 2.0e12, "peak_flops_per_s": {"fp32": 19.5e12, "bf16": 312e12}},
    ibis_copied_seconds={"fp32": 200e-6, "bf16": 100e-6, "fp8": 50e-6},
)

EX6 = dict(
    n_params=8e9,
    grad_bytes_per_param=2,
    n_gpus=16,
    tokens_per_gpu=16384,
    bf16_flops_per_s=750e12,
    mfu=0.45,  # "Kestrel K2", the MFU the run reaches
    alpha_seconds=20e-6,
    link_bytes_per_s=50e9,  # one direction, per accelerator
    n_gpus_large=128,
    global_tokens=262144,
)
EX7 = dict(
    hidden_size=6144,
    num_hidden_layers=48,
    intermediate_size=21504,
    num_attention_heads=48,
    num_key_value_heads=8,
    head_dim=128,
    vocab_size=65536,
    bf16_flops_per_s=800e12,
    hbm_bytes_per_s=3.2e12,
    memory_bytes=64e9,  # "Kestrel K3"
    gpus_per_node=8,
    nvlink_bytes_per_s=450e9,  # one direction, per card, to the other cards of its node
    nics_per_node=4,
    nic_bytes_per_s=50e9,  # one direction, per NIC
    n_nodes=8,
    seq_len=2048,
    micro_batch=1,  # sequences per card per step, no gradient accumulation
    max_micro_batch=8,
)
#: Mixed-precision Adam, bytes per parameter: bf16 weight and gradient, fp32 master, momentum, variance.
EX7_STATE = {"weights": 2, "gradients": 2, "optimizer": 4 + 4 + 4}
#: Korthikanti et al.'s bytes per token per unit of width one GPT layer keeps (bf16), scores left out
#: (selective recompute), and the scores' term per a s / h.
EX7_ACT_LINEAR, EX7_ACT_SCORES = 34, 5

EX8 = dict(
    hidden_size=5120,
    num_hidden_layers=40,
    intermediate_size=13824,
    num_attention_heads=40,
    num_key_value_heads=8,
    head_dim=128,
    vocab_size=100352,
    n_params=12_037_652_480,  # the config's weight matrices, as its model card prints them
    bytes_per_param=2,  # bf16 weights
    kv_bytes_per_elem=2,  # bf16 KV cache
    bf16_flops_per_s=800e12,
    hbm_bytes_per_s=3.2e12,
    memory_bytes=80e9,  # "Kestrel K4"
    prompt_len=2000,
    output_len=500,
    block_tokens=16,
    max_seq_len=8192,  # what a contiguous allocator reserves per request
    batch=64,
    tpot_seconds=0.020,  # the objective, per output token
    running=80,  # requests decoding while a prompt is chunked in
)

#: The share of a step's compute under which a gradient all-reduce can run: the backward pass,
#: 4 N of the 6 N FLOPs per token.
BACKWARD_SHARE = 4 / 6

#: Bytes per element of every number format the exercises' functions must handle.
WIDTHS = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp6": 0.75, "fp4": 0.5, "int4": 0.5}


# ============================================================================ reference maths


def _ex1_intensity():
    return EX1["flop"] / (EX1["read_bytes"] + EX1["write_bytes"])


def _ex1_bytes_per_s(seconds):
    return (EX1["read_bytes"] + EX1["write_bytes"]) / seconds


def _ex3_params(*, kv_heads=None, mlp_matrices=3, tied=False):
    """Weight-matrix parameters of the EX3 config (norm weights left out: under 0.01 %)."""
    c = EX3
    kv = c["num_key_value_heads"] if kv_heads is None else kv_heads
    q = c["num_attention_heads"] * c["head_dim"]
    attention = c["hidden_size"] * q * 2 + 2 * c["hidden_size"] * kv * c["head_dim"]
    mlp = mlp_matrices * c["hidden_size"] * c["intermediate_size"]
    embeddings = (1 if tied else 2) * c["vocab_size"] * c["hidden_size"]
    return c["num_hidden_layers"] * (attention + mlp) + embeddings


def _ex3_cards():
    return math.ceil(_ex3_params() * EX3["bytes_per_param"] / EX3["memory_bytes"])


def _ex3_tokens_per_s(cards):
    return EX3["hbm_bytes_per_s"] * cards / (_ex3_params() * EX3["bytes_per_param"])


def _ex4_naive(seq=None):
    s, dh, b = seq or EX4["seq"], EX4["head_dim"], EX4["bytes_per_elem"]
    flops = 2 * s * s * dh
    return flops, b * (2 * s * dh + s * s)


def _ex4_fused():
    s, dh, b = EX4["seq"], EX4["head_dim"], EX4["bytes_per_elem"]
    return 4 * s * s * dh, b * 4 * s * dh


def _ex4_ridge():
    return EX4["bf16_flops_per_s"] / EX4["hbm_bytes_per_s"]


def _ring_allreduce_seconds(message_bytes, n, alpha_seconds, bytes_per_s):
    """Ring all-reduce: a reduce-scatter then an all-gather, each n - 1 messages of S / n bytes."""
    if n == 1:
        return 0.0
    return 2 * (n - 1) * alpha_seconds + 2 * (n - 1) / n * message_bytes / bytes_per_s


def _ex6_compute_seconds(tokens_per_gpu):
    return 6 * EX6["n_params"] * tokens_per_gpu / (EX6["mfu"] * EX6["bf16_flops_per_s"])


def _ex6_comms_seconds(n):
    return _ring_allreduce_seconds(
        EX6["n_params"] * EX6["grad_bytes_per_param"], n, EX6["alpha_seconds"], EX6["link_bytes_per_s"]
    )


def _ex6_exposed(n, tokens_per_gpu):
    compute = _ex6_compute_seconds(tokens_per_gpu)
    return max(0.0, _ex6_comms_seconds(n) - BACKWARD_SHARE * compute)


def ref_step_seconds(n_params, tokens_per_gpu, n_gpus, accelerator, link):
    """EX6's function: one data-parallel step with its gradient all-reduce overlapped, or ValueError."""

    def positive(x, name):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
            raise ValueError(f"{name} must be positive")
        return float(x)

    n_params, tokens = positive(n_params, "n_params"), positive(tokens_per_gpu, "tokens_per_gpu")
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, int) or n_gpus < 1:
        raise ValueError("n_gpus must be a whole number of at least 1")
    peak = positive(accelerator["bf16_flops_per_s"], "bf16_flops_per_s")
    mfu = positive(accelerator["mfu"], "mfu")
    if mfu > 1:
        raise ValueError("mfu must be a fraction")
    alpha = float(link["alpha_seconds"])
    if not alpha >= 0:
        raise ValueError("alpha_seconds must not be negative")
    bw = positive(link["bytes_per_s"], "bytes_per_s")
    compute = 6 * n_params * tokens / (mfu * peak)
    comms = _ring_allreduce_seconds(n_params * 2, n_gpus, alpha, bw)
    return compute + max(0.0, comms - BACKWARD_SHARE * compute)


def _ex7_params(*, kv_heads=None, tied=False):
    """Weight-matrix parameters of the EX7 config (gated MLP, untied head; norm gains left out)."""
    c = EX7
    kv = c["num_key_value_heads"] if kv_heads is None else kv_heads
    q = c["num_attention_heads"] * c["head_dim"]
    attention = c["hidden_size"] * q * 2 + 2 * c["hidden_size"] * kv * c["head_dim"]
    mlp = 3 * c["hidden_size"] * c["intermediate_size"]
    embeddings = (1 if tied else 2) * c["vocab_size"] * c["hidden_size"]
    return c["num_hidden_layers"] * (attention + mlp) + embeddings


def _ex7_gpus():
    return EX7["gpus_per_node"] * EX7["n_nodes"]


def ref_zero_bytes_per_gpu(n_params, dp, stage, state):
    """EX7's function: model state per GPU under ZeRO ``stage`` over ``dp`` GPUs, or ValueError."""
    if isinstance(n_params, bool) or not isinstance(n_params, (int, float)) or not math.isfinite(n_params):
        raise ValueError("n_params must be a number")
    if n_params <= 0:
        raise ValueError("n_params must be positive")
    if isinstance(dp, bool) or not isinstance(dp, int) or dp < 1:
        raise ValueError("dp must be a whole number of at least 1")
    if isinstance(stage, bool) or stage not in (0, 1, 2, 3):
        raise ValueError("stage must be 0, 1, 2 or 3")
    if not isinstance(state, dict):
        raise ValueError("state must be a dict")
    widths = {}
    for part in ("weights", "gradients", "optimizer"):
        b = state.get(part)
        if isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b) or b < 0:
            raise ValueError(f"state[{part!r}] must be a number of bytes, 0 or more")
        widths[part] = float(b)
    return n_params * (
        widths["weights"] / (dp if stage >= 3 else 1)
        + widths["gradients"] / (dp if stage >= 2 else 1)
        + widths["optimizer"] / (dp if stage >= 1 else 1)
    )


def _ex7_state_bytes(stage):
    return ref_zero_bytes_per_gpu(_ex7_params(), _ex7_gpus(), stage, EX7_STATE)


def _ex7_activation_bytes(micro_batch=None, *, scores=False, layers=None):
    """Saved activations per card (Korthikanti et al.): s b h (34 + 5 a s / h) per layer, scores optional."""
    c = EX7
    s, h = c["seq_len"], c["hidden_size"]
    b = c["micro_batch"] if micro_batch is None else micro_batch
    per_token = EX7_ACT_LINEAR + (EX7_ACT_SCORES * c["num_attention_heads"] * s / h if scores else 0)
    return s * b * h * per_token * (c["num_hidden_layers"] if layers is None else layers)


def _ex7_fits(stage, micro_batch=None):
    return _ex7_state_bytes(stage) + _ex7_activation_bytes(micro_batch) <= EX7["memory_bytes"]


def _ex7_phases(collectives=3):
    """(NVLink seconds, node-egress seconds) of ``collectives`` all-gathers (or reduce-scatters) of the
    bf16 weights over the cluster, priced hierarchically: each card's NVLink phase moves (g - 1) / g of
    the message, each node's NICs (m - 1) / m of it."""
    c = EX7
    message = 2 * _ex7_params()  # bf16
    g, m = c["gpus_per_node"], c["n_nodes"]
    nvlink = (g - 1) / g * message / c["nvlink_bytes_per_s"]
    egress = (m - 1) / m * message / (c["nics_per_node"] * c["nic_bytes_per_s"])
    return collectives * nvlink, collectives * egress


def _ex7_comms_seconds():
    """ZeRO-3's step: all-gather the weights forward, again backward, reduce-scatter the gradients."""
    return max(_ex7_phases(3))


def _ex7_compute_seconds(micro_batch=None, flops_per_param=6):
    b = EX7["micro_batch"] if micro_batch is None else micro_batch
    return flops_per_param * _ex7_params() * EX7["seq_len"] * b / EX7["bf16_flops_per_s"]


def _ex7_hidden(micro_batch=None):
    return _ex7_comms_seconds() <= _ex7_compute_seconds(micro_batch)


def _ex7_micro_batch():
    """The fewest sequences per card at which ZeRO-3's collectives hide and the card still holds it all."""
    for b in range(1, EX7["max_micro_batch"] + 1):
        if _ex7_hidden(b) and _ex7_fits(3, b):
            return b
    raise AssertionError("no micro-batch both fits and hides")  # pragma: no cover - the scenario has one


def _ex8_kv_bytes_per_token(heads=None, tensors=2):
    """K and V (``tensors``), per layer, per KV head, head_dim wide, at the cache's width."""
    c = EX8
    kv = c["num_key_value_heads"] if heads is None else heads
    return tensors * c["num_hidden_layers"] * kv * c["head_dim"] * c["kv_bytes_per_elem"]


def _ex8_weight_bytes():
    return EX8["n_params"] * EX8["bytes_per_param"]


def _ex8_max_requests(reserved=None):
    """Requests whose KV caches fit beside the weights: whole blocks (paged) or ``reserved`` tokens each."""
    c = EX8
    tokens = int((c["memory_bytes"] - _ex8_weight_bytes()) // _ex8_kv_bytes_per_token())
    used = c["prompt_len"] + c["output_len"]
    per_request = math.ceil(used / c["block_tokens"]) * c["block_tokens"] if reserved is None else reserved
    return tokens // per_request


def ref_tpot_seconds(n_params, kv_bytes_per_token, batch, context_len, accelerator):
    """EX8's function: one decode step at the roof (2N FLOP per token; weights plus KV read), or ValueError."""

    def positive(x, name, *, zero=False):
        if (
            isinstance(x, bool)
            or not isinstance(x, (int, float))
            or not math.isfinite(x)
            or x < 0
            or (x == 0 and not zero)
        ):
            raise ValueError(f"{name} must be positive")
        return float(x)

    n = positive(n_params, "n_params")
    kv = positive(kv_bytes_per_token, "kv_bytes_per_token", zero=True)
    for value, name in ((batch, "batch"), (context_len, "context_len")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number of at least 1")
    peak = positive(accelerator["bf16_flops_per_s"], "bf16_flops_per_s")
    bw = positive(accelerator["hbm_bytes_per_s"], "hbm_bytes_per_s")
    flops = 2 * n * batch
    bytes_moved = 2 * n + batch * context_len * kv  # bf16 weights once, every sequence's cache
    return max(flops / peak, bytes_moved / bw)


def _ex8_accelerator():
    return {"bf16_flops_per_s": EX8["bf16_flops_per_s"], "hbm_bytes_per_s": EX8["hbm_bytes_per_s"]}


def _ex8_context():
    return EX8["prompt_len"] + EX8["output_len"]  # sized for the last token: every cache at its full length


def _ex8_decode_seconds(batch):
    return ref_tpot_seconds(EX8["n_params"], _ex8_kv_bytes_per_token(), batch, _ex8_context(), _ex8_accelerator())


def _ex8_decode_bound(batch):
    c = EX8
    bytes_moved = _ex8_weight_bytes() + batch * _ex8_context() * _ex8_kv_bytes_per_token()
    intensity = 2 * c["n_params"] * batch / bytes_moved
    return "memory" if intensity < c["bf16_flops_per_s"] / c["hbm_bytes_per_s"] else "compute"


def _ex8_max_batch(*, weights=True):
    """The largest batch whose decode step meets the TPOT objective at the full context."""
    c = EX8
    budget = c["tpot_seconds"] * c["hbm_bytes_per_s"] - (_ex8_weight_bytes() if weights else 0)
    batch = int(budget // (_ex8_context() * _ex8_kv_bytes_per_token()))
    while weights and batch > 0 and _ex8_decode_seconds(batch) > c["tpot_seconds"]:  # the compute roof, if it binds
        batch -= 1
    return batch


def _ex8_ttft(*, roof="max"):
    c = EX8
    compute = 2 * c["n_params"] * c["prompt_len"] / c["bf16_flops_per_s"]
    memory = (_ex8_weight_bytes() + c["prompt_len"] * _ex8_kv_bytes_per_token()) / c["hbm_bytes_per_s"]
    return {"max": max(compute, memory), "memory": memory}[roof]


def _ex8_max_chunk(running=None):
    """The most prompt tokens one step can add beside ``running`` decodes and still meet the TPOT."""
    c = EX8
    b = c["running"] if running is None else running
    kv = _ex8_kv_bytes_per_token()

    def seconds(chunk):
        flops = 2 * c["n_params"] * (b + chunk)
        bytes_moved = _ex8_weight_bytes() + b * _ex8_context() * kv + chunk * kv  # the chunk writes its cache
        return max(flops / c["bf16_flops_per_s"], bytes_moved / c["hbm_bytes_per_s"])

    chunk = int(c["tpot_seconds"] * c["bf16_flops_per_s"] // (2 * c["n_params"])) - b
    while chunk > 0 and seconds(chunk) > c["tpot_seconds"]:
        chunk -= 1
    return chunk


def _check_datasheet(datasheet):
    if not isinstance(datasheet, dict):
        raise ValueError("datasheet must be a dict")
    bw = datasheet.get("hbm_bytes_per_s")
    peaks = datasheet.get("peak_flops_per_s")
    if not isinstance(bw, (int, float)) or not bw > 0 or not isinstance(peaks, dict):
        raise ValueError("datasheet needs hbm_bytes_per_s and peak_flops_per_s")
    return float(bw), peaks


def ref_ceiling(intensity, datasheet, dtype):
    """EX2's function: the roofline ceiling in FLOP/s, or ValueError."""
    bw, peaks = _check_datasheet(datasheet)
    if not isinstance(intensity, (int, float)) or not math.isfinite(intensity) or intensity <= 0:
        raise ValueError("intensity must be a positive number of FLOP/byte")
    if dtype not in peaks:
        raise ValueError(f"no {dtype} compute on this accelerator")
    return min(float(peaks[dtype]), bw * intensity)


def ref_sweep(flops, elems, seconds_by_dtype, datasheet):
    """EX5's function: one row per dtype, or ValueError for a missing precision or a too-fast time."""
    bw, peaks = _check_datasheet(datasheet)
    rows = {}
    for dtype, seconds in seconds_by_dtype.items():
        if dtype not in peaks:
            raise ValueError(f"no {dtype} compute on this accelerator")
        if dtype not in WIDTHS:
            raise ValueError(f"unknown number format {dtype}")
        bytes_moved = elems * WIDTHS[dtype]
        intensity = flops / bytes_moved
        ridge = peaks[dtype] / bw
        achieved = flops / seconds
        ceiling = min(peaks[dtype], bw * intensity)
        if achieved > ceiling * (1 + 1e-9):
            raise ValueError(f"{dtype}: faster than the roof allows")
        rows[dtype] = {
            "bytes_moved": bytes_moved,
            "intensity": intensity,
            "bound": "memory" if intensity < ridge else "compute",
            "achieved_flops_per_s": achieved,
            "ceiling_flops_per_s": ceiling,
            "efficiency": achieved / ceiling,
        }
    return rows


def _ex5_efficiency():
    rows = ref_sweep(EX5["flops"], EX5["elems"], EX5["heron_seconds"], EX5["heron"])
    return {d: r["efficiency"] for d, r in rows.items()}


# ============================================================================ reading entries


def _number_of(entry: Mapping):
    """(float, None) or (None, the reason the entry is not a finite number)."""
    kind = entry.get("kind")
    if kind == "number" and isinstance(entry.get("value"), (int, float)) and not isinstance(entry.get("value"), bool):
        return float(entry["value"]), None
    if kind == "number":
        return None, f"is {entry.get('nonfinite', 'not finite')}, not a finite number"
    shown = {
        "bool": "a True/False",
        "str": "a string",
        "dict": "a dict",
        "list": "a list",
        "function": "a function",
    }.get(kind, f"a {entry.get('type', kind)}")
    return None, f"should be a number, got {shown}"


def _attempted(entry: Mapping) -> bool:
    return entry.get("kind") not in ("ellipsis", "missing", None)


def _describe_number_error(name, value, ref, unit, rel_tol, concept, traps):
    """(practice, submit) messages for a number outside the tolerance."""
    if value == 0 or (value < 0) != (ref < 0):
        msg = f"`{name}` has the wrong sign or is zero. {concept}"
        return msg, msg
    for trap_value, trap_hint in traps:
        if math.isclose(value, trap_value, rel_tol=min(rel_tol, 0.005)):
            direction = "high" if value > ref else "low"
            return (f"`{name}` is too {direction}: {trap_hint}", f"`{name}` is not right: {trap_hint}")
    ratio = value / ref
    k = round(math.log10(ratio))
    if k != 0 and math.isclose(ratio, 10.0**k, rel_tol=rel_tol):
        if unit == "fraction":
            msg = f"`{name}` is off by a factor of 10^{k}: give a fraction between 0 and 1, not a percentage."
        else:
            msg = (
                f"`{name}` is off by a factor of 10^{k}: a unit slip. Give it in plain SI units "
                f"({unit}), without a kilo-, mega-, giga- or tera- prefix."
            )
        return msg, msg
    direction = "high" if ratio > 1 else "low"
    if 0.5 <= ratio <= 2:
        practice = f"`{name}` ({unit}) is too {direction}. {concept}"
    else:
        practice = f"`{name}` ({unit}) is too {direction} by more than a factor of 2. {concept}"
    return practice, f"`{name}` is not right. {concept}"


def _not_attempted(name):
    return Verdict(
        "not attempted", f"`{name}` is still `...`: replace it with your answer.", f"`{name}` was not answered."
    )


def number(name, reference, unit, concept, *, rel_tol=0.01, traps=()):
    """A number within ``rel_tol`` of ``reference()``; ``traps`` are (value(), hint) of known slips."""

    def judge_number(entries, calls, probes):
        entry = entries.get(name, {"kind": "missing"})
        if not _attempted(entry):
            return _not_attempted(name)
        value, why = _number_of(entry)
        if why:
            return Verdict("wrong", f"`{name}` {why} (in {unit}).", f"`{name}` {why} (in {unit}).")
        ref = float(reference())
        if math.isclose(value, ref, rel_tol=rel_tol):
            return Verdict("correct")
        practice, submit = _describe_number_error(
            name, value, ref, unit, rel_tol, concept, [(float(t()), h) for t, h in traps]
        )
        return Verdict("wrong", practice, submit)

    return judge_number


def _norm(value):
    return value.strip().strip(".").lower() if isinstance(value, str) else value


def choice(name, reference, options: Sequence, concept):
    """One of ``options`` (strings compare case-insensitively; 2 and "2" are the same option)."""

    def judge_choice(entries, calls, probes):
        entry = entries.get(name, {"kind": "missing"})
        if not _attempted(entry):
            return _not_attempted(name)
        got = entry.get("value") if entry.get("kind") in ("str", "bool", "number") else object()
        if entry.get("kind") == "number" and float(got).is_integer():
            got = str(int(got))
        allowed = {_norm(str(o) if isinstance(o, int) and not isinstance(o, bool) else o): o for o in options}
        if _norm(got) not in allowed or isinstance(got, bool) != isinstance(options[0], bool):
            shown = ", ".join(repr(o) for o in options)
            msg = f"`{name}` must be one of {shown}."
            return Verdict("wrong", msg, msg)
        ref = reference() if callable(reference) else reference
        ref = str(ref) if isinstance(ref, int) and not isinstance(ref, bool) else ref
        if _norm(got) == _norm(ref):
            return Verdict("correct")
        return Verdict("wrong", f"`{name}` is not right. {concept}", f"`{name}` is not right. {concept}")

    return judge_choice


def all_of(*judges):
    """Every sub-judge must be correct; the first problem is reported."""

    def judge_all(entries, calls, probes):
        for j in judges:
            v = j(entries, calls, probes)
            if v.status != "correct":
                return v
        return Verdict("correct")

    return judge_all


def dict_of_numbers(name, reference, unit, concept, *, rel_tol=0.01):
    def judge_dict(entries, calls, probes):
        entry = entries.get(name, {"kind": "missing"})
        if not _attempted(entry):
            return _not_attempted(name)
        if entry.get("kind") != "dict":
            msg = f"`{name}` should be a dict mapping each dtype to a {unit}."
            return Verdict("wrong", msg, msg)
        ref = reference()
        items = entry["items"]
        missing = [k for k in ref if k not in items]
        if missing:
            msg = f"`{name}` has no entry for {', '.join(map(repr, missing))}."
            return Verdict("wrong", msg, msg)
        for key, ref_value in ref.items():
            v = number(f"{name}[{key!r}]", lambda r=ref_value: r, unit, concept, rel_tol=rel_tol)(
                {f"{name}[{key!r}]": items[key]}, {}, []
            )
            if v.status != "correct":
                return v
        return Verdict("correct")

    return judge_dict


# ---------------------------------------------------------------------------- function answers


def _describe_args(args) -> str:
    text = json.dumps(list(args))
    return text if len(text) < 300 else text[:297] + "..."


def _compare_value(field, got, want, unit):
    """None when equal; else (practice, submit) about this field."""
    if isinstance(want, str):
        if got.get("kind") == "str" and _norm(got.get("value")) == want:
            return None
        return (
            f"'{field}' is not right (compare the intensity with the ridge of that dtype).",
            f"'{field}' is not right.",
        )
    value, why = _number_of(got)
    if why:
        return (f"'{field}' {why}.", f"'{field}' {why}.")
    if math.isclose(value, want, rel_tol=1e-6) or (want == 0 and abs(value) < 1e-12):
        return None
    return _describe_number_error(f"'{field}'", value, want, unit, 1e-6, "", [])


def function(name, reference, *, fields=None, units=None, concept=""):
    """A student's function called on the part's probes, each compared with ``reference``.

    A "valid" probe must return what the reference returns (every field of every row, for a dict
    of rows); a "refuse" probe must raise ValueError. A part that has refuse probes also has
    valid ones, so a function that always raises earns nothing.
    """

    def judge_function(entries, calls, probes):
        entry = entries.get(name, {"kind": "missing"})
        if entry.get("kind") != "function":
            if not _attempted(entry):
                return _not_attempted(name)
            msg = f"`{name}` should be a function."
            return Verdict("wrong", msg, msg)
        outcomes = calls.get(name, {})
        failures = []  # (practice, submit category)
        for probe in probes:
            outcome = outcomes.get(probe.id)
            call = f"{name}(*{_describe_args(probe.args)})"
            if not isinstance(outcome, dict):
                failures.append((f"no result for {call}.", "a probe has no result"))
                continue
            if probe.kind == "refuse":
                if "raised" not in outcome:
                    failures.append(
                        (
                            f"{call} returned a result; it must raise ValueError. {concept}",
                            "returned a result for an input it must refuse",
                        )
                    )
                elif not outcome.get("value_error"):
                    failures.append(
                        (
                            f"{call} raised {outcome.get('raised')}, not ValueError.",
                            "refused an input with an exception that is not a ValueError",
                        )
                    )
                continue
            if "raised" in outcome:
                if outcome.get("raised") == "NotImplementedError":
                    return Verdict("not attempted", f"`{name}` is not written yet.", f"`{name}` was not written.")
                failures.append(
                    (
                        f"{call} raised {outcome.get('raised')}: {outcome.get('message', '')}; it is a valid input.",
                        "raised on a valid input",
                    )
                )
                continue
            want = reference(*probe.args)
            got = outcome.get("returned", {})
            problem = _compare_result(want, got, fields, units)
            if problem:
                failures.append((f"{call}: {problem[0]}", problem[1]))
        if not failures:
            return Verdict("correct")
        kinds = sorted({f[1] for f in failures})
        practice = f"`{name}` is wrong on {len(failures)} of {len(probes)} probe inputs; first: {failures[0][0]}"
        submit = f"`{name}` is wrong on {len(failures)} of {len(probes)} probe inputs ({'; '.join(kinds)})."
        return Verdict("wrong", practice, submit)

    return judge_function


def _compare_result(want, got, fields, units):
    """None, or (practice, submit category) for the first difference."""
    if fields is None:  # a single number
        problem = _compare_value("result", got, want, (units or {}).get("result", ""))
        return None if problem is None else (problem[0], "a wrong value: " + _category(problem[1]))
    if got.get("kind") != "dict":
        return ("should return a dict of rows keyed by dtype.", "did not return a dict of rows")
    rows = got.get("items", {})
    if sorted(rows) != sorted(want):
        return (
            f"returned rows for {sorted(rows)}, expected one row per dtype of seconds_by_dtype.",
            "wrong set of rows",
        )
    for dtype, row in want.items():
        got_row = rows[dtype]
        if got_row.get("kind") != "dict":
            return (f"row {dtype!r} should be a dict.", "a row is not a dict")
        for field in fields:
            if field not in got_row.get("items", {}):
                return (f"row {dtype!r} has no key {field!r}.", f"a row has no {field!r}")
            problem = _compare_value(field, got_row["items"][field], row[field], (units or {}).get(field, ""))
            if problem:
                return (f"row {dtype!r}: {problem[0]}", f"{field!r} {_category(problem[1])}")
    return None


def _category(submit_msg: str) -> str:
    if "sign" in submit_msg:
        return "has the wrong sign"
    if "10^" in submit_msg:
        return "is off by a power of ten"
    return "is not right"


# ---------------------------------------------------------------------------- probes


def _datasheet(rng: random.Random, dtypes):
    bw = round(rng.uniform(1.0, 8.0), 2) * 1e12
    return {"hbm_bytes_per_s": bw, "peak_flops_per_s": {d: round(rng.uniform(15, 4000), 1) * 1e12 for d in dtypes}}


def _dtypes(rng, k, *, unusual=False):
    """k distinct formats; with ``unusual`` at least one the course library's registry lacks."""
    names = rng.sample(sorted(WIDTHS), k)
    if unusual and not set(names) & {"fp6", "int4"}:
        names[0] = rng.choice(["fp6", "int4"])
    return list(dict.fromkeys(names))


def _ceiling_probes(rng, *, refuse: bool):
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


def _sweep_probes(rng, *, refuse: str | None):
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


def _step_probes(rng, *, refuse: bool):
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


def _zero_probes(rng, *, refuse: bool):
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


def _tpot_probes(rng, *, refuse: bool):
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


def draw_probes(part: "Part", rng: random.Random) -> list[Probe]:
    return part.probes(rng) if part.probes else []


# ============================================================================ the parts

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
        _ex1_intensity,
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
        lambda: "memory" if _ex1_intensity() < EX1["fp32_flops_per_s"] / EX1["hbm_bytes_per_s"] else "compute",
        ("memory", "compute"),
        "Compare the intensity with the ridge.",
    ),
    _asks(
        "ex1-d",
        "fraction of the bandwidth roof",
        number,
        "fraction_of_bandwidth",
        lambda: _ex1_bytes_per_s(EX1["seconds"]) / EX1["hbm_bytes_per_s"],
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
        lambda: min(EX1["fp32_flops_per_s"], _ex1_intensity() * EX1["hbm_bytes_per_s"]) / EX1["fp32_flops_per_s"],
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
        _ceiling_probes,
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
        _ex3_params,
        "parameters",
        "Count every weight matrix of one layer (attention projections and the MLP), times the "
        "layers, plus the embedding and output matrices.",
        traps=[
            (
                lambda: _ex3_params(kv_heads=EX3["num_attention_heads"]),
                "with grouped-query attention the key and value projections have only num_key_value_heads heads.",
            ),
            (lambda: _ex3_params(mlp_matrices=2), "a gated MLP has three matrices, not two."),
            (lambda: _ex3_params(tied=True), "the embeddings are not tied: the output head is a second matrix."),
        ],
    ),
    _asks(
        "ex3-b",
        "training FLOPs",
        number,
        "training_flops",
        lambda: 6 * _ex3_params() * EX3["tokens"],
        "FLOP",
        "Training costs about 6 FLOP per parameter per token: 2 forward, 4 backward.",
        traps=[(lambda: 2 * _ex3_params() * EX3["tokens"], "that counts the forward pass only.")],
    ),
    _asks(
        "ex3-c",
        "accelerator-days",
        number,
        "accelerator_days",
        lambda: 6 * _ex3_params() * EX3["tokens"] / (EX3["mfu"] * EX3["bf16_flops_per_s"]) / 86400,
        "days",
        "MFU is the share of the dense peak that does model FLOPs; a day has 86,400 s.",
        rel_tol=0.02,
        traps=[
            (
                lambda: 6 * _ex3_params() * EX3["tokens"] * EX3["mfu"] / EX3["bf16_flops_per_s"] / 86400,
                "MFU scales the peak down, so it lengthens the run.",
            )
        ],
    ),
    _asks(
        "ex3-d",
        "does it fit on one card",
        choice,
        "fits_on_one",
        lambda: _ex3_params() * EX3["bytes_per_param"] <= EX3["memory_bytes"],
        (True, False),
        "Weights in bytes = parameters x bytes per parameter; compare with the card's memory.",
    ),
    _asks(
        "ex3-e",
        "the fewest cards",
        choice,
        "min_cards",
        _ex3_cards,
        tuple(range(1, 17)),
        "A part of a card holds nothing: round the number of cards up.",
    ),
    _asks(
        "ex3-f",
        "the decode ceiling",
        number,
        "decode_tokens_per_s",
        lambda: _ex3_tokens_per_s(_ex3_cards()),
        "tokens/s",
        "Each token reads every weight once; the cards read their shares at the same time.",
        traps=[
            (lambda: _ex3_tokens_per_s(1), "the weights do not fit on one card."),
            (lambda: _ex3_tokens_per_s(_ex3_cards() - 1), "count the cards that actually hold the weights."),
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
        lambda: _ex4_naive()[0],
        "FLOP",
        "A multiply-add is 2 FLOP.",
        traps=[(lambda: _ex4_naive()[0] / 2, "a multiply-add counts as 2 FLOP.")],
    ),
    _asks(
        "ex4-b",
        "QK^T bytes",
        number,
        "qk_bytes",
        lambda: _ex4_naive()[1],
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
        lambda: _ex4_naive()[0] / _ex4_naive()[1],
        "FLOP/byte",
        _INTENSITY,
    ),
    _asks(
        "ex4-d",
        "where it sits",
        choice,
        "qk_bound",
        lambda: "memory" if _ex4_naive()[0] / _ex4_naive()[1] < _ex4_ridge() else "compute",
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
                lambda: _ex4_fused()[0] / _ex4_fused()[1],
                "FLOP/byte",
                "Two matmuls' FLOPs over four s x d_h tensors' bytes.",
                traps=[(lambda: _ex4_fused()[0] / 2 / _ex4_fused()[1], "count both matmuls.")],
            ),
            choice(
                "fused_bound",
                lambda: "memory" if _ex4_fused()[0] / _ex4_fused()[1] < _ex4_ridge() else "compute",
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
            _sweep_probes,
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
        _ex5_efficiency,
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
        lambda: _ex6_comms_seconds(EX6["n_gpus"]),
        "seconds",
        "Alpha-beta: a fixed cost per message sent one after another, plus the bytes over the link bandwidth.",
        traps=[(lambda: _ex6_comms_seconds(EX6["n_gpus"]) / 2, "count both phases of the ring.")],
    ),
    _asks(
        "ex6-d",
        "the compute time of a step",
        number,
        "compute_seconds",
        lambda: _ex6_compute_seconds(EX6["tokens_per_gpu"]),
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
        lambda: _ex6_exposed(EX6["n_gpus"], EX6["tokens_per_gpu"]) == 0,
        (True, False),
        _OVERLAP,
    ),
    _asks(
        "ex6-f",
        "exposed time at 128 accelerators",
        number,
        "exposed_seconds_128",
        lambda: _ex6_exposed(EX6["n_gpus_large"], EX6["global_tokens"] / EX6["n_gpus_large"]),
        "seconds",
        _OVERLAP + " With the global batch fixed, each accelerator computes on fewer tokens.",
        traps=[
            (
                lambda: (
                    _ex6_comms_seconds(EX6["n_gpus_large"])
                    - _ex6_compute_seconds(EX6["global_tokens"] / EX6["n_gpus_large"])
                ),
                "the all-reduce cannot hide under the forward pass: its gradients do not exist yet.",
            ),
            (
                lambda: _ex6_comms_seconds(EX6["n_gpus_large"]),
                "part of the all-reduce still hides under the backward pass.",
            ),
        ],
    ),
    *_write_and_refuse(
        ("ex6-g", "ex6-h"),
        "step_seconds",
        ref_step_seconds,
        _step_probes,
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
        _ex7_params,
        "parameters",
        "Count every weight matrix of one layer (attention projections and the MLP), times the "
        "layers, plus the embedding and output matrices.",
        traps=[
            (
                lambda: _ex7_params(kv_heads=EX7["num_attention_heads"]),
                "with grouped-query attention the key and value projections have only num_key_value_heads heads.",
            ),
            (lambda: _ex7_params(tied=True), "the embeddings are not tied: the output head is a second matrix."),
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
        _ex7_activation_bytes,
        "bytes",
        "A layer keeps about 34 bytes per token per unit of width for its backward pass when the "
        "attention scores are not stored; every layer keeps its own.",
        traps=[
            (
                lambda: _ex7_activation_bytes(scores=True),
                "with selective recompute the attention scores are recomputed, not stored.",
            ),
            (lambda: _ex7_activation_bytes(layers=1), "that is one layer; every layer saves its own."),
        ],
    ),
    _asks(
        "ex7-d",
        "the lowest ZeRO stage that fits",
        choice,
        "lowest_stage",
        lambda: next(s for s in (0, 1, 2, 3) if _ex7_fits(s)),
        (0, 1, 2, 3),
        _ZERO + " " + _FITS,
    ),
    _asks(
        "ex7-e",
        "ZeRO-3's collectives per step",
        number,
        "dp_comms_seconds",
        _ex7_comms_seconds,
        "seconds",
        _HIERARCHY,
        traps=[
            (
                lambda: 3 * (_ex7_gpus() - 1) / _ex7_gpus() * 2 * _ex7_params() / EX7["nic_bytes_per_s"],
                "a card does not send everything through one NIC: inside a node the traffic goes over "
                "NVLink, and only the node's share crosses its NICs, all of them at once.",
            ),
            (
                lambda: _ex7_phases(3)[0],
                "that is the NVLink phase alone; price the NIC phase too and take the one that takes longer.",
            ),
            (
                lambda: max(_ex7_phases(2)),
                "ZeRO-3 runs three collectives of the weights' size, not an all-reduce's two.",
            ),
            (lambda: max(_ex7_phases(1)), "ZeRO-3 runs three collectives per step."),
        ],
    ),
    _asks(
        "ex7-f",
        "the compute roof of a step",
        number,
        "step_compute_seconds",
        _ex7_compute_seconds,
        "seconds",
        "Training costs about 6 FLOP per parameter per token; the compute roof is the dense peak.",
        traps=[(lambda: _ex7_compute_seconds(flops_per_param=2), "that is the forward pass only.")],
    ),
    _asks(
        "ex7-g", "hidden at one sequence per card?", choice, "hidden_at_1", _ex7_hidden, (True, False), _ZERO3_OVERLAP
    ),
    _asks(
        "ex7-h",
        "the critical tokens per card",
        number,
        "critical_tokens_per_gpu",
        lambda: EX7["seq_len"] * EX7["micro_batch"] * _ex7_comms_seconds() / _ex7_compute_seconds(),
        "tokens",
        "The compute grows with the tokens per card, the data-parallel bytes do not: they meet where "
        "the compute equals the collectives' time.",
    ),
    _asks(
        "ex7-i",
        "the micro-batch that fits and hides",
        choice,
        "micro_batch",
        _ex7_micro_batch,
        tuple(range(1, EX7["max_micro_batch"] + 1)),
        "More sequences per card lengthen the compute but add activations: " + _FITS,
    ),
    *_write_and_refuse(
        ("ex7-j", "ex7-k"),
        "zero_bytes_per_gpu",
        ref_zero_bytes_per_gpu,
        _zero_probes,
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
        _ex8_kv_bytes_per_token,
        "bytes",
        _KV,
        traps=[
            (
                lambda: _ex8_kv_bytes_per_token(heads=EX8["num_attention_heads"]),
                "with grouped-query attention only num_key_value_heads heads are cached.",
            ),
            (lambda: _ex8_kv_bytes_per_token(tensors=1), "a token keeps a key and a value."),
        ],
    ),
    _asks(
        "ex8-b",
        "concurrent requests, paged",
        number,
        "max_requests",
        _ex8_max_requests,
        "requests",
        "The cache gets the memory the weights leave; a paged request holds whole blocks, and a part "
        "of a request holds nothing.",
        rel_tol=1e-9,
        traps=[
            (
                lambda: _ex8_max_requests(reserved=EX8["max_seq_len"]),
                "that is a contiguous allocator reserving max_seq_len per request; pages hold what is used.",
            ),
            (
                lambda: (EX8["memory_bytes"] - _ex8_weight_bytes()) / _ex8_kv_bytes_per_token() / _ex8_context(),
                "round down to whole requests of whole blocks.",
            ),
            (
                lambda: EX8["memory_bytes"] // (_ex8_kv_bytes_per_token() * 2512),
                "the weights take their share of the memory first.",
            ),
        ],
    ),
    _asks(
        "ex8-c",
        "a decode step at batch 64",
        number,
        "decode_step_seconds",
        lambda: _ex8_decode_seconds(EX8["batch"]),
        "seconds",
        _DECODE,
        traps=[
            (
                lambda: 2 * EX8["n_params"] * EX8["batch"] / EX8["bf16_flops_per_s"],
                "that is the compute roof; decode at this batch is far left of the ridge.",
            ),
            (lambda: _ex8_weight_bytes() / EX8["hbm_bytes_per_s"], "the KV caches are read too."),
            (
                lambda: EX8["batch"] * _ex8_weight_bytes() / EX8["hbm_bytes_per_s"],
                "the weights are read once per step for the whole batch, not once per sequence.",
            ),
        ],
    ),
    _asks(
        "ex8-d",
        "its bound",
        choice,
        "decode_bound",
        lambda: _ex8_decode_bound(EX8["batch"]),
        ("memory", "compute"),
        "Compare the step's FLOPs per byte with the ridge.",
    ),
    _asks(
        "ex8-e",
        "the largest batch within the TPOT",
        number,
        "max_batch",
        _ex8_max_batch,
        "sequences",
        _DECODE + " Round down: a batch is whole sequences.",
        rel_tol=1e-9,
        traps=[
            (lambda: _ex8_max_batch(weights=False), "the weights are read every step too."),
            (_ex8_max_requests, "that is what the KV cache holds; the objective binds first."),
        ],
    ),
    _asks(
        "ex8-f",
        "TTFT of a prompt alone",
        number,
        "ttft_seconds",
        _ex8_ttft,
        "seconds",
        "A prefill computes 2 FLOP per parameter per prompt token in one step; its time is the longer "
        "of its two roofs.",
        traps=[(lambda: _ex8_ttft(roof="memory"), "that is the memory roof; a long prompt is compute-bound.")],
    ),
    *_write_and_refuse(
        ("ex8-g", "ex8-h"),
        "tpot_seconds",
        ref_tpot_seconds,
        _tpot_probes,
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
        _ex8_max_chunk,
        "tokens",
        "A mixed step computes 2 FLOP per parameter for every token in it, decode or prompt, and "
        "reads the weights once.",
        rel_tol=0.004,
        traps=[
            (lambda: _ex8_max_chunk(running=0), "the 80 decode tokens share the step's compute with the chunk."),
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

PARTS: dict[str, Part] = {p.key: p for p in _PART_LIST}


def parts_of(exercise: str) -> list[Part]:
    return [p for p in _PART_LIST if p.exercise == exercise]


def plan_of(part: Part, probes: Sequence[Probe]) -> dict:
    """What the kernel may see: the names and the probe inputs, never an expectation."""
    plan = {"names": list(part.names)}
    if probes:
        by_fn: dict[str, list] = {}
        for p in probes:
            by_fn.setdefault(p.function, []).append([p.id, json.dumps(list(p.args))])
        plan["probes"] = by_fn
    return plan


def judge(part: Part, observation, probes: Sequence[Probe]) -> Verdict:
    """Judge one observation; a malformed one is an error, never an exception."""
    if not isinstance(observation, dict) or not isinstance(observation.get("entries"), dict):
        return Verdict("error", "the check could not read your answers.", "the observation was unreadable.")
    entries = {k: v for k, v in observation["entries"].items() if isinstance(v, dict)}
    calls = observation.get("calls") if isinstance(observation.get("calls"), dict) else {}
    calls = {k: v for k, v in calls.items() if isinstance(v, dict)}
    try:
        return part.judge(entries, calls, probes)
    except Exception as err:  # noqa: BLE001 - a malformed observation never crashes the grader
        return Verdict(
            "error",
            f"could not judge the answer ({type(err).__name__}).",
            f"could not judge the answer ({type(err).__name__}).",
        )
