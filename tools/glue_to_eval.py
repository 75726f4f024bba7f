#!/usr/bin/env python3
"""Convert a chapter from myst-nb glue to ``{eval}`` roles that JupyterLab evaluates too.

    python tools/glue_to_eval.py notebooks/03_counting_flops.md [more.md ...]
    python tools/glue_to_eval.py --check notebooks/*.md     # say what would change, write nothing

What it rewrites, in a jupytext MyST notebook (text edits only: every other byte stays):

* the import ``from myst_nb import glue`` becomes ``from roofline_lib.present.prose import Prose`` and
  ``prose = Prose()``;
* every call ``glue("key", value, display=False)`` becomes ``prose("key", value)``;
* every role ``{glue:text}`key:spec``` (and ``{glue}`key```) becomes ``{eval}`prose["key:spec"]```;
* a ``{glue:figure} key`` directive that follows the cell which glues ``key`` becomes that cell's
  own output: the glue call goes, the figure's expression ends the cell, and the directive's
  caption, ``:name:`` and ``:alt:`` move into the cell's ``mystnb`` metadata (a ``remove-cell``
  tag turns into ``remove-input`` so the figure stays on the page).

It refuses, naming the line, anything it cannot convert safely: a glue call that displays its
value, a ``glue`` used other than by calling it, another glue role or directive, a format spec
with a quote or backslash, a figure directive away from its cell, a notebook that already uses
the name ``prose``. A refused file is left untouched; convert those places by hand.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

IMPORT_NEW = "from roofline_lib.present.prose import Prose\nprose = Prose()"
_OPEN = re.compile(r"^(?P<fence>`{3,})\{code-cell\}")
_ROLE = re.compile(r"\{glue(?::(?P<kind>[a-z]+))?\}`(?P<ref>[^`]*)`")
_REF = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(:[^\"\\]*)?\Z")
_FIG_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{glue:figure\}\s+(?P<key>\S+)\s*$")
_ANY_GLUE_DIRECTIVE = re.compile(r"^(`{3,}|:{3,})\{glue(:[a-z]+)?\}")


class ConversionError(ValueError):
    """A place the converter will not touch; the message names the file and line."""


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
            raise ConversionError(f"line {i + 1}: code cell never closed by {fence}")
        inner = lines[i + 1 : j]
        n_header = 0
        if inner and inner[0].rstrip("\n") == "---":
            end = next((k for k in range(1, len(inner)) if inner[k].rstrip("\n") == "---"), None)
            if end is None:
                raise ConversionError(f"line {i + 2}: cell metadata block never closed by ---")
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


def join_cells(cells: list[Cell]) -> str:
    return "".join("".join(c.lines) for c in cells)


# --------------------------------------------------------------------------- code


def _masked(body: str) -> str:
    """The cell's source with IPython magics and shell escapes turned into comments of equal length."""
    return "".join(
        ("#" + line[1:]) if line.lstrip().startswith(("%", "!")) else line for line in body.splitlines(keepends=True)
    )


def _offset(text: str, lineno: int, col: int) -> int:
    """Character offset of an ast (1-based line, 0-based UTF-8 column) position in ``text``."""
    lines = text.splitlines(keepends=True)
    before = sum(len(line) for line in lines[: lineno - 1])
    return before + len(lines[lineno - 1].encode()[:col].decode())


def _glue_calls(tree: ast.AST, where: str) -> list[ast.Call]:
    calls = [
        n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "glue"
    ]
    called = {id(c.func) for c in calls}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "glue" and id(node) not in called:
            raise ConversionError(f"{where}, line {node.lineno}: `glue` is used without being called")
    return calls


def _glue_import(tree: ast.AST, where: str) -> ast.ImportFrom | None:
    """The one ``from myst_nb import glue`` of a cell; any other import of myst_nb or glue refuses."""
    found = None
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            touches = node.module == "myst_nb" or any((a.asname or a.name) == "glue" for a in node.names)
            exact = node.module == "myst_nb" and [(a.name, a.asname) for a in node.names] == [("glue", None)]
        elif isinstance(node, ast.Import):
            touches = any(a.name.split(".")[0] == "myst_nb" or a.asname == "glue" for a in node.names)
            exact = False
        else:
            continue
        if touches and not exact:
            raise ConversionError(f"{where}, line {node.lineno}: only `from myst_nb import glue` can be converted")
        if exact:
            found = node
    return found


def _key(call: ast.Call, where: str) -> str | None:
    """The glue key when it is a string literal, else None (an f-string key is fine for text)."""
    if len(call.args) != 2:
        raise ConversionError(f"{where}, line {call.lineno}: glue() needs exactly a key and a value")
    arg = call.args[0]
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def convert_code(body: str, where: str, figures: dict[str, str]) -> tuple[str, dict[str, str], bool]:
    """Rewrite one code cell's source; return (source, {figure key: figure expression}, changed).

    ``figures`` names the keys shown by a ``{glue:figure}``: their glue calls are removed and
    reported back with the expression they glued, for the caller to display.
    """
    masked = _masked(body)
    tree = ast.parse(masked)
    imp = _glue_import(tree, where)
    calls = _glue_calls(tree, where)
    if imp is None and not calls:
        return body, {}, False
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) character offsets
    shown: dict[str, str] = {}
    if imp is not None:
        edits.append(
            (
                _offset(masked, imp.lineno, imp.col_offset),
                _offset(masked, imp.end_lineno, imp.end_col_offset),
                IMPORT_NEW,
            )
        )
    statements = {id(s.value): s for s in ast.walk(tree) if isinstance(s, ast.Expr)}
    for call in calls:
        kw = [(k.arg, k.value) for k in call.keywords]
        if (
            len(kw) != 1
            or kw[0][0] != "display"
            or not (isinstance(kw[0][1], ast.Constant) and kw[0][1].value is False)
        ):
            raise ConversionError(
                f"{where}, line {call.lineno}: only glue(key, value, display=False) can be converted "
                "(a glue that displays its value shows output that prose() would not)"
            )
        key = _key(call, where)
        if key is not None and key in figures:
            stmt = statements.get(id(call))
            if stmt is None:
                raise ConversionError(
                    f"{where}, line {call.lineno}: the figure {key!r} must be glued by a statement of its own"
                )
            shown[key] = ast.get_source_segment(masked, call.args[1])
            start = _offset(masked, stmt.lineno, 0)
            end = _offset(masked, stmt.end_lineno + 1, 0) if stmt.end_lineno < len(masked.splitlines()) else len(masked)
            line_text = masked[start:end]
            if line_text.strip() != ast.get_source_segment(masked, stmt).strip():
                raise ConversionError(
                    f"{where}, line {call.lineno}: the figure {key!r} must be glued on lines of its own"
                )
            edits.append((start, end, ""))
            continue
        func = _offset(masked, call.func.lineno, call.func.col_offset)
        edits.append((func, func + len("glue"), "prose"))
        last_arg = call.args[-1]
        edits.append(
            (
                _offset(masked, last_arg.end_lineno, last_arg.end_col_offset),
                _offset(masked, kw[0][1].end_lineno, kw[0][1].end_col_offset),
                "",
            )
        )
    out = body
    for start, end, text in sorted(edits, reverse=True):
        out = out[:start] + text + out[end:]
    out = out.rstrip("\n") + "\n"
    for key in figures:
        if key in shown:
            out += shown[key] + "\n"
    _verify(tree, out, where)
    return out, shown, True


def _verify(before: ast.AST, source: str, where: str) -> None:
    """The new source must parse, call prose where it called glue, and use glue nowhere."""
    after = ast.parse(_masked(source))
    old = [
        ast.dump(c.args[0]) + ast.dump(c.args[1])
        for c in ast.walk(before)
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "glue"
    ]
    new = [
        ast.dump(c.args[0]) + ast.dump(c.args[1])
        for c in ast.walk(after)
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "prose"
    ]
    leftover = [n.lineno for n in ast.walk(after) if isinstance(n, ast.Name) and n.id == "glue"]
    if (
        leftover
        or not set(new) <= set(old)
        or any(
            isinstance(c, ast.Call) and getattr(c.func, "id", None) == "prose" and c.keywords for c in ast.walk(after)
        )
    ):
        raise ConversionError(f"{where}: the rewritten cell does not check out; convert it by hand")


# --------------------------------------------------------------------------- markdown


def convert_roles(text: str, where: str) -> str:
    def one(m: re.Match) -> str:
        kind, ref = m.group("kind"), m.group("ref")
        if kind not in (None, "text"):
            raise ConversionError(f"{where}: {{glue:{kind}}} cannot become plain text; convert it by hand")
        if not _REF.match(ref):
            raise ConversionError(
                f"{where}: the glue reference {ref!r} is not key or key:spec without quotes or backslashes"
            )
        return '{eval}`prose["' + ref + '"]`'

    return _ROLE.sub(one, text)


@dataclass
class FigureDirective:
    key: str
    alt: str | None
    name: str | None
    caption: str


def take_figure(lines: list[str], where: str) -> tuple[FigureDirective, list[str]] | None:
    """A ``{glue:figure}`` directive at the top of a Markdown cell, and the lines after it."""
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i == len(lines):
        return None
    m = _FIG_OPEN.match(lines[i])
    if not m:
        return None
    fence, key = m.group("fence"), m.group("key")
    options: dict[str, str] = {}
    j = i + 1
    while j < len(lines) and (opt := re.match(r"^:([\w-]+):\s?(.*)$", lines[j].rstrip("\n"))):
        options[opt.group(1)] = opt.group(2)
        j += 1
    unknown = set(options) - {"alt", "name"}
    if unknown:
        raise ConversionError(
            f"{where}: the figure {key!r} has options {sorted(unknown)} the converter does not carry over"
        )
    end = next((k for k in range(j, len(lines)) if lines[k].rstrip("\n") == fence), None)
    if end is None:
        raise ConversionError(f"{where}: the figure {key!r} is never closed by {fence}")
    caption = "".join(lines[j:end]).strip("\n")
    return FigureDirective(key, options.get("alt"), options.get("name"), caption), lines[end + 1 :]


def _keep_in_order(header: list[str]) -> list[str]:
    """``remove-cell`` -> ``remove-input, remove-output``: hidden all the same, but executed in order.

    myst-nb's inline execution skips a ``remove-cell`` cell until a later visible cell needs
    running, so an ``{eval}`` between the two would read a value that is not set yet.
    """
    return [
        re.sub(r"\bremove-cell\b", "remove-input, remove-output", line) if re.match(r"^(:tags:|tags:)", line) else line
        for line in header
    ]


def _figure_header(header: list[str], fig: FigureDirective, where: str) -> list[str]:
    """The cell's option lines with the figure's caption, name and alt text added."""
    if header and header[0].rstrip("\n") == "---":
        meta = yaml.safe_load("".join(header[1:-1])) or {}
    else:
        meta = {}
        for line in header:
            m = re.match(r"^:([\w-]+):\s?(.*)$", line.rstrip("\n"))
            meta[m.group(1)] = yaml.safe_load(m.group(2))
    if "mystnb" in meta:
        raise ConversionError(f"{where}: the cell of figure {fig.key!r} already has mystnb metadata")
    tags = meta.get("tags")
    if tags:
        tags = ["remove-input" if t == "remove-cell" else t for t in tags]
        meta["tags"] = [t for t in tags if t != "remove-output"]  # the figure is the output
    figure = {"caption": fig.caption}
    if fig.name:
        figure["name"] = fig.name
    meta = {
        "mystnb": {"figure": figure, **({"image": {"alt": fig.alt}} if fig.alt else {})},
        **{k: v for k, v in meta.items()},
    }
    dumped = yaml.dump(
        meta, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=10**6, default_flow_style=None
    )
    return ["---\n", dumped, "---\n"]


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (captions) as literal blocks; short lists (tags) stay in flow style."""


def _str(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _dict(dumper: yaml.SafeDumper, value: dict):
    return dumper.represent_mapping("tag:yaml.org,2002:map", value, flow_style=False)


_BlockDumper.add_representer(str, _str)
_BlockDumper.add_representer(dict, _dict)


# --------------------------------------------------------------------------- the file


def convert_text(text: str, name: str = "<notebook>") -> str:
    """The converted notebook text (or the same text when there is no glue in it)."""
    if not re.search(r"\bglue\b", text):
        return text  # nothing to convert (a converted notebook comes back unchanged)
    cells = split_cells(text)
    figures: dict[str, FigureDirective] = {}
    for idx, cell in enumerate(cells):
        if cell.kind != "markdown":
            continue
        for k, line in enumerate(cell.lines):
            where = f"{name}, line {cell.start + k}"
            if _ANY_GLUE_DIRECTIVE.match(line) and not _FIG_OPEN.match(line):
                raise ConversionError(f"{where}: only {{glue:figure}} directives can be converted")
            if _FIG_OPEN.match(line):
                taken = take_figure(cell.lines, where)
                if taken is None or idx == 0 or cells[idx - 1].kind != "code":
                    raise ConversionError(
                        f"{where}: a {{glue:figure}} must come right after the code cell that glues it"
                    )
                figures[taken[0].key] = taken[0]
    for cell in cells:
        if cell.kind == "code" and any(re.search(r"\bprose\b", line) for line in cell.body):
            raise ConversionError(
                f"{name}, line {cell.start}: the notebook already uses the name `prose`; convert it by hand"
            )
    out: list[Cell] = []
    for idx, cell in enumerate(cells):
        where = f"{name}, cell at line {cell.start}"
        if cell.kind == "code":
            body, shown, changed = convert_code("".join(cell.body), where, set(figures))
            if not changed:
                out.append(cell)
                continue
            header = _keep_in_order(cell.header) if "prose(" in body else cell.header
            for key in shown:
                nxt = cells[idx + 1] if idx + 1 < len(cells) else None
                taken = take_figure(nxt.lines, where) if nxt is not None and nxt.kind == "markdown" else None
                if taken is None or taken[0].key != key:
                    raise ConversionError(f"{where}: the {{glue:figure}} {key!r} is not right after this cell")
                fig = figures.pop(key)
                fig.caption = convert_roles(fig.caption, where)
                header = _figure_header(header, fig, where)
            out.append(
                Cell("code", [cell.lines[0], *header, *body.splitlines(keepends=True), cell.lines[-1]], cell.start)
            )
        else:
            lines = cell.lines
            prev = out[-1] if out else None
            taken = take_figure(lines, where)
            if taken is not None:
                if prev is None or prev.kind != "code" or taken[0].key in figures:
                    raise ConversionError(
                        f"{where}: the {{glue:figure}} {taken[0].key!r} has no glue "
                        "call in the code cell right before it"
                    )
                rest = taken[1]
                while rest and not rest[0].strip():
                    rest = rest[1:]
                lines = ["\n", *rest] if rest else []
            converted = convert_roles("".join(lines), where)
            if converted:
                out.append(Cell("markdown", converted.splitlines(keepends=True), cell.start))
    if figures:
        raise ConversionError(f"{name}: no glue call found for the figures {sorted(figures)}")
    result = join_cells(out)
    check_order(result, name)
    if re.search(r"\{glue[:}]", result):
        raise ConversionError(f"{name}: glue roles are left after conversion; convert them by hand")
    return result


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
    reader's Run All does the same; glue, which collected every value first, did not care.
    A notebook that sets keys it computes (``prose(f"tok_{name}", ...)``) is checked only up to
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
                        raise ConversionError(
                            f"{where}: {key!r} is quoted before the cell that sets it (line {later[key]}); "
                            "{eval} reads values in order, so compute it in a cell above"
                        )
                    raise ConversionError(f"{where}: no cell sets {key!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="report, write nothing")
    args = parser.parse_args(argv)
    status = 0
    for path in args.paths:
        text = path.read_text(encoding="utf-8")
        try:
            new = convert_text(text, str(path))
        except ConversionError as exc:
            print(f"refused: {exc}", file=sys.stderr)
            status = 1
            continue
        if new == text:
            print(f"{path}: no glue")
        elif args.check:
            print(f"{path}: would convert")
        else:
            path.write_text(new, encoding="utf-8")
            print(f"{path}: converted")
    return status


if __name__ == "__main__":
    sys.exit(main())
