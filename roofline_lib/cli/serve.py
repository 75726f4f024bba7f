"""``roofline serve MODEL --gpu G --ttft MS --tpot MS``: the serving model from a terminal, the fit first.

Each batching policy's steady-state frontier (:func:`~roofline_lib.workloads.serving.steady_frontier`: every
batch the paged KV cache holds) is cut by the SLO, and the best point printed: its batch, TTFT, TPOT
and output tokens per second per GPU, with its joules per output token
(:func:`~roofline_lib.workloads.energy.request_energy`) and dollars per million output tokens at the
registry's dated GPU-hour price (or ``--price``). A model whose weights and one request do not fit
says so first.
"""

from __future__ import annotations

import json

from ._common import EXIT_OK, Once, UsageError, gpu_hour_price, output_path, registry_gpu, subcommand, transformer_model

ORDER = 46  # its place in ``roofline --help``, after plan

_PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def add(sub) -> None:
    p = subcommand(sub, "serve", "serve a model on one GPU under a TTFT/TPOT objective: fits or not, best batch")
    p.add_argument("model", metavar="MODEL", help="a shipped model (llama-3-8b) or a Hugging Face config.json")
    p.add_argument("--gpu", required=True, action=Once, help="a registry GPU such as H100 (see 'roofline gpus')")
    p.add_argument("--ttft", type=float, required=True, action=Once, help="the TTFT objective in milliseconds")
    p.add_argument("--tpot", type=float, required=True, action=Once, help="the TPOT objective in milliseconds")
    p.add_argument("--prompt-len", type=int, default=1024, action=Once, help="prompt tokens per request (default 1024)")
    p.add_argument("--output-len", type=int, default=256, action=Once, help="output tokens per request (default 256)")
    p.add_argument(
        "--policy", default="all", action=Once, help="static, continuous, chunked, disaggregated, or all (default)"
    )
    p.add_argument("--chunk-tokens", type=int, default=2048, action=Once, help="chunked prefill's token budget a step")
    p.add_argument("--bytes-per-param", type=float, default=2, action=Once, help="weight width (default 2: bf16)")
    p.add_argument("--kv-bytes", type=float, action=Once, help="KV-cache element width (default: the weights')")
    p.add_argument("--price", type=float, action=Once, help="US dollars per GPU-hour (default: the registry's)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--plot", action=Once, metavar="FILE", help="draw the frontiers and the SLO (.png, .svg or .pdf)")
    p.set_defaults(run=run)


def _flag_of(message: str) -> str:
    flags = {
        "ttft_s": "--ttft",
        "tpot_s": "--tpot",
        "prompt_len": "--prompt-len",
        "output_len": "--output-len",
        "chunk_tokens": "--chunk-tokens",
        "bytes_per_param": "--bytes-per-param",
        "kv_bytes_per_elem": "--kv-bytes",
        "policy": "--policy",
        "dollars_per_hour": "--price",
        "hardware": "--gpu",
        "cfg": "MODEL",
    }
    first = message.split()[0] if message else ""
    return f"{flags[first]}: {message}" if first in flags else message


def _point(p, money: dict) -> dict:
    return {
        "policy": p.policy,
        "batch": p.batch,
        "ttft_seconds": p.ttft_s,
        "tpot_seconds": p.tpot_s,
        "tokens_per_s_per_gpu": p.tokens_per_s,
        "decode_bound": p.decode_bound,
        "devices": p.devices,
        "fit": p.fit.headline,
        **money,
    }


def _price(price_arg, gpu) -> dict:
    """The GPU-hour price the table uses (:func:`._common.gpu_hour_price`), its detail in its source."""
    price = gpu_hour_price(price_arg, gpu)
    detail = price.pop("detail")
    if detail:
        price["source"] = f"{price['source']} ({detail})"
    return price


def _money(server, point, request: dict, price: dict) -> dict:
    """Joules per output token of a best point and its dollars per million output tokens (None without a price
    or power figures)."""
    from ..workloads.energy import request_energy
    from ..workloads.energy_cost import cost_per_million_tokens

    try:
        joules = request_energy(server, point.batch, request["prompt_len"], request["output_len"]).joules_per_token
    except ValueError:  # a GPU without power figures
        joules = None
    dollars = price["dollars_per_gpu_hour"]
    cost = None if dollars is None else cost_per_million_tokens(point.tokens_per_s, dollars)
    return {"joules_per_output_token": joules, "dollars_per_million_tokens": cost}


def _best_of(server, policies, request: dict, ttft_s: float, tpot_s: float):
    """Each policy's frontier and its best point under the SLO (or the reason there is none)."""
    from ..workloads import serving

    curves, best = {}, {}
    for k in policies:
        curves[k] = serving.steady_frontier(
            server, k, request["prompt_len"], request["output_len"], chunk_tokens=request["chunk_tokens"]
        )
        try:
            best[k] = serving.best_steady_state(curves[k], ttft_s, tpot_s)
        except ValueError as exc:
            best[k] = str(exc)
    return curves, best


def _plot(path, curves: dict, best: dict, tpot_s: float, title: str) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 3.6), dpi=100)
    ax = fig.add_subplot()
    for i, (k, points) in enumerate(curves.items()):
        ok = [p for p in points if p.feasible and p.sustainable]
        ax.plot([p.tpot_s * 1e3 for p in ok], [p.tokens_per_s for p in ok], "-", color=f"C{i}", lw=1, label=k)
        if not isinstance(best[k], str):
            ax.plot([best[k].tpot_s * 1e3], [best[k].tokens_per_s], "o", ms=9, mfc="none", color=f"C{i}")
    ax.axvline(tpot_s * 1e3, ls="--", color="0.4", lw=1, label="TPOT objective")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("TPOT (ms)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


def _print_point(policy: str, point, row: dict) -> None:
    from ..core.formatting import energy_text, seconds

    joules, cost = row["joules_per_output_token"], row["dollars_per_million_tokens"]
    print(
        f"  {policy:<14} {point.batch:>6} {seconds(point.ttft_s):>9} {seconds(point.tpot_s):>9} "
        f"{point.tokens_per_s:>17,.0f} {'-' if joules is None else energy_text(joules):>9} "
        f"{'-' if cost is None else f'{cost:.3g}':>10}  {point.decode_bound}-bound"
    )


def _print_price(price: dict) -> None:
    dollars = price["dollars_per_gpu_hour"]
    if dollars is None:
        print(f"  $/M tokens: {price['source']}")
    else:
        when = "" if price["date"] is None else f", {price['date']}"
        print(
            f"  $/M tokens at ${dollars:.4g} per GPU-hour ({price['source']}{when}); J/token per output token, prefill included"
        )


def _print_power_note(gpu) -> None:
    """Why J/token is blank: the GPU has no power figures in the registry."""
    from ..workloads.energy import power_spec

    try:
        power_spec(gpu)
    except ValueError as exc:
        print(f"  J/token: {exc}")


def run(args) -> int:
    from ..core.checks import _positive
    from ..core.formatting import seconds
    from ..workloads import serving

    plot = output_path(args.plot, "--plot", _PLOT_SUFFIXES)
    try:
        ttft_s = _positive(args.ttft, "ttft_s", "milliseconds") / 1e3
        tpot_s = _positive(args.tpot, "tpot_s", "milliseconds") / 1e3
    except (TypeError, ValueError) as exc:
        raise UsageError(_flag_of(str(exc))) from exc
    policies = serving.POLICIES if args.policy == "all" else (args.policy,)
    if args.policy != "all" and args.policy not in serving.POLICIES:
        raise UsageError(f"--policy: policy must be all or one of {', '.join(serving.POLICIES)}, got {args.policy!r}")
    cfg = transformer_model(args.model, "the serving model")
    gpu = registry_gpu(args.gpu)
    request = {"prompt_len": args.prompt_len, "output_len": args.output_len, "chunk_tokens": args.chunk_tokens}
    try:
        price = _price(args.price, gpu)
        server = serving.serving_server(cfg, gpu, bytes_per_param=args.bytes_per_param, kv_bytes_per_elem=args.kv_bytes)
        capacity = serving.kv_capacity(server, args.prompt_len, args.output_len)
        curves, best = _best_of(server, policies, request, ttft_s, tpot_s)
    except (TypeError, ValueError) as exc:
        raise UsageError(_flag_of(str(exc))) from exc
    out = {
        "model": cfg.name,
        "gpu": server.device,
        "feasible": capacity.feasible,
        "fit": capacity.fit.headline,
        "max_requests": capacity.max_requests,
        "request": request,
        "slo": {"ttft_seconds": ttft_s, "tpot_seconds": tpot_s},
        "batches_searched": len(serving.frontier_batches(server, args.prompt_len, args.output_len)),
        "price": price,
        "best": {
            k: (v if isinstance(v, str) else _point(v, _money(server, v, request, price))) for k, v in best.items()
        },
    }
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(capacity.fit.headline)
        print(
            f"{cfg.name} on {server.device}: {args.prompt_len:,} prompt + {args.output_len:,} output tokens a request; "
            f"the paged KV cache holds {capacity.max_requests:,}; SLO TTFT <= {seconds(ttft_s)}, TPOT <= {seconds(tpot_s)}"
        )
        if not capacity.feasible:
            print("  no batch can run, so no policy has a best point")
        else:
            print(
                f"  {'policy':<14} {'batch':>6} {'TTFT':>9} {'TPOT':>9} {'tokens/s per GPU':>17} {'J/token':>9} "
                f"{'$/M tokens':>10}  decode"
            )
        for k, v in best.items() if capacity.feasible else ():
            if isinstance(v, str):
                print(f"  {k:<14} {'-':>6} {'-':>9} {'-':>9} {'-':>17} {'-':>9} {'-':>10}  {v}")
            else:
                _print_point(k, v, out["best"][k])
        if capacity.feasible:
            print(
                f"  every batch 1 to {out['batches_searched']:,} searched (the steady state at the roof, no overheads)"
            )
            _print_price(price)
            _print_power_note(gpu)
    if plot is not None:
        _plot(plot, curves, best, tpot_s, f"{cfg.name} on {server.device}: the frontier under the SLO")
    return EXIT_OK
