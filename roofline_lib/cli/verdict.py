"""``roofline verdict``: a measured kernel placed on a GPU's roofline."""

from __future__ import annotations

import sys

from ._common import EXIT_IMPLAUSIBLE, EXIT_OK, Once, UsageError, subcommand

ORDER = 20  # its place in ``roofline --help``


def add(sub) -> None:
    p = subcommand(sub, "verdict", "place a measured kernel on a GPU's roofline")
    p.add_argument(
        "--flops", type=float, required=True, action=Once, help="the kernel's FLOP (1 multiply-add = 2 FLOP)"
    )
    p.add_argument("--bytes", type=float, required=True, action=Once, help="bytes the kernel moves to and from HBM")
    p.add_argument("--seconds", type=float, required=True, action=Once, help="the measured time in seconds")
    p.add_argument(
        "--gpu",
        required=True,
        action=Once,
        help="a registry name such as A100 or H100 (see 'roofline gpus'); give it once",
    )
    p.add_argument("--precision", default="bf16", action=Once, help="the compute precision (default bf16)")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..core.hardware import as_gpu
    from ..core.roofline import ImplausibleMeasurement, kernel_verdict

    try:
        spec = as_gpu(args.gpu)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--gpu: {exc}") from exc
    try:
        spec.peak_flops_per_s(args.precision)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--precision: {exc}") from exc
    try:
        verdict = kernel_verdict(args.flops, args.bytes, args.seconds, spec, args.precision)
    except ImplausibleMeasurement as exc:
        print(f"roofline: implausible measurement: {exc}", file=sys.stderr)
        return EXIT_IMPLAUSIBLE
    except (TypeError, ValueError) as exc:
        raise UsageError(_flag_names(str(exc))) from exc
    print(verdict)
    print(f"  time at the roof: {verdict.time_at_roof_seconds:.3g} s; measured: {verdict.seconds:.3g} s")
    return EXIT_OK


def _flag_names(message: str) -> str:
    """Say the command-line flag beside the library's parameter name."""
    for param, flag in (("bytes_moved", "--bytes"), ("flops", "--flops"), ("seconds", "--seconds")):
        if message.startswith(param + " "):
            return f"{flag}: {message}"
    return message
