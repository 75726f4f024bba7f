"""The reference answers of the exercises, computed from their scenarios' typed inputs.

The exercise notebooks type the same numbers the scenarios hold; the solutions earning full
marks is what holds the two equal.
"""

from __future__ import annotations

import math

from .scenarios import (
    BACKWARD_SHARE,
    EX1,
    EX3,
    EX4,
    EX5,
    EX6,
    EX7,
    EX7_ACT_LINEAR,
    EX7_ACT_SCORES,
    EX7_STATE,
    EX8,
    EX9,
    WIDTHS,
)

__all__ = [
    "ex1_intensity",
    "ex1_bytes_per_s",
    "ex3_params",
    "ex3_cards",
    "ex3_tokens_per_s",
    "ex4_naive",
    "ex4_fused",
    "ex4_ridge",
    "ex6_compute_seconds",
    "ex6_comms_seconds",
    "ex6_exposed",
    "ref_step_seconds",
    "ex7_params",
    "ex7_gpus",
    "ref_zero_bytes_per_gpu",
    "ex7_state_bytes",
    "ex7_activation_bytes",
    "ex7_fits",
    "ex7_phases",
    "ex7_comms_seconds",
    "ex7_compute_seconds",
    "ex7_hidden",
    "ex7_micro_batch",
    "ex8_kv_bytes_per_token",
    "ex8_weight_bytes",
    "ex8_max_requests",
    "ref_tpot_seconds",
    "ex8_accelerator",
    "ex8_context",
    "ex8_decode_seconds",
    "ex8_decode_bound",
    "ex8_max_batch",
    "ex8_ttft",
    "ex8_max_chunk",
    "ref_joules_per_token",
    "ref_capped_flops_per_s",
    "ex9_card",
    "ex9_seconds",
    "ex9_joules",
    "ex9_gemm",
    "ex9_gemv",
    "ex9_energy_ridge",
    "ex9_kv_bytes_per_token",
    "ex9_decode_seconds",
    "ex9_decode_terms",
    "ex9_decode_joules_per_token",
    "ex9_dominant_term",
    "ex9_power_at_roof",
    "ex9_capped_flops_per_s",
    "ex9_dollars_per_million_tokens",
    "ref_ceiling",
    "ref_sweep",
    "ex5_efficiency",
]


def ex1_intensity():
    return EX1["flop"] / (EX1["read_bytes"] + EX1["write_bytes"])


def ex1_bytes_per_s(seconds):
    return (EX1["read_bytes"] + EX1["write_bytes"]) / seconds


def ex3_params(*, kv_heads=None, mlp_matrices=3, tied=False):
    """Weight-matrix parameters of the EX3 config (norm weights left out: under 0.01 %)."""
    c = EX3
    kv = c["num_key_value_heads"] if kv_heads is None else kv_heads
    q = c["num_attention_heads"] * c["head_dim"]
    attention = c["hidden_size"] * q * 2 + 2 * c["hidden_size"] * kv * c["head_dim"]
    mlp = mlp_matrices * c["hidden_size"] * c["intermediate_size"]
    embeddings = (1 if tied else 2) * c["vocab_size"] * c["hidden_size"]
    return c["num_hidden_layers"] * (attention + mlp) + embeddings


def ex3_cards():
    return math.ceil(ex3_params() * EX3["bytes_per_param"] / EX3["memory_bytes"])


def ex3_tokens_per_s(cards):
    return EX3["hbm_bytes_per_s"] * cards / (ex3_params() * EX3["bytes_per_param"])


def ex4_naive(seq=None):
    s, dh, b = seq or EX4["seq"], EX4["head_dim"], EX4["bytes_per_elem"]
    flops = 2 * s * s * dh
    return flops, b * (2 * s * dh + s * s)


def ex4_fused():
    s, dh, b = EX4["seq"], EX4["head_dim"], EX4["bytes_per_elem"]
    return 4 * s * s * dh, b * 4 * s * dh


def ex4_ridge():
    return EX4["bf16_flops_per_s"] / EX4["hbm_bytes_per_s"]


def _ring_allreduce_seconds(message_bytes, n, alpha_seconds, bytes_per_s):
    """Ring all-reduce: a reduce-scatter then an all-gather, each n - 1 messages of S / n bytes."""
    if n == 1:
        return 0.0
    return 2 * (n - 1) * alpha_seconds + 2 * (n - 1) / n * message_bytes / bytes_per_s


def ex6_compute_seconds(tokens_per_gpu):
    return 6 * EX6["n_params"] * tokens_per_gpu / (EX6["mfu"] * EX6["bf16_flops_per_s"])


def ex6_comms_seconds(n):
    return _ring_allreduce_seconds(
        EX6["n_params"] * EX6["grad_bytes_per_param"], n, EX6["alpha_seconds"], EX6["link_bytes_per_s"]
    )


def ex6_exposed(n, tokens_per_gpu):
    compute = ex6_compute_seconds(tokens_per_gpu)
    return max(0.0, ex6_comms_seconds(n) - BACKWARD_SHARE * compute)


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


def ex7_params(*, kv_heads=None, tied=False):
    """Weight-matrix parameters of the EX7 config (gated MLP, untied head; norm gains left out)."""
    c = EX7
    kv = c["num_key_value_heads"] if kv_heads is None else kv_heads
    q = c["num_attention_heads"] * c["head_dim"]
    attention = c["hidden_size"] * q * 2 + 2 * c["hidden_size"] * kv * c["head_dim"]
    mlp = 3 * c["hidden_size"] * c["intermediate_size"]
    embeddings = (1 if tied else 2) * c["vocab_size"] * c["hidden_size"]
    return c["num_hidden_layers"] * (attention + mlp) + embeddings


def ex7_gpus():
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


def ex7_state_bytes(stage):
    return ref_zero_bytes_per_gpu(ex7_params(), ex7_gpus(), stage, EX7_STATE)


def ex7_activation_bytes(micro_batch=None, *, scores=False, layers=None):
    """Saved activations per card (Korthikanti et al.): s b h (34 + 5 a s / h) per layer, scores optional."""
    c = EX7
    s, h = c["seq_len"], c["hidden_size"]
    b = c["micro_batch"] if micro_batch is None else micro_batch
    per_token = EX7_ACT_LINEAR + (EX7_ACT_SCORES * c["num_attention_heads"] * s / h if scores else 0)
    return s * b * h * per_token * (c["num_hidden_layers"] if layers is None else layers)


def ex7_fits(stage, micro_batch=None):
    return ex7_state_bytes(stage) + ex7_activation_bytes(micro_batch) <= EX7["memory_bytes"]


def ex7_phases(collectives=3):
    """(NVLink seconds, node-egress seconds) of ``collectives`` all-gathers (or reduce-scatters) of the
    bf16 weights over the cluster, priced hierarchically: each card's NVLink phase moves (g - 1) / g of
    the message, each node's NICs (m - 1) / m of it."""
    c = EX7
    message = 2 * ex7_params()  # bf16
    g, m = c["gpus_per_node"], c["n_nodes"]
    nvlink = (g - 1) / g * message / c["nvlink_bytes_per_s"]
    egress = (m - 1) / m * message / (c["nics_per_node"] * c["nic_bytes_per_s"])
    return collectives * nvlink, collectives * egress


def ex7_comms_seconds():
    """ZeRO-3's step: all-gather the weights forward, again backward, reduce-scatter the gradients."""
    return max(ex7_phases(3))


def ex7_compute_seconds(micro_batch=None, flops_per_param=6):
    b = EX7["micro_batch"] if micro_batch is None else micro_batch
    return flops_per_param * ex7_params() * EX7["seq_len"] * b / EX7["bf16_flops_per_s"]


def ex7_hidden(micro_batch=None):
    return ex7_comms_seconds() <= ex7_compute_seconds(micro_batch)


def ex7_micro_batch():
    """The fewest sequences per card at which ZeRO-3's collectives hide and the card still holds it all."""
    for b in range(1, EX7["max_micro_batch"] + 1):
        if ex7_hidden(b) and ex7_fits(3, b):
            return b
    raise AssertionError("no micro-batch both fits and hides")  # pragma: no cover - the scenario has one


def ex8_kv_bytes_per_token(heads=None, tensors=2):
    """K and V (``tensors``), per layer, per KV head, head_dim wide, at the cache's width."""
    c = EX8
    kv = c["num_key_value_heads"] if heads is None else heads
    return tensors * c["num_hidden_layers"] * kv * c["head_dim"] * c["kv_bytes_per_elem"]


def ex8_weight_bytes():
    return EX8["n_params"] * EX8["bytes_per_param"]


def ex8_max_requests(reserved=None):
    """Requests whose KV caches fit beside the weights: whole blocks (paged) or ``reserved`` tokens each."""
    c = EX8
    tokens = int((c["memory_bytes"] - ex8_weight_bytes()) // ex8_kv_bytes_per_token())
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


def ex8_accelerator():
    return {"bf16_flops_per_s": EX8["bf16_flops_per_s"], "hbm_bytes_per_s": EX8["hbm_bytes_per_s"]}


def ex8_context():
    return EX8["prompt_len"] + EX8["output_len"]  # sized for the last token: every cache at its full length


def ex8_decode_seconds(batch):
    return ref_tpot_seconds(EX8["n_params"], ex8_kv_bytes_per_token(), batch, ex8_context(), ex8_accelerator())


def ex8_decode_bound(batch):
    c = EX8
    bytes_moved = ex8_weight_bytes() + batch * ex8_context() * ex8_kv_bytes_per_token()
    intensity = 2 * c["n_params"] * batch / bytes_moved
    return "memory" if intensity < c["bf16_flops_per_s"] / c["hbm_bytes_per_s"] else "compute"


def ex8_max_batch(*, weights=True):
    """The largest batch whose decode step meets the TPOT objective at the full context."""
    c = EX8
    budget = c["tpot_seconds"] * c["hbm_bytes_per_s"] - (ex8_weight_bytes() if weights else 0)
    batch = int(budget // (ex8_context() * ex8_kv_bytes_per_token()))
    while weights and batch > 0 and ex8_decode_seconds(batch) > c["tpot_seconds"]:  # the compute roof, if it binds
        batch -= 1
    return batch


def ex8_ttft(*, roof="max"):
    c = EX8
    compute = 2 * c["n_params"] * c["prompt_len"] / c["bf16_flops_per_s"]
    memory = (ex8_weight_bytes() + c["prompt_len"] * ex8_kv_bytes_per_token()) / c["hbm_bytes_per_s"]
    return {"max": max(compute, memory), "memory": memory}[roof]


def ex8_max_chunk(running=None):
    """The most prompt tokens one step can add beside ``running`` decodes and still meet the TPOT."""
    c = EX8
    b = c["running"] if running is None else running
    kv = ex8_kv_bytes_per_token()

    def seconds(chunk):
        flops = 2 * c["n_params"] * (b + chunk)
        bytes_moved = ex8_weight_bytes() + b * ex8_context() * kv + chunk * kv  # the chunk writes its cache
        return max(flops / c["bf16_flops_per_s"], bytes_moved / c["hbm_bytes_per_s"])

    chunk = int(c["tpot_seconds"] * c["bf16_flops_per_s"] // (2 * c["n_params"])) - b
    while chunk > 0 and seconds(chunk) > c["tpot_seconds"]:
        chunk -= 1
    return chunk


# --------------------------------------------------------------------------- exercise 9


def _amount(x, name, *, zero=False):
    """``x`` as a float: a finite number above 0 (or at 0, with ``zero``), else ValueError."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0 or (x == 0 and not zero):
        raise ValueError(f"{name} must be a {'non-negative' if zero else 'positive'} number")
    return float(x)


def _card_figures(accelerator):
    """The five figures of an EX9 accelerator dict, checked: a roof that moves, no negative energy."""
    if not isinstance(accelerator, dict):
        raise ValueError("accelerator must be a dict")
    positive = ("bf16_flops_per_s", "hbm_bytes_per_s")
    non_negative = ("static_watts", "joules_per_flop", "joules_per_byte")
    figures = {k: _amount(accelerator.get(k), k) for k in positive}
    figures.update({k: _amount(accelerator.get(k), k, zero=True) for k in non_negative})
    return figures


def ref_joules_per_token(n_params, kv_bytes_per_token, batch, context_len, accelerator):
    """EX9's function: joules per generated token of one decode step at its roof, or ValueError.

    2 FLOP per parameter per sequence, the bf16 weights read once for the batch and each sequence's
    ``context_len`` tokens of KV cache; energy = FLOPs x e_flop + bytes x e_byte + static watts x time.
    """
    n = _amount(n_params, "n_params")
    kv = _amount(kv_bytes_per_token, "kv_bytes_per_token", zero=True)
    for value, name in ((batch, "batch"), (context_len, "context_len")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number of at least 1")
    card = _card_figures(accelerator)
    flops = 2 * n * batch
    bytes_moved = 2 * n + batch * context_len * kv  # bf16 weights once, every sequence's cache
    seconds = max(flops / card["bf16_flops_per_s"], bytes_moved / card["hbm_bytes_per_s"])
    joules = flops * card["joules_per_flop"] + bytes_moved * card["joules_per_byte"] + card["static_watts"] * seconds
    return joules / batch  # one token per sequence


def ref_capped_flops_per_s(intensity, cap_watts, card):
    """The FLOP/s of a kernel of ``intensity`` under a power cap on ``card`` (an EX9 accelerator dict).

    At rate R the card draws static + R e_flop + (R / intensity) e_byte; where that passes the cap
    at the roof's rate, R falls to (cap - static) / (e_flop + e_byte / intensity).
    """
    figures = _card_figures(card)
    i = _amount(intensity, "intensity")
    cap = _amount(cap_watts, "cap_watts")
    if cap <= figures["static_watts"]:
        raise ValueError("cap_watts must be above the static power")
    roof = min(figures["bf16_flops_per_s"], figures["hbm_bytes_per_s"] * i)
    return min(roof, (cap - figures["static_watts"]) / (figures["joules_per_flop"] + figures["joules_per_byte"] / i))


def ex9_card(**slips):
    """The Kestrel K5 as the function's accelerator dict, SI (joules per byte: 8 bits of HBM traffic).

    ``slips`` replace figures, for the traps: ``static_watts=0`` (static power forgotten),
    ``joules_per_byte=4e-12`` (the per-bit figure taken per byte).
    """
    c = EX9
    card = {
        "bf16_flops_per_s": c["bf16_flops_per_s"],
        "hbm_bytes_per_s": c["hbm_bytes_per_s"],
        "static_watts": c["static_watts"],
        "joules_per_flop": c["joules_per_flop"],
        "joules_per_byte": 8 * c["hbm_joules_per_bit"],
    }
    return {**card, **slips}


def ex9_seconds(flops, bytes_moved):
    """The time at the K5's roof: the longer of FLOPs at the peak and bytes at the bandwidth."""
    return max(flops / EX9["bf16_flops_per_s"], bytes_moved / EX9["hbm_bytes_per_s"])


def ex9_joules(flops, bytes_moved, **slips):
    """A kernel's energy at the K5's roof: FLOPs, HBM bytes and static power for its time."""
    card = ex9_card(**slips)
    return (
        flops * card["joules_per_flop"]
        + bytes_moved * card["joules_per_byte"]
        + card["static_watts"] * ex9_seconds(flops, bytes_moved)
    )


def ex9_gemm():
    """(FLOPs, bytes) of the square bf16 GEMM: 2 n^3, and A and B read and C written once."""
    n = EX9["gemm_n"]
    return 2 * n**3, 3 * n * n * EX9["bytes_per_param"]


def ex9_gemv():
    """(FLOPs, bytes) of the bf16 GEMV on the n x n matrix: 2 n^2, the matrix and both vectors once."""
    n = EX9["gemm_n"]
    return 2 * n * n, (n * n + 2 * n) * EX9["bytes_per_param"]


def ex9_energy_ridge(**slips):
    """The intensity (FLOP/byte) at which a kernel's FLOPs and its HBM bytes cost the same energy."""
    card = ex9_card(**slips)
    return card["joules_per_byte"] / card["joules_per_flop"]


def ex9_kv_bytes_per_token():
    c = EX9
    return 2 * c["num_hidden_layers"] * c["num_key_value_heads"] * c["head_dim"] * c["kv_bytes_per_elem"]  # K and V


def _ex9_step(batch, kv_bytes_per_token=None):
    """(FLOPs, bytes) of one decode step of ``batch`` sequences at the scenario's context."""
    kv = ex9_kv_bytes_per_token() if kv_bytes_per_token is None else kv_bytes_per_token
    return 2 * EX9["n_params"] * batch, EX9["n_params"] * EX9["bytes_per_param"] + batch * EX9["context_len"] * kv


def ex9_decode_seconds(batch):
    return ex9_seconds(*_ex9_step(batch))


def ex9_decode_terms(batch):
    """The joules of one decode step of ``batch`` sequences, by term: "flops", "bytes", "static"."""
    flops, bytes_moved = _ex9_step(batch)
    card = ex9_card()
    return {
        "flops": flops * card["joules_per_flop"],
        "bytes": bytes_moved * card["joules_per_byte"],
        "static": card["static_watts"] * ex9_seconds(flops, bytes_moved),
    }


def ex9_dominant_term(batch):
    terms = ex9_decode_terms(batch)
    return max(terms, key=terms.get)


def ex9_decode_joules_per_token(batch, *, kv=True, **slips):
    """Joules per token of a decode step of ``batch`` sequences on the K5; ``kv=False``: the KV cache
    left unread (a slip), ``slips``: a figure of :func:`ex9_card` replaced (another)."""
    c = EX9
    kv_bytes = ex9_kv_bytes_per_token() if kv else 0
    return ref_joules_per_token(c["n_params"], kv_bytes, batch, c["context_len"], ex9_card(**slips))


def ex9_power_at_roof(flops, bytes_moved):
    """Watts the K5 draws running a kernel at its roof: its energy over its time."""
    return ex9_joules(flops, bytes_moved) / ex9_seconds(flops, bytes_moved)


def ex9_capped_flops_per_s(**slips):
    """The square GEMM's FLOP/s under the cap; ``slips`` replace card figures (the traps')."""
    flops, bytes_moved = ex9_gemm()
    return ref_capped_flops_per_s(flops / bytes_moved, EX9["cap_watts"], ex9_card(**slips))


def ex9_dollars_per_million_tokens(batch=None, *, per_node=False, tokens_per_step=None):
    """Dollars per million tokens of one K5 decoding ``batch`` sequences step after step, at its share
    of the node's price (``per_node``: the node's whole price, a slip). ``tokens_per_step``
    replaces the batch's tokens per step (1: the batch forgotten, a slip)."""
    c = EX9
    b = c["batch"] if batch is None else batch
    dollars_per_hour = c["node_dollars_per_hour"] / (1 if per_node else c["gpus_per_node"])
    tokens_per_s = (b if tokens_per_step is None else tokens_per_step) / ex9_decode_seconds(b)
    return dollars_per_hour / (tokens_per_s * 3600) * 1e6  # 3,600 s an hour, per million tokens


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


def ex5_efficiency():
    rows = ref_sweep(EX5["flops"], EX5["elems"], EX5["heron_seconds"], EX5["heron"])
    return {d: r["efficiency"] for d, r in rows.items()}
