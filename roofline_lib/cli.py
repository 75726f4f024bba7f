"""The ``roofline`` command: the course's library from a terminal.

    roofline gpus                                    the registry as a table
    roofline verdict --flops F --bytes B --seconds S --gpu G [--precision P]
    roofline measure [--device cpu|cuda] [--seconds S] [--json FILE]   this machine's copy and matmul roofs
    roofline plot [--gpu G ...] [--precision P ...] [--point LABEL:INTENSITY:TFLOPS ...] -o out.png
    roofline grade PATH... [--json FILE]             check answers in exercises/
    roofline grade --submissions DIR [--csv F] [--json F] [--workers N] [--time-limit S] [--unsandboxed]

Each subcommand imports what it needs when it runs, so ``roofline gpus`` does not pay for
torch or matplotlib.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Sequence

__all__ = ["main", "EXIT_OK", "EXIT_WRONG", "EXIT_USAGE", "EXIT_IMPLAUSIBLE", "EXIT_INTERNAL"]

EXIT_OK = 0
EXIT_WRONG = 1  # grade: at least one answer is wrong; no other command uses this code
EXIT_USAGE = 2  # bad arguments or input values, unknown GPU or precision, unusable output path
EXIT_IMPLAUSIBLE = 3  # a measurement or a point faster than the hardware allows
EXIT_INTERNAL = 4  # anything else: a bug in the course, reported in one line instead of a traceback

_EPILOG = """\
exit codes:
  0  success
  1  grade: at least one answer is wrong (the grader's own code)
  2  bad input: a missing, repeated or malformed argument, a value out of range
     (the parameter is named), an unknown GPU or precision, an output path
     whose folder is missing or that has an unsupported suffix (checked before
     any work), or the grading module is not installed
  3  implausible: verdict's measurement, or a plot point, is faster than the
     roof allows (the reason is printed on stderr)
  4  an unexpected error inside the course (a bug; the message says where)

examples:
  roofline gpus
  roofline verdict --flops 2.7e11 --bytes 2.2e8 --seconds 1.1e-3 --gpu A100
  roofline measure --seconds 3 --json my_machine.json
  roofline plot --gpu A100 --gpu H100 --precision bf16 --point "LayerNorm:0.6:1.2" -o roofline.svg
"""


class _UsageError(Exception):
    """Bad input found after parsing; reported on stderr with exit code 2."""


class _Implausible(Exception):
    """A number above the roof that binds it; reported on stderr with exit code 3."""


def _output_path(value: str | None, flag: str, suffixes: tuple[str, ...] = ()) -> Path | None:
    """Check an output path before any work: its folder exists and is writable, its suffix is known."""
    if value is None:
        return None
    path = Path(value)
    if suffixes and path.suffix.lower() not in suffixes:
        raise _UsageError(f"{flag} {value}: the file must end in {' or '.join(suffixes)}")
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise _UsageError(f"{flag} {value}: is a folder; give a file name")
    if not folder.is_dir():
        raise _UsageError(f"{flag} {value}: the folder {folder} does not exist")
    import os

    if not os.access(folder, os.W_OK):
        raise _UsageError(f"{flag} {value}: the folder {folder} is not writable")
    return path


class _Once(argparse.Action):
    """An option that may be given once: a second ``--gpu`` is an error, not a silent override."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, f"_seen_{self.dest}", False):
            parser.error(
                f"{option_string} given twice; give it once (got {getattr(namespace, self.dest)!r} and {values!r})"
            )
        setattr(namespace, f"_seen_{self.dest}", True)
        setattr(namespace, self.dest, values)


def _print_err(message: str) -> None:
    print(f"roofline: error: {message}", file=sys.stderr)


# --------------------------------------------------------------------------- gpus


def _cmd_gpus(args) -> int:
    from .core.formatting import to_unit
    from .core.hardware import registry
    from .core.roofline import ridge_point

    header = ("key", "name", "memory", "HBM TB/s", "capacity GiB", "bf16 TFLOP/s", "fp8 TFLOP/s", "bf16 ridge FLOP/B")
    rows = []
    for key, spec in registry().items():
        rows.append(
            (
                key,
                spec.name,
                spec.memory_kind,
                f"{to_unit(spec.hbm_bytes_per_s, 'TB/s'):.3g}",
                f"{to_unit(spec.hbm_capacity_bytes, 'GiB'):.0f}",  # the "80 GB" a datasheet prints
                f"{to_unit(spec.peak_flops_per_s('bf16'), 'TFLOP/s'):.1f}" if spec.has("bf16") else "-",
                f"{to_unit(spec.peak_flops_per_s('fp8'), 'TFLOP/s'):.1f}" if spec.has("fp8") else "-",
                f"{ridge_point(spec, 'bf16'):.0f}" if spec.has("bf16") else "-",
            )
        )
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    numeric = {3, 4, 5, 6, 7}

    def line(row):
        cells = [str(c).rjust(w) if i in numeric else str(c).ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        return "  ".join(cells).rstrip()

    print(line(header))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))
    print("Dense (non-sparse) datasheet peaks. Ridge = bf16 peak / HBM bandwidth.")
    return EXIT_OK


# --------------------------------------------------------------------------- verdict


def _cmd_verdict(args) -> int:
    from .core.hardware import as_gpu
    from .core.roofline import ImplausibleMeasurement, kernel_verdict

    try:
        spec = as_gpu(args.gpu)
    except (TypeError, ValueError) as exc:
        raise _UsageError(f"--gpu: {exc}") from exc
    try:
        spec.peak_flops_per_s(args.precision)
    except (TypeError, ValueError) as exc:
        raise _UsageError(f"--precision: {exc}") from exc
    try:
        verdict = kernel_verdict(args.flops, args.bytes, args.seconds, spec, args.precision)
    except ImplausibleMeasurement as exc:
        print(f"roofline: implausible measurement: {exc}", file=sys.stderr)
        return EXIT_IMPLAUSIBLE
    except (TypeError, ValueError) as exc:
        raise _UsageError(_flag_names(str(exc))) from exc
    print(verdict)
    print(f"  time at the roof: {verdict.time_at_roof_seconds:.3g} s; measured: {verdict.seconds:.3g} s")
    return EXIT_OK


def _flag_names(message: str) -> str:
    """Say the command-line flag beside the library's parameter name."""
    for param, flag in (("bytes_moved", "--bytes"), ("flops", "--flops"), ("seconds", "--seconds")):
        if message.startswith(param + " "):
            return f"{flag}: {message}"
    return message


# --------------------------------------------------------------------------- measure


def _cmd_measure(args) -> int:
    json_path = _output_path(args.json, "--json", (".json",))  # before minutes of measuring
    from .evidence.measured_roofs import measure_ceilings

    def progress(message: str) -> None:
        print(f"  {message}", file=sys.stderr, flush=True)

    try:
        ceilings = measure_ceilings(seconds=args.seconds, device=args.device, progress=progress)
    except (TypeError, ValueError) as exc:
        raise _UsageError(f"--seconds: {exc}" if str(exc).startswith("seconds") else str(exc)) from exc
    print(ceilings)
    if json_path is not None:
        try:
            json_path.write_text(json.dumps(ceilings.to_dict(), indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise _UsageError(f"--json {args.json}: {exc.strerror or exc}") from exc
        print(f"wrote {args.json}")
    return EXIT_OK


# --------------------------------------------------------------------------- plot


def _parse_point(text: str, kind: str, flag: str):
    from .core.formatting import from_unit
    from .present.plots import Point

    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise _UsageError(f"{flag} must look like LABEL:INTENSITY:TFLOPS, got {text!r}")
    label, intensity, tflops = parts
    try:
        intensity_f = float(intensity)
        tflops_f = float(tflops)
    except ValueError:
        raise _UsageError(f"{flag} {text!r}: INTENSITY (FLOP/byte) and TFLOPS must be numbers") from None
    try:
        return Point(label, intensity_f, from_unit(tflops_f, "TFLOP/s"), kind)
    except (TypeError, ValueError) as exc:
        raise _UsageError(f"{flag} {text!r}: {exc}") from exc


def _above_the_roofs(points, gpus, precisions, measured, memories=("hbm",)) -> None:
    """Refuse a point faster than every roof on the figure, as ``verdict`` refuses a measurement.

    The rule is the library's one plausibility rule (:func:`roofline_lib.core.roofline.check_plausible`)
    applied to the point's FLOP/s and the bytes/s its intensity implies; a point passes when one
    roof drawn holds it.
    """
    from .core.formatting import to_unit
    from .core.roofline import ImplausibleMeasurement, check_plausible, roof

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
            raise _Implausible(
                f"point {point.label!r} at {point.intensity:g} FLOP/byte reaches {to_unit(point.flops_per_s, 'TFLOP/s'):.4g} "
                f"TFLOP/s, {point.flops_per_s / best:.2f}x the highest roof drawn there "
                f"({to_unit(best, 'TFLOP/s'):.4g} TFLOP/s); check its FLOP, bytes and seconds (no kernel beats its roof)"
            )


def _cmd_plot(args) -> int:
    output = _output_path(args.output, "-o", (".png", ".svg"))
    from .present.plots import save_roofline

    points = [_parse_point(p, "predicted", "--point") for p in args.point or ()]
    points += [_parse_point(p, "measured", "--measured-point") for p in args.measured_point or ()]
    measured = None
    if args.measured:
        from .evidence.measured_roofs import MeasuredCeilings

        try:
            record = json.loads(Path(args.measured).read_text(encoding="utf-8"))
            measured = MeasuredCeilings.from_dict(record)
        except (OSError, ValueError, TypeError) as exc:
            raise _UsageError(f"--measured {args.measured}: {exc}") from exc
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
        raise _UsageError(str(exc)) from exc
    except OSError as exc:
        raise _UsageError(f"-o {args.output}: {exc}") from exc
    print(f"wrote {args.output}")
    print(f"alt text: {fig.roofline_alt}")
    return EXIT_OK


# --------------------------------------------------------------------------- grade


def _cmd_grade(args) -> int:
    try:
        grading = importlib.import_module("roofline_lib.grading")
    except ModuleNotFoundError as exc:
        if exc.name != "roofline_lib.grading":
            raise
        raise _UsageError(
            "the grading module (roofline_lib.grading) is not installed in this copy of the course; "
            "update the course repository and reinstall"
        ) from exc
    run_grade = getattr(grading, "run_grade", None)
    if not callable(run_grade):
        raise _UsageError("roofline_lib.grading has no run_grade(paths, json_path=...) function")
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


# --------------------------------------------------------------------------- parser


def _subcommand(sub, name: str, help: str) -> argparse.ArgumentParser:
    """One subcommand's parser, with the exit codes and examples in its --help."""
    return sub.add_parser(name, help=help, epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="roofline",
        description="The Roofline Course from the command line: the GPU registry, kernel "
        "verdicts, this machine's measured roofs, roofline plots and exercise grading.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_gpus, _add_verdict, _add_measure, _add_plot, _add_grade):
        add(sub)
    return parser


def _add_gpus(sub) -> None:
    p = _subcommand(sub, "gpus", "list the GPU registry (dense datasheet peaks)")
    p.set_defaults(run=_cmd_gpus)


def _add_verdict(sub) -> None:
    p = _subcommand(sub, "verdict", "place a measured kernel on a GPU's roofline")
    p.add_argument(
        "--flops", type=float, required=True, action=_Once, help="the kernel's FLOP (1 multiply-add = 2 FLOP)"
    )
    p.add_argument("--bytes", type=float, required=True, action=_Once, help="bytes the kernel moves to and from HBM")
    p.add_argument("--seconds", type=float, required=True, action=_Once, help="the measured time in seconds")
    p.add_argument(
        "--gpu",
        required=True,
        action=_Once,
        help="a registry name such as A100 or H100 (see 'roofline gpus'); give it once",
    )
    p.add_argument("--precision", default="bf16", action=_Once, help="the compute precision (default bf16)")
    p.set_defaults(run=_cmd_verdict)


def _add_measure(sub) -> None:
    p = _subcommand(sub, "measure", "measure this machine's copy bandwidth and matmul throughput")
    p.add_argument("--seconds", type=float, default=5.0, action=_Once, help="time budget in seconds (default 5)")
    p.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu", help="whose roofs: the CPU's (default) or the CUDA GPU's"
    )
    p.add_argument(
        "--json",
        metavar="FILE",
        action=_Once,
        help="also write the result as JSON (for 'plot --measured'); its folder must exist",
    )
    p.set_defaults(run=_cmd_measure)


def _add_plot(sub) -> None:
    p = _subcommand(sub, "plot", "draw a roofline to a PNG or SVG file")
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
    p.add_argument("--measured", metavar="FILE", action=_Once, help="a JSON file written by 'roofline measure --json'")
    p.add_argument("--l2", action="store_true", help="also draw the L2 roof where the registry has one")
    p.add_argument("--title", action=_Once, help="the figure title")
    p.add_argument(
        "-o", "--output", required=True, action=_Once, help="output file ending in .png or .svg (its folder must exist)"
    )
    p.set_defaults(run=_cmd_plot)


def _add_grade(sub) -> None:
    p = _subcommand(sub, "grade", "grade exercise answers")
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
    p.set_defaults(run=_cmd_grade)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (see the epilog of ``roofline --help``)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help (0) and on usage errors (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return args.run(args)
    except _UsageError as exc:
        _print_err(str(exc))
        return EXIT_USAGE
    except _Implausible as exc:
        print(f"roofline: implausible: {exc}", file=sys.stderr)
        return EXIT_IMPLAUSIBLE
    except KeyboardInterrupt:
        _print_err("interrupted")
        return 130  # the shell's code for Ctrl-C
    except Exception as exc:  # noqa: BLE001 - a message replaces every traceback
        import traceback

        where = traceback.extract_tb(exc.__traceback__)[-1]
        _print_err(
            f"unexpected {type(exc).__name__} in {Path(where.filename).name}:{where.lineno}: {exc} "
            "(a bug in the course; please report it with the command you ran)"
        )
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
