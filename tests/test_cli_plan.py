"""``roofline plan``: the training planner in a terminal, the fit first; its refusals exit 2."""

from __future__ import annotations

import json

import pytest

from roofline_lib import cli

BASE = ("plan", "llama-3-70b", "--global-batch", "8", "--seq-len", "4096")


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_70b_model_on_one_node_does_not_fit_and_says_what_would(capsys, tmp_path):
    code, out, err = run(capsys, *BASE, "--gpus", "8", "--plot", str(tmp_path / "memory.svg"))
    assert code == 0 and not err
    first, *rest = out.splitlines()
    assert first.startswith("DOES NOT FIT: no layout of Llama-3-70B fits on 8 GPUs")
    # ZeRO-3 over dp 8 with tp 2: 16 bytes x 70.6e9 / 16 GPUs = 65.7 GiB of state, plus activations
    assert "the fewest GPUs of this node on which one fits: 16" in first
    assert any(line.startswith("what would fit: 16 GPUs in 2 x 8x H100") for line in rest)
    rows = [line for line in rest if line.startswith("  DOES NOT FIT") or line.startswith("  fits")]
    assert rows[0].startswith("  DOES NOT FIT") and rows[-1].startswith("  fits")  # the would-fit row comes last
    assert (tmp_path / "memory.svg").read_text().startswith("<?xml")


def test_json_has_the_fit_first_and_the_layout_that_would_fit(capsys):
    code, out, _ = run(capsys, *BASE, "--gpus", "8", "--json")
    data = json.loads(out)
    assert code == 0 and list(data)[:4] == ["model", "cluster", "search", "feasible"]
    assert data["feasible"] is False and data["fewest_gpus"] == 16 and data["layouts_that_fit"] == 0
    assert all(not p["feasible"] for p in data["plans"]) and data["would_fit"]["feasible"]
    assert data["would_fit"]["memory_per_gpu_bytes"]["total"] <= 80 * 2**30


def test_a_layout_that_fits_lists_the_fastest_first(capsys):
    code, out, _ = run(
        capsys, "plan", "llama-3-8b", "--gpus", "8", "--global-batch", "8", "--seq-len", "4096", "--top", "3"
    )
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("fits: ") and "layouts on 8 GPUs" in lines[0]
    rows = [line for line in lines if line.startswith("  fits")]
    assert len(rows) == 3 and "the MFU bound assumes" in out


def test_one_layout_priced_says_its_assumption(capsys):
    code, out, _ = run(capsys, *BASE[:2], "--gpus", "64", "--global-batch", "64", "--seq-len", "4096",
                       "--tp", "8", "--pp", "4", "--zero", "1")  # fmt: skip
    assert code == 0 and out.startswith("fits: ")
    assert "dp=2 tp=8 pp=4 zero=1 selective" in out and "compute + tp" in out
    assert "assumes tp on the critical path" in out


def test_a_hub_config_file_is_read(capsys, tmp_path):
    config = {"model_type": "llama", "hidden_size": 512, "intermediate_size": 1024, "num_hidden_layers": 4,
              "num_attention_heads": 8, "vocab_size": 1000, "max_position_embeddings": 2048}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, out, _ = run(capsys, "plan", str(path), "--gpus", "8", "--global-batch", "8", "--seq-len", "4096")
    assert code == 0 and "a context of 4,096 tokens is beyond" in out.splitlines()[0]  # beyond its 2,048 positions


@pytest.mark.parametrize(
    "argv, flag",
    [
        (("--gpus", "12"), "--gpus: n_gpus must fill whole nodes"),
        (("--gpus", "8", "--global-batch", "0"), "--global-batch: global_batch must be"),
        (("--gpus", "8", "--tp", "3"), "--dp/--tp/--pp/--cp: dp x tp x pp x cp must equal"),
        (("--gpus", "8", "--zero", "5"), "--zero"),
        (("--gpus", "8", "--overlap", "tp,zz"), "--overlap: overlap must name parallel dimensions"),
        (("--gpus", "8", "--node", "9x-nothing"), "--node"),
        (("--gpus", "8", "--top", "0"), "--top"),
        (("--gpus", "8", "--plot", "memory.txt"), "--plot memory.txt: the file must end in"),
    ],
)
def test_bad_input_exits_2_naming_the_flag(capsys, argv, flag):
    args = list(BASE) + list(argv)
    if "--global-batch" in argv:  # the override comes after the base's
        i = args.index("--global-batch")
        del args[i : i + 2]
    code, _, err = run(capsys, *args)
    assert code == 2 and flag in err, err


def test_a_missing_required_option_is_a_usage_error(capsys):
    code, _, err = run(capsys, "plan", "llama-3-70b", "--gpus", "8")
    assert code == 2 and "--global-batch" in err
