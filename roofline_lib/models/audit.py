"""FLOP audit of real torch graphs, built on ``torch.utils.flop_counter.FlopCounterMode``.

The analytic counts in :mod:`roofline_lib.models.transformer` are a plan; this module
counts what a torch program dispatches and says where the two differ.

What FlopCounterMode does and does not count (torch 2.13, read from
``torch/utils/flop_counter.py`` and measured on a CPU):

* It is a dispatch mode. Each aten op that reaches it is looked up in a table of
  formulas keyed by op; ops without an entry count 0. Matmuls (``mm``, ``addmm``,
  ``bmm``, ``baddbmm``, ``_scaled_mm``) and convolutions are in the table;
  element-wise ops, norms and softmax are not.
* Attention entries exist only for the CUDA kernels:
  ``_scaled_dot_product_flash_attention``, ``_scaled_dot_product_efficient_attention``,
  ``_scaled_dot_product_cudnn_attention``, their ``_backward`` ops, the low-level
  ``_flash_attention_forward/backward`` and ``_efficient_attention_forward/backward``
  (nested/varlen inputs), and ``flex_attention``.
* On a CPU, ``F.scaled_dot_product_attention`` dispatches to
  ``aten._scaled_dot_product_flash_attention_for_cpu`` (and its ``_backward``), which
  has no entry. With ``B, H, S, Dh = 2, 4, 128, 32`` the stock counter reports
  **0 FLOPs** for the forward and for forward+backward, causal or not, although the
  two matmuls hold ``4 * B * H * S**2 * Dh = 16,777,216`` FLOPs.
* None of the attention formulas reads ``is_causal`` (the source says so in a
  comment). Called on meta tensors with ``is_causal=True``, the flash, efficient and
  cuDNN entries count the full square: 16,777,216 forward and 41,943,040 backward
  for the shape above. The backward formula charges five score-sized matmuls (it
  includes the recomputation of ``Q K^T`` that flash kernels do), 2.5 forwards,
  where the usual "backward = 2 x forward" convention charges four.
* Forcing the math backend (``sdpa_kernel(SDPBackend.MATH)``) decomposes attention
  into ``bmm`` + softmax; the counter then sees 16,777,216 forward and 50,331,648
  forward+backward, with or without the causal mask, because that path really does
  compute the full square and masks it afterwards.
* Timed on this CPU (``B, H, S, Dh = 1, 8, 2048, 64``), the fused CPU kernel runs
  causal attention in ~0.64 of the non-causal time (forward+backward ~0.60): it
  does skip masked blocks. So "FlopCounterMode counts the attention convention your
  SDPA backend used" is not true: on a CPU it counts no attention at all, and on a
  GPU it counts a causal kernel as if it computed the masked half too (2x the
  forward score FLOPs) and counts the flash backward's recompute.

What :func:`count_flops` does about it (``attention=`` chooses):

* ``"kernel"`` (default): every SDPA kernel above, the CPU one included, is counted
  by the entries it keeps: ``ops.attention_score_entries`` (``s * (s + 1) / 2`` per
  head for a square causal mask), ``2 * Dh`` FLOPs per entry for ``Q K^T`` and
  ``2 * Dh`` for ``P V``. Backward: four score-sized matmuls (``dP = dO V^T``,
  ``dV = P^T dO``, ``dQ = dS K``, ``dK = dS^T Q``), i.e. 2x the forward, the model-FLOP
  convention behind 6N and MFU. ``recompute=True`` adds the flash backward's
  recomputed ``Q K^T``, a hardware-FLOP (HFU) count.
* ``"dense"``: the same kernels counted as full ``s_q x s_k`` squares, as an
  implementation that masks instead of skipping would compute.
* ``"raw"``: FlopCounterMode's own table, untouched, to show the discrepancy.

Attention that goes through the math fallback (a float mask tensor on some
backends, dropout on CPU, or ``SDPBackend.MATH``) arrives as plain ``bmm`` calls
and is counted as dense in every mode: nothing in a ``bmm`` says it is attention.
Masks passed as tensors (``attn_mask``, ``attn_bias``) and sliding windows are
counted dense; ``flex_attention`` keeps torch's formula.

Mixture-of-experts layers (transformers 5 defaults them to ``experts_implementation="grouped_mm"``)
run their experts as one ``aten._grouped_mm`` per projection (or, where that kernel cannot run,
transformers' opaque custom op ``transformers::grouped_mm_fallback``). Neither has a formula in
torch's table, so the stock counter books every expert FLOP as 0 (a Mixtral-style model then
counts at 0.40x of its true forward, with no warning). :func:`count_flops` counts both in every
mode, by the rows each group really multiplies (``offs[-1]`` of them, the routed token-expert
pairs): ``2 M K N`` for an ``(M, K)`` input against ``(G, K, N)`` experts, the same total as the
eager loop over experts; the backward's two grouped products cost twice that. The FLOPs found in
them are reported as :attr:`FlopAudit.grouped_experts`, and the table says so.

Cross-check on the tiny decoder (:func:`crosscheck`, :mod:`roofline_lib.models.tiny_model`): the
counted forward exceeds ``transformer_flops_per_token * tokens`` by exactly ``2 * L * B * s * d``
FLOPs, the gap between ``s * (s + 1) / 2`` kept score entries and the analytic
``s**2 / 2``; the counted backward is exactly 2x the counted forward, so forward +
backward exceeds the analytic ``3x`` form by three times that. For the default tiny
model this is under 0.1 %. Nothing else differs, because the analytic model and
the counter both charge 0 to embedding lookups, norms, activations and the
softmax, and because the embedding weight needs a gradient, so every weight
matmul's input gradient is computed, the first layer's included.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

import torch
from torch.utils import flop_counter as _fc
from torch.utils.flop_counter import FlopCounterMode

from ..core.ops import attention_score_entries
from .tiny_model import TINY_CONFIG, random_tokens, tiny_decoder
from .transformer import TransformerConfig

__all__ = [
    "ATTENTION_MODES",
    "ATTENTION_OPS",
    "FlopAudit",
    "attention_mapping",
    "count_flops",
    "Crosscheck",
    "crosscheck",
]

#: How count_flops may count attention kernels.
ATTENTION_MODES = MappingProxyType(
    {
        "kernel": "kept score entries only (causal = s(s+1)/2 per head); backward = 2 x forward",
        "dense": "full s_q x s_k square even when causal; backward = 2 x forward",
        "raw": "FlopCounterMode's own formulas: CPU SDPA counts 0, causal ignored",
    }
)

_aten = torch.ops.aten

# aten op name -> (is_backward, how to read its q/k/v shapes)
_ATTENTION_OP_KINDS = {
    "_scaled_dot_product_flash_attention_for_cpu": (False, "sdpa"),
    "_scaled_dot_product_flash_attention_for_cpu_backward": (True, "sdpa"),
    "_scaled_dot_product_flash_attention": (False, "sdpa"),
    "_scaled_dot_product_flash_attention_backward": (True, "sdpa"),
    "_scaled_dot_product_efficient_attention": (False, "sdpa"),
    "_scaled_dot_product_efficient_attention_backward": (True, "sdpa"),
    "_scaled_dot_product_cudnn_attention": (False, "sdpa"),
    "_scaled_dot_product_cudnn_attention_backward": (True, "sdpa"),
    "_flash_attention_forward": (False, "flash_varlen"),
    "_flash_attention_backward": (True, "flash_varlen"),
    "_efficient_attention_forward": (False, "efficient_varlen"),
    "_efficient_attention_backward": (True, "efficient_varlen"),
}

#: The aten attention ops that count_flops re-counts in "kernel" and "dense" modes.
ATTENTION_OPS = tuple(f"aten.{name}" for name in _ATTENTION_OP_KINDS if hasattr(_aten, name))


# --- attention formulas --------------------------------------------------------------


def _bind(packet, args, kwargs) -> dict:
    """Name an op's arguments by its schema, picking the overload whose types fit."""
    for overload in packet.overloads():
        schema = getattr(packet, overload)._schema
        names = [a.name for a in schema.arguments]
        if len(args) > len(names):
            continue
        bound = dict(zip(names, args))
        bound.update(kwargs)
        if "is_causal" in bound and not isinstance(bound["is_causal"], bool):
            continue
        if "custom_mask_type" in bound and not isinstance(bound["custom_mask_type"], int):
            continue
        for a in schema.arguments:
            if a.name not in bound and a.has_default_value():
                bound[a.name] = a.default_value
        return bound
    raise TypeError(f"cannot match the arguments of {packet} to its schema")


def _causality(bound: dict) -> tuple[bool, str]:
    """(causal, alignment) from either ``is_causal`` or ``custom_mask_type`` (1 top-left, 2 bottom-right)."""
    if "custom_mask_type" in bound:
        mask_type = bound["custom_mask_type"] or 0
        return mask_type in (1, 2), "bottom-right" if mask_type == 2 else "top-left"
    return bool(bound.get("is_causal", False)), "top-left"


# varlen layout -> (torch's unpacking helper in flop_counter, the sequence-length arguments it takes,
# named as in the aten op's schema)
_VARLEN_UNPACKING = {
    "flash_varlen": ("_unpack_flash_attention_nested_shapes", ("cum_seq_q", "cum_seq_k", "max_q", "max_k")),
    "efficient_varlen": (
        "_unpack_efficient_attention_nested_shapes",
        ("cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q", "max_seqlen_k"),
    ),
}


def _qkv_shapes(layout: str, bound: dict):
    """Yield (b, h_q, s_q, d_q), (.., s_k, ..), (.., d_v) per sequence."""
    q, k, v = bound["query"], bound["key"], bound["value"]
    if layout == "sdpa":
        yield tuple(q.shape), tuple(k.shape), tuple(v.shape)
        return
    # nested / varlen inputs: reuse torch's unpacking so shapes agree with its formulas
    unpack, length_args = _VARLEN_UNPACKING[layout]
    shapes = getattr(_fc, unpack)(query=q, key=k, value=v, **{name: bound[name] for name in length_args})
    for q_shape, k_shape, v_shape, _ in shapes:
        yield tuple(q_shape), tuple(k_shape), tuple(v_shape)


def _attention_formula(packet, is_backward: bool, layout: str, dense: bool, recompute: bool):
    def formula(*args, out_val=None, **kwargs) -> int:
        bound = _bind(packet, args, kwargs)
        causal, alignment = _causality(bound)
        total = 0
        for (b, h_q, s_q, d_q), (_, _, s_k, _), (_, _, _, d_v) in _qkv_shapes(layout, bound):
            if s_q == 0 or s_k == 0:
                continue
            entries = attention_score_entries(s_q, s_k, causal and not dense, alignment)
            if is_backward:
                # dP = dO V^T and dV = P^T dO (2*d_v each); dQ = dS K and dK = dS^T Q (2*d_q each)
                per_entry = 4 * d_v + 4 * d_q
                if recompute:
                    per_entry += 2 * d_q  # S = Q K^T again, as flash backward kernels do
            else:
                per_entry = 2 * d_q + 2 * d_v  # S = Q K^T, then O = P V
            total += b * h_q * entries * per_entry
        return total

    formula._get_raw = True  # FlopCounterMode passes the raw arguments, not shapes
    return formula


def attention_mapping(attention: str = "kernel", recompute: bool = False) -> dict:
    """The ``custom_mapping`` for ``FlopCounterMode`` that counts attention by ``attention`` mode.

    Use it directly when you want torch's own context manager::

        with FlopCounterMode(display=False, custom_mapping=audit.attention_mapping()) as c:
            model(tokens)

    ``"raw"`` returns an empty mapping (torch's table as it is).
    """
    _check_mode(attention, recompute)
    if attention == "raw":
        return {}
    mapping = {}
    for name, (is_backward, layout) in _ATTENTION_OP_KINDS.items():
        if hasattr(_aten, name):
            packet = getattr(_aten, name)
            mapping[packet] = _attention_formula(
                packet, is_backward, layout, dense=attention == "dense", recompute=recompute
            )
    return mapping


def _check_mode(attention, recompute) -> None:
    if attention not in ATTENTION_MODES:
        raise ValueError(f"attention must be one of {', '.join(repr(m) for m in ATTENTION_MODES)}, got {attention!r}")
    if not isinstance(recompute, bool):
        raise TypeError(f"recompute must be True or False, got {type(recompute).__name__} {recompute!r}")
    if recompute and attention == "raw":
        raise ValueError(
            "recompute=True applies to attention='kernel' or 'dense'; 'raw' keeps torch's "
            "formulas, whose GPU backward already includes the recompute"
        )


# --- grouped expert matmuls -------------------------------------------------------------


def _rows_done(offs, full: int) -> int:
    """How many rows (or columns) a grouped product really multiplies: ``offs[-1]``, where it can be read."""
    if offs is None or offs.numel() == 0 or offs.device.type == "meta":
        return full
    return min(int(offs[-1]), full)


def _grouped_mm_flops(a, b, offs=None) -> int:
    """``torch._grouped_mm``: 2D x 3D (groups of rows), 3D x 2D (groups of columns), 2D x 2D (groups
    of the inner dimension: the weight gradient) and 3D x 3D (a plain batch)."""
    if a.dim() == 2 and b.dim() == 3:
        return 2 * _rows_done(offs, a.shape[0]) * a.shape[1] * b.shape[2]
    if a.dim() == 3 and b.dim() == 2:
        return 2 * a.shape[1] * a.shape[2] * _rows_done(offs, b.shape[1])
    if a.dim() == 2 and b.dim() == 2:
        return 2 * a.shape[0] * _rows_done(offs, a.shape[1]) * b.shape[1]
    return 2 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]


def _grouped_formulas() -> dict:
    """Formulas for the grouped expert ops that exist in this process (aten's, and transformers' fallback)."""

    def grouped(*args, out_val=None, **kwargs) -> int:
        a, b = args[0], args[1]
        offs = kwargs.get("offs", args[2] if len(args) > 2 else None)
        return _grouped_mm_flops(a, b, offs)

    def fallback_backward(*args, out_val=None, **kwargs) -> int:
        x, w, offs = args[0], args[1], args[2]  # grad_input = dO W^T and grad_weight = x^T dO per group
        return 2 * _grouped_mm_flops(x, w, offs)

    formulas = {}
    for fn in (grouped, fallback_backward):
        fn._get_raw = True
    if hasattr(_aten, "_grouped_mm"):
        formulas[_aten._grouped_mm] = grouped
    custom = getattr(torch.ops, "transformers", None)
    for name, fn in (("grouped_mm_fallback", grouped), ("grouped_mm_fallback_backward", fallback_backward)):
        try:
            formulas[getattr(custom, name)] = fn
        except (AttributeError, RuntimeError):  # transformers not imported: the op does not exist
            pass
    return formulas


#: Op names whose FLOPs count_flops reports as grouped experts.
_GROUPED_NAMES = ("aten._grouped_mm", "transformers.grouped_mm_fallback", "transformers.grouped_mm_fallback_backward")


# --- the audit -----------------------------------------------------------------------


def _op_name(packet) -> str:
    if isinstance(packet, torch._ops.OpOverloadPacket):
        return str(packet)  # "aten.mm"
    fn = getattr(packet, "fn", None)
    return getattr(fn, "__name__", None) or getattr(packet, "__name__", None) or repr(packet)


class _Ledger:
    """Per-op FLOP tallies, split into forward and backward by the autograd engine's state."""

    def __init__(self):
        self.forward: dict[str, int] = defaultdict(int)
        self.backward: dict[str, int] = defaultdict(int)
        self.in_backward = False  # used only where torch cannot tell us

    def _phase(self) -> dict[str, int]:
        task_id = getattr(torch._C, "_current_graph_task_id", None)
        running_backward = task_id() != -1 if task_id is not None else self.in_backward
        return self.backward if running_backward else self.forward

    def wrap(self, packet, formula):
        name = _op_name(packet)

        def counted(*args, out_val=None, **kwargs):
            n = formula(*args, out_val=out_val, **kwargs)
            self._phase()[name] += int(n)
            return n

        counted._get_raw = True
        return counted


@dataclass(frozen=True)
class FlopAudit:
    """FLOPs a torch program dispatched, as counted by :func:`count_flops`.

    ``forward_by_op`` / ``backward_by_op`` map an aten op name (``"aten.mm"``) to FLOPs.
    ``by_module`` maps a module path (``"TinyDecoder.blocks.0.attn"``; ``"Global"`` for
    everything) to its *forward* FLOPs, as FlopCounterMode's module tracker assigns them.
    The tracker's backward attribution is not used: it books some gradient matmuls to
    sibling modules as well (in the tiny decoder the same-shaped q, k and v
    projections came out at 12.6, 21.0 and 29.4 MFLOP forward+backward, and the four
    projections summed to more than their parent module).
    """

    forward: int
    backward: int
    forward_by_op: Mapping[str, int]
    backward_by_op: Mapping[str, int]
    by_module: Mapping[str, int]
    attention: str
    recompute: bool

    @property
    def grouped_experts(self) -> int:
        """FLOPs in grouped expert matmuls (``aten._grouped_mm``, transformers' fallback), forward and
        backward: the experts the stock counter books as 0."""
        return sum(n for op, n in self.by_op.items() if op in _GROUPED_NAMES)

    @property
    def total(self) -> int:
        return self.forward + self.backward

    @property
    def by_op(self) -> Mapping[str, int]:
        merged: dict[str, int] = defaultdict(int)
        for table in (self.forward_by_op, self.backward_by_op):
            for op, n in table.items():
                merged[op] += n
        return MappingProxyType(dict(merged))

    def table(self) -> str:
        """A plain-text breakdown: one row per op, forward, backward, share of the total."""
        rows = sorted(self.by_op.items(), key=lambda kv: -kv[1])
        width = max([len("op"), len("total")] + [len(op) for op, _ in rows])
        lines = [f"{'op':<{width}}  {'forward':>16}  {'backward':>16}  {'share':>6}"]
        for op, n in rows:
            share = n / self.total if self.total else 0.0
            lines.append(
                f"{op:<{width}}  {self.forward_by_op.get(op, 0):>16,}  "
                f"{self.backward_by_op.get(op, 0):>16,}  {share:>6.1%}"
            )
        lines.append(
            f"{'total':<{width}}  {self.forward:>16,}  {self.backward:>16,}  {1.0 if self.total else 0.0:>6.1%}"
        )
        lines.append(
            f"(attention counted as {self.attention!r}{', with backward recompute' if self.recompute else ''})"
        )
        if self.grouped_experts:
            lines.append(
                f"(grouped-mm experts counted by their routed rows: {self.grouped_experts:,} FLOPs "
                "that torch's own counter books as 0)"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _loss_of(out) -> torch.Tensor:
    t = out[0] if isinstance(out, (tuple, list)) and out else out
    if not isinstance(t, torch.Tensor):
        raise TypeError(
            f"backward=True needs fn to return a tensor (or a tuple whose first item is one), got {type(out).__name__}"
        )
    if not t.requires_grad:
        raise ValueError(
            "backward=True needs fn's output to require grad; pass a module with trainable "
            "parameters or inputs with requires_grad=True"
        )
    return t if t.numel() == 1 else t.sum()  # stand-in loss: d(sum)/d(out) = 1 everywhere


def count_flops(
    fn: Callable, *args, backward: bool = False, attention: str = "kernel", recompute: bool = False, **kwargs
) -> FlopAudit:
    """Run ``fn(*args, **kwargs)`` under FlopCounterMode and return a :class:`FlopAudit`.

    ``backward=True`` also runs ``.backward()`` on the output (summed to a scalar if it is
    not one), counting the backward pass. A ``fn`` that calls ``backward`` itself works
    with ``backward=False``: ops run by the autograd engine are booked as backward
    either way. ``attention`` picks how attention kernels are counted (see
    :data:`ATTENTION_MODES` and the module docstring); ``recompute=True`` adds the
    flash backward's recomputed ``Q K^T``. Grouped expert matmuls (transformers' default
    ``experts_implementation="grouped_mm"``) are counted by their routed rows in every mode and
    reported as :attr:`FlopAudit.grouped_experts` (see the module docstring).

    Parameter gradients accumulate as in any backward; zero them afterwards if the
    model is reused for training.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable (a module or function), got {type(fn).__name__}")
    if not isinstance(backward, bool):
        raise TypeError(f"backward must be True or False, got {type(backward).__name__} {backward!r}")
    _check_mode(attention, recompute)

    ledger = _Ledger()
    formulas = {**_fc.flop_registry, **_grouped_formulas(), **attention_mapping(attention, recompute)}
    mapping = {packet: ledger.wrap(packet, f) for packet, f in formulas.items()}
    counter = FlopCounterMode(display=False, custom_mapping=mapping)
    with counter:
        out = fn(*args, **kwargs)
        forward_modules = counter.get_flop_counts()  # before the backward muddles attribution
        if backward:
            loss = _loss_of(out)
            ledger.in_backward = True
            loss.backward()
            ledger.in_backward = False

    by_module = {mod: sum(ops.values()) for mod, ops in forward_modules.items()}
    return FlopAudit(
        forward=sum(ledger.forward.values()),
        backward=sum(ledger.backward.values()),
        forward_by_op=MappingProxyType(dict(ledger.forward)),
        backward_by_op=MappingProxyType(dict(ledger.backward)),
        by_module=MappingProxyType(by_module),
        attention=attention,
        recompute=recompute,
    )


@dataclass(frozen=True)
class Crosscheck:
    """Counted FLOPs of the tiny decoder (:mod:`~roofline_lib.models.tiny_model`) against the analytic count.

    The analytic count is ``transformer_flops_per_token * tokens``.

    ``analytic`` uses the causal-kernel convention (``2 s d`` score FLOPs per layer and
    token) and, when ``backward``, the 3x forward+backward form.
    """

    counted: int
    analytic: int
    tokens: int
    backward: bool
    audit: FlopAudit

    @property
    def relative_gap(self) -> float:
        """(counted - analytic) / analytic."""
        return (self.counted - self.analytic) / self.analytic


def crosscheck(
    cfg: TransformerConfig = TINY_CONFIG, batch=1, seq_len=None, *, backward=True, attention="kernel", seed: int = 0
) -> Crosscheck:
    """Count the tiny decoder with :func:`count_flops` and compare with the analytic count."""
    model = tiny_decoder(cfg, seed=seed)
    tokens = random_tokens(cfg, batch, seq_len, seed=seed)
    audit = count_flops(model, tokens, backward=backward, attention=attention)
    b, s = tokens.shape
    per_token = cfg.flops_per_token(causal=True, seq_len=s)
    analytic = b * s * (per_token.fwd_bwd_per_token if backward else per_token.fwd_per_token)
    return Crosscheck(counted=audit.total, analytic=analytic, tokens=b * s, backward=backward, audit=audit)
