"""Execute a course notebook and keep its outputs as the reference record for strict nbval.

    python tests/record_outputs.py notebooks/01_two_speed_limits.md

writes tests/records/notebooks/01_two_speed_limits.ipynb. Then
``pytest --nbval notebooks/01_two_speed_limits.md`` compares every untagged cell's output
against that record (cells tagged ``nbval-ignore-output`` are exempt).
"""
from __future__ import annotations

import sys
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def record(path: Path) -> Path:
    path = path.resolve()
    nb = jupytext.read(path)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    out = ROOT / "tests" / "records" / path.relative_to(ROOT).with_suffix(".ipynb")
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(out))
    return out


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python tests/record_outputs.py NOTEBOOK.md [...]")
    for arg in sys.argv[1:]:
        print(f"recorded {record(Path(arg)).relative_to(ROOT)}")
