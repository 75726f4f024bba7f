"""The only grading code an exercise notebook's kernel runs: it reads answers, it holds no key.

An exercise notebook ends each part with a check cell::

    from roofline_lib import observer
    observer.check("ex2-a", globals())

:func:`check` is *practice mode*. It asks a judge that runs in a separate process
(``python -m roofline_lib.grading --practice``) which names the part reads and which probe
inputs its functions are called on, reads those names from the notebook's globals, calls the
functions, and sends the observation back to that process. The judge answers with one line of
feedback: right or wrong, the direction of an error and the convention to revisit. The
reference values, the expected results of the probes and the multiple-choice letters stay in
that other process; nothing in this module, and nothing it keeps, contains them.

Under the grader, the check cells are dropped and :func:`publish` cells are injected instead.
They carry the part's names and probe inputs drawn when grading starts, and only publish what
they observe (as ``display_data`` with :data:`MIME_TYPE`); the grader judges it in its own
process. See ``roofline_lib.grading`` and the README's section on grading.

This module imports nothing from ``roofline_lib`` on purpose.
"""

from __future__ import annotations

import decimal
import json
import math
import numbers
import os
import subprocess
import sys

__all__ = ["MIME_TYPE", "MAX_ANSWER_BYTES", "encode", "observe", "publish", "check"]

#: MIME type of an observation; the grader reads only this, and only from the cells it injected.
MIME_TYPE = "application/vnd.roofline-course.observation+json"

#: The most one part's answers may weigh, encoded (its names' values and what its functions
#: returned on every probe): 1 MiB. An answer is a number, a word or a small dict; a part whose
#: answers are larger is refused with a message, and reading it stops as soon as the limit is passed.
MAX_ANSWER_BYTES = 2**20

_MAX_MESSAGE = 200  # an exception's message is cut to this many characters
_MAX_DEPTH = 4  # containers nested deeper are encoded as "other"
_ARRAY_MODULES = ("numpy", "torch")  # whose 0-d arrays and scalars are read by value (``.item()``)
_NOT_A_SCALAR = object()


class _TooLarge(Exception):
    """The answers of a part passed :data:`MAX_ANSWER_BYTES` while they were encoded."""


class _Budget:
    """The bytes a part's answers may still take, spent as they are encoded (an estimate of the JSON)."""

    def __init__(self, limit_bytes: int = MAX_ANSWER_BYTES):
        self.left = limit_bytes

    def spend(self, n_bytes: int) -> None:
        self.left -= n_bytes
        if self.left < 0:
            raise _TooLarge


def _scalar_of(value):
    """The Python value of a numpy scalar, a 0-d numpy array or a 0-d torch tensor; else a sentinel.

    Read by duck type (the module its type comes from, an empty shape, ``.item()``), so that
    neither library is imported here.
    """
    if type(value).__module__.partition(".")[0] not in _ARRAY_MODULES:
        return _NOT_A_SCALAR
    shape = getattr(value, "shape", None)
    if shape is None or tuple(shape) != ():
        return _NOT_A_SCALAR
    return value.item()


def _encode_number(value) -> dict:
    """A real number by value: finite as a float, else "nan"/"inf"/"-inf", or ``huge`` past a float's range."""
    if isinstance(value, decimal.Decimal):
        if value.is_nan():
            return {"kind": "number", "nonfinite": "nan"}
        if value.is_infinite():
            return {"kind": "number", "nonfinite": "-inf" if value < 0 else "inf"}
    try:
        number = float(value)
    except OverflowError:  # an int or a Fraction beyond 1.8e308
        number = math.inf if value > 0 else -math.inf
    else:
        if math.isnan(number):
            return {"kind": "number", "nonfinite": "nan"}
        if not math.isinf(number):
            return {"kind": "number", "value": number}
        if not isinstance(value, decimal.Decimal) and math.isinf(value):
            return {"kind": "number", "nonfinite": str(number)}
    return {"kind": "number", "huge": "-" if number < 0 else "+"}  # finite, but larger than any float


def _encode_str(value: str, budget: _Budget) -> dict:
    text = str.__str__(value)
    budget.spend(len(text) + 24)  # before anything reads the whole string
    if not text.isascii():
        budget.spend(5 * len(text))  # JSON writes a character outside ASCII as \uXXXX
    return {"kind": "str", "value": text}


def _encode(value, depth: int, budget: _Budget) -> dict:
    budget.spend(24)  # the smallest entry, {"kind": "..."}
    if value is Ellipsis:
        return {"kind": "ellipsis"}
    if isinstance(value, bool):
        return {"kind": "bool", "value": bool(value)}
    if isinstance(value, (numbers.Real, decimal.Decimal)):  # numpy's numbers too (np.int64, np.float32)
        budget.spend(24)
        return _encode_number(value)
    scalar = _scalar_of(value)  # np.bool_, a 0-d array, a 0-d tensor
    if scalar is not _NOT_A_SCALAR:
        return _encode(scalar, depth + 1, budget) if depth < _MAX_DEPTH else _other(value, budget)
    if isinstance(value, str):
        return _encode_str(value, budget)
    if depth >= _MAX_DEPTH:
        return _other(value, budget)
    if isinstance(value, dict):
        items = {}
        for k, v in dict.items(value):  # dict's own items, not an override
            name = _encode_str(k if isinstance(k, str) else str(k), budget)["value"]
            items[name] = _encode(v, depth + 1, budget)
        return {"kind": "dict", "items": items}
    if isinstance(value, (list, tuple)):
        each = list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)
        items = []
        for v in each:
            budget.spend(2)
            items.append(_encode(v, depth + 1, budget))
        return {"kind": "list", "items": items}
    if callable(value):
        return {"kind": "function"}
    return _other(value, budget)


def _other(value, budget: _Budget) -> dict:
    name = type(value).__name__[:60]
    budget.spend(len(name))
    return {"kind": "other", "type": name}


def _guarded(value, depth: int, budget: _Budget) -> dict:
    """:func:`_encode`, with any error of a hostile value encoded as "other"; only _TooLarge passes."""
    try:
        return _encode(value, depth, budget)
    except _TooLarge:
        raise
    except BaseException as err:  # noqa: BLE001 - a hostile value must not stop the check
        return {"kind": "other", "type": f"unreadable ({type(err).__name__})"}


def encode(value) -> dict:
    """A student's value as plain JSON, by value: ``{"kind": ..., ...}``. Never raises.

    Kinds: ``ellipsis`` (not attempted), ``bool``, ``number`` (``value`` a float; or
    ``nonfinite`` "nan"/"inf"/"-inf"; or ``huge`` "+"/"-" for a finite number past a float's
    range), ``str``, ``dict``, ``list``, ``function``, ``other``, and ``too large`` (over
    :data:`MAX_ANSWER_BYTES`). Numbers are read by value whatever their type: ``int``,
    ``float``, ``Fraction``, ``Decimal``, numpy's scalars (``np.bool_`` is a bool) and 0-d
    arrays, and 0-d torch tensors.
    """
    try:
        return _guarded(value, 0, _Budget())
    except _TooLarge:
        return {"kind": "too large", "limit_bytes": MAX_ANSWER_BYTES}


def _call(fn, args, budget: _Budget) -> dict:
    """Call a student's function on one probe's arguments; record what came back or was raised."""
    try:
        returned = fn(*args)
    except BaseException as err:  # noqa: BLE001 - SystemExit and friends count as raising too
        return {
            "raised": type(err).__name__[:60],
            "value_error": isinstance(err, ValueError),
            "message": str(err)[:_MAX_MESSAGE] if not isinstance(err, (SystemExit, KeyboardInterrupt)) else "",
        }
    return {"returned": _guarded(returned, 0, budget)}


def observe(part: str, namespace, names, probes=None) -> dict:
    """Read ``names`` from ``namespace`` and call each function name on its probe inputs.

    ``probes`` maps a function's name to a list of ``[probe_id, [arg, ...]]``; the arguments are
    plain JSON and are decoded afresh for every call, so a function that mutates its inputs
    cannot affect the next probe.
    """
    entries = {}
    calls = {}
    budget = _Budget()
    for name in names:
        try:
            present = name in namespace
            value = namespace[name] if present else None
        except BaseException:  # noqa: BLE001
            present, value = False, None
        try:
            entries[name] = _guarded(value, 0, budget) if present else {"kind": "missing"}
            if probes and name in probes:
                calls[name] = _outcomes(value if present else None, probes[name], budget)
        except _TooLarge:  # the part is refused, whatever else it holds
            return {"part": part, "too_large": {"name": str(name)[:_MAX_MESSAGE], "limit_bytes": MAX_ANSWER_BYTES}}
    return {"part": part, "entries": entries, "calls": calls}


def _outcomes(fn, probes, budget: _Budget) -> dict:
    """``{probe_id: outcome}`` of ``fn`` on each probe's arguments (``NotAFunction`` when it is none)."""
    outcomes = {}
    for probe_id, args_json in probes:
        if not callable(fn):
            outcomes[probe_id] = {"raised": "NotAFunction", "value_error": False, "message": ""}
            continue
        outcomes[probe_id] = _call(fn, json.loads(args_json), budget)
    return outcomes


def _show(payload: dict, text: str) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display({MIME_TYPE: payload, "text/plain": text}, raw=True)
            return
    except ImportError:  # pragma: no cover - IPython ships with the course
        pass
    print(text)


def publish(part: str, namespace, plan: str) -> None:
    """The grader's injected cell: observe with the plan's names and probes, publish, judge nothing."""
    try:
        spec = json.loads(plan)
        observation = observe(part, namespace, spec["names"], spec.get("probes"))
    except BaseException as err:  # noqa: BLE001 - the cell never fails
        observation = {"part": part, "failed": f"{type(err).__name__}"}
    _show(observation, f"[observed] {part}")


# ------------------------------------------------------------------------------- practice mode

_JUDGE = None  # the practice judge's process, started on the first check


def _judge_process():
    global _JUDGE
    if _JUDGE is None or _JUDGE.poll() is not None:
        _JUDGE = subprocess.Popen(
            [sys.executable, "-m", "roofline_lib.grading", "--practice"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
            env={**os.environ, "PYTHONIOENCODING": "utf-8"},
            # Its own session: at shutdown ipykernel signals the children in its process group and
            # waits until none is left, and a judge it killed stays listed (nobody reaps it), which
            # held every exercise's shutdown about 2.4 s. The judge leaves when its stdin closes,
            # that is when the kernel exits, however it exits.
            start_new_session=True,
        )
    return _JUDGE


def _ask(request: dict) -> dict:
    proc = _judge_process()
    proc.stdin.write(json.dumps(request) + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError("the practice judge stopped")
    return json.loads(line)


def check(part: str, namespace=None) -> None:
    """Practice feedback for one part, shown in the notebook. Never raises; never grades.

    The judge runs in its own process; this function only observes and shows its reply.
    """
    if namespace is None:
        namespace = sys._getframe(1).f_globals
    try:
        plan = _ask({"plan": part})
        if "error" in plan:
            print(f"[ERROR] {plan['error']}")
            return
        observation = observe(part, namespace, plan["names"], plan.get("probes"))
        reply = _ask({"judge": part, "observation": observation})
        line = str(reply.get("line", "[ERROR] the practice judge gave no feedback"))
    except BaseException as err:  # noqa: BLE001 - a check cell never fails
        line = f"[ERROR] the practice check could not run ({type(err).__name__}: {err})"
    print(line)
