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

import json
import math
import numbers
import os
import subprocess
import sys

__all__ = ["MIME_TYPE", "encode", "observe", "publish", "check"]

#: MIME type of an observation; the grader reads only this, and only from the cells it injected.
MIME_TYPE = "application/vnd.roofline-course.observation+json"

_MAX_ITEMS = 64  # a dict or list answer is cut to this many entries
_MAX_STR = 200  # and a string to this many characters
_MAX_DEPTH = 4


def encode(value, _depth: int = 0) -> dict:
    """A student's value as plain JSON: ``{"kind": ..., ...}``. Never raises.

    Kinds: ``ellipsis`` (not attempted), ``bool``, ``number`` (``value`` a float, or
    ``nonfinite`` "nan"/"inf"/"-inf"), ``str``, ``dict``, ``list``, ``function``, ``other``.
    """
    try:
        if value is Ellipsis:
            return {"kind": "ellipsis"}
        if isinstance(value, bool):
            return {"kind": "bool", "value": bool(value)}
        if isinstance(value, numbers.Real) or type(value).__name__ in ("float64", "float32", "int64"):
            number = float(value)
            if math.isfinite(number):
                return {"kind": "number", "value": number}
            return {"kind": "number", "nonfinite": str(number)}
        if isinstance(value, str):
            return {"kind": "str", "value": str(value)[:_MAX_STR]}
        if _depth >= _MAX_DEPTH:
            return {"kind": "other", "type": type(value).__name__[:60]}
        if isinstance(value, dict):
            items = {}
            for k, v in list(dict.items(value))[:_MAX_ITEMS]:
                items[str(k)[:_MAX_STR]] = encode(v, _depth + 1)
            return {"kind": "dict", "items": items}
        if isinstance(value, (list, tuple)):
            return {"kind": "list", "items": [encode(v, _depth + 1) for v in list(value)[:_MAX_ITEMS]]}
        if callable(value):
            return {"kind": "function"}
        return {"kind": "other", "type": type(value).__name__[:60]}
    except BaseException as err:  # noqa: BLE001 - a hostile value must not stop the check
        return {"kind": "other", "type": f"unreadable ({type(err).__name__})"}


def _call(fn, args) -> dict:
    """Call a student's function on one probe's arguments; record what came back or was raised."""
    try:
        returned = fn(*args)
    except BaseException as err:  # noqa: BLE001 - SystemExit and friends count as raising too
        return {
            "raised": type(err).__name__[:60],
            "value_error": isinstance(err, ValueError),
            "message": str(err)[:_MAX_STR] if not isinstance(err, (SystemExit, KeyboardInterrupt)) else "",
        }
    return {"returned": encode(returned)}


def observe(part: str, namespace, names, probes=None) -> dict:
    """Read ``names`` from ``namespace`` and call each function name on its probe inputs.

    ``probes`` maps a function's name to a list of ``[probe_id, [arg, ...]]``; the arguments are
    plain JSON and are decoded afresh for every call, so a function that mutates its inputs
    cannot affect the next probe.
    """
    entries = {}
    calls = {}
    for name in names:
        try:
            present = name in namespace
            value = namespace[name] if present else None
        except BaseException:  # noqa: BLE001
            present, value = False, None
        entries[name] = encode(value) if present else {"kind": "missing"}
        if probes and name in probes:
            outcomes = {}
            for probe_id, args_json in probes[name]:
                if not present or not callable(value):
                    outcomes[probe_id] = {"raised": "NotAFunction", "value_error": False, "message": ""}
                    continue
                outcomes[probe_id] = _call(value, json.loads(args_json))
            calls[name] = outcomes
    return {"part": part, "entries": entries, "calls": calls}


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
