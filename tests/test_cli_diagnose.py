"""``roofline diagnose``: a trace or a folder of rank traces, as text, as JSON and as a picture,
and bad input refused with exit code 2 and a message that says what to pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline_lib import cli
from roofline_lib.cli import diagnose as command
from roofline_lib.core.formatting import data_size

TRACES = Path(__file__).resolve().parent / "traces"
MI300X = str(TRACES / "synthetic" / "amd_mi300x_gfx942.json")
RANKS = str(TRACES / "synthetic" / "ranks")


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_trace_gives_the_verdict_the_piles_their_top_rows_and_what_next(capsys):
    # the MI300X trace: GEMM 1000 us, all-reduce 400 us, add 200 us, idle 200 us of 1800 us
    code, out, err = run(capsys, "diagnose", MI300X)
    assert code == 0 and not err
    assert out.startswith("compute-bound (56% of the time)")
    assert "roof: MI300X bf16" in out and "next: raise the compute roof" in out
    assert "compute        55.6%  aten::mm x1, by shape" in out
    assert "communication  22.2%  ncclDevKernel_Generic_1 x1" in out


def test_json_holds_the_same_figures(capsys):
    code, out, _ = run(capsys, "diagnose", MI300X, "--json")
    d = json.loads(out)
    assert code == 0 and d["regime"] == "compute" and d["gpu"] == "AMD Radeon Graphics"
    assert d["shares"]["communication"] == pytest.approx(400 / 1800) and d["impossible"] == []
    assert d["top"]["compute"][0] == {
        "name": "aten::mm",
        "calls": 1,
        "seconds": pytest.approx(1e-3),
        "placed_by": "shape",
    }


def test_a_folder_is_diagnosed_per_rank_with_a_summary(capsys):
    code, out, _ = run(capsys, "diagnose", RANKS)
    assert code == 0 and out.startswith("3 ranks; slowest: rank 2") and "the slowest rank, 2:" in out
    code, out, _ = run(capsys, "diagnose", RANKS, "--json")
    assert json.loads(out)["waited_for"] == 2 and set(json.loads(out)["ranks"]) == {"0", "1", "2"}


def test_the_piles_are_drawn_over_time_and_per_rank(capsys, tmp_path):
    over_time, per_rank = tmp_path / "piles.svg", tmp_path / "ranks.svg"
    assert run(capsys, "diagnose", MI300X, "--plot", str(over_time))[0] == 0
    assert run(capsys, "diagnose", RANKS, "--plot", str(per_rank))[0] == 0
    assert "the piles through the trace" in over_time.read_text(encoding="utf-8")  # the title, as SVG text
    assert "rank 2 *" in per_rank.read_text(encoding="utf-8")  # the rank the others wait for, marked


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["diagnose", "no-such-trace.json"], "no such file or folder"),
        (["diagnose", MI300X, "--roof", "RTX 9999"], "--roof:"),
        (["diagnose", MI300X, "--roof", "fast:slow"], "give PEAK_FLOPS:BYTES_PER_S"),
        (["diagnose", MI300X, "--plot", "piles.pdf"], "must end in .png or .svg"),
        (["diagnose", str(TRACES / "hta" / "cupti_profiler_a100.json.gz")], "CUPTI range profiler"),
        (["diagnose", str(TRACES / "hta" / "cpu_only_rank34.json.gz")], "no GPU kernels in this trace"),
        (["diagnose", MI300X, "--link", "carrier pigeon"], "NVLink"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out and message in err


def test_a_folder_without_traces_and_a_broken_file_are_usage_errors(capsys, tmp_path):
    code, _, err = run(capsys, "diagnose", str(tmp_path))
    assert code == 2 and "holds no trace file" in err
    (tmp_path / "cut.json").write_text('{"traceEvents": [')
    code, _, err = run(capsys, "diagnose", str(tmp_path / "cut.json"))
    assert code == 2 and "not a Chrome-trace JSON" in err


def test_a_long_read_says_so_on_stderr(capsys, monkeypatch):
    monkeypatch.setattr(command, "PROGRESS_AFTER_SECONDS", 0.0)
    code, _, err = run(capsys, "diagnose", MI300X)
    assert code == 0 and f"roofline: read {MI300X} (2.762 kB) in " in err  # 2,762 bytes on disk
    gzipped = sorted((TRACES / "hta").glob("*.json.gz"))[0]
    code, _, err = run(capsys, "diagnose", str(gzipped))
    assert f"({data_size(gzipped.stat().st_size)} gzipped) in " in err  # the size on disk, said to be compressed
