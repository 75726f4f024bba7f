"""Input checks shared by every layer.

Each check names the parameter and its unit in the error, so a reader who types
``seconds=0`` learns what was expected instead of meeting a ZeroDivisionError.
"""
from __future__ import annotations

import math
import numbers

__all__: list[str] = []


def _positive(value, name: str, unit: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float after checking it is a finite positive number.

    ``unit`` is spoken in the error, e.g. "seconds" or "FLOP".
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a number of {unit}, got {type(value).__name__} {value!r}"
        )
    x = float(value)
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"{name} must be a finite number of {unit}, got {value!r}")
    if x < 0 or (x == 0 and not allow_zero):
        kind = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{name} must be a {kind} number of {unit}, got {value!r}")
    return x


def _positive_int(value, name: str, unit: str) -> int:
    """Return ``value`` as an int after checking it is a whole number >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and float(value).is_integer() and value >= 1:
            return int(value)
        raise TypeError(
            f"{name} must be a whole number of {unit}, got {type(value).__name__} {value!r}"
        )
    if value < 1:
        raise ValueError(f"{name} must be a positive whole number of {unit}, got {value!r}")
    return int(value)


def _fraction(value, name: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float in (0, 1] (or [0, 1] with ``allow_zero``)."""
    x = _positive(value, name, "fraction (0 to 1)", allow_zero=allow_zero)
    if x > 1:
        raise ValueError(f"{name} must be a fraction between 0 and 1, got {value!r}")
    return x
