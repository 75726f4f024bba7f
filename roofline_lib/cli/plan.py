"""``roofline plan MODEL --gpus N``: the training planner from a terminal, the fit first.

With no layout flags every layout of the cluster is priced (:func:`~roofline_lib.workloads.layout_search.fit_layouts`)
and the fastest that fit are listed; when none fits, the fewest GPUs of the node on which one does.
With ``--dp``/``--tp``/``--pp``/... one layout is priced (:func:`~roofline_lib.workloads.parallel.plan`).
"""

from __future__ import annotations

import json

from ._common import EXIT_OK, Once, UsageError, output_path, subcommand, transformer_model

ORDER = 45  # its place in ``roofline --help``

_LAYOUT_FLAGS = ("dp", "tp", "pp", "ep", "cp", "virtual_stages")
_PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def add(sub) -> None:
    p = subcommand(sub, "plan", "price a training step's layouts on a cluster: fits or not, step, memory, MFU bound")
    p.add_argument("model", metavar="MODEL", help="a shipped model (llama-3-70b) or a Hugging Face config.json")
    p.add_argument(
        "--gpus", type=int, required=True, action=Once, help="GPUs in the cluster: part of a node or whole nodes"
    )
    p.add_argument("--node", default="8x-h100", action=Once, help="a registry node such as 8x-h100 (default)")
    p.add_argument("--global-batch", type=int, required=True, action=Once, help="sequences per step")
    p.add_argument("--seq-len", type=int, required=True, action=Once, help="tokens per sequence")
    p.add_argument("--micro-batch", type=int, default=1, action=Once, help="sequences per micro-batch (default 1)")
    for flag in _LAYOUT_FLAGS:
        p.add_argument(f"--{flag.replace('_', '-')}", type=int, action=Once, help=f"{flag}: price this one layout")
    p.add_argument("--zero", type=int, action=Once, help="ZeRO stage 0-3 (default: the layout search tries all)")
    p.add_argument("--recompute", action=Once, help="none, selective or full (default: the search tries all)")
    p.add_argument(
        "--overlap", default="dp,cp,pp", action=Once, help="dimensions whose traffic may hide (default dp,cp,pp)"
    )
    p.add_argument("--optimizer", default="adam", action=Once, help="adam (default), sgd_momentum or sgd")
    p.add_argument("--precision", default="mixed", action=Once, help="mixed (default), bf16 or fp32 training state")
    p.add_argument("--top", type=int, default=5, action=Once, help="layouts listed (default 5)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--plot", action=Once, metavar="FILE", help="draw memory per GPU by part (.png, .svg or .pdf)")
    p.set_defaults(run=run)


def _flag_of(message: str) -> str:
    """The command-line flag for the library parameter a message starts with."""
    first = message.split()[0] if message else ""
    flags = {
        "n_gpus": "--gpus",
        "global_batch": "--global-batch",
        "seq_len": "--seq-len",
        "micro_batch": "--micro-batch",
        "virtual_stages": "--virtual-stages",
        "overlap": "--overlap",
        "recompute": "--recompute",
        "optimizer": "--optimizer",
        "precision": "--precision",
        "stage": "--zero",
        "zero": "--zero",
        "model": "MODEL",
    }
    if message.startswith("dp x tp x pp x cp"):
        return f"--dp/--tp/--pp/--cp: {message}"
    flag = flags.get(first) or (f"--{first}" if first in ("dp", "tp", "pp", "ep", "cp") else None)
    return f"{flag}: {message}" if flag else message


def _row(p) -> dict:
    """One layout as --json writes it: its fit first, then time, memory per GPU and the MFU bound (SI units)."""
    m = p.memory
    return {
        "feasible": p.feasible,
        "fit": p.fit.headline,
        "layout": p.layout | {"recompute": p.recompute},
        "step_seconds": p.step_seconds,
        "serial_seconds": p.serial_seconds,
        "binding": p.binding,
        "mfu_bound": p.mfu,
        "assumption": p.assumption,
        "memory_per_gpu_bytes": {
            "weights": m.weights,
            "gradients": m.gradients,
            "optimizer": m.optimizer,
            "activations": m.activations,
            "total": m.total,
            "capacity": m.capacity,
        },
    }


def _layout_text(p) -> str:
    ranks = " ".join(f"{k}={v}" for k, v in p.layout.items() if v != 1 or k in ("dp", "zero"))
    return f"{ranks} {p.recompute}"


def _table(plans) -> list[str]:
    """Rows a person reads: the fit first, then the layout, the step, what binds, MFU bound, memory per GPU."""
    from ..core.formatting import memory_size, seconds

    head = f"  {'fit':<13} {'layout':<36} {'step >=':>9} {'binds':<16} {'MFU <=':>7} {'memory per GPU':>20}"
    lines = [head]
    for p in plans:
        fit = "fits" if p.feasible else "DOES NOT FIT"
        mem = f"{memory_size(p.memory.total)} / {memory_size(p.memory.capacity)}"
        lines.append(
            f"  {fit:<13} {_layout_text(p):<36} {seconds(p.step_seconds):>9} {p.binding:<16} {p.mfu:>7.1%} {mem:>20}"
        )
    return lines


def _plot(path, plans, title: str) -> None:
    """Memory per GPU of each listed layout, by part, against the GPU's capacity."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 0.5 + 0.45 * max(len(plans), 1)), dpi=100)
    ax = fig.add_subplot()
    labels = [_layout_text(p) for p in plans]
    left = [0.0] * len(plans)
    for part, colour in (("weights", "C0"), ("gradients", "C1"), ("optimizer", "C2"), ("activations", "C4")):
        widths = [getattr(p.memory, part) / 2**30 for p in plans]
        ax.barh(labels, widths, left=left, color=colour, label=part)
        left = [a + b for a, b in zip(left, widths)]
    if plans:
        ax.axvline(plans[0].memory.capacity / 2**30, color="C3", ls="--", label="the GPU's memory")
    ax.invert_yaxis()
    ax.set_xlabel("GiB per GPU")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)


def _options(args) -> dict:
    overlap = tuple(d.strip() for d in args.overlap.split(",") if d.strip())
    return dict(
        global_batch=args.global_batch,
        seq_len=args.seq_len,
        micro_batch=args.micro_batch,
        optimizer=args.optimizer,
        precision=args.precision,
        overlap=overlap,
    )


def _distinct(plans) -> list:
    """Layouts that differ in what a reader sees (ZeRO changes nothing at dp = 1): the first of each."""
    seen, out = set(), []
    for p in plans:
        key = (round(p.step_seconds, 12), round(p.memory.total), p.layout["tp"], p.layout["pp"], p.layout["dp"])
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def _priced(args, cfg, c):
    """One layout (a layout flag given) or the search; returns (headline, plans to list, what would fit, JSON)."""
    from ..workloads.layout_search import fit_layouts
    from ..workloads.parallel import plan

    options = _options(args)
    if any(getattr(args, f) is not None for f in _LAYOUT_FLAGS):
        layout = {f: getattr(args, f) for f in _LAYOUT_FLAGS if getattr(args, f) is not None}
        layout.setdefault("dp", c.n_gpus // (layout.get("tp", 1) * layout.get("pp", 1) * layout.get("cp", 1)) or 1)
        extra = {"zero": args.zero if args.zero is not None else 0, "recompute": args.recompute or "selective"}
        p = plan(cfg, c, **layout, **extra, **options)
        out = {"search": False, "feasible": p.feasible, "fit": p.fit.headline, "plans": [_row(p)]}
        return p.fit.headline, [p], None, out
    extra = {k: v for k, v in (("zero", args.zero), ("recompute", args.recompute)) if v is not None}
    found = fit_layouts(cfg, c, **extra, **options)
    shown = list(found.plans[: args.top]) or _distinct(found.infeasible)[: args.top]  # else the least memory first
    out = {
        "search": True,
        "feasible": found.feasible,
        "fit": found.headline,
        "layouts_priced": len(found.plans) + len(found.infeasible),
        "layouts_that_fit": len(found.plans),
        "fewest_gpus": found.fewest_gpus,
        "would_fit": None if found.fewest is None else _row(found.fewest),
        "plans": [_row(p) for p in shown],
    }
    return found.headline, shown, found.fewest, out


def run(args) -> int:
    from ..workloads.parallel import cluster

    plot = output_path(args.plot, "--plot", _PLOT_SUFFIXES)
    if args.top < 1:
        raise UsageError(f"--top: top must be a whole number of layouts of at least 1, got {args.top}")
    cfg = transformer_model(args.model, "the planner")
    try:
        c = cluster(args.node, args.gpus)
    except (TypeError, ValueError) as exc:
        raise UsageError(_flag_of(str(exc)) if str(exc).startswith("n_gpus") else f"--node: {exc}") from exc
    try:
        headline, shown, would_fit, out = _priced(args, cfg, c)
    except (TypeError, ValueError) as exc:
        raise UsageError(_flag_of(str(exc))) from exc
    out = {"model": cfg.name, "cluster": str(c), **out}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(headline)
        print(f"{cfg.name} on {c}: {args.global_batch:,} sequences of {args.seq_len:,} tokens a step")
        print("\n".join(_table(shown)))
        if would_fit is not None:
            print(f"what would fit: {would_fit.cluster}")
            print("\n".join(_table([would_fit])[1:]))
        if shown:
            print(f"  the MFU bound {shown[0].assumption}")
    if plot is not None:
        _plot(plot, shown + ([would_fit] if would_fit is not None else []), f"{cfg.name} on {c}: memory per GPU")
    return EXIT_OK
