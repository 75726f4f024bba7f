"""What every ``roofline`` command shares: exit codes, the two reported errors, output-path checks, and reading a model, a GPU and a GPU-hour price from the command line."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

EXIT_OK = 0
EXIT_WRONG = 1  # grade: at least one answer is wrong; no other command uses this code
EXIT_USAGE = 2  # bad arguments or input values, unknown GPU or precision, unusable output path
EXIT_IMPLAUSIBLE = 3  # a measurement or a point faster than the hardware allows
EXIT_INTERNAL = 4  # anything else: a bug in the course, reported in one line instead of a traceback

EPILOG = """\
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


class UsageError(Exception):
    """Bad input found after parsing; reported on stderr with exit code 2."""


class Implausible(Exception):
    """A number above the roof that binds it; reported on stderr with exit code 3."""


def output_path(value: str | None, flag: str, suffixes: tuple[str, ...] = ()) -> Path | None:
    """Check an output path before any work: its folder exists and is writable, its suffix is known."""
    if value is None:
        return None
    path = Path(value)
    if suffixes and path.suffix.lower() not in suffixes:
        raise UsageError(f"{flag} {value}: the file must end in {' or '.join(suffixes)}")
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise UsageError(f"{flag} {value}: is a folder; give a file name")
    if not folder.is_dir():
        raise UsageError(f"{flag} {value}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{flag} {value}: the folder {folder} is not writable")
    return path


class Once(argparse.Action):
    """An option that may be given once: a second ``--gpu`` is an error, not a silent override."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, f"_seen_{self.dest}", False):
            parser.error(
                f"{option_string} given twice; give it once (got {getattr(namespace, self.dest)!r} and {values!r})"
            )
        setattr(namespace, f"_seen_{self.dest}", True)
        setattr(namespace, self.dest, values)


def print_err(message: str) -> None:
    print(f"roofline: error: {message}", file=sys.stderr)


def subcommand(sub, name: str, help: str) -> argparse.ArgumentParser:
    """One subcommand's parser, with the exit codes and examples in its --help."""
    return sub.add_parser(name, help=help, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)


def transformer_model(model: str, priced_by: str):
    """The TransformerConfig of ``MODEL`` (a shipped name or a ``config.json``); a usage error for
    anything else (a state-space model) naming what ``priced_by`` (the planner, ...) prices."""
    from ..models.transformer import TransformerConfig
    from .model import load

    cfg = load(model)[0]
    if not isinstance(cfg, TransformerConfig):
        raise UsageError(f"MODEL {model}: {priced_by} prices transformers; this is a {type(cfg).__name__}")
    return cfg


def registry_gpu(name: str):
    """The registry GPU ``--gpu`` names; a usage error naming the flag otherwise."""
    from ..core.hardware import as_gpu

    try:
        return as_gpu(name)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--gpu: {exc}") from exc


def gpu_hour_price(price_arg, gpu) -> dict:
    """The GPU-hour price a command uses: ``--price``, else the registry's dated one, else none (and why).

    ``{"dollars_per_gpu_hour", "source", "detail", "date"}``; a price given on the command line has
    the source ``--price`` and no detail or date, and a GPU with no price on record has no dollars
    and a source that says what to give.
    """
    from ..core.checks import _positive
    from ..workloads.energy_cost import gpu_hour_price as listed

    if price_arg is not None:
        dollars = _positive(price_arg, "dollars_per_hour", "US dollars per GPU-hour", allow_zero=True)
        return {"dollars_per_gpu_hour": dollars, "source": "--price", "detail": None, "date": None}
    try:
        price = listed(gpu)
    except ValueError:
        why = f"no GPU-hour price on record for the {gpu.name}: give --price"
        return {"dollars_per_gpu_hour": None, "source": why, "detail": None, "date": None}
    return {
        "dollars_per_gpu_hour": price.dollars_per_hour,
        "source": price.source,
        "detail": price.detail,
        "date": price.date,
    }
