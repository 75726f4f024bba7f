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


# --------------------------------------------------------------------------- stored synthetic traces
# The synthetic traces under tests/traces/ are written from these builders (tests/traces/write_synthetic.py)
# so that HTA can read them too (tools/hta_reference.py); test_traces_stored.py checks the files still
# equal what the builders make. Every figure is counted by hand in the test beside its assertion.

H100 = "NVIDIA H100 80GB HBM3"


def _kernel_event(b: Builder, cat: str) -> None:
    """Make the kernel event the builder wrote last a ``cat`` event (a memset, a copy)."""
    b.events[-1]["cat"] = cat


def zero_length_trace() -> dict:
    """An H100 trace with zero-length kernels: a 0 us memset at 100 us, a bf16 GEMM 100..300 us, a
    0 us fill at 300 us (the GEMM's end), an add 600..700 us. Window 100..700, busy 300 us."""
    b = Builder(gpu=H100)
    b.op("aten::zero_", [[1024]], [BF16], ts=90.0, dur=5.0, kernel="Memset (Device)", k_ts=100.0, k_dur=0.0)
    _kernel_event(b, "gpu_memset")
    b.op(*gemm(4096, 4096, 4096), ts=95.0, dur=5.0, kernel="sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
         k_ts=100.0, k_dur=200.0)  # fmt: skip
    b.op("aten::fill_", [[1024], []], [BF16, "Scalar"], ts=150.0, dur=5.0,
         kernel="void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>>(int)",
         k_ts=300.0, k_dur=0.0)  # fmt: skip
    b.op("aten::add", [[2**24], [2**24], []], [BF16, BF16, "Scalar"], ts=590.0, dur=5.0,
         kernel="void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>(int)",
         k_ts=600.0, k_dur=100.0)  # fmt: skip
    return b.trace()


MI300X_PROPS = {
    "id": 0,
    "name": "AMD Radeon Graphics",  # how ROCm before 6.2 names every Instinct
    "gcnArchName": "gfx942:sramecc+:xnack-",
    "computeMajor": 9,
    "computeMinor": 4,
    "numSms": 304,
    "warpSize": 64,
    "totalGlobalMem": 205822885888,
}


def amd_trace() -> dict:
    """An MI300X trace named only "AMD Radeon Graphics" with its gfx942 id: a bf16 Tensile GEMM
    0..1000 us, an RCCL all-reduce 1000..1400 us, idle to 1600, a bf16 add 1600..1800 us."""
    b = Builder(gpu=None)
    b.props = [dict(MI300X_PROPS)]
    b.op(*gemm(8192, 8192, 8192), ts=-10.0, dur=5.0,
         kernel="Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_SN", k_ts=0.0, k_dur=1000.0)  # fmt: skip
    b.op("record_param_comms", [], [], ts=-4.0, dur=5.0, kernel="ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096>)",
         k_ts=1000.0, k_dur=400.0, stream=2,
         args={"Collective name": "allreduce", "In msg nelems": 2**24, "dtype": "BFloat16", "Group size": 8})  # fmt: skip
    b.op("aten::add", [[2**26], [2**26], []], [BF16, BF16, "Scalar"], ts=1590.0, dur=5.0,
         kernel="void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>(int)",
         k_ts=1600.0, k_dur=200.0)  # fmt: skip
    return b.trace()


#: (rank, GEMM end, all-reduce start, all-reduce end) in us: rank 2 computes longest and waits least
RANKS = ((0, 500.0, 600.0, 1000.0), (1, 700.0, 700.0, 1000.0), (2, 900.0, 900.0, 1050.0))


def rank_trace(rank: int, gemm_end: float, comm_start: float, comm_end: float) -> dict:
    """One rank of a 3-rank data-parallel step on H100s: a bf16 GEMM from 0, an all-reduce after it."""
    b = Builder(gpu=H100)
    b.op(*gemm(4096, 4096, 4096), ts=-10.0, dur=5.0, kernel="sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
         k_ts=0.0, k_dur=gemm_end)  # fmt: skip
    b.op("record_param_comms", [], [], ts=-4.0, dur=5.0, kernel="ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
         k_ts=comm_start, k_dur=comm_end - comm_start, stream=20,
         args={"Collective name": "allreduce", "In msg nelems": 2**22, "dtype": "BFloat16", "Group size": 3})  # fmt: skip
    trace = b.trace()
    trace["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": len(RANKS)}
    return trace


def synthetic_traces() -> dict:
    """Every synthetic trace stored under tests/traces/, by its path there."""
    out = {"synthetic/zero_length_h100.json": zero_length_trace(), "synthetic/amd_mi300x_gfx942.json": amd_trace()}
    for rank, *times in RANKS:
        out[f"synthetic/ranks/rank{rank}.json"] = rank_trace(rank, *times)
    return out
