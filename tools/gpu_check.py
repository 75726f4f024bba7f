"""`make gpu-check`: re-execute the course on a CUDA GPU and record what the chip really does.

    python tools/gpu_check.py [--out DIR] [--gpu NAME] [--no-notebooks] [--gemm-max N]

In order:

1. refuses to run (exit 2) without a CUDA GPU, with the CPU build of torch, under
   TRITON_INTERPRET, or on a GPU the registry does not hold;
2. measures the roofs through roofline_lib.evidence.measured_roofs, so the course has one definition of each:
   the memory roof is the better of a copy and an add over 1 GiB buffers
   (``measured_roofs.stream_readings``), the compute roof a square bf16 GEMM sweep up to 8192^3, and an
   fp8 sweep through ``torch._scaled_mm`` where the chip has fp8 (``measured_roofs.matmul_readings``);
3. times the course's Triton demos (roofline_lib.evidence.kernels), each checked against torch first and
   predicted from its byte count on the measured memory roof;
3b. measures energy on the GPU's NVML counter (``energy_live.NVMLCounter``, from ``nvidia-ml-py``):
   a bf16 8192^3 GEMM and a 1 GiB fp32 copy, each repeated back to back for at least two seconds
   between two readings (the counter is in millijoules and updates every 20-100 ms), recorded
   with its FLOPs, bytes, seconds and joules; where no counter answers, the record says why
   (``energy_note``) and stays valid;
4. runs nbval over every notebook with ROOFLINE_REQUIRE_GPU=1 (a GPU cell that would fall back
   to the record raises instead of skipping): strict, output against output, where the notebook
   has a reference record in tests/records/; execution-only (--nbval-lax) elsewhere; then the
   GPU-marked unit tests (pytest -m gpu). Any failure or any skip fails the check;
5. writes book/data/measurements/<registry key>.json with its provenance (GPU name, driver,
   CUDA, torch and triton versions, date, clocks when nvidia-smi can read them, git commit),
   after validating it against the registry's roofs, and prints the course's targets.

A step that fails (a demo that does not compile, runs out of memory or disagrees with torch; an
fp8 sweep torch cannot run) is recorded under ``failures`` with its error, beside the valid
measurements; a provenance field that cannot be read is recorded as "unknown". Only a failure of
the memory roof or of every bf16 GEMM leaves nothing valid to record.

The targets compare one statistic on both sides: the best (fastest) repetition of each
measurement, because a roof is the fastest the machine showed.

Exit status: 0 all good; 1 a check failed (the record is still written when its numbers are
valid); 2 this machine cannot run the check.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

from roofline_lib import energy_live, measured_roofs, record_report, records  # noqa: E402
from roofline_lib.core.formatting import to_unit  # noqa: E402
from roofline_lib.core.hardware import as_gpu  # noqa: E402
from roofline_lib.core.ops import gemm as gemm_count  # noqa: E402
from roofline_lib.evidence.provenance import UNKNOWN, GPUIdentity, gpu_identity  # noqa: E402
from roofline_lib.evidence.records import (  # noqa: E402
    CopyMeasurement,
    GemmMeasurement,
    GPURecord,
    MeasuredEnergy,
    NotebookRun,
    Provenance,
)

EXIT_OK, EXIT_FAILED, EXIT_CANNOT_RUN = 0, 1, 2

GEMM_SIZES = (1024, 2048, 4096, 8192)  # square m = n = k; 2 * 8192**3 = 1.1 TFLOP at the top
COPY_BUFFER_BYTES = 2**30  # 1 GiB per buffer: twenty times an H200's 50 MB L2
ENERGY_SECONDS = 2.0  # NVML counts mJ and updates every 20-100 ms: 2 s resolves a run to a few per cent at worst
ENERGY_GEMM_N = 8192  # bf16 8192^3: compute-bound, 1.1 TFLOP a call
ENERGY_COPY_BYTES = COPY_BUFFER_BYTES  # fp32 copy of 1 GiB: memory-bound, 2 GiB moved a call
NOTEBOOK_DIRS = ("notebooks", "exercises", "solutions")
MEASUREMENTS_DIR = ROOT / "book" / "data" / "measurements"  # where the book reads its records
_ERROR_CHARS = 300  # a failure is kept as its first line, this long at most: enough to act on


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


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=30, cwd=ROOT, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _commit() -> str:
    head = _git("rev-parse", "--short=12", "HEAD")
    if not head:
        return ""
    return head + ("+dirty" if _git("status", "--porcelain", "--untracked-files=no") else "")


def provenance(identity: GPUIdentity) -> Provenance:
    """The record's provenance from ``gpu_identity()``: what could not be read says "unknown"."""
    return Provenance(
        device_name=identity.device_name or UNKNOWN,
        driver=identity.driver or UNKNOWN,
        cuda=identity.cuda or UNKNOWN,
        torch=identity.torch or UNKNOWN,
        triton=identity.triton or UNKNOWN,
        date=datetime.now(UTC).isoformat(timespec="seconds"),
        clocks=dict(identity.clocks),
        commit=_commit(),
    )


# --------------------------------------------------------------------------- roofs, through measured_roofs.py


def memory_roof(buffer_bytes: float = COPY_BUFFER_BYTES, device: str = "cuda") -> CopyMeasurement:
    """The better of copy and add (``measured_roofs.stream_readings``), as the record's memory roof."""
    readings = measured_roofs.stream_readings(device, buffer_bytes=buffer_bytes)
    best = max(readings, key=lambda r: r.best_bytes_per_s)
    others = ", ".join(f"{r.kernel} {to_unit(r.best_bytes_per_s, 'TB/s'):.3g} TB/s" for r in readings)
    return CopyMeasurement(
        buffer_bytes=best.buffer_bytes,
        seconds=best.timing.median_s,
        best_seconds=best.timing.min_s,
        method=f"the better of copy and add, fp32 (best: {others}); {best.timing.method}",
        kernel=best.kernel,
    )


def gemm_rows(precision: str, sizes, device: str = "cuda") -> list[GemmMeasurement]:
    """One square product per size through ``measured_roofs.matmul_readings``; 2 * n**3 FLOP each."""
    rows = []
    for reading in measured_roofs.matmul_readings(device, list(sizes), precision):
        n, t = reading.n, reading.timing
        rows.append(
            GemmMeasurement(
                precision=precision, m=n, n=n, k=n, seconds=t.median_s, best_seconds=t.min_s, method=t.method
            )
        )
    return rows


def chip_has_fp8(torch, spec) -> bool:
    """The registry lists fp8 for the chip and the device is Ada or newer (compute capability >= 8.9)."""
    return spec.has("fp8") and tuple(torch.cuda.get_device_capability(0)) >= (8, 9)


def attempt(step: str, fn, failures: dict[str, str]):
    """``fn()``, or None with ``failures[step]`` set to the error: one failure never voids the rest."""
    try:
        return fn()
    except Exception as err:  # noqa: BLE001 - any error of one step is recorded, and the run goes on
        first_line = (str(err).strip().splitlines() or [""])[0]
        failures[step] = f"{type(err).__name__}: {first_line}"[:_ERROR_CHARS].strip()
        print(f"gpu-check: {step} FAILED: {failures[step]}", file=sys.stderr, flush=True)
        try:
            import torch

            torch.cuda.empty_cache()  # after an out-of-memory error, the next step starts clean
        except Exception:  # noqa: BLE001, S110 - best effort only
            pass
        return None


# --------------------------------------------------------------------------- energy, on the GPU's counter


def repeated_energy(counter, fn, seconds: float, **row) -> MeasuredEnergy:
    """``fn`` (one GPU call) repeated for at least ``seconds`` (:func:`energy_live.measure_repeated`) as a
    record's row: ``row`` gives its ``name``, ``precision``, ``shape`` and one call's ``flops`` and
    ``bytes_moved``; the totals are those times the repetitions."""
    r = energy_live.measure_repeated(fn, seconds, counter)
    return MeasuredEnergy(
        name=row["name"],
        precision=row["precision"],
        shape=tuple(row["shape"]),
        repetitions=r.repetitions,
        flops=row["flops"] * r.repetitions,
        bytes_moved=row["bytes_moved"] * r.repetitions,
        seconds=r.measurement.seconds,
        joules=r.measurement.joules,
        counter=r.measurement.counter,
        method=r.method,
    )


def gemm_energy(counter, n: int, seconds: float) -> MeasuredEnergy:
    """A square bf16 GEMM of side ``n``, repeated for ``seconds``: a compute-bound kernel's joules."""
    import torch

    a, b = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    op = gemm_count(n, n, n, bytes_per_elem=2)
    row = {
        "name": "bf16 GEMM",
        "precision": "bf16",
        "shape": (n, n, n),
        "flops": op.flops,
        "bytes_moved": op.bytes_moved,
    }
    return repeated_energy(counter, lambda: a @ b, seconds, **row)


def copy_energy(counter, buffer_bytes: float, seconds: float) -> MeasuredEnergy:
    """An fp32 device copy of ``buffer_bytes``, repeated for ``seconds``: a memory-bound kernel's joules."""
    import torch

    n = int(buffer_bytes) // 4  # fp32 elements
    src = torch.ones(n, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    moved = 2.0 * 4 * n  # read the source + write the destination, 4 bytes an element
    row = {"name": "copy", "precision": "fp32", "shape": (n,), "flops": 0.0, "bytes_moved": moved}
    return repeated_energy(counter, lambda: dst.copy_(src), seconds, **row)


def measure_energy_runs(failures: dict[str, str]) -> tuple[list[MeasuredEnergy], str]:
    """(rows, note): the GEMM's and the copy's joules on the counter, or no rows and why not."""
    try:
        counter = energy_live.cuda_energy_counter()
    except energy_live.NoEnergyCounter as reason:
        print(f"energy: not measured: {reason}", flush=True)
        return [], str(reason)
    rows = []
    runs = {
        "energy bf16 GEMM": lambda: gemm_energy(counter, ENERGY_GEMM_N, ENERGY_SECONDS),
        "energy copy": lambda: copy_energy(counter, ENERGY_COPY_BYTES, ENERGY_SECONDS),
    }
    for step, run in runs.items():
        row = attempt(step, run, failures)
        if row is not None:
            print(
                f"energy: {row.name}: {row.joules:.4g} J in {row.seconds:.3g} s, {row.average_watts:.4g} W", flush=True
            )
            rows.append(row)
    return rows, ""


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
    env[record_report.REQUIRE_GPU_ENV] = "1"
    return env


def _pytest(args: list[str], report: Path) -> dict[str, int]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", f"--junitxml={report}", *args]
    print("$", " ".join(cmd[1:]), flush=True)
    done = subprocess.run(cmd, check=False, cwd=ROOT, env=_gpu_env())
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
    lines.append(
        f"memory    {c.kernel}, {to_unit(c.buffer_bytes, 'GiB'):.3g} GiB buffers: {to_unit(c.bytes_per_s, 'TB/s'):.3g} TB/s median, "
        f"{to_unit(c.best_bytes_per_s, 'TB/s'):.3g} TB/s best"
    )
    for g in record.gemm:
        lines.append(
            f"gemm      {g.precision:>4} {g.m}^3: {to_unit(g.flops_per_s, 'TFLOP/s'):7.1f} TFLOP/s median, "
            f"{to_unit(g.best_flops_per_s, 'TFLOP/s'):7.1f} best"
        )
    for k in record.kernels:
        lines.append(f"kernel    {k}")
    lines += [f"energy    {line}" for line in record_report.describe_energy(record).splitlines()[1:]]
    for step, error in record.failures.items():
        lines.append(f"FAILED    {step}: {error}")
    if record.notebooks is not None:
        nb = record.notebooks
        lines.append(
            f"notebooks {len(nb.strict)} strict, {len(nb.lax)} lax: {nb.passed} cells passed, "
            f"{nb.failed} failed, {nb.skipped} skipped"
        )
    lines += ["", "targets (reported, not enforced; best repetition against best on both sides):"]
    lines += [f"  {t}" for t in record_report.check_targets(record)]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpu_check", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=MEASUREMENTS_DIR, help="directory for the JSON record")
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

    spec = _registry_part(torch, args.gpu)
    if spec is None:
        return EXIT_CANNOT_RUN
    failures: dict[str, str] = {}
    copy, gemm = _measure_roofs(torch, spec, args.gemm_max, failures)
    identity = gpu_identity()  # right after the sweep, while the clocks are up
    if copy is None or not any(g.precision == "bf16" for g in gemm):
        print(
            "gpu-check FAILED: without the memory roof and a bf16 GEMM there is no valid record to write",
            file=sys.stderr,
        )
        return EXIT_FAILED
    rows = _time_demos(spec, copy, failures)
    energy, energy_note = measure_energy_runs(failures)
    attempt("torch.cuda.empty_cache", torch.cuda.empty_cache, failures)  # hand memory back before the notebooks
    notebooks, problems = _run_checks(args.no_notebooks)
    record = GPURecord(
        gpu=spec.key,
        provenance=provenance(identity),
        copy=copy,
        gemm=tuple(gemm),
        kernels=tuple(rows),
        notebooks=notebooks,
        failures=dict(failures),
        energy=tuple(energy),
        energy_note=energy_note,
    )
    return _write_and_report(record, args, problems + [f"{step}: {error}" for step, error in failures.items()])


def _registry_part(torch, gpu: str | None):
    """The registry part this GPU is (``--gpu`` or matched by its name), or None after saying why not."""
    device_name = torch.cuda.get_device_name(0)
    try:
        spec = as_gpu(gpu) if gpu else records.match_gpu(device_name)
    except ValueError as err:
        print(f"gpu-check: {err}. Pass --gpu NAME if it is a registry part under another name.", file=sys.stderr)
        return None
    print(
        f"gpu-check on {device_name} (registry: {spec.name}), torch {torch.__version__}, CUDA {torch.version.cuda}",
        flush=True,
    )
    return spec


def _measure_roofs(torch, spec, gemm_max: int, failures: dict[str, str]):
    """The memory roof (or None) and the GEMM rows of the sweep, bf16 and fp8 where the chip has it."""
    sizes = tuple(n for n in GEMM_SIZES if n <= gemm_max) or (gemm_max,)
    copy = attempt("memory roof (copy and add)", memory_roof, failures)
    if copy is not None:
        print(f"memory roof: {to_unit(copy.best_bytes_per_s, 'TB/s'):.3g} TB/s best ({copy.kernel})", flush=True)
    gemm = []
    for n in sizes:
        gemm += attempt(f"bf16 GEMM {n}^3", lambda n=n: gemm_rows("bf16", (n,)), failures) or []
    if chip_has_fp8(torch, spec):
        for n in sizes:
            gemm += attempt(f"fp8 GEMM {n}^3", lambda n=n: gemm_rows("fp8", (n,)), failures) or []
    return copy, gemm


def _time_demos(spec, copy, failures: dict[str, str]) -> list:
    """Every Triton demo checked and timed against the measured memory roof; a failed one is recorded."""
    rows = []
    kernels = attempt(
        "import roofline_lib.evidence.kernels", lambda: __import__("roofline_lib.evidence.kernels").kernels, failures
    )
    for name in kernels.DEMOS if kernels is not None else ():
        print(f"demo {name} ...", flush=True)
        row = attempt(
            f"demo {name}", lambda name=name: kernels.run_demo(name, spec, bytes_per_s=copy.best_bytes_per_s), failures
        )
        if row is not None:
            rows.append(row)
    return rows


def _run_checks(no_notebooks: bool):
    """The notebooks under nbval and the GPU tests (unless ``--no-notebooks``): (NotebookRun or None, problems)."""
    notebooks, problems = None, []
    if no_notebooks:
        return notebooks, problems
    with tempfile.TemporaryDirectory() as tmp:
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
    return notebooks, problems


def _write_and_report(record: GPURecord, args, problems: list[str]) -> int:
    """Write the record (refused if the guard rejects a number), print its summary and every problem."""
    try:
        path = records.write_record(record, args.out)
    except ValueError as err:  # RecordError or ImplausibleMeasurement: a number the guard refuses
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
