"""The parallelism planner as an ipywidgets explorer: pick a model, a cluster and a layout.

:func:`parallel_explorer` returns a :class:`~roofline_lib.present.explorer.Explorer` whose figure draws the
step's critical path (the compute with its bubble and the communication it waits for) and its roofs
(compute, HBM, and each parallel dimension's communication) as bars, the binding one in red, and
the memory per GPU beside the GPU's capacity. A layout that does not fit says so first. Every number
comes from :func:`roofline_lib.workloads.parallel.plan`; the explorer only arranges it.
"""

from __future__ import annotations

import html

import ipywidgets as w

from ..core.formatting import num as _fmt
from ..core.formatting import sig3, to_unit
from ..core.interconnect import node_registry
from ..models.transformer import model_config, shipped_models
from ..workloads.parallel import cluster, plan
from .explorer import Explorer, _figure, _powers_of_two_slider

__all__ = ["parallel_explorer"]

_ROOF_ORDER = ("compute", "hbm", "tp", "cp", "dp", "ep", "pp")
_CRITICAL = "critical path"  # the bar of the compute, its bubble and the communication it waits for


def _gib(n_bytes: float) -> float:
    """Bytes in GiB, the unit the explorer writes memory in."""
    return to_unit(n_bytes, "GiB")


def _parallel_controls(model, node, n_gpus, tp, pp, zero, recompute) -> dict[str, w.Widget]:
    """Model, node, GPU count, tp, pp, ZeRO stage and activation recomputation."""
    return {
        "model": w.Dropdown(options=list(shipped_models()), value=model, description="model"),
        "node": w.Dropdown(
            options=[(n.name, key) for key, n in node_registry().items()], value=node, description="node"
        ),
        "n_gpus": _powers_of_two_slider(n_gpus, range(3, 15), "GPUs"),
        "tp": _powers_of_two_slider(tp, range(0, 4), "tp"),
        "pp": _powers_of_two_slider(pp, range(0, 5), "pp"),
        "zero": w.Dropdown(options=[0, 1, 2, 3], value=zero, description="ZeRO"),
        "recompute": w.Dropdown(options=["none", "selective", "full"], value=recompute, description="recompute"),
    }


def _batch_for(global_batch: int, dp: int) -> int:
    """The global batch the explorer plans: ``global_batch`` rounded down to a multiple of dp (at least dp).

    The readout says when it rounded (the planner itself refuses a batch that does not split)."""
    return max(global_batch, dp) // dp * dp


def _layout_plan(v: dict, global_batch: int, seq_len: int):
    """The planner's step for the controls' values ``v``: dp is what tp x pp leave, the batch a multiple of dp."""
    if v["n_gpus"] % (v["tp"] * v["pp"]):
        raise ValueError(f"tp x pp = {v['tp'] * v['pp']} GPUs must divide n_gpus = {v['n_gpus']} GPUs")
    dp = v["n_gpus"] // (v["tp"] * v["pp"])
    return plan(
        v["model"],
        cluster(v["node"], v["n_gpus"]),
        dp=dp,
        tp=v["tp"],
        pp=v["pp"],
        zero=v["zero"],
        global_batch=_batch_for(global_batch, dp),
        seq_len=seq_len,
        recompute=v["recompute"],
    )


def _binding_bar(p) -> str:
    """The bar that binds: the critical path, or the overlapping roof that is longer than it."""
    return p.binding if p.binding in p.roofs and p.binding != "compute" else _CRITICAL


def _draw_roofs(ax, p, v: dict) -> None:
    """The critical path and one bar per roof in seconds, the binding one red; the title names the
    layout and its memory, and starts with DOES NOT FIT when it does not."""
    names = [_CRITICAL] + [n for n in _ROOF_ORDER if n in p.roofs]
    seconds = [p.critical_seconds] + [p.roofs[n] for n in names[1:]]
    ax.barh(names, seconds, color=["C3" if n == _binding_bar(p) else "C0" for n in names])
    ax.invert_yaxis()
    ax.set_xlabel("seconds per step (each roof on its own)")
    dp = v["n_gpus"] // (v["tp"] * v["pp"])
    ax.set_title(
        ("DOES NOT FIT. " if not p.feasible else "")
        + f"{p.model}, {v['n_gpus']} GPUs: dp={dp} tp={v['tp']} pp={v['pp']} ZeRO-{v['zero']}; "
        f"memory {_gib(p.memory.total):.0f} of {_gib(p.memory.capacity):.0f} GiB",
        fontsize=8,
        color="C3" if not p.feasible else "black",
    )


def _batch_note(planned: int, asked: int, dp: int) -> str:
    """What the explorer did to the global batch, in words ("" when nothing): the website's sentence too."""
    if planned > asked:
        return (
            f"The global batch is raised from {asked:,} to {planned:,} sequences: each of the dp = {dp} "
            "data-parallel ranks needs at least one."
        )
    if planned < asked:
        return f"The global batch of {asked:,} sequences is rounded down to {planned:,}, a multiple of dp = {dp}."
    return ""


def _parallel_readout(p, asked_batch: int, seq_len: int) -> str:
    """The sentences under the bars: the fit first when the layout does not fit, then any change to the
    batch, the binding roof, the step time, MFU (three figures, as the website prints it) and its
    assumption, and the memory per GPU."""
    fit = "fits" if p.fits else "<b>does not fit</b>"
    m = p.memory
    first = "" if p.feasible else f"<b style='color:#b00020'>{html.escape(p.fit.headline)}</b><br>"
    planned = round(p.tokens_per_step / seq_len)
    note = _batch_note(planned, asked_batch, p.layout["dp"])
    batch = f"<b>{note}</b><br>" if note else ""
    return (
        f"{first}{batch}<b>{p.binding}</b> binds: step &ge; <b>{_fmt(p.step_seconds)} s</b> "
        f"({_fmt(p.serial_seconds)} s if nothing overlaps), MFU at most <b>{sig3(100 * p.mfu)} %</b>; "
        f"it {p.assumption}. Global batch {planned:,} sequences of {seq_len:,} tokens. "
        f"Memory per GPU {_fmt(_gib(m.total))} GiB (state {_fmt(_gib(m.state))}, "
        f"activations {_fmt(_gib(m.activations))}): {fit}."
    )


def parallel_explorer(
    model: str = "llama-3-70b",
    node: str = "8x-h100",
    n_gpus: int = 64,
    tp: int = 8,
    pp: int = 1,
    zero: int = 1,
    global_batch: int = 64,
    seq_len: int = 4096,
    recompute: str = "selective",
) -> Explorer:
    """Model, node, GPUs, tp, pp and ZeRO stage -> the roofs of one training step and memory per GPU.

    ``dp`` is what is left: ``n_gpus / (tp * pp)``. A layout the planner refuses shows its reason.
    """
    model_config(model)  # checks the name
    layout = dict(
        dp=n_gpus // (tp * pp), tp=tp, pp=pp, zero=zero, global_batch=global_batch, seq_len=seq_len, recompute=recompute
    )
    start = plan(model, cluster(node, n_gpus), **layout)  # refuses a bad starting layout
    controls = _parallel_controls(model, node, n_gpus, tp, pp, zero, recompute)
    fig, ax = _figure()
    fig.subplots_adjust(left=0.2)

    def recompute_view() -> None:
        v = {k: c.value for k, c in controls.items()}
        ax.clear()
        try:
            p = _layout_plan(v, global_batch, seq_len)
        except (ValueError, TypeError) as err:
            ax.set_title("layout refused", fontsize=9)
            explorer.show_error(str(err))
            return
        _draw_roofs(ax, p, v)
        explorer.result = p
        explorer.readout.value = _parallel_readout(p, global_batch, seq_len)

    def site_state() -> dict[str, object]:
        return {k: c.value for k, c in controls.items()} | {"global_batch": global_batch, "seq_len": seq_len}

    explorer = Explorer(
        controls,
        fig,
        recompute_view,
        title="Parallelism planner",
        site_mode="parallel",
        site_state=site_state,
    )
    explorer.result = start
    explorer.update()
    return explorer
