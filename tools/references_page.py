#!/usr/bin/env python3
"""Write the course's reference list, book/references.md, from references.bib.

    python tools/references_page.py            # rewrite book/references.md
    python tools/references_page.py --check    # exit 1 if it is not what the .bib gives

The list is plain MyST, so JupyterLab shows it as the site does (a ``{bibliography}`` directive
shows nothing there). Each entry is a cell of its own that opens with a target, ``(cite-<key>)=``:
the id a citation links to, ``../book/references.md#cite-<key>`` (tools/lab_links.py). The entry's
label is the citation's own text, ``Kaplan et al. (2020)``; then the authors, the title, where it
appeared and the year.
"""

from __future__ import annotations

import argparse
import codecs
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from lab_links import BIB, REFERENCES, bib_entries  # noqa: E402  (the citations' labels)

HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
    jupytext_version: 1.19.6
kernelspec:
  display_name: Python 3 (roofline course)
  language: python
  name: python3
---

# References

The papers, datasheets and tool documentation behind the course. Each chapter cites what it relies
on and ends with a short list of further reading; the hardware registry names the same datasheets in
each entry's `source` field.

% Written by tools/references_page.py from references.bib: edit the .bib and run the tool again.
"""

_KEY = re.compile(r"[a-z0-9]+\Z")  # a key is its own anchor: both renderers keep such an id as it is
_MARKDOWN = re.compile(r"([\\`*_\[\]<>$])")  # characters MyST would read as markup


def _text(latex: str) -> str:
    """A BibTeX field as text: LaTeX accents and quotes decoded, braces dropped, markup escaped."""
    import latexcodec  # noqa: F401  (registers the "ulatex" codec; it comes with pybtex)

    text = codecs.decode(latex, "ulatex")
    text = re.sub(r"\s+", " ", text.replace("{", "").replace("}", "")).strip()
    return _MARKDOWN.sub(r"\\\1", text)


def _people(persons) -> str:
    names = [_text(" ".join(p.first_names + p.middle_names + p.prelast_names + p.last_names)) for p in persons]
    if names and names[-1].lower() == "others":
        return ", ".join(names[:-1]) + " et al."
    if len(names) > 2:
        return ", ".join(names[:-1]) + " and " + names[-1]
    return " and ".join(names)


def _where(fields) -> str:
    """Where an entry appeared: journal, volume and pages, proceedings, report or publisher."""
    parts = []
    if "journal" in fields:
        journal = _text(fields["journal"])
        if "volume" in fields:
            journal += f" {_text(fields['volume'])}"
            if "number" in fields:
                journal += f"({_text(fields['number'])})"
        parts.append(journal)
    for name in ("booktitle", "series", "howpublished", "institution", "organization", "publisher"):
        if name in fields:
            parts.append(_text(fields[name]))
    if "pages" in fields:
        parts.append(f"pp. {_text(fields['pages'])}")
    return ", ".join(parts)


def entry(key: str, fields, persons, label: tuple[str, str]) -> str:
    """One entry as MyST: its target, its label, then its details as the label's definition."""
    if not _KEY.match(key):
        raise ValueError(f"{BIB.name}: the key {key!r} must be lower-case letters and digits (it is an anchor)")
    who = persons.get("author") or persons.get("editor")
    details = [_people(who)] if who else []
    details.append(_text(fields["title"]))
    where = _where(fields)
    if where:
        details.append(where)
    details.append(_text(fields.get("year", "n.d.")))
    line = ". ".join(d.rstrip(".") for d in details) + "."
    if "note" in fields:
        line += f" {_text(fields['note']).rstrip('.')}."
    if "doi" in fields:
        line += f" doi:{_text(fields['doi'])}."
    author, year = label
    return f"(cite-{key})=\n{author} ({year})\n: {line}\n"


def render(bib: Path = BIB) -> str:
    """The whole page: the header, then one cell per entry, ordered by label as a reader looks them up."""
    from pybtex.database import parse_file

    data = parse_file(str(bib))
    labels = bib_entries(bib)
    order = sorted(data.entries, key=lambda k: (labels[k][0].lower(), labels[k][1], k))
    cells = [entry(k, data.entries[k].fields, data.entries[k].persons, labels[k]) for k in order]
    return HEADER + "".join(f"\n+++\n\n{cell}" for cell in cells)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the page is out of date")
    args = parser.parse_args(argv)
    text = render()
    current = REFERENCES.read_text(encoding="utf-8") if REFERENCES.exists() else ""
    if args.check:
        if current != text:
            print(f"{REFERENCES.relative_to(ROOT)} is not what {BIB.name} gives: run tools/references_page.py")
            return 1
        return 0
    if current != text:
        REFERENCES.write_text(text, encoding="utf-8")
        print(f"rewrote {REFERENCES.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
