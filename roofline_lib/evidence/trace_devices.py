"""The GPU a trace was recorded on, found in the registry from what the trace says of it.

A Kineto trace describes each device in ``deviceProperties``: its name as the runtime reports it,
its compute capability, its number of SMs (compute units on AMD) and its memory. NVIDIA names are
matched as ``torch.cuda.get_device_name`` prints them (:func:`roofline_lib.core.hardware.match_gpu`).
AMD names need more:

* ROCm names an Instinct MI250X or MI250 "AMD Instinct MI250X / MI250" -- both parts at once -- and
  older ROCm releases name every Instinct "AMD Radeon Graphics", with only its architecture (a gfx
  id such as gfx90a, or the compute capability HIP reports for it, 9.0) to go by;
* an MI250X or MI250 package holds two dies (GCDs), and ROCm shows each die as a device of its own,
  with half the package's compute units and memory: a rank on one die has half the package's roofs.

So the part is told by its compute units: :func:`registry_gpu` returns the registry entry and the
share of it the device is (1 for a whole GPU, 1/2 for one die of a two-die package).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from ..core.hardware import GPUSpec, gpu, known_gpus, match_gpu
from ..core.roofline import Roof

__all__ = ["DeviceMatch", "registry_gpu", "device_roof"]

# AMD architectures (LLVM's AMDGPU processor names) and the registry parts built on them. gfx90a is
# CDNA 2 (MI250X, MI250, and the one-die MI210, which is not in the registry); gfx942 is CDNA 3
# (MI300X; the MI300A and MI325X share it and are not in the registry). HIP reports gfx90a as compute
# capability 9.0 and gfx942 as 9.4 (hipDeviceProp_t major/minor).
_ARCHITECTURES = {"gfx90a": ("mi250x", "mi250"), "gfx942": ("mi300x",)}
_CAPABILITIES = {(9, 0): "gfx90a", (9, 4): "gfx942"}
# Dies per package, from AMD's data sheets: the MI250X and MI250 are two GCDs each, shown by ROCm
# as two devices; the MI300X is one device of 304 compute units (its 8 XCDs are not shown apart).
_DIES = {"mi250x": 2, "mi250": 2, "mi300x": 1}
_GFX = re.compile(r"gfx[0-9a-f]{3,4}", re.IGNORECASE)
# Names that say only "an AMD GPU" (ROCm before 6.2 reported every Instinct this way).
_GENERIC = re.compile(r"^AMD Radeon Graphics$|^AMD Radeon\b.*gfx", re.IGNORECASE)


@dataclass(frozen=True)
class DeviceMatch:
    """A trace's device in the registry: the part ``spec``, the ``share`` of it the device is (1/2
    for one die of a two-die package) and ``how`` it was matched, in words."""

    spec: GPUSpec
    share: float
    how: str


def registry_gpu(name: str, props: Mapping | None = None) -> DeviceMatch:
    """The registry entry for a trace's device: its ``name`` as the trace spells it and its
    ``deviceProperties`` entry ``props`` (compute capability, SM or compute-unit count).

    Raises ValueError naming what the trace says of the device when no registry part fits it.
    """
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"name must be a device's name as the trace spells it, got {name!r}")
    props = props or {}
    units = props.get("numSms") if isinstance(props.get("numSms"), int) else None
    candidates = _amd_candidates(name, props)
    if candidates is None:  # not an AMD name: NVIDIA's (or the registry's own) spelling
        try:
            return DeviceMatch(match_gpu(name), 1.0, f"{name!r} by name")
        except ValueError:
            raise _unknown(name, props) from None
    fits = [m for m in (_by_units(key, units) for key in candidates) if m is not None]
    if len(fits) == 1:
        return fits[0]
    if not fits and len(candidates) == 1 and units is None:
        spec = gpu(candidates[0])
        return DeviceMatch(spec, 1.0, f"{name!r} as the whole {spec.name} (the trace gives no compute-unit count)")
    raise _unknown(name, props, [gpu(k).name for k in candidates])


def _amd_candidates(name: str, props: Mapping) -> tuple[str, ...] | None:
    """The registry keys an AMD device name (or its gfx id / compute capability) allows; None when
    the name is not AMD's."""
    if not name.lower().startswith("amd") and not _GFX.search(name):
        return None
    if not _GENERIC.search(name):  # a marketing name: each part it names ("MI250X / MI250")
        keys = []
        for part in name.split("/"):
            part = part.strip()
            part = part if part.lower().startswith(("amd", "instinct")) else f"AMD Instinct {part}"
            try:
                keys.append(match_gpu(part).key)
            except ValueError:
                continue
        if keys:
            return tuple(keys)
    arch = _architecture(name, props)
    return _ARCHITECTURES.get(arch, ()) if arch else ()


def _architecture(name: str, props: Mapping) -> str | None:
    """The gfx id from the name, from ``gcnArchName`` or from the compute capability HIP reports."""
    for text in (name, str(props.get("gcnArchName", ""))):
        m = _GFX.search(text)
        if m:
            return m.group(0).lower()
    major, minor = props.get("computeMajor"), props.get("computeMinor")
    return _CAPABILITIES.get((major, minor)) if isinstance(major, int) and isinstance(minor, int) else None


def _by_units(key: str, units: int | None) -> DeviceMatch | None:
    """The part ``key`` if the device's compute-unit count is the whole part's or one die's."""
    spec = gpu(key)
    dies = _DIES.get(key, 1)
    if units is None or spec.sm_count is None:
        return None
    if units == spec.sm_count:
        return DeviceMatch(spec, 1.0, f"the whole {spec.name} ({units} compute units)")
    if dies > 1 and units * dies == spec.sm_count:
        return DeviceMatch(
            spec, 1.0 / dies, f"one die of an {spec.name} ({units} of its {spec.sm_count} compute units)"
        )
    return None


def _unknown(name: str, props: Mapping, candidates=()) -> ValueError:
    said = [f"name {name!r}"]
    arch = _architecture(name, props)
    if arch:
        said.append(f"architecture {arch}")
    if isinstance(props.get("numSms"), int):
        said.append(f"{props['numSms']} SMs / compute units")
    if candidates and not isinstance(props.get("numSms"), int):
        could = f" (it fits {', '.join(candidates)}; the trace gives no compute-unit count to tell which)"
    elif candidates:
        could = f" (its name or architecture fits {', '.join(candidates)}, but not its compute units)"
    else:
        could = ""
    return ValueError(
        f"the trace was recorded on a GPU the registry does not know -- {', '.join(said)}{could}; it knows: "
        f"{', '.join(known_gpus())}. Pass roof=<the nearest registry GPU> or roof=rl.Roof(peak_flops_per_s, "
        "bytes_per_s, label) with your GPU's datasheet figures"
    )


def device_roof(match: DeviceMatch, precision: str) -> Roof:
    """The datasheet roof of a matched device in ``precision``: the part's, times its share."""
    whole = Roof.of_gpu(match.spec, precision)
    if match.share == 1.0:
        return whole
    part = f"{match.spec.name} one die"
    return Roof(
        whole.peak_flops_per_s * match.share,  # one die of two: half the package's peak
        whole.bytes_per_s * match.share,  # and half its HBM stacks
        f"{part} {precision.lower()}",
        compute_label=f"{part} dense {precision.lower()} compute peak ({match.share:g} of the package's)",
        memory_label=f"{part} HBM bandwidth roof ({match.share:g} of the package's)",
    )
