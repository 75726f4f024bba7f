"""``roofline grade``: exercise answers checked, one reader's or a class's."""

from __future__ import annotations

import importlib

from ._common import UsageError, subcommand

ORDER = 90  # its place in ``roofline --help``


def add(sub) -> None:
    p = subcommand(sub, "grade", "grade exercise answers")
    p.add_argument("paths", nargs="*", metavar="PATH", help="one student's exercise notebooks to grade")
    p.add_argument("--submissions", metavar="DIR", help="grade a class: one folder or notebook per student in DIR")
    p.add_argument("--json", metavar="FILE", help="also write the per-part messages as JSON")
    p.add_argument("--csv", metavar="FILE", help="with --submissions: write the gradebook CSV here")
    p.add_argument("--workers", type=int, default=None, help="notebooks graded at once (default: the number of cores)")
    p.add_argument(
        "--time-limit",
        type=float,
        default=180.0,
        metavar="SECONDS",
        help="per-notebook time limit in seconds (default 180)",
    )
    p.add_argument("--seed", type=int, default=None, help="seed of the probe inputs (default: fresh each run)")
    p.add_argument(
        "--unsandboxed",
        action="store_true",
        help="grade a class without the bubblewrap sandbox (only where none can start); "
        "every report then says the grades are not isolated",
    )
    p.set_defaults(run=run)


def run(args) -> int:
    try:
        grading = importlib.import_module("roofline_lib.grading")
    except ModuleNotFoundError as exc:
        if exc.name != "roofline_lib.grading":
            raise
        raise UsageError(
            "the grading module (roofline_lib.grading) is not installed in this copy of the course; "
            "update the course repository and reinstall"
        ) from exc
    run_grade = getattr(grading, "run_grade", None)
    if not callable(run_grade):
        raise UsageError("roofline_lib.grading has no run_grade(paths, json_path=...) function")
    return int(
        run_grade(
            list(args.paths),
            json_path=args.json,
            submissions=args.submissions,
            csv_path=args.csv,
            workers=args.workers,
            time_limit_s=args.time_limit,
            seed=args.seed,
            **({"unsandboxed": True} if args.unsandboxed else {}),
        )
    )
