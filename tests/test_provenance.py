"""Tests for roofline_lib.evidence.provenance: which GPU, driver and versions a number was measured with."""

from __future__ import annotations

import pytest

from roofline_lib import measure, provenance

# --------------------------------------------------------------------------- nvidia-smi

_FIELDS = ("index", "uuid", "driver_version", "clocks.sm")


def test_smi_rows_skip_warnings_blank_lines_and_unreadable_values():
    text = "WARNING: infoROM is corrupted at gpu 0000:19:00.0\n\n0, GPU-aaa, 570.86.15, 1980\n1, GPU-bbb, [N/A], 1755\n"
    rows = provenance.parse_smi_rows(text, _FIELDS)
    assert rows == [
        {"index": "0", "uuid": "GPU-aaa", "driver_version": "570.86.15", "clocks.sm": "1980"},
        {"index": "1", "uuid": "GPU-bbb", "clocks.sm": "1755"},  # [N/A] is left out, not kept as text
    ]
    # a warning with exactly as many commas as a row is still not a row: its index is not a number
    assert provenance.parse_smi_rows("Warning: a, b, c\n", _FIELDS) == []
    with pytest.raises(TypeError, match="text"):
        provenance.parse_smi_rows(None, _FIELDS)


def test_the_smi_row_follows_torch_device_0(monkeypatch):
    rows = [{"index": "0", "uuid": "GPU-aaa"}, {"index": "1", "uuid": "GPU-bbb"}]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert provenance._pick_smi_row(rows, None)["index"] == "0"  # nothing says otherwise: the first
    assert provenance._pick_smi_row(rows, "bbb")["index"] == "1"  # torch's UUID wins
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")  # torch's device 0 is physical GPU 1
    assert provenance._pick_smi_row(rows, None)["index"] == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbb")
    assert provenance._pick_smi_row(rows, None)["index"] == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")  # not listed: unknown, never another GPU's row
    assert provenance._pick_smi_row(rows, None) == {}
    assert provenance._pick_smi_row([], None) == {}


def test_gpu_identity_needs_a_gpu():
    if measure.has_cuda():  # pragma: no cover - GPU machines test it through gpu_check
        pytest.skip("checks the refusal on a machine without a GPU")
    with pytest.raises(RuntimeError, match="CUDA GPU"):
        provenance.gpu_identity()
