"""A discrete-event model of an inference server: requests arrive, a policy batches them into steps.

This is a *model*, small on purpose. Time advances one step at a time; a step's duration comes
from an executor: :func:`~roofline_lib.workloads.serving.step_time` on a roof for :func:`simulate`, or a
stopwatch around a real forward pass for :mod:`roofline_lib.evidence.serving_live`. Both run the same
scheduler, so the live run and the model see the same batches. Requests carry a prompt length
and an output length (known to the model, not to the policy, which never looks at it except
to size a paged KV reservation).

Policies (``policy=``):

* ``"static"``: when the server is idle it takes up to ``max_batch`` waiting requests, prefills
  them in one step and decodes them until the longest is done; later arrivals wait for the
  whole batch.
* ``"continuous"``: iteration-level scheduling (Orca): requests join and leave the running set
  between steps, up to ``max_batch``. A step with a new request is a prefill-only step that
  holds every new prompt (prefills first, as vLLM's original scheduler), and the running
  decodes wait for it.
* ``"chunked"``: continuous batching with chunked prefill (Sarathi-Serve): every step carries
  all running decodes plus prefill chunks of waiting prompts up to ``chunk_tokens`` tokens.
* ``"disaggregated"`` (:func:`simulate_disaggregated`): one server prefills, another decodes;
  the KV cache of each prompt crosses a link priced by the alpha-beta model
  (:func:`~roofline_lib.workloads.comms.collective_cost`, point to point).

KV memory limits admission: with ``kv_capacity_tokens`` set, a request is admitted only if its
reservation fits (paged: its final length rounded up to ``block_tokens``; contiguous:
``max_seq_len`` tokens). Not modelled: preemption and swapping, prefix sharing between running
requests, tensor or pipeline parallelism, sampling and detokenisation time, network latency to
the client.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..core.checks import _positive, _positive_int, _text
from ..core.formatting import seconds, to_unit
from .comms import collective_cost
from .feasibility import Fit
from .serving import (
    POLICIES,
    Chunk,
    RequestTimes,
    Server,
    _as_server,
    _grouped,
    _price,
    _step_seconds_and_need,
)

__all__ = [
    "Request",
    "poisson_trace",
    "ServingRun",
    "run_policy",
    "simulate",
    "simulate_disaggregated",
    "SLO",
    "FrontierPoint",
    "frontier",
    "best_under_slo",
    "RateSearch",
    "best_rate_under_slo",
]


@dataclass(frozen=True)
class Request:
    """One request: arrival time (s), prompt and output lengths (tokens), tokens of its prompt already cached."""

    id: int
    arrival_s: float
    prompt_len: int
    output_len: int
    cached_prefix: int = 0

    def __post_init__(self):
        _positive(self.arrival_s, "arrival_s", "seconds", allow_zero=True)
        _positive_int(self.prompt_len, "prompt_len", "tokens")
        if _positive_int(self.output_len, "output_len", "tokens") < 2:
            raise ValueError(f"output_len must be at least 2 tokens (a TPOT needs two), got {self.output_len!r}")
        if not 0 <= self.cached_prefix < self.prompt_len:
            raise ValueError(f"cached_prefix must be 0 to prompt_len - 1 tokens, got {self.cached_prefix!r}")


def _lengths(spec, name: str, n: int, rng) -> np.ndarray:
    if isinstance(spec, tuple) and len(spec) == 2:
        lo, hi = (_positive_int(v, name, "tokens") for v in spec)
        if hi < lo:
            raise ValueError(f"{name} must be (low, high) tokens with low <= high, got {spec!r}")
        return rng.integers(lo, hi + 1, size=n)
    return np.full(n, _positive_int(spec, name, "tokens"))


def poisson_trace(n_requests, rate_per_s, prompt_len, output_len, *, seed) -> tuple[Request, ...]:
    """``n_requests`` with Poisson arrivals at ``rate_per_s``, lengths fixed or uniform in (low, high).

    The same ``seed`` gives the same trace; the first request arrives at 0.
    """
    n = _positive_int(n_requests, "n_requests", "requests")
    rate = _positive(rate_per_s, "rate_per_s", "requests per second")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be a whole number, got {seed!r}")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, size=n)
    arrivals = np.concatenate([[0.0], np.cumsum(gaps[1:])])
    prompts = _lengths(prompt_len, "prompt_len", n, rng)
    outputs = _lengths(output_len, "output_len", n, rng)
    return tuple(Request(i, float(arrivals[i]), int(prompts[i]), int(outputs[i])) for i in range(n))


class _State:
    __slots__ = ("req", "done", "decoding", "generated", "first", "finish", "reserved", "last")

    def __init__(self, req: Request, prefilled: bool, last: float | None = None):
        self.req = req
        self.done = req.prompt_len if prefilled else req.cached_prefix  # prompt tokens in the cache
        self.decoding = self.done == req.prompt_len  # the whole prompt is cached; kept by prefilled()
        self.generated = 1 if prefilled else 0
        self.first = None
        self.finish = None
        self.reserved = 0
        self.last = last  # when its latest token came out (a prefilled request: its first token's time)

    def prefilled(self, tokens: int) -> bool:
        """``tokens`` more of the prompt are cached; whether the whole prompt now is."""
        self.done += tokens
        self.decoding = self.done == self.req.prompt_len
        return self.decoding


@dataclass(frozen=True)
class ServingRun:
    """Every request's times under one policy, and the summaries a service is judged on. Seconds."""

    policy: str
    times: tuple[RequestTimes, ...]
    steps: int
    busy_s: float  # time the server spent in steps
    devices: int = 1
    gaps_s: tuple[float, ...] = ()  # every wait between two consecutive tokens of a request, seconds
    fit: Fit | None = None  # the step that held the most memory, or the first that could not run; None: not priced

    @property
    def feasible(self) -> bool:
        """False when some step of the run could not run on its device (:mod:`~roofline_lib.workloads.feasibility`)."""
        return self.fit is None or self.fit.feasible

    def _pct(self, values, q) -> float:
        return float(np.percentile(values, _positive(q, "q", "percent")))

    def ttft(self, q=50) -> float:
        """The ``q``-th percentile TTFT (numpy's linear interpolation), seconds."""
        return self._pct([t.ttft_s for t in self.times], q)

    def tpot(self, q=50) -> float:
        """The ``q``-th percentile TPOT, seconds."""
        return self._pct([t.tpot_s for t in self.times], q)

    def tbt(self, q=99) -> float:
        """The ``q``-th percentile time between tokens, over every token after a first, seconds.

        TPOT is a request's *mean* gap; a prefill that stalls the running decodes for one long
        step hardly moves it, but shows here (Sarathi-Serve's P99 TBT).
        """
        if not self.gaps_s:
            raise ValueError("this run recorded no gaps between tokens")
        return self._pct(self.gaps_s, q)

    @property
    def makespan_s(self) -> float:
        return max(t.finish_s for t in self.times) - min(t.arrival_s for t in self.times)

    @property
    def output_tokens(self) -> int:
        return sum(t.output_tokens for t in self.times)

    @property
    def tokens_per_s(self) -> float:
        """Output tokens per second per device, first arrival to last finish."""
        return self.output_tokens / self.makespan_s / self.devices

    def goodput(self, slo: "SLO") -> float:
        """Requests per second per device that met both parts of ``slo``."""
        good = sum(1 for t in self.times if t.ttft_s <= slo.ttft_s and t.tpot_s <= slo.tpot_s)
        return good / self.makespan_s / self.devices

    def __str__(self) -> str:
        text = (
            f"{self.policy}: {len(self.times)} requests, {self.tokens_per_s:,.0f} tok/s; TTFT p50 "
            f"{seconds(self.ttft(50))}, p99 {seconds(self.ttft(99))}; "
            f"TPOT p50 {seconds(self.tpot(50))}, p99 {seconds(self.tpot(99))}"
        )
        return text if self.fit is None else self.fit.first(text)


_DECODES: dict[int, Chunk] = {}  # offset -> Chunk(1, offset): one object per offset, not one per token


def _decode_chunk(offset: int) -> Chunk:
    """``Chunk(1, offset)``, made once per offset (a run plans one per running request per step)."""
    chunk = _DECODES.get(offset)
    if chunk is None:
        if len(_DECODES) >= 1 << 16:
            _DECODES.clear()
        chunk = _DECODES[offset] = Chunk(1, offset)
    return chunk


def _plan(policy, running, budget):
    """The (state, Chunk) pairs of the next step under ``policy``."""
    work, new = [], []
    for s in running:  # one pass: a run plans tens of thousands of steps
        if s.decoding:
            work.append((s, _decode_chunk(s.req.prompt_len + s.generated - 1)))
        else:
            new.append(s)
    if policy in ("static", "continuous") and new:
        return [(s, Chunk(s.req.prompt_len - s.done, s.done, 1)) for s in new]
    if policy == "chunked":
        room = budget - len(work)
        for s in new:
            if room <= 0:
                break
            take = min(room, s.req.prompt_len - s.done)
            work.append((s, Chunk(take, s.done, 1 if s.done + take == s.req.prompt_len else 0)))
            room -= take
    return work


def run_policy(
    trace,
    execute: Callable[[list], float],
    policy,
    *,
    max_batch,
    chunk_tokens=None,
    kv_capacity_tokens=None,
    allocation="paged",
    block_tokens=16,
    max_seq_len=None,
    prefilled=False,
    first_token_s=None,
) -> ServingRun:
    """Serve ``trace`` under ``policy``; ``execute(work)`` runs one step and returns its seconds.

    ``work`` is a list of ``(request, Chunk)`` pairs. ``prefilled`` starts every request with
    its prompt cached and first token out (a decode server fed by a prefill server);
    ``first_token_s`` (request id -> seconds) says when that first token came out, so that the
    gap to the second token counts the transfer and the wait (default: the request's arrival).
    """
    kind = _text(policy, "policy", "a batching policy")
    finished, steps, busy, gaps = _serve(
        trace,
        execute,
        kind,
        max_batch=max_batch,
        chunk_tokens=chunk_tokens,
        kv_capacity_tokens=kv_capacity_tokens,
        allocation=allocation,
        block_tokens=block_tokens,
        max_seq_len=max_seq_len,
        prefilled=prefilled,
        first_token_s=first_token_s,
    )
    times = tuple(
        RequestTimes(s.req.arrival_s, s.first if s.first is not None else s.req.arrival_s, s.finish, s.req.output_len)
        for s in finished
    )
    return ServingRun(kind, times, steps, busy, gaps_s=tuple(gaps))


class _KVCache:
    """KV memory admission: what each request reserves, and how much is reserved now.

    ``capacity`` None: no limit, and every request reserves nothing. Paged: the request's final
    length rounded up to ``block`` tokens; contiguous: a ``slab`` of ``max_seq_len`` tokens.
    """

    def __init__(self, capacity: int | None, slab: int | None, block: int):
        self.capacity, self.slab, self.block, self.used = capacity, slab, block, 0

    def reservation(self, r: Request) -> int:
        if self.capacity is None:
            return 0
        if self.slab is not None:
            if r.prompt_len + r.output_len > self.slab:
                raise ValueError(
                    f"request {r.id} needs {r.prompt_len + r.output_len} tokens, over max_seq_len {self.slab}"
                )
            return self.slab
        return math.ceil((r.prompt_len + r.output_len) / self.block) * self.block

    def check_fits(self, reqs) -> None:
        """Refuse a request that could never be admitted, even alone."""
        if self.capacity is None:
            return
        for r in reqs:
            if self.reservation(r) > self.capacity:
                raise ValueError(
                    f"request {r.id} reserves {self.reservation(r)} KV tokens, over kv_capacity_tokens {self.capacity}"
                )

    def admits(self, need: int) -> bool:
        return self.capacity is None or self.used + need <= self.capacity


def _limits(kind, max_batch, chunk_tokens, kv_capacity_tokens, allocation, block_tokens, max_seq_len):
    """(most requests running, prefill tokens per chunked step or None, the KV cache), checked."""
    if kind not in POLICIES[:3]:
        raise ValueError(
            f"policy must be one of {', '.join(POLICIES[:3])} (disaggregated: simulate_disaggregated), got {kind!r}"
        )
    cap = _positive_int(max_batch, "max_batch", "requests")
    budget = None
    if kind == "chunked":
        if chunk_tokens is None:
            raise ValueError("chunk_tokens (tokens per step) is needed for the chunked policy")
        budget = _positive_int(chunk_tokens, "chunk_tokens", "tokens")
    if allocation not in ("paged", "contiguous"):
        raise ValueError(f"allocation must be 'paged' or 'contiguous', got {allocation!r}")
    block = _positive_int(block_tokens, "block_tokens", "tokens")
    kv_cap = None if kv_capacity_tokens is None else _positive_int(kv_capacity_tokens, "kv_capacity_tokens", "tokens")
    slab = None
    if allocation == "contiguous" and kv_cap is not None:
        if max_seq_len is None:
            raise ValueError(
                "max_seq_len (tokens) is needed for contiguous allocation: it is what each request reserves"
            )
        slab = _positive_int(max_seq_len, "max_seq_len", "tokens")
    return cap, budget, _KVCache(kv_cap, slab, block)


def _admit(waiting: deque, running: list, cap: int, kv: _KVCache) -> None:
    """Move waiting requests into the running set, first come first served, while slots and KV last."""
    while waiting and len(running) < cap:
        need = kv.reservation(waiting[0].req)
        if not kv.admits(need):
            break
        s = waiting.popleft()
        s.reserved, kv.used = need, kv.used + need
        running.append(s)


def _advance(work, t: float, gaps: list, first_token_only: bool) -> list:
    """Account one step that ended at ``t``: tokens generated, prompt chunks done; the requests it finished."""
    done = []
    for s, chunk in work:
        if s.decoding:
            s.generated += 1
            gaps.append(t - s.last)
            s.last = t
        elif s.prefilled(chunk.tokens):
            s.generated, s.first, s.last = 1, t, t
        if s.generated >= s.req.output_len or (first_token_only and s.generated == 1):
            s.finish = t
            done.append(s)
    return done


def _serve(
    trace,
    execute,
    kind,
    *,
    max_batch,
    chunk_tokens=None,
    kv_capacity_tokens=None,
    allocation="paged",
    block_tokens=16,
    max_seq_len=None,
    prefilled=False,
    first_token_only=False,
    first_token_s=None,
):
    """The event loop: (finished request states by id, steps, busy seconds, gaps between tokens)."""
    cap, budget, kv = _limits(kind, max_batch, chunk_tokens, kv_capacity_tokens, allocation, block_tokens, max_seq_len)
    reqs = sorted(trace, key=lambda r: (r.arrival_s, r.id))
    if not reqs or not all(isinstance(r, Request) for r in reqs):
        raise ValueError("trace must hold one or more Request (rl.poisson_trace(...))")
    kv.check_fits(reqs)
    firsts = first_token_s or {}
    pending = deque(_State(r, prefilled, firsts.get(r.id, r.arrival_s) if prefilled else None) for r in reqs)
    gaps: list[float] = []
    waiting: deque[_State] = deque()
    running: list[_State] = []
    finished: list[_State] = []
    t, steps, busy = 0.0, 0, 0.0
    while pending or waiting or running:
        while pending and pending[0].req.arrival_s <= t:
            waiting.append(pending.popleft())
        if kind != "static" or not running:
            _admit(waiting, running, cap, kv)
        work = _plan(kind, running, budget) if running else []
        if not work:
            t = max(t, pending[0].req.arrival_s)  # idle until the next arrival
            continue
        seconds = _positive(execute(work), "step seconds", "seconds")
        t, steps, busy = t + seconds, steps + 1, busy + seconds
        for s in _advance(work, t, gaps, first_token_only):
            running.remove(s)
            kv.used -= s.reserved
            finished.append(s)
    finished.sort(key=lambda s: s.req.id)
    return finished, steps, busy, gaps


class _PricedSteps:
    """An executor that prices each step with step_time on one server and keeps the fit that matters.

    That is the first step that could not run, else the step that held the most memory.
    """

    def __init__(self, server: Server):
        self.server, self.fit = server, None

    def __call__(self, work) -> float:
        groups = _grouped([c for _, c in work])
        seconds, need, fits = _step_seconds_and_need(self.server, groups)
        kept = self.fit
        if kept is None or (kept.feasible and (not fits or need > kept.need_bytes)):
            self.fit = _price(self.server, groups).fit  # written out only for the step it keeps
        return seconds


def _worse(a: Fit | None, b: Fit | None) -> Fit | None:
    """Of two fits, the one a run reports: an infeasible one first, else the larger need."""
    if a is None or b is None:
        return a or b
    if a.feasible != b.feasible:
        return b if a.feasible else a
    return a if a.need_bytes >= b.need_bytes else b


def simulate(trace, server: Server, policy, **policy_options) -> ServingRun:
    """:func:`run_policy` with each step priced by :func:`~roofline_lib.workloads.serving.step_time` on ``server``.

    The run keeps the feasibility of its steps (:attr:`ServingRun.fit`): a run in which some step
    does not fit on the server, or reaches past the model's context, is marked infeasible.
    """
    server = _as_server(server)
    priced = _PricedSteps(server)
    run = run_policy(trace, priced, policy, **policy_options)
    return dataclasses.replace(run, fit=priced.fit)


def simulate_disaggregated(
    trace, prefill_server: Server, decode_server: Server, link, *, alpha_seconds=0.0, max_batch, prefill_batch=8
) -> ServingRun:
    """Prefill on one server, decode on another, the KV cache sent between them over ``link``.

    The prefill server runs prefill-only steps (up to ``prefill_batch`` prompts each) and emits
    each first token; each prompt's KV cache (``prompt_len * kv_bytes_per_token`` bytes) then
    crosses ``link`` (a registry link or bytes/s) as one point-to-point message; the decode
    server runs continuous batching on requests that arrive already prefilled. Throughput is
    per device (two of them).
    """
    reqs = tuple(trace)
    prefill_priced, decode_priced = _PricedSteps(_as_server(prefill_server)), _PricedSteps(_as_server(decode_server))
    pre, _, _, _ = _serve(
        reqs,
        prefill_priced,
        "continuous",
        max_batch=prefill_batch,
        first_token_only=True,
    )
    arrivals, first = [], {}
    for s in pre:
        kv_bytes = s.req.prompt_len * prefill_server.kv_bytes_per_token
        sent = collective_cost("point_to_point", kv_bytes, 2, alpha_seconds, link).seconds
        first[s.req.id] = s.finish
        arrivals.append(Request(s.req.id, s.finish + sent, s.req.prompt_len, s.req.output_len))
    dec = run_policy(
        arrivals,
        decode_priced,
        "continuous",
        max_batch=max_batch,
        prefilled=True,
        first_token_s=first,
    )
    by_id = {r.id: r for r in reqs}
    times = tuple(
        RequestTimes(by_id[i].arrival_s, first[i], t.finish_s, by_id[i].output_len)
        for i, t in zip(sorted(first), dec.times)
    )
    fit = _worse(prefill_priced.fit, decode_priced.fit)
    return ServingRun("disaggregated", times, dec.steps, dec.busy_s, devices=2, gaps_s=dec.gaps_s, fit=fit)


@dataclass(frozen=True)
class SLO:
    """A service-level objective: p99 TTFT and p99 TPOT ceilings, seconds."""

    ttft_s: float
    tpot_s: float

    def __post_init__(self):
        _positive(self.ttft_s, "ttft_s", "seconds")
        _positive(self.tpot_s, "tpot_s", "seconds")

    def met_by(self, run: ServingRun) -> bool:
        """Both p99s within the objective, on a run that can run at all."""
        return run.feasible and run.ttft(99) <= self.ttft_s and run.tpot(99) <= self.tpot_s


@dataclass(frozen=True)
class FrontierPoint:
    """One arrival rate: what the server delivered and how long requests waited. SI units."""

    rate_per_s: float
    tokens_per_s: float  # per device
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    run: ServingRun


def frontier(server: Server, policy, rates, *, n_requests, prompt_len, output_len, seed, **options):
    """Throughput against p50/p99 TTFT and TPOT, one :class:`FrontierPoint` per arrival rate.

    Every rate serves a trace from the same ``seed``. ``policy="disaggregated"`` takes
    ``decode_server`` and ``link`` (and optionally ``alpha_seconds``, ``prefill_batch``) in
    ``options``; the server is the prefill one.
    """
    points = []
    for rate in rates:
        trace = poisson_trace(n_requests, rate, prompt_len, output_len, seed=seed)
        if policy == "disaggregated":
            opts = dict(options)
            run = simulate_disaggregated(trace, server, opts.pop("decode_server"), opts.pop("link"), **opts)
        else:
            run = simulate(trace, server, policy, **options)
        points.append(
            FrontierPoint(float(rate), run.tokens_per_s, run.ttft(50), run.ttft(99), run.tpot(50), run.tpot(99), run)
        )
    if not points:
        raise ValueError("rates must hold one or more arrival rates in requests per second")
    return tuple(points)


def best_under_slo(points, slo: SLO) -> FrontierPoint:
    """The highest-throughput point whose p99 TTFT and p99 TPOT meet ``slo``; ValueError if none does."""
    points = tuple(points)
    if points and not any(p.run.feasible for p in points):
        raise ValueError(f"no point can run: {points[0].run.fit.headline}")
    ok = [p for p in points if slo.met_by(p.run)]
    if not ok:
        raise ValueError(
            f"no point meets the SLO (p99 TTFT <= {to_unit(slo.ttft_s, 'ms'):.4g} ms, "
            f"p99 TPOT <= {to_unit(slo.tpot_s, 'ms'):.4g} ms): "
            "lower the arrival rate, the batch, or change the policy"
        )
    return max(ok, key=lambda p: p.tokens_per_s)


@dataclass(frozen=True)
class RateSearch:
    """The highest arrival rate found to meet an SLO, and every rate the search served. SI units."""

    best: FrontierPoint  # the highest-throughput point that met the SLO
    points: tuple[FrontierPoint, ...]  # every rate served, in increasing rate
    resolution_per_s: float  # the bracket's width when the search stopped, requests per second

    def __str__(self) -> str:
        return (
            f"{self.best.run.policy}: best {self.best.tokens_per_s:,.0f} tokens/s at {self.best.rate_per_s:.3g} "
            f"requests/s (searched {len(self.points)} rates to within {self.resolution_per_s:g} requests/s)"
        )


def best_rate_under_slo(
    server: Server,
    policy,
    slo: SLO,
    *,
    low_per_s,
    high_per_s,
    resolution_per_s=0.5,
    n_requests,
    prompt_len,
    output_len,
    seed,
    max_rate_per_s=4096.0,
    **options,
) -> RateSearch:
    """Search the arrival rate for the best throughput under ``slo``, instead of reading it off a coarse grid.

    A rate that meets the SLO is bracketed with one that does not (halving ``low_per_s`` while
    it fails, doubling ``high_per_s`` while it meets, up to ``max_rate_per_s``), then the bracket
    is bisected until it is ``resolution_per_s`` wide. Every rate serves the same ``seed``'s
    trace, as :func:`frontier` does. The answer is the best point among all the rates served
    (:func:`best_under_slo`), so a load whose p99 is not monotone in the rate is not misread.
    """
    low = _positive(low_per_s, "low_per_s", "requests per second")
    high = _positive(high_per_s, "high_per_s", "requests per second")
    step = _positive(resolution_per_s, "resolution_per_s", "requests per second")
    ceiling = _positive(max_rate_per_s, "max_rate_per_s", "requests per second")
    if not low < high:
        raise ValueError(f"low_per_s must be below high_per_s, got {low!r} and {high!r} requests per second")
    served: dict[float, FrontierPoint] = {}

    def meets(rate: float) -> bool:
        if rate not in served:
            (served[rate],) = frontier(
                server, policy, (rate,), n_requests=n_requests, prompt_len=prompt_len,
                output_len=output_len, seed=seed, **options,
            )  # fmt: skip
        return slo.met_by(served[rate].run)

    while not meets(low):
        if low < step:
            best_under_slo(tuple(served.values()), slo)  # raises: not even a trickle of requests meets it
        low, high = low / 2, low
    while meets(high):
        if high >= ceiling:
            break
        low, high = high, min(2 * high, ceiling)
    while high - low > step:
        mid = (low + high) / 2
        low, high = (mid, high) if meets(mid) else (low, mid)
    points = tuple(served[r] for r in sorted(served))
    return RateSearch(best_under_slo(points, slo), points, high - low)
