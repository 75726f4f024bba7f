"""A simulated CUDA GPU (an H200) at roofline_lib's device boundary, for tests without a GPU.

Nothing here runs unless asked: ``sitecustomize.py`` beside this file calls :func:`install_lazily`
only when the environment sets ``ROOFLINE_FAKE_GPU=h200``, and the unit tests use
:func:`patched` in-process. It is never on roofline_lib's import path, so it cannot fake a
reader's machine.

What is simulated, and nothing more:

* torch's device queries: ``torch.cuda.is_available()`` is True, one device named
  "NVIDIA H200" (compute capability 9.0, 50 MB of L2), ``synchronize`` and ``empty_cache`` do
  nothing, ``torch.version.cuda`` is "12.8";
* tensors and modules *asked* for ``device="cuda"`` are made on the CPU (a TorchFunctionMode
  rewrites the device argument), so GPU-path cells can run their code; tensors made on the CPU
  stay there and are never moved;
* the profiler records no CUDA activity (there is none to record);
* roofline_lib.evidence's three CUDA primitives (measure's timer, measured_roofs' two kernels)
  return plausible H200 figures computed from the registry: streaming at 92 % of the datasheet
  HBM bandwidth, bf16 and fp8 products at 82 % and 62 % of the dense peaks at n = 8192, so
  every guard in the library sees numbers a healthy H200 gives.
  ``_time_cuda`` runs the function once on the CPU (so its code is exercised) and reports that
  time: slower than any GPU, so it never beats a roof.

With ``ROOFLINE_FAKE_GPU_LOG=<file>`` every simulated GPU measurement and every set of roofs a
measurement is judged against is appended to that file as a JSON line, so a test can check that
the GPU path ran and that no CPU workload met a GPU roof.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import json
import os
import sys
import time

ENV = "ROOFLINE_FAKE_GPU"
LOG_ENV = "ROOFLINE_FAKE_GPU_LOG"
GPU_NAME = "NVIDIA H200"
REGISTRY_KEY = "h200"
CUDA_VERSION = "12.8"
#: Physical GPUs the fake nvidia-smi lists; torch's device 0 is the first visible one.
UUIDS = ("GPU-6f3c5a2e-0d4b-4c1e-9a57-2b8f1e3d7c01", "GPU-a81d44f0-5e2c-4f9b-8d13-7c6e0b2a9f02")
STREAM_FRACTION = 0.92  # of the datasheet HBM bandwidth: a healthy H200 streams 4.3-4.5 TB/s
MATMUL_FRACTION = {"bf16": 0.82, "fp8": 0.62}  # of the dense peak at n = 8192 and above


def _log(event: str, **fields) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"event": event, "pid": os.getpid(), **fields}) + "\n")


def _visible_index() -> int:
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(first) if first.isdigit() and int(first) < len(UUIDS) else 0


class _Props:
    """What ``torch.cuda.get_device_properties`` tells about an H200."""

    def __init__(self):
        self.name = GPU_NAME
        self.major, self.minor = 9, 0
        self.total_memory = 143_771 * 2**20  # 141 GB of HBM3e as the driver reports it
        self.multi_processor_count = 132
        self.max_threads_per_block = 1024
        self.max_threads_per_multi_processor = 2048
        self.regs_per_multiprocessor = 65536
        self.warp_size = 32
        self.is_integrated = False
        self.L2_cache_size = 50 * 2**20
        self.uuid = UUIDS[_visible_index()].removeprefix("GPU-")


def _spec():
    from roofline_lib.core.hardware import gpu

    return gpu(REGISTRY_KEY)


def _timing(seconds: float, method: str):
    from roofline_lib.evidence.measure import Timing

    # a tight spread, as do_bench shows on an idle GPU: best, median 2 % above, worst 6 % above
    return Timing(
        median_s=seconds * 1.02,
        min_s=seconds,
        max_s=seconds * 1.06,
        reps=100,
        method=f"FAKE GPU ({GPU_NAME} simulated): {method}",
        device="cuda",
    )


def fake_stream_timings(n_elems: int):
    """copy and add over fp32 buffers of ``n_elems`` at 92 % of the H200's datasheet bandwidth."""
    rate = STREAM_FRACTION * _spec().hbm_bytes_per_s
    out = {}
    for kernel, buffers in (("copy", 2), ("add", 3)):  # buffers read + written per call
        out[kernel] = _timing(buffers * 4 * n_elems / rate, f"{kernel} of {4 * n_elems} B buffers")
    _log("cuda_stream", n_elems=n_elems)
    return out


def fake_matmul_timing(n: int, precision: str):
    """A square product at a fraction of the dense peak that grows with n up to 8192."""
    from roofline_lib import ops

    if precision not in MATMUL_FRACTION:
        raise ValueError(f"precision must be 'bf16' or 'fp8' for a GPU matmul, got {precision!r}")
    fraction = MATMUL_FRACTION[precision] * min(1.0, n / 8192) ** 0.5  # small products fill the chip less
    seconds = ops.gemm(n, n, n).flops / (fraction * _spec().peak_flops_per_s(precision))
    _log("cuda_matmul", n=n, precision=precision)
    return _timing(seconds, f"{precision} {n}x{n}x{n} product")


def fake_time_cuda(fn, sets):
    """Run ``fn`` once on the CPU (its code is exercised) and report that time for the GPU."""
    args, kwargs = sets[0]
    start = time.perf_counter()
    fn(*args, **kwargs)
    seconds = max(time.perf_counter() - start, 1e-6)
    _log("cuda_time_fn")
    return _timing(seconds, "the function ran once on the CPU; its CPU time is reported")


# --------------------------------------------------------------------------- logging wrappers


def _devices(values, *, roofs: bool) -> set[str]:
    """The devices of the measured roofs (``roofs``) or of the timings among ``values``."""
    kind = "flops_per_s" if roofs else "median_s"
    return {v.device for v in values if hasattr(v, kind) and getattr(v, "device", None) in ("cpu", "cuda")}


def _logged(original, name: str):
    """``original`` wrapped so each call logs the device of the measured roofs it is given, and
    of the timings: whatever the argument is called, a MeasuredCeilings or a Timing says its device."""

    @functools.wraps(original)  # the docstring and signature a chapter may show stay the library's
    def wrapper(*args, **kwargs):
        values = [*args, *kwargs.values()]
        roofs, timed = _devices(values, roofs=True), _devices(values, roofs=False)
        _log("judged", function=name, roofs=",".join(sorted(roofs)) or None, timed_on=",".join(sorted(timed)) or None)
        return original(*args, **kwargs)

    return wrapper


# --------------------------------------------------------------------------- torch


def _cpu_device(device):
    import torch

    if isinstance(device, torch.device):
        return torch.device("cpu") if device.type == "cuda" else device
    if isinstance(device, str) and device.split(":")[0].strip() == "cuda":
        return "cpu"
    if isinstance(device, int) and not isinstance(device, bool):
        return "cpu"  # an integer device means a CUDA ordinal
    return device


def _device_mode():
    """A TorchFunctionMode that makes every tensor asked for on "cuda" on the CPU instead."""
    import torch
    from torch.overrides import TorchFunctionMode

    moves = {torch.Tensor.to, torch.Tensor.cuda}  # the calls that take a device positionally

    class CudaOnCpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if "device" in kwargs:
                kwargs = {**kwargs, "device": _cpu_device(kwargs["device"])}
            if func in moves:
                if func is torch.Tensor.cuda:
                    return args[0]
                args = tuple(_cpu_device(a) if i else a for i, a in enumerate(args))
            return func(*args, **kwargs)

    return CudaOnCpu()


class _Patches:
    """Set attributes and remember the old values, so :func:`patched` can restore them."""

    def __init__(self):
        self.saved = []

    def set(self, owner, name, value):
        self.saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def undo(self):
        for owner, name, value in reversed(self.saved):
            setattr(owner, name, value)
        self.saved.clear()


def _patch_torch(torch, p: _Patches) -> None:
    import torch.profiler

    cuda = torch.cuda
    p.set(cuda, "is_available", lambda: True)
    p.set(cuda, "device_count", lambda: 1)
    p.set(cuda, "current_device", lambda: 0)
    p.set(cuda, "get_device_name", lambda device=None: GPU_NAME)
    p.set(cuda, "get_device_properties", lambda device=None: _Props())
    p.set(cuda, "get_device_capability", lambda device=None: (9, 0))
    p.set(cuda, "synchronize", lambda device=None: None)
    p.set(cuda, "empty_cache", lambda: None)
    p.set(torch.version, "cuda", CUDA_VERSION)

    base = torch.profiler.profile
    activity = torch.profiler.ProfilerActivity

    class Profile(base):  # no CUPTI here: profile the host, as the CPU build would
        def __init__(self, *args, activities=None, **kwargs):
            kept = [a for a in (activities or [activity.CPU]) if a != activity.CUDA]
            super().__init__(*args, activities=kept, **kwargs)

    p.set(torch.profiler, "profile", Profile)


def _patch_measure(measure, p: _Patches) -> None:
    p.set(measure, "_time_cuda", fake_time_cuda)


def _patch_measured_roofs(measured_roofs, p: _Patches) -> None:
    p.set(measured_roofs, "_cuda_stream_timings", fake_stream_timings)
    p.set(measured_roofs, "_cuda_matmul_timing", fake_matmul_timing)
    _wrap(measured_roofs, "measured_point", p)


def _patch_diagnose(diagnose, p: _Patches) -> None:
    for name in ("measured_mfu", "diagnose"):
        if hasattr(diagnose, name):
            _wrap(diagnose, name, p)


def _patch_plots(plots, p: _Patches) -> None:
    _wrap(plots, "plot_roofline", p)


def _wrap(module, name, p: _Patches) -> None:
    p.set(module, name, _logged(getattr(module, name), name))


_MODULE_PATCHES = {
    "roofline_lib.evidence.measure": _patch_measure,
    "roofline_lib.evidence.measured_roofs": _patch_measured_roofs,
    "roofline_lib.evidence.diagnose": _patch_diagnose,
    "roofline_lib.present.plots": _patch_plots,
}


# --------------------------------------------------------------------------- installing


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs a patch right after a module's own code, the first time it is imported."""

    def __init__(self, hooks):
        self.hooks = dict(hooks)

    def find_spec(self, name, path, target=None):
        if name not in self.hooks:
            return None
        hook = self.hooks.pop(name)
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module):
            run(module)
            hook(module)

        loader.exec_module = exec_module
        return spec


_INSTALLED = _Patches()


def _torch_hook(torch):
    _log("torch", threads=torch.get_num_threads())  # what the kernel's timings ran on
    _patch_torch(torch, _INSTALLED)
    _device_mode().__enter__()  # for the life of the process (a notebook kernel)


def install_lazily() -> None:
    """Fake the GPU in this process, patching torch and roofline_lib as they are first imported.

    Importing torch takes a second or two; a notebook that never imports it never pays.
    """
    hooks = {"torch": _torch_hook}
    hooks.update({name: (lambda m, f=f: f(m, _INSTALLED)) for name, f in _MODULE_PATCHES.items()})
    for name in list(hooks):
        if name in sys.modules:  # already imported: patch now
            hooks.pop(name)(sys.modules[name])
    sys.meta_path.insert(0, _AfterImport(hooks))
    _log("installed", python=sys.executable)


@contextlib.contextmanager
def patched():
    """Fake the GPU inside a ``with`` block of the current process; everything is restored after."""
    import importlib

    import torch

    p = _Patches()
    _patch_torch(torch, p)
    for name, patch in _MODULE_PATCHES.items():
        patch(importlib.import_module(name), p)
    mode = _device_mode()
    mode.__enter__()
    try:
        yield
    finally:
        mode.__exit__(None, None, None)
        p.undo()


def read_log(path) -> list[dict]:
    """The JSON lines a fake run wrote to ``ROOFLINE_FAKE_GPU_LOG``."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


__all__ = [
    "ENV",
    "GPU_NAME",
    "LOG_ENV",
    "UUIDS",
    "fake_matmul_timing",
    "fake_stream_timings",
    "fake_time_cuda",
    "install_lazily",
    "patched",
    "read_log",
]
