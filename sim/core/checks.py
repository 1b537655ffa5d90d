"""What every check returns, whatever the family.

A check is a pure function ``history -> CheckResult``.  It never looks
inside a model; it reads only event fields, so it runs unchanged on a
history recorded from a real system.  When the fields it needs are absent,
it says ``not_evaluable`` rather than passing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

OK = "ok"
VIOLATED = "violated"
NOT_EVALUABLE = "not_evaluable"


@dataclass(frozen=True)
class Violation:
    """One breach of an invariant, pinned to the event that shows it."""

    invariant: str
    event_index: int | None
    step: str | None
    detail: str
    domain: str | None = None
    safety: bool = True

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "invariant": self.invariant,
            "step": self.step,
            "event_index": self.event_index,
            "detail": self.detail,
        }
        if self.domain is not None:
            out["domain"] = self.domain
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
    #: The event names ``feed`` reads (None: every event); the others pass it by, in every use.
    reads: frozenset[str] | None = None

    def run(self, history: Iterable[Any]) -> CheckResult:
        carry, feed, found, reads = self.start, self.feed, [], self.reads
        try:
            for event in history:
                if reads is not None and event.event not in reads:
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
    """

    name: str
    function: Callable[..., CheckResult]
    safety: bool
    summary: str
    requires: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    count_as: str | None = None
    exempt: Mapping[str, Callable[[Any], bool]] = field(default_factory=dict)

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

    def missing(self, history) -> str | None:
        """The first (event, field) the history never records, if the check needs it."""
        seen: dict[str, set[str]] = {}
        for event in history:
            if event.event in self.requires and not event.get("skipped"):  # a skipped event did nothing
                exempt = self.exempt.get(event.event)
                if exempt is not None and exempt(event):
                    continue
                seen.setdefault(event.event, set()).update(event.fields)
        for name, needed in self.requires.items():
            if name in seen:
                for field_name in needed:
                    if field_name not in seen[name]:
                        return f"no '{name}' event records '{field_name}'"
        return None

    def run(self, history) -> CheckResult:
        absent = self.missing(history)
        return CheckResult.not_evaluable(self.name, absent) if absent else self.function(history)


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


def run_checks(specs, history) -> CheckReport:
    """Run every check of ``specs`` over ``history``, in the order given."""
    return CheckReport([spec.run(history) for spec in specs])
