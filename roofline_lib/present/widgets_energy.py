"""Decode's energy and cost against the batch as an ipywidgets explorer, with a power cap.

:func:`energy_explorer` returns a :class:`~roofline_lib.present.explorer.Explorer` whose figure
draws, batch by batch, the joules per output token of one decode step
(:func:`~roofline_lib.workloads.energy.decode_energy`) and its dollars per million output tokens at
the GPU's listed hour price (:func:`~roofline_lib.workloads.energy_cost.cost_per_million_tokens`),
each with no cap (solid) and under the power cap (dashed), the chosen batch ringed. Every number
comes from the library; the explorer only arranges it. The website's ``energy`` mode restates it
(``book/_static/roofline-explorer.js``, held to it by ``tests/test_explorer_js.py``).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import ipywidgets as w
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..core.formatting import energy_text, power_text, to_unit
from ..core.hardware import as_gpu, registry
from ..models.transformer import model_config
from ..workloads.energy import TokenEnergy, decode_energy, gpus_with_power
from ..workloads.energy_cost import GPUPrice, cost_per_million_tokens, gpu_hour_price
from ..workloads.serving import serving_server, step_counts
from .explorer import _DPI, _FIGSIZE, Explorer, _log_axes, _powers_of_two_slider

__all__ = ["EnergyPoint", "EnergyView", "energy_explorer", "energy_gpus", "energy_point"]

BATCH_LOG2 = range(0, 11)  # the x axis and the batch slider: 1 to 1,024 sequences
CONTEXT_LOG2 = range(8, 16)  # the context slider: 256 to 32,768 keys
CAP_WATTS = (100, 1000, 10)  # the power cap slider: from, to, step (watts)
#: The weights' (and KV cache's) width, bytes per parameter -> the label the explorers show.
WIDTHS = {2: "bf16 (2 bytes)", 1: "fp8 (1 byte)"}


def energy_gpus() -> dict[str, str]:
    """Registry key -> name of every GPU with power figures (the explorer's choices), in registry order."""
    return {key: registry()[key].name for key in gpus_with_power()}


@dataclass(frozen=True)
class EnergyPoint:
    """One batch of the sweep: a decode step's energy with no cap and under the cap, and its cost."""

    batch: int
    free: TokenEnergy
    capped: TokenEnergy
    dollars_per_million: float | None  # no cap; None where no GPU-hour price is on record
    capped_dollars_per_million: float | None

    @property
    def feasible(self) -> bool:
        return self.free.feasible

    @property
    def cap_binds(self) -> bool:
        """Whether the cap slows the step (its dynamic power at full speed exceeds the cap)."""
        return self.capped.seconds > self.free.seconds


@dataclass(frozen=True)
class EnergyView:
    """What the explorer shows: every batch of the sweep, the chosen one, and the price it used."""

    model: str
    gpu_name: str
    bytes_per_param: int
    context_len: int
    cap_watts: float
    price: GPUPrice | None
    points: tuple[EnergyPoint, ...]
    chosen: EnergyPoint


def _dollars(energy: TokenEnergy, price: GPUPrice | None) -> float | None:
    """Dollars per million tokens of a step's throughput (its tokens over its seconds), or None with no price."""
    return None if price is None else cost_per_million_tokens(energy.tokens / energy.seconds, price.dollars_per_hour)


def _price_of(gpu) -> GPUPrice | None:
    """The GPU's listed hour price, or None where the registry has none (the readout says so)."""
    try:
        return gpu_hour_price(gpu)
    except ValueError:
        return None


def energy_point(server, batch: int, context_len: int, cap_watts: float, price: GPUPrice | None) -> EnergyPoint:
    """One batch: :func:`decode_energy` with no cap and under ``cap_watts``, and each one's cost at ``price``."""
    free = decode_energy(server, batch, context_len)
    capped = decode_energy(server, batch, context_len, cap_watts=cap_watts)
    return EnergyPoint(batch, free, capped, _dollars(free, price), _dollars(capped, price))


def _sweep(v: dict, cfg) -> EnergyView:
    """The view for the controls' values ``v``: every batch of the x axis, and the chosen one."""
    chip = as_gpu(v["gpu"])
    server = serving_server(cfg, chip, bytes_per_param=v["bytes_per_param"])  # refuses fp8 on a chip without it
    price = _price_of(chip)
    points = tuple(energy_point(server, 2**k, v["context_len"], v["cap_watts"], price) for k in BATCH_LOG2)
    by_batch = {p.batch: p for p in points}
    chosen = by_batch.get(v["batch"]) or energy_point(server, v["batch"], v["context_len"], v["cap_watts"], price)
    return EnergyView(
        cfg.name, chip.name, v["bytes_per_param"], v["context_len"], v["cap_watts"], price, points, chosen
    )


def _energy_controls(gpu_key: str, bytes_per_param: int, cap_watts: float, batch: int, context_len: int) -> dict:
    lo, hi, step = CAP_WATTS
    return {
        "gpu": w.Dropdown(
            options=[(name, key) for key, name in energy_gpus().items()], value=gpu_key, description="GPU"
        ),
        "bytes_per_param": w.Dropdown(
            options=[(label, b) for b, label in WIDTHS.items()], value=bytes_per_param, description="weights"
        ),
        "cap_watts": w.IntSlider(
            value=cap_watts, min=lo, max=hi, step=step, description="power cap (W)", continuous_update=False
        ),
        "batch": _powers_of_two_slider(batch, BATCH_LOG2, "batch"),
        "context_len": _powers_of_two_slider(context_len, CONTEXT_LOG2, "context"),
    }


@dataclass
class _EnergyFigure:
    """Two panels against the batch: J per token (left) and $ per million tokens (right), each with no
    cap (solid) and under the cap (dashed), the chosen batch ringed."""

    fig: Figure
    axes: tuple
    lines: dict  # (panel, "free" or "capped" or "chosen") -> line

    def clear(self) -> None:
        for line in self.lines.values():
            line.set_data([], [])

    def draw(self, view: EnergyView) -> None:
        ok = [p for p in view.points if p.feasible]
        for panel, free, capped in (
            (0, lambda p: p.free.joules_per_token, lambda p: p.capped.joules_per_token),
            (1, lambda p: p.dollars_per_million, lambda p: p.capped_dollars_per_million),
        ):
            shown = ok if view.price is not None or panel == 0 else []
            self.lines[panel, "free"].set_data([p.batch for p in shown], [free(p) for p in shown])
            self.lines[panel, "capped"].set_data([p.batch for p in shown], [capped(p) for p in shown])
            chosen = [view.chosen] if shown and view.chosen.feasible else []
            self.lines[panel, "chosen"].set_data([p.batch for p in chosen], [capped(p) for p in chosen])
            values = [y for p in shown for y in (free(p), capped(p))]
            span = (min(values) / 1.6, max(values) * 1.6) if values else (0.1, 10.0)  # no price: an empty panel
            self.axes[panel].set_ylim(*span)
        cost = "$ per million output tokens" if view.price else f"no GPU-hour price for the {view.gpu_name}"
        self.axes[1].set_title(cost, fontsize=8)
        self.fig.suptitle(
            f"{view.model} on the {view.gpu_name}: one decode step at {view.context_len:,} keys, "
            f"{WIDTHS[view.bytes_per_param]} weights, a {view.cap_watts:g} W cap",
            fontsize=8,
        )


def _energy_figure() -> _EnergyFigure:
    fig = Figure(figsize=_FIGSIZE, dpi=_DPI)
    FigureCanvasAgg(fig)
    axes = (fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2))
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.15, top=0.83, wspace=0.3)
    lines = {}
    for panel, (ax, colour) in enumerate(zip(axes, ("C0", "C1"))):
        ax.set_axisbelow(True)
        (lines[panel, "free"],) = ax.plot([], [], "-o", ms=3, lw=1.5, color=colour, label="no cap")
        (lines[panel, "capped"],) = ax.plot([], [], "--", lw=1.5, color=colour, label="under the cap")
        (lines[panel, "chosen"],) = ax.plot([], [], "o", ms=10, mfc="none", mew=2, color="C3", label="your batch")
        _log_axes(ax, "batch (sequences)", "", xlim=(0.7, 2 ** BATCH_LOG2[-1] * 1.4), x_base=2)
        ax.legend(fontsize=6, loc="upper right")
    axes[0].set_title("J per output token", fontsize=8)
    return _EnergyFigure(fig, axes, lines)


def _shares(e: TokenEnergy) -> str:
    """``"18% FLOPs, 38% HBM bytes, 44% static"``: each term's share of the step's energy."""
    return (
        f"{e.flop_joules / e.joules:.0%} FLOPs, {e.byte_joules / e.joules:.0%} HBM bytes, "
        f"{e.static_joules / e.joules:.0%} static"
    )


def _cap_sentence(p: EnergyPoint, cap_watts: float) -> str:
    """What the cap does at the chosen batch, in words."""
    if not p.cap_binds:
        return f"A {cap_watts:g} W cap does not bind here: the step draws {power_text(p.free.average_watts)}."
    return (
        f"A {cap_watts:g} W cap binds: the step slows from {to_unit(p.free.seconds, 'ms'):.3g} to "
        f"{to_unit(p.capped.seconds, 'ms'):.3g} ms and costs <b>{energy_text(p.capped.joules_per_token)} per token</b>."
    )


def _cost_sentence(view: EnergyView) -> str:
    """The chosen batch's dollars per million tokens, with the price's source and date (or why none)."""
    p, price = view.chosen, view.price
    if price is None:
        return f"No GPU-hour price is on record for the {view.gpu_name}, so no cost is shown."
    capped = f" (${p.capped_dollars_per_million:.3g} under the cap)" if p.cap_binds else ""
    return (
        f"<b>${p.dollars_per_million:.3g} per million tokens</b>{capped} at ${price.dollars_per_hour:.3g} per "
        f"GPU-hour ({html.escape(price.source.split(' (')[0])}, {price.date})."
    )


def _energy_readout(view: EnergyView) -> str:
    """The sentences under the panels: the fit first when the step does not fit, then the chosen batch's
    energy per token and its parts, the power it draws, what the cap does, and the cost."""
    p = view.chosen
    first = "" if p.feasible else f"<b style='color:#b00020'>{html.escape(p.free.fit.headline)}</b><br>"
    return (
        f"{first}Batch <b>{p.batch}</b> at {view.context_len:,} keys, {WIDTHS[view.bytes_per_param]} weights: "
        f"<b>{energy_text(p.free.joules_per_token)} per token</b> ({_shares(p.free)}), "
        f"{power_text(p.free.average_watts)}. {_cap_sentence(p, view.cap_watts)} {_cost_sentence(view)}"
    )


def _site_counts(cfg) -> dict[str, float]:
    """The model's step counts per byte of width (weights and KV cache at one byte each), as the page reads them.

    Every byte count of :func:`~roofline_lib.workloads.serving.step_counts` is its width times these, so
    the page prices either width from one set; the FLOPs and activations do not depend on the width.
    """
    one = step_counts(serving_server(cfg, "H100", bytes_per_param=1, precision="bf16"))  # any GPU: counts only
    return {
        "body_flops": one.body_flops_per_token,
        "key_flops": one.score_flops_per_key,
        "unembed_flops": one.unembed_flops_per_row,
        "weight_params_fixed": one.weight_bytes_fixed,
        "weight_params_per_token": one.weight_bytes_per_token,
        "kv_elements_per_token": one.kv_bytes_per_token,
        "stored_params": one.stored_weight_bytes,
        "activation_bytes_per_token": one.activation_bytes_per_token,
        "activation_bytes_per_row": one.activation_bytes_per_row,
        "max_context_tokens": one.max_context_tokens,
    }


def energy_explorer(
    model: str = "llama-3-8b",
    gpu="H100",
    bytes_per_param: int = 2,
    cap_watts: int = 400,
    batch: int = 64,
    context_len: int = 2048,
) -> Explorer:
    """A GPU, the weights' width, a power cap, a batch and a context -> decode's J per token and $ per million tokens.

    ``model`` is a dense shipped model without a sliding window (the website prices it from its step
    counts). ``bytes_per_param`` is 2 (bf16 weights, KV cache and math) or 1 (fp8 throughout); the
    cap is in watts, the batch and the context are powers of two on the sliders. A step that does not
    fit is priced and says so first; a cap at or below the GPU's static power, or fp8 on a chip
    without it, shows the library's refusal. ``result`` is an :class:`EnergyView`.
    """
    cfg = model_config(model)
    counts = _site_counts(cfg)  # refuses a mixture of experts or a sliding window
    start = {"gpu": as_gpu(gpu).key, "bytes_per_param": bytes_per_param, "cap_watts": cap_watts}
    if bytes_per_param not in WIDTHS:
        raise ValueError(f"bytes_per_param must be 2 (bf16) or 1 (fp8) bytes per parameter, got {bytes_per_param!r}")
    lo, hi, _ = CAP_WATTS
    if not lo <= cap_watts <= hi:  # the slider would clamp it silently
        raise ValueError(f"cap_watts must be between {lo} and {hi} watts (the slider's span), got {cap_watts!r}")
    _sweep(start | {"batch": batch, "context_len": context_len}, cfg)  # refuses a bad start with the library's words
    controls = _energy_controls(start["gpu"], bytes_per_param, cap_watts, batch, context_len)
    view = _energy_figure()

    def recompute() -> None:
        v = {k: c.value for k, c in controls.items()}
        try:
            result = _sweep(v, cfg)
        except ValueError as err:
            view.clear()
            explorer.show_error(str(err))
            return
        view.draw(result)
        explorer.result = result
        explorer.readout.value = _energy_readout(result)

    def site_state() -> dict[str, object]:
        return {k: c.value for k, c in controls.items()} | {"model_name": cfg.name} | counts

    explorer = Explorer(
        controls, view.fig, recompute, title="Energy and cost explorer", site_mode="energy", site_state=site_state
    )
    explorer.update()
    return explorer
