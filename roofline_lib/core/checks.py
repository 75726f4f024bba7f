"""Input checks shared by every layer.

Each check names the parameter and its unit in the error, so a reader who types
``seconds=0`` learns what was expected instead of meeting a ZeroDivisionError.

* :func:`_positive`, :func:`_positive_int`, :func:`_fraction`: a number of some unit. A bool is
  never a number here (``True`` is not the whole number 1), nor is NaN or infinity.
* :func:`_flag`: a bool and nothing else (``sparse="no"`` is not False).
* :func:`_text`: a non-empty string.
* :func:`_model_params`, :func:`_bytes_and_seconds`, :func:`_efficiency`: magnitudes no real
  input has, refused with a hint about the unit that was probably meant.
* :func:`_finite_result`: a result that overflowed to inf is an error, not an answer.
* :class:`_Registry`: one registry's table, the spellings it answers to, and the lookup that
  refuses an unknown name by listing the known ones (the GPU, link and node registries).
"""

from __future__ import annotations

import math
import numbers
from types import MappingProxyType

__all__: list[str] = []

#: Smallest model the course accepts: a count under this is a count in millions or billions.
MIN_MODEL_PARAMS = 1_000
#: A kernel that moves under a kilobyte ...
_TINY_BYTES = 1e3
#: ... and takes over a second was measured in other units (MB and microseconds, say).
_LONG_SECONDS = 1.0
#: No real quantity of any unit the course uses comes near this (a frontier model's training run
#: is about 1e26 FLOP); two or three of them multiplied stay far below float64's 1.8e308.
_MAX_QUANTITY = 1e40
#: Counts above this (2**63) overflow every array library and no real shape has them.
_MAX_COUNT = 2**63
#: Below this fraction of its roof, a kernel's numbers are in the wrong units, not slow.
MIN_EFFICIENCY = 1e-6


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _positive(value, name: str, unit: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float after checking it is a finite positive number.

    ``unit`` is spoken in the error, e.g. "seconds" or "FLOP".
    """
    if not _is_number(value):
        raise TypeError(f"{name} must be a number of {unit}, got {type(value).__name__} {value!r}")
    try:
        x = float(value)
    except OverflowError:  # an int too large for a float
        raise ValueError(f"{name} must be a finite number of {unit}, got {value!r}") from None
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"{name} must be a finite number of {unit}, got {value!r}")
    if x > _MAX_QUANTITY:
        raise ValueError(
            f"{name} must be at most {_MAX_QUANTITY:g} {unit}, got {value!r}: too large to be real, "
            "and products of it would overflow to inf"
        )
    if x < 0 or (x == 0 and not allow_zero):
        kind = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{name} must be a {kind} number of {unit}, got {value!r}")
    return x


def _positive_int(value, name: str, unit: str) -> int:
    """Return ``value`` as an int after checking it is a whole number >= 1.

    A float with no fractional part (``4096.0``) is accepted; a bool is not.
    """
    if not _is_number(value):
        raise TypeError(f"{name} must be a whole number of {unit}, got {type(value).__name__} {value!r}")
    if not isinstance(value, numbers.Integral):
        x = _positive(value, name, unit)
        if not x.is_integer():
            raise TypeError(f"{name} must be a whole number of {unit}, got {type(value).__name__} {value!r}")
        value = int(x)
    if value < 1:
        raise ValueError(f"{name} must be a positive whole number of {unit}, got {value!r}")
    if value > _MAX_COUNT:
        raise ValueError(f"{name} must be a whole number of {unit} below 2**63, got {value!r}: too large to be real")
    return int(value)


def _fraction(value, name: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float in (0, 1] (or [0, 1] with ``allow_zero``)."""
    x = _positive(value, name, "fraction (0 to 1)", allow_zero=allow_zero)
    if x > 1:
        raise ValueError(f"{name} must be a fraction between 0 and 1, got {value!r}")
    return x


def _flag(value, name: str) -> bool:
    """Return ``value`` if it is a bool; ``"no"``, 0 or None are refused, not read as False."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value


def _text(value, name: str, what: str = "a name") -> str:
    """Return ``value`` if it is a non-empty string; ``what`` says what kind of string."""
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"{name} must be {what} (a non-empty string), got {type(value).__name__} {value!r}")
    return value


# --------------------------------------------------------------------------- magnitudes


def _model_params(value, name: str = "n_params") -> float:
    """A model's parameter count: positive, finite, and at least :data:`MIN_MODEL_PARAMS`.

    ``decode_roofline(70, ...)`` means 70 billion; the error says so instead of answering for a
    model of 70 parameters.
    """
    n = _positive(value, name, "parameters")
    if n < MIN_MODEL_PARAMS:
        raise ValueError(
            f"{name} must be a number of parameters (no real model has under {MIN_MODEL_PARAMS:,}), "
            f"got {value!r}; for a 7B model pass 7e9 (not 7, which reads as seven parameters)"
        )
    return n


def _bytes_and_seconds(
    bytes_moved: float, seconds: float, *, bytes_name: str = "bytes_moved", seconds_name: str = "seconds"
) -> None:
    """Refuse a kernel that moves under 1 KB yet takes over 1 s: its units are mixed up.

    ``kernel_verdict(1e9, 268, 90, ...)`` (268 MB and 90 us meant) would otherwise report an
    efficiency of a few parts in a hundred million. Call after each value passed :func:`_positive`.
    """
    if bytes_moved < _TINY_BYTES and seconds > _LONG_SECONDS:
        raise ValueError(
            f"{bytes_name}={bytes_moved:g} bytes with {seconds_name}={seconds:g} seconds: no kernel moves "
            f"under 1 KB in over a second, so the units are mixed up; give {bytes_name} in bytes (268 MB is 268e6) and "
            f"{seconds_name} in seconds (90 us is 90e-6)"
        )


def _efficiency(value: float, name: str = "efficiency", *, inputs: str = "flops, bytes_moved and seconds") -> float:
    """A fraction of a roof below :data:`MIN_EFFICIENCY` is a unit mistake in ``inputs``, not a slow kernel."""
    if value < MIN_EFFICIENCY:
        raise ValueError(
            f"{name} would be {value:.2g} of the roof, below {MIN_EFFICIENCY:g}: no real kernel is that slow, "
            f"so check the units of {inputs} (FLOP, bytes and seconds, not TFLOP, MB or microseconds)"
        )
    return value


def _finite_result(value: float, what: str, inputs: str) -> float:
    """Return ``value`` unless it overflowed to inf (or became NaN); the error names the inputs."""
    if not math.isfinite(value):
        raise ValueError(f"{what} overflows to {value!r}: {inputs} are too large to be real")
    return value


# --------------------------------------------------------------------------- registry names


def _alias_index(table) -> dict[str, str]:
    """Every spelling a registry answers to (its key, its name, its aliases), lower-cased, -> its key.

    ``table`` maps keys to specs that carry ``name`` and ``aliases``: the GPU, link and node
    registries all do.
    """
    index: dict[str, str] = {}
    for key, spec in table.items():
        for spelling in (key, spec.name, *spec.aliases):
            index[spelling.lower()] = key
    return index


def _normalise_name(name: str) -> str:
    """Lower case, ``_`` read as ``-``, runs of spaces folded: how a registry name is compared."""
    return " ".join(name.strip().lower().replace("_", "-").split())


def _registry_lookup(name, table, index, *, what: str, example: str, param: str = "name"):
    """The spec of ``table`` that ``name`` spells (see :func:`_alias_index`), case-insensitively.

    ``-`` and a space are interchangeable. ``what`` names the kind of thing ("GPU", "link") and
    ``param`` the caller's parameter, so a refusal says which input was wrong; an unknown name
    lists what the registry knows.
    """
    if not isinstance(name, str):
        raise TypeError(
            f"{what.lower()} name must be a string such as {example!r}, got {param}={name!r} ({type(name).__name__})"
        )
    if not name.strip():
        raise ValueError(f"{param} must name a {what}, such as {example!r}, got an empty string {name!r}")
    norm = _normalise_name(name)
    for candidate in (norm, norm.replace(" ", "-"), norm.replace("-", " ")):
        if candidate in index:
            return table[index[candidate]]
    known = ", ".join(f"{k} ({s.name})" for k, s in table.items())
    read_as = "" if param == "name" else f" ({param}={name!r} was read as a {what} name)"
    raise ValueError(f"unknown {what} {name!r}; known {what}s: {known}{read_as}")


class _Registry:
    """One registry: its specs by key, and the index of every spelling they answer to.

    The GPU, link and node registries are each one of these; their public functions (``gpu``,
    ``known_links``, ``node_registry``...) are one call each. ``what`` names the kind of spec in a
    refusal ("GPU", "link", "node") and ``example`` is a name the registry knows.
    """

    def __init__(self, specs, *, what: str, example: str):
        self._specs = specs
        self._index = _alias_index(specs)
        self._what = what
        self._example = example

    def keys(self) -> tuple[str, ...]:
        """The keys, in the order of the table."""
        return tuple(self._specs)

    def view(self):
        """A read-only view of the whole table."""
        return MappingProxyType(self._specs)

    def lookup(self, name, param: str = "name"):
        """The spec ``name`` spells (see :func:`_registry_lookup`); ``param`` is the caller's parameter."""
        return _registry_lookup(name, self._specs, self._index, what=self._what, example=self._example, param=param)
