"""``roofline serve``: the serving model in a terminal, the fit first; its refusals exit 2."""

from __future__ import annotations

import json

import pytest

from roofline_lib import cli

SLO = ("--ttft", "500", "--tpot", "30")


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_model_that_fits_prints_ttft_tpot_and_throughput_at_the_slo(capsys, tmp_path):
    code, out, err = run(capsys, "serve", "llama-3-8b", "--gpu", "H100", *SLO, "--policy", "continuous",
                         "--plot", str(tmp_path / "frontier.png"))  # fmt: skip
    lines = out.splitlines()
    assert code == 0 and not err and lines[0].startswith("fits: ")
    (row,) = [line for line in lines if line.startswith("  continuous")]
    batch, ttft, ttft_unit, tpot, tpot_unit, tps = row.split()[1:7]
    assert int(batch) >= 1 and tpot_unit == "ms" and float(tpot) <= 30 and ttft_unit in ("ms", "s")
    assert "every batch 1 to" in out  # the grid searched, said
    assert (tmp_path / "frontier.png").read_bytes()[:4] == b"\x89PNG"


def test_json_is_the_library_s_best_point(capsys):
    import roofline_lib as rl

    code, out, _ = run(capsys, "serve", "llama-3-8b", "--gpu", "H100", *SLO, "--policy", "continuous", "--json")
    data = json.loads(out)
    server = rl.serving_server(rl.model_config("llama-3-8b"), "H100")
    best = rl.best_steady_state(rl.steady_frontier(server, "continuous", 1024, 256), 0.5, 0.03)
    got = data["best"]["continuous"]
    assert code == 0 and data["feasible"] and got["batch"] == best.batch
    assert got["tokens_per_s_per_gpu"] == pytest.approx(best.tokens_per_s, rel=1e-12)
    assert data["batches_searched"] == rl.kv_capacity(server, 1024, 256).max_requests


def test_a_model_that_does_not_fit_says_so_first(capsys):
    code, out, _ = run(capsys, "serve", "llama-2-70b", "--gpu", "H100", *SLO)
    assert code == 0
    assert out.startswith("DOES NOT FIT: Llama-2-70B with one request of 1,280 tokens needs 128.9 GiB")
    assert "no batch can run" in out


@pytest.mark.parametrize(
    "argv, flag",
    [
        (("--gpu", "Z9", *SLO), "--gpu: unknown GPU"),
        (("--gpu", "H100", "--ttft", "0", "--tpot", "30"), "--ttft: ttft_s must be a positive"),
        (("--gpu", "H100", "--ttft", "500", "--tpot", "nan"), "--tpot"),
        (("--gpu", "H100", *SLO, "--prompt-len", "0"), "--prompt-len: prompt_len must be"),
        (("--gpu", "H100", *SLO, "--policy", "fifo"), "--policy: policy must be all or one of"),
        (("--gpu", "H100", *SLO, "--bytes-per-param", "-2"), "--bytes-per-param"),
        (("--gpu", "H100", *SLO, "--plot", "f.jpg"), "--plot f.jpg: the file must end in"),
    ],
)
def test_bad_input_exits_2_naming_the_flag(capsys, argv, flag):
    code, _, err = run(capsys, "serve", "llama-3-8b", *argv)
    assert code == 2 and flag in err, err


def test_an_unknown_model_is_a_usage_error(capsys):
    code, _, err = run(capsys, "serve", "no-such-model", "--gpu", "H100", *SLO)
    assert code == 2 and "no-such-model" in err
