"""tools/prose_order.py: a value quoted in a chapter's prose must be set by a cell above it."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("prose_order", ROOT / "tools" / "prose_order.py")
po = importlib.util.module_from_spec(_spec)
sys.modules["prose_order"] = po  # dataclasses look their module up while the class is made
_spec.loader.exec_module(po)

CHAPTER = textwrap.dedent("""\
    # A chapter

    ```{code-cell} ipython3
    %matplotlib inline
    import roofline_lib as rl
    from roofline_lib.present.prose import Prose
    prose = Prose()
    ```

    ```{code-cell} ipython3
    :tags: [remove-cell]
    prose("ridge", rl.ridge_point("A100"))
    ```

    The ridge is {eval}`prose["ridge:.0f"]`.
    """)


def test_a_value_quoted_below_the_cell_that_sets_it_passes():
    po.check_order(CHAPTER, "ok.md")  # raises if not


def test_a_value_quoted_before_the_cell_that_sets_it_is_refused():
    early = CHAPTER.replace("# A chapter\n", '# A chapter\n\nEarly {eval}`prose["ridge"]`.\n')
    # the role is on line 3, the cell that sets it starts on line 12
    with pytest.raises(
        po.OrderError, match=r"early.md, line 3: 'ridge' is quoted before the cell that sets it \(line 12\)"
    ):
        po.check_order(early, "early.md")
    with pytest.raises(po.OrderError, match=r"no cell sets 'nope'"):
        po.check_order(CHAPTER + '\nAnd {eval}`prose["nope"]`.\n', "nope.md")


def test_keys_computed_in_a_loop_are_trusted_after_the_loop():
    looped = CHAPTER.replace(
        'prose("ridge", rl.ridge_point("A100"))',
        'for k in ("a", "b"):\n    prose(f"tok_{k}", 1.0)\nprose("ridge", rl.ridge_point("A100"))',
    )
    po.check_order(looped + '\nTokens {eval}`prose["tok_a:.0f"]`.\n', "looped.md")  # raises if not


def test_a_code_cell_never_closed_is_refused():
    with pytest.raises(po.OrderError, match="line 3: code cell never closed by ```"):
        po.check_order("# A chapter\n\n```{code-cell} ipython3\nx = 1\n", "open.md")


def test_the_command_names_the_file_that_fails(tmp_path, capsys):
    good, bad = tmp_path / "good.md", tmp_path / "bad.md"
    good.write_text(CHAPTER, encoding="utf-8")
    bad.write_text('Early {eval}`prose["ridge"]`.\n\n' + CHAPTER, encoding="utf-8")
    assert po.main([str(good)]) == 0
    assert po.main([str(good), str(bad)]) == 1
    assert "bad.md, line 1: 'ridge' is quoted before" in capsys.readouterr().err
