"""Tests for roofline_lib.evidence.records (the GPU record schema) and the CPU-testable parts of tools/gpu_check.py.

Every fixture record is written to tmp_path: no record with invented numbers lives in the
repository. The made-up H200 run used throughout (datasheet: 4.8 TB/s HBM, 989.5 TFLOP/s dense
bf16, 67 TFLOP/s fp32):

* copy of 2e9-byte buffers, 1 ms median, 0.9 ms best: 4e9 B / 1e-3 s = 4.0 TB/s median,
  4e9 / 0.9e-3 = 4.44 TB/s best;
* bf16 GEMM 8192^3 = 2 * 8192**3 = 1.0995e12 FLOP in 1.5 ms median (733 TFLOP/s), 1.4 ms best;
* a kernel moving 4.8e9 bytes in 1.2 ms (4.0 TB/s), predicted 4.8e9 / 4.44e12 = 1.08 ms.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from roofline_lib import hardware, record_report, records
from roofline_lib.core.roofline import ImplausibleMeasurement
from roofline_lib.evidence.records import GPURecord, NoRecord, RecordError

ROOT = Path(__file__).resolve().parents[1]
GEMM_8192_FLOP = 2 * 8192**3  # 1.0995e12


def _record(**changes) -> dict:
    """A plausible H200 record as JSON data; ``changes`` maps "section.key" to a new value."""
    data = {
        "schema_version": 1,
        "gpu": "h200",
        "provenance": {
            "device_name": "NVIDIA H200",
            "driver": "570.00",
            "cuda": "12.8",
            "torch": "2.13.0+cu128",
            "triton": "3.7.1",
            "date": "2026-03-02T10:00:00+00:00",
            "clocks": {"sm_mhz": 1980.0, "mem_mhz": 3201.0},
            "commit": "0123456789ab",
        },
        "copy": {"buffer_bytes": 2e9, "seconds": 1e-3, "best_seconds": 0.9e-3, "method": "test"},
        "gemm": [
            {
                "precision": "bf16",
                "m": 8192,
                "n": 8192,
                "k": 8192,
                "seconds": 1.5e-3,
                "best_seconds": 1.4e-3,
                "method": "test",
            },
        ],
        "kernels": [
            {
                "name": "bias_gelu",
                "shape": [16384, 8192],
                "dtype": "bf16",
                "flops": 1.2e9,
                "bytes_moved": 4.8e9,
                "seconds": 1.2e-3,
                "best_seconds": 1.15e-3,
                "predicted_seconds": 4.8e9 / (4e9 / 0.9e-3),  # on the best copy: 1.08 ms
                "memory_roof_bytes_per_s": 4e9 / 0.9e-3,
                "memory_roof_source": "measured copy bandwidth",
                "compute_precision": "fp32",
                "torch_seconds": 2.4e-3,
                "torch_bytes_moved": 9.6e9,
                "max_abs_error": 0.0078,
                "config": {"BLOCK": 1024, "num_warps": 4},
                "method": "test",
            }
        ],
        "notebooks": {
            "strict": ["notebooks/01_two_speed_limits.md"],
            "lax": [],
            "passed": 12,
            "failed": 0,
            "skipped": 0,
        },
    }
    for dotted, value in changes.items():
        where = data
        *path, last = dotted.split(".")
        for part in path:
            where = where[int(part)] if isinstance(where, list) else where[part]
        if value is _DELETE:
            del where[last]
        else:
            where[last] = value
    return data


_DELETE = object()


def _energy(joules: float = 1000.0, seconds: float = 1.5) -> list[dict]:
    """Energy runs of an H200: 1,000 bf16 GEMMs of 8192^3 and 2,000 copies of 1 GiB, on NVML's counter."""
    return [
        {
            "name": "bf16 GEMM",
            "precision": "bf16",
            "shape": [8192, 8192, 8192],
            "repetitions": 1000,
            "flops": 1000 * GEMM_8192_FLOP,  # 1.0995e15 FLOP: 733 TFLOP/s in 1.5 s
            "bytes_moved": 1000 * 3 * 8192**2 * 2,  # read A, read B, write C in bf16: 4.027e11 B
            "seconds": seconds,
            "joules": joules,
            "counter": "NVML total energy of 1 GPU(s)",
            "method": "test",
        },
        {
            "name": "copy",
            "precision": "fp32",
            "shape": [2**28],
            "repetitions": 2000,
            "flops": 0.0,
            "bytes_moved": 2000 * 2 * 2**30,  # read + write 1 GiB: 4.295e12 B, 4.29 TB/s in 1 s
            "seconds": 1.0,
            "joules": 450.0,
            "counter": "NVML total energy of 1 GPU(s)",
            "method": "test",
        },
    ]


def _write(directory: Path, data: dict, name: str | None = None) -> Path:
    path = directory / (name or f"{data['gpu']}.json")
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- a good record


def test_a_plausible_record_validates_and_keeps_its_numbers():
    rec = records.validate_record(_record())
    assert isinstance(rec, GPURecord)
    assert rec.spec.name == "H200 SXM"
    assert rec.copy.bytes_per_s == pytest.approx(4.0e12)  # 2 * 2e9 bytes / 1e-3 s
    assert rec.copy.best_bytes_per_s == pytest.approx(4.444e12, rel=1e-3)  # 4e9 / 0.9e-3
    gemm = rec.best_gemm("bf16")
    assert gemm.flops == GEMM_8192_FLOP
    assert gemm.flops_per_s == pytest.approx(733.0e12, rel=1e-3)  # 1.0995e12 / 1.5e-3
    k = rec.kernel("bias_gelu")
    assert k.intensity == pytest.approx(0.25)  # 1.2e9 FLOP / 4.8e9 bytes
    assert k.prediction_error == pytest.approx(0.111, rel=1e-2)  # (1.2 - 1.08) / 1.08
    assert k.speedup_over_torch == pytest.approx(2.0)  # 2.4 ms / 1.2 ms


def test_the_label_names_every_provenance_field():
    label = records.validate_record(_record()).label
    for part in (
        "NVIDIA H200",
        "H200 SXM",
        "2026-03-02",
        "driver 570.00",
        "CUDA 12.8",
        "torch 2.13.0+cu128",
        "triton 3.7.1",
    ):
        assert part in label


def test_write_then_list_then_latest_round_trip(tmp_path):
    rec = records.validate_record(_record())
    path = records.write_record(rec, tmp_path)
    assert path == tmp_path / "h200.json"
    again = records.load_record(path)
    assert again == rec
    assert records.list_records(tmp_path) == (rec,)
    assert records.latest_record(tmp_path, "H200") == rec
    stored = json.loads(path.read_text())
    assert stored["copy"]["bytes_per_s"] == pytest.approx(4.0e12)  # derived rates are stored for readers


def test_latest_record_is_the_newest_and_can_be_asked_per_gpu(tmp_path):
    _write(tmp_path, _record())  # H200, 2026-03-02
    older_h100 = _record(
        **{
            "gpu": "h100-sxm",
            "provenance.device_name": "NVIDIA H100 80GB HBM3",
            "provenance.date": "2026-01-15T08:00:00+00:00",
            # the H200's 4.44 TB/s would be refused on an H100 (3.35 TB/s): 4e9 / 1.4e-3 = 2.86
            "copy.seconds": 1.5e-3,
            "copy.best_seconds": 1.4e-3,
            "kernels": [],
        }
    )
    _write(tmp_path, older_h100)
    assert [r.gpu for r in records.list_records(tmp_path)] == ["h100-sxm", "h200"]  # oldest first
    assert records.latest_record(tmp_path).gpu == "h200"
    assert records.latest_record(tmp_path, "H100").gpu == "h100-sxm"
    with pytest.raises(NoRecord, match="no measurement record for B200"):
        records.latest_record(tmp_path, "B200")


def test_no_record_yet_says_how_to_make_one(tmp_path):
    assert records.list_records(tmp_path) == ()
    assert records.list_records(tmp_path / "absent") == ()
    with pytest.raises(NoRecord, match="make gpu-check"):
        records.latest_record(tmp_path)


def test_the_recorded_roofs_become_measured_ceilings():
    ceilings = records.validate_record(_record()).ceilings()
    assert ceilings.bytes_per_s == pytest.approx(4.444e12, rel=1e-3)  # the best copy
    assert ceilings.flops_per_s == pytest.approx(GEMM_8192_FLOP / 1.4e-3)  # the best bf16 GEMM: 785 TFLOP/s
    assert ceilings.ridge == pytest.approx(176.7, rel=1e-3)  # 785.4e12 / 4.444e12
    assert ceilings.device == "cuda"


# --------------------------------------------------------------------------- refusals


def test_a_copy_faster_than_hbm_is_refused():
    # 4e9 bytes in 0.4 ms = 10 TB/s, 2.08x the H200's 4.8 TB/s: an L2-resident buffer, not HBM
    with pytest.raises(ImplausibleMeasurement, match="HBM bandwidth roof"):
        records.validate_record(_record(**{"copy.best_seconds": 0.4e-3, "copy.seconds": 0.5e-3}))


def test_a_gemm_beating_the_dense_peak_is_refused():
    # 1.0995e12 FLOP in 1.0 ms = 1100 TFLOP/s > 989.5 * 1.05 = 1039: a sparse peak or an fp8 run
    with pytest.raises(ImplausibleMeasurement, match="dense bf16 compute peak"):
        records.validate_record(_record(**{"gemm.0.best_seconds": 1.0e-3}))


def test_the_same_time_is_fine_in_fp8():
    # 1100 TFLOP/s is 56 % of the H200's 1979 dense fp8 TFLOP/s
    rec = records.validate_record(_record(**{"gemm.0.best_seconds": 1.0e-3, "gemm.0.precision": "fp8"}))
    assert rec.gemm[0].best_flops_per_s == pytest.approx(1.0995e15, rel=1e-3)


def test_a_kernel_beating_hbm_is_refused():
    # 4.8e9 bytes in 0.8 ms = 6 TB/s > 4.8 * 1.05 = 5.04 TB/s
    with pytest.raises(ImplausibleMeasurement, match="bias_gelu"):
        records.validate_record(_record(**{"kernels.0.best_seconds": 0.8e-3}))


def test_an_unfused_torch_time_beating_hbm_is_refused():
    # 9.6e9 bytes in 1.5 ms = 6.4 TB/s: the pass-by-pass count or the time is wrong
    with pytest.raises(ImplausibleMeasurement, match="unfused torch"):
        records.validate_record(_record(**{"kernels.0.torch_seconds": 1.5e-3}))


def test_a_prediction_faster_than_its_own_roof_is_refused():
    # 4.8e9 bytes at 4.44 TB/s cannot take less than 1.08 ms
    with pytest.raises(RecordError, match="cannot beat its own roof"):
        records.validate_record(_record(**{"kernels.0.predicted_seconds": 0.5e-3}))


@pytest.mark.parametrize("missing", records.REQUIRED_PROVENANCE)
def test_each_required_provenance_field_is_required(missing):
    with pytest.raises(RecordError, match=f"provenance.{missing}"):
        records.validate_record(_record(**{f"provenance.{missing}": _DELETE}))


def test_a_record_missing_the_driver_or_date_is_refused(tmp_path):
    _write(tmp_path, _record(**{"provenance.driver": ""}))
    with pytest.raises(RecordError, match="h200.json: provenance.driver must be a non-empty string"):
        records.list_records(tmp_path)
    with pytest.raises(RecordError, match="ISO 8601"):
        records.validate_record(_record(**{"provenance.date": "last Tuesday"}))


def test_a_record_without_provenance_is_refused():
    with pytest.raises(RecordError, match="no provenance"):
        records.validate_record(_record(provenance=_DELETE))


def test_a_record_for_an_unknown_gpu_is_refused():
    with pytest.raises(RecordError, match="registry key"):
        records.validate_record(_record(gpu="rtx-4090", **{"provenance.device_name": "NVIDIA GeForce RTX 4090"}))


def test_a_record_whose_device_is_another_registry_gpu_is_refused():
    # checking an A100's numbers against the H200's roofs would let a wrong run through
    with pytest.raises(RecordError, match="is 'a100-80gb-sxm' in the registry"):
        records.validate_record(_record(**{"provenance.device_name": "NVIDIA A100-SXM4-80GB"}))


def test_a_record_may_hold_energy_runs_and_one_without_them_stays_valid():
    old = records.validate_record(_record())  # made before gpu-check measured energy: no energy fields at all
    assert old.energy == () and old.energy_note == ""
    rec = records.validate_record(_record(energy=_energy()))
    gemm, copy = rec.energy
    assert gemm.average_watts == pytest.approx(666.67, rel=1e-4)  # 1000 J / 1.5 s
    assert copy.average_watts == 450.0 and copy.bytes_moved == 4000 * 2**30
    assert rec.to_dict()["energy"][0]["average_watts"] == pytest.approx(1000 / 1.5)  # written for human readers
    assert records.validate_record(rec.to_dict()) == rec  # and read back to the same record
    none = records.validate_record(_record(energy=[], energy_note="no NVML device: NVML Shared Library Not Found"))
    assert none.energy == () and none.energy_note.startswith("no NVML device")


def test_energy_runs_are_held_to_the_roofs_and_their_watts_to_their_joules():
    fast = _energy(seconds=0.5)  # 1.0995e15 FLOP in 0.5 s = 2.2 PFLOP/s, over twice the 989.5 TFLOP/s peak
    with pytest.raises(ImplausibleMeasurement, match="energy run of bf16 GEMM"):
        records.validate_record(_record(energy=fast))
    data = records.validate_record(_record(energy=_energy())).to_dict()
    data["energy"][0]["average_watts"] = 600.0  # the joules and seconds say 666.7
    with pytest.raises(RecordError, match="energy.*average_watts.*edited by hand"):
        records.validate_record(data)
    with pytest.raises(RecordError, match=r"energy\[0\].joules must be a positive number of joules"):
        records.validate_record(_record(energy=_energy(joules=-1.0)))


def test_describe_energy_sets_each_run_against_the_model_with_its_provenance():
    text = record_report.describe_energy(records.validate_record(_record(energy=_energy())))
    first, gemm, copy = text.splitlines()
    assert first.startswith("Recorded on NVIDIA H200") and "driver 570.00" in first and "2026-03-02" in first
    # the model on the H200: 1.0995e15 * 0.43037 pJ + 4.027e11 * 31.76 pJ + 121.7 W * 1.5 s = 473.2 + 12.8 + 182.6 = 668.5 J
    assert gemm.startswith("bf16 GEMM 8192x8192x8192, 1,000 times, NVML total energy of 1 GPU(s): measured 1 kJ")
    assert "the model 669 J (446 W), 1.50 times" in gemm
    # the copy: 4.295e12 B * 31.76 pJ + 121.7 W * 1 s = 136.4 + 121.7 = 258 J
    assert "the model 258 J (258 W), 1.74 times" in copy and "IMPLAUSIBLE" not in text
    (_, judged), _ = record_report.energy_judgements(records.validate_record(_record(energy=_energy())))
    assert judged.model.joules == pytest.approx(473.2 + 12.79 + 182.55, rel=1e-3)


def test_describe_energy_flags_an_implausible_run_and_says_why_there_is_none():
    hot = records.validate_record(_record(energy=_energy(joules=1500.0)))  # 1500 J / 1.5 s = 1 kW, over the 700 W TDP
    assert "IMPLAUSIBLE: 1 kW on average is above the H200 SXM's TDP of 700 W" in record_report.describe_energy(hot)
    cold = records.validate_record(_record(energy=_energy(joules=300.0)))  # under the 486 J of FLOPs and bytes alone
    assert "IMPLAUSIBLE: 300 J is below the model's 486 J" in record_report.describe_energy(cold)
    none = records.validate_record(_record(energy_note="no NVML device: NVML Shared Library Not Found"))
    assert record_report.describe_energy(none).splitlines()[1] == (
        "no energy measured in this run: no NVML device: NVML Shared Library Not Found"
    )
    assert "made before gpu-check measured energy" in record_report.describe_energy(records.validate_record(_record()))
    with pytest.raises(TypeError, match="GPURecord"):
        record_report.describe_energy({"gpu": "h200"})


def test_a_hand_edited_rate_is_refused():
    data = records.validate_record(_record()).to_dict()
    data["copy"]["bytes_per_s"] = 4.5e12  # the counts and times say 4.0e12
    with pytest.raises(RecordError, match="edited by hand"):
        records.validate_record(data)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"schema_version": 2}, "schema_version must be 1"),
        ({"extra": 1}, "unknown field"),
        ({"gemm": []}, "gemm must be a non-empty list"),
        ({"copy.seconds": 0}, "copy.seconds must be a positive number of seconds"),
        ({"copy.best_seconds": 2e-3}, "exceeds the median"),
        ({"gemm.0.precision": "fp6"}, "precision must be one of"),
        ({"gemm.0.m": 8192.5}, "whole number"),
        ({"kernels.0.shape": []}, "shape must be a non-empty list"),
        ({"notebooks.skipped": -1}, "skipped must be a whole number >= 0"),
        ({"provenance.clocks": {"sm_mhz": -5}}, "clocks.sm_mhz"),
    ],
)
def test_malformed_records_say_what_is_wrong(changes, message):
    data = _record()
    for key, value in changes.items():
        data = _record(**{key: value}) if "." in key else {**data, key: value}
    with pytest.raises(RecordError, match=message):
        records.validate_record(data)


def test_write_record_refuses_what_it_could_not_read_back(tmp_path):
    rec = records.validate_record(_record())
    bad = GPURecord(
        gpu="h200",
        provenance=rec.provenance,
        copy=records.CopyMeasurement(2e9, 1e-4, 1e-4, "x"),
        gemm=rec.gemm,
        kernels=rec.kernels,
    )  # 40 TB/s
    with pytest.raises(ImplausibleMeasurement):
        records.write_record(bad, tmp_path)
    assert not (tmp_path / "h200.json").exists()


# --------------------------------------------------------------------------- naming the GPU


def test_records_reads_device_names_with_the_hardware_rule():
    assert records.match_gpu is hardware.match_gpu  # one rule, in hardware (tests in test_hardware.py)


# --------------------------------------------------------------------------- chapters


def test_targets_report_met_and_missed():
    targets = {t.name: t for t in record_report.check_targets(records.validate_record(_record()))}
    # every target compares best with best (the fastest repetition on both sides)
    assert targets["copy bandwidth"].value == pytest.approx(0.9259, rel=1e-3)  # 4e9 B / 0.9 ms = 4.44 / 4.8 TB/s
    assert targets["copy bandwidth"].met  # at least 90 %
    assert targets["bf16 GEMM"].value == pytest.approx(0.7937, rel=1e-3)  # 2 * 8192**3 / 1.4 ms = 785.4 / 989.5
    assert not targets["bf16 GEMM"].met  # below 80 %
    assert targets["bias_gelu bandwidth"].value == pytest.approx(0.9391, rel=1e-3)  # 4.8e9 / 1.15 ms = 4.17 / 4.44
    assert targets["bias_gelu bandwidth"].met
    assert targets["bias_gelu prediction"].value == pytest.approx(0.0648, rel=1e-2)  # 1.15 vs 1.08 ms
    assert targets["bias_gelu prediction"].met  # within 15 %


def test_side_by_side_puts_live_numbers_beside_the_record():
    rec = records.validate_record(_record())
    live = records.KernelMeasurement.from_dict(_record(**{"kernels.0.seconds": 1.3e-3})["kernels"][0])
    (row,) = record_report.side_by_side(rec, [live])
    assert row["recorded_seconds"] == 1.2e-3
    assert row["live_seconds"] == 1.3e-3
    assert row["live_bytes_per_s"] == pytest.approx(3.692e12, rel=1e-3)  # 4.8e9 / 1.3e-3
    (row,) = record_report.side_by_side(rec)
    assert row["live_seconds"] is None  # no GPU here: an empty cell
    with pytest.raises(TypeError, match="KernelMeasurement"):
        record_report.side_by_side(rec, [{"name": "bias_gelu"}])


def test_live_gpu_falls_back_to_the_record_unless_a_gpu_run_requires_one(monkeypatch):
    from roofline_lib import measure

    monkeypatch.setattr(measure, "has_cuda", lambda: False)
    monkeypatch.delenv(record_report.REQUIRE_GPU_ENV, raising=False)
    assert record_report.live_gpu() is False
    monkeypatch.setenv(record_report.REQUIRE_GPU_ENV, "1")
    with pytest.raises(RuntimeError, match="would have been skipped"):
        record_report.live_gpu()
    monkeypatch.setattr(measure, "has_cuda", lambda: True)
    assert record_report.live_gpu() is True


#: Where the course keeps its records; the library is told, it does not know.
MEASUREMENTS = ROOT / "book" / "data" / "measurements"


def test_every_committed_record_is_valid_and_nothing_else_is_json():
    assert (MEASUREMENTS / "README.md").exists()
    for path in MEASUREMENTS.iterdir():
        assert path.suffix in (".json", ".md"), f"unexpected file {path.name} in {MEASUREMENTS}"
    for rec in records.list_records(MEASUREMENTS):  # raises on any malformed or implausible file
        assert records.record_path(rec.gpu, MEASUREMENTS).exists(), f"{rec.gpu}'s record must be named {rec.gpu}.json"


def test_the_library_does_not_know_the_books_folders():
    for path in (ROOT / "roofline_lib").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "MEASUREMENTS_DIR" not in text and '"measurements"' not in text, path.name
    with pytest.raises(TypeError, match="directory"):
        records.list_records(None)


_TIMES_GPU_KERNELS = re.compile(r"roofline_lib\.kernels|from roofline_lib import [^\n]*\bkernels\b|run_demo\(")


def test_chapters_that_time_gpu_kernels_show_the_record():
    # A chapter that times the Triton demos must show the recorded run (with its provenance label)
    # so that a reader without a GPU still sees real numbers, and must ask live_gpu() before it
    # times anything live.
    for path in sorted((ROOT / "notebooks").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        if _TIMES_GPU_KERNELS.search(text):
            assert "latest_record" in text or "list_records" in text, (
                f"{path.name} times kernels but never shows the record"
            )
            assert ".label" in text, f"{path.name} shows recorded numbers without their provenance label"
            assert "live_gpu()" in text, f"{path.name} must ask record_report.live_gpu() before timing live"


# --------------------------------------------------------------------------- tools/gpu_check.py on a CPU (fixture: conftest.py)


def test_gpu_check_refuses_a_machine_without_cuda():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the refusal cannot be shown here")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gpu_check.py"), "--out", "/nonexistent"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "gpu-check cannot run here" in done.stderr
    assert "CPU build" in done.stderr or "no CUDA GPU" in done.stderr


def test_gpu_check_refuses_the_triton_interpreter(gpu_check, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert "TRITON_INTERPRET" in gpu_check.no_gpu_reason()
    assert gpu_check.main(["--out", "/nonexistent"]) == 2


def test_gpu_check_counts_junit_reports(gpu_check, tmp_path):
    report = tmp_path / "r.xml"
    report.write_text('<testsuites><testsuite tests="10" failures="1" errors="1" skipped="2"/></testsuites>')
    assert gpu_check.junit_counts(report) == {"passed": 6, "failed": 2, "skipped": 2}  # 10 - 2 - 2


def test_gpu_check_is_strict_only_where_a_reference_record_exists(gpu_check, tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01_a.md").write_text("x")
    (tmp_path / "notebooks" / "02_b.md").write_text("x")
    (tmp_path / "tests" / "records" / "notebooks").mkdir(parents=True)
    (tmp_path / "tests" / "records" / "notebooks" / "01_a.ipynb").write_text("{}")
    strict, lax = gpu_check.split_notebooks(tmp_path)
    assert strict == ["notebooks/01_a.md"]
    assert lax == ["notebooks/02_b.md"]


def test_gpu_check_summary_lists_every_part_and_the_targets(gpu_check):
    text = gpu_check.summary(records.validate_record(_record()))
    assert "Recorded on NVIDIA H200" in text
    assert "copy" in text and "gemm" in text and "bias_gelu" in text
    assert "[met ] copy bandwidth" in text and "[MISS] bf16 GEMM" in text and "[met ] bias_gelu bandwidth" in text


def test_describe_record_leads_with_provenance_and_judges_every_rate():
    text = record_report.describe_record(records.validate_record(_record()))
    first, *rest = text.splitlines()
    assert first.startswith("Recorded on NVIDIA H200") and "driver 570.00" in first and "2026-03-02" in first
    # best copy: 2 * 2e9 bytes (read + write) / 0.9e-3 s = 4.44e12 B/s, 93 % of 4.8 TB/s
    assert any(line.startswith("copy: 4.44 TB/s best, 93% of the datasheet 4.8 TB/s") for line in rest)
    # best GEMM: 2 * 8192^3 / 1.4e-3 s = 785.4 TFLOP/s, 79 % of 989.5
    assert any(line.startswith("bf16 GEMM 8192x8192x8192: 785.4 TFLOP/s, 79% of the dense 989.5") for line in rest)
    assert any(
        line.startswith("kernel bias_gelu bf16 16384x8192: 1200 us measured, 1080 us predicted") for line in rest
    )
    with pytest.raises(TypeError, match="GPURecord"):
        record_report.describe_record({"gpu": "h200"})


def _chapter_gpu_cell() -> str:
    """The profiling chapter's cell that shows a live GPU run, the record, or an explanation."""
    import jupytext

    nb = jupytext.read(ROOT / "notebooks" / "06_profiling.md")
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and "def recorded_gpu_run" in c.source]
    return cell.source


def test_the_profiling_chapter_shows_the_record_when_there_is_no_gpu(tmp_path, monkeypatch, capsys):
    import roofline_lib as rl
    from roofline_lib import measure

    monkeypatch.setattr(measure, "has_cuda", lambda: False)
    monkeypatch.delenv(record_report.REQUIRE_GPU_ENV, raising=False)
    # the chapter runs from notebooks/ and names ../book/data/measurements; run it from a copy of that layout
    (tmp_path / "notebooks").mkdir()
    folder = tmp_path / "book" / "data" / "measurements"
    folder.mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "notebooks")
    cell = _chapter_gpu_cell()
    names = {"records": records, "record_report": record_report, "rl": rl, "os": os}

    exec(cell, dict(names))  # an empty folder: the explanation, never an error
    assert "no recorded GPU run yet" in capsys.readouterr().out

    (folder / "h200.json").write_text(json.dumps(_record()))
    exec(cell, dict(names))
    out = capsys.readouterr().out
    assert out.startswith("Recorded on NVIDIA H200")  # provenance first
    assert "bf16 GEMM 8192x8192x8192: 785.4 TFLOP/s" in out  # the recorded numbers themselves


def _energy_chapter_cell() -> str:
    """Chapter 11's cell that shows the newest recorded energy run against the model, or why there is none."""
    import jupytext

    nb = jupytext.read(ROOT / "notebooks" / "11_energy.md")
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and "def recorded_energy" in c.source]
    return cell.source


def test_the_energy_chapter_shows_a_recorded_energy_run_or_says_there_is_none(tmp_path, monkeypatch, capsys):
    # the chapter runs from notebooks/ and names ../book/data/measurements; run it from a copy of that layout
    (tmp_path / "notebooks").mkdir()
    folder = tmp_path / "book" / "data" / "measurements"
    folder.mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "notebooks")
    cell = _energy_chapter_cell()
    names = {"records": records, "record_report": record_report, "os": os}

    (folder / "h200.json").write_text(json.dumps(_record()))  # a record from before energy was measured
    exec(cell, scope := dict(names))  # no energy anywhere: the explanation, never an error
    assert scope["recorded"] == [
        "no recorded GPU run holds an energy measurement yet (book/data/measurements/ has none); "
        "make gpu-check on a CUDA machine with NVML makes one"
    ]
    capsys.readouterr()

    (folder / "h200.json").write_text(json.dumps(_record(energy=_energy())))
    exec(cell, scope := dict(names))
    out = capsys.readouterr().out
    assert out.startswith("Recorded on NVIDIA H200") and "driver 570.00" in out  # provenance first
    assert "bf16 GEMM 8192x8192x8192, 1,000 times" in out and "the model 669 J (446 W), 1.50 times" in out
    assert scope["recorded"][0].startswith("Recorded on NVIDIA H200")

    (folder / "h200.json").write_text(json.dumps(_record(energy=_energy(joules=1500.0))))  # 1 kW: over the TDP
    exec(cell, dict(names))
    assert "IMPLAUSIBLE: 1 kW on average is above the H200 SXM's TDP of 700 W" in capsys.readouterr().out
