"""Write the synthetic traces of tests/traces/synthetic/ from tests/kineto_events.py's builders.

Run from the repository root: ``python tests/traces/write_synthetic.py``; then regenerate HTA's
figures for them (``tools/hta_reference.py``). test_traces_stored.py checks the files equal the builders.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from kineto_events import synthetic_traces  # noqa: E402


def main() -> None:
    for name, trace in synthetic_traces().items():
        path = HERE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(trace, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path.relative_to(HERE.parent.parent)}")


if __name__ == "__main__":
    main()
