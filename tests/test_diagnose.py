"""The triage: hand-made rows, Chrome traces built to torch.profiler's shape, and live CPU profiles.

Live workloads are placed by their FLOPs and bytes against the roof measured here, so their
regimes do not hang on timing thresholds: a GEMV's 0.5 FLOP/B is far below any CPU's ridge.
"""

from __future__ import annotations

import gzip
import json

import pytest

import roofline_lib as rl
from roofline_lib import diagnose as D

# These tests time this machine and judge the times against roofs measured here: `make unit` runs
# them on their own, after the parallel part, so another test process cannot skew a reading.
pytestmark = pytest.mark.measures

torch = pytest.importorskip("torch")

# A roof with hand-countable numbers: 100 GFLOP/s over 10 GB/s, ridge 10 FLOP/B.
TOY = rl.Roof(100e9, 10e9, "toy machine")


# --------------------------------------------------------------------------- hand-made rows


def test_rows_are_placed_by_intensity_not_by_name():
    # a "matmul" at 0.5 FLOP/B (2e7 FLOP over 4e7 B) is below the ridge of 10: memory
    # an "add" at 20 FLOP/B (2e8 FLOP over 1e7 B) is above it: compute (names never decide)
    d = D.diagnose(
        [
            D.OpStat("aten::mm", 10, 6e-3, flops=2e7, bytes_moved=4e7, family="matmul"),
            D.OpStat("aten::add", 4, 2e-3, flops=2e8, bytes_moved=1e7),
        ],
        roof=TOY,
    )
    assert dict(zip([r.name for r in d.rows], d.placed)) == {"aten::mm": "memory", "aten::add": "compute"}
    assert d.shares["memory"] == pytest.approx(0.75)  # 6 ms of 8 ms
    assert d.regime == "memory"
    assert d.remedy == D.REMEDIES["memory-matmul"]
    assert not any("faster than the roof" in line for line in d.evidence)  # 6.7 GB/s, 100 GFLOP/s: in bounds


def test_rows_faster_than_their_roof_are_flagged_not_reclassified():
    # 4e7 B in 1 ms = 40 GB/s on a 10 GB/s roof: flagged, still memory-bound by its 0.5 FLOP/B
    d = D.diagnose([("aten::mm", 1, 1e-3, 2e7, 4e7)], roof=TOY)
    assert d.regime == "memory"
    assert any(line.startswith("faster than the roof in use: aten::mm") for line in d.evidence)


def test_a_memory_bound_gemv_row_gets_the_weight_read_remedy():
    gemv = rl.gemv(4096, 4096, bytes_per_elem=2)  # 2 * 4096**2 FLOP over ~33.6 MB: 0.5 FLOP/B
    row = D.OpStat("aten::mv", 100, 50e-3, flops=100 * gemv.flops, bytes_moved=100 * gemv.bytes_moved, family="matmul")
    d = D.diagnose([row], roof="A100", precision="bf16")
    assert d.regime == "memory"
    assert "batch more sequences per weight read" in d.remedy and "fewer bits" in d.remedy


def test_no_majority_is_mixed_and_says_the_shares():
    # compute 4 ms, memory 3 ms, idle 3 ms of a 10 ms wall: 40 / 30 / 30, no pile above half
    d = D.diagnose([("mm", 1, 4e-3, 1e12, 1e9), ("add", 1, 3e-3, 1e6, 1e8)], roof=TOY, wall_seconds=10e-3)
    assert d.regime == "mixed"
    assert d.shares["compute"] == pytest.approx(0.4) and d.shares["overhead"] == pytest.approx(0.3)
    text = str(d)
    assert text.startswith("mixed: compute 40%, memory 30%, overhead 30%")
    assert "start with the largest pile (compute:" in text


def test_rows_without_counts_are_unclassified_never_guessed():
    d = D.diagnose([("aten::mm", 2, 6e-3), ("my_custom_op", 1, 1e-3)], roof=TOY)
    assert d.regime == "unclassified" and d.shares["unclassified"] == 1.0
    assert "record_shapes=True" in d.remedy


def test_fixed_cost_per_call_and_wall_time_are_overhead():
    # 1000 calls of 3 us each (3 ms) with a 2 us fixed cost: 2 ms overhead, 1 ms of work;
    # 1 ms of wall time outside the rows: overhead 3 ms of 4 ms = 75 %
    d = D.diagnose(
        [("aten::add", 1000, 3e-3, 1e3 * 16, 1e3 * 192)], roof=TOY, wall_seconds=4e-3, fixed_cost_seconds=2e-6
    )
    assert d.seconds["overhead"] == pytest.approx(3e-3) and d.regime == "overhead"


def test_ops_that_move_no_data_are_overhead():
    d = D.diagnose([("aten::view", 100, 1e-3, 0, 0), ("aten::mm", 1, 1e-3, 1e12, 1e9)], roof=TOY)
    assert d.shares["overhead"] == pytest.approx(0.5) and d.regime == "mixed"


def test_bad_input_is_refused_with_the_parameter_named():
    with pytest.raises(TypeError, match="profile must be"):
        D.diagnose(42, roof=TOY)
    with pytest.raises(ValueError, match="empty"):
        D.diagnose([], roof=TOY)
    with pytest.raises(ValueError, match="wall_seconds must be a positive"):
        D.diagnose([("mm", 1, 1e-3)], wall_seconds=0)
    with pytest.raises(ValueError, match="seconds of mm"):
        D.OpStat("mm", 1, -1.0)
    with pytest.raises(ValueError, match="a CPU profile needs this machine's roof"):
        D.diagnose([("mm", 1, 1e-3, 1e9, 1e9)])
    with pytest.raises(ValueError, match="no time"):
        D.diagnose([("mm", 1, 0.0)], roof=TOY)


def test_count_op_from_shapes_and_dtypes():
    # mm of [8, 16] x [16, 4] in fp32: 2 * 8 * 16 * 4 = 1024 FLOP, (128 + 64 + 32) * 4 = 896 bytes
    assert D.count_op("aten::mm", [[8, 16], [16, 4]], ["float", "float"]) == (1024.0, 896.0, "matmul", "fp32")
    # add of two [1000] bf16 tensors: 1000 FLOP, (1000 + 1000 + 1000) * 2 = 6000 bytes
    assert D.count_op("aten::add", [[1000], [1000], []], ["c10::BFloat16", "c10::BFloat16", "Scalar"]) == (
        1000.0,
        6000.0,
        "elementwise",
        "bf16",
    )
    assert D.count_op("aten::view", [], []) == (0.0, 0.0, "no data", None)
    assert D.count_op("aten::mm", None, None) is None  # no shapes: no guess
    assert D.count_op("my_lib::fancy", [[4]], ["float"]) is None


# --------------------------------------------------------------------------- Chrome traces


def _trace(ops_and_kernels, gpu="NVIDIA H100 80GB HBM3", shapes=True):
    """A trace shaped like torch.profiler's export: cpu_op and kernel events tied by External id."""
    events = []
    for i, (name, dims, types, ts, dur) in enumerate(ops_and_kernels, start=1):
        args = {"External id": i}
        if shapes:
            args.update({"Input Dims": dims, "Input type": types})
        events.append(
            {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts - 5.0, "dur": 4.0, "args": args}
        )
        events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": f"kernel_for_{name}",
                "pid": 0,
                "tid": 7,
                "ts": ts,
                "dur": dur,
                "args": {"External id": i, "device": 0, "stream": 7, "correlation": 1000 + i},
            }
        )
    props = [{"id": 0, "name": gpu}] if gpu else []
    return {"schemaVersion": 1, "deviceProperties": props, "traceEvents": events}


BF16 = "c10::BFloat16"


def _gemm(m, n, k):
    return ("aten::mm", [[m, k], [k, n]], [BF16, BF16])


def test_trace_kernels_with_gaps_is_overhead():
    # 10 GEMMs of 200 us each, one every 800 us: the GPU is busy 2 ms of a 7.4 ms window (10 * 800 - 600)
    trace = _trace([(*_gemm(4096, 4096, 4096), 800.0 * i, 200.0) for i in range(10)])
    d = D.diagnose(trace)
    assert d.regime == "overhead"
    assert d.shares["overhead"] == pytest.approx(5.4 / 7.4)  # idle 7.4 - 2.0 ms
    assert "idle gaps between kernels" in "\n".join(d.evidence)
    assert d.timeline == "device" and "H100 SXM bf16" in d.roof_label


def test_trace_busy_stream_of_short_memory_kernels_is_memory_not_overhead():
    # 3600 adds over 2**20 bf16 values, 6 us each, back to back: no idle time, and 1/6 FLOP/B
    add = ("aten::add", [[2**20], [2**20], []], [BF16, BF16, "Scalar"])
    d = D.diagnose(_trace([(*add, 6.0 * i, 6.0) for i in range(3600)]))
    assert d.regime == "memory" and d.shares["memory"] == pytest.approx(1.0)
    assert d.shares["overhead"] == 0.0  # a short kernel is not overhead
    assert "fuse" in d.remedy


def test_trace_gemm_dominated_step_is_compute():
    # 8 GEMMs of 2048 x 4096 x 4096 bf16 (intensity ~1170 FLOP/B > H100 ridge 295) for 100 us each,
    # 8 layer norms of 2048 x 4096 for 10 us each, 2 us gaps: 800 us compute of ~ 912 us
    events, t = [], 0.0
    for _ in range(8):
        events.append((*_gemm(2048, 4096, 4096), t, 100.0))
        t += 102.0
        events.append(("aten::native_layer_norm", [[2048, 4096], [4096], [4096]], [BF16] * 3, t, 10.0))
        t += 12.0
    d = D.diagnose(_trace(events))
    assert d.regime == "compute" and d.shares["compute"] > 0.85
    assert "tensor cores" in d.remedy


def test_trace_gemv_on_a_gpu_is_memory_with_the_weight_remedy():
    d = D.diagnose(_trace([(*_gemm(1, 4096, 4096), 10.0 * i, 10.0) for i in range(20)]))
    assert d.regime == "memory" and "fewer bits" in d.remedy


def test_trace_without_shapes_says_how_to_record_them():
    d = D.diagnose(_trace([(*_gemm(64, 64, 64), 10.0 * i, 10.0) for i in range(5)], shapes=False))
    assert d.regime == "unclassified"
    assert any("record_shapes=True, with_flops=True" in line for line in d.evidence)


def test_trace_from_an_unknown_gpu_is_refused_with_a_way_out():
    trace = _trace([(*_gemm(64, 64, 64), 0.0, 10.0)], gpu="NVIDIA GeForce RTX 4090")
    with pytest.raises(ValueError, match="registry does not know.*roof="):
        D.diagnose(trace)
    # named by hand: a 64**3 bf16 GEMM, 2 * 64**3 / (3 * 64**2 * 2) = 21.3 FLOP/B < 295: memory
    assert D.diagnose(trace, roof="H100").regime == "memory"


def test_trace_with_no_gpu_named_needs_a_roof():
    with pytest.raises(ValueError, match="names no GPU"):
        D.diagnose(_trace([(*_gemm(64, 64, 64), 0.0, 10.0)], gpu=None))


def test_trace_files_are_read_from_a_path_and_gzip(tmp_path):
    trace = _trace([(*_gemm(1, 4096, 4096), 10.0 * i, 10.0) for i in range(3)])
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


# --------------------------------------------------------------------------- the decision tree


def test_the_tree_is_drawn_from_the_rules_diagnose_walks():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    fig = D.plot_triage()
    texts = [t.get_text() for t in fig.axes[0].texts]
    for rule in D.TRIAGE_RULES:
        assert rule.question in texts
    for pile in D.PILES:
        assert pile in texts
    # every leaf the tree can reach is a pile, and every pile is reachable
    leaves = {r.yes for r in D.TRIAGE_RULES} | {r.no for r in D.TRIAGE_RULES}
    assert set(D.PILES) <= leaves and leaves - {r.key for r in D.TRIAGE_RULES} == set(D.PILES)


# --------------------------------------------------------------------------- live CPU workloads


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread for the roof and the workloads alike: on a shared 2-core machine a
    two-thread matmul stalls whenever one of its threads is descheduled."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def cpu_roof(one_thread):
    """This machine's roof, read until its ridge is above 2 FLOP/B (a shared machine can starve a
    reading; every CPU does more than 2 FLOPs per DRAM byte); the best of the readings is kept."""
    from roofline_lib import measure

    readings = [measure.measure_ceilings(seconds=1.0, device="cpu")]
    while measure.best_of(*readings).ridge < 2 and len(readings) < 5:
        readings.append(measure.measure_ceilings(seconds=1.0, device="cpu"))
    best = measure.best_of(*readings)
    assert best.ridge >= 2, f"could not read a CPU roof on this loaded machine: {best}"
    return best


def _run(fn):
    with torch.no_grad():
        return D.profile_run(fn, device="cpu")


def test_live_gemv_at_batch_1_is_memory(cpu_roof):
    W, x = torch.randn(4096, 4096), torch.randn(1, 4096)  # 64 MB of weights, 0.5 FLOP/B
    d = D.diagnose(_run(lambda: [torch.mm(x, W) for _ in range(5)]), roof=cpu_roof)
    assert d.regime == "memory", d
    assert "batch more sequences per weight read" in d.remedy


def test_live_gemm_past_the_ridge_is_compute(cpu_roof):
    m = 16
    while rl.gemm(m, 1024, 1024, bytes_per_elem=4).intensity < 4 * cpu_roof.ridge:  # ~m/2 FLOP/B
        m *= 2
    W, X = torch.randn(1024, 1024), torch.randn(m, 1024)
    d = D.diagnose(_run(lambda: [torch.mm(X, W) for _ in range(3)]), roof=cpu_roof)
    assert d.regime == "compute", d


def test_live_elementwise_chain_is_memory(cpu_roof):
    x, y = torch.randn(2**22), torch.randn(2**22)

    def chain():
        z = x * 1.5
        z = z + y
        z = torch.sin(z)
        return z * y - 1.0

    d = D.diagnose(_run(chain), roof=cpu_roof)
    assert d.regime == "memory", d
    assert "fuse" in d.remedy


def test_live_thousands_of_tiny_calls_are_overhead(cpu_roof):
    s, t = torch.randn(16), torch.randn(16)

    def tiny():
        z = s
        for _ in range(2000):
            z = z * 0.999 + t
        return z

    d = D.diagnose(_run(tiny), roof=cpu_roof)
    assert d.regime == "overhead", d
    assert "fewer, larger calls" in d.remedy


def test_live_decode_step_of_a_small_transformer_is_memory(cpu_roof):
    from roofline_lib import audit
    from roofline_lib.models.transformer import TransformerConfig

    cfg = TransformerConfig(d_model=1024, d_ff=2816, n_layers=2, n_heads=8, vocab=8192, seq_len=16)
    model = audit.tiny_decoder(cfg)  # ~34M parameters read per token: 135 MB in fp32
    token = torch.randint(0, cfg.vocab, (1, 1))
    d = D.diagnose(_run(lambda: model(token)), roof=cpu_roof)
    assert d.regime == "memory", d
    assert any("aten::mm" in line and "memory-bound" in line for line in d.evidence)


def test_live_mixed_program_has_no_majority(cpu_roof):
    m = 16
    while rl.gemm(m, 1024, 1024, bytes_per_elem=4).intensity < 4 * cpu_roof.ridge:
        m *= 2
    W, X = torch.randn(1024, 1024), torch.randn(m, 1024)
    x, y, z = torch.randn(2**22), torch.randn(2**22), torch.empty(2**22)
    parts = {
        "compute": lambda: torch.mm(X, W),
        # 1 FLOP per 12 bytes, into a buffer written before: no fresh pages to fault in on each rep,
        # whose cost swings from run to run and kept the balance below from settling
        "memory": lambda: torch.mul(x, y, out=z),
        "overhead": lambda: sum(i * i for i in range(20_000)),  # host-side Python: the device waits
    }

    # Each part lands in one pile (the host-side Python is wall time outside every op). How long a
    # rep of each takes swings on a shared machine, so the reps are balanced from the last profile
    # of the program itself, up to six times; the shares of a balanced run need a 2x swing between
    # parts to tip into a majority. Interleaving the parts makes load that comes and goes hit all.
    reps = dict.fromkeys(parts, 1)

    def program():
        for _ in range(3):
            for k, fn in parts.items():
                for _ in range(reps[k]):
                    fn()

    for _ in range(6):
        d = D.diagnose(_run(program), roof=cpu_roof)
        if d.regime == "mixed":
            break
        per_rep = {k: max(d.seconds[k], 1e-6) / (3 * reps[k]) for k in parts}
        slowest = max(per_rep.values())
        reps = {k: max(1, round(slowest / per_rep[k])) for k in parts}
    assert d.regime == "mixed", str(d)
    assert min(d.shares["compute"], d.shares["memory"], d.shares["overhead"]) > 0.1, str(d)
    assert "no pile holds more than 50% of the time" in "\n".join(d.evidence)


def test_profile_run_needs_a_named_device():
    with pytest.raises(TypeError, match="device must be named"):
        D.profile_run(lambda: None)


# --------------------------------------------------------------------------- measured MFU


def test_measured_mfu_uses_the_one_plausibility_rule():
    # 1e9 FLOP in 10 ms = 100 GFLOP/s of a 100 GFLOP/s roof: 1.0; 4 % faster passes, 6 % does not
    assert D.measured_mfu(1e9, 10e-3, TOY) == pytest.approx(1.0)
    D.measured_mfu(1.04e9, 10e-3, TOY)
    with pytest.raises(rl.ImplausibleMeasurement, match="compute peak"):
        D.measured_mfu(1.06e9, 10e-3, TOY)


def test_diagnosing_a_profile_leaves_its_own_export_to_the_reader(tmp_path):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        torch.mm(torch.randn(64, 64), torch.randn(64, 64))
    D.diagnose(prof, roof=TOY)
    prof.export_chrome_trace(str(tmp_path / "mine.json"))  # kineto saves once: diagnose must not use it up
    assert (tmp_path / "mine.json").stat().st_size > 0


def test_measured_mfu_names_its_parameters_when_refusing():
    with pytest.raises(TypeError, match="ceilings must be a MeasuredCeilings"):
        D.measured_mfu(1e9, 1.0, 42)
    with pytest.raises(ValueError, match="model_flops must be a positive number of FLOP"):
        D.measured_mfu(0, 1.0, TOY)
    with pytest.raises(ValueError, match="has no fp8"):
        D.measured_mfu(1e9, 1.0, "A100", precision="fp8")


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
    rows = {r.name: r for r in D.read_trace(trace).rows}
    assert rows["aten::_addmm_activation"].flops is None  # unclassified: no formula for this op
    assert rows["aten::_addmm_activation"].seconds == pytest.approx(950e-6)  # 1000 - 50 us of self time
    assert rows["aten::linear"].family == "dispatch" and rows["aten::linear"].seconds == pytest.approx(20e-6)
    assert rows["aten::addmm"].family == "matmul"
    # an in-place element-wise op is counted like its out-of-place form: 4096 * 1024 values, 1 FLOP
    # each, read and written in place: 2 * 4 bytes per value
    assert rows["aten::clamp_min_"].flops == 4096 * 1024 and rows["aten::clamp_min_"].bytes_moved == 8 * 4096 * 1024


def test_a_gpu_op_in_a_precision_the_registry_has_no_roof_for_is_unclassified():
    # an optimizer-style fp64 add_ beside bf16 GEMMs: the H100 entry has no fp64 roof, so the add_
    # cannot be placed; it is unclassified instead of failing the whole diagnosis
    add64 = ("aten::add_", [[2**20], [2**20]], ["double", "double"])
    trace = _trace([(*_gemm(4096, 4096, 4096), 0.0, 200.0), (*add64, 200.0, 10.0)])
    d = D.diagnose(trace)
    assert d.regime == "compute"
    assert d.shares["unclassified"] == pytest.approx(10.0 / 210.0)
    with pytest.raises(ValueError, match="fp64"):
        D.diagnose(trace, precision="fp64")  # asked for by name, a missing roof is still an error
