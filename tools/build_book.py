"""Build the book strictly, reading (and so executing) its pages in several processes at once.

``jupyter-book build`` (1.x) has no option for Sphinx's parallel read, although every extension
the book loads declares itself parallel-read safe; this script makes the same call the command
makes (``jupyter_book.sphinx.build_sphinx`` with the book's ``_config.yml`` and ``_toc.yml``, every
warning an error, nitpicky, keep going) and adds ``jobs``. With inline execution each page's
kernel runs while the page is read, so two processes execute two pages at a time.

Sphinx cuts the pages into chunks, one process each. Its own cut (at most ten pages a chunk, in
name order) put the cheap pages and the exercises in one chunk and nearly every chapter in the
other. Here the pages that read this machine's roofs and time kernels against them go in one
chunk, run one after the other (two of them side by side would skew each other's roofs), and
every other page is a chunk of its own, so the second process keeps busy beside them.

    python tools/build_book.py [--all] [--jobs N]

Exit status: Sphinx's (0 when the build passed).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: A page that reads this machine's roofs judges its own timings against them (the same rule as
#: tests/test_fake_gpu_chapters.py's, which runs those chapters one at a time under the fake GPU).
_READS_ROOFS = re.compile(r"\bmeasure_ceilings\(")


def reads_roofs(docname: str) -> bool:
    """Whether the page ``docname`` (a path without suffix, from the book's root) reads this machine's roofs."""
    source = ROOT / f"{docname}.md"
    return source.is_file() and bool(_READS_ROOFS.search(source.read_text(encoding="utf-8")))


def chunks(docnames: list[str], nproc: int, maxbatch: int = 10) -> list[list[str]]:
    """The pages cut into the chunks Sphinx reads, one process each: the roof readers together, first."""
    del nproc, maxbatch  # Sphinx's arguments; the cut here does not depend on them
    timed = [d for d in docnames if reads_roofs(d)]
    rest = [[d] for d in docnames if d not in timed]
    return ([timed] if timed else []) + rest


def _declare_multitoc_numbering_parallel_safe() -> None:
    """sphinx-multitoc-numbering (loaded by sphinx-external-toc) declares nothing, so Sphinx reads serially.

    All it does is replace ``TocTreeCollector.assign_section_numbers``, which Sphinx calls in the
    main process once every page is read and merged; nothing of it runs while a page is read.
    """
    import sphinx_multitoc_numbering as multitoc

    setup = multitoc.setup

    def declared_setup(app):
        metadata = setup(app) or {}
        return {**metadata, "parallel_read_safe": True, "parallel_write_safe": True}

    multitoc.setup = declared_setup


def _report_slow_steps(seconds: float = 20.0) -> None:
    """Name each kernel start, cell and prose value that takes longer than ``seconds``, as it ends."""
    import time

    from myst_nb.core.execute.inline import ModifiedNotebookClient, NotebookClientInline

    def timed(cls, name, describe):
        original = getattr(cls, name)

        def wrapper(self, *args, **kwargs):
            start = time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                took = time.perf_counter() - start
                if took > seconds:
                    print(f"==> slow: {describe(self, *args)} took {took:.1f} s", file=sys.stderr, flush=True)

        setattr(cls, name, wrapper)

    timed(NotebookClientInline, "start_client", lambda self: f"{self.path.name}: starting its kernel")
    timed(NotebookClientInline, "close_client", lambda self: f"{self.path.name}: stopping its kernel")
    timed(ModifiedNotebookClient, "execute_cell", lambda self, cell, index, **_: f"cell {index} ({cell.source[:60]!r})")
    timed(ModifiedNotebookClient, "eval_expression", lambda self, name: f"the prose value {name}")


def _poll_kernel_messages_in_slices(slice_s: float = 0.5) -> None:
    """Wait for a kernel's message in short polls, so that a missed wake-up costs half a second.

    In the build's reading processes a cell's reply sometimes sat unread in its socket: the kernel
    was idle, the client's one long poll woke only at the 120 s cell timeout, then read the reply
    (seen on four parallel builds: an explorer cell of chapter 9, and chapters 1, 5 and 6, each 120 s
    late). Polling again every ``slice_s`` seconds up to the same deadline reads such a message at once.
    """
    import time
    from queue import Empty

    from jupyter_client.channels import AsyncZMQSocketChannel

    async def get_msg(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            wait = slice_s if left is None else min(slice_s, left)
            if await self.socket.poll(int(wait * 1000)):
                return await self._recv()
            if left is not None and left <= wait:
                raise Empty

    AsyncZMQSocketChannel.get_msg = get_msg


def _use_chunks() -> None:
    import sphinx.builders
    import sphinx.util.parallel

    sphinx.util.parallel.make_chunks = chunks
    sphinx.builders.make_chunks = chunks  # the builder imported the name


def kernel_threads(jobs: int, cores: int | None) -> int:
    """torch's threads in each page's kernel: the cores shared out among the pages read at once.

    With torch's default of a thread per core, two pages at once on two cores each ran two threads,
    and a parallel region waited for whichever thread had no core: beside a busy core, chapter 6 took
    39 s on two threads and 14 s on one, chapter 10 85 s and 9 s. Each page states the threads its
    timings ran on, and reads its roofs on the same threads.
    """
    return max(1, (cores or 1) // jobs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="read every page again (a fresh environment)")
    parser.add_argument("--jobs", type=int, default=2, help="processes that read pages at once (default 2)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be a whole number of processes, 1 or more, got {args.jobs}")
    # before any kernel starts: each inherits it (a reader's own setting is kept)
    os.environ.setdefault("OMP_NUM_THREADS", str(kernel_threads(args.jobs, os.cpu_count())))
    from jupyter_book.sphinx import build_sphinx

    _declare_multitoc_numbering_parallel_safe()
    _report_slow_steps()
    _poll_kernel_messages_in_slices()
    _use_chunks()
    overrides = {"external_toc_path": (ROOT / "_toc.yml").as_posix(), "latex_individualpages": False}
    overrides["nitpicky"] = True
    result = build_sphinx(
        ROOT,
        ROOT / "_build" / "html",
        use_external_toc=True,
        noconfig=True,
        path_config=str(ROOT / "_config.yml"),
        confoverrides=overrides,
        builder="html",
        warningiserror=True,
        keep_going=True,
        freshenv=args.all,
        jobs=args.jobs,
    )
    return result if isinstance(result, int) else 1


if __name__ == "__main__":
    sys.exit(main())
