"""The interconnect registry: one-direction SI figures, aliases, every GPU's links, the 8-GPU nodes."""

from __future__ import annotations

import dataclasses
import math

import pytest

import roofline_lib as rl
from roofline_lib import interconnect as ic


def test_nvlink_generations_store_one_direction_of_the_datasheet_sum():
    # datasheets print both directions: 600, 900 and 1800 GB/s -> 300, 450 and 900 GB/s each way
    assert rl.link("nvlink3").bytes_per_s == 300e9
    assert rl.link("NVLink 4").bytes_per_s == 450e9
    assert rl.link("nvlink-5").bytes_per_s == 900e9
    assert rl.link("nvlink4").bidirectional_bytes_per_s == 900e9  # 2 * 450 GB/s


def test_pcie_x16_is_lanes_times_transfer_rate():
    # PCIe 4: 16 GT/s * 16 lanes / 8 bits = 32 GB/s of signalling each way, * 128 / 130 = 31.5 GB/s
    # of payload; PCIe 5 doubles the rate: 63 GB/s
    assert rl.link("PCIe Gen4").bytes_per_s == pytest.approx(16e9 * 16 / 8 * 128 / 130)
    assert round(rl.link("PCIe Gen4").bytes_per_s / 1e9, 1) == 31.5
    assert round(rl.link("pcie5").bytes_per_s / 1e9, 1) == 63.0
    # the H100 datasheet's 128 GB/s is raw signalling, both ways: 2 * 63.0 = 126 after the line code
    assert rl.link("pcie5").bidirectional_bytes_per_s == pytest.approx(128e9 * 128 / 130)


def test_infiniband_ports_are_named_by_their_bits_per_second():
    # HDR 200 Gb/s = 25 GB/s, NDR 400 Gb/s = 50 GB/s, XDR 800 Gb/s = 100 GB/s, one direction each
    for name, gbit in (("HDR", 200), ("ndr", 400), ("InfiniBand XDR", 800)):
        spec = rl.link(name)
        assert spec.kind == "infiniband"
        assert spec.bits_per_s == gbit * 1e9
        assert spec.bytes_per_s == gbit * 1e9 / 8


def test_every_link_has_a_source_and_a_positive_finite_figure():
    assert set(ic.known_links()) >= {
        "nvlink3",
        "nvlink4",
        "nvlink5",
        "pcie4-x16",
        "pcie5-x16",
        "ib-hdr",
        "ib-ndr",
        "ib-xdr",
    }
    for key, spec in rl.link_registry().items():
        assert spec.key == key and spec.kind in rl.LINK_KINDS
        assert spec.source.strip(), key
        assert math.isfinite(spec.bytes_per_s) and spec.bytes_per_s > 0


def test_every_registry_gpu_has_its_links_with_a_source():
    for key in rl.known_gpus():
        links = rl.gpu_links(key)  # every registry chip has an entry (a TPU's may be empty: ICI is not here)
        assert rl.gpu_links_source(key).strip()
        # fastest first
        assert [s.bytes_per_s for s in links] == sorted((s.bytes_per_s for s in links), reverse=True)
    assert [s.key for s in rl.gpu_links("A100")] == ["nvlink3", "pcie4-x16"]
    assert [s.key for s in rl.gpu_links("h100")] == ["nvlink4", "pcie5-x16"]
    assert [s.key for s in rl.gpu_links("B200")] == ["nvlink5", "pcie5-x16"]
    assert [s.kind for s in rl.gpu_links("L4")] == ["pcie"]  # no NVLink on an L4


def test_nodes_pair_their_gpu_with_nvlink_inside_and_infiniband_outside():
    h100 = rl.node("8x H100")
    assert rl.node("DGX H100") is h100 and rl.node("8x-h100") is h100
    assert h100.gpu is rl.gpu("H100") and h100.n_gpus == 8
    assert h100.scale_up_bytes_per_s == 450e9
    # 8 NDR ports of 50 GB/s for 8 GPUs: 50 GB/s per GPU, 400 GB/s for the node
    assert h100.scale_out_bytes_per_s_per_gpu == 50e9
    assert h100.scale_out_bytes_per_s == 400e9
    assert rl.node("8x A100").scale_out.key == "ib-hdr"
    assert rl.node("8x B200").scale_up.key == "nvlink5"
    # inside the node is 9x faster than out of it on an H100 board: 450 / 50
    assert h100.scale_up_bytes_per_s / h100.scale_out_bytes_per_s_per_gpu == 9
    assert (h100.nic_count, h100.nic_bytes_per_s) == (8, 50e9)  # 8 ConnectX-7 at 400 Gb/s


def test_unknown_names_raise_and_list_what_is_known():
    with pytest.raises(ValueError, match=r"unknown link 'nvlink9'; known links: nvlink3 \(NVLink 3\)"):
        rl.link("nvlink9")
    with pytest.raises(ValueError, match="unknown node '4x A100'; known nodes: 8x-a100"):
        rl.node("4x A100")
    with pytest.raises(TypeError, match="link name must be a string"):
        rl.link(400)
    with pytest.raises(TypeError, match="link must be a LinkSpec or a link name"):
        rl.as_link(400e9)
    with pytest.raises(ValueError, match="unknown GPU"):
        rl.gpu_links("K80")
    homemade = dataclasses.replace(rl.gpu("H100"), key="h100-homemade")
    with pytest.raises(ValueError, match="the interconnect registry has no links for 'H100 SXM'"):
        rl.gpu_links(homemade)


def test_bad_values_are_refused_with_parameter_and_unit():
    good = rl.link("ndr")
    with pytest.raises(ValueError, match="bytes_per_s must be a positive number of bytes per second"):
        dataclasses.replace(good, bytes_per_s=0)
    with pytest.raises(ValueError, match="bytes_per_s must be a finite number"):
        dataclasses.replace(good, bytes_per_s=float("inf"))
    with pytest.raises(ValueError, match="kind must be one of nvlink, pcie, infiniband, got 'ethernet'"):
        dataclasses.replace(good, kind="ethernet")
    with pytest.raises(ValueError, match="lanes must be a positive whole number"):
        dataclasses.replace(good, lanes=0)
    node = rl.node("8x A100")
    with pytest.raises(ValueError, match="n_gpus must be a positive whole number of GPUs"):
        dataclasses.replace(node, n_gpus=0)
    with pytest.raises(TypeError, match="scale_out must be a LinkSpec"):
        dataclasses.replace(node, scale_out="ib-hdr")


def test_a_name_given_for_another_parameter_is_named_in_the_refusal():
    # collective_cost takes a link name in place of bytes_per_s; an unknown one says which input it was
    with pytest.raises(
        ValueError, match=r"unknown link 'token ring'.*\(bytes_per_s='token ring' was read as a link name\)"
    ):
        rl.collective_cost("all_reduce", 1e8, 8, 5e-6, "token ring")
    with pytest.raises(ValueError, match="name must name a link"):
        rl.link("  ")
    with pytest.raises(ValueError, match="name must name a GPU"):
        rl.gpu("")
    # the three registries answer to the same spellings: case, '_' for '-', a space for '-'
    assert rl.link("NVLINK_4") is rl.link("nvlink 4") is rl.link("nvlink4")
    assert rl.node("8X_H100") is rl.node("8x h100")
    assert rl.gpu("H100_SXM") is rl.gpu("h100-sxm")


def test_every_speed_in_the_data_file_says_how_many_directions_it_sums_and_where_it_comes_from():
    from roofline_lib.core import registry_data

    table = registry_data.read_table("roofline_lib.core", "data/interconnect.json")
    assert list(table["links"]) == list(ic.known_links()) and list(table["nodes"]) == list(ic.known_nodes())
    for key, record in table["links"].items():
        printed = record["bytes_per_s"]
        assert printed["directions"] in (1, 2) and printed["from"].strip(), key
        # NVLink and PCIe datasheets print both directions; PCIe's figure here is one lane's rate
        # times its lanes, so it is one direction, as InfiniBand's
        assert printed["directions"] == (2 if record["kind"] == "nvlink" else 1), key
    assert set(table["gpu_links"]) == set(rl.known_gpus())  # every registry chip has an entry
