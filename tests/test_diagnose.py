"""Worked examples for roofline_lib.diagnose: the playbook's triage on profiles you can count by hand.

Each synthetic profile lists (name, calls, seconds of self time for all calls together). The
shares are simple fractions of a round total, written beside each assertion.
"""
from types import SimpleNamespace

import pytest

import roofline_lib as rl
from roofline_lib.diagnose import (
    KINDS,
    REGIMES,
    REMEDIES,
    Diagnosis,
    OpStat,
    ProfiledRun,
    classify_op,
    diagnose,
    measured_mfu,
    op_stats,
    profile_run,
)
from roofline_lib.measure import MeasuredCeilings

MS = 1e-3
US = 1e-6

# A made-up machine: 100 GFLOP/s matmul, 10 GB/s copy -> ridge 10 FLOP/B.
CEILINGS = MeasuredCeilings(
    bytes_per_s=10e9, flops_per_s=100e9, device_name="test CPU", precision="fp32",
    n_threads=1, date="2026-01-01T00:00:00+00:00", torch_version="test",
)


# --------------------------------------------------------------------------- classification


@pytest.mark.parametrize(
    "name, kind",
    [
        ("aten::mm", "matmul"),
        ("aten::addmm", "matmul"),
        ("aten::linear", "matmul"),
        ("aten::_scaled_dot_product_flash_attention_for_cpu_backward", "matmul"),
        ("aten::native_layer_norm", "elementwise"),
        ("aten::silu_backward", "elementwise"),
        ("aten::add_", "elementwise"),  # in-place: trailing underscore dropped
        ("aten::mul.Tensor", "elementwise"),  # overload name dropped
        ("aten::_softmax", "elementwise"),  # leading underscore dropped
        ("aten::view", "view"),
        ("aten::transpose", "view"),
        ("MmBackward0", "host"),  # autograd node: bookkeeping around the real aten::mm
        ("ProfilerStep#3", "host"),
        ("autograd::engine::evaluate_function: MmBackward0", "host"),
        ("cudaLaunchKernel", "host"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32", "matmul"),  # GPU kernel names
        ("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn", "matmul"),
        ("flash_fwd_kernel", "matmul"),
        ("void at::native::vectorized_elementwise_kernel<4, ...>", "elementwise"),
        ("void at::native::reduce_kernel<512, 1, ...>", "elementwise"),
        ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "comms"),
        ("c10d::allreduce_", "comms"),
        ("aten::frobnicate", "other"),
        ("my_custom_kernel", "other"),
    ],
)
def test_classify_op(name, kind):
    assert classify_op(name) == kind


def test_classify_op_refuses_a_non_string():
    with pytest.raises(TypeError, match="name must be a string"):
        classify_op(42)


# --------------------------------------------------------------------------- three regimes


def test_big_matmul_is_compute_bound():
    rows = [("aten::mm", 2, 6 * MS), ("aten::add", 4, 3 * MS), ("aten::view", 100, 1 * MS)]
    d = diagnose(rows)
    # total 6 + 3 + 1 = 10 ms; compute 6/10, memory 3/10 (750 us per call), overhead 1/10 (views)
    assert d.regime == "compute"
    assert d.total_seconds == pytest.approx(10 * MS)
    assert d.shares["compute"] == pytest.approx(0.6)
    assert d.shares["memory"] == pytest.approx(0.3)
    assert d.shares["overhead"] == pytest.approx(0.1)
    assert d.n_calls == 106  # 2 + 4 + 100
    assert d.timeline == "cpu"
    assert "matmul-like ops: 60% of the time (aten::mm x2)" in d.evidence
    assert d.remedy == REMEDIES["compute"]


def test_norms_and_elementwise_are_memory_bound():
    rows = [
        OpStat("aten::native_layer_norm", 7, 7 * MS),  # 1 ms per call
        OpStat("aten::mm", 1, 2 * MS),
        OpStat("aten::add", 1000, 1 * MS),  # 1 us per call: tiny, so overhead
    ]
    d = diagnose(rows)
    # total 7 + 2 + 1 = 10 ms: memory 0.7, compute 0.2, overhead 0.1
    assert d.regime == "memory"
    assert (d.shares["memory"], d.shares["compute"], d.shares["overhead"]) == pytest.approx((0.7, 0.2, 0.1))
    assert any("1,000 calls under 10 us each take 10%" in line for line in d.evidence)


def test_thousands_of_tiny_calls_and_idle_time_are_overhead():
    rows = [("aten::add", 5000, 10 * MS), ("aten::mm", 1, 2 * MS)]  # add: 2 us per call
    d = diagnose(rows, wall_seconds=20 * MS)
    # ops 12 ms, idle 20 - 12 = 8 ms; overhead (10 + 8) / 20 = 0.9, compute 2 / 20 = 0.1
    assert d.regime == "overhead"
    assert d.total_seconds == pytest.approx(20 * MS)
    assert d.shares["overhead"] == pytest.approx(0.9)
    assert d.shares["compute"] == pytest.approx(0.1)
    assert d.seconds["overhead"] == pytest.approx(18 * MS)
    assert any("wall-clock time outside every op takes 40%" in line for line in d.evidence)  # 8 / 20


def test_tiny_threshold_decides_what_counts_as_work():
    rows = [("aten::add", 100, 1 * MS)]  # 10 us per call
    assert diagnose(rows).regime == "memory"  # 10 us is not under the 10 us default
    assert diagnose(rows, tiny_call_seconds=20 * US).regime == "overhead"


def test_median_call_beats_a_single_preempted_call():
    # 99 calls of 2 us and one of 9.8 ms: mean 100 us, median 2 us -> still tiny
    row = OpStat("aten::add", 100, 99 * 2 * US + 9.802 * MS, typical_call_seconds=2 * US)
    assert row.seconds_per_call == 2 * US
    assert diagnose([row]).regime == "overhead"


def test_rows_with_the_same_name_are_merged():
    rows, timeline = op_stats([("aten::mm", 1, 1 * MS), ("aten::mm", 3, 2 * MS)])
    assert timeline == "cpu"
    assert len(rows) == 1
    assert (rows[0].calls, rows[0].seconds) == (4, pytest.approx(3 * MS))  # 1 + 3 calls, 1 + 2 ms


def test_unrecognised_ops_are_reported_not_voted():
    rows = [("my_op", 1, 8 * MS), ("aten::mm", 1, 2 * MS)]
    d = diagnose(rows)
    # other 8/10 does not vote; compute 2/10 is the largest of the three regimes
    assert d.regime == "compute"
    assert d.shares["other"] == pytest.approx(0.8)
    assert any("unrecognised ops: 80%" in line and "treat it with care" in line for line in d.evidence)
    named = diagnose(rows, classify=lambda name: "elementwise" if name == "my_op" else None)
    assert named.regime == "memory"  # 8/10


def test_communication_counts_with_overhead():
    rows = [("c10d::allreduce_", 2, 6 * MS), ("aten::mm", 2, 4 * MS)]
    d = diagnose(rows)
    assert d.regime == "overhead"  # 6 / 10
    assert any("communication" in line for line in d.evidence)


# --------------------------------------------------------------------------- roofline evidence


def test_intensity_overrides_the_name_when_counts_are_known():
    # A matrix-vector product: 2 * 1000 * 1000 = 2e6 FLOP over 4e6 bytes (fp32 matrix)
    # -> 0.5 FLOP/B, below the ridge of 100e9 / 10e9 = 10: memory-bound although it is a matmul
    gemv = OpStat("aten::mv", 10, 5 * MS, flops=10 * 2e6, bytes_moved=10 * 4e6)
    d = diagnose([gemv], ceilings=CEILINGS)
    assert d.regime == "memory"
    assert d.top[0].kind == "elementwise"
    assert diagnose([gemv]).regime == "compute"  # without ceilings: by name


def test_achieved_rates_against_the_ceilings():
    rows = [("aten::mm", 1, 10 * MS)]
    d = diagnose(rows, flops=0.5e9, bytes_moved=10e6, ceilings=CEILINGS)
    # 0.5e9 FLOP / 0.01 s = 50 GFLOP/s = 50 % of 100; 10e6 B / 0.01 s = 1 GB/s = 10 % of 10
    assert d.achieved_flops_per_s == pytest.approx(50e9)
    assert d.achieved_bytes_per_s == pytest.approx(1e9)
    line = [e for e in d.evidence if e.startswith("whole program")][0]
    assert "50% of the compute roof" in line and "10% of the memory roof" in line
    assert "intensity 50 FLOP/B is at or above the ridge of 10" in line  # 0.5e9 / 10e6


def test_matmul_rows_with_flops_report_their_rate():
    rows = [OpStat("aten::mm", 2, 10 * MS, flops=0.8e9)]  # 0.8e9 / 0.01 = 80 GFLOP/s
    d = diagnose(rows, ceilings=CEILINGS)
    assert any("80 GFLOP/s, 80% of the compute roof" in line for line in d.evidence)


def test_a_gpu_spec_works_as_ceilings():
    # 1 ms of a 312 TFLOP/s A100 doing 156e9 FLOP: 156e12 FLOP/s = 50 %
    d = diagnose([("aten::mm", 1, 1 * MS)], flops=156e9, ceilings="A100", precision="bf16")
    assert d.achieved_flops_per_s == pytest.approx(156e12)
    assert any("50% of the compute roof" in line and "A100 80GB SXM datasheet" in line for line in d.evidence)


def test_a_program_faster_than_its_roof_is_refused():
    # 2e9 FLOP in 10 ms = 200 GFLOP/s, twice the 100 GFLOP/s roof
    with pytest.raises(rl.ImplausibleMeasurement, match="2.00x the compute roof"):
        diagnose([("aten::mm", 1, 10 * MS)], flops=2e9, ceilings=CEILINGS)
    # 1e9 bytes in 10 ms = 100 GB/s, ten times the 10 GB/s roof
    with pytest.raises(rl.ImplausibleMeasurement, match="10.00x the memory roof"):
        diagnose([("aten::add", 1, 10 * MS)], bytes_moved=1e9, ceilings=CEILINGS)
    # a matmul row that beats the roof: 3e9 FLOP in 10 ms = 300 GFLOP/s
    with pytest.raises(rl.ImplausibleMeasurement, match="the matmul rows"):
        diagnose([OpStat("aten::mm", 1, 10 * MS, flops=3e9)], ceilings=CEILINGS)


def test_rows_longer_than_the_wall_clock_are_said_to_overlap():
    d = diagnose([("aten::mm", 1, 10 * MS)], wall_seconds=5 * MS)
    assert d.seconds["overhead"] == 0  # no negative idle time
    assert any("more than the 5 ms wall-clock" in line for line in d.evidence)


def test_the_diagnosis_prints_its_evidence():
    text = str(diagnose([("aten::mm", 1, 1 * MS)]))
    assert text.startswith("compute-bound (100% of the time)")
    assert "next: raise the compute roof" in text
    assert set(REGIMES) == set(REMEDIES)
    assert "comms" in KINDS


# --------------------------------------------------------------------------- torch-shaped events


def _avg(key, count, self_cpu_us, device="CPU", self_device_us=0.0, flops=0, scope=0, annotation=False):
    """A stand-in for torch's FunctionEventAvg with only the fields diagnose reads."""
    return SimpleNamespace(
        key=key, count=count, self_cpu_time_total=self_cpu_us, self_device_time_total=self_device_us,
        device_type=SimpleNamespace(name=device), flops=flops, scope=scope, is_user_annotation=annotation,
    )


def test_cpu_events_are_read_in_microseconds():
    events = [
        _avg("aten::mm", 2, 6000.0, flops=4e8),
        _avg("aten::add", 4, 3000.0),
        _avg("ProfilerStep*", 1, 1000.0, scope=7, annotation=True),
    ]
    d = diagnose(events, ceilings=CEILINGS)
    # 6 ms + 3 ms + 1 ms = 10 ms; the ProfilerStep's self time is host time between ops
    assert d.total_seconds == pytest.approx(10 * MS)
    assert (d.shares["compute"], d.shares["memory"], d.shares["overhead"]) == pytest.approx((0.6, 0.3, 0.1))
    assert any("66.7 GFLOP/s" in line for line in d.evidence)  # 4e8 FLOP / 6 ms


def test_a_device_profile_reads_kernel_time_only():
    events = [
        # CPU-side rows: their device time is their kernels' time, already in the kernel rows
        _avg("aten::mm", 1, 50.0, self_device_us=8000.0),
        _avg("cudaLaunchKernel", 3, 30.0),
        _avg("ProfilerStep#1", 1, 100.0, device="CUDA", self_device_us=10000.0, annotation=True),
        # kernel rows
        _avg("sm90_xmma_gemm_bf16bf16_bf16f32", 1, 0.0, device="CUDA", self_device_us=8000.0),
        _avg("void at::native::vectorized_elementwise_kernel<4>", 2, 0.0, device="CUDA", self_device_us=1000.0),
    ]
    d = diagnose(events, wall_seconds=10 * MS)
    # kernels 8 + 1 = 9 ms of a 10 ms wall: compute 0.8, memory 0.1, idle GPU 0.1
    assert d.timeline == "device"
    assert (d.shares["compute"], d.shares["memory"], d.shares["overhead"]) == pytest.approx((0.8, 0.1, 0.1))
    assert any("GPU kernel time" in line for line in d.evidence)


def test_a_real_cpu_profile_of_tiny_ops_is_overhead_bound():
    torch = pytest.importorskip("torch")
    a, b = torch.ones(4), torch.ones(4)

    def tiny_ops():
        for _ in range(300):
            a.add(b)  # 4 elements: nothing to do but dispatch

    run = profile_run(tiny_ops)
    assert isinstance(run, ProfiledRun) and run.wall_seconds > 0
    d = diagnose(run)
    assert d.regime == "overhead"
    assert d.n_calls >= 300
    assert isinstance(d, Diagnosis)


# --------------------------------------------------------------------------- failure paths


def test_empty_profiles_are_refused():
    with pytest.raises(ValueError, match="the profile is empty"):
        diagnose([])
    with pytest.raises(ValueError, match="holds no time"):
        diagnose([("aten::mm", 1, 0.0)])


@pytest.mark.parametrize("bad", [None, "aten::mm", 3.5])
def test_things_that_are_not_profiles_are_refused(bad):
    with pytest.raises(TypeError, match="profile_or_events must be"):
        diagnose(bad)


def test_bad_rows_are_refused_with_their_field():
    with pytest.raises(TypeError, match="profile row 0"):
        diagnose([["aten::mm", 1, 1e-3]])  # a list, not a tuple or OpStat
    with pytest.raises(ValueError, match="seconds of aten::mm must be a non-negative number of seconds"):
        diagnose([("aten::mm", 1, -1e-3)])
    with pytest.raises(ValueError, match="calls of aten::mm must be a positive whole number"):
        diagnose([("aten::mm", 0, 1e-3)])
    with pytest.raises(ValueError, match="kind must be one of"):
        OpStat("aten::mm", 1, 1e-3, kind="fast")
    with pytest.raises(TypeError, match="profile row 0"):
        diagnose([{"name": "aten::mm", "calls": 1, "secs": 1e-3}])


def test_bad_arguments_are_refused():
    rows = [("aten::mm", 1, 1 * MS)]
    with pytest.raises(ValueError, match="tiny_call_seconds must be a positive number of seconds"):
        diagnose(rows, tiny_call_seconds=0)
    with pytest.raises(ValueError, match="wall_seconds must be a positive number of seconds"):
        diagnose(rows, wall_seconds=-1)
    with pytest.raises(TypeError, match="ceilings must be a MeasuredCeilings"):
        diagnose(rows, ceilings=42)
    with pytest.raises(TypeError, match="classify must be a callable"):
        diagnose(rows, classify="matmul")
    with pytest.raises(ValueError, match="must return one of"):
        diagnose(rows, classify=lambda name: "fast")
    with pytest.raises(ValueError, match="A100 80GB SXM has no fp8"):
        diagnose(rows, flops=1.0, ceilings="A100", precision="fp8")


# --------------------------------------------------------------------------- measured MFU


def test_measured_mfu():
    # 4e9 model FLOP in 0.1 s = 40 GFLOP/s of a 100 GFLOP/s roof: 40 %
    assert measured_mfu(4e9, 0.1, CEILINGS) == pytest.approx(0.4)
    timing = SimpleNamespace(median_s=0.05)  # a Timing's median: 80 %
    assert measured_mfu(4e9, timing, CEILINGS) == pytest.approx(0.8)
    # 1 ms on an H100 SXM (989.5 TFLOP/s dense bf16) doing 494.75e9 FLOP: 50 %
    assert measured_mfu(494.75e9, 1e-3, "H100") == pytest.approx(0.5)


def test_measured_mfu_refuses_the_impossible():
    with pytest.raises(rl.ImplausibleMeasurement, match="1.20x the compute roof"):
        measured_mfu(12e9, 0.1, CEILINGS)  # 120 GFLOP/s of 100
    with pytest.raises(TypeError, match="ceilings must be"):
        measured_mfu(1e9, 0.1, None)
    with pytest.raises(ValueError, match="seconds must be a positive number of seconds"):
        measured_mfu(1e9, 0, CEILINGS)
