#!/usr/bin/env python3
"""Write the chapters' cross-references as plain relative Markdown links, so they work in JupyterLab too.

    python tools/lab_links.py notebooks/*.md exercises/*.md solutions/*.md book/*.md
    python tools/lab_links.py --check notebooks/*.md      # exit 1 if a role is left

JupyterLab renders the chapters with jupyterlab-myst, which resolves neither ``{cite}`` (it has no
bibliography), nor a ``{term}`` whose glossary is another page, nor ``{doc}``: a reader saw raw
BibTeX keys, dead ``href="#"`` links and raw paths. A relative Markdown link works in both places:

* ``{doc}`chapter 5 <05_mfu>``          -> ``[chapter 5](05_mfu.md)``
* ``{term}`kernels <Kernel>``            -> ``[kernels](../book/glossary.md#term-kernel)``
* ``{cite:p}`kaplan2020scaling,x```      -> ``([Kaplan et al. 2020](../book/references.md#cite-kaplan2020scaling); ...)``
* ``{cite:t}`williams2009roofline```     -> ``[Williams et al. (2009)](../book/references.md#cite-williams2009roofline)``

Each entry of the glossary and of the references page opens with a MyST target, ``(term-kernel)=``
or ``(cite-<key>)=`` (tools/references_page.py writes the references from ``references.bib``), in a
cell of its own. On the site the link lands on the entry (the site extension tells MyST those ids
exist); in JupyterLab the course's contents manager makes each such cell findable by its id, so the
link lands there too (``roofline_lib.present.lab_contents``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIB = ROOT / "references.bib"
GLOSSARY = ROOT / "book" / "glossary.md"
REFERENCES = ROOT / "book" / "references.md"

_ROLE = re.compile(r"\{(?P<role>cite(?::[pt])?|term|doc)\}`(?P<body>[^`]+)`")
_LABELLED = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)


def _plain(text: str) -> str:
    """A BibTeX name or title without its braces and the accents it spells in LaTeX."""
    text = re.sub(r"\\[a-zA-Z]+\s*\{?([a-zA-Z])\}?", r"\1", text)  # {\L}ukasz -> Lukasz
    return re.sub(r"[{}]", "", text).strip()


def bib_entries(path: Path = BIB) -> dict[str, tuple[str, str]]:
    """``key -> (authors as cited, year)`` for every entry of the bibliography."""
    from pybtex.database import parse_file

    out = {}
    for key, entry in parse_file(str(path)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        lasts = [_plain(" ".join(p.prelast_names + p.last_names)) for p in people]
        if not lasts:  # a datasheet with an organisation as its author
            lasts = [_plain(entry.fields.get("organization") or entry.fields.get("publisher") or key)]
        if len(lasts) == 1:
            who = lasts[0]
        elif len(lasts) == 2 and "others" not in lasts:
            who = f"{lasts[0]} and {lasts[1]}"
        else:
            who = f"{lasts[0]} et al."
        out[key] = (who, _plain(entry.fields.get("year", "n.d.")))
    # works by the same authors in the same year get a, b, c in key order: NVIDIA 2024a, 2024b
    same: dict[tuple[str, str], list[str]] = {}
    for key in sorted(out):
        same.setdefault(out[key], []).append(key)
    for (who, year), keys in same.items():
        if len(keys) > 1:
            for letter, key in zip("abcdefghijklmnopqrstuvwxyz", keys):
                out[key] = (who, year + letter)
    return out


# A glossary entry: its target on one line, the term on the next, ``(term-kv-cache)=`` / ``KV cache``.
_GLOSSARY_ENTRY = re.compile(r"^\((?P<anchor>term-[a-z0-9-]+)\)=\n(?P<term>[^\n:][^\n]*)\n: ", re.M)


def glossary_terms(path: Path = GLOSSARY) -> dict[str, str]:
    """``lower-cased term -> the term as the glossary spells it``, each entry checked against its anchor."""
    out = {}
    for m in _GLOSSARY_ENTRY.finditer(path.read_text(encoding="utf-8")):
        term = m["term"].strip()
        if term_anchor(term) != m["anchor"]:
            raise ValueError(
                f"{path}: the term {term!r} has the anchor {m['anchor']!r}; it should be {term_anchor(term)!r}"
            )
        out[term.lower()] = term
    if not out:
        raise ValueError(f"{path} defines no term: each entry is '(term-...)=', the term, then ': ' and its definition")
    return out


def term_anchor(term: str) -> str:
    """A glossary term's anchor: ``term-`` and the term in lower case, other characters as hyphens.

    Lower case because both renderers lower-case a MyST target's label in the id they give it
    (docutils on the site, mystmd in JupyterLab); written so, the anchor is the same in both."""
    return "term-" + re.sub(r"[^a-z0-9]+", "-", term.lower()).strip("-")


def _title(doc: Path) -> str:
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    raise ValueError(f"{doc} has no title line ('# ...') to name a link to it")


def _rel(target: Path, page: Path) -> str:
    return Path(os.path.relpath(target, page.parent)).as_posix()


class _Converter:
    def __init__(self) -> None:
        self.bib = bib_entries()
        self.terms = glossary_terms()

    def cite(self, key: str, page: Path, textual: bool) -> str:
        if key not in self.bib:
            raise ValueError(f"{page}: cites {key!r}, which references.bib does not hold")
        who, year = self.bib[key]
        text = f"{who} ({year})" if textual else f"{who} {year}"
        return f"[{text}]({_rel(REFERENCES, page)}#cite-{key.lower()})"

    def role(self, match: re.Match, page: Path) -> str:
        role, body = match["role"], match["body"].strip()
        if role.startswith("cite"):
            keys = [k.strip() for k in body.split(",") if k.strip()]
            links = [self.cite(k, page, role == "cite:t") for k in keys]
            return ("; ".join(links)) if role == "cite:t" else "(" + "; ".join(links) + ")"
        labelled = _LABELLED.match(body)
        text, target = (labelled["text"], labelled["target"]) if labelled else (None, body)
        if role == "term":
            term = self.terms.get(target.lower())
            if term is None:
                raise ValueError(f"{page}: links the term {target!r}, which the glossary does not define")
            return f"[{text or target}]({_rel(GLOSSARY, page)}#{term_anchor(term)})"
        doc = (page.parent / f"{target}.md").resolve()
        if not doc.is_file():
            raise ValueError(f"{page}: links the page {target!r}, which does not exist ({doc.name})")
        return f"[{text or _title(doc)}]({_rel(doc, page)})"

    def convert(self, text: str, page: Path) -> str:
        return _ROLE.sub(lambda m: self.role(m, page.resolve()), text)


def roles_left(text: str) -> list[str]:
    """The cross-reference roles a page still uses (none should: JupyterLab cannot follow them)."""
    return [m.group(0) for m in _ROLE.finditer(text)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="list the roles left; write nothing")
    args = parser.parse_args(argv)
    convert = _Converter()
    left = 0
    for path in args.paths:
        text = path.read_text(encoding="utf-8")
        if args.check:
            for role in roles_left(text):
                left += 1
                print(f"{path}: {role}")
            continue
        new = convert.convert(text, path)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote {path}")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
