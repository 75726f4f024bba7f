"""roofline_lib.present.prose: the values a chapter's text quotes, shown the same by myst-nb and JupyterLab."""

from __future__ import annotations

import pytest
from IPython.core.formatters import DisplayFormatter

from roofline_lib.present.prose import Prose, Shown


def _text_plain(obj) -> str:
    """What a kernel sends as the text/plain of an expression (myst-nb and jupyterlab-myst show it)."""
    data, _ = DisplayFormatter().format(obj)
    return data["text/plain"]


def test_an_item_is_its_value_formatted_with_the_spec():
    prose = Prose()
    prose("ridge", 312e12 / 2.039e12)  # 153.0 FLOP/byte
    prose("ratio", 7.6254)
    assert prose["ridge:.0f"] == "153"
    assert prose["ridge:.1f"] == "153.0"  # one key, two formats
    assert prose["ratio:.2f"] == "7.63"
    assert prose["ridge:,.0f"] == "153"
    prose("big", 4_999_999.0)
    assert prose["big:,.0f"] == "4,999,999"


def test_without_a_spec_an_item_is_str_of_the_value():
    prose = Prose()
    prose("name", "A100 80GB SXM")
    prose("n", 3)
    assert prose["name"] == "A100 80GB SXM"
    assert prose["n"] == "3"


def test_the_kernel_sends_the_text_itself_without_quotes():
    prose = Prose()
    prose("alt", 'the H100\'s roof, "dense", at 2\\3')  # both quote marks and a backslash
    shown = prose["alt"]
    assert isinstance(shown, Shown)
    assert _text_plain(shown) == 'the H100\'s roof, "dense", at 2\\3'
    assert repr(shown) == str(shown)
    # a plain str would reach the page as a Python literal, escapes and all
    assert _text_plain('it\'s "x"') != 'it\'s "x"'


def test_a_number_is_sent_as_its_formatted_text():
    prose = Prose()
    prose("tbps", 2.039)
    assert _text_plain(prose["tbps:.3f"]) == "2.039"
    assert _text_plain(prose["tbps:.1f"]) == "2.0"


def test_setting_a_key_again_replaces_its_value():
    prose = Prose()
    prose("x", 1.0)
    prose("x", 2.0)
    assert prose["x:.0f"] == "2" and len(prose) == 1 and "x" in prose


def test_an_unknown_key_names_itself_and_the_nearest_keys():
    prose = Prose()
    prose("a100_ridge", 153.0)
    with pytest.raises(KeyError, match=r"'a100_ridg'.*did you mean a100_ridge"):
        prose["a100_ridg:.0f"]
    with pytest.raises(KeyError, match="no value named 'zzz'"):
        prose.value("zzz")


def test_a_spec_that_does_not_fit_the_value_says_so():
    prose = Prose()
    prose("name", "A100")
    with pytest.raises(ValueError, match=r"format spec '\.0f' does not fit 'name' = 'A100'"):
        prose["name:.0f"]


@pytest.mark.parametrize("key", ["", "1st", "a-b", "a b", "x:y", 3])
def test_a_key_must_be_an_identifier(key):
    with pytest.raises(ValueError, match="key must be a name"):
        Prose()(key, 1.0)


def test_a_reference_must_be_a_string():
    with pytest.raises(TypeError, match="ref must be a string"):
        Prose()[3]
