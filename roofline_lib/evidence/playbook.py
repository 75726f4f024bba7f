"""The playbook's rules: the piles, the triage tree that fills them, the majority verdict, the remedies.

Every second of a profile is put in one of five piles by the rules in :data:`TRIAGE_RULES`, in
order (the triage, :mod:`roofline_lib.evidence.triage`, walks them; the chapter draws them as a
decision tree, :func:`roofline_lib.evidence.diagnosis_report.plot_triage`):

1. time the device sat idle -- gaps in the merged kernel window on a GPU timeline, wall-clock
   time outside every op on a CPU -- is **overhead**;
2. a collective (an NCCL or RCCL kernel) is **communication**, set against the network roof of
   chapter 8 where the link is known (``link=``): only its exposed time counts, the part no
   computation kernel overlaps;
3. on a CPU, the measured fixed cost of each op call (``measure_fixed_cost``) is **overhead**;
   a GPU kernel's time never is: its launch cost shows up as idle gaps, not inside the kernel;
4. an op whose FLOPs or minimum bytes cannot be counted is **unclassified**, with the reason (no
   formula for the op, a torch.compile region, no shapes) -- unless it is a GPU kernel whose name
   says what it does (:mod:`roofline_lib.evidence.kernel_names`): a GEMM, convolution or attention
   kernel is then placed as compute, an element-wise, norm or copy kernel as memory, *by name
   only*, and the evidence says which rows were placed so. A count always wins over a name;
5. an op that does no arithmetic and moves no data (a view, an allocation, a composite op's own
   dispatch time outside the ops it calls) is **overhead**;
6. otherwise the op's intensity (FLOP per minimum byte) against the ridge of the roof in use
   decides: below it **memory**, at or above it **compute**.

A counted op faster than its datasheet roof is impossible (a timing or counting error): it is left
**unclassified** and named, never given a verdict (:mod:`roofline_lib.evidence.triage`).

The verdict is the pile that holds more than half of the time, or **mixed** when none does
(:data:`MAJORITY`). The remedy follows the verdict and the kind of op that dominates it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

__all__ = [
    "PILES",
    "VERDICTS",
    "MAJORITY",
    "Rule",
    "TRIAGE_RULES",
    "RULES_BY_KEY",
    "REMEDIES",
    "walk",
    "verdict",
    "remedy",
]

#: Where each second of a profile can land.
PILES = ("compute", "memory", "communication", "overhead", "unclassified")

#: What the diagnosis can say: a pile holding the majority, or "mixed".
VERDICTS = (*PILES, "mixed")

#: A pile names the verdict only with more than this share of the time.
MAJORITY = 0.5


@dataclass(frozen=True)
class Rule:
    """One branch point of the triage: a question and where each answer leads.

    ``yes`` and ``no`` are a pile (:data:`PILES`) or the ``key`` of the next rule.
    """

    key: str
    question: str
    yes: str
    no: str


#: The triage, in the order the diagnosis applies it to each slice of time.
TRIAGE_RULES = (
    Rule("idle", "device idle?\n(gap between kernels; CPU\nwall time outside every op)", "overhead", "comm"),
    Rule("comm", "a collective?\n(NCCL/RCCL kernel, time\nno computation hides)", "communication", "fixed"),
    Rule("fixed", "fixed cost of a call?\n(CPU: the measured cost\nof an empty op, per call)", "overhead", "counted"),
    Rule(
        "counted",
        "FLOPs and minimum bytes\nknown? (shapes, dtypes; or\na kernel named by what it does)",
        "work",
        "unclassified",
    ),
    Rule("work", "does any arithmetic or\nmoves any data?", "ridge", "overhead"),
    Rule(
        "ridge",
        "intensity below the ridge\nof the roof in use? (by name:\nGEMM/conv/attention no, element-wise yes)",
        "memory",
        "compute",
    ),
)
#: The rules by key: where an answer leads next.
RULES_BY_KEY = MappingProxyType({r.key: r for r in TRIAGE_RULES})


def walk(facts: Mapping[str, bool]) -> str:
    """Follow :data:`TRIAGE_RULES` from the first rule with the answers in ``facts``; return the pile."""
    node = TRIAGE_RULES[0].key
    while node in RULES_BY_KEY:
        rule = RULES_BY_KEY[node]
        node = rule.yes if facts[rule.key] else rule.no
    return node


#: The playbook's next step for each verdict (memory-bound weight reads get their own, below).
REMEDIES = MappingProxyType(
    {
        "compute": "raise the compute roof or do fewer FLOPs: a narrower precision (bf16, fp8) on "
        "tensor cores, a better-tiled GEMM, shapes that are multiples of the tile size, fewer "
        "FLOPs per token",
        "memory": "move fewer bytes per FLOP: fuse chains of element-wise, norm and softmax ops "
        "(torch.compile) so intermediates stay on chip, keep attention tiles on chip "
        "(FlashAttention), narrower activations",
        "memory-matmul": "batch more sequences per weight read, or store weights in fewer bits "
        "(int8, fp8, int4): every weight byte read then serves more FLOPs",
        "compute-cpu": "do fewer FLOPs or run them faster: a BLAS/oneDNN kernel instead of a loop of "
        "small ops, shapes that fill the vector units, more threads; a narrower precision only "
        "where this CPU has matrix units for it (time it first: bf16 without them is slower)",
        "communication": "hide or shrink the collectives: overlap them with computation (bucketed "
        "gradient all-reduce, prefetching in FSDP), send fewer bytes (bf16 gradients, larger "
        "buckets, fewer, bigger messages), or a faster link; set them against the link's roof "
        "with link= (chapter 8)",
        "overhead": "stop paying per call: batch the work into fewer, larger calls, fuse tiny "
        "ops, capture the step in a CUDA graph, remove host syncs (.item(), .cpu()) inside the loop",
        "unclassified": "record the profile with torch.profiler.profile(record_shapes=True, "
        "with_flops=True) so each op's FLOPs and bytes can be counted, or give rows their flops= "
        "and bytes_moved=",
        "unclassified-recorded": "count what is left: the shapes were recorded, so each op's reason is "
        "in the evidence -- profile torch.compile regions without torch.compile, and give ops with no "
        "formula their counts (rows with flops= and bytes_moved=)",
        "mixed": "no single fix: start with the largest pile",
    }
)


def verdict(shares: Mapping[str, float]) -> tuple[str, str]:
    """``(regime, largest)``: the pile with more than :data:`MAJORITY` of the time (else "mixed"),
    and the largest pile (the first in :data:`PILES` order on a tie)."""
    top = max(PILES, key=lambda k: shares[k])
    return (top if shares[top] > MAJORITY else "mixed"), top


def remedy(regime: str, top: str, rows, placed, trace) -> str:
    """The playbook's next step for ``regime``; a mixed one names the fix for its largest pile ``top``.

    ``rows`` and ``placed`` are the rows and the pile each went to (a memory pile of weight reads
    gets the weight-read remedy); ``trace`` says the timeline (a CPU's compute remedy) and whether
    shapes were recorded (what to do about unclassified time).
    """
    if regime == "mixed":
        return f"{REMEDIES['mixed']} ({top}: {_remedy_of(top, rows, placed, trace)})"
    return _remedy_of(regime, rows, placed, trace)


def _remedy_of(pile: str, rows, placed, trace) -> str:
    if pile == "memory" and _largest_family(rows, placed, "memory") == "matmul":
        return REMEDIES["memory-matmul"]
    if pile == "compute" and trace.timeline == "cpu":
        return REMEDIES["compute-cpu"]
    if pile == "unclassified" and trace.has_shapes and trace.timeline != "rows":
        return REMEDIES["unclassified-recorded"]
    return REMEDIES[pile]


def _largest_family(rows, placed, pile: str) -> str | None:
    """The op family (matmul, elementwise, ...) holding the most seconds of ``pile``, None if it is empty."""
    by_family: dict[str, float] = {}
    for r, p in zip(rows, placed):
        if p == pile:
            by_family[r.family] = by_family.get(r.family, 0.0) + r.seconds
    return max(by_family, key=by_family.get) if by_family else None
