"""Explanations rendered: a violation's facts (:class:`sim.core.checks.Fact`) as lines for a person.

A check says *why* a run broke as data -- each event that makes the violation, the role it plays, and the state
values it shows, by event index -- and every text here is made from that data alone, so a report, a CI diff and a
notebook read the same reason.  :func:`explanation_lines` takes the facts as objects, as :class:`FactRow`
documents, or as their JSON form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Union

from sim.core.checks import Fact, plain_value
from sim.core.findings import violations_of
from sim.core.records import Record, json_int, json_object, json_text
from sim.core.values import JsonObject

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, slots=True, kw_only=True)
class FactRow(Record):
    """A fact as a document gives it: the event (by index; None for the run as a whole) in its role, and the
    state values it shows, in the check's order."""

    role: str
    event_index: int | None = None
    event: str | None = None
    values: JsonObject = field(default_factory=dict)


#: A fact as a check gives it, as a document gives it, or as a ``fuzz --json`` document holds it.
AnyFact = Union[Fact, FactRow, Mapping[str, Any]]


def fact_row(fact: AnyFact) -> FactRow:
    """A fact in its document form."""
    if isinstance(fact, FactRow):
        return fact
    if isinstance(fact, Fact):
        return FactRow(role=fact.role, event_index=fact.event_index, event=fact.event, values=dict(fact.values))
    return FactRow(role=json_text(fact.get("role")), event_index=json_int(fact.get("event_index")),
                   event=fact.get("event") if isinstance(fact.get("event"), str) else None,
                   values=json_object(fact.get("values")))


def shown(value: Any) -> str:
    """A value as an explanation prints it: a list joined by commas, None as "none", a bool as yes/no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    return str(value)


def fact_line(fact: AnyFact) -> str:
    """One fact: ``event 6 (deliver), write: step=s2, path=app.py, hash_before=3346..``."""
    data = fact_row(fact)
    where = "the run" if data.event_index is None else f"event {data.event_index}"
    if data.event:
        where += f" ({data.event})"
    values = ", ".join(f"{name}={shown(value)}" for name, value in data.values.items())
    return f"{where}, {data.role.replace('_', ' ')}" + (f": {values}" if values else "")


def explanation_lines(facts: Iterable[AnyFact]) -> list[str]:
    """Every fact of an explanation, one line each, in the check's order."""
    return [fact_line(f) for f in facts]


def disagreements(history: Iterable[Any], facts: Iterable[AnyFact]) -> list[str]:
    """What an explanation says that its history does not: a fact at an event the history lacks, naming another
    event, or showing a recorded field with another value than recorded (values a check derived, such as
    ``keyed``, are not fields and are not compared).  Empty when every fact agrees."""
    by_index = {event.index: event for event in history}
    out = []
    for data in map(fact_row, facts):
        index = data.event_index
        if index is None:
            continue
        event = by_index.get(index)
        if event is None:
            out.append(f"{data.role}: event {index} is not in the history")
            continue
        if data.event not in (None, event.event):
            out.append(f"{data.role}: event {index} is {event.event}, not {data.event}")
        for name, value in data.values.items():
            if name in event.fields and plain_value(event.fields[name]) != value:
                out.append(f"{data.role}: event {index} records {name}={shown(plain_value(event.fields[name]))}, "
                           f"not {shown(value)}")
    return out


def explanation_frame(facts: Iterable[AnyFact]) -> pd.DataFrame:
    """A long DataFrame of an explanation: one row per (fact, value) -- ``fact`` (its position), ``role``,
    ``event_index``, ``event``, ``field``, ``value`` -- for a notebook to filter and join with a history."""
    import pandas as pd

    rows = [{"fact": position, "role": data.role, "event_index": data.event_index, "event": data.event,
             "field": name, "value": value}
            for position, data in enumerate(map(fact_row, facts)) for name, value in data.values.items()]
    return pd.DataFrame(rows, columns=["fact", "role", "event_index", "event", "field", "value"])


def finding_violation(family, scenario, violations, finding: str):
    """The first violation that shows ``finding`` (None when the replay shows none)."""
    return next(iter(violations_of(family, scenario, violations, finding)), None)


def explained(violation) -> tuple[str, tuple[FactRow, ...]]:
    """A counterexample's ``detail`` (one line) and ``explanation`` (its facts, by event index) from the
    violation its replay shows."""
    if violation is None:
        return "", ()
    return violation.detail, tuple(fact_row(f) for f in violation.explanation)
