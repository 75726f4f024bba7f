"""The diagnosis told: the roof and its precisions, the evidence pile by pile, and the triage tree drawn.

Every line a :class:`~roofline_lib.evidence.diagnose.Diagnosis` prints is written here, from the
rows, the piles they were placed in (:mod:`roofline_lib.evidence.triage`) and the trace they came
from; :func:`plot_triage` draws the playbook's rules (:data:`~roofline_lib.evidence.playbook.TRIAGE_RULES`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.formatting import seconds as _fmt_seconds
from ..core.formatting import to_unit
from ..core.roofline import Roof
from .playbook import MAJORITY, RULES_BY_KEY, TRIAGE_RULES
from .trace_rows import NO_SHAPES, Trace
from .triage import Placement

if TYPE_CHECKING:
    from .diagnose import Diagnosis

__all__ = ["plot_triage", "evidence_lines", "no_majority_line", "roof_and_precision", "communication_lines"]


def _names(rows, limit: int = 3, with_intensity: bool = False) -> str:
    """The ``limit`` rows with the most seconds, as ``name xcalls`` (and their intensity), and how many more."""
    rows = sorted(rows, key=lambda r: -r.seconds)
    parts = []
    for r in rows[:limit]:
        bit = f"{r.name} x{r.calls}"
        if with_intensity and r.intensity is not None:
            bit += f" at {r.intensity:.3g} FLOP/B"
        parts.append(bit)
    return ", ".join(parts) + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


def _members(rows, placed, pile: str) -> list:
    return [r for r, p in zip(rows, placed) if p == pile]


def evidence_lines(
    out: Placement, rows, shares, trace: Trace, *, roof, precision, fixed: float, link
) -> tuple[str, dict, list[str]]:
    """The evidence of a placement, pile by pile: ``(roof_label, precisions, lines)``.

    ``roof`` and ``precision`` are what the caller asked the rows to be read under, ``fixed`` the
    fixed cost of one call, ``link`` the link the collectives ran over (None: not known).
    """
    roof_label, precisions, precision_lines = roof_and_precision(
        rows, out.placed, out.used_roofs, roof, trace, precision
    )
    communication = communication_lines(rows, out.placed, shares, trace, link)
    total = sum(out.piles.values())
    lines = [_header_line(rows, total, trace, roof_label), *trace.notes, *precision_lines]
    lines += _work_lines(rows, out.placed, shares) + communication
    lines += _overhead_lines(out, rows, shares, total, trace, fixed)
    lines += _unclassified_lines(rows, out.placed, shares, trace)
    if out.fast_rows:
        lines.append(_faster_than_roof(out.fast_rows, trace, getattr(roof, "precision", None) or precision))
    return roof_label, precisions, lines


def no_majority_line(top: str) -> str:
    """What a mixed verdict says: no pile holds the majority, and which one is largest."""
    return f"no pile holds more than {MAJORITY:.0%} of the time; the largest is {top}"


def _header_line(rows, total: float, trace: Trace, roof_label: str) -> str:
    clock = {
        "cpu": "op self time on the CPU",
        "device": "the merged GPU kernel window",
        "rows": "the rows given",
    }[trace.timeline]
    n_calls = sum(r.calls for r in rows)
    return f"{_fmt_seconds(total)} read from {clock}, {n_calls:,} calls of {len(rows)} ops; roof: {roof_label}"


def _work_lines(rows, placed, shares) -> list[str]:
    """The memory- and compute-bound piles, with their largest ops and intensities."""
    lines = []
    for pile in ("memory", "compute"):
        members = _members(rows, placed, pile)
        if members:
            lines.append(
                f"{pile}-bound work, intensity {'below' if pile == 'memory' else 'at or above'} the "
                f"ridge: {shares[pile]:.0%} ({_names(members, with_intensity=True)})"
            )
    return lines


def _overhead_lines(out: Placement, rows, shares, total: float, trace: Trace, fixed: float) -> list[str]:
    """The overhead pile and its parts: idle time, the fixed cost of the calls, ops that move no data."""
    parts = []
    if out.idle:
        parts.append(
            ("idle gaps between kernels" if trace.timeline == "device" else "wall time outside every op")
            + f" {out.idle / total:.0%}"
        )
    if out.fixed_total:
        n_calls = sum(r.calls for r in rows)
        parts.append(f"fixed cost {_fmt_seconds(fixed)} x {n_calls:,} calls {out.fixed_total / total:.0%}")
    if out.no_data_rows:
        moved = sum(r.seconds for r in out.no_data_rows) / total
        parts.append(f"ops that move no data ({_names(out.no_data_rows)}) {moved:.0%}")
    if not (shares["overhead"] or parts):
        return []
    return [f"overhead: {shares['overhead']:.0%}" + (f" ({'; '.join(parts)})" if parts else "")]


def _unclassified_lines(rows, placed, shares, trace: Trace) -> list[str]:
    """The unclassified pile and why its ops have no counts, the reasons with the most time first."""
    unclassified = _members(rows, placed, "unclassified")
    if not unclassified:
        return []
    why = sorted(
        {r.note for r in unclassified if r.note}, key=lambda n: -sum(r.seconds for r in unclassified if r.note == n)
    )
    line = f"unclassified: {shares['unclassified']:.0%} ({_names(unclassified)})"
    if not trace.has_shapes:
        line += f"; {NO_SHAPES}"
    elif why:
        line += "; " + "; ".join(why[:4]) + (f"; and {len(why) - 4} more reasons" if len(why) > 4 else "")
    return [line]


def roof_and_precision(rows, placed, used_roofs, roof, trace: Trace, precision) -> tuple[str, dict, list[str]]:
    """Step: the label of the roof(s) used, the share of placed work per precision, and what to say
    about a precision the roof was not measured in."""
    labels = sorted({f"{ro.label} (ridge {ro.ridge:.3g} FLOP/B)" for ro in used_roofs})
    roof_label = "; ".join(labels) if labels else "none needed"
    shares = _precision_shares(rows, placed, precision)
    if not shares:
        return (
            roof_label,
            shares,
            [
                "precision of the placed work: none -- no counted arithmetic was placed (memory copies at most, "
                "which no precision changes)"
            ],
        )
    measured_in = getattr(roof, "precision", None)
    text = ", ".join(f"{k} {v:.0%}" for k, v in shares.items())
    where = {
        "device": "each kernel's op read under the GPU's datasheet roof in its own precision"
        if precision is None and not isinstance(roof, Roof)
        else f"all work read under the {precision or 'given'} roof",
        "cpu": f"the roof was measured here in {measured_in}" if measured_in else "the roof given",
        "rows": f"the roof given ({precision or 'each row in its own precision'})",
    }[trace.timeline]
    lines = [f"precision of the placed work: {text}; {where}"]
    if measured_in and any(k not in (measured_in, "unknown") for k in shares):
        other = ", ".join(k for k in shares if k not in (measured_in, "unknown"))
        lines.append(
            f"{other} work is placed against this machine's {measured_in} roof, the only one measured "
            f"here: a {other} rate on this CPU may be lower or higher -- time it before choosing a precision"
        )
    return roof_label, shares, lines


def _precision_shares(rows, placed, precision) -> dict:
    """The share of the placed work (compute and memory, copies aside) in each precision, largest first."""
    work = {}
    for r, p in zip(rows, placed):
        if p in ("compute", "memory") and r.family != "copy":
            key = precision or r.precision or "unknown"
            work[key] = work.get(key, 0.0) + r.seconds
    total = sum(work.values())
    return {k: v / total for k, v in sorted(work.items(), key=lambda i: -i[1])} if total else {}


def communication_lines(rows, placed, shares, trace: Trace, link) -> list[str]:
    """Step: the communication pile against the network roof (chapter 8) where the link is known."""
    members = _members(rows, placed, "communication")
    if not members:
        return []
    summed = sum(r.kernel_seconds or r.seconds for r in members)
    line = (
        f"communication: {shares['communication']:.0%} exposed ({_names(members)}; "
        f"{_fmt_seconds(summed)} of collective kernels, the rest hidden behind computation)"
    )
    if link is None:
        size = trace.distributed.get("world_size") if trace.distributed else None
        line += (
            "; the trace does not say which link carried them"
            + (f" ({size} ranks)" if size else "")
            + ": pass link=<a chapter 8 link, e.g. 'NVLink 3'> to set them against its roof"
        )
        return [line]
    return [line + _against_link(trace.collectives, link)]


def _against_link(collectives, link) -> str:
    """The collectives chapter 8 prices, set against the link's roof: their bytes, bus bandwidth and share."""
    from ..core.interconnect import as_link
    from ..workloads import comms

    spec = as_link(link)
    known = [c for c in collectives if c[1] and c[2] and c[4] and c[4] >= 2 and _priced(c, comms)]
    if not known:
        return (
            f"; no collective chapter 8 prices records its message size and group, so none is set against {spec.name}"
        )
    moved = sum(c[2] for c in known)
    seconds = sum(c[3] for c in known)
    bus = sum(comms.bus_bandwidth(c[1], c[2], c[3], c[4]) * c[3] for c in known) / seconds
    return (
        f"; {len(known)} collectives moved {to_unit(moved, 'MB'):.3g} MB at a bus bandwidth of "
        f"{to_unit(bus, 'GB/s'):.3g} GB/s, {bus / spec.bytes_per_s:.0%} of the {spec.name} roof "
        f"({to_unit(spec.bytes_per_s, 'GB/s'):.3g} GB/s one way)"
    )


def _priced(collective, comms) -> bool:
    """True for a collective chapter 8 prices (not a broadcast, say)."""
    try:
        comms.bus_bandwidth_factor(collective[1], collective[4])
    except ValueError:
        return False
    return True


def _faster_than_roof(fast_rows, trace: Trace, roof_precision: str | None) -> str:
    """An op above its roof: first a precision the trace implies (TF32 from fp32 GEMMs on a GPU,
    bf16 or fp16 from the dtypes when the roof is a wider precision's), then the cache."""
    line = f"faster than the roof in use: {_names(fast_rows)} --"
    fp32 = [r for r in fast_rows if r.precision == "fp32"]
    narrow = sorted({r.precision for r in fast_rows if r.precision in ("bf16", "fp16", "fp8")})
    if fp32 and trace.timeline == "device":
        line += (
            " their fp32 work may run in TF32 on tensor cores (torch.backends.cuda.matmul.allow_tf32): pass "
            "precision='tf32' to read it under the TF32 roof; otherwise"
        )
    elif narrow and roof_precision in ("fp32", "tf32", "fp64"):
        dtypes = "/".join(narrow)
        line += (
            f" their dtypes are {dtypes} but the roof is {roof_precision}'s: place them under a {dtypes} roof "
            f"(precision='{narrow[0]}', or a roof measured in {narrow[0]}); otherwise"
        )
    return (
        line + " the roof understates what they reach (data served from cache, a read-only stream beating the "
        "measured copy, or a roof read under load); the regime still follows from intensity"
    )


# --------------------------------------------------------------------------- the tree, drawn

#: Each pile's colour in the drawn tree.
_PILE_COLORS = {
    "compute": "#f4a582",
    "memory": "#92c5de",
    "communication": "#c2a5cf",
    "overhead": "#d9d9d9",
    "unclassified": "#ffffbf",
}


def plot_triage(diagnosis: Diagnosis | None = None):
    """Draw :data:`~roofline_lib.evidence.playbook.TRIAGE_RULES` as a decision tree (matplotlib); returns the figure.

    Each box is a rule's question, each arrow its yes/no answer, each leaf a pile -- read from the
    same rules the diagnosis walks. Given a ``diagnosis``, each leaf shows its share of time.
    """
    from matplotlib.figure import Figure  # not pyplot: no global figure left open

    fig = Figure(figsize=(9.5, 6.2))
    ax = fig.add_subplot()
    ax.set_axis_off()
    n = len(TRIAGE_RULES)
    y = {r.key: 1 - i / (n + 0.2) for i, r in enumerate(TRIAGE_RULES)}
    box = dict(boxstyle="round,pad=0.4", fc="white", ec="black")
    for r in TRIAGE_RULES:
        ax.text(0.38, y[r.key], r.question, ha="center", va="center", fontsize=8.5, bbox=box)
    for r in TRIAGE_RULES:
        for answer, target, dx in (("yes", r.yes, 1), ("no", r.no, 0)):
            if target in RULES_BY_KEY:  # the next question, below
                _draw_next_question(ax, y[r.key], y[target], answer)
            else:  # a pile, to the side
                share = None if diagnosis is None else diagnosis.shares[target]
                _draw_pile(ax, y[r.key], target, answer, bool(dx), share)
    _draw_verdict(ax, diagnosis)
    ax.set_xlim(0, 1.05)
    ax.set_ylim(0.02, 1.08)
    fig.tight_layout()
    return fig


def _draw_next_question(ax, y_from: float, y_to: float, answer: str) -> None:
    """An arrow down from one question to the next, labelled with the answer that leads there."""
    ax.annotate("", (0.38, y_to + 0.055), (0.38, y_from - 0.055), arrowprops=dict(arrowstyle="->"))
    ax.text(0.39, (y_from + y_to) / 2, answer, fontsize=8, va="center")


def _draw_pile(ax, y: float, pile: str, answer: str, right: bool, share: float | None) -> None:
    """An arrow to the side from a question to a pile (yes to the right, no to the left), and the pile."""
    side = 0.82 if right else 0.05
    label = pile if share is None else f"{pile}\n{share:.0%} of the time"
    start, end = (0.56, side - 0.07) if right else (0.2, side + 0.08)
    middle = (0.56 + side - 0.07) / 2 if right else (0.2 + side + 0.08) / 2
    ax.annotate("", (end, y), (start, y), arrowprops=dict(arrowstyle="->"))
    ax.text(middle, y + 0.015, answer, fontsize=8, ha="center")
    ax.text(
        side,
        y,
        label,
        ha="left" if right else "center",
        va="center",
        fontsize=9,
        bbox=dict(boxstyle="round,pad=0.35", fc=_PILE_COLORS[pile], ec="black"),
    )


def _draw_verdict(ax, diagnosis) -> None:
    """The verdict rule under the tree (and, given a diagnosis, its verdict)."""
    verdict = f"verdict: the pile with more than {MAJORITY:.0%} of the time; none -> mixed"
    if diagnosis is not None:
        verdict += f"\nhere: {diagnosis.regime}"
    ax.text(
        0.5,
        -0.04,
        verdict,
        ha="center",
        va="center",
        fontsize=9.5,
        bbox=dict(boxstyle="round,pad=0.4", fc="#e5f5e0", ec="black"),
    )
