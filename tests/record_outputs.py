"""Execute a course notebook and keep its outputs as the reference record for strict nbval.

    python tests/record_outputs.py notebooks/01_two_speed_limits.md

writes tests/records/notebooks/01_two_speed_limits.ipynb. Then
``pytest --nbval notebooks/01_two_speed_limits.md`` compares every untagged cell's output
against that record (cells tagged ``nbval-ignore-output`` are exempt).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


#: Images are never compared (they change with any matplotlib or font version), so the record
#: keeps none: a figure's text (its alt text, its repr) is compared instead.
IMAGE_MIMES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
IMAGE_KEYS = IMAGE_MIMES + tuple(f"application/papermill.record/{m}" for m in IMAGE_MIMES)


#: An image inlined in HTML or Markdown; the same pattern is in tests/nbval_sanitize.cfg, so the fresh output
#: is rewritten the same way before it is compared.
INLINE_IMAGE = re.compile(r"data:image/[a-z+.-]+;base64,[A-Za-z0-9+/=]+")


def _without_images(output):
    """``output`` with its image data removed; None when nothing but images was in it."""
    if "data" not in output:
        return output
    data = {k: v for k, v in output["data"].items() if k not in IMAGE_KEYS}
    for mime in ("text/html", "text/markdown"):  # plots.show's Markdown inlines its PNG too
        if mime in data:
            data[mime] = INLINE_IMAGE.sub("data:image;base64,NOT-STORED", "".join(data[mime]))
    if not data:
        return None
    output["data"] = data
    output["metadata"] = {k: v for k, v in output.get("metadata", {}).items() if k not in IMAGE_KEYS}
    return output


def record(path: Path) -> Path:
    path = path.resolve()
    nb = jupytext.read(path)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if "nbval-ignore-output" in cell.metadata.get("tags", []):
            cell.outputs = []  # never compared: timings, live figures
        else:
            cell.outputs = [o for o in map(_without_images, cell.outputs) if o is not None]
    nb.metadata.pop("widgets", None)  # widget state: random model ids, never compared
    out = ROOT / "tests" / "records" / path.relative_to(ROOT).with_suffix(".ipynb")
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(out))
    return out


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python tests/record_outputs.py NOTEBOOK.md [...]")
    for arg in sys.argv[1:]:
        print(f"recorded {record(Path(arg)).relative_to(ROOT)}")
