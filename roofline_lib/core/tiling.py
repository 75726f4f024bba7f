"""A GEMM cut into output tiles, as a GPU runs it: strip traffic, L2 reuse, waves, padding.

:func:`roofline_lib.core.ops.gemm_bytes` counts the ideal schedule, every operand crossing HBM once.
A GPU kernel instead computes ``C[m x n]`` in tiles of ``tile_m x tile_n``, one tile per thread
block, and each tile reads a *strip* of each input: the ``tile_m x k`` rows of A and the
``k x tile_n`` columns of B it needs. The functions here count what that schedule costs, from
no cache at all (:func:`tiled_gemm_bytes`) to strips shared through L2 by the tiles resident at
once (:func:`wave_traffic`); how many of those there are and how evenly they fill the SMs
(:func:`gemm_waves`); and the work a tensor core does on the padding of a dimension its fixed
fragment shape does not divide (:func:`padded_gemm_flops`).

Conventions as in :mod:`roofline_lib.core.ops`: 1 multiply-accumulate = 2 FLOP, bytes are HBM bytes,
``bytes_per_elem`` is the storage size of one element. The grid of tiles has
``ceil(m / tile_m)`` rows and ``ceil(n / tile_n)`` columns; an edge tile that overhangs C still
takes a whole block.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ops
from .checks import _positive, _positive_int
from .hardware import GPUSpec, as_gpu

__all__ = [
    "tiled_gemm_bytes",
    "GemmWaves",
    "gemm_waves",
    "WaveTraffic",
    "wave_traffic",
    "pad_to_multiple",
    "padded_gemm_flops",
]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _whole(x: float) -> float:
    """A byte count as an int when it is whole (as :mod:`ops` returns them)."""
    return int(x) if float(x).is_integer() else x


def _shape(m, n, k=None) -> tuple[int, int, int | None]:
    m = _positive_int(m, "m", "rows")
    n = _positive_int(n, "n", "columns")
    k = None if k is None else _positive_int(k, "k", "elements (inner dimension)")
    return m, n, k


def _tile(tile_m, tile_n) -> tuple[int, int]:
    return (
        _positive_int(tile_m, "tile_m", "rows of C per tile"),
        _positive_int(tile_n, "tile_n", "columns of C per tile"),
    )


def _sm_count(spec: GPUSpec) -> int:
    if spec.sm_count is None:
        raise ValueError(f"gpu {spec.name!r} has no sm_count, so its waves cannot be counted")
    return spec.sm_count


def tiled_gemm_bytes(m, n, k, tile_m, tile_n, bytes_per_elem=2) -> float:
    """HBM bytes of ``C[m x n] = A[m x k] @ B[k x n]`` when every output tile reads its own strips.

    Each ``tile_m x tile_n`` tile of C streams its strip of A and its strip of B from HBM and
    writes itself once; nothing is shared between tiles (no cache). A row of A is then read once
    per column of tiles, ``ceil(n / tile_n)`` times, and a column of B once per row of tiles:

        bytes = b * (m*k * ceil(n / tile_n) + k*n * ceil(m / tile_m) + m*n)

    that is, :func:`~roofline_lib.core.ops.gemm_bytes` (the ideal count) plus the re-reads. A tile as
    large as C re-reads nothing and gives the ideal count.
    """
    m, n, k = _shape(m, n, k)
    tile_m, tile_n = _tile(tile_m, tile_n)
    b = _positive(bytes_per_elem, "bytes_per_elem", "bytes per element")
    ideal = ops.gemm_bytes(m, n, k, b)  # read A, read B, write C, once each
    re_reads = m * k * (_ceil_div(n, tile_n) - 1) + k * n * (_ceil_div(m, tile_m) - 1)  # elements
    return _whole(ideal + re_reads * b)


@dataclass(frozen=True)
class GemmWaves:
    """How a GEMM's output tiles fill the SMs (see :func:`gemm_waves`)."""

    tiles: int  # ceil(m / tile_m) * ceil(n / tile_n) thread blocks
    slots: int  # blocks resident at once: SMs x blocks per SM
    waves: int  # ceil(tiles / slots)
    efficiency: float  # tiles / (waves * slots): the share of SM time the waves keep busy


def gemm_waves(m, n, tile_m, tile_n, gpu, blocks_per_sm) -> GemmWaves:
    """Tiles, waves and wave efficiency of a GEMM's ``tile_m x tile_n`` output tiles on ``gpu``.

    ``gpu.sm_count * blocks_per_sm`` tiles run at once (the slots); the rest wait, so the tiles
    run in ``ceil(tiles / slots)`` waves and the last, partial wave leaves SMs idle ("wave
    quantisation"). Efficiency is ``tiles / (waves * slots)``: 1 when the tiles fill every wave,
    and it assumes every tile takes the same time. ``k`` does not enter: it sets how long a tile
    takes, not how many there are. ``blocks_per_sm`` is the kernel's occupancy in thread blocks,
    set by its registers and shared memory; there is no default (one per SM is common for the
    large tiles of a tensor-core GEMM).
    """
    m, n, _ = _shape(m, n)
    tile_m, tile_n = _tile(tile_m, tile_n)
    spec = as_gpu(gpu)
    blocks_per_sm = _positive_int(blocks_per_sm, "blocks_per_sm", "thread blocks per SM")
    tiles = _ceil_div(m, tile_m) * _ceil_div(n, tile_n)
    slots = _sm_count(spec) * blocks_per_sm
    waves = _ceil_div(tiles, slots)
    return GemmWaves(tiles=tiles, slots=slots, waves=waves, efficiency=tiles / (waves * slots))


@dataclass(frozen=True)
class WaveTraffic:
    """The strips one wave of resident tiles reads, and the HBM traffic if L2 shares them."""

    tiles_in_wave: int  # tiles of the first wave: min(slots, tiles)
    row_strips: int  # distinct rows of tiles it touches: strips of A, tile_m x k each
    col_strips: int  # distinct columns of tiles it touches: strips of B, k x tile_n each
    working_set_bytes: float  # those strips, whole
    l2_bytes: float  # the GPU's L2
    fits_l2: bool  # working_set_bytes <= l2_bytes
    waves: int  # waves of the whole GEMM (gemm_waves)
    hbm_bytes: float  # every wave reads its strips from HBM once, writes of C once


def wave_traffic(m, n, k, tile_m, tile_n, gpu, blocks_per_sm, group_m, bytes_per_elem=2) -> WaveTraffic:
    """What the first wave of a GEMM's tiles reads, and the HBM bytes if L2 serves every re-read.

    The tiles resident at once (one wave, :func:`gemm_waves`) read strips of A and B; a strip two
    of them share need cross HBM only once if L2 holds it until both have read it. How many
    distinct strips a wave touches depends on the order the tiles are launched in:

    * ``group_m=1``: row-major, tile ``p`` at row ``p // cols``, column ``p % cols``; a wave
      spans a row or two of tiles and nearly every column;
    * ``group_m=G``: Triton's grouped order (its matrix-multiplication tutorial,
      ``GROUP_SIZE_M``): tiles go down ``G`` rows before moving one column right, so a wave
      covers a block about ``G`` rows high.

    ``working_set_bytes`` counts the first wave's strips whole, an upper bound on what L2 must
    hold (blocks that march through ``k`` in step need only a slab of it at a time); ``fits_l2``
    compares it with the registry's ``l2_bytes``. ``hbm_bytes`` takes every wave to read as many
    strips as the first, each once, plus one write of C: the traffic with L2 serving every
    re-read within a wave and none across waves. It is clamped between the ideal count
    (:func:`~roofline_lib.core.ops.gemm_bytes`) and the no-cache count (:func:`tiled_gemm_bytes`),
    and it is an estimate: a wave that straddles two groups touches more strips than the first.
    """
    m, n, k = _shape(m, n, k)
    tile_m, tile_n = _tile(tile_m, tile_n)
    group_m = _positive_int(group_m, "group_m", "rows of tiles per group (1 for row-major)")
    b = _positive(bytes_per_elem, "bytes_per_elem", "bytes per element")
    spec = as_gpu(gpu)
    if spec.l2_bytes is None:
        raise ValueError(f"gpu {spec.name!r} has no l2_bytes, so its L2 reuse cannot be judged")
    waves = gemm_waves(m, n, tile_m, tile_n, spec, blocks_per_sm)
    grid_m, grid_n = _ceil_div(m, tile_m), _ceil_div(n, tile_n)
    in_wave = min(waves.slots, waves.tiles)
    # the first wave: whole groups of group_m rows x every column, then part of the next group,
    # which it fills a column (of up to group_m tiles) at a time
    per_group = group_m * grid_n
    full_groups, rest = divmod(in_wave, per_group)
    rows = full_groups * group_m
    cols = grid_n if full_groups else 0
    if rest:
        rows_in_group = min(grid_m - full_groups * group_m, group_m)
        rows += min(rest, rows_in_group)
        cols = max(cols, _ceil_div(rest, rows_in_group))
    a_bytes = min(rows * tile_m, m) * k * b  # the wave's strips of A ...
    b_bytes = min(cols * tile_n, n) * k * b  # ... and of B
    working_set = a_bytes + b_bytes
    c_bytes = m * n * b  # C written once
    estimate = waves.waves * working_set + c_bytes
    ideal = ops.gemm_bytes(m, n, k, b)
    no_cache = tiled_gemm_bytes(m, n, k, tile_m, tile_n, b)
    return WaveTraffic(
        tiles_in_wave=in_wave,
        row_strips=rows,
        col_strips=cols,
        working_set_bytes=_whole(working_set),
        l2_bytes=spec.l2_bytes,
        fits_l2=working_set <= spec.l2_bytes,
        waves=waves.waves,
        hbm_bytes=_whole(max(ideal, min(estimate, no_cache))),
    )


def pad_to_multiple(dim, multiple) -> int:
    """``dim`` rounded up to a multiple of ``multiple``: ``ceil(dim / multiple) * multiple``.

    A tensor-core instruction works on fixed fragment shapes (``mma.m16n8k16`` for bf16 on an
    A100: 16 rows, 8 columns, 16 deep), and a kernel's tiles on multiples of them, so a
    dimension they do not divide is computed as if padded to this size.
    """
    dim = _positive_int(dim, "dim", "elements")
    multiple = _positive_int(multiple, "multiple", "elements")
    return _ceil_div(dim, multiple) * multiple


def padded_gemm_flops(m, n, k, tile_m, tile_n, tile_k) -> int:
    """FLOPs a GEMM costs when each dimension is padded to its tile: ``2 * M * N * K``.

    ``M = pad_to_multiple(m, tile_m)`` and likewise for ``n`` and ``k``. Divide by
    :func:`~roofline_lib.core.ops.gemm_flops` for the waste: padded FLOPs per useful FLOP.
    """
    m, n, k = _shape(m, n, k)
    tile_m, tile_n = _tile(tile_m, tile_n)
    tile_k = _positive_int(tile_k, "tile_k", "elements of k per tile")
    return ops.gemm_flops(pad_to_multiple(m, tile_m), pad_to_multiple(n, tile_n), pad_to_multiple(k, tile_k))
