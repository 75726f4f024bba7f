"""Sphinx glue for The Roofline Course's website: one registry, no CDN.

* On ``builder-inited`` it writes ``_static/roofline-registry.js`` (``window.ROOFLINE_REGISTRY``)
  from :func:`roofline_lib.present.export.write_registry_js`, so the live explorer in the pages reads the
  very numbers the library uses. Nothing hand-written holds a copy.
* On ``html-page-context`` it adds the registry, ``roofline-explorer.js`` and its CSS to the pages
  that contain an explorer (an element with class ``roofline-explorer``) and to no other page.
  The script checks for the element as well, so it is harmless wherever it lands.
* It loads ``roofline-site.css`` on every page: nothing wider than a phone's screen, wide tables
  scroll in their own box with the first column kept in view, the explorers' still figures.
* On the search page it adds ``roofline-search.js``: opened from disk (``file://``), the search
  lists its results without the snippets a browser would refuse to fetch, and says that
  ``make serve`` gives them.
* On ``config-inited`` it keeps the theme from drawing a second search box in a top bar.
* On ``html-page-context`` it also drops repeated copies of the same inline script. Extensions
  that add a body-only script (sphinx-thebe's ``const THEBE_JS_URL = ...``) get it registered twice
  by Sphinx 7.4 (once as ``None``, once as ``''``), and a repeated ``const`` is a page error.

* On ``doctree-read`` it adds the targets that open a glossary entry, a reference or a section
  (``(term-kernel)=``, ``(cite-<key>)=``) to the anchors MyST resolves ``[text](page.md#id)``
  links against, so the chapters' plain-Markdown links to them (the form JupyterLab can follow
  too) land on the entry and are checked by the strict build.

The vendored MathJax is wired up in ``_config.yml`` (``html_extra_path``, ``mathjax_path``); see
``book/_extra/vendor/README.md``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

REGISTRY_JS = "roofline-registry.js"
EXPLORER_JS = "roofline-explorer.js"
EXPLORER_CSS = "roofline-explorer.css"
SITE_CSS = "roofline-site.css"
SEARCH_JS = "roofline-search.js"

_ENTRY_PREFIXES = ("term-", "cite-")  # the ids a glossary entry's and a reference's target give it
_EXPLORER = re.compile(r"""class=["'](?:[^"']*\s)?roofline-explorer(?:\s[^"']*)?["']""")


def has_explorer(html: str) -> bool:
    """True when a page's body holds an element with the class ``roofline-explorer``."""
    return bool(_EXPLORER.search(html))


def write_registry(app) -> None:
    """Write the registry script into the output's ``_static`` folder (HTML builders only)."""
    if app.builder.format != "html":
        return
    from roofline_lib.present.export import write_registry_js

    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    write_registry_js(static / REGISTRY_JS)


def _asset_key(asset):
    attributes = tuple(sorted((k, str(v)) for k, v in asset.attributes.items()))
    return os.fspath(asset.filename or ""), attributes


def drop_repeated_scripts(app, pagename, templatename, context, doctree) -> None:
    """Keep the first of several identical script (or style) entries of a page."""
    for name in ("script_files", "css_files"):
        assets = context.get(name)
        if not isinstance(assets, list):
            continue
        seen, unique = set(), []
        for asset in assets:
            key = _asset_key(asset) if hasattr(asset, "attributes") else (str(asset), ())
            if key not in seen:
                seen.add(key)
                unique.append(asset)
        assets[:] = unique  # the same list the template reads; Sphinx resets it for the next page


def add_explorer_assets(app, pagename, templatename, context, doctree) -> None:
    """Load the explorer's files on the pages that show an explorer."""
    if app.builder.format != "html" or not has_explorer(context.get("body", "")):
        return
    app.add_css_file(EXPLORER_CSS)
    app.add_js_file(REGISTRY_JS)
    app.add_js_file(EXPLORER_JS)


def add_search_note(app, pagename, templatename, context, doctree) -> None:
    """On the search page, the script that drops snippets (and says so) when opened from disk."""
    if app.builder.format == "html" and pagename == "search":
        app.add_js_file(SEARCH_JS, priority=800)  # after documentation_options.js (priority 200)


def theme_options(app, config) -> None:
    """Keep the search box where the book theme puts it, in the sidebar, and only there.

    pydata-sphinx-theme 0.17 adds a search field in a top bar unless ``navbar_persistent`` is
    set; under sphinx-book-theme that draws a second, empty-looking header above every page.
    """
    config.html_theme_options.setdefault("navbar_persistent", [])


def register_link_targets(app, doctree) -> None:
    """Tell MyST that a page's glossary entries and references are link targets.

    The chapters link a term or a reference as plain Markdown, ``[HBM](../book/glossary.md#term-hbm)``
    or ``[Hockney 1994](../book/references.md#cite-hockney1994communication)``, because that is
    what JupyterLab can follow (tools/lab_links.py). MyST resolves ``page.md#id`` only against a
    page's heading anchors and would warn; the ids of the entries' targets, ``term-...`` and
    ``cite-...``, are added to those anchors.
    """
    found = {}
    for node_id, node in doctree.ids.items():
        if node_id.startswith(_ENTRY_PREFIXES):
            found[node_id] = (node.line or 0, node_id, node.astext().strip()[:80] or node_id)
    if found:
        app.env.metadata[app.env.docname].setdefault("myst_slugs", {}).update(found)


def record_prose_for(app, docname, source) -> None:
    """Before myst-nb starts a page's kernel: where that kernel writes the prose values it quotes.

    The kernel inherits the variable; ``roofline_lib.present.prose`` writes each quoted text to
    ``_build/prose/<page>.json``, and JupyterLab shows them before the reader runs the chapter
    (``roofline_lib.present.lab_contents``). A page that is not re-read keeps its file from the last build.
    """
    from roofline_lib.present.prose import RECORD_ENV

    os.environ[RECORD_ENV] = str(Path(app.outdir).parent / "prose" / f"{docname}.json")


def note_pages_to_read(app, env, docnames) -> None:
    """The pages this build reads (and so executes): their execution times are reported at the end."""
    app.roofline_read_now = list(docnames)


def report_execution_times(app, exception) -> None:
    """After a build that passed: how long each page read in it took to execute, slowest first."""
    if exception is not None:
        return
    from myst_nb.sphinx_ import NbMetadataCollector

    times = []
    for docname in getattr(app, "roofline_read_now", []):
        exec_data = NbMetadataCollector.get_doc_data(app.env).get(docname, {}).get("exec_data") or {}
        if exec_data.get("runtime") is not None:
            times.append((exec_data["runtime"], docname))
    if times:
        total = sum(seconds for seconds, _ in times)
        print(f"==> pages executed in this build ({len(times)}, {total:.1f} s of kernel time in all):")
        for seconds, docname in sorted(times, reverse=True):
            print(f"    {seconds:6.1f} s  {docname}")


def setup(app):
    app.connect("source-read", record_prose_for)
    app.connect("env-before-read-docs", note_pages_to_read)
    app.connect("build-finished", report_execution_times)
    app.connect("doctree-read", register_link_targets)
    app.connect("config-inited", theme_options)
    app.connect("builder-inited", write_registry)
    app.add_css_file(SITE_CSS)
    app.connect("html-page-context", add_explorer_assets)
    app.connect("html-page-context", add_search_note)
    app.connect("html-page-context", drop_repeated_scripts, priority=900)  # after the others
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
