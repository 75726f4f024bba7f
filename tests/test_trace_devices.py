"""The GPU a trace names, found in the registry: NVIDIA names as torch prints them, AMD names with
both parts in them or none, gfx ids, and one die of a two-die package."""

from __future__ import annotations

import pytest

from roofline_lib import trace_devices as TD


@pytest.mark.parametrize(
    ("name", "props", "part", "share"),
    [
        ("NVIDIA A100-SXM4-80GB", {}, "A100 80GB SXM", 1.0),
        # ROCm names both parts at once; the compute units say which: 220 / 2 = 110 per MI250X die,
        # 208 / 2 = 104 per MI250 die
        ("AMD Instinct MI250X / MI250", {"numSms": 110}, "MI250X", 0.5),
        ("AMD Instinct MI250X / MI250", {"numSms": 104}, "MI250", 0.5),
        ("AMD Instinct MI300X", {"numSms": 304}, "MI300X", 1.0),
        ("AMD Instinct MI300X", {}, "MI300X", 1.0),  # one part named: no count needed
        # older ROCm: "AMD Radeon Graphics", the architecture from gcnArchName or capability 9.0/9.4
        ("AMD Radeon Graphics", {"gcnArchName": "gfx942:sramecc+:xnack-", "numSms": 304}, "MI300X", 1.0),
        ("AMD Radeon Graphics", {"computeMajor": 9, "computeMinor": 0, "numSms": 104}, "MI250", 0.5),
    ],
)
def test_a_device_is_matched_to_its_registry_part_and_share(name, props, part, share):
    match = TD.registry_gpu(name, props)
    assert (match.spec.name, match.share) == (part, share)


def test_one_die_has_half_the_package_roof():
    match = TD.registry_gpu("AMD Instinct MI250X / MI250", {"numSms": 110})
    roof = TD.device_roof(match, "bf16")
    # MI250X: 383 TFLOP/s bf16 and 3276.8 GB/s for the package, half of each for one die
    assert (roof.peak_flops_per_s, roof.bytes_per_s) == (191.5e12, 1638.4e9) and roof.label == "MI250X one die bf16"


@pytest.mark.parametrize(
    ("name", "props", "message"),
    [
        ("AMD Instinct MI250X / MI250", {}, "fits MI250X, MI250; the trace gives no compute-unit count"),
        ("AMD Radeon Graphics", {"computeMajor": 9, "computeMinor": 0, "numSms": 120}, "architecture gfx90a, 120 SMs"),
        ("AMD Radeon RX 7900 XTX", {"gcnArchName": "gfx1100"}, "architecture gfx1100"),
        ("NVIDIA GeForce RTX 4090", {}, "name 'NVIDIA GeForce RTX 4090'"),
    ],
)
def test_a_device_the_registry_does_not_know_is_refused_with_what_the_trace_said(name, props, message):
    with pytest.raises(ValueError, match="registry does not know") as err:
        TD.registry_gpu(name, props)
    assert message in str(err.value) and "roof=" in str(err.value)
    with pytest.raises(TypeError, match="name must be a device's name"):
        TD.registry_gpu("", {})
