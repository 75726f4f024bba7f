"""roofline_lib.workloads.scenarios: the shared worked examples, and the chapters that quote them.

The first half checks the scenarios themselves against hand-countable arithmetic; the second
half reads the chapters' text and asserts that they use the scenarios rather than re-typing
their inputs, and that the website explorers' ``data-*`` attributes, which each chapter's widget
writes from its own state, agree with them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import roofline_lib as rl
from roofline_lib import scenarios as sc
from roofline_lib import widgets, widgets_energy, widgets_parallel

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "notebooks"


# --- the scenarios ---------------------------------------------------------------------------


def test_llama2_7b_is_the_shipped_config_and_one_count():
    # the shipped config.json (sc.LLAMA2_7B reads it) against the constant typed in transformer.py
    assert sc.LLAMA2_7B == rl.LLAMA2_7B
    # 32 * (4 * 4096**2 + 3 * 4096 * 11008) + 2 * 32000 * 4096 + (2 * 32 + 1) * 4096
    # = 6,476,005,376 + 262,144,000 + 266,240, the published count
    assert sc.LLAMA2_7B.n_params() == 6_738_415_616


def test_layernorm_is_the_training_step_shape():
    op = sc.LAYERNORM.op()
    assert (sc.LAYERNORM.rows, sc.LAYERNORM.d) == (8 * 2048, 4096)
    assert op.bytes_moved == 2 * (2 * 8 * 2048 * 4096 + 2 * 4096)  # read x, write y, gamma, beta; 2 bytes each
    assert op == rl.layernorm(8 * 2048, 4096)


def test_layernorm_times_follow_the_roof():
    a100 = rl.gpu("A100")
    op = sc.LAYERNORM.op()
    floor = sc.LAYERNORM.floor_seconds("A100")
    assert floor == pytest.approx(op.bytes_moved / a100.hbm_bytes_per_s)  # memory-bound: bytes / bandwidth
    assert sc.LAYERNORM.plausible_seconds("A100") == pytest.approx(floor / 0.85)
    # the widely repeated 90 microseconds is faster than the floor: impossible
    assert sc.LAYERNORM.claimed_seconds < floor
    with pytest.raises(rl.ImplausibleMeasurement):
        rl.kernel_verdict(op.flops, op.bytes_moved, sc.LAYERNORM.claimed_seconds, "A100")


def test_layernorm_example_refuses_bad_inputs():
    with pytest.raises(ValueError, match="good_bandwidth_fraction"):
        sc.LayerNormExample(rows=4, d=8, good_bandwidth_fraction=1.5)
    with pytest.raises(ValueError, match="rows"):
        sc.LayerNormExample(rows=0, d=8)
    with pytest.raises(ValueError, match="claimed_seconds"):
        sc.LayerNormExample(rows=4, d=8, claimed_seconds=-1.0)


def test_ffn_gemm_is_llama_shaped_and_composes_ops_gemm():
    assert sc.FFN_GEMM.op() == rl.gemm(16384, 11008, 4096)
    assert sc.FFN_GEMM.op(tokens=1) == rl.gemm(1, 11008, 4096)  # the GEMV of one decode token
    assert sc.FFN_GEMM.op(bytes_per_elem=4).bytes_moved == 2 * sc.FFN_GEMM.op().bytes_moved


def test_training_attention_like_for_like():
    # fused and unfused compute the same FLOPs when both count the full square
    full_unfused = sc.training_attention(causal=False, fused=False)
    full_fused = sc.training_attention(causal=False, fused=True)
    assert full_unfused.flops == full_fused.flops
    assert full_unfused.bytes_moved > full_fused.bytes_moved  # the scores' round trip to HBM
    # 2 matmuls x 2 FLOP x (8 x 32 heads) x 2048 x 2048 x 128 = 549,755,813,888
    assert full_fused.flops == 2 * 2 * 8 * 32 * 2048 * 2048 * 128


def test_training_runs_give_mfu_through_the_library():
    run = sc.STACK_100M_RUN
    assert run.mfu("6N") == pytest.approx(rl.mfu(rl.STACK_100M.n_params(), 220e3, 1, "A100"))
    assert run.mfu("three-term") > run.mfu("6N")  # the scores add FLOPs, so the same run scores higher
    ex = sc.MFU_EXAMPLE
    assert ex.mfu() == pytest.approx(6 * 6_738_415_616 * 1.5e6 / (256 * rl.gpu("A100").peak_flops_per_s("bf16")))


def test_training_run_refuses_bad_inputs():
    with pytest.raises(ValueError, match="tokens_per_s"):
        sc.TrainingRun(model=rl.STACK_100M, tokens_per_s=0, n_gpus=1, gpu="A100")
    with pytest.raises(ValueError, match="n_gpus"):
        sc.TrainingRun(model=rl.STACK_100M, tokens_per_s=1.0, n_gpus=0, gpu="A100")


# --- the chapters against the scenarios ---------------------------------------------------------

_CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(?P<body>.*?)^```\s*$", re.M | re.S)
_EXPLORER = re.compile(r'<div class="roofline-explorer"(?P<attrs>[^>]*)>')

#: Scenario inputs that must not be typed again in a chapter's code: (pattern, what it re-types).
_RETYPED = [
    (r"6\.7e9|6_738_415_616|6738415616", "Llama-2-7B's parameter count (sc.LLAMA2_7B.n_params())"),
    (r"\b16384,\s*11008,\s*4096\b|\b16_384,\s*11_008,\s*4_096\b", "the FFN GEMM's shape (sc.FFN_GEMM)"),
    (r"\b90e-6\b", "the LayerNorm's claimed time (sc.LAYERNORM.claimed_seconds)"),
    (r"\b(?:220e3|220_000|220000)\b", "the Stack-100M run's rate (sc.STACK_100M_RUN.tokens_per_s)"),
    (r"good_fraction\s*=\s*0\.85", "the good-kernel fraction (sc.LAYERNORM.good_bandwidth_fraction)"),
]


def _chapter(stem: str) -> str:
    return (CHAPTERS / f"{stem}.md").read_text(encoding="utf-8")


def _code(text: str) -> str:
    return "\n".join(m["body"] for m in _CODE_CELL.finditer(text))


def test_code_cell_reader_finds_code_and_only_code():
    planted = "Prose 6.7e9.\n\n```{code-cell} ipython3\nx = sc.FFN_GEMM.op()\n```\n\nMore prose.\n"
    assert _code(planted).strip() == "x = sc.FFN_GEMM.op()"
    assert _EXPLORER.search('Text.\n\n<div class="roofline-explorer" data-mode="mfu" data-n-gpus="256"></div>\n')
    assert not _EXPLORER.search('<div class="roofline-snapshot">')


@pytest.mark.parametrize("chapter", sorted(CHAPTERS.glob("[0-9][0-9]_*.md")), ids=lambda p: p.stem)
def test_chapters_do_not_retype_scenario_inputs(chapter):
    code = _code(chapter.read_text(encoding="utf-8"))
    found = [f"{what}: {m[0]!r}" for pattern, what in _RETYPED for m in re.finditer(pattern, code)]
    assert not found, (
        f"{chapter.name} re-types scenario inputs; read them from roofline_lib.workloads.scenarios: {found}"
    )


@pytest.mark.parametrize(
    "stem", ["01_two_speed_limits", "02_arithmetic_intensity", "03_counting_flops", "04_inference_regimes"]
)
def test_chapters_one_to_four_import_the_scenarios(stem):
    assert "from roofline_lib import scenarios as sc" in _code(_chapter(stem))


def _explorer_calls(code: str) -> list[str]:
    """The text of every ``widgets.<name>_explorer(...)`` call in ``code`` (or of ``widgets_parallel``,
    chapter 9's module, and ``widgets_energy``, chapter 11's), brackets balanced."""
    calls = []
    for m in re.finditer(r"widgets(?:_parallel|_energy)?\.[a-z_]+_explorer\(", code):
        depth, i = 0, m.end() - 1
        for i in range(m.end() - 1, len(code)):
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            if depth == 0:
                break
        calls.append(code[m.start() : i + 1])
    return calls


def _site_markup(stem: str, names: dict) -> dict[str, str]:
    """Run the chapter's own explorer call with ``names`` bound; return its website attributes."""
    calls = _explorer_calls(_code(_chapter(stem)))
    assert len(calls) == 1, f"{stem}: expected one explorer call, found {calls}"
    explorer = eval(
        calls[0],
        {
            "widgets": widgets,
            "widgets_parallel": widgets_parallel,
            "widgets_energy": widgets_energy,
            "sc": sc,
            "rl": rl,
            **names,
        },
    )  # the chapter's own call, as it runs there
    return explorer.site_attributes


def test_explorer_call_reader_balances_brackets():
    code = "x = 1\nex = widgets.roofline_explorer(gpu=g(), intensity=round(f(a, (b)), 2))\nex\n"
    assert _explorer_calls(code) == ["widgets.roofline_explorer(gpu=g(), intensity=round(f(a, (b)), 2))"]


@pytest.mark.parametrize("chapter", sorted(CHAPTERS.glob("[0-9][0-9]_*.md")), ids=lambda p: p.stem)
def test_chapters_type_no_website_explorer_markup(chapter):
    """The widget writes the kernel-free explorer's element from its own state; a chapter types none."""
    text = chapter.read_text(encoding="utf-8")
    assert not _EXPLORER.search(text), f"{chapter.name}: delete the typed roofline-explorer div"
    assert len(_explorer_calls(_code(text))) == 1, f"{chapter.name}: each chapter shows one explorer"


def test_chapter_2_explorer_starts_at_the_layernorm():
    attrs = _site_markup("02_arithmetic_intensity", {})
    # round(intensity, 2) = 1.75 (7 FLOP per 4 bytes, less gamma/beta)
    assert float(attrs["data-intensity"]) == round(sc.LAYERNORM.op().intensity, 2)
    assert (attrs["data-mode"], attrs["data-gpu"], attrs["data-precision"]) == ("intensity", rl.gpu("A100").key, "bf16")


def test_chapter_3_explorer_starts_at_llama2_7b():
    cfg = sc.LLAMA2_7B
    assert "cfg = sc.LLAMA2_7B" in _code(_chapter("03_counting_flops"))
    attrs = _site_markup("03_counting_flops", {"cfg": cfg})
    assert attrs["data-mode"] == "flops"
    # Llama-2-7B's published shape, typed here so that the widget's echo is checked against it
    assert int(attrs["data-d-model"]) == 4096
    assert int(attrs["data-seq-len"]) == 4096
    assert int(attrs["data-n-layers"]) == 32
    assert int(attrs["data-vocab"]) == 32000
    assert float(attrs["data-ffn-ratio"]) == 2.6875  # 11008 / 4096
    assert attrs["data-gated"] == "true"


def test_chapter_4_explorer_starts_where_its_widget_does():
    start = sc.DECODE_EXPLORER
    assert "start = sc.DECODE_EXPLORER" in _code(_chapter("04_inference_regimes"))
    attrs = _site_markup("04_inference_regimes", {"start": start})
    assert attrs["data-mode"] == "decode"
    assert start.model is sc.LLAMA2_7B
    assert attrs["data-n-params"] == "6738415616"  # all digits: JavaScript reads it exactly
    assert int(attrs["data-batch"]) == 16
    assert attrs["data-gpu"] == "h100-sxm"
    assert rl.bytes_per_element(attrs["data-precision"]) == start.bytes_per_param  # bf16: 2 bytes


def test_chapter_11_explorer_starts_at_the_chapter_s_served_batch():
    code = _code(_chapter("11_energy"))
    assert "prompt, out_len, served_batch = 1024, 256, 64" in code and "context = 2048" in code
    attrs = _site_markup("11_energy", {"served_batch": 64, "context": 2048})
    assert (attrs["data-mode"], attrs["data-gpu"]) == ("energy", "h100-sxm")
    assert (int(attrs["data-batch"]), int(attrs["data-context-len"])) == (64, 2048)
    assert float(attrs["data-cap-watts"]) == 250  # a cap the reader meets below the TDP (700 W)
    assert attrs["data-stored-params"] == "8030261248"  # Llama-3-8B, all digits: JavaScript reads it exactly


def test_chapter_5_explorer_starts_at_the_mfu_example():
    ex = sc.MFU_EXAMPLE
    code = _code(_chapter("05_mfu"))
    assert "run = sc.MFU_EXAMPLE" in code
    assert "n_params, tokens_per_s, n_gpus = run.model.n_params(), run.tokens_per_s, run.n_gpus" in code
    names = {"run": ex, "n_params": ex.model.n_params(), "tokens_per_s": ex.tokens_per_s, "n_gpus": ex.n_gpus}
    attrs = _site_markup("05_mfu", names)
    assert (attrs["data-mode"], attrs["data-convention"]) == ("mfu", "6N")
    assert float(attrs["data-n-params"]) == 6_738_415_616  # Llama-2-7B
    assert float(attrs["data-tokens-per-s"]) == 1.5e6
    assert int(attrs["data-n-gpus"]) == 256
    assert attrs["data-gpu"] == "a100-80gb-sxm"
