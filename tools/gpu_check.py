"""`make gpu-check`: re-execute the course on a CUDA GPU and record what the chip really does.

    python tools/gpu_check.py [--out DIR] [--gpu NAME] [--no-notebooks] [--gemm-max N]

In order:

1. refuses to run (exit 2) without a CUDA GPU, with the CPU build of torch, under
   TRITON_INTERPRET, or on a GPU the registry does not hold;
2. measures the ceilings: copy bandwidth (1 GiB buffers), a square bf16 GEMM sweep up to
   8192^3, and an fp8 sweep through ``torch._scaled_mm`` where the chip has fp8;
3. times the course's Triton demos (roofline_lib.kernels), each checked against torch first and
   predicted from its byte count on the measured copy bandwidth;
4. runs nbval over every notebook with ROOFLINE_REQUIRE_GPU=1 (a GPU cell that would fall back
   to the record raises instead of skipping): strict, output against output, where the notebook
   has a reference record in tests/records/ (its measured cells are tagged
   nbval-ignore-output, and their numbers are checked by the plausibility guard and the
   prediction band below instead of by text); execution-only (--nbval-lax) elsewhere; then the
   GPU-marked unit tests (pytest -m gpu). Any failure or any skip fails the check;
5. writes book/data/measurements/<registry key>.json with its provenance (GPU name, driver,
   CUDA, torch and triton versions, date, clocks when nvidia-smi can read them, git commit),
   after validating it against the registry's roofs, and prints the course's targets.

Exit status: 0 all good; 1 a check failed (the record is still written when its numbers are
valid); 2 this machine cannot run the check.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

from roofline_lib import records  # noqa: E402
from roofline_lib.hardware import as_gpu  # noqa: E402
from roofline_lib.records import (  # noqa: E402
    CopyMeasurement,
    GemmMeasurement,
    GPURecord,
    NotebookRun,
    Provenance,
)
from roofline_lib.roofline import ImplausibleMeasurement  # noqa: E402

EXIT_OK, EXIT_FAILED, EXIT_CANNOT_RUN = 0, 1, 2

GEMM_SIZES = (1024, 2048, 4096, 8192)  # square m = n = k; 2 * 8192**3 = 1.1 TFLOP at the top
COPY_BUFFER_BYTES = 2**30  # 1 GiB per buffer: twenty times an H200's 50 MB L2
NOTEBOOK_DIRS = ("notebooks", "exercises", "solutions")
_SMI_CLOCKS = {"clocks.sm": "sm_mhz", "clocks.mem": "mem_mhz", "clocks.max.sm": "max_sm_mhz", "clocks.max.mem": "max_mem_mhz"}


# --------------------------------------------------------------------------- can we run?


def no_gpu_reason() -> str | None:
    """Why this machine cannot run the GPU check, or None when it can."""
    if os.environ.get("TRITON_INTERPRET", "").strip().lower() in ("1", "true", "yes", "on"):
        return "TRITON_INTERPRET is set: the Triton kernels would be interpreted on the CPU; unset it"
    try:
        import torch
    except ImportError:
        return "torch is not installed; run `make install` first"
    if torch.version.cuda is None:
        return (
            f"torch {torch.__version__} is a CPU build; install the CUDA build of the same version "
            "(see README, 'Pinned versions, CPU and GPU')"
        )
    if not torch.cuda.is_available():
        return "torch sees no CUDA GPU (check nvidia-smi and CUDA_VISIBLE_DEVICES)"
    return None


# --------------------------------------------------------------------------- provenance


def _run(cmd: list[str], timeout: float = 30) -> str | None:
    """stdout of ``cmd``, or None when it is missing or fails (provenance is best-effort here)."""
    if shutil.which(cmd[0]) is None:
        return None
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def parse_smi_row(text: str, fields: list[str]) -> dict[str, str]:
    """The first row of ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits`` by field name.

    Values nvidia-smi cannot read ("[N/A]", "Not Supported") are left out.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return {}
    values = [v.strip() for v in lines[0].split(",")]
    return {f: v for f, v in zip(fields, values) if v and not v.startswith("[") and v.lower() != "not supported"}


def _smi(fields: list[str], uuid: str | None) -> dict[str, str]:
    query = ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
    out = _run(query + ["-i", f"GPU-{uuid}"]) if uuid else None
    if out is None:
        out = _run(query + ["-i", "0"])  # CUDA_VISIBLE_DEVICES may renumber; the UUID did not work
    return parse_smi_row(out, fields) if out else {}


def read_clocks(uuid: str | None) -> dict[str, float]:
    """Current and maximum SM and memory clocks in MHz, as far as nvidia-smi can read them."""
    row = _smi(list(_SMI_CLOCKS), uuid)
    clocks = {}
    for field, key in _SMI_CLOCKS.items():
        try:
            clocks[key] = float(row[field])
        except (KeyError, ValueError):
            continue
    return clocks


def read_driver(torch, uuid: str | None) -> str:
    """The NVIDIA driver version: nvidia-smi, else /proc/driver/nvidia/version, else the CUDA driver API."""
    version = _smi(["driver_version"], uuid).get("driver_version")
    if version:
        return version
    try:
        text = Path("/proc/driver/nvidia/version").read_text(encoding="utf-8")
        match = re.search(r"Kernel Module\s+(?:for \S+\s+)?([0-9][0-9.]+)", text)
        if match:
            return match.group(1)
    except OSError:
        pass
    try:
        api = int(torch._C._cuda_getDriverVersion())  # e.g. 12040 for CUDA 12.4
        return f"unknown (supports CUDA {api // 1000}.{api % 1000 // 10})"
    except Exception:  # noqa: BLE001 - a private call; provenance must not crash the run
        return ""


def _commit() -> str:
    head = _run(["git", "rev-parse", "--short=12", "HEAD"])
    if not head:
        return ""
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"])
    return head.strip() + ("+dirty" if dirty and dirty.strip() else "")


def read_provenance(torch, clocks: dict[str, float], uuid: str | None) -> Provenance:
    import triton

    return Provenance(
        device_name=torch.cuda.get_device_name(0),
        driver=read_driver(torch, uuid),
        cuda=str(torch.version.cuda),
        torch=str(torch.__version__),
        triton=str(triton.__version__),
        date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        clocks=clocks,
        commit=_commit(),
    )


# --------------------------------------------------------------------------- ceilings


def measure_copy(torch, device: str = "cuda", buffer_bytes: int = COPY_BUFFER_BYTES) -> CopyMeasurement:
    """``dst.copy_(src)`` on two fp32 buffers of ``buffer_bytes``: read once + written once per copy."""
    from roofline_lib.measure import time_fn

    n = max(1, buffer_bytes // 4)  # fp32: 4 bytes per element
    src = torch.ones(n, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    timing = time_fn(lambda: dst.copy_(src), device=device)
    return CopyMeasurement(buffer_bytes=4 * n, seconds=timing.median_s, best_seconds=timing.min_s,
                           method=f"torch copy_, fp32; {timing.method}")


def _gemm_operands(torch, precision: str, n: int, device: str):
    """``(fn, label)``: a closure computing one ``n x n x n`` product in ``precision``."""
    if precision == "bf16":
        a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
        return (lambda: a @ b), "torch.matmul, bf16 in and out"
    if precision == "fp8":
        a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)  # row-major, as _scaled_mm wants
        b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()  # column-major
        one = torch.tensor(1.0, device=device)
        return (
            lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16, use_fast_accum=True),
            "torch._scaled_mm, e4m3 in, bf16 out, per-tensor scales, fast accumulation",
        )
    raise ValueError(f"precision must be 'bf16' or 'fp8', got {precision!r}")


def gemm_sweep(torch, precision: str, sizes=GEMM_SIZES, device: str = "cuda") -> list[GemmMeasurement]:
    """Time square products of each size in ``sizes``; 2 * n**3 FLOP each (1 MAC = 2 FLOP)."""
    from roofline_lib.measure import time_fn

    rows = []
    for n in sizes:
        fn, label = _gemm_operands(torch, precision, n, device)
        timing = time_fn(fn, device=device)
        rows.append(GemmMeasurement(precision=precision, m=n, n=n, k=n, seconds=timing.median_s,
                                    best_seconds=timing.min_s, method=f"{label}; {timing.method}"))
        del fn
    return rows


def chip_has_fp8(torch, spec) -> bool:
    """The registry lists fp8 for the chip and the device is Ada or newer (compute capability >= 8.9)."""
    return spec.has("fp8") and tuple(torch.cuda.get_device_capability(0)) >= (8, 9)


# --------------------------------------------------------------------------- notebooks and tests


def split_notebooks(root: Path = ROOT) -> tuple[list[str], list[str]]:
    """(strict, lax): notebooks with a reference record in tests/records/ are compared output by output."""
    strict, lax = [], []
    for folder in NOTEBOOK_DIRS:
        for path in sorted((root / folder).glob("*.md")):
            rel = path.relative_to(root)
            (strict if (root / "tests" / "records" / rel.with_suffix(".ipynb")).exists() else lax).append(str(rel))
    return strict, lax


def junit_counts(path: Path) -> dict[str, int]:
    """passed / failed / skipped from a pytest --junitxml report (errors count as failed)."""
    tree = ET.parse(path)
    suites = [tree.getroot()] if tree.getroot().tag == "testsuite" else list(tree.getroot())
    total = failed = skipped = 0
    for suite in suites:
        total += int(suite.get("tests", 0))
        failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped += int(suite.get("skipped", 0))
    return {"passed": total - failed - skipped, "failed": failed, "skipped": skipped}


def _gpu_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env[records.REQUIRE_GPU_ENV] = "1"
    return env


def _pytest(args: list[str], report: Path) -> dict[str, int]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", f"--junitxml={report}", *args]
    print("$", " ".join(cmd[1:]), flush=True)
    done = subprocess.run(cmd, cwd=ROOT, env=_gpu_env())
    if done.returncode == 5:  # nothing collected
        return {"passed": 0, "failed": 0, "skipped": 0}
    if not report.exists():
        return {"passed": 0, "failed": 1, "skipped": 0}  # pytest did not even start
    counts = junit_counts(report)
    if done.returncode != 0 and counts["failed"] == 0:
        counts["failed"] = 1  # a collection or usage error
    return counts


def run_notebooks(workdir: Path) -> NotebookRun:
    strict, lax = split_notebooks()
    total = {"passed": 0, "failed": 0, "skipped": 0}
    sanitize = ["--nbval-sanitize-with", "tests/nbval_sanitize.cfg"]
    for mode, files in (("--nbval", strict), ("--nbval-lax", lax)):
        if files:
            counts = _pytest([mode, *sanitize, "-p", "no:cacheprovider", *files], workdir / f"nbval{mode[7:]}.xml")
            total = {k: total[k] + counts[k] for k in total}
    return NotebookRun(strict=tuple(strict), lax=tuple(lax), **total)


def run_gpu_tests(workdir: Path) -> dict[str, int]:
    return _pytest(["-m", "gpu", "-p", "no:cacheprovider", "tests"], workdir / "gpu-tests.xml")


# --------------------------------------------------------------------------- report


def summary(record: GPURecord) -> str:
    lines = [record.label, ""]
    c = record.copy
    lines.append(f"copy      {c.buffer_bytes / 2**30:.3g} GiB buffers: {c.bytes_per_s / 1e12:.3g} TB/s median, "
                 f"{c.best_bytes_per_s / 1e12:.3g} TB/s best")
    for g in record.gemm:
        lines.append(f"gemm      {g.precision:>4} {g.m}^3: {g.flops_per_s / 1e12:7.1f} TFLOP/s median, "
                     f"{g.best_flops_per_s / 1e12:7.1f} best")
    for k in record.kernels:
        lines.append(f"kernel    {k}")
    if record.notebooks is not None:
        nb = record.notebooks
        lines.append(f"notebooks {len(nb.strict)} strict, {len(nb.lax)} lax: {nb.passed} cells passed, "
                     f"{nb.failed} failed, {nb.skipped} skipped")
    lines += ["", "targets (reported, not enforced):"]
    lines += [f"  {t}" for t in records.check_targets(record)]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpu_check", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=records.MEASUREMENTS_DIR, help="directory for the JSON record")
    p.add_argument("--gpu", help="registry name of this GPU, when its device name is not recognised")
    p.add_argument("--no-notebooks", action="store_true", help="measure only; skip nbval and the GPU tests")
    p.add_argument("--gemm-max", type=int, default=GEMM_SIZES[-1], help="largest GEMM side (default 8192)")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    reason = no_gpu_reason()
    if reason:
        print(f"gpu-check cannot run here: {reason}.", file=sys.stderr)
        print("It needs a CUDA GPU; on a CPU machine the chapters show the recorded measurements.", file=sys.stderr)
        return EXIT_CANNOT_RUN

    import torch

    from roofline_lib import kernels

    device_name = torch.cuda.get_device_name(0)
    try:
        spec = as_gpu(args.gpu) if args.gpu else records.match_gpu(device_name)
    except ValueError as err:
        print(f"gpu-check: {err}. Pass --gpu NAME if it is a registry part under another name.", file=sys.stderr)
        return EXIT_CANNOT_RUN
    uuid = str(getattr(torch.cuda.get_device_properties(0), "uuid", "") or "") or None
    print(f"gpu-check on {device_name} (registry: {spec.name}), torch {torch.__version__}, CUDA {torch.version.cuda}",
          flush=True)

    problems: list[str] = []
    sizes = tuple(n for n in GEMM_SIZES if n <= args.gemm_max) or (args.gemm_max,)
    try:
        copy = measure_copy(torch)
        print(f"copy: {copy.bytes_per_s / 1e12:.3g} TB/s", flush=True)
        gemm = gemm_sweep(torch, "bf16", sizes)
        if chip_has_fp8(torch, spec):
            try:
                gemm += gemm_sweep(torch, "fp8", sizes)
            except (RuntimeError, AttributeError, TypeError) as err:
                problems.append(f"the chip has fp8 but torch._scaled_mm failed: {err}")
        clocks = read_clocks(uuid)  # right after the sweep, while the clocks are up
        rows = []
        for name in kernels.DEMOS:
            print(f"demo {name} ...", flush=True)
            rows.append(kernels.run_demo(name, spec, bytes_per_s=copy.best_bytes_per_s))
    except (ImplausibleMeasurement, kernels.KernelMismatch) as err:
        print(f"gpu-check FAILED while measuring: {err}", file=sys.stderr)
        return EXIT_FAILED

    notebooks = None
    torch.cuda.empty_cache()  # hand the cached memory back before the notebooks' kernels start
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_notebooks:
            notebooks = run_notebooks(Path(tmp))
            if notebooks.failed:
                problems.append(f"{notebooks.failed} notebook cell(s) failed under nbval")
            if notebooks.skipped:
                problems.append(f"{notebooks.skipped} notebook cell(s) were skipped on a GPU machine")
            tests = run_gpu_tests(Path(tmp))
            if tests["failed"]:
                problems.append(f"{tests['failed']} GPU test(s) failed")
            if tests["skipped"]:
                problems.append(f"{tests['skipped']} GPU test(s) were skipped on a GPU machine")

    record = GPURecord(
        gpu=spec.key,
        provenance=read_provenance(torch, clocks, uuid),
        copy=copy,
        gemm=tuple(gemm),
        kernels=tuple(rows),
        notebooks=notebooks,
    )
    try:
        path = records.write_record(record, args.out)
    except (records.RecordError, ImplausibleMeasurement) as err:
        print(f"gpu-check FAILED: the record is not valid, nothing written: {err}", file=sys.stderr)
        return EXIT_FAILED
    print()
    print(summary(record))
    print(f"\nrecord written to {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    if args.no_notebooks:
        print("note: --no-notebooks, so nbval and the GPU tests were not run; the record says so")
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return EXIT_FAILED if problems else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
