"""The registry: names, aliases, units, precisions a chip has and lacks."""

import dataclasses

import pytest

import roofline_lib as rl


def test_a100_defaults_to_the_80gb_sxm_part():
    spec = rl.gpu("A100")
    assert spec.name == "A100 80GB SXM"
    assert spec.hbm_bytes_per_s == 2039e9  # datasheet: 2,039 GB/s
    assert spec.hbm_capacity_bytes == 80 * 2**30  # "80 GB" is 80 GiB: 85,899,345,920 bytes
    assert spec.peak_flops_per_s("bf16") == 312e12  # dense; 624 is the sparse figure


def test_a100_40gb_is_a_separate_entry_with_less_bandwidth():
    spec = rl.gpu("a100-40gb")
    assert spec.hbm_bytes_per_s == 1555e9
    assert spec.peak_flops_per_s("bf16") == rl.gpu("A100").peak_flops_per_s("bf16")


def test_h100_defaults_to_sxm_and_stores_dense_figures():
    spec = rl.gpu("h100")
    assert spec.name == "H100 SXM"
    # datasheet prints 1,979 TFLOP/s "with sparsity"; dense is half: 989.5
    assert spec.peak_flops_per_s("bf16") == pytest.approx(989.5e12)
    assert spec.peak_flops_per_s("bf16", sparse=True) == pytest.approx(1979e12)
    assert spec.peak_flops_per_s("fp8") == pytest.approx(1979e12)  # 3958 / 2


@pytest.mark.parametrize("name", ["H100", "h100", " H100 ", "H100-SXM5", "h100_sxm", "H100 SXM"])
def test_names_are_case_insensitive_with_aliases(name):
    assert rl.gpu(name).key == "h100-sxm"


def test_registry_covers_the_cards_the_course_uses():
    for name in ["A100", "A100-40GB", "H100", "H100 PCIe", "H200", "B200", "L4"]:
        assert isinstance(rl.gpu(name), rl.GPUSpec)


def test_unknown_gpu_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown GPU 'K80'.*a100-80gb-sxm.*h100-sxm"):
        rl.gpu("K80")


def test_non_string_name_is_a_type_error():
    with pytest.raises(TypeError, match="gpu name must be a string"):
        rl.gpu(100)


def test_precision_the_chip_lacks_names_the_ones_it_has():
    with pytest.raises(ValueError, match=r"A100 80GB SXM has no fp8.*fp32, tf32, bf16, fp16, int8"):
        rl.gpu("A100").peak_flops_per_s("fp8")
    with pytest.raises(ValueError, match="has no fp4"):
        rl.gpu("H100").peak_flops_per_s("fp4")


def test_unknown_precision_is_refused():
    with pytest.raises(ValueError, match="precision must be one of"):
        rl.gpu("A100").peak_flops_per_s("fp12")


def test_fp32_sparse_does_not_exist():
    with pytest.raises(ValueError, match="no a sparse figure for fp32|has no"):
        rl.gpu("A100").peak_flops_per_s("fp32", sparse=True)


def test_only_blackwell_has_fp4():
    have = [k for k, s in rl.registry().items() if s.has("fp4")]
    assert have == ["b200"]


def test_specs_are_frozen_and_tables_read_only():
    spec = rl.gpu("H200")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.hbm_bytes_per_s = 1.0
    with pytest.raises(TypeError):
        spec.dense_flops_per_s["bf16"] = 1.0


def test_every_entry_cites_a_datasheet_and_is_in_si_units():
    for spec in rl.registry().values():
        source = spec.source.lower()
        assert "datasheet" in source or "data sheet" in source or "documentation" in source
        assert 1e11 < spec.hbm_bytes_per_s < 1e14  # between 0.1 and 100 TB/s
        assert 1e10 < spec.hbm_capacity_bytes < 1e12  # between 10 GB and 1 TB
        assert spec.hbm_capacity_bytes % 2**30 == 0  # a whole number of GiB: the capacity convention
        assert spec.sm_count is None or spec.sm_count > 0
        assert spec.l2_bytes is None or spec.l2_bytes > 1e6
        for p in spec.precisions:
            assert 1e12 < spec.peak_flops_per_s(p) < 1e17
        # sparse figures, where printed, are twice the dense ones (to the datasheet's rounding)
        for p, v in spec.sparse_flops_per_s.items():
            assert v == pytest.approx(2 * spec.dense_flops_per_s[p], rel=1e-4)


def test_bytes_per_element():
    assert rl.bytes_per_element("bf16") == 2
    assert rl.bytes_per_element("FP4") == 0.5
    with pytest.raises(ValueError, match="precision must be one of"):
        rl.bytes_per_element("int3")


def test_as_gpu_accepts_spec_or_name_and_refuses_the_rest():
    spec = rl.gpu("L4")
    assert rl.as_gpu(spec) is spec
    assert rl.as_gpu("l4") is spec
    with pytest.raises(TypeError, match="gpu must be a GPUSpec or a GPU name"):
        rl.as_gpu(3.14)


def test_the_new_entries_from_their_datasheets():
    mi = rl.gpu("MI300X")
    # AMD data sheet: 5.3 TB/s, 192 GB HBM3, 1307.4 dense bf16 TFLOP/s (2614.9 with sparsity)
    assert (mi.hbm_bytes_per_s, mi.hbm_capacity_bytes) == (5.3e12, 192 * 2**30)
    assert mi.peak_flops_per_s("bf16") == pytest.approx(1307.4e12)
    assert mi.peak_flops_per_s("fp8", sparse=True) == pytest.approx(5229.8e12)
    # Google Cloud: TPU v4 275 TFLOP/s bf16, 1200 GB/s, 32 GiB; v5e 197 TFLOP/s, 819 GB/s, 16 GiB
    v4, v5e = rl.gpu("tpu v4"), rl.gpu("TPU-v5e")
    assert (v4.peak_flops_per_s("bf16"), v4.hbm_bytes_per_s, v4.hbm_capacity_bytes) == (275e12, 1200e9, 32 * 2**30)
    assert (v5e.peak_flops_per_s("bf16"), v5e.hbm_bytes_per_s, v5e.hbm_capacity_bytes) == (197e12, 819e9, 16 * 2**30)
    assert v5e.peak_flops_per_s("int8") == 394e12
    with pytest.raises(ValueError, match="has no a sparse figure for bf16|has no"):
        v4.peak_flops_per_s("bf16", sparse=True)  # Google prints no sparse rates


def test_sparse_takes_a_bool_only():
    with pytest.raises(TypeError, match="sparse must be True or False, got str 'no'"):
        rl.gpu("A100").peak_flops_per_s("bf16", sparse="no")
    with pytest.raises(TypeError, match="sparse must be True or False"):
        rl.gpu("A100").peak_flops_per_s("bf16", sparse=1)


def test_accelerator_describes_a_chip_the_registry_lacks():
    chip = rl.accelerator("My NPU", {"bf16": 400e12}, 2.0e12, 64 * rl.GIB)
    assert chip.peak_flops_per_s("bf16") / chip.hbm_bytes_per_s == 200  # 400e12 / 2e12
    assert chip.hbm_capacity_bytes == 64 * 2**30 and chip.sm_count is None and chip.l2_bytes is None
    assert rl.as_gpu(chip) is chip
    assert rl.ridge_point(chip) == 200
    no_capacity = rl.accelerator("Paper chip", {"fp8": 1e15}, 4e12)
    assert no_capacity.hbm_capacity_bytes is None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(hbm_bytes_per_s=2.0),
            "hbm_bytes_per_s must be in bytes per second, got 2.0, below 1e9: did you mean TB/s",
        ),
        (dict(hbm_bytes_per_s=0), "hbm_bytes_per_s must be a positive finite number of bytes per second, got 0"),
        (dict(hbm_bytes_per_s=float("nan")), "hbm_bytes_per_s must be a positive finite number"),
        (dict(peak_flops_per_s={"bf16": 400}), r"did you mean TFLOP/s"),
        (dict(peak_flops_per_s={"bf17": 400e12}), "precision must be one of"),
        (dict(peak_flops_per_s={}), "must map precision names to FLOP/s"),
        (dict(peak_flops_per_s=400e12), "must map precision names to FLOP/s"),
        (dict(hbm_capacity_bytes=80), "hbm_capacity_bytes must be in bytes, got 80, below 1e9: did you mean GB"),
        (dict(sparse_flops_per_s={"bf16": 100e12}), "below the dense"),
    ],
)
def test_accelerator_refuses_bad_numbers_with_their_unit(kwargs, message):
    args = dict(name="X", peak_flops_per_s={"bf16": 400e12}, hbm_bytes_per_s=2e12)
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=message):
        rl.accelerator(**args)


def test_gpuspec_itself_is_validated():
    with pytest.raises(ValueError, match="hbm_bytes_per_s must be a positive finite number"):
        dataclasses.replace(rl.gpu("A100"), hbm_bytes_per_s=0)  # a ZeroDivisionError before
    with pytest.raises(ValueError, match="sm_count must be a positive whole number"):
        dataclasses.replace(rl.gpu("A100"), sm_count=True)
    with pytest.raises(TypeError, match="name must be a non-empty string"):
        dataclasses.replace(rl.gpu("A100"), name="")
    with pytest.raises(ValueError, match="source must say where"):
        dataclasses.replace(rl.gpu("A100"), source=" ")


# --------------------------------------------------------------------------- device names


@pytest.mark.parametrize(
    "device_name, key",
    [
        ("NVIDIA H200", "h200"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H800", "h800"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
        ("NVIDIA B200", "b200"),
        ("NVIDIA L4", "l4"),
    ],
)
def test_match_gpu_reads_torch_device_names(device_name, key):
    assert rl.match_gpu(device_name).key == key


@pytest.mark.parametrize("device_name", ["NVIDIA H100 NVL", "NVIDIA A100 80GB PCIe", "NVIDIA GeForce RTX 4090"])
def test_match_gpu_refuses_parts_the_registry_does_not_hold(device_name):
    with pytest.raises(ValueError, match="not in the registry"):
        rl.match_gpu(device_name)


def test_every_number_in_the_data_file_says_what_it_is_and_where_it_comes_from():
    from roofline_lib.core import registry_data

    gpus = registry_data.read_table("roofline_lib.core", "data/gpus.json")["gpus"]
    assert list(gpus) == list(rl.known_gpus())  # the registry is the file, in its order
    for key, record in gpus.items():
        for name in ("hbm_bytes_per_s", "hbm_capacity_bytes", "l2_bytes", "l2_bytes_per_s", "sm_count"):
            figure = record.get(name)
            assert figure is None or figure["from"].strip(), (key, name)
        assert record["flops_per_s"]["from"].strip(), key
        for precision, printed in record["flops_per_s"]["peaks"].items():
            assert {"dense", "sparse"} & set(printed), (key, precision)  # each peak says which it is


def test_a_peak_printed_only_sparse_is_stored_dense_as_half_and_a_board_figure_per_gpu():
    h100 = rl.gpu("h100")
    assert h100.dense_flops_per_s["fp8"] == 3958e12 / 2  # printed 3,958 TFLOP/s with sparsity
    assert h100.sparse_flops_per_s["fp8"] == 3958e12
    b200 = rl.gpu("b200")  # the HGX B200 datasheet prints an 8-GPU board: 36 PFLOP/s sparse bf16
    assert b200.sparse_flops_per_s["bf16"] == 36e15 / 8  # 4.5 PFLOP/s per GPU
    assert b200.dense_flops_per_s["bf16"] == 36e15 / 8 / 2  # 2.25 PFLOP/s dense
    assert b200.dense_flops_per_s["fp32"] == 600e12 / 8  # printed dense: 75 TFLOP/s per GPU
    mi300x = rl.gpu("mi300x")  # AMD prints both: the dense one is stored as printed, not halved
    assert mi300x.dense_flops_per_s["bf16"] == 1307.4e12 and mi300x.sparse_flops_per_s["bf16"] == 2614.9e12
