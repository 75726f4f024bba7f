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
from .trace_ranks import RankSummary
from .trace_rows import NO_SHAPES, Trace
from .triage import Placement

if TYPE_CHECKING:
    from .diagnose import Diagnosis

__all__ = [
    "plot_triage",
    "plot_piles",
    "plot_ranks",
    "piles_over_time",
    "evidence_lines",
    "no_majority_line",
    "roof_and_precision",
    "communication_lines",
]


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
    lines += _work_lines(rows, out.placed, shares, total) + _by_name_lines(rows, out.placed, total) + communication
    lines += _overhead_lines(out, rows, shares, total, trace, fixed)
    lines += _unclassified_lines(rows, out.placed, shares, trace, out.impossible)
    if out.impossible:
        lines.append(_impossible_line(out.impossible, total, trace))
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


def _work_lines(rows, placed, shares, total: float) -> list[str]:
    """The memory- and compute-bound piles, with their largest ops and intensities (the rows placed
    by shape; :func:`_by_name_lines` tells the rest)."""
    lines = []
    for pile in ("memory", "compute"):
        members = [r for r in _members(rows, placed, pile) if not r.named]
        by_name = sum(r.seconds for r in _members(rows, placed, pile) if r.named) / total
        if members:
            lines.append(
                f"{pile}-bound work, intensity {'below' if pile == 'memory' else 'at or above'} the "
                f"ridge: {shares[pile] - by_name:.0%} "
                f"({_names(members, with_intensity=True)})"
            )
    return lines


def _by_name_lines(rows, placed, total: float) -> list[str]:
    """The rows placed by their kernels' names only (no counts): how much of each pile, by what."""
    named = [(r, p) for r, p in zip(rows, placed) if r.named and p == r.named]
    if not named:
        return []
    parts = []
    for pile in ("compute", "memory"):
        members = [r for r, p in named if p == pile]
        if members:
            by_what: dict[str, float] = {}
            for r in members:
                by_what[r.family] = by_what.get(r.family, 0.0) + r.seconds
            what = ", ".join(f"{w} {v / total:.0%}" for w, v in sorted(by_what.items(), key=lambda i: -i[1])[:4])
            parts.append(f"{pile} {sum(r.seconds for r in members) / total:.0%} ({what}: {_names(members)})")
    return [
        "placed by kernel name only, no counts (a GEMM, convolution or attention kernel as compute, an "
        "element-wise, norm or copy kernel as memory; the roofline did not check them): " + "; ".join(parts)
    ]


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


def _unclassified_lines(rows, placed, shares, trace: Trace, impossible=()) -> list[str]:
    """The unclassified pile and why its ops have no counts, the reasons with the most time first."""
    unclassified = _members(rows, placed, "unclassified")
    if not unclassified:
        return []
    ruled_out = {id(r) for r, _, _ in impossible}
    notes = {id(r): ("faster than its roof: impossible" if id(r) in ruled_out else r.note) for r in unclassified}
    why = sorted(
        {n for n in notes.values() if n},
        key=lambda n: -sum(r.seconds for r in unclassified if notes[id(r)] == n),
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


def _impossible_line(impossible, total: float, trace: Trace) -> str:
    """The rows faster than a datasheet roof: how far above it each ran, and why that is an error."""
    worst = sorted(impossible, key=lambda i: -i[2])
    parts = [f"{r.name} x{r.calls} at {times:.2g}x the {ro.label} roof" for r, ro, times in worst[:3]]
    more = f" and {len(worst) - 3} more" if len(worst) > 3 else ""
    share = sum(r.seconds for r, _, _ in impossible) / total
    line = (
        f"impossible: {', '.join(parts)}{more} -- no kernel beats its datasheet roof, so this is a timing or "
        "counting error (kernels charged to the wrong op, shapes that are not the ones that ran, a sparse "
        f"or wrong-precision peak); their {share:.0%} of the time is left unclassified, in no verdict"
    )
    if trace.timeline == "device" and any(r.precision == "fp32" and r.family == "matmul" for r, _, _ in impossible):
        line += "; an fp32 GEMM may have run in TF32 on tensor cores: pass precision='tf32' to read it so"
    return line


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


# --------------------------------------------------------------------------- the piles over time


def _check_trace_and_diagnosis(trace, diagnosis) -> None:
    """A Trace and the Diagnosis made from it (one pile per row), or TypeError/ValueError naming which."""
    from .diagnose import Diagnosis  # the diagnosis imports this module: its class is looked up at call time

    if not isinstance(trace, Trace):
        raise TypeError(f"trace must be a Trace (read_trace's result), got {type(trace).__name__} {trace!r}")
    if not isinstance(diagnosis, Diagnosis):
        raise TypeError(
            f"diagnosis must be the Diagnosis diagnose() made from the trace, got {type(diagnosis).__name__} {diagnosis!r}"
        )
    if len(diagnosis.placed) != len(trace.rows):
        raise ValueError(
            f"diagnosis places {len(diagnosis.placed)} rows but the trace holds {len(trace.rows)}: "
            "pass the Diagnosis diagnose() made from this trace"
        )


def piles_over_time(trace: Trace, diagnosis: Diagnosis, bins: int = 60) -> tuple[list[float], dict[str, list[float]]]:
    """The piles through a GPU trace's kernel window: ``bins`` equal slices of it, and each pile's
    seconds in each slice. A kernel's exposed time is spread evenly over its run, into the pile its
    row was placed in; what no kernel covers is idle, in the overhead pile. Returns the slices'
    left edges (seconds from the window's start) and the seconds by pile.
    """
    _check_trace_and_diagnosis(trace, diagnosis)
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
        raise ValueError(f"bins must be a positive whole number of time slices, got {bins!r}")
    if trace.timeline != "device" or not trace.kernel_spans:
        raise ValueError(
            f"trace must hold a GPU's kernels for the piles over time (a trace with 'kernel' events, read by "
            f"read_trace), got a {trace.timeline!r} trace with {len(trace.kernel_spans)} kernel spans"
        )
    start = trace.kernel_spans[0][0]
    end = max(s[1] for s in trace.kernel_spans)
    width = (end - start) / bins or 1.0
    piles = {p: [0.0] * bins for p in _PILE_COLORS}
    for a, b, exposed, row in trace.kernel_spans:
        if b <= a or exposed <= 0:
            continue
        pile = diagnosis.placed[row]
        density = exposed / (b - a)  # its exposed share, spread evenly over its run
        first, last = int((a - start) / width), min(int((b - start) / width), bins - 1)
        for i in range(first, last + 1):
            lo, hi = start + i * width, start + (i + 1) * width
            piles[pile][i] += density * max(0.0, min(b, hi) - max(a, lo))
    for i in range(bins):
        piles["overhead"][i] += max(0.0, width - sum(piles[p][i] for p in piles))  # idle
    return [i * width for i in range(bins)], piles


def plot_piles(trace: Trace, diagnosis: Diagnosis, bins: int = 60):
    """The piles through the kernel window as stacked bars (matplotlib); returns the figure."""
    from matplotlib.figure import Figure

    edges, piles = piles_over_time(trace, diagnosis, bins)
    width = edges[1] - edges[0] if len(edges) > 1 else max(sum(piles[p][0] for p in piles), 1e-9)
    fig = Figure(figsize=(9, 3.6))
    ax = fig.add_subplot()
    bottom = [0.0] * len(edges)
    scale, unit = (1e3, "ms") if edges[-1] + width < 1.0 else (1.0, "s")
    for pile, color in _PILE_COLORS.items():
        share = [v / width for v in piles[pile]]
        ax.bar([e * scale for e in edges], share, width=width * scale, bottom=bottom, color=color, align="edge",
               label=f"{pile} {diagnosis.shares[pile]:.0%}")  # fmt: skip
        bottom = [b + s for b, s in zip(bottom, share)]
    ax.set_xlabel(f"time in the kernel window ({unit})")
    ax.set_ylabel("share of each slice")
    ax.set_ylim(0, 1.0)
    ax.set_title(
        f"{diagnosis.regime}: the piles through the trace ({diagnosis.roof_label.split(' (')[0]})", fontsize=10
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    return fig


def plot_ranks(summary):
    """Each rank's piles as a stacked bar (matplotlib), the straggler marked; returns the figure."""
    from matplotlib.figure import Figure

    if not isinstance(summary, RankSummary):
        raise TypeError(
            "summary must be the RankSummary diagnose_ranks() made from a folder of rank traces, "
            f"got {type(summary).__name__} {summary!r}"
        )

    fig = Figure(figsize=(max(4.0, 0.6 * len(summary.ranks) + 3), 3.6))
    ax = fig.add_subplot()
    names = [f"rank {r.rank}" + (" *" if r.rank == summary.straggler else "") for r in summary.ranks]
    bottom = [0.0] * len(names)
    for pile, color in _PILE_COLORS.items():
        per_step = [r.pile_seconds(pile) / max(r.steps, 1) * 1e3 for r in summary.ranks]
        ax.bar(names, per_step, bottom=bottom, color=color, label=pile)
        bottom = [b + v for b, v in zip(bottom, per_step)]
    ax.set_ylabel("ms per step")
    ax.set_title("the piles of each rank (* the rank the others wait for)", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    return fig
