"""The ``once_per_run`` fixture (conftest.py): expensive shared work is done once per test run."""

from __future__ import annotations

import threading
import time

import pytest


def test_the_work_runs_once_and_every_caller_gets_its_result(once_per_run):
    calls = []

    def compute(folder):
        calls.append(folder)
        assert folder.is_dir()  # a fresh folder of its own to work in
        return {"answer": 42, "folder": str(folder)}

    first = once_per_run("counted", compute)
    second = once_per_run("counted", compute)
    assert len(calls) == 1
    assert first == second and first["answer"] == 42


def test_callers_at_the_same_time_wait_for_the_first_instead_of_working_too(once_per_run):
    # Each call opens the lock file anew, so two threads contend for it as two processes would.
    calls, results = [], []

    def compute(folder):
        calls.append(folder)
        time.sleep(0.3)  # long enough that the other caller arrives while this one works
        return len(calls)

    threads = [threading.Thread(target=lambda: results.append(once_per_run("raced", compute))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(calls) == 1
    assert results == [1, 1, 1]


def test_work_that_fails_leaves_no_result_behind(once_per_run):
    def broken(folder):
        raise RuntimeError("the grader could not start")

    with pytest.raises(RuntimeError, match="could not start"):
        once_per_run("broken", broken)
    assert once_per_run("broken", lambda folder: "second try") == "second try"
