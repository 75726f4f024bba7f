"""``roofline diagnose``: a profiler trace (or a folder of rank traces) triaged under its roof."""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from ._common import EXIT_OK, Once, UsageError, output_path, subcommand

ORDER = 50  # its place in ``roofline --help``: after plot
PROGRESS_AFTER_SECONDS = 1.0  # a read that takes longer says so on stderr
TOP = 3  # kernels (rows) named per pile


def add(sub) -> None:
    p = subcommand(sub, "diagnose", "say what a profiler trace (or a folder of rank traces) is bound by")
    p.add_argument(
        "trace", help="a Chrome-trace JSON torch.profiler wrote (.json or .json.gz), or a folder of rank traces"
    )
    p.add_argument(
        "--roof",
        action=Once,
        help="the roof: a registry GPU (default: the GPU the trace names), or PEAK_FLOPS:BYTES_PER_S for "
        "a CPU trace (e.g. 1e12:5e10, this machine's measured roof)",
    )
    p.add_argument("--precision", action=Once, help="read all work in this precision (default: each op's own)")
    p.add_argument("--link", action=Once, help="the link the collectives ran over, e.g. 'NVLink 3' (chapter 8)")
    p.add_argument("--whole", action="store_true", help="read every kernel, not only those of complete ProfilerSteps")
    p.add_argument("--json", action="store_true", help="print the diagnosis as JSON instead of text")
    p.add_argument(
        "--plot", action=Once, metavar="FILE", help="draw the piles over time (per rank for a folder): .png or .svg"
    )
    p.set_defaults(run=run)


def run(args) -> int:
    plot = output_path(args.plot, "--plot", (".png", ".svg"))
    if not os.path.exists(args.trace):
        raise UsageError(
            f"{args.trace}: no such file or folder; give a trace torch.profiler wrote, or a folder of them"
        )
    options = {"roof": _roof(args.roof), "precision": args.precision, "link": args.link}
    if os.path.isdir(args.trace):
        return _folder(args, options, plot)
    return _one(args, options, plot)


def _roof(value):
    """``--roof``: a registry GPU's name, or PEAK:BANDWIDTH (FLOP/s and bytes/s) as a Roof."""
    if value is None:
        return None
    if ":" not in value:
        from ..core.hardware import as_gpu

        try:
            return as_gpu(value)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"--roof: {exc}") from exc
    from ..core.roofline import Roof

    try:
        peak, bandwidth = (float(x) for x in value.split(":"))
        return Roof(peak, bandwidth, f"the roof given ({value})")
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"--roof {value}: give PEAK_FLOPS:BYTES_PER_S as two positive numbers, e.g. 1e12:5e10 ({exc})"
        ) from exc


def _reading(path: str):
    """A progress line on stderr when reading ``path`` takes more than a second; returns its stop."""
    from ..core.formatting import data_size

    began = time.perf_counter()
    what = path
    if os.path.isfile(path):  # the size on disk: a gzipped trace's is a tenth or so of what is read
        what += f" ({data_size(os.path.getsize(path))}{' gzipped' if path.endswith('.gz') else ''})"
    timer = threading.Timer(PROGRESS_AFTER_SECONDS, lambda: print(f"roofline: reading {what} ...", file=sys.stderr))
    timer.daemon = True
    timer.start()

    def stop() -> None:
        timer.cancel()
        seconds = time.perf_counter() - began
        if seconds > PROGRESS_AFTER_SECONDS:
            print(f"roofline: read {what} in {seconds:.1f} s", file=sys.stderr)

    return stop


def _diagnose(source, options):
    """The library's diagnosis, its refusals as usage errors (a bad trace is bad input)."""
    from ..evidence import diagnose as D

    try:
        return D.diagnose(source, **options)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from exc


def _one(args, options, plot) -> int:
    from ..evidence.trace_rows import read_trace

    stop = _reading(args.trace)
    try:
        trace = read_trace(args.trace, whole=args.whole)
    except (TypeError, ValueError, OSError) as exc:
        raise UsageError(str(exc)) from exc
    finally:
        stop()
    diagnosis = _diagnose(trace, options)
    if plot is not None:
        from ..evidence.diagnosis_report import plot_piles, plot_triage

        fig = plot_piles(trace, diagnosis) if trace.timeline == "device" else plot_triage(diagnosis)
        fig.savefig(plot)
    if args.json:
        print(json.dumps(_as_json(diagnosis, trace), indent=1))
    else:
        print(diagnosis)
        print(_top_lines(diagnosis))
    return EXIT_OK


def _folder(args, options, plot) -> int:
    from ..evidence.trace_ranks import diagnose_ranks

    stop = _reading(args.trace)
    try:
        summary = diagnose_ranks(args.trace, **options)
    except (TypeError, ValueError, OSError) as exc:
        raise UsageError(str(exc)) from exc
    finally:
        stop()
    if plot is not None:
        from ..evidence.diagnosis_report import plot_ranks

        plot_ranks(summary).savefig(plot)
    if args.json:
        print(json.dumps(_ranks_json(summary), indent=1))
    else:
        print(summary)
        slow = next(r for r in summary.ranks if r.rank == summary.slowest)
        print(f"\nthe slowest rank, {slow.rank}:\n{slow.diagnosis}")
    return EXIT_OK


def _top(diagnosis, pile: str) -> list:
    rows = [(r, b) for r, p, b in zip(diagnosis.rows, diagnosis.placed, diagnosis.placed_by) if p == pile]
    return sorted(rows, key=lambda rb: -rb[0].seconds)[:TOP]


def _top_lines(diagnosis) -> str:
    """The kernels (rows) with the most time in each pile, and how each was placed."""
    lines = ["top of each pile:"]
    for pile in diagnosis.shares:
        for r, by in _top(diagnosis, pile):
            how = {"name": ", by name", "shape": ", by shape"}.get(by, "")
            lines.append(f"  {pile:13s} {r.seconds / diagnosis.total_seconds:6.1%}  {r.name} x{r.calls}{how}")
    return "\n".join(lines)


def _as_json(diagnosis, trace=None) -> dict:
    out = {
        "regime": diagnosis.regime,
        "shares": dict(diagnosis.shares),
        "seconds": dict(diagnosis.seconds),
        "total_seconds": diagnosis.total_seconds,
        "timeline": diagnosis.timeline,
        "roof": diagnosis.roof_label,
        "precisions": dict(diagnosis.precisions),
        "by_name_share": {p: diagnosis.by_name_share(p) for p in ("compute", "memory")},
        "impossible": list(diagnosis.impossible),
        "top": {
            pile: [
                {"name": r.name, "calls": r.calls, "seconds": r.seconds, "placed_by": by}
                for r, by in _top(diagnosis, pile)
            ]
            for pile in diagnosis.shares
        },
        "evidence": list(diagnosis.evidence),
        "next": diagnosis.remedy,
    }
    if trace is not None:
        out["gpu"] = trace.gpu
    return out


def _ranks_json(summary) -> dict:
    return {
        "slowest_rank": summary.slowest,
        "waited_for": summary.straggler,
        "spread_seconds_per_step": {p: list(v) for p, v in summary.spread.items()},
        "summary": summary.lines(),
        "ranks": {
            str(r.rank): {
                "file": os.path.basename(r.path),
                "seconds_per_step": r.seconds_per_step,
                **_as_json(r.diagnosis),
            }
            for r in summary.ranks
        },
    }
