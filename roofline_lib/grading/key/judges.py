"""The judge library: how one part's answer is read from an observation and judged.

Each judge returns a :class:`Verdict` with two messages:

* ``practice`` (shown in the notebook by ``observer.check``): what is wrong, the *direction* of
  a numeric error and the convention to revisit;
* ``submit`` (the grader's report): what is wrong in kind only: not attempted, not a number,
  the wrong sign, a power of ten off (a unit slip), a known convention slip, or just "not
  right". It never says high or low, so re-submitting cannot bisect a number.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

if TYPE_CHECKING:
    from .parts import Part
    from .probes import Probe

__all__ = [
    "Verdict",
    "number",
    "choice",
    "all_of",
    "dict_of_numbers",
    "function",
    "judge",
]


@dataclass(frozen=True)
class Verdict:
    status: str  # "correct", "wrong", "not attempted"
    practice: str = ""
    submit: str = ""


def _number_of(entry: Mapping):
    """(float, None) or (None, the reason the entry is not a finite number)."""
    kind = entry.get("kind")
    if kind == "number" and isinstance(entry.get("value"), (int, float)) and not isinstance(entry.get("value"), bool):
        return float(entry["value"]), None
    if kind == "number" and entry.get("huge") in ("+", "-"):
        return None, "is a number beyond a float's range (over 1.8e308), not a plausible answer"
    if kind == "number":
        return None, f"is {entry.get('nonfinite', 'not finite')}, not a finite number"
    if kind == "too large":
        return None, f"is larger than {_limit_mib(entry)} MiB, too large to be an answer"
    shown = {
        "bool": "a True/False",
        "str": "a string",
        "dict": "a dict",
        "list": "a list",
        "function": "a function",
    }.get(kind, f"a {entry.get('type', kind)}")
    return None, f"should be a number, got {shown}"


def _limit_mib(entry: Mapping) -> str:
    """The size limit an entry of kind "too large" (or a refused observation) names, in MiB."""
    limit = entry.get("limit_bytes")
    return f"{limit / 2**20:g}" if isinstance(limit, (int, float)) and not isinstance(limit, bool) else "1"


def _attempted(entry: Mapping) -> bool:
    return entry.get("kind") not in ("ellipsis", "missing", None)


def _describe_number_error(name, value, ref, unit, rel_tol, concept, traps):
    """(practice, submit) messages for a number outside the tolerance."""
    if value == 0 or (value < 0) != (ref < 0):
        msg = f"`{name}` has the wrong sign or is zero. {concept}"
        return msg, msg
    for trap_value, trap_hint in traps:
        if math.isclose(value, trap_value, rel_tol=min(rel_tol, 0.005)):
            direction = "high" if value > ref else "low"
            return (f"`{name}` is too {direction}: {trap_hint}", f"`{name}` is not right: {trap_hint}")
    ratio = value / ref
    k = round(math.log10(ratio))
    if k != 0 and math.isclose(ratio, 10.0**k, rel_tol=rel_tol):
        if unit == "fraction":
            msg = f"`{name}` is off by a factor of 10^{k}: give a fraction between 0 and 1, not a percentage."
        else:
            msg = (
                f"`{name}` is off by a factor of 10^{k}: a unit slip. Give it in plain SI units "
                f"({unit}), without a kilo-, mega-, giga- or tera- prefix."
            )
        return msg, msg
    direction = "high" if ratio > 1 else "low"
    if 0.5 <= ratio <= 2:
        practice = f"`{name}` ({unit}) is too {direction}. {concept}"
    else:
        practice = f"`{name}` ({unit}) is too {direction} by more than a factor of 2. {concept}"
    return practice, f"`{name}` is not right. {concept}"


def _not_attempted(name):
    return Verdict(
        "not attempted", f"`{name}` is still `...`: replace it with your answer.", f"`{name}` was not answered."
    )


def number(name, reference, unit, concept, *, rel_tol=0.01, traps=()):
    """A number within ``rel_tol`` of ``reference()``; ``traps`` are (value(), hint) of known slips."""

    def judge_number(entries, calls, probes):
        entry = entries.get(name, {"kind": "missing"})
        if not _attempted(entry):
            return _not_attempted(name)
        value, why = _number_of(entry)
        if why:
            return Verdict("wrong", f"`{name}` {why} (in {unit}).", f"`{name}` {why} (in {unit}).")
        ref = float(reference())
        if math.isclose(value, ref, rel_tol=rel_tol):
            return Verdict("correct")
        practice, submit = _describe_number_error(
            name, value, ref, unit, rel_tol, concept, [(float(t()), h) for t, h in traps]
        )
        return Verdict("wrong", practice, submit)

    return judge_number


def _norm(value):
    return value.strip().strip(".").lower() if isinstance(value, str) else value


def choice(name, reference, options: Sequence, concept):
    """One of ``options`` (strings compare case-insensitively; 2 and "2" are the same option)."""

    def judge_choice(entries, calls, probes):
        entry = entries.get(name, {"kind": "missing"})
        if not _attempted(entry):
            return _not_attempted(name)
        got = _choice_value(entry)
        allowed = {_norm(str(o) if isinstance(o, int) and not isinstance(o, bool) else o): o for o in options}
        if _norm(got) not in allowed or isinstance(got, bool) != isinstance(options[0], bool):
            shown = ", ".join(repr(o) for o in options)
            msg = f"`{name}` must be one of {shown}."
            return Verdict("wrong", msg, msg)
        ref = reference() if callable(reference) else reference
        ref = str(ref) if isinstance(ref, int) and not isinstance(ref, bool) else ref
        if _norm(got) == _norm(ref):
            return Verdict("correct")
        return Verdict("wrong", f"`{name}` is not right. {concept}", f"`{name}` is not right. {concept}")

    return judge_choice


def _choice_value(entry: Mapping):
    """What a choice answer is: a string, a bool, a whole number as its digits, or an object no option is."""
    kind, value = entry.get("kind"), entry.get("value")
    if kind == "str" and isinstance(value, str):
        return value
    if kind == "bool" and isinstance(value, bool):
        return value
    if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(int(value)) if float(value).is_integer() else float(value)
    return object()  # nonfinite, huge, a dict...: none of the options


def all_of(*judges):
    """Every sub-judge must be correct; the first problem is reported."""

    def judge_all(entries, calls, probes):
        for j in judges:
            v = j(entries, calls, probes)
            if v.status != "correct":
                return v
        return Verdict("correct")

    return judge_all


def dict_of_numbers(name, reference, unit, concept, *, rel_tol=0.01):
    def judge_dict(entries, calls, probes):
        entry = entries.get(name, {"kind": "missing"})
        if not _attempted(entry):
            return _not_attempted(name)
        if entry.get("kind") != "dict":
            msg = f"`{name}` should be a dict mapping each dtype to a {unit}."
            return Verdict("wrong", msg, msg)
        ref = reference()
        items = entry["items"]
        missing = [k for k in ref if k not in items]
        if missing:
            msg = f"`{name}` has no entry for {', '.join(map(repr, missing))}."
            return Verdict("wrong", msg, msg)
        for key, ref_value in ref.items():
            v = number(f"{name}[{key!r}]", lambda r=ref_value: r, unit, concept, rel_tol=rel_tol)(
                {f"{name}[{key!r}]": items[key]}, {}, []
            )
            if v.status != "correct":
                return v
        return Verdict("correct")

    return judge_dict


# ---------------------------------------------------------------------------- function answers


def _describe_args(args) -> str:
    text = json.dumps(list(args))
    return text if len(text) < 300 else text[:297] + "..."


def _compare_value(field, got, want, unit):
    """None when equal; else (practice, submit) about this field."""
    if isinstance(want, str):
        if got.get("kind") == "str" and _norm(got.get("value")) == want:
            return None
        return (
            f"'{field}' is not right (compare the intensity with the ridge of that dtype).",
            f"'{field}' is not right.",
        )
    value, why = _number_of(got)
    if why:
        return (f"'{field}' {why}.", f"'{field}' {why}.")
    if math.isclose(value, want, rel_tol=1e-6) or (want == 0 and abs(value) < 1e-12):
        return None
    return _describe_number_error(f"'{field}'", value, want, unit, 1e-6, "", [])


def function(name, reference, *, fields=None, units=None, concept=""):
    """A student's function called on the part's probes, each compared with ``reference``.

    A "valid" probe must return what the reference returns (every field of every row, for a dict
    of rows); a "refuse" probe must raise ValueError. A part that has refuse probes also has
    valid ones, so a function that always raises earns nothing.
    """

    def judge_function(entries, calls, probes):
        entry = entries.get(name, {"kind": "missing"})
        if entry.get("kind") != "function":
            return _not_a_function(name, entry)
        outcomes = calls.get(name, {})
        failures = []  # (practice, submit category)
        for probe in probes:
            outcome = outcomes.get(probe.id)
            if probe.kind != "refuse" and isinstance(outcome, dict) and outcome.get("raised") == "NotImplementedError":
                return Verdict("not attempted", f"`{name}` is not written yet.", f"`{name}` was not written.")
            failure = _probe_failure(name, probe, outcome, reference, fields, units, concept)
            if failure:
                failures.append(failure)
        return _function_verdict(name, failures, len(probes))

    return judge_function


def _not_a_function(name, entry) -> Verdict:
    if not _attempted(entry):
        return _not_attempted(name)
    msg = f"`{name}` should be a function."
    return Verdict("wrong", msg, msg)


def _probe_failure(name, probe, outcome, reference, fields, units, concept):
    """None when the function did what ``probe`` asks; else (practice, submit category)."""
    call = f"{name}(*{_describe_args(probe.args)})"
    if not isinstance(outcome, dict):
        return (f"no result for {call}.", "a probe has no result")
    if probe.kind == "refuse":
        return _refusal_failure(call, outcome, concept)
    if "raised" in outcome:
        return (
            f"{call} raised {outcome.get('raised')}: {outcome.get('message', '')}; it is a valid input.",
            "raised on a valid input",
        )
    problem = _compare_result(reference(*probe.args), outcome.get("returned", {}), fields, units)
    return None if problem is None else (f"{call}: {problem[0]}", problem[1])


def _refusal_failure(call, outcome, concept):
    """None when a probe the function must refuse raised ValueError; else (practice, submit category)."""
    if "raised" not in outcome:
        return (
            f"{call} returned a result; it must raise ValueError. {concept}",
            "returned a result for an input it must refuse",
        )
    if not outcome.get("value_error"):
        return (
            f"{call} raised {outcome.get('raised')}, not ValueError.",
            "refused an input with an exception that is not a ValueError",
        )
    return None


def _function_verdict(name, failures, n_probes) -> Verdict:
    """Correct with no failure; else wrong, with the first failure in practice and their kinds on submit."""
    if not failures:
        return Verdict("correct")
    kinds = sorted({f[1] for f in failures})
    practice = f"`{name}` is wrong on {len(failures)} of {n_probes} probe inputs; first: {failures[0][0]}"
    submit = f"`{name}` is wrong on {len(failures)} of {n_probes} probe inputs ({'; '.join(kinds)})."
    return Verdict("wrong", practice, submit)


def _compare_result(want, got, fields, units):
    """None, or (practice, submit category) for the first difference."""
    if fields is None:  # a single number
        problem = _compare_value("result", got, want, (units or {}).get("result", ""))
        return None if problem is None else (problem[0], "a wrong value: " + _category(problem[1]))
    if got.get("kind") != "dict":
        return ("should return a dict of rows keyed by dtype.", "did not return a dict of rows")
    rows = got.get("items", {})
    if sorted(rows) != sorted(want):
        return (
            f"returned rows for {sorted(rows)}, expected one row per dtype of seconds_by_dtype.",
            "wrong set of rows",
        )
    for dtype, row in want.items():
        got_row = rows[dtype]
        if got_row.get("kind") != "dict":
            return (f"row {dtype!r} should be a dict.", "a row is not a dict")
        for field in fields:
            if field not in got_row.get("items", {}):
                return (f"row {dtype!r} has no key {field!r}.", f"a row has no {field!r}")
            problem = _compare_value(field, got_row["items"][field], row[field], (units or {}).get(field, ""))
            if problem:
                return (f"row {dtype!r}: {problem[0]}", f"{field!r} {_category(problem[1])}")
    return None


def _category(submit_msg: str) -> str:
    if "sign" in submit_msg:
        return "has the wrong sign"
    if "10^" in submit_msg:
        return "is off by a power of ten"
    return "is not right"


def _too_large(refused: Mapping) -> Verdict:
    """A part whose answers the observer refused: together they passed its size limit."""
    name = refused.get("name")
    what = f"`{name[:60]}` (its value, or what it returned on the probes)" if isinstance(name, str) and name else "it"
    msg = (
        f"the answer is over {_limit_mib(refused)} MiB: {what} is too large to be an answer "
        "(a number, a word or a small dict), so the part is not judged."
    )
    return Verdict("wrong", msg, msg)


def judge(part: Part, observation, probes: Sequence[Probe]) -> Verdict:
    """Judge one observation; a malformed one is an error, never an exception."""
    if isinstance(observation, dict) and isinstance(observation.get("too_large"), dict):
        return _too_large(observation["too_large"])
    if not isinstance(observation, dict) or not isinstance(observation.get("entries"), dict):
        return Verdict("error", "the check could not read your answers.", "the observation was unreadable.")
    entries = {k: v for k, v in observation["entries"].items() if isinstance(v, dict)}
    calls = observation.get("calls") if isinstance(observation.get("calls"), dict) else {}
    calls = {k: v for k, v in calls.items() if isinstance(v, dict)}
    try:
        return part.judge(entries, calls, probes)
    except Exception as err:  # noqa: BLE001 - a malformed observation never crashes the grader
        return Verdict(
            "error",
            f"could not judge the answer ({type(err).__name__}).",
            f"could not judge the answer ({type(err).__name__}).",
        )
