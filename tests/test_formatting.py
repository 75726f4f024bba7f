"""The one place a value is written for a reader: times, rates, sizes, plain numbers."""

from roofline_lib import measure, plots, roofline, widgets
from roofline_lib.core import formatting as fmt
from roofline_lib.core import hardware


def test_seconds_picks_the_unit_with_three_figures():
    assert fmt.seconds(2.5) == "2.5 s"
    assert fmt.seconds(0.0123) == "12.3 ms"  # 0.0123 s * 1e3
    assert fmt.seconds(4.56e-5) == "45.6 us"
    assert fmt.seconds(7e-9) == "7 ns"


def test_rates_and_sizes():
    assert fmt.rate(3.35e12, "B/s") == "3.35 TB/s"
    assert fmt.rate(51.3e9, "FLOP/s") == "51.3 GFLOP/s"
    assert fmt.flops_rate(0.2e12) == "0.2 TFLOP/s"  # from 0.1 TFLOP/s up, in TFLOP/s
    assert fmt.flops_rate(0.05e12) == "50 GFLOP/s"
    assert fmt.num(1979.4) == "1,979" and fmt.num(0.3) == "0.3" and fmt.num(-2500) == "-2,500"
    assert fmt.gib(80 * 2**30) == "80 GiB"


def test_the_modules_use_the_one_copy():
    assert measure._fmt_seconds is fmt.seconds
    assert roofline._rate is fmt.rate
    assert plots._num is fmt.num and plots._flops_rate is fmt.flops_rate
    assert widgets._fmt is fmt.num


def test_to_unit_scales_an_si_value_for_a_reader_and_back():
    assert fmt.to_unit(2.5e9, "GB") == 2.5
    assert fmt.to_unit(3 * 2**30, "GiB") == 3  # 3 GiB
    assert fmt.to_unit(0.0123, "ms") == 12.3
    assert fmt.from_unit(80, "GB") == 8e10
    assert fmt.from_unit(fmt.to_unit(1.979e15, "TFLOP/s"), "TFLOP/s") == 1.979e15
    assert fmt.from_unit(400, "Gb/s") == 50e9  # InfiniBand NDR prints gigabits: 400 / 8 = 50 GB/s
    assert fmt.GIB == 2**30 and hardware.GIB is fmt.GIB  # one constant, exported by hardware too


def test_to_unit_refuses_a_unit_it_does_not_know_by_name():
    import pytest

    with pytest.raises(ValueError, match="unit must be one of .*got 'gigabytes'"):
        fmt.to_unit(1.0, "gigabytes")
    with pytest.raises(ValueError, match="got 'Gb'"):
        fmt.from_unit(1.0, "Gb")
