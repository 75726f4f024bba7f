"""Tests for roofline_lib.evidence.measured_roofs: this machine's ceilings, kernels placed on them."""

from __future__ import annotations

import math
import time
from datetime import datetime

import pytest
import torch

from roofline_lib import measured_roofs
from roofline_lib.core.roofline import ImplausibleMeasurement
from roofline_lib.evidence.measure import Timing
from roofline_lib.evidence.measured_roofs import MeasuredCeilings

# These tests time this machine and judge the times against roofs measured here: `make unit` runs
# them on their own, after the parallel part, so another test process cannot skew a reading.
pytestmark = pytest.mark.measures


def _ceilings(bytes_per_s=50e9, flops_per_s=200e9) -> MeasuredCeilings:
    """A made-up machine: 50 GB/s copy, 200 GFLOP/s matmul, so the ridge is 200 / 50 = 4 FLOP/B."""
    return MeasuredCeilings(
        bytes_per_s=bytes_per_s,
        flops_per_s=flops_per_s,
        device_name="test CPU",
        precision="fp32",
        n_threads=2,
        date="2025-01-01T00:00:00+00:00",
        torch_version="2.x",
    )


# --------------------------------------------------------------------------- ceilings


@pytest.fixture(scope="module")
def measured():
    lines = []
    start = time.perf_counter()
    ceilings = measured_roofs.measure_ceilings(seconds=0.5, device="cpu", progress=lines.append, buffer_bytes=64e6)
    return ceilings, lines, time.perf_counter() - start


def test_measure_ceilings_returns_this_machines_roofs(measured):
    c, _, _ = measured
    assert c.device == "cpu" and c.precision == "fp32"
    assert c.device_name
    assert c.n_threads == torch.get_num_threads()
    assert c.torch_version == torch.__version__
    datetime.fromisoformat(c.date)  # ISO 8601, or this raises
    # Any CPU made this century copies between 0.1 GB/s and 10 TB/s and multiplies between
    # 0.1 GFLOP/s and 100 TFLOP/s; outside that the arithmetic (2 * bytes, 2 * n**3) is wrong.
    assert 1e8 < c.bytes_per_s < 1e13
    assert 1e8 < c.flops_per_s < 1e14
    assert c.ridge == pytest.approx(c.flops_per_s / c.bytes_per_s)
    assert c.buffer_bytes == 64e6 and c.matmul_n >= 256


def test_measure_ceilings_stays_within_its_budget_and_reports_progress(measured):
    _, lines, elapsed = measured
    assert elapsed < 0.5 + 2.5  # budget + buffer setup, with room for a busy machine
    text = "\n".join(lines)
    assert "copy" in text and "matmul" in text and "done" in text


def test_measure_ceilings_rejects_bad_input():
    with pytest.raises(ValueError, match="seconds"):
        measured_roofs.measure_ceilings(seconds=0, device="cpu")
    with pytest.raises(TypeError, match="progress"):
        measured_roofs.measure_ceilings(seconds=0.1, device="cpu", progress="loud")


def test_measured_ceilings_round_trip_through_a_dict():
    c = _ceilings()
    assert MeasuredCeilings.from_dict(c.to_dict()) == c
    assert c.ridge == 4.0  # 200e9 / 50e9
    with pytest.raises(ValueError, match="unknown field"):
        MeasuredCeilings.from_dict({**c.to_dict(), "colour": "red"})
    with pytest.raises(ValueError, match="bytes_per_s"):
        MeasuredCeilings.from_dict({**c.to_dict(), "bytes_per_s": 0.0})


def test_attainable_on_measured_roofs():
    c = _ceilings()
    assert c.attainable_flops_per_s(1.0) == 50e9  # 50e9 B/s * 1 FLOP/B, under the 200e9 roof
    assert c.attainable_flops_per_s(10.0) == 200e9  # 50e9 * 10 = 500e9 is capped at 200e9


# --------------------------------------------------------------------------- kernels


def test_memory_bound_kernel_against_its_prediction():
    k = measured_roofs.measured_point("copy", flops=1e9, bytes_moved=1e9, seconds=0.040, ceilings=_ceilings())
    # intensity 1e9 / 1e9 = 1 FLOP/B, below the ridge of 4
    assert k.intensity == 1.0 and k.bound == "memory"
    # predicted = max(1e9 / 200e9, 1e9 / 50e9) = max(5 ms, 20 ms) = 20 ms
    assert k.predicted_seconds == pytest.approx(0.020)
    assert k.fraction_of_prediction == pytest.approx(0.5)  # 20 ms / 40 ms
    assert k.achieved_bytes_per_s == pytest.approx(25e9)  # 1e9 B / 0.04 s
    assert k.ceiling_flops_per_s == pytest.approx(50e9)  # 50e9 B/s * 1 FLOP/B


def test_compute_bound_kernel_against_its_prediction():
    k = measured_roofs.measured_point("gemm", flops=2e10, bytes_moved=1e9, seconds=0.125, ceilings=_ceilings())
    assert k.intensity == 20.0 and k.bound == "compute"  # 2e10 / 1e9 = 20 > 4
    # predicted = max(2e10 / 200e9, 1e9 / 50e9) = max(100 ms, 20 ms) = 100 ms
    assert k.predicted_seconds == pytest.approx(0.100)
    assert k.achieved_flops_per_s == pytest.approx(160e9)  # 2e10 / 0.125
    assert "80%" in str(k)  # 100 ms / 125 ms


def test_a_timing_can_stand_in_for_seconds():
    t = Timing(median_s=0.040, min_s=0.039, max_s=0.050, reps=10, method="test")
    k = measured_roofs.measured_point("copy", 1e9, 1e9, t, _ceilings())
    assert k.seconds == 0.040  # the median


def test_a_kernel_that_beats_the_measured_copy_roof_is_refused():
    # 1e9 B in 18 ms = 55.6 GB/s, 1.11x the 50 GB/s roof: data stayed in cache
    with pytest.raises(ImplausibleMeasurement, match="cache"):
        measured_roofs.measured_point("copy", 1e9, 1e9, 0.018, _ceilings())
    # 1e9 B in 19.5 ms = 51.3 GB/s, 1.03x: within the 5 % tolerance
    assert measured_roofs.measured_point("copy", 1e9, 1e9, 0.0195, _ceilings()).bound == "memory"


def test_a_kernel_that_beats_the_measured_matmul_roof_is_refused():
    # 2e10 FLOP in 90 ms = 222 GFLOP/s, 1.11x the 200 GFLOP/s roof
    with pytest.raises(ImplausibleMeasurement, match="GFLOP/s"):
        measured_roofs.measured_point("gemm", 2e10, 1e9, 0.090, _ceilings())


@pytest.mark.parametrize(
    "args, error, fragment",
    [
        (("k", 0, 1e9, 1.0), ValueError, "flops"),
        (("k", 1e9, -1, 1.0), ValueError, "bytes_moved"),
        (("k", 1e9, 1e9, math.nan), ValueError, "seconds"),
        (("", 1e9, 1e9, 1.0), TypeError, "name"),
    ],
)
def test_measured_point_rejects_bad_input(args, error, fragment):
    with pytest.raises(error, match=fragment):
        measured_roofs.measured_point(*args, ceilings=_ceilings())


def test_measured_point_needs_measured_ceilings():
    with pytest.raises(TypeError, match="MeasuredCeilings"):
        measured_roofs.measured_point("k", 1e9, 1e9, 1.0, ceilings="A100")


def test_best_of_keeps_the_fastest_rate_of_each_roof():
    from dataclasses import replace

    slow = _ceilings(bytes_per_s=30e9, flops_per_s=200e9)
    fast_copy = replace(slow, bytes_per_s=45e9, flops_per_s=150e9)
    best = measured_roofs.best_of(slow, fast_copy)
    assert best.bytes_per_s == 45e9  # the faster copy reading
    assert best.flops_per_s == 200e9  # the faster matmul reading
    assert best.ridge == pytest.approx(200e9 / 45e9)  # 4.44 FLOP/B


def test_best_of_refuses_nothing_mixed_devices_and_other_types():
    from dataclasses import replace

    a = _ceilings()
    with pytest.raises(ValueError, match="at least one"):
        measured_roofs.best_of()
    with pytest.raises(ValueError, match="one device only"):
        measured_roofs.best_of(a, replace(a, device_name="another cpu"))
    with pytest.raises(TypeError, match="MeasuredCeilings"):
        measured_roofs.best_of(a, 3.0)


def test_the_matmul_roof_always_reaches_the_callers_size():
    lines = []
    # a budget far too small to grow past the first size, but the caller will time 512 x 512
    measured_roofs.measure_ceilings(seconds=0.01, device="cpu", buffer_bytes=8e6, matmul_n=512, progress=lines.append)
    sizes = [line for line in lines if line.startswith("matmul: fp32 ") and "x" in line.split()[2]]
    assert any(line.startswith("matmul: fp32 512x512") for line in sizes), lines


def test_matmul_n_is_checked():
    with pytest.raises(ValueError, match="matmul_n must be at most 4096 rows on CPU"):
        measured_roofs.measure_ceilings(seconds=0.01, device="cpu", buffer_bytes=8e6, matmul_n=8192)
    with pytest.raises(TypeError, match="matmul_n must be a whole number of rows"):
        measured_roofs.measure_ceilings(seconds=0.01, device="cpu", buffer_bytes=8e6, matmul_n="big")


def test_the_matmul_limit_depends_on_the_device():
    assert measured_roofs.MAX_MATMUL_N["cpu"] == 4096  # 2 * 4096**3 = 137 GFLOP: seconds on a CPU
    assert measured_roofs.MAX_MATMUL_N["cuda"] == 32768  # 2 * 32768**3 = 70 TFLOP: ~0.1 s on an H100
    assert measured_roofs.MAX_MATMUL_N["cuda"] >= measured_roofs._GPU_MATMUL_N  # a GPU reading can be asked for again


# --------------------------------------------------------------------------- naming the device


def test_the_roofs_name_their_device_and_there_is_no_default():
    with pytest.raises(TypeError, match="device must be named"):
        measured_roofs.measure_ceilings(seconds=0.1)


def test_ceilings_say_which_device_they_belong_to():
    c = _ceilings()
    assert c.label == "test CPU (CPU)"
    assert str(c).startswith("CPU test CPU")
    from dataclasses import replace

    gpu = replace(c, device="cuda", device_name="NVIDIA H200", precision="bf16")
    assert gpu.label == "NVIDIA H200 (GPU)"
    assert str(gpu).startswith("GPU NVIDIA H200 (bf16)")  # no host thread count for a GPU


def test_a_cpu_timing_is_never_judged_against_gpu_roofs():
    from dataclasses import replace

    gpu = replace(_ceilings(), device="cuda", device_name="NVIDIA H200")
    on_cpu = Timing(median_s=0.040, min_s=0.039, max_s=0.050, reps=10, method="test", device="cpu")
    with pytest.raises(ValueError, match="timed on the CPU .* roofs of NVIDIA H200 .GPU."):
        measured_roofs.measured_point("add", 1e9, 1e9, on_cpu, gpu)
    on_gpu = replace(on_cpu, device="cuda")
    with pytest.raises(ValueError, match="timed on the GPU"):
        measured_roofs.measured_point("add", 1e9, 1e9, on_gpu, _ceilings())
    assert measured_roofs.measured_point("add", 1e9, 1e9, on_gpu, gpu).seconds == 0.040  # same device: fine


def test_gpu_matmul_readings_are_refused_on_the_cpu():
    with pytest.raises(ValueError, match="GPU products"):
        measured_roofs.matmul_readings("cpu", [1024])


def test_stream_readings_count_copy_and_add_bytes():
    copy, add = measured_roofs.stream_readings("cpu", buffer_bytes=4e6, seconds=0.05)
    # 4e6 B buffers = 1e6 fp32 elements; copy moves 2 buffers per call, add 3
    assert (copy.kernel, copy.bytes_moved) == ("copy", 8e6)
    assert (add.kernel, add.bytes_moved) == ("add", 12e6)
    assert copy.best_bytes_per_s == pytest.approx(8e6 / copy.timing.min_s)
    assert copy.timing.device == "cpu" and copy.timing.reps >= 3
