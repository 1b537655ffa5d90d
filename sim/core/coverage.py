"""Coverage: what a sweep reached, and goals a workload declares it must reach.

A *goal* is one line of a small predicate language over history events::

    EVENT [TERM ...]        EVENT: an event name, or * for any event
    TERM:   field=value      the field's value, written as in a history (true/false, numbers, text)
            field!=value     the field is absent or has another value
            field            the field is present
            !field           the field is absent

``deliver verdict=deduped`` is reached by a run whose history holds a
delivery answered ``deduped``; ``deliver origin=retry preempted=after_write``
by a retried copy delivered while a preemption struck after the write;
``reconciled result=found`` by a reconciliation that found the effect.  A
workload lists its goals in ``[coverage] reach = [...]``; every sweep reports
each goal as reached in N runs, or *never* -- so "no violation in 20,000
seeds" can be told from "never tried".

Besides the goals, a sweep counts every event kind by its verdict (or
outcome, or result) and every reason an event was skipped, and keeps a
*signature* of each run -- its events' names and verdicts in order -- so
the number of distinct behaviours against seeds (the saturation curve)
shows when more seeds stop finding new ones.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from sim.core.errors import ScenarioError
from sim.core.values import JsonObject, shown

#: Goals one workload may declare; kinds and skip reasons counted per protocol (the rest are "other").
GOALS_MAX = 200
KINDS_MAX = 500
#: Registers of the distinct-behaviour sketch: 2**12 (4 KB; about 1.6% standard error, about 1% for small counts).
SKETCH_BITS = 12
#: The fields whose value names an event's kind in the counts (the first one present).
KIND_FIELDS = ("verdict", "outcome", "result")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_:.\-]*$")


@dataclass(frozen=True)
class Term:
    field: str
    op: str  # "=", "!=", "present", "absent"
    value: str | None = None

    def holds(self, fields: dict[str, Any]) -> bool:
        present = self.field in fields
        if self.op == "present":
            return present
        if self.op == "absent":
            return not present
        same = present and _written(fields[self.field]) == self.value
        return same if self.op == "=" else not same


@dataclass(frozen=True)
class Goal:
    """One goal: an event name (or ``*``) and terms that must all hold for one event."""

    text: str
    event: str
    terms: tuple[Term, ...]

    def matches(self, event) -> bool:
        if self.event != "*" and event.event != self.event:
            return False
        return all(term.holds(event.fields) for term in self.terms)

    def reached(self, history: Iterable[Any]) -> bool:
        return any(self.matches(event) for event in history)


def _written(value: Any) -> str:
    """A field's value as a goal writes it (``true``, ``3``, ``rejected:stale_rev``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def parse_goal(text: Any) -> Goal:
    """Parse one goal; raise ScenarioError saying what is allowed."""
    if not isinstance(text, str) or not text.strip():
        raise ScenarioError(f"a coverage goal is a non-empty string such as 'deliver verdict=deduped', "
                            f"not {shown(text)}")
    words = text.split()
    event, terms = words[0], []
    if event != "*" and not _NAME.match(event):
        raise ScenarioError(f"coverage goal {shown(text)}: {shown(event)} is not an event name (or *)")
    for word in words[1:]:
        if "!=" in word:
            name, value = word.split("!=", 1)
            op = "!="
        elif "=" in word:
            name, value = word.split("=", 1)
            op = "="
        elif word.startswith("!"):
            name, value, op = word[1:], None, "absent"
        else:
            name, value, op = word, None, "present"
        if not _NAME.match(name) or (op in ("=", "!=") and not value):
            raise ScenarioError(f"coverage goal {shown(text)}: {shown(word)} is not a term; write field=value, "
                                "field!=value, field or !field")
        terms.append(Term(name, op, value))
    return Goal(" ".join(words), event, tuple(terms))


def parse_coverage(table: Any, source) -> tuple[Goal, ...]:
    """A workload's ``[coverage]`` table: ``reach = [goal, ...]``."""
    if not isinstance(table, dict):
        raise source.error("[coverage] must be a table such as { reach = ['deliver verdict=deduped'] }", "coverage")
    unknown = [k for k in table if k != "reach"]
    if unknown:
        raise source.error(f"unknown key {shown(unknown[0])} in [coverage]; keys: reach", unknown[0])
    reach = table.get("reach", [])
    if not isinstance(reach, list) or len(reach) > GOALS_MAX:
        raise source.error(f"[coverage] reach must be a list of at most {GOALS_MAX} goals", "reach")
    goals = []
    for item in reach:
        try:
            goals.append(parse_goal(item))
        except ScenarioError as error:
            raise source.error(error.message, str(item) if isinstance(item, str) else "reach") from None
    if len({g.text for g in goals}) != len(goals):
        raise source.error("a coverage goal is listed twice in [coverage] reach", "reach")
    return tuple(goals)


def event_kind(event) -> str:
    """``deliver verdict=applied``, ``reconciled result=found``, ``ack skipped``, or the bare name."""
    if event.fields.get("skipped"):
        return f"{event.event} skipped"
    for name in KIND_FIELDS:
        value = event.fields.get(name)
        if value is not None:
            return f"{event.event} {name}={_written(value)}"
    return event.event


def signature(history: Iterable[Any]) -> int:
    """A run's behaviour as a stable 64-bit number: its events' kinds in order (the same in every process)."""
    text = "\n".join(event_kind(e) for e in history)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "backslashreplace"), digest_size=8).digest(), "big")


@dataclass
class Sketch:
    """How many distinct run signatures a sweep has seen, in fixed memory: a HyperLogLog of 2**SKETCH_BITS
    registers (linear counting while few registers are set, within about 1% then).
    Merging two sketches is taking each register's maximum: the count does not depend on the order of
    the runs or the number of workers."""

    registers: list[int] = field(default_factory=lambda: [0] * (1 << SKETCH_BITS))

    def add(self, value: int) -> None:
        index = value >> (64 - SKETCH_BITS)
        rest = (value << SKETCH_BITS) & ((1 << 64) - 1)
        rank = 1 if rest == 0 else 1 + (64 - rest.bit_length())
        rank = min(rank, 64 - SKETCH_BITS + 1)
        if rank > self.registers[index]:
            self.registers[index] = rank

    def merge(self, other: "Sketch") -> None:
        self.registers = [max(a, b) for a, b in zip(self.registers, other.registers, strict=True)]

    def count(self) -> int:
        m = len(self.registers)
        zeros = self.registers.count(0)
        if zeros:
            linear = m * math.log(m / zeros)
            if linear <= 2.5 * m:
                return round(linear)
        alpha = 0.7213 / (1 + 1.079 / m)
        return round(alpha * m * m / sum(2.0 ** -r for r in self.registers))


@dataclass
class Coverage:
    """What the runs of one protocol reached: goals (runs reaching each), event kinds by verdict, skip
    reasons, and a sketch of the distinct behaviours."""

    goals: tuple[Goal, ...] = ()
    reached: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)
    skips: dict[str, int] = field(default_factory=dict)
    sketch: Sketch = field(default_factory=Sketch)

    def __post_init__(self) -> None:
        if isinstance(self.sketch, dict):  # read back from a sweep's saved state
            self.sketch = Sketch(list(self.sketch["registers"]))
        self.goals = tuple(g if isinstance(g, Goal) else parse_goal(g["text"] if isinstance(g, dict) else g)
                           for g in self.goals)
        self.reached = {g.text: self.reached.get(g.text, 0) for g in self.goals}

    def add_run(self, history) -> None:
        events = list(history)
        for goal in self.goals:
            if goal.reached(events):
                self.reached[goal.text] += 1
        kinds, skips = self.kinds, self.skips
        for event in events:
            kind = event_kind(event)
            if kind in kinds or len(kinds) < KINDS_MAX:
                kinds[kind] = kinds.get(kind, 0) + 1
            if event.fields.get("skipped") or event.event == "skipped":
                reason = str(event.fields.get("reason", "?"))
                if reason in skips or len(skips) < KINDS_MAX:
                    skips[reason] = skips.get(reason, 0) + 1
        self.sketch.add(signature(events))

    def merge(self, other: "Coverage") -> None:
        for name, count in other.reached.items():
            self.reached[name] = self.reached.get(name, 0) + count
        for table, more in ((self.kinds, other.kinds), (self.skips, other.skips)):
            for name, count in more.items():
                table[name] = table.get(name, 0) + count
        self.sketch.merge(other.sketch)

    def never(self) -> list[str]:
        return [name for name, count in self.reached.items() if count == 0]

    def to_json(self) -> JsonObject:
        return {"goals": dict(self.reached), "never": self.never(),
                "events": dict(sorted(self.kinds.items())), "skipped": dict(sorted(self.skips.items())),
                "distinct_behaviours": self.sketch.count()}
