"""tools/build_book.py: the strict build, two pages read (and executed) at a time."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("build_book", ROOT / "tools" / "build_book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pages_that_read_roofs_share_one_chunk_and_every_other_page_has_its_own():
    tool = _tool()
    docnames = [
        "book/index",
        "exercises/ex1_layernorm_4_percent",
        *(f"notebooks/{p.stem}" for p in sorted((ROOT / "notebooks").glob("*.md"))),
    ]
    cut = tool.chunks(docnames, 2)
    assert [d.split("/")[-1][:2] for d in cut[0]] == ["06", "07", "08", "10"]  # read one after the other
    assert all(len(chunk) == 1 for chunk in cut[1:])
    assert sorted(d for chunk in cut for d in chunk) == sorted(docnames)  # every page once


def test_the_build_and_the_fake_gpu_run_agree_on_which_pages_read_roofs():
    sys.path.insert(0, str(ROOT / "tests"))
    from test_fake_gpu_chapters import _judges_timings_against_roofs

    tool = _tool()
    for page in sorted((ROOT / "notebooks").glob("*.md")):
        assert tool.reads_roofs(f"notebooks/{page.stem}") == _judges_timings_against_roofs(page), page.name
    assert not tool.reads_roofs("notebooks/no_such_page")


def test_sphinx_reads_in_parallel_only_when_every_extension_says_it_may(monkeypatch):
    # sphinx-multitoc-numbering declares nothing, which alone made Sphinx read (and execute) serially
    tool = _tool()
    import sphinx_multitoc_numbering as multitoc

    monkeypatch.setattr(multitoc, "setup", lambda app: None)
    tool._declare_multitoc_numbering_parallel_safe()
    assert multitoc.setup(object()) == {"parallel_read_safe": True, "parallel_write_safe": True}


def test_jobs_must_be_a_whole_number_of_processes(capsys):
    with pytest.raises(SystemExit) as stop:
        _tool().main(["--jobs", "0"])
    assert stop.value.code == 2
    assert "--jobs must be a whole number of processes, 1 or more, got 0" in capsys.readouterr().err
