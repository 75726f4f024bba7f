"""FLOPs and minimum bytes of a recorded op call from the shapes and dtypes torch's profiler records,
checked by hand and against torch's own count."""

from __future__ import annotations

import pytest

from roofline_lib import profile_live as L
from roofline_lib import trace_rows as R
from roofline_lib.evidence.recorded_ops import count_op


def test_count_op_from_shapes_and_dtypes():
    # mm of [8, 16] x [16, 4] in fp32: 2 * 8 * 16 * 4 = 1024 FLOP, (128 + 64 + 32) * 4 = 896 bytes
    assert count_op("aten::mm", [[8, 16], [16, 4]], ["float", "float"]) == (1024.0, 896.0, "matmul", "fp32")
    # add of two [1000] bf16 tensors: 1000 FLOP, (1000 + 1000 + 1000) * 2 = 6000 bytes
    assert count_op("aten::add", [[1000], [1000], []], ["c10::BFloat16", "c10::BFloat16", "Scalar"]) == (
        1000.0,
        6000.0,
        "elementwise",
        "bf16",
    )
    assert count_op("aten::view", [], []) == (0.0, 0.0, "no data", None)
    assert count_op("aten::mm", None, None) is None  # no shapes: no guess
    assert count_op("my_lib::fancy", [[4]], ["float"]) is None


def test_counts_for_conv_norms_gathers_lstm_and_cat():
    # conv2d of [2, 8, 16, 16] by [16, 8, 3, 3], stride 1, padding 1: 16 x 16 outputs per channel;
    # 2 * (2 * 16 * 256 * 8 * 9) = 1,179,648 FLOP; bytes (4096 + 1152 + 8192 + 16) * 4 = 53,824
    conv = count_op(
        "aten::mkldnn_convolution",
        [[2, 8, 16, 16], [16, 8, 3, 3], [16], [], [], [], []],
        ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"],
        ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"],
    )
    assert conv == (1_179_648.0, 53_824.0, "conv", "fp32")
    # stride 2, no padding, groups 2: out (16 - 3) // 2 + 1 = 7; 2 * (2 * 16 * 49 * 4 * 9) = 112,896 FLOP
    strided = count_op(
        "aten::convolution",
        [[2, 8, 16, 16], [16, 4, 3, 3], [], [], [], [], [], [], []],
        ["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
        ["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "2"],
    )
    assert strided[0] == 112_896.0
    assert count_op("aten::mkldnn_convolution", [[2, 8, 16, 16], [16, 8, 3, 3]], ["float", "float"]) is None
    # batch norm over [2, 16, 16, 16] = 8192 elements: 7 FLOP each; bytes (2 * 8192 + 4 * 16) * 4
    bn = count_op("aten::native_batch_norm", [[2, 16, 16, 16], [16], [16], [16], [16]], ["float"] * 5)
    assert bn == (57_344.0, 65_792.0, "norm", "fp32")
    # group norm: the same per element, weight and bias only: (2 * 8192 + 2 * 8) * 4 with 8 channels
    gn = count_op("aten::native_group_norm", [[2, 8, 16, 32]], ["float"])
    assert gn == (57_344.0, 65_600.0, "norm", "fp32")
    # index_select of 3 rows of width 16 from [100, 16]: read and write 48 floats, read 3 int64
    assert count_op("aten::index_select", [[100, 16], [], [3]], ["float", "Scalar", "long int"]) == (
        0.0, 408.0, "embedding", "fp32")  # fmt: skip
    # LSTM layer: T=5, B=2, I=16, H=32: per (step, sequence) 2 * 128 * 48 + 13 * 32 = 12,704 FLOP;
    # x 10 = 127,040. Bytes: input 160 + weights 2048 + 4096 + 128 + 128 + output 320 floats = 27,520
    lstm = count_op(
        "aten::mkldnn_rnn_layer",
        [[5, 2, 16], [128, 16], [128, 32], [128], [128], [2, 32], [2, 32]],
        ["float"] * 7,
    )
    assert lstm == (127_040.0, 27_520.0, "rnn", "fp32")
    # cat of two [2, 8, 16, 16] tensors: 8192 elements read and written at 4 bytes
    assert count_op("aten::cat", [[[2, 8, 16, 16], [2, 8, 16, 16]], []], ["TensorList", "Scalar"]) == (
        0.0, 65_536.0, "copy", None)  # fmt: skip


def test_conv_formula_matches_torchs_own_count():
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    conv = torch.nn.Conv2d(8, 16, 3, padding=1, stride=1)
    x = torch.randn(2, 8, 16, 16)
    with L.quiet_profiler_log(), profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as p:
        conv(x)
    torch_flops = {e.key: e.flops for e in p.key_averages() if e.flops}
    ours = R.read_trace(L.export_profile(p))
    counted = sum(r.flops for r in ours.rows if r.family == "conv")
    assert torch_flops["aten::conv2d"] == counted == 1_179_648  # 2 * 2 * 16 * 256 * 8 * 9


def test_matmul_formulas_match_torchs_own_count():
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    a, b, bias = torch.randn(8, 16), torch.randn(16, 4), torch.randn(4)
    with L.quiet_profiler_log(), profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as p:
        torch.mm(a, b)
        torch.addmm(bias, a, b)
    torch_flops = {e.key: e.flops for e in p.key_averages() if e.flops}
    rows = {r.name: r.flops for r in R.read_trace(L.export_profile(p)).rows}
    # torch counts 2 * 8 * 16 * 4 = 1024 for both; the library adds addmm's 8 * 4 = 32 bias adds
    assert torch_flops["aten::mm"] == rows["aten::mm"] == 1024
    assert torch_flops["aten::addmm"] == rows["aten::addmm"] - 32 == 1024
