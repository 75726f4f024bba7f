"""Reading Kineto traces event by event: the file (plain or gzip, by its bytes), the events sorted by
kind under both spellings, ties by correlation id, the complete steps and the merged window.

The traces are built in the shape torch.profiler writes (:mod:`kineto_events`).
"""

from __future__ import annotations

import gzip
import json

import pytest
from kineto_events import MM, Builder

from roofline_lib import traces as T


def test_an_mtia_trace_is_refused_by_name_and_says_what_to_pass():
    trace = {
        "deviceProperties": [{"id": 17, "name": "ARTEMIS"}],
        "traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
            {"ph": "X", "cat": "mtia_ccp_events", "name": "k", "pid": 2, "tid": 1, "ts": 1, "dur": 3},
        ],
    }
    with pytest.raises(ValueError, match=r"MTIA accelerator \(ARTEMIS\).*Pass a trace recorded on a GPU.*roof="):
        T.sort_events(T.load_trace(trace))


def test_truncated_and_mislabelled_gzip(tmp_path):
    b = Builder()
    b.op(*MM, ts=0.0, dur=5.0, kernel="ampere_sgemm", k_ts=10.0, k_dur=10.0)
    whole = gzip.compress(json.dumps(b.trace()).encode())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match=r"cut\.json\.gz' is a truncated or corrupt gzip file.*pass a complete"):
        T.load_trace(cut)
    plain = tmp_path / "plain.json.gz"  # named .gz, written plain: read by its bytes, not its name
    plain.write_text(json.dumps(b.trace()))
    assert T.load_trace(plain) == b.trace()
    zipped = tmp_path / "zipped.json"  # gzip without the suffix
    zipped.write_bytes(whole)
    assert T.load_trace(zipped) == b.trace()


def test_device_timeline_counts_overlap_once():
    ks = [
        {"cat": "kernel", "name": "a", "ts": 0.0, "dur": 10.0},
        {"cat": "kernel", "name": "b", "ts": 5.0, "dur": 10.0},
        {"cat": "kernel", "name": "ncclKernel_x", "ts": 30.0, "dur": 10.0},
    ]
    tl = T.device_timeline(ks)
    # window 0..40; busy 0..15 and 30..40 = 25; a and b split 5..10 evenly: 7.5 each
    assert (tl.window, tl.busy, tl.idle) == (40.0, 25.0, 15.0)
    assert sorted(tl.exposed.values()) == [7.5, 7.5, 10.0]
    assert tl.by_kind == {"compute": 15.0, "copy": 0.0, "communication": 10.0}


def test_events_are_sorted_by_kind_in_both_spellings():
    # one op with its launch and kernel, plus a step annotation: 1 of each kind, new and old names alike
    for old in (False, True):
        b = Builder(old=old)
        b.step(1, 0.0, 100.0)
        b.op(*MM, ts=10.0, dur=5.0, kernel="ampere_sgemm", k_ts=20.0, k_dur=10.0)
        events = T.sort_events(T.load_trace(b.trace()))
        assert [len(x) for x in (events.cpu_ops, events.kernels, events.launches, events.steps)] == [1, 1, 1, 1]
        assert events.meta["deviceProperties"][0]["name"] == "NVIDIA A100-PG509-200"


def test_a_kernel_ties_to_its_launch_by_correlation_and_to_the_op_around_the_launch():
    # the kernel's External id (99) names no op; its correlation id names the launch at 11 us,
    # inside aten::mm (10..15 us) on the same thread
    b = Builder()
    b.op(*MM, ts=10.0, dur=5.0, kernel="ampere_sgemm", k_ts=20.0, k_dur=10.0, ext=99)
    (tie,) = T.tie_kernels(T.sort_events(T.load_trace(b.trace())))
    assert tie.launch["name"] == "cudaLaunchKernel" and tie.op["name"] == "aten::mm"


def test_step_bounds_leave_the_last_step_out():
    # steps #1 (0..100), #2 (100..200), #3 (200..300): #3 is left out, the span is 0..200, 2 steps
    b = Builder()
    for n in (1, 2, 3):
        b.step(n, 100.0 * (n - 1), 100.0)
    assert T.step_bounds(T.sort_events(T.load_trace(b.trace()))) == (0.0, 200.0, 2)
    assert T.step_bounds(T.sort_events(T.load_trace(Builder().trace()))) is None


def test_kernel_kinds_and_tf32_names():
    assert T.kernel_kind({"cat": "gpu_memcpy", "name": "Memcpy DtoD"}) == "copy"
    assert T.kernel_kind({"cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL"}) == "communication"
    assert T.kernel_kind({"cat": "kernel", "name": "ampere_sgemm_64x64_nn"}) == "compute"
    assert T.runs_tf32("cutlass_80_tensorop_s1688gemm_64x64") and not T.runs_tf32("ampere_sgemm_64x64_nn")
