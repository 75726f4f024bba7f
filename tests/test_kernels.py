"""Tests for roofline_lib.evidence.kernels: the Triton demos, run on the CPU through Triton's interpreter.

``@triton.jit`` reads TRITON_INTERPRET when a kernel is *decorated*, that is when
roofline_lib.evidence.kernels is imported. So the variable is set for that import (and the module
re-imported if an earlier test loaded it compiled), then put back, so that nothing else in the
session, a notebook kernel started later say, inherits it; the module's launchers switch the
interpreter on around each launch themselves. Correctness only: interpreter timings measure
Python, not a GPU.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import subprocess
import sys

import pytest
import torch

_saved = os.environ.get("TRITON_INTERPRET")
os.environ["TRITON_INTERPRET"] = "1"
try:
    import roofline_lib.evidence.kernels as K

    if not K.INTERPRETED:  # imported compiled by an earlier test module
        K = importlib.reload(K)
finally:
    if _saved is None:
        del os.environ["TRITON_INTERPRET"]
    else:
        os.environ["TRITON_INTERPRET"] = _saved

from roofline_lib.core.ops import OpCount  # noqa: E402
from roofline_lib.evidence.measure import has_cuda  # noqa: E402

needs_gpu = pytest.mark.skipif(not has_cuda(), reason="needs a CUDA GPU (torch sees none)")


def test_the_module_was_imported_in_interpreter_mode():
    assert K.INTERPRETED is True


# --------------------------------------------------------------------------- counts


def test_copy_moves_each_element_twice_and_does_no_arithmetic():
    c = K.copy_count(1000, bytes_per_elem=2)
    assert c.flops == 0
    assert c.bytes_moved == 4000  # (1 read + 1 write) * 1000 elements * 2 bytes


def test_bias_gelu_fused_counts():
    c = K.bias_gelu_count(6, 100, bytes_per_elem=2)
    assert c.flops == 3600  # (1 add + 5 GELU) * 6 * 100 = 3600
    assert c.bytes_moved == 2600  # (read x 600 + write y 600 + bias 100) * 2 bytes


def test_bias_gelu_unfused_writes_and_rereads_the_sum():
    fused = K.bias_gelu_count(6, 100, 2)
    unfused = K.bias_gelu_unfused_count(6, 100, 2)
    assert unfused.flops == fused.flops  # same arithmetic, more traffic
    assert unfused.bytes_moved == 5000  # (x 600 + bias 100 + t 600 | t 600 + y 600) * 2 = 2500 * 2


def test_add_rmsnorm_fused_counts():
    c = K.add_rmsnorm_count(6, 100, bytes_per_elem=2)
    assert c.flops == 3000  # (1 add + 4 RMSNorm) * 600 elements
    assert c.bytes_moved == 5000  # (x + residual + h + y = 4 * 600, + weight 100) * 2 bytes


def test_add_rmsnorm_unfused_counts_every_eager_pass_in_bf16():
    # n = 600, rows = 6, bf16 e = 2, fp32 f = 4:
    #   add 2400 + 1200, upcast 1200 + 2400, square 2400 + 2400, mean 2400 + 24,
    #   + eps 24 + 24, rsqrt 24 + 24, scale (2400 + 24) + 2400, downcast 2400 + 1200,
    #   * weight (1200 + 200) + 1200  ->  25544 bytes, 5.1x the fused 5000
    assert K.add_rmsnorm_unfused_count(6, 100, 2) == OpCount(3000, 25544)


def test_add_rmsnorm_unfused_in_fp32_has_no_casts():
    # e = f = 4: add 4800 + 2400, square 4800, mean 2424, eps 48, rsqrt 48, scale 4824,
    # * weight (2400 + 400) + 2400  ->  24544 bytes
    assert K.add_rmsnorm_unfused_count(6, 100, 4).bytes_moved == 24544


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: K.bias_gelu_count(0, 100), "n_rows"),
        (lambda: K.add_rmsnorm_count(6, -1), "d"),
        (lambda: K.add_rmsnorm_unfused_count(6, 100, 0), "bytes_per_elem"),
    ],
)
def test_counts_reject_bad_sizes_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --------------------------------------------------------------------------- correctness


@pytest.mark.parametrize("name", list(K.DEMOS))
@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
def test_each_demo_matches_its_torch_reference_on_cpu(name, dtype):
    error = K.check_demo(name, device="cpu", dtype=dtype)
    assert 0 <= error < 0.1  # within the dtype's tolerance, or check_demo would have raised


def test_copy_is_exact_across_several_programs():
    x = torch.arange(1000, dtype=torch.float32)
    y = K.copy(x, BLOCK=256)  # 4 programs; the last one masks 1024 - 1000 = 24 lanes
    assert torch.equal(y, x)


def test_bias_gelu_with_column_blocks_that_do_not_divide_the_row():
    # 3 rows of 100 in blocks of 32: 4 programs per row (3 full, the 4th masks 128 - 100 = 28 lanes)
    error = K.check_demo("bias_gelu", device="cpu", shape=(3, 100), config={"BLOCK": 32, "num_warps": 4})
    assert error < 1e-5


def test_bias_gelu_of_zero_plus_bias_is_gelu_of_the_bias():
    x = torch.zeros(2, 3)
    bias = torch.tensor([-1.0, 0.0, 2.0])
    y = K.bias_gelu(x, bias)
    # GELU(0) = 0; GELU(2) = 2 * Phi(2) = 2 * 0.97725 = 1.9545; GELU(-1) = -Phi(-1) = -0.15866
    assert y[1].tolist() == pytest.approx([-0.15866, 0.0, 1.95450], abs=1e-4)


def test_add_rmsnorm_by_hand():
    x = torch.tensor([[1.0, 2.0]])
    residual = torch.tensor([[2.0, 2.0]])
    weight = torch.tensor([1.0, 0.5])
    y, h = K.add_rmsnorm(x, residual, weight, eps=1e-12)
    # h = [3, 4]; mean square = (9 + 16) / 2 = 12.5; rms = 3.5355; y = [3, 4] / 3.5355 * [1, 0.5]
    assert h.tolist() == [[3.0, 4.0]]
    assert y[0].tolist() == pytest.approx([0.84853, 0.56569], abs=1e-5)


def test_a_wrong_reference_is_caught(monkeypatch):
    demo = K.DEMOS["bias_gelu"]
    off_by_one_percent = dataclasses.replace(demo, torch_fn=lambda x, b: demo.torch_fn(x, b) * 1.01 + 0.01)
    monkeypatch.setitem(K.DEMOS, "bias_gelu", off_by_one_percent)
    with pytest.raises(K.KernelMismatch, match="differs from the torch reference"):
        K.check_demo("bias_gelu", device="cpu", dtype="fp32")


def test_launchers_reject_bad_inputs_by_name():
    x = torch.zeros(4, 8)
    with pytest.raises(ValueError, match="bias must be a \\(8,\\) tensor"):
        K.bias_gelu(x, torch.zeros(7))
    with pytest.raises(ValueError, match="x must be contiguous"):
        K.bias_gelu(x.t(), torch.zeros(4))
    with pytest.raises(TypeError, match="fp32, bf16 or fp16"):
        K.copy(torch.zeros(4, dtype=torch.int32))
    with pytest.raises(ValueError, match="residual must match"):
        K.add_rmsnorm(x, torch.zeros(4, 9), torch.ones(8))
    with pytest.raises(ValueError, match="eps"):
        K.add_rmsnorm(x, x, torch.ones(8), eps=0)


def test_unknown_demo_and_dtype_are_refused():
    with pytest.raises(ValueError, match="unknown demo 'softmax'"):
        K.check_demo("softmax")
    with pytest.raises(ValueError, match="dtype must be one of"):
        K.check_demo("copy", dtype="int8")
    with pytest.raises(ValueError, match="shape for add_rmsnorm must be \\(rows, d\\)"):
        K.check_demo("add_rmsnorm", shape=(600,))


def test_run_demo_refuses_to_time_the_interpreter():
    with pytest.raises(RuntimeError, match="interpreted"):
        K.run_demo("copy", "H200")


def _compiled(code: str, timeout: int) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter without TRITON_INTERPRET, so its kernels compile."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)


def test_importing_the_package_leaves_triton_alone_and_compiled_kernels_refuse_cpu_tensors():
    # A fresh interpreter without TRITON_INTERPRET: `import roofline_lib` must not load the
    # kernels (or triton); importing them explicitly works on a CPU-only machine, and handing a
    # compiled kernel a CPU tensor says how to run it instead.
    code = (
        "import sys, roofline_lib\n"
        "assert 'roofline_lib.evidence.kernels' not in sys.modules and 'triton' not in sys.modules\n"
        "import torch, roofline_lib.evidence.kernels as K\n"
        "assert not K.INTERPRETED\n"
        "try:\n"
        "    K.copy(torch.zeros(4))\n"
        "except RuntimeError as err:\n"
        "    assert 'TRITON_INTERPRET=1' in str(err), err\n"
        "    print('ok')\n"
    )
    done = _compiled(code, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.gpu
@needs_gpu
def test_run_demo_compiled_on_the_gpu():  # pragma: no cover - needs a GPU
    # In a fresh process, so the kernels compile instead of being interpreted.
    code = (
        "import torch\n"
        "from roofline_lib import kernels as K, records\n"
        "spec = records.match_gpu(torch.cuda.get_device_name(0))\n"
        "for name in K.DEMOS:\n"
        "    shape = (2**25,) if name == 'copy' else (4096, 8192)\n"
        "    row = K.run_demo(name, spec, shape=shape)\n"
        "    assert row.seconds >= row.predicted_seconds * 0.95, row\n"
        "    print(row)\n"
    )
    done = _compiled(code, timeout=600)
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------- register limit


def test_add_rmsnorm_refuses_rows_wider_than_its_registers():
    d = K.MAX_RMSNORM_ROW + 1  # 16385: one element past 64 KiB of fp32
    x = torch.zeros(1, d)
    with pytest.raises(ValueError, match=r"d = 16385 .* at most 16384 elements \(64 KiB"):
        K.add_rmsnorm(x, x.clone(), torch.ones(d))
    # 2**20 + 1 elements: the width at which Triton stops compiling is refused before any launch
    wide = torch.zeros(1, 2**20 + 1)
    with pytest.raises(ValueError, match="add_rmsnorm_reference"):
        K.add_rmsnorm(wide, wide, torch.ones(2**20 + 1))


def test_add_rmsnorm_at_the_widest_row_it_accepts_matches_the_reference():
    d = K.MAX_RMSNORM_ROW  # 16384 = 2**14: the block is exactly one row
    gen = torch.Generator().manual_seed(0)
    x, r = torch.randn(1, d, generator=gen), torch.randn(1, d, generator=gen)
    w = torch.ones(d)
    y, h = K.add_rmsnorm(x, r, w)
    y_ref, h_ref = K.add_rmsnorm_reference(x, r, w)
    assert torch.equal(h, h_ref)  # one fp32 add each: bit for bit
    assert torch.allclose(y, y_ref, rtol=1e-4, atol=1e-5)
