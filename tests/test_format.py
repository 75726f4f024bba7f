"""The one place a value is written for a reader: times, rates, sizes, plain numbers."""

from roofline_lib import _format as fmt
from roofline_lib import measure, plots, roofline, widgets


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
