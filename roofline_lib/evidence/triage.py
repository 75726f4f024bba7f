"""The triage: each row's time placed in one pile, under the roof it is read against.

The piles and the rules are the playbook's (:mod:`roofline_lib.evidence.playbook`); this module
walks them for every row of a :class:`~roofline_lib.evidence.trace_rows.Trace`. The roof in use is
the caller's (this machine's measured roof for a CPU profile) or the GPU's datasheet roof in the
op's precision for a GPU trace (TF32 for fp32 GEMMs whose kernel names say they ran on tensor
cores).

A row faster than its roof is one of two things. Under a datasheet roof (a registry GPU's, or any
roof on a GPU kernel timeline) it is **impossible**: a timing or counting error, so its time goes
to no verdict pile -- it is left unclassified and named as impossible, with how far above the roof
it ran. Under a roof measured on this machine (a CPU's) the roof itself may be what is low (data
served from cache): the row is kept where its intensity puts it, and noted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.formatting import seconds as _fmt_seconds
from ..core.hardware import GPUSpec, as_gpu
from ..core.roofline import PLAUSIBILITY_TOLERANCE, Roof, check_plausible
from ..core.roofline import roof as _as_roof
from .playbook import PILES, walk
from .trace_devices import DeviceMatch, device_roof, registry_gpu
from .trace_rows import OpStat, Trace

__all__ = ["Placement", "place_rows", "idle_seconds", "roof_for"]


@dataclass
class Placement:
    """What placing the rows gives: the seconds per pile and the evidence gathered on the way.

    ``placed`` holds the pile of each row's work, in order; ``used_roofs`` the roofs read;
    ``fixed_total`` the fixed cost per call charged to overhead; ``idle`` the idle seconds;
    ``no_data_rows`` the counted rows that move no data; ``fast_rows`` the rows faster than a measured
    roof (kept in their pile); ``impossible`` ``(row, roof, times)`` for each row faster than a
    datasheet roof -- ``times`` how many times the roof it ran at -- left unclassified.
    """

    piles: dict
    placed: list = field(default_factory=list)
    used_roofs: list = field(default_factory=list)
    fixed_total: float = 0.0
    idle: float = 0.0
    no_data_rows: list = field(default_factory=list)
    fast_rows: list = field(default_factory=list)
    impossible: list = field(default_factory=list)


def roof_for(row: OpStat, roof_arg, trace: Trace, precision, cache) -> Roof | None:
    """The roof a row is placed against: the caller's, or the trace's GPU in the row's precision
    (None when the GPU has no roof in that precision: the row is then unclassified). A trace's GPU
    is found from what the trace says of it (:func:`roofline_lib.evidence.trace_devices.registry_gpu`):
    one die of a two-die AMD part gets half the part's roof."""
    source = roof_arg
    if source is None:
        if trace.timeline != "device":
            raise ValueError(
                "a CPU profile needs this machine's roof: pass roof=measured_roofs.measure_ceilings(device='cpu') "
                "(or a Roof, or a GPU for hand-made rows)"
            )
        if trace.gpu is None:
            raise ValueError(
                "the trace names no GPU (it has no 'deviceProperties'): pass roof=<a registry GPU name, "
                "e.g. 'H100'> or roof=rl.Roof(peak_flops_per_s, bytes_per_s, label)"
            )
        if "match" not in cache:
            cache["match"] = _gpu_of(trace)
        match = cache["match"]
    elif isinstance(source, (GPUSpec, str)):
        match = DeviceMatch(as_gpu(source) if not isinstance(source, GPUSpec) else source, 1.0, "given")
    else:
        return _as_roof(source)
    p = precision or row.precision or "fp32"
    if precision is None and p not in match.spec.precisions:  # an fp64 op: no roof in the registry to place it under
        return None
    key = (match.spec.name, match.share, p)
    if key not in cache:
        cache[key] = device_roof(match, p)
    return cache[key]


def _gpu_of(trace: Trace) -> DeviceMatch:
    try:
        return DeviceMatch(as_gpu(trace.gpu), 1.0, "by its registry name")
    except ValueError:
        return registry_gpu(trace.gpu, trace.device)


def idle_seconds(trace: Trace, wall, op_seconds) -> tuple[float, list[str]]:
    """Step: the idle time -- the span read minus the time the ops or kernels cover -- and, when
    the ops cover more than the span, the evidence line that says so (no idle time is counted)."""
    span = wall if wall is not None else trace.window_seconds
    busy = trace.busy_seconds if trace.busy_seconds is not None else op_seconds
    if span is None:
        return 0.0, []
    if span >= busy:
        return span - busy, []
    return 0.0, [
        f"the ops cover {_fmt_seconds(busy)}, more than the {_fmt_seconds(span)} span read: they "
        "overlap across threads or streams; no idle time counted"
    ]


def place_rows(rows, trace: Trace, roof, precision, fixed: float, idle: float) -> Placement:
    """Step: walk the playbook's rules for every row; its work goes to one pile.

    ``fixed`` is the fixed cost of one call (overhead before any work, collectives aside);
    ``idle`` the idle seconds, which go to the pile the first rule names.
    """
    out = Placement(dict.fromkeys(PILES, 0.0), idle=idle)
    out.piles[walk({"idle": True})] += idle
    roofs: dict = {}
    for r in rows:
        comm = r.family == "communication"
        fixed_part = 0.0 if comm else min(r.seconds, fixed * r.calls)
        out.fixed_total += fixed_part
        if fixed_part:
            out.piles[walk({"idle": False, "comm": False, "fixed": True})] += fixed_part
        facts = _facts(r, comm, roof, trace, precision, roofs, out)
        pile = walk(facts)
        if pile == "overhead" and facts["counted"]:
            out.no_data_rows.append(r)
        out.placed.append(pile)
        out.piles[pile] += r.seconds - fixed_part
    return out


def _facts(r: OpStat, comm: bool, roof, trace: Trace, precision, roofs, out: Placement) -> dict:
    """Step: the answers to the rules for one row's work; its roof is noted in ``out`` (and the row,
    when it runs faster than that roof)."""
    facts = {
        "idle": False,
        "comm": comm,
        "fixed": False,
        "counted": r.counted,
        "work": bool(r.counted and (r.flops or r.bytes_moved)),
    }
    if r.named and not r.counted and not comm:  # no count, but a kernel named by what it does
        return {**facts, "counted": True, "work": True, "ridge": r.named == "memory"}
    the_roof = roof_for(r, roof, trace, precision, roofs) if facts["work"] and not comm else None
    if facts["work"] and not comm and the_roof is None:
        facts["counted"] = facts["work"] = False  # counted, but no roof in its precision
    if the_roof is not None:
        fast = _faster_than(r, the_roof)  # by the one plausibility rule
        if fast and _datasheet(roof, trace):
            out.impossible.append((r, the_roof, _times_the_roof(r, the_roof)))
            facts["counted"] = facts["work"] = False  # a timing or counting error: no verdict
            return facts
        if the_roof not in out.used_roofs:
            out.used_roofs.append(the_roof)
        facts["ridge"] = r.flops < the_roof.ridge * r.bytes_moved  # intensity below the ridge
        if fast:
            out.fast_rows.append(r)
    return facts


def _datasheet(roof_arg, trace: Trace) -> bool:
    """True when the roof is a datasheet's, which no kernel can beat: a registry GPU's (the trace's or
    the caller's), or any roof set over a GPU kernel timeline. A roof measured here may be beaten."""
    return trace.timeline == "device" or roof_arg is None or isinstance(roof_arg, (GPUSpec, str))


def _times_the_roof(r: OpStat, the_roof: Roof) -> float:
    """How many times its roof a row ran at, for the report: the larger of its FLOP rate over the
    peak and its byte rate over the bandwidth, on the kernels' own run time (only asked of a row
    :func:`_faster_than` its roof, so that time is positive)."""
    run = r.kernel_seconds if r.kernel_seconds is not None else r.seconds
    return max(r.flops / run / the_roof.peak_flops_per_s, r.bytes_moved / run / the_roof.bytes_per_s)


def _faster_than(r: OpStat, the_roof: Roof) -> bool:
    """True when the row's kernels ran faster than the roof allows (by the one plausibility rule)."""
    run = r.kernel_seconds if r.kernel_seconds is not None else r.seconds
    if run <= 0:
        return False
    try:
        check_plausible(r.flops / run, r.bytes_moved / run, the_roof, tolerance=PLAUSIBILITY_TOLERANCE, what=r.name)
    except ValueError:
        return True
    return False
