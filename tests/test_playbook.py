"""The playbook's rules: every pile reachable down the tree, the majority verdict, the remedy that follows."""

from __future__ import annotations

import roofline_lib as rl
from roofline_lib import diagnose as D
from roofline_lib import playbook as P
from roofline_lib import trace_rows as R


def test_every_leaf_of_the_tree_is_a_pile_and_every_pile_is_reachable():
    leaves = {r.yes for r in P.TRIAGE_RULES} | {r.no for r in P.TRIAGE_RULES}
    assert set(P.PILES) <= leaves and leaves - set(P.RULES_BY_KEY) == set(P.PILES)
    assert P.walk({"idle": True}) == "overhead"
    assert P.walk({"idle": False, "comm": True}) == "communication"
    facts = {"idle": False, "comm": False, "fixed": False, "counted": True, "work": True}
    assert P.walk({**facts, "ridge": True}) == "memory" and P.walk({**facts, "ridge": False}) == "compute"
    assert P.walk({**facts, "counted": False}) == "unclassified"
    assert P.walk({**facts, "work": False}) == "overhead"


def test_the_verdict_needs_more_than_half_the_time():
    shares = dict.fromkeys(P.PILES, 0.0)
    assert P.verdict({**shares, "memory": 0.6, "compute": 0.4}) == ("memory", "memory")
    # exactly half is not a majority: mixed, the largest pile named
    assert P.verdict({**shares, "compute": 0.5, "overhead": 0.5}) == ("mixed", "compute")


def test_the_remedy_follows_the_verdict_the_op_family_and_the_timeline():
    rows_trace = R.Trace((), "rows", None, None)
    cpu_trace = R.Trace((), "cpu", 1.0, 1.0)
    mv = R.OpStat("aten::mv", 1, 2.0, 1.0, 1.0, "matmul")
    add = R.OpStat("aten::add", 1, 1.0, 1.0, 1.0, "elementwise")
    # 2 s of the memory pile is a matmul's weight read, 1 s an add's: the weight-read remedy
    assert P.remedy("memory", "memory", [mv, add], ["memory", "memory"], rows_trace) == P.REMEDIES["memory-matmul"]
    assert P.remedy("memory", "memory", [mv, add], ["compute", "memory"], rows_trace) == P.REMEDIES["memory"]
    assert P.remedy("compute", "compute", [], [], cpu_trace) == P.REMEDIES["compute-cpu"]
    assert P.remedy("unclassified", "unclassified", [], [], cpu_trace) == P.REMEDIES["unclassified-recorded"]
    assert P.remedy("unclassified", "unclassified", [], [], rows_trace) == P.REMEDIES["unclassified"]
    mixed = P.remedy("mixed", "overhead", [], [], rows_trace)
    assert mixed == f"{P.REMEDIES['mixed']} (overhead: {P.REMEDIES['overhead']})"
    assert set(P.VERDICTS) <= set(P.REMEDIES)


def test_a_memory_bound_gemv_row_gets_the_weight_read_remedy():
    gemv = rl.gemv(4096, 4096, bytes_per_elem=2)  # 2 * 4096**2 FLOP over ~33.6 MB: 0.5 FLOP/B
    row = D.OpStat("aten::mv", 100, 50e-3, flops=100 * gemv.flops, bytes_moved=100 * gemv.bytes_moved, family="matmul")
    d = D.diagnose([row], roof="A100", precision="bf16")
    assert d.regime == "memory"
    assert "batch more sequences per weight read" in d.remedy and "fewer bits" in d.remedy
