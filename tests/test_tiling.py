"""A GEMM in output tiles: strip traffic, L2 reuse by launch order, waves, tensor-core padding.

Shapes small enough to count by hand, with the count beside each assertion; then the published
numbers the chapter leans on (Triton's tutorial, nanoGPT's vocabulary) and the refusals.
"""

from __future__ import annotations

import dataclasses

import pytest

import roofline_lib as rl


def _chip(sm_count=4, l2_bytes=1e6):
    """An H100 with as many SMs and as much L2 as a hand count wants."""
    return dataclasses.replace(rl.gpu("H100"), sm_count=sm_count, l2_bytes=l2_bytes)


# --------------------------------------------------------------------------- tiled_gemm_bytes


def test_tiled_bytes_count_each_strip_once_per_tile_that_reads_it():
    # 4 x 4 x 4 at 1 byte, 2 x 2 tiles: a 2 x 2 grid. A (16) read once per column of tiles (2),
    # B (16) once per row of tiles (2), C (16) written once: 32 + 32 + 16 = 80
    assert rl.tiled_gemm_bytes(4, 4, 4, 2, 2, bytes_per_elem=1) == 80
    # the ideal count (48) plus the re-reads: 16 * (2 - 1) of A + 16 * (2 - 1) of B = 32
    assert rl.tiled_gemm_bytes(4, 4, 4, 2, 2, bytes_per_elem=1) == rl.gemm_bytes(4, 4, 4, 1) + 32


def test_tiled_bytes_with_oblong_and_overhanging_tiles():
    # 4 x 6 x 2, 4 x 2 tiles: 1 row x 3 columns of tiles. A (8) x 3 + B (12) x 1 + C (24) = 60
    assert rl.tiled_gemm_bytes(4, 6, 2, 4, 2, bytes_per_elem=1) == 60
    # m = 5 in tiles of 2 rows: ceil(5 / 2) = 3 rows of tiles, the last one overhanging C.
    # 5 x 2 x 2, 2 x 2 tiles: A (10) x 1 + B (4) x 3 + C (10) = 32
    assert rl.tiled_gemm_bytes(5, 2, 2, 2, 2, bytes_per_elem=1) == 32


def test_one_tile_covering_c_is_the_ideal_count():
    assert rl.tiled_gemm_bytes(64, 48, 32, 64, 48) == rl.gemm_bytes(64, 48, 32)  # 2 * (2048 + 1536 + 3072)
    assert rl.tiled_gemm_bytes(64, 48, 32, 1000, 1000) == rl.gemm_bytes(64, 48, 32)  # bigger than C: the same


def test_one_element_tiles_give_no_reuse():
    # T = 1: every multiply-accumulate fetches both operands. bytes = 2 * (2mnk + mn);
    # 4 x 4 x 4: 2 * (128 + 16) = 288 for 128 FLOP, under 0.5 FLOP/byte
    assert rl.tiled_gemm_bytes(4, 4, 4, 1, 1) == 288
    assert rl.gemm_flops(4, 4, 4) / rl.tiled_gemm_bytes(4, 4, 4, 1, 1) == pytest.approx(128 / 288)


def test_tiled_bytes_take_fractional_element_sizes():
    # fp4, half a byte: 80 elements as in the first test -> 40 bytes, an int because it is whole
    assert rl.tiled_gemm_bytes(4, 4, 4, 2, 2, bytes_per_elem=0.5) == 40
    assert isinstance(rl.tiled_gemm_bytes(4, 4, 4, 2, 2, bytes_per_elem=0.5), int)


# --------------------------------------------------------------------------- gemm_waves


def test_waves_on_a_hand_sized_chip():
    # 6 x 6 in 2 x 2 tiles: 3 x 3 = 9 tiles; 4 SMs x 2 blocks = 8 slots; ceil(9 / 8) = 2 waves,
    # the second with one tile: 9 / (2 * 8) of the SM time busy
    w = rl.gemm_waves(6, 6, 2, 2, _chip(sm_count=4), blocks_per_sm=2)
    assert (w.tiles, w.slots, w.waves) == (9, 8, 2)
    assert w.efficiency == 9 / 16


def test_waves_of_the_chapters_h100_gemm():
    # 4096 x 4096 in 128 x 128 tiles: 32 * 32 = 1024 tiles on 132 slots: ceil(7.76) = 8 waves
    w = rl.gemm_waves(4096, 4096, 128, 128, "H100", blocks_per_sm=1)
    assert (w.tiles, w.slots, w.waves) == (1024, 132, 8)
    assert w.efficiency == pytest.approx(1024 / 1056)  # 97.0 %
    # one tile column wider: 32 * 33 = 1056 = 8 * 132, every wave full
    assert rl.gemm_waves(4096, 4224, 128, 128, "H100", 1).efficiency == 1
    # one more: 1088 tiles, 9 waves, the last holding 1088 - 1056 = 32
    assert rl.gemm_waves(4096, 4352, 128, 128, "H100", 1).waves == 9
    # the A100's 108 SMs: the same 1024 tiles take ceil(9.48) = 10 waves
    assert rl.gemm_waves(4096, 4096, 128, 128, "A100", 1).waves == 10


def test_a_chip_without_an_sm_count_is_refused_by_name():
    chip = rl.accelerator("My NPU", {"bf16": 4e14}, hbm_bytes_per_s=2e12)
    with pytest.raises(ValueError, match="gpu 'My NPU' has no sm_count"):
        rl.gemm_waves(64, 64, 16, 16, chip, 1)


# --------------------------------------------------------------------------- wave_traffic


def _first_wave_by_triton(grid_m, grid_n, group_m, n_tiles):
    """The rows and columns of tiles the first ``n_tiles`` programs compute, by the tutorial's map."""
    rows, cols = set(), set()
    for pid in range(n_tiles):
        num_pid_in_group = group_m * grid_n
        first_pid_m = (pid // num_pid_in_group) * group_m
        group_size_m = min(grid_m - first_pid_m, group_m)
        rows.add(first_pid_m + (pid % num_pid_in_group) % group_size_m)
        cols.add((pid % num_pid_in_group) // group_size_m)
    return rows, cols


def test_grouped_order_reproduces_the_triton_tutorials_count():
    # Triton's matmul tutorial: matrices of 9 x 9 blocks; computing the first 9 output blocks reads
    # 90 blocks in row-major order and 54 in grouped order. One-element blocks, 1 byte each, 9 slots:
    # row-major: 1 row strip + 9 column strips, 9 blocks each = 90; grouped by 3: (3 + 3) * 9 = 54
    chip = _chip(sm_count=9)
    row_major = rl.wave_traffic(9, 9, 9, 1, 1, chip, 1, group_m=1, bytes_per_elem=1)
    grouped = rl.wave_traffic(9, 9, 9, 1, 1, chip, 1, group_m=3, bytes_per_elem=1)
    assert (row_major.row_strips, row_major.col_strips, row_major.working_set_bytes) == (1, 9, 90)
    assert (grouped.row_strips, grouped.col_strips, grouped.working_set_bytes) == (3, 3, 54)


def test_wave_traffic_by_hand():
    # 8 x 8 x 4 at 1 byte in 2 x 2 tiles: a 4 x 4 grid, 16 tiles; 4 slots, so 4 waves.
    # row-major first wave: row 0, columns 0-3: A 2 x 4 = 8 bytes + B 4 strips x 4 x 2 = 32 -> 40
    # grouped by 2: rows 0-1, columns 0-1: A 2 x 2 x 4 = 16 + B 2 x 4 x 2 = 16 -> 32
    chip = _chip(sm_count=4, l2_bytes=35)
    rm = rl.wave_traffic(8, 8, 4, 2, 2, chip, 1, group_m=1, bytes_per_elem=1)
    gr = rl.wave_traffic(8, 8, 4, 2, 2, chip, 1, group_m=2, bytes_per_elem=1)
    assert (rm.tiles_in_wave, rm.row_strips, rm.col_strips, rm.working_set_bytes) == (4, 1, 4, 40)
    assert (gr.row_strips, gr.col_strips, gr.working_set_bytes) == (2, 2, 32)
    assert not rm.fits_l2 and gr.fits_l2  # 40 > 35 >= 32
    # HBM: 4 waves x the first wave's strips + C (64): 4 * 40 + 64 = 224 and 4 * 32 + 64 = 192,
    # between the ideal count (32 + 32 + 64 = 128) and no cache at all (128 + 96 + 96 = 320)
    assert (rm.waves, rm.hbm_bytes, gr.hbm_bytes) == (4, 224, 192)
    assert rl.gemm_bytes(8, 8, 4, 1) == 128 and rl.tiled_gemm_bytes(8, 8, 4, 2, 2, 1) == 320


@pytest.mark.parametrize(
    "grid_m, grid_n, group_m, slots",
    [(3, 3, 2, 7), (5, 4, 2, 9), (4, 7, 3, 5), (6, 2, 4, 11), (2, 9, 8, 12), (7, 3, 1, 4), (3, 3, 2, 20)],
)
def test_the_first_wave_matches_tritons_program_map(grid_m, grid_n, group_m, slots):
    # the short last group (grid_m not a multiple of group_m) and a wave larger than the grid too
    w = rl.wave_traffic(grid_m, grid_n, 1, 1, 1, _chip(sm_count=slots), 1, group_m, bytes_per_elem=1)
    rows, cols = _first_wave_by_triton(grid_m, grid_n, group_m, min(slots, grid_m * grid_n))
    assert (w.row_strips, w.col_strips) == (len(rows), len(cols))
    assert rows == set(range(len(rows))) and cols == set(range(len(cols)))  # contiguous from 0


def test_one_wave_for_the_whole_grid_is_the_ideal_count():
    # 3 x 3 tiles on 9 slots: one wave reads every strip once: A + B + C, the ideal count
    w = rl.wave_traffic(6, 6, 4, 2, 2, _chip(sm_count=9), 1, group_m=2, bytes_per_elem=2)
    assert w.waves == 1 and w.hbm_bytes == rl.gemm_bytes(6, 6, 4, 2)  # 2 * (24 + 24 + 36) = 168


def test_the_chapters_ffn_gemm_on_the_h100():
    # 16384 x 11008 x 4096 in 128 x 128 tiles: a 128 x 86 grid, 132 tiles a wave
    m, n, k = 16384, 11008, 4096
    rm = rl.wave_traffic(m, n, k, 128, 128, "H100", 1, group_m=1)
    gr = rl.wave_traffic(m, n, k, 128, 128, "H100", 1, group_m=8)
    # row-major: 132 = 86 + 46 tiles, rows 0-1, all 86 columns; 88 strips of 128 x 4096 x 2 bytes
    assert (rm.row_strips, rm.col_strips, rm.working_set_bytes) == (2, 86, 88 * 128 * 4096 * 2)
    # grouped by 8: 8 rows, ceil(132 / 8) = 17 columns; 25 strips, 26.2 MB, under the 50 MB of L2
    assert (gr.row_strips, gr.col_strips, gr.working_set_bytes) == (8, 17, 25 * 128 * 4096 * 2)
    assert not rm.fits_l2 and gr.fits_l2
    # 84 waves (ceil(11008 / 132)): grouped moves 84 * 26.2 MB + C (361 MB) = 2.56 GB, past the H100's ridge
    assert gr.hbm_bytes == 84 * 25 * 128 * 4096 * 2 + m * n * 2
    assert rl.gemm_flops(m, n, k) / gr.hbm_bytes > rl.ridge_point("H100") > rl.gemm_flops(m, n, k) / rm.hbm_bytes


def test_a_chip_without_l2_is_refused_by_name():
    chip = rl.accelerator("My NPU", {"bf16": 4e14}, hbm_bytes_per_s=2e12)
    with pytest.raises(ValueError, match="gpu 'My NPU' has no l2_bytes"):
        rl.wave_traffic(64, 64, 64, 16, 16, chip, 1, 1)


# --------------------------------------------------------------------------- padding


def test_nanogpt_pads_gpt2s_vocabulary_to_50304():
    # nanoGPT's model.py: vocab_size 50304, GPT-2's 50257 padded up to the nearest multiple of 64
    assert rl.pad_to_multiple(50257, 64) == 50304  # 786 * 64
    assert rl.pad_to_multiple(50304, 64) == 50304  # already a multiple: unchanged
    assert rl.pad_to_multiple(1, 16) == 16


def test_padded_flops_of_a_single_token_on_an_mma_fragment():
    # one token (m = 1) on mma.m16n8k16: M = 16, N = 8, K = 16. 2 * 16 * 8 * 16 = 4096 FLOP
    # computed for 2 * 1 * 8 * 16 = 256 useful: 16 times the work
    assert rl.padded_gemm_flops(1, 8, 16, 16, 8, 16) == 4096
    assert rl.padded_gemm_flops(1, 8, 16, 16, 8, 16) / rl.gemm_flops(1, 8, 16) == 16
    # a shape the fragment divides wastes nothing
    assert rl.padded_gemm_flops(32, 16, 32, 16, 8, 16) == rl.gemm_flops(32, 16, 32)


def test_padding_gpt2s_vocabulary_costs_under_a_tenth_of_a_percent():
    # 50304 / 50257 = 1.000935: the output layer's columns, the other two sides already multiples
    ratio = rl.padded_gemm_flops(16384, 50257, 768, 128, 128, 64) / rl.gemm_flops(16384, 50257, 768)
    assert ratio == pytest.approx(50304 / 50257)


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda: rl.tiled_gemm_bytes(64, 64, 64, 0, 16),
            "tile_m must be a positive whole number of rows of C per tile",
        ),
        (lambda: rl.tiled_gemm_bytes(64, 64, 64, 16, 1.5), "tile_n must be a whole number of columns of C per tile"),
        (lambda: rl.tiled_gemm_bytes(64, 64, 64, 16, 16, -2), "bytes_per_elem must be a positive number of bytes"),
        (lambda: rl.gemm_waves(64, 64, 16, 16, "H100", 0), "blocks_per_sm must be a positive whole number of thread"),
        (lambda: rl.gemm_waves(64, 64, 16, 16, 7, 1), "gpu must be a GPUSpec or a GPU name"),
        (lambda: rl.wave_traffic(64, 64, 64, 16, 16, "H100", 1, 0), "group_m must be a positive whole number of rows"),
        (lambda: rl.wave_traffic(64, 64, True, 16, 16, "H100", 1, 1), "k must be a whole number of elements"),
        (lambda: rl.pad_to_multiple(50257, 0), "multiple must be a positive whole number of elements"),
        (lambda: rl.pad_to_multiple(-1, 64), "dim must be a positive whole number of elements"),
        (lambda: rl.padded_gemm_flops(1, 8, 16, 16, 8, 0), "tile_k must be a positive whole number of elements"),
    ],
)
def test_bad_input_names_the_parameter_and_its_unit(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()
