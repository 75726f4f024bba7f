"""Published large training runs, each with its layout and throughput as its authors printed them.

Three runs the planner (:func:`roofline_lib.workloads.parallel.plan`) is set against:

* **Llama 3 405B** on 16,384 H100s (Grattafiori, Dubey et al. 2024, Table 4; architecture Table 3): TP 8,
  PP 16, DP 128, 8,192-token sequences, 16M tokens per step, 400 TFLOP/s per GPU, 41 % BF16 MFU.
* **Megatron-LM's 1T GPT** on 3,072 A100s (Narayanan et al. 2021, Table 1): TP 8, PP 64, DP 6,
  batch 3,072 sequences of 2,048 tokens, 163 TFLOP/s per GPU, 52 % of the peak. The paper's FLOP
  count (its equation 3, ``96 B s l h^2 (1 + s / 6h + V / 16 l h)``) includes the extra forward of
  full activation recomputation, so it is a *hardware* FLOP rate; the model FLOPs are 3/4 of it.
* **DeepSeek-V3** (671B total, 37B active, a mixture of experts) on 2,048 H800s (DeepSeek-AI 2024,
  sections 3.1-3.2 and 4.2): PP 16, EP 64 across 8 nodes, ZeRO-1 data parallelism, no TP, 4,096-
  token sequences, batch 15,360 sequences, and 180K H800 GPU hours per trillion tokens.

Every architecture is built from the authors' tables with
:class:`~roofline_lib.models.transformer.TransformerConfig`; the hardware comes from the registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.hardware import gpu
from ..models.transformer import MLA, TransformerConfig
from .parallel import Plan, cluster, plan
from .training import mfu

__all__ = ["PublishedRun", "RunComparison", "compare_run", "published_runs"]


@dataclass(frozen=True)
class PublishedRun:
    """One published run: the model, the cluster, the layout and the throughput its paper printed.

    ``published_mfu`` is the paper's own figure (its FLOP count); ``model_flops_per_s_per_gpu`` is
    the same throughput re-counted as the planner counts model FLOPs (``6 N`` on active
    parameters, no recompute), so the two can be compared. ``layout`` holds :func:`plan`'s keywords.
    """

    key: str
    title: str
    model: TransformerConfig
    node: str
    n_gpus: int
    layout: dict
    published_mfu: float
    published_flops_per_s_per_gpu: float
    model_flops_per_s_per_gpu: float
    counts: str  # what the published figure counts
    source: str  # the bibliography key and the table
    notes: str = ""
    cite: str = field(default="", compare=False)


@dataclass(frozen=True)
class RunComparison:
    """A published run beside the planner's prediction for its layout."""

    run: PublishedRun
    plan: Plan
    published_model_mfu: float  # the published throughput in the planner's FLOP count

    @property
    def predicted_mfu(self) -> float:
        """The planner's bound: model FLOPs over the step at its longest roof."""
        return self.plan.mfu

    @property
    def predicted_mfu_no_overlap(self) -> float:
        return self.plan.mfu_no_overlap

    @property
    def published_step_seconds(self) -> float:
        """The step the published throughput implies, at the planner's model FLOPs per step."""
        return self.plan.model_flops_per_step / (self.run.n_gpus * self.run.model_flops_per_s_per_gpu)

    @property
    def gap(self) -> float:
        """Published model MFU over the planner's bound (1 would be a run at its roofs)."""
        return self.published_model_mfu / self.predicted_mfu


_LLAMA3_405B = TransformerConfig(
    d_model=16384, d_ff=53248, n_layers=126, n_heads=128, n_kv_heads=8, vocab=128256, seq_len=8192, name="Llama 3 405B"
)
_GPT_1T = TransformerConfig(
    d_model=25600,
    d_ff=4 * 25600,  # GPT's 4h MLP
    n_layers=128,
    n_heads=160,
    vocab=51200,
    seq_len=2048,
    gated=False,
    tied_embeddings=True,
    bias=True,
    norm="layernorm",
    learned_positions=2048,
    name="GPT 1T (Megatron-LM)",
)
_DEEPSEEK_V3 = TransformerConfig(
    d_model=7168,
    d_ff=18432,  # the first three layers' dense FFN
    n_layers=61,
    n_heads=128,
    vocab=129280,
    seq_len=4096,
    n_experts=256,
    experts_per_token=8,
    n_shared_experts=1,
    expert_d_ff=2048,
    n_dense_layers=3,
    mla=MLA(kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, q_lora_rank=1536),
    name="DeepSeek-V3",
)

_GPU_HOURS_PER_TRILLION = 180e3  # DeepSeek-AI (2024), section 1: 180K H800 GPU hours per trillion tokens
_SECONDS_PER_HOUR = 3600


def _megatron_flops_per_token(cfg: TransformerConfig) -> float:
    """Narayanan et al. (2021), equation 3, per token: ``96 l h^2 (1 + s / 6h + V / 16 l h)``, the
    forward, backward and recomputed forward of every layer (scores over the whole square) and
    the logits' forward and backward."""
    layers, h, s, v = cfg.n_layers, cfg.d_model, cfg.seq_len, cfg.vocab
    return 96 * layers * h**2 * (1 + s / (6 * h) + v / (16 * layers * h))


def _model_rate(cfg: TransformerConfig, tokens_per_s_per_gpu: float) -> float:
    """Model FLOP/s per GPU at a token rate, counted as the planner counts them (6 N active)."""
    return cfg.training_flops_per_token("6N") * tokens_per_s_per_gpu


def _llama3_405b() -> PublishedRun:
    """Llama 3 405B on 16,384 H100s (Grattafiori, Dubey et al. 2024)."""
    llama_tflops = 400e12  # Table 4, the 16,384-GPU row at 8K context
    llama_tokens_per_s = llama_tflops / _LLAMA3_405B.training_flops_per_token("three-term")  # attention counted
    return PublishedRun(
        key="llama3-405b",
        title="Llama 3 405B, 16,384 H100s",
        model=_LLAMA3_405B,
        node="8x-h100",
        n_gpus=16384,
        layout=dict(
            dp=128, tp=8, pp=16, zero=2, global_batch=2048, seq_len=8192, micro_batch=1, recompute="selective"
        ),  # fmt: skip  (flash attention keeps no score matrix)
        published_mfu=0.41,
        published_flops_per_s_per_gpu=llama_tflops,
        model_flops_per_s_per_gpu=_model_rate(_LLAMA3_405B, llama_tokens_per_s),
        counts="BF16 model FLOPs per GPU against the 989 TFLOP/s dense peak; the report counts attention too",
        source="Grattafiori, Dubey et al. (2024), Table 4: 16,384 GPUs, TP 8, CP 1, PP 16, DP 128, batch 16 per DP rank",
        notes="FSDP that shards optimizer state and gradients but keeps the weights after the forward "
        "(ZeRO-2's traffic); an interleaved schedule whose virtual-stage count the report does not print.",
        cite="grattafiori2024llama3",
    )


def _megatron_1t() -> PublishedRun:
    """Megatron-LM's 1T GPT on 3,072 A100s (Narayanan et al. 2021)."""
    megatron_tflops = 163e12  # Table 1, the 1T row
    megatron_tokens_per_s = megatron_tflops / _megatron_flops_per_token(_GPT_1T)
    return PublishedRun(
        key="megatron-1t",
        title="Megatron-LM GPT 1T, 3,072 A100s",
        model=_GPT_1T,
        node="8x-a100",
        n_gpus=3072,
        layout=dict(
            dp=6, tp=8, pp=64, zero=0, global_batch=3072, seq_len=2048, micro_batch=1, recompute="full"
        ),  # fmt: skip
        published_mfu=0.52,
        published_flops_per_s_per_gpu=megatron_tflops,
        model_flops_per_s_per_gpu=_model_rate(_GPT_1T, megatron_tokens_per_s),
        counts="hardware FLOPs (the recompute's extra forward included) against the A100's 312 TFLOP/s",
        source="Narayanan et al. (2021), Table 1: 1008B parameters, TP 8, PP 64, 3,072 GPUs, batch 3,072",
        notes="Full activation recomputation; the interleaved schedule's settings for this row are not printed.",
        cite="narayanan2021megatron",
    )


def _deepseek_v3() -> PublishedRun:
    """DeepSeek-V3 on 2,048 H800s (DeepSeek-AI 2024)."""
    deepseek_tokens_per_s = 1e12 / (_GPU_HOURS_PER_TRILLION * _SECONDS_PER_HOUR)
    return PublishedRun(
        key="deepseek-v3",
        title="DeepSeek-V3, 2,048 H800s",
        model=_DEEPSEEK_V3,
        node="8x-h800",
        n_gpus=2048,
        layout=dict(
            dp=128,
            pp=16,
            ep=64,
            zero=1,
            global_batch=15360,
            seq_len=4096,
            micro_batch=1,
            recompute="selective",
            overlap=("dp", "pp", "ep"),  # DualPipe runs the all-to-alls under another chunk's compute
        ),  # fmt: skip
        published_mfu=_model_rate(_DEEPSEEK_V3, deepseek_tokens_per_s) / gpu("H800").peak_flops_per_s("bf16"),
        published_flops_per_s_per_gpu=_model_rate(_DEEPSEEK_V3, deepseek_tokens_per_s),
        model_flops_per_s_per_gpu=_model_rate(_DEEPSEEK_V3, deepseek_tokens_per_s),
        counts="no MFU printed: the rate is 180K GPU hours per trillion tokens, counted here as 6 N active "
        "FLOPs per token against the BF16 dense peak (its GEMMs ran in FP8, at twice that peak)",
        source="DeepSeek-AI (2024), sections 3.1-3.2 (PP 16, EP 64 over 8 nodes, ZeRO-1 DP) and 4.2 "
        "(batch 15,360 sequences of 4,096 tokens)",
        notes="DualPipe overlaps forward and backward chunks and their all-to-alls; routing sends each token to "
        "at most 4 nodes, and the IB traffic of a token goes once per node, then over NVLink.",
        cite="deepseekai2024v3",
    )


def published_runs() -> tuple[PublishedRun, ...]:
    """The three runs, in the order of the module docstring."""
    return (_llama3_405b(), _megatron_1t(), _deepseek_v3())


def compare_run(run) -> RunComparison:
    """Plan a published run's layout on its cluster, beside what its paper printed."""
    if not isinstance(run, PublishedRun):
        raise TypeError(f"run must be a PublishedRun (one of published_runs()), got {type(run).__name__} {run!r}")
    c = cluster(run.node, run.n_gpus)
    p = plan(run.model, c, **run.layout)
    tokens_per_s_per_gpu = run.model_flops_per_s_per_gpu / run.model.training_flops_per_token("6N")
    published = mfu(run.model.active_params(), tokens_per_s_per_gpu * run.n_gpus, run.n_gpus, c.gpu)
    return RunComparison(run=run, plan=p, published_model_mfu=published)
