"""The worked examples the chapters share, defined once.

A scenario is a handful of inputs (shapes, a GPU, a measured rate) that several chapters
return to. The inputs live here and nowhere else; every result a chapter quotes is computed
from them by the library, so two chapters cannot disagree about, say, what a good LayerNorm
time is or how many parameters Llama-2-7B has.

    from roofline_lib import scenarios as sc

    sc.LAYERNORM.op().intensity            # FLOP/byte of the (8, 2048, 4096) bf16 LayerNorm
    sc.LAYERNORM.plausible_seconds("A100") # its time at 85 % of the HBM bandwidth
    sc.FFN_GEMM.op()                       # the Llama-2-7B FFN up-projection over a training batch
    sc.STACK_100M_RUN.mfu("6N")            # the Stack-100M run's MFU under a convention
    sc.MFU_EXAMPLE.mfu()                   # the large-cluster MFU example
    sc.LLAMA2_7B.n_params()                # 6,738,415,616, one count everywhere

Inputs are typed in SI units (seconds, bytes, tokens per second); results are methods.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.checks import _fraction, _positive, _positive_int
from ..core.hardware import as_gpu
from ..core.ops import OpCount, attention, gemm, layernorm
from ..core.roofline import time_at_roof_seconds
from ..models.transformer import STACK_100M, TransformerConfig, model_config
from .training import mfu

__all__ = [
    "LLAMA2_7B",
    "LLAMA2_70B",
    "STACK_100M",
    "TRAINING_BATCH",
    "TRAINING_SEQ_LEN",
    "LayerNormExample",
    "LAYERNORM",
    "GemmExample",
    "FFN_GEMM",
    "TrainingRun",
    "STACK_100M_RUN",
    "MFU_EXAMPLE",
    "DECODE_EXPLORER",
    "DecodeStart",
    "training_attention",
]

#: Llama-2-7B as shipped (``model_config("llama-2-7b")``): 6,738,415,616 parameters, s = 4096.
LLAMA2_7B: TransformerConfig = model_config("llama-2-7b")
#: Llama-2-70B as shipped: grouped-query attention, 8 key/value heads of 128 in 80 layers.
LLAMA2_70B: TransformerConfig = model_config("llama-2-70b")

#: A Llama-2-7B-sized training step: 8 sequences of 2048 tokens (16,384 tokens).
TRAINING_BATCH = 8
TRAINING_SEQ_LEN = 2048


@dataclass(frozen=True)
class LayerNormExample:
    """A LayerNorm over ``rows`` rows of width ``d``, and the times worth knowing for it.

    ``good_bandwidth_fraction`` is what a very good memory-bound kernel reaches of the HBM
    bandwidth; ``claimed_seconds`` is a widely repeated "measurement" of this kernel on an
    A100 that is faster than its memory allows (the chapters show why).
    """

    rows: int
    d: int
    bytes_per_elem: float = 2
    good_bandwidth_fraction: float = 0.85
    claimed_seconds: float = 90e-6

    def __post_init__(self):
        _positive_int(self.rows, "rows", "rows (tokens)")
        _positive_int(self.d, "d", "elements per row")
        _positive(self.bytes_per_elem, "bytes_per_elem", "bytes per element")
        _fraction(self.good_bandwidth_fraction, "good_bandwidth_fraction")
        _positive(self.claimed_seconds, "claimed_seconds", "seconds")

    def op(self) -> OpCount:
        """Its FLOPs and ideal HBM bytes (``ops.layernorm``)."""
        return layernorm(self.rows, self.d, self.bytes_per_elem)

    def floor_seconds(self, gpu="A100", precision="bf16") -> float:
        """The time at the roof: no kernel on ``gpu`` can be faster."""
        op = self.op()
        return time_at_roof_seconds(op.flops, op.bytes_moved, as_gpu(gpu), precision)

    def plausible_seconds(self, gpu="A100", precision="bf16") -> float:
        """The time of a very good kernel: the floor at ``good_bandwidth_fraction`` of the roof."""
        return self.floor_seconds(gpu, precision) / self.good_bandwidth_fraction


#: The LayerNorm of one Llama-2-7B-sized training step in bf16: shape (8, 2048, 4096).
LAYERNORM = LayerNormExample(rows=TRAINING_BATCH * TRAINING_SEQ_LEN, d=LLAMA2_7B.d_model)


@dataclass(frozen=True)
class GemmExample:
    """A weight matrix of ``d_in x d_out`` applied to ``tokens`` tokens (an m x k by k x n GEMM)."""

    tokens: int
    d_in: int
    d_out: int
    bytes_per_elem: float = 2

    def op(self, tokens: int | None = None, bytes_per_elem: float | None = None) -> OpCount:
        """``ops.gemm(tokens, d_out, d_in)``; ``tokens`` or the width may be changed for a variant."""
        m = self.tokens if tokens is None else tokens
        b = self.bytes_per_elem if bytes_per_elem is None else bytes_per_elem
        return gemm(m, self.d_out, self.d_in, bytes_per_elem=b)


#: Llama-2-7B's FFN up-projection (4096 -> 11008) over one training step of 16,384 tokens.
FFN_GEMM = GemmExample(tokens=TRAINING_BATCH * TRAINING_SEQ_LEN, d_in=LLAMA2_7B.d_model, d_out=LLAMA2_7B.d_ff)


def training_attention(causal: bool = True, fused: bool = True) -> OpCount:
    """Attention of one Llama-2-7B-sized training step (``ops.attention``), one layer.

    8 sequences of 2048 tokens, Llama-2-7B's 32 heads of 128; ``causal`` and ``fused`` as in
    ``ops.attention``. Compare fused and unfused under the same ``causal``.
    """
    return attention(
        TRAINING_BATCH,
        LLAMA2_7B.n_heads,
        TRAINING_SEQ_LEN,
        TRAINING_SEQ_LEN,
        LLAMA2_7B.head_dim,
        causal=causal,
        fused=fused,
    )


@dataclass(frozen=True)
class TrainingRun:
    """A training run as it would be reported: a model, a global rate and the cards it ran on."""

    model: TransformerConfig
    tokens_per_s: float
    n_gpus: int
    gpu: str

    def __post_init__(self):
        _positive(self.tokens_per_s, "tokens_per_s", "tokens per second")
        _positive_int(self.n_gpus, "n_gpus", "GPUs")
        as_gpu(self.gpu)

    def mfu(self, convention: str = "6N", precision: str = "bf16") -> float:
        """MFU under ``convention`` (``training.mfu``; the model's shape supplies L, d and s)."""
        m = self.model
        return mfu(
            m.n_params(),
            self.tokens_per_s,
            self.n_gpus,
            self.gpu,
            precision,
            convention,
            m.n_layers,
            m.d_model,
            m.seq_len,
            attention_dim=m.attention_dim,
        )


#: One A100 training Stack-100M at 220,000 tokens per second (the course's small-model run).
STACK_100M_RUN = TrainingRun(model=STACK_100M, tokens_per_s=220e3, n_gpus=1, gpu="A100")

#: The large-cluster MFU example: Llama-2-7B at 1.5 million tokens per second on 256 A100s.
MFU_EXAMPLE = TrainingRun(model=LLAMA2_7B, tokens_per_s=1.5e6, n_gpus=256, gpu="A100")


@dataclass(frozen=True)
class DecodeStart:
    """Where chapter 4's decode explorers start (the widget and the static explorer alike)."""

    model: TransformerConfig
    gpu: str
    bytes_per_param: float
    batch: int
    tokens: int

    def n_params(self) -> int:
        """The model's parameter count, the size both explorers are given."""
        return self.model.n_params()


#: Llama-2-7B in bf16 on an H100, a batch of 16 sequences, 256 tokens to generate.
DECODE_EXPLORER = DecodeStart(model=LLAMA2_7B, gpu="H100", bytes_per_param=2, batch=16, tokens=256)
