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


def test_the_best_point_prints_joules_and_dollars_per_token_with_the_price_source(capsys):
    import roofline_lib as rl

    code, out, _ = run(capsys, "serve", "llama-3-8b", "--gpu", "H100", *SLO, "--policy", "continuous")
    (row,) = [line for line in out.splitlines() if line.startswith("  continuous")]
    joules, joules_unit, dollars = row.split()[7:10]
    assert code == 0 and joules_unit in ("mJ", "J") and float(dollars) > 0
    assert "$4.916 per GPU-hour (Amazon EC2 Capacity Blocks" in out and "2024-Q4" in out
    code, out, _ = run(capsys, "serve", "llama-3-8b", "--gpu", "H100", *SLO, "--policy", "continuous", "--json")
    data = json.loads(out)
    got = data["best"]["continuous"]
    server = rl.serving_server(rl.model_config("llama-3-8b"), "H100")
    energy = rl.request_energy(server, got["batch"], 1024, 256)
    assert got["joules_per_output_token"] == pytest.approx(energy.joules_per_token)
    # one GPU's output tokens per second at $4.916 per GPU-hour
    assert got["dollars_per_million_tokens"] == pytest.approx(4.916 / (got["tokens_per_s_per_gpu"] * 3600) * 1e6)
    assert data["price"]["date"] == "2024-Q4" and "Capacity Blocks" in data["price"]["source"]


def test_a_gpu_without_a_price_or_power_figures_says_why_the_columns_are_empty(capsys):
    code, out, _ = run(
        capsys, "serve", "llama-3-8b", "--gpu", "L4", "--ttft", "500", "--tpot", "100", "--policy", "continuous"
    )
    assert code == 0
    assert "$/M tokens: no GPU-hour price on record for the L4: give --price" in out
    assert "J/token: gpu 'L4' has no power and energy figures" in out
    code, _, err = run(capsys, "serve", "llama-3-8b", "--gpu", "H100", *SLO, "--price", "-1")
    assert code == 2 and "--price: dollars_per_hour must be a non-negative number of US dollars per GPU-hour" in err
