"""Serving on the roofline: step times, KV-cache capacity, speculative decoding, prefix caching.

A server runs *steps*. Each step pushes some tokens of some requests through the model once:
the whole prompt of a new request (prefill), one new token of each running request (decode),
or a mix of both (continuous batching with chunked prefill). This module prices one step on a
:class:`~roofline_lib.core.roofline.Roof` from the model's counts, and builds the serving answers on
that price. Everything is SI (FLOP, byte, second).

A step is a list of :class:`Chunk`\\ s, one per request in it: ``tokens`` new tokens that follow
``offset`` tokens already in that request's KV cache, and ``logits`` rows of output computed.
A prefill is ``Chunk(P)``; a decode token at context ``C`` (it attends to ``C`` keys, itself
included) is ``Chunk(1, C - 1)``; a prefill chunk of a long prompt is ``Chunk(c, o, logits=0)``
until its last piece. For one step:

* **weights read**: :func:`~roofline_lib.workloads.inference.decode_step_bytes_of` for as many sequences as
  the step has new tokens, without cache: every weight once (the experts that many tokens touch,
  for a mixture of experts), one embedding row per token;
* **KV cache**: each chunk reads the ``offset`` keys and values before it and writes its
  ``tokens`` new ones (at most ``sliding_window - 1`` earlier ones where the model has one), at
  ``kv_bytes_per_elem``; a decode token at context ``C`` moves exactly ``C`` tokens' worth, as
  :func:`~roofline_lib.workloads.inference.model_decode_ceiling` counts;
* **FLOPs**: per new token the matmuls of ``cfg.flops_per_token`` (attention projections and
  FFN), per key it attends to the scores (``Q K^T`` and ``P V``), and the unembedding once per
  logits row; a decode batch gets exactly ``batch * decode_flops_per_token(cfg, C)``;
* activations are not counted (they are small beside the weights at these sizes), nor the
  softmax, norms and sampling.

The step's time is :meth:`Roof.seconds` of those FLOPs and bytes, plus a fixed
``overhead_seconds`` per step (kernel launches, the scheduler; 0 means "at the roof"), and its
bound is :meth:`Roof.bound` of their ratio: one source for each decision.

On that price: :func:`prefill_step`, :func:`decode_step`, :func:`mixed_step`;
:class:`RequestTimes` (TTFT and TPOT); :func:`kv_capacity` (paged or contiguous, any KV width);
:func:`speculative_decoding` (Leviathan et al.'s expectation, priced on the roof);
:func:`prefix_cache_savings`; :func:`steady_state`, the closed form of one batch size under a
policy that the explorers draw. The discrete-event model of a request trace is in
:mod:`roofline_lib.workloads.scheduler`; serving the course's small decoder live is in
:mod:`roofline_lib.evidence.serving_live`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

from ..core.checks import _flag, _fraction, _positive, _positive_int, _text
from ..core.formatting import data_size, flop_count, gib, to_unit
from ..core.formatting import seconds as seconds_text
from ..core.frozen import hash_once, hashed_once
from ..core.hardware import GPUSpec
from ..core.roofline import Roof, roof
from ..models.transformer import TransformerConfig
from .feasibility import Fit, _activation_parts, context_problem, max_context, memory_fit
from .inference import decode_step_bytes_of, kv_cache_bytes_per_token, precision_for_bytes

__all__ = [
    "POLICIES",
    "Server",
    "server_fit",
    "serving_server",
    "Chunk",
    "StepTime",
    "step_time",
    "prefill_step",
    "decode_step",
    "mixed_step",
    "RequestTimes",
    "KVCapacity",
    "kv_capacity",
    "expected_tokens_per_step",
    "speculative_speedup",
    "SpeculativeDecoding",
    "speculative_decoding",
    "PrefixSavings",
    "prefix_cache_savings",
    "SteadyState",
    "steady_state",
    "StepCounts",
    "step_counts",
    "FRONTIER_MAX_BATCH",
    "frontier_batches",
    "steady_frontier",
    "best_steady_state",
]

#: The batching policies the course models, in the order the chapter meets them.
POLICIES = ("static", "continuous", "chunked", "disaggregated")


@dataclass(frozen=True)
class Server:
    """A model on one device: its counts, the roof it runs on, the widths it stores.

    ``capacity_bytes`` is the memory for weights plus KV cache (None: not known, e.g. a CPU);
    ``overhead_seconds`` a fixed cost added to every step. Build one with :func:`serving_server`.
    """

    cfg: TransformerConfig
    roof: Roof
    bytes_per_param: float
    kv_bytes_per_elem: float
    capacity_bytes: float | None
    overhead_seconds: float
    name: str
    device_name: str = ""  # the GPU's name; empty for a bare roof

    @property
    def device(self) -> str:
        """What the server runs on, as a message names it: the GPU, else the roof's label."""
        return self.device_name or self.roof.label

    @functools.cached_property
    def kv_bytes_per_token(self) -> float:
        """KV cache one token adds, in bytes (:func:`~roofline_lib.workloads.inference.kv_cache_bytes_per_token`)."""
        c = self.cfg
        return kv_cache_bytes_per_token(c.n_layers, c.n_kv_heads, c.head_dim, self.kv_bytes_per_elem)

    @functools.cached_property
    def weight_bytes(self) -> float:
        """Every parameter stored, in bytes (cached: every step's feasibility asks it)."""
        return self.cfg.n_params() * self.bytes_per_param


def _as_server(value, param: str = "server") -> Server:
    """``value`` if it is a :class:`Server`; else a refusal naming ``param``."""
    if not isinstance(value, Server):
        raise TypeError(
            f"{param} must be a Server (rl.serving_server(cfg, gpu)), got {param}={value!r} ({type(value).__name__})"
        )
    return value


def _sequence(value, param: str, what: str) -> tuple:
    """``value`` as a tuple, refusing a non-iterable (or a string) by name."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{param} must be a sequence of {what}, got {param}={value!r} ({type(value).__name__})")
    return tuple(value)


def serving_server(
    cfg, hardware, *, bytes_per_param=2, kv_bytes_per_elem=None, precision=None, overhead_seconds=0.0
) -> Server:
    """A :class:`Server` for ``cfg`` on ``hardware``: a registry GPU (name or spec), a Roof or measured ceilings.

    For a GPU the roof is its dense peak in ``precision`` (default: the precision of
    ``bytes_per_param``, bf16 for 2 bytes) and HBM bandwidth, and ``capacity_bytes`` its memory.
    ``kv_bytes_per_elem`` defaults to the weights' width; 1 is an 8-bit KV cache.
    """
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig (rl.model_config('llama-3-8b')), got {type(cfg).__name__}")
    b = _positive(bytes_per_param, "bytes_per_param", "bytes per parameter")
    kv = b if kv_bytes_per_elem is None else _positive(kv_bytes_per_elem, "kv_bytes_per_elem", "bytes per element")
    overhead = _positive(overhead_seconds, "overhead_seconds", "seconds", allow_zero=True)
    if isinstance(hardware, str):
        from ..core.hardware import _gpu

        hardware = _gpu(hardware, "hardware")
    if isinstance(hardware, GPUSpec):
        the_roof = Roof.of_gpu(hardware, precision or precision_for_bytes(b))
        capacity = hardware.hbm_capacity_bytes
        device = hardware.name
    else:
        device = ""
        try:
            the_roof = roof(hardware)
        except (TypeError, ValueError) as err:
            raise type(err)(f"hardware: {err}") from None
        capacity = None
    return Server(cfg, the_roof, b, kv, capacity, overhead, f"{cfg.name or 'model'} on {the_roof.label}", device)


@hashed_once
@dataclass(frozen=True)
class Chunk:
    """``tokens`` new tokens of one request, after ``offset`` tokens already cached; ``logits`` rows out."""

    tokens: int
    offset: int = 0
    logits: int = 1

    def __post_init__(self):
        if type(self.tokens) is not int or self.tokens < 1:  # exact types first: the scheduler builds many
            _positive_int(self.tokens, "tokens", "tokens")
            raise TypeError(f"tokens must be an int number of tokens, got {type(self.tokens).__name__} {self.tokens!r}")
        if type(self.offset) is not int or self.offset < 0:
            raise ValueError(f"offset must be a whole number of cached tokens (0 or more), got {self.offset!r}")
        if type(self.logits) is not int or not 0 <= self.logits <= self.tokens:
            raise ValueError(
                f"logits must be a whole number of rows from 0 to tokens ({self.tokens}), got {self.logits!r}"
            )
        hash_once(self)  # a step groups its chunks by value


@dataclass(frozen=True)
class StepTime:
    """One step priced on a roof. SI units; ``bound`` is :meth:`Roof.bound` of ``intensity``.

    ``fit`` is the course's feasibility rule (:mod:`~roofline_lib.workloads.feasibility`): the
    weights stored, every chunk's KV cache and the step's activations against the device's memory,
    and the longest context against the model's. An infeasible step is still priced;
    ``feasible`` is False and ``__str__`` says why first.
    """

    prefill_tokens: int  # new tokens in chunks of more than one token
    decode_tokens: int  # chunks of one token
    flops: float
    weight_bytes: float
    kv_bytes: float
    bytes_moved: float
    intensity: float  # FLOP per byte
    roof_seconds: float  # max(flops / peak, bytes / bandwidth)
    overhead_seconds: float
    seconds: float  # roof_seconds + overhead_seconds
    bound: str  # "memory" or "compute"
    roof_label: str
    fit: Fit

    @property
    def feasible(self) -> bool:
        return self.fit.feasible

    def __str__(self) -> str:
        text = (
            f"{self.prefill_tokens} prefill + {self.decode_tokens} decode tokens: {flop_count(self.flops)}, "
            f"{data_size(self.bytes_moved)} ({self.kv_bytes / self.bytes_moved:.0%} KV), "
            f"{seconds_text(self.seconds)} on {self.roof_label}, {self.bound}-bound; {gib(self.fit.need_bytes)} held"
        )
        return self.fit.first(text)


def _keys(tokens: int, offset: int, window: int | None) -> int:
    """Keys attended to by ``tokens`` queries after ``offset``: sum over j = 1..tokens of min(offset + j, window)."""
    total = tokens * offset + tokens * (tokens + 1) // 2
    if window is None or offset + tokens <= window:
        return total
    over = sum(max(0, offset + j - window) for j in range(1, tokens + 1))
    return total - over


@functools.lru_cache(maxsize=4096)
def _weights_read(cfg: TransformerConfig, tokens: int, bytes_per_param: float) -> float:
    """Weight bytes a step of ``tokens`` new tokens reads (cached: the scheduler asks it every step)."""
    return decode_step_bytes_of(cfg, tokens, None, bytes_per_param).weights


@functools.lru_cache(maxsize=64)
def _flop_parts(cfg: TransformerConfig) -> tuple[float, float, float]:
    """(matmul FLOPs per token without scores or unembedding, score FLOPs per key, unembedding per row)."""
    f = cfg.flops_per_token(causal=False, seq_len=1)  # one key: scores_total is the per-key cost
    return f.fwd_per_token - f.scores_total - f.unembed, f.scores_total, f.unembed


@functools.lru_cache(maxsize=64)
def _kv_table(cfg: TransformerConfig, kv_bytes_per_elem: float) -> dict[int, float]:
    """KV bytes one sequence holds, by its context, filled as contexts are asked for: one table per
    model and width, looked up once a step (hashing the config for every running request of every
    step was a fifth of a simulation)."""
    return {}


def _kv_held_of(table: dict[int, float], cfg: TransformerConfig, context: int, kv_bytes_per_elem: float) -> float:
    """KV bytes one sequence of ``context`` tokens holds (windowed layers keep their window)."""
    held = table.get(context)
    if held is None:
        if len(table) >= 1 << 16:  # a long search over many contexts: start the table afresh
            table.clear()
        held = table[context] = cfg.kv_cache_bytes(context, kv_bytes_per_elem, 1)
    return held


def server_fit(server: Server, contexts, new_tokens: int, logits_rows: int) -> Fit:
    """The feasibility rule for one step on ``server``: weights, KV of ``contexts`` and activations.

    ``contexts`` is an iterable of ``(context_len, sequences)`` pairs: the tokens each running
    sequence holds once the step is done. The largest context that fits is worked out for a
    batch of equal contexts.
    """
    cfg = server.cfg
    groups = tuple(contexts)
    kv, activations, longest = _held(server, groups, new_tokens, logits_rows)
    sequences = sum(n for _, n in groups)
    parts = {"weights": server.weight_bytes, "KV cache": kv, "activations": activations}
    largest = None
    if server.capacity_bytes is not None:
        room = server.capacity_bytes - server.weight_bytes - activations
        largest = int(room // (sequences * server.kv_bytes_per_token)) if room > 0 else 0
        if max_context(cfg) is not None:
            largest = min(largest, max_context(cfg))
    return memory_fit(
        parts,
        server.capacity_bytes,
        device=server.device,
        what=f"{cfg.name or 'the model'} with {sequences} sequence{'' if sequences == 1 else 's'}"
        + (f" of up to {longest:,} tokens" if sequences > 1 else f" of {longest:,} tokens"),
        context_len=longest,
        cfg=cfg,
        largest_context=largest,
    )


def _held(server: Server, contexts, new_tokens: int, logits_rows: int) -> tuple[float, float, int]:
    """Step: (KV bytes held, activation bytes, longest context) of a step over ``contexts`` pairs."""
    cfg, width = server.cfg, server.kv_bytes_per_elem
    table = _kv_table(cfg, width)
    kv, longest = 0, 0
    for c, n in contexts:  # in order: the same float sum as sum() over the pairs
        held = table.get(c)
        kv += n * (_kv_held_of(table, cfg, c, width) if held is None else held)
        if c > longest:
            longest = c
    per_token, per_row = _activation_parts(cfg)
    return kv, new_tokens * per_token + logits_rows * per_row, longest


def _counts(server: Server, groups) -> tuple[int, int, float, float, float]:
    """Step: (new tokens, logits rows, FLOPs, weight bytes read, KV bytes moved) of ``groups``."""
    cfg = server.cfg
    window = cfg.sliding_window
    body, per_key, unembed = _flop_parts(cfg)
    new_tokens = keys = rows = cached = 0  # whole numbers: one pass over the groups (a step's hot loop)
    for c, n in groups:
        new_tokens += c.tokens * n
        if window is None:  # _keys without a window, inline
            keys += (c.tokens * c.offset + c.tokens * (c.tokens + 1) // 2) * n
        else:
            keys += _keys(c.tokens, c.offset, window) * n
        rows += c.logits * n
        cached += (c.offset if window is None else min(c.offset, window - 1)) * n  # + itself
    flops = new_tokens * body + keys * per_key + rows * unembed
    weights = _weights_read(cfg, new_tokens, server.bytes_per_param)
    kv = (cached + new_tokens) * server.kv_bytes_per_token  # read the cache before, write the new tokens
    return new_tokens, rows, flops, weights, kv


def _contexts(groups):
    """The (context once the step is done, sequences) pairs of ``groups``."""
    return tuple((c.offset + c.tokens, n) for c, n in groups)


def _price(server: Server, groups) -> StepTime:
    """Price ``groups``, pairs of (Chunk, how many requests have that chunk), on ``server``'s roof."""
    new_tokens, rows, flops, weights, kv = _counts(server, groups)
    total = weights + kv
    at_roof = server.roof.seconds(flops, total)
    decode = sum(n for c, n in groups if c.tokens == 1)
    fit = server_fit(server, _contexts(groups), new_tokens, rows)
    return StepTime(
        prefill_tokens=new_tokens - decode,
        decode_tokens=decode,
        flops=flops,
        weight_bytes=weights,
        kv_bytes=kv,
        bytes_moved=total,
        intensity=flops / total,
        roof_seconds=at_roof,
        overhead_seconds=server.overhead_seconds,
        seconds=at_roof + server.overhead_seconds,
        bound=server.roof.bound(flops / total),
        roof_label=server.roof.label,
        fit=fit,
    )


def _step_seconds_and_need(server: Server, groups) -> tuple[float, float, bool]:
    """A step's seconds, the bytes it holds and whether it fits, as :func:`_price` and its fit give
    them, without writing the fit out (a simulator prices tens of thousands of steps and keeps one
    fit). ``groups`` are (Chunk, requests) pairs, already checked."""
    new_tokens, rows, flops, weights, kv = _counts(server, groups)
    held, activations, longest = _held(server, _contexts(groups), new_tokens, rows)
    need = sum(b for b in (server.weight_bytes, held, activations) if b)  # as memory_fit adds its parts
    limit = max_context(server.cfg)
    fits = (server.capacity_bytes is None or need <= server.capacity_bytes) and (limit is None or longest <= limit)
    return server.roof.seconds(flops, weights + kv) + server.overhead_seconds, need, fits


def step_time(server: Server, chunks) -> StepTime:
    """Price one step of ``chunks`` (:class:`Chunk`, one per request) on ``server``'s roof."""
    server = _as_server(server)
    chunks = _sequence(chunks, "chunks", "Chunk(tokens, offset, logits)")
    if not chunks or not all(isinstance(c, Chunk) for c in chunks):
        raise ValueError(f"chunks must be one or more Chunk(tokens, offset, logits), got {chunks!r}")
    return _price(server, _grouped(chunks))


def _grouped(chunks) -> tuple:
    """``chunks`` as (Chunk, how many requests have it) pairs, in first-seen order."""
    groups: dict[Chunk, int] = {}
    for c in chunks:
        groups[c] = groups.get(c, 0) + 1
    return tuple(groups.items())


def prefill_step(server: Server, prompt_len, *, batch=1, cached_prefix=0) -> StepTime:
    """``batch`` prompts of ``prompt_len`` tokens in one step; ``cached_prefix`` of each already cached."""
    server = _as_server(server)
    p = _positive_int(prompt_len, "prompt_len", "tokens")
    k = int(_positive(cached_prefix, "cached_prefix", "tokens", allow_zero=True))
    if k >= p:
        raise ValueError(f"cached_prefix must be fewer tokens than prompt_len ({p}), got {cached_prefix!r}")
    return _price(server, ((Chunk(p - k, k), _positive_int(batch, "batch", "sequences")),))


def decode_step(server: Server, batch, context_len) -> StepTime:
    """One decode token for each of ``batch`` sequences, each attending to ``context_len`` keys."""
    server = _as_server(server)
    b = _positive_int(batch, "batch", "sequences")
    c = _positive_int(context_len, "context_len", "tokens")
    return _price(server, ((Chunk(1, c - 1), b),))


def mixed_step(server: Server, decode_contexts, prefill_tokens, prefill_offset=0, *, last=True) -> StepTime:
    """Decodes at ``decode_contexts`` plus one prefill chunk of ``prefill_tokens`` after ``prefill_offset``.

    ``last``: the chunk ends its prompt, so its last row's logits (the first output token) are computed.
    """
    server = _as_server(server)
    contexts = [
        _positive_int(c, "decode_contexts", "tokens")
        for c in _sequence(decode_contexts, "decode_contexts", "context lengths")
    ]
    n = _positive_int(prefill_tokens, "prefill_tokens", "tokens")
    o = int(_positive(prefill_offset, "prefill_offset", "tokens", allow_zero=True))
    logits = 1 if _flag(last, "last") else 0
    counts: dict[int, int] = {}
    for c in contexts:
        counts[c] = counts.get(c, 0) + 1
    groups = [(Chunk(1, c - 1), k) for c, k in counts.items()]
    return _price(server, (*groups, (Chunk(n, o, logits), 1)))


@dataclass(frozen=True)
class RequestTimes:
    """When one request arrived, got its first token and its last. Seconds on one clock.

    TTFT = first_token - arrival (queueing and prefill); TPOT = (finish - first_token) /
    (output_tokens - 1), the mean gap between the later tokens.
    """

    arrival_s: float
    first_token_s: float
    finish_s: float
    output_tokens: int

    def __post_init__(self):
        if not self.arrival_s <= self.first_token_s <= self.finish_s:
            raise ValueError(
                f"times must run arrival <= first token <= finish (seconds), got {self.arrival_s!r}, "
                f"{self.first_token_s!r}, {self.finish_s!r}"
            )
        if _positive_int(self.output_tokens, "output_tokens", "tokens") < 2:
            raise ValueError(f"output_tokens must be at least 2 tokens for a TPOT, got {self.output_tokens!r}")

    @property
    def ttft_s(self) -> float:
        return self.first_token_s - self.arrival_s

    @property
    def tpot_s(self) -> float:
        return (self.finish_s - self.first_token_s) / (self.output_tokens - 1)

    @property
    def latency_s(self) -> float:
        return self.finish_s - self.arrival_s


# --------------------------------------------------------------------------- KV capacity


@dataclass(frozen=True)
class KVCapacity:
    """How many requests' KV caches fit beside the weights. SI units (bytes, tokens).

    ``fit`` is the feasibility rule for one request alone; when even that does not fit (the
    weights leave no room, or the request is longer than the model's context), ``max_requests``
    is 0 and ``feasible`` is False.
    """

    allocation: str  # "paged" or "contiguous"
    kv_bytes_available: float  # capacity - weights (- reserve); 0 when the weights leave none
    kv_bytes_per_token: float
    tokens: int  # KV tokens that fit
    reserved_per_request: int  # tokens one request holds: its length in blocks, or max_seq_len
    used_per_request: int  # prompt + output
    max_requests: int
    waste_fraction: float  # 1 - used / reserved
    fit: Fit

    @property
    def feasible(self) -> bool:
        return self.fit.feasible

    def __str__(self) -> str:
        text = (
            f"{self.max_requests} requests of {self.used_per_request:,} tokens ({self.allocation}, "
            f"{gib(self.kv_bytes_available)} of KV cache, {self.waste_fraction:.0%} of each reservation unused)"
        )
        return self.fit.first(text)


def kv_capacity(
    server: Server,
    prompt_len,
    output_len,
    *,
    allocation="paged",
    block_tokens=16,
    max_seq_len=None,
    reserve_fraction=0.0,
) -> KVCapacity:
    """Concurrent requests of ``prompt_len + output_len`` tokens whose KV caches fit in memory.

    * ``"contiguous"``: each request reserves one slab of ``max_seq_len`` tokens up front (it
      cannot know its output length), as servers did before paging;
    * ``"paged"``: each request holds ``ceil(length / block_tokens)`` blocks of ``block_tokens``
      (vLLM's PagedAttention); the waste is less than one block per request.

    Memory for the cache is the device's capacity, less ``reserve_fraction`` of it (activations,
    the runtime), less the weights. A model that leaves no room, or a request longer than the
    model's context, gives ``max_requests = 0`` marked infeasible (:class:`KVCapacity`). A
    server with no known capacity is refused: there is nothing to size.
    """
    server = _as_server(server)
    kind = _text(allocation, "allocation", "'paged' or 'contiguous'")
    if kind not in ("paged", "contiguous"):
        raise ValueError(f"allocation must be 'paged' or 'contiguous', got {allocation!r}")
    if server.capacity_bytes is None:
        raise ValueError(f"{server.name} has no memory capacity on record: pass a registry GPU to size its KV cache")
    used = _positive_int(prompt_len, "prompt_len", "tokens") + _positive_int(output_len, "output_len", "tokens")
    reserve = _fraction(reserve_fraction, "reserve_fraction", allow_zero=True)
    if kind == "paged":
        block = _positive_int(block_tokens, "block_tokens", "tokens")
        reserved = math.ceil(used / block) * block
    else:
        if max_seq_len is None:
            raise ValueError(
                "max_seq_len (tokens) is needed for contiguous allocation: it is what each request reserves"
            )
        reserved = _positive_int(max_seq_len, "max_seq_len", "tokens")
        if reserved < used:
            raise ValueError(f"max_seq_len must hold prompt + output ({used} tokens), got {max_seq_len!r}")
    usable = server.capacity_bytes * (1 - reserve)
    available = max(0.0, usable - server.weight_bytes)
    fit = memory_fit(
        {"weights": server.weight_bytes, "KV cache": reserved * server.kv_bytes_per_token},
        usable,
        device=server.device if reserve == 0 else f"{server.device} (less its {reserve:.0%} reserve)",
        what=f"{server.cfg.name or 'the model'} with one request of {used:,} tokens",
        context_len=used,
        cfg=server.cfg,
        largest_context=int(available // server.kv_bytes_per_token),
    )
    tokens = int(available // server.kv_bytes_per_token) if fit.feasible else 0
    return KVCapacity(
        kind,
        available,
        server.kv_bytes_per_token,
        tokens,
        reserved,
        used,
        tokens // reserved,
        1 - used / reserved,
        fit,
    )


# --------------------------------------------------------------------------- speculative decoding


def expected_tokens_per_step(alpha, gamma) -> float:
    """Tokens one verification step yields: ``(1 - alpha**(gamma + 1)) / (1 - alpha)``.

    Leviathan et al.: each of ``gamma`` drafted tokens is accepted with probability ``alpha``
    (independently), acceptance stops at the first rejection, and the target always adds one
    token of its own. ``alpha = 0`` gives 1 (no gain); ``alpha -> 1`` gives ``gamma + 1``.
    """
    a = _positive(alpha, "alpha", "acceptance probability (0 to 1)", allow_zero=True)
    if a > 1:
        raise ValueError(f"alpha must be an acceptance probability from 0 to 1, got {alpha!r}")
    g = _positive_int(gamma, "gamma", "draft tokens")
    if a == 1:
        return float(g + 1)
    return (1 - a ** (g + 1)) / (1 - a)


def speculative_speedup(alpha, gamma, draft_cost) -> float:
    """Leviathan et al.'s expected walltime improvement: ``E / (gamma * draft_cost + 1)``.

    ``E`` is :func:`expected_tokens_per_step`; ``draft_cost`` is the time of one draft step over
    one target step (their ``c``), and the target's check of ``gamma + 1`` tokens is assumed to
    cost one target step, which holds while decode is memory-bound. :func:`speculative_decoding`
    prices both sides on a roof instead, and finds where that assumption breaks.
    """
    c = _positive(draft_cost, "draft_cost", "draft steps per target step", allow_zero=True)
    return expected_tokens_per_step(alpha, gamma) / (_positive_int(gamma, "gamma", "draft tokens") * c + 1)


@dataclass(frozen=True)
class SpeculativeDecoding:
    """One speculative step against plain decode, at one batch and context. Seconds."""

    alpha: float
    gamma: int
    batch: int
    expected_tokens: float  # per sequence per step
    draft_seconds: float  # gamma draft decode steps
    verify_seconds: float  # the target on gamma + 1 tokens per sequence
    plain_seconds: float  # one target decode step
    verify_bound: str
    plain_bound: str
    speedup: float  # tokens/s speculative over tokens/s plain; below 1 it loses
    fit: Fit  # target and draft together on the target's device

    @property
    def feasible(self) -> bool:
        return self.fit.feasible

    def __str__(self) -> str:
        text = (
            f"speculative decoding, alpha {self.alpha:g}, gamma {self.gamma}, batch {self.batch}: "
            f"{self.expected_tokens:.3g} tokens per check, speed-up {self.speedup:.3g}x "
            f"(check {self.verify_bound}-bound, plain step {self.plain_bound}-bound)"
        )
        return self.fit.first(text)


def speculative_decoding(target: Server, draft: Server, batch, context_len, alpha, gamma) -> SpeculativeDecoding:
    """Expected speed-up of speculative decoding with ``draft`` proposing ``gamma`` tokens for ``target``.

    A step runs ``gamma`` draft decode steps, then one target step that checks ``gamma + 1``
    tokens per sequence (logits for each). While decode is memory-bound the check costs about
    one decode step, and the step yields :func:`expected_tokens_per_step` tokens; at a large
    batch the check is compute-bound, costs about ``gamma + 1`` decode steps, and speculation
    loses.

    Feasibility: the draft runs beside the target on the target's device, so both models'
    weights and KV caches (the target's at ``context_len + gamma`` tokens) must fit there, and the
    context must be within both models' reach.
    """
    target, draft = _as_server(target, "target"), _as_server(draft, "draft")
    b = _positive_int(batch, "batch", "sequences")
    c = _positive_int(context_len, "context_len", "tokens")
    g = _positive_int(gamma, "gamma", "draft tokens")
    tokens = expected_tokens_per_step(alpha, g)
    draft_step = decode_step(draft, b, c)
    drafting = g * draft_step.seconds
    verify = _price(target, ((Chunk(g + 1, c - 1, g + 1), b),))
    plain = decode_step(target, b, c)
    speedup = tokens * plain.seconds / (drafting + verify.seconds)
    return SpeculativeDecoding(
        float(alpha),
        g,
        b,
        tokens,
        drafting,
        verify.seconds,
        plain.seconds,
        verify.bound,
        plain.bound,
        speedup,
        _pair_fit(target, draft, verify.fit, draft_step.fit),
    )


def _pair_fit(target: Server, draft: Server, target_fit: Fit, draft_fit: Fit) -> Fit:
    """The target's step and the draft's side by side on the target's device: one :class:`Fit`."""
    parts = {f"target {name}": b for name, b in target_fit.parts}
    parts |= {f"draft {name}": b for name, b in draft_fit.parts if name != "activations"}
    fit = memory_fit(
        parts,
        target.capacity_bytes,
        device=target.device,
        what=f"{target.cfg.name or 'the target'} with its draft {draft.cfg.name or 'model'}",
        context_len=target_fit.context_len,
        cfg=target.cfg,
    )
    draft_context = None if draft_fit.context_len is None else context_problem(draft.cfg, draft_fit.context_len)
    if draft_context and fit.feasible:
        return dataclasses.replace(fit, feasible=False, reason=f"the draft: {draft_context}")
    return fit


# --------------------------------------------------------------------------- prefix caching


@dataclass(frozen=True)
class PrefixSavings:
    """Prefill with and without a cached prefix. FLOPs and seconds."""

    prompt_len: int
    cached_prefix: int
    flops_full: float
    flops_cached: float
    seconds_full: float
    seconds_cached: float
    fit: Fit  # the full prompt's prefill on the server

    @property
    def feasible(self) -> bool:
        return self.fit.feasible

    @property
    def flops_saved(self) -> float:
        return self.flops_full - self.flops_cached

    @property
    def fraction_saved(self) -> float:
        return self.flops_saved / self.flops_full


def prefix_cache_savings(server: Server, prompt_len, cached_prefix) -> PrefixSavings:
    """What a cached prefix of ``cached_prefix`` tokens (a shared system prompt) saves one prefill.

    The cached tokens are neither multiplied by the weights nor attended from; the new tokens
    still attend to them, so the saving is a little less than the cached share of the prompt.
    """
    server = _as_server(server)
    full = prefill_step(server, prompt_len)
    cached = prefill_step(server, prompt_len, cached_prefix=cached_prefix)
    return PrefixSavings(
        int(prompt_len), int(cached_prefix), full.flops, cached.flops, full.seconds, cached.seconds, full.fit
    )


# --------------------------------------------------------------------------- steady state


@dataclass(frozen=True)
class SteadyState:
    """One batch size held in steady state under a policy: the closed form the explorers draw. SI units.

    ``tokens_per_s`` counts output tokens per second per device (disaggregated serving uses two).
    ``sustainable`` is False where the prefill cannot keep up with the decodes it feeds.
    """

    policy: str
    batch: int
    tpot_s: float
    ttft_s: float
    tokens_per_s: float
    decode_bound: str
    devices: int
    sustainable: bool
    fit: Fit  # every request at its full length, beside the weights and the largest step's activations

    @property
    def feasible(self) -> bool:
        return self.fit.feasible

    def __str__(self) -> str:
        text = (
            f"{self.policy}, batch {self.batch}: TTFT {seconds_text(self.ttft_s)}, TPOT {seconds_text(self.tpot_s)}, "
            f"{self.tokens_per_s:,.0f} tokens/s per device{'' if self.sustainable else ' (not sustainable)'}"
        )
        return self.fit.first(text)


def steady_state(
    server: Server, policy, batch, prompt_len, output_len, *, chunk_tokens=None, transfer_seconds=0.0
) -> SteadyState:
    """``batch`` requests always in flight, each of ``prompt_len`` + ``output_len`` tokens, no queue.

    Decode steps run at the mean context ``C = prompt_len + output_len // 2``; each step
    finishes ``batch / output_len`` requests, so as many new prompts must be prefilled per step:

    * ``static``: a batch is prefilled together, then decodes ``output_len - 1`` steps; a new
      request waits on average half of that round. TPOT = decode step; TTFT = prefill + half a round.
    * ``continuous`` (prefills first, as vLLM's first scheduler): each decode step also pays
      for ``batch / output_len`` prefills in steps of their own: TPOT = decode + that share;
      TTFT = one prefill.
    * ``chunked`` (Sarathi-Serve): one step of ``chunk_tokens`` carries the decodes and the
      prefill tokens needed (``batch * prompt_len / output_len``) in one mixed step; TTFT =
      ``ceil(prompt_len / (chunk_tokens - batch))`` such steps. Unsustainable when the budget
      left after the decodes is smaller than the prefill needed.
    * ``disaggregated``: one device decodes, another prefills; TPOT = decode step; throughput
      = the slower of the two, per device; TTFT = prefill (the first token comes from the
      prefill device); ``transfer_seconds`` of KV transfer delay the second token.

    Feasibility (``fit``): ``batch`` requests at their full length, ``prompt_len + output_len``
    tokens each, must fit beside the weights and the largest step's activations.
    """
    server = _as_server(server)
    kind = _text(policy, "policy", "a batching policy")
    if kind not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    b = _positive_int(batch, "batch", "sequences")
    p = _positive_int(prompt_len, "prompt_len", "tokens")
    o = _positive_int(output_len, "output_len", "tokens")
    transfer = _positive(transfer_seconds, "transfer_seconds", "seconds", allow_zero=True)
    context = p + o // 2
    decode = decode_step(server, b, context)
    prefill = prefill_step(server, p)
    devices, sustainable = 1, True
    largest_step = {"static": b * p, "chunked": chunk_tokens or p}.get(kind, p)
    if kind == "static":
        batch_prefill = prefill_step(server, p, batch=b).seconds
        round_s = batch_prefill + (o - 1) * decode.seconds
        tpot, ttft, tps = decode.seconds, batch_prefill + round_s / 2, b * o / round_s
    elif kind == "continuous":
        tpot = decode.seconds + b / o * prefill.seconds
        ttft, tps = prefill.seconds, b / tpot
    elif kind == "chunked":
        budget = _positive_int(chunk_tokens, "chunk_tokens", "tokens") if chunk_tokens is not None else None
        if budget is None:
            raise ValueError("chunk_tokens (tokens per step) is needed for the chunked policy")
        room = budget - b
        needed = max(1, math.ceil(b * p / o))
        sustainable = room >= needed
        step = _price(server, ((Chunk(1, context - 1), b), (Chunk(min(needed, max(room, 1)), p // 2, 0), 1)))
        tpot, tps = step.seconds, b / step.seconds
        ttft = math.ceil(p / max(room, 1)) * step.seconds
    else:
        devices = 2
        tpot = decode.seconds + transfer / max(o - 1, 1)  # the transfer delays the second token
        requests_per_s = min(b / (o * decode.seconds), 1 / prefill.seconds)
        sustainable = 1 / prefill.seconds >= b / (o * decode.seconds)
        ttft, tps = prefill.seconds, requests_per_s * o / devices
    fit = server_fit(server, ((p + o, b),), int(largest_step), 1)
    return SteadyState(kind, b, tpot, ttft, tps, decode.bound, devices, sustainable, fit)


#: The largest batch a steady-state frontier tries: a server's cap on running sequences (vLLM's
#: ``max_num_seqs`` is 256 by default; 1,024 leaves room for a small model on a large card).
FRONTIER_MAX_BATCH = 1024


def frontier_batches(server: Server, prompt_len, output_len, *, block_tokens=16) -> range:
    """The batches a steady-state frontier tries: every whole batch, 1, 2, 3, ..., up to what the paged
    KV cache holds (:func:`kv_capacity`), and at most :data:`FRONTIER_MAX_BATCH`.

    Empty when not one request fits; every batch to the cap where the capacity is unknown.
    """
    server = _as_server(server)
    if server.capacity_bytes is None:
        return range(1, FRONTIER_MAX_BATCH + 1)
    cap = kv_capacity(server, prompt_len, output_len, block_tokens=block_tokens)
    return range(1, min(cap.max_requests, FRONTIER_MAX_BATCH) + 1)


def steady_frontier(server: Server, policy, prompt_len, output_len, *, chunk_tokens=None, block_tokens=16):
    """:func:`steady_state` at every batch of :func:`frontier_batches`: 1, 2, 3, ... up to what the KV cache
    holds (at most :data:`FRONTIER_MAX_BATCH`).

    The frontier ends where memory does. A server on which not one request fits gives an empty
    frontier; :func:`best_steady_state` then says why.
    """
    server = _as_server(server)
    return tuple(
        steady_state(server, policy, b, prompt_len, output_len, chunk_tokens=chunk_tokens)
        for b in frontier_batches(server, prompt_len, output_len, block_tokens=block_tokens)
    )


def best_steady_state(points, ttft_s, tpot_s) -> SteadyState:
    """The highest-throughput feasible, sustainable point with TTFT <= ``ttft_s`` and TPOT <= ``tpot_s`` (seconds).

    Points marked infeasible are never chosen; when every point is, the error says why.
    """
    ttft = _positive(ttft_s, "ttft_s", "seconds")
    tpot = _positive(tpot_s, "tpot_s", "seconds")
    points = tuple(points)
    if not points:
        raise ValueError("points is empty: not one request fits on the server (see kv_capacity(...).fit)")
    feasible = [p for p in points if p.feasible]
    if not feasible:
        raise ValueError(f"no point can run: {points[0].fit.headline}")
    ok = [p for p in feasible if p.sustainable and p.ttft_s <= ttft and p.tpot_s <= tpot]
    if not ok:
        raise ValueError(
            f"no batch meets the SLO (TTFT <= {to_unit(ttft, 'ms'):.4g} ms, TPOT <= {to_unit(tpot, 'ms'):.4g} ms): loosen it, "
            "or change the policy, the GPU or the model"
        )
    return max(ok, key=lambda p: p.tokens_per_s)


@dataclass(frozen=True)
class StepCounts:
    """The per-token counts :func:`step_time` adds up, for a dense model (the website explorer's input).

    A step of ``T`` new tokens reads ``weight_bytes_fixed + T * weight_bytes_per_token`` of weights;
    its FLOPs are ``T * body_flops_per_token + keys * score_flops_per_key + rows * unembed_flops_per_row``.
    """

    body_flops_per_token: float
    score_flops_per_key: float
    unembed_flops_per_row: float
    weight_bytes_fixed: float
    weight_bytes_per_token: float
    kv_bytes_per_token: float
    stored_weight_bytes: float
    # what the feasibility rule (server_fit) adds up: a step's activations, per new token and per
    # logits row, and the model's longest context (0: none on record)
    activation_bytes_per_token: float = 0.0
    activation_bytes_per_row: float = 0.0
    max_context_tokens: int = 0


def step_counts(server: Server) -> StepCounts:
    """:class:`StepCounts` of ``server``; refuses a mixture of experts or a sliding window (not linear)."""
    cfg = _as_server(server).cfg
    if cfg.is_moe or cfg.sliding_window is not None:
        raise ValueError(
            f"{cfg.name or 'this model'} has experts or a sliding window: its step is not linear in the tokens; "
            "use step_time"
        )
    body, per_key, unembed = _flop_parts(cfg)
    one, two = _weights_read(cfg, 1, server.bytes_per_param), _weights_read(cfg, 2, server.bytes_per_param)
    per_token, per_row = _activation_parts(cfg)
    return StepCounts(
        body,
        per_key,
        unembed,
        2 * one - two,
        two - one,
        server.kv_bytes_per_token,
        server.weight_bytes,
        per_token,
        per_row,
        max_context(cfg) or 0,
    )
