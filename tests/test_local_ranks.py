"""Local ranks: a script of a few functions on n processes, their failures reported, none left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from roofline_lib import local_ranks


def _echo(argv=None):
    import json
    import sys

    cfg = json.loads((argv or sys.argv)[1])
    print(f"rank {cfg['rank']} of {cfg['n']}")


def _fail(argv=None):
    import sys

    print("rank broke on purpose", file=sys.stderr)
    sys.exit(3)


def _sleep(argv=None):
    import time

    time.sleep(60)


def _fail_or_wait(argv=None):
    import json
    import sys
    import time

    if json.loads((argv or sys.argv)[1])["rank"] == 1:
        sys.exit(5)
    time.sleep(60)  # as a rank waits for a peer that is gone


def _say_pid_and_sleep(argv=None):
    import os
    import time

    print(os.getpid(), flush=True)
    time.sleep(60)


def _preloaded(argv=None):
    import os
    import sys

    print("decimal" in sys.modules, os.getppid())


def test_the_script_is_the_functions_and_a_call_to_the_last(tmp_path):
    code = local_ranks._script(_echo)
    assert code.startswith("def _echo(argv=None):") and code.endswith("\n_echo()\n")
    printed = local_ranks._run_local_ranks(code, [{"rank": r, "n": 2} for r in range(2)], str(tmp_path), {}, 60)
    assert printed == ["rank 0 of 2\n", "rank 1 of 2\n"]  # each rank's own stdout, in rank order


def test_a_failing_rank_raises_with_the_end_of_its_stderr(tmp_path):
    with pytest.raises(RuntimeError, match=r"rank 0 of 1 failed \(exit 3\): rank broke on purpose"):
        local_ranks._run_local_ranks(local_ranks._script(_fail), [{}], str(tmp_path), {}, 60)


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.add(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


def test_a_late_rank_raises_timeout_and_is_killed(tmp_path):
    before = _children(os.getpid()) if sys.platform == "linux" else set()
    with pytest.raises(TimeoutError, match="rank 0 of 2 did not finish within timeout_s = 0.5 seconds"):
        local_ranks._run_local_ranks(local_ranks._script(_sleep), [{}, {}], str(tmp_path), {}, 0.5)
    if sys.platform == "linux":
        assert _children(os.getpid()) <= before  # both sleepers killed and reaped


def test_the_ranks_environment_stays_on_the_loopback_interface(monkeypatch):
    env = local_ranks._loopback_env("needed here")
    assert env["MASTER_ADDR"] == "127.0.0.1" and env["OMP_NUM_THREADS"] == "1"
    assert env["GLOO_SOCKET_IFNAME"] == local_ranks._loopback_interface()
    monkeypatch.setattr(local_ranks, "_loopback_interface", lambda: None)
    with pytest.raises(RuntimeError, match=r"no loopback network interface \('lo' or 'lo0'\) found: needed here"):
        local_ranks._loopback_env("needed here")
    assert "GLOO_SOCKET_IFNAME" not in local_ranks._loopback_env(None)  # NCCL may go on without it


def test_a_rank_that_fails_ends_the_run_at_once_and_is_the_one_reported(tmp_path):
    # rank 0 waits as for its peer; rank 1 fails: the launcher kills rank 0 and the failure is rank
    # 1's, seconds before the 60 s timeout, not a timeout of rank 0
    before = _children(os.getpid()) if sys.platform == "linux" else set()
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"rank 1 of 2 failed \(exit 5\)"):
        local_ranks._run_local_ranks(
            local_ranks._script(_fail_or_wait), [{"rank": 0}, {"rank": 1}], str(tmp_path), {}, 60
        )
    assert time.monotonic() - start < 30
    if sys.platform == "linux":
        assert _children(os.getpid()) <= before


def test_the_ranks_are_forked_from_one_launcher_that_imported_the_preload(tmp_path):
    code = local_ranks._script(_preloaded)
    with_preload = local_ranks._run_local_ranks(code, [{}, {}], str(tmp_path), {}, 60, preload=("decimal",))
    seen = [line.split() for line in with_preload]
    assert [imported for imported, _ in seen] == ["True", "True"]  # imported once, before the fork
    assert seen[0][1] == seen[1][1] != str(os.getpid())  # both children of the one launcher
    assert [line.split()[0] for line in local_ranks._run_local_ranks(code, [{}], str(tmp_path), {}, 60)] == ["False"]
    assert local_ranks.RANK_PRELOAD == ("torch", "torch.distributed")  # what the live runs' ranks import first


def _gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie waiting for init to reap it counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_the_ranks_end_when_their_caller_is_killed(tmp_path):
    # a kernel restarted in JupyterLab mid-run is killed: its ranks, in a session of their own, were
    # left running until their timeout
    caller = subprocess.Popen(
        [sys.executable, "-c", "import sys; from roofline_lib.evidence import local_ranks as lr\n"
         "lr._run_local_ranks(lr._script(*[getattr(__import__('test_local_ranks'), '_say_pid_and_sleep')]),"
         " [{}, {}], sys.argv[1], {}, 120)", str(tmp_path)],
        cwd=Path(__file__).parent,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])},
    )  # fmt: skip
    try:
        outs = [tmp_path / f"rank{r}.out" for r in range(2)]
        deadline = time.monotonic() + 60
        while not all(o.exists() and o.read_text().strip() for o in outs):
            assert time.monotonic() < deadline and caller.poll() is None, "the ranks never started"
            time.sleep(0.1)
        pids = [int(o.read_text()) for o in outs]
        assert not any(_gone(pid) for pid in pids)
        caller.kill()
        caller.wait(timeout=10)
        deadline = time.monotonic() + 10
        while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(_gone(pid) for pid in pids), "ranks outlived the process that started them"
    finally:
        caller.kill()
        caller.wait(timeout=10)
