"""``roofline energy``: a model's decode energy per batch in a terminal; its refusals exit 2 naming the flag."""

from __future__ import annotations

import json

import pytest

import roofline_lib as rl
from roofline_lib import cli

BASE = ("energy", "llama-3-8b", "--gpu", "H100", "--context", "2048")


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_table_gives_j_per_token_watts_dollars_and_carbon_per_batch(capsys):
    code, out, err = run(capsys, *BASE, "--batch", "1,8,64", "--grid", "400")
    assert code == 0 and not err
    rows = {line.split()[1]: line.split() for line in out.splitlines() if line.split()[0] == "fits"}
    assert rows.keys() == {"1", "8", "64"}  # every batch fits, and its row says so first
    assert rows["1"][2:6] == ["1.05", "J", "230", "W"]  # batch 1: about 1 J a token at 230 W
    assert rows["64"][3] == "mJ"
    assert "$4.916 per GPU-hour (Amazon EC2 Capacity Blocks" in out and "2024-Q4" in out
    assert "400 g CO2e per kWh (--grid)" in out


def test_json_is_the_librarys_numbers(capsys):
    code, out, _ = run(capsys, *BASE, "--batch", "1,64", "--price", "2", "--grid", "300", "--json")
    data = json.loads(out)
    server = rl.serving_server(rl.model_config("llama-3-8b"), "H100")
    e = rl.decode_energy(server, 64, 2048)
    row = data["rows"][1]
    assert code == 0 and row["batch"] == 64 and row["joules_per_token"] == pytest.approx(e.joules_per_token)
    tokens_per_s = 64 / e.seconds
    assert row["dollars_per_million_tokens"] == pytest.approx(rl.cost_per_million_tokens(tokens_per_s, 2))
    assert row["kg_co2e_per_million_tokens"] == pytest.approx(rl.emissions_kg(e.joules_per_token * 1e6, 300))
    assert data["price_source"] == "--price" and "idle_watts" in data["power"]


def test_a_cap_and_a_batch_that_does_not_fit(capsys):
    code, out, _ = run(capsys, *BASE, "--batch", "64,1024", "--cap", "250", "--json")
    rows = json.loads(out)["rows"]
    assert code == 0 and rows[0]["average_watts"] == pytest.approx(250)  # 279 W uncapped: the cap binds
    assert not rows[1]["feasible"] and rows[1]["fit"].startswith("DOES NOT FIT")
    code, out, _ = run(capsys, *BASE, "--batch", "64,1024,2048")
    lines = out.splitlines()
    # before any price, the smallest batch that does not fit and why; each such row starts with it
    assert lines[0].startswith("batch 1,024 (and 1 larger batch): DOES NOT FIT: Llama-3-8B with 1024 sequences")
    rows = [line.split() for line in lines[3:6]]
    assert [r[0] for r in rows] == ["fits", "DOES", "DOES"] and [r[3] for r in rows[1:]] == ["1024", "2048"]


def test_without_a_price_on_record_or_a_grid_it_says_what_to_give(capsys):
    code, out, _ = run(capsys, "energy", "llama-3-8b", "--gpu", "A100", "--context", "512", "--batch", "4")
    assert code == 0
    assert "no GPU-hour price on record for the A100 80GB SXM: give --price" in out
    assert "give --grid (g CO2e per kWh)" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (("--gpu", "Z9", "--context", "2048", "--batch", "1"), "--gpu: unknown GPU"),
        (("--gpu", "L4", "--context", "2048", "--batch", "1"), "--gpu: gpu 'L4' has no power and energy figures"),
        (
            ("--gpu", "H100", "--context", "2048", "--batch", "1,x"),
            "--batch: batch must be comma-separated whole numbers",
        ),
        (("--gpu", "H100", "--context", "2048", "--batch", "0"), "--batch: batch must be"),
        (
            ("--gpu", "H100", "--context", "0", "--batch", "1"),
            "--context: context_len must be a positive whole number of tokens",
        ),
        (("--gpu", "H100", "--context", "64", "--batch", "1", "--cap", "100"), "--cap: cap_watts=100 W is at or below"),
        (
            ("--gpu", "H100", "--context", "64", "--batch", "1", "--price", "-2"),
            "--price: dollars_per_hour must be a non-negative number of US dollars",
        ),
        (
            ("--gpu", "H100", "--context", "64", "--batch", "1", "--grid", "nan"),
            "--grid: grid_g_per_kwh must be a finite number of grams of CO2e per kWh",
        ),
    ],
)
def test_bad_input_exits_2_naming_the_flag_and_its_unit(capsys, argv, message):
    code, out, err = run(capsys, "energy", "llama-3-8b", *argv)
    assert code == 2 and not out and message in err, err
    assert len(err.strip().splitlines()) == 1  # one line, never a traceback


B200_FIGURES = ("--tdp", "1000", "--idle", "150", "--hbm-pj-per-bit", "4")  # 4 pJ/bit = 32e-12 J per byte


def test_a_gpu_the_energy_registry_lacks_is_priced_from_figures_on_the_command_line(capsys):
    argv = ("energy", "llama-3-8b", "--gpu", "B200", "--context", "2048", "--batch", "1,64", *B200_FIGURES)
    code, out, err = run(capsys, *argv)
    assert code == 0 and not err
    lines = out.splitlines()
    assert lines[0].startswith("Llama-3-8B on the B200, decode at 2,048 tokens")
    assert lines[1] == (
        "  power figures given on the command line: TDP 1 kW, idle 150 W, HBM 4 pJ/bit "
        "(joules per FLOP derived from the TDP)"
    )
    code, out, _ = run(capsys, *argv, "--json")
    data = json.loads(out)
    power = rl.power_figures("B200", tdp_watts=1000, idle_watts=150, joules_per_hbm_byte=4e-12 * 8)
    # B200: 8e12 B/s * 32e-12 J/B = 256 W for the bytes; (1000 - 150 - 256) W / 2.25e15 FLOP/s = 0.264 pJ/FLOP
    assert power.flop_joules("bf16") == pytest.approx(0.264e-12)
    e = rl.decode_energy(rl.serving_server(rl.model_config("llama-3-8b"), "B200"), 64, 2048, power=power)
    assert data["power_given"] and data["power"]["tdp_watts"] == "given by the caller"
    assert data["rows"][1]["joules_per_token"] == pytest.approx(e.joules_per_token)


def test_the_registrys_gpus_say_where_their_figures_come_from(capsys):
    code, out, _ = run(capsys, *BASE, "--batch", "1")
    assert code == 0 and "given on the command line" not in out
    code, out, _ = run(capsys, *BASE, "--batch", "1", "--json")
    assert not json.loads(out)["power_given"]


@pytest.mark.parametrize(
    "figures, message",
    [
        ((), "--gpu: gpu 'B200' has no power and energy figures in the registry: give its --tdp W, --idle W"),
        (("--tdp", "1000"), "--tdp given without --idle W and --hbm-pj-per-bit PJ"),
        (("--tdp", "1000", "--hbm-pj-per-bit", "4"), "--tdp and --hbm-pj-per-bit given without --idle W"),
        (
            ("--tdp", "-1", "--idle", "150", "--hbm-pj-per-bit", "4"),
            "--tdp: tdp_watts must be a positive number of watts",
        ),
        (
            ("--tdp", "1000", "--idle", "nan", "--hbm-pj-per-bit", "4"),
            "--idle: idle_watts must be a finite number of watts",
        ),
        (
            ("--tdp", "1000", "--idle", "150", "--hbm-pj-per-bit", "-4"),
            "--hbm-pj-per-bit: hbm_pj_per_bit must be a non-negative number of picojoules per bit",
        ),
        # 4000 pJ/bit (a J/bit figure typed in pJ): 8e12 B/s * 32e-9 J/B = 256 kW, far above the TDP
        (("--tdp", "1000", "--idle", "150", "--hbm-pj-per-bit", "4000"), "--tdp: tdp_watts=1000 W leaves no power"),
    ],
)
def test_bad_power_figures_exit_2_naming_the_flag_and_its_unit(capsys, figures, message):
    code, out, err = run(capsys, "energy", "llama-3-8b", "--gpu", "B200", "--context", "64", "--batch", "1", *figures)
    assert code == 2 and not out and message in err, err
    assert len(err.strip().splitlines()) == 1  # one line, never a traceback
