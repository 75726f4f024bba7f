"""Names the grader did not choose (a student's folder, a file, a kernel's error) as safe text.

* :func:`shown` is a name as text: bytes that are not UTF-8 become backslash escapes
  (``\\xff``). The CSV and JSON reports keep this real name; the CSV writer quotes it, JSON
  escapes its control characters.
* :func:`for_terminal` is what the terminal and the score table get: every character that a
  terminal would act on instead of drawing is written as its escape (``\\x1b``, ``\\n``,
  ``\\u202e``): control characters (ESC and its sequences, newlines, carriage returns, DEL, the
  C1 controls), format characters (the bidirectional overrides, embeddings and isolates, the
  zero-width ones) and the line and paragraph separators. A name can then neither clear the
  screen nor draw a row of its own, nor reverse the text after it.
"""

from __future__ import annotations

import os
import unicodedata

__all__ = ["for_terminal", "shown"]

#: Unicode categories a terminal acts on rather than draws: controls, format characters (bidi
#: overrides, zero-width joiners), line and paragraph separators, lone surrogates.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def shown(name) -> str:
    """A file name as text: undecodable bytes as backslash escapes (``\\xff``), never an error."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _escape(ch: str) -> str:
    if ch in _SHORT:
        return _SHORT[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def for_terminal(text) -> str:
    """``text`` with every character a terminal would act on written as its escape (``\\x1b``)."""
    text = str(text)
    if text.isprintable():  # the usual case: nothing to escape
        return text
    return "".join(_escape(ch) if unicodedata.category(ch) in _ESCAPED_CATEGORIES else ch for ch in text)
