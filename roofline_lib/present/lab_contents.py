"""JupyterLab's contents manager for the course: jupytext's, plus the kernel's ``language_info``.

A chapter is a jupytext Markdown file, and jupytext stores no ``language_info`` in it (that record
names the reader's Python version, so it would differ from machine to machine). JupyterLab fills
the missing record with a placeholder the moment it opens a notebook, and that change alone marks
the notebook modified: a reader who only read a chapter was asked to save it on closing.

This manager hands JupyterLab each text notebook with the ``language_info`` its own kernel will
report, when that kernel is the course's (the ``python3`` kernel of the environment the server runs
in, which ``make install`` registers). JupyterLab then has nothing to change on open, and a save
drops the record again, because jupytext's metadata filter never writes it. Any other kernel gets
nothing added: guessing another interpreter's version would only trade one change for another.

Before Run All, jupyterlab-myst shows each ``{eval}`` role as its bare expression, a code span
such as ``prose["a100_ridge:.0f"]``, since no value has been computed. So the manager also hands
each Markdown cell the values its roles showed in the last book build (``_build/prose/``, written
by ``roofline_lib.present.prose`` while the book builds), as the ``user_expressions`` jupyterlab-myst
reads, and an ellipsis for a value no build has recorded. Run All replaces them with the reader's
own; jupytext's filter keeps them out of a save.

A link to a place in another page, ``[HBM](../book/glossary.md#term-hbm)`` or a section's
``03_counting_flops.md#what-flopcountermode-counts-and-misses``, lands on that place on the site.
JupyterLab opens the page and then looks for the fragment among the rendered cells, which a page
it has just opened has not drawn yet, so it stayed at the top. What it can find at once is a cell
by its id (a ``#cell-id=...`` fragment). So the manager gives a Markdown cell that opens with a MyST
target, ``(term-hbm)=``, or with a heading the target's label or the heading's anchor as its cell
id, and hands JupyterLab each such link with a ``cell-id=`` fragment; a save turns the links back,
and jupytext stores no cell ids, so the file is as it was.

``make install`` turns it on through ``lab/jupyter_server_config.json``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from jupytext.async_contentsmanager import build_async_jupytext_contents_manager_class

from .prose import ROLE

__all__ = [
    "CourseContentsManager",
    "PLACEHOLDER",
    "cell_anchor",
    "course_language_info",
    "heading_anchor",
    "last_build_values",
]

_TEXT_NOTEBOOK_SUFFIXES = (".md", ".myst", ".py")
PLACEHOLDER = "…"  # a value no build has recorded yet
RECORDS = Path("_build") / "prose"  # under the server's root: what the last book build quoted


def last_build_values(root, path: str) -> dict[str, str]:
    """ "key:spec" -> the text the last book build showed for it on page ``path`` ({} if none)."""
    record = Path(root) / RECORDS / Path(path.lstrip("/")).with_suffix(".json")  # the server may say "/notebooks/..."
    try:
        values = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in values.items()} if isinstance(values, dict) else {}


def _save_drops_user_expressions(notebook, config) -> bool:
    """Whether jupytext's cell metadata filter for this notebook keeps ``user_expressions`` out of a save.

    The filter comes from the notebook's own header or from the jupytext configuration that
    applies to it; the course's ``jupytext.toml`` drops them on every page. A notebook outside it
    would have the values handed to it written into its file by the reader's next save, so it gets
    none.
    """
    tokens = set()
    for spec in ((notebook.metadata.get("jupytext") or {}).get("cell_metadata_filter"),
                 getattr(config, "cell_metadata_filter", None)):  # fmt: skip
        if isinstance(spec, str):
            tokens |= {t.strip() for t in spec.split(",")}
    return "-user_expressions" in tokens or "-all" in tokens


def _add_user_expressions(notebook, values: dict[str, str]) -> None:
    """Give each Markdown cell a result for every ``{eval}`` role in it, as jupyterlab-myst reads them."""
    for cell in notebook.cells:
        if cell.cell_type != "markdown" or "user_expressions" in cell.metadata:
            continue
        seen: dict[str, str] = {}
        for expression, ref in ROLE.findall(cell.source):
            seen.setdefault(expression, values.get(ref, PLACEHOLDER))
        if seen:
            cell.metadata["user_expressions"] = [
                {"expression": e, "result": {"status": "ok", "data": {"text/plain": text}, "metadata": {}}}
                for e, text in seen.items()
            ]


# A MyST target or a heading on a Markdown cell's first line; a relative link to a place in a page
# (not one with a scheme, https://...).
_LEADING_TARGET = re.compile(r"\((?P<label>[^()\s]+)\)=[ \t]*(?:\n|\Z)")
_LEADING_HEADING = re.compile(r"#{1,6}[ \t]+(?P<title>[^\n]*?)[ \t]*(?:\n|\Z)")
_PAGE_LINK = re.compile(
    r"(?P<head>\]\((?P<page>(?![A-Za-z][\w+.-]*:)[^()\s#]+\.(?:md|ipynb))#)(?P<cell>cell-id=)?(?P<fragment>[^()\s]+)\)"
)
_CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")  # what nbformat allows as a cell id
_CELL_FRAGMENT = "cell-id="  # JupyterLab's fragment for a cell, which it finds before it draws the page


def heading_anchor(title: str) -> str:
    """The anchor a link to a heading names on the site (myst-parser's ``myst_heading_anchors``,
    GitHub's rule): the heading's text, inline code and emphasis read as their text, in lower
    case, spaces as hyphens, and every character but word characters, ``-`` and CJK dropped."""
    text = re.sub(r"[`*]", "", title).lower().replace(" ", "-")
    return re.sub(r"[^\w\u4e00-\u9fff\- ]", "", text)


def cell_anchor(source: str) -> str | None:
    """The place a Markdown cell starts: the label of a MyST target on its first line, else the
    anchor of a heading there, else None."""
    target = _LEADING_TARGET.match(source)
    if target:
        return target["label"]
    heading = _LEADING_HEADING.match(source)
    return heading_anchor(heading["title"]) if heading else None


def _anchor_cells(notebook) -> None:
    """Each Markdown cell that starts a place gets that place's name as its id (once per name)."""
    taken = {cell.get("id") for cell in notebook.cells}
    for cell in notebook.cells:
        anchor = cell_anchor(cell.source) if cell.cell_type == "markdown" else None
        if anchor and _CELL_ID.match(anchor) and anchor not in taken:
            cell["id"] = anchor
            taken.add(anchor)


def _links_to_cells(source: str) -> str:
    """``](page.md#place)`` -> ``](page.md#cell-id=place)``, the fragment JupyterLab scrolls to at once."""
    return _PAGE_LINK.sub(lambda m: m.group(0) if m["cell"] else f"{m['head']}{_CELL_FRAGMENT}{m['fragment']})", source)


def _links_back(source: str) -> str:
    """What :func:`_links_to_cells` did, undone: the page's own links, as the site reads them."""
    return _PAGE_LINK.sub(lambda m: f"{m['head']}{m['fragment']})" if m["cell"] else m.group(0), source)


def course_language_info() -> dict[str, Any]:
    """What the course's ``python3`` kernel (ipykernel, in this interpreter) reports as ``language_info``."""
    from ipykernel.ipkernel import IPythonKernel

    return dict(IPythonKernel.language_info)  # its version is this interpreter's


def _runs_here(argv: list[str]) -> bool:
    """Whether a kernelspec's command line starts this interpreter (the server's own Python)."""
    if not argv:
        return False
    if argv[0] in ("python", "python3", "{python}"):
        return True
    try:
        return os.path.samefile(argv[0], sys.executable)
    except OSError:
        return False


class CourseContentsManager(build_async_jupytext_contents_manager_class(AsyncLargeFileManager)):
    """jupytext's contents manager; text notebooks open with their kernel's ``language_info``."""

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if content and model.get("type") == "notebook" and str(path).endswith(_TEXT_NOTEBOOK_SUFFIXES):
            notebook = model.get("content")
            self._add_language_info(notebook)
            config = await self.get_config(path, use_cache=True)
            if notebook is not None and _save_drops_user_expressions(notebook, config):
                _add_user_expressions(notebook, last_build_values(self.root_dir, str(path)))
            if notebook is not None:
                _anchor_cells(notebook)
                for cell in notebook.cells:
                    if cell.cell_type == "markdown":
                        cell.source = _links_to_cells(cell.source)
        return model

    async def save(self, model, path=""):
        content = model.get("content") if isinstance(model, dict) else None
        if model.get("type") == "notebook" and str(path).endswith(_TEXT_NOTEBOOK_SUFFIXES) and content:
            for cell in content.get("cells", ()):
                if cell.get("cell_type") == "markdown":
                    source = cell.get("source", "")
                    text = "".join(source) if isinstance(source, list) else source
                    cell["source"] = _links_back(text)
        return await super().save(model, path)

    def _add_language_info(self, notebook) -> None:
        if notebook is None or "language_info" in notebook.metadata:
            return
        kernelspec = notebook.metadata.get("kernelspec") or {}
        if kernelspec.get("language") != "python" or kernelspec.get("name") != "python3":
            return
        if _runs_here(self._kernel_argv("python3")):
            notebook.metadata["language_info"] = course_language_info()

    def _kernel_argv(self, name: str) -> list[str]:
        specs = getattr(self.parent, "kernel_spec_manager", None)
        if specs is None:  # outside a server (a script, a test): the kernels this environment has
            from jupyter_client.kernelspec import KernelSpecManager

            specs = KernelSpecManager()
        try:
            return list(specs.get_kernel_spec(name).argv)
        except Exception:  # no such kernel here: the notebook is left as it is
            return []
