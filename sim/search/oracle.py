"""The one way the search runs an order: replay, check, remember.

Replays are deterministic, so an order's result is cached by its text: the
shrinker and the advisor ask about the same orders again and again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from sim.core.checks import CheckReport
from sim.core.family import Family, Replay
from sim.core.findings import SEPARATOR, findings_of, invariant_of
from sim.core.knobs import Protocol
from sim.search.budget import NO_DEADLINE, Deadline

#: Orders remembered per oracle (a limit: the cache never grows without bound).
CACHE_ENTRIES = 200_000


@dataclass
class Evaluation:
    replay: Replay
    report: CheckReport
    violated: tuple[str, ...]  # safety invariants violated, in check order
    findings: tuple[str, ...] = ()  # the findings (invariant @ where, sim.core.findings) they show, first shown first

    @property
    def valid_order(self) -> tuple[Any, ...]:
        return self.replay.valid_order()


def evaluate(family: Family, scenario: Any, protocol: Protocol, events: Sequence[Any],
             only: Sequence[str] | None = None, explain: bool = True) -> Evaluation:
    """Replay ``events`` and run the family's checks (or only the named ones; ``explain=False``: without the
    facts of other events, for counting)."""
    replay = family.replay(scenario, protocol, events)
    report = family.check(replay.history, only, explain)
    violated = tuple(dict.fromkeys(v.invariant for v in report.safety_violations))
    return Evaluation(replay, report, violated, findings_of(family, scenario, report.safety_violations))


class Oracle:
    """Does an order violate one invariant -- or one finding, ``"invariant @ where"`` -- under one protocol?
    Cached, counted, bounded."""

    def __init__(self, family: Family, scenario: Any, protocol: Protocol, invariant: str, max_replays: int,
                 deadline: Deadline = NO_DEADLINE):
        self.family, self.scenario, self.protocol, self.invariant = family, scenario, protocol, invariant
        self.replays = 0
        self.max_replays = max_replays
        self.deadline = deadline
        self.cache: dict[tuple[str, ...], tuple[Any, ...] | None] = {}
        #: The orders it answered show the target (the valid orders it returned, as text): at most one per replay.
        self.shown: set[tuple[str, ...]] = set()
        self.check_only = (invariant_of(invariant),)
        self.by_finding = SEPARATOR in invariant

    def exhausted(self) -> bool:
        return self.replays >= self.max_replays or self.deadline.expired()

    @property
    def limit_hit(self) -> str:
        """The name of the limit that stopped the oracle."""
        return self.deadline.name if self.deadline.expired() else "replay_limit"

    def __call__(self, events) -> tuple[Any, ...] | None:
        """The valid order if ``events`` still violates the invariant, else None."""
        key = tuple(str(e) for e in events)
        if key in self.cache:
            return self.cache[key]
        self.replays += 1
        out = self._judged(tuple(events))
        if out is not None:
            self.shown.add(tuple(str(e) for e in out))
        if len(self.cache) < CACHE_ENTRIES:
            self.cache[key] = out
        return out

    def _judged(self, events: tuple[Any, ...]) -> tuple[Any, ...] | None:
        result = evaluate(self.family, self.scenario, self.protocol, events, self.check_only, explain=False)
        shows = self.invariant in result.findings if self.by_finding else bool(result.violated)
        if not shows:
            return None
        valid = result.valid_order
        assert _within(valid, events), f"the events that took effect {valid} are not a sub-order of {events}"
        return valid

    def shows(self, events: Sequence[Any]) -> bool:
        """Whether an order shows the target, for a postcondition: known when this oracle answered so, else
        replayed -- neither counted nor cached (a check is no step of the search and changes none of its
        answers)."""
        return tuple(str(e) for e in events) in self.shown or self._judged(tuple(events)) is not None


def _within(events: Sequence[Any], order: Sequence[Any]) -> bool:
    """Whether ``events`` is ``order`` with some events left out (their order kept)."""
    rest = iter(order)
    return all(any(event == other for other in rest) for event in events)
