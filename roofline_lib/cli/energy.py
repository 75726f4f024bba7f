"""``roofline energy MODEL --gpu G --batch 1,8,64 --context C``: joules, watts, dollars and carbon per token.

One decode step at each batch (:func:`~roofline_lib.workloads.energy.decode_energy`): joules per
token, the GPU's average power, tokens per second, dollars per million tokens at a GPU-hour price
(the registry's dated price, or ``--price``) and kg CO2e per million tokens at the grid intensity
``--grid`` gives (no default: the grid is where the power is drawn). ``--cap`` runs every step
under a power cap. A batch that does not fit says so before any price: the first line names the
smallest such batch and why, and its row begins DOES NOT FIT. A GPU the energy registry lacks (a
B200) is priced from its datasheet's figures, ``--tdp W --idle W --hbm-pj-per-bit PJ``, all three
together (:func:`~roofline_lib.workloads.energy.power_figures`); the table's header says so.
"""

from __future__ import annotations

import json

from ._common import EXIT_OK, Once, UsageError, gpu_hour_price, registry_gpu, subcommand, transformer_model

ORDER = 47  # its place in ``roofline --help``, after serve

_FLAGS = {
    "batch": "--batch",
    "context_len": "--context",
    "cap_watts": "--cap",
    "dollars_per_hour": "--price",
    "grid_g_per_kwh": "--grid",
    "gpu": "--gpu",
    "hardware": "--gpu",
    "bytes_per_param": "--bytes-per-param",
    "tdp_watts": "--tdp",
    "idle_watts": "--idle",
    "hbm_pj_per_bit": "--hbm-pj-per-bit",
    "cfg": "MODEL",
}

#: The power figures a reader may give for a GPU, as (argument, flag and unit); all three or none.
_POWER_FLAGS = (("tdp", "--tdp W"), ("idle", "--idle W"), ("hbm_pj_per_bit", "--hbm-pj-per-bit PJ"))
_BITS_PER_BYTE = 8


def add(sub) -> None:
    p = subcommand(sub, "energy", "a model's decode energy on one GPU: J/token, W, $/M tokens and kg CO2e/M tokens")
    p.add_argument("model", metavar="MODEL", help="a shipped model (llama-3-8b) or a Hugging Face config.json")
    p.add_argument(
        "--gpu",
        required=True,
        action=Once,
        help="a registry GPU, such as H100 (see --tdp for one without power figures)",
    )
    p.add_argument("--batch", required=True, action=Once, help="batches to price, comma-separated: 1,8,64")
    p.add_argument("--context", type=int, required=True, action=Once, help="tokens each sequence attends to")
    p.add_argument("--cap", type=float, action=Once, help="a power cap in watts (default: none)")
    p.add_argument("--price", type=float, action=Once, help="US dollars per GPU-hour (default: the registry's)")
    p.add_argument("--grid", type=float, action=Once, help="grid intensity in g CO2e per kWh (no default)")
    p.add_argument("--bytes-per-param", type=float, default=2, action=Once, help="weight width (default 2: bf16)")
    p.add_argument("--tdp", type=float, action=Once, help="the GPU's TDP in watts (with --idle and --hbm-pj-per-bit)")
    p.add_argument("--idle", type=float, action=Once, help="the GPU's static power in watts, a process holding it idle")
    p.add_argument(
        "--hbm-pj-per-bit", type=float, action=Once, help="the GPU's HBM access energy in picojoules per bit"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.set_defaults(run=run)


def _flag_of(message: str) -> str:
    """``message`` with the flag its first word (a parameter name) stands for put first."""
    first = message.split()[0].split("=")[0] if message else ""
    return f"{_FLAGS[first]}: {message}" if first in _FLAGS else message


def _batches(text: str) -> list[int]:
    """``"1,8,64"`` -> [1, 8, 64]; anything else is a usage error naming --batch and its unit."""
    try:
        batches = [int(part) for part in text.split(",")]
    except ValueError:
        batches = []
    if not batches or any(b < 1 for b in batches):
        raise UsageError(f"--batch: batch must be comma-separated whole numbers of sequences (1 or more), got {text!r}")
    return batches


def _price(args, gpu):
    """(dollars per GPU-hour, where it comes from), or (None, why not): :func:`._common.gpu_hour_price`."""
    price = gpu_hour_price(args.price, gpu)
    if price["date"] is not None:
        return price["dollars_per_gpu_hour"], f"{price['source']}, {price['date']}"
    return price["dollars_per_gpu_hour"], price["source"]


def _power(args, gpu):
    """The GPU's power figures: those given on the command line (all three flags), else the registry's."""
    from ..core.checks import _positive
    from ..core.hardware import registry
    from ..workloads.energy import gpus_with_power, power_figures, power_spec

    missing = [flag for dest, flag in _POWER_FLAGS if getattr(args, dest) is None]
    if len(missing) == len(_POWER_FLAGS):
        if gpu.key not in gpus_with_power():
            have = ", ".join(registry()[k].name for k in gpus_with_power())
            raise UsageError(
                f"--gpu: gpu {gpu.name!r} has no power and energy figures in the registry: give its --tdp W, "
                f"--idle W and --hbm-pj-per-bit PJ (GPUs that have them: {have})"
            )
        return power_spec(gpu)
    if missing:
        given = [flag.split()[0] for dest, flag in _POWER_FLAGS if getattr(args, dest) is not None]
        raise UsageError(
            f"{' and '.join(given)} given without {' and '.join(missing)}: the power figures go together, all three"
        )
    try:
        pj = _positive(args.hbm_pj_per_bit, "hbm_pj_per_bit", "picojoules per bit", allow_zero=True)
        joules_per_byte = pj * 1e-12 * _BITS_PER_BYTE
        return power_figures(gpu, tdp_watts=args.tdp, idle_watts=args.idle, joules_per_hbm_byte=joules_per_byte)
    except (TypeError, ValueError) as exc:
        raise UsageError(_flag_of(str(exc))) from exc


def _row(server, batch: int, context: int, cap, price, grid, power) -> dict:
    """One batch's decode step: energy, power, rate, money and carbon."""
    from ..workloads.energy import decode_energy
    from ..workloads.energy_cost import cost_per_million_tokens, emissions_kg

    e = decode_energy(server, batch, context, cap_watts=cap, power=power)
    tokens_per_s = e.tokens / e.seconds
    return {
        "batch": batch,
        "fit": e.fit.headline,
        "feasible": e.feasible,
        "joules_per_token": e.joules_per_token,
        "average_watts": e.average_watts,
        "tokens_per_s": tokens_per_s,
        "dollars_per_million_tokens": None if price is None else cost_per_million_tokens(tokens_per_s, price),
        "kg_co2e_per_million_tokens": None if grid is None else emissions_kg(e.joules_per_token * 1e6, grid),
        "shares": {
            "flops": e.flop_joules / e.joules,
            "hbm_bytes": e.byte_joules / e.joules,
            "static": e.static_joules / e.joules,
        },
    }


def _setup(args):
    """The server and the checked inputs; every refusal names its flag."""
    from ..core.checks import _positive
    from ..workloads.serving import serving_server

    batches = _batches(args.batch)
    cfg = transformer_model(args.model, "the energy model")
    gpu = registry_gpu(args.gpu)
    power = _power(args, gpu)
    try:
        grid = (
            None
            if args.grid is None
            else _positive(args.grid, "grid_g_per_kwh", "grams of CO2e per kWh", allow_zero=True)
        )
        price, price_source = _price(args, gpu)
        server = serving_server(cfg, gpu, bytes_per_param=args.bytes_per_param)
    except (TypeError, ValueError) as exc:
        raise UsageError(_flag_of(str(exc))) from exc
    return cfg, gpu, power, server, batches, price, price_source, grid


def run(args) -> int:
    from ..core.formatting import energy_text, power_text

    cfg, gpu, power, server, batches, price, price_source, grid = _setup(args)
    try:
        rows = [_row(server, b, args.context, args.cap, price, grid, power) for b in batches]
    except (TypeError, ValueError) as exc:
        raise UsageError(_flag_of(str(exc))) from exc
    out = {
        "model": cfg.name,
        "gpu": gpu.name,
        "context_len": args.context,
        "cap_watts": args.cap,
        "dollars_per_gpu_hour": price,
        "price_source": price_source,
        "grid_g_per_kwh": grid,
        "power": dict(power.sources),
        "power_given": args.tdp is not None,  # the figures came from --tdp, --idle and --hbm-pj-per-bit
        "rows": rows,
    }
    if args.json:
        print(json.dumps(out, indent=1))
        return EXIT_OK
    unfit = [r for r in rows if not r["feasible"]]
    if unfit:  # what cannot run says so before any price: the smallest batch that does not fit, and why
        others = f" (and {len(unfit) - 1} larger batch{'es' if len(unfit) > 2 else ''})" if len(unfit) > 1 else ""
        print(f"batch {unfit[0]['batch']:,}{others}: {unfit[0]['fit']}")
    cap = "" if args.cap is None else f", under a {power_text(args.cap)} cap"
    print(
        f"{cfg.name} on the {gpu.name}, decode at {args.context:,} tokens of context{cap} (at the roof, no overheads)"
    )
    if args.tdp is not None:
        print(
            f"  power figures given on the command line: TDP {power_text(power.tdp_watts)}, idle "
            f"{power_text(power.idle_watts)}, HBM {args.hbm_pj_per_bit:g} pJ/bit (joules per FLOP derived from the TDP)"
        )
    print(
        f"  {'fit':<12} {'batch':>6} {'J/token':>9} {'power':>8} {'tokens/s':>10} {'$/M tokens':>11} {'kg CO2e/M':>10}"
    )
    for r in rows:
        money = "-" if r["dollars_per_million_tokens"] is None else f"{r['dollars_per_million_tokens']:.3g}"
        carbon = "-" if r["kg_co2e_per_million_tokens"] is None else f"{r['kg_co2e_per_million_tokens']:.3g}"
        print(
            f"  {'fits' if r['feasible'] else 'DOES NOT FIT':<12} {r['batch']:>6} {energy_text(r['joules_per_token']):>9} "
            f"{power_text(r['average_watts']):>8} {r['tokens_per_s']:>10,.0f} {money:>11} {carbon:>10}"
        )
    print(f"  price: {'-' if price is None else f'${price:.4g} per GPU-hour'} ({price_source})")
    print(
        "  carbon: "
        + ("give --grid (g CO2e per kWh) for kg CO2e" if grid is None else f"{grid:g} g CO2e per kWh (--grid)")
    )
    return EXIT_OK
