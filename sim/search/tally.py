"""What a sweep counts, as data: per-protocol tallies, the first run of each distinct violation, the
summary, and the state an interrupted sweep resumes from.

These are the values the sweep (:mod:`sim.search.sweep`) produces and its options
(:mod:`sim.search.options`) carry (``resume``, ``checkpoint``); they depend on neither, so the two can
import them without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim.core import stats
from sim.core.coverage import Coverage
from sim.core.family import Family
from sim.core.findings import finding_id
from sim.core.ledger import LedgerTally
from sim.core.values import JsonObject
from sim.core.workload import Workload

#: Below this share of work done, a protocol is flagged as doing (almost) nothing.
APPLIES_NOTHING_BELOW = 0.01


@dataclass
class Found:
    """The first run (lowest index) that showed a finding (an invariant, where: :mod:`sim.core.findings`) under
    a protocol."""

    protocol: str
    invariant: str
    run: int
    seed: int
    order: tuple[Any, ...]
    where: str = ""

    @property
    def finding(self) -> str:
        return finding_id(self.invariant, self.where)


@dataclass
class ProtocolTally:
    """Counts over every run of one protocol.  ``by_invariant`` counts violating *runs*."""

    invariants: tuple[str, ...]
    availability: tuple[str, ...]
    runs: int = 0
    violating_runs: int = 0
    by_invariant: dict[str, int] = field(default_factory=dict)
    #: Violating runs per finding (``"invariant @ where"``), for the findings seen.
    by_finding: dict[str, int] = field(default_factory=dict)
    counted: dict[str, int] = field(default_factory=dict)
    measures: dict[str, float] = field(default_factory=dict)
    events: int = 0
    coverage: Coverage = field(default_factory=Coverage)
    ledger: LedgerTally = field(default_factory=LedgerTally)

    def __post_init__(self) -> None:
        self.by_invariant = {n: self.by_invariant.get(n, 0) for n in self.invariants}
        self.counted = {n: self.counted.get(n, 0) for n in self.availability}
        if isinstance(self.coverage, dict):  # read back from a sweep's saved state
            self.coverage = Coverage(**self.coverage)
        if isinstance(self.ledger, dict):
            self.ledger = LedgerTally(**self.ledger)

    def add(self, row: dict[str, Any], measure_names: tuple[str, ...]) -> None:
        self.runs += 1
        self.violating_runs += bool(row["violated"])
        self.events += row["events"]
        for name in self.invariants:
            self.by_invariant[name] += bool(row[f"violations_{name}"])
        for name in row.get("findings", ()):
            self.by_finding[name] = self.by_finding.get(name, 0) + 1
        for name in self.availability:
            self.counted[name] += row[name]
        for name in measure_names:
            self.measures[name] = self.measures.get(name, 0) + row.get(name, 0)

    def merge(self, other: "ProtocolTally") -> None:
        """Add another tally of the same protocol (a chunk's) to this one."""
        self.runs += other.runs
        self.violating_runs += other.violating_runs
        self.events += other.events
        for name, count in other.by_invariant.items():
            self.by_invariant[name] += count
        for name, count in other.by_finding.items():
            self.by_finding[name] = self.by_finding.get(name, 0) + count
        for name, count in other.counted.items():
            self.counted[name] += count
        for name, value in other.measures.items():
            self.measures[name] = self.measures.get(name, 0) + value
        self.coverage.merge(other.coverage)
        self.ledger.runs += other.ledger.runs
        for kind, count in other.ledger.counts.items():
            self.ledger.counts[kind] = self.ledger.counts.get(kind, 0) + count

    def progress(self, family: Family) -> dict[str, Any] | None:
        """Work done against work planned (the family's ``progress`` measures), with its interval; None when
        the family has no such measure."""
        if family.progress is None:
            return None
        done, planned = (int(self.measures.get(name, 0)) for name in family.progress)
        return {"done": done, "planned": planned, "share": stats.share(done, planned).to_json(),
                "what": f"{family.progress[0]} / {family.progress[1]}"}

    def applies_nothing(self, family: Family) -> bool:
        """Whether the protocol did (almost) no work: no safety violation then means nothing."""
        progress = self.progress(family)
        return progress is not None and progress["planned"] > 0 and (
            progress["done"] / progress["planned"] < APPLIES_NOTHING_BELOW)

    def to_json(self) -> JsonObject:
        out: JsonObject = {"runs": self.runs, "violating_runs": self.violating_runs,
                               "violating_runs_by_invariant": dict(self.by_invariant),
                               "violating_runs_by_finding": dict(sorted(self.by_finding.items()))}
        out.update(self.counted)
        out["measures"] = dict(self.measures)
        out["coverage"] = self.coverage.to_json()
        out["blast_radius"] = self.ledger.to_json()
        return out


@dataclass
class SweepSummary:
    """Aggregates of a sweep plus the first order of each distinct violation."""

    family: str
    workload: str
    seed_start: int
    seeds: int
    protocols: list[str]
    tallies: dict[str, ProtocolTally]
    found: dict[tuple[str, str], Found]
    seeds_done: int = 0
    stopped: str | None = None  # the budget's name if it stopped the sweep early
    #: The saturation curve: after each chunk, (seeds run, {protocol: distinct behaviours so far}).
    saturation: list[tuple[int, dict[str, int]]] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return sum(t.runs for t in self.tallies.values())

    @property
    def violating_runs(self) -> int:
        return sum(t.violating_runs for t in self.tallies.values())

    def first(self, protocol: str, invariant: str) -> Found:
        """The first order the sweep kept for ``invariant`` under ``protocol``, whatever the finding (the
        lowest run of its findings); KeyError when it found none."""
        shown = [f for (label, _), f in self.found.items() if label == protocol and f.invariant == invariant]
        if not shown:
            raise KeyError((protocol, invariant))
        return min(shown, key=lambda f: f.run)

    def by_invariant(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for tally in self.tallies.values():
            for name, count in tally.by_invariant.items():
                out[name] = out.get(name, 0) + count
        return out


def new_tally(family: Family, workload: Workload) -> ProtocolTally:
    """An empty tally of one protocol on ``workload``: counting its invariants, availability and coverage goals."""
    return ProtocolTally(family.safety_invariants, family.availability_columns,
                         coverage=Coverage(tuple(workload.coverage)))


@dataclass
class SweepState:
    """Where a sweep is, as plain data: written after every chunk so that an interrupted sweep resumes."""

    next_chunk: int
    seeds_done: int
    tallies: dict[str, dict[str, Any]]
    found: list[dict[str, Any]]
    saturation: list[Any] = field(default_factory=list)
