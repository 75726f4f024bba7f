"""The traces stored under tests/traces/, read by the course and set against HTA's figures.

``tests/traces/hta_reference.json`` holds Holistic Trace Analysis's breakdown of each of them
(written by ``tools/hta_reference.py`` in an environment that has HTA; its version is recorded
there), so this test needs no HTA. The course must agree with it within one point of the kernel
window on idle, computation, communication and memory time. The definitions are the same on
both sides -- computation is every kernel that is not a collective or a copy, however the roofline
then places it; communication and memory are the time no computation (and, for communication, no
copy) overlaps -- except where a test below says otherwise.

The synthetic traces are also counted by hand, beside each assertion.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kineto_events import synthetic_traces

import roofline_lib as rl
from roofline_lib import diagnose as D

TRACES = Path(__file__).resolve().parent / "traces"
HTA = json.loads((TRACES / "hta_reference.json").read_text(encoding="utf-8"))
ONE_POINT = 1.0  # percentage points of the kernel window


def _course_figures(trace) -> dict:
    """The course's idle, computation, communication and memory time, in % of its kernel window."""
    window = trace.window_seconds

    def share(rows) -> float:
        return 100 * sum(r.seconds for r in rows) / window

    return {
        "idle": 100 * (window - trace.busy_seconds) / window,
        "computation": share(r for r in trace.rows if r.family not in ("copy", "communication")),
        "communication": share(r for r in trace.rows if r.family == "communication"),
        "memory": share(r for r in trace.rows if r.family == "copy"),
    }


@pytest.fixture(scope="module")
def read():
    cache: dict = {}

    def reader(name):
        if name not in cache:
            cache[name] = D.read_trace(TRACES / name)
        return cache[name]

    return reader


def test_the_stored_synthetic_traces_are_what_the_builders_make():
    for name, trace in synthetic_traces().items():
        assert json.loads((TRACES / name).read_text(encoding="utf-8")) == trace, name
    stored = {str(p.relative_to(TRACES)) for p in TRACES.rglob("*") if p.name.endswith((".json", ".json.gz"))}
    assert stored - {"hta_reference.json"} == set(HTA["traces"])  # HTA read every trace stored here


@pytest.mark.parametrize("name", sorted(n for n, f in HTA["traces"].items() if f["analysed"]))
def test_the_course_agrees_with_hta_within_one_point(name, read):
    ours, hta = _course_figures(read(name)), HTA["traces"][name]
    for figure in ("idle", "computation", "communication", "memory"):
        assert ours[figure] == pytest.approx(hta[figure], abs=ONE_POINT), (name, figure, HTA["tool"])


def test_traces_hta_cannot_break_down_are_explained_by_the_course():
    # HTA stops on both with an IndexError (it finds no kernel to break down); the course says why
    assert not HTA["traces"]["hta/cupti_profiler_a100.json.gz"]["analysed"]
    with pytest.raises(
        ValueError, match=r"CUPTI range profiler: 77 kernels with hardware counters.*no profiler_metrics"
    ):
        D.read_trace(TRACES / "hta/cupti_profiler_a100.json.gz")
    assert not HTA["traces"]["hta/cpu_only_rank34.json.gz"]["analysed"]
    with pytest.raises(ValueError, match=r"no GPU kernels in this trace: read as CPU work only.*this machine's roof"):
        D.diagnose(TRACES / "hta/cpu_only_rank34.json.gz")
    with pytest.raises(ValueError, match=r"a GPU's roof \(H100\) does not bound it"):
        D.diagnose(TRACES / "hta/cpu_only_rank34.json.gz", roof="H100")
    # asked for on purpose, with a CPU's roof: a verdict on the CPU ops
    cpu = D.diagnose(TRACES / "hta/cpu_only_rank34.json.gz", roof=rl.Roof(1e12, 1e11, "a CPU"))
    assert cpu.timeline == "cpu" and any(x.startswith("no GPU kernels in this trace") for x in cpu.evidence)


def test_zero_length_kernels_leave_the_gaps_idle(read):
    # window 100..700 us = 600 us: GEMM 100..300 (200 us), add 600..700 (100 us), two 0 us kernels;
    # idle 300 us. The GEMM: 2 * 4096**3 = 137 GFLOP in 200 us = 687 TFLOP/s, under the H100's 989
    d = D.diagnose(read("synthetic/zero_length_h100.json"))
    assert d.shares["overhead"] == pytest.approx(0.5) and d.shares["compute"] == pytest.approx(200 / 600)
    assert d.shares["memory"] == pytest.approx(100 / 600) and d.regime == "mixed" and not d.impossible


def test_an_mi300x_named_only_by_its_gfx_id_is_read_under_its_roof(read):
    # "AMD Radeon Graphics", gfx942, 304 compute units: the MI300X. Window 0..1800 us: GEMM 1000 us,
    # all-reduce 400 us, idle 200 us, add 200 us. 2 * 8192**3 = 1.1 PFLOP in 1 ms: 84 % of 1307 TFLOP/s
    d = D.diagnose(read("synthetic/amd_mi300x_gfx942.json"))
    assert d.regime == "compute" and d.shares["compute"] == pytest.approx(1000 / 1800)
    assert d.shares["communication"] == pytest.approx(400 / 1800) and d.shares["memory"] == pytest.approx(200 / 1800)
    assert d.roof_label.startswith("MI300X bf16 (ridge 247 FLOP/B)")  # 1307.4e12 / 5.3e12


def test_one_die_of_an_mi250_gets_half_the_package_roof(read):
    # HTA's MI250 trace: "AMD Radeon Graphics", capability 9.0 (gfx90a), 104 compute units = one of
    # the MI250's two dies: 90.5 / 2 = 45.25 TFLOP/s fp32 over 3276.8 / 2 = 1638.4 GB/s, ridge 27.6
    d = D.diagnose(read("hta/amd_mi250_minitoy_rocm6_2.json.gz"))
    assert d.roof_label == "MI250 one die fp32 (ridge 27.6 FLOP/B)" and not d.impossible


def test_a_folder_of_ranks_is_diagnosed_per_rank_and_summarised(tmp_path):
    # rank 0: GEMM 0..500, idle 500..600, all-reduce 600..1000; rank 1: GEMM 0..700, all-reduce
    # 700..1000; rank 2: GEMM 0..900, all-reduce 900..1050. Rank 2 is slowest (1050 us) and waits
    # least in its collective (150 us): the others wait for it, rank 0 the longest (400 - 150 = 250 us)
    summary = D.diagnose_ranks(TRACES / "synthetic" / "ranks")
    assert [r.rank for r in summary.ranks] == [0, 1, 2] and summary.slowest == 2 and summary.straggler == 2
    assert summary.spread["overhead"] == pytest.approx((0.0, 100e-6))
    assert summary.spread["communication"] == pytest.approx((150e-6, 400e-6))
    text = str(summary)
    assert "slowest: rank 2, 1.05 ms of kernel window per step" in text
    assert "rank 2 spends the least time in its collectives (150 us per step)" in text
    assert "up to 250 us per step on rank 0" in text
    with pytest.raises(ValueError, match="is a folder, not a trace file.*diagnose_ranks"):
        D.diagnose(TRACES / "synthetic" / "ranks")
    with pytest.raises(ValueError, match="holds no trace file"):
        D.diagnose_ranks(tmp_path)
    with pytest.raises(ValueError, match="is not a folder of rank traces"):
        D.diagnose_ranks(tmp_path / "not-there")


def test_on_a_real_a100_training_trace_the_gemms_are_compute_and_no_row_beats_its_roof(read):
    # HTA's nccl trace has no shapes: every kernel is placed by its name. The compute and memory
    # piles (copies aside) together hold HTA's computation share; every GEMM and convolution kernel
    # is in the compute pile; nothing is faster than its roof
    trace = read("hta/nccl_a100_rank0.json.gz")
    d = D.diagnose(trace)
    hta = HTA["traces"]["hta/nccl_a100_rank0.json.gz"]
    work = d.shares["compute"] + d.shares["memory"] - _course_figures(trace)["memory"] / 100
    assert 100 * work == pytest.approx(hta["computation"], abs=5.0)
    gemms = [p for r, p in zip(d.rows, d.placed) if r.family in ("GEMM", "convolution")]
    assert gemms and set(gemms) == {"compute"} and not d.impossible
    assert d.shares["unclassified"] < 0.01 and d.by_name_share("compute") == pytest.approx(d.shares["compute"])


def test_the_piles_over_time_add_up_slice_by_slice(read):
    # the zero-length trace in 6 slices of 100 us from 100 us: the GEMM fills the first two, the
    # add the last; the three between are idle (overhead); the 0 us kernels add nothing anywhere
    from roofline_lib import diagnosis_report as DR

    trace = read("synthetic/zero_length_h100.json")
    edges, piles = DR.piles_over_time(trace, D.diagnose(trace), bins=6)
    assert edges == pytest.approx([0.0, 100e-6, 200e-6, 300e-6, 400e-6, 500e-6])
    assert piles["compute"] == pytest.approx([100e-6, 100e-6, 0, 0, 0, 0])
    assert piles["memory"] == pytest.approx([0, 0, 0, 0, 0, 100e-6])
    assert piles["overhead"] == pytest.approx([0, 0, 100e-6, 100e-6, 100e-6, 0])
    with pytest.raises(ValueError, match="bins must be a positive whole number"):
        DR.piles_over_time(trace, D.diagnose(trace), bins=0)
    other = read("synthetic/amd_mi300x_gfx942.json")  # a diagnosis of another trace places other rows
    assert len(other.rows) != len(trace.rows)
    with pytest.raises(ValueError, match="diagnosis places .* rows but the trace holds"):
        DR.piles_over_time(trace, D.diagnose(other))
    cpu = D.Trace(trace.rows, "cpu", 1e-3, 1e-3)  # the same rows read on the host: no kernels to slice
    with pytest.raises(ValueError, match="trace must hold a GPU's kernels .* got a 'cpu' trace"):
        DR.piles_over_time(cpu, D.diagnose(trace))
