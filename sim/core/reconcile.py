"""Facts a history's events must agree on with each other, whatever the family.

The schema (:mod:`sim.core.schema`) judges each event alone: a known name, known values, the right shapes.
A history can pass it event by event and still be impossible as a whole -- a receipt recorded before the
commit it acknowledges, a fence that changes in the middle of a run, a write whose revision does not
follow the file's last.  The checks would then judge a story that never happened, and a contradiction can
hide a violation the true story has.  So a history is *reconciled* before it is checked: every fact below
that two of its events break is a :class:`Contradiction`, and ``fencesim check`` refuses the history
(exit 4) naming both events.

A family declares its facts as data in its history schema (``HistorySchema.facts``), from these few kinds:

* :class:`OnePerRun` -- a field that takes one value in a whole run (a protocol knob);
* :class:`Determines` -- a field whose value fixes others wherever both are recorded (a key fixes its
  generation; a request names one transition);
* :class:`Precedes` -- an event that needs an earlier one with the same values of some fields (a dispatch
  needs its intent; a delivery needs a copy sent);
* :class:`Rule` -- anything else, as a function from a history to contradictions (a file's revisions and
  hashes replayed write by write).

A fact only speaks where the history records what it needs: a history that omits a field is judged by the
checks (``not_evaluable``), not refused here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from sim.core.values import cut, shown

#: Characters of a contradiction's detail in its one line.
DETAIL_CHARS_MAX = 300

#: Contradictions named in one error (the first is spelt out; the rest are counted).
CONTRADICTIONS_KEPT = 100


@dataclass(frozen=True)
class Contradiction:
    """Two events of one history that cannot both be true (``second`` is None for a fact of one event)."""

    fact: str
    first: Any
    second: Any
    detail: str

    def line(self) -> str:
        """One line naming the events (index and kind) and what they contradict."""
        named = f"event {self.first.index} ({self.first.event})"
        detail = cut(self.detail, DETAIL_CHARS_MAX)
        if self.second is not None and self.second.index != self.first.index:
            named += f" and event {self.second.index} ({self.second.event})"
            return f"{named} contradict each other ({self.fact}): {detail}"
        return f"{named} contradicts itself ({self.fact}): {detail}"


def _value(event: Any, name: str) -> Any:
    """A field's value, or None where the event does not record it (fixed fields included)."""
    return event.get(name)


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def _done(event: Any) -> bool:
    """A skipped event did nothing: it states no fact about the run."""
    return not event.fields.get("skipped")


@dataclass(frozen=True)
class OnePerRun:
    """``field`` takes one value in a run, on every event (of ``events``, if given) that records it."""

    field: str
    what: str
    events: frozenset[str] | None = None
    #: A predicate on an event: only those it says yes to are read.
    when: Callable[[Any], bool] | None = None

    def contradictions(self, history: Sequence[Any]) -> Iterator[Contradiction]:
        first = None
        for event in history:
            if (self.events is not None and event.event not in self.events) or self.field not in event.fields:
                continue
            if not _done(event) or (self.when is not None and not self.when(event)):
                continue
            if first is None:
                first = event
            elif event.fields[self.field] != first.fields[self.field]:
                yield Contradiction(f"one {self.field} per run", first, event,
                                    f"{self.what} changes from {shown(first.fields[self.field])} to "
                                    f"{shown(event.fields[self.field])} in the middle of the run")
                return


@dataclass(frozen=True)
class Determines:
    """Wherever an event of ``events`` records every field of ``key``, those values fix ``value`` (each
    of its fields, where recorded) for the whole run."""

    key: tuple[str, ...]
    value: tuple[str, ...]
    what: str
    events: frozenset[str] | None = None
    #: Read skipped events too (None values of ``key`` are never a key).
    scope: tuple[str, ...] = ()
    #: What maps an event to the facts its key fixes (default: the fields of ``value``).
    derive: Callable[[Any], dict[str, Any]] | None = None
    #: A predicate on an event: only those it says yes to are read.
    when: Callable[[Any], bool] | None = None

    def contradictions(self, history: Sequence[Any]) -> Iterator[Contradiction]:
        seen: dict[tuple, dict[str, tuple[Any, Any]]] = {}
        for event in history:
            if (self.events is not None and event.event not in self.events) or not _done(event):
                continue
            if self.when is not None and not self.when(event):
                continue
            key = tuple(_hashable(_value(event, name)) for name in self.scope + self.key)
            if any(part is None for part in key[len(self.scope):]):
                continue
            facts = self.derive(event) if self.derive is not None else {n: _value(event, n) for n in self.value}
            known = seen.setdefault(key, {})
            for name, value in facts.items():
                if value is None:
                    continue
                earlier = known.get(name)
                if earlier is None:
                    known[name] = (_hashable(value), event)
                elif earlier[0] != _hashable(value):
                    about = ", ".join(f"{n} {shown(_value(event, n))}" for n in self.key)
                    yield Contradiction(self.what, earlier[1], event,
                                        f"{about} has {name} {shown(earlier[1].get(name, earlier[0]))} at event "
                                        f"{earlier[1].index} but {shown(value)} at event {event.index}")
                    return


@dataclass(frozen=True)
class Precedes:
    """Every done event of ``later`` (that records every field of ``key``) needs an earlier done event of
    ``earlier`` with the same values of ``key`` (``earlier_key``: those fields' names on the earlier event).

    When the needed event comes only later, the two are named.  When it never comes, the later event alone,
    if ``needs_one`` and the history records events of ``earlier`` at all (a recorder that never writes them,
    say of one side of the system only, omits them; it does not contradict itself).
    """

    later: frozenset[str]
    earlier: frozenset[str]
    key: tuple[str, ...]
    what: str
    earlier_key: tuple[str, ...] = ()
    needs_one: bool = False
    #: A predicate on the later event: only those it says yes to need an earlier one.
    when: Callable[[Any], bool] | None = None

    def contradictions(self, history: Sequence[Any]) -> Iterator[Contradiction]:
        their_key = self.earlier_key or self.key
        happened: set[tuple] = set()
        waiting: dict[tuple, Any] = {}
        recorded = False
        for event in history:
            if not _done(event):
                continue
            if event.event in self.earlier:
                recorded = True
                key = tuple(_hashable(_value(event, n)) for n in their_key)
                if key in waiting:
                    first = waiting[key]
                    yield Contradiction(self.what, first, event,
                                        f"event {first.index} ({first.event}) is recorded before the "
                                        f"{event.event} it follows (event {event.index})")
                    return
                happened.add(key)
            if event.event in self.later and (self.when is None or self.when(event)):
                key = tuple(_hashable(_value(event, n)) for n in self.key)
                if None in key or key in happened:
                    continue
                waiting.setdefault(key, event)
        if self.needs_one and recorded and waiting:
            first = next(iter(waiting.values()))
            yield Contradiction(self.what, first, None,
                                f"no {' or '.join(sorted(self.earlier))} with "
                                + ", ".join(f"{n} {shown(_value(first, n))}" for n in self.key)
                                + " is recorded at all")


@dataclass(frozen=True)
class Rule:
    """A fact written as a function of the whole history (the contradictions it finds, in order)."""

    name: str
    function: Callable[[Sequence[Any]], Iterable[Contradiction]]

    def contradictions(self, history: Sequence[Any]) -> Iterable[Contradiction]:
        return self.function(history)


def time_never_decreases(history: Sequence[Any]) -> Iterator[Contradiction]:
    """Events are recorded in the order they happen: a later event never has an earlier time."""
    previous = None
    for event in history:
        if previous is not None and event.time < previous.time:
            yield Contradiction("time never goes backwards", previous, event,
                                f"event {event.index} happens at {shown(event.time)}, before event {previous.index} "
                                f"({shown(previous.time)}) which is recorded earlier")
            return
        previous = event


#: The fact every family's histories keep (a family's ``Facts`` start with it).
TIME_ORDER = Rule("time order", time_never_decreases)


@dataclass(frozen=True)
class Facts:
    """A family's facts, in the order they are asked (the first contradiction found is the one named)."""

    rules: tuple[Any, ...] = field(default_factory=tuple)

    def contradictions(self, history: Sequence[Any]) -> list[Contradiction]:
        found: list[Contradiction] = []
        for rule in self.rules:
            for contradiction in rule.contradictions(history):
                found.append(contradiction)
                if len(found) >= CONTRADICTIONS_KEPT:
                    return sorted(found, key=_order)
        return sorted(found, key=_order)


def _order(contradiction: Contradiction) -> tuple[int, int]:
    second = contradiction.second.index if contradiction.second is not None else -1
    return (max(contradiction.first.index, second), contradiction.first.index)


def reconcile(history: Sequence[Any], facts: Facts | None) -> list[Contradiction]:
    """Every contradiction the family's facts find in ``history``, the earliest-shown first."""
    return facts.contradictions(history) if facts is not None else []


def contradicted(where: str, history: Any, contradictions: Sequence[Contradiction]) -> Any:
    """The HistoryError (exit 4) for a history that contradicts itself: one line, the first contradiction
    at the line of its later event, the others counted."""
    from sim.core.errors import HistoryError

    first = contradictions[0]
    later = first.first if first.second is None or first.second.index < first.first.index else first.second
    positions = {event.index: position for position, event in enumerate(history)}
    line = history.line_of(positions.get(later.index, 0)) if hasattr(history, "line_of") else later.index + 1
    more = len(contradictions) - 1
    rest = f" (and {more}{'+' if len(contradictions) >= CONTRADICTIONS_KEPT else ''} more contradiction(s))" \
        if more else ""
    error = HistoryError(f"{first.line()}{rest}; a history whose events contradict each other cannot be judged",
                         f"{where}:{line}")
    error.problems = [(line, first.line())]
    return error
