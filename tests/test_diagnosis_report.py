"""The diagnosis in words and in a picture: the roof and precision lines, the pile-by-pile evidence,
what a row faster than its roof may mean, the collectives against a link, and the tree drawn."""

from __future__ import annotations

import pytest

import roofline_lib as rl
from roofline_lib import diagnose as D
from roofline_lib import diagnosis_report as DR
from roofline_lib import playbook as P
from roofline_lib import trace_rows as R


def test_the_tree_is_drawn_from_the_rules_diagnose_walks():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    fig = DR.plot_triage()
    texts = [t.get_text() for t in fig.axes[0].texts]
    for rule in P.TRIAGE_RULES:
        assert rule.question in texts
    for pile in P.PILES:
        assert pile in texts
    # every leaf the tree can reach is a pile, and every pile is reachable
    leaves = {r.yes for r in P.TRIAGE_RULES} | {r.no for r in P.TRIAGE_RULES}
    assert set(P.PILES) <= leaves and leaves - {r.key for r in P.TRIAGE_RULES} == set(P.PILES)


def _cpu_ceilings(precision="fp32"):
    from roofline_lib.evidence.measured_roofs import MeasuredCeilings

    # 100 GFLOP/s over 10 GB/s: ridge 10 FLOP/B
    return MeasuredCeilings(10e9, 100e9, "toy CPU", precision, 2, "2026-01-01T00:00:00Z", "2.13.0")


def test_bf16_work_on_a_cpu_is_said_to_be_judged_against_the_fp32_roof_measured_here():
    # a bf16 GEMM at 1000 FLOP/B: compute-bound on any roof; the verdict names the precisions and
    # says the roof was measured in fp32, and its remedy does not advise bf16 on a CPU
    rows = [R.OpStat("aten::mm", 1, 1e-3, 1e9, 1e6, "matmul", "bf16")]
    d = D.diagnose(rows, roof=_cpu_ceilings(), wall_seconds=1e-3)
    assert d.precisions == {"bf16": 1.0}
    text = "\n".join(d.evidence)
    assert "bf16 work is placed against this machine's fp32 roof" in text
    # hand-made rows are on the "rows" timeline: the CPU remedy applies to CPU profiles
    cpu = R.Trace(tuple(rows), "cpu", 1e-3, 1e-3)
    assert D.diagnose(cpu, roof=_cpu_ceilings()).remedy == P.REMEDIES["compute-cpu"]
    assert "bf16 without them is slower" in P.REMEDIES["compute-cpu"]
    assert "tensor cores" not in P.REMEDIES["compute-cpu"]


def test_bf16_work_above_an_fp32_roof_is_pointed_to_a_bf16_roof_before_the_cache():
    # 1e12 FLOP in 1 s on a 100 GFLOP/s fp32 roof: ten times over; its dtype is bf16
    d = D.diagnose([R.OpStat("aten::mm", 1, 1.0, 1e12, 1e9, "matmul", "bf16")], roof=_cpu_ceilings())
    fast = next(line for line in d.evidence if line.startswith("faster than the roof"))
    assert "dtypes are bf16 but the roof is fp32's" in fast and fast.index("bf16") < fast.index("cache")


def test_a_fp32_gemm_faster_than_its_datasheet_roof_is_impossible_and_points_to_tf32():
    # 134 MFLOP in 2 us = 67 TFLOP/s, 3.4x the A100's 19.5 TFLOP/s fp32 roof: no verdict, say TF32
    row = R.OpStat("aten::mm", 1, 2e-6, 134_217_728, 2_359_296, "matmul", "fp32")
    trace = R.Trace((row,), "device", 2e-6, 2e-6, gpu="NVIDIA A100-PG509-200")
    d = D.diagnose(trace)
    assert d.placed == ("unclassified",) and d.regime == "unclassified"
    line = next(x for x in d.evidence if x.startswith("impossible: aten::mm x1 at 3.4x the A100 40GB SXM fp32 roof"))
    assert "timing or counting error" in line and "precision='tf32'" in line
    assert not any(x.startswith("faster than the roof") for x in d.evidence)  # not kept as a verdict
    # read under TF32 (156 TFLOP/s) the same row is plausible, and placed: 56.9 FLOP/B < ridge 100.3
    assert D.diagnose(trace, precision="tf32").placed == ("memory",)


def test_a_bf16_gemm_at_2_2x_the_dense_peak_is_impossible_never_compute_bound():
    # 312e12 * 2.2 FLOP/s for 1 ms on an A100 (bf16 dense peak 312 TFLOP/s): 686 TFLOP in 1 ms
    row = R.OpStat("aten::mm", 1, 1e-3, 2.2 * 312e12 * 1e-3, 1e6, "matmul", "bf16")
    d = D.diagnose(R.Trace((row,), "device", 1e-3, 1e-3, gpu="NVIDIA A100-SXM4-80GB"))
    assert d.shares["compute"] == 0.0 and d.shares["unclassified"] == 1.0
    assert any(x.startswith("impossible: aten::mm x1 at 2.2x the A100 80GB SXM bf16 roof") for x in d.evidence)
    assert any("faster than its roof: impossible" in x for x in d.evidence if x.startswith("unclassified"))
    # a roof measured here may be beaten (cache): the same row under a hand roof is kept and noted
    kept = D.diagnose([row], roof=rl.Roof(312e12, 2e12, "a roof measured elsewhere"))
    assert kept.regime == "compute" and any(x.startswith("faster than the roof") for x in kept.evidence)


def test_the_communication_line_asks_for_the_link_and_names_the_ranks():
    row = R.OpStat("ncclKernel_AllReduce", 1, 1e-3, 0.0, 4e6, "communication", kernel_seconds=1e-3)
    trace = R.Trace((row,), "device", 1e-3, 1e-3, gpu="H100", distributed={"world_size": 8})
    (line,) = DR.communication_lines([row], ["communication"], {"communication": 1.0}, trace, None)
    assert line.startswith("communication: 100% exposed (ncclKernel_AllReduce x1; 1 ms of collective kernels")
    assert "(8 ranks): pass link=" in line


def test_a_collective_on_a_known_link_is_set_against_its_roof():
    # a 4 MB all-reduce over 8 ranks in 50 us: 80 GB/s of algorithm bandwidth, x 2 * 7 / 8 = 140 GB/s
    # of bus bandwidth, 47 % of NVLink 3's 300 GB/s one way
    row = R.OpStat("ncclKernel_AllReduce", 1, 50e-6, 0.0, 4e6, "communication", kernel_seconds=50e-6)
    trace = R.Trace((row,), "device", 50e-6, 50e-6, gpu="A100", collectives=(("k", "allreduce", 4e6, 50e-6, 8),))
    (line,) = DR.communication_lines([row], ["communication"], {"communication": 1.0}, trace, "NVLink 3")
    assert line.endswith(
        "; 1 collectives moved 4 MB at a bus bandwidth of 140 GB/s, 47% of the NVLink 3 roof (300 GB/s one way)"
    )


def test_the_precision_line_says_which_roof_read_the_work():
    rows = [R.OpStat("mm", 1, 3.0, 1.0, 1.0, precision="bf16"), R.OpStat("add", 1, 1.0, 1.0, 1.0, precision="fp32")]
    trace = R.Trace(tuple(rows), "rows", None, None)
    label, shares, lines = DR.roof_and_precision(
        rows, ["compute", "memory"], [rl.Roof(1e9, 1e9, "toy")], None, trace, None
    )
    assert label == "toy (ridge 1 FLOP/B)" and shares == {"bf16": 0.75, "fp32": 0.25}  # 3 s of 4, 1 s of 4
    assert lines == ["precision of the placed work: bf16 75%, fp32 25%; the roof given (each row in its own precision)"]
