"""The reference list, book/references.md, written from references.bib by tools/references_page.py."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import jupytext
import pytest

from roofline_lib.present.lab_contents import cell_anchor

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "references.md"


def _tool():
    if "references_page" not in sys.modules:
        spec = importlib.util.spec_from_file_location("references_page", ROOT / "tools" / "references_page.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["references_page"] = module
        spec.loader.exec_module(module)
    return sys.modules["references_page"]


def test_the_page_is_what_the_bibliography_gives():
    assert PAGE.read_text(encoding="utf-8") == _tool().render(), "run tools/references_page.py"
    assert _tool().main(["--check"]) == 0


def test_every_key_opens_a_cell_of_its_own_with_its_citation_label():
    keys = re.findall(r"^@\w+\{([^,\s]+),", (ROOT / "references.bib").read_text(encoding="utf-8"), re.M)
    cells = [c for c in jupytext.read(PAGE).cells if c.cell_type == "markdown"]
    anchors = [cell_anchor(c.source) for c in cells]
    assert sorted(a for a in anchors if a and a.startswith("cite-")) == sorted(f"cite-{k}" for k in keys)
    # the label is the text a chapter's citation shows: Hockney (1994), NVIDIA (2024b)
    hockney = next(c.source for c in cells if cell_anchor(c.source) == "cite-hockney1994communication")
    assert hockney.splitlines()[1] == "Hockney (1994)" and hockney.splitlines()[2].startswith(": Roger W. Hockney.")


def test_an_entry_decodes_latex_and_escapes_markup(tmp_path):
    bib = tmp_path / "x.bib"
    bib.write_text(
        "@inproceedings{vaswani2017attention,\n"
        "  author = {Vaswani, Ashish and Kaiser, {\\L}ukasz and others},\n"
        "  title = {Attention Is {All} You Need: the {*} and {GROUP\\_SIZE\\_M}},\n"
        "  booktitle = {Advances in Neural Information Processing Systems},\n"
        "  volume = {30}, year = {2017},\n}\n"
        "@misc{nccltests,\n  author = {{NVIDIA}},\n  title = {NCCL Tests},\n  howpublished = {Source repository},\n"
        "  year = {2024},\n}\n",
        encoding="utf-8",
    )
    page = _tool().render(bib)
    assert (
        "(cite-vaswani2017attention)=\nVaswani et al. (2017)\n: Ashish Vaswani, Łukasz Kaiser et al. "
        "Attention Is All You Need: the \\* and GROUP\\_SIZE\\_M. Advances in Neural Information Processing "
        "Systems. 2017.\n"
    ) in page
    assert "(cite-nccltests)=\nNVIDIA (2024)\n: NVIDIA. NCCL Tests. Source repository. 2024.\n" in page
    assert page.index("cite-nccltests") < page.index("cite-vaswani2017attention")  # by label


def test_a_key_that_is_not_its_own_anchor_is_refused(tmp_path):
    bib = tmp_path / "x.bib"
    bib.write_text(
        "@misc{Smith_2020,\n  author = {Smith, J.},\n  title = {T},\n  year = {2020},\n}\n", encoding="utf-8"
    )
    with pytest.raises(ValueError, match="the key 'Smith_2020' must be lower-case letters and digits"):
        _tool().render(bib)
