"""Ridge, attainable performance, verdicts and the plausibility guard, on hand-countable numbers."""

import math

import numpy as np
import pytest

import roofline_lib as rl


def test_ridge_point_a100_bf16():
    # 312e12 FLOP/s / 2039e9 B/s = 153.0 FLOP/B (the source's 156 used a rounded 2.0 TB/s)
    assert rl.ridge_point("A100") == pytest.approx(312e12 / 2039e9)
    assert round(rl.ridge_point("A100"), 1) == 153.0


def test_ridge_point_h100_bf16_and_fp8():
    # 989.5e12 / 3.35e12 = 295.4 ; fp8 doubles the peak, so doubles the ridge: 590.7
    assert rl.ridge_point("H100") == pytest.approx(295.37, rel=1e-3)
    assert rl.ridge_point("H100", "fp8") == pytest.approx(2 * rl.ridge_point("H100"))


def test_ridge_accepts_a_spec_too():
    spec = rl.gpu("H200")
    assert rl.ridge_point(spec) == rl.ridge_point("h200")


def test_attainable_below_the_ridge_is_bandwidth_times_intensity():
    # A100: 2039e9 B/s * 10 FLOP/B = 20.39e12 FLOP/s
    assert rl.attainable_flops_per_s(10, "A100") == pytest.approx(20.39e12)


def test_attainable_above_the_ridge_is_the_peak():
    assert rl.attainable_flops_per_s(1000, "A100") == 312e12


def test_attainable_is_continuous_at_the_ridge():
    ridge = rl.ridge_point("H100")
    assert rl.attainable_flops_per_s(ridge, "H100") == pytest.approx(989.5e12)


def test_attainable_takes_arrays_for_plotting():
    out = rl.attainable_flops_per_s(np.array([1.0, 1e4]), "A100")
    assert out.tolist() == pytest.approx([2039e9, 312e12])
    with pytest.raises(ValueError, match="intensity"):
        rl.attainable_flops_per_s(np.array([1.0, -1.0]), "A100")


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_attainable_refuses_bad_intensity(bad):
    with pytest.raises(ValueError, match="intensity must be a .*FLOP/byte"):
        rl.attainable_flops_per_s(bad, "A100")


def test_verdict_memory_bound_elementwise_add():
    # z = x + y over n = 1e8 bf16 elements: 1e8 FLOP, 3 * 2 * 1e8 = 6e8 bytes -> I = 1/6
    # at 90 % of 2039 GB/s: seconds = 6e8 / (0.9 * 2039e9) = 3.27e-4
    seconds = 6e8 / (0.9 * 2039e9)
    v = rl.kernel_verdict(1e8, 6e8, seconds, "A100")
    assert v.bound == "memory"
    assert v.intensity == pytest.approx(1 / 6)
    assert v.ceiling_flops_per_s == pytest.approx(2039e9 / 6)
    assert v.efficiency == pytest.approx(0.9)
    assert v.achieved_bytes_per_s == pytest.approx(0.9 * 2039e9)


def test_verdict_compute_bound_gemm():
    # 4096^3 GEMM in bf16: 2 * 4096^3 = 1.374e11 FLOP; bytes 3 * 4096^2 * 2 = 1.007e8 -> I = 1365
    flops = 2 * 4096**3
    bytes_moved = 3 * 4096**2 * 2
    seconds = flops / (0.7 * 312e12)  # 70 % of peak
    v = rl.kernel_verdict(flops, bytes_moved, seconds, "A100")
    assert v.bound == "compute"
    assert v.intensity == pytest.approx(4096 / 3)
    assert v.ceiling_flops_per_s == 312e12
    assert v.efficiency == pytest.approx(0.7)


def test_a_point_at_95_percent_of_its_roof_is_fine():
    v = rl.kernel_verdict(1e9, 1e9, 1e9 / (0.95 * 2039e9), "A100")
    assert v.efficiency == pytest.approx(0.95)


def test_guard_refuses_a_memory_bound_kernel_faster_than_hbm():
    # The source's LayerNorm: n = 8*2048*4096 = 67,108,864 elements, bytes 2 * 2 * n = 268 MB
    # in 90 us -> 2.98 TB/s on a 2.039 TB/s part: impossible.
    n = 8 * 2048 * 4096
    with pytest.raises(rl.ImplausibleMeasurement, match=r"HBM bandwidth roof.*cache.*unsynchronised"):
        rl.kernel_verdict(8 * n, 2 * 2 * n, 90e-6, "A100")


def test_guard_refuses_a_gemm_faster_than_peak():
    # The source's FFN GEMM: 2 * 16384 * 4096 * 11008 = 1.478e12 FLOP in 1.1 ms = 1343 TFLOP/s > 312
    m, k, n = 8 * 2048, 4096, 11008
    with pytest.raises(rl.ImplausibleMeasurement, match=r"compute peak.*sparse peak"):
        rl.kernel_verdict(2 * m * k * n, 2 * (m * k + k * n + m * n), 1.1e-3, "A100")


def test_guard_is_a_value_error_and_allows_the_tolerance():
    assert issubclass(rl.ImplausibleMeasurement, ValueError)
    # 4 % above the bandwidth roof is inside the 5 % tolerance; 6 % is not
    rl.kernel_verdict(1e9, 1e9, 1e9 / (1.04 * 2039e9), "A100")
    with pytest.raises(rl.ImplausibleMeasurement):
        rl.kernel_verdict(1e9, 1e9, 1e9 / (1.06 * 2039e9), "A100")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(flops=0), "flops must be a positive number of FLOP"),
        (dict(flops=-5), "flops must be a positive number of FLOP"),
        (dict(bytes_moved=math.nan), "bytes_moved must be a finite number of bytes"),
        (dict(seconds=0), "seconds must be a positive number of seconds"),
        (dict(seconds=math.inf), "seconds must be a finite number of seconds"),
    ],
)
def test_verdict_bad_numbers_name_the_parameter_and_unit(kwargs, match):
    args = dict(flops=1e9, bytes_moved=1e9, seconds=1.0, gpu="A100")
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        rl.kernel_verdict(**args)


def test_verdict_wrong_types():
    with pytest.raises(TypeError, match="seconds must be a number of seconds, got str"):
        rl.kernel_verdict(1e9, 1e9, "1ms", "A100")
    with pytest.raises(TypeError, match="flops must be a number of FLOP, got bool"):
        rl.kernel_verdict(True, 1e9, 1.0, "A100")


def test_verdict_refuses_a_precision_the_chip_lacks():
    with pytest.raises(ValueError, match="has no fp8"):
        rl.kernel_verdict(1e9, 1e9, 1.0, "A100", precision="fp8")


def test_verdict_reads_as_a_sentence():
    v = rl.kernel_verdict(1e9, 1e9, 1.0, "A100")
    assert "memory-bound" in str(v) and "A100 80GB SXM" in str(v)


def test_the_l2_roof_of_the_a100():
    # L2: 5120 bytes/clock * 1.41e9 clocks/s = 7.2192e12 B/s; at 10 FLOP/B -> 72.2 TFLOP/s
    assert rl.memory_bytes_per_s("A100", "l2") == pytest.approx(7.2192e12)
    assert rl.attainable_flops_per_s(10, "A100", memory="l2") == pytest.approx(72.192e12)
    # ridge against L2: 312e12 / 7.2192e12 = 43.2 FLOP/B, far left of the HBM ridge of 153
    assert rl.ridge_point("A100", memory="l2") == pytest.approx(43.22, rel=1e-3)


def test_memory_levels_the_registry_lacks_are_refused():
    with pytest.raises(ValueError, match=r"H100 SXM has no L2 bandwidth.*A100 80GB SXM"):
        rl.attainable_flops_per_s(10, "H100", memory="l2")
    with pytest.raises(ValueError, match="memory must be one of 'hbm', 'l2'"):
        rl.ridge_point("A100", memory="smem")


# --------------------------------------------------------------------------- the roof value


def test_a_roof_answers_every_question_from_two_numbers():
    r = rl.Roof(100e9, 10e9, "toy")  # 100 GFLOP/s over 10 GB/s
    assert r.ridge == 10.0  # 100e9 / 10e9
    assert r.attainable_flops_per_s(2) == 20e9  # 10e9 B/s * 2 FLOP/B, under the peak
    assert r.attainable_flops_per_s(50) == 100e9  # capped at the peak
    assert r.bound(9.99) == "memory" and r.bound(10) == "compute" and r.bound(0) == "memory"
    assert r.seconds(1e9, 4e9) == 0.4  # max(1e9 / 100e9, 4e9 / 10e9) = max(0.01, 0.4)
    assert r.seconds(0, 1e9) == 0.1  # a copy: no FLOPs, 1e9 B / 10e9 B/s


def test_the_module_functions_ask_the_roof():
    a100 = rl.roof("A100")
    assert rl.ridge_point("A100") == a100.ridge
    assert rl.attainable_flops_per_s(10, "A100") == a100.attainable_flops_per_s(10)
    # time at the roof: 4.8e9 B on the H200's 4.8 TB/s = 1 ms; 1e9 FLOP at fp32 67 TFLOP/s = 15 us
    assert rl.time_at_roof_seconds(1e9, 4.8e9, "H200", "fp32") == pytest.approx(1e-3)
    # 6.7e12 FLOP / 67e12 FLOP/s (fp32) = 0.1 s; 1 byte takes nothing
    assert rl.time_at_roof_seconds(6.7e12, 1, "H200", "fp32") == pytest.approx(0.1)
    assert rl.roof(a100) is a100


def test_a_measured_roof_comes_from_measured_ceilings():
    from roofline_lib.evidence.measured_roofs import MeasuredCeilings

    c = MeasuredCeilings(
        bytes_per_s=50e9,
        flops_per_s=200e9,
        device_name="test CPU",
        precision="fp32",
        n_threads=2,
        date="2026-01-01T00:00:00+00:00",
        torch_version="x",
    )
    r = rl.roof(c)
    assert r.ridge == 4.0 and c.ridge == r.ridge  # 200e9 / 50e9, one definition
    assert "measured on test CPU" in r.label
    # 4.8e9 B at a measured 4.0e12 B/s = 1.2 ms, slower than the H200 datasheet's 1 ms
    slow = rl.Roof(rl.gpu("H200").peak_flops_per_s("fp32"), 4.0e12, "H200, measured copy")
    assert slow.seconds(1e9, 4.8e9) == pytest.approx(1.2e-3)


def test_a_verdict_carries_its_time_at_the_roof():
    # 1e9 B at 2039e9 B/s = 0.49 ms at the roof; measured 1 ms
    v = rl.kernel_verdict(1e9, 1e9, 1e-3, "A100")
    assert v.time_at_roof_seconds == pytest.approx(1e9 / 2039e9)
    assert v.roof.label == "A100 80GB SXM bf16"


def test_a_roof_refuses_bad_numbers_and_things_that_are_not_roofs():
    with pytest.raises(ValueError, match="bytes_per_s must be a positive number of bytes per second"):
        rl.Roof(1e12, 0, "zero bandwidth")
    with pytest.raises(TypeError, match="label must be a non-empty string"):
        rl.Roof(1e12, 1e12, "")
    with pytest.raises(TypeError, match="a roof must be a Roof, a GPU"):
        rl.roof(42)
    with pytest.raises(ValueError, match="cannot both be 0"):
        rl.Roof(1e12, 1e12, "x").seconds(0, 0)
    with pytest.raises(ValueError, match="has no fp8"):
        rl.time_at_roof_seconds(1, 1, "A100", "fp8")


# --------------------------------------------------------------------------- the one plausibility rule


def test_check_plausible_is_the_one_rule():
    r = rl.Roof(100e9, 10e9, "toy")
    rl.check_plausible(105e9, 10.5e9, r)  # exactly 5 % above both roofs: allowed
    with pytest.raises(rl.ImplausibleMeasurement, match="1.06x the memory bandwidth roof"):
        rl.check_plausible(0, 10.6e9, r)
    with pytest.raises(rl.ImplausibleMeasurement, match="1.06x the compute peak"):
        rl.check_plausible(106e9, 0, r)
    rl.check_plausible(0, 11e9, r, tolerance=0.1)  # a caller may widen it, up to the cap
    rl.check_plausible(1e9, 1e9, rl.gpu("A100"), "bf16")  # a GPUSpec with its precision


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(achieved_flops_per_s=float("nan")), ValueError, "achieved_flops_per_s must be a finite"),
        (dict(achieved_bytes_per_s=float("nan")), ValueError, "achieved_bytes_per_s must be a finite"),
        (dict(achieved_bytes_per_s=-1.0), ValueError, "achieved_bytes_per_s must be a non-negative"),
        (dict(tolerance=-0.01), ValueError, "tolerance must be a non-negative"),
        (dict(tolerance=100), ValueError, "tolerance must be a fraction from 0 to 0.25.*101x the roof"),
        (dict(tolerance=True), TypeError, "tolerance must be a fraction"),
        (dict(spec="A100"), TypeError, "spec must be a Roof .* or a GPUSpec .*pass rl.gpu\\(name\\)"),
    ],
)
def test_check_plausible_validates_its_input(kwargs, error, match):
    args = dict(achieved_flops_per_s=1e9, achieved_bytes_per_s=1e9, spec=rl.roof("A100"))
    args.update(kwargs)
    with pytest.raises(error, match=match):
        rl.check_plausible(**args)
