"""Provenance: who measured a GPU number, from nvidia-smi and torch (device, driver, CUDA, versions, clocks).

:func:`gpu_identity` reads the provenance a GPU number must carry (name, driver, CUDA, torch
and triton versions, clocks) for torch's device 0, from ``nvidia-smi`` where it can;
:func:`parse_smi_rows` reads nvidia-smi's CSV answer.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from ..core.checks import _positive
from .measure import has_cuda

__all__ = ["UNKNOWN", "GPUIdentity", "gpu_identity", "parse_smi_rows"]

_SMI_TIMEOUT_S = 30  # nvidia-smi answers in well under a second; a hung driver must not hang us

#: What :func:`gpu_identity` asks nvidia-smi for, and the key each clock is kept under (MHz).
_SMI_FIELDS = ("index", "uuid", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem")
_SMI_CLOCKS = {
    "clocks.sm": "sm_mhz",
    "clocks.mem": "mem_mhz",
    "clocks.max.sm": "max_sm_mhz",
    "clocks.max.mem": "max_mem_mhz",
}
#: What a provenance field holds when it could not be read: the record keeps everything else.
UNKNOWN = "unknown"


@dataclass(frozen=True)
class GPUIdentity:
    """Who measured a GPU number: the device and every version its figures depend on.

    A field that could not be read holds ``"unknown"`` instead of voiding the rest; ``clocks``
    (MHz) holds only the clocks nvidia-smi could read, and may be empty.
    """

    device_name: str
    driver: str
    cuda: str
    torch: str
    triton: str
    uuid: str = UNKNOWN
    clocks: Mapping[str, float] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.device_name}, driver {self.driver}, CUDA {self.cuda}, torch {self.torch}, triton {self.triton}"


def parse_smi_rows(text: str, fields: Sequence[str]) -> list[dict[str, str]]:
    """Rows of ``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits``, by field name.

    Lines that are not rows of exactly ``len(fields)`` comma-separated values (a warning printed
    first, a blank line) are skipped, and so is a row whose ``index`` field is not a whole
    number. Values nvidia-smi cannot read ("[N/A]", "[Not Supported]", "N/A") are left out of
    their row.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be nvidia-smi's output as a string, got {type(text).__name__}")
    rows = []
    for line in text.splitlines():
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(fields):
            continue
        row = {
            f: v
            for f, v in zip(fields, values)
            if v and not v.startswith("[") and v.lower() not in ("n/a", "not supported")
        }
        if "index" in fields and not row.get("index", "").isdigit():
            continue
        rows.append(row)
    return rows


def _visible_selector() -> str | None:
    """The first entry of CUDA_VISIBLE_DEVICES (an index or a GPU-UUID): torch's device 0."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    first = value.split(",")[0].strip()
    return first or None


def _pick_smi_row(rows: list[dict[str, str]], uuid: str | None) -> dict[str, str]:
    """nvidia-smi's row for torch's device 0: by UUID, else by CUDA_VISIBLE_DEVICES, else the first row."""
    if not rows:
        return {}
    if uuid:
        want = uuid.lower().removeprefix("gpu-")
        for row in rows:
            if row.get("uuid", "").lower().removeprefix("gpu-") == want:
                return row
    selector = _visible_selector()
    if selector is not None:
        for row in rows:
            if selector.isdigit() and row.get("index") == selector:
                return row
            if selector.lower().startswith("gpu-") and row.get("uuid", "").lower().startswith(selector.lower()):
                return row
        return {}  # the visible GPU is not among the rows: better unknown than another GPU's driver
    return rows[0]


def _read_smi(fields: Sequence[str]) -> str | None:
    """nvidia-smi's answer for every GPU (``-i`` would ignore CUDA_VISIBLE_DEVICES), or None."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    cmd = [exe, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
    try:
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=_SMI_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _driver_fallback(torch) -> str:
    """The driver version without nvidia-smi: the kernel module's banner, then the CUDA driver API."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as fh:
            match = re.search(r"Kernel Module\s+(?:for \S+\s+)?([0-9][0-9.]+)", fh.read())
        if match:
            return match.group(1)
    except OSError:
        pass
    getter = getattr(getattr(torch, "_C", None), "_cuda_getDriverVersion", None)  # private: may not exist
    try:
        api = int(getter()) if getter is not None else 0
    except Exception:  # noqa: BLE001 - a private call; provenance must never crash a run
        api = 0
    if api > 0:
        return f"{UNKNOWN} (supports CUDA {api // 1000}.{api % 1000 // 10})"
    return UNKNOWN


def gpu_identity() -> GPUIdentity:
    """The provenance of torch's CUDA device 0: name, driver, CUDA, torch and triton, clocks.

    nvidia-smi is asked about every GPU, and the row of torch's device 0 is chosen by its UUID,
    else by the first entry of CUDA_VISIBLE_DEVICES (nvidia-smi numbers GPUs physically, torch
    numbers the visible ones). Warning lines in its output are skipped. Without nvidia-smi the
    driver comes from the kernel module's banner or the CUDA driver API; whatever cannot be
    read is ``"unknown"``.
    """
    if not has_cuda():
        raise RuntimeError("gpu_identity needs a CUDA GPU, and torch sees none")
    import torch

    props = torch.cuda.get_device_properties(0)
    uuid = str(getattr(props, "uuid", "") or "") or None
    text = _read_smi(_SMI_FIELDS)
    row = _pick_smi_row(parse_smi_rows(text, _SMI_FIELDS), uuid) if text else {}
    clocks = {}
    for name, key in _SMI_CLOCKS.items():
        try:
            clocks[key] = _positive(float(row[name]), name, "MHz")
        except (KeyError, TypeError, ValueError):
            continue
    try:
        import triton

        triton_version = str(triton.__version__)
    except ImportError:
        triton_version = UNKNOWN
    return GPUIdentity(
        device_name=str(torch.cuda.get_device_name(0)) or UNKNOWN,
        driver=row.get("driver_version") or _driver_fallback(torch),
        cuda=str(torch.version.cuda or UNKNOWN),
        torch=str(torch.__version__),
        triton=triton_version,
        uuid=uuid or row.get("uuid", UNKNOWN),
        clocks=MappingProxyType(clocks),
    )
