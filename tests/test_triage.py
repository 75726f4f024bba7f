"""The triage: each row's time placed in one pile by its FLOPs and bytes against the roof in use.

Hand-made rows on a toy roof, so every share is counted by hand beside its assertion; the verdicts
are read through :func:`diagnose.diagnose`, which composes the triage with the playbook's rules.
"""

from __future__ import annotations

import pytest

import roofline_lib as rl
from roofline_lib import diagnose as D
from roofline_lib import playbook as P
from roofline_lib import trace_rows as R
from roofline_lib import triage as TR

# A roof with hand-countable numbers: 100 GFLOP/s over 10 GB/s, ridge 10 FLOP/B.
TOY = rl.Roof(100e9, 10e9, "toy machine")


def test_rows_are_placed_by_intensity_not_by_name():
    # a "matmul" at 0.5 FLOP/B (2e7 FLOP over 4e7 B) is below the ridge of 10: memory
    # an "add" at 20 FLOP/B (2e8 FLOP over 1e7 B) is above it: compute (names never decide)
    d = D.diagnose(
        [
            D.OpStat("aten::mm", 10, 6e-3, flops=2e7, bytes_moved=4e7, family="matmul"),
            D.OpStat("aten::add", 4, 2e-3, flops=2e8, bytes_moved=1e7),
        ],
        roof=TOY,
    )
    assert dict(zip([r.name for r in d.rows], d.placed)) == {"aten::mm": "memory", "aten::add": "compute"}
    assert d.shares["memory"] == pytest.approx(0.75)  # 6 ms of 8 ms
    assert d.regime == "memory"
    assert d.remedy == P.REMEDIES["memory-matmul"]
    assert not any("faster than the roof" in line for line in d.evidence)  # 6.7 GB/s, 100 GFLOP/s: in bounds


def test_rows_faster_than_their_roof_are_flagged_not_reclassified():
    # 4e7 B in 1 ms = 40 GB/s on a 10 GB/s roof: flagged, still memory-bound by its 0.5 FLOP/B
    d = D.diagnose([("aten::mm", 1, 1e-3, 2e7, 4e7)], roof=TOY)
    assert d.regime == "memory"
    assert any(line.startswith("faster than the roof in use: aten::mm") for line in d.evidence)


def test_rows_without_counts_are_unclassified_never_guessed():
    d = D.diagnose([("aten::mm", 2, 6e-3), ("my_custom_op", 1, 1e-3)], roof=TOY)
    assert d.regime == "unclassified" and d.shares["unclassified"] == 1.0
    assert "record_shapes=True" in d.remedy


def test_fixed_cost_per_call_and_wall_time_are_overhead():
    # 1000 calls of 3 us each (3 ms) with a 2 us fixed cost: 2 ms overhead, 1 ms of work;
    # 1 ms of wall time outside the rows: overhead 3 ms of 4 ms = 75 %
    d = D.diagnose(
        [("aten::add", 1000, 3e-3, 1e3 * 16, 1e3 * 192)], roof=TOY, wall_seconds=4e-3, fixed_cost_seconds=2e-6
    )
    assert d.seconds["overhead"] == pytest.approx(3e-3) and d.regime == "overhead"


def test_ops_that_move_no_data_are_overhead():
    d = D.diagnose([("aten::view", 100, 1e-3, 0, 0), ("aten::mm", 1, 1e-3, 1e12, 1e9)], roof=TOY)
    assert d.shares["overhead"] == pytest.approx(0.5) and d.regime == "mixed"


def test_place_rows_charges_idle_fixed_cost_and_work_to_their_piles():
    # 2 ms idle; a 10-call add of 3 ms with a 0.1 ms fixed cost per call: 1 ms overhead, 2 ms of
    # work at 1e6 / 1e8 = 0.01 FLOP/B (memory); a collective's 1 ms is communication, no fixed cost
    rows = (R.OpStat("aten::add", 10, 3e-3, 1e6, 1e8), R.OpStat("nccl", 1, 1e-3, 0.0, 1e6, "communication"))
    trace = R.Trace(rows, "cpu", 8e-3, 4e-3)
    out = TR.place_rows(rows, trace, TOY, None, fixed=1e-4, idle=2e-3)
    assert out.placed == ["memory", "communication"]
    assert out.piles == pytest.approx(
        {"compute": 0.0, "memory": 2e-3, "communication": 1e-3, "overhead": 3e-3, "unclassified": 0.0}
    )
    assert out.fixed_total == pytest.approx(1e-3) and out.used_roofs == [TOY]


def test_idle_is_the_span_less_the_busy_time_and_never_negative():
    trace = R.Trace((R.OpStat("mm", 1, 1e-3),), "cpu", 5e-3, 3e-3)
    assert TR.idle_seconds(trace, None, 1e-3) == (pytest.approx(2e-3), [])  # window 5 ms - busy 3 ms
    assert TR.idle_seconds(trace, 4e-3, 1e-3) == (pytest.approx(1e-3), [])  # the wall time given wins
    idle, lines = TR.idle_seconds(trace, 1e-3, 1e-3)  # 3 ms of ops in a 1 ms span: they overlap
    assert idle == 0.0 and "more than the 1 ms span read" in lines[0]


def test_a_gpu_row_is_read_under_its_own_precision_and_fp64_has_no_roof():
    rows = (
        R.OpStat("aten::mm", 1, 1e-3, 1e12, 1e9, "matmul", "bf16"),
        R.OpStat("aten::add_", 1, 1e-4, 1e6, 1e7, "", "fp64"),
    )
    trace = R.Trace(rows, "device", 1.1e-3, 1.1e-3, gpu="NVIDIA H100 80GB HBM3")
    cache: dict = {}
    assert TR.roof_for(rows[0], None, trace, None, cache).label == "H100 SXM bf16"
    assert TR.roof_for(rows[1], None, trace, None, cache) is None  # the registry has no fp64 roof for it
    out = TR.place_rows(rows, trace, None, None, fixed=0.0, idle=0.0)
    assert out.placed == ["compute", "unclassified"]
