"""Write the digest of a recorded Kineto trace that chapters 6 and 7 diagnose.

The digest holds what :func:`roofline_lib.evidence.trace_rows.read_trace` reads from the trace (its rows,
window, busy time, notes, collectives) with the trace's provenance, so a chapter can diagnose
someone else's recorded GPU run without shipping the trace itself. Usage::

    python tools/trace_digest.py TRACE.json.gz OUT.json --source-json PROVENANCE.json

``PROVENANCE.json`` holds the source, licence, hardware and any breakdown recorded by another
tool (HTA), copied into the digest unchanged.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import time
from pathlib import Path

from roofline_lib import trace_rows


def digest(trace_path: Path, provenance: dict) -> dict:
    start = time.perf_counter()
    trace = trace_rows.read_trace(trace_path)
    seconds = time.perf_counter() - start
    return {
        **provenance,
        "sha256": hashlib.sha256(trace_path.read_bytes()).hexdigest(),
        "read_seconds_here": round(seconds, 2),
        "trace": {
            "timeline": trace.timeline,
            "window_seconds": trace.window_seconds,
            "busy_seconds": trace.busy_seconds,
            "gpu": trace.gpu,
            "has_shapes": trace.has_shapes,
            "notes": list(trace.notes),
            "collectives": [list(c) for c in trace.collectives],
            "distributed": {k: v for k, v in trace.distributed.items() if k in ("backend", "rank", "world_size")},
            "rows": [dataclasses.asdict(r) for r in trace.rows],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--source-json", type=Path, required=True)
    args = parser.parse_args()
    record = digest(args.trace, json.loads(args.source_json.read_text(encoding="utf-8")))
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
