"""``python -m roofline_lib.grading``: ``--practice`` serves check cells; anything else is ``roofline grade``.

This script is the grading package's only way into the command line; no module of the package
imports :mod:`roofline_lib.cli` (the command line imports the grader, not the other way round).
"""

import sys

from .grader import practice_server

if sys.argv[1:2] == ["--practice"]:
    sys.exit(practice_server())

from roofline_lib.cli import main  # noqa: E402 - only when grading from the command line

sys.exit(main(["grade", *sys.argv[1:]]))
