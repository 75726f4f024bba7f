"""Opening a chapter in JupyterLab and saving it unedited leaves ``git diff`` empty.

JupyterLab writes the ``.md`` notebooks through jupytext's contents manager with the settings in
``jupytext.toml``; ``tools/lab_roundtrip.py`` does the same save into a scratch folder.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(
    p.relative_to(ROOT).as_posix()
    for folder in ("notebooks", "exercises", "solutions", "book")
    for p in (ROOT / folder).glob("*.md")
    if p.read_text(encoding="utf-8").startswith("---\njupytext:")
)


@pytest.fixture(scope="module")
def roundtrip():
    spec = importlib.util.spec_from_file_location("lab_roundtrip_under_test", ROOT / "tools" / "lab_roundtrip.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_chapter_exercise_and_solution_is_checked():
    # 8 chapters, 6 exercises and their 6 solutions at least, and the hardware page
    assert len([p for p in NOTEBOOKS if p.startswith("notebooks/")]) >= 8
    assert len([p for p in NOTEBOOKS if p.startswith("exercises/")]) >= 6
    assert len([p for p in NOTEBOOKS if p.startswith("solutions/")]) >= 6


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_an_unedited_save_changes_nothing(roundtrip, path):
    diff = roundtrip.roundtrip_diff(ROOT / path)
    assert not diff, f"saving {path} in JupyterLab would change it (run tools/lab_roundtrip.py {path}):\n{diff[:3000]}"


def test_the_check_sees_a_hand_written_caption(roundtrip, tmp_path):
    # a multi-line block caption, as written by hand, comes back re-wrapped: the check must say so
    src = ROOT / "notebooks" / "01_two_speed_limits.md"
    text = src.read_text(encoding="utf-8")
    head, sep, rest = text.partition("```{code-cell} ipython3\n")
    assert sep, "chapter 1 has no code cell"
    figure = (
        "```{code-cell} ipython3\n---\nmystnb:\n  figure:\n    caption: |-\n"
        "      A caption written by hand\n      over two lines.\n---\n1 + 1\n```\n\n"
    )
    bad = tmp_path / "hand_written.md"
    bad.write_text(head + figure + sep + rest, encoding="utf-8")
    assert "over two lines" in roundtrip.roundtrip_diff(bad)
    # and the rewrite puts it in the saved form, which is then stable
    assert roundtrip.main([str(bad)]) == 0
    assert roundtrip.roundtrip_diff(bad) == ""
    assert "A caption written by hand over two lines." in bad.read_text(encoding="utf-8")


def test_a_missing_file_is_named(roundtrip, tmp_path):
    with pytest.raises(FileNotFoundError, match="path must be a notebook file"):
        roundtrip.saved_form(tmp_path / "nope.md")


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_a_plain_jupytext_write_changes_nothing(path):
    # jupytext without jupytext.toml (the command line, a script, another editor) must agree with
    # JupyterLab's save: it added jupytext_version to every header and dropped a mystnb header
    import jupytext

    text = (ROOT / path).read_text(encoding="utf-8")
    assert jupytext.writes(jupytext.reads(text, fmt="md:myst"), fmt="md:myst") == text, path
