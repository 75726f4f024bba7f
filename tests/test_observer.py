"""The observer reads answers by value, whatever type holds them, and refuses an answer too large to be one.

No kernel here: the observer's :func:`encode` and :func:`observe` are called in this process,
and the key judges what they return after a JSON round trip, as the grader does.
"""

from __future__ import annotations

import json
import random
import time
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from roofline_lib import observer
from roofline_lib.grading import key, worker


def _judged(part: str, **values) -> key.Verdict:
    """Observe ``values`` as the injected cell does, then judge them as the grader does."""
    spec = key.PARTS[part]
    probes = key.draw_probes(spec, random.Random(0))
    plan = key.plan_of(spec, probes)
    observation = observer.observe(part, values, plan["names"], plan.get("probes"))
    return key.judge(spec, json.loads(json.dumps(observation)), probes)


# The ridge of chip P is 1200e12 / 6e12 = 200 FLOP/byte; chip Q's 500e12 / 4e12 = 125.
@pytest.mark.parametrize(
    "ridge_p",
    [
        200,
        200.0,
        np.float64(200),
        np.float32(200),
        np.int64(200),
        np.uint16(200),
        np.array(200.0),  # a 0-d array, what np.asarray of a number gives
        np.array(1200e12) / np.array(6e12),
        Decimal("200"),
        Fraction(1200, 6),
    ],
    ids=["int", "float", "f64", "f32", "i64", "u16", "0d", "0d-ratio", "Decimal", "Fraction"],
)
def test_a_correct_number_is_correct_in_any_type_a_reader_would_use(ridge_p):
    assert _judged("ex2-a", ridge_p=ridge_p).status == "correct"


def test_a_wrong_number_is_still_wrong_in_those_types():
    for wrong in (np.float32(150), np.array(6e12 / 1200e12), Decimal("2E+2") * 10, Fraction(150)):
        assert _judged("ex2-a", ridge_p=wrong).status == "wrong", wrong


def test_a_0d_torch_tensor_is_read_by_value():
    torch = pytest.importorskip("torch")
    assert observer.encode(torch.tensor(125.0)) == {"kind": "number", "value": 125.0}
    assert observer.encode(torch.tensor(True)) == {"kind": "bool", "value": True}
    assert _judged("ex2-b", ridge_q=torch.tensor(500e12) / torch.tensor(4e12)).status == "correct"
    assert observer.encode(torch.tensor([125.0]))["kind"] == "other"  # a 1-d tensor is not a number


def test_numpy_bools_answer_a_true_false_part():
    # ex3-d: do the weights fit on one card; the numpy form of a comparison is np.bool_
    truth = next(v for v in (True, False) if _judged("ex3-d", fits_on_one=v).status == "correct")
    assert _judged("ex3-d", fits_on_one=np.bool_(truth)).status == "correct"
    assert _judged("ex3-d", fits_on_one=np.array(truth)).status == "correct"  # a 0-d bool array
    assert _judged("ex3-d", fits_on_one=np.bool_(not truth)).status == "wrong"
    assert "must be one of" in _judged("ex3-d", fits_on_one=np.float64(1.0)).submit  # a number is no bool


def test_a_numbered_choice_takes_numpy_and_exact_integers():
    # ex2-f's reason is 3 (the solution's answer)
    for three in (np.int64(3), np.uint8(3), np.array(3), Decimal(3), Fraction(6, 2), 3.0):
        assert _judged("ex2-f", machine_change_reason=three).status == "correct", type(three)
    assert _judged("ex2-e", machine_change=np.str_("A")).status == "correct"


def test_numbers_past_a_float_are_wrong_with_a_reason_not_unreadable():
    assert observer.encode(10**400) == {"kind": "number", "huge": "+"}
    assert observer.encode(-(10**400)) == {"kind": "number", "huge": "-"}
    assert observer.encode(Decimal("1e400")) == {"kind": "number", "huge": "+"}
    assert observer.encode(Fraction(10**400, 3)) == {"kind": "number", "huge": "+"}
    assert observer.encode(2**70) == {"kind": "number", "value": 2.0**70}  # large, but a float holds it
    assert observer.encode(Decimal("-Infinity")) == {"kind": "number", "nonfinite": "-inf"}
    assert observer.encode(Decimal("NaN")) == {"kind": "number", "nonfinite": "nan"}
    verdict = _judged("ex2-a", ridge_p=10**400)
    assert verdict.status == "wrong" and "beyond a float" in verdict.submit
    assert _judged("ex2-f", machine_change_reason=10**400).status == "wrong"  # not an error of the judge


def test_a_function_returning_numpy_types_is_judged_by_value():
    def ceiling(intensity, datasheet, dtype):
        if not intensity > 0 or dtype not in datasheet["peak_flops_per_s"]:
            raise ValueError(f"intensity must be a positive number of FLOP/byte, got {intensity!r}")
        roofs = np.array([datasheet["peak_flops_per_s"][dtype], datasheet["hbm_bytes_per_s"] * intensity])
        return roofs.min(keepdims=True).reshape(())  # a 0-d array

    assert _judged("ex2-g", ceiling=ceiling).status == "correct"
    assert _judged("ex2-h", ceiling=ceiling).status == "correct"


# --------------------------------------------------------------------------- too large to be an answer


@pytest.mark.parametrize(
    "make",
    [
        lambda: "x" * 50_000_000,  # 50 MB of text
        lambda: [1.0] * 1_000_000,
        lambda: {f"k{i}": i for i in range(100_000)},
        lambda: {i: {j: [0.5] * 64 for j in range(64)} for i in range(64)},  # 64 ** 3 leaves, nested
    ],
    ids=["str", "list", "dict", "nested"],
)
def test_an_answer_over_one_mib_is_refused_quickly_with_a_message(make):
    value = make()
    started = time.perf_counter()
    observation = observer.observe("ex2-a", {"ridge_p": value}, ["ridge_p"])
    seconds = time.perf_counter() - started
    assert observation == {"part": "ex2-a", "too_large": {"name": "ridge_p", "limit_bytes": 2**20}}
    assert seconds < 0.5  # reading stops at the limit, whatever the answer's size
    verdict = key.judge(key.PARTS["ex2-a"], observation, [])
    assert verdict.status == "wrong" and "over 1 MiB" in verdict.submit and "`ridge_p`" in verdict.submit


def test_an_answer_just_under_the_limit_is_read_whole():
    words = {f"w{i}": "abc" for i in range(5000)}  # about 5000 * 40 bytes = 0.2 MB: no cut, no refusal
    encoded = observer.encode(words)
    assert encoded["kind"] == "dict" and len(encoded["items"]) == 5000
    assert len(json.dumps(encoded)) < observer.MAX_ANSWER_BYTES


def test_a_function_whose_results_are_too_large_refuses_its_part():
    plan = {"ceiling": [["p1", json.dumps([1.0, {}, "bf16"])], ["p2", json.dumps([2.0, {}, "bf16"])]]}
    observation = observer.observe("ex2-g", {"ceiling": lambda *a: [0.0] * 400_000}, ["ceiling"], plan)
    assert observation["too_large"]["name"] == "ceiling"
    assert observer.encode("x" * (2 * 2**20)) == {"kind": "too large", "limit_bytes": 2**20}


def test_the_worker_refuses_an_observation_the_observer_would_not_write():
    small = {"part": "ex2-a", "entries": {"ridge_p": {"kind": "number", "value": 200.0}}}
    assert worker.bounded(small) == small
    forged = {"part": "ex2-a", "entries": {"ridge_p": {"kind": "str", "value": "x" * (3 * 2**20)}}}
    assert "too_large" in worker.bounded(forged)  # over 2 MiB of JSON: not the observer's
    assert worker.bounded({"x": object()}) == {"unreadable": True}
