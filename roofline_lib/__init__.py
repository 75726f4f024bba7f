"""roofline_lib: the shared package of The Roofline Course.

Layers, each importing only the ones above it (tests/test_packaging.py reads every import of
the package from its syntax tree, ``importlib.import_module`` and imports inside functions
included; a private helper such as ``_format`` sits at its highest importer's layer):

    hardware      -> the GPU registry (datasheet numbers, SI units)
    interconnect  -> the link registry beside it: NVLink, PCIe, InfiniBand, 8-GPU nodes
    roofline      -> ridge point, attainable FLOP/s, kernel verdict, plausibility guard
    ops           -> FLOPs and bytes of single operations (GEMM, GEMV, norms, attention...)
    tiling        -> a GEMM as a GPU runs it: output tiles' strip traffic, L2 reuse by launch order,
                     waves on the SMs, tensor-core padding
    transformer   -> model counts (GQA, head size, experts), conventions (6N, three-term, full-square),
                     shipped configs and Hugging Face config.json reading
    audit         -> FlopCounterMode-based FLOP audit of real torch graphs
    inference     -> decode ceilings, weight-GEMM intensity, KV cache, quantisation
    training      -> MFU/HFU, training bills, precision sweep
    train_memory  -> training memory: bytes per parameter by optimizer and precision, ZeRO stages,
                     activation memory per layer (Korthikanti et al.), with and without recompute
    scenarios     -> the worked examples several chapters share (LayerNorm, FFN GEMM, runs)
    comms         -> alpha-beta collective costs, the communication roofline, live gloo/NCCL timing
    parallel      -> parallelism on the roofline: DP, ZeRO/FSDP, TP, PP, EP, CP bytes and the planner
    published_runs -> published training runs (Llama 3 405B, Megatron-LM 1T, DeepSeek-V3) against the planner
    serving       -> serving steps on the roofline (prefill, decode, mixed), TTFT/TPOT, KV capacity,
                     speculative decoding, prefix caching, steady-state frontier
    scheduler     -> discrete-event server model (static, continuous, chunked, disaggregated), frontier, SLO
    serving_live  -> the small decoder served live with a KV-cache loop, timed on this CPU
    parallel_live -> DDP, FSDP and tensor parallelism trained live with torch.distributed (gloo) on this CPU
    measure       -> timing (do_bench on CUDA, careful CPU fallback), this machine's ceilings
    records       -> the schema and files of recorded GPU measurements (the caller names the folder)
    record_report -> what a chapter shows of a record: targets, live beside recorded
    prose         -> helpers for values quoted in a chapter's prose
    plots         -> matplotlib rooflines
    widgets       -> ipywidgets explorers
    widgets_parallel -> the parallelism planner's explorer
    traces        -> reading Kineto traces: correlation ties, complete steps, merged kernel windows
    diagnose      -> the playbook's triage: compute-, memory-, communication- or overhead-bound
                     from a real profile
    kernels       -> Triton demo kernels (fused element-wise, add+RMSNorm) with torch references
    export        -> JSON export of the registry for the static site
    observer      -> what an exercise notebook reports to the grader
    grading       -> checks behind the autograded exercises
    cli           -> the ``roofline`` command (a face: nothing above imports it)
    lab_contents  -> JupyterLab's contents manager: jupytext's, and chapters open unmodified (a face)

Chapters call ``import roofline_lib as rl``.
"""

from .comms import *  # noqa: F401,F403  (torch is imported only inside measure_collectives)
from .comms import __all__ as _comms_all
from .hardware import *  # noqa: F401,F403
from .hardware import __all__ as _hardware_all
from .inference import *  # noqa: F401,F403
from .inference import __all__ as _inference_all
from .interconnect import *  # noqa: F401,F403
from .interconnect import __all__ as _interconnect_all
from .ops import *  # noqa: F401,F403
from .ops import __all__ as _ops_all
from .parallel import *  # noqa: F401,F403
from .parallel import __all__ as _parallel_all
from .published_runs import *  # noqa: F401,F403
from .published_runs import __all__ as _published_runs_all
from .roofline import *  # noqa: F401,F403
from .roofline import __all__ as _roofline_all
from .scheduler import *  # noqa: F401,F403
from .scheduler import __all__ as _scheduler_all
from .serving import *  # noqa: F401,F403
from .serving import __all__ as _serving_all
from .tiling import *  # noqa: F401,F403
from .tiling import __all__ as _tiling_all
from .train_memory import *  # noqa: F401,F403
from .train_memory import __all__ as _train_memory_all
from .training import *  # noqa: F401,F403
from .training import __all__ as _training_all
from .transformer import *  # noqa: F401,F403
from .transformer import __all__ as _transformer_all

# audit (torch), measure, plots, widgets, widgets_parallel, diagnose, kernels, records, export,
# serving_live and parallel_live (torch) and grading are imported on demand:
#   from roofline_lib import audit, measure, plots, widgets
# so that `import roofline_lib` stays fast and light.

__version__ = "0.1.0"
__all__ = [
    *_hardware_all,
    *_roofline_all,
    *_ops_all,
    *_tiling_all,
    *_transformer_all,
    *_inference_all,
    *_training_all,
    *_interconnect_all,
    *_comms_all,
    *_serving_all,
    *_scheduler_all,
    *_train_memory_all,
    *_parallel_all,
    *_published_runs_all,
]
