"""Published energy figures the energy model is held against, each with its source and date.

* :func:`published_training_energy`: training runs whose authors printed GPU-hours, the power
  they counted per GPU and the emissions (Llama 3.1 8B, 70B and 405B, from Meta's model card).
* :func:`published_token_energy`: measured joules per output token of a serving engine for a
  model the library knows (the ML.ENERGY benchmark's Llama 3.1 8B on an H100).
* :func:`published_op_energies`: the energy of single operations on a 45 nm process (Horowitz
  2014), the scale every later per-FLOP and per-byte figure is compared with.

The figures live in ``roofline_lib/core/data/energy.json``; this module only reads them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..core.formatting import to_unit
from ..core.hardware import registry
from ..core.registry_data import number, read_records, si

__all__ = [
    "PublishedTrainingEnergy",
    "published_training_energy",
    "PublishedTokenEnergy",
    "published_token_energy",
    "OpEnergy",
    "published_op_energies",
]

_CORE = "roofline_lib.core"
_DATA_FILE = "data/energy.json"
_SECONDS_PER_HOUR = 3600
_KG_PER_TONNE = 1000


@dataclass(frozen=True)
class PublishedTrainingEnergy:
    """A training run as its authors printed it. SI, except GPU-hours and tonnes of CO2e as printed."""

    key: str
    model: str
    n_params: float
    tokens: float
    gpu_name: str
    gpu_hours: float
    training_power_watts: float  # per GPU, the figure the emissions were computed from
    location_based_tco2eq: float
    market_based_tco2eq: float
    published_mfu: float | None  # where the authors printed one
    source: str
    date: str
    mfu_span: tuple[float, float] | None = None  # (lowest, highest) MFU the authors printed across the run's stages
    effective_training_time: float | None = None  # the least share of the run's time that trained, as printed

    @property
    def effective_time_span(self) -> tuple[float, float] | None:
        """(the printed least share of time that trained, all of it), or None where none was printed."""
        return None if self.effective_training_time is None else (self.effective_training_time, 1.0)

    @property
    def joules(self) -> float:
        """GPU-hours x the printed power per GPU: the energy the published emissions were computed from."""
        return self.gpu_hours * _SECONDS_PER_HOUR * self.training_power_watts

    @property
    def implied_grid_g_per_kwh(self) -> float:
        """The grid intensity the published location-based emissions imply: g CO2e / kWh."""
        return self.location_based_tco2eq * _KG_PER_TONNE * 1000 / to_unit(self.joules, "kWh")

    def implied_mfu(self, precision: str = "bf16") -> float:
        """The MFU the published GPU-hours imply for 6 N T FLOPs at the GPU's dense peak in ``precision``."""
        peak = registry()[self._gpu_key()].peak_flops_per_s(precision)
        return 6 * self.n_params * self.tokens / (self.gpu_hours * _SECONDS_PER_HOUR * peak)

    def _gpu_key(self) -> str:
        return next(k for k, s in registry().items() if s.name == self.gpu_name)


def _figure(record: dict, name: str, where: str) -> float:
    """A figure of a record, in SI when it has a unit, as printed when it has none."""
    figure = record[name]
    reader = si if "unit" in figure else number
    return float(reader(figure, f"{where}, {name}"))


def _training(key: str, record: dict) -> PublishedTrainingEnergy:
    where = f"{_DATA_FILE}, published_training, {key!r}"
    mfu = _figure(record, "published_mfu", where) if "published_mfu" in record else None
    span = None
    if ("mfu_low" in record) != ("mfu_high" in record):
        raise ValueError(f"{where} must give both mfu_low and mfu_high (a span), or neither")
    if "mfu_low" in record:
        span = (_figure(record, "mfu_low", where), _figure(record, "mfu_high", where))
        if not 0 < span[0] <= span[1] < 1:
            raise ValueError(f"{where}: mfu_low and mfu_high must be shares with 0 < low <= high < 1, got {span}")
    effective = _figure(record, "effective_training_time", where) if "effective_training_time" in record else None
    if effective is not None and not 0 < effective <= 1:
        raise ValueError(f"{where}, effective_training_time must be a share of the time in (0, 1], got {effective}")
    return PublishedTrainingEnergy(
        key=key,
        model=record["model"],
        n_params=_figure(record, "n_params", where),
        tokens=_figure(record, "tokens", where),
        gpu_name=registry()[record["gpu"]].name,
        gpu_hours=_figure(record, "gpu_hours", where),
        training_power_watts=_figure(record, "training_power_watts", where),
        location_based_tco2eq=_figure(record, "location_based_tco2eq", where),
        market_based_tco2eq=_figure(record, "market_based_tco2eq", where),
        published_mfu=mfu,
        source=record["source"],
        date=record["date"],
        mfu_span=span,
        effective_training_time=effective,
    )


_TRAINING_FIELDS = (
    "model",
    "n_params",
    "tokens",
    "gpu",
    "gpu_hours",
    "training_power_watts",
    "location_based_tco2eq",
    "market_based_tco2eq",
    "source",
    "date",
)


@functools.lru_cache(maxsize=1)
def published_training_energy() -> tuple[PublishedTrainingEnergy, ...]:
    """The published training runs, in the file's order (Llama 3.1 8B, 70B, 405B)."""
    records = read_records(
        _CORE,
        _DATA_FILE,
        table="published_training",
        required=_TRAINING_FIELDS,
        optional=("published_mfu", "mfu_low", "mfu_high", "effective_training_time"),
    )
    return tuple(_training(k, r) for k, r in records.items())


@dataclass(frozen=True)
class PublishedTokenEnergy:
    """A measured energy per output token of a serving engine. Joules per token, SI."""

    key: str
    model: str
    library_model: str | None  # the shipped config with the same shapes, if any
    gpu_name: str
    max_batch: int  # the server's cap on running sequences (vLLM's max_num_seqs)
    engine: str
    joules_per_token: float
    notes: str
    source: str
    date: str


_TOKEN_FIELDS = ("model", "library_model", "gpu", "max_batch", "engine", "joules_per_token", "notes", "source", "date")


@functools.lru_cache(maxsize=1)
def published_token_energy() -> tuple[PublishedTokenEnergy, ...]:
    """The published per-token energy measurements, in the file's order."""
    records = read_records(_CORE, _DATA_FILE, table="published_token_energy", required=_TOKEN_FIELDS)
    out = []
    for key, r in records.items():
        where = f"{_DATA_FILE}, published_token_energy, {key!r}"
        out.append(
            PublishedTokenEnergy(
                key,
                r["model"],
                r["library_model"],
                registry()[r["gpu"]].name,
                int(r["max_batch"]),
                r["engine"],
                _figure(r, "joules_per_token", where),
                r["notes"],
                r["source"],
                r["date"],
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class OpEnergy:
    """The energy of one operation on an older process node, as published. Joules."""

    key: str
    operation: str
    flops: int  # FLOPs the operation counts as (0 for a memory read)
    joules: float
    source: str


@functools.lru_cache(maxsize=1)
def published_op_energies() -> tuple[OpEnergy, ...]:
    """Horowitz's (ISSCC 2014) 45 nm energies per operation, in the file's order."""
    records = read_records(
        _CORE, _DATA_FILE, table="published_op_energy", required=("operation", "flops", "joules", "date")
    )
    out = []
    for key, r in records.items():
        where = f"{_DATA_FILE}, published_op_energy, {key!r}"
        figure = r["joules"]
        out.append(
            OpEnergy(
                key, r["operation"], int(r["flops"]), _figure(r, "joules", where), f"{figure['from']} ({r['date']})"
            )
        )
    return tuple(out)
