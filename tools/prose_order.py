#!/usr/bin/env python3
"""Check that every ``{eval}`prose["key"]``` in a chapter comes after the cell that sets ``key``.

    python tools/prose_order.py notebooks/*.md

The book evaluates a role when it reaches it, with only the cells above it run, and a reader's
Run All does the same; nbval runs only the code, so a value quoted above the cell that sets it
passes there and fails the book build. The chapter tests run :func:`check_order` on every chapter.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

_OPEN = re.compile(r"^(?P<fence>`{3,})\{code-cell\}")


class OrderError(ValueError):
    """A value quoted before the cell that sets it (or never set); the message names the file and line."""


@dataclass
class Cell:
    kind: str  # "code" or "markdown"
    lines: list[str]  # the cell's lines, fences included for code
    start: int  # 1-based line number of its first line in the file
    header: list[str] = field(default_factory=list)  # code: option lines after the fence
    body: list[str] = field(default_factory=list)  # code: the source lines


def split_cells(text: str) -> list[Cell]:
    """Code cells (```{code-cell} ... ```) and the Markdown between them, in order."""
    lines = text.splitlines(keepends=True)
    cells: list[Cell] = []
    md: list[str] = []
    md_start = 1
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m:
            md.append(lines[i])
            i += 1
            continue
        if md:
            cells.append(Cell("markdown", md, md_start))
        fence = m.group("fence")
        j = i + 1
        while j < len(lines) and lines[j].rstrip("\n") != fence:
            j += 1
        if j == len(lines):
            raise OrderError(f"line {i + 1}: code cell never closed by {fence}")
        inner = lines[i + 1 : j]
        n_header = 0
        if inner and inner[0].rstrip("\n") == "---":
            end = next((k for k in range(1, len(inner)) if inner[k].rstrip("\n") == "---"), None)
            if end is None:
                raise OrderError(f"line {i + 2}: cell metadata block never closed by ---")
            n_header = end + 1
        else:
            while n_header < len(inner) and re.match(r"^:[\w-]+:", inner[n_header]):
                n_header += 1
        cells.append(Cell("code", lines[i : j + 1], i + 1, inner[:n_header], inner[n_header:]))
        i = j + 1
        md, md_start = [], i + 1
    if md:
        cells.append(Cell("markdown", md, md_start))
    return cells


def _masked(body: str) -> str:
    """The cell's source with IPython magics and shell escapes turned into comments of equal length."""
    return "".join(
        ("#" + line[1:]) if line.lstrip().startswith(("%", "!")) else line for line in body.splitlines(keepends=True)
    )


def _prose_keys(cell: Cell) -> list[str | None]:
    """The keys a code cell's ``prose(key, ...)`` calls set; None for each key it computes."""
    keys: list[str | None] = []
    for node in ast.walk(ast.parse(_masked("".join(cell.body)))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "prose" and node.args:
            arg = node.args[0]
            keys.append(arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None)
    return keys


def check_order(text: str, name: str = "<notebook>") -> None:
    """Every ``{eval}`prose["key..."]``` must come after a cell that sets ``key``.

    The book evaluates a role when it reaches it, with only the cells above it run, and a
    reader's Run All does the same. A notebook that sets keys it computes (``prose(f"tok_{name}", ...)``) is checked only up to
    its first such call.
    """
    cells = split_cells(text)
    keys_of = [_prose_keys(cell) if cell.kind == "code" else [] for cell in cells]
    later: dict[str, int] = {}  # the first cell that sets each key
    for cell, keys in zip(cells, keys_of):
        for key in keys:
            if key is not None:
                later.setdefault(key, cell.start)
    known: set[str] = set()
    computed_keys = False
    for cell, keys in zip(cells, keys_of):
        if cell.kind == "code":
            known.update(key for key in keys if key is not None)
            computed_keys = computed_keys or None in keys
            continue
        if computed_keys:
            continue
        for k, line in enumerate(cell.lines):
            for key in re.findall(r'\{eval\}`prose\["([A-Za-z_][A-Za-z0-9_]*)', line):
                if key not in known:
                    where = f"{name}, line {cell.start + k}"
                    if key in later:
                        raise OrderError(
                            f"{where}: {key!r} is quoted before the cell that sets it (line {later[key]}); "
                            "{eval} reads values in order, so compute it in a cell above"
                        )
                    raise OrderError(f"{where}: no cell sets {key!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    status = 0
    for path in args.paths:
        try:
            check_order(path.read_text(encoding="utf-8"), str(path))
        except OrderError as exc:
            print(f"{exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
