"""Energy read live from a counter: tested with a fake counter, a fake NVML and a fake /sys/class/powercap."""

from __future__ import annotations

import sys
import types

import pytest

from roofline_lib.evidence import energy_live as live


class FakeCounter:
    """A counter that reads out a script of readings, one tuple per call (tests only)."""

    def __init__(self, *readings, wrap_joules=(None,)):
        self._readings = list(readings)
        self.wrap_joules = wrap_joules
        self.name = "a fake counter"

    def readings(self):
        return self._readings.pop(0)


def test_measure_energy_reads_the_counter_around_the_call():
    calls = []
    m = live.measure_energy(lambda: calls.append(1), FakeCounter((100.0,), (130.0,)))
    assert calls == [1] and m.joules == 30.0  # 130 J - 100 J
    assert m.seconds > 0 and m.average_watts == pytest.approx(30.0 / m.seconds)
    assert m.counter == "a fake counter" and "30 J" in str(m)


def test_a_counter_that_wraps_is_counted_once_round():
    # RAPL counts up to its range (here 10 J), then starts again at 0: 9.5 J -> 0.5 J is 0.5 + 10 - 9.5 = 1 J
    assert live.energy_between((9.5,), (0.5,), (10.0,)) == pytest.approx(1.0)
    two = FakeCounter((9.5, 3.0), (0.5, 4.0), wrap_joules=(10.0, None))  # two domains: one wraps, one does not
    assert live.measure_energy(lambda: None, two).joules == pytest.approx(1.0 + 1.0)


def test_a_counter_going_backwards_is_refused():
    with pytest.raises(ValueError, match=r"went backwards in domain 0: after=5 J < before=7 J"):
        live.energy_between((7.0,), (5.0,), (None,))
    with pytest.raises(ValueError, match="went backwards"):
        live.energy_between((12.0,), (5.0,), (10.0,))  # a reading above its own range is no wrap
    with pytest.raises(ValueError, match="one value per domain, got 1, 2 and 1"):
        live.energy_between((1.0,), (2.0, 3.0), (None,))
    with pytest.raises(ValueError, match="before must be a non-negative number of joules"):
        live.energy_between((-1.0,), (2.0,), (None,))


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(TypeError, match="fn must be a callable"):
        live.measure_energy(3, FakeCounter((0.0,), (1.0,)))
    with pytest.raises(TypeError, match="counter must have readings"):
        live.measure_energy(lambda: None, object())


def test_rapl_reads_microjoules_of_each_package_and_its_range(tmp_path):
    for name, uj in (("intel-rapl:0", 2_500_000), ("intel-rapl:1", 500_000), ("intel-rapl:0:0", 7)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "energy_uj").write_text(f"{uj}\n")
        (tmp_path / name / "max_energy_range_uj").write_text("262143328850\n")
    counter = live.RAPLCounter(tmp_path)
    assert counter.readings() == (2.5, 0.5)  # 2,500,000 uJ and 500,000 uJ; the subzone intel-rapl:0:0 is left out
    assert counter.wrap_joules == (262143.32885, 262143.32885)
    assert counter.name == "RAPL energy of 2 CPU package(s)"


def test_nvml_reads_millijoules_through_pynvml(monkeypatch):
    fake = types.ModuleType("pynvml")
    fake.NVMLError = type("NVMLError", (Exception,), {})
    fake.nvmlInit = lambda: None
    fake.nvmlDeviceGetCount = lambda: 2
    fake.nvmlDeviceGetHandleByIndex = lambda i: i
    fake.nvmlDeviceGetTotalEnergyConsumption = lambda handle: 5000 + handle  # millijoules
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    counter = live.NVMLCounter()
    assert counter.readings() == (5.0, 5.001)  # 5000 mJ and 5001 mJ
    assert counter.wrap_joules == (None, None)


def test_no_counter_says_so(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml fails, as on a machine without it
    monkeypatch.setattr(live, "POWERCAP", tmp_path)
    with pytest.raises(
        live.NoEnergyCounter, match=r"no energy counter on this machine \(no NVML device, no /sys/class/powercap\)"
    ):
        live.measure_energy(lambda: None)
    with pytest.raises(live.NoEnergyCounter, match="pip install nvidia-ml-py"):
        live.NVMLCounter()


@pytest.mark.gpu
def test_a_real_gpu_counter_reads_a_second_of_idle():  # pragma: no cover - needs an NVIDIA GPU and pynvml
    try:
        counter = live.NVMLCounter()
    except live.NoEnergyCounter as exc:
        pytest.skip(f"no NVML counter here: {exc}")
    import time

    m = live.measure_energy(lambda: time.sleep(1.0), counter)
    per_gpu_watts = m.average_watts / len(counter.wrap_joules)
    assert 10 < per_gpu_watts < 1200  # an idle GPU draws tens of watts, never more than a TDP
