"""The merged kernel window against plain interval arithmetic: zero-length kernels, kernels that
start and end at the same instant, overlapping streams and several devices.

The property tests draw random kernels on an integer grid of microseconds (so that ties are
frequent) with fixed seeds, and compare :func:`roofline_lib.evidence.traces.device_timeline` with
a plain merge of intervals and with a cell-by-cell count of who runs in each microsecond.
"""

from __future__ import annotations

import random

import pytest

from roofline_lib import diagnose as D
from roofline_lib import traces as T

KINDS = {
    "compute": ("kernel", "gemm"),
    "copy": ("gpu_memset", "Memset (Device)"),
    "communication": ("kernel", "ncclDevKernel_AllReduce"),
}


def _kernel(kind, ts, dur, device=0):
    cat, name = KINDS[kind]
    return {"ph": "X", "cat": cat, "name": name, "ts": float(ts), "dur": float(dur), "pid": device, "tid": 7,
            "args": {"device": device}}  # fmt: skip


def _merge(intervals):
    """A plain interval merge: the sorted, disjoint union of (start, end) pairs of positive length."""
    out = []
    for a, b in sorted((a, b) for a, b in intervals if b > a):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _length(intervals) -> float:
    return sum(b - a for a, b in _merge(intervals))


def _spans(kernels, kinds):
    return [T.span(k) for k in kernels if T.kernel_kind(k) in kinds]


def _random_kernels(rng, n):
    # a third of the kernels last 0 us; starts on a grid of 30 us so that many share a time stamp
    return [_kernel(rng.choice(list(KINDS)), rng.randrange(30), rng.choice([0, 0, 0, 1, 2, 3, 5, 8])) for _ in range(n)]


@pytest.mark.parametrize("seed", range(40))
def test_busy_time_and_the_piles_match_a_plain_interval_merge(seed):
    kernels = _random_kernels(random.Random(seed), random.Random(seed).randrange(1, 30))
    tl = T.device_timeline(kernels)
    everything = _spans(kernels, KINDS)
    compute, copy = _spans(kernels, {"compute"}), _spans(kernels, {"copy"})
    assert tl.window == max(b for _, b in everything) - min(a for a, _ in everything)
    assert tl.busy == pytest.approx(_length(everything))
    # computation first, then copies no computation covers, then collectives neither covers
    assert tl.by_kind["compute"] == pytest.approx(_length(compute))
    assert tl.by_kind["copy"] == pytest.approx(_length(compute + copy) - _length(compute))
    assert tl.by_kind["communication"] == pytest.approx(_length(everything) - _length(compute + copy))
    assert sum(tl.exposed.values()) == pytest.approx(tl.busy)


@pytest.mark.parametrize("seed", range(40, 60))
def test_each_kernel_gets_its_even_share_of_every_microsecond_it_runs(seed):
    kernels = _random_kernels(random.Random(seed), 25)
    tl = T.device_timeline(kernels)
    expected = {id(k): 0.0 for k in kernels}
    for t in range(40):  # each 1 us cell: the kernels running in it, the first kind by priority
        running = [k for k in kernels if k["ts"] <= t < k["ts"] + k["dur"]]
        for kind in ("compute", "copy", "communication"):
            mine = [k for k in running if T.kernel_kind(k) == kind]
            if mine:
                for k in mine:
                    expected[id(k)] += 1.0 / len(mine)
                break
    assert tl.exposed == pytest.approx(expected)
    assert all(tl.exposed[id(k)] == 0.0 for k in kernels if k["dur"] == 0)


def test_a_zero_length_kernel_leaves_the_gaps_after_it_idle():
    # a 0 us memset at 10, GEMMs 10..20 and 100..110: window 10..110 = 100 us, busy 20 us, idle 80 us.
    # Read with the memset's end before its start, it never closed: busy 100 us, idle 0.
    kernels = [_kernel("copy", 10, 0), _kernel("compute", 10, 10), _kernel("compute", 100, 10)]
    tl = T.device_timeline(kernels)
    assert (tl.window, tl.busy, tl.idle) == (100.0, 20.0, 80.0)
    assert tl.by_kind == {"compute": 20.0, "copy": 0.0, "communication": 0.0}


def test_kernels_with_identical_time_stamps_split_their_time():
    # two GEMMs both 0..10, a copy 10..15 starting as they end, a zero-length fill at 15:
    # 5 us each to the GEMMs, 5 us to the copy, window 0..15, nothing idle
    kernels = [_kernel("compute", 0, 10), _kernel("compute", 0, 10), _kernel("copy", 10, 5), _kernel("copy", 15, 0)]
    tl = T.device_timeline(kernels)
    assert [tl.exposed[id(k)] for k in kernels] == [5.0, 5.0, 5.0, 0.0]
    assert (tl.window, tl.idle) == (15.0, 0.0)


def _trace(kernels):
    return {"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}, {"id": 1, "name": "NVIDIA H100 80GB HBM3"}],
            "traceEvents": kernels}  # fmt: skip


def test_a_two_kernel_trace_with_a_zero_length_fill_keeps_its_verdict():
    # a 0 us fill at 0 and one 10 us kernel at 90: window 0..100, busy 10 us -- idle 90 %, overhead.
    # With the fill never closed the window read as busy and the verdict flipped to unclassified.
    d = D.diagnose(_trace([_kernel("copy", 0, 0), _kernel("compute", 90, 10)]))
    assert d.shares["overhead"] == pytest.approx(0.9) and d.regime == "overhead"


def test_several_devices_each_have_their_own_window():
    # device 0: 0..10 and 20..30 (window 30, busy 20); device 1: 1000..1040 (window 40, busy 40).
    # Windows are summed per device, never spanned across them: 70 us, 10 us idle -- not 1040 us.
    kernels = [_kernel("compute", 0, 10), _kernel("compute", 20, 10), _kernel("compute", 1000, 40, device=1)]
    trace = D.read_trace(_trace(kernels))
    assert trace.window_seconds == pytest.approx(70e-6) and trace.busy_seconds == pytest.approx(60e-6)
    assert any("each device" in note for note in trace.notes)
