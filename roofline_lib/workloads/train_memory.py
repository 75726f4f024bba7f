"""Training memory: the bytes a parameter costs, how ZeRO and FSDP shard them, and activations.

Three counts, each a small function (all SI, bytes):

* :func:`state_bytes_per_param` -- weights, gradients and optimizer state per parameter, by
  precision recipe and optimizer. Mixed-precision Adam is the classic ``2 + 2 + 12 = 16`` bytes:
  bf16 weights and gradients, and an fp32 master copy, momentum and variance (Rajbhandari et al.
  2020, section 3.1, where the optimizer's ``K`` is 12).
* :func:`zero_memory` -- that state per GPU under ZeRO stage 0 (plain data parallelism), 1
  (optimizer state sharded over the data-parallel ranks), 2 (gradients too) and 3 (weights too).
  PyTorch FSDP's FULL_SHARD is stage 3 and SHARD_GRAD_OP stage 2.
* :func:`activation_bytes_per_layer` -- what one transformer layer keeps for its backward pass,
  by Korthikanti et al. (2022), section 4: ``s b h (34 + 5 a s / h)`` bytes for 16-bit
  activations of a GPT layer (``s`` tokens per sequence, ``b`` sequences per micro-batch, ``h``
  the width, ``a`` attention heads), with tensor and sequence parallelism and selective or full
  recomputation dividing or dropping its terms.

The model comes from :mod:`roofline_lib.models.transformer` (its parameter counts); nothing here
restates a count that module already makes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.checks import _positive, _positive_int
from ..models.transformer import TransformerConfig

__all__ = [
    "OPTIMIZERS",
    "PRECISION_RECIPES",
    "ACTIVATION_RECOMPUTE",
    "StateBytes",
    "ZeroMemory",
    "activation_bytes_per_layer",
    "state_bytes_per_param",
    "training_state_bytes",
    "zero_memory",
]

#: Optimizers, with the fp32 values of state each keeps per parameter (besides a master copy).
OPTIMIZERS = {"adam": 2, "sgd_momentum": 1, "sgd": 0}  # Adam: momentum and variance

#: Precision recipes: bytes of a weight, a gradient and one value of optimizer state, and
#: whether an fp32 master copy of the weights is kept.
PRECISION_RECIPES = {
    "mixed": (2, 2, 4, True),  # bf16/fp16 weights and gradients, fp32 master + fp32 state
    "fp32": (4, 4, 4, False),  # everything in fp32; the weights are their own master copy
    "bf16": (2, 2, 2, False),  # pure bf16: no master copy, state in bf16
}

#: Activation recomputation: none, selective (the attention core, Korthikanti et al.; training.hfu calls
#: it "attention"), full.
ACTIVATION_RECOMPUTE = ("none", "selective", "full")


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter of model state: weights, gradients and optimizer state (K)."""

    weights: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


def _key(value, table, name: str) -> str:
    if not isinstance(value, str) or value.strip().lower() not in table:
        raise ValueError(f"{name} must be one of {', '.join(table)}, got {value!r}")
    return value.strip().lower()


def state_bytes_per_param(optimizer: str = "adam", precision: str = "mixed") -> StateBytes:
    """Bytes each parameter costs in training, before any sharding.

    ``precision="mixed"`` (the usual recipe): 2-byte weights and gradients, and ``K`` = a 4-byte
    master copy plus 4 bytes per optimizer value. Adam: 2 + 2 + (4 + 4 + 4) = 16 bytes;
    SGD with momentum: 2 + 2 + (4 + 4) = 12. ``"fp32"``: 4 + 4 + 4 per optimizer value (Adam 16).
    ``"bf16"``: everything in 2 bytes, no master copy (Adam 2 + 2 + 4 = 8).
    """
    opt = _key(optimizer, OPTIMIZERS, "optimizer")
    rec = _key(precision, PRECISION_RECIPES, "precision")
    w, g, per_value, master = PRECISION_RECIPES[rec]
    k = (per_value if master else 0) + OPTIMIZERS[opt] * per_value  # master copy + the optimizer's values
    return StateBytes(weights=float(w), gradients=float(g), optimizer=float(k))


@dataclass(frozen=True)
class ZeroMemory:
    """Model state per GPU under one ZeRO stage, in bytes, by part."""

    stage: int
    dp: int
    n_params: float
    weights: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


_STAGES = (0, 1, 2, 3)


def _stage(value) -> int:
    if isinstance(value, bool) or value not in _STAGES:
        raise ValueError(f"zero must be a ZeRO stage, one of 0, 1, 2, 3, got {value!r}")
    return int(value)


def zero_memory(n_params, dp, stage, optimizer: str = "adam", precision: str = "mixed") -> ZeroMemory:
    """Weights, gradients and optimizer state per GPU with ``n_params`` replicated over ``dp``
    data-parallel GPUs, sharded by ZeRO ``stage`` (Rajbhandari et al. 2020, Figure 1):

    ======  ======================  =============  ===========
    stage   weights                 gradients      optimizer
    ======  ======================  =============  ===========
    0       2 N                     2 N            K N
    1       2 N                     2 N            K N / dp
    2       2 N                     2 N / dp       K N / dp
    3       2 N / dp                2 N / dp       K N / dp
    ======  ======================  =============  ===========

    (bytes shown for mixed precision; K = 12 for Adam). FSDP FULL_SHARD is stage 3.
    """
    n = _positive(n_params, "n_params", "parameters")
    d = _positive_int(dp, "dp", "data-parallel GPUs")
    s = _stage(stage)
    per = state_bytes_per_param(optimizer, precision)
    return ZeroMemory(
        stage=s,
        dp=d,
        n_params=n,
        weights=per.weights * n / (d if s >= 3 else 1),
        gradients=per.gradients * n / (d if s >= 2 else 1),
        optimizer=per.optimizer * n / (d if s >= 1 else 1),
    )


def training_state_bytes(model, optimizer: str = "adam", precision: str = "mixed") -> float:
    """A whole model's training state on one GPU, no sharding: every parameter (all experts)
    times :func:`state_bytes_per_param`. No activations, and no KV cache (training keeps none)."""
    if not isinstance(model, TransformerConfig):
        raise TypeError(f"model must be a TransformerConfig, got {type(model).__name__} {model!r}")
    return model.n_params() * state_bytes_per_param(optimizer, precision).total


# Korthikanti et al. (2022), section 4.1, per layer, 16-bit activations (bytes), s b h factored out:
_ATTN_BLOCK = 11  # QKV input 2, Q and K 4, V 2, output-projection input 2, dropout mask 1
_MLP_BLOCK = 19  # input 2, first linear's output 8, GeLU's output 8, dropout mask 1
_NORMS = 4  # two LayerNorm inputs, 2 each
_SCORES = 5  # per a s / h: softmax output 2, its dropout mask 1, dropout output 2
_REPLICATED_UNDER_TP = 10  # what TP alone leaves whole: norms' inputs 4, attention and MLP inputs 4, masks 2


def activation_bytes_per_layer(
    seq_len,
    micro_batch,
    d_model,
    n_heads,
    *,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
) -> float:
    """Bytes one GPT layer keeps for its backward pass, per GPU (Korthikanti et al. 2022).

    With ``s = seq_len``, ``b = micro_batch``, ``h = d_model``, ``a = n_heads``, ``t = tp``:

    =================================  =====================================
    case                               bytes
    =================================  =====================================
    no parallelism                     s b h (34 + 5 a s / h)
    tensor parallel                    s b h (10 + 24 / t + 5 a s / (h t))
    tensor + sequence parallel         s b h / t (34 + 5 a s / h)
    ... with selective recompute       drop the 5 a s / h term
    full recompute                     2 s b h (the layer's input), / t with sequence parallel
    =================================  =====================================

    34 = 11 (attention block) + 19 (MLP) + 4 (norms). The formula is the paper's GPT block
    (4h MLP, dropout); for a SwiGLU or GQA model it is an estimate of the same order.
    """
    s = _positive_int(seq_len, "seq_len", "tokens")
    b = _positive_int(micro_batch, "micro_batch", "sequences")
    h = _positive_int(d_model, "d_model", "features")
    a = _positive_int(n_heads, "n_heads", "attention heads")
    t = _positive_int(tp, "tp", "tensor-parallel GPUs")
    if not isinstance(sequence_parallel, bool):
        raise TypeError(f"sequence_parallel must be True or False, got {sequence_parallel!r}")
    mode = _key(recompute, ACTIVATION_RECOMPUTE, "recompute")
    sbh = s * b * h
    if mode == "full":
        return 2 * sbh / (t if sequence_parallel else 1)  # only the layer's input is kept
    scores = 0 if mode == "selective" else _SCORES * a * s / h
    linear = _ATTN_BLOCK + _MLP_BLOCK + _NORMS  # 34
    if sequence_parallel or t == 1:
        return sbh / t * (linear + scores)
    return sbh * (_REPLICATED_UNDER_TP + (linear - _REPLICATED_UNDER_TP) / t + scores / t)
