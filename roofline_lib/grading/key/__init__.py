"""The answer key of the exercises, one module per job; only the grader's processes import it.

* :mod:`.scenarios`: the typed inputs, the same numbers the exercise notebooks print;
* :mod:`.references`: the reference answers, computed from those inputs;
* :mod:`.judges`: how an answer is judged, and the two messages of its :class:`Verdict`;
* :mod:`.probes`: the inputs a student's function is called on, and the plan a kernel sees;
* :mod:`.parts`: the exercises and their parts, each with its judge, probes and marks.

An exercise kernel never imports this package: the grader's copy of ``roofline_lib`` leaves
``grading/`` out, and the sandbox hides the repository's package folder. The solutions earning
full marks is what holds the references and the exercise notebooks equal.
"""

from .judges import Verdict, judge
from .parts import EXERCISES, PARTS, Exercise, Part, parts_of
from .probes import PRACTICE_SEED, Probe, draw_probes, plan_of
from .references import (
    ref_capped_flops_per_s,
    ref_ceiling,
    ref_joules_per_token,
    ref_step_seconds,
    ref_sweep,
    ref_tpot_seconds,
    ref_zero_bytes_per_gpu,
)
from .scenarios import BACKWARD_SHARE, EX1, EX2, EX3, EX4, EX5, EX6, EX7, EX7_STATE, EX8, EX9, WIDTHS

__all__ = [
    "Exercise",
    "Part",
    "Probe",
    "Verdict",
    "EXERCISES",
    "PARTS",
    "parts_of",
    "plan_of",
    "draw_probes",
    "judge",
    "PRACTICE_SEED",
    "WIDTHS",
    "BACKWARD_SHARE",
    "EX1",
    "EX2",
    "EX3",
    "EX4",
    "EX5",
    "EX6",
    "EX7",
    "EX7_STATE",
    "EX8",
    "EX9",
    "ref_ceiling",
    "ref_sweep",
    "ref_step_seconds",
    "ref_zero_bytes_per_gpu",
    "ref_tpot_seconds",
    "ref_joules_per_token",
    "ref_capped_flops_per_s",
]
