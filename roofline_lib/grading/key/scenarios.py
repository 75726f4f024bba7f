"""The exercises' scenarios: the typed inputs, the same numbers the exercise notebooks print."""

__all__ = [
    "EX1",
    "EX2",
    "EX3",
    "EX4",
    "EX5",
    "EX6",
    "EX7",
    "EX7_STATE",
    "EX7_ACT_LINEAR",
    "EX7_ACT_SCORES",
    "EX8",
    "EX9",
    "BACKWARD_SHARE",
    "WIDTHS",
]


EX1 = dict(
    fp32_flops_per_s=78e12,
    bf16_flops_per_s=900e12,
    hbm_bytes_per_s=4.0e12,  # "Kestrel K1"
    flop=469_762_048,
    read_bytes=268_468_224,
    write_bytes=268_435_456,
    seconds=150e-6,
    rerun_seconds=110e-6,
)
EX2 = dict(p_bf16=1200e12, p_hbm=6.0e12, q_bf16=500e12, q_hbm=4.0e12, intensity=150.0)
EX3 = dict(
    hidden_size=8192,
    num_hidden_layers=80,
    intermediate_size=28672,
    num_attention_heads=64,
    num_key_value_heads=8,
    head_dim=128,
    vocab_size=128256,
    tokens=2e12,
    mfu=0.40,
    bytes_per_param=2,
    bf16_flops_per_s=750e12,
    hbm_bytes_per_s=3.2e12,
    memory_bytes=64e9,  # "Kestrel K2"
)
EX4 = dict(seq=8192, head_dim=128, bytes_per_elem=2, bf16_flops_per_s=300e12, hbm_bytes_per_s=2.0e12)
_EX5_N = 8 * 2048 * 4096
EX5 = dict(
    flops=2 * _EX5_N,
    elems=2 * _EX5_N,
    heron={"hbm_bytes_per_s": 3.0e12, "peak_flops_per_s": {"fp32": 60e12, "bf16": 1000e12, "fp8": 2000e12}},
    heron_seconds={"fp32": 190e-6, "bf16": 100e-6, "fp8": 55e-6},
    ibis={"hbm_bytes_per_s": 2.0e12, "peak_flops_per_s": {"fp32": 19.5e12, "bf16": 312e12}},
    ibis_copied_seconds={"fp32": 200e-6, "bf16": 100e-6, "fp8": 50e-6},
)

EX6 = dict(
    n_params=8e9,
    grad_bytes_per_param=2,
    n_gpus=16,
    tokens_per_gpu=16384,
    bf16_flops_per_s=750e12,
    mfu=0.45,  # "Kestrel K2", the MFU the run reaches
    alpha_seconds=20e-6,
    link_bytes_per_s=50e9,  # one direction, per accelerator
    n_gpus_large=128,
    global_tokens=262144,
)
EX7 = dict(
    hidden_size=6144,
    num_hidden_layers=48,
    intermediate_size=21504,
    num_attention_heads=48,
    num_key_value_heads=8,
    head_dim=128,
    vocab_size=65536,
    bf16_flops_per_s=800e12,
    hbm_bytes_per_s=3.2e12,
    memory_bytes=64e9,  # "Kestrel K3"
    gpus_per_node=8,
    nvlink_bytes_per_s=450e9,  # one direction, per card, to the other cards of its node
    nics_per_node=4,
    nic_bytes_per_s=50e9,  # one direction, per NIC
    n_nodes=8,
    seq_len=2048,
    micro_batch=1,  # sequences per card per step, no gradient accumulation
    max_micro_batch=8,
)
#: Mixed-precision Adam, bytes per parameter: bf16 weight and gradient, fp32 master, momentum, variance.
EX7_STATE = {"weights": 2, "gradients": 2, "optimizer": 4 + 4 + 4}
#: Korthikanti et al.'s bytes per token per unit of width one GPT layer keeps (bf16), scores left out
#: (selective recompute), and the scores' term per a s / h.
EX7_ACT_LINEAR, EX7_ACT_SCORES = 34, 5

EX8 = dict(
    hidden_size=5120,
    num_hidden_layers=40,
    intermediate_size=13824,
    num_attention_heads=40,
    num_key_value_heads=8,
    head_dim=128,
    vocab_size=100352,
    n_params=12_037_652_480,  # the config's weight matrices, as its model card prints them
    bytes_per_param=2,  # bf16 weights
    kv_bytes_per_elem=2,  # bf16 KV cache
    bf16_flops_per_s=800e12,
    hbm_bytes_per_s=3.2e12,
    memory_bytes=80e9,  # "Kestrel K4"
    prompt_len=2000,
    output_len=500,
    block_tokens=16,
    max_seq_len=8192,  # what a contiguous allocator reserves per request
    batch=64,
    tpot_seconds=0.020,  # the objective, per output token
    running=80,  # requests decoding while a prompt is chunked in
)

EX9 = dict(
    hidden_size=3840,
    num_hidden_layers=40,
    intermediate_size=10240,
    num_attention_heads=30,
    num_key_value_heads=6,
    head_dim=128,
    vocab_size=131072,
    n_params=7_140_802_560,  # the config's weight matrices, as its model card prints them
    bytes_per_param=2,  # bf16 weights
    kv_bytes_per_elem=2,  # bf16 KV cache
    bf16_flops_per_s=1000e12,
    hbm_bytes_per_s=4.0e12,
    memory_bytes=96e9,  # "Kestrel K5"
    tdp_watts=700,  # the most it may draw: a trap, never a term of the energy
    static_watts=100,  # drawn every second a process holds the card, busy or not
    joules_per_flop=0.40e-12,  # bf16, on the matrix units
    hbm_joules_per_bit=4.0e-12,  # the datasheet prints HBM access energy per bit
    gemm_n=8192,  # M = N = K of the square bf16 GEMM, and the GEMV's matrix side
    context_len=2048,  # every decoding sequence's context
    batch=64,
    cap_watts=400,
    node_dollars_per_hour=36.0,  # one node of gpus_per_node cards, each serving its own copy
    gpus_per_node=8,
)

#: The share of a step's compute under which a gradient all-reduce can run: the backward pass,
#: 4 N of the 6 N FLOPs per token.
BACKWARD_SHARE = 4 / 6

#: Bytes per element of every number format the exercises' functions must handle.
WIDTHS = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp6": 0.75, "fp4": 0.5, "int4": 0.5}
