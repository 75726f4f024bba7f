"""Events in the shape torch.profiler writes, built by hand for the trace tests (not a test module).

:class:`Builder` writes a CPU op, the cudaLaunchKernel inside it and the kernel it launched, tied
by "correlation" (in the 2023+ or the 2022 spelling); :func:`simple_trace` writes ops and kernels
tied only by "External id", as the oldest exports do.
"""

from __future__ import annotations

A100_40 = "NVIDIA A100-PG509-200"  # the name torch reports for the 40 GB SXM4 board


class Builder:
    """A trace: ``op(...)`` adds a CPU op with a launch and a kernel inside; ids count up from 1."""

    def __init__(self, *, old=False, gpu=A100_40):
        self.events, self.n, self.old = [], 0, old
        self.props = [{"id": 0, "name": gpu}] if gpu else []

    def cat(self, new, old):
        return old if self.old else new

    def op(self, name, dims, types, ts, dur, kernel, k_ts, k_dur, *, stream=7, ext=None, args=None, cpu_dur=4.0):
        self.n += 1
        corr = 1000 + self.n
        op_args = {"External id": self.n, "Input Dims": dims, "Input type": types}
        self.events.append(
            {
                "ph": "X",
                "cat": self.cat("cpu_op", "Operator"),
                "name": name,
                "pid": 1,
                "tid": 1,
                "ts": ts,
                "dur": max(dur, cpu_dur),
                "args": op_args,
            }
        )
        self.events.append(
            {
                "ph": "X",
                "cat": self.cat("cuda_runtime", "Runtime"),
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": ts + 1.0,
                "dur": 2.0,
                "args": {"correlation": corr, self.cat("External id", "external id"): self.n},
            }
        )
        k_args = {
            "device": 0,
            "stream": stream,
            "correlation": corr,
            self.cat("External id", "external id"): self.n if ext is None else ext,
            **(args or {}),
        }
        self.events.append(
            {
                "ph": "X",
                "cat": self.cat("kernel", "Kernel"),
                "name": kernel,
                "pid": 0,
                "tid": stream,
                "ts": k_ts,
                "dur": k_dur,
                "args": k_args,
            }
        )

    def step(self, n, ts, dur):
        self.events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1, "ts": ts, "dur": dur}
        )

    def trace(self):
        return {"schemaVersion": 1, "deviceProperties": self.props, "traceEvents": list(self.events)}


MM = ("aten::mm", [[256, 1024], [1024, 256]], ["float", "float"])
# mm of [256, 1024] x [1024, 256] in fp32: 2 * 256 * 1024 * 256 = 134,217,728 FLOP over
# (256*1024 + 1024*256 + 256*256) * 4 = 2,359,296 bytes: 56.9 FLOP/B -- above the A100's fp32
# ridge (19.5e12 / 1.555e12 = 12.5) but below its TF32 ridge (156e12 / 1.555e12 = 100.3)


def simple_trace(ops_and_kernels, gpu="NVIDIA H100 80GB HBM3", shapes=True):
    """A trace shaped like torch.profiler's export: cpu_op and kernel events tied by External id."""
    events = []
    for i, (name, dims, types, ts, dur) in enumerate(ops_and_kernels, start=1):
        args = {"External id": i}
        if shapes:
            args.update({"Input Dims": dims, "Input type": types})
        events.append(
            {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts - 5.0, "dur": 4.0, "args": args}
        )
        events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": f"kernel_for_{name}",
                "pid": 0,
                "tid": 7,
                "ts": ts,
                "dur": dur,
                "args": {"External id": i, "device": 0, "stream": 7, "correlation": 1000 + i},
            }
        )
    props = [{"id": 0, "name": gpu}] if gpu else []
    return {"schemaVersion": 1, "deviceProperties": props, "traceEvents": events}


BF16 = "c10::BFloat16"


def gemm(m, n, k):
    return ("aten::mm", [[m, k], [k, n]], [BF16, BF16])
