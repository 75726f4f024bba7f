"""Read every trace under tests/traces/ with Holistic Trace Analysis (HTA) and store its figures.

The course's trace reader is checked against HTA (``tests/test_traces_stored.py``), but HTA is not
one of the course's dependencies: this script runs in a separate environment that has it
(``pip install holistictraceanalysis``), and writes ``tests/traces/hta_reference.json`` with HTA's
version beside each trace's figures, as percentages of HTA's kernel window:

* ``idle``: the window less the union of all kernels (HTA's temporal breakdown);
* ``computation``: the union of the computation kernels (every kernel not a collective or a copy);
* ``communication``: time only collectives run (HTA's "COMMUNICATION" kernel-type row);
* ``memory``: time copies and sets run with no computation ("MEMORY" and "COMMUNICATION
  overlapping MEMORY").

A trace HTA cannot break down (no kernels) is stored with the reason. Each trace is read alone (a
rank folder's files one by one), with HTA's defaults (the last ProfilerStep left out).

    .../hta-env/bin/python tools/hta_reference.py [--time FILE]

``--time FILE`` also times HTA's reading of FILE (CPU seconds and peak memory), for the record.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "tests" / "traces"
OUT = TRACES / "hta_reference.json"


def trace_files() -> list[Path]:
    """Every trace file under tests/traces/, by its path there."""
    return sorted(p for p in TRACES.rglob("*") if p.is_file() and p.name.endswith((".json", ".json.gz")) and p != OUT)


def hta_figures(path: Path) -> dict:
    """HTA's breakdown of one trace file, in % of its kernel window (or why it has none)."""
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(path, folder)
        try:
            analysis = TraceAnalysis(trace_dir=folder)
            temporal = analysis.get_temporal_breakdown(visualize=False).iloc[0]
            kinds, _ = analysis.get_gpu_kernel_breakdown(visualize=False)
        except Exception as err:  # HTA's own refusal (no kernels, a counter-only trace): stored as it is
            return {"analysed": False, "reason": f"{type(err).__name__}: {err}"[:300]}
    window = float(temporal["kernel_time(us)"])
    by_kind = {str(k): float(v) for k, v in zip(kinds["kernel_type"], kinds["sum"])}
    return {
        "analysed": True,
        "kernel_window_us": window,
        "idle": 100 * float(temporal["idle_time(us)"]) / window,
        "computation": 100 * float(temporal["compute_time(us)"]) / window,
        "communication": 100 * by_kind.get("COMMUNICATION", 0.0) / window,
        "memory": 100 * (by_kind.get("MEMORY", 0.0) + by_kind.get("COMMUNICATION overlapping MEMORY", 0.0)) / window,
    }


def time_hta(path: Path) -> dict:
    """CPU seconds and peak memory of HTA reading ``path`` (its TraceAnalysis, parsing only)."""
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(path, folder)
        start = time.process_time()
        TraceAnalysis(trace_dir=folder)
        seconds = time.process_time() - start
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "file": path.name,
        "megabytes": os.path.getsize(path) / 1e6,
        "cpu_seconds": seconds,
        "peak_rss_mib": peak_kib / 1024,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time", type=Path, help="also time HTA reading this trace file")
    args = parser.parse_args(argv)
    version = importlib.metadata.version("holistictraceanalysis")
    figures = {str(p.relative_to(TRACES)): hta_figures(p) for p in trace_files()}
    record = {
        "tool": f"holistictraceanalysis {version}",
        "python": sys.version.split()[0],
        "what": "HTA's breakdown of each trace under tests/traces/, in % of HTA's kernel window "
        "(written by tools/hta_reference.py; read by tests/test_traces_stored.py)",
        "traces": figures,
    }
    OUT.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(figures)} traces, HTA {version}")
    if args.time:
        print(json.dumps(time_hta(args.time)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
