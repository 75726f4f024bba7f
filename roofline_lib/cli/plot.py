"""``roofline plot``: a roofline drawn to a PNG or SVG file."""

from __future__ import annotations

import json
from pathlib import Path

from ._common import EXIT_OK, Implausible, Once, UsageError, output_path, subcommand

ORDER = 40  # its place in ``roofline --help``


def add(sub) -> None:
    p = subcommand(sub, "plot", "draw a roofline to a PNG or SVG file")
    p.add_argument("--gpu", action="append", help="a GPU to draw; repeat for several (default A100)")
    p.add_argument("--precision", action="append", help="a precision to draw; repeat for several (default bf16)")
    p.add_argument(
        "--point",
        action="append",
        metavar="LABEL:INTENSITY:TFLOPS",
        help="a predicted kernel point; intensity in FLOP/byte, rate in TFLOP/s",
    )
    p.add_argument(
        "--measured-point",
        action="append",
        metavar="LABEL:INTENSITY:TFLOPS",
        help="a measured kernel point, drawn filled",
    )
    p.add_argument("--measured", metavar="FILE", action=Once, help="a JSON file written by 'roofline measure --json'")
    p.add_argument("--l2", action="store_true", help="also draw the L2 roof where the registry has one")
    p.add_argument("--title", action=Once, help="the figure title")
    p.add_argument(
        "-o", "--output", required=True, action=Once, help="output file ending in .png or .svg (its folder must exist)"
    )
    p.set_defaults(run=run)


def _parse_point(text: str, kind: str, flag: str):
    from ..core.formatting import from_unit
    from ..present.plots import Point

    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise UsageError(f"{flag} must look like LABEL:INTENSITY:TFLOPS, got {text!r}")
    label, intensity, tflops = parts
    try:
        intensity_f = float(intensity)
        tflops_f = float(tflops)
    except ValueError:
        raise UsageError(f"{flag} {text!r}: INTENSITY (FLOP/byte) and TFLOPS must be numbers") from None
    try:
        return Point(label, intensity_f, from_unit(tflops_f, "TFLOP/s"), kind)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{flag} {text!r}: {exc}") from exc


def _above_the_roofs(points, gpus, precisions, measured, memories=("hbm",)) -> None:
    """Refuse a point faster than every roof on the figure, as ``verdict`` refuses a measurement.

    The rule is the library's one plausibility rule (:func:`roofline_lib.core.roofline.check_plausible`)
    applied to the point's FLOP/s and the bytes/s its intensity implies; a point passes when one
    roof drawn holds it.
    """
    from ..core.formatting import to_unit
    from ..core.roofline import ImplausibleMeasurement, check_plausible, roof

    roofs = []
    for gpu in gpus:
        for precision in precisions:
            for memory in memories:
                try:
                    roofs.append(roof(gpu, precision, memory))
                except (TypeError, ValueError):
                    continue  # a precision or an L2 figure this GPU lacks: the plot reports or skips it
    if measured is not None:
        roofs.append(roof(measured))

    def held(point, r) -> bool:
        try:
            check_plausible(point.flops_per_s, point.flops_per_s / point.intensity, r)
        except ImplausibleMeasurement:
            return False
        return True

    for point in points:
        if roofs and not any(held(point, r) for r in roofs):
            best = max(r.attainable_flops_per_s(point.intensity) for r in roofs)
            raise Implausible(
                f"point {point.label!r} at {point.intensity:g} FLOP/byte reaches {to_unit(point.flops_per_s, 'TFLOP/s'):.4g} "
                f"TFLOP/s, {point.flops_per_s / best:.2f}x the highest roof drawn there "
                f"({to_unit(best, 'TFLOP/s'):.4g} TFLOP/s); check its FLOP, bytes and seconds (no kernel beats its roof)"
            )


def run(args) -> int:
    output = output_path(args.output, "-o", (".png", ".svg"))
    from ..present.plots import save_roofline

    points = [_parse_point(p, "predicted", "--point") for p in args.point or ()]
    points += [_parse_point(p, "measured", "--measured-point") for p in args.measured_point or ()]
    measured = None
    if args.measured:
        from ..evidence.measured_roofs import MeasuredCeilings

        try:
            record = json.loads(Path(args.measured).read_text(encoding="utf-8"))
            measured = MeasuredCeilings.from_dict(record)
        except (OSError, ValueError, TypeError) as exc:
            raise UsageError(f"--measured {args.measured}: {exc}") from exc
    gpus = tuple(args.gpu or ("A100",))
    precisions = tuple(args.precision or ("bf16",))
    _above_the_roofs(points, gpus, precisions, measured, ("hbm", "l2") if args.l2 else ("hbm",))
    try:
        fig = save_roofline(
            output,
            gpus=gpus,
            precisions=precisions,
            points=points,
            memory_roofs=("hbm", "l2") if args.l2 else ("hbm",),
            measured=measured,
            title=args.title,
        )
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from exc
    except OSError as exc:
        raise UsageError(f"-o {args.output}: {exc}") from exc
    print(f"wrote {args.output}")
    print(f"alt text: {fig.roofline_alt}")
    return EXIT_OK
