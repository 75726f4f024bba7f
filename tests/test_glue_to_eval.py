"""tools/glue_to_eval.py: glue roles and figures become {eval} roles and cell outputs, safely."""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap
from pathlib import Path

import jupytext
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("glue_to_eval", ROOT / "tools" / "glue_to_eval.py")
g2e = importlib.util.module_from_spec(_spec)
sys.modules["glue_to_eval"] = g2e  # dataclasses look their module up while the class is made
_spec.loader.exec_module(g2e)

HEAD = textwrap.dedent("""\
    ---
    jupytext:
      text_representation:
        extension: .md
        format_name: myst
    kernelspec:
      display_name: Python 3
      language: python
      name: python3
    ---

    # A chapter

    """)


def nb(body: str) -> str:
    return HEAD + textwrap.dedent(body)


SIMPLE = nb("""\
    ```{code-cell} ipython3
    %matplotlib inline
    import roofline_lib as rl
    from myst_nb import glue
    ```

    ```{code-cell} ipython3
    :tags: [remove-cell]
    ridge = rl.ridge_point("A100")
    glue("ridge", ridge, display=False)
    glue("name",
         rl.gpu("A100").name, display=False)
    ```

    The {glue:text}`name` ridge is {glue:text}`ridge:.0f` (or {glue:text}`ridge:.1f`), {glue}`ridge:,.0f`.
    """)


def test_roles_calls_and_import_are_rewritten_and_nothing_else():
    out = g2e.convert_text(SIMPLE)
    assert "glue" not in out
    assert "from roofline_lib.present.prose import Prose\nprose = Prose()\n" in out
    assert 'prose("ridge", ridge)\n' in out
    assert 'prose("name",\n     rl.gpu("A100").name)\n' in out  # a call over two lines keeps its shape
    assert (
        'The {eval}`prose["name"]` ridge is {eval}`prose["ridge:.0f"]` (or '
        '{eval}`prose["ridge:.1f"]`), {eval}`prose["ridge:,.0f"]`.'
    ) in out
    # a hidden cell that sets values runs in order: remove-cell would delay it past the roles
    assert ":tags: [remove-input, remove-output]\n" in out and "remove-cell" not in out
    # every other line is untouched: 4 glue lines, the import and the tags changed (+ `prose = Prose()`)
    changed = set(out.splitlines()) ^ set(SIMPLE.splitlines())
    assert len(changed) == 6 + 6 + 1, changed
    # the result is still a notebook jupytext reads, with the same code cells in number
    assert len([c for c in jupytext.reads(out, fmt="md:myst").cells if c.cell_type == "code"]) == 2


def test_the_converted_notebook_runs_and_its_roles_evaluate():
    out = g2e.convert_text(SIMPLE.replace("%matplotlib inline\n", ""))
    ns: dict = {}
    for cell in jupytext.reads(out, fmt="md:myst").cells:
        if cell.cell_type == "code":
            exec(cell.source, ns)
    import roofline_lib as rl

    refs = re.findall(r"\{eval\}`([^`]*)`", out)
    shown = [eval(ref, ns) for ref in refs]
    ridge = rl.ridge_point("A100")
    assert shown == [rl.gpu("A100").name, f"{ridge:.0f}", f"{ridge:.1f}", f"{ridge:,.0f}"]


def test_a_notebook_without_glue_comes_back_byte_for_byte():
    text = nb("""\
        ```{code-cell} ipython3
        x = 1
        ```

        Plain text with `code` and {doc}`a link <other>`.
        """)
    assert g2e.convert_text(text) == text


FIGURE = nb("""\
    ```{code-cell} ipython3
    from myst_nb import glue
    ```

    ```{code-cell} ipython3
    :tags: [remove-cell]
    fig = make_figure()
    glue("fig_a", fig, display=False)
    glue("fig_a_alt", fig.alt, display=False)
    ```

    ```{glue:figure} fig_a
    :alt: A line that rises.
    :name: fig-a

    The caption, over
    two lines, quoting {glue:text}`fig_a_alt`.
    ```

    Text after the figure.
    """)


def test_a_glued_figure_becomes_the_output_of_its_own_cell():
    out = g2e.convert_text(FIGURE)
    assert "glue" not in out
    cells = jupytext.reads(out, fmt="md:myst").cells
    code = [c for c in cells if c.cell_type == "code"]
    assert code[1].source.splitlines()[-1] == "fig"  # the figure ends the cell, so it is its output
    assert 'prose("fig_a_alt", fig.alt)' in code[1].source
    meta = code[1].metadata
    assert meta["tags"] == ["remove-input"]  # remove-cell would hide the figure too
    assert meta["mystnb"]["image"] == {"alt": "A line that rises."}
    assert meta["mystnb"]["figure"]["name"] == "fig-a"
    assert meta["mystnb"]["figure"]["caption"] == ('The caption, over\ntwo lines, quoting {eval}`prose["fig_a_alt"]`.')
    prose_md = "".join(c.source for c in cells if c.cell_type == "markdown")
    assert "Text after the figure." in prose_md and "The caption" not in prose_md


def test_a_figure_cell_with_yaml_metadata_keeps_it():
    text = FIGURE.replace(":tags: [remove-cell]\n", "---\ntags: [hide-input]\nother: 1\n---\n")
    out = g2e.convert_text(text)
    header = out.split("```{code-cell} ipython3\n")[2].split("---\n")[1]
    meta = yaml.safe_load(header)
    assert meta["tags"] == ["hide-input"] and meta["other"] == 1 and "figure" in meta["mystnb"]


@pytest.mark.parametrize(
    "old, new, message",
    [
        ('glue("ridge", ridge, display=False)', 'glue("ridge", ridge)', "display=False"),
        ('glue("ridge", ridge, display=False)', "f = glue", "used without being called"),
        ("from myst_nb import glue", "from myst_nb import glue, glue_text", "only `from myst_nb import glue`"),
        ("{glue:text}`ridge:.0f`", "{glue:md}`ridge`", "glue:md"),
        ("{glue:text}`ridge:.0f`", '{glue:text}`ridge:"x"`', "without quotes"),
        ("ridge = rl.ridge_point", "prose = 1\nridge = rl.ridge_point", "already uses the name `prose`"),
    ],
)
def test_what_cannot_be_converted_safely_is_refused(old, new, message):
    text = SIMPLE.replace(old, new, 1)
    assert text != SIMPLE
    with pytest.raises(g2e.ConversionError, match=re.escape(message)):
        g2e.convert_text(text)


def test_a_value_quoted_before_the_cell_that_sets_it_is_refused():
    text = SIMPLE.replace("# A chapter\n", "# A chapter\n\nEarly mention of {glue:text}`ridge:.0f`.\n")
    with pytest.raises(g2e.ConversionError, match=r"'ridge' is quoted before the cell that sets it"):
        g2e.convert_text(text)
    with pytest.raises(g2e.ConversionError, match=r"no cell sets 'nope'"):
        g2e.convert_text(SIMPLE + "\nAnd {glue:text}`nope`.\n")


def test_keys_computed_in_a_loop_are_trusted_after_the_loop():
    text = SIMPLE.replace(
        'glue("ridge", ridge, display=False)',
        'for k in ("a", "b"):\n    glue(f"tok_{k}", 1.0, display=False)\nglue("ridge", ridge, display=False)',
    )
    out = g2e.convert_text(text + "\nTokens {glue:text}`tok_a:.0f`.\n")
    assert 'prose(f"tok_{k}", 1.0)' in out and '{eval}`prose["tok_a:.0f"]`' in out


def test_a_figure_away_from_its_cell_is_refused():
    text = FIGURE.replace("```{glue:figure} fig_a", "Something in between.\n\n```{glue:figure} fig_a")
    with pytest.raises(g2e.ConversionError, match="must come right after"):
        g2e.convert_text(text)


def test_a_figure_directive_with_an_option_it_cannot_carry_is_refused():
    text = FIGURE.replace(":name: fig-a", ":name: fig-a\n:figwidth: 50%")
    with pytest.raises(g2e.ConversionError, match="figwidth"):
        g2e.convert_text(text)


def test_the_command_writes_converted_files_and_leaves_refused_ones(tmp_path, capsys):
    good, bad = tmp_path / "good.md", tmp_path / "bad.md"
    good.write_text(SIMPLE)
    bad.write_text(SIMPLE.replace("display=False)", ")", 1))
    assert g2e.main(["--check", str(good)]) == 0
    assert good.read_text() == SIMPLE and "would convert" in capsys.readouterr().out
    assert g2e.main([str(good), str(bad)]) == 1  # one refusal -> exit 1
    assert "{eval}" in good.read_text()
    assert bad.read_text() == SIMPLE.replace("display=False)", ")", 1)
    assert "refused" in capsys.readouterr().err
    assert g2e.main([str(good)]) == 0  # converting again changes nothing
    assert "no glue" in capsys.readouterr().out
