"""The website's roofline explorer (book/_static/roofline-explorer.js) against roofline_lib.

The explorer re-states three formulas in JavaScript so that it can run in a static page with no
kernel. These tests run that JavaScript on the registry ``roofline_lib.export`` writes, for every
GPU and precision in the registry, and require the same numbers as the library:

    ridge      = peak / bandwidth                        rl.ridge_point
    attainable = min(peak, bandwidth * intensity)        rl.attainable_flops_per_s
    decode     = batch / max(N b / bw, 2 N batch / peak)  rl.decode_roofline

The JavaScript runs in ``node`` when it is installed, otherwise in the site test's chromium; with
neither the module skips and says so.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import roofline_lib as rl
from roofline_lib.export import write_registry_js

ROOT = Path(__file__).resolve().parents[1]
EXPLORER_JS = ROOT / "book" / "_static" / "roofline-explorer.js"
CHROMIUM = os.environ.get("ROOFLINE_CHROMIUM", "/usr/bin/chromium")

# Runs inside the JavaScript engine: `X` is window.RooflineExplorer, `cases` a list of calls.
_EVALUATE = """
function evaluateCases(X, cases) {
  return cases.map(function (c) {
    try {
      if (c.op === "gpu") return X.findGpu(c.name).key;
      if (c.op === "peak") return X.peakFlopsPerS(c.gpu, c.precision);
      if (c.op === "ridge") return X.ridgePoint(c.gpu, c.precision);
      if (c.op === "attainable") return X.attainableFlopsPerS(c.gpu, c.precision, c.intensity);
      if (c.op === "decode") return X.decodeCeiling(c.gpu, c.precision, c.n_params, c.batch);
      if (c.op === "sig3") return X.sig3(c.x);
      throw new Error("unknown op " + c.op);
    } catch (err) {
      return { error: String(err.message) };
    }
  });
}
"""

_NODE_MAIN = _EVALUATE + """
const fs = require("fs"), vm = require("vm");
const sandbox = { console: console };
sandbox.window = sandbox;  // the page's `window` is the global object, as in a browser
vm.createContext(sandbox);
for (const file of process.argv.slice(1, 3)) {
  vm.runInContext(fs.readFileSync(file, "utf8"), sandbox, { filename: file });
}
const cases = JSON.parse(fs.readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(evaluateCases(sandbox.RooflineExplorer, cases)));
"""


@pytest.fixture(scope="module")
def registry_js(tmp_path_factory) -> Path:
    return write_registry_js(tmp_path_factory.mktemp("site") / "roofline-registry.js")


def _run_in_node(registry_js: Path, cases: list) -> list:
    proc = subprocess.run(
        ["node", "-e", _NODE_MAIN, str(registry_js), str(EXPLORER_JS)],
        input=json.dumps(cases), capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def run_js(registry_js):
    if shutil.which("node"):
        yield lambda cases: _run_in_node(registry_js, cases)
        return
    if not Path(CHROMIUM).exists():
        pytest.skip("neither node nor chromium is installed to run the explorer's JavaScript "
                    "(`make browser` installs chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox",
                                     "--disable-gpu", "--no-first-run", "--disable-background-networking"])
        page = browser.new_page()
        page.set_content("<!doctype html><html><body></body></html>")
        page.add_script_tag(content=registry_js.read_text(encoding="utf-8"))
        page.add_script_tag(content=EXPLORER_JS.read_text(encoding="utf-8"))
        yield lambda cases: page.evaluate(
            f"cases => {{ {_EVALUATE}; return evaluateCases(window.RooflineExplorer, cases); }}", cases)
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
                    cases.append({"op": "decode", "gpu": key, "precision": p, "n_params": n_params,
                                  "batch": batch})
                    expected.append(rl.decode_roofline(n_params, spec, rl.bytes_per_element(p), p, batch))
    return cases, expected


def test_every_number_the_explorer_computes_matches_the_library(run_js):
    cases, expected = _grid()
    got = run_js(cases)
    assert len(got) == len(cases) > 1000  # 7 GPUs, 5-6 precisions each, 28 cases per precision
    for case, mine, lib in zip(cases, got, expected):
        assert not (isinstance(mine, dict) and "error" in mine), (case, mine)
        if case["op"] != "decode":
            assert math.isclose(mine, lib, rel_tol=1e-12), (case, mine, lib)
            continue
        pairs = {
            "weightBytes": lib.weight_bytes,
            "memorySeconds": lib.memory_seconds,
            "computeSeconds": lib.compute_seconds,
            "msPerToken": lib.ms_per_token,
            "tokensPerS": lib.tokens_per_s,
            "achievedFlopsPerS": lib.achieved_flops_per_s,
            "peakFlopsPerS": lib.peak_flops_per_s,
            "shareOfPeak": lib.share_of_peak,
        }
        for name, value in pairs.items():
            assert math.isclose(mine[name], value, rel_tol=1e-12), (case, name, mine[name], value)
        assert mine["bound"] == lib.bound, case
        assert mine["fitsInMemory"] == lib.fits_in_memory, case


def test_worked_examples(run_js):
    a100_ridge, a100_at_10, h100_decode = run_js([
        {"op": "ridge", "gpu": "A100", "precision": "bf16"},
        {"op": "attainable", "gpu": "A100", "precision": "bf16", "intensity": 10},
        {"op": "decode", "gpu": "H100", "precision": "bf16", "n_params": 7e9, "batch": 1},
    ])
    assert round(a100_ridge, 2) == 153.02  # 312e12 FLOP/s / 2039e9 B/s = 153.02 FLOP/byte
    assert a100_at_10 == pytest.approx(20.39e12)  # memory-bound: 2039e9 B/s * 10 FLOP/B = 20.39e12
    # 7e9 params * 2 B = 14e9 B; 14e9 / 3.35e12 B/s = 4.179 ms per step; 1 / 4.179 ms = 239.3 tok/s
    assert h100_decode["weightBytes"] == 14e9
    assert h100_decode["tokensPerS"] == pytest.approx(239.29, rel=1e-4)
    assert h100_decode["bound"] == "memory"


def test_decode_turns_compute_bound_past_the_ridge(run_js):
    # H100 bf16: step = max(14e9 / 3.35e12, 2 * 7e9 * batch / 989.5e12). The compute term wins once
    # batch > 989.5e12 * 14e9 / (3.35e12 * 14e9) = 295.4, so batch 256 is memory-, 512 compute-bound.
    at_256, at_512 = run_js([
        {"op": "decode", "gpu": "H100", "precision": "bf16", "n_params": 7e9, "batch": b} for b in (256, 512)
    ])
    assert at_256["bound"] == "memory" and at_512["bound"] == "compute"
    assert at_512["tokensPerS"] == pytest.approx(989.5e12 / 14e9)  # peak / (2 N) = 70,679 tok/s


def test_names_resolve_like_the_library(run_js):
    names = [n for key, spec in rl.registry().items() for n in (key, spec.name, *spec.aliases)]
    names += ["A100", "h100_sxm", "  H200   SXM "]
    got = run_js([{"op": "gpu", "name": n} for n in names])
    assert got == [rl.gpu(n).key for n in names]


def test_bad_input_is_refused_with_the_reason(run_js):
    no_fp8, zero_intensity, zero_batch, unknown = run_js([
        {"op": "peak", "gpu": "A100", "precision": "fp8"},
        {"op": "attainable", "gpu": "A100", "precision": "bf16", "intensity": 0},
        {"op": "decode", "gpu": "A100", "precision": "bf16", "n_params": 7e9, "batch": 0},
        {"op": "gpu", "name": "V100"},
    ])
    assert "A100 80GB SXM has no fp8" in no_fp8["error"] and "bf16" in no_fp8["error"]
    assert "intensity must be a positive finite number of FLOP/byte" in zero_intensity["error"]
    assert "batch must be a positive whole number" in zero_batch["error"]
    assert "unknown GPU" in unknown["error"] and "h100-sxm" in unknown["error"]


@pytest.mark.parametrize("x, shown", [
    (20.39, "20.4"),  # 3 significant digits
    (153.0161844, "153"),
    (989.5, "990"),
    (12345.0, "12,300"),  # thousands separated, never 1.23e+04
    (0.1, "0.1"),
    (0.0654, "0.0654"),
    (6.5353, "6.54"),
])
def test_readouts_print_three_significant_digits(run_js, x, shown):
    assert run_js([{"op": "sig3", "x": x}]) == [shown]


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
