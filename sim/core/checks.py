"""What every check returns, whatever the family.

A check is a pure function ``history -> CheckResult``.  It never looks
inside a model; it reads only event fields, so it runs unchanged on a
history recorded from a real system.  When the fields it needs are absent,
it says ``not_evaluable`` rather than passing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Container, Iterable, Mapping

from sim.core.values import JsonObject

OK = "ok"
VIOLATED = "violated"
NOT_EVALUABLE = "not_evaluable"


@dataclass(frozen=True)
class Fact:
    """One part of why a violation happened: an event (by index) in a role, and the state values it shows.

    ``role`` says what the event is to the violation (``write``, ``overwrote``, ``first_apply``, ``stamp``,
    ``receipt``...); ``values`` are the fields the check compared, as they were recorded, in the order the
    check names them.  ``event_index`` is None for a fact about the run as a whole (a task with no end)."""

    role: str
    event_index: int | None
    event: str | None = None
    values: tuple[tuple[str, Any], ...] = ()

    def to_dict(self) -> JsonObject:
        return {"role": self.role, "event_index": self.event_index, "event": self.event,
                "values": dict(self.values)}


def fact(role: str, event: Any, *names: str, **values: Any) -> Fact:
    """A :class:`Fact` about ``event`` (an :class:`~sim.core.history.Event`, or None): the fields ``names`` as
    recorded (a field the event lacks is left out, never invented), then ``values`` the check derived."""
    recorded = tuple((name, plain_value(event[name])) for name in names if event is not None and name in event)
    derived = tuple((name, plain_value(value)) for name, value in values.items())
    if event is None:
        return Fact(role, None, None, derived)
    return Fact(role, event.index, event.event, recorded + derived)


def plain_value(value: Any) -> Any:
    """A value as JSON shows it: tuples and sets as lists, mappings with sorted keys."""
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain_value(v) for v in value), key=repr)
    if isinstance(value, Mapping):
        return {str(k): plain_value(value[k]) for k in sorted(value, key=str)}
    return value


@dataclass(frozen=True)
class Violation:
    """One breach of an invariant, pinned to the event that shows it.

    ``detail`` is one line for a person; ``explanation`` is the same reason as data -- the events that make
    the violation and the state facts the check compared (:class:`Fact`), for reports, CI diffs and
    notebooks to reason over (``sim.report.explain`` renders it).  It does not take part in equality: two
    violations of one invariant at one event are one violation."""

    invariant: str
    event_index: int | None
    step: str | None
    detail: str
    domain: str | None = None
    safety: bool = True
    explanation: tuple[Fact, ...] = field(default=(), compare=False)

    def to_dict(self) -> JsonObject:
        out: JsonObject = {
            "invariant": self.invariant,
            "step": self.step,
            "event_index": self.event_index,
            "detail": self.detail,
        }
        if self.domain is not None:
            out["domain"] = self.domain
        if self.explanation:
            out["explanation"] = [f.to_dict() for f in self.explanation]
        return out


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check over one history."""

    name: str
    status: str
    violations: tuple[Violation, ...] = ()
    reason: str = ""

    @classmethod
    def from_violations(cls, name: str, violations: list[Violation]) -> "CheckResult":
        return cls(name, VIOLATED if violations else OK, tuple(violations))

    @classmethod
    def not_evaluable(cls, name: str, reason: str) -> "CheckResult":
        return cls(name, NOT_EVALUABLE, (), reason)


class NotEvaluable(Exception):
    """Raised inside a check when the history lacks what it needs; the reason is reported."""


@dataclass(frozen=True)
class Fold:
    """A check written as a fold over a history's events, so it can also judge a run as it grows.

    ``start`` is the carry before any event (an immutable value); ``feed(carry, event)`` returns the
    new carry and the violations the event shows; ``end(carry)``, if given, runs after the last event
    and may raise :class:`NotEvaluable` for a property of the whole history.  :meth:`run` is the
    check as a pure function of a history; exhaustive search feeds the events of each new state
    instead of re-reading a whole history.  ``feed`` raises :class:`NotEvaluable` to say the check
    cannot judge the history.
    """

    name: str
    start: Any
    feed: Callable[[Any, Any], tuple[Any, tuple[Violation, ...]]]
    end: Callable[[Any], None] | None = None
    #: The event names ``feed`` reads (None: every event) and those it never reads; the others pass it by,
    #: in every use.
    reads: frozenset[str] | None = None
    ignores: frozenset[str] = frozenset()

    def reads_event(self, name: str) -> bool:
        return (self.reads is None or name in self.reads) and name not in self.ignores

    def run(self, history: Iterable[Any]) -> CheckResult:
        found: list[Violation] = []
        carry, feed, reads_event = self.start, self.feed, self.reads_event
        try:
            for event in history:
                if not reads_event(event.event):
                    continue
                carry, violations = feed(carry, event)
                if violations:
                    found.extend(violations)
            if self.end is not None:
                self.end(carry)
        except NotEvaluable as reason:
            return CheckResult.not_evaluable(self.name, str(reason))
        return CheckResult.from_violations(self.name, found)

    def __call__(self, history: Iterable[Any]) -> CheckResult:
        return self.run(history)


@dataclass(frozen=True)
class CheckSpec:
    """A named check: safety checks fail a run, availability checks are counted.

    ``requires`` maps the event names the check reads to the fields it needs
    of them: when a history has such events and *none* of them carries a
    field, the check cannot judge it and says ``not_evaluable``, naming the
    field (a recorder that never writes a field is not the same as a run in
    which nothing happened).  ``count_as`` names the column an availability
    check's findings are counted in (``spurious_rejections``).  ``exempt``
    maps an event name to a predicate that picks the events which may rightly
    lack the required fields (a delivery cut short by a crash before any
    decision has no verdict): such events neither show nor hide a field.

    ``state`` is the same invariant as a predicate on the machine's state value (True where it is violated),
    as a TLA+ invariant is written: when every safety check has one, exhaustive search judges states by them
    and reads no history record.  The law suite's ``state_invariants`` checks that the predicate and the
    history check agree on every state within its depth.

    ``transition`` is an invariant of steps instead: a predicate on (the state before, the state after) of one
    event, True where that step violates it, as a TLA+ action property ``[][A]_vars`` is written.  Exhaustive
    search asks it of every step it takes, into a new state or one already seen, and still reads no history
    record; ``state_invariants`` holds it, too, to its history check.
    """

    name: str
    function: Callable[..., CheckResult]
    safety: bool
    summary: str
    requires: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    count_as: str | None = None
    exempt: Mapping[str, Callable[[Any], bool]] = field(default_factory=dict)
    state: Callable[[Any], bool] | None = None
    transition: Callable[[Any, Any], bool] | None = None
    #: More of a violation's explanation, read from the whole history: ``explain(events, violation)`` returns
    #: the facts of other events (the edit a write overwrote), added after those the check gave.  Run only on
    #: violations found, never by exhaustive search's folds.
    explain: Callable[[list, Violation], tuple[Fact, ...]] | None = None

    @property
    def fold(self) -> Fold | None:
        """The check as a fold over events, when it is written as one (see :class:`Fold`)."""
        return self.function if isinstance(self.function, Fold) else None

    @property
    def column(self) -> str:
        return self.count_as or self.name

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(sorted({f for names in self.requires.values() for f in names}))

    def missing(self, history, seen: Mapping[str, set[str]] | None = None) -> str | None:
        """The first (event, field) the history never records, if the check needs it.

        ``seen``: the fields the history's done events record, per event name (:func:`fields_recorded`),
        shared by the checks of one history that exempt no event."""
        if seen is None or self.exempt:
            seen = fields_recorded(history, self.requires, self.exempt)
        for name, needed in self.requires.items():
            if name in seen:
                for field_name in needed:
                    if field_name not in seen[name]:
                        return f"no '{name}' event records '{field_name}'"
        return None

    def run(self, history, seen: Mapping[str, set[str]] | None = None) -> CheckResult:
        absent = self.missing(history, seen) if self.requires else None
        return CheckResult.not_evaluable(self.name, absent) if absent else self.function(history)

    def explained(self, result: CheckResult, history) -> CheckResult:
        """``result`` with :attr:`explain`'s facts added to each violation's explanation."""
        if self.explain is None or not result.violations:
            return result
        events = list(history)
        return replace(result, violations=tuple(
            replace(v, explanation=v.explanation + self.explain(events, v)) for v in result.violations))


def fields_recorded(history, names: Container[str], exempt: Mapping[str, Callable[[Any], bool]] | None = None
                    ) -> dict[str, set[str]]:
    """Per event name in ``names`` (a set, or a check's ``requires``): every field some done event of that
    name records (a skipped event did nothing, and an event ``exempt`` says yes to is left out)."""
    seen: dict[str, set[str]] = {}
    for event in history:
        name = event.event
        if name in names and not event.get("skipped"):
            rule = exempt.get(name) if exempt else None
            if rule is not None and rule(event):
                continue
            fields = seen.get(name)
            if fields is None:
                seen[name] = set(event.fields)
            else:
                fields.update(event.fields)
    return seen


@dataclass
class CheckReport:
    """All check results for one history."""

    results: list[CheckResult] = field(default_factory=list)

    @property
    def safety_violations(self) -> list[Violation]:
        return [v for r in self.results for v in r.violations if v.safety]

    @property
    def availability_findings(self) -> list[Violation]:
        return [v for r in self.results for v in r.violations if not v.safety]

    def status(self) -> dict[str, str]:
        return {r.name: r.status for r in self.results}

    @property
    def not_evaluable(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == NOT_EVALUABLE]


def run_checks(specs, history, explain: bool = True) -> CheckReport:
    """Run every check of ``specs`` over ``history``, in the order given.

    When every check is a fold, they share one pass over the history (the same results as running each
    alone: what each reads, what it requires, where it stops).  ``explain=False`` leaves out the facts of
    other events a check's :attr:`CheckSpec.explain` adds (a sweep counts violations; it does not show them):
    the violations, their findings and the facts the checks give themselves are the same.
    """
    folded = _FOLDED.get(id(specs))
    if folded is None or folded.given is not specs:
        listed = list(specs)
        if not listed or any(spec.fold is None for spec in listed):
            seen = fields_recorded(history, {name for spec in listed for name in spec.requires})
            results = [spec.run(history, seen) for spec in listed]
            return CheckReport([spec.explained(r, history) for spec, r in zip(listed, results)] if explain
                               else results)
        folded = _FoldedRun(listed, specs)
        if isinstance(specs, tuple) and len(_FOLDED) < FOLDED_RUNS_KEPT:
            _FOLDED[id(specs)] = folded  # a family's checks: the same tuple every time
    results = folded.run(history)
    if not explain:
        return CheckReport(results)
    return CheckReport([spec.explained(result, history) for spec, result in zip(folded.specs, results)])


#: Fused runs kept for the tuples of checks they were built for (one per family, in practice).
FOLDED_RUNS_KEPT = 64


_FOLDED: dict[int, "_FoldedRun"] = {}


class _FoldedRun:
    """Several fold checks over one pass: each check's carry, findings, and whether the events it requires
    record the fields it needs."""

    def __init__(self, specs: list[CheckSpec], given: Any = None):
        self.specs, self.given = specs, given
        self.folds: list[Fold] = []
        for spec in specs:
            fold = spec.fold
            if fold is None:
                raise ValueError(f"check {spec.name!r} is not a fold; it cannot share a pass")
            self.folds.append(fold)
        self.readers: dict[str, list[tuple[int, Callable]]] = {}
        #: event name -> [(exempt predicate or None, every field some check needs of such events)]
        self.watched: dict[str, list[tuple[Callable[[Any], bool] | None, frozenset[str]]]] = {}
        needs: dict[tuple[str, Any], set[str]] = {}
        for spec in specs:
            for name, fields in spec.requires.items():
                needs.setdefault((name, spec.exempt.get(name)), set()).update(fields)
        for (name, exempt), wanted in needs.items():
            self.watched.setdefault(name, []).append((exempt, frozenset(wanted)))

    def _readers_of(self, name: str) -> list[tuple[int, Callable]]:
        readers = self.readers.get(name)
        if readers is None:
            readers = self.readers[name] = [(i, f.feed) for i, f in enumerate(self.folds) if f.reads_event(name)]
        return readers

    def run(self, history) -> list[CheckResult]:
        count = len(self.specs)
        carries = [fold.start for fold in self.folds]
        found: list[list[Violation]] = [[] for _ in range(count)]
        broken: list[str | None] = [None] * count
        #: (event name, exempt) -> the needed fields no such event has recorded yet (absent: no such event)
        unseen: dict[tuple[str, Any], frozenset[str]] = {}
        for event in history:
            name = event.event
            kinds = self.watched.get(name)
            if kinds is not None and not event.fields.get("skipped"):
                for exempt, needed in kinds:
                    key = (name, exempt)
                    left = unseen.get(key, needed)
                    if left and (exempt is None or not exempt(event)):
                        unseen[key] = left.difference(event.fields)
            for i, feed in self._readers_of(name):
                if broken[i] is None:
                    try:
                        carries[i], violations = feed(carries[i], event)
                    except NotEvaluable as reason:
                        broken[i] = str(reason)
                        continue
                    if violations:
                        found[i].extend(violations)
        return [self._result(i, carries[i], found[i], broken[i], unseen) for i in range(count)]

    def _result(self, i: int, carry: Any, found: list[Violation], broken: str | None,
                unseen: dict[tuple[str, Any], frozenset[str]]) -> CheckResult:
        spec, fold = self.specs[i], self.folds[i]
        for name, needed in spec.requires.items():
            left = unseen.get((name, spec.exempt.get(name)))
            if left is not None:
                for field_name in needed:
                    if field_name in left:
                        return CheckResult.not_evaluable(spec.name, f"no '{name}' event records '{field_name}'")
        if broken is None and fold.end is not None:
            try:
                fold.end(carry)
            except NotEvaluable as reason:
                broken = str(reason)
        if broken is not None:
            return CheckResult.not_evaluable(fold.name, broken)
        return CheckResult.from_violations(fold.name, found)
