#!/usr/bin/env python3
"""Keep the chapters as JupyterLab saves them, so a save of an unedited notebook changes nothing.

    python tools/lab_roundtrip.py --check notebooks/*.md exercises/*.md solutions/*.md
    python tools/lab_roundtrip.py notebooks/09_new_chapter.md      # rewrite in the saved form

JupyterLab reads and writes the ``.md`` notebooks through jupytext's contents manager, with the
settings in ``jupytext.toml``. Whatever that writer does not reproduce byte for byte shows up as a
diff the first time a reader presses Ctrl+S on a chapter they never edited. Two things caused it:

* header metadata the writer does not keep or adds: the headers hold exactly what jupytext
  writes by default (its version, the kernelspec, no other notebook metadata), so a save through
  JupyterLab and a plain ``jupytext`` write agree;
* figure metadata written by hand in YAML block style: the writer dumps YAML its own way, and a
  multi-line ``caption: |-`` came back as a quoted string with blank lines in it.

``--check`` saves a copy of each file through the contents manager and prints the diff, exit 1 if
any. Without it, each file is rewritten in the writer's own form, after joining the lines of every
figure caption and alt text (one paragraph each, as the site renders them). Run it on a chapter
after writing figure metadata by hand.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "jupytext.toml"


def _manager(root: Path):
    from jupytext import TextFileContentsManager

    return TextFileContentsManager(root_dir=str(root))


def _join_lines(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _flatten_figure_text(notebook) -> None:
    """One line per caption and alt text; the YAML writer then wraps it the same way every time."""
    for cell in notebook.cells:
        mystnb = cell.metadata.get("mystnb")
        if not isinstance(mystnb, dict):
            continue
        for section, key in (("figure", "caption"), ("image", "alt")):
            block = mystnb.get(section)
            if isinstance(block, dict) and isinstance(block.get(key), str):
                block[key] = _join_lines(block[key])


def saved_form(path: Path, *, flatten: bool = False) -> str:
    """The text JupyterLab writes when ``path`` is opened and saved unedited."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path must be a notebook file, got {str(path)!r}")
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy2(CONFIG, Path(tmp) / CONFIG.name)
        shutil.copy2(path, Path(tmp) / path.name)
        cm = _manager(Path(tmp))
        model = cm.get(path.name)
        if model["type"] != "notebook":
            raise ValueError(f"{path} does not open as a notebook (jupytext read it as {model['type']!r})")
        if flatten:
            _flatten_figure_text(model["content"])
        cm.save(model, path.name)
        return (Path(tmp) / path.name).read_text(encoding="utf-8")


def roundtrip_diff(path: Path) -> str:
    """The unified diff an unedited save would make to ``path`` (empty when it is stable)."""
    before = Path(path).read_text(encoding="utf-8")
    after = saved_form(path)
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), str(path), f"{path} (saved)"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="print what a save would change; write nothing")
    args = parser.parse_args(argv)
    unstable = 0
    for path in args.paths:
        if args.check:
            diff = roundtrip_diff(path)
            if diff:
                unstable += 1
                sys.stdout.write(diff)
        else:
            text = saved_form(path, flatten=True)
            if text != path.read_text(encoding="utf-8"):
                path.write_text(text, encoding="utf-8")
                print(f"rewrote {path}")
            if roundtrip_diff(path):
                print(f"{path}: still changes on a second save", file=sys.stderr)
                unstable += 1
    if args.check and unstable:
        print(f"{unstable} file(s) would change when saved in JupyterLab; run tools/lab_roundtrip.py on them")
    return 1 if unstable else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
