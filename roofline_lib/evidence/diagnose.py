"""The playbook's diagnosis: a profile in, its regime, evidence and remedy out; a timed step's MFU.

:func:`diagnose` composes the playbook's steps, each in its own module:

1. read the profile into rows (:mod:`roofline_lib.evidence.trace_rows`, over the trace reader
   :mod:`roofline_lib.evidence.traces` and the op counts of :mod:`roofline_lib.evidence.recorded_ops`);
2. place each row's time in a pile under its roof (:mod:`roofline_lib.evidence.triage`), by the
   playbook's rules (:mod:`roofline_lib.evidence.playbook`);
3. name the verdict and its remedy (:mod:`roofline_lib.evidence.playbook`);
4. write the evidence (:mod:`roofline_lib.evidence.diagnosis_report`).

:func:`measured_mfu` is the playbook's first number: a step timed here against its roof.

Inputs :func:`diagnose` accepts:

* a :class:`ProfiledRun` from :func:`profile_run`, or a ``torch.profiler.profile`` object (CPU or
  CUDA), recorded with ``record_shapes=True``;
* a Chrome-trace JSON exported by ``torch.profiler`` (``prof.export_chrome_trace(path)``): a path,
  or the parsed dict -- so a GPU run can be diagnosed on a laptop;
* a list of :class:`OpStat` rows, dicts with the same keys, or ``(name, calls, seconds)`` tuples.

The roof in use is this machine's measured roof for a CPU profile and the GPU's datasheet roof in
the op's precision for a GPU trace; every verdict names its roof and the precisions of the work
placed under it. Times are SI seconds throughout. torch is imported only by the functions that
profile.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from ..core.checks import _positive
from ..core.hardware import GPUSpec, _gpu, _precision_key
from ..core.roofline import PLAUSIBILITY_TOLERANCE, check_plausible
from ..core.roofline import roof as _as_roof

# The playbook's steps. The names of theirs in __all__ below are the ones chapters 6 and 7 (and
# tools/trace_digest.py) reach as ``diagnose.<name>``: re-exported here so that one import serves
# the whole playbook; each is defined in the module of its step.
from .diagnosis_report import evidence_lines, no_majority_line, plot_triage
from .playbook import MAJORITY, PILES, REMEDIES, TRIAGE_RULES, VERDICTS, Rule, remedy, verdict
from .profile_live import ProfiledRun, measure_fixed_cost, profile_run, quiet_profiler_log
from .recorded_ops import count_op
from .trace_ranks import RankSummary, diagnose_ranks  # noqa: F401 -- a folder of ranks, reached as diagnose.<name>
from .trace_rows import OpStat, Trace, as_trace, read_trace
from .triage import idle_seconds, place_rows

__all__ = [
    "PILES",
    "VERDICTS",
    "MAJORITY",
    "Rule",
    "TRIAGE_RULES",
    "REMEDIES",
    "OpStat",
    "Trace",
    "Diagnosis",
    "count_op",
    "read_trace",
    "as_trace",
    "ProfiledRun",
    "profile_run",
    "quiet_profiler_log",
    "measure_fixed_cost",
    "diagnose",
    "plot_triage",
    "measured_mfu",
]


@dataclass(frozen=True)
class Diagnosis:
    """The verdict of :func:`diagnose`: a regime, the shares behind it, and the evidence.

    ``shares`` and ``seconds`` are keyed by pile (:data:`PILES`); the shares add up to 1.
    ``regime`` is the pile holding more than :data:`MAJORITY` of the time, or "mixed".
    ``rows`` holds every row and ``placed`` the pile each row's work time went to, in order.
    ``roof_label`` names the roof (or roofs) used; ``precisions`` the share of the placed work
    (compute and memory) in each precision. ``remedy`` is the playbook's next step for this verdict.
    ``placed_by`` says, for each row, whether its pile came from its counts ("shape"), from its
    kernels' names only ("name"), or neither (""); ``impossible`` names the rows that ran faster than
    their datasheet roof (a timing or counting error, left unclassified).
    """

    regime: str
    evidence: tuple[str, ...]
    shares: Mapping[str, float]
    seconds: Mapping[str, float]
    total_seconds: float
    timeline: str
    roof_label: str
    rows: tuple[OpStat, ...]
    placed: tuple[str, ...]
    remedy: str
    precisions: Mapping[str, float] = field(default_factory=dict)
    placed_by: tuple[str, ...] = ()
    impossible: tuple[str, ...] = ()

    def by_name_share(self, pile: str) -> float:
        """The share of the time placed in ``pile`` by kernel names only (no counts)."""
        named = sum(r.seconds for r, p, b in zip(self.rows, self.placed, self.placed_by) if p == pile and b == "name")
        return named / self.total_seconds if self.total_seconds else 0.0

    def __str__(self) -> str:
        if self.regime == "mixed":
            head = "mixed: " + ", ".join(f"{p} {self.shares[p]:.0%}" for p in PILES if self.shares[p] >= 0.005)
        else:
            head = f"{self.regime}-bound ({self.shares[self.regime]:.0%} of the time)"
            if self.by_name_share(self.regime) >= 0.005:
                head = head[:-1] + f"; {self.by_name_share(self.regime):.0%} placed by kernel name only)"
            if self.regime == "unclassified":
                head = f"unclassified ({self.shares[self.regime]:.0%} of the time could not be counted)"
        return "\n".join([head, *(f"  - {line}" for line in self.evidence), f"  next: {self.remedy}"])


def _check_args(profile, wall_seconds, fixed_cost_seconds, precision):
    """Step: the keyword arguments checked, a ProfiledRun's own wall time and fixed cost taken."""
    wall = None if wall_seconds is None else _positive(wall_seconds, "wall_seconds", "seconds")
    fixed = (
        None
        if fixed_cost_seconds is None
        else _positive(fixed_cost_seconds, "fixed_cost_seconds", "seconds", allow_zero=True)
    )
    if isinstance(profile, ProfiledRun):
        wall = wall if wall is not None else profile.wall_seconds
        fixed = fixed if fixed is not None else profile.fixed_cost_seconds
    if precision is not None and not isinstance(precision, str):
        raise TypeError(f"precision must be a precision name such as 'bf16', got {precision!r}")
    return wall, fixed


def _check_cpu_roof(trace: Trace, roof) -> None:
    """Step: a trace of CPU work alone is diagnosed only against a CPU's roof, given on purpose: never
    under a GPU's datasheet roof, never without a roof."""
    if trace.timeline != "cpu":
        return
    what = trace.notes[0] if trace.notes else "this profile holds CPU ops only"
    if roof is None:
        raise ValueError(
            f"{what}. Diagnosing it as CPU work needs this machine's roof: pass "
            "roof=measured_roofs.measure_ceilings(device='cpu') (or a Roof of the CPU it ran on)"
        )
    if isinstance(roof, (str, GPUSpec)):
        raise ValueError(
            f"{what}, so a GPU's roof ({roof if isinstance(roof, str) else roof.name}) does not bound it: pass the "
            "CPU's roof (roof=measured_roofs.measure_ceilings(device='cpu')), or a trace recorded with "
            "ProfilerActivity.CUDA"
        )


def _work_seconds(trace: Trace) -> float:
    """Step: the seconds the rows hold; a profile of no time has no verdict."""
    op_seconds = sum(r.seconds for r in trace.rows)
    if op_seconds <= 0:
        raise ValueError("the profile holds no time: every row has 0 seconds; pass a profile of work that ran")
    return op_seconds


def diagnose(
    profile,
    *,
    roof=None,
    precision: str | None = None,
    wall_seconds: float | None = None,
    fixed_cost_seconds: float | None = None,
    link=None,
) -> Diagnosis:
    """Say whether a profiled program is compute-, memory-, communication- or overhead-bound, or mixed.

    ``profile``: a :class:`ProfiledRun`, a torch profiler result, a Chrome-trace JSON (path or
    dict) or hand-made rows (see the module docstring). ``roof``: the roof to place ops against --
    a :class:`~roofline_lib.evidence.measured_roofs.MeasuredCeilings` or :class:`~roofline_lib.core.roofline.Roof`, or a
    registry GPU (then each op is read in its own precision unless ``precision`` is given). A CPU
    profile needs it; a GPU trace defaults to the GPU it names. ``wall_seconds``: the span the
    profile covers (a ProfiledRun brings its own); what the ops do not cover is idle.
    ``fixed_cost_seconds``: the fixed cost of one CPU op call (a ProfiledRun brings one measured
    by :func:`measure_fixed_cost`); ignored on a GPU timeline. ``link``: the link the collectives
    ran over (a chapter 8 link name such as ``"NVLink 3"``, or a LinkSpec), to set the
    communication pile against its roof.

    Each slice of time is placed by :data:`TRIAGE_RULES`; the verdict is the pile with more than
    half the time, else "mixed". Raises TypeError for something that is not a profile, ValueError
    for an empty one (no verdict: nothing ran) or a missing roof.
    """
    wall, fixed = _check_args(profile, wall_seconds, fixed_cost_seconds, precision)
    trace = as_trace(profile)
    _check_cpu_roof(trace, roof)
    rows = trace.rows
    op_seconds = _work_seconds(trace)
    fixed = 0.0 if trace.timeline == "device" else (fixed or 0.0)  # a kernel's time is work
    idle, evidence = idle_seconds(trace, wall, op_seconds)
    out = place_rows(rows, trace, roof, precision, fixed, idle)
    total = sum(out.piles.values())
    shares = {k: v / total for k, v in out.piles.items()}
    regime, top = verdict(shares)
    roof_label, precisions, lines = evidence_lines(
        out, rows, shares, trace, roof=roof, precision=precision, fixed=fixed, link=link
    )
    evidence += lines + ([no_majority_line(top)] if regime == "mixed" else [])
    return Diagnosis(
        regime=regime,
        evidence=tuple(evidence),
        shares=MappingProxyType(shares),
        seconds=MappingProxyType(out.piles),
        total_seconds=total,
        timeline=trace.timeline,
        roof_label=roof_label,
        rows=rows,
        placed=tuple(out.placed),
        remedy=remedy(regime, top, rows, out.placed, trace),
        precisions=MappingProxyType(precisions),
        placed_by=tuple(_placed_by(r, p) for r, p in zip(rows, out.placed)),
        impossible=tuple(r.name for r, _, _ in out.impossible),
    )


def _placed_by(row: OpStat, pile: str) -> str:
    """What placed a row in its pile: its counts ("shape"), its kernels' names ("name"), or neither."""
    if pile in ("compute", "memory"):
        return "name" if row.named and not row.counted else "shape"
    return ""


# --------------------------------------------------------------------------- MFU measured here


def measured_mfu(
    model_flops, seconds, ceilings, *, precision: str = "bf16", tolerance: float = PLAUSIBILITY_TOLERANCE
) -> float:
    """Model FLOPs utilisation of a step timed here: ``model_flops / seconds / peak``.

    ``model_flops`` is the step's model FLOP count under a convention you state (6N, three-term,
    or a FlopCounterMode audit); ``seconds`` a float or a Timing (its median); ``ceilings`` a
    MeasuredCeilings (its matmul rate is the peak), a Roof, or a GPU name/spec (its dense peak in
    ``precision``). Raises ImplausibleMeasurement by the one plausibility rule: a step cannot beat
    the matmul roof.
    """
    f = _positive(model_flops, "model_flops", "FLOP")
    t = _positive(getattr(seconds, "median_s", seconds), "seconds", "seconds")
    _precision_key(precision)
    if ceilings is None:
        raise TypeError("ceilings must be a MeasuredCeilings, a Roof, a GPUSpec or a GPU name, got None")
    if isinstance(ceilings, str):
        ceilings = _gpu(ceilings, "ceilings")
    try:
        the_roof = _as_roof(ceilings, precision)
    except TypeError:
        raise TypeError(
            "ceilings must be a MeasuredCeilings, a Roof, a GPUSpec or a GPU name, "
            f"got {type(ceilings).__name__} {ceilings!r}"
        ) from None
    achieved = f / t
    check_plausible(achieved, 0.0, the_roof, tolerance=tolerance, what="the measured step")
    return achieved / the_roof.peak_flops_per_s
