"""The ``roofline`` command: the course's library from a terminal.

Each command is a module of this package with ``add(sub)`` (its options), ``run(args)`` (the work,
returning an exit code) and ``ORDER`` (its place in ``roofline --help``); the parser finds them, so
a new command is a new module. ``roofline --help`` lists them; ``roofline COMMAND --help`` gives
each one's options, exit codes and examples. A command imports what it needs when it runs, so
``roofline gpus`` does not pay for torch or matplotlib.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path
from typing import Sequence

from ._common import (
    EPILOG,
    EXIT_IMPLAUSIBLE,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_WRONG,
    Implausible,
    UsageError,
    print_err,
)

__all__ = ["main", "EXIT_OK", "EXIT_WRONG", "EXIT_USAGE", "EXIT_IMPLAUSIBLE", "EXIT_INTERNAL"]


def _command_modules() -> list:
    """This package's command modules (every module not starting with an underscore), in ``ORDER``."""
    names = [m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")]
    modules = [importlib.import_module(f"{__name__}.{name}") for name in names]
    return sorted(modules, key=lambda module: (module.ORDER, module.__name__))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="roofline",
        description="The Roofline Course from the command line: the GPU registry, kernel "
        "verdicts, this machine's measured roofs, roofline plots, the course's models, the "
        "training planner, serving under a latency objective and exercise grading.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in _command_modules():
        module.add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (see the epilog of ``roofline --help``)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help (0) and on usage errors (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return args.run(args)
    except UsageError as exc:
        print_err(str(exc))
        return EXIT_USAGE
    except Implausible as exc:
        print(f"roofline: implausible: {exc}", file=sys.stderr)
        return EXIT_IMPLAUSIBLE
    except KeyboardInterrupt:
        print_err("interrupted")
        return 130  # the shell's code for Ctrl-C
    except Exception as exc:  # noqa: BLE001 - a message replaces every traceback
        import traceback

        where = traceback.extract_tb(exc.__traceback__)[-1]
        print_err(
            f"unexpected {type(exc).__name__} in {Path(where.filename).name}:{where.lineno}: {exc} "
            "(a bug in the course; please report it with the command you ran)"
        )
        return EXIT_INTERNAL
