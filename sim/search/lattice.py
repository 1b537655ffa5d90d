"""The design-space map: every combination of a family's mechanisms on one workload, classified.

A *lattice* is the product of the values of the chosen knobs (the others at
their defaults).  Every protocol in it is explored exhaustively to a bound
and classified, per safety invariant and as a whole:

* *proved safe within N events* -- the search completed and found no order
  of up to N events that violates it;
* *violated* -- with the shortest length and the first violating order the
  search found (a replayable witness);
* *not decided* -- a budget or the state limit stopped the search first
  (said so, never counted as safe).

From the classification the map derives:

* the **minimal safe designs**: safe protocols none of whose weakenings
  (a knob moved to a value of lower rank, the others unchanged) is safe;
* the **Pareto front** of safety against cost over every protocol -- share of
  violating runs, availability findings per run (spurious rejections, human
  exceptions), share of work done -- each measured by a seed sweep;
* a **certificate** per invariant: the condition over knob values under which
  the invariant is proved absent, as a small disjunction of products of
  value sets, exact on the lattice (every protocol it admits was proved safe,
  every one it excludes was shown violated or is named undecided), each
  clause backed by a protocol proved safe and each excluded corner by a
  witness order;
* **monotonicity findings**: a protocol proved safe whose strengthening (one
  knob to a higher rank) violates.  Nothing is pruned by monotonicity: every
  protocol of the lattice is explored, and such a pair is reported as a
  finding.

The map sees a family only through its contract (knob table, exhaustive
search, sweep), like every search.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.knobs import Knob, Protocol
from sim.core.stats import share as share_interval
from sim.core.values import JsonObject
from sim.core.workload import Workload
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.exhaustive import ExhaustiveResult, ExploreOptions, explore
from sim.search.map_document import (
    SAFE,
    UNDECIDED,
    VIOLATED,
    Excluded,
    MapCertificate,
    MapClause,
    MapDocument,
    MapPoint,
    MapVerdict,
    MonotonicityFinding,
    NearestUnsafe,
    Shown,
)
from sim.search.sweep import sweep
from sim.search.tally import APPLIES_NOTHING_BELOW

#: Protocols one map may classify (a larger lattice is refused: name fewer knobs with --knobs).
LATTICE_PROTOCOLS_MAX = 512
#: The deepest bound a map searches each protocol to (a map searches hundreds of protocols; ``fencesim explore``
#: takes deeper bounds, one protocol at a time).
MAP_DEPTH_MAX = 12
#: Seeds per protocol of the cost sweep, by default.
COST_SEEDS_DEFAULT = 300
#: Distinct states exhaustive search may keep in all, per protocol of a map.
MAP_STATES_MAX = 200_000


@dataclass
class Point:
    """One protocol of the lattice: its knob values, classification and costs."""

    protocol: Protocol
    values: dict[str, Any]
    search: ExhaustiveResult
    runs: int = 0
    violating_runs: int = 0
    availability: dict[str, float] = field(default_factory=dict)  # findings per run, per column
    progress: float | None = None

    def status(self, invariant: str | None = None) -> str:
        """safe / violated / not decided, for one invariant or for every safety invariant together."""
        names = [invariant] if invariant else list(self.search.invariants)
        if any(name in self.search.minimal_orders for name in names):
            return VIOLATED
        return SAFE if self.search.complete else UNDECIDED

    def signature(self) -> tuple:
        """What two points must share to behave alike: the classification first (a group never mixes decided
        and undecided designs), then the search's states and shortest violations, then the costs.  A point
        the search did not decide is alike to nothing: what it would show is not known (a budget that stopped
        the map before its search leaves every such point with the same empty search)."""
        if self.status() == UNDECIDED:
            return (UNDECIDED, self.protocol.label)
        search = self.search.to_json()
        search.pop("protocol")
        return (self.status(), repr(sorted(search.items())), self.runs, self.violating_runs,
                tuple(sorted(self.availability.items())), self.progress)

    def witness(self, invariant: str) -> list[str] | None:
        orders = self.search.minimal_orders.get(invariant)
        return [str(e) for e in orders[0]] if orders else None

    @property
    def applies_nothing(self) -> bool:
        """Measured and (almost) no work done: safe only because nothing happens (never a design to choose)."""
        return self.progress is not None and self.progress < APPLIES_NOTHING_BELOW

    def cost(self) -> tuple[float, ...]:
        """What the Pareto front minimises: violating share, findings per run, work not done."""
        share = self.violating_runs / self.runs if self.runs else 0.0
        return (share, sum(self.availability.values()), 1.0 - (self.progress if self.progress is not None else 1.0))

    def document(self, same_as: str) -> MapPoint:
        """The point as the map's document shows it (``same_as``: the design whose row stands for it)."""
        verdicts = {name: MapVerdict(status=self.status(name), shortest_events=self.search.shortest.get(name),
                                     witness=_texts(self.witness(name)))
                    for name in self.search.invariants}
        return MapPoint(protocol=self.protocol.label, knobs={k: _shown(v) for k, v in self.values.items()},
                        status=self.status(), end=self.search.reason, max_events=self.search.max_events,
                        distinct_states=self.search.distinct_states, invariants=verdicts, runs=self.runs,
                        violating_runs=self.violating_runs,
                        violating_share=share_interval(self.violating_runs, self.runs).rounded() if self.runs else None,
                        availability_per_run=dict(self.availability), progress_share=self.progress,
                        applies_nothing=self.applies_nothing, same_as=same_as)


@dataclass
class Clause:
    """One product of value sets, ``knob in {values}`` for the knobs it constrains."""

    sets: dict[str, tuple[Any, ...]]
    example: str  # a protocol it admits, proved safe

    def words(self, knobs: Sequence[Knob]) -> str:
        parts = []
        for knob in knobs:
            values = self.sets.get(knob.name)
            if values is None:
                continue
            others = [v for v in knob.candidates() if v not in values]
            if len(values) == 1:
                parts.append(f"{knob.name}={_shown(values[0])}")
            elif len(others) == 1:
                parts.append(f"{knob.name} is not {_shown(others[0])}")
            else:
                parts.append(f"{knob.name} in {{{', '.join(str(_shown(v)) for v in values)}}}")
        return " and ".join(parts) or "any design"

    def document(self, knobs: Sequence[Knob]) -> MapClause:
        return MapClause(condition=self.words(knobs), knobs={k: tuple(_shown(v) for v in vs)
                                                             for k, vs in self.sets.items()},
                         proved_safe_example=self.example)


@dataclass
class Certificate:
    """When one invariant is proved absent on the lattice, in words, with witnesses."""

    invariant: str
    clauses: list[Clause]
    excluded: list[Excluded]  # violated protocols at the boundary, each with its witness order
    undecided: list[str]

    def words(self, workload: str, max_events: int, knobs: Sequence[Knob], held: Mapping[str, str] | None = None
              ) -> str:
        if not self.clauses:
            condition = "no design of this lattice"
        else:
            condition = " or ".join(f"({c.words(knobs)})" if len(self.clauses) > 1 else c.words(knobs)
                                    for c in self.clauses)
        # an "iff" over the decided designs only would read as a verdict on the rest
        among = " among the designs the search decided," if self.undecided else ""
        text = f"on {workload}, within {max_events} events,{among} no {self.invariant} iff {condition}"
        if held:
            text += " -- with " + ", ".join(f"{k}={v}" for k, v in held.items()) + " held fixed"
        if self.undecided:
            text += f" (not decided: {', '.join(self.undecided)})"
        return text


@dataclass
class DesignMap:
    family: Family
    workload: Workload
    knobs: list[Knob]
    max_events: int
    points: list[Point]
    stopped: str | None = None
    #: The knobs the map did not vary and the values they were held at (the base protocol's).
    held: dict[str, str] = field(default_factory=dict)
    base: str | None = None
    _groups: list[list[Point]] | None = field(default=None, repr=False)

    @property
    def invariants(self) -> tuple[str, ...]:
        return self.family.safety_invariants

    def groups(self) -> list[list[Point]]:
        """Points that behave alike -- the same classification, states, shortest violations and costs -- in
        lattice order, the one with the shortest label first (a knob that does not matter where it is set,
        such as ``stamp_at`` beside ``fence=plan``, makes such groups).  A group never mixes decided and
        undecided designs, and a design not decided is a group of its own (:meth:`Point.signature`)."""
        if self._groups is None:
            grouped: dict[Any, list[Point]] = {}
            for point in self.points:
                grouped.setdefault(point.signature(), []).append(point)
            order = {id(p): i for i, p in enumerate(self.points)}
            self._groups = [sorted(g, key=lambda p: (len(p.protocol.label.split(",")), order[id(p)]))
                            for g in grouped.values()]
        return self._groups

    def representative(self, point: Point) -> Point:
        return next(g[0] for g in self.groups() if any(p is point for p in g))

    def minimal_safe(self) -> list[Point]:
        """Safe groups (by representative) none of whose members' one-knob weakenings leads to another safe
        group."""
        out = []
        for group in self.groups():
            if group[0].status() != SAFE or group[0].applies_nothing:
                continue
            weaker = [q for p in group for q in self.weakenings(p) if q not in group]
            if not any(q.status() == SAFE for q in weaker):
                out.append(group[0])
        return out

    def nearest_unsafe(self, point: Point) -> list[NearestUnsafe]:
        """The designs one knob away from ``point`` (that knob moved to another value, the others held) that
        violate safety, each with the invariant it breaks and its shortest witness order; in knob order, then
        value rank.  Empty when every such neighbour is safe, undecided or outside the map."""
        out = []
        for knob in self.knobs:
            others = [q for q in self.points if q.values[knob.name] != point.values[knob.name]
                      and all(q.values[k.name] == point.values[k.name] for k in self.knobs if k is not knob)]
            for q in sorted(others, key=lambda q: knob.rank(q.values[knob.name])):
                broken = [n for n in self.invariants if q.status(n) == VIOLATED]
                if not broken:
                    continue
                name = min(broken, key=lambda n: (q.search.shortest[n], self.invariants.index(n)))
                witness = q.witness(name) or []
                out.append(NearestUnsafe(knob=knob.name, before=_shown(point.values[knob.name]),
                                         to=_shown(q.values[knob.name]), protocol=q.protocol.label, invariant=name,
                                         witness=tuple(witness), shortest_events=len(witness)))
        return out

    def weakenings(self, point: Point) -> list[Point]:
        return [q for q in self.points if self._one_step(q, point)]

    def _one_step(self, weaker: Point, stronger: Point) -> bool:
        """``weaker`` differs from ``stronger`` in one knob, set to a value of lower rank."""
        diff = [k for k in self.knobs if weaker.values[k.name] != stronger.values[k.name]]
        if len(diff) != 1:
            return False
        knob = diff[0]
        return knob.rank(weaker.values[knob.name]) < knob.rank(stronger.values[knob.name])

    def pareto(self) -> list[Point]:
        """Among the groups proved safe that do work (by representative): those no other such group beats on
        every cost (violating share, findings per run, work not done).  A design that violates safety, or is
        safe only because it applies nothing, is never on the front, however cheap: it is drawn apart."""
        costs = [(g[0], g[0].cost()) for g in self.groups() if g[0].status() == SAFE and not g[0].applies_nothing]
        return [p for p, c in costs
                if not any(all(o <= m for o, m in zip(d, c, strict=True)) and d != c for _, d in costs)]

    def monotonicity_findings(self) -> list[MonotonicityFinding]:
        """Safe protocols whose one-knob strengthening violates an invariant (a stronger value that breaks
        safety: reported, never pruned away)."""
        found = []
        for weaker in self.points:
            for stronger in self.points:
                if not self._one_step(weaker, stronger):
                    continue
                for name in self.invariants:
                    if weaker.status(name) == SAFE and stronger.status(name) == VIOLATED:
                        found.append(MonotonicityFinding(invariant=name, safe=weaker.protocol.label,
                                                         stronger_violates=stronger.protocol.label,
                                                         witness=_texts(stronger.witness(name))))
        return found

    def certificates(self) -> list[Certificate]:
        return [self.certificate(name) for name in self.invariants]

    def certificate(self, invariant: str) -> Certificate:
        status = {self._coordinates(p): (p, p.status(invariant)) for p in self.points}
        safe = {c for c, (_, s) in status.items() if s == SAFE}
        chosen = _cover(safe, [k.candidates() for k in self.knobs])
        clauses = []
        for box in chosen:
            example = next(status[c][0].protocol.label for c in itertools.product(*box))
            sets = {k.name: tuple(values) for k, values in zip(self.knobs, box, strict=True)
                    if len(values) < len(k.candidates())}
            clauses.append(Clause(sets, example))
        violated = [p for p in self.points if p.status(invariant) == VIOLATED]
        boundary = [p for p in violated if not any(q.status(invariant) == VIOLATED and self._one_step(p, q)
                                                   for q in self.points)]
        excluded = [Excluded(protocol=p.protocol.label, shortest_events=p.search.shortest[invariant],
                             witness=_texts(p.witness(invariant))) for p in boundary]
        undecided = [p.protocol.label for p in self.points if p.status(invariant) == UNDECIDED]
        return Certificate(invariant, clauses, excluded, undecided)

    def _coordinates(self, point: Point) -> tuple[Any, ...]:
        return tuple(point.values[k.name] for k in self.knobs)

    def document(self) -> MapDocument:
        """The map as a document (:mod:`sim.search.map_document`)."""
        groups = self.groups()
        return MapDocument(
            family=self.family.name, workload=self.workload.name, max_events=self.max_events,
            knobs=tuple(k.name for k in self.knobs), base=self.base, held=dict(self.held),
            protocols=tuple(p.document(self.representative(p).protocol.label) for p in self.points),
            minimal_safe=tuple(p.protocol.label for p in self.minimal_safe()),
            nearest_unsafe={p.protocol.label: tuple(self.nearest_unsafe(p)) for p in self.minimal_safe()},
            pareto_front=tuple(p.protocol.label for p in self.pareto()),
            unsafe_apart=tuple(g[0].protocol.label for g in groups if g[0].status() != SAFE),
            violated_apart=tuple(g[0].protocol.label for g in groups if g[0].status() == VIOLATED),
            not_decided=tuple(g[0].protocol.label for g in groups if g[0].status() == UNDECIDED),
            applies_nothing=tuple(g[0].protocol.label for g in groups if g[0].applies_nothing),
            certificates=tuple(MapCertificate(invariant=c.invariant,
                                              words=c.words(self.workload.name, self.max_events, self.knobs,
                                                            self.held),
                                              clauses=tuple(cl.document(self.knobs) for cl in c.clauses),
                                              excluded=tuple(c.excluded), undecided=tuple(c.undecided))
                               for c in self.certificates()),
            monotonicity_findings=tuple(self.monotonicity_findings()), pruned=0, stopped=self.stopped)

    def to_json(self) -> JsonObject:
        """``fencesim map --json``: :meth:`document` written."""
        return self.document().to_json()


def _shown(value: Any) -> Shown:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _texts(events: list[str] | None) -> tuple[str, ...] | None:
    return None if events is None else tuple(events)


Box = tuple[tuple[Any, ...], ...]


def _cover(safe: set[tuple[Any, ...]], values: list[tuple[Any, ...]]) -> list[Box]:
    """A small set of boxes (one value set per knob, every cell of the product safe) covering every safe cell:
    each safe cell grown to a maximal box (one value at a time, in table order), then a greedy cover."""
    def grow(cell: tuple[Any, ...]) -> Box:
        box = [[v] for v in cell]
        grown = True
        while grown:
            grown = False
            for i, candidates in enumerate(values):
                for value in candidates:
                    if value in box[i]:
                        continue
                    trial = [list(b) for b in box]
                    trial[i] = [v for v in candidates if v in box[i] or v == value]
                    if all(c in safe for c in itertools.product(*trial)):
                        box, grown = trial, True
        return tuple(tuple(b) for b in box)

    boxes = list(dict.fromkeys(grow(cell) for cell in sorted(safe, key=repr)))
    cells = {box: set(itertools.product(*box)) for box in boxes}
    left, chosen = set(safe), []
    while left:
        best = max(boxes, key=lambda b: (len(cells[b] & left), -sum(len(v) for v in b)))
        chosen.append(best)
        left -= cells[best]
    return sorted(chosen, key=lambda b: [[values[i].index(v) for v in vs] for i, vs in enumerate(b)])


def lattice(family: Family, knob_names: Sequence[str] | None = None, base: Protocol | None = None
            ) -> tuple[list[Knob], list[Protocol]]:
    """The chosen knobs (default: every knob of the family) and every protocol of their product, the other
    knobs at ``base``'s values (default: their defaults)."""
    table = family.knobs
    names = list(knob_names) if knob_names else list(table.names())
    knobs = []
    for name in names:
        knob = table.knob(name)
        if knob in knobs:
            raise InputError(f"--knobs names {name!r} twice")
        if not knob.candidates():
            raise InputError(f"knob {name!r} has no values to walk")
        knobs.append(knob)
    size = 1
    for knob in knobs:
        size *= len(knob.candidates())
    if size > LATTICE_PROTOCOLS_MAX:
        raise InputError(f"the lattice of {', '.join(k.name for k in knobs)} has {size:,} protocols; a map "
                         f"classifies at most {LATTICE_PROTOCOLS_MAX} (name fewer knobs with --knobs)")
    fixed = {} if base is None else {k.name: base.knobs[k.name] for k in table.knobs if k not in knobs}
    protocols = [table.build({**fixed, **{k.name: v for k, v in zip(knobs, values, strict=True)}})
                 for values in itertools.product(*(k.candidates() for k in knobs))]
    return knobs, protocols


def held_knobs(family: Family, knobs: Sequence[Knob], base: Protocol | None) -> dict[str, str]:
    """The knobs a map does not vary, each at the value it was held at (shown as its table shows it)."""
    return {k.name: k.show(base.knobs[k.name] if base is not None else k.default)
            for k in family.knobs.knobs if k not in knobs}


def design_map(family: Family, workload: Workload, knob_names: Sequence[str] | None, max_events: int,
               seeds: int = COST_SEEDS_DEFAULT, workers: int = 1, deadline: Deadline = NO_DEADLINE,
               max_states: int = MAP_STATES_MAX,
               progress: Callable[[int, int, str], None] | None = None, base: Protocol | None = None) -> DesignMap:
    """Classify every protocol of the lattice (see the module docstring); ``progress(done, total, label)``;
    ``base``: the design under review, whose values the knobs not walked keep."""
    knobs, protocols = lattice(family, knob_names, base)
    points: list[Point] = []
    stopped = None
    options = ExploreOptions(max_events=max_events, max_states=max_states, deadline=deadline, workers=workers)
    for done, protocol in enumerate(protocols):
        if progress is not None:
            progress(done, len(protocols), protocol.label)
        search = explore(family, workload, protocol, options)
        point = Point(protocol, {k.name: protocol.knobs[k.name] for k in knobs}, search)
        if seeds and not deadline.expired():
            _measure(family, workload, point, seeds, workers, deadline)
        points.append(point)
        if deadline.expired():
            stopped = deadline.name
    if progress is not None:
        progress(len(protocols), len(protocols), "")
    return DesignMap(family=family, workload=workload, knobs=knobs, max_events=max_events, points=points,
                     stopped=stopped, held=held_knobs(family, knobs, base), base=None if base is None else base.label)


def _measure(family: Family, workload: Workload, point: Point, seeds: int, workers: int, deadline: Deadline) -> None:
    summary, _ = sweep(family, workload, [point.protocol], seeds, workers=workers, deadline=deadline)
    tally = summary.tallies[point.protocol.label]
    point.runs, point.violating_runs = tally.runs, tally.violating_runs
    point.availability = {name: count / tally.runs for name, count in tally.counted.items()} if tally.runs else {}
    point.progress = family.progress_share(tally.measures)
