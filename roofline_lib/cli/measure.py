"""``roofline measure``: this machine's copy bandwidth and matmul throughput."""

from __future__ import annotations

import json
import sys

from ._common import EXIT_OK, Once, UsageError, output_path, subcommand

ORDER = 30  # its place in ``roofline --help``


def add(sub) -> None:
    p = subcommand(sub, "measure", "measure this machine's copy bandwidth and matmul throughput")
    p.add_argument("--seconds", type=float, default=5.0, action=Once, help="time budget in seconds (default 5)")
    p.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu", help="whose roofs: the CPU's (default) or the CUDA GPU's"
    )
    p.add_argument(
        "--json",
        metavar="FILE",
        action=Once,
        help="also write the result as JSON (for 'plot --measured'); its folder must exist",
    )
    p.set_defaults(run=run)


def run(args) -> int:
    json_path = output_path(args.json, "--json", (".json",))  # before minutes of measuring
    from ..evidence.measured_roofs import measure_ceilings

    def progress(message: str) -> None:
        print(f"  {message}", file=sys.stderr, flush=True)

    try:
        ceilings = measure_ceilings(seconds=args.seconds, device=args.device, progress=progress)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--seconds: {exc}" if str(exc).startswith("seconds") else str(exc)) from exc
    print(ceilings)
    if json_path is not None:
        try:
            json_path.write_text(json.dumps(ceilings.to_dict(), indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--json {args.json}: {exc.strerror or exc}") from exc
        print(f"wrote {args.json}")
    return EXIT_OK
