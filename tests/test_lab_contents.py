"""The course's contents manager: a chapter opens in JupyterLab with nothing for Lab to change.

JupyterLab marked every chapter modified on open, a plain two-cell jupytext notebook included: the
model had no ``language_info`` (jupytext never stores it), so Lab wrote a placeholder into it. The
manager adds the record the course's kernel reports; these tests hold it to that kernel's own
answer, and check that a save writes the file back byte for byte. The browser test
(``tests/test_lab.py``) checks the marker itself in JupyterLab.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pytest
from traitlets.utils.importstring import import_item

from roofline_lib.present.lab_contents import CourseContentsManager, course_language_info

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "notebooks/04_inference_regimes.md"


@pytest.fixture()
def course(tmp_path):
    """A copy of one chapter and the jupytext settings, as the Lab server sees them."""
    (tmp_path / "notebooks").mkdir()
    shutil.copy2(ROOT / CHAPTER, tmp_path / CHAPTER)
    shutil.copy2(ROOT / "jupytext.toml", tmp_path / "jupytext.toml")
    return tmp_path


def _get(manager, path):
    return asyncio.run(manager.get(path, content=True, type="notebook"))


def test_the_server_config_names_this_manager():
    config = json.loads((ROOT / "lab" / "jupyter_server_config.json").read_text())
    assert import_item(config["ServerApp"]["contents_manager_class"]) is CourseContentsManager
    # jupytext's server extension keeps a manager that is already jupytext's (it has `formats`)
    assert hasattr(CourseContentsManager, "formats")


def test_a_chapter_opens_with_the_language_info_its_kernel_reports(course):
    from jupyter_client.manager import start_new_kernel

    notebook = _get(CourseContentsManager(root_dir=str(course)), CHAPTER)["content"]
    kernel, client = start_new_kernel(kernel_name="python3")
    try:
        reply = client.kernel_info(reply=True, timeout=30)
    finally:
        client.stop_channels()
        kernel.shutdown_kernel(now=True)
    # Lab compares the two: equal, and it changes nothing
    assert notebook["metadata"]["language_info"] == reply["content"]["language_info"]
    assert notebook["metadata"]["language_info"] == course_language_info()


def test_a_save_of_the_opened_chapter_writes_it_back_byte_for_byte(course):
    manager = CourseContentsManager(root_dir=str(course))
    before = (course / CHAPTER).read_bytes()
    model = _get(manager, CHAPTER)
    assert "language_info" in model["content"]["metadata"]
    asyncio.run(manager.save({"type": "notebook", "format": "json", "content": model["content"]}, CHAPTER))
    assert (course / CHAPTER).read_bytes() == before  # jupytext's filter drops the record again


def test_other_notebooks_are_left_as_they_are(course):
    import nbformat

    manager = CourseContentsManager(root_dir=str(course))
    # an .ipynb keeps whatever it stores (here: none)
    plain = nbformat.v4.new_notebook(
        metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}
    )
    nbformat.write(plain, course / "plain.ipynb")
    assert "language_info" not in _get(manager, "plain.ipynb")["content"]["metadata"]
    # a text notebook for another kernel gets no guess at that interpreter's version
    text = (course / CHAPTER).read_text(encoding="utf-8")
    other = text.replace("name: python3", "name: julia-1.10").replace("language: python", "language: julia")
    assert other != text
    (course / "notebooks" / "other.md").write_text(other, encoding="utf-8")
    assert "language_info" not in _get(manager, "notebooks/other.md")["content"]["metadata"]


def test_a_kernel_that_is_not_this_interpreter_gets_nothing(course, monkeypatch):
    manager = CourseContentsManager(root_dir=str(course))
    monkeypatch.setattr(manager, "_kernel_argv", lambda name: ["/nonexistent/python", "-m", "ipykernel_launcher"])
    assert "language_info" not in _get(manager, CHAPTER)["content"]["metadata"]
    monkeypatch.setattr(manager, "_kernel_argv", lambda name: [])  # no python3 kernel at all
    assert "language_info" not in _get(manager, CHAPTER)["content"]["metadata"]


# --------------------------------------------------------------------------- prose before Run All


def _roles(notebook) -> list[tuple[str, str]]:
    """(expression, text shown) for every user expression the Markdown cells carry."""
    return [
        (item["expression"], item["result"]["data"]["text/plain"])
        for cell in notebook["cells"]
        if cell["cell_type"] == "markdown"
        for item in cell["metadata"].get("user_expressions", [])
    ]


def test_before_run_all_each_role_shows_the_last_build_value_or_an_ellipsis(course):
    import jupytext

    from roofline_lib.present.lab_contents import PLACEHOLDER, RECORDS

    prose_text = "\n".join(c.source for c in jupytext.read(course / CHAPTER).cells if c.cell_type == "markdown")
    refs = sorted(set(re.findall(r'\{eval\}`prose\["([^"]+)"\]`', prose_text)))
    assert len(refs) > 50  # chapter 4 quotes about a hundred values
    record = course / RECORDS / "notebooks" / "04_inference_regimes.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({refs[0]: "3,980", refs[1]: "153"}), encoding="utf-8")
    manager = CourseContentsManager(root_dir=str(course))
    shown = dict(_roles(_get(manager, CHAPTER)["content"]))
    # every role has a result, so jupyterlab-myst draws no code span of its key
    assert set(shown) == {f'prose["{r}"]' for r in refs}
    assert shown[f'prose["{refs[0]}"]'] == "3,980" and shown[f'prose["{refs[1]}"]'] == "153"
    assert set(shown.values()) == {"3,980", "153", PLACEHOLDER}
    # and a save keeps them out of the source
    before = (course / CHAPTER).read_bytes()
    model = _get(manager, CHAPTER)
    asyncio.run(manager.save({"type": "notebook", "format": "json", "content": model["content"]}, CHAPTER))
    assert (course / CHAPTER).read_bytes() == before


def test_a_damaged_record_counts_as_none(course):
    from roofline_lib.present.lab_contents import PLACEHOLDER, RECORDS, last_build_values

    record = course / RECORDS / "notebooks" / "04_inference_regimes.json"
    record.parent.mkdir(parents=True)
    record.write_text('{"half a rec', encoding="utf-8")
    assert last_build_values(course, CHAPTER) == {}
    record.write_text('{"ridge:.0f": "153"}', encoding="utf-8")
    # the server names a file from its root, with or without a leading slash
    assert last_build_values(course, CHAPTER) == last_build_values(course, "/" + CHAPTER) == {"ridge:.0f": "153"}
    record.write_text('{"half a rec', encoding="utf-8")
    shown = _roles(_get(CourseContentsManager(root_dir=str(course)), CHAPTER)["content"])
    assert shown and {text for _, text in shown} == {PLACEHOLDER}


def test_the_book_build_records_what_each_role_showed(tmp_path, monkeypatch):
    from roofline_lib import prose as prose_module
    from roofline_lib.present.prose import RECORD_ENV, Prose

    target = tmp_path / "prose" / "notebooks" / "page.json"
    monkeypatch.setenv(RECORD_ENV, str(target))
    monkeypatch.setattr(prose_module, "_recorded", {})
    prose = Prose()
    prose("ridge", 153.2)
    prose("tps", 3979.6)
    assert prose["ridge:.0f"] == "153" and prose["tps:,.0f"] == "3,980"
    assert json.loads(target.read_text(encoding="utf-8")) == {"ridge:.0f": "153", "tps:,.0f": "3,980"}
    with pytest.raises(KeyError):
        prose["missing"]  # a refused role records nothing
    assert set(json.loads(target.read_text(encoding="utf-8"))) == {"ridge:.0f", "tps:,.0f"}
    monkeypatch.delenv(RECORD_ENV)
    prose["ridge:.1f"]  # a reader's kernel writes nowhere
    assert "ridge:.1f" not in json.loads(target.read_text(encoding="utf-8"))


def test_a_notebook_whose_save_would_keep_them_gets_no_values(tmp_path):
    # A reader's own MyST notebook outside the course (no jupytext.toml dropping user_expressions):
    # handed values, its next save wrote "…" placeholders into the file for good
    page = tmp_path / "mine.md"
    page.write_text(
        "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
        "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n"
        '# Mine\n\nThe value is {eval}`prose["x"]`.\n',
        encoding="utf-8",
    )
    manager = CourseContentsManager(root_dir=str(tmp_path))
    model = _get(manager, "mine.md")
    assert _roles(model["content"]) == []
    asyncio.run(manager.save({"type": "notebook", "format": "json", "content": model["content"]}, "mine.md"))
    assert "user_expressions" not in page.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- links that land in Lab


def test_a_link_to_a_place_reaches_lab_as_a_cell_fragment_and_a_save_turns_it_back(course):
    # JupyterLab looks a plain fragment up among the cells it has drawn, which a page it has just
    # opened has not: it stayed at the top. A cell id it finds at once.
    manager = CourseContentsManager(root_dir=str(course))
    before = (course / CHAPTER).read_text(encoding="utf-8")
    model = _get(manager, CHAPTER)
    markdown = "".join(c["source"] for c in model["content"]["cells"] if c["cell_type"] == "markdown")
    assert "](../book/glossary.md#cell-id=term-kv-cache)" in markdown
    assert "](../book/references.md#cell-id=cite-" in markdown
    assert not re.search(r"\]\([^)]*\.md#(?!cell-id=)", markdown)  # every link to a place, rewritten
    assert "](../book/glossary.md#term-kv-cache)" in before and "cell-id=" not in before
    asyncio.run(manager.save({"type": "notebook", "format": "json", "content": model["content"]}, CHAPTER))
    assert (course / CHAPTER).read_text(encoding="utf-8") == before


def test_links_elsewhere_are_left_alone():
    from roofline_lib.present.lab_contents import _links_back, _links_to_cells

    text = "[a](https://example.org/x.md#y), [b](#local), [c](05_mfu.md), [d](05_mfu.md#cell-id=x)"
    assert _links_to_cells(text) == text  # another host, this page, a page's top, already a cell
    assert _links_to_cells("[e](05_mfu.md#the-bill)") == "[e](05_mfu.md#cell-id=the-bill)"
    assert _links_back("[e](05_mfu.md#cell-id=the-bill)") == "[e](05_mfu.md#the-bill)"


def test_a_cell_that_opens_a_place_gets_its_name_as_its_id(tmp_path):
    from roofline_lib.present.lab_contents import cell_anchor

    shutil.copy2(ROOT / "jupytext.toml", tmp_path / "jupytext.toml")
    (tmp_path / "book").mkdir()
    shutil.copy2(ROOT / "book" / "glossary.md", tmp_path / "book" / "glossary.md")
    cells = _get(CourseContentsManager(root_dir=str(tmp_path)), "book/glossary.md")["content"]["cells"]
    ids = [c["id"] for c in cells]
    assert "term-kernel" in ids and "term-kv-cache" in ids and len(set(ids)) == len(ids)
    assert cells[0]["id"] == "glossary"  # the page's title: a heading opens the first cell
    assert cell_anchor("(cite-hockney1994communication)=\nHockney (1994)\n: ...") == "cite-hockney1994communication"
    assert (
        cell_anchor("## What `FlopCounterMode` counts, and *misses*\n\ntext")
        == "what-flopcountermode-counts-and-misses"
    )
    assert cell_anchor("Some prose.\n\n## A heading further down") is None  # only a cell's first line


def test_heading_anchors_are_the_ones_the_site_resolves():
    # the same rule as myst-parser's, on every heading of the course a link can name (levels 1 and 2)
    from myst_parser.mdit_to_docutils.base import default_slugify

    from roofline_lib.present.lab_contents import heading_anchor

    pages = sorted((ROOT / "notebooks").glob("*.md")) + sorted((ROOT / "book").glob("*.md"))
    titles = [m[1] for p in pages for m in re.finditer(r"^#{1,2} (.+)$", p.read_text(encoding="utf-8"), re.M)]
    assert len(titles) > 50
    for title in titles:
        plain = title.replace("`", "").replace("*", "")
        assert heading_anchor(title) == default_slugify(plain), title
