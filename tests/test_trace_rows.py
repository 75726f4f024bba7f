"""Profiles read into rows: GPU kernels tied to the ops that launched them and charged their exposed
time, CPU ops their self time, each row counted from its recorded shapes -- and the verdicts that
follow from what was read.

Each trace here is built event by event in the shape torch.profiler writes (:mod:`kineto_events`),
small enough that every share is counted by hand in the comment beside its assertion.
"""

from __future__ import annotations

import gzip
import json

import pytest
from kineto_events import A100_40, BF16, MM, Builder, gemm, simple_trace

import roofline_lib as rl
from roofline_lib import diagnose as D
from roofline_lib import trace_rows as R


def test_a100_pg509_board_is_the_40gb_a100_and_new_entries_are_cited():
    assert rl.match_gpu(A100_40).name == "A100 40GB SXM"
    assert rl.match_gpu("Tesla V100-SXM2-16GB").name == "V100 SXM2 16GB"
    for key in ("v100-sxm2-32gb", "a10", "mi250x", "mi250"):
        spec = rl.gpu(key)
        assert "data" in spec.source.lower() and spec.notes  # a datasheet named, conventions stated
    assert rl.gpu("A10").peak_flops_per_s("bf16") == 125e12  # dense: the datasheet's 250 sparse halved
    assert rl.gpu("A10").peak_flops_per_s("bf16", sparse=True) == 250e12
    assert not rl.gpu("MI250X").sparse_flops_per_s  # CDNA 2 prints no sparse figures


def test_kernels_tie_through_correlation_not_a_colliding_external_id():
    # the kernel's External id (1) is the id of an aten::detach op on another thread: the old
    # reader tied the GEMM to it; the launch's correlation id and the op enclosing it say aten::mm
    b = Builder()
    b.op(*MM, ts=100.0, dur=10.0, kernel="cutlass_80_tensorop_s1688gemm_64x64", k_ts=120.0, k_dur=100.0, ext=1)
    b.events.append(
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::detach",
            "pid": 1,
            "tid": 2,
            "ts": 5.0,
            "dur": 1.0,
            "args": {"External id": 1, "Input Dims": [[4]], "Input type": ["float"]},
        }
    )
    b.events[0]["args"]["External id"] = 99
    trace = R.read_trace(b.trace())
    assert [r.name for r in trace.rows] == ["aten::mm"]
    assert trace.rows[0].flops == 134_217_728


def test_tf32_kernel_names_read_fp32_gemms_under_the_tf32_roof():
    def one(kernel):
        b = Builder()
        b.op(*MM, ts=0.0, dur=10.0, kernel=kernel, k_ts=20.0, k_dur=10.0)
        return D.diagnose(b.trace())

    tf32, fp32 = (
        one("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>"),
        one("ampere_sgemm_64x64_nn"),
    )
    # 56.9 FLOP/B: below the TF32 ridge (100.3), above the fp32 one (12.5)
    assert tf32.rows[0].precision == "tf32" and tf32.regime == "memory"
    assert fp32.rows[0].precision == "fp32" and fp32.regime == "compute"
    assert tf32.roof_label.startswith("A100 40GB SXM tf32 (ridge 100") and tf32.precisions == {"tf32": 1.0}
    assert any(line.startswith("precision of the placed work: tf32 100%") for line in tf32.evidence)


def test_overlapping_streams_share_the_merged_window_and_collectives_pile_apart():
    # window 0..100 us. GEMM on stream 7 runs 0..40; an all-reduce on stream 20 runs 20..70;
    # a copy runs 90..100. Merged: busy 0..70 and 90..100 = 80 us, idle 20 us (not 100 - 40 - 50 - 10 = 0).
    # Exposed: GEMM 40 us; all-reduce 40..70 = 30 us (20..40 hides behind the GEMM); copy 10 us.
    b = Builder()
    b.op(*MM, ts=0.0, dur=5.0, kernel="ampere_sgemm", k_ts=0.0, k_dur=40.0)
    b.op(
        "record_param_comms",
        [],
        [],
        ts=6.0,
        dur=5.0,
        kernel="ncclKernel_AllReduce_RING_LL_Sum_float",
        k_ts=20.0,
        k_dur=50.0,
        stream=20,
        args={"Collective name": "allreduce", "In msg nelems": 1_000_000, "dtype": "Float", "Group size": 8},
    )
    b.op(
        "aten::copy_",
        [[1000], [1000]],
        ["float", "float"],
        ts=12.0,
        dur=5.0,
        kernel="Memcpy DtoD",
        k_ts=90.0,
        k_dur=10.0,
    )
    b.events[-1]["cat"] = "gpu_memcpy"
    b.events[-1]["args"]["bytes"] = 4000
    trace = R.read_trace(b.trace())
    assert trace.window_seconds == pytest.approx(100e-6) and trace.busy_seconds == pytest.approx(80e-6)
    seconds = {r.name: r.seconds for r in trace.rows}
    assert seconds == pytest.approx(
        {"aten::mm": 40e-6, "ncclKernel_AllReduce_RING_LL_Sum_float": 30e-6, "Memcpy DtoD": 10e-6}
    )
    d = D.diagnose(trace)
    assert d.shares["communication"] == pytest.approx(0.30) and d.shares["overhead"] == pytest.approx(0.20)
    assert d.shares["memory"] == pytest.approx(0.10) and d.shares["compute"] == pytest.approx(0.40)  # fp32 GEMM
    comm = next(line for line in d.evidence if line.startswith("communication: 30% exposed"))
    assert "pass link=" in comm
    # over NVLink 3 (300 GB/s one way): 4 MB all-reduce in 50 us over 8 ranks is 80 GB/s of algorithm
    # bandwidth, times 2 * 7 / 8 = 140 GB/s of bus bandwidth: 47 % of the link
    with_link = D.diagnose(trace, link="NVLink 3")
    line = next(x for x in with_link.evidence if x.startswith("communication"))
    assert "bus bandwidth of 140 GB/s, 47% of the NVLink 3" in line


def test_only_kernels_of_complete_profiler_steps_are_read():
    # steps #1 (0..100) and #2 (100..200); #2 is the last, left out as HTA leaves it out. A kernel
    # launched before #1 (warm-up) and one launched in #2 are not read: one 10 us GEMM remains
    b = Builder()
    b.step(1, 0.0, 100.0)
    b.step(2, 100.0, 100.0)
    b.op(*MM, ts=-50.0, dur=5.0, kernel="ampere_sgemm", k_ts=-40.0, k_dur=10.0)
    b.op(*MM, ts=10.0, dur=5.0, kernel="ampere_sgemm", k_ts=20.0, k_dur=10.0)
    b.op(*MM, ts=110.0, dur=5.0, kernel="ampere_sgemm", k_ts=120.0, k_dur=10.0)
    trace = R.read_trace(b.trace())
    assert trace.busy_seconds == pytest.approx(10e-6) and trace.rows[0].calls == 1
    assert trace.notes[0] == "read 1 kernels of 1 complete ProfilerSteps (2 launched outside them left out)"
    assert R.read_trace(b.trace(), whole=True).busy_seconds == pytest.approx(30e-6)


def test_the_2022_categories_are_read():
    # Operator / Runtime / Kernel and a lower-case "external id": same reading as today's names
    b = Builder(old=True)
    b.op(*MM, ts=0.0, dur=5.0, kernel="ampere_sgemm", k_ts=10.0, k_dur=10.0)
    d = D.diagnose(b.trace())
    assert [r.name for r in d.rows] == ["aten::mm"] and d.regime == "compute"


def test_a_compiled_region_s_triton_kernels_are_placed_by_name_with_the_reason():
    # torch.compile's kernels run inside CompiledFunctionBackward, whose counts are not in the trace:
    # a triton_poi_ (pointwise) kernel is memory by its name, a triton_tem_ (GEMM template) compute
    b = Builder()
    b.op("CompiledFunctionBackward", [], [], ts=0.0, dur=20.0, kernel="triton_poi_fused_0", k_ts=30.0, k_dur=10.0)
    b.op("CompiledFunction", [], [], ts=50.0, dur=20.0, kernel="triton_tem_fused_mm_1", k_ts=60.0, k_dur=30.0)
    d = D.diagnose(b.trace())
    # window 30..90 = 60 us: 10 us memory, 30 us compute, 20 us idle
    assert d.shares["memory"] == pytest.approx(10 / 60) and d.shares["compute"] == pytest.approx(30 / 60)
    assert d.placed_by == ("name", "name") and d.by_name_share("compute") == pytest.approx(0.5)
    assert [r.note for r in d.rows] == [
        "compiled region: counts are inside CompiledFunctionBackward (profile without torch.compile to count them)",
        "compiled region: counts are inside CompiledFunction (profile without torch.compile to count them)",
    ]
    line = next(x for x in d.evidence if x.startswith("placed by kernel name only"))
    assert "compute 50% (GEMM template 50%: triton_tem_fused_mm_1 x1)" in line
    assert "memory 17% (fused element-wise 17%: triton_poi_fused_0 x1)" in line
    assert str(d).startswith("mixed: compute 50%, memory 17%, overhead 33%")


def test_an_op_without_a_formula_is_unclassified_naming_the_op():
    b = Builder()
    b.op("aten::_fused_moe", [[64, 64]], ["float"], ts=0.0, dur=5.0, kernel="moe_kernel", k_ts=10.0, k_dur=10.0)
    d = D.diagnose(b.trace())
    assert d.evidence[-1].endswith("no formula for aten::_fused_moe")


def test_a_launch_takes_the_innermost_counted_op_around_it_by_time():
    # aten::linear (0..50) encloses aten::t (2..4) and aten::addmm (10..40); the launch at 11 is
    # inside addmm; the kernel takes addmm's count, never linear's or t's
    b = Builder()
    b.op("aten::addmm", [[256], [256, 1024], [1024, 256]], ["float"] * 3, ts=10.0, dur=30.0, kernel="ampere_sgemm",
         k_ts=50.0, k_dur=10.0)  # fmt: skip
    b.events += [
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 0.0, "dur": 50.0, "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::t", "pid": 1, "tid": 1, "ts": 2.0, "dur": 2.0,
         "args": {"Input Dims": [[1024, 256]], "Input type": ["float"]}},
    ]  # fmt: skip
    trace = R.read_trace(b.trace())
    assert [(r.name, r.family) for r in trace.rows] == [("aten::addmm", "matmul")]
    # 2 * 256 * 1024 * 256 FLOP of the product plus 256 * 256 adds of the bias
    assert trace.rows[0].flops == 134_217_728 + 65_536


def test_a_link_name_refused_says_what_to_pass():
    b = Builder()
    b.op("record_param_comms", [], [], ts=0.0, dur=5.0, kernel="ncclKernel_AllReduce", k_ts=10.0, k_dur=10.0)
    with pytest.raises(ValueError, match="NVLink"):
        D.diagnose(b.trace(), link="carrier pigeon")


def test_a_fused_op_without_a_formula_is_unclassified_work_not_dispatch():
    # A CPU trace (no kernels): op self time = its duration less its children's.
    # _addmm_activation (no formula) runs its GEMM itself for 950 us and calls a 50 us clamp_min_:
    # its own 950 us is work nobody can count -> unclassified, not "ops that move no data".
    # linear (no formula) spends 20 us dispatching a 500 us addmm -> dispatch, as before.
    def op(name, dims, types, ts, dur):
        args = {"Input Dims": dims, "Input type": types}
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}

    f32 = "float"
    x, w, b = [4096, 1024], [1024, 1024], [1024]
    trace = {
        "schemaVersion": 1,
        "traceEvents": [
            op("aten::_addmm_activation", [b, x, w], [f32, f32, f32], 0.0, 1000.0),
            op("aten::clamp_min_", [[4096, 1024], []], [f32, "Scalar"], 950.0, 50.0),
            op("aten::linear", [x, w, b], [f32, f32, f32], 1000.0, 520.0),
            op("aten::addmm", [b, x, w], [f32, f32, f32], 1010.0, 500.0),
        ],
    }
    rows = {r.name: r for r in R.read_trace(trace).rows}
    assert rows["aten::_addmm_activation"].flops is None  # unclassified: no formula for this op
    assert rows["aten::_addmm_activation"].seconds == pytest.approx(950e-6)  # 1000 - 50 us of self time
    assert rows["aten::linear"].family == "dispatch" and rows["aten::linear"].seconds == pytest.approx(20e-6)
    assert rows["aten::addmm"].family == "matmul"
    # an in-place element-wise op is counted like its out-of-place form: 4096 * 1024 values, 1 FLOP
    # each, read and written in place: 2 * 4 bytes per value
    assert rows["aten::clamp_min_"].flops == 4096 * 1024 and rows["aten::clamp_min_"].bytes_moved == 8 * 4096 * 1024


def test_trace_kernels_with_gaps_is_overhead():
    # 10 GEMMs of 200 us each, one every 800 us: the GPU is busy 2 ms of a 7.4 ms window (10 * 800 - 600)
    trace = simple_trace([(*gemm(4096, 4096, 4096), 800.0 * i, 200.0) for i in range(10)])
    d = D.diagnose(trace)
    assert d.regime == "overhead"
    assert d.shares["overhead"] == pytest.approx(5.4 / 7.4)  # idle 7.4 - 2.0 ms
    assert "idle gaps between kernels" in "\n".join(d.evidence)
    assert d.timeline == "device" and "H100 SXM bf16" in d.roof_label


def test_trace_busy_stream_of_short_memory_kernels_is_memory_not_overhead():
    # 3600 adds over 2**20 bf16 values, 6 us each, back to back: no idle time, and 1/6 FLOP/B
    add = ("aten::add", [[2**20], [2**20], []], [BF16, BF16, "Scalar"])
    d = D.diagnose(simple_trace([(*add, 6.0 * i, 6.0) for i in range(3600)]))
    assert d.regime == "memory" and d.shares["memory"] == pytest.approx(1.0)
    assert d.shares["overhead"] == 0.0  # a short kernel is not overhead
    assert "fuse" in d.remedy


def test_trace_gemm_dominated_step_is_compute():
    # 8 GEMMs of 2048 x 4096 x 4096 bf16 (intensity ~1170 FLOP/B > H100 ridge 295) for 100 us each,
    # 8 layer norms of 2048 x 4096 for 10 us each, 2 us gaps: 800 us compute of ~ 912 us
    events, t = [], 0.0
    for _ in range(8):
        events.append((*gemm(2048, 4096, 4096), t, 100.0))
        t += 102.0
        events.append(("aten::native_layer_norm", [[2048, 4096], [4096], [4096]], [BF16] * 3, t, 10.0))
        t += 12.0
    d = D.diagnose(simple_trace(events))
    assert d.regime == "compute" and d.shares["compute"] > 0.85
    assert "tensor cores" in d.remedy


def test_trace_gemv_on_a_gpu_is_memory_with_the_weight_remedy():
    d = D.diagnose(simple_trace([(*gemm(1, 4096, 4096), 10.0 * i, 10.0) for i in range(20)]))
    assert d.regime == "memory" and "fewer bits" in d.remedy


def test_trace_without_shapes_says_how_to_record_them():
    d = D.diagnose(simple_trace([(*gemm(64, 64, 64), 10.0 * i, 10.0) for i in range(5)], shapes=False))
    assert d.regime == "unclassified"
    assert any("record_shapes=True, with_flops=True" in line for line in d.evidence)


def test_trace_from_an_unknown_gpu_is_refused_with_a_way_out():
    trace = simple_trace([(*gemm(64, 64, 64), 0.0, 10.0)], gpu="NVIDIA GeForce RTX 4090")
    with pytest.raises(ValueError, match="registry does not know.*roof="):
        D.diagnose(trace)
    # named by hand: a 64**3 bf16 GEMM, 2 * 64**3 / (3 * 64**2 * 2) = 21.3 FLOP/B < 295: memory
    assert D.diagnose(trace, roof="H100").regime == "memory"


def test_trace_with_no_gpu_named_needs_a_roof():
    with pytest.raises(ValueError, match="names no GPU"):
        D.diagnose(simple_trace([(*gemm(64, 64, 64), 0.0, 10.0)], gpu=None))


def test_trace_files_are_read_from_a_path_and_gzip(tmp_path):
    trace = simple_trace([(*gemm(1, 4096, 4096), 10.0 * i, 10.0) for i in range(3)])
    plain, packed = tmp_path / "t.json", tmp_path / "t.json.gz"
    plain.write_text(json.dumps(trace))
    with gzip.open(packed, "wt") as fh:
        json.dump(trace, fh)
    assert D.diagnose(str(plain)).regime == D.diagnose(packed).regime == "memory"
    with pytest.raises(FileNotFoundError, match="export_chrome_trace"):
        D.diagnose(str(tmp_path / "missing.json"))
    (tmp_path / "bad.json").write_text("not json")
    with pytest.raises(ValueError, match="not a Chrome-trace JSON"):
        D.diagnose(str(tmp_path / "bad.json"))


def test_a_gpu_op_in_a_precision_the_registry_has_no_roof_for_is_unclassified():
    # an optimizer-style fp64 add_ beside bf16 GEMMs: the H100 entry has no fp64 roof, so the add_
    # cannot be placed; it is unclassified instead of failing the whole diagnosis
    add64 = ("aten::add_", [[2**20], [2**20]], ["double", "double"])
    trace = simple_trace([(*gemm(4096, 4096, 4096), 0.0, 200.0), (*add64, 200.0, 10.0)])
    d = D.diagnose(trace)
    assert d.regime == "compute"
    assert d.shares["unclassified"] == pytest.approx(10.0 / 210.0)
    with pytest.raises(ValueError, match="fp64"):
        D.diagnose(trace, precision="fp64")  # asked for by name, a missing roof is still an error


def test_rows_of_every_spelling_read_into_one_trace_and_equal_rows_merge():
    # an OpStat, a dict and a tuple of the same op merge into one row: 1 + 2 + 3 calls, 6 ms
    trace = R.as_trace(
        [
            R.OpStat("aten::mm", 1, 1e-3, 10.0, 20.0),
            {"name": "aten::mm", "calls": 2, "seconds": 2e-3, "flops": 20.0, "bytes_moved": 40.0},
            ("aten::mm", 3, 3e-3, 30.0, 60.0),
        ]
    )
    assert trace.timeline == "rows" and len(trace.rows) == 1
    (row,) = trace.rows
    assert (row.calls, row.flops, row.bytes_moved) == (6, 60.0, 120.0) and row.seconds == pytest.approx(6e-3)
    assert R.as_trace(trace) is trace  # a Trace is read as it is
    with pytest.raises(TypeError, match=r"profile row 0 .* is not an OpStat"):
        R.as_trace([{"name": "mm", "calls": 1, "seconds": 1.0, "colour": "red"}])
    with pytest.raises(TypeError, match="profile must be a torch profiler result"):
        R.as_trace(b"bytes")


def test_a_factory_that_fills_is_dispatch_even_when_it_outlasts_its_fill():
    # A loaded core preempted torch.zeros for 80 us around a 2 us zero_ (a CI run saw this in an
    # LSTM's profile: 48 % "unclassified"). zeros is empty + zero_: the fill is the work, the rest
    # dispatch, however the clock split it. A fused op with no formula keeps its long self time
    # as work (the test above); a factory does not.
    def op(name, dims, types, ts, dur):
        args = {"Input Dims": dims, "Input type": types}
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}

    trace = {
        "schemaVersion": 1,
        "traceEvents": [
            op("aten::zeros", [[], [], [], [], []], ["ScalarList", "", "", "", "Scalar"], 0.0, 82.0),
            op("aten::zero_", [[4, 64]], ["float"], 80.0, 2.0),
            op("aten::full_like", [[4, 64], [], [], [], [], [], []], ["float"] + [""] * 6, 100.0, 50.0),
            op("aten::fill_", [[4, 64], []], ["float", "Scalar"], 110.0, 3.0),
            op("aten::arange", [[], [], [], [], []], [""] * 5, 200.0, 40.0),  # not a filled factory
        ],
    }
    rows = {r.name: r for r in R.read_trace(trace).rows}
    assert rows["aten::zeros"].family == "dispatch" and rows["aten::zeros"].seconds == pytest.approx(80e-6)
    assert rows["aten::full_like"].family == "dispatch" and rows["aten::full_like"].seconds == pytest.approx(47e-6)
    assert rows["aten::zero_"].bytes_moved == 4 * 64 * 4  # the fill keeps its count
    assert rows["aten::arange"].flops is None  # no formula and no counted child: unclassified as before
