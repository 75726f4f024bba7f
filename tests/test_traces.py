"""Reading real-shaped Kineto traces: ties by correlation id, the merged window, collectives, TF32,
older categories, refusals, and the op counts the triage needs for conv nets, embeddings and LSTMs.

Each trace here is built event by event in the shape torch.profiler writes (a CPU op, the
cudaLaunchKernel inside it, the kernel it launched, tied by "correlation"), small enough that
every share is counted by hand in the comment beside its assertion.
"""

from __future__ import annotations

import gzip
import json

import pytest

import roofline_lib as rl
from roofline_lib import diagnose as D
from roofline_lib import traces as T

A100_40 = "NVIDIA A100-PG509-200"  # the name torch reports for the 40 GB SXM4 board


class _Builder:
    """A trace: ``op(...)`` adds a CPU op with a launch and a kernel inside; ids count up from 1."""

    def __init__(self, *, old=False, gpu=A100_40):
        self.events, self.n, self.old = [], 0, old
        self.props = [{"id": 0, "name": gpu}] if gpu else []

    def cat(self, new, old):
        return old if self.old else new

    def op(self, name, dims, types, ts, dur, kernel, k_ts, k_dur, *, stream=7, ext=None, args=None, cpu_dur=4.0):
        self.n += 1
        corr = 1000 + self.n
        op_args = {"External id": self.n, "Input Dims": dims, "Input type": types}
        self.events.append(
            {
                "ph": "X",
                "cat": self.cat("cpu_op", "Operator"),
                "name": name,
                "pid": 1,
                "tid": 1,
                "ts": ts,
                "dur": max(dur, cpu_dur),
                "args": op_args,
            }
        )
        self.events.append(
            {
                "ph": "X",
                "cat": self.cat("cuda_runtime", "Runtime"),
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": ts + 1.0,
                "dur": 2.0,
                "args": {"correlation": corr, self.cat("External id", "external id"): self.n},
            }
        )
        k_args = {
            "device": 0,
            "stream": stream,
            "correlation": corr,
            self.cat("External id", "external id"): self.n if ext is None else ext,
            **(args or {}),
        }
        self.events.append(
            {
                "ph": "X",
                "cat": self.cat("kernel", "Kernel"),
                "name": kernel,
                "pid": 0,
                "tid": stream,
                "ts": k_ts,
                "dur": k_dur,
                "args": k_args,
            }
        )

    def step(self, n, ts, dur):
        self.events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1, "ts": ts, "dur": dur}
        )

    def trace(self):
        return {"schemaVersion": 1, "deviceProperties": self.props, "traceEvents": list(self.events)}


MM = ("aten::mm", [[256, 1024], [1024, 256]], ["float", "float"])
# mm of [256, 1024] x [1024, 256] in fp32: 2 * 256 * 1024 * 256 = 134,217,728 FLOP over
# (256*1024 + 1024*256 + 256*256) * 4 = 2,359,296 bytes: 56.9 FLOP/B -- above the A100's fp32
# ridge (19.5e12 / 1.555e12 = 12.5) but below its TF32 ridge (156e12 / 1.555e12 = 100.3)


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
    b = _Builder()
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
    trace = D.read_trace(b.trace())
    assert [r.name for r in trace.rows] == ["aten::mm"]
    assert trace.rows[0].flops == 134_217_728


def test_tf32_kernel_names_read_fp32_gemms_under_the_tf32_roof():
    def one(kernel):
        b = _Builder()
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


def test_fp32_gemm_faster_than_its_roof_first_suggests_tf32():
    # 134 MFLOP in 2 us = 67 TFLOP/s, over the 19.5 TFLOP/s fp32 roof: say TF32 before blaming the cache
    b = _Builder()
    b.op(*MM, ts=0.0, dur=10.0, kernel="some_gemm", k_ts=20.0, k_dur=2.0)
    d = D.diagnose(b.trace())
    fast = next(line for line in d.evidence if line.startswith("faster than the roof"))
    assert fast.index("TF32") < fast.index("cache") and "precision='tf32'" in fast


def test_overlapping_streams_share_the_merged_window_and_collectives_pile_apart():
    # window 0..100 us. GEMM on stream 7 runs 0..40; an all-reduce on stream 20 runs 20..70;
    # a copy runs 90..100. Merged: busy 0..70 and 90..100 = 80 us, idle 20 us (not 100 - 40 - 50 - 10 = 0).
    # Exposed: GEMM 40 us; all-reduce 40..70 = 30 us (20..40 hides behind the GEMM); copy 10 us.
    b = _Builder()
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
    trace = D.read_trace(b.trace())
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
    b = _Builder()
    b.step(1, 0.0, 100.0)
    b.step(2, 100.0, 100.0)
    b.op(*MM, ts=-50.0, dur=5.0, kernel="ampere_sgemm", k_ts=-40.0, k_dur=10.0)
    b.op(*MM, ts=10.0, dur=5.0, kernel="ampere_sgemm", k_ts=20.0, k_dur=10.0)
    b.op(*MM, ts=110.0, dur=5.0, kernel="ampere_sgemm", k_ts=120.0, k_dur=10.0)
    trace = D.read_trace(b.trace())
    assert trace.busy_seconds == pytest.approx(10e-6) and trace.rows[0].calls == 1
    assert trace.notes[0] == "read 1 kernels of 1 complete ProfilerSteps (2 launched outside them left out)"
    assert D.read_trace(b.trace(), whole=True).busy_seconds == pytest.approx(30e-6)


def test_the_2022_categories_are_read():
    # Operator / Runtime / Kernel and a lower-case "external id": same reading as today's names
    b = _Builder(old=True)
    b.op(*MM, ts=0.0, dur=5.0, kernel="ampere_sgemm", k_ts=10.0, k_dur=10.0)
    d = D.diagnose(b.trace())
    assert [r.name for r in d.rows] == ["aten::mm"] and d.regime == "compute"


def test_a_compiled_region_is_unclassified_with_that_reason():
    b = _Builder()
    b.op("CompiledFunctionBackward", [], [], ts=0.0, dur=20.0, kernel="triton_poi_fused_0", k_ts=30.0, k_dur=10.0)
    d = D.diagnose(b.trace())
    assert d.regime == "unclassified"
    assert "compiled region: counts are inside CompiledFunctionBackward" in d.evidence[-1]
    assert d.remedy == D.REMEDIES["unclassified-recorded"]  # not "record shapes": they were recorded


def test_an_mtia_trace_is_refused_by_name_and_says_what_to_pass():
    trace = {
        "deviceProperties": [{"id": 17, "name": "ARTEMIS"}],
        "traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
            {"ph": "X", "cat": "mtia_ccp_events", "name": "k", "pid": 2, "tid": 1, "ts": 1, "dur": 3},
        ],
    }
    with pytest.raises(ValueError, match=r"MTIA accelerator \(ARTEMIS\).*Pass a trace recorded on a GPU.*roof="):
        D.read_trace(trace)


def test_truncated_and_mislabelled_gzip(tmp_path):
    b = _Builder()
    b.op(*MM, ts=0.0, dur=5.0, kernel="ampere_sgemm", k_ts=10.0, k_dur=10.0)
    whole = gzip.compress(json.dumps(b.trace()).encode())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match=r"cut\.json\.gz' is a truncated or corrupt gzip file.*pass a complete"):
        D.read_trace(cut)
    plain = tmp_path / "plain.json.gz"  # named .gz, written plain: read by its bytes, not its name
    plain.write_text(json.dumps(b.trace()))
    assert D.read_trace(plain).rows[0].name == "aten::mm"
    zipped = tmp_path / "zipped.json"  # gzip without the suffix
    zipped.write_bytes(whole)
    assert D.read_trace(zipped).rows[0].name == "aten::mm"


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


# --------------------------------------------------------------------------- op counts


def test_counts_for_conv_norms_gathers_lstm_and_cat():
    # conv2d of [2, 8, 16, 16] by [16, 8, 3, 3], stride 1, padding 1: 16 x 16 outputs per channel;
    # 2 * (2 * 16 * 256 * 8 * 9) = 1,179,648 FLOP; bytes (4096 + 1152 + 8192 + 16) * 4 = 53,824
    conv = D.count_op(
        "aten::mkldnn_convolution",
        [[2, 8, 16, 16], [16, 8, 3, 3], [16], [], [], [], []],
        ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"],
        ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"],
    )
    assert conv == (1_179_648.0, 53_824.0, "conv", "fp32")
    # stride 2, no padding, groups 2: out (16 - 3) // 2 + 1 = 7; 2 * (2 * 16 * 49 * 4 * 9) = 112,896 FLOP
    strided = D.count_op(
        "aten::convolution",
        [[2, 8, 16, 16], [16, 4, 3, 3], [], [], [], [], [], [], []],
        ["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
        ["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "2"],
    )
    assert strided[0] == 112_896.0
    assert D.count_op("aten::mkldnn_convolution", [[2, 8, 16, 16], [16, 8, 3, 3]], ["float", "float"]) is None
    # batch norm over [2, 16, 16, 16] = 8192 elements: 7 FLOP each; bytes (2 * 8192 + 4 * 16) * 4
    bn = D.count_op("aten::native_batch_norm", [[2, 16, 16, 16], [16], [16], [16], [16]], ["float"] * 5)
    assert bn == (57_344.0, 65_792.0, "norm", "fp32")
    # group norm: the same per element, weight and bias only: (2 * 8192 + 2 * 8) * 4 with 8 channels
    gn = D.count_op("aten::native_group_norm", [[2, 8, 16, 32]], ["float"])
    assert gn == (57_344.0, 65_600.0, "norm", "fp32")
    # index_select of 3 rows of width 16 from [100, 16]: read and write 48 floats, read 3 int64
    assert D.count_op("aten::index_select", [[100, 16], [], [3]], ["float", "Scalar", "long int"]) == (
        0.0, 408.0, "embedding", "fp32")  # fmt: skip
    # LSTM layer: T=5, B=2, I=16, H=32: per (step, sequence) 2 * 128 * 48 + 13 * 32 = 12,704 FLOP;
    # x 10 = 127,040. Bytes: input 160 + weights 2048 + 4096 + 128 + 128 + output 320 floats = 27,520
    lstm = D.count_op(
        "aten::mkldnn_rnn_layer",
        [[5, 2, 16], [128, 16], [128, 32], [128], [128], [2, 32], [2, 32]],
        ["float"] * 7,
    )
    assert lstm == (127_040.0, 27_520.0, "rnn", "fp32")
    # cat of two [2, 8, 16, 16] tensors: 8192 elements read and written at 4 bytes
    assert D.count_op("aten::cat", [[[2, 8, 16, 16], [2, 8, 16, 16]], []], ["TensorList", "Scalar"]) == (
        0.0, 65_536.0, "copy", None)  # fmt: skip


def test_conv_formula_matches_torchs_own_count():
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    conv = torch.nn.Conv2d(8, 16, 3, padding=1, stride=1)
    x = torch.randn(2, 8, 16, 16)
    with D.quiet_profiler_log(), profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as p:
        conv(x)
    torch_flops = {e.key: e.flops for e in p.key_averages() if e.flops}
    ours = D.read_trace(D._export(p))
    counted = sum(r.flops for r in ours.rows if r.family == "conv")
    assert torch_flops["aten::conv2d"] == counted == 1_179_648  # 2 * 2 * 16 * 256 * 8 * 9


def test_matmul_formulas_match_torchs_own_count():
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    a, b, bias = torch.randn(8, 16), torch.randn(16, 4), torch.randn(4)
    with D.quiet_profiler_log(), profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as p:
        torch.mm(a, b)
        torch.addmm(bias, a, b)
    torch_flops = {e.key: e.flops for e in p.key_averages() if e.flops}
    rows = {r.name: r.flops for r in D.read_trace(D._export(p)).rows}
    # torch counts 2 * 8 * 16 * 4 = 1024 for both; the library adds addmm's 8 * 4 = 32 bias adds
    assert torch_flops["aten::mm"] == rows["aten::mm"] == 1024
    assert torch_flops["aten::addmm"] == rows["aten::addmm"] - 32 == 1024


def test_an_empty_profile_gets_a_message_not_a_verdict():
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match="recorded no op and no kernel, so there is nothing to diagnose"):
        D.diagnose(D.profile_run(lambda: None, device="cpu", warmup=0), roof=rl.Roof(1e9, 1e9, "toy"))


def _cpu_ceilings(precision="fp32"):
    from roofline_lib.evidence.measure import MeasuredCeilings

    # 100 GFLOP/s over 10 GB/s: ridge 10 FLOP/B
    return MeasuredCeilings(10e9, 100e9, "toy CPU", precision, 2, "2026-01-01T00:00:00Z", "2.13.0")


def test_bf16_work_on_a_cpu_is_said_to_be_judged_against_the_fp32_roof_measured_here():
    # a bf16 GEMM at 1000 FLOP/B: compute-bound on any roof; the verdict names the precisions and
    # says the roof was measured in fp32, and its remedy does not advise bf16 on a CPU
    rows = [D.OpStat("aten::mm", 1, 1e-3, 1e9, 1e6, "matmul", "bf16")]
    d = D.diagnose(rows, roof=_cpu_ceilings(), wall_seconds=1e-3)
    assert d.precisions == {"bf16": 1.0}
    text = "\n".join(d.evidence)
    assert "bf16 work is placed against this machine's fp32 roof" in text
    # hand-made rows are on the "rows" timeline: the CPU remedy applies to CPU profiles
    cpu = D.Trace(tuple(rows), "cpu", 1e-3, 1e-3)
    assert D.diagnose(cpu, roof=_cpu_ceilings()).remedy == D.REMEDIES["compute-cpu"]
    assert "bf16 without them is slower" in D.REMEDIES["compute-cpu"]
    assert "tensor cores" not in D.REMEDIES["compute-cpu"]


def test_bf16_work_above_an_fp32_roof_is_pointed_to_a_bf16_roof_before_the_cache():
    # 1e12 FLOP in 1 s on a 100 GFLOP/s fp32 roof: ten times over; its dtype is bf16
    d = D.diagnose([D.OpStat("aten::mm", 1, 1.0, 1e12, 1e9, "matmul", "bf16")], roof=_cpu_ceilings())
    fast = next(line for line in d.evidence if line.startswith("faster than the roof"))
    assert "dtypes are bf16 but the roof is fp32's" in fast and fast.index("bf16") < fast.index("cache")


def test_an_op_without_a_formula_is_unclassified_naming_the_op():
    b = _Builder()
    b.op("aten::_fused_moe", [[64, 64]], ["float"], ts=0.0, dur=5.0, kernel="moe_kernel", k_ts=10.0, k_dur=10.0)
    d = D.diagnose(b.trace())
    assert d.evidence[-1].endswith("no formula for aten::_fused_moe")


def test_a_launch_takes_the_innermost_counted_op_around_it_by_time():
    # aten::linear (0..50) encloses aten::t (2..4) and aten::addmm (10..40); the launch at 11 is
    # inside addmm; the kernel takes addmm's count, never linear's or t's
    b = _Builder()
    b.op("aten::addmm", [[256], [256, 1024], [1024, 256]], ["float"] * 3, ts=10.0, dur=30.0, kernel="ampere_sgemm",
         k_ts=50.0, k_dur=10.0)  # fmt: skip
    b.events += [
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 0.0, "dur": 50.0, "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::t", "pid": 1, "tid": 1, "ts": 2.0, "dur": 2.0,
         "args": {"Input Dims": [[1024, 256]], "Input type": ["float"]}},
    ]  # fmt: skip
    trace = D.read_trace(b.trace())
    assert [(r.name, r.family) for r in trace.rows] == [("aten::addmm", "matmul")]
    # 2 * 256 * 1024 * 256 FLOP of the product plus 256 * 256 adds of the bias
    assert trace.rows[0].flops == 134_217_728 + 65_536


def test_a_link_name_refused_says_what_to_pass():
    b = _Builder()
    b.op("record_param_comms", [], [], ts=0.0, dur=5.0, kernel="ncclKernel_AllReduce", k_ts=10.0, k_dur=10.0)
    with pytest.raises(ValueError, match="NVLink"):
        D.diagnose(b.trace(), link="carrier pigeon")


def test_a_resnet_block_an_embedding_lookup_and_an_lstm_get_counted_verdicts():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    conv = torch.nn.Sequential(
        torch.nn.Conv2d(16, 16, 3, padding=1, bias=False), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 16, 3, padding=1, bias=False), torch.nn.BatchNorm2d(16),
    ).eval()  # fmt: skip
    x = torch.randn(4, 16, 16, 16)
    emb, idx = torch.nn.Embedding(5000, 64), torch.randint(0, 5000, (16, 32))
    lstm, seq = torch.nn.LSTM(32, 64, batch_first=True), torch.randn(4, 16, 32)
    toy = rl.Roof(100e9, 10e9, "toy CPU")
    families = {"resnet block": "conv", "embedding lookup": "embedding", "lstm": "rnn"}
    with torch.no_grad():
        for name, fn in (
            ("resnet block", lambda: torch.relu(conv(x) + x)),
            ("embedding lookup", lambda: emb(idx)),
            ("lstm", lambda: lstm(seq)),
        ):
            d = D.diagnose(D.profile_run(fn, device="cpu", warmup=1, calls=2), roof=toy)
            assert d.regime != "unclassified" and d.shares["unclassified"] < 0.1, (name, str(d))
            assert any(r.family == families[name] and r.counted for r in d.rows), name
