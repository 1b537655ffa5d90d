"""What the explorer shows, for any family, computed through the family contract only.

A *source* is what the server was started on: a workload (the path starts empty) or a scenario file -- an
exported counterexample, one of a review folder's -- whose own order is offered as the way forward.  A
*view* is one (source, protocol, path): the replay of the path (the same run ``fencesim run`` makes), its
checks, where each violated invariant first broke (the shortest prefix violating it), the events that can
happen next and those that cannot, with the guard's reason, and the state as the family's tables.

Families with a machine (:mod:`sim.core.machine`) answer "can this happen next?" by its guard; the others by
replaying the path with the event added (an event that cannot happen has no effect and is reported skipped).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Sequence

from sim.core.checks import Violation
from sim.core.errors import InputError, ScenarioError
from sim.core.family import Family, Replay, StateTable
from sim.core.history import Event
from sim.core.knobs import Protocol
from sim.core.values import cut
from sim.core.workload import Workload

#: The longest path a URL may name, in events.
MAX_PATH_EVENTS = 500
#: Replays kept per explorer (a page asks for the path's prefixes and the events after it).
REPLAYS_KEPT = 4096


@dataclass
class Source:
    """What a page explores: a family's scenario (the workload's base, or a scenario file) and its alphabet."""

    ident: str
    title: str
    family: Family
    workload: Workload  # its base is the scenario explored
    protocols: tuple[Protocol, ...]  # offered first; any other protocol of the family may be typed in
    events: tuple[Any, ...] = ()  # the order the source opens with, offered as the way forward
    invariant: str | None = None  # what the scenario file says it violates
    file: str | None = None  # the file it came from (shown with the command that replays it)
    description: str = ""

    @property
    def scenario(self) -> Any:
        return self.workload.base


def source_of(ident: str, title: str, family: Family, workload: Workload, scenario: Any,
              protocols: Sequence[Protocol], file: str | None = None) -> Source:
    """A source for a scenario file: its own events are the way forward; the runs replay the scenario itself."""
    base = dataclasses.replace(workload, base=scenario)
    meta = getattr(scenario, "meta", {}) or {}
    return Source(ident, title, family, base, tuple(protocols), tuple(scenario.events or ()),
                  meta.get("invariant"), file, getattr(scenario, "description", "") or "")


@dataclass
class Option:
    """One event of the alphabet at the end of the path: can it happen, and if not, why not."""

    event: Any
    text: str
    reason: str | None  # None: enabled

    @property
    def enabled(self) -> bool:
        return self.reason is None


@dataclass
class Broken:
    """A violated invariant: the path position of the event that broke it, and the finding."""

    violation: Violation
    position: int  # 0-based position in the path of the event after which it first holds
    event: str

    @property
    def invariant(self) -> str:
        return self.violation.invariant


@dataclass
class View:
    """Everything one page shows about (source, protocol, path)."""

    source: Source
    protocol: Protocol
    path: tuple[Any, ...]
    replay: Replay
    broken: list[Broken]
    options: list[Option]
    tables: list[StateTable]
    invariants: tuple[str, ...]
    skipped: dict[int, str] = field(default_factory=dict)  # path position -> why it had no effect

    @property
    def history(self) -> Any:
        return self.replay.history

    @property
    def texts(self) -> list[str]:
        return [str(e) for e in self.path]


class Explorer:
    """The sources a server offers and the replays its pages need (kept, so stepping costs one replay)."""

    def __init__(self, sources: Sequence[Source]):
        if not sources:
            raise InputError("nothing to explore: give --design, --workload, --scenario or --review")
        self.sources: dict[str, Source] = {}
        for source in sources:
            if source.ident in self.sources:
                raise InputError(f"two scenarios are named {source.ident!r}; give each once")
            self.sources[source.ident] = source
        self._replays: OrderedDict[tuple, Replay] = OrderedDict()
        self._alphabets: dict[str, list[Any]] = {}
        self._lock = threading.Lock()  # pages are answered on several threads; the kept replays are shared

    # -- reading a request -------------------------------------------------------------------------------

    def source(self, ident: str | None) -> Source:
        if ident is None:
            return next(iter(self.sources.values()))
        if ident not in self.sources:
            raise InputError(f"unknown scenario {cut(ident, 80)!r}; this server explores: "
                             f"{', '.join(cut(s, 80) for s in self.sources)}")
        return self.sources[ident]

    def protocol(self, source: Source, text: str | None) -> Protocol:
        if text is None or not text.strip():
            return source.protocols[0]
        try:
            return source.family.parse_protocol(text)
        except (InputError, ScenarioError) as error:
            raise InputError(f"protocol {cut(text, 80)!r}: {error}") from None

    def path(self, source: Source, texts: Sequence[str]) -> tuple[Any, ...]:
        if len(texts) > MAX_PATH_EVENTS:
            raise InputError(f"a path holds at most {MAX_PATH_EVENTS} events, not {len(texts)}")
        events = []
        known = {str(e): e for e in self.alphabet(source)}
        for text in texts:
            event = known.get(text)
            if event is None:
                try:
                    event = source.family.parse_event(source.scenario, text)
                except (InputError, ScenarioError) as error:
                    raise InputError(f"event {cut(text, 80)!r}: {error}") from None
            events.append(event)
        return tuple(events)

    # -- what the pages show -----------------------------------------------------------------------------

    def alphabet(self, source: Source) -> list[Any]:
        """The workload's events, then the source's own that the alphabet lacks (by their text)."""
        with self._lock:
            if source.ident not in self._alphabets:
                own_only = source.workload.extra.get("events_only")  # a script no workload holds: its own events
                events = [] if own_only else list(source.family.alphabet(source.workload))
                seen = {str(e) for e in events}
                for event in source.events:
                    if str(event) not in seen:
                        seen.add(str(event))
                        events.append(event)
                self._alphabets[source.ident] = events
            return self._alphabets[source.ident]

    def replay(self, source: Source, protocol: Protocol, path: Sequence[Any]) -> Replay:
        key = (source.ident, protocol, tuple(str(e) for e in path))
        with self._lock:
            found = self._replays.get(key)
            if found is not None:
                self._replays.move_to_end(key)
                return found
        replay = source.family.replay(source.scenario, protocol, tuple(path))
        with self._lock:
            self._replays[key] = replay
            if len(self._replays) > REPLAYS_KEPT:
                self._replays.popitem(last=False)
        return replay

    def view(self, source: Source, protocol: Protocol, path: Sequence[Any]) -> View:
        family, path = source.family, tuple(path)
        replay = self.replay(source, protocol, path)
        report = family.check(replay.history)
        broken = [self._broken(source, protocol, path, v) for v in _first_per_invariant(report.safety_violations)]
        skipped = {i: self._reason(source, protocol, path[:i], path[i]) or "it had no effect here"
                   for i in sorted(replay.skipped)}
        return View(source, protocol, path, replay, broken, self.options(source, protocol, path),
                    family.state_tables(source.scenario, protocol, replay), family.safety_invariants, skipped)

    def options(self, source: Source, protocol: Protocol, path: tuple[Any, ...]) -> list[Option]:
        """Every event of the alphabet at the end of the path, enabled or with the reason it cannot happen."""
        family, events = source.family, self.alphabet(source)
        machine = family.machine(source.scenario, protocol)
        if machine is not None:
            state = machine.state_after(path)
            on = set(machine.enabled(state, events))  # the family may enumerate them from the state
            return [Option(e, str(e), None if i in on else machine.why_not(state, e) or "not enabled here")
                    for i, e in enumerate(events)]
        return [Option(e, str(e), self._reason(source, protocol, path, e)) for e in events]

    def _reason(self, source: Source, protocol: Protocol, before: tuple[Any, ...], event: Any) -> str | None:
        """Why ``event`` has no effect after ``before`` (None: it has one), as the family records it."""
        machine = source.family.machine(source.scenario, protocol)
        if machine is not None:
            return machine.why_not(machine.state_after(before), event)
        replay = self.replay(source, protocol, before + (event,))
        if not replay.last_skipped:
            return None
        return _skip_reason(replay.history, str(event)) or "it has no effect at this point of the run under this " \
            "protocol (the family records no reason)"

    def _broken(self, source: Source, protocol: Protocol, path: tuple[Any, ...], violation: Violation) -> Broken:
        """The shortest prefix of the path whose run violates the invariant: its last event broke it."""
        for length in range(len(path) + 1):
            report = source.family.check(self.replay(source, protocol, path[:length]).history,
                                         only=[violation.invariant])
            if report.safety_violations:
                return Broken(report.safety_violations[0], length - 1, str(path[length - 1]) if length else "")
        return Broken(violation, len(path) - 1, str(path[-1]) if path else "")


def _first_per_invariant(violations: Sequence[Violation]) -> list[Violation]:
    first: dict[str, Violation] = {}
    for violation in violations:
        first.setdefault(violation.invariant, violation)
    return list(first.values())


def _skip_reason(history: Any, text: str) -> str | None:
    """The reason a history records for skipping the event written ``text`` (its last such record)."""
    reason = None
    for event in history:
        if (event.event == "skipped" and event.get("line") == text) or \
                (event.get("skipped") and event.get("action") == text):
            reason = event.get("reason")
    return None if reason is None else str(reason)


def lanes_of(family: Family, history: Any) -> tuple[list[str], list[Event]]:
    """The timeline's columns and events, as the report's swimlanes show them (no skipped or script records)."""
    shown = [e for e in history if not e.get("skipped") and e.actor != "script" and e.event != "skipped"]
    lanes = [a for a in family.lanes if any(e.actor == a for e in shown)]
    lanes += sorted({e.actor for e in shown} - set(lanes))
    return lanes, shown


@dataclass
class Divergence:
    """The same path under two protocols: their records side by side, and the first that differs."""

    left: View
    right: View
    rows: list[tuple[str, str]]  # per record index: (left cell, right cell)
    first: int | None  # index of the first differing row (None: the runs agree)


def diverge(explorer: Explorer, source: Source, left: Protocol, right: Protocol, path: Sequence[Any]) -> Divergence:
    a, b = explorer.view(source, left, path), explorer.view(source, right, path)
    family = source.family

    def cells(view: View) -> list[str]:
        return [f"{e.actor}: " + (f"skipped {e.get('action', e.get('line', e.event))} ({e.get('reason', '')})"
                                  if e.get("skipped") or e.event == "skipped" else family.describe(e))
                for e in view.history]

    left_cells, right_cells = cells(a), cells(b)
    length = max(len(left_cells), len(right_cells))
    rows = [(left_cells[i] if i < len(left_cells) else "", right_cells[i] if i < len(right_cells) else "")
            for i in range(length)]
    first = next((i for i, (x, y) in enumerate(rows) if x != y), None)
    return Divergence(a, b, rows, first)
