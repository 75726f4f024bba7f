"""Tests for roofline_lib.evidence.measure: timing a function on the device it names."""

from __future__ import annotations

import time

import pytest
import torch

from roofline_lib import measure
from roofline_lib.evidence.measure import Timing

# These tests time this machine: `make unit` runs them on their own, after the parallel part, so
# another test process cannot skew a reading.
pytestmark = pytest.mark.measures

needs_gpu = pytest.mark.skipif(not measure.has_cuda(), reason="needs a CUDA GPU (torch sees none)")


# --------------------------------------------------------------------------- time_fn


def test_time_fn_cpu_reports_the_median_of_the_timed_calls():
    calls = []

    def nap():
        calls.append(None)
        time.sleep(0.002)

    t = measure.time_fn(nap, device="cpu", warmup=2, reps=5)
    assert isinstance(t, Timing)
    assert len(calls) == 2 + 5  # warm-up calls are made but not timed
    assert t.reps == 5
    assert t.median_s >= 0.002  # sleep(0.002) never returns early
    assert t.min_s <= t.median_s <= t.max_s
    assert "median of 5" in t.method


def test_time_fn_rotates_through_argument_sets_in_order():
    seen = []
    # warm-up 1 call takes set 0; the 4 timed calls take sets 1, 2, 0, 1
    measure.time_fn(seen.append, device="cpu", warmup=1, reps=4, rotate=[("a",), ("b",), ("c",)])
    assert seen == ["a", "b", "c", "a", "b"]


def test_time_fn_argument_sets_can_be_keywords_or_single_values():
    seen = []
    measure.time_fn(
        lambda x, scale=1: seen.append(x * scale), device="cpu", warmup=0, reps=2, rotate=[{"x": 2, "scale": 10}, 3]
    )
    assert seen == [20, 3]  # 2 * 10 = 20, then 3 * 1 = 3


def test_time_fn_factory_builds_enough_sets_to_outgrow_the_cache(monkeypatch):
    monkeypatch.setattr(measure, "_cache_bytes", lambda device: 4 * 2**20)  # pretend: a 4 MiB cache
    made = []

    def factory():
        t = torch.zeros(2**18)  # 2**18 fp32 = 2**20 bytes = 1 MiB
        made.append(t)
        return (t,)

    seen = set()
    t = measure.time_fn(lambda x: seen.add(id(x)), device="cpu", warmup=0, reps=20, rotate=factory)
    # 2 * 4 MiB / 1 MiB = 8 sets cover twice the cache, + 1 = 9
    assert len(made) == 9
    assert len(seen) == 9  # 20 timed calls cycle through all nine
    assert "rotating 9 argument sets" in t.method


def test_time_fn_factory_never_builds_fewer_than_two_sets(monkeypatch):
    monkeypatch.setattr(measure, "_cache_bytes", lambda device: 1024)
    made = []
    measure.time_fn(lambda x: None, device="cpu", reps=1, rotate=lambda: made.append(1) or (torch.zeros(2**20),))
    assert len(made) == 2  # 4 MiB per set already dwarfs a 1 KiB cache, but rotation needs two


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        ({"reps": 0}, ValueError, "reps"),
        ({"warmup": -1}, ValueError, "warmup"),
        ({"reps": 2.5}, TypeError, "reps"),
        ({"rotate": []}, ValueError, "rotate"),
        ({"rotate": "abc"}, TypeError, "rotate"),
        ({"device": "tpu"}, ValueError, "device"),
    ],
)
def test_time_fn_rejects_bad_input_naming_the_parameter(kwargs, error, fragment):
    with pytest.raises(error, match=fragment):
        measure.time_fn(lambda *a: None, **{"device": "cpu", **kwargs})


def test_time_fn_needs_a_callable():
    with pytest.raises(TypeError, match="fn must be callable"):
        measure.time_fn(42, device="cpu")


@pytest.mark.skipif(measure.has_cuda(), reason="checks the refusal on a machine without a GPU")
def test_asking_for_cuda_without_a_gpu_is_refused():
    with pytest.raises(ValueError, match="CUDA"):
        measure.time_fn(lambda: None, device="cuda")


@needs_gpu
@pytest.mark.gpu
def test_time_fn_on_cuda_uses_do_bench_and_returns_seconds():  # pragma: no cover - GPU only
    x = torch.randn(4096, 4096, device="cuda")
    t = measure.time_fn(lambda: x @ x, device="cuda")
    assert "do_bench" in t.method
    # 2 * 4096**3 = 137 GFLOP: between 10 us (13.7 PFLOP/s) and 1 s on any GPU, so seconds, not ms
    assert 1e-5 < t.median_s < 1.0


def test_cache_sizes_are_read_the_way_the_kernel_writes_them():
    assert measure._parse_cache_size("32768K") == 32768 * 1024  # = 33554432
    assert measure._parse_cache_size("1M") == 2**20
    assert measure._last_level_cache_bytes() > 0


# --------------------------------------------------------------------------- naming the device


def test_timing_names_its_device_and_there_is_no_default():
    with pytest.raises(TypeError, match="device must be named"):
        measure.time_fn(lambda: None)
    t = measure.time_fn(lambda: None, device="cpu", warmup=0, reps=3)
    assert t.device == "cpu" and "on CPU" in str(t)
