"""The autograder: checks give the right verdicts and messages, and the grader cannot be fooled.

Fast tests call the checks in this process. The slower ones grade real notebooks through nbval,
once per group (solutions, stubs, a batch of tampered and wrong notebooks), in module fixtures.
"""
from __future__ import annotations

import json
from pathlib import Path

import jupytext
import nbformat
import pytest

import roofline_lib as rl
from roofline_lib import grading

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "exercises"
SOLUTIONS = ROOT / "solutions"


def _feedback(capsys, part, namespace) -> str:
    grading.check(part, namespace)
    return capsys.readouterr().out


def _tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


# ------------------------------------------------------------------------------ the notebooks' shape


@pytest.mark.parametrize("folder", [EXERCISES, SOLUTIONS], ids=["exercises", "solutions"])
@pytest.mark.parametrize("exercise", list(grading.EXERCISES.values()), ids=lambda e: e.key)
def test_every_part_has_an_answer_cell_then_the_official_check_cell(folder, exercise):
    nb = jupytext.read(folder / f"{exercise.stem}.md")
    code = [c for c in nb.cells if c.cell_type == "code"]
    parts = [p.key for p in grading.parts_of(exercise.key)]
    checks = [c for c in code if any(t.startswith("check-") for t in _tags(c))]
    assert [t for c in checks for t in _tags(c)] == [f"check-{p}" for p in parts]  # in order, once each
    for cell in checks:
        part = _tags(cell)[0][len("check-"):]
        assert cell.source == grading.check_cell_source(part)  # the official source, verbatim
        position = code.index(cell)
        answered_before = {t for c in code[:position] for t in _tags(c)}
        assert f"answer-{part}" in answered_before


def test_exercises_and_solutions_tag_the_same_answer_cells():
    for exercise in grading.EXERCISES.values():
        tags = [
            [t for c in jupytext.read(folder / f"{exercise.stem}.md").cells for t in _tags(c)
             if t.startswith(("answer-", "check-"))]
            for folder in (EXERCISES, SOLUTIONS)
        ]
        assert tags[0] == tags[1], exercise.stem


def test_check_cell_source_refuses_an_unknown_part():
    with pytest.raises(ValueError, match="unknown part 'ex9-z'"):
        grading.check_cell_source("ex9-z")


# ------------------------------------------------------------------------------ checks in this process


def test_a_right_answer_passes(capsys):
    out = _feedback(capsys, "ex2-a", {"ridge_h100": rl.ridge_point("H100")})
    assert "[PASS] ex2-a" in out and "(1/1)" in out


def test_a_stub_is_not_attempted(capsys):
    out = _feedback(capsys, "ex2-a", {"ridge_h100": ...})
    assert "not attempted (0/1)" in out and "replace the `...`" in out


def test_a_missing_name_is_not_attempted(capsys):
    out = _feedback(capsys, "ex2-a", {})
    assert "not attempted" in out and "`ridge_h100` not defined" in out


def test_a_function_stub_that_raises_not_implemented_is_not_attempted(capsys):
    def precision_sweep(flops, elems, seconds_by_dtype, gpu):
        raise NotImplementedError

    for part in ("ex5-a", "ex5-b", "ex5-c"):
        out = _feedback(capsys, part, {"precision_sweep": precision_sweep})
        assert "not attempted" in out and "NotImplementedError" in out


def test_the_rounded_a100_bandwidth_is_caught_with_a_hint_and_without_the_answer(capsys):
    # 312e12 / 2.0e12 = 156 FLOP/byte; the registry's 312e12 / 2.039e12 = 153.0 is 1.9 % lower
    out = _feedback(capsys, "ex2-d", {"ridge_a100": 156.0})
    assert "[FAIL]" in out and "`ridge_a100`" in out and "too high" in out
    assert "2,039 GB/s" in out  # the convention hint
    assert "153" not in out  # never the answer


def test_a_value_in_tflops_is_reported_as_a_unit_slip(capsys):
    # 3.35e12 B/s * 40 FLOP/B = 1.34e14 FLOP/s; 134 is that in TFLOP/s
    out = _feedback(capsys, "ex2-c", {"ceiling_h100_flops_per_s": 134})
    assert "10^12 times too small" in out and "not TFLOP/s" in out


def test_a_percentage_instead_of_a_fraction_is_reported(capsys):
    out = _feedback(capsys, "ex1-e", {"fraction_of_hbm_roof": 91.6})
    assert "10^2 times too large" in out and "not a percentage" in out


def test_a_plain_wrong_number_gets_its_direction(capsys):
    out = _feedback(capsys, "ex4-a", {"qk_flops": 1e9})  # the answer is 2 * 8192**2 * 128 = 1.7e10
    assert "too low by more than a factor of 2" in out
    assert "17179869184" not in out and "1.718" not in out


def test_counting_multiply_adds_instead_of_flops_is_named(capsys):
    out = _feedback(capsys, "ex4-a", {"qk_flops": 8192 * 8192 * 128})  # s^2 d_h MACs
    assert "too low" in out and "1 MAC = 2 FLOP" in out


def test_the_model_that_does_not_fit(capsys):
    # 70e9 params * 2 bytes = 140 GB > 80 GB: it does not fit, and needs 2 cards
    assert "[FAIL]" in _feedback(capsys, "ex3-c", {"fits_on_one_a100": True})
    assert "[PASS]" in _feedback(capsys, "ex3-c", {"fits_on_one_a100": False})
    assert "too few" in _feedback(capsys, "ex3-d", {"min_a100s": 1})
    # one card streaming all 140 GB: 2.039e12 / 140e9 = 14.6 tokens/s, unreachable
    one_card = rl.decode_roofline(70e9, "A100").tokens_per_s
    out = _feedback(capsys, "ex3-e", {"decode_tokens_per_s": one_card})
    assert "do not fit on one card" in out


def test_a_choice_outside_the_options_lists_them(capsys):
    out = _feedback(capsys, "ex2-b", {"bound_h100": "mem"})
    assert "must be one of 'memory', 'compute'" in out
    assert "[PASS]" in _feedback(capsys, "ex2-b", {"bound_h100": " Memory "})  # case and spaces forgiven


def test_a_bool_choice_does_not_accept_a_string(capsys):
    out = _feedback(capsys, "ex1-g", {"colleague_is_right": "False"})
    assert "must be one of True, False" in out


def test_a_multi_name_part_needs_every_name(capsys):
    out = _feedback(capsys, "ex4-f", {"fused_intensity": 4096.0, "fused_bound": ...})
    assert "not attempted" in out and "`fused_bound`" in out


def _reference_style_sweep(flops, elems, seconds_by_dtype, gpu):
    rows = rl.precision_sweep(flops, elems, seconds_by_dtype, gpu)
    return {d: {f: getattr(r, f) for f in grading._SWEEP_FIELDS} for d, r in rows.items()}


def test_a_correct_sweep_passes_all_three_function_parts(capsys):
    for part in ("ex5-a", "ex5-b", "ex5-c"):
        assert "[PASS]" in _feedback(capsys, part, {"precision_sweep": _reference_style_sweep})


def test_the_library_function_itself_is_not_an_answer(capsys):
    out = _feedback(capsys, "ex5-a", {"precision_sweep": rl.precision_sweep})
    assert "write your own function" in out


def test_student_code_that_raises_is_caught_and_reported(capsys):
    def precision_sweep(flops, elems, seconds_by_dtype, gpu):
        return 1 / 0

    out = _feedback(capsys, "ex5-a", {"precision_sweep": precision_sweep})  # must not raise
    assert "[ERROR]" in out and "ZeroDivisionError" in out


def test_a_sweep_that_accepts_fp8_on_an_a100_fails_part_b(capsys):
    def precision_sweep(flops, elems, seconds_by_dtype, gpu):
        widths = {"fp32": 4, "bf16": 2, "fp8": 1}  # a fixed table: knows nothing of the chip
        return {d: {"bytes_moved": elems * widths[d]} for d in seconds_by_dtype}

    out = _feedback(capsys, "ex5-b", {"precision_sweep": precision_sweep})
    assert "[FAIL]" in out and "it should raise ValueError" in out and "has no fp8" in out


def test_a_sweep_that_raises_the_wrong_exception_is_told_which_one(capsys):
    def precision_sweep(flops, elems, seconds_by_dtype, gpu):
        if "fp8" in seconds_by_dtype and rl.as_gpu(gpu).key.startswith("a100"):
            raise KeyError("fp8")
        return _reference_style_sweep(flops, elems, seconds_by_dtype, gpu)

    out = _feedback(capsys, "ex5-b", {"precision_sweep": precision_sweep})
    assert "raised KeyError" in out and "raise ValueError" in out


def test_a_sweep_that_refuses_everything_does_not_earn_the_refusal_marks(capsys):
    def precision_sweep(flops, elems, seconds_by_dtype, gpu):
        raise ValueError("no")

    out = _feedback(capsys, "ex5-b", {"precision_sweep": precision_sweep})
    assert "[ERROR]" in out and "a valid input" in out


def test_a_wrong_field_in_a_sweep_row_is_named(capsys):
    def precision_sweep(flops, elems, seconds_by_dtype, gpu):
        rows = _reference_style_sweep(flops, elems, seconds_by_dtype, gpu)
        for row in rows.values():
            row["ceiling_flops_per_s"] /= 1e12  # in TFLOP/s
        return rows

    out = _feedback(capsys, "ex5-a", {"precision_sweep": precision_sweep})
    assert "'ceiling_flops_per_s'" in out and "10^12 times too small" in out


def test_a_check_never_raises_on_odd_input(capsys):
    grading.check("ex9-z", {})  # unknown part
    grading.check("ex2-a", ["not", "a", "namespace"])
    grading.check("ex2-a", {"ridge_h100": float("nan")})
    grading.check("ex2-a", {"ridge_h100": object()})
    out = capsys.readouterr().out
    assert "unknown part 'ex9-z'" in out
    assert out.count("[PASS]") == 0


def test_a_malformed_observation_scores_nothing():
    assert grading.judge("ex2-a", None).marks == 0
    assert grading.judge("ex2-a", {"part": "ex2-a", "names": "x"}).status == "error"
    forged = {"part": "ex2-b", "names": {"ridge_h100": {"state": "value", "value": 295.4}}}
    assert grading.judge("ex2-a", forged).status == "error"  # an observation for another part


def test_values_reach_the_judge_as_plain_json():
    import numpy as np

    row = rl.precision_sweep(1e12, 1e8, {"bf16": 0.004}, "A100")["bf16"]
    plain = grading._to_jsonable({"a": np.float64(1.5), "b": np.int64(3), "row": row, "inf": float("inf")})
    assert plain["a"] == 1.5 and plain["b"] == 3 and plain["row"]["bound"] == "compute"
    assert plain["inf"] == {"nonfinite": "inf"}
    json.dumps(plain)  # serialisable


# ------------------------------------------------------------------------------ the grader, end to end


def _grade(paths, tmp_path):
    out = tmp_path / "scores.json"
    code = grading.run_grade([str(p) for p in paths], json_path=out)
    return code, json.loads(out.read_text())


def _parts(report) -> dict[tuple[str, str], dict]:
    return {(ex["path"], p["part"]): p for ex in report["exercises"] for p in ex["parts"]}


@pytest.fixture(scope="module")
def solutions_graded(tmp_path_factory):
    return _grade(sorted(SOLUTIONS.glob("ex*.md")), tmp_path_factory.mktemp("solutions"))


@pytest.fixture(scope="module")
def stubs_graded(tmp_path_factory):
    return _grade(sorted(EXERCISES.glob("ex*.md")), tmp_path_factory.mktemp("stubs"))


def test_the_solutions_get_full_marks(solutions_graded):
    code, report = solutions_graded
    assert code == 0
    assert report["marks"] == report["max_marks"] == len(grading.PARTS)  # one mark per part
    assert len(report["exercises"]) == len(grading.EXERCISES)


def test_the_stubs_get_nothing_and_fail(stubs_graded):
    code, report = stubs_graded
    assert code == 1
    assert report["marks"] == 0
    assert {p["status"] for p in _parts(report).values()} == {"not attempted"}


def _edit(src: Path, dest: Path, edit) -> Path:
    """Copy a notebook, letting ``edit(cells)`` change its cells; write it as ``dest``."""
    nb = jupytext.read(src)
    edit(nb.cells)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.suffix == ".ipynb":
        nbformat.write(nb, str(dest))
    else:
        jupytext.write(nb, dest, fmt="md:myst")
    return dest


def _cell(cells, tag):
    return next(c for c in cells if tag in c.metadata.get("tags", []))


_FAKE_PASS = (
    "from IPython.display import display\n"
    "from roofline_lib import grading as g\n"
    "obs = {'part': 'ex2-a', 'names': {'ridge_h100': {'state': 'value', 'value': 295.373}}}\n"
    "display({g.MIME_TYPE: {'part': 'ex2-a', 'observation': obs, 'result': {'status': 'correct'}},\n"
    "         'text/plain': '[PASS] ex2-a H100 ridge point: correct (1/1)'}, raw=True)"
)


def _tampered_cases(root: Path) -> dict[str, Path]:
    ex2, ex3, ex5 = "ex2_ridge_points", "ex3_70b_budget", "ex5_precision_sweep"
    cases = {}

    def deleted_checks(cells):
        cells[:] = [c for c in cells if not any(t.startswith("check-") for t in c.metadata.get("tags", []))]

    cases["deleted"] = _edit(EXERCISES / f"{ex2}.md", root / "deleted" / f"{ex2}.md", deleted_checks)

    def fake_pass(cells):
        _cell(cells, "check-ex2-a").source = _FAKE_PASS  # edited, tag kept
        untagged = _cell(cells, "check-ex2-b")
        untagged.source = _FAKE_PASS.replace("ex2-a", "ex2-b")
        untagged.metadata["tags"] = []  # edited and untagged

    cases["fake-pass"] = _edit(EXERCISES / f"{ex2}.md", root / "fake" / f"{ex2}.md", fake_pass)

    def override_checker(cells):
        _cell(cells, "answer-ex2-a").source = (
            "ridge_h100 = ...\n"
            "import roofline_lib.grading as g\n"
            "g.judge = lambda part, obs: g.PartResult(part, '', 'correct', 1, 1)  # fake in-kernel verdicts\n"
            "class grading:  # shadow the module name\n"
            "    @staticmethod\n"
            "    def check(part, ns=None):\n"
            "        print('[PASS]', part, 'correct (1/1)')\n"
            "check = grading.check"
        )
        _cell(cells, "answer-ex2-b").source = (
            "bound_h100 = ...\n"
            "import roofline_lib.grading as g\n"
            "g.check = lambda part, ns=None: print('[PASS]', part, 'correct (1/1)')  # silence the check"
        )

    cases["override"] = _edit(EXERCISES / f"{ex2}.md", root / "override" / f"{ex2}.md", override_checker)

    def wrong_answers(cells):
        _cell(cells, "answer-ex2-c").source = "ceiling_h100_flops_per_s = 134  # TFLOP/s, not SI"
        _cell(cells, "answer-ex2-d").source = "ridge_a100 = 312e12 / 2.0e12  # the rounded bandwidth"
        _cell(cells, "answer-ex2-a").source = "ridge_h100 = 1 / 0"  # raises in the answer cell
        untag = _cell(cells, "answer-ex2-e")  # an answer whose cell lost its tag still counts
        untag.metadata["tags"] = []

    cases["wrong"] = _edit(SOLUTIONS / f"{ex2}.md", root / "wrong" / f"{ex2}.md", wrong_answers)

    def says_it_fits(cells):
        _cell(cells, "answer-ex3-c").source += "\nfits_on_one_a100 = True"

    cases["fits"] = _edit(SOLUTIONS / f"{ex3}.md", root / "fits" / f"{ex3}.md", says_it_fits)

    def raising_sweep(cells):
        _cell(cells, "answer-ex5-a").source = (
            "def precision_sweep(flops, elems, seconds_by_dtype, gpu):\n"
            "    return flops / 0\n"
        )

    cases["raises"] = _edit(SOLUTIONS / f"{ex5}.md", root / "raises" / f"{ex5}.md", raising_sweep)

    def ipynb_with_fake_outputs(cells):
        check = _cell(cells, "check-ex2-a")
        check.outputs = [nbformat.v4.new_output(
            "display_data", data={grading.MIME_TYPE: {"part": "ex2-a"}, "text/plain": "[PASS]"})]
        check.execution_count = 1

    cases["ipynb-stub"] = _edit(EXERCISES / f"{ex2}.md", root / "ipynb" / f"{ex2}.ipynb", ipynb_with_fake_outputs)
    return cases


@pytest.fixture(scope="module")
def tampered_graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("tampered")
    cases = _tampered_cases(root)
    code, report = _grade(list(cases.values()), root)
    by_case = {name: {p["part"]: p for ex in report["exercises"] if ex["path"] == str(path) for p in ex["parts"]}
               for name, path in cases.items()}
    return code, by_case


def test_a_deleted_check_cell_is_restored(tampered_graded):
    _, cases = tampered_graded
    assert {p["status"] for p in cases["deleted"].values()} == {"not attempted"}
    assert len(cases["deleted"]) == 7  # every part still graded


def test_a_fake_pass_counts_for_nothing(tampered_graded):
    _, cases = tampered_graded
    assert cases["fake-pass"]["ex2-a"]["marks"] == 0  # edited check cell, tag kept
    assert cases["fake-pass"]["ex2-b"]["marks"] == 0  # edited check cell, tag removed
    assert sum(p["marks"] for p in cases["fake-pass"].values()) == 0


def test_overriding_the_checker_counts_for_nothing(tampered_graded):
    _, cases = tampered_graded
    a, b = cases["override"]["ex2-a"], cases["override"]["ex2-b"]
    assert a["status"] == "not attempted" and a["marks"] == 0  # judged again outside the kernel
    assert b["status"] == "error" and b["marks"] == 0  # a silenced check leaves no result
    assert "gave no result" in b["message"]


def test_wrong_answers_get_the_right_messages(tampered_graded):
    _, cases = tampered_graded
    wrong = cases["wrong"]
    assert "10^12 times too small" in wrong["ex2-c"]["message"]
    assert "2,039 GB/s" in wrong["ex2-d"]["message"] and "153" not in wrong["ex2-d"]["message"]
    assert wrong["ex2-a"]["status"] == "error"
    assert "your answer cell raised ZeroDivisionError" in wrong["ex2-a"]["message"]
    assert wrong["ex2-e"]["status"] == "correct"  # untagged answer cell: the check still finds it
    assert wrong["ex2-f"]["status"] == wrong["ex2-g"]["status"] == "correct"  # the rest still graded
    assert cases["fits"]["ex3-c"]["status"] == "wrong"
    assert sum(p["marks"] for p in cases["fits"].values()) == 5  # 6 parts, one wrong


def test_student_code_that_raises_is_reported_not_crashed_on(tampered_graded):
    _, cases = tampered_graded
    for part in ("ex5-a", "ex5-b", "ex5-c"):
        assert cases["raises"][part]["marks"] == 0
    assert cases["raises"]["ex5-a"]["status"] == "error"
    assert "ZeroDivisionError" in cases["raises"]["ex5-a"]["message"]


def test_stored_outputs_of_an_ipynb_are_ignored(tampered_graded):
    code, cases = tampered_graded
    assert sum(p["marks"] for p in cases["ipynb-stub"].values()) == 0
    assert code == 1


def test_the_score_table_names_every_part():
    results = [grading.ExerciseResult("x.md", "ex2", "t", [
        grading.PartResult("ex2-a", "H100 ridge point", "wrong", 0, 1, "`ridge_h100` is too low."),
        grading.PartResult("ex2-b", "bound", "correct", 1, 1)])]
    table = grading.format_table(results)
    assert "ex2-a" in table and "wrong" in table and "is too low" in table
    assert "1/2" in table and "Score: 1/2 (50 %)" in table


def test_run_grade_refuses_no_input_and_missing_files(tmp_path, capsys):
    assert grading.run_grade([]) == 2
    assert grading.run_grade([str(tmp_path / "nope.md")]) == 2
    other = tmp_path / "notes.md"
    other.write_text("# not an exercise\n")
    assert grading.run_grade([str(other)]) == 1
    assert "not an exercise notebook" in capsys.readouterr().out
