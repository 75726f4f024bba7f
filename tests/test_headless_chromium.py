"""Which browser the browser tests start, and what they say when it is not installed."""

import importlib
import sys

import headless_chromium
import pytest


@pytest.fixture(autouse=True)
def _restored(monkeypatch):
    """Each test reads the module afresh under its own variable; the others then see the real one."""
    yield
    monkeypatch.undo()
    importlib.reload(headless_chromium)


def _reloaded(monkeypatch, value=None):
    if value is None:
        monkeypatch.delenv("ROOFLINE_CHROMIUM", raising=False)
    else:
        monkeypatch.setenv("ROOFLINE_CHROMIUM", value)
    return importlib.reload(headless_chromium)


def test_the_default_is_debians_headless_shell(monkeypatch):
    assert _reloaded(monkeypatch).CHROMIUM == "/usr/bin/chromium-headless-shell"


def test_a_missing_browser_is_named_with_the_command_that_installs_it(monkeypatch, tmp_path):
    absent = str(tmp_path / "no-such-chromium")
    why = _reloaded(monkeypatch, absent).missing()
    assert absent in why and "make browser" in why and "chromium-headless-shell" in why


def test_an_executable_named_by_the_variable_is_used(monkeypatch):
    module = _reloaded(monkeypatch, sys.executable)
    assert module.CHROMIUM == sys.executable and module.missing() is None
