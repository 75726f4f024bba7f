"""The GPU path without a GPU: the chapters on a simulated H200 (tests/fakegpu).

The fast tests here check the fake itself and the library's device rules under it. The
notebook run, every chapter under nbval with the fake in each kernel, takes about a minute and
runs under `make fake-gpu` (test_fake_gpu_chapters.py). The exercises and solutions have no
GPU path to run: a fast test here checks that they import nothing that could take one.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jupytext
import pytest
import torch

from roofline_lib import diagnose, measure, measured_roofs, record_report
from roofline_lib.core.hardware import gpu
from roofline_lib.core.roofline import check_plausible

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "tests" / "fakegpu"
sys.path.insert(0, str(FAKE))
import fake_cuda  # noqa: E402 - found through the sys.path entry above
from test_fake_gpu_chapters import (  # noqa: E402 - the helpers the chapter run and these tests share
    _GPU_WORDS,
    GPU_FREE_IMPORTS,
    _fake_env,
    _imports,
    _reaches_no_gpu,
)


def test_the_fake_is_inert_unless_its_variable_is_set():
    probe = (
        "import torch, roofline_lib.evidence.measure as m; print(torch.cuda.is_available(), m._time_cuda.__module__)"
    )
    env = _fake_env()
    env.pop(fake_cuda.ENV)
    off = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert off.stdout.split() == ["False", "roofline_lib.evidence.measure"], off.stderr
    on = subprocess.run(
        [sys.executable, "-c", probe], env=_fake_env(), capture_output=True, text=True, timeout=120, check=False
    )
    assert on.stdout.split() == ["True", "fake_cuda"], on.stderr


# A process that stands for a kernel ("ipykernel_launcher" among its arguments): output still in its
# buffer, an atexit handler of its own, and an object whose finalizer runs only in Python's teardown.
_KERNEL_EXIT = """
import atexit, sys
class Torn:
    def __del__(self):
        sys.__stdout__.write(" torn down")
        sys.__stdout__.flush()
kept = Torn()
atexit.register(lambda: sys.stdout.write(" handler ran"))
sys.stdout.write("buffered")
"""


def test_a_kernel_under_the_fake_ends_after_its_atexit_handlers_without_the_teardown():
    def run(env):
        args = [sys.executable, "-c", _KERNEL_EXIT, "ipykernel_launcher"]
        return subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, check=False)

    fast = run(_fake_env())
    assert (fast.returncode, fast.stdout) == (0, "buffered handler ran"), fast.stderr
    plain = _fake_env()
    plain.pop(fake_cuda.ENV)
    slow = run(plain)
    assert (slow.returncode, slow.stdout) == (0, "buffered handler ran torn down"), slow.stderr


def test_the_fake_h200_gives_figures_its_datasheet_allows():
    h200 = gpu("h200")
    real_query, real_primitive = torch.cuda.is_available, measured_roofs._cuda_stream_timings
    with fake_cuda.patched():
        assert measure.has_cuda() and record_report.live_gpu()
        roofs = measured_roofs.measure_ceilings(seconds=2.0, device="cuda")
    # the fake's own fractions (92 % of 4.8 TB/s = 4.42 TB/s; 82 % of 989.5 TFLOP/s = 811 TFLOP/s at 8192^3)
    assert roofs.bytes_per_s == pytest.approx(fake_cuda.STREAM_FRACTION * h200.hbm_bytes_per_s, rel=1e-9)
    assert roofs.flops_per_s == pytest.approx(
        fake_cuda.MATMUL_FRACTION["bf16"] * h200.peak_flops_per_s("bf16"), rel=1e-9
    )
    assert (roofs.device, roofs.device_name, roofs.matmul_n, roofs.label) == (
        "cuda",
        "NVIDIA H200",
        8192,
        "NVIDIA H200 (GPU)",
    )
    check_plausible(roofs.flops_per_s, roofs.bytes_per_s, h200, "bf16", what="the fake H200")  # raises if not
    assert (torch.cuda.is_available, measured_roofs._cuda_stream_timings) == (real_query, real_primitive)  # restored


def test_chapter_6_can_ask_a_gpu_for_its_own_matmul_size_again():
    # The defect: the GPU reading came back with matmul_n = 8192, and asking for 8192 again raised
    # because the limit (4096) was the CPU's whatever the device.
    sizes = []

    def timed(n, precision):
        sizes.append(n)
        return fake_cuda.fake_matmul_timing(n, precision)

    with fake_cuda.patched():
        first = measured_roofs.measure_ceilings(seconds=2.0, device="cuda")
        again = measured_roofs.measure_ceilings(seconds=1.5, device="cuda", matmul_n=first.matmul_n)
        measured_roofs._cuda_matmul_timing = timed  # restored with the rest when the block ends
        measured_roofs.measure_ceilings(seconds=1.5, device="cuda", matmul_n=16384)
        with pytest.raises(ValueError, match="at most 32768 rows on GPU"):
            measured_roofs.measure_ceilings(seconds=1.5, device="cuda", matmul_n=65536)
    assert first.matmul_n == again.matmul_n == 8192
    assert sizes == [8192, 16384]  # the default size, and the caller's


def test_cpu_work_stays_on_the_cpu_and_is_timed_there_on_a_gpu_machine():
    x = torch.ones(1000)
    with fake_cuda.patched():
        t = measure.time_fn(lambda: x + x, device="cpu", warmup=1, reps=5)
        y = torch.ones(3, device="cuda")  # asked for the GPU: the fake makes it on the CPU
    assert x.device.type == "cpu" and y.device.type == "cpu"
    assert t.device == "cpu" and t.method.startswith("CPU time.perf_counter")  # not the fake's GPU timer


def test_profiling_cpu_work_never_waits_on_the_gpu(monkeypatch):
    synced = []
    with fake_cuda.patched():
        monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: synced.append(device))
        diagnose.profile_run(lambda: torch.ones(4) + 1, device="cpu", warmup=1, calls=2)
        assert synced == []  # CPU work: no GPU sync, no CUDA activity
        diagnose.profile_run(lambda: torch.ones(4) + 1, device="cuda", warmup=1, calls=2)
        assert len(synced) == 2  # after the warm-up, and before the clock stops
        with pytest.raises(TypeError, match="device must be named"):
            diagnose.profile_run(lambda: None)


def test_a_profile_on_the_fake_gpu_holds_cpu_ops_only_and_meets_only_a_cpu_roof():
    # What chapter 6's live profiling cell reads on the fake: CUDA activity was asked for, no kernel
    # was recorded, and the model asked for on "cuda" stayed on the CPU, so the ops ran on the host.
    # A GPU's datasheet roof is refused for such a profile; the CPU's roof gives the verdict.
    from roofline_lib import tiny_model

    with fake_cuda.patched():
        model = tiny_model.tiny_decoder(device="cuda")
        tokens = tiny_model.random_tokens(batch=1, device="cuda")
        run = diagnose.profile_run(lambda: model(tokens).sum().backward(), device="cuda", warmup=1, calls=1)
        on_host = next(model.parameters()).device.type == "cpu"
    assert diagnose.as_trace(run).timeline == "cpu" and on_host
    with pytest.raises(ValueError, match=r"CPU ops only, so a GPU's roof \(H200 SXM\) does not bound it"):
        diagnose.diagnose(run, roof=gpu("h200"))
    verdict = diagnose.diagnose(run, roof=fake_cpu_roofs(), fixed_cost_seconds=diagnose.measure_fixed_cost())
    assert verdict.timeline == "cpu" and verdict.roof_label.startswith("measured on a test CPU")
    assert verdict.shares["compute"] + verdict.shares["memory"] > 0  # counted work, placed under the CPU roof


def fake_cpu_roofs():
    """Roofs of a CPU far above anything the tiny decoder reaches here (1 TB/s, 100 TFLOP/s fp32)."""
    return measured_roofs.MeasuredCeilings(
        bytes_per_s=1e12,
        flops_per_s=1e14,
        device_name="a test CPU",
        precision="fp32",
        n_threads=1,
        date="2026-01-01T00:00:00+00:00",
        torch_version=torch.__version__,
    )


# All an exercise or its solution may import. Neither imports torch, so no cell of theirs can
# reach a GPU (every GPU path in the course goes through torch.cuda, which the fake replaces).
EXERCISE_IMPORTS = {"math", "roofline_lib.observer"}


def test_some_chapters_have_no_gpu_path_for_the_fake_to_run():
    free = [p.name for p in sorted((ROOT / "notebooks").glob("*.md")) if _reaches_no_gpu(p)]
    assert free and len(free) < 10, free  # chapters 1, 2 and 4 today; every other one runs on the fake
    probe = "import sys, " + ", ".join(sorted(GPU_FREE_IMPORTS)) + "; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.split() == ["False"], done.stderr
    # and the check sees a chapter that would reach one
    assert _GPU_WORDS.search("ceilings = rl.measure_collectives(ranks=2)")
    assert not _imports("import roofline_lib as rl") - GPU_FREE_IMPORTS
    assert _imports("from roofline_lib import measure") - GPU_FREE_IMPORTS


@pytest.mark.parametrize("folder", ["exercises", "solutions"])
def test_the_exercises_have_no_gpu_path_for_the_fake_to_run(folder):
    notebooks = sorted((ROOT / folder).glob("*.md"))
    assert len(notebooks) == 9
    for path in notebooks:
        code = [c.source for c in jupytext.read(path).cells if c.cell_type == "code"]
        imported = set().union(*(_imports(src) for src in code))
        assert imported <= EXERCISE_IMPORTS, f"{path.name} imports {sorted(imported - EXERCISE_IMPORTS)}"
    # What those imports load, and the practice judge the checks start, in a fresh interpreter:
    probe = "import sys, math, roofline_lib.observer, roofline_lib.grading; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.split() == ["False"], done.stderr


def test_the_import_check_sees_what_would_reach_a_gpu():
    assert _imports("import torch\nfrom roofline_lib import measure") == {"torch", "roofline_lib.evidence.measure"}
    assert _imports("import roofline_lib.evidence.kernels as k") == {"roofline_lib.evidence.kernels"}
    assert _imports("from roofline_lib import observer") == {"roofline_lib.observer"}
    assert "__import__" in _imports("m = __import__('torch')")


def test_the_fake_moves_only_device_arguments():
    x = torch.zeros(2)
    with fake_cuda.patched():
        assert x.new_full((2,), 3).tolist() == [3.0, 3.0]  # a positional 3 is a value, not a CUDA ordinal
        assert x.to("cuda", torch.float16).dtype == torch.float16  # device moved to the CPU, dtype kept
        assert x.to(torch.float64).dtype == torch.float64
        assert torch.nn.Linear(2, 2).to("cuda").weight.device.type == "cpu"
        assert x.cuda() is x
