"""The FLOP audit: what FlopCounterMode counts, what count_flops counts, and the cross-check
of the analytic per-token formula against a real torch graph."""

import dataclasses

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from roofline_lib import audit, tiny_model

B, H, S, DH = 2, 4, 128, 32
FULL = 4 * B * H * S * S * DH  # 2 * DH for QK^T + 2 * DH for PV, per entry: 16,777,216
KEPT = B * H * (S * (S + 1) // 2) * 4 * DH  # 8256 causal entries per head: 8,454,144


def _sdpa(causal, device="cpu", **kwargs):
    q, k, v = (torch.randn(B, H, S, DH, device=device, requires_grad=device == "cpu") for _ in range(3))
    return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, **kwargs)


# --- what the stock counter does ----------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
def test_stock_flopcountermode_counts_no_attention_on_cpu(causal):
    # CPU SDPA dispatches to aten._scaled_dot_product_flash_attention_for_cpu, which has no
    # formula in torch's table: forward and backward count 0 (if this starts failing, torch
    # has registered it and the audit module's docstring needs updating)
    counter = FlopCounterMode(display=False)
    with counter:
        _sdpa(causal)().sum().backward()
    assert counter.get_total_flops() == 0


def test_stock_gpu_formulas_ignore_is_causal():
    # the CUDA kernels' formulas, run on meta tensors (shapes only, no GPU needed)
    q, k, v = (torch.empty(B, H, S, DH, device="meta") for _ in range(3))
    aten = torch.ops.aten
    for call in (
        lambda: aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True),
        lambda: aten._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, True),
        lambda: aten._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, True, False),
    ):
        raw = audit.count_flops(call, attention="raw")
        assert raw.total == FULL  # is_causal=True, yet the full square
        kernel = audit.count_flops(call, attention="kernel")
        assert kernel.total == KEPT


def test_stock_gpu_backward_includes_the_recompute():
    q, k, v = (torch.empty(B, H, S, DH, device="meta") for _ in range(3))
    aten = torch.ops.aten

    def forward_and_backward():
        out, lse, cq, ck, mq, mk, seed, offset, _ = aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True)
        aten._scaled_dot_product_flash_attention_backward(
            out, q, k, v, out, lse, cq, ck, mq, mk, 0.0, True, seed, offset
        )

    raw = audit.count_flops(forward_and_backward, attention="raw")
    assert raw.by_op["aten._scaled_dot_product_flash_attention_backward"] == 5 * FULL // 2  # 41,943,040
    kernel = audit.count_flops(forward_and_backward, attention="kernel", recompute=True)
    assert kernel.by_op["aten._scaled_dot_product_flash_attention_backward"] == 5 * KEPT // 2


# --- count_flops on attention --------------------------------------------------------------


def test_kernel_mode_counts_cpu_attention_and_halves_causal():
    full = audit.count_flops(_sdpa(False), backward=True)
    assert (full.forward, full.backward) == (FULL, 2 * FULL)  # 16,777,216 and 33,554,432
    causal = audit.count_flops(_sdpa(True), backward=True)
    assert (causal.forward, causal.backward) == (KEPT, 2 * KEPT)  # 8,454,144 and 16,908,288
    assert causal.by_op == {
        "aten._scaled_dot_product_flash_attention_for_cpu": KEPT,
        "aten._scaled_dot_product_flash_attention_for_cpu_backward": 2 * KEPT,
    }


def test_dense_raw_and_recompute_modes():
    assert audit.count_flops(_sdpa(True), backward=True, attention="dense").total == 3 * FULL
    assert audit.count_flops(_sdpa(True), backward=True, attention="raw").total == 0
    # recompute adds one more QK^T: backward per entry 4*DH + 4*DH + 2*DH = 320
    hfu = audit.count_flops(_sdpa(True), backward=True, recompute=True)
    assert hfu.backward == B * H * 8256 * 320  # 21,135,360


def test_non_square_causal_uses_pytorchs_top_left_mask():
    q = torch.randn(1, 1, 4, 8)
    k, v = torch.randn(1, 1, 8, 8), torch.randn(1, 1, 8, 8)
    counted = audit.count_flops(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert counted.total == 320  # 1 + 2 + 3 + 4 = 10 kept entries * 4 * 8
    # and the kernel really applies that mask
    mask = torch.ones(4, 8, dtype=torch.bool).tril()
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(F.scaled_dot_product_attention(q, k, v, is_causal=True), expected)


def test_grouped_query_attention_counts_query_heads():
    q, k = torch.randn(1, 4, 8, 16), torch.randn(1, 2, 8, 16)
    counted = audit.count_flops(lambda: F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True))
    assert counted.total == 9216  # 4 query heads * 36 entries * 4 * 16


def test_a_mask_tensor_and_the_math_backend_are_counted_dense():
    mask = torch.ones(S, S, dtype=torch.bool).tril()
    assert audit.count_flops(_sdpa(False, attn_mask=mask)).total == FULL  # the kernel cannot skip
    with sdpa_kernel(SDPBackend.MATH):
        math = audit.count_flops(_sdpa(True), backward=True)
    assert math.by_op == {"aten.bmm": 3 * FULL}  # plain bmm: full square, backward 2x


def test_attention_mapping_plugs_into_torchs_own_counter():
    counter = FlopCounterMode(display=False, custom_mapping=audit.attention_mapping())
    with counter:
        _sdpa(True)()
    assert counter.get_total_flops() == KEPT
    assert audit.attention_mapping("raw") == {}


# --- the cross-check: analytic formula vs the dispatched graph ------------------------------


@pytest.mark.parametrize(
    "cfg, batch, seq_len",
    [
        (tiny_model.TINY_CONFIG, 1, None),  # s = 128
        (dataclasses.replace(tiny_model.TINY_CONFIG, gated=False, tied_embeddings=True, d_ff=512), 2, 64),
    ],
)
def test_counted_flops_match_the_analytic_formula(cfg, batch, seq_len):
    fwd = audit.crosscheck(cfg, batch, seq_len, backward=False)
    s = seq_len or cfg.seq_len
    # the only difference: s(s+1)/2 kept score entries against s^2/2, i.e. s more entries
    # per head and layer, 4 * head_dim FLOPs each: 2 * L * B * s * d FLOPs in all
    assert fwd.counted - fwd.analytic == 2 * cfg.n_layers * batch * s * cfg.d_model
    assert abs(fwd.relative_gap) < 0.01

    both = audit.crosscheck(cfg, batch, seq_len, backward=True)
    assert both.audit.backward == 2 * both.audit.forward  # every matmul: dX and dW
    assert both.counted - both.analytic == 3 * (fwd.counted - fwd.analytic)
    assert abs(both.relative_gap) < 0.01


def test_raw_mode_misses_the_attention_and_matches_torch():
    model, tokens = tiny_model.tiny_decoder(), tiny_model.random_tokens()
    raw = audit.count_flops(model, tokens, backward=True, attention="raw")
    counter = FlopCounterMode(display=False)
    with counter:
        model(tokens).sum().backward()
    assert raw.total == counter.get_total_flops()
    kernel = audit.count_flops(model, tokens, backward=True)
    attention = 3 * 2 * 4 * (128 * 129 // 2) * 4 * 32  # fwd+bwd, 2 layers, 4 heads, Dh = 32
    assert kernel.total - raw.total == attention  # 12,681,216
    assert audit.crosscheck(backward=True, attention="raw").relative_gap < -0.05  # 6.6 % short


def test_breakdown_by_op_and_by_module():
    result = audit.count_flops(tiny_model.tiny_decoder(), tiny_model.random_tokens(), backward=True)
    assert set(result.by_op) == {
        "aten.mm",
        "aten._scaled_dot_product_flash_attention_for_cpu",
        "aten._scaled_dot_product_flash_attention_for_cpu_backward",
    }
    # forward attribution: the q projection of block 0 is a (128 x 128) @ (128 x 128) matmul
    assert result.by_module["TinyDecoder.blocks.0.attn.q"] == 2 * 128 * 128 * 128
    assert result.by_module["TinyDecoder.unembed"] == 2 * 128 * 128 * 512
    assert result.by_module["Global"] == result.forward
    text = result.table()
    assert "aten.mm" in text and "total" in text and "'kernel'" in text


def test_a_function_that_runs_its_own_backward_is_split_by_phase():
    model, tokens = tiny_model.tiny_decoder(), tiny_model.random_tokens(seq_len=32)
    own = audit.count_flops(lambda: model(tokens).sum().backward())
    ours = audit.count_flops(model, tokens, backward=True)
    assert (own.forward, own.backward) == (ours.forward, ours.backward)
    assert own.backward > 0


# --- failure paths --------------------------------------------------------------------------


def test_bad_arguments_are_refused():
    model, tokens = tiny_model.tiny_decoder(), tiny_model.random_tokens(seq_len=8)
    with pytest.raises(ValueError, match="attention must be one of 'kernel', 'dense', 'raw'"):
        audit.count_flops(model, tokens, attention="flash")
    with pytest.raises(ValueError, match="recompute=True applies to attention='kernel' or 'dense'"):
        audit.count_flops(model, tokens, attention="raw", recompute=True)
    with pytest.raises(TypeError, match="fn must be callable"):
        audit.count_flops(model(tokens))
    with pytest.raises(TypeError, match="backward must be True or False"):
        audit.count_flops(model, tokens, backward="yes")
    with torch.no_grad():
        with pytest.raises(ValueError, match="output to require grad"):
            audit.count_flops(model, tokens, backward=True)
    with pytest.raises(TypeError, match="backward=True needs fn to return a tensor"):
        audit.count_flops(lambda: 3.0, backward=True)


# --- grouped expert matmuls (transformers 5's default MoE experts) ---------------------------


def _grouped(m=12, k=16, n=8, offs=(3, 3, 9)):
    """One grouped product: 12 rows, of which offs routes 3, 0 and 6 to three experts (3 left over)."""
    torch.manual_seed(0)
    a = torch.randn(m, k, requires_grad=True)
    b = torch.randn(len(offs), k, n, requires_grad=True)
    groups = torch.tensor(offs, dtype=torch.int32)
    # squared, so the gradient reaching the product is a real (contiguous) tensor
    return lambda: (torch._grouped_mm(a, b, offs=groups) ** 2).sum()


def test_grouped_mm_experts_are_counted_by_their_routed_rows():
    fn = _grouped()
    stock = FlopCounterMode(display=False)
    with stock:
        fn().backward()
    assert stock.get_total_flops() == 0  # torch's table has no _grouped_mm: the experts vanish
    counted = audit.count_flops(fn, backward=True)
    assert counted.forward == 2 * 9 * 16 * 8  # 9 routed rows x (16 -> 8): 2,304, not the 12 rows held
    assert counted.backward == 2 * counted.forward  # dA = dO B^T and dB = A^T dO, one forward each
    assert counted.grouped_experts == counted.total == 6912
    assert "torch's own counter books as 0" in counted.table()
    plain = audit.count_flops(lambda: torch.ones(2, 2) @ torch.ones(2, 2))
    assert plain.grouped_experts == 0 and "grouped-mm" not in plain.table()


def test_grouped_mm_shapes_by_hand():
    a2, a3 = torch.empty(10, 4, device="meta"), torch.empty(3, 10, 4, device="meta")
    b2, b3 = torch.empty(4, 6, device="meta"), torch.empty(3, 4, 6, device="meta")
    offs = torch.tensor([2, 5, 7])
    assert audit._grouped_mm_flops(a2, b3, offs) == 2 * 7 * 4 * 6  # rows split among the groups
    assert audit._grouped_mm_flops(a2, b3, None) == 2 * 10 * 4 * 6  # no offsets: every row
    assert audit._grouped_mm_flops(a2, b3, offs.to("meta")) == 2 * 10 * 4 * 6  # unreadable: every row
    assert audit._grouped_mm_flops(a3, b2, torch.tensor([2, 4, 5])) == 2 * 10 * 4 * 5  # columns split among groups
    assert audit._grouped_mm_flops(a2.T, a2, offs) == 2 * 4 * 7 * 4  # the inner dimension: a weight gradient
    assert audit._grouped_mm_flops(a3, b3) == 2 * 3 * 10 * 4 * 6  # a plain batch


def test_the_audit_equals_the_library_on_a_moe_under_transformers_default():
    transformers = pytest.importorskip("transformers", reason="transformers is not a dependency of the course")
    import json
    from pathlib import Path

    import roofline_lib as rl

    record = json.loads((Path(__file__).parent / "hf_configs" / "tiny_transformers.json").read_text())["mixtral"]
    config = transformers.AutoConfig.for_model(**record["to_diff_dict"])
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")  # grouped_mm
    tokens = torch.randint(0, config.vocab_size, (1, 8))
    expected = rl.TransformerConfig.from_hf_config(record["to_diff_dict"], seq_len=8).flops_per_token(eager=True)
    with torch.no_grad():
        stock = FlopCounterMode(display=False)
        with stock:
            model(tokens)
        counted = audit.count_flops(model, tokens)
    assert counted.total == expected.fwd_per_token * 8 == record["forward_flops_8_tokens"]
    # 8 tokens, 2 layers, 2 experts each of three 64 x 96 matrices, 2 FLOPs a multiply-add
    assert counted.grouped_experts == 8 * 2 * 2 * 3 * 64 * 96 * 2
    assert stock.get_total_flops() == counted.total - counted.grouped_experts  # what the stock counter loses
    # transformers' own fallback op, for shapes torch._grouped_mm refuses, is counted the same way
    from transformers.integrations import moe  # noqa: F401  (registers torch.ops.transformers.*)

    a, b, offs = torch.randn(12, 16), torch.randn(3, 16, 8), torch.tensor([3, 3, 9])
    fallback = audit.count_flops(lambda: torch.ops.transformers.grouped_mm_fallback(a, b, offs))
    assert fallback.total == fallback.grouped_experts == 2 * 9 * 16 * 8
