"""diagnose.quiet_profiler_log: the profiler's start/stop lines stay out of a notebook's stderr."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")


def _stderr_of(code: str) -> str:
    """Run code in a fresh interpreter (kineto writes to file descriptor 2, below sys.stderr)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=240, check=True
    )
    return done.stderr


def test_profile_run_leaves_no_profiler_lines_on_stderr():
    err = _stderr_of("""
        import torch
        from roofline_lib import diagnose
        run = diagnose.profile_run(lambda: torch.ones(64) + 1, device="cpu", calls=2)
        assert run.calls == 2
        """)
    assert "USDT" not in err and "profiler_start" not in err and "profiler_stop" not in err, err


def test_a_bare_profile_prints_them_and_the_block_removes_them():
    err = _stderr_of("""
        import os, torch
        from torch.profiler import profile
        from roofline_lib import diagnose
        with profile():
            torch.ones(4) + 1
        os.write(2, b"--- quiet from here ---\\n")
        with diagnose.quiet_profiler_log(), profile():
            torch.ones(4) + 1
            os.write(2, b"a line the reader must see\\n")
        """)
    loud, quiet = err.split("--- quiet from here ---\n")
    # kineto's own lines really do reach stderr without the block (else this test proves nothing)
    assert "profiler_start" in loud and "profiler_stop" in loud
    assert "profiler_start" not in quiet and "profiler_stop" not in quiet
    assert "a line the reader must see" in quiet  # anything else written meanwhile is passed on
