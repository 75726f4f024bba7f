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


def test_each_page_being_read_gets_its_share_of_the_cores_for_torch():
    threads = _tool().kernel_threads
    assert [threads(2, cores) for cores in (1, 2, 3, 16)] == [1, 1, 1, 8]
    assert threads(1, 2) == 2 and threads(4, None) == 1  # os.cpu_count() may not know


@pytest.mark.parametrize("preset", [None, "3"])
def test_the_build_sets_the_kernels_threads_unless_the_reader_did(monkeypatch, preset):
    tool = _tool()
    if preset is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", preset)
    monkeypatch.setattr(tool.os, "cpu_count", lambda: 2)
    seen = {}

    def build_sphinx(*args, **kwargs):  # stands for the build: what would a kernel inherit?
        seen["threads"] = tool.os.environ["OMP_NUM_THREADS"]
        return 0

    import jupyter_book.sphinx

    monkeypatch.setattr(jupyter_book.sphinx, "build_sphinx", build_sphinx)
    for step in (
        "_declare_multitoc_numbering_parallel_safe",
        "_report_slow_steps",
        "_poll_kernel_messages_in_slices",
        "_use_chunks",
    ):
        monkeypatch.setattr(tool, step, lambda: None)
    assert tool.main(["--jobs", "2"]) == 0
    assert seen["threads"] == (preset or "1")


def test_jobs_must_be_a_whole_number_of_processes(capsys):
    with pytest.raises(SystemExit) as stop:
        _tool().main(["--jobs", "0"])
    assert stop.value.code == 2
    assert "--jobs must be a whole number of processes, 1 or more, got 0" in capsys.readouterr().err


def test_a_kernel_message_is_read_at_the_next_short_poll_and_a_silent_kernel_still_times_out(monkeypatch):
    import asyncio
    from queue import Empty

    from jupyter_client.channels import AsyncZMQSocketChannel

    monkeypatch.setattr(AsyncZMQSocketChannel, "get_msg", AsyncZMQSocketChannel.get_msg)  # undone after
    _tool()._poll_kernel_messages_in_slices(slice_s=0.01)

    class Socket:  # a reply that a long poll would have missed: the third short poll sees it
        def __init__(self, ready_after):
            self.polls, self.ready_after = [], ready_after

        async def poll(self, timeout_ms):
            self.polls.append(timeout_ms)
            if len(self.polls) > self.ready_after:
                return True
            await asyncio.sleep(timeout_ms / 1000)  # a poll that sees nothing waits its whole time
            return False

    class Channel:
        get_msg = AsyncZMQSocketChannel.get_msg

        def __init__(self, socket):
            self.socket = socket

        async def _recv(self):
            return {"msg_type": "execute_reply"}

    answered = Channel(Socket(ready_after=2))
    assert asyncio.run(answered.get_msg(timeout=120)) == {"msg_type": "execute_reply"}
    assert answered.socket.polls == [10, 10, 10]  # three polls of 10 ms, not one of 120 s
    silent = Channel(Socket(ready_after=10**9))
    with pytest.raises(Empty):
        asyncio.run(silent.get_msg(timeout=0.05))
    assert 4 <= len(silent.socket.polls) <= 6  # 50 ms of 10 ms polls, then Empty as before
