"""The grader of the exercises, as one subpackage: nothing a graded kernel imports lives here.

* :mod:`.grader` grades one student's notebooks or a class, and serves practice checks;
* :mod:`.key` is the answer key, one module per job: scenarios, references, judges, probes, parts;
* :mod:`.notebooks` says which files of a submission are graded: one notebook per exercise;
* :mod:`.reader` reads and parses each graded notebook in a child process, under its limits;
* :mod:`.sandbox` starts a worker in bubblewrap, as a user of its own;
* :mod:`.leases` holds what a grader needs on its machine (sandbox uids, its scratch folder);
* :mod:`.names` shows names a student chose as safe text (escaped on a terminal);
* :mod:`.worker` runs one notebook in a fresh kernel and streams what it published;
* ``python -m roofline_lib.grading`` is ``roofline grade``; with ``--practice`` it serves
  the exercises' check cells (``roofline_lib.observer.check``).

A graded kernel imports a copy of ``roofline_lib`` that leaves this folder out; what it runs of
the grading is :mod:`roofline_lib.observer` alone.
"""

from .grader import *  # noqa: F401,F403
from .grader import __all__  # noqa: F401
