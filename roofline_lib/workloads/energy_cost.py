"""What the joules cost: dollars per GPU-hour and per million tokens, kg CO2e, and a training run's energy.

* :func:`gpu_hour_price`: a GPU-hour's price from a dated, cited price list in the registry
  (``core/data/energy.json``, ``prices``); a price is a snapshot, so it carries its date.
* :func:`cost_per_million_tokens`: one GPU's throughput at a GPU-hour price, in dollars per 1e6 tokens.
* :func:`emissions_kg`: kg CO2e of some joules at a grid intensity the reader gives (g CO2e per
  kWh): the grid is where and when the power is drawn, so there is no default.
* :func:`training_energy`: a training run's 6 N T FLOPs at an MFU on a GPU, as GPU-hours, and its
  energy two ways: TDP x GPU-hours (the convention Meta's model cards use) and the energy model of
  :mod:`roofline_lib.workloads.energy` (FLOPs, an upper bound on the HBM bytes, static power).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.checks import _positive
from ..core.formatting import energy_text, power_text, to_unit
from ..core.hardware import as_gpu, registry
from ..core.registry_data import number, read_records
from ..core.roofline import ridge_point
from .energy import power_spec
from .training import training_bill

__all__ = [
    "GPUPrice",
    "gpu_hour_price",
    "cost_per_million_tokens",
    "emissions_kg",
    "TrainingEnergy",
    "training_energy",
]

_CORE = "roofline_lib.core"
_DATA_FILE = "data/energy.json"
_SECONDS_PER_HOUR = 3600


@dataclass(frozen=True)
class GPUPrice:
    """One GPU-hour's price, in US dollars, with where it was listed and when."""

    gpu_name: str
    dollars_per_hour: float
    source: str
    date: str
    detail: str  # what the price list's line is (instance, region)

    def __str__(self) -> str:
        return f"${self.dollars_per_hour:.4g} per {self.gpu_name} GPU-hour ({self.detail}; {self.source}, {self.date})"


def _load_prices() -> dict[str, GPUPrice]:
    records = read_records(_CORE, _DATA_FILE, table="prices", required=("dollars_per_hour", "source", "date"))
    known = registry()
    prices = {}
    for key, record in records.items():
        where = f"{_DATA_FILE}, prices, {key!r}"
        if key not in known:
            raise ValueError(f"{where}: {key!r} is not a key of gpus.json")
        figure = record["dollars_per_hour"]
        dollars = number(figure, f"{where}, dollars_per_hour")
        prices[key] = GPUPrice(known[key].name, float(dollars), record["source"], record["date"], figure["from"])
    return prices


_PRICES = _load_prices()


def gpu_hour_price(gpu) -> GPUPrice:
    """The listed price of one GPU-hour of ``gpu`` (a registry name or GPUSpec), with its source and date.

    A GPU with no price on record is refused, naming those that have one: give your own price to
    :func:`cost_per_million_tokens` instead.
    """
    spec = as_gpu(gpu)
    if spec.key not in _PRICES:
        have = ", ".join(p.gpu_name for p in _PRICES.values())
        raise ValueError(
            f"gpu {spec.name!r} has no GPU-hour price on record (roofline_lib/core/{_DATA_FILE}); GPUs that have one: {have}. "
            "Pass your own dollars_per_hour to cost_per_million_tokens"
        )
    return _PRICES[spec.key]


def cost_per_million_tokens(tokens_per_s, dollars_per_hour) -> float:
    """Dollars per million tokens of one GPU producing ``tokens_per_s`` at ``dollars_per_hour``.

    tokens_per_hour = tokens_per_s * 3600;  cost = dollars_per_hour / tokens_per_hour * 1e6
    """
    rate = _positive(tokens_per_s, "tokens_per_s", "tokens per second")
    price = _positive(dollars_per_hour, "dollars_per_hour", "US dollars per GPU-hour", allow_zero=True)
    tokens_per_hour = rate * _SECONDS_PER_HOUR
    return price / tokens_per_hour * 1e6  # per million tokens


def emissions_kg(joules, grid_g_per_kwh) -> float:
    """kg CO2e of drawing ``joules`` from a grid of ``grid_g_per_kwh`` (grams CO2e per kWh).

    kWh = joules / 3.6e6;  kg = kWh * grid_g_per_kwh / 1000. The grid intensity is the reader's:
    it depends on where and when the power is drawn (a hydro grid is tens of g/kWh, a coal one
    near a thousand), so there is no default.
    """
    energy = _positive(joules, "joules", "joules", allow_zero=True)
    grid = _positive(grid_g_per_kwh, "grid_g_per_kwh", "grams of CO2e per kWh", allow_zero=True)
    return to_unit(energy, "kWh") * grid / 1000  # grams to kilograms


# --------------------------------------------------------------------------- a training run


@dataclass(frozen=True)
class TrainingEnergy:
    """A training run's GPU-hours and energy, two ways. SI: FLOP, seconds, watts, joules.

    ``tdp_joules`` is TDP x GPU-hours x PUE, the convention of Meta's model cards. ``model_joules``
    is the energy model's: ``flop_joules`` (FLOPs x joules per FLOP), ``byte_joules`` (HBM bytes
    at the time ridge's intensity, the most a compute-bound step can move: an upper bound),
    ``static_joules`` (static power x GPU-seconds), all GPU energy, times PUE. Neither counts the
    host CPUs, the network, storage or failed work.
    """

    n_params: float
    tokens: float
    gpu_name: str
    mfu: float
    precision: str
    pue: float
    n_gpus: int | None
    flops: float  # 6 N T
    gpu_hours: float
    wall_seconds: float | None  # None when n_gpus was not given
    tdp_watts: float
    tdp_joules: float
    flop_joules: float
    byte_joules: float
    static_joules: float
    model_joules: float

    @property
    def tdp_mwh(self) -> float:
        return to_unit(self.tdp_joules, "MWh")

    @property
    def model_mwh(self) -> float:
        return to_unit(self.model_joules, "MWh")

    @property
    def model_average_watts(self) -> float:
        """The energy model's average power per GPU over the run (PUE left out)."""
        return (self.flop_joules + self.byte_joules + self.static_joules) / (self.gpu_hours * _SECONDS_PER_HOUR)

    def kg_co2e(self, grid_g_per_kwh, method: str = "tdp") -> float:
        """kg CO2e of the run on a grid of ``grid_g_per_kwh``, from ``method``'s energy ("tdp" or "model")."""
        joules = {"tdp": self.tdp_joules, "model": self.model_joules}.get(method)
        if joules is None:
            raise ValueError(f"method must be 'tdp' or 'model', got {method!r}")
        return emissions_kg(joules, grid_g_per_kwh)

    def __str__(self) -> str:
        return (
            f"{self.flops:.3g} FLOP on {self.gpu_name}s at {self.mfu:.0%} MFU: {self.gpu_hours:,.0f} GPU-hours; "
            f"{to_unit(self.tdp_joules, 'MWh'):,.0f} MWh at the TDP, {to_unit(self.model_joules, 'MWh'):,.0f} MWh "
            f"by the energy model ({energy_text(self.model_joules)}, {power_text(self.model_average_watts)} per GPU)"
        )


def _pue(pue) -> float:
    """Power usage effectiveness: facility energy over IT energy, 1 or more."""
    x = _positive(pue, "pue", "facility joules per IT joule")
    if x < 1:
        raise ValueError(f"pue must be a power usage effectiveness of 1 or more (facility / IT energy), got {pue!r}")
    return x


def training_energy(
    n_params, tokens, gpu, mfu, *, n_gpus: int | None = None, pue=1.0, precision="bf16"
) -> TrainingEnergy:
    """A training run's GPU-hours and energy: ``6 * n_params * tokens`` FLOPs at ``mfu`` of ``gpu``'s dense peak.

    flops     = 6 N T                          (training_bill's "6N" convention)
    gpu_hours = flops / (mfu * peak) / 3600    (independent of the GPU count; ``n_gpus`` gives the wall-clock)
    tdp       = tdp_watts * gpu_seconds * pue
    model     = (flops * e_flop + flops / ridge * e_byte + idle_watts * gpu_seconds) * pue

    ``n_params`` may be a TransformerConfig (its active parameters).
    """
    spec = as_gpu(gpu)
    power = power_spec(spec)
    e_flop = power.flop_joules(precision)
    facility = _pue(pue)
    bill = training_bill(n_params, tokens, 1 if n_gpus is None else n_gpus, spec, mfu, precision)
    gpu_seconds = bill.gpu_hours * _SECONDS_PER_HOUR
    hbm_bytes = bill.total_flops / ridge_point(spec, precision)  # compute-bound: intensity >= the ridge
    flop_j = bill.total_flops * e_flop
    byte_j = hbm_bytes * power.joules_per_hbm_byte
    static_j = power.idle_watts * gpu_seconds
    return TrainingEnergy(
        n_params=bill.flops_per_token / 6,  # the 6N convention's N
        tokens=bill.n_tokens,
        gpu_name=spec.name,
        mfu=bill.mfu,
        precision=precision,
        pue=facility,
        n_gpus=None if n_gpus is None else bill.n_gpus,
        flops=bill.total_flops,
        gpu_hours=bill.gpu_hours,
        wall_seconds=None if n_gpus is None else bill.seconds,
        tdp_watts=power.tdp_watts,
        tdp_joules=power.tdp_watts * gpu_seconds * facility,
        flop_joules=flop_j,
        byte_joules=byte_j,
        static_joules=static_j,
        model_joules=(flop_j + byte_j + static_j) * facility,
    )
