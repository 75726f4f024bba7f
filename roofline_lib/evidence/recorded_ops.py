"""FLOPs and minimum bytes of one recorded op call, from the shapes and dtypes torch's profiler records.

The playbook's triage (:mod:`roofline_lib.evidence.triage`) places each op by these counts. The
formulas are the library's (:mod:`roofline_lib.core.ops`) where it has them; the ones for layers that
dominate real training and inference runs but are not transformer blocks -- convolution, batch
and group norm, embedding lookups (``index_select``), LSTM layers, ``cat`` and copies, attention
backward -- are written here, each with its convention in a comment beside it. An op with no
formula, or shapes that do not fit one, gets no count (None): it is never guessed from its name.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass

from ..core import ops

__all__ = ["count_op", "FILLED_FACTORIES"]

# dtype names as torch's profiler writes them ("Input type") -> (bytes per element, precision)
_DTYPES = {
    "float": (4, "fp32"),
    "double": (8, "fp64"),
    "c10::Half": (2, "fp16"),
    "c10::BFloat16": (2, "bf16"),
    "c10::Float8_e4m3fn": (1, "fp8"),
    "c10::Float8_e5m2": (1, "fp8"),
    "c10::Float8_e4m3fnuz": (1, "fp8"),
    "c10::Float8_e5m2fnuz": (1, "fp8"),
    "long int": (8, None),
    "int": (4, None),
    "short int": (2, None),
    "signed char": (1, None),
    "unsigned char": (1, None),
    "bool": (1, None),
    "c10::complex<float>": (8, None),
    "c10::complex<double>": (16, None),
}

# ops that only re-describe or allocate memory: no FLOPs, no bytes (their count needs no shapes)
_NO_DATA = frozenset(
    """
    view reshape _reshape_alias _unsafe_view t transpose permute expand expand_as as_strided
    unsqueeze squeeze select slice narrow split split_with_sizes chunk unbind alias detach
    lift_fresh empty empty_like empty_strided new_empty new_empty_strided resolve_conj
    resolve_neg result_type resize_ set_ flatten unflatten view_as numpy_T _nested_view_from_buffer
    as_strided_ cudnn_is_acceptable _has_compatible_shallow_copy_type
    """.split()
)
_MATMUL = frozenset("mm addmm bmm baddbmm mv addmv".split())
_ELEMENTWISE = frozenset(
    """
    add sub rsub mul div neg exp exp2 expm1 log log2 log1p pow sqrt rsqrt reciprocal square abs sign
    tanh sigmoid silu gelu relu relu6 leaky_relu elu selu mish hardswish hardtanh softplus clamp
    clamp_min clamp_max threshold where lerp addcmul addcdiv maximum minimum sin cos erf floor ceil
    round trunc fmod remainder eq ne lt le gt ge logical_not logical_and logical_or bitwise_and
    bitwise_or masked_fill nan_to_num clone contiguous _to_copy copy_ fill_ zero_ tril triu
    """.split()
)
# ops torch builds as an allocation followed by a fill (zeros = empty + zero_, full = empty + fill_):
# the fill they call is the work, so their own time is dispatch however long it runs -- on a loaded
# core a preempted zeros call can outlast the fill it makes
FILLED_FACTORIES = frozenset("zeros ones full zeros_like ones_like full_like new_zeros new_ones new_full".split())
_WRITE_ONLY = frozenset("fill_ zero_ normal_ uniform_ random_ bernoulli_".split())
_REDUCTIONS = frozenset(
    "sum mean amax amin max min var std norm linalg_vector_norm argmax argmin prod logsumexp".split()
)
_SOFTMAX = frozenset("softmax _softmax log_softmax _log_softmax _safe_softmax".split())
_LAYERNORM = frozenset("layer_norm native_layer_norm".split())
_RMSNORM = frozenset("rms_norm _fused_rms_norm".split())
_ATTENTION = frozenset(
    """
    scaled_dot_product_attention _scaled_dot_product_flash_attention_for_cpu
    _scaled_dot_product_flash_attention _scaled_dot_product_efficient_attention
    _scaled_dot_product_cudnn_attention
    """.split()
)
# the flash and memory-efficient kernels' own entry points take (batch, seq, heads, head_dim)
_ATTENTION_BSHD = frozenset("_flash_attention_forward _efficient_attention_forward".split())
# backward: the two forward matmuls again (recomputed scores) plus three for the gradients of
# Q, K and V: 5 / 2 of the forward FLOPs; it reads Q, K, V, O and dO and writes dQ, dK and dV
_ATTENTION_BACKWARD = frozenset(
    """
    _scaled_dot_product_flash_attention_backward _scaled_dot_product_efficient_attention_backward
    _scaled_dot_product_cudnn_attention_backward _scaled_dot_product_flash_attention_for_cpu_backward
    """.split()
)
_BACKWARD_FLOPS = 2.5  # backward FLOPs per forward FLOP of attention
# convolution entry points -> positions of (stride, padding, dilation, groups, transposed) in
# their recorded arguments ("Concrete Inputs"); None where the op has no such argument
_CONV = {
    "conv1d": (3, 4, 5, 6, None),
    "conv2d": (3, 4, 5, 6, None),
    "conv3d": (3, 4, 5, 6, None),
    "mkldnn_convolution": (3, 4, 5, 6, None),
    "convolution": (3, 4, 5, 8, 6),
    "_convolution": (3, 4, 5, 8, 6),
    "cudnn_convolution": (3, 2, 4, 5, None),
    "miopen_convolution": (3, 2, 4, 5, None),
}
_BATCHNORM = frozenset(
    "batch_norm _batch_norm_impl_index native_batch_norm _native_batch_norm_legit "
    "_native_batch_norm_legit_no_training _batch_norm_with_update cudnn_batch_norm miopen_batch_norm".split()
)
_GROUPNORM = frozenset("group_norm native_group_norm".split())
_GATHER = frozenset("index_select embedding".split())
_CONCAT = frozenset("cat stack _cat concat concatenate".split())
_LSTM_LAYER = frozenset({"mkldnn_rnn_layer"})
_LSTM_GATES = 4  # input, forget, cell and output gates: 4 * hidden rows of weights
# per hidden unit per step beyond the GEMMs: 4 bias adds, 4 gate activations (one FLOP each, as
# every element-wise op here), c = f*c + i*g (3) and h = o*tanh(c) (2)
_LSTM_CELL_FLOPS = 4 + 4 + 3 + 2
# a TensorList's dtype is not recorded: cat/stack count its elements at fp32's 4 bytes. They do no
# arithmetic, so their intensity is 0 whatever the element size: the verdict does not hang on it
_LIST_BYTES = 4


@dataclass(frozen=True)
class _Nothing:
    """The count of an op that moves no data (OpCount refuses zero bytes)."""

    flops: float = 0.0
    bytes_moved: float = 0.0


_NOTHING = _Nothing()


def _numel(shape) -> int:
    return math.prod(int(d) for d in shape)


def _broadcast(shapes) -> list[int]:
    width = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[[1] * (width - len(s)) + list(s) for s in shapes]):
        out.append(max(int(d) for d in dims))
    return out


def count_op(name: str, shapes, dtypes, concrete=None) -> tuple[float, float, str, str | None] | None:
    """FLOPs and minimum bytes of one call of a recorded op, from its input shapes and dtypes.

    ``name`` is the profiler's op name (``"aten::mm"``), ``shapes`` its "Input Dims" and ``dtypes``
    its "Input type" lists, as torch's profiler records them. Returns ``(flops, bytes_moved,
    family, precision)`` -- the family ("matmul", "elementwise", "reduction", "softmax", "norm",
    "attention", "embedding", "conv", "rnn", "copy", "no data") says which formula counted it --
    or None when the op has no formula here or its shapes are missing. ``concrete`` is the
    "Concrete Inputs" list (a convolution's stride, padding, dilation and groups). Minimum bytes: every tensor input read
    once and every output written once (a reduction's small output is left out).
    """
    found = _count(name, shapes, dtypes, concrete)
    if found is None:
        return None
    count, family, precision = found
    return float(count.flops), float(count.bytes_moved), family, precision


def _count(name: str, shapes, dtypes, concrete=None):
    """``(count, family, precision)`` of one call, or None: no formula, or shapes that do not fit one."""
    namespace, _, op = name.partition("::")
    if namespace != "aten":
        return None
    op = op.split(".")[0]
    if op in _NO_DATA:
        return _NOTHING, "no data", None
    shapes = list(shapes or ())
    dtypes = list(dtypes or ())
    if op in _CONCAT:
        return _concat(shapes)
    tensors = [
        (list(s), _DTYPES[t][0], _DTYPES[t][1])
        for s, t in zip(shapes, dtypes)
        if isinstance(s, (list, tuple)) and t in _DTYPES
    ]
    if not tensors:
        return None
    precision = next((p for _, _, p in tensors if p is not None), None)
    counter = _counter(op)
    if counter is None:
        return None
    try:
        count, family = counter(op, tensors, shapes, concrete)
    except (IndexError, ValueError, TypeError, ZeroDivisionError):
        return None  # shapes that do not fit the formula: better unclassified than wrong
    return count, family, precision


def _concat(shapes):
    """cat and stack: a TensorList in, one tensor out -- every element read once and written once."""
    try:
        n = sum(_numel(s) for s in shapes[0])
    except (IndexError, TypeError, ValueError):
        return None
    if not shapes[0]:  # the list's shapes were not recorded
        return None
    if not n:  # empty tensors: nothing to move
        return _NOTHING, "no data", None
    return ops.OpCount(0, 2 * n * _LIST_BYTES), "copy", None


def _matmul(op, tensors, shapes, concrete):
    """mm, bmm and mv (and their add- forms: the added input read once, one add per output)."""
    mats = tensors[1:] if op.startswith(("add", "badd")) else tensors
    (a, ea, _), (b, _, _) = mats[0], mats[1]
    if op in ("mv", "addmv"):
        count = ops.gemv(a[0], a[1], ea)
    else:
        batch = a[0] if len(a) == 3 else 1
        m, k, n = a[-2], a[-1], b[-1]
        one = ops.gemm(m, n, k, ea)
        count = ops.OpCount(batch * one.flops, batch * one.bytes_moved)
    if op.startswith(("add", "badd")):  # the added input: read once, one add per output
        bias, eb, _ = tensors[0]
        out = count.flops / (2 * (a[-1] if op not in ("mv", "addmv") else a[1]))
        count = count + ops.OpCount(out, _numel(bias) * eb)
    return count, "matmul"


def _elementwise(op, tensors, shapes, concrete):
    """One FLOP per output (none for copies and fills); every input read once, the output written once."""
    shape0, e, _ = tensors[0]
    inplace = op.endswith("_")
    out_shape = shape0 if inplace else _broadcast([s for s, _, _ in tensors])
    n_out = _numel(out_shape)
    if op in _WRITE_ONLY:
        return ops.OpCount(0, n_out * e), "elementwise"
    if op == "copy_":
        src, es, _ = tensors[1] if len(tensors) > 1 else tensors[0]
        return ops.OpCount(0, _numel(src) * es + n_out * e), "elementwise"
    reads = sum(_numel(s) * eb for s, eb, _ in tensors)
    flops = 0 if op in ("clone", "contiguous", "_to_copy") else n_out
    return ops.OpCount(flops, reads + n_out * e), "elementwise"


def _reduction(op, tensors, shapes, concrete):
    shape0, e, _ = tensors[0]
    return ops.OpCount(_numel(shape0), _numel(shape0) * e), "reduction"


def _softmax(op, tensors, shapes, concrete):
    shape0, e, _ = tensors[0]
    cols = shape0[-1]
    return ops.softmax(_numel(shape0) // cols, cols, e), "softmax"


def _norm(op, tensors, shapes, concrete):
    """LayerNorm and RMSNorm over the last dimension."""
    shape0, e, _ = tensors[0]
    d = shape0[-1]
    rows = _numel(shape0) // d
    count = ops.layernorm(rows, d, e) if op in _LAYERNORM else ops.rmsnorm(rows, d, e)
    return count, "norm"


def _attention(op, tensors, shapes, concrete):
    """Fused attention, forward or backward (:data:`_BACKWARD_FLOPS` of the forward, twice its bytes)."""
    e = tensors[0][1]
    first = 1 if op in _ATTENTION_BACKWARD and op != "_scaled_dot_product_cudnn_attention_backward" else 0
    q, k = tensors[first][0], tensors[first + 1][0]
    if op in _ATTENTION_BSHD:  # (batch, seq, heads, head_dim) -> (batch, heads, seq, head_dim)
        q, k = [q[0], q[2], q[1], q[3]], [k[0], k[2], k[1], k[3]]
    b, h, sq, dh = q
    sk = k[-2]
    flops = ops.attention_flops(b, h, sq, sk, dh)
    moved = ops.attention_bytes_fused(b, h, sq, sk, dh, e, kv_heads=k[1])
    if op in _ATTENTION_BACKWARD:
        return ops.OpCount(_BACKWARD_FLOPS * flops, 2 * moved), "attention"
    return ops.OpCount(flops, moved), "attention"


def _gather(op, tensors, shapes, concrete):
    """Rows looked up: read once and written once, and the indices read."""
    (weight, ew, _), (idx, ei, _) = tensors[0], tensors[1]
    rows = _numel(idx) * _numel(weight[1:])
    return ops.OpCount(0, 2 * rows * ew + _numel(idx) * ei), "embedding"


def _channel_norm(op, tensors, shapes, concrete):
    """Batch and group norm: LayerNorm's steps per element (mean, variance, normalise, scale and
    shift); reads x and writes y once, and reads the channel vectors: weight, bias and, for batch
    norm, the running mean and variance."""
    shape0, e, _ = tensors[0]
    channels = shape0[1]
    n = _numel(shape0)
    vectors = 4 if op in _BATCHNORM else 2
    return ops.OpCount(ops.LAYERNORM_FLOPS_PER_ELEM * n, (2 * n + vectors * channels) * e), "norm"


def _counter(op: str):
    """The formula that counts ``op``, in the order the families are tried; None: no formula."""
    if op in _MATMUL:
        return _matmul
    if op in _ELEMENTWISE or (op.endswith("_") and op[:-1] in _ELEMENTWISE):  # add_, clamp_min_: in place
        return _elementwise
    for family, counter in _COUNTERS:
        if op in family:
            return counter
    return None


def _ints(value, n: int) -> list[int]:
    """A recorded list argument ("[1, 1]", or one number for every dimension) as ``n`` ints."""
    if isinstance(value, str):
        value = ast.literal_eval(value) if value.strip() else None
    if value is None:
        raise ValueError("argument not recorded")
    if isinstance(value, (int, float)):
        return [int(value)] * n
    out = [int(v) for v in value]
    return out * n if len(out) == 1 else out


def _conv(op: str, shapes, tensors, concrete) -> ops.OpCount:
    """A convolution: 2 FLOP per multiply-add, ``N * C_out * prod(out) * (C_in / groups) * prod(kernel)``
    multiply-adds (the bias add left out, as torch's own count leaves it); minimum bytes read the
    input, weight and bias once and write the output once. Raises ValueError without the stride
    and padding (no "Concrete Inputs") or for a transposed convolution."""
    x, e, _ = tensors[0]
    w = list(shapes[1])
    spatial = len(x) - 2
    stride_at, pad_at, dil_at, groups_at, transposed_at = _CONV[op]
    args = list(concrete or ())
    if transposed_at is not None and str(args[transposed_at]).strip().lower() == "true":
        raise ValueError("transposed convolution")
    stride = _ints(args[stride_at], spatial)
    dilation = _ints(args[dil_at], spatial)
    padding = args[pad_at]
    kernel = w[2:]
    if isinstance(padding, str) and padding.strip().strip("'\"") == "same":
        out = [-(-d // s) for d, s in zip(x[2:], stride)]
    elif isinstance(padding, str) and padding.strip().strip("'\"") == "valid":
        out = [(d - dl * (k - 1) - 1) // s + 1 for d, k, s, dl in zip(x[2:], kernel, stride, dilation)]
    else:
        pad = _ints(padding, spatial)
        out = [(d + 2 * p - dl * (k - 1) - 1) // s + 1 for d, k, s, p, dl in zip(x[2:], kernel, stride, pad, dilation)]
    if min(out) <= 0:
        raise ValueError("empty output")
    n, c_out = x[0], w[0]
    macs = n * c_out * math.prod(out) * w[1] * math.prod(kernel)
    moved = (_numel(x) + _numel(w) + n * c_out * math.prod(out)) * e
    if len(tensors) > 2:  # the bias
        moved += _numel(tensors[2][0]) * tensors[2][1]
    return ops.OpCount(2 * macs, moved)


def _lstm_layer(tensors) -> ops.OpCount:
    """One LSTM layer over a sequence (``mkldnn_rnn_layer``: input ``[T, B, I]`` or ``[B, T, I]``,
    weights ``[4H, I]`` and ``[4H, H]``): per step and sequence the two GEMMs, ``2 * 4H * (I + H)``
    FLOPs, plus :data:`_LSTM_CELL_FLOPS` per hidden unit; minimum bytes read the input and the
    weights once and write the output sequence once (the states are small beside them)."""
    (x, e, _), (w_ih, _, _), (w_hh, _, _) = tensors[0], tensors[1], tensors[2]
    gates, width = w_ih
    hidden = w_hh[1]
    if gates != _LSTM_GATES * hidden or width != x[-1]:
        raise ValueError("not an LSTM layer")
    steps_and_batch = x[0] * x[1]
    flops = steps_and_batch * (2 * gates * (width + hidden) + _LSTM_CELL_FLOPS * hidden)
    weights = sum(_numel(s) * es for s, es, _ in tensors[1:5])
    return ops.OpCount(flops, _numel(x) * e + weights + steps_and_batch * hidden * e)


def _conv_count(op, tensors, shapes, concrete):
    return _conv(op, shapes, tensors, concrete), "conv"


def _lstm_count(op, tensors, shapes, concrete):
    return _lstm_layer(tensors), "rnn"


#: The families after matmul and element-wise ops, in the order they are tried, and each one's formula.
_COUNTERS = (
    (_REDUCTIONS, _reduction),
    (_SOFTMAX, _softmax),
    (_LAYERNORM | _RMSNORM, _norm),
    (_ATTENTION | _ATTENTION_BSHD | _ATTENTION_BACKWARD, _attention),
    (_GATHER, _gather),
    (_CONV, _conv_count),
    (_BATCHNORM | _GROUPNORM, _channel_norm),
    (_LSTM_LAYER, _lstm_count),
)
