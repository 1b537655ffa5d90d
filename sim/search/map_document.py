"""The design map as a document: what ``fencesim map --json`` prints, ``map.json`` holds and a review shows.

:meth:`sim.search.lattice.DesignMap.document` builds it; the report reads it (the map's sentences and table,
its figure, the review's contradictions) and ``to_json()`` writes it.  Keys older maps lack (``held``,
``nearest_unsafe``, ``violated_apart``, ``not_decided``) are optional: a map read back without them is
shown as before, its undecided designs told apart from the violated ones by their status.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sim.core.records import Record, json_field, optional
from sim.core.stats import Share
from sim.core.values import JsonScalar

#: A knob's value as the map shows it (an integral number as an integer).
Shown = JsonScalar

SAFE = "safe"
VIOLATED = "violated"
UNDECIDED = "not decided"


@dataclass(frozen=True, slots=True, kw_only=True)
class MapVerdict(Record):
    """One invariant under one design: ``safe``, ``violated`` (its shortest length and witness order) or
    ``not decided``."""

    status: str
    shortest_events: int | None = optional()
    witness: tuple[str, ...] | None = optional(with_="shortest_events")


@dataclass(frozen=True, slots=True, kw_only=True)
class MapPoint(Record):
    """One design of the lattice: its knob values, its verdict within the bound and what ended its search,
    each invariant's verdict, its measured costs (none when no run measured it) and the design whose row of
    the map's table stands for it (``same_as``: itself, or the first of a group that behaves alike)."""

    protocol: str
    knobs: dict[str, Shown] = field(default_factory=dict)
    status: str
    end: str | None = None
    max_events: int | None = None
    distinct_states: int | None = None
    invariants: dict[str, MapVerdict] = field(default_factory=dict)
    runs: int = 0
    violating_runs: int = 0
    violating_share: Share | None = None
    availability_per_run: dict[str, float] = field(default_factory=dict)
    progress_share: float | None = None
    applies_nothing: bool = False
    same_as: str = ""

    @property
    def representative(self) -> str:
        """The design whose row stands for this one (itself when a partial document names none)."""
        return self.same_as or self.protocol


@dataclass(frozen=True, slots=True, kw_only=True)
class NearestUnsafe(Record):
    """"What if we drop this?": one knob of a minimal safe design moved, and the invariant that breaks."""

    knob: str
    before: Shown = json_field("from")
    to: Shown
    protocol: str
    invariant: str
    witness: tuple[str, ...]
    shortest_events: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MapClause(Record):
    """One product of value sets of a certificate, in words, with a design it admits that was proved safe."""

    condition: str
    knobs: dict[str, tuple[Shown, ...]]
    proved_safe_example: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Excluded(Record):
    """A violated design at a certificate's boundary, with its witness."""

    protocol: str
    shortest_events: int
    witness: tuple[str, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MapCertificate(Record):
    """When one invariant is proved absent on the lattice, in words and as clauses."""

    invariant: str
    words: str
    clauses: tuple[MapClause, ...] = ()
    excluded: tuple[Excluded, ...] = ()
    undecided: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class MonotonicityFinding(Record):
    """A design proved safe for an invariant whose one-knob strengthening violates it."""

    invariant: str
    safe: str
    stronger_violates: str
    witness: tuple[str, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MapDocument(Record):
    """The whole map (see the module docstring)."""

    family: str = ""
    workload: str = ""
    max_events: int | None = None
    knobs: tuple[str, ...] = ()
    base: str | None = None
    held: dict[str, str] | None = optional()
    protocols: tuple[MapPoint, ...] = ()
    minimal_safe: tuple[str, ...] = ()
    nearest_unsafe: dict[str, tuple[NearestUnsafe, ...]] | None = optional()
    pareto_front: tuple[str, ...] = ()
    unsafe_apart: tuple[str, ...] = ()
    violated_apart: tuple[str, ...] | None = optional()
    not_decided: tuple[str, ...] | None = optional()
    applies_nothing: tuple[str, ...] = ()
    certificates: tuple[MapCertificate, ...] = ()
    monotonicity_findings: tuple[MonotonicityFinding, ...] = ()
    pruned: int = 0
    stopped: str | None = None

    def point(self, label: str) -> MapPoint | None:
        return next((p for p in self.protocols if p.protocol == label), None)
