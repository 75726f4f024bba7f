"""A hook-style check on the chapters' prose: what every chapter must hold, and what it must not.

The course's rule is that a number in the text is computed by the chapter's code (``{eval}``),
so the prose and the code cannot drift apart. This file reads each chapter's Markdown the way a
reader sees it, with code, math, roles, HTML and directive options blanked out, and fails when

* the prose holds a numeral above 10 that is not a year (no chapter has an allow-list: an input
  that defines a scenario is typed in a cell and quoted through ``{eval}`` like a result;
  :func:`typed_numerals` takes one for a planted chapter's test);
* the chapter cites nothing, or lacks a **Takeaway** box, a ``## Problems`` section, a
  ``## Summary`` or a closing ``## Further reading`` that cites;
* the prose speaks of "the source" (the text the course grew from, which no reader has seen).

Numbers that are part of a name are not numerals here: ``H100``, ``fp32``, ``Llama-2-7B``,
``Stack-100M``, and a chapter's own number in its title (``# 11. Energy ...``). Numbers of ten or
less are words in disguise (two roofs, eight GPUs) and pass. The checker is itself tested on
planted chapters at the end, so it cannot pass by reading nothing.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.md"))

# Fenced blocks whose body is not prose: code, math, raw output, the bibliography directive.
_NOT_PROSE_DIRECTIVES = {"code-cell", "code", "code-block", "math", "raw", "bibliography", "eval-rst"}
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_OPTION = re.compile(r"^\s*:[A-Za-z][\w-]*:")  # a directive option line, ":class: tip"
_ROLE = re.compile(r"\{[A-Za-z][\w:+-]*\}(`+)(?:(?!\1).)*?\1")  # {eval}`...`, {cite:p}`...`
_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")  # inline code, any number of backticks
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(?:\\.|[^$\\])+?\$")
_HTML = re.compile(r"<[^>]*>")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_NUMERAL = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w]|[.,]\d)")
_YEAR = range(1990, 2031)
_SOURCE = re.compile(r"\b(?:the|same|its|this)\s+source(?:'s)?\b(?!\s+(?:of|code|file|tree))", re.I)


def prose_lines(text: str) -> list[tuple[int, str]]:
    """Each line of a MyST chapter as a reader reads it: (line number, text with non-prose blanked).

    Skipped: the front matter, code cells and other code or math fences (``$$`` blocks too),
    directive option lines, and, inside a line, roles, inline code, inline math, HTML tags and
    link targets. An admonition's title and body are prose.
    """
    lines = text.splitlines()
    out: list[tuple[int, str]] = []
    stack: list[tuple[int, bool]] = []  # open fences: (fence length, body is prose)
    start = 0
    if lines and lines[0].strip() == "---":  # YAML front matter
        for j in range(1, len(lines)):
            if lines[j].strip() == "---":
                start = j + 1
                break
    in_display_math = False
    options_allowed = False  # option lines follow a directive's opening fence directly
    for number, line in enumerate(lines[start:], start=start + 1):
        fence = _FENCE.match(line)
        in_code = bool(stack) and not stack[-1][1]
        if fence:
            size, info = len(fence["fence"]), fence["info"].strip()
            if in_code:
                if not info and size >= stack[-1][0]:
                    stack.pop()
                continue
            if not info and stack:  # a bare fence closes the innermost prose directive
                stack.pop()
                continue
            name = re.match(r"\{([^}]*)\}", info)
            directive = name[1] if name else None
            prose_body = directive is not None and directive not in _NOT_PROSE_DIRECTIVES
            stack.append((size, prose_body))
            options_allowed = prose_body
            if prose_body:  # an admonition's title is prose
                out.append((number, _blank_inline(info[name.end() :])))
            continue
        if in_code:
            continue
        if options_allowed and _OPTION.match(line):
            continue
        options_allowed = False
        if line.strip().startswith("$$"):
            opens_and_closes = line.strip() != "$$" and line.strip().endswith("$$") and len(line.strip()) > 4
            if not opens_and_closes:
                in_display_math = not in_display_math
            continue
        if in_display_math:
            continue
        if re.match(r"^\s*\([\w-]+\)=\s*$", line):  # a label, "(sec-x)="
            continue
        if re.match(r"^# \d+\. ", line):  # the title's chapter number, "# 11. Energy ...": a name, not a figure
            line = re.sub(r"^# \d+\.", "#", line)
        out.append((number, _blank_inline(line)))
    return out


def _blank_inline(line: str) -> str:
    for pattern in (_ROLE, _CODE, _INLINE_MATH, _HTML, _LINK_TARGET):
        line = pattern.sub(" ", line)
    return line


def typed_numerals(text: str, allowed: dict[str, str] | None = None) -> list[tuple[int, str, str]]:
    """The numerals above 10 in a chapter's prose that are neither years nor allowed.

    Returns (line number, numeral, the prose line) for each; an empty list is a pass.
    """
    allowed = allowed or {}
    found = []
    for number, line in prose_lines(text):
        for match in _NUMERAL.finditer(line):
            numeral = match[0]
            value = float(numeral.replace(",", ""))
            if value <= 10 or numeral in allowed:
                continue
            if "," not in numeral and "." not in numeral and int(value) in _YEAR:
                continue
            found.append((number, numeral, line.strip()))
    return found


def missing_parts(text: str) -> list[str]:
    """What a chapter lacks of the course's shape; an empty list is a pass."""
    missing = []
    if not _CITATION.search(text):
        missing.append("a citation ([Author 2024](../book/references.md#cite-key))")
    if not re.search(r"^\s*```+\{admonition\}\s*Takeaway\b", text, re.M):
        missing.append("a Takeaway box")
    if not re.search(r"^## Problems\s*$", text, re.M):
        missing.append("a '## Problems' section")
    if not re.search(r"^## Summary\s*$", text, re.M):
        missing.append("a '## Summary' section")
    further = re.search(r"^## Further reading\s*$(?P<body>.*?)(?=^#{1,2} |\Z)", text, re.M | re.S)
    if not further:
        missing.append("a '## Further reading' section")
    elif not _CITATION.search(further["body"]):
        missing.append("a citation inside 'Further reading'")
    return missing


def source_mentions(text: str) -> list[tuple[int, str]]:
    """Prose lines that speak of "the source" the course grew from."""
    return [(n, line.strip()) for n, line in prose_lines(text) if _SOURCE.search(line)]


# The text telling its own history, or who has which machine, instead of the subject.
_SELF_TALK = re.compile(
    r"\b(?:an?\s+(?:earlier|previous|older|first)\s+(?:version|draft|edition)\b"
    r"|this\s+(?:chapter|page|text|section)\s+(?:used\s+to|once|previously|no\s+longer)\b"
    r"|(?:nobody|no\s+one|anyone|everyone)\s+here\b)",
    re.I,
)


def self_talk(text: str) -> list[tuple[int, str]]:
    """Prose lines that speak of the text's past versions or of the people who read it, not the subject."""
    return [(n, line.strip()) for n, line in prose_lines(text) if _SELF_TALK.search(line)]


# ------------------------------------------------------------------ the chapters themselves


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_typed_numbers_in_prose(chapter):
    found = typed_numerals(chapter.read_text(encoding="utf-8"))
    shown = "\n".join(f"  {chapter.name}:{n}: {numeral!r} in: {line}" for n, numeral, line in found)
    assert not found, (
        "numerals above 10 typed in the prose: compute them (or, for an input that defines the scenario, "
        f"set them in a cell) and quote them with {{eval}}\n{shown}"
    )


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_has_its_parts(chapter):
    assert not missing_parts(chapter.read_text(encoding="utf-8")), (
        chapter.name,
        missing_parts(chapter.read_text(encoding="utf-8")),
    )


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_prose_does_not_speak_of_the_source(chapter):
    found = source_mentions(chapter.read_text(encoding="utf-8"))
    assert not found, "\n".join(f"{chapter.name}:{n}: {line}" for n, line in found)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_prose_speaks_of_the_subject_not_of_itself(chapter):
    found = self_talk(chapter.read_text(encoding="utf-8"))
    assert not found, "\n".join(f"{chapter.name}:{n}: {line}" for n, line in found)


def test_the_self_talk_check_sees_a_planted_line():
    planted = PLANTED + "\nAn earlier version of this chapter used the flat model.\n\nA GPU nobody here has.\n"
    lines = [line for _, line in self_talk(planted)]
    assert lines == ["An earlier version of this chapter used the flat model.", "A GPU nobody here has."]
    assert self_talk(PLANTED) == []  # "here" and "version" alone are the subject's words


# The data-parallel overlap rule lives in the library (rl.gradient_hiding_tokens: only the backward
# pass, two thirds of the 6N compute, hides the gradients); chapter 8 teaches it and chapter 9's
# Problem 2 applies it. A chapter that works the threshold out in a cell can drift from the other.
_OVERLAP_KEYS = {"08_communication": "dp_t_hide", "09_parallelism": "p2_hiding"}
_HAND_OVERLAP = re.compile(r"(?<![\w.])(?:2\s*/\s*3|3\s*/\s*2|0\.66+7?)(?![\w.])")


def overlap_rule_breaches(text: str, key: str) -> list[str]:
    """Why a chapter's gradient-overlap threshold, quoted as ``key``, is not the library's rule."""
    import jupytext

    code = [c.source for c in jupytext.reads(text, fmt="md:myst").cells if c.cell_type == "code"]
    found = [f"a hand-typed overlap share in: {line.strip()}" for src in code for line in src.splitlines()
             if _HAND_OVERLAP.search(line.split("#")[0])]  # fmt: skip
    setters = [line for src in code for line in src.splitlines() if re.search(rf"prose\(\"{key}\"", line)]
    if not setters:
        found.append(f"no cell sets {key!r}")
    elif not all("gradient_hiding_tokens" in line for line in setters):
        found.append(f"{key!r} is not set by gradient_hiding_tokens: {setters}")
    if f'prose["{key}' not in text:
        found.append(f"the prose does not quote {key!r}")
    return found


@pytest.mark.parametrize("stem", sorted(_OVERLAP_KEYS))
def test_chapters_8_and_9_quote_the_one_gradient_overlap_rule(stem):
    text = (ROOT / "notebooks" / f"{stem}.md").read_text(encoding="utf-8")
    assert not overlap_rule_breaches(text, _OVERLAP_KEYS[stem])


def test_the_overlap_rule_check_sees_a_threshold_worked_by_hand():
    cell = '```{code-cell} ipython3\nprose("p2_hiding", p2.roof("dp").critical_tokens_per_gpu * 3 / 2)\n```\n'
    page = "# 9. Planted\n\n" + cell + '\nIt stops hiding below {eval}`prose["p2_hiding:,.0f"]` tokens.\n'
    found = overlap_rule_breaches(page, "p2_hiding")
    assert len(found) == 2 and "hand-typed" in found[0] and "not set by gradient_hiding_tokens" in found[1]
    assert overlap_rule_breaches(page, "missing")[1:] == [
        "no cell sets 'missing'",
        "the prose does not quote 'missing'",
    ]


def _bib_keys() -> set[str]:
    return set(re.findall(r"^@\w+\{([^,\s]+),", (ROOT / "references.bib").read_text(encoding="utf-8"), re.M))


def cited_keys(text: str) -> list[str]:
    """Every key a chapter cites, in order: ``[Kaplan et al. 2020](../book/references.md#cite-key)``."""
    return [m["key"] for m in _CITATION.finditer(text)]


def term_targets(text: str) -> list[str]:
    """Every glossary anchor a chapter links to: ``[kernels](../book/glossary.md#term-Kernel)``."""
    return re.findall(r"\]\((?:\.\./)*(?:book/)?glossary\.md#(term-[A-Za-z0-9-]+)\)", text)


def _term_anchors() -> set[str]:
    return {_lab_links().term_anchor(t) for t in _lab_links().glossary_terms().values()}


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_citations_and_terms_resolve(chapter):
    # the strict build fails on both too; this says which key or term, without a build
    text = chapter.read_text(encoding="utf-8")
    keys = {k.lower() for k in _bib_keys()}
    assert set(cited_keys(text)) <= keys, set(cited_keys(text)) - keys
    assert set(term_targets(text)) <= _term_anchors(), set(term_targets(text)) - _term_anchors()


PAGES = CHAPTERS + sorted((ROOT / "exercises").glob("*.md")) + sorted((ROOT / "solutions").glob("*.md"))
PAGES += sorted((ROOT / "book").glob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_cross_references_are_links_jupyterlab_can_follow(page):
    # jupyterlab-myst resolves no {cite} (it has no bibliography), no {term} of another page and
    # no {doc}: a reader in Lab saw raw keys, dead links and raw paths. tools/lab_links.py writes
    # them as relative Markdown links, which the site resolves too.
    left = _lab_links().roles_left(page.read_text(encoding="utf-8"))
    assert not left, f"{page.name}: run tools/lab_links.py on it; roles left: {left[:5]}"


_PLACE_LINK = re.compile(r"\]\((?P<page>(?![A-Za-z][\w+.-]*:)[^()\s#]+\.md)#(?P<place>[^()\s]+)\)")


def places_links_miss(page: Path) -> list[str]:
    """Links from ``page`` to a place in another page that no cell of that page opens with.

    JupyterLab scrolls to a place on the page it opens only when a cell starts there (the course's
    contents manager names the cell after it); the strict build checks that the site has it."""
    from roofline_lib.present.lab_contents import cell_anchor

    missing = []
    for m in _PLACE_LINK.finditer(page.read_text(encoding="utf-8")):
        target = (page.parent / m["page"]).resolve()
        if not target.is_file():
            missing.append(f"{m['page']}: no such page")
            continue
        if m["place"] not in {cell_anchor(c.source) for c in _parsed(target).cells if c.cell_type == "markdown"}:
            missing.append(f"{m['page']}#{m['place']}")
    return missing


def _parsed(page: Path):
    """``page`` as jupytext reads it, parsed once per version of the file: a chapter links to the
    glossary and the references dozens of times, and parsing a page (jupytext checks every cell
    against nbformat's schema) took 7 of the 13 CPU-seconds the unit tests spent in jupytext.
    The checks only read what it returns."""
    stat = page.stat()
    return _parse(str(page), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _parse(path: str, _mtime_ns: int, _size: int):
    import jupytext

    return jupytext.read(path)


def _is_notebook(page: Path) -> bool:
    """Whether ``page`` is a MyST notebook (its header names jupytext), not a plain Markdown page."""
    return page.read_text(encoding="utf-8").startswith("---\njupytext:")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_link_to_a_place_lands_on_a_cell_that_opens_there(page):
    missing = places_links_miss(page)
    assert not missing, f"{page.name}: no cell opens at {sorted(set(missing))[:5]} (start one with +++)"


def test_the_place_check_sees_a_place_inside_a_cell(tmp_path):
    header = (ROOT / "book" / "glossary.md").read_text(encoding="utf-8").split("\n# ")[0]  # the MyST notebook header
    b = header + "\n# B\n\nText.\n\n## Inside\n\n+++\n\n## Opening\n"
    (tmp_path / "b.md").write_text(b, encoding="utf-8")
    (tmp_path / "a.md").write_text("[x](b.md#inside), [y](b.md#opening), [z](b.md#b), [w](c.md#q)\n", encoding="utf-8")
    assert places_links_miss(tmp_path / "a.md") == ["b.md#inside", "c.md: no such page"]


def test_the_link_converter_writes_what_the_readers_read(tmp_path):
    L = _lab_links()
    page = ROOT / "notebooks" / "99_planted.md"
    line = (
        "As {cite:p}`kaplan2020scaling, hoffmann2022chinchilla` and {cite:t}`williams2009roofline` say, "
        "{term}`kernels <Kernel>`, {term}`HBM` and {doc}`chapter 5 <05_mfu>`."
    )
    out = L._Converter().convert(line, page)
    assert out == (
        "As ([Kaplan et al. 2020](../book/references.md#cite-kaplan2020scaling); "
        "[Hoffmann et al. 2022](../book/references.md#cite-hoffmann2022chinchilla)) and "
        "[Williams et al. (2009)](../book/references.md#cite-williams2009roofline) say, "
        "[kernels](../book/glossary.md#term-kernel), [HBM](../book/glossary.md#term-hbm) and "
        "[chapter 5](05_mfu.md)."
    )
    assert cited_keys(out) == ["kaplan2020scaling", "hoffmann2022chinchilla", "williams2009roofline"]
    assert term_targets(out) == ["term-kernel", "term-hbm"] and L.roles_left(out) == []
    assert L.roles_left(line) and L._Converter().convert(out, page) == out  # idempotent
    with pytest.raises(ValueError, match="cites 'nobody2020', which references.bib does not hold"):
        L._Converter().convert("{cite:p}`nobody2020`", page)
    with pytest.raises(ValueError, match="links the term 'Flux capacitor'"):
        L._Converter().convert("{term}`Flux capacitor`", page)
    with pytest.raises(ValueError, match="links the page 'nowhere'"):
        L._Converter().convert("{doc}`nowhere`", page)
    # the same authors in the same year are told apart as the site's in-text labels are
    assert {L.bib_entries()[k][1] for k in ("nvidia2024h200", "nvidia2024hgxb200")} == {"2024b", "2024c"}


_CITATION = re.compile(r"\]\((?:\.\./)*(?:book/)?references\.md#cite-(?P<key>[a-z0-9-]+)\)")


def _lab_links():
    """tools/lab_links.py, which writes the cross-references as links JupyterLab can follow."""
    if "lab_links" not in sys.modules:
        spec = importlib.util.spec_from_file_location("lab_links", ROOT / "tools" / "lab_links.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["lab_links"] = module
        spec.loader.exec_module(module)
    return sys.modules["lab_links"]


def names_hidden_cells_lend(nb) -> list[tuple[int, list[str]]]:
    """Visible code cells that use a name only a hidden cell (tagged remove-input) defines.

    A reader who copies the visible code of a chapter, in order, must not meet a NameError:
    every name it uses is defined by visible code above it (or is a builtin). Returns
    ``(cell index, names)`` for each cell that breaks the rule.
    """
    import ast
    import builtins

    def parse(source):  # IPython's magics and shell lines are not Python
        return ast.parse(
            "\n".join("#" + ln if ln.lstrip().startswith(("%", "!")) else ln for ln in source.splitlines())
        )

    def defined(tree):
        out = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                out.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.arg):
                out.add(node.arg)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                out.add(node.name)
        return out

    visible, hidden, found = set(dir(builtins)) | {"get_ipython", "display"}, set(), []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tree = parse(cell.source)
        if "remove-input" in cell.metadata.get("tags", []):
            hidden |= defined(tree)
            continue
        own = defined(tree)
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        lent = sorted((used - own - visible) & hidden)
        if lent:
            found.append((i, lent))
        visible |= own
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_hidden_cell_defines_a_name_the_visible_code_uses(page):
    # a reader copying the visible cells of chapter 4 met a NameError on n7, of chapter 2 on a100
    if not _is_notebook(page):
        return  # a plain page: no code cells
    found = names_hidden_cells_lend(_parsed(page))
    assert not found, f"{page.name}: visible cells use names only hidden cells define: {found}"


_SHOW = re.compile(r'^plots\.show\((?P<fig>[A-Za-z_]\w*), "(?P<name>[\w-]+)"\)$')


def figure_cells_not_shown(notebook) -> list[str]:
    """Figure cells (``mystnb.figure``) whose last line is not ``plots.show(fig, "<the cell's name>")``."""
    found = []
    for cell in notebook.cells:
        mystnb = cell.metadata.get("mystnb") if cell.cell_type == "code" else None
        figure = mystnb.get("figure") if isinstance(mystnb, dict) else None
        if not isinstance(figure, dict):
            continue
        name = figure.get("name", "")
        lines = cell.source.strip().splitlines()
        match = _SHOW.match(lines[-1].strip()) if lines else None
        if match is None or match["name"] != name:
            found.append(f"{name or '(no name)'}: ends with {lines[-1] if lines else '(nothing)'!r}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_figure_cell_shows_its_caption_in_jupyterlab_too(page):
    # JupyterLab reads no cell metadata: a figure's caption and alt text reach its readers only
    # through plots.show, which finds them by the cell's name
    if not _is_notebook(page):
        return
    found = figure_cells_not_shown(_parsed(page))
    assert not found, f"{page.name}: figure cells that JupyterLab would show without caption: {found}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_cell_the_website_hides_shows_collapsed_in_jupyterlab(page):
    # the site drops a remove-input cell's code; Lab shows it unless jupyter.source_hidden is set,
    # and chapter 4's KV figure, chapter 6's kernel plot and three of chapter 7's cells showed theirs
    if not _is_notebook(page):
        return
    open_code = [
        c.source.splitlines()[0]
        for c in _parsed(page).cells
        if "remove-input" in c.metadata.get("tags", ()) and not c.metadata.get("jupyter", {}).get("source_hidden")
    ]
    assert not open_code, f"{page.name}: cells hidden on the site but open in Lab: {open_code}"


def test_the_figure_check_sees_a_bare_figure_and_a_wrong_name():
    import nbformat

    def figure_cell(source, name="fig-a"):
        return nbformat.v4.new_code_cell(source, metadata={"mystnb": {"figure": {"name": name, "caption": "A."}}})

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        figure_cell('fig = draw()\nplots.show(fig, "fig-a")'),  # right
        figure_cell("fig = draw()\nfig"),  # bare: Lab shows no caption
        figure_cell('plots.show(fig, "fig-b")', name="fig-c"),  # another cell's name
        nbformat.v4.new_code_cell("fig"),  # not a figure cell
    ]
    found = figure_cells_not_shown(nb)
    assert [f.split(":")[0] for f in found] == ["fig-a", "fig-c"]


def test_the_hidden_name_check_sees_a_planted_chapter():
    import nbformat

    nb = nbformat.v4.new_notebook()
    hidden = nbformat.v4.new_code_cell("a100 = rl.gpu('A100')\nprose('x', 1)", metadata={"tags": ["remove-input"]})
    nb.cells = [
        nbformat.v4.new_code_cell("import roofline_lib as rl"),
        hidden,
        nbformat.v4.new_code_cell("%matplotlib inline\nprint(a100.name, len([1]))"),
    ]
    assert names_hidden_cells_lend(nb) == [(2, ["a100"])]
    nb.cells[0].source += "\na100 = rl.gpu('A100')"  # defined visibly first: fine
    assert names_hidden_cells_lend(nb) == []


def _prose_order():
    """tools/prose_order.py, whose check_order says whether a value is quoted before it is set."""
    if "prose_order" not in sys.modules:
        spec = importlib.util.spec_from_file_location("prose_order", ROOT / "tools" / "prose_order.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["prose_order"] = module  # dataclasses look their module up while the class is made
        spec.loader.exec_module(module)
    return sys.modules["prose_order"]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_quoted_value_is_set_above_its_text(chapter):
    # nbval runs only the code, so a {eval} quoted above the cell that sets it passes there and
    # fails the book build ("no value named ..."); say so without a build
    _prose_order().check_order(chapter.read_text(encoding="utf-8"), chapter.name)


def test_order_check_catches_a_value_quoted_too_early():
    early = 'Text {eval}`prose["late"]`.\n\n```{code-cell} ipython3\nprose("late", 1)\n```\n'
    with pytest.raises(_prose_order().OrderError, match="quoted before the cell that sets it"):
        _prose_order().check_order(early, "planted.md")


def test_every_chapter_is_checked():
    # the eleven chapters of the table of contents, 01_ to 11_
    assert [p.name[:2] for p in CHAPTERS] == [f"{i:02d}" for i in range(1, 12)]


# ------------------------------------------------------------------ the checker, on planted chapters

PLANTED = """---
jupytext:
  text_representation:
    extension: .md
---

# 9. A planted chapter

Stack-100M on an H100 in fp32 runs at 220,000 tokens per second, see chapter 5, as of 2024.

```{code-cell} ipython3
:tags: [remove-input, remove-output]
run_rate = 227879  # code: not prose
```

The rate is {eval}`prose["rate:,.0f"]` tokens per second, $s = 2048$, `n = 4096`.

$$
F = 6N + 12 L s d
$$

```{admonition} Sanity check: 64 GPUs
:class: warning
:name: box-12345
The source quotes 44.5 %; the same source's run was 1.5e6 tokens per second.

   ```{admonition} Answer
   :class: dropdown
   It runs 3.7 times faster, <div data-intensity="85"></div> [see](https://x.org/99)
   ```
```

```bash
nsys profile --delay=30 python train.py
```
"""


def test_a_chapter_number_in_the_title_is_a_name_and_elsewhere_a_figure():
    titled = PLANTED.replace("# 9. A planted chapter", "# 11. A planted chapter\n\nIt has 11 sections.")
    found = [(n, numeral) for n, numeral, _ in typed_numerals(titled)]
    assert (9, "11") in found and not any(n == 7 for n, _ in found)  # the prose's 11, not the title's


def test_checker_finds_typed_numbers_in_a_planted_chapter():
    found = [(n, numeral) for n, numeral, _ in typed_numerals(PLANTED)]
    # prose: 220,000 (line 9), the admonition title's 64 (line 22), 44.5 and 1.5e6 = 1,500,000
    # (line 25); not the code, the {eval}, the math, the option lines, the HTML, the link, the
    # year, "chapter 5", H100 / fp32 / Stack-100M, nor the 3.7 (at most ten)
    assert found == [(9, "220,000"), (22, "64"), (25, "44.5"), (25, "1.5e6")]


def test_checker_allow_list_lets_a_scenario_input_pass():
    found = [numeral for _, numeral, _ in typed_numerals(PLANTED, {"64": "GPUs in the scenario"})]
    assert found == ["220,000", "44.5", "1.5e6"]


def test_checker_finds_the_missing_parts_of_a_planted_chapter():
    assert missing_parts(PLANTED) == [
        "a citation ([Author 2024](../book/references.md#cite-key))",
        "a Takeaway box",
        "a '## Problems' section",
        "a '## Summary' section",
        "a '## Further reading' section",
    ]
    whole = PLANTED.replace(
        "# 9. A planted chapter",
        "# 9. A planted chapter\n\nAs [Williams et al. 2009](../book/references.md#cite-williams2009roofline) shows.",
    )
    whole += "\n```{admonition} Takeaway\n:class: tip\nShort.\n```\n\n## Problems\n\n1. Why?\n\n## Summary\n\n- This.\n"
    assert missing_parts(whole) == ["a '## Further reading' section"]
    assert missing_parts(whole + "\n## Further reading\n\n- A paper.\n") == ["a citation inside 'Further reading'"]
    assert missing_parts(whole + "\n## Further reading\n\n- {cite:t}`williams2009roofline`.\n") == [
        "a citation inside 'Further reading'"  # a role JupyterLab cannot follow does not count
    ]
    cited = "- [Williams et al. (2009)](../book/references.md#cite-williams2009roofline).\n"
    assert missing_parts(whole + "\n## Further reading\n\n" + cited) == []


def test_checker_finds_the_source_in_a_planted_chapter():
    # line 25 twice over ("The source", "the same source's"), once reported; "source code" passes
    assert [n for n, _ in source_mentions(PLANTED + "\nRead the source code of torch.\n")] == [25]


def test_prose_lines_skip_code_and_math_but_keep_admonitions():
    kept = {n: line for n, line in prose_lines(PLANTED)}
    assert 12 not in kept and 13 not in kept  # the code cell's option and body
    assert 18 not in kept  # display math
    assert 23 not in kept and 24 not in kept and 28 not in kept  # directive options
    assert "3.7 times faster" in kept[29]  # a nested admonition's body is prose
    assert not any("nsys" in line for line in kept.values())  # a bash fence is code
