"""Every public function refuses bad input with an error that names the parameter.

The functions are found, not listed: everything callable in ``rl.__all__`` and in the
``__all__`` of the modules imported on demand. For each one a valid call is built from
:data:`VALID` (a typical value per parameter name) and :data:`OVERRIDES`; the test first checks
that call works, then replaces one parameter at a time by a bad value drawn by hypothesis:

* a bool where a number is expected (``True`` is not the whole number 1 here);
* NaN, +-inf, a negative number, a string, ``None``, an object of no use;
* a number where a name, a flag or an object is expected.

Each call must raise TypeError or ValueError whose message names the parameter, never return.
A second property feeds huge numbers (1e300) and asks that a result, when one comes back, holds
no inf or NaN (overflow is an error, not an answer).

What is not called is in :data:`NOT_CALLED`, each with its reason; a new public function that
is neither callable from :data:`VALID` nor listed there fails :func:`test_every_public_function_is_covered`.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import math
import signal
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import roofline_lib as rl

#: Modules that ``import roofline_lib`` does not load; their ``__all__`` is public too.
ON_DEMAND = (
    "audit",
    "measure",
    "plots",
    "widgets",
    "diagnose",
    "kernels",
    "records",
    "record_report",
    "export",
    "grading",
    "cli",
    "parallel_live",
    "collectives_live",
    "local_ranks",
    "measured_roofs",
    "provenance",
    "tiny_model",
    "playbook",
    "triage",
    "trace_rows",
    "profile_live",
    "diagnosis_report",
    "explorer",
    "widgets_parallel",
    "energy_live",
)

#: What each kind of parameter looks like in a valid call, by name. SI units throughout.
VALID: dict[str, Any] = {
    # hardware and roofline
    "name": "H100",
    "value": "H100",
    "gpu": "H100",
    "precision": "bf16",
    "memory": "hbm",
    "intensity": 10.0,  # FLOP/byte
    "flops": 2e9,  # FLOP
    "bytes_moved": 4e8,  # bytes
    "seconds": 1e-3,  # 2e9 FLOP / 1e-3 s = 2 TFLOP/s, 4e8 B / 1e-3 s = 0.4 TB/s: far under an H100's roofs
    "achieved_flops_per_s": 1e14,
    "achieved_bytes_per_s": 1e12,
    "tolerance": 0.05,
    "what": "this measurement",
    # operation counts
    "m": 64,
    "n": 64,
    "k": 64,
    "bytes_per_elem": 2,
    "flops_per_elem": 1,
    "n_inputs": 2,
    "n_outputs": 1,
    "n_rows": 8,
    "d": 64,
    "n_cols": 64,
    "seq_q": 128,
    "seq_k": 128,
    "batch": 1,
    "heads": 4,
    "head_dim": 64,
    "causal": False,
    "fused": True,
    "gated": False,
    # a GEMM in tiles (64 x 64 x 64 in 16 x 16 tiles: a 4 x 4 grid)
    "tile_m": 16,
    "tile_n": 16,
    "tile_k": 16,
    "blocks_per_sm": 1,
    "group_m": 2,
    "dim": 100,
    "multiple": 64,
    # model counts
    "d_model": 512,
    "d_ff": 2048,
    "n_layers": 4,
    "seq_len": 128,
    "vocab": 32000,
    "n_heads": 8,
    "n_params": 7e9,
    "kappa": 2.0,
    # inference
    "tokens": 16,
    "d_in": 4096,
    "d_out": 4096,
    "bytes_per_param": 2,
    "weight_bytes": 14e9,
    "reserve_fraction": 0.0,
    "n_kv_heads": 8,
    "context_len": 4096,
    "kv_bytes_per_token": 131072.0,  # 2 * 32 layers * 8 heads * 128 dims * 2 bytes
    # training
    "tokens_per_s": 1000.0,
    "n_gpus": 8,
    "target_mfu": 0.4,
    "mfu": 0.4,
    "n_tokens": 1e12,
    "recompute_fraction": 0.0,
    "usd_per_gpu_hour": 2.0,
    "elems": 1e6,
    "seconds_by_dtype": {"bf16": 1e-3},
    # a chip described by hand, conventions, mixtures of experts
    "peak_flops_per_s": 1e15,
    "hbm_bytes_per_s": 3e12,
    "convention": "6N",
    "n_experts": 8,
    "experts_per_token": 2,
    # communication
    "link": "NVLink 4",
    "collective": "all_reduce",
    "message_bytes": 1e8,
    "bytes_sent": 1e8,
    "n_ranks": 8,
    "alpha_seconds": 5e-6,
    "bytes_per_s": 1e11,
    "tokens_per_gpu": 4096,
    "compute_seconds": 1e-3,
    "gradient_seconds": 7e-4,  # seconds of gradient traffic per step
    "comms_seconds": 1e-3,
    "tp": 2,
    # measurement and presentation
    "device": "cpu",
    "warmup": 1,
    "reps": 2,
    "ffn_ratio": 4.0,
    "model_flops": 2e9,
    "device_name": "NVIDIA H100 80GB HBM3",
    "indent": 2,
    "width": 100,
    # energy and cost (H100 SXM: 121.7 W static, 700 W TDP)
    "cap_watts": 500.0,  # watts, between the static power and the TDP
    "tdp_watts": 700.0,
    "idle_watts": 100.0,
    "joules_per_hbm_byte": 31.76e-12,  # 3.97 pJ/bit * 8 bits
    "dollars_per_hour": 2.0,
    "joules": 3.6e9,  # 1000 kWh
    "grid_g_per_kwh": 400.0,
    "pue": 1.1,
}

#: Per-function values where the name alone does not say what a valid call needs.
OVERRIDES: dict[str, dict[str, Any]] = {
    "rl.gpu": {"name": "H100"},
    "rl.check_plausible": {"spec": lambda: rl.gpu("H100")},
    "diagnose.classify_op": {"name": "aten::mm"},
    "measured_roofs.measured_point": {"name": "gemm", "ceilings": lambda: _ceilings()},
    "diagnose.measured_mfu": {"ceilings": lambda: _ceilings()},
    "measure.time_fn": {"fn": lambda: lambda: None, "device": "cpu"},
    "widgets.mfu_explorer": {"tokens_per_s": 1000.0},
    "rl.roof": {"source": "H100"},
    "rl.flops_utilisation": {"roof": lambda: rl.roof("H100")},
    "rl.accelerator": {"name": "a reader's chip", "peak_flops_per_s": {"bf16": 1e15}},
    "rl.model_config": {"name": "llama-2-7b"},
    "rl.published_params": {"name": "llama-2-7b"},
    "rl.read_model": {
        "config": lambda: {
            "model_type": "llama",
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "vocab_size": 100,
        }
    },
    "rl.decode_batch_to_reach_ridge": {"cfg": lambda: rl.model_config("llama-3-8b"), "context_len": 128},
    "rl.link": {"name": "NVLink 4"},
    "rl.as_link": {"value": "NVLink 4"},
    "rl.node": {"name": "8x-h100"},
    "rl.decode_step_bytes_of": {"cfg": lambda: _config()},
    "rl.decode_flops_per_token": {"cfg": lambda: _config()},
    "rl.model_decode_ceiling": {"cfg": lambda: _config()},
    "kernels.predict_seconds": {"count": lambda: rl.gemm(64, 64, 64), "bytes_per_s": None},
    "rl.as_node": {"value": "8x H100"},
    "rl.node_collective_cost": {"node": "8x H100", "n_gpus": 16},
    "rl.serving_server": {"cfg": lambda: _config(), "hardware": "H100"},
    "rl.step_time": {"server": lambda: _server(), "chunks": lambda: [rl.Chunk(4, 0, 1)]},
    "rl.prefill_step": {"server": lambda: _server(), "prompt_len": 64},
    "rl.decode_step": {"server": lambda: _server(), "batch": 4, "context_len": 64},
    "rl.mixed_step": {"server": lambda: _server(), "decode_contexts": (64, 32), "prefill_tokens": 16},
    "rl.kv_capacity": {"server": lambda: _server(), "prompt_len": 64, "output_len": 16},
    "rl.expected_tokens_per_step": {"alpha": 0.8, "gamma": 4},
    "rl.speculative_speedup": {"alpha": 0.8, "gamma": 4, "draft_cost": 0.05},
    "rl.speculative_decoding": {
        "target": lambda: _server(),
        "draft": lambda: _server(),
        "batch": 1,
        "context_len": 64,
        "alpha": 0.8,
        "gamma": 4,
    },
    "rl.speculative_energy": {
        "target": lambda: _server(),
        "draft": lambda: _server(),
        "batch": 1,
        "context_len": 64,
        "alpha": 0.8,
        "gamma": 4,
    },
    "rl.judge_energy": {"joules": 0.5},  # 0.5 J in 1 ms = 500 W, under the 700 W TDP and over the 0.014 J floor
    "rl.prefix_cache_savings": {"server": lambda: _server(), "prompt_len": 64, "cached_prefix": 32},
    "rl.steady_state": {
        "server": lambda: _server(),
        "policy": "continuous",
        "batch": 4,
        "prompt_len": 64,
        "output_len": 16,
    },
    "rl.step_counts": {"server": lambda: _server()},
    "rl.steady_frontier": {"server": lambda: _server(), "policy": "continuous", "prompt_len": 64, "output_len": 16},
    "rl.poisson_trace": {"n_requests": 4, "rate_per_s": 2.0, "prompt_len": 64, "output_len": 16, "seed": 1},
    "rl.cluster": {"node": "8x H100", "n_gpus": 16},
    "rl.plan": {
        "model": lambda: _config(),
        "cluster": lambda: rl.cluster("8x H100", 16),
        "dp": 8,
        "tp": 2,
        "global_batch": 16,
        "seq_len": 128,
    },
    "rl.expert_params": {"model": lambda: _config()},
    "rl.max_context": {"cfg": lambda: _config()},
    "rl.context_problem": {"cfg": lambda: _config()},
    "rl.inference_activation_bytes": {"cfg": lambda: _config(), "logits_rows": 1},
    "rl.fewest_devices": {"need_bytes": 1e11, "capacity_bytes": 8e10},
    "rl.frontier_batches": {"server": lambda: _server(), "prompt_len": 64, "output_len": 16},
    "rl.pipeline_bubble_fraction": {"pp": 4, "micro_batches": 8},
    "rl.data_parallel_bytes": {"n_params": 1e9, "dp": 8, "zero": 1},
    "rl.tensor_parallel_bytes": {"tokens": 1024, "d_model": 512, "tp": 2, "n_layers": 4},
    "rl.zero_memory": {"n_params": 7.5e9, "dp": 64, "stage": 1},
    "rl.training_state_bytes": {"model": lambda: _config()},
    "rl.activation_bytes_per_layer": {"micro_batch": 1},
    "rl.compare_run": {"run": lambda: rl.published_runs()[0]},
    "rl.decode_energy": {"server": lambda: _server(), "batch": 4, "context_len": 64},
    "rl.prefill_energy": {"server": lambda: _server(), "prompt_len": 64},
    "rl.request_energy": {"server": lambda: _server(), "batch": 4, "prompt_len": 64, "output_len": 16},
    "rl.step_energy": {"server": lambda: _server(), "step": lambda: rl.decode_step(_server(), 4, 64)},
    "rl.training_energy": {"tokens": 1e12},
    # the piles through a GPU trace, and a folder of ranks: the repository's synthetic traces
    "diagnosis_report.piles_over_time": {"trace": lambda: _gpu_trace(), "diagnosis": lambda: _gpu_diagnosis()},
    "diagnosis_report.plot_piles": {"trace": lambda: _gpu_trace(), "diagnosis": lambda: _gpu_diagnosis()},
    "diagnosis_report.plot_ranks": {"summary": lambda: _rank_summary()},
    "energy_live.energy_between": {"before": lambda: (1.0,), "after": lambda: (2.0,), "wrap_joules": lambda: (None,)},
}

#: Public names that are not called here, and why. Classes are data holders the library builds
#: itself (their inputs are checked by the function that makes them) unless listed in CONSTRUCTORS.
NOT_CALLED: dict[str, str] = {
    # the playbook's steps, each taking the record the step before it made (tested in their own modules)
    "playbook.walk": "takes the facts the triage gathered; tested in test_playbook",
    "playbook.verdict": "takes the piles' shares the triage computed; tested in test_playbook",
    "playbook.remedy": "takes a verdict's regime name, one of playbook.VERDICTS; tested in test_playbook",
    "triage.place_rows": "takes a trace's rows (trace_rows.read_trace); tested in test_triage",
    "triage.idle_seconds": "takes a Trace (trace_rows.read_trace); tested in test_triage",
    "triage.roof_for": "takes one of a trace's rows; tested in test_triage",
    "diagnose.as_trace": "takes a profile or its events, as read_trace does; tested in test_trace_rows",
    "trace_rows.merge_rows": "takes a trace's rows; tested in test_trace_rows",
    "profile_live.export_profile": "takes a torch profile; tested in test_profile_live",
    "diagnosis_report.evidence_lines": "takes a Diagnosis; tested in test_diagnosis_report",
    "diagnosis_report.no_majority_line": "takes the triage's top piles; tested in test_diagnosis_report",
    "diagnosis_report.roof_and_precision": "takes a trace's rows; tested in test_diagnosis_report",
    "diagnosis_report.communication_lines": "takes a trace's rows; tested in test_diagnosis_report",
    "rl.known_gpus": "takes no arguments",
    "rl.registry": "takes no arguments",
    "measure.has_cuda": "takes no arguments",
    "export.registry_as_dict": "takes no arguments",
    "record_report.live_gpu": "takes no arguments",
    "rl.gpus_with_power": "takes no arguments",
    "record_report.energy_judgements": "takes a GPURecord; tested in test_records",
    "record_report.describe_energy": "takes a GPURecord; its refusal of anything else is in test_records",
    "measured_roofs.measure_ceilings": "runs for its time budget; its refusal of bad seconds is in test_measured_roofs",
    "measured_roofs.best_of": "takes MeasuredCeilings readings, not numbers; tested in test_measured_roofs",
    "audit.count_flops": "takes a callable and that callable's own arguments",
    "audit.attention_mapping": "takes two choices (a name and a flag), refused in test_audit",
    "tiny_model.tiny_decoder": "builds a torch model from a TransformerConfig (validated by the config)",
    "tiny_model.random_tokens": "builds a torch tensor from a TransformerConfig (validated by the config)",
    "audit.crosscheck": "runs a torch model for seconds; its config is validated by TransformerConfig",
    "plots.plot_roofline": "takes sequences of registry names and Points; tested in test_plots",
    "plots.plot_ridge_by_precision": "takes a sequence of registry names; tested in test_plots",
    "plots.alt_text": "takes a figure or plot_roofline's keywords",
    "plots.save_roofline": "takes a path and plot_roofline's keywords",
    "plots.show": "takes a Figure and a figure cell's name; its refusals are tested in test_plots",
    "plots.figure_text": "takes a figure cell's name and a folder; its refusal is tested in test_plots",
    "diagnose.op_stats": "takes a torch profile or its events",
    "diagnose.profile_run": "takes a callable and its arguments",
    "diagnose.diagnose": "takes a torch profile or its events; its numeric keywords are tested in test_diagnose",
    "kernels.copy": "takes torch tensors (a Triton kernel)",
    "kernels.copy_reference": "takes torch tensors",
    "kernels.bias_gelu": "takes torch tensors (a Triton kernel)",
    "kernels.bias_gelu_reference": "takes torch tensors",
    "kernels.add_rmsnorm": "takes torch tensors (a Triton kernel)",
    "kernels.add_rmsnorm_reference": "takes torch tensors",
    "kernels.check_demo": "runs a demo kernel by name; tested in test_kernels",
    "kernels.run_demo": "needs a CUDA GPU",
    "record_report.describe_record": "takes a GPURecord; its refusal of anything else is in test_records",
    "record_report.check_targets": "takes a GPURecord; tested in test_records",
    "record_report.side_by_side": "takes a GPURecord and KernelMeasurement rows; its refusals are in test_records",
    "records.from_json": "takes a record part's class and its parsed JSON; the schema's refusals are in test_records",
    "records.to_json": "takes a record part",
    "records.validate_record": "takes a parsed JSON document; the schema's refusals are in test_records",
    "records.load_record": "takes a path",
    "records.list_records": "takes a folder",
    "records.latest_record": "takes a folder",
    "records.write_record": "takes a record and a folder",
    "records.record_path": "takes a folder",
    "export.write_registry_js": "takes a path",
    "export.write_registry_json": "takes a path",
    "rl.fit_alpha_beta": "takes two sequences of measurements; its refusals are in test_comms",
    "collectives_live.measure_collectives": "measures collectives on this machine's ranks",
    "provenance.gpu_identity": "needs a CUDA GPU",
    "diagnose.measure_fixed_cost": "measures this machine's per-call cost for seconds",
    "measured_roofs.matmul_readings": "measures this machine for seconds",
    "measured_roofs.stream_readings": "measures this machine for seconds",
    "provenance.parse_smi_rows": "parses nvidia-smi's text output",
    "diagnose.count_op": "takes a profiler event's operator name, shapes and dtypes",
    "diagnose.read_trace": "takes a profiler trace (a path or its parsed JSON)",
    "grading.grade_paths": "takes exercise paths and executes them",
    "grading.grade_submissions": "takes a folder of submissions and executes them",
    "grading.gradebook_csv": "takes grading results",
    "grading.report_json": "takes grading results",
    "grading.parts_of": "takes an exercise key, checked against the exercise files in test_grader",
    "grading.check": "takes a part key and a notebook namespace",
    "grading.check_cell_source": "takes a part key",
    "grading.observe": "takes a part key and a notebook namespace",
    "grading.judge": "takes a part key and an observation",
    "grading.grade": "takes exercise paths and executes them",
    "grading.format_table": "takes grading results",
    "grading.run_grade": "takes exercise paths and executes them",
    "grading.main": "the command line; tested in test_grader and test_cli",
    "cli.main": "the command line; tested in test_cli",
    "rl.run_policy": "takes a request trace and a step executor (a callable); its refusals are in test_serving",
    "rl.simulate": "takes a request trace (poisson_trace's, validated there); its refusals are in test_serving",
    "rl.simulate_disaggregated": "takes a request trace and two Servers; its refusals are in test_serving",
    "rl.frontier": "runs the scheduler at each arrival rate; its refusals are in test_serving",
    "rl.best_steady_state": "takes steady_frontier's points; its refusals of the SLO are in test_serving",
    "rl.best_under_slo": "takes frontier points and an SLO; its refusals are in test_serving",
    "rl.best_rate_under_slo": "runs the scheduler at each rate it searches; its refusals are in test_scheduler",
    "rl.memory_fit": "the feasibility rule, given name -> bytes parts by the pricing functions; see test_feasibility",
    "rl.server_fit": "takes (context, sequences) pairs from step_time; exercised through it in test_feasibility",
    "rl.fit_layouts": "prices every layout with plan (whose refusals are tested here); its own in test_feasibility",
    "rl.published_runs": "takes no arguments",
    "parallel_live.measure_parallel": "trains on local gloo ranks for seconds; its refusals are in test_parallel_live",
    "energy_live.measure_energy": "reads this machine's energy counter; tested with a fake counter in test_energy_live",
    "energy_live.measure_repeated": "runs CUDA work between counter readings; tested on the fake H200 through gpu_check's energy step",
    "energy_live.nvml_index": "asks NVML for its devices; tested with a fake pynvml in test_gpu_check",
    "parallel_live.compare_parallel": "takes measure_parallel's LiveMeasurement; its refusal is in test_parallel_live",
}

#: Classes whose constructor is public input (a reader builds one by hand), so it must refuse too.
CONSTRUCTORS = {"rl.GPUSpec", "rl.TransformerConfig", "rl.OpCount", "plots.Point"}

#: Base keywords for those constructors.
CONSTRUCTOR_VALUES: dict[str, dict[str, Any]] = {
    "rl.GPUSpec": dict(
        name="Test GPU",
        hbm_bytes_per_s=2e12,
        hbm_capacity_bytes=80e9,
        l2_bytes=40e6,
        sm_count=100,
        dense_flops_per_s={"bf16": 300e12},
        sparse_flops_per_s={"bf16": 600e12},
        source="a test",
    ),
    "rl.TransformerConfig": dict(d_model=512, d_ff=2048, n_layers=4, n_heads=8, vocab=32000, seq_len=128),
    "rl.OpCount": dict(flops=2e9, bytes_moved=4e8),
    "plots.Point": dict(label="gemm", intensity=10.0, flops_per_s=1e12),
}


def _config():
    return rl.TransformerConfig(d_model=512, d_ff=2048, n_layers=4, n_heads=8, vocab=32000, seq_len=128)


def _server():
    return rl.serving_server(_config(), "H100")


SYNTHETIC = Path(__file__).resolve().parent / "traces" / "synthetic"


@functools.cache
def _gpu_trace():
    """The synthetic H100 trace with zero-length kernels (tests/traces/synthetic), read once."""
    from roofline_lib.evidence.trace_rows import read_trace

    return read_trace(SYNTHETIC / "zero_length_h100.json")


@functools.cache
def _gpu_diagnosis():
    from roofline_lib.evidence.diagnose import diagnose

    return diagnose(_gpu_trace())


@functools.cache
def _rank_summary():
    """The synthetic folder of three rank traces, diagnosed once."""
    from roofline_lib.evidence.trace_ranks import diagnose_ranks

    return diagnose_ranks(SYNTHETIC / "ranks")


def _ceilings():
    from roofline_lib.evidence.measured_roofs import MeasuredCeilings

    return MeasuredCeilings(
        bytes_per_s=1e12,
        flops_per_s=1e13,
        device_name="a test CPU",
        precision="fp32",
        n_threads=1,
        date="2026-01-01T00:00:00+00:00",
        torch_version="2.13.0",
    )


# --------------------------------------------------------------------------- the cases


@dataclasses.dataclass(frozen=True)
class Case:
    """One public callable, a valid set of keywords for it, and how each parameter may be spoiled."""

    qualname: str
    fn: Any
    kwargs: dict  # the valid call
    kinds: dict  # parameter -> "number" | "flag" | "text" | "object"
    defaults: dict  # parameter -> its default, where it has one (None or "" there is not bad input)
    optional: frozenset = frozenset()  # parameters annotated "X | None"

    def is_default(self, param: str, value) -> bool:
        """The parameter's own default, or None where its annotation says ``| None``: not bad input."""
        if value is None and param in self.optional:
            return True
        default = self.defaults.get(param, inspect.Parameter.empty)
        return default is not inspect.Parameter.empty and type(value) is type(default) and value == default


def _modules():
    yield "rl", rl
    for name in ON_DEMAND:
        try:
            yield name, importlib.import_module(rl._MODULES.get(name, f"roofline_lib.{name}"))
        except ImportError:  # pragma: no cover - a module the environment cannot import
            continue


def public_callables():
    """(qualname, object) for every callable public name, in a stable order."""
    seen = set()
    for mod_name, mod in _modules():
        for attr in getattr(mod, "__all__", ()):
            obj = getattr(mod, attr, None)
            if not callable(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            yield f"{mod_name}.{attr}", obj


def _kind(value) -> str:
    if isinstance(value, bool):
        return "flag"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "text"
    return "object"


def build_case(qualname: str, fn) -> Case | None:
    """The valid call of ``fn``, or None when it is not called here (a class the library builds)."""
    if qualname in NOT_CALLED:
        return None
    if inspect.isclass(fn) and qualname not in CONSTRUCTORS:
        return None
    values = {**VALID, **OVERRIDES.get(qualname, {})}
    if qualname in CONSTRUCTORS:
        values = dict(CONSTRUCTOR_VALUES[qualname])
    kwargs, kinds, defaults, optional = {}, {}, {}, set()
    for p in inspect.signature(fn).parameters.values():
        if "None" in str(p.annotation):
            optional.add(p.name)
        if p.default is not p.empty:
            defaults[p.name] = p.default
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name in values:
            value = values[p.name]
            value = value() if callable(value) and p.name in OVERRIDES.get(qualname, {}) else value
        elif p.default is not p.empty:
            value = p.default
            if value is None or p.name in ("what",):
                continue  # an optional input left out; nothing to spoil
        else:
            UNFILLED.append(f"{qualname}({p.name})")
            return None
        kwargs[p.name] = value
        if p.name not in ("what", "title", "label"):
            kinds[p.name] = _kind(value)
    if not kinds:
        return None  # nothing a caller passes (no arguments, or only streams and callables)
    return Case(qualname, fn, kwargs, kinds, defaults, frozenset(optional))


#: Parameters for which VALID and OVERRIDES hold no value: filled by all_cases(), must stay empty.
UNFILLED: list[str] = []


def all_cases() -> list[Case]:
    return [c for q, f in public_callables() if (c := build_case(q, f)) is not None]


#: Fixed bad values per kind, used by the tally in the closing note (hypothesis draws more below).
BAD: dict[str, tuple] = {
    "number": (True, False, math.nan, math.inf, -math.inf, -1, "1", None, object()),
    "flag": (1, "yes", None),
    "text": (7, True, None, ""),
    "object": (7, "nonsense", True),
}

#: Where a parameter legitimately accepts a value the generic list calls bad, and why.
ACCEPTS: dict[tuple[str, str], str] = {
    ("rl.training_flops_per_token", "n_layers"): "ignored under the 6N convention; checked under 'three-term'",
    # comms: a link is a LinkSpec, a link name, or a number (its one-direction bandwidth in bytes/s)
    **{
        (f"rl.{fn}", "link"): "a number is the link's bandwidth in bytes/s"
        for fn in ("comms_verdict", "data_parallel_step", "network_ridge", "network_roof", "tensor_parallel_layer")
    },
}


class TookTooLong(Exception):
    """A call that should have been refused at once ran on (a huge count accepted and looped over)."""


@contextmanager
def time_limit(seconds: float = 2.0):
    """Raise TookTooLong in the calling thread after ``seconds`` (POSIX only; a no-op elsewhere)."""
    if not hasattr(signal, "setitimer"):  # pragma: no cover
        yield
        return

    def _stop(signum, frame):
        raise TookTooLong(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, _stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


#: A parameter that holds a GPU may be spoken of as "gpu" in the error ("gpu must be a GPUSpec ...").
_SAID_AS = {"value": ("gpu",), "spec": ("gpu",), "name": ("gpu",)}


def names(param: str, err: BaseException) -> bool:
    """Whether the error's message names ``param`` (case aside; a GPU parameter may say "gpu")."""
    text = str(err).lower()
    return any(word in text for word in (param.lower(), *_SAID_AS.get(param, ())))


def classify(case: Case, param: str, bad) -> str:
    """'clear' (TypeError/ValueError naming ``param``), 'vague' (one that does not), 'crash'
    (another exception type) or 'silent' (a result came back)."""
    if case.is_default(param, bad):
        return "default"
    kwargs = {**case.kwargs, param: bad}
    try:
        with time_limit():
            case.fn(**kwargs)
    except TookTooLong:
        return "hang"
    except (TypeError, ValueError) as err:
        return "clear" if names(param, err) else "vague"
    except Exception:  # noqa: BLE001 - any other type is what the tally counts
        return "crash"
    return "silent"


def _finite_everywhere(result) -> bool:
    """No inf or NaN anywhere in a result (numbers, dataclasses, mappings, sequences)."""
    if isinstance(result, bool):
        return True
    if isinstance(result, (int, float)):
        return math.isfinite(result)
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return all(_finite_everywhere(getattr(result, f.name)) for f in dataclasses.fields(result))
    if isinstance(result, dict):
        return all(_finite_everywhere(v) for v in result.values())
    if isinstance(result, (tuple, list)):
        return all(_finite_everywhere(v) for v in result)
    return True


# --------------------------------------------------------------------------- the tests

CASES = all_cases()


def test_every_public_function_is_covered():
    """Every public callable is either called below or listed, with a reason, in NOT_CALLED."""
    assert not UNFILLED, f"no valid value for: {', '.join(UNFILLED)}; add one to VALID or OVERRIDES"
    assert len(CASES) >= 50  # 56 public functions were counted when this test was written


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.qualname)
def test_the_valid_call_works(case):
    """The base call is valid; otherwise every refusal below would prove nothing. It may do real
    work (a widget draws its figure): its limit is a hang's, not a refusal's (2 s; an explorer's
    first draw took longer on a loaded machine)."""
    with time_limit(20.0):
        case.fn(**case.kwargs)


_BAD_BY_KIND = {
    "number": st.one_of(
        st.booleans(),
        st.sampled_from([math.nan, math.inf, -math.inf]),
        st.floats(max_value=-1e-9, allow_nan=False, allow_infinity=False),
        st.integers(max_value=-1),
        st.text(max_size=3),
        st.none(),
        st.builds(object),
    ),
    "flag": st.one_of(st.integers(), st.floats(allow_nan=True), st.text(min_size=1, max_size=3), st.none()),
    "text": st.one_of(st.integers(), st.floats(), st.booleans(), st.none(), st.just("")),
    "object": st.one_of(st.integers(), st.booleans(), st.just("nonsense"), st.builds(object)),
}


def _spoilable(case: Case) -> list[str]:
    return [p for p in case.kinds if (case.qualname, p) not in ACCEPTS]


REFUSING = [c for c in CASES if _spoilable(c)]
_SETTINGS = settings(
    max_examples=10, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)


@pytest.mark.parametrize("case", REFUSING, ids=lambda c: c.qualname)
@_SETTINGS
@given(data=st.data())
def test_bad_values_are_refused_by_name(case, data):
    param = data.draw(st.sampled_from(_spoilable(case)), label="parameter")
    bad = data.draw(_BAD_BY_KIND[case.kinds[param]], label=param)
    assume(not case.is_default(param, bad))
    with pytest.raises((TypeError, ValueError)) as err, time_limit():
        result = case.fn(**{**case.kwargs, param: bad})
        pytest.fail(f"{case.qualname}({param}={bad!r}) returned {result!r} instead of refusing it")
    assert names(param, err.value), f"{case.qualname}({param}={bad!r}): the error does not name {param}: {err.value}"


NUMERIC = [c for c in CASES if any(c.kinds[p] == "number" for p in c.kinds)]


@pytest.mark.parametrize("case", NUMERIC, ids=lambda c: c.qualname)
@settings(max_examples=6, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_overflow_is_an_error_not_inf(case, data):
    """A huge input is either refused (TypeError/ValueError) or gives a finite result."""
    param = data.draw(st.sampled_from([p for p in case.kinds if case.kinds[p] == "number"]), label="parameter")
    huge = data.draw(st.floats(min_value=1e150, max_value=1e308), label=param)
    try:
        with time_limit():
            result = case.fn(**{**case.kwargs, param: huge})
    except (TypeError, ValueError):
        return
    assert _finite_everywhere(result), f"{case.qualname}({param}={huge:g}) returned inf or NaN: {result!r}"


# --------------------------------------------------------------------------- wrong units


def test_bytes_and_seconds_in_the_wrong_units_are_refused():
    # 1e9 FLOP over 268 bytes in 90 s: meant as MB and microseconds; the efficiency would be ~4e-8
    with pytest.raises(ValueError, match="unit"):
        rl.kernel_verdict(1e9, 268, 90, "A100")


def test_an_efficiency_below_one_in_a_million_is_a_unit_mistake():
    # 1e3 FLOP over 1e6 bytes in 1 s on an A100: intensity 1e-3 FLOP/byte, ceiling
    # 2.039e12 B/s * 1e-3 = 2.04e9 FLOP/s, achieved 1e3 FLOP/s: 4.9e-7 of the roof
    with pytest.raises(ValueError, match="efficiency.*units"):
        rl.kernel_verdict(1e3, 1e6, 1.0, "A100")
    assert rl.kernel_verdict(1e3, 1e6, 0.1, "A100").efficiency == pytest.approx(4.9e-6, rel=1e-2)  # 10x faster: kept


def test_a_model_of_70_parameters_is_refused():
    # 70 meant as 70e9 (billions)
    with pytest.raises(ValueError, match="n_params.*billion|n_params.*1,?000"):
        rl.decode_roofline(70, "A100")


def test_training_bill_overflow_is_an_error():
    # 1e300 parameters * 6 FLOP * 1e12 tokens overflows float64
    with pytest.raises(ValueError, match="overflow|finite|n_params"):
        rl.training_bill(1e300, 1e12, 8, "H100", 0.4)


@pytest.mark.parametrize("bad", [True, False, 1.0 + 0j])
def test_a_bool_is_not_a_whole_number(bad):
    with pytest.raises(TypeError, match="m must be a whole number"):
        rl.gemm(bad, 1024, 1024)
