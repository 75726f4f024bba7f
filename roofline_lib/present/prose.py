"""Computed numbers for a chapter's prose, the same on the website and in JupyterLab.

A chapter keeps the values its text quotes in one :class:`Prose` object and writes
``{eval}`prose["key:spec"]` `` where the number goes (``spec`` is a Python format spec, as
in ``f"{value:spec}"``)::

    prose = Prose()
    prose("a100_ridge", rl.ridge_point("A100", "bf16"))

    ... a ridge of {eval}`prose["a100_ridge:.0f"]` FLOP/byte ...

Two renderers read that role, and both show an expression's ``text/plain`` form:

* myst-nb (the book build, ``execute_notebooks: inline``) evaluates the expression in the
  kernel while it builds the page and prints the ``text/plain`` output inline, without the
  quotes of a ``str`` repr;
* jupyterlab-myst evaluates it as an ``execute_request`` *user expression* when the reader runs
  the Markdown cell (Run All runs them all), and shows the same ``text/plain`` output inline.

Writing a chapter, then:

* set a value in a code cell *above* the text that quotes it: both renderers evaluate a role
  when they reach it, with only the cells above it run;
* a hidden cell that sets values is tagged ``[remove-input, remove-output]``, not
  ``remove-cell`` (myst-nb runs a ``remove-cell`` cell late, after the text below it);
* a figure is its cell's output: the cell ends with ``plots.show(fig, "fig-name")``, and keeps
  its caption, name and alt text in its ``mystnb: {figure: {caption, name}, image: {alt}}``
  metadata (the website reads them there; ``plots.show`` hands them to JupyterLab);
* the chapter tests hold every chapter to the first rule without building the book.

Before a reader runs a chapter in JupyterLab, its roles show the values of the last book build:
while the book builds a page, ``ROOFLINE_PROSE_RECORD`` names a JSON file (the site extension
sets it), and each value the build quotes is written there as the text it showed;
``roofline_lib.present.lab_contents`` hands those texts to JupyterLab with the chapter.

So an item is a :class:`Shown`: a ``str`` whose ``repr`` is the text itself. Its ``text/plain``
form is then the formatted number, whatever characters it holds (a plain ``str`` would reach
both renderers as a Python literal, with escapes where it holds quotes or backslashes). A key
that was never set, or a spec that does not fit the value, raises, so the strict build fails
and JupyterLab shows the error in place of the number.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path

__all__ = ["Prose", "Shown", "ROLE"]

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: The one form of ``{eval}`` role the chapters write (the pattern ``_config.yml`` gives myst-nb):
#: group 1 is the expression, ``prose["key:spec"]``, and group 2 its ``key:spec``.
ROLE = re.compile(r'\{eval\}`(prose\["([A-Za-z_][A-Za-z0-9_]*(?::[^"\\]*)?)"\])`')
RECORD_ENV = "ROOFLINE_PROSE_RECORD"  # set by the book build: where the quoted texts go
_recorded: dict[str, str] = {}  # this kernel's quoted texts, "key:spec" -> text


def _record(ref: str, text: str) -> None:
    """Keep what the build quoted for ``ref`` in the file ``ROOFLINE_PROSE_RECORD`` names."""
    target = os.environ.get(RECORD_ENV)
    if not target or _recorded.get(ref) == text:
        return
    _recorded[ref] = text
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(path.name + ".part")
    scratch.write_text(json.dumps(_recorded, indent=1, sort_keys=True, ensure_ascii=False), encoding="utf-8")
    scratch.replace(path)  # a reader of the file never sees half of it


class Shown(str):
    """Text that represents itself: ``repr(Shown("153")) == "153"`` (no quotes)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str.__str__(self)

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython's text/plain
        printer.text(str.__str__(self))


class Prose:
    """The values a chapter's text quotes, by key; ``prose["key:spec"]`` is one, formatted."""

    def __init__(self) -> None:
        self._values: dict[str, object] = {}

    def __call__(self, key: str, value: object) -> None:
        """Keep ``value`` under ``key`` (a Python identifier); setting a key again replaces it."""
        if not isinstance(key, str) or not _KEY.match(key):
            raise ValueError(f"key must be a name of letters, digits and underscores, got {key!r}")
        self._values[key] = value

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def value(self, key: str) -> object:
        """The value kept under ``key``, unformatted."""
        try:
            return self._values[key]
        except KeyError:
            close = difflib.get_close_matches(key, self._values, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise KeyError(f"no value named {key!r} for the prose (run the cell that sets it){hint}") from None

    def __getitem__(self, ref: str) -> Shown:
        """``"key"`` or ``"key:spec"`` -> the value formatted with ``format(value, spec)``."""
        if not isinstance(ref, str):
            raise TypeError(f"ref must be a string 'key' or 'key:spec', got {type(ref).__name__} {ref!r}")
        key, _, spec = ref.partition(":")
        value = self.value(key)
        try:
            shown = Shown(format(value, spec))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"format spec {spec!r} does not fit {key!r} = {value!r}: {exc}") from None
        _record(ref, shown)
        return shown

    def __repr__(self) -> str:
        return f"Prose({', '.join(self._values)})"
