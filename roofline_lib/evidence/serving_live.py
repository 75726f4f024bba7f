"""Serving the course's small decoder live: a KV-cache generation loop, timed on this machine.

:class:`LiveServer` runs a :class:`~roofline_lib.models.tiny_model.TinyDecoder` the way an inference server
does: a prefill writes a prompt's keys and values into a per-request slot of a preallocated
cache (contiguous allocation, ``max_len`` tokens per slot) and returns the first token; a decode
step pushes one token of every running request through the weights as one batch, appends each
request's new key and value to its slot and attends over that slot. Tokens are chosen greedily.
:meth:`LiveServer.execute` is an executor for :func:`~roofline_lib.workloads.scheduler.run_policy`: the
same scheduler that drives the model drives the real forward passes, and the clock advances by
the time each step measured.

Reference first: :func:`max_logit_gap` checks the cached loop's logits against the model's
plain forward over the whole sequence (no cache) before anything is timed.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from ..core.checks import _positive_int
from ..models.tiny_model import TinyDecoder
from ..models.transformer import TransformerConfig

__all__ = ["SERVE_CONFIG", "LiveServer", "max_logit_gap"]

#: The decoder served live: about 17 M parameters, 68 MB in fp32, larger than this machine's
#: last-level cache (tens of MB), so a decode step streams its weights from DRAM.
SERVE_CONFIG = TransformerConfig(
    d_model=512,
    d_ff=1408,
    n_layers=4,
    n_heads=8,
    vocab=4096,
    seq_len=1024,
    gated=True,
    tied_embeddings=False,
    name="serving decoder (17M)",
)


class LiveServer:
    """A TinyDecoder with a slot-per-request KV cache, serving prefill and decode steps on the CPU."""

    def __init__(self, cfg: TransformerConfig = SERVE_CONFIG, *, max_slots, max_len, seed: int = 0):
        self.cfg = cfg
        self.max_slots = _positive_int(max_slots, "max_slots", "requests")
        self.max_len = _positive_int(max_len, "max_len", "tokens")
        self.model = TinyDecoder(cfg, seed=seed).eval()
        heads, dim = cfg.n_heads, cfg.d_model // cfg.n_heads
        shape = (cfg.n_layers, self.max_slots, heads, self.max_len, dim)
        self.k = torch.zeros(shape)
        self.v = torch.zeros(shape)
        self.lengths = [0] * self.max_slots
        self._slot: dict[int, int] = {}  # request id -> slot
        self._next: dict[int, int] = {}  # request id -> the token it feeds next
        self.outputs: dict[int, list[int]] = {}  # request id -> the tokens it generated, in order
        self._free = list(range(self.max_slots))[::-1]
        self._gen = torch.Generator().manual_seed(seed)

    # -- the forward pieces

    def _qkv(self, block, h):
        b, s, d = h.shape
        heads = self.cfg.n_heads

        def split(t):  # (b, s, d) -> (b, heads, s, head_dim)
            return t.view(b, s, heads, d // heads).transpose(1, 2)

        return split(block.attn.q(h)), split(block.attn.k(h)), split(block.attn.v(h))

    @torch.inference_mode()
    def prefill(self, slot: int, tokens: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Push ``tokens`` (1-D) of the request in ``slot`` after ``offset`` cached ones; last row's logits."""
        n = tokens.numel()
        if offset + n > self.max_len:
            raise ValueError(f"the request in slot {slot} would hold {offset + n} tokens, over max_len {self.max_len}")
        x = self.model.embed(tokens.view(1, n))
        keys = torch.arange(offset + n)
        mask = keys.view(1, -1) <= (offset + torch.arange(n)).view(-1, 1)  # query i sees keys up to offset + i
        for layer, block in enumerate(self.model.blocks):
            q, k, v = self._qkv(block, block.attn_norm(x))
            self.k[layer, slot, :, offset : offset + n] = k[0]
            self.v[layer, slot, :, offset : offset + n] = v[0]
            ks = self.k[layer, slot : slot + 1, :, : offset + n]
            vs = self.v[layer, slot : slot + 1, :, : offset + n]
            y = F.scaled_dot_product_attention(q, ks, vs, attn_mask=mask)
            x = x + block.attn.o(y.transpose(1, 2).reshape(1, n, -1))
            x = x + block.ffn(block.ffn_norm(x))
        self.lengths[slot] = offset + n
        return self.model.unembed(self.model.norm(x[:, -1]))[0]

    @torch.inference_mode()
    def decode(self, slots: list[int], tokens: torch.Tensor) -> torch.Tensor:
        """One token for each of ``slots`` (``tokens`` of shape (batch,)): the weights once, the cache per slot."""
        b = len(slots)
        pos = [self.lengths[s] for s in slots]
        if max(pos) + 1 > self.max_len:
            raise ValueError(f"a request would exceed max_len {self.max_len} tokens")
        x = self.model.embed(tokens.view(b, 1))
        for layer, block in enumerate(self.model.blocks):
            q, k, v = self._qkv(block, block.attn_norm(x))
            outs = []
            for i, (s, p) in enumerate(zip(slots, pos)):
                self.k[layer, s, :, p] = k[i, :, 0]
                self.v[layer, s, :, p] = v[i, :, 0]
                ks = self.k[layer, s : s + 1, :, : p + 1]
                vs = self.v[layer, s : s + 1, :, : p + 1]
                outs.append(F.scaled_dot_product_attention(q[i : i + 1], ks, vs))
            y = torch.cat(outs)
            x = x + block.attn.o(y.transpose(1, 2).reshape(b, 1, -1))
            x = x + block.ffn(block.ffn_norm(x))
        for s, p in zip(slots, pos):
            self.lengths[s] = p + 1
        return self.model.unembed(self.model.norm(x[:, 0]))

    # -- as an executor for the scheduler

    def _prompt(self, request) -> torch.Tensor:
        g = torch.Generator().manual_seed(10_000 + request.id)  # the same prompt for a request, whatever the policy
        return torch.randint(0, self.cfg.vocab, (request.prompt_len,), generator=g)

    def execute(self, work) -> float:
        """Run one scheduler step (``(request state, Chunk)`` pairs) for real; return its wall seconds."""
        start = time.perf_counter()
        decodes = []  # request states
        for state, chunk in work:
            rid = state.req.id
            if rid not in self._slot:
                if not self._free:
                    raise ValueError(f"no free KV slot for request {rid}: max_slots is {self.max_slots}")
                self._slot[rid] = self._free.pop()
            if state.decoding:
                decodes.append(state)
                continue
            prompt = self._prompt(state.req)[chunk.offset : chunk.offset + chunk.tokens]
            logits = self.prefill(self._slot[rid], prompt, chunk.offset)
            if chunk.logits:
                self._next[rid] = int(logits.argmax())
                self.outputs[rid] = [self._next[rid]]
        if decodes:
            ids = [s.req.id for s in decodes]
            logits = self.decode([self._slot[r] for r in ids], torch.tensor([self._next[r] for r in ids]))
            for state, row in zip(decodes, logits):
                self._next[state.req.id] = int(row.argmax())
                self.outputs[state.req.id].append(self._next[state.req.id])
                if state.generated + 1 >= state.req.output_len:  # its last token: free the slot
                    self._free.append(self._slot.pop(state.req.id))
        return time.perf_counter() - start

    # -- timing pieces on their own

    def time_prefill(self, prompt_len, *, repeats: int = 3) -> float:
        """Best of ``repeats`` prefills of a ``prompt_len``-token prompt into slot 0, seconds."""
        p = _positive_int(prompt_len, "prompt_len", "tokens")
        tokens = torch.randint(0, self.cfg.vocab, (p,), generator=self._gen)
        best = float("inf")
        for _ in range(_positive_int(repeats, "repeats", "repeats")):
            start = time.perf_counter()
            self.prefill(0, tokens)
            best = min(best, time.perf_counter() - start)
        return best

    def time_decode(self, batch, context_len, *, steps: int = 5) -> float:
        """Median of ``steps`` decode steps of ``batch`` sequences at ``context_len`` tokens, seconds.

        The slots' caches are set to ``context_len - 1`` tokens before each step (their contents
        do not change the work), so every timed step attends to exactly ``context_len`` keys.
        """
        b = _positive_int(batch, "batch", "sequences")
        c = _positive_int(context_len, "context_len", "tokens")
        if b > self.max_slots or c > self.max_len:
            raise ValueError(
                f"batch {b} and context_len {c} must fit max_slots {self.max_slots} and max_len {self.max_len}"
            )
        slots = list(range(b))
        tokens = torch.randint(0, self.cfg.vocab, (b,), generator=self._gen)
        times = []
        for _ in range(_positive_int(steps, "steps", "steps") + 1):  # one warm-up
            for s in slots:
                self.lengths[s] = c - 1
            start = time.perf_counter()
            self.decode(slots, tokens)
            times.append(time.perf_counter() - start)
        times = sorted(times[1:])
        return times[len(times) // 2]

    def reset(self) -> None:
        """Forget every request (the cache's contents are simply overwritten later)."""
        self.lengths = [0] * self.max_slots
        self._slot.clear()
        self._next.clear()
        self.outputs = {}
        self._free = list(range(self.max_slots))[::-1]


def max_logit_gap(server: LiveServer, prompt_len=24, new_tokens=6, seed: int = 1) -> float:
    """Largest |logit| difference between the cached loop and a full forward, over ``new_tokens`` steps.

    Prefills a random prompt in slot 0 (in two chunks, to exercise an offset), then decodes
    greedily; at each step the full model recomputes the whole sequence without a cache.
    """
    p = _positive_int(prompt_len, "prompt_len", "tokens")
    n = _positive_int(new_tokens, "new_tokens", "tokens")
    g = torch.Generator().manual_seed(seed)
    seq = torch.randint(0, server.cfg.vocab, (p,), generator=g)
    half = p // 2
    server.prefill(0, seq[:half])
    logits = server.prefill(0, seq[half:], half)
    worst = 0.0
    with torch.inference_mode():
        for _ in range(n):
            full = server.model(seq.view(1, -1))[0, -1]
            worst = max(worst, float((full - logits).abs().max()))
            nxt = int(logits.argmax())
            seq = torch.cat([seq, torch.tensor([nxt])])
            logits = server.decode([0], torch.tensor([nxt]))[0]
    server.reset()
    return worst
