"""Explanations rendered: a violation's facts (:class:`sim.core.checks.Fact`) as lines for a person.

A check says *why* a run broke as data -- each event that makes the violation, the role it plays, and the state
values it shows, by event index -- and every text here is made from that data alone, so a report, a CI diff and a
notebook read the same reason.  :func:`explanation_lines` takes the facts as objects or as their JSON form.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from sim.core.checks import Fact, plain_value
from sim.core.findings import violations_of

if TYPE_CHECKING:
    import pandas as pd


def as_dict(fact: Fact | Mapping[str, Any]) -> dict[str, Any]:
    """A fact in its JSON form (``role``, ``event_index``, ``event``, ``values``)."""
    return fact.to_dict() if isinstance(fact, Fact) else dict(fact)


def shown(value: Any) -> str:
    """A value as an explanation prints it: a list joined by commas, None as "none", a bool as yes/no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    return str(value)


def fact_line(fact: Fact | Mapping[str, Any]) -> str:
    """One fact: ``event 6 (deliver), write: step=s2, path=app.py, hash_before=3346..``."""
    data = as_dict(fact)
    where = "the run" if data["event_index"] is None else f"event {data['event_index']}"
    if data.get("event"):
        where += f" ({data['event']})"
    values = ", ".join(f"{name}={shown(value)}" for name, value in data["values"].items())
    return f"{where}, {data['role'].replace('_', ' ')}" + (f": {values}" if values else "")


def explanation_lines(facts: Iterable[Fact | Mapping[str, Any]]) -> list[str]:
    """Every fact of an explanation, one line each, in the check's order."""
    return [fact_line(f) for f in facts]


def disagreements(history: Iterable[Any], facts: Iterable[Fact | Mapping[str, Any]]) -> list[str]:
    """What an explanation says that its history does not: a fact at an event the history lacks, naming another
    event, or showing a recorded field with another value than recorded (values a check derived, such as
    ``keyed``, are not fields and are not compared).  Empty when every fact agrees."""
    by_index = {event.index: event for event in history}
    out = []
    for data in map(as_dict, facts):
        index = data["event_index"]
        if index is None:
            continue
        event = by_index.get(index)
        if event is None:
            out.append(f"{data['role']}: event {index} is not in the history")
            continue
        if data.get("event") not in (None, event.event):
            out.append(f"{data['role']}: event {index} is {event.event}, not {data['event']}")
        for name, value in data["values"].items():
            if name in event.fields and plain_value(event.fields[name]) != value:
                out.append(f"{data['role']}: event {index} records {name}={shown(plain_value(event.fields[name]))}, "
                           f"not {shown(value)}")
    return out


def explanation_frame(facts: Iterable[Fact | Mapping[str, Any]]) -> pd.DataFrame:
    """A long DataFrame of an explanation: one row per (fact, value) -- ``fact`` (its position), ``role``,
    ``event_index``, ``event``, ``field``, ``value`` -- for a notebook to filter and join with a history."""
    import pandas as pd

    rows = [{"fact": position, "role": data["role"], "event_index": data["event_index"], "event": data.get("event"),
             "field": name, "value": value}
            for position, data in enumerate(as_dict(f) for f in facts) for name, value in data["values"].items()]
    return pd.DataFrame(rows, columns=["fact", "role", "event_index", "event", "field", "value"])


def finding_violation(family, scenario, violations, finding: str):
    """The first violation that shows ``finding`` (None when the replay shows none)."""
    return next(iter(violations_of(family, scenario, violations, finding)), None)


def explained(violation) -> dict[str, Any]:
    """A counterexample's ``detail`` (one line) and ``explanation`` (its facts, by event index) from the
    violation its replay shows."""
    if violation is None:
        return {"detail": "", "explanation": []}
    return {"detail": violation.detail, "explanation": [f.to_dict() for f in violation.explanation]}
