"""The parallelism planner as an ipywidgets explorer: pick a model, a cluster and a layout.

:func:`parallel_explorer` returns a :class:`~roofline_lib.present.widgets.Explorer` whose figure draws the
step's roofs (compute with its bubble, HBM, and each parallel dimension's communication) as bars,
the binding one in red, and the memory per GPU beside the GPU's capacity. Every number comes from
:func:`roofline_lib.workloads.parallel.plan`; the explorer only arranges it.
"""

from __future__ import annotations

import ipywidgets as w

from ..core.formatting import num as _fmt
from ..core.interconnect import node_registry
from ..models.transformer import model_config, shipped_models
from ..workloads.parallel import cluster, plan
from .widgets import Explorer, _error, _figure, _powers_of_two_slider

__all__ = ["parallel_explorer"]

_GIB = 2**30  # bytes -> GiB at the edge
_ROOF_ORDER = ("compute", "hbm", "tp", "cp", "dp", "ep", "pp")


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
    start = plan(
        model,
        cluster(node, n_gpus),
        dp=n_gpus // (tp * pp),
        tp=tp,
        pp=pp,
        zero=zero,
        global_batch=global_batch,
        seq_len=seq_len,
        recompute=recompute,
    )  # refuses a bad starting layout
    controls = {
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
    fig, ax = _figure()
    fig.subplots_adjust(left=0.2)
    explorer = None

    def recompute_view() -> None:
        v = {k: c.value for k, c in controls.items()}
        ax.clear()
        try:
            if v["n_gpus"] % (v["tp"] * v["pp"]):
                raise ValueError(f"tp x pp = {v['tp'] * v['pp']} GPUs must divide n_gpus = {v['n_gpus']} GPUs")
            dp = v["n_gpus"] // (v["tp"] * v["pp"])
            batch = max(global_batch, dp) // dp * dp
            p = plan(
                v["model"],
                cluster(v["node"], v["n_gpus"]),
                dp=dp,
                tp=v["tp"],
                pp=v["pp"],
                zero=v["zero"],
                global_batch=batch,
                seq_len=seq_len,
                recompute=v["recompute"],
            )
        except (ValueError, TypeError) as err:
            ax.set_title("layout refused", fontsize=9)
            explorer.result = None
            explorer.readout.value = _error(str(err))
            return
        names = [n for n in _ROOF_ORDER if n in p.roofs]
        seconds = [p.roofs[n] for n in names]
        colors = ["C3" if n == p.binding else "C0" for n in names]
        ax.barh(names, seconds, color=colors)
        ax.invert_yaxis()
        ax.set_xlabel("seconds per step (each roof on its own)")
        ax.set_title(
            f"{p.model}, {v['n_gpus']} GPUs: dp={dp} tp={v['tp']} pp={v['pp']} ZeRO-{v['zero']}; "
            f"memory {p.memory.total / _GIB:.0f} of {p.memory.capacity / _GIB:.0f} GiB",
            fontsize=8,
        )
        explorer.result = p
        fit = "fits" if p.fits else "<b>does not fit</b>"
        explorer.readout.value = (
            f"<b>{p.binding}</b> binds: step &ge; <b>{_fmt(p.step_seconds)} s</b> "
            f"({_fmt(p.serial_seconds)} s if nothing overlaps), MFU at most <b>{p.mfu:.0%}</b>. "
            f"Memory per GPU {_fmt(p.memory.total / _GIB)} GiB (state {_fmt(p.memory.state / _GIB)}, "
            f"activations {_fmt(p.memory.activations / _GIB)}): {fit}."
        )

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
