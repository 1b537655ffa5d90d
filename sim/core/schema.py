"""What a family's recorded histories may hold, checked when a history is read.

A check reads event names and field values.  An event it does not know
(``delivr`` for ``deliver``) or a value it does not know (the verdict
``aplied``) is simply not read, so without this layer a history full of
typos would pass every check: ``fencesim check`` would pass blind.  A
history is therefore refused (exit 4, naming each line) when it holds

* an event name the family never records, or one of another family (one
  history is one family's: mixed events cannot be judged by either);
* a value a field never takes (a verdict no executor gives, a timeout
  outcome other than ``failed`` / ``unknown``);
* a field of the wrong shape (``renamed`` is a list of ``[old, new]``
  pairs, ``completed`` a list of transition names).

A family's schema is data: the event names, the allowed values per
``(event, field)``, and shape checkers per field.  An empty event set means
"any name" (a family that declares none is not checked by name).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from sim.core.values import kind, shown
from sim.core.workload import did_you_mean

#: Every event of this name (in ``HistorySchema.values``), whatever the event.
ANY_EVENT = "*"


@dataclass(frozen=True)
class HistorySchema:
    """Event names, allowed values and field shapes of one family's histories."""

    events: frozenset[str] = frozenset()
    #: ``(event name or ANY_EVENT, field) -> allowed values``.
    values: Mapping[tuple[str, str], tuple[Any, ...]] = field(default_factory=dict)
    #: ``field -> function(value) -> what is wrong, or None``.
    shapes: Mapping[str, Callable[[Any], str | None]] = field(default_factory=dict)
    #: What the events must agree on with each other (:mod:`sim.core.reconcile`); None: nothing.
    facts: Any = None

    @classmethod
    def of(cls, family) -> "HistorySchema":
        """The schema a family declares (``history_schema``), else one built from its ``history_events``."""
        declared = getattr(family, "history_schema", None)
        if isinstance(declared, HistorySchema):
            return declared
        return cls(events=frozenset(getattr(family, "history_events", ()) or ()))

    def event_problem(self, event, family_name: str, foreign: Mapping[str, str]) -> str | None:
        name = event.event
        if not self.events or name in self.events:
            return None
        other = foreign.get(name)
        if other is not None:
            return (f"event {shown(name)} is one of the {other} family's, in a {family_name} history; a history "
                    "holds the events of one family")
        return (f"unknown event {shown(name)}{did_you_mean(name, self.events)} for the {family_name} family; its "
                f"events: {', '.join(sorted(self.events))}")

    def field_problems(self, event) -> Iterable[str]:
        for name, value in event.fields.items():
            allowed = self.values.get((event.event, name))
            owner = f" of {event.event!r}"
            if allowed is None:
                allowed, owner = self.values.get((ANY_EVENT, name)), ""
            if allowed is not None and isinstance(value, str) and value not in allowed:
                yield (f"{name} {shown(value)}{owner} is not one the family records{did_you_mean(value, allowed)}; "
                       f"allowed: {', '.join(str(a) for a in allowed)}")
                continue
            check = self.shapes.get(name)
            problem = check(value) if check is not None else None
            if problem:
                yield f"{name} of {event.event!r}: {problem}"


def validate(history, family_name: str, schema: HistorySchema, foreign: Mapping[str, str]) -> list[tuple[int, str]]:
    """``(line, what is wrong)`` for every event the schema refuses (``foreign``: event name -> the other
    family that records it)."""
    problems: list[tuple[int, str]] = []
    for position, event in enumerate(history):
        line = history.line_of(position) if hasattr(history, "line_of") else position + 1
        problem = schema.event_problem(event, family_name, foreign)
        if problem:
            problems.append((line, problem))
        problems.extend((line, text) for text in schema.field_problems(event))
    return problems


# -- shapes every family may use --------------------------------------------------------------------------

def list_of_strings(value: Any) -> str | None:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return None
    return f"must be a list of names (strings), not {kind(value)} {shown(value)}"


def list_of_string_pairs(value: Any) -> str | None:
    if isinstance(value, list) and all(isinstance(pair, list) and len(pair) == 2
                                       and all(isinstance(x, str) for x in pair) for pair in value):
        return None
    return f"must be a list of [old, new] pairs of names, not {shown(value)}"


def table_of_strings(value: Any) -> str | None:
    if isinstance(value, dict) and all(isinstance(item, str) for item in value.values()):
        return None
    return f"must be an object of name = text, not {kind(value)} {shown(value)}"
