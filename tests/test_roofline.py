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
