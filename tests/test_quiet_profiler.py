"""diagnose.quiet_profiler_log: the profiler's start/stop lines stay out of a notebook's stderr."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

# Both cases in one fresh interpreter (kineto writes to file descriptor 2, below sys.stderr; starting
# torch and its profiler costs a few seconds), each part of stderr after its marker.
_SCRIPT = """
import os, torch
from torch.profiler import profile
from roofline_lib import diagnose

os.write(2, b"@@part profile_run\\n")
run = diagnose.profile_run(lambda: torch.ones(64) + 1, device="cpu", calls=2)
assert run.calls == 2
os.write(2, b"@@part bare\\n")
with profile():
    torch.ones(4) + 1
os.write(2, b"@@part quiet\\n")
with diagnose.quiet_profiler_log(), profile():
    torch.ones(4) + 1
    os.write(2, b"a line the reader must see\\n")
"""


@pytest.fixture(scope="module")
def stderr_parts() -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_SCRIPT)], capture_output=True, text=True, timeout=240, check=True
    )
    parts = done.stderr.split("@@part ")[1:]
    assert [p.split("\n", 1)[0] for p in parts] == ["profile_run", "bare", "quiet"], done.stderr
    return {p.split("\n", 1)[0]: p.split("\n", 1)[1] for p in parts}


def test_profile_run_leaves_no_profiler_lines_on_stderr(stderr_parts):
    err = stderr_parts["profile_run"]
    assert "USDT" not in err and "profiler_start" not in err and "profiler_stop" not in err, err


def test_a_bare_profile_prints_them_and_the_block_removes_them(stderr_parts):
    loud, quiet = stderr_parts["bare"], stderr_parts["quiet"]
    # kineto's own lines really do reach stderr without the block (else this test proves nothing)
    assert "profiler_start" in loud and "profiler_stop" in loud
    assert "profiler_start" not in quiet and "profiler_stop" not in quiet
    assert "a line the reader must see" in quiet  # anything else written meanwhile is passed on
