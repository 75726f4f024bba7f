"""``roofline gpus``: the GPU registry as a table."""

from __future__ import annotations

from ._common import EXIT_OK, subcommand

ORDER = 10  # its place in ``roofline --help``


def add(sub) -> None:
    p = subcommand(sub, "gpus", "list the GPU registry (dense datasheet peaks)")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..core.formatting import to_unit
    from ..core.hardware import registry
    from ..core.roofline import ridge_point

    header = ("key", "name", "memory", "HBM TB/s", "capacity GiB", "bf16 TFLOP/s", "fp8 TFLOP/s", "bf16 ridge FLOP/B")
    rows = []
    for key, spec in registry().items():
        rows.append(
            (
                key,
                spec.name,
                spec.memory_kind,
                f"{to_unit(spec.hbm_bytes_per_s, 'TB/s'):.3g}",
                f"{to_unit(spec.hbm_capacity_bytes, 'GiB'):.0f}",  # the "80 GB" a datasheet prints
                f"{to_unit(spec.peak_flops_per_s('bf16'), 'TFLOP/s'):.1f}" if spec.has("bf16") else "-",
                f"{to_unit(spec.peak_flops_per_s('fp8'), 'TFLOP/s'):.1f}" if spec.has("fp8") else "-",
                f"{ridge_point(spec, 'bf16'):.0f}" if spec.has("bf16") else "-",
            )
        )
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    numeric = {3, 4, 5, 6, 7}

    def line(row):
        cells = [str(c).rjust(w) if i in numeric else str(c).ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        return "  ".join(cells).rstrip()

    print(line(header))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))
    print("Dense (non-sparse) datasheet peaks. Ridge = bf16 peak / HBM bandwidth.")
    return EXIT_OK
