"""FLOPs and HBM bytes of single operations: the points a chapter places on a roofline.

Conventions, used by every function here:

* **FLOPs.** One multiply-accumulate is 2 FLOP (a multiply and an add), so a
  ``(m x k) @ (k x n)`` product costs ``2 * m * n * k``. Element-wise work counts
  each arithmetic step (add, multiply, compare, exp, divide) as 1 FLOP; the
  per-operation docstring says how many steps it charges per element. These
  counts are what the math needs, not what a GPU's special-function unit spends.
* **Bytes.** "Bytes moved" is traffic to HBM under the *ideal* schedule: every
  operand is read from HBM once and every result written once, as if on-chip
  memory held whatever the kernel reuses. Real kernels that re-read tiles move
  more; these are the floors a roofline point is measured against.
* ``bytes_per_elem`` is the storage size of one element (2 for bf16/fp16, 4 for
  fp32, 1 for fp8, 0.5 for fp4); it may be fractional. Byte counts come back as
  an ``int`` when whole, a ``float`` otherwise.

Each operation has a ``*_flops`` and a ``*_bytes`` function, and a helper of the
bare name (``gemm``, ``attention``...) that returns both as an :class:`OpCount`,
ready for ``rl.kernel_verdict(op.flops, op.bytes_moved, seconds, gpu)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .checks import _positive, _positive_int

__all__ = [
    "FLOP_PER_MAC",
    "OpCount",
    "gemm_flops",
    "gemm_bytes",
    "gemm",
    "gemv_flops",
    "gemv_bytes",
    "gemv",
    "elementwise_flops",
    "elementwise_bytes",
    "elementwise",
    "LAYERNORM_FLOPS_PER_ELEM",
    "RMSNORM_FLOPS_PER_ELEM",
    "SOFTMAX_FLOPS_PER_ELEM",
    "layernorm_flops",
    "layernorm_bytes",
    "layernorm",
    "rmsnorm_flops",
    "rmsnorm_bytes",
    "rmsnorm",
    "softmax_flops",
    "softmax_bytes",
    "softmax",
    "attention_score_entries",
    "attention_flops",
    "attention_bytes_naive",
    "attention_bytes_fused",
    "attention",
]

#: One multiply-accumulate is a multiply and an add: 2 FLOP. Written here once; every count
#: of a matrix product in the library goes through :func:`gemm_flops` or :func:`gemv_flops`.
FLOP_PER_MAC = 2

#: LayerNorm, per element of x: sum for the mean (1), subtract the mean (1), square (1),
#: sum the squares (1), scale by 1/sigma (1), multiply by gamma (1), add beta (1).
#: Per-row work (one divide, one rsqrt) is ignored: it is d times smaller.
LAYERNORM_FLOPS_PER_ELEM = 7

#: RMSNorm, per element of x: square (1), sum the squares (1), scale by 1/rms (1),
#: multiply by gamma (1). Per-row work (divide, rsqrt) is ignored.
RMSNORM_FLOPS_PER_ELEM = 4

#: Numerically safe softmax, per element: compare for the row max (1), subtract it (1),
#: exponentiate (1), sum (1), divide by the sum (1).
SOFTMAX_FLOPS_PER_ELEM = 5


@dataclass(frozen=True)
class OpCount:
    """FLOPs and HBM bytes of one operation; ``intensity`` is their ratio (FLOP/byte).

    Two counts add (``gemm(...) + elementwise(...)``) to give the cost of running
    both as separate kernels.
    """

    flops: float
    bytes_moved: float

    def __post_init__(self):
        _positive(self.flops, "flops", "FLOP", allow_zero=True)
        _positive(self.bytes_moved, "bytes_moved", "bytes")

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in FLOP per HBM byte."""
        return self.flops / self.bytes_moved

    def __add__(self, other: "OpCount") -> "OpCount":
        if not isinstance(other, OpCount):
            return NotImplemented
        return OpCount(self.flops + other.flops, self.bytes_moved + other.bytes_moved)


def _bpe(bytes_per_elem) -> float:
    return _positive(bytes_per_elem, "bytes_per_elem", "bytes per element")


def _to_bytes(n_elements: int, bytes_per_elem) -> float:
    """``n_elements * bytes_per_elem``, as an int when the product is whole."""
    total = n_elements * _bpe(bytes_per_elem)
    return int(total) if float(total).is_integer() else total


# --- matrix products -----------------------------------------------------------------


def gemm_flops(m, n, k) -> int:
    """FLOPs of ``C[m x n] = A[m x k] @ B[k x n]``: ``2 * m * n * k`` (1 MAC = 2 FLOP)."""
    m = _positive_int(m, "m", "rows")
    n = _positive_int(n, "n", "columns")
    k = _positive_int(k, "k", "elements (inner dimension)")
    return FLOP_PER_MAC * m * n * k  # m * n outputs, k multiply-accumulates each


def gemm_bytes(m, n, k, bytes_per_elem=2) -> float:
    """HBM bytes of ``C[m x n] = A[m x k] @ B[k x n]``: read A, read B, write C, once each.

    ``(m*k + k*n + m*n) * bytes_per_elem``. An accumulate-into-C GEMM (beta != 0)
    would also read C; that is not counted here.
    """
    m = _positive_int(m, "m", "rows")
    n = _positive_int(n, "n", "columns")
    k = _positive_int(k, "k", "elements (inner dimension)")
    return _to_bytes(m * k + k * n + m * n, bytes_per_elem)  # A + B + C


def gemm(m, n, k, bytes_per_elem=2) -> OpCount:
    """:func:`gemm_flops` and :func:`gemm_bytes` together."""
    return OpCount(gemm_flops(m, n, k), gemm_bytes(m, n, k, bytes_per_elem))


def gemv_flops(m, k) -> int:
    """FLOPs of ``y[m] = A[m x k] @ x[k]``: ``2 * m * k``."""
    m = _positive_int(m, "m", "rows")
    k = _positive_int(k, "k", "elements (inner dimension)")
    return FLOP_PER_MAC * m * k  # m outputs, k multiply-accumulates each


def gemv_bytes(m, k, bytes_per_elem=2) -> float:
    """HBM bytes of ``y[m] = A[m x k] @ x[k]``: read A, read x, write y.

    ``(m*k + k + m) * bytes_per_elem``; the matrix dominates, which is why a GEMV
    sits near 1 FLOP/byte in bf16 whatever its size.
    """
    m = _positive_int(m, "m", "rows")
    k = _positive_int(k, "k", "elements (inner dimension)")
    return _to_bytes(m * k + k + m, bytes_per_elem)  # A + x + y


def gemv(m, k, bytes_per_elem=2) -> OpCount:
    """:func:`gemv_flops` and :func:`gemv_bytes` together."""
    return OpCount(gemv_flops(m, k), gemv_bytes(m, k, bytes_per_elem))


# --- element-wise, norms, softmax ----------------------------------------------------


def elementwise_flops(n, flops_per_elem=1) -> float:
    """FLOPs of an element-wise kernel over ``n`` elements: ``n * flops_per_elem``.

    ``z = x + y`` is 1 FLOP per element; ``z = a * x + y`` is 2.
    """
    n = _positive_int(n, "n", "elements")
    per = _positive(flops_per_elem, "flops_per_elem", "FLOP per element")
    total = n * per
    return int(total) if float(total).is_integer() else total


def elementwise_bytes(n, n_inputs=2, n_outputs=1, bytes_per_elem=2) -> float:
    """HBM bytes of an element-wise kernel: each input read once, each output written once.

    ``(n_inputs + n_outputs) * n * bytes_per_elem``; for ``z = x + y`` that is 3n elements.
    """
    n = _positive_int(n, "n", "elements")
    n_inputs = _positive_int(n_inputs, "n_inputs", "input tensors")
    n_outputs = _positive_int(n_outputs, "n_outputs", "output tensors")
    return _to_bytes((n_inputs + n_outputs) * n, bytes_per_elem)


def elementwise(n, flops_per_elem=1, n_inputs=2, n_outputs=1, bytes_per_elem=2) -> OpCount:
    """:func:`elementwise_flops` and :func:`elementwise_bytes` together."""
    return OpCount(
        elementwise_flops(n, flops_per_elem),
        elementwise_bytes(n, n_inputs, n_outputs, bytes_per_elem),
    )


def _rows(n_rows, width, width_name, rows_unit="rows (tokens)") -> tuple[int, int]:
    """``(n_rows, width)`` of a row-wise kernel, both checked as whole numbers of rows and elements."""
    return _positive_int(n_rows, "n_rows", rows_unit), _positive_int(width, width_name, "elements per row")


def _norm(n_rows, d, flops_per_elem: int, n_param_vectors: int, bytes_per_elem) -> OpCount:
    """A row normalisation: ``flops_per_elem * n_rows * d`` FLOPs; it reads x and writes y
    (``n_rows * d`` elements each) and reads ``n_param_vectors`` vectors of width ``d``."""
    n_rows, d = _rows(n_rows, d, "d")
    return OpCount(flops_per_elem * n_rows * d, _to_bytes(2 * n_rows * d + n_param_vectors * d, bytes_per_elem))


def layernorm_flops(n_rows, d) -> int:
    """FLOPs of LayerNorm over ``n_rows`` rows of width ``d``.

    ``LAYERNORM_FLOPS_PER_ELEM (7) * n_rows * d``; see that constant for the steps.
    """
    return layernorm(n_rows, d).flops


def layernorm_bytes(n_rows, d, bytes_per_elem=2) -> float:
    """HBM bytes of LayerNorm: read x, write y (``n_rows * d`` each), read gamma and beta (``d`` each)."""
    return layernorm(n_rows, d, bytes_per_elem).bytes_moved


def layernorm(n_rows, d, bytes_per_elem=2) -> OpCount:
    """:func:`layernorm_flops` and :func:`layernorm_bytes` together."""
    return _norm(n_rows, d, LAYERNORM_FLOPS_PER_ELEM, 2, bytes_per_elem)  # gamma and beta


def rmsnorm_flops(n_rows, d) -> int:
    """FLOPs of RMSNorm over ``n_rows`` rows of width ``d``.

    ``RMSNORM_FLOPS_PER_ELEM (4) * n_rows * d``; see that constant for the steps.
    """
    return rmsnorm(n_rows, d).flops


def rmsnorm_bytes(n_rows, d, bytes_per_elem=2) -> float:
    """HBM bytes of RMSNorm: read x, write y (``n_rows * d`` each), read gamma (``d``)."""
    return rmsnorm(n_rows, d, bytes_per_elem).bytes_moved


def rmsnorm(n_rows, d, bytes_per_elem=2) -> OpCount:
    """:func:`rmsnorm_flops` and :func:`rmsnorm_bytes` together."""
    return _norm(n_rows, d, RMSNORM_FLOPS_PER_ELEM, 1, bytes_per_elem)  # gamma only


def softmax_flops(n_rows, n_cols) -> int:
    """FLOPs of a row-wise softmax: ``SOFTMAX_FLOPS_PER_ELEM (5) * n_rows * n_cols``."""
    n_rows, n_cols = _rows(n_rows, n_cols, "n_cols", "rows")
    return SOFTMAX_FLOPS_PER_ELEM * n_rows * n_cols


def softmax_bytes(n_rows, n_cols, bytes_per_elem=2) -> float:
    """HBM bytes of a row-wise softmax: read the input once, write the output once."""
    n_rows, n_cols = _rows(n_rows, n_cols, "n_cols", "rows")
    return _to_bytes(2 * n_rows * n_cols, bytes_per_elem)  # read x, write softmax(x)


def softmax(n_rows, n_cols, bytes_per_elem=2) -> OpCount:
    """:func:`softmax_flops` and :func:`softmax_bytes` together."""
    return OpCount(softmax_flops(n_rows, n_cols), softmax_bytes(n_rows, n_cols, bytes_per_elem))


# --- attention -----------------------------------------------------------------------


def attention_score_entries(seq_q, seq_k, causal=False, alignment="top-left") -> int:
    """How many (query, key) score entries one head of attention computes.

    Not causal: ``seq_q * seq_k``. Causal, the number of entries the mask keeps:

    * ``alignment="top-left"`` (PyTorch's ``is_causal``): query ``i`` sees keys ``0..i``,
      so ``sum over i < seq_q of min(i + 1, seq_k)``; ``seq_q * (seq_q + 1) / 2`` when
      the lengths are equal.
    * ``alignment="bottom-right"`` (the flash-attn library; a chunk of new queries
      after a KV cache): the last query sees every key, query ``i`` sees
      ``i + 1 + seq_k - seq_q`` of them (at least 0, at most ``seq_k``).

    Both equal ``s * (s + 1) / 2`` for a square mask. This is the exact kept count; the
    analytic per-token formula in :mod:`roofline_lib.models.transformer` rounds it to ``s**2 / 2``.
    """
    sq = _positive_int(seq_q, "seq_q", "query positions")
    sk = _positive_int(seq_k, "seq_k", "key positions")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {type(causal).__name__} {causal!r}")
    if alignment not in ("top-left", "bottom-right"):
        raise ValueError(f"alignment must be 'top-left' or 'bottom-right', got {alignment!r}")
    if not causal:
        return sq * sk
    if alignment == "bottom-right":
        if sq <= sk:
            return sq * (sk - sq) + sq * (sq + 1) // 2  # every row sees sk - sq cached keys + a triangle
        return sk * (sk + 1) // 2  # the first sq - sk rows see nothing
    if sq <= sk:
        return sq * (sq + 1) // 2  # rows see 1, 2, ..., sq keys
    return sk * (sk + 1) // 2 + (sq - sk) * sk  # a triangle, then full rows of sk keys


def attention_flops(batch, heads, seq_q, seq_k, head_dim, causal=False, *, v_head_dim=None) -> int:
    """FLOPs of the two attention matmuls, ``S = Q K^T`` and ``O = P V``.

    Each kept score entry costs ``2 * head_dim`` for its dot product in ``Q K^T`` and
    ``2 * head_dim`` for its share of ``P V``: ``4 * head_dim`` per entry, per head.
    ``v_head_dim`` is the value head size where it differs from the query/key one (multi-head
    latent attention: keys of 192, values of 128); the ``P V`` share is then ``2 * v_head_dim``.
    Softmax work is not included (see :func:`softmax_flops`). With ``causal=True``
    only the kept entries are counted (:func:`attention_score_entries`), which is
    what a kernel that skips fully masked blocks computes, up to its diagonal tiles;
    an implementation that fills the whole square and masks it pays the
    ``causal=False`` count.
    """
    b = _positive_int(batch, "batch", "sequences")
    h = _positive_int(heads, "heads", "attention heads")
    dh = _positive_int(head_dim, "head_dim", "elements per head")
    dv = dh if v_head_dim is None else _positive_int(v_head_dim, "v_head_dim", "elements per head")
    entries = attention_score_entries(seq_q, seq_k, causal)
    return b * h * entries * FLOP_PER_MAC * (dh + dv)  # dh MACs for QK^T + dv MACs for PV


def _kv_heads(kv_heads, heads: int) -> int:
    if kv_heads is None:
        return heads
    kv = _positive_int(kv_heads, "kv_heads", "key/value heads")
    if kv > heads or heads % kv:
        raise ValueError(f"kv_heads must divide heads ({heads} query heads), got {kv_heads!r}")
    return kv


def _qkvo_elements(batch, heads, seq_q, seq_k, head_dim, kv_heads):
    """``(batch, heads, seq_q, seq_k, elements)``: the checked shape, and the elements of Q, K, V and O.

    Q and O hold ``seq_q * head_dim`` elements per query head; K and V ``seq_k * head_dim``
    per key/value head, each read or written once.
    """
    b = _positive_int(batch, "batch", "sequences")
    h = _positive_int(heads, "heads", "attention heads")
    sq = _positive_int(seq_q, "seq_q", "query positions")
    sk = _positive_int(seq_k, "seq_k", "key positions")
    dh = _positive_int(head_dim, "head_dim", "elements per head")
    kv = _kv_heads(kv_heads, h)
    q_and_o = 2 * b * h * sq * dh  # read Q, write O
    k_and_v = 2 * b * kv * sk * dh  # read K, read V
    return b, h, sq, sk, q_and_o + k_and_v


def attention_bytes_naive(batch, heads, seq_q, seq_k, head_dim, bytes_per_elem=2, kv_heads=None):
    """HBM bytes of attention run as three separate kernels that materialise the scores.

    The passes counted, per head:

    1. ``S = Q K^T``: read Q (``seq_q*head_dim``) and K (``seq_k*head_dim``), write S (``seq_q*seq_k``);
    2. ``P = softmax(S)``: read S, write P (``seq_q*seq_k`` each);
    3. ``O = P V``: read P and V (``seq_k*head_dim``), write O (``seq_q*head_dim``).

    That is four passes over the ``seq_q x seq_k`` score matrix, which is why the
    naive version is memory-bound at long sequence. A causal mask does not shrink
    them: the naive kernels write the full square and mask it. The scale and mask
    are assumed fused into pass 1 or 2 (no extra pass). With grouped-query attention
    (``kv_heads < heads``) K and V are read once per key/value head.
    """
    b, h, sq, sk, qkvo = _qkvo_elements(batch, heads, seq_q, seq_k, head_dim, kv_heads)
    scores = 4 * b * h * sq * sk  # write S, read S, write P, read P
    return _to_bytes(qkvo + scores, bytes_per_elem)


def attention_bytes_fused(batch, heads, seq_q, seq_k, head_dim, bytes_per_elem=2, kv_heads=None):
    """HBM bytes of a fused (FlashAttention-style) kernel: read Q, K, V, write O; nothing else.

    The score matrix lives in on-chip memory tile by tile and never reaches HBM.
    This is the ideal floor: a real kernel re-reads K and V once per query tile
    that does not fit alongside them, and writes a small log-sum-exp vector
    (``seq_q`` floats per head) for the backward pass; neither is counted. With
    grouped-query attention (``kv_heads < heads``) K and V are read once per
    key/value head.
    """
    qkvo = _qkvo_elements(batch, heads, seq_q, seq_k, head_dim, kv_heads)[-1]
    return _to_bytes(qkvo, bytes_per_elem)


def attention(
    batch, heads, seq_q, seq_k, head_dim, causal=False, fused=True, bytes_per_elem=2, kv_heads=None
) -> OpCount:
    """Attention's FLOPs and bytes as one :class:`OpCount`.

    ``fused=True``: a FlashAttention-style kernel; FLOPs honour ``causal`` (masked
    blocks are skipped) and bytes are :func:`attention_bytes_fused`.
    ``fused=False``: the three-kernel version; it computes the full square even when
    causal, so its FLOPs are the ``causal=False`` count, and bytes are
    :func:`attention_bytes_naive`.
    """
    if not isinstance(fused, bool):
        raise TypeError(f"fused must be True or False, got {type(fused).__name__} {fused!r}")
    if fused:
        flops = attention_flops(batch, heads, seq_q, seq_k, head_dim, causal=causal)
        moved = attention_bytes_fused(batch, heads, seq_q, seq_k, head_dim, bytes_per_elem, kv_heads)
    else:
        attention_score_entries(seq_q, seq_k, causal)  # validates causal all the same
        flops = attention_flops(batch, heads, seq_q, seq_k, head_dim, causal=False)
        moved = attention_bytes_naive(batch, heads, seq_q, seq_k, head_dim, bytes_per_elem, kv_heads)
    return OpCount(flops, moved)
