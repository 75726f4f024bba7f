"""Profiling here: live CPU workloads placed by their FLOPs and bytes against the roof measured here,
and profile_run's refusals.

The live workloads' regimes do not hang on timing thresholds -- a GEMV's 0.5 FLOP/B is far below
any CPU's ridge -- but they time this machine and judge the times against roofs measured here, so
they are marked ``measures``: `make unit` runs them on their own, after the parallel part, so
another test process cannot skew a reading.
"""

from __future__ import annotations

import pytest

import roofline_lib as rl
from roofline_lib import diagnose as D
from roofline_lib import profile_live as L

torch = pytest.importorskip("torch")

# A roof with hand-countable numbers: 100 GFLOP/s over 10 GB/s, ridge 10 FLOP/B.
TOY = rl.Roof(100e9, 10e9, "toy machine")


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
    from roofline_lib import measured_roofs

    readings = [measured_roofs.measure_ceilings(seconds=1.0, device="cpu")]
    while measured_roofs.best_of(*readings).ridge < 2 and len(readings) < 5:
        readings.append(measured_roofs.measure_ceilings(seconds=1.0, device="cpu"))
    best = measured_roofs.best_of(*readings)
    assert best.ridge >= 2, f"could not read a CPU roof on this loaded machine: {best}"
    return best


def _run(fn):
    with torch.no_grad():
        return L.profile_run(fn, device="cpu")


@pytest.mark.measures
def test_live_gemv_at_batch_1_is_memory(cpu_roof):
    W, x = torch.randn(4096, 4096), torch.randn(1, 4096)  # 64 MB of weights, 0.5 FLOP/B
    d = D.diagnose(_run(lambda: [torch.mm(x, W) for _ in range(5)]), roof=cpu_roof)
    assert d.regime == "memory", d
    assert "batch more sequences per weight read" in d.remedy


@pytest.mark.measures
def test_live_gemm_past_the_ridge_is_compute(cpu_roof):
    m = 16
    while rl.gemm(m, 1024, 1024, bytes_per_elem=4).intensity < 4 * cpu_roof.ridge:  # ~m/2 FLOP/B
        m *= 2
    W, X = torch.randn(1024, 1024), torch.randn(m, 1024)
    d = D.diagnose(_run(lambda: [torch.mm(X, W) for _ in range(3)]), roof=cpu_roof)
    assert d.regime == "compute", d


@pytest.mark.measures
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


@pytest.mark.measures
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


@pytest.mark.measures
def test_live_decode_step_of_a_small_transformer_is_memory(cpu_roof):
    from roofline_lib import tiny_model
    from roofline_lib.models.transformer import TransformerConfig

    cfg = TransformerConfig(d_model=1024, d_ff=2816, n_layers=2, n_heads=8, vocab=8192, seq_len=16)
    model = tiny_model.tiny_decoder(cfg)  # ~34M parameters read per token: 135 MB in fp32
    token = torch.randint(0, cfg.vocab, (1, 1))
    d = D.diagnose(_run(lambda: model(token)), roof=cpu_roof)
    assert d.regime == "memory", d
    assert any("aten::mm" in line and "memory-bound" in line for line in d.evidence)


@pytest.mark.measures
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
        L.profile_run(lambda: None)


def test_diagnosing_a_profile_leaves_its_own_export_to_the_reader(tmp_path):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        torch.mm(torch.randn(64, 64), torch.randn(64, 64))
    D.diagnose(prof, roof=TOY)
    prof.export_chrome_trace(str(tmp_path / "mine.json"))  # kineto saves once: diagnose must not use it up
    assert (tmp_path / "mine.json").stat().st_size > 0


def test_an_empty_profile_gets_a_message_not_a_verdict():
    with pytest.raises(ValueError, match="recorded no op and no kernel, so there is nothing to diagnose"):
        D.diagnose(L.profile_run(lambda: None, device="cpu", warmup=0), roof=rl.Roof(1e9, 1e9, "toy"))


def _rows(d) -> list[str]:
    """Each row of a diagnosis with its pile, what placed it there and why it has no count (the
    LSTM's verdict came out unclassified once in a full unit run, 4.82 ms where 0.9 ms is usual,
    over 19 ops where 18 is usual, and never when the file ran alone 25 times: these name the row)."""
    return [f"{r.name} x{r.calls} {r.seconds * 1e6:.0f} us -> {p} ({b or 'no count'}; {r.note or r.family})"
            for r, p, b in zip(d.rows, d.placed, d.placed_by)]  # fmt: skip


def test_a_resnet_block_an_embedding_lookup_and_an_lstm_get_counted_verdicts():
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
            d = D.diagnose(L.profile_run(fn, device="cpu", warmup=1, calls=2), roof=toy)
            assert d.regime != "unclassified" and d.shares["unclassified"] < 0.1, (name, str(d), _rows(d))
            assert any(r.family == families[name] and r.counted for r in d.rows), name
