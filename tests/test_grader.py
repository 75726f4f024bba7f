"""The exercises' grading: the key, practice and submit messages, the grader, attacks, a class.

The first half runs in this process and starts no kernel. The second half grades real
notebooks (built from exercises/ and solutions/ with a few cells replaced) through the grader,
each in a fresh kernel; together those take about two minutes on two cores.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import jupytext
import pytest

import roofline_lib as rl
from roofline_lib import grading, observer
from roofline_lib.grading import grader, key, sandbox, worker
from roofline_lib.grading.key import references

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "exercises"
SOLUTIONS = ROOT / "solutions"
STEMS = [e.stem for e in key.EXERCISES.values()]


def _tagged(path: Path) -> dict[str, str]:
    """{tag: source} of every tagged code cell."""
    out = {}
    for cell in jupytext.read(path).cells:
        for tag in cell.get("metadata", {}).get("tags", []):
            out[tag] = cell.source
    return out


def _build(dest: Path, base: Path, replace: dict[str, str] | None = None) -> Path:
    """A copy of ``base`` with the cells carrying the given tags replaced."""
    nb = jupytext.read(base)
    for cell in nb.cells:
        for tag in cell.get("metadata", {}).get("tags", []):
            if replace and tag in replace:
                cell.source = replace[tag]
    dest.parent.mkdir(parents=True, exist_ok=True)
    jupytext.write(nb, dest, fmt="md:myst" if dest.suffix == ".md" else "ipynb")
    return dest


def _entries(**values) -> dict:
    return {"part": "?", "entries": {k: observer.encode(v) for k, v in values.items()}, "calls": {}}


def _judge(part: str, seed: int = 0, **values) -> key.Verdict:
    spec = key.PARTS[part]
    probes = key.draw_probes(spec, random.Random(seed))
    return key.judge(spec, _entries(**values), probes)


def _judge_function(part: str, fn, seed: int) -> key.Verdict:
    """Observe ``fn`` the way the kernel does (on the plan's inputs), judge as the grader does."""
    spec = key.PARTS[part]
    probes = key.draw_probes(spec, random.Random(seed))
    plan = key.plan_of(spec, probes)
    observation = observer.observe(part, {spec.names[0]: fn}, plan["names"], plan.get("probes"))
    return key.judge(spec, json.loads(json.dumps(observation)), probes)


# =========================================================================== the notebooks


@pytest.mark.parametrize("folder", [EXERCISES, SOLUTIONS], ids=["exercises", "solutions"])
@pytest.mark.parametrize("stem", STEMS)
def test_every_part_has_an_answer_cell_and_the_practice_check(folder, stem):
    tags = _tagged(folder / f"{stem}.md")
    for part in key.parts_of(stem[:3]):
        assert f"answer-{part.key}" in tags, part.key
        assert tags[f"check-{part.key}"] == (
            f'from roofline_lib import observer\nobserver.check("{part.key}", globals())'
        )


@pytest.mark.parametrize("stem", STEMS)
def test_no_exercise_hint_names_a_library_function(stem):
    text = (EXERCISES / f"{stem}.md").read_text()
    assert "rl." not in text  # hints name the concept; the library is a tool, not the answer


# =========================================================================== the key


def test_the_correct_letters_are_spread_over_a_to_d():
    correct = {}
    for part in key.PARTS.values():
        for letter in "ABCD":
            if _judge(part.key, **{part.names[0]: letter}).status == "correct":
                correct[part.key] = letter
    assert set(correct.values()) == set("ABCD")
    assert len(correct) >= 7  # a letter part in every exercise, two in some


def test_every_exercise_has_a_reason_part_graded_by_a_numbered_choice():
    for ex in key.EXERCISES:
        reasons = [p for p in key.parts_of(ex) if p.names[0].endswith("_reason")]
        assert reasons, ex
        for part in reasons:
            right = [n for n in (1, 2, 3, 4) if _judge(part.key, **{part.names[0]: n}).status == "correct"]
            assert len(right) == 1, part.key
            assert _judge(part.key, **{part.names[0]: str(right[0])}).status == "correct"


@pytest.mark.parametrize("seed", range(40))
def test_every_probe_drawn_has_an_answer_and_the_library_refuses_some_valid_ones(seed):
    for part in key.PARTS.values():
        probes = key.draw_probes(part, random.Random(seed))
        if not probes:
            continue
        from roofline_lib import comms_roofline as comms

        reference = {
            "ceiling": key.ref_ceiling,
            "precision_sweep": key.ref_sweep,
            "step_seconds": key.ref_step_seconds,
            "zero_bytes_per_gpu": key.ref_zero_bytes_per_gpu,
            "tpot_seconds": key.ref_tpot_seconds,
            "joules_per_token": key.ref_joules_per_token,
        }[part.names[0]]
        library = {
            "ceiling": rl.attainable_flops_per_s,
            "precision_sweep": rl.precision_sweep,
            "step_seconds": comms.data_parallel_step,
            "zero_bytes_per_gpu": rl.zero_memory,  # a dict of widths is no optimizer's name
            "tpot_seconds": lambda n, kv, batch, context, accelerator: rl.decode_step(accelerator, batch, context),
            # a dict is no server, and the library prices only the GPUs its registry has power figures for
            "joules_per_token": lambda n, kv, batch, context, accelerator: rl.decode_energy(
                accelerator, batch, context
            ),
        }[part.names[0]]
        assert any(p.kind == "valid" for p in probes)
        library_refusals = 0
        for p in probes:
            if p.kind == "valid":
                reference(*p.args)  # does not raise
                try:
                    library(*p.args)
                except Exception:  # noqa: BLE001 - the library refuses a datasheet dict or an fp6
                    library_refusals += 1
            else:
                with pytest.raises(ValueError):
                    reference(*p.args)
        assert library_refusals >= 1, part.key


def test_the_worker_script_reads_the_observers_constants_without_importing_the_library(tmp_path):
    # the worker runs as a script beside the kernel's copy of the package; importing the package
    # for two constants cost every graded notebook ~0.3 CPU-seconds (its __init__, numpy)
    lib = grader._package_copy(tmp_path)
    probe = (
        "import runpy, sys; g = runpy.run_path(sys.argv[1]); "
        "print(g['MAX_ANSWER_BYTES'], g['MIME_TYPE'], sorted(m for m in sys.modules if m.split('.')[0] in ('roofline_lib', 'numpy')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(lib / grader._WORKER_SCRIPT)], cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(maxsplit=2) == [str(observer.MAX_ANSWER_BYTES), observer.MIME_TYPE, "[]\n"]


def test_a_plan_holds_names_and_inputs_only():
    for part in key.PARTS.values():
        probes = key.draw_probes(part, random.Random(1))
        plan = key.plan_of(part, probes)
        assert set(plan) <= {"names", "probes"}
        text = json.dumps(plan)
        assert "valid" not in text and "refuse" not in text  # the kind of a probe is the grader's


def test_submit_messages_never_give_a_direction_and_practice_messages_do():
    flops = references.ex4_naive()[0]  # 2 * 8192 * 8192 * 128
    for factor in (1.05, 0.95, 1.6, 0.6, 3.0, 0.3):
        verdict = _judge("ex4-a", qk_flops=flops * factor)
        assert verdict.status == "wrong"
        assert "high" not in verdict.submit and "low" not in verdict.submit
        assert ("high" if factor > 1 else "low") in verdict.practice
        assert "%" not in verdict.submit and "within" not in verdict.submit


def test_a_power_of_ten_and_a_wrong_sign_are_diagnosed_in_both_modes():
    flops = references.ex4_naive()[0]
    slip = _judge("ex4-a", qk_flops=flops / 1e9)  # GFLOP instead of FLOP
    assert "10^-9" in slip.submit and "10^-9" in slip.practice
    sign = _judge("ex4-a", qk_flops=-flops)
    assert "sign" in sign.submit and "sign" in sign.practice
    best = (
        min(key.EX1["fp32_flops_per_s"], references.ex1_intensity() * key.EX1["hbm_bytes_per_s"])
        / key.EX1["fp32_flops_per_s"]
    )
    share = _judge("ex1-e", best_share_of_peak=100 * best)  # a percentage
    assert "percentage" in share.submit


def test_the_model_that_does_not_fit_is_named_when_decode_uses_one_card():
    one_card = references.ex3_tokens_per_s(1)  # 3.2e12 / (n_params * 2) tokens/s
    verdict = _judge("ex3-f", decode_tokens_per_s=one_card)
    assert "do not fit" in verdict.submit and "do not fit" in verdict.practice
    assert _judge("ex3-e", min_cards=2).status == "wrong"  # 141 GB over 64 GB cards rounds up to 3
    assert _judge("ex3-e", min_cards=3).status == "correct"


def test_the_wrong_ridge_for_an_fp32_kernel_is_named():
    verdict = _judge("ex1-b", ridge_fp32=900e12 / 4.0e12)  # the bf16 matrix ridge, 225
    assert "vector units" in verdict.submit


def test_not_attempted_missing_and_wrong_types():
    assert _judge("ex2-a", ridge_p=...).status == "not attempted"
    assert key.judge(key.PARTS["ex2-a"], {"entries": {"ridge_p": {"kind": "missing"}}}, []).status == "not attempted"
    assert "should be a number" in _judge("ex2-a", ridge_p="200").submit
    assert "one of" in _judge("ex1-c", binding_roof="bandwidth").submit
    assert _judge("ex3-d", fits_on_one="False").status == "wrong"  # a string is not a bool


@pytest.mark.parametrize(
    "observation",
    [
        None,
        [],
        "x",
        {"entries": 3},
        {"entries": {"ridge_p": 5}},
        {"entries": {"ridge_p": {"kind": "number", "value": "NaN"}}},
    ],
)
def test_a_malformed_observation_is_an_error_or_wrong_never_an_exception(observation):
    verdict = key.judge(key.PARTS["ex2-a"], observation, [])
    assert verdict.status != "correct"


# --------------------------------------------------------------------------- function parts


def _correct_sweep(flops, elems, seconds_by_dtype, datasheet):
    return key.ref_sweep(flops, elems, seconds_by_dtype, datasheet)


def _sweep_without_refusals(flops, elems, seconds_by_dtype, datasheet):
    rows = {}
    for dtype, seconds in seconds_by_dtype.items():
        bw, peak = datasheet["hbm_bytes_per_s"], datasheet["peak_flops_per_s"].get(dtype, 1e15)
        b = elems * key.WIDTHS[dtype]
        ceiling = min(peak, bw * flops / b)
        rows[dtype] = {
            "bytes_moved": b,
            "intensity": flops / b,
            "bound": "memory" if flops / b < peak / bw else "compute",
            "achieved_flops_per_s": flops / seconds,
            "ceiling_flops_per_s": ceiling,
            "efficiency": flops / seconds / ceiling,
        }
    return rows


def _always_refuses(*args):
    raise ValueError("no")


def _heron_only(flops, elems, seconds_by_dtype, datasheet):
    """Fixed-input gaming: right on the notebook's own inputs, refuses everything else."""
    if datasheet == key.EX5["heron"]:
        return key.ref_sweep(flops, elems, seconds_by_dtype, datasheet)
    raise ValueError("only the Heron")


def _wrapped_library(*args):
    return rl.precision_sweep(*args)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    "fn, earned",
    [
        (_correct_sweep, {"ex5-a", "ex5-b", "ex5-c"}),
        (_sweep_without_refusals, {"ex5-a"}),
        (_always_refuses, set()),
        (_heron_only, set()),
        (_wrapped_library, set()),
    ],
    ids=["correct", "no-refusals", "always-refuses", "fixed-input", "wrapped-reference"],
)
def test_sweep_parts_are_earned_only_by_doing_the_work(fn, earned, seed):
    got = {p for p in ("ex5-a", "ex5-b", "ex5-c") if _judge_function(p, fn, seed).status == "correct"}
    assert got == earned


def test_ceiling_parts_need_the_datasheet_and_the_refusals():
    def student(intensity, datasheet, dtype):
        return min(datasheet["peak_flops_per_s"][dtype], datasheet["hbm_bytes_per_s"] * intensity)

    assert _judge_function("ex2-g", student, 3).status == "correct"
    refusal = _judge_function("ex2-h", student, 3)  # KeyError is not ValueError, 0 is accepted
    assert refusal.status == "wrong" and "high" not in refusal.submit
    assert _judge_function("ex2-h", key.ref_ceiling, 3).status == "correct"
    assert _judge_function("ex2-g", lambda i, d, t: rl.attainable_flops_per_s(i, d, t), 3).status == "wrong"
    scaled = _judge_function("ex2-g", lambda i, d, t: student(i, d, t) / 1e12, 3)  # TFLOP/s
    assert "power of ten" in scaled.submit


def test_a_stub_function_is_not_attempted():
    def stub(*args):
        raise NotImplementedError

    assert _judge_function("ex5-a", stub, 0).status == "not attempted"


# =========================================================================== the observer


def test_the_observer_imports_no_key():
    code = "import sys, roofline_lib.observer; print(sorted(m for m in sys.modules if 'grading' in m or '_key' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    source = Path(observer.__file__).read_text()
    assert "grading" not in "".join(line for line in source.splitlines() if "import" in line)
    assert "import roofline_lib" not in source


def test_encode_survives_hostile_values():
    class Hostile:
        def __float__(self):
            raise RuntimeError

        def __repr__(self):
            raise RuntimeError

    class Nasty(dict):
        def items(self):
            raise SystemExit

    assert observer.encode(Hostile())["kind"] == "other"
    assert observer.encode(Nasty(a=1))["kind"] == "dict"  # read through dict's own items
    assert observer.encode(float("nan")) == {"kind": "number", "nonfinite": "nan"}
    assert observer.encode(...) == {"kind": "ellipsis"}


def test_a_function_that_exits_or_mutates_its_input_is_observed_not_obeyed():
    def exits(*args):
        raise SystemExit(0)

    def mutates(intensity, datasheet, dtype):
        datasheet.clear()
        return 1.0

    plan = {
        "names": ["ceiling"],
        "probes": {"ceiling": [["a", json.dumps([1, {"x": 1}, "bf16"])], ["b", json.dumps([1, {"x": 1}, "bf16"])]]},
    }
    out = observer.observe("ex2-g", {"ceiling": exits}, plan["names"], plan["probes"])
    assert out["calls"]["ceiling"]["a"]["raised"] == "SystemExit"
    seen = []
    observer.observe("ex2-g", {"ceiling": lambda i, d, t: seen.append(dict(d)) or 1.0}, plan["names"], plan["probes"])
    observer.observe("ex2-g", {"ceiling": mutates}, plan["names"], plan["probes"])
    assert seen == [{"x": 1}, {"x": 1}]


# --------------------------------------------------------------------------- practice mode


def _serve(*requests) -> list[dict]:
    out = io.StringIO()
    grading.practice_server(io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_the_practice_judge_gives_direction_and_convention(monkeypatch):
    monkeypatch.delenv("ROOFLINE_GRADING", raising=False)
    plan, reply, unknown = _serve(
        {"plan": "ex2-a"},
        {"judge": "ex2-a", "observation": _entries(ridge_p=150.0)},  # ridge of P is 1200/6 = 200
        {"plan": "ex9-z"},
    )
    assert plan == {"names": ["ridge_p"]}
    assert reply["line"].startswith("[WRONG] ex2-a") and "too low" in reply["line"] and "peak" in reply["line"]
    assert "error" in unknown


def test_the_practice_judge_is_off_under_the_grader(monkeypatch):
    monkeypatch.setenv("ROOFLINE_GRADING", "1")
    assert "error" in _serve({"plan": "ex2-a"})[0]


def test_a_practice_check_prints_one_line_and_never_raises(capsys, monkeypatch):
    monkeypatch.delenv("ROOFLINE_GRADING", raising=False)
    observer.check("ex2-b", {"ridge_q": 500e12 / 4.0e12})  # 125 FLOP/byte
    observer.check("ex2-b", {"ridge_q": 4.0e12 / 500e12})  # upside down
    observer.check("ex2-b", {})
    observer.check("nope", {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("[OK] ex2-b")
    assert lines[1].startswith("[WRONG] ex2-b") and "FLOP per byte" in lines[1]
    assert lines[2].startswith("[TODO] ex2-b")
    assert lines[3].startswith("[ERROR]")


def test_a_kernel_that_ran_a_check_shuts_down_at_once_and_its_judge_leaves_with_it(monkeypatch):
    """The judge is not in the kernel's process group: ipykernel's shutdown signals the children in
    its group and waits until none is listed, and a judge it killed stayed listed (nobody reaps it),
    which held every exercise's shutdown about 2.4 s. The judge leaves when the kernel does."""
    from jupyter_client.manager import start_new_kernel

    monkeypatch.delenv("ROOFLINE_GRADING", raising=False)
    km, kc = start_new_kernel(kernel_name="python3")
    lines: list[str] = []
    try:
        reply = kc.execute_interactive(
            "import os, psutil\n"
            "from roofline_lib import observer\n"
            'observer.check("ex2-b", {"ridge_q": 125.0})\n'
            "judge = observer._JUDGE.pid\n"
            "in_group = [c.pid for c in psutil.Process().children(recursive=True) if os.getpgid(c.pid) == os.getpgrp()]\n"
            "print('JUDGE', judge, 'IN-GROUP', in_group)",
            timeout=60,
            output_hook=lambda msg: lines.append(msg["content"].get("text", "")),
        )
        assert reply["content"]["status"] == "ok", reply["content"]
        words = "".join(lines).split()
        assert words[0] == "[OK]" and "JUDGE" in words, lines  # the check ran, through a judge process
        judge = int(words[words.index("JUDGE") + 1])
        assert "".join(lines).rstrip().endswith("IN-GROUP []"), lines  # nothing for the shutdown to wait on
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(judge, 0)
        except ProcessLookupError:
            break
        if Path(f"/proc/{judge}/stat").read_text().split(")")[-1].split()[0] == "Z":
            break  # exited; its new parent has yet to reap it
        time.sleep(0.05)
    else:
        raise AssertionError(f"the practice judge (pid {judge}) outlived its kernel by 10 s")


def _flaky_kernels(deaths: int):
    """A KernelManager stand-in whose first ``deaths`` kernels die before they answer."""
    log = {"started": 0, "shut down": 0, "clients stopped": 0, "waited": []}

    class Client:
        def __init__(self, dies):
            self.dies = dies

        def start_channels(self):
            pass

        def stop_channels(self):
            log["clients stopped"] += 1

        def wait_for_ready(self, timeout):
            log["waited"].append(timeout)
            if self.dies:
                raise RuntimeError("Kernel died before replying to kernel_info")

    class Manager:
        def __init__(self, kernel_name):
            assert kernel_name == "python3"

        def start_kernel(self, **launch):
            assert launch["env"] == {"ROOFLINE_GRADING": "1"}
            log["started"] += 1

        def client(self):
            return Client(dies=log["started"] <= deaths)

        def shutdown_kernel(self, now=False):
            log["shut down"] += 1

    return Manager, log


def test_a_kernel_that_dies_before_answering_is_replaced_before_any_cell_runs():
    job = {"kernel_env": {"ROOFLINE_GRADING": "1"}}
    manager, log = _flaky_kernels(deaths=worker.KERNEL_START_ATTEMPTS - 1)
    km, kc = worker.start_kernel(job, manager=manager)
    assert isinstance(km, manager) and not kc.dies
    assert {k: log[k] for k in ("started", "shut down", "clients stopped")} == {
        "started": 3,
        "shut down": 2,
        "clients stopped": 2,
    }  # each dead one cleaned up


def test_a_silent_kernel_costs_the_student_seconds_not_minutes():
    # The time limit (180 s by default) runs from the first kernel's start: three silent kernels
    # waited for 120 s each would have used it all before the first cell.
    job = {"kernel_env": {"ROOFLINE_GRADING": "1"}}
    manager, log = _flaky_kernels(deaths=1)
    worker.start_kernel(job, manager=manager)
    assert log["waited"] == [worker.KERNEL_READY_TIMEOUT_S] * 2
    assert worker.KERNEL_READY_TIMEOUT_S * (worker.KERNEL_START_ATTEMPTS - 1) < (grading.DEFAULT_TIME_LIMIT_S / 2)


def test_kernels_that_keep_dying_are_reported_not_retried_for_ever():
    job = {"kernel_env": {"ROOFLINE_GRADING": "1"}}
    manager, log = _flaky_kernels(deaths=99)
    with pytest.raises(RuntimeError, match="died before replying"):
        worker.start_kernel(job, manager=manager)
    assert log["started"] == worker.KERNEL_START_ATTEMPTS


# =========================================================================== the command line


def _roofline(*args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "roofline_lib.cli", "grade", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["exercises"], "is a folder"),
        (["README.md"], "not an exercise notebook"),
        (["exercises/ex9_nothing.md"], "no such file"),
        (["exercises/ex1_layernorm_4_percent.md", "--json", "no/such/dir/x.json"], "does not exist"),
        (["exercises/ex1_layernorm_4_percent.md", "--json", "exercises"], "is a folder"),
        (["exercises/ex1_layernorm_4_percent.md", "--csv", "g.csv"], "--submissions"),
        (["--submissions", "book"], "no submission holds an exercise notebook"),
        (["--submissions", "README.md"], "not a folder"),
        (["--submissions", "tests/data", "--workers", "0"], "--workers"),
        ([], "give one or more"),
    ],
    ids=[
        "folder",
        "not-exercise",
        "missing",
        "json-dir-missing",
        "json-is-folder",
        "csv-alone",
        "class-without-notebooks",
        "class-not-folder",
        "workers-0",
        "nothing",
    ],
)
def test_usage_errors_exit_2_with_a_message_before_grading(args, fragment):
    started = time.monotonic()
    proc = _roofline(*args, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert fragment in proc.stderr and "Traceback" not in proc.stderr + proc.stdout
    assert time.monotonic() - started < 10  # no kernel was started (one takes seconds)


def test_gradebook_and_json_from_results():
    part = key.PARTS["ex2-a"]
    nb = grading.NotebookResult(
        "a/ex2_ridge_points.md",
        "ex2",
        "t",
        [grader._part_result(p, "correct" if p is part else "wrong", "m") for p in key.parts_of("ex2")],
        "",
    )
    students = [grading.StudentResult("ann", "a", [nb]), grading.StudentResult("bob", "b", [], "no exercise")]
    rows = list(csv.reader(io.StringIO(grading.gradebook_csv(students))))
    assert rows[0] == ["student", *[p.key for p in key.parts_of("ex2")], "total", "max"]
    assert rows[1][:2] == ["ann", "1"] and rows[1][-2:] == ["1", "8"]
    assert rows[2][0] == "bob" and rows[2][-2:] == ["0", "8"]
    report = grading.report_json(students)
    assert report["students"][0]["notebooks"][0]["parts"][1]["message"] == "m"


# =========================================================================== grading notebooks


def _grade_json(tmp_path: Path, *args, timeout=300):
    out = tmp_path / "report.json"
    proc = _roofline(*args, "--json", str(out), timeout=timeout)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    return proc, json.loads(out.read_text())


def test_the_solutions_get_full_marks_and_the_stubs_none(tmp_path):
    proc, report = _grade_json(tmp_path, *[f"solutions/{s}.md" for s in STEMS])
    assert proc.returncode == 0, proc.stdout
    student = report["students"][0]
    assert student["marks"] == student["max_marks"] == len(key.PARTS)
    assert isinstance(report["seed"], int)  # recorded, so the same probes can be drawn again
    proc, report = _grade_json(tmp_path, *[f"exercises/{s}.md" for s in STEMS])
    assert proc.returncode == 1
    assert report["students"][0]["marks"] == 0
    statuses = {p["status"] for nb in report["students"][0]["notebooks"] for p in nb["parts"]}
    assert statuses == {"not attempted"}


_GC_SCAN = """
import gc, json, sys, types
floats, holders = set(), []
for obj in gc.get_objects():
    try:
        if isinstance(obj, dict):
            values = list(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            values = list(obj)
        elif isinstance(obj, types.FunctionType):
            values = [c.cell_contents for c in (obj.__closure__ or ())] + list(obj.__defaults__ or ())
        else:
            values = []
        if hasattr(type(obj), "__dataclass_fields__") and hasattr(obj, "judge"):
            holders.append(type(obj).__name__)
        for v in values:
            if type(v) is float:
                floats.add(v)
    except Exception:
        pass
try:
    import roofline_lib.grading.key
    key_import = "imported"
except ImportError:
    key_import = "refused"
import os, subprocess
os.environ.pop("ROOFLINE_GRADING", None)  # then ask the practice judge, which would answer "too high"
oracle = subprocess.run([sys.executable, "-m", "roofline_lib.grading", "--practice"], capture_output=True,
                        text=True, input=json.dumps({"plan": "ex1-a"}) + "\\n").stdout
json.dump({"modules": sorted(m for m in sys.modules if "grading" in m or "_key" in m),
           "floats": sorted(floats), "holders": holders, "key_import": key_import, "oracle": oracle},
          open(OUT_PATH, "w"))
intensity = ...
"""


def test_an_answer_cell_inspecting_the_kernel_finds_no_key(tmp_path):
    findings = tmp_path / "findings.json"
    nb = _build(
        tmp_path / "spy" / "ex1_layernorm_4_percent.md",
        EXERCISES / "ex1_layernorm_4_percent.md",
        {"answer-ex1-a": f"OUT_PATH = {str(findings)!r}\n" + _GC_SCAN},
    )
    # Unsandboxed, so that the cell can write its findings where this test reads them: this is the
    # layer practice mode relies on (the sandbox tests are in test_sandbox.py).
    proc, report = _grade_json(tmp_path, str(nb), "--unsandboxed")
    assert report["students"][0]["marks"] == 0
    assert report["isolation"].startswith("GRADES NOT ISOLATED")
    found = json.loads(findings.read_text())
    assert found["modules"] == [] and found["holders"] == [] and found["key_import"] == "refused"
    assert found["oracle"] == ""  # the practice judge cannot be started from a graded kernel
    reference_values = [
        references.ex1_intensity(),
        key.EX1["fp32_flops_per_s"] / key.EX1["hbm_bytes_per_s"],
        references.ex1_bytes_per_s(key.EX1["seconds"]) / key.EX1["hbm_bytes_per_s"],
        references.ex1_intensity() * key.EX1["hbm_bytes_per_s"] / key.EX1["fp32_flops_per_s"],
    ]
    # A value that is also a figure of the course's public registries says nothing when found: the
    # ridge of part (b), 78 / 4 = 19.5 FLOP/byte, is the A100's fp32 19.5 TFLOP/s in gpus.json, which
    # the kernel's roofline_lib may hold (this test failed so, once in many runs)
    public = _registry_numbers()
    assert 19.5 in public and 19.5 in reference_values  # the collision this guards against is real
    telling = [ref for ref in reference_values if not any(abs(p - ref) <= 1e-9 * abs(ref) for p in public)]
    assert len(telling) == 3, telling
    for ref in telling:
        assert not any(abs(f - ref) <= 1e-9 * abs(ref) for f in found["floats"]), ref


def _registry_numbers() -> set[float]:
    """Every number in the registries roofline_lib ships as data (core/data/*.json)."""
    numbers: set[float] = set()

    def walk(value):
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            numbers.add(float(value))

    for path in (Path(rl.__file__).parent / "core" / "data").glob("*.json"):
        walk(json.loads(path.read_text(encoding="utf-8")))
    return numbers


def test_a_wrapped_reference_and_fixed_input_gaming_earn_nothing(tmp_path):
    wrapped = _build(
        tmp_path / "w" / "ex5_precision_sweep.md",
        SOLUTIONS / "ex5_precision_sweep.md",
        {"answer-ex5-a": "import roofline_lib as rl\nprecision_sweep = lambda *a: rl.precision_sweep(*a)"},
    )
    gaming = _build(
        tmp_path / "w" / "ex2_ridge_points.md",
        SOLUTIONS / "ex2_ridge_points.md",
        {
            "answer-ex2-g": (
                "def ceiling(intensity, datasheet, dtype):\n"
                "    if intensity == 150.0 and dtype == 'bf16':\n"
                "        return min(datasheet['peak_flops_per_s']['bf16'], datasheet['hbm_bytes_per_s'] * 150.0)\n"
                "    raise ValueError('only the notebook inputs')"
            )
        },
    )
    proc, report = _grade_json(tmp_path, str(wrapped), str(gaming))
    marks = {p["part"]: p["marks"] for nb in report["students"][0]["notebooks"] for p in nb["parts"]}
    assert [marks[p] for p in ("ex5-a", "ex5-b", "ex5-c", "ex2-g", "ex2-h")] == [0, 0, 0, 0, 0]
    assert marks["ex5-d"] == 0  # the wrapper cannot produce the Heron rows either (a dict is no GPU)
    assert marks["ex2-a"] == 1 and marks["ex2-f"] == 1  # the honest parts still count


_DETACH = """
import os, sys, subprocess
code = ("import os, time\\n"
        "if os.fork(): os._exit(0)\\n"
        "os.setsid()\\n"
        "time.sleep(4)\\n"
        "for p in TARGETS: open(p, 'w').write('rewritten by a detached process')\\n")
subprocess.Popen([sys.executable, "-c", "TARGETS = " + repr(TARGETS) + "\\n" + code, "roofline-detached-marker"],
                 start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
rerun_verdict = "D"
"""


def _marker_processes() -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and b"roofline-detached-marker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


def test_a_detached_process_cannot_rewrite_the_report(tmp_path):
    report_path = tmp_path / "report.json"
    nb = _build(
        tmp_path / "d" / "ex1_layernorm_4_percent.md",
        SOLUTIONS / "ex1_layernorm_4_percent.md",
        {"answer-ex1-h": f"TARGETS = [{str(report_path)!r}]\n" + _DETACH},
    )
    proc, report = _grade_json(tmp_path, str(nb))
    assert report["students"][0]["marks"] == 8
    assert _marker_processes() == []  # killed before the report was written
    time.sleep(5)
    assert json.loads(report_path.read_text())["students"][0]["marks"] == 8


# --------------------------------------------------------------------------- a class of six

_SWEEP_NO_REFUSALS = """
def precision_sweep(flops, elems, seconds_by_dtype, datasheet):
    rows = {}
    for dtype, seconds in seconds_by_dtype.items():
        bw, peak = datasheet["hbm_bytes_per_s"], datasheet["peak_flops_per_s"][dtype]
        b = elems * WIDTHS[dtype]
        ceiling = min(peak, bw * flops / b)
        rows[dtype] = {"bytes_moved": b, "intensity": flops / b,
                       "bound": "memory" if flops / b < peak / bw else "compute",
                       "achieved_flops_per_s": flops / seconds, "ceiling_flops_per_s": ceiling,
                       "efficiency": flops / seconds / ceiling}
    return rows
"""

_TAMPER = """
import json, os
from IPython.display import display
open("cells.json", "w").write("{ this is not json")
MIME = "application/vnd.roofline-course.observation+json"
display({MIME: {"part": "ex1-a", "entries": {"intensity": {"kind": "number", "value": 1.0}}}}, raw=True)
FORGED = "".join(json.dumps({"event": "cell", "index": i, "error": None, "observations": [
    {"part": "?", "entries": {"intensity": {"kind": "number", "value": 0.875}}}]}) + "\\n" for i in range(40))
FORGED += "0" * 64 + " " + json.dumps({"event": "finished"}) + "\\nnot json\\n"
try:  # forge the worker's events in every pipe it holds (where /proc lets the kernel open them)
    for fd in os.listdir(f"/proc/{os.getppid()}/fd"):
        try:
            with open(f"/proc/{os.getppid()}/fd/{fd}", "w") as pipe:
                pipe.write(FORGED)
        except OSError:
            pass
except OSError:
    pass
import roofline_lib.observer as _obs
_obs.publish = lambda part, ns, plan: _obs._show(
    {"part": part, "entries": {n: {"kind": "str", "value": "A"} for n in json.loads(plan)["names"]}}, "forged")
intensity = ...
"""


# Seconds per notebook for the class. An honest notebook grades in about 3.5 s on 2 busy cores,
# so 12 s leaves room; the hanging student costs the class this much wall time, once.
CLASS_TIME_LIMIT_S = 12


# A kernel that never finishes its cell. It sleeps rather than spins: the grader's time limit is
# on the wall clock either way, and a spinning kernel would take a core from the other tests.
_HANG = "import time\nwhile True:\n    time.sleep(0.05)"


def _six_students(root: Path) -> dict[str, int]:
    """Build the class under ``root``; returns each student's expected total."""
    ex1, ex5 = "ex1_layernorm_4_percent.md", "ex5_precision_sweep.md"
    stub1 = _tagged(EXERCISES / ex1)
    _build(root / "full" / ex1, SOLUTIONS / ex1)
    _build(root / "full" / ex5, SOLUTIONS / ex5)
    _build(
        root / "partial" / ex1,
        SOLUTIONS / ex1,
        {t: stub1[t] for t in ("answer-ex1-e", "answer-ex1-f", "answer-ex1-g", "answer-ex1-h")},
    )
    _build(
        root / "partial" / "ex5_precision_sweep.ipynb",
        EXERCISES / ex5,  # an .ipynb counts too
        {"answer-ex5-a": _SWEEP_NO_REFUSALS},
    )
    _build(root / "empty" / ex1, EXERCISES / ex1)
    _build(root / "empty" / ex5, EXERCISES / ex5)
    _build(
        root / "crashing" / ex1,
        SOLUTIONS / ex1,
        {"answer-ex1-e": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"},
    )
    _build(root / "crashing" / ex5, SOLUTIONS / ex5)
    _build(root / "hanging" / ex1, SOLUTIONS / ex1, {"answer-ex1-c": _HANG})
    _build(root / "hanging" / ex5, EXERCISES / ex5)
    checks = {f"check-{p.key}": 'print("[OK] correct: full marks")' for p in key.parts_of("ex1")}
    _build(
        root / "tampered" / ex1,
        EXERCISES / ex1,
        {
            **checks,
            "answer-ex1-a": _TAMPER,
            "answer-ex1-h": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nrerun_verdict = 'A'",
        },
    )
    _build(
        root / "tampered" / ex5,
        EXERCISES / ex5,
        {"answer-ex5-a": "import roofline_lib as rl\nprecision_sweep = lambda *a: rl.precision_sweep(*a)"},
    )
    (root / "notes.txt").write_text("not a submission")
    return {"crashing": 4 + 7, "empty": 0, "full": 8 + 7, "hanging": 2, "partial": 4 + 1, "tampered": 0}


def _grade_the_class(tmp: Path) -> dict:
    expected = _six_students(tmp / "submissions")
    started = time.monotonic()
    proc = _roofline(
        "--submissions",
        str(tmp / "submissions"),
        "--workers",
        "2",
        "--time-limit",
        str(CLASS_TIME_LIMIT_S),
        "--csv",
        str(tmp / "gradebook.csv"),
        "--json",
        str(tmp / "report.json"),
        # In the sandbox where one can start (the sandbox's own tests are in test_sandbox.py).
        *(["--unsandboxed"] if sandbox.why_unavailable() else []),
        timeout=600,
    )
    elapsed = time.monotonic() - started
    return dict(
        proc=dict(returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr),
        expected=expected,
        elapsed=elapsed,
        rows=list(csv.DictReader((tmp / "gradebook.csv").open())),
        report=json.loads((tmp / "report.json").read_text()),
    )


@pytest.fixture(scope="session")
def graded_class(once_per_run):
    """The class, graded once per test run however many test processes read it."""
    graded = once_per_run("graded-class", _grade_the_class)
    graded["proc"] = subprocess.CompletedProcess(args=["roofline", "grade"], **graded["proc"])
    return graded


def test_the_class_grades_to_the_expected_scores(graded_class):
    proc = graded_class["proc"]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout
    totals = {row["student"]: int(row["total"]) for row in graded_class["rows"]}
    assert totals == graded_class["expected"]
    columns = list(graded_class["rows"][0])
    assert columns == ["student", *[p.key for p in key.parts_of("ex1") + key.parts_of("ex5")], "total", "max"]
    assert graded_class["elapsed"] < 180


def _problems(graded_class, student):
    s = next(s for s in graded_class["report"]["students"] if s["student"] == student)
    return [nb["problem"] for nb in s["notebooks"]], {p["part"]: p for nb in s["notebooks"] for p in nb["parts"]}


def test_a_killed_kernel_keeps_the_marks_before_it(graded_class):
    problems, parts = _problems(graded_class, "crashing")
    assert problems[0] == "the kernel died during part ex1-e"
    assert [parts[p]["marks"] for p in ("ex1-a", "ex1-b", "ex1-c", "ex1-d")] == [1, 1, 1, 1]
    assert parts["ex1-f"]["status"] == "not graded"
    seconds = next(
        nb["seconds"]
        for s in graded_class["report"]["students"]
        if s["student"] == "crashing"
        for nb in s["notebooks"]
        if nb["exercise"] == "ex1"
    )
    assert seconds < CLASS_TIME_LIMIT_S  # reported when it died, not at the time limit


def test_a_hung_kernel_gets_the_time_limit(graded_class):
    problems, parts = _problems(graded_class, "hanging")
    assert problems[0] == f"the time limit of {CLASS_TIME_LIMIT_S} s was reached during part ex1-c"
    assert parts["ex1-b"]["marks"] == 1 and parts["ex1-c"]["status"] == "not graded"


def test_tampering_earns_nothing_and_is_survived(graded_class):
    problems, parts = _problems(graded_class, "tampered")
    assert all(p["marks"] == 0 for p in parts.values())
    assert "notes" not in {row["student"] for row in graded_class["rows"]}  # a stray file is no student


def _step(overlap_share):
    def step_seconds(n_params, tokens_per_gpu, n_gpus, accelerator, link):
        return (
            key.ref_step_seconds(n_params, tokens_per_gpu, n_gpus, accelerator, link)
            if overlap_share is None
            else _step_with(overlap_share, n_params, tokens_per_gpu, n_gpus, accelerator, link)
        )

    return step_seconds


def _step_with(share, n_params, tokens, n, accelerator, link):
    compute = 6 * n_params * tokens / (accelerator["mfu"] * accelerator["bf16_flops_per_s"])
    comms = 2 * (n - 1) * link["alpha_seconds"] + 2 * (n - 1) / n * 2 * n_params / link["bytes_per_s"]
    return compute + max(0.0, comms - share * compute)


@pytest.mark.parametrize(
    "fn, earned",
    [
        (_step(None), {"ex6-g", "ex6-h"}),
        (_step(1.0), set()),  # overlaps the forward pass too
        (_step(0.0), set()),  # no overlap at all
        (lambda *a: __import__("roofline_lib").comms_roofline.data_parallel_step(*a).seconds, set()),
    ],
    ids=["correct", "overlap-forward-too", "no-overlap", "wrapped-library"],
)
def test_step_seconds_parts_need_the_backward_window(fn, earned):
    got = {p for p in ("ex6-g", "ex6-h") if _judge_function(p, fn, 5).status == "correct"}
    assert got == earned
