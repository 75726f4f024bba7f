"""The one reader of the registries' data files: a JSON file shipped in a package folder, checked, as records.

The GPU registry (``core/data/gpus.json``), the link and node registry
(``core/data/interconnect.json``) and the shipped model configs (``models/configs/*.json``)
are data, not code; this module reads them all. A file is refused with its path and what was
wrong (not JSON, a record that is not an object, a field missing or unknown), so a slip in a
data file fails on import with a message instead of as a wrong number later.

A number in a registry file is a *figure*: an object with the ``value`` as the source prints
it, its ``unit`` (a key of :data:`roofline_lib.core.formatting.UNIT_SCALE`) and where it comes
from; :func:`si` turns it into SI through :func:`~roofline_lib.core.formatting.from_unit`.
"""

from __future__ import annotations

import json
import numbers
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable

from .formatting import UNIT_SCALE, from_unit

__all__: list[str] = []  # the registries' machinery: hardware, interconnect and transformer call it


@lru_cache(maxsize=None)
def _file_text(package: str, path: str) -> str:
    resource = resources.files(package).joinpath(path)
    try:
        return resource.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"registry file {package}:{path} is missing (a data file must be listed in pyproject's package-data)"
        ) from None


def read_table(package: str, path: str) -> dict[str, Any]:
    """The JSON object in the file at ``path`` (``"data/gpus.json"``) inside ``package``'s folder.

    A fresh copy on every call: a caller may change what it gets without changing the next one's.
    """
    try:
        data = json.loads(_file_text(package, path))
    except json.JSONDecodeError as error:
        raise ValueError(f"registry file {package}:{path} is not valid JSON: {error}") from None
    return _object(data, f"{package}:{path}")


def read_records(
    package: str, path: str, *, table: str | None = None, required: Iterable[str], optional: Iterable[str] = ()
) -> dict[str, dict[str, Any]]:
    """The records of one registry file, by key, in the file's order, each checked for its fields.

    ``table`` names the member of the file's object that holds the records (a file holding
    several tables); ``None`` reads the records from the top level. Every record must be an
    object with each ``required`` field, and no field outside ``required`` and ``optional``.
    """
    where = f"{package}:{path}"
    records = read_table(package, path)
    if table is not None:
        if table not in records:
            raise ValueError(f"registry file {where} has no table {table!r}; it has: {', '.join(records)}")
        records = _object(records[table], f"{where}[{table!r}]")
    need, allowed = tuple(required), set(required) | set(optional)
    for key, record in records.items():
        _fields(_object(record, f"{where}, record {key!r}"), need, allowed, f"{where}, record {key!r}")
    return records


def _object(data, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a JSON object (name: value, ...), got {type(data).__name__}")
    return data


def _fields(record: dict[str, Any], required: tuple[str, ...], allowed: set[str], where: str) -> None:
    missing = [name for name in required if name not in record]
    if missing:
        raise ValueError(f"{where} lacks {', '.join(missing)}")
    unknown = [name for name in record if name not in allowed]
    if unknown:
        raise ValueError(f"{where} has unknown fields {', '.join(unknown)}; known: {', '.join(sorted(allowed))}")


def number(figure, where: str) -> int | float:
    """The number of a figure (``{"value": 132, "from": ...}``), checked to be a number."""
    amount = _object(figure, where).get("value")
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise ValueError(f"{where} must give its number as 'value', got {amount!r}")
    return amount


def si(figure, where: str) -> int | float:
    """A figure in SI: ``{"value": 3.35, "unit": "TB/s"}`` -> ``3.35e12`` (bytes per second).

    ``value * UNIT_SCALE[unit]``, the same product a literal ``3.35 * 1e12`` gives, bit for bit.
    """
    amount = number(figure, where)
    unit = figure.get("unit")
    if unit not in UNIT_SCALE:
        raise ValueError(f"{where} must give a unit, one of {', '.join(UNIT_SCALE)}, got {unit!r}")
    return from_unit(amount, unit)
