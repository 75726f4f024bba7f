"""The website's explorers (book/_static/roofline-explorer.js) against roofline_lib.

The explorers re-state the library's formulas in JavaScript so that they can run in a static page
with no kernel. These tests run that JavaScript on the registry ``roofline_lib.present.export`` writes,
for every GPU and precision in the registry, and require the same numbers as the library:

    ridge      = peak / bandwidth                        rl.ridge_point
    attainable = min(peak, bandwidth * intensity)        rl.attainable_flops_per_s
    decode     = batch / max(N b / bw, 2 N batch / peak)  rl.decode_roofline
    MFU        = (6N or 6N + 6 L s d) * tokens/s / (n_gpus * peak), refused above 1   rl.mfu
    forward    = L (8 d^2 + scores + FFN) + 2 d V, by component   rl.transformer_flops_per_token

The JavaScript runs in ``node`` when it is installed, otherwise in the site test's chromium; with
neither the module skips and says so.
"""

from __future__ import annotations

import html
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import headless_chromium
import pytest

import roofline_lib as rl
from roofline_lib.present.export import write_registry_js

ROOT = Path(__file__).resolve().parents[1]
EXPLORER_JS = ROOT / "book" / "_static" / "roofline-explorer.js"

# Runs inside the JavaScript engine: `X` is window.RooflineExplorer, `cases` a list of calls.
_EVALUATE = """
function evaluateCases(X, cases) {
  return cases.map(function (c) {
    try {
      if (c.op === "sliders") return X.sliderLog10;
      if (c.op === "gpu") return X.findGpu(c.name).key;
      if (c.op === "peak") return X.peakFlopsPerS(c.gpu, c.precision);
      if (c.op === "ridge") return X.ridgePoint(c.gpu, c.precision);
      if (c.op === "attainable") return X.attainableFlopsPerS(c.gpu, c.precision, c.intensity);
      if (c.op === "decode") return X.decodeCeiling(c.gpu, c.precision, c.n_params, c.batch);
      if (c.op === "model_decode") return X.modelDecodeCeiling(c.gpu, c.precision, c.model, c.batch);
      if (c.op === "sig3") return X.sig3(c.x);
      if (c.op === "training_flops") {
        return X.trainingFlopsPerToken(c.n_params, c.convention, c.n_layers, c.d_model, c.seq_len);
      }
      if (c.op === "mfu" || c.op === "mfu_parts") {
        return X[c.op === "mfu" ? "mfu" : "mfuParts"](c.n_params, c.tokens_per_s, c.n_gpus, c.gpu,
          c.precision, c.convention, c.n_layers, c.d_model, c.seq_len);
      }
      if (c.op === "flops") {
        return X.transformerFlopsPerToken(c.d_model, c.d_ff, c.n_layers, c.seq_len, c.vocab, c.gated, c.causal);
      }
      if (c.op === "shares") {
        return X.flopShares(c.d_model, c.seq_len, c.n_layers, c.vocab, c.ffn_ratio, c.gated, c.causal);
      }
      if (c.op === "format") return X[c.how](c.x, c.digits);
      if (c.op === "link") return X.findLink(c.name).key;
      if (c.op === "collective") {
        return X.collectiveCost(c.collective, c.message_bytes, c.n_ranks, c.alpha_seconds, c.link, c.algorithm);
      }
      if (c.op === "bus_axis") return X.busAxis(c.flat, c.smallest);
      if (c.op === "crossover") {
        return X.latencyCrossoverBytes(c.collective, c.n_ranks, c.alpha_seconds, c.link, c.algorithm);
      }
      if (c.op === "steady") {
        return X.steadyState(c.counts, c.gpu, c.policy, c.batch, c.prompt_len, c.output_len, c.chunk_tokens);
      }
      if (c.op === "serving_decode") return X.servingDecode(c.counts, c.gpu, c.batch, c.context_len);
      if (c.op === "serving_prefill") return X.servingPrefill(c.counts, c.gpu, c.prompt_len, c.batch);
      if (c.op === "kv_limit") return X.kvMaxRequests(c.counts, c.gpu, c.prompt_len, c.output_len);
      if (c.op === "kv_capacity") return X.kvCapacity(c.counts, c.gpu, c.prompt_len, c.output_len);
      if (c.op === "frontier" || c.op === "best") {
        var pts = X.steadyFrontier(c.counts, c.gpu, c.policy, c.prompt_len, c.output_len, c.chunk_tokens);
        return c.op === "frontier" ? pts : X.bestSteadyState(pts, c.ttft_s, c.tpot_s);
      }
      if (c.op === "tpot_span") {
        return X.tpotSpan(X.steadyFrontier(c.counts, c.gpu, c.policy, c.prompt_len, c.output_len, c.chunk_tokens), c.ttft_s);
      }
      if (c.op === "node_collective") {
        return X.nodeCollectiveCost(c.collective, c.message_bytes, c.n_gpus, c.node, c.alpha_seconds, c.gpus_per_node);
      }
      if (c.op === "parallel_plan") return X.parallelPlan(c.model, X.parallelCluster(c.node, c.n_gpus), c.layout);
      if (c.op === "parallel_view") return X.parallelExplorerPlan(c.view);
      if (c.op === "parallel_sliders") return X.parallelSliderLog2;
      if (c.op === "batch_note") return X.parallelBatchNote(c.planned, c.asked, c.dp);
      if (c.op === "decode_energy") {
        return X.decodeEnergy(c.counts, c.gpu, c.bytes_per_param, c.batch, c.context_len, c.cap_watts);
      }
      if (c.op === "energy_point") {
        return X.energyPoint(c.counts, c.gpu, c.bytes_per_param, c.batch, c.context_len, c.cap_watts);
      }
      if (c.op === "joules_per_flop") {
        var pw = X.powerSpec(c.gpu), rec = X.findGpu(c.gpu);
        return X.joulesPerFlopAtTdp(pw.tdp_watts, pw.idle_watts, X.peakFlopsPerS(rec, c.precision), rec.hbm_bytes_per_s,
          pw.joules_per_hbm_byte);
      }
      if (c.op === "gpu_hour_price") return X.gpuHourPrice(c.gpu);
      if (c.op === "cost") return X.costPerMillionTokens(c.tokens_per_s, c.dollars_per_hour);
      if (c.op === "energy_text") return [X.energyText(c.x), X.powerText(c.x)];
      if (c.op === "energy_sliders") return X.energySliders;
      throw new Error("unknown op " + c.op);
    } catch (err) {
      return { error: String(err.message) };
    }
  });
}
"""

# One node process per test process: it reads one JSON list of cases per line and answers each
# with one line (starting node for every call cost about 80 ms of CPU, some 8 s over this module).
_NODE_MAIN = (
    _EVALUATE
    + """
const fs = require("fs"), vm = require("vm"), readline = require("readline");
const sandbox = { console: console };
sandbox.window = sandbox;  // the page's `window` is the global object, as in a browser
vm.createContext(sandbox);
for (const file of process.argv.slice(1, 3)) {
  vm.runInContext(fs.readFileSync(file, "utf8"), sandbox, { filename: file });
}
readline.createInterface({ input: process.stdin }).on("line", line => {
  process.stdout.write(JSON.stringify(evaluateCases(sandbox.RooflineExplorer, JSON.parse(line))) + "\\n");
});
"""
)


# Session scope: under pytest-xdist a worker runs other modules' tests between these, and a module
# fixture would start the JavaScript engine again.
@pytest.fixture(scope="session")
def registry_js(tmp_path_factory) -> Path:
    return write_registry_js(tmp_path_factory.mktemp("site") / "roofline-registry.js")


class _Node:
    """The explorer's JavaScript loaded once in a node process that answers one line per call."""

    def __init__(self, registry_js: Path):
        self.proc = subprocess.Popen(
            ["node", "-e", _NODE_MAIN, str(registry_js), str(EXPLORER_JS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def __call__(self, cases: list) -> list:
        self.proc.stdin.write(json.dumps(cases) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"node exited ({self.proc.wait(timeout=10)}): {self.proc.stderr.read()}"
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=10) == 0, self.proc.stderr.read()


@pytest.fixture(scope="session")
def run_js(registry_js):
    if shutil.which("node"):
        node = _Node(registry_js)
        yield node
        node.close()
        return
    if why := headless_chromium.missing():
        pytest.skip(f"no node to run the explorer's JavaScript, and {why}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=headless_chromium.CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
        )
        page = browser.new_page()
        page.set_content("<!doctype html><html><body></body></html>")
        page.add_script_tag(content=registry_js.read_text(encoding="utf-8"))
        page.add_script_tag(content=EXPLORER_JS.read_text(encoding="utf-8"))
        yield lambda cases: page.evaluate(
            f"cases => {{ {_EVALUATE}; return evaluateCases(window.RooflineExplorer, cases); }}", cases
        )
        browser.close()


def _grid():
    """Every GPU and precision in the registry: the library's answer next to the JS call."""
    cases, expected = [], []
    for key, spec in rl.registry().items():
        for p in spec.precisions:
            cases.append({"op": "peak", "gpu": key, "precision": p})
            expected.append(spec.peak_flops_per_s(p))
            cases.append({"op": "ridge", "gpu": key, "precision": p})
            expected.append(rl.ridge_point(spec, p))
            # either side of the ridge, the ridge itself, and the slider's ends (0.1 and 10,000)
            for intensity in (0.1, 1.0, 10.0, rl.ridge_point(spec, p), 300.0, 1e4):
                cases.append({"op": "attainable", "gpu": key, "precision": p, "intensity": intensity})
                expected.append(rl.attainable_flops_per_s(intensity, spec, p))
            for n_params in (1e9, 7e9, 70e9, 405e9):
                for batch in (1, 8, 64, 512, 4096):
                    cases.append({"op": "decode", "gpu": key, "precision": p, "n_params": n_params, "batch": batch})
                    expected.append(rl.decode_roofline(n_params, spec, rl.bytes_per_element(p), p, batch))
    return cases, expected


def _assert_matches_library(cases, got, expected, fields, scalar) -> None:
    """Each explorer result is the library's: a number (where ``scalar(case)``) to 1e-12, or else
    every field of ``fields`` (the explorer's camelCase name -> the library's attribute), numbers
    to 1e-12 and words exactly. No case may have been refused."""
    for case, mine, lib in zip(cases, got, expected):
        assert not (isinstance(mine, dict) and "error" in mine), (case, mine)
        if scalar(case):
            assert math.isclose(mine, lib, rel_tol=1e-12), (case, mine, lib)
            continue
        for name, attr in fields.items():
            value = getattr(lib, attr)
            if isinstance(value, (str, bool)):
                assert mine[name] == value, (case, name, mine[name], value)
            else:
                assert math.isclose(mine[name], value, rel_tol=1e-12), (case, name, mine[name], value)


def test_every_number_the_explorer_computes_matches_the_library(run_js):
    cases, expected = _grid()
    got = run_js(cases)
    assert len(got) == len(cases) > 1000  # 7 GPUs, 5-6 precisions each, 28 cases per precision
    decode_fields = {
        "weightBytes": "weight_bytes",
        "memorySeconds": "memory_seconds",
        "computeSeconds": "compute_seconds",
        "msPerToken": "ms_per_token",
        "tokensPerS": "tokens_per_s",
        "achievedFlopsPerS": "achieved_flops_per_s",
        "peakFlopsPerS": "peak_flops_per_s",
        "shareOfPeak": "share_of_peak",
        "bound": "bound",
        "fitsInMemory": "fits_in_memory",
    }
    _assert_matches_library(cases, got, expected, decode_fields, scalar=lambda case: case["op"] != "decode")


def test_shipped_models_decode_like_the_library(run_js):
    """The model menu of the decode explorer against inference.decode_roofline(config, ...)."""
    cases, expected = [], []
    for model in rl.shipped_models():
        cfg = rl.model_config(model)
        for gpu in ("A100", "H100", "H200", "MI300X"):
            for batch in (1, 2, 8, 64, 4096):
                cases.append({"op": "model_decode", "gpu": gpu, "precision": "bf16", "model": model, "batch": batch})
                expected.append(rl.decode_roofline(cfg, gpu, 2, "bf16", batch))
    got = run_js(cases)
    for case, mine, lib in zip(cases, got, expected):
        assert not (isinstance(mine, dict) and "error" in mine), (case, mine)
        for name, value in (
            ("weightBytes", lib.weight_bytes),
            ("tokensPerS", lib.tokens_per_s),
            ("computeSeconds", lib.compute_seconds),
            ("shareOfPeak", lib.share_of_peak),
        ):
            assert math.isclose(mine[name], value, rel_tol=1e-12), (case, name, mine[name], value)
        assert (mine["bound"], mine["fitsInMemory"]) == (lib.bound, lib.fits_in_memory), case
    # Mixtral at batch 1 reads 2 of its 8 experts per layer: 25.5 GB of its 93.4 GB
    mixtral_one = got[[c["model"] for c in cases].index("mixtral-8x7b")]
    assert mixtral_one["weightBytes"] == pytest.approx(25.4977e9, rel=1e-5)
    assert run_js([{"op": "model_decode", "gpu": "A100", "precision": "bf16", "model": "llama-9", "batch": 1}])[0] == {
        "error": 'unknown model "llama-9"; shipped models: ' + ", ".join(rl.shipped_models())
    }


def test_worked_examples(run_js):
    a100_ridge, a100_at_10, h100_decode = run_js(
        [
            {"op": "ridge", "gpu": "A100", "precision": "bf16"},
            {"op": "attainable", "gpu": "A100", "precision": "bf16", "intensity": 10},
            {"op": "decode", "gpu": "H100", "precision": "bf16", "n_params": 7e9, "batch": 1},
        ]
    )
    assert round(a100_ridge, 2) == 153.02  # 312e12 FLOP/s / 2039e9 B/s = 153.02 FLOP/byte
    assert a100_at_10 == pytest.approx(20.39e12)  # memory-bound: 2039e9 B/s * 10 FLOP/B = 20.39e12
    # 7e9 params * 2 B = 14e9 B; 14e9 / 3.35e12 B/s = 4.179 ms per step; 1 / 4.179 ms = 239.3 tok/s
    assert h100_decode["weightBytes"] == 14e9
    assert h100_decode["tokensPerS"] == pytest.approx(239.29, rel=1e-4)
    assert h100_decode["bound"] == "memory"


def test_decode_turns_compute_bound_past_the_ridge(run_js):
    # H100 bf16: step = max(14e9 / 3.35e12, 2 * 7e9 * batch / 989.5e12). The compute term wins once
    # batch > 989.5e12 * 14e9 / (3.35e12 * 14e9) = 295.4, so batch 256 is memory-, 512 compute-bound.
    at_256, at_512 = run_js(
        [{"op": "decode", "gpu": "H100", "precision": "bf16", "n_params": 7e9, "batch": b} for b in (256, 512)]
    )
    assert at_256["bound"] == "memory" and at_512["bound"] == "compute"
    assert at_512["tokensPerS"] == pytest.approx(989.5e12 / 14e9)  # peak / (2 N) = 70,679 tok/s


def test_the_sliders_span_what_the_notebook_widgets_span(run_js):
    # A start outside a range input's span is clamped by the browser, so a page whose widget started
    # at 0.02 FLOP/byte showed its website slider at 0.1 (the JavaScript spanned 0.1 to 10,000).
    from roofline_lib import widgets

    (spans,) = run_js([{"op": "sliders"}])
    assert spans == {
        "intensity": list(widgets._INTENSITY_LOG10),
        "tokens_per_s": list(widgets._TOKENS_LOG10),
        "message_bytes": list(widgets._MESSAGE_LOG10),
        "slo_s": list(widgets._SLO_LOG10),
    }


def test_names_resolve_like_the_library(run_js):
    names = [n for key, spec in rl.registry().items() for n in (key, spec.name, *spec.aliases)]
    names += ["A100", "h100_sxm", "  H200   SXM "]
    got = run_js([{"op": "gpu", "name": n} for n in names])
    assert got == [rl.gpu(n).key for n in names]


def test_bad_input_is_refused_with_the_reason(run_js):
    no_fp8, zero_intensity, zero_batch, unknown = run_js(
        [
            {"op": "peak", "gpu": "A100", "precision": "fp8"},
            {"op": "attainable", "gpu": "A100", "precision": "bf16", "intensity": 0},
            {"op": "decode", "gpu": "A100", "precision": "bf16", "n_params": 7e9, "batch": 0},
            {"op": "gpu", "name": "K80"},
        ]
    )
    assert "A100 80GB SXM has no fp8" in no_fp8["error"] and "bf16" in no_fp8["error"]
    assert "intensity must be a positive finite number of FLOP/byte" in zero_intensity["error"]
    assert "batch must be a positive whole number" in zero_batch["error"]
    assert "unknown GPU" in unknown["error"] and "h100-sxm" in unknown["error"]


@pytest.mark.parametrize(
    "x, shown",
    [
        (20.39, "20.4"),  # 3 significant digits
        (153.0161844, "153"),
        (989.5, "990"),
        (12345.0, "12,300"),  # thousands separated, never 1.23e+04
        (0.1, "0.1"),
        (0.0654, "0.0654"),
        (6.5353, "6.54"),
    ],
)
def test_readouts_print_three_significant_digits(run_js, x, shown):
    assert run_js([{"op": "sig3", "x": x}]) == [shown]


def test_the_notebook_explorers_round_as_the_website_does(run_js):
    # the library's sig3 (the notebook explorers' readouts) against the page's, ties included:
    # 20.25 and 0.125 are exact binary ties, which JavaScript's toPrecision rounds up
    from roofline_lib.core.formatting import sig3

    xs = [20.25, 0.125, 3977.4, 4660.57, 989.5, 12345.0, 0.0654, 6.5353, 1.0, 999.5, 1e9, 291.29, 0.001]
    got = run_js([{"op": "sig3", "x": x} for x in xs])
    assert [sig3(x) for x in xs] == got
    assert got[:4] == ["20.3", "0.125", "3,980", "4,660"]


def test_the_extension_finds_explorers_by_their_class():
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    try:
        from roofline_site import has_explorer
    finally:
        sys.path.pop(0)
    assert has_explorer('<div class="roofline-explorer" data-gpu="A100"></div>')
    assert has_explorer('<div class="wide roofline-explorer">')
    assert not has_explorer('<p class="roofline-explorer__title">')  # a part, not an explorer
    assert not has_explorer("&lt;div class=&quot;roofline-explorer&quot;&gt;")  # shown as code


# --------------------------------------------------------------------------- MFU (chapter 5)

_SHAPE = {"n_layers": 32, "d_model": 4096, "seq_len": 4096}  # Llama-2-7B's shape
_CONVENTIONS = (("6N", {}), ("three-term", _SHAPE), ("full-square", _SHAPE))


def _library_mfu(case):
    """rl.mfu for one case: the fraction, or the text of the error it raises."""
    kwargs = {k: case[k] for k in ("n_layers", "d_model", "seq_len") if k in case}
    try:
        return rl.mfu(
            case["n_params"],
            case["tokens_per_s"],
            case["n_gpus"],
            case["gpu"],
            case["precision"],
            case["convention"],
            **kwargs,
        )
    except ValueError as exc:
        return {"error": str(exc)}


def _mfu_grid():
    """Every GPU and precision, small to large models and runs, both conventions; many refused."""
    cases = []
    for key, spec in rl.registry().items():
        for p in spec.precisions:
            for n_params in (1.014e8, 6.7e9, 70e9):
                for tokens_per_s in (1e3, 1e5, 1.5e6, 1e8):
                    for n_gpus in (1, 8, 256, 16384):
                        for convention, shape in _CONVENTIONS:
                            cases.append(
                                {
                                    "op": "mfu",
                                    "gpu": key,
                                    "precision": p,
                                    "n_params": n_params,
                                    "tokens_per_s": tokens_per_s,
                                    "n_gpus": n_gpus,
                                    "convention": convention,
                                    **shape,
                                }
                            )
    return cases


def _same_to_3_digits(mine, lib) -> bool:
    """The readouts print 3 significant digits: both must print the same."""
    return f"{mine:.3g}" == f"{lib:.3g}" and math.isclose(mine, lib, rel_tol=1e-12)


def test_mfu_matches_the_library_and_refuses_what_it_refuses(run_js):
    cases = _mfu_grid()
    got = run_js(cases)
    expected = [_library_mfu(c) for c in cases]
    refused = sum(isinstance(e, dict) for e in expected)
    assert len(cases) > 3000 and 500 < refused < len(cases) - 500, refused  # both outcomes are tested
    for case, mine, lib in zip(cases, got, expected):
        if isinstance(lib, dict):
            # the page shows this message instead of a number: the same words as the library's
            assert mine == lib, (case, mine, lib)
        else:
            assert not isinstance(mine, dict), (case, mine)
            assert _same_to_3_digits(mine, lib), (case, mine, lib)


def test_mfu_steps_match_the_library(run_js):
    cases = [
        {
            "op": "mfu_parts",
            "gpu": key,
            "precision": p,
            "n_params": 6.7e9,
            "tokens_per_s": 3e6,
            "n_gpus": 256,
            "convention": convention,
            **shape,
        }
        for key, spec in rl.registry().items()
        for p in spec.precisions
        for convention, shape in _CONVENTIONS
    ]
    for case, mine in zip(cases, run_js(cases)):
        spec = rl.gpu(case["gpu"])
        per_token = rl.training_flops_per_token(
            case["n_params"], convention=case["convention"], **{k: case[k] for k in _SHAPE if k in case}
        )
        assert mine["flopsPerToken"] == per_token, case
        assert mine["achievedFlopsPerS"] == per_token * 3e6, case
        assert mine["peakFlopsPerS"] == 256 * spec.peak_flops_per_s(case["precision"]), case
        assert mine["convention"] == case["convention"]


def test_mfu_worked_example_and_its_refusal(run_js):
    # chapter 5's start: 6.7e9 params at 1.5e6 tokens/s on 256 A100s in bf16
    ok, too_fast = run_js(
        [
            {
                "op": "mfu",
                "gpu": "A100",
                "precision": "bf16",
                "n_params": 6.7e9,
                "tokens_per_s": r,
                "n_gpus": 256,
                "convention": "6N",
            }
            for r in (1.5e6, 3e6)
        ]
    )
    # 6 * 6.7e9 * 1.5e6 = 6.03e16 FLOP/s; 256 * 312e12 = 7.9872e16 FLOP/s; 6.03 / 7.9872 = 75.5 %
    assert ok == pytest.approx(0.75496, rel=1e-4)
    # twice the rate: 12.06e16 / 7.9872e16 = 151.0 %, refused with the usual causes named
    assert too_fast["error"].startswith(
        "MFU of 151.0% is impossible: 120.6 PFLOP/s against 256 x "
        "A100 80GB SXM at a dense bf16 peak of 79.87 PFLOP/s; likely causes:"
    )
    assert "sparse (2:4) peak" in too_fast["error"] and "wrong GPU count" in too_fast["error"]


def test_three_term_adds_the_score_work(run_js):
    six_n, three_term = run_js(
        [
            {"op": "training_flops", "n_params": 6.7e9, "convention": "6N"},
            {"op": "training_flops", "n_params": 6.7e9, "convention": "Three-Term", **_SHAPE},
        ]
    )
    assert six_n == 40.2e9  # 6 * 6.7e9
    assert three_term == 40.2e9 + 6 * 32 * 4096 * 4096  # + 3.221e9 = 43.42e9 FLOP per token
    full, palm = run_js(
        [
            {"op": "training_flops", "n_params": 6.7e9, "convention": "full-square", **_SHAPE},
            {"op": "training_flops", "n_params": 6.7e9, "convention": "PaLM", **_SHAPE},
        ]
    )
    assert full == palm == 40.2e9 + 12 * 32 * 4096 * 4096  # the whole square: twice the causal term
    assert full == rl.training_flops_per_token(6.7e9, convention="full-square", **_SHAPE)


def test_mfu_bad_input_is_refused_with_the_reason(run_js):
    base = {
        "op": "mfu",
        "gpu": "A100",
        "precision": "bf16",
        "n_params": 6.7e9,
        "tokens_per_s": 1e6,
        "n_gpus": 8,
        "convention": "6N",
    }
    no_fp8, no_shape, bad_convention, zero_gpus, half_gpu, zero_rate = run_js(
        [
            {**base, "precision": "fp8"},
            {**base, "convention": "three-term", "n_layers": 32},
            {**base, "convention": "7N"},
            {**base, "n_gpus": 0},
            {**base, "n_gpus": 2.5},
            {**base, "tokens_per_s": 0},
        ]
    )
    assert "A100 80GB SXM has no fp8" in no_fp8["error"] and "bf16" in no_fp8["error"]
    assert no_shape["error"].endswith("missing: d_model, seq_len")
    assert "convention must be one of '6N', 'three-term', 'full-square'" in bad_convention["error"]
    assert "n_gpus must be a positive whole number of GPUs" in zero_gpus["error"]
    assert "n_gpus must be a positive whole number of GPUs" in half_gpu["error"]
    assert "tokens_per_s must be a positive finite number of tokens per second" in zero_rate["error"]


# --------------------------------------------------------------------------- FLOP shares (chapter 3)

_SHARE_KEYS = {"ffn": "ffn_total", "qkvo": "qkvo_total", "scores": "scores_total", "unembed": "unembed"}


def _shares_grid():
    """The sliders' whole range (seq_len 2^7..2^17, d_model 2^8..2^14), three FFN widths, both flags."""
    return [
        {
            "op": "shares",
            "d_model": 2**dk,
            "seq_len": 2**sk,
            "n_layers": 32,
            "vocab": 32000,
            "ffn_ratio": ratio,
            "gated": gated,
            "causal": causal,
        }
        for dk in range(8, 15)
        for sk in range(7, 18)
        for ratio in (4.0, 11008 / 4096, 8 / 3)
        for gated in (False, True)
        for causal in (True, False)
    ]


def test_flop_shares_match_the_library_over_the_sliders_range(run_js):
    cases = _shares_grid()
    got = run_js(cases)
    assert len(got) == 7 * 11 * 3 * 2 * 2
    for case, mine in zip(cases, got):
        d_ff = max(1, round(case["ffn_ratio"] * case["d_model"]))  # what flop_share_explorer uses
        lib = rl.transformer_flops_per_token(
            case["d_model"],
            d_ff,
            case["n_layers"],
            case["seq_len"],
            case["vocab"],
            gated=case["gated"],
            causal=case["causal"],
        )
        assert mine["dFf"] == d_ff, case
        assert mine["fwdPerToken"] == lib.fwd_per_token, case  # whole numbers, exactly
        assert [mine["ffnTotal"], mine["qkvoTotal"], mine["scoresTotal"], mine["unembed"]] == [
            lib.ffn_total,
            lib.qkvo_total,
            lib.scores_total,
            lib.unembed,
        ], case
        for js_key, lib_key in _SHARE_KEYS.items():
            assert _same_to_3_digits(mine["shares"][js_key], lib.share(lib_key)), (case, js_key)
        assert math.isclose(sum(mine["shares"].values()), 1.0, rel_tol=1e-12)


def test_flop_shares_worked_example(run_js):
    # chapter 3's start: Llama-2-7B, d = 4096, d_ff = 11008 (2.6875 d), 32 layers, V = 32000, s = 4096
    (f,) = run_js(
        [
            {
                "op": "shares",
                "d_model": 4096,
                "seq_len": 4096,
                "n_layers": 32,
                "vocab": 32000,
                "ffn_ratio": 2.6875,
                "gated": True,
                "causal": True,
            }
        ]
    )
    assert f["qkvoTotal"] == 32 * 8 * 4096**2 == 4_294_967_296
    assert f["scoresTotal"] == 32 * 2 * 4096 * 4096 == 1_073_741_824  # causal: 2 s d per layer
    assert f["ffnTotal"] == 32 * 6 * 4096 * 11008 == 8_657_043_456  # gated: three d x d_ff matrices
    assert f["unembed"] == 2 * 4096 * 32000 == 262_144_000
    assert f["fwdPerToken"] == 14_287_896_576  # the four added up: 14.3 GFLOP
    assert round(100 * f["shares"]["ffn"], 1) == 60.6  # 8.657 / 14.288


def test_flop_shares_at_long_context_belong_to_the_scores(run_js):
    # d = 1024, d_ff = 4096, s = 131072: scores 2 s d = 268.4M per layer against 8 d^2 + 4 d d_ff
    # = 25.2M: the scores take 268.4 / (268.4 + 25.2) = 91.4 % of the body, 90.8 % with the unembedding
    (f,) = run_js(
        [
            {
                "op": "shares",
                "d_model": 1024,
                "seq_len": 131072,
                "n_layers": 32,
                "vocab": 32000,
                "ffn_ratio": 4.0,
                "gated": False,
                "causal": True,
            }
        ]
    )
    assert round(100 * f["shares"]["scores"], 1) == 90.8


def test_d_ff_rounds_like_python(run_js):
    # round() sends an exact half to the even neighbour: 2.5 -> 2, 3.5 -> 4; and d_ff is at least 1
    half_down, half_up, tiny = run_js(
        [
            {
                "op": "shares",
                "d_model": 1,
                "seq_len": 1,
                "n_layers": 1,
                "vocab": 1,
                "ffn_ratio": r,
                "gated": False,
                "causal": False,
            }
            for r in (2.5, 3.5, 0.1)
        ]
    )
    assert (half_down["dFf"], half_up["dFf"], tiny["dFf"]) == (2, 4, 1)


def test_flops_bad_input_is_refused_with_the_reason(run_js):
    base = {
        "op": "flops",
        "d_model": 64,
        "d_ff": 256,
        "n_layers": 2,
        "seq_len": 16,
        "vocab": 100,
        "gated": False,
        "causal": True,
    }
    zero_width, half_layer, not_a_flag, ratio = run_js(
        [
            {**base, "d_model": 0},
            {**base, "n_layers": 1.5},
            {**base, "gated": "yes"},
            {
                "op": "shares",
                "d_model": 64,
                "seq_len": 16,
                "n_layers": 2,
                "vocab": 100,
                "ffn_ratio": -1,
                "gated": False,
                "causal": True,
            },
        ]
    )
    assert "d_model must be a positive whole number of features, got 0" in zero_width["error"]
    assert "n_layers must be a positive whole number of layers" in half_layer["error"]
    assert "gated must be true or false" in not_a_flag["error"]
    assert "ffn_ratio must be a positive finite number of d_ff per d_model" in ratio["error"]


# --------------------------------------------------------------------------- Python's number formats


@pytest.mark.parametrize(
    "x",
    [0.125, 0.135, 0.15, 0.25, 2.5, 3.5, 79.872, 120.6, 1234.5, 1235.5, 12345678.0, 0.00012345, 1e-5, 73728.0, 1.5095],
)
def test_refusal_numbers_print_as_python_prints_them(run_js, x):
    """The refusal's numbers use Python's .4g and .1% (ties to even), so its text is the library's."""
    general, fixed, percent = run_js(
        [
            {"op": "format", "how": "generalLikePython", "x": x, "digits": 4},
            {"op": "format", "how": "fixedLikePython", "x": x, "digits": 2},
            {"op": "format", "how": "percentLikePython", "x": x / 100, "digits": 1},
        ]
    )
    assert (general, fixed, percent) == (f"{x:.4g}", f"{x:.2f}", f"{x / 100:.1%}")


# ------------------------------------------------------------------ comms mode (roofline_lib.workloads.comms)

_COMMS_KINDS = [
    ("all_reduce", "ring"),
    ("all_reduce", "tree"),
    ("all_gather", "ring"),
    ("reduce_scatter", "ring"),
    ("all_to_all", "ring"),
    ("point_to_point", "ring"),
]


def test_collective_costs_match_the_library_on_every_link(run_js):
    cases, expected = [], []
    for key in rl.known_links():
        for collective, algorithm in _COMMS_KINDS:
            for n in (2, 3, 8, 1024):
                for size in (100.0, 1e6, 1.23e8, 1e11):  # the slider's ends and two between
                    cases.append(
                        {
                            "op": "collective",
                            "collective": collective,
                            "algorithm": algorithm,
                            "n_ranks": n,
                            "message_bytes": size,
                            "alpha_seconds": 5e-6,
                            "link": key,
                        }
                    )
                    expected.append(rl.collective_cost(collective, size, n, 5e-6, key, algorithm))
                cases.append(
                    {
                        "op": "crossover",
                        "collective": collective,
                        "algorithm": algorithm,
                        "n_ranks": n,
                        "alpha_seconds": 5e-6,
                        "link": key,
                    }
                )
                expected.append(rl.latency_crossover_bytes(collective, n, 5e-6, key, algorithm))
    got = run_js(cases)
    assert len(got) == len(cases) > 1000  # 9 links x 6 collectives x 4 rank counts x 5 cases
    cost_fields = {
        "steps": "steps",
        "bytesPerRank": "bytes_per_rank",
        "bytesPerS": "bytes_per_s",
        "latencySeconds": "latency_seconds",
        "bandwidthSeconds": "bandwidth_seconds",
        "seconds": "seconds",
        "algorithmBytesPerS": "algorithm_bytes_per_s",
        "busBytesPerS": "bus_bytes_per_s",
        "latencyShare": "latency_share",
    }
    _assert_matches_library(cases, got, expected, cost_fields, scalar=lambda case: case["op"] == "crossover")


def test_collective_worked_example_and_link_names(run_js):
    cost, names = run_js(
        [
            {
                "op": "collective",
                "collective": "all-reduce",
                "message_bytes": 1e8,
                "n_ranks": 8,
                "alpha_seconds": 5e-6,
                "link": "NVLink 4",
            },
            {"op": "link", "name": "InfiniBand NDR"},
        ]
    )
    # 14 steps x 5 us = 70 us, plus 2 * 7 / 8 * 100 MB = 175 MB at 450 GB/s = 388.9 us; 458.9 us in all
    assert cost["steps"] == 14 and cost["bytesPerRank"] == pytest.approx(175e6)
    assert cost["seconds"] == pytest.approx(70e-6 + 175e6 / 450e9)
    assert names == "ib-ndr"
    every = [n for key, spec in rl.link_registry().items() for n in (key, spec.name, *spec.aliases)]
    assert run_js([{"op": "link", "name": n} for n in every]) == [rl.link(n).key for n in every]


def test_the_bus_chart_shows_the_whole_curve_at_512_ranks_and_says_its_latency_in_words(run_js):
    # 100 bytes all-reduced on 512 ranks over NVLink 4: 2 * 511 = 1,022 steps x 5 us = 5.11 ms of
    # latency; bus bandwidth 100 * 2 * 511 / 512 / 5.11 ms = 39 kB/s, 7 decades under the link's
    # 900 GB/s (450 GB/s one way times the factor 2 * 511 / 512 over 2 * 511 / 512 bytes a byte)
    cost = rl.collective_cost("all_reduce", 100, 512, 5e-6, "NVLink 4")
    assert cost.steps == 1022 and cost.bus_bytes_per_s == pytest.approx(100 * 2 * 511 / 512 / 5.11e-3, rel=1e-3)
    flat = 450e9  # the large-message limit of the bus bandwidth, B/s
    axis, usual, *formats = run_js(
        [
            {"op": "bus_axis", "flat": flat, "smallest": cost.bus_bytes_per_s},
            {"op": "bus_axis", "flat": flat, "smallest": flat / 10},
            *({"op": "format", "how": "duration", "x": x} for x in (5.11e-3, 4.589e-4, 2.5, 3e-8)),
        ]
    )
    # top: ceil(log10(900e9)) = 12; bottom: floor(log10(39,000)) = 4, below the usual 12 - 6 = 6
    assert axis == {"top": 12, "bottom": 4, "every": 2}
    assert 10 ** axis["bottom"] <= cost.bus_bytes_per_s  # the curve's left end is on the chart
    assert usual == {"top": 12, "bottom": 6, "every": 1}
    from roofline_lib.core.formatting import seconds

    want = [seconds(x).replace(" us", " µs") for x in (5.11e-3, 4.589e-4, 2.5, 3e-8)]
    assert formats == want == ["5.11 ms", "459 µs", "2.5 s", "30 ns"]
    # the notebook's widget draws the same span and says the same in its readout
    from roofline_lib import widgets

    ex = widgets.collective_explorer(link="NVLink 4", n_ranks=512, message_bytes=100, alpha_seconds=5e-6)
    assert ex.figure.axes[0].get_ylim()[0] <= cost.bus_bytes_per_s / 1e9
    assert "1,022 steps x 5 us = 5.11 ms of latency" in ex.readout.value


def test_comms_bad_input_is_refused_with_the_reason(run_js):
    one_rank, tree_gather, no_link, zero_size, broadcast = run_js(
        [
            {
                "op": "collective",
                "collective": "all_reduce",
                "message_bytes": 1e6,
                "n_ranks": 1,
                "alpha_seconds": 5e-6,
                "link": "nvlink4",
            },
            {
                "op": "collective",
                "collective": "all_gather",
                "algorithm": "tree",
                "message_bytes": 1e6,
                "n_ranks": 4,
                "alpha_seconds": 5e-6,
                "link": "nvlink4",
            },
            {"op": "link", "name": "token ring"},
            {
                "op": "collective",
                "collective": "all_reduce",
                "message_bytes": 0,
                "n_ranks": 4,
                "alpha_seconds": 5e-6,
                "link": "nvlink4",
            },
            {
                "op": "collective",
                "collective": "broadcast",
                "message_bytes": 1e6,
                "n_ranks": 4,
                "alpha_seconds": 5e-6,
                "link": "nvlink4",
            },
        ]
    )
    assert "n_ranks must be at least 2 ranks" in one_rank["error"]
    assert "'tree' is modelled for all_reduce only" in tree_gather["error"]
    assert no_link["error"].startswith('unknown link "token ring"; known links: nvlink3')
    assert "message_bytes must be a positive finite number of bytes" in zero_size["error"]
    assert "collective must be one of all_reduce" in broadcast["error"]


# ------------------------------------------------------------------ serving mode (roofline_lib.workloads.serving)

#: Dense shipped models without a sliding window: the ones serving.step_counts describes linearly.
_SERVING_MODELS = [
    m for m in rl.shipped_models() if not rl.model_config(m).is_moe and rl.model_config(m).sliding_window is None
]
_STEADY_FIELDS = {
    "batch": "batch",
    "tpotS": "tpot_s",
    "ttftS": "ttft_s",
    "tokensPerS": "tokens_per_s",
    "decodeBound": "decode_bound",
    "devices": "devices",
    "sustainable": "sustainable",
    "feasible": "feasible",
}


def _serving(model: str, gpu: str):
    """The library's server (bf16, or fp16 on a chip without it) and its counts as the markup carries them."""
    from roofline_lib import widgets

    spec = rl.gpu(gpu)
    server = rl.serving_server(rl.model_config(model), spec, precision=widgets._serving_precision(spec))
    c = rl.step_counts(server)
    counts = {
        "body_flops": c.body_flops_per_token,
        "key_flops": c.score_flops_per_key,
        "unembed_flops": c.unembed_flops_per_row,
        "weight_bytes_fixed": c.weight_bytes_fixed,
        "weight_bytes_per_token": c.weight_bytes_per_token,
        "kv_bytes_per_token": c.kv_bytes_per_token,
        "stored_weight_bytes": c.stored_weight_bytes,
        "activation_bytes_per_token": c.activation_bytes_per_token,
        "activation_bytes_per_row": c.activation_bytes_per_row,
        "max_context_tokens": c.max_context_tokens,
        "model_name": server.cfg.name,
    }
    return server, counts


def test_serving_steps_and_steady_states_match_the_library(run_js):
    assert {"llama-3-8b", "llama-2-70b"} <= set(_SERVING_MODELS)  # the grid below is not empty
    cases, expected = [], []
    for model in _SERVING_MODELS:
        for gpu in ("A100", "H100", "V100-SXM2-32GB", "MI300X", "L4"):
            server, counts = _serving(model, gpu)
            for batch, context in ((1, 128), (64, 4096), (512, 1024)):
                cases.append(
                    {"op": "serving_decode", "counts": counts, "gpu": gpu, "batch": batch, "context_len": context}
                )
                expected.append(rl.decode_step(server, batch, context))
            for prompt, batch in ((16, 1), (2048, 1), (512, 8)):
                cases.append(
                    {"op": "serving_prefill", "counts": counts, "gpu": gpu, "prompt_len": prompt, "batch": batch}
                )
                expected.append(rl.prefill_step(server, prompt, batch=batch))
            for policy in rl.POLICIES:
                for batch in (1, 8, 64, 512):
                    for prompt, output in ((1024, 256), (128, 33)):
                        cases.append(
                            {
                                "op": "steady",
                                "counts": counts,
                                "gpu": gpu,
                                "policy": policy,
                                "batch": batch,
                                "prompt_len": prompt,
                                "output_len": output,
                                "chunk_tokens": 2048,
                            }
                        )
                        expected.append(rl.steady_state(server, policy, batch, prompt, output, chunk_tokens=2048))
    got = run_js(cases)
    assert len(got) == len(cases) > 1000
    step_fields = {
        "flops": "flops",
        "bytesMoved": "bytes_moved",
        "intensity": "intensity",
        "seconds": "seconds",
        "bound": "bound",
    }
    for case, mine, lib in zip(cases, got, expected):
        fields = _STEADY_FIELDS if case["op"] == "steady" else step_fields
        _assert_matches_library([case], [mine], [lib], fields, scalar=lambda _case: False)


#: (model, chip) whose frontiers are compared batch by batch: 80 GB, 40 GB and 24 GB of memory, and a
#: 70B model that fits nowhere here (its frontier empty).
_FRONTIER_CASES = {
    ("llama-3-8b", "h100-sxm"),
    ("llama-3-8b", "l4"),
    ("qwen2-7b", "a100-40gb-sxm"),
    ("llama-2-70b", "h100-sxm"),
}


def test_serving_frontier_kv_limit_and_best_point_match_the_library(run_js):
    from roofline_lib import widgets

    cases, expected = [], []
    for model in ("llama-3-8b", "llama-2-70b", "qwen2-7b"):
        for gpu in rl.known_gpus():
            server, counts = _serving(model, gpu)
            base = {"counts": counts, "gpu": gpu, "prompt_len": 1024, "output_len": 256, "chunk_tokens": 2048}
            capacity = rl.kv_capacity(server, 1024, 256)
            cases.append({"op": "kv_capacity", **base})
            expected.append(capacity)
            if (model, gpu) not in _FRONTIER_CASES:  # every chip's capacity; the frontiers (every batch) on four
                continue
            for policy in rl.POLICIES:
                points = rl.steady_frontier(server, policy, 1024, 256, chunk_tokens=2048)
                cases.append({"op": "frontier", "policy": policy, **base})
                expected.append(points)
                for ttft, tpot in ((0.5, 0.03), (10.0, 10.0), (0.05, 0.01)):
                    try:
                        best = rl.best_steady_state(points, ttft, tpot)
                    except ValueError as exc:
                        best = exc
                    cases.append({"op": "best", "policy": policy, "ttft_s": ttft, "tpot_s": tpot, **base})
                    expected.append(best)
                    # the TPOT slider's span over this frontier: the widget's rule, on the page too
                    cases.append({"op": "tpot_span", "policy": policy, "ttft_s": ttft, **base})
                    expected.append(list(widgets._tpot_span(points, ttft)))
    got = run_js(cases)
    assert {c.feasible for c in expected if isinstance(c, rl.KVCapacity)} == {True, False}  # a 70B fits some chips only
    for case, mine, lib in zip(cases, got, expected):
        if case["op"] == "kv_capacity":  # the same count, and the same fit in the same words
            want = {"maxRequests": lib.max_requests, "feasible": lib.feasible, "fitHeadline": lib.fit.headline}
            assert mine == want, (case["gpu"], mine, want)
        elif case["op"] == "frontier":
            assert [p["batch"] for p in mine] == [p.batch for p in lib], case["gpu"]  # every batch, 1 to the limit
            _assert_matches_library([case] * len(lib), mine, lib, _STEADY_FIELDS, scalar=lambda _case: False)
            assert [p["fitHeadline"] for p in mine] == [p.fit.headline for p in lib], case["gpu"]
        elif case["op"] == "tpot_span":
            assert mine == lib, (case["gpu"], case["policy"], case["ttft_s"], mine, lib)  # ends on the 0.01 grid
        elif isinstance(lib, ValueError):
            assert mine["error"] == str(lib), (case, mine)  # the library's refusal, word for word
        else:
            _assert_matches_library([case], [mine], [lib], _STEADY_FIELDS, scalar=lambda _case: False)


def test_serving_worked_example_and_refusals(run_js):
    _, counts = _serving("llama-3-8b", "H100")
    decode, bad_policy, no_chunk = run_js(
        [
            {"op": "serving_decode", "counts": counts, "gpu": "H100", "batch": 1, "context_len": 1},
            {
                "op": "steady",
                "counts": counts,
                "gpu": "H100",
                "policy": "fifo",
                "batch": 1,
                "prompt_len": 8,
                "output_len": 8,
            },
            {
                "op": "steady",
                "counts": counts,
                "gpu": "H100",
                "policy": "chunked",
                "batch": 1,
                "prompt_len": 8,
                "output_len": 8,
            },
        ]
    )
    # one token at context 1: every stored weight but 128,255 of the 128,256 embedding rows
    # (4096 * 2 bytes each), plus one token's KV (131,072 bytes), over 3.35 TB/s
    read = counts["stored_weight_bytes"] - 128255 * 4096 * 2 + counts["kv_bytes_per_token"]
    assert decode["bytesMoved"] == read and decode["bound"] == "memory"
    assert decode["seconds"] == pytest.approx(read / 3.35e12)
    assert bad_policy["error"].startswith("policy must be one of static, continuous, chunked, disaggregated")
    assert "chunk_tokens must be a positive whole number of tokens" in no_chunk["error"]


@pytest.mark.parametrize(
    "gpu, policy, ttft, tpot",
    [("H100", "chunked", 0.5, 0.01), ("A100", "continuous", 0.2, 0.05), ("H200", "disaggregated", 1.0, 0.005)],
)
def test_serving_explorer_starts_at_the_widgets_operating_point(run_js, gpu, policy, ttft, tpot):
    from roofline_lib import widgets

    ex = widgets.serving_explorer(gpu=gpu, policy=policy, slo_ttft_s=ttft, slo_tpot_s=tpot)
    attrs = ex.site_attributes
    names = ("body_flops", "key_flops", "unembed_flops", "weight_bytes_fixed", "weight_bytes_per_token")
    counts = {n: float(attrs["data-" + n.replace("_", "-")]) for n in names}
    counts["kv_bytes_per_token"] = float(attrs["data-kv-bytes-per-token"])
    counts["stored_weight_bytes"] = float(attrs["data-stored-weight-bytes"])
    for n in ("activation_bytes_per_token", "activation_bytes_per_row", "max_context_tokens"):
        counts[n] = float(attrs["data-" + n.replace("_", "-")])
    counts["model_name"] = attrs["data-model-name"]
    (best,) = run_js(
        [
            {
                "op": "best",
                "counts": counts,
                "gpu": attrs["data-gpu"],
                "policy": attrs["data-policy"],
                "prompt_len": int(attrs["data-prompt-len"]),
                "output_len": int(attrs["data-output-len"]),
                "chunk_tokens": int(attrs["data-chunk-tokens"]),
                "ttft_s": float(attrs["data-slo-ttft-s"]),
                "tpot_s": float(attrs["data-slo-tpot-s"]),
            }
        ]
    )
    assert best["batch"] == ex.result.batch, best
    assert best["tokensPerS"] == pytest.approx(ex.result.tokens_per_s, rel=1e-12)
    assert best["tpotS"] == pytest.approx(ex.result.tpot_s, rel=1e-12)


# ------------------------------------------------------------------ parallel mode (roofline_lib.workloads.parallel.plan)

#: Plan fields the explorer restates: its camelCase name -> the library's attribute.
_PLAN_FIELDS = {
    "model": "model",
    "cluster": "cluster",
    "tokensPerStep": "tokens_per_step",
    "microBatches": "micro_batches",
    "layersPerStage": "layers_per_stage",
    "computeSeconds": "compute_seconds",
    "bubbleSeconds": "bubble_seconds",
    "hbmSeconds": "hbm_seconds",
    "stepSeconds": "step_seconds",
    "criticalSeconds": "critical_seconds",
    "binding": "binding",
    "assumption": "assumption",
    "recompute": "recompute",
    "feasible": "feasible",
    "serialSeconds": "serial_seconds",
    "modelFlopsPerStep": "model_flops_per_step",
    "hardwareFlopsPerStep": "hardware_flops_per_step",
    "peakFlopsPerS": "peak_flops_per_s",
    "nGpus": "n_gpus",
    "fits": "fits",
    "mfu": "mfu",
    "mfuNoOverlap": "mfu_no_overlap",
    "hardwareFlopsPerSPerGpu": "hardware_flops_per_s_per_gpu",
}
_MEMORY_FIELDS = {
    k: k for k in ("weights", "gradients", "optimizer", "activations", "capacity", "state", "total", "fits")
}
_ROOF_FIELDS = {
    "name": "name",
    "what": "what",
    "collective": "collective",
    "group": "group",
    "gpusPerNode": "gpus_per_node",
    "link": "link",
    "count": "count",
    "messageBytes": "message_bytes",
    "bytesPerGpu": "bytes_per_gpu",
    "seconds": "seconds",
    "intensity": "intensity",
    "ridge": "ridge",
    "hidden": "hidden",
}

#: Layouts that the planner accepts: (model, node, GPUs, plan's keyword arguments).
_LAYOUTS = [
    ("llama-3-70b", "8x-h100", 64, {"dp": 8, "tp": 8, "zero": 1, "global_batch": 64, "seq_len": 4096}),  # ch. 9
    ("llama-3-70b", "8x-h100", 64, {"dp": 4, "tp": 8, "pp": 2, "global_batch": 64, "seq_len": 4096, "micro_batch": 2}),
    (
        "llama-3-70b",
        "8x-h100",
        128,
        {"dp": 4, "tp": 8, "pp": 4, "global_batch": 64, "seq_len": 4096, "virtual_stages": 2},
    ),
    (
        "llama-3-70b",
        "8x-b200",
        128,
        {"dp": 16, "tp": 8, "zero": 3, "global_batch": 128, "seq_len": 8192, "recompute": "full"},
    ),
    ("llama-3-70b", "8x-h100", 8, {"dp": 1, "tp": 8, "zero": 0, "global_batch": 8, "seq_len": 4096}),  # does not fit
    (
        "llama-2-70b",
        "8x-h100",
        16,
        {"dp": 1, "tp": 16, "global_batch": 4, "seq_len": 4096, "allow_cross_node_tp": True},
    ),
    ("llama-3-8b", "8x-a100", 16, {"dp": 16, "zero": 2, "global_batch": 64, "seq_len": 2048, "recompute": "none"}),
    (
        "llama-3-8b",
        "8x-a100",
        4,  # part of one node
        {"dp": 2, "tp": 2, "global_batch": 8, "seq_len": 2048, "optimizer": "sgd_momentum", "precision": "bf16"},
    ),
    (
        "llama-3-8b",
        "8x-h100",
        32,
        {
            "dp": 2,
            "tp": 4,
            "pp": 4,
            "global_batch": 32,
            "seq_len": 4096,
            "alpha_seconds": 5e-6,
            "convention": "three-term",
        },
    ),
    (
        "qwen2-7b",
        "8x-h100",
        64,
        {"dp": 2, "tp": 4, "pp": 8, "global_batch": 16, "seq_len": 4096},
    ),  # 28 layers: 4 a stage
    ("gpt2-small", "8x-a100", 8, {"dp": 2, "tp": 4, "global_batch": 32, "seq_len": 1024, "zero": 2}),
    ("mixtral-8x7b", "8x-h100", 64, {"dp": 16, "tp": 4, "ep": 8, "zero": 1, "global_batch": 64, "seq_len": 4096}),
    (
        "mixtral-8x7b",
        "8x-h800",
        16,
        {"dp": 8, "tp": 2, "ep": 2, "zero": 3, "global_batch": 32, "seq_len": 4096, "compute_precision": "fp8"},
    ),
    ("mixtral-8x7b", "8x-h100", 8, {"dp": 8, "ep": 8, "global_batch": 8, "seq_len": 4096}),  # no expert replicas
    ("gpt2-small", "8x-a100", 8, {"dp": 8, "global_batch": 8, "seq_len": 2048}),  # beyond its 1,024 positions
    (  # a schedule that hides the all-to-alls (DualPipe): ep overlaps, tp still waits
        "mixtral-8x7b",
        "8x-h100",
        64,
        {"dp": 16, "tp": 4, "ep": 8, "global_batch": 64, "seq_len": 4096, "overlap": ["dp", "pp", "ep"]},
    ),
]

#: Layouts the library refuses (ValueError); the explorer must refuse them in the same words.
_REFUSED = [
    ("llama-3-70b", "8x-h100", 64, {"dp": 8, "tp": 4, "global_batch": 64, "seq_len": 4096}),  # 32 of 64 GPUs
    ("qwen2-7b", "8x-h100", 64, {"dp": 8, "tp": 8, "global_batch": 64, "seq_len": 4096}),  # 28 heads
    ("llama-3-70b", "8x-h100", 64, {"dp": 4, "tp": 16, "global_batch": 64, "seq_len": 4096}),  # tp leaves the node
    ("gpt2-small", "8x-h100", 16, {"dp": 1, "pp": 16, "global_batch": 16, "seq_len": 1024}),  # 12 layers
    ("llama-3-8b", "8x-h100", 8, {"dp": 8, "ep": 2, "global_batch": 8, "seq_len": 4096}),  # dense
    ("mixtral-8x7b", "8x-h100", 24, {"dp": 24, "ep": 3, "global_batch": 24, "seq_len": 4096}),  # 8 experts
    ("mixtral-8x7b", "8x-h100", 8, {"dp": 2, "tp": 4, "ep": 4, "global_batch": 8, "seq_len": 4096}),  # ep > dp x cp
    ("llama-3-8b", "8x-h100", 8, {"dp": 4, "cp": 2, "global_batch": 8, "seq_len": 4095}),
    ("llama-3-8b", "8x-h100", 8, {"dp": 8, "global_batch": 12, "seq_len": 4096}),
    ("llama-3-8b", "8x-h100", 16, {"dp": 4, "pp": 4, "global_batch": 8, "seq_len": 4096, "virtual_stages": 2}),
    ("llama-3-8b", "8x-h100", 24, {"dp": 12, "pp": 2, "global_batch": 12, "seq_len": 2048}),  # 12 over 8-GPU nodes
    ("llama-3-8b", "8x-h100", 12, {"dp": 12, "global_batch": 12, "seq_len": 2048}),  # 1.5 nodes
    ("llama-3-8b", "8x-h100", 8, {"dp": 8, "zero": 4, "global_batch": 8, "seq_len": 2048}),
    ("llama-3-8b", "8x-h100", 8, {"dp": 8, "recompute": "partial", "global_batch": 8, "seq_len": 2048}),
    ("llama-3-8b", "8x-a100", 8, {"dp": 8, "compute_precision": "fp8", "global_batch": 8, "seq_len": 2048}),
    ("llama-3-8b", "8x-h100", 8, {"dp": 8, "optimizer": "lion", "global_batch": 8, "seq_len": 2048}),
    ("llama-3-8b", "8x-h100", 8, {"dp": 8, "alpha_seconds": -0.5, "global_batch": 8, "seq_len": 2048}),
    ("llama-3-8b", "8x-h100", 8, {"dp": 0, "global_batch": 8, "seq_len": 2048}),
    ("llama-3-8b", "8x-h100", 8, {"dp": 8, "global_batch": 8, "seq_len": 2048, "overlap": ["tp", "zz"]}),
]


def _library_plan(model, node, n_gpus, layout):
    try:
        return rl.plan(model, rl.cluster(node, n_gpus), **layout)
    except ValueError as err:
        return err


def _plan_case(model, node, n_gpus, layout) -> dict:
    return {"op": "parallel_plan", "model": model, "node": node, "n_gpus": n_gpus, "layout": layout}


def _assert_same_plan(case, mine, lib) -> None:
    """The explorer's plan is the library's: every field, every roof, memory, to 1e-12; words exactly."""
    _assert_matches_library([case], [mine], [lib], _PLAN_FIELDS, scalar=lambda _case: False)
    _assert_matches_library([case], [mine["memory"]], [lib.memory], _MEMORY_FIELDS, scalar=lambda _case: False)
    assert mine["layout"] == lib.layout, case
    assert mine["fitHeadline"] == lib.fit.headline, case  # the same fit, in the same words
    assert mine["exposed"].keys() == lib.exposed.keys(), case
    for name, seconds in lib.exposed.items():
        assert math.isclose(mine["exposed"][name], seconds, rel_tol=1e-12), (case, name)
    assert list(mine["roofs"]) == list(lib.roofs), case  # the same roofs, in the same order
    for name, seconds in lib.roofs.items():
        assert math.isclose(mine["roofs"][name], seconds, rel_tol=1e-12), (case, name)
    assert [r["name"] for r in mine["comms"]] == [r.name for r in lib.comms], case
    _assert_matches_library([case] * len(lib.comms), mine["comms"], lib.comms, _ROOF_FIELDS, scalar=lambda _c: False)
    for r, want in zip(mine["comms"], lib.comms):
        critical = r["criticalTokensPerGpu"]  # JSON has no Infinity: node writes it as null
        if math.isinf(want.critical_tokens_per_gpu):
            assert critical is None or critical == math.inf, (case, r["name"], critical)
        else:
            assert math.isclose(critical, want.critical_tokens_per_gpu, rel_tol=1e-12, abs_tol=0.0), (case, r["name"])


def test_parallel_plans_match_the_library(run_js):
    cases = [_plan_case(*layout) for layout in _LAYOUTS]
    got = run_js(cases)
    fits = set()
    for case, mine in zip(cases, got):
        lib = _library_plan(case["model"], case["node"], case["n_gpus"], case["layout"])
        assert not isinstance(lib, Exception), (case, lib)  # a layout the library accepts
        _assert_same_plan(case, mine, lib)
        fits.add(lib.fits)
    assert fits == {True, False}  # some layouts fit, and one (70B unsharded on one node) does not
    contexts = [m["fitHeadline"] for m in got if "beyond GPT-2 small's maximum position" in m["fitHeadline"]]
    assert len(contexts) == 1 and contexts[0].startswith("DOES NOT FIT: a context of 2,048 tokens"), contexts
    assert {r for m in got for r in m["roofs"]} == {"compute", "hbm", "tp", "dp", "ep", "pp"}  # each roof but cp


def test_parallel_refusals_are_the_library_words(run_js):
    cases = [_plan_case(*layout) for layout in _REFUSED]
    for case, mine in zip(cases, run_js(cases)):
        lib = _library_plan(case["model"], case["node"], case["n_gpus"], case["layout"])
        assert isinstance(lib, ValueError), (case, lib)
        assert mine == {"error": str(lib)}, (case, mine, str(lib))  # word for word, parameter and unit


def test_parallel_context_parallel_matches_the_library(run_js):
    case = _plan_case("llama-3-8b", "8x-h100", 16, {"dp": 4, "tp": 2, "cp": 2, "global_batch": 8, "seq_len": 8192})
    (mine,) = run_js([case])
    assert "error" not in mine and "cp" in mine["roofs"], mine
    # K and V of the whole sequence per layer: 1 x 8192 x 2048 (2 x 8 KV heads x 128) x 2 bytes / tp 2 = 16.8 MB
    assert mine["comms"][1]["messageBytes"] == 8192 * 2048 * 2 / 2
    # plan() called kv_cache_width, a property, as a method: every cp > 1 raised TypeError
    lib = rl.plan("llama-3-8b", rl.cluster("8x-h100", 16), **case["layout"])
    _assert_same_plan(case, mine, lib)


def test_parallel_worked_example(run_js):
    """Chapter 9's start: Llama-3-70B on 64 H100s (8 nodes), tp = 8, dp = 8, ZeRO-1, 64 x 4096 tokens."""
    (p,) = run_js([_plan_case(*_LAYOUTS[0])])
    n = 70_553_706_496  # Llama-3-70B's parameters (dense: all active)
    tokens = 64 * 4096  # 262,144 tokens a step
    peak = 989.5e12  # H100 SXM dense bf16
    assert p["tokensPerStep"] == tokens and p["microBatches"] == 8  # 64 sequences / (dp 8 x micro-batch 1)
    assert p["modelFlopsPerStep"] == pytest.approx(6 * n * tokens, rel=1e-12)  # 6N: 1.110e17 FLOP
    # selective recompute redoes the causal scores' forward, 2 L s a = 2 x 80 x 4096 x 8192 per token
    scores = 2 * 80 * 4096 * 8192 * tokens
    assert p["hardwareFlopsPerStep"] == pytest.approx(6 * n * tokens + scores, rel=1e-12)  # 1.124e17
    compute = (6 * n * tokens + scores) / 64 / peak  # every GPU's share at the peak, no bubble (pp = 1)
    assert p["roofs"]["compute"] == pytest.approx(compute, rel=1e-12) == pytest.approx(1.7746, rel=1e-4)
    # tp: 4 all-reduces per layer and micro-batch, 4 x 80 x 8 = 2560 of 4096 x 8192 x 2 = 67.1 MB, a ring
    # inside the node sends 2 x 7/8 of each over NVLink 4's 450 GB/s
    assert p["roofs"]["tp"] == pytest.approx(2560 * 1.75 * 4096 * 8192 * 2 / 450e9, rel=1e-12)  # 0.668 s
    # dp: the gradients of N / 8 weights (2 bytes each) all-reduced over 8 GPUs, one per node: each
    # GPU's 400 Gb/s NIC (50 GB/s) carries 2 x 7/8 of 17.6 GB
    assert p["roofs"]["dp"] == pytest.approx(1.75 * n / 8 * 2 / 50e9, rel=1e-12)  # 0.617 s
    # tp's all-reduces wait between dependent GEMMs: the step is the compute plus them; dp overlaps
    assert p["binding"] == "compute + tp" and p["stepSeconds"] == p["roofs"]["compute"] + p["roofs"]["tp"]
    assert (
        p["assumption"]
        == "assumes tp on the critical path (waited for, added to the compute); dp overlapped with the compute"
    )
    # 98.7 % (6N / (6N + scores)) x 1.7746 / (1.7746 + 0.668) = 71.7 %
    assert p["mfu"] == pytest.approx(6 * n * tokens / (64 * peak * (compute + p["roofs"]["tp"])), rel=1e-12)
    mem = p["memory"]
    assert mem["weights"] == mem["gradients"] == 2 * n / 8  # bf16, split by tp: 17.6 GB
    assert mem["optimizer"] == 12 * n / 8 / 8  # fp32 master, momentum, variance, split by tp and ZeRO-1's dp
    # 4096 x 1 x 8192 / tp 8 x 34 bytes (Korthikanti, sequence parallel, scores recomputed) x 80 layers
    assert mem["activations"] == 4096 * 8192 / 8 * 34 * 80  # 11.4 GB
    assert mem["total"] == pytest.approx(59.914e9, rel=1e-4) and mem["capacity"] == 80 * 2**30 and mem["fits"]
    # the same start on one node with no sharding: 16 bytes x N / 8 = 141 GB of state > 80 GiB
    (one_node,) = run_js([_plan_case(*_LAYOUTS[4])])
    assert one_node["memory"]["state"] == 16 * n / 8 and not one_node["fits"] and not one_node["feasible"]
    assert one_node["fitHeadline"].startswith(
        "DOES NOT FIT: Llama-3-70B training at dp=1, tp=8, zero=0 on 8 GPUs needs"
    )


def test_parallel_node_collectives_match_the_library(run_js):
    cases, expected = [], []
    for node in rl.interconnect.node_registry():
        for collective in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"):
            for n_gpus, per_node in ((2, None), (8, None), (16, None), (64, None), (16, 1), (64, 2), (32, 4)):
                for alpha in (0.0, 5e-6):
                    cases.append(
                        {
                            "op": "node_collective",
                            "collective": collective,
                            "message_bytes": 1e8,
                            "n_gpus": n_gpus,
                            "node": node,
                            "alpha_seconds": alpha,
                            "gpus_per_node": per_node,
                        }
                    )
                    expected.append(
                        rl.node_collective_cost(collective, 1e8, n_gpus, node, alpha, gpus_per_node=per_node)
                    )
    fields = {
        "nNodes": "n_nodes",
        "gpusPerNode": "gpus_per_node",
        "intraBytesPerGpu": "intra_bytes_per_gpu",
        "intraSeconds": "intra_seconds",
        "egressBytesPerNode": "egress_bytes_per_node",
        "egressBytesPerS": "egress_bytes_per_s",
        "egressSeconds": "egress_seconds",
        "steps": "steps",
        "seconds": "seconds",
        "binding": "binding",
        "bytesPerGpu": "bytes_per_gpu",
        "busBytesPerS": "bus_bytes_per_s",
    }
    got = run_js(cases)
    assert len(got) == len(cases) == 4 * 4 * 7 * 2
    _assert_matches_library(cases, got, expected, fields, scalar=lambda _case: False)


def _widget_states():
    """The widget's controls at rest and moved: fits, does not fit, pipelined, refused two ways."""
    return [
        {},  # chapter 9's start
        {"tp": 1},  # dp = 64
        {"pp": 4, "tp": 2, "zero": 3, "recompute": "full"},
        {"model": "mixtral-8x7b", "node": "8x-b200", "n_gpus": 256},
        {"model": "llama-3-70b", "node": "8x-a100", "n_gpus": 8, "tp": 8, "pp": 1, "zero": 0},  # does not fit
        {"n_gpus": 2048, "tp": 8, "pp": 16, "zero": 1},  # dp = 16: the batch of 64 stays
        {"n_gpus": 8, "tp": 8, "pp": 2},  # refused: tp x pp = 16 does not divide 8
        {"model": "qwen2-7b", "n_gpus": 64, "tp": 8, "pp": 1},  # refused: 28 heads
    ]


def test_parallel_explorer_restates_the_widget(run_js):
    from roofline_lib.present.widgets_parallel import parallel_explorer

    explorer = parallel_explorer()
    cases, expected, readouts = [], [], []
    for state in _widget_states():
        start = {"model": "llama-3-70b", "node": "8x-h100", "n_gpus": 64, "tp": 8, "pp": 1, "zero": 1}
        for name, value in {**start, "recompute": "selective", **state}.items():
            explorer.controls[name].value = value
        view = {k: c.value for k, c in explorer.controls.items()} | {"global_batch": 64, "seq_len": 4096}
        cases.append({"op": "parallel_view", "view": view})
        expected.append(explorer.result)
        readouts.append(explorer.readout.value)
    got = run_js(cases)
    refused = 0
    for case, mine, lib, shown in zip(cases, got, expected, readouts):
        if lib is None:  # the widget refused: the page says the same words
            refused += 1
            assert "error" in mine and html.escape(mine["error"]) in shown, (case, mine, shown)
        else:
            _assert_same_plan(case, mine, lib)
    assert refused == 2 and {m.get("fits") for m in got} >= {True, False}


def test_parallel_sliders_span_what_the_widget_spans(run_js):
    from roofline_lib.present.widgets_parallel import parallel_explorer

    (log2,) = run_js([{"op": "parallel_sliders"}])
    explorer = parallel_explorer(n_gpus=8, tp=1, pp=1)  # a start on the notches adds none
    for name, (lo, hi) in log2.items():
        assert list(explorer.controls[name].options) == [2**k for k in range(lo, hi + 1)], name


def test_the_serving_frontiers_batch_cap_is_the_librarys():
    import re

    (cap,) = re.findall(r"var FRONTIER_MAX_BATCH = (\d+);", EXPLORER_JS.read_text())
    assert int(cap) == rl.FRONTIER_MAX_BATCH == 1024


def test_the_page_and_the_widget_say_the_same_of_a_changed_batch(run_js):
    # "rounded to" for a batch that dp made larger read as if nothing had grown: the page and the
    # widget say, in the same words, whether the batch was raised or rounded down
    from roofline_lib.present.widgets_parallel import _batch_note

    shapes = [(128, 64, 128), (96, 100, 8), (64, 64, 8), (1024, 64, 1024)]  # raised, rounded down, kept
    got = run_js([{"op": "batch_note", "planned": a, "asked": b, "dp": c} for a, b, c in shapes])
    assert got == [_batch_note(*shape) for shape in shapes]
    assert got[0].startswith("The global batch is raised from 64 to 128") and got[2] == ""


# ------------------------------------------------------------------ energy mode (roofline_lib.workloads.energy)

#: TokenEnergy fields the page restates: its camelCase name -> the library's attribute.
_ENERGY_FIELDS = {
    "tokens": "tokens",
    "seconds": "seconds",
    "flopJoules": "flop_joules",
    "byteJoules": "byte_joules",
    "staticJoules": "static_joules",
    "joules": "joules",
    "joulesPerToken": "joules_per_token",
    "averageWatts": "average_watts",
    "feasible": "feasible",
}


def _energy_counts(model: str) -> dict:
    """A model's counts per byte of width, as the energy widget writes them into the page."""
    from roofline_lib import widgets_energy

    cfg = rl.model_config(model)
    return widgets_energy._site_counts(cfg) | {"model_name": cfg.name}


def _energy_server(model: str, gpu: str, width: int):
    return rl.serving_server(rl.model_config(model), gpu, bytes_per_param=width)


def test_energy_per_token_matches_the_library_on_every_gpu_width_batch_context_and_cap(run_js):
    from roofline_lib import widgets_energy

    gpus = list(widgets_energy.energy_gpus())
    assert len(gpus) >= 4  # the grid below is not empty
    cases, expected = [], []
    for model in ("llama-3-8b", "qwen2-7b", "llama-2-70b"):
        counts = _energy_counts(model)
        for gpu in gpus:
            for width in (2, 1):
                try:
                    server = _energy_server(model, gpu, width)
                except ValueError as exc:  # fp8 on an A100: the page refuses it in the same words
                    cases.append({"op": "decode_energy", "counts": counts, "gpu": gpu, "bytes_per_param": width,
                                  "batch": 1, "context_len": 128, "cap_watts": None})  # fmt: skip
                    expected.append(exc)
                    continue
                for batch, context in ((1, 128), (64, 2048), (512, 2048), (8, 32768)):
                    for cap in (None, 150, 250, 400, 700, 1000):
                        cases.append({"op": "decode_energy", "counts": counts, "gpu": gpu, "bytes_per_param": width,
                                      "batch": batch, "context_len": context, "cap_watts": cap})  # fmt: skip
                        expected.append(rl.decode_energy(server, batch, context, cap_watts=cap))
    got = run_js(cases)
    assert len(got) == len(cases) > 400
    assert {e.feasible for e in expected if not isinstance(e, Exception)} == {True, False}  # some steps do not fit
    for case, mine, lib in zip(cases, got, expected):
        if isinstance(lib, Exception):
            assert mine["error"] == str(lib), (case, mine)  # the library's refusal, word for word
            continue
        _assert_matches_library([case], [mine], [lib], _ENERGY_FIELDS, scalar=lambda _case: False)
        assert mine["fitHeadline"] == lib.fit.headline, case


def test_energy_worked_example(run_js):
    counts = _energy_counts("llama-3-8b")
    base = {"op": "decode_energy", "counts": counts, "gpu": "H100", "bytes_per_param": 2, "context_len": 2048}
    free, capped = run_js([base | {"batch": 64, "cap_watts": None}, base | {"batch": 64, "cap_watts": 200}])
    # FLOPs at (700 - 121.7 - 3.35e12 B/s * 31.76 pJ/B) W / 989.5e12 FLOP/s = 0.477 pJ; 41.9 mJ a token at the roof
    assert free["joulesPerToken"] == pytest.approx(0.041917, rel=1e-4) and free["averageWatts"] == pytest.approx(
        279.18, rel=1e-4
    )
    # under 200 W the dynamic 1.513 J take 1.513 / (200 - 121.7) = 19.3 ms, twice the roof's 9.61 ms
    assert capped["seconds"] == pytest.approx((free["flopJoules"] + free["byteJoules"]) / (200 - 121.7))
    assert capped["averageWatts"] == pytest.approx(200) and capped["flopJoules"] == free["flopJoules"]


def test_energy_joules_per_flop_prices_and_costs_match_the_library(run_js):
    from roofline_lib import widgets_energy

    cases, expected = [], []
    for gpu in widgets_energy.energy_gpus():
        for p in rl.gpu(gpu).precisions:
            cases.append({"op": "joules_per_flop", "gpu": gpu, "precision": p})
            expected.append(rl.power_spec(gpu).flop_joules(p))
        cases.append({"op": "gpu_hour_price", "gpu": gpu})
        try:
            expected.append(rl.gpu_hour_price(gpu))
        except ValueError as exc:
            expected.append(exc)
    for rate, price in ((6660.4, 4.916), (1.0, 0.0), (1e6, 5.408)):
        cases.append({"op": "cost", "tokens_per_s": rate, "dollars_per_hour": price})
        expected.append(rl.cost_per_million_tokens(rate, price))
    cases.append({"op": "gpu_hour_price", "gpu": "L4"})
    expected.append(ValueError("gpu 'L4' has no GPU-hour price on record"))
    cases.append({"op": "cost", "tokens_per_s": 0, "dollars_per_hour": 1.0})
    expected.append(ValueError("tokens_per_s must be a positive"))
    got = run_js(cases)
    assert any(isinstance(e, rl.GPUPrice) for e in expected) and any(isinstance(e, ValueError) for e in expected)
    for case, mine, lib in zip(cases, got, expected):
        if isinstance(lib, ValueError):
            assert mine["error"].startswith(str(lib).split(";")[0].split(": must")[0]), (case, mine, lib)
        elif isinstance(lib, rl.GPUPrice):
            assert (mine["dollars_per_hour"], mine["source"], mine["date"]) == (
                lib.dollars_per_hour,
                lib.source,
                lib.date,
            )
        else:
            assert math.isclose(mine, lib, rel_tol=1e-12), (case, mine, lib)


def test_energy_refusals_are_the_librarys_words(run_js):
    counts = _energy_counts("llama-3-8b")
    base = {"op": "decode_energy", "counts": counts, "bytes_per_param": 2, "batch": 8, "context_len": 1024}
    h100 = _energy_server("llama-3-8b", "H100", 2)
    refusals = {}
    for gpu, cap in (("H100", 121.7), ("H100", 50), ("A100", 80)):
        with pytest.raises(ValueError) as exc:
            rl.decode_energy(_energy_server("llama-3-8b", gpu, 2), 8, 1024, cap_watts=cap)
        refusals[gpu, cap] = str(exc.value)
    with pytest.raises(ValueError) as no_figures:
        rl.power_spec("L4")
    got = run_js([base | {"gpu": g, "cap_watts": c} for g, c in refusals] + [base | {"gpu": "L4", "cap_watts": None}])
    for (key, words), mine in zip(refusals.items(), got):
        assert mine == {"error": words}, (key, mine, words)
    # the same sentence, the GPUs that have figures in the same order on both sides (the registry's: rl.gpus_with_power)
    assert got[-1] == {"error": str(no_figures.value)}
    assert str(no_figures.value).endswith(", ".join(rl.gpu(k).name for k in rl.gpus_with_power()))
    assert got[-1]["error"].startswith("gpu 'L4' has no power and energy figures in the registry")
    assert rl.decode_energy(h100, 8, 1024, cap_watts=121.8).seconds > 0  # just above the static power: priced


def test_energy_explorer_starts_at_the_widgets_point(run_js):
    from roofline_lib import widgets_energy

    for kwargs in ({}, {"gpu": "H200", "cap_watts": 250, "batch": 16, "context_len": 8192}, {"bytes_per_param": 1}):
        ex = widgets_energy.energy_explorer(**kwargs)
        attrs = ex.site_attributes
        names = ("body_flops", "key_flops", "unembed_flops", "weight_params_fixed", "weight_params_per_token",
                 "kv_elements_per_token", "stored_params", "activation_bytes_per_token", "activation_bytes_per_row",
                 "max_context_tokens")  # fmt: skip
        counts = {n: float(attrs["data-" + n.replace("_", "-")]) for n in names} | {
            "model_name": attrs["data-model-name"]
        }
        (point,) = run_js([{
            "op": "energy_point", "counts": counts, "gpu": attrs["data-gpu"],
            "bytes_per_param": int(attrs["data-bytes-per-param"]), "batch": int(attrs["data-batch"]),
            "context_len": int(attrs["data-context-len"]), "cap_watts": float(attrs["data-cap-watts"]),
        }])  # fmt: skip
        chosen = ex.result.chosen
        assert point["batch"] == chosen.batch and point["capBinds"] == chosen.cap_binds, kwargs
        _assert_matches_library([kwargs], [point["free"]], [chosen.free], _ENERGY_FIELDS, scalar=lambda _c: False)
        _assert_matches_library([kwargs], [point["capped"]], [chosen.capped], _ENERGY_FIELDS, scalar=lambda _c: False)
        assert point["dollarsPerMillion"] == pytest.approx(chosen.dollars_per_million, rel=1e-12)


def test_energy_sliders_span_what_the_widget_spans(run_js):
    from roofline_lib import widgets_energy as we

    (sliders,) = run_js([{"op": "energy_sliders"}])
    assert sliders == {
        "batch_log2": [we.BATCH_LOG2[0], we.BATCH_LOG2[-1]],
        "context_log2": [we.CONTEXT_LOG2[0], we.CONTEXT_LOG2[-1]],
        "cap_watts": list(we.CAP_WATTS),
    }


@pytest.mark.parametrize("x", [0.0419167, 1.05, 999.4, 1234.0, 6.45e11, 2.1588e13, 279.18, 5600.0, 3.2e6])
def test_energy_and_power_print_as_the_library_prints_them(run_js, x):
    from roofline_lib.core.formatting import energy_text, power_text

    ((energy, power),) = run_js([{"op": "energy_text", "x": x}])
    assert (energy, power) == (energy_text(x), power_text(x))
