"""Tests for the ``roofline`` command, called as ``main([...])`` with its output captured."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest

from roofline_lib import cli
from roofline_lib.evidence.measured_roofs import MeasuredCeilings


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- help and usage


def test_help_documents_the_exit_codes(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "exit codes:" in out
    for line in ("0  success", "1  grade", "2  bad input", "3  implausible", "4  an unexpected error"):
        assert line in out


def test_no_subcommand_is_a_usage_error(capsys):
    code, _, err = run(capsys)
    assert code == 2 and "COMMAND" in err


def test_python_dash_m_runs_the_command():
    done = subprocess.run(
        [sys.executable, "-m", "roofline_lib.cli", "gpus"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "H100 SXM" in done.stdout


# --------------------------------------------------------------------------- gpus


def test_gpus_table(capsys):
    code, out, _ = run(capsys, "gpus")
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines()[2:] if line and not line.startswith("Dense")}
    assert set(rows) == {
        "a100-80gb-sxm",
        "a100-40gb-sxm",
        "h100-sxm",
        "h100-pcie",
        "h200",
        "h800",
        "b200",
        "l4",
        "v100-sxm2-32gb",
        "v100-sxm2-16gb",
        "a10",
        "mi250x",
        "mi250",
        "mi300x",
        "tpu-v4",
        "tpu-v5e",
    }
    a100 = rows["a100-80gb-sxm"].split()
    # HBM 2.04 TB/s, 80 GiB, bf16 312 TFLOP/s, no fp8, ridge 312e12 / 2.039e12 = 153 FLOP/B
    assert a100[-5:] == ["2.04", "80", "312.0", "-", "153"]
    h100 = rows["h100-sxm"].split()
    assert h100[-5:] == ["3.35", "80", "989.5", "1979.0", "295"]  # 989.5e12 / 3.35e12 = 295.4


# --------------------------------------------------------------------------- verdict


def test_verdict_memory_bound(capsys):
    code, out, err = run(capsys, "verdict", "--flops", "1e9", "--bytes", "1e9", "--seconds", "1e-3", "--gpu", "A100")
    # 1e9 FLOP / 1e9 B = 1 FLOP/B < 153; achieved 1e9 / 1e-3 = 1 TFLOP/s of a 2.04 ceiling = 49.0 %
    assert code == 0 and err == ""
    assert "memory-bound" in out and "1 TFLOP/s of a 2.04 TFLOP/s ceiling (49.0%)" in out


def test_verdict_compute_bound_with_precision(capsys):
    code, out, _ = run(
        capsys,
        "verdict",
        "--flops",
        "2.7e11",
        "--bytes",
        "2.2e8",
        "--seconds",
        "1.1e-3",
        "--gpu",
        "H100",
        "--precision",
        "fp8",
    )
    # intensity 2.7e11 / 2.2e8 = 1227 FLOP/B > fp8 ridge 591; 2.7e11 / 1.1e-3 = 245 TFLOP/s
    assert code == 0 and "H100 SXM fp8" in out and "compute-bound" in out and "245 TFLOP/s" in out


def test_verdict_faster_than_the_hardware_exits_3(capsys):
    code, out, err = run(capsys, "verdict", "--flops", "1e9", "--bytes", "1e9", "--seconds", "1e-6", "--gpu", "A100")
    # 1e9 B in 1 us = 1000 TB/s, 490x the A100's 2.04 TB/s
    assert code == 3 and out == ""
    assert "implausible measurement" in err and "HBM bandwidth roof" in err


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--flops", "1e9", "--bytes", "1e9", "--seconds", "0", "--gpu", "A100"], "--seconds"),
        (["--flops", "-1", "--bytes", "1e9", "--seconds", "1", "--gpu", "A100"], "--flops"),
        (["--flops", "1e9", "--bytes", "nan", "--seconds", "1", "--gpu", "A100"], "--bytes"),
        (["--flops", "many", "--bytes", "1e9", "--seconds", "1", "--gpu", "A100"], "--flops"),
        (["--flops", "1e9", "--bytes", "1e9", "--seconds", "1", "--gpu", "Z80"], "--gpu"),
        (["--flops", "1e9", "--bytes", "1e9", "--seconds", "1", "--gpu", "A100", "--precision", "fp8"], "--precision"),
        (["--flops", "1e9", "--bytes", "1e9", "--gpu", "A100"], "--seconds"),
    ],
)
def test_verdict_bad_input_exits_2_naming_the_parameter(capsys, argv, fragment):
    code, out, err = run(capsys, "verdict", *argv)
    assert code == 2 and out == ""
    assert fragment in err


def test_a_repeated_gpu_is_an_error_not_the_last_one(capsys):
    code, out, err = run(
        capsys, "verdict", "--flops", "1e9", "--bytes", "1e9", "--seconds", "1e-3", "--gpu", "A100", "--gpu", "H100"
    )
    assert code == 2 and out == ""
    assert "--gpu given twice" in err and "'A100'" in err and "'H100'" in err


def test_wrong_units_are_refused_with_a_hint(capsys):
    # 268 "bytes" in 90 "seconds": MB and microseconds were meant
    code, _, err = run(capsys, "verdict", "--flops", "1e9", "--bytes", "268", "--seconds", "90", "--gpu", "A100")
    assert code == 2 and "units" in err


def test_an_unexpected_error_is_one_line_with_its_own_code(capsys, monkeypatch):
    import roofline_lib.core.hardware as hardware

    def broken():
        raise KeyError("a bug")

    monkeypatch.setattr(hardware, "registry", broken)
    code, out, err = run(capsys, "gpus")
    assert code == cli.EXIT_INTERNAL == 4
    assert "Traceback" not in err and err.count("\n") == 1
    assert "unexpected KeyError" in err and "a bug" in err


def test_exit_codes_have_one_meaning_each():
    codes = [cli.EXIT_OK, cli.EXIT_WRONG, cli.EXIT_USAGE, cli.EXIT_IMPLAUSIBLE, cli.EXIT_INTERNAL]
    assert codes == [0, 1, 2, 3, 4]


# --------------------------------------------------------------------------- measure


def test_measure_checks_its_json_path_before_measuring(capsys, tmp_path, monkeypatch):
    import roofline_lib.evidence.measured_roofs as measured_roofs

    monkeypatch.setattr(
        measured_roofs, "measure_ceilings", lambda **kw: pytest.fail("measured before the path was checked")
    )
    code, out, err = run(capsys, "measure", "--json", str(tmp_path / "missing" / "x.json"))
    assert code == 2 and out == ""
    assert "--json" in err and "does not exist" in err and "Traceback" not in err
    code, _, err = run(capsys, "measure", "--json", str(tmp_path / "x.txt"))
    assert code == 2 and ".json" in err


def test_measure_prints_progress_and_writes_json(capsys, tmp_path):
    target = tmp_path / "machine.json"
    code, out, err = run(capsys, "measure", "--seconds", "0.3", "--json", str(target))
    assert code == 0
    assert "copy" in err and "matmul" in err  # progress goes to stderr
    assert "GB/s" in out and "ridge" in out
    record = MeasuredCeilings.from_dict(json.loads(target.read_text()))
    assert record.bytes_per_s > 0 and record.flops_per_s > 0


def test_measure_rejects_a_zero_budget(capsys):
    code, _, err = run(capsys, "measure", "--seconds", "0")
    assert code == 2 and "--seconds" in err


# --------------------------------------------------------------------------- plot


def test_plot_png_with_points(capsys, tmp_path):
    target = tmp_path / "roof.png"
    code, out, _ = run(
        capsys,
        "plot",
        "--gpu",
        "A100",
        "--gpu",
        "H100",
        "--precision",
        "bf16",
        "--point",
        "LayerNorm:0.6:1.2",
        "--measured-point",
        "GEMM: big:400:250",
        "-o",
        str(target),
    )
    assert code == 0
    assert target.read_bytes()[:4] == b"\x89PNG"
    assert "Predicted point 'LayerNorm' at 0.6 FLOP/byte and 1.2 TFLOP/s" in out
    assert "Measured point 'GEMM: big' at 400 FLOP/byte and 250 TFLOP/s" in out  # label keeps its colon


def test_plot_svg_with_a_measured_machine(capsys, tmp_path):
    machine = tmp_path / "cpu.json"
    cpu = MeasuredCeilings(50e9, 200e9, "test CPU", "fp32", 2, "2025-01-01T00:00:00+00:00", "2.x")
    machine.write_text(json.dumps(cpu.to_dict()))
    target = tmp_path / "roof.svg"
    code, out, _ = run(capsys, "plot", "--measured", str(machine), "--l2", "-o", str(target))
    assert code == 0 and b"<svg" in target.read_bytes()
    assert "measured: test CPU" in out and "L2 7.22 TB/s" in out


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["-o", "roof.pdf"], ".png or .svg"),
        (["--point", "LayerNorm", "-o", "roof.png"], "LABEL:INTENSITY:TFLOPS"),
        (["--point", "LayerNorm:x:1", "-o", "roof.png"], "must be numbers"),
        (["--point", "LayerNorm:0:1", "-o", "roof.png"], "intensity"),
        (["--gpu", "A100", "--precision", "fp8", "-o", "roof.png"], "has none of the precisions"),
        (["--measured", "missing.json", "-o", "roof.png"], "--measured"),
        (["--gpu", "A100"], "-o/--output"),
        (["-o", "missing/roof.png"], "does not exist"),
        (["-o", "roof.png", "-o", "other.png"], "given twice"),
    ],
)
def test_plot_bad_input_exits_2(capsys, tmp_path, monkeypatch, argv, fragment):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "plot", *argv)
    assert code == 2 and fragment in err
    assert not any(tmp_path.iterdir())  # nothing written


def test_plot_refuses_a_point_above_every_roof(capsys, tmp_path):
    target = tmp_path / "roof.png"
    # at 0.5 FLOP/byte the A100's roof is 0.5 * 2.039e12 = 1.02 TFLOP/s; 5000 TFLOP/s is 4900x that
    code, out, err = run(capsys, "plot", "--point", "x:0.5:5000", "-o", str(target))
    assert code == 3 and out == "" and not target.exists()
    assert "point 'x'" in err and "roof" in err


def test_plot_accepts_a_point_under_one_of_its_roofs(capsys, tmp_path):
    # 3 TFLOP/s at 1 FLOP/byte: above the A100's 2.04 but under the H100's 3.35 TB/s * 1 = 3.35
    code, _, _ = run(
        capsys, "plot", "--gpu", "A100", "--gpu", "H100", "--point", "y:1:3", "-o", str(tmp_path / "roof.png")
    )
    assert code == 0


# --------------------------------------------------------------------------- grade


def test_grade_without_the_grading_module_exits_2(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "roofline_lib.grading", None)  # makes the import fail
    code, _, err = run(capsys, "grade", "exercises/ex1.md")
    assert code == 2 and "grading module" in err


def test_grade_hands_paths_and_json_to_the_grader(capsys, monkeypatch):
    calls = []
    fake = types.ModuleType("roofline_lib.grading")
    fake.run_grade = lambda paths, json_path=None, **options: calls.append((paths, json_path)) or 1
    monkeypatch.setitem(sys.modules, "roofline_lib.grading", fake)
    code, _, _ = run(capsys, "grade", "a.md", "b.md", "--json", "out.json")
    assert code == 1  # the grader's own code: some answer is wrong
    assert calls == [(["a.md", "b.md"], "out.json")]


def test_grade_with_a_grader_lacking_run_grade_exits_2(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "roofline_lib.grading", types.ModuleType("roofline_lib.grading"))
    code, _, err = run(capsys, "grade", "a.md")
    assert code == 2 and "run_grade" in err


def test_every_command_module_is_a_subcommand_in_help(capsys):
    # each module of roofline_lib/cli/ not starting with "_" is one command: add(), run() and ORDER
    import pkgutil

    import roofline_lib.cli as cli_package

    names = [m.name for m in pkgutil.iter_modules(cli_package.__path__) if not m.name.startswith("_")]
    assert {"gpus", "verdict", "measure", "plot", "grade"} <= set(names)
    assert cli.main(["--help"]) == cli.EXIT_OK
    listed = capsys.readouterr().out
    for name in names:
        assert f"    {name} " in listed, name
