"""Numbers at the edge: how the library writes a time, a rate, a size or a plain number in text.

Everything inside the library is SI (seconds, FLOP/s, bytes); these helpers are the one place a
value is scaled to a unit for a message, a readout or a chart label. Each is written once here
and used by every module that prints such a value.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

__all__: list[str] = []  # private helpers: the modules import them by name

#: One gibibyte, 2**30 bytes: the unit a memory capacity is really printed in (``hardware.GIB``).
GIB = 2**30


def seconds(s: float) -> str:
    """A duration with three significant figures in s, ms, us or ns: ``0.0123 -> '12.3 ms'``."""
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.3g} us"
    return f"{s * 1e9:.3g} ns"


def rate(x: float, unit: str) -> str:
    """A rate in tera or giga units, three significant figures: ``1.2 TB/s``, ``51.3 GFLOP/s``.

    ``unit`` is the SI unit of ``x`` ("B/s" or "FLOP/s").
    """
    return f"{x / 1e12:.3g} T{unit}" if x >= 1e12 else f"{x / 1e9:.3g} G{unit}"


def num(x: float) -> str:
    """Three significant figures without exponents, thousands separated: 0.3, 19.5, 312, 1,979."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def sig3(x: float) -> str:
    """Three significant figures, thousands separated, as the website explorers print (their ``sig3``).

    ``3977.4 -> '3,980'``, ``12.34 -> '12.3'``, ``0.01234 -> '0.0123'``: the notebook's explorers
    and the website's show the same state as the same text.
    """
    if x == 0:
        return "0"
    exact = Decimal(x)  # the float's exact value; a tie rounds up, as JavaScript's toPrecision does
    step = Decimal(1).scaleb(exact.adjusted() - 2)
    rounded = float(exact.quantize(step, rounding=ROUND_HALF_UP))
    decimals = max(0, 2 - math.floor(math.log10(abs(rounded))))
    text = f"{rounded:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text  # 1.00 -> "1", as the page prints it


def flops_rate(flops_per_s: float) -> str:
    """A FLOP rate for a chart: TFLOP/s from 0.1 TFLOP/s up, GFLOP/s below, as :func:`num` writes it."""
    if flops_per_s >= 0.1e12:
        return f"{num(flops_per_s / 1e12)} TFLOP/s"
    return f"{num(flops_per_s / 1e9)} GFLOP/s"


def gib(n_bytes: float) -> str:
    """A memory size in GiB (2**30 bytes, the unit a capacity is printed in): ``'80 GiB'``."""
    return f"{n_bytes / GIB:.4g} GiB"


def data_size(n_bytes: float) -> str:
    """Bytes moved, in the SI unit that keeps four significant figures short: ``1.381e11 -> '138.1 GB'``.

    For traffic (what a step reads and writes); a capacity is printed with :func:`gib`.
    """
    for unit in ("TB", "GB", "MB", "kB"):
        if abs(n_bytes) >= UNIT_SCALE[unit]:
            return f"{n_bytes / UNIT_SCALE[unit]:.4g} {unit}"
    return f"{n_bytes:.4g} B"


def flop_count(flops: float) -> str:
    """FLOPs in the unit that keeps four significant figures short: ``2.635e13 -> '26.35 TFLOP'``."""
    for unit in ("PFLOP", "TFLOP", "GFLOP", "MFLOP"):
        if abs(flops) >= UNIT_SCALE[unit]:
            return f"{flops / UNIT_SCALE[unit]:.4g} {unit}"
    return f"{flops:.4g} FLOP"


def memory_size(n_bytes: float) -> str:
    """Memory held, in GiB (the unit a capacity is printed in), MiB below one GiB: ``'80 GiB'``, ``'262 MiB'``."""
    if abs(n_bytes) >= GIB or n_bytes == 0:
        return f"{n_bytes / GIB:.4g} GiB"
    return f"{n_bytes / 2**20:.3g} MiB"


def energy_text(joules: float) -> str:
    """Energy in the SI unit that keeps three significant figures short: ``1234 -> '1.23 kJ'``.

    mJ below a joule, J, kJ, MJ, GJ, TJ above; a training run's MWh is :func:`to_unit` (``"MWh"``).
    """
    for unit in ("TJ", "GJ", "MJ", "kJ", "J"):
        if abs(joules) >= UNIT_SCALE[unit]:
            return f"{joules / UNIT_SCALE[unit]:.3g} {unit}"
    return f"{joules / UNIT_SCALE['mJ']:.3g} mJ"


def power_text(watts: float) -> str:
    """Power with three significant figures in W, kW or MW: ``412.3 -> '412 W'``, ``5600 -> '5.6 kW'``."""
    for unit in ("MW", "kW"):
        if abs(watts) >= UNIT_SCALE[unit]:
            return f"{watts / UNIT_SCALE[unit]:.3g} {unit}"
    return f"{watts:.3g} W"


#: How many SI base units (second, byte, FLOP, joule, watt, and per second) one of each printed unit is.
UNIT_SCALE = {
    **{"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9},
    **{"B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 2**10, "MiB": 2**20, "GiB": GIB},
    **{"B/s": 1.0, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12, "Gb/s": 1e9 / 8},  # Gb/s: gigabits, as InfiniBand prints
    **{"FLOP": 1.0, "MFLOP": 1e6, "GFLOP": 1e9, "TFLOP": 1e12, "PFLOP": 1e15},
    **{"FLOP/s": 1.0, "GFLOP/s": 1e9, "TFLOP/s": 1e12, "PFLOP/s": 1e15},
    **{"tokens": 1.0, "k tokens": 1e3, "M tokens": 1e6, "B tokens": 1e9, "T tokens": 1e12},
    **{"params": 1.0, "M params": 1e6, "B params": 1e9},
    **{"mJ": 1e-3, "J": 1.0, "kJ": 1e3, "MJ": 1e6, "GJ": 1e9, "TJ": 1e12},
    **{"Wh": 3600.0, "kWh": 3.6e6, "MWh": 3.6e9, "GWh": 3.6e12},  # 1 Wh = 3600 J
    **{"W": 1.0, "kW": 1e3, "MW": 1e6},
    # energy per FLOP or per byte moved, in joules; pJ/bit per bit moved, so 8 bits a byte: 1 pJ/bit = 8e-12 J/B
    **{"pJ": 1e-12, "pJ/FLOP": 1e-12, "pJ/B": 1e-12, "pJ/bit": 8e-12},
}


def to_unit(value: float, unit: str) -> float:
    """An SI value (seconds, bytes, FLOPs, their rates) in a printed unit: ``to_unit(2.5e9, "GB") -> 2.5``.

    The one place a value is scaled for a reader; the unit names are the keys of :data:`UNIT_SCALE`.
    """
    if unit not in UNIT_SCALE:
        raise ValueError(f"unit must be one of {', '.join(UNIT_SCALE)}, got {unit!r}")
    return value / UNIT_SCALE[unit]


def from_unit(value: float, unit: str) -> float:
    """A value given in a printed unit, in SI: ``from_unit(80, "GB") -> 8e10`` (the inverse of :func:`to_unit`)."""
    if unit not in UNIT_SCALE:
        raise ValueError(f"unit must be one of {', '.join(UNIT_SCALE)}, got {unit!r}")
    return value * UNIT_SCALE[unit]
