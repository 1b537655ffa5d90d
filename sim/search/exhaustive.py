"""Exhaustive search of a family's states, breadth first, for any family -- TLC's semantics.

One visited set over the whole search (:mod:`sim.search.visited`): a state
is found once, at the first depth it can be reached, and expanded once, at
that depth.  A *state* here is what the search merges on: the family's state
key (:meth:`~sim.core.family.Model.state_key`, the machine's key) with the
set of invariants already violated on the way to it -- sound because what
can happen next, and whether it violates an invariant, depends only on that
(the law suite's ``equal_keys_equal_futures`` checks it).  Breadth first, so
the first depth at which an invariant is violated is its shortest length,
and every violating order of that length is returned (one per state it was
reached from).  What a result counts, as TLC does (``docs/formats.md``):

* ``distinct_states`` -- states found, the initial state included;
* ``states_generated`` -- successors computed (each event taken in each
  state expanded), plus the initial state;
* ``states_per_depth`` -- new states found at each depth, from depth 0;
* ``diameter`` -- the deepest depth at which a new state was found;
* ``exhausted`` -- a depth found nothing new: every reachable state was
  seen, and an invariant not violated is absent at every length.

A search runs to ``max_events`` (None: until exhausted), bounded by a state
limit, a memory limit and a deadline; whatever stops it says so, and then
it proves nothing.

What it leaves out without changing what it proves (:mod:`sim.search.reduction`):
events asleep -- independent by the footprints the family declares, their
order tried elsewhere -- every state still reached at its shortest depth
(``pruned_commuting`` counts the events not tried).  Asked for, it keeps one
state per orbit of the workload's interchangeable parts (``symmetry``;
``distinct_states`` then counts orbits), or follows persistent sets only
(``reduce``: fewer states; a violation's shortest length is then measured
by an unreduced search bounded by the length found, and absence is proved
only when the reduced search exhausted the states).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.findings import invariant_of
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.expansion import Expansion, Successor
from sim.search.fused import expand_fused
from sim.search.layers import ENCODE_MARK_MAX, MEMORY_CHECK_EVERY, Layer, physical_bytes, resident_bytes
from sim.search.pool import Expander
from sim.search.reduction import bits
from sim.search.visited import Visited, check_counts, collision_probability

#: Limits: distinct states (in all, the initial one included) by default and at most, the deepest bound
#: accepted, and the share of the machine's memory a search may use by default (it spills its layer to disk
#: at half of that).
MAX_STATES_DEFAULT = 10_000_000
STATE_LIMIT_MAX = 1_000_000_000
EXHAUSTIVE_DEPTH_MAX = 10_000
MEMORY_SHARE_DEFAULT = 0.75
#: Seconds between two progress calls within one depth (a depth of a large search takes minutes).
PROGRESS_EVERY_S = 5.0


@dataclass
class ExhaustiveResult:
    protocol: str
    max_events: int | None  # None: until exhausted
    invariants: tuple[str, ...]
    distinct_states: int = 0
    states_generated: int = 0
    violating_states: int = 0  # of distinct_states, those that show a violation (counted with them, as TLC does)
    states_per_depth: list[int] = field(default_factory=list)
    pruned: int = 0  # events not tried because they were asleep (their order was tried elsewhere)
    complete: bool = True
    reason: str = "bound_reached"
    shortest: dict[str, int] = field(default_factory=dict)
    minimal_orders: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    symmetry: str | None = None  # the interchangeable parts when states were merged per orbit
    reduced: bool = False  # persistent sets only (the shortest lengths measured again, unreduced)
    fingerprints: bool = True
    proved_within: int | None = None  # the depth within which absence is proved (None: every depth)

    @property
    def violated(self) -> bool:
        return bool(self.minimal_orders)

    @property
    def diameter(self) -> int:
        return max((d for d, n in enumerate(self.states_per_depth) if n), default=0)

    @property
    def exhausted(self) -> bool:
        return self.reason == "exhausted"

    @property
    def proved_absent(self) -> list[str]:
        if not self.complete or self.proved_within == 0:
            return []
        return [name for name in self.invariants if name not in self.minimal_orders]

    @property
    def collision_probability(self) -> float:
        return collision_probability(self.distinct_states, self.states_generated) if self.fingerprints else 0.0

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "protocol": self.protocol, "max_events": self.max_events if self.max_events is not None else "max",
            "distinct_states": self.distinct_states, "violating_states": self.violating_states,
            "states_generated": self.states_generated,
            "states_per_depth": list(self.states_per_depth), "diameter": self.diameter,
            "exhausted": self.exhausted, "pruned_commuting": self.pruned, "complete": self.complete,
            "end": self.reason, "proved_absent": self.proved_absent,
            "proved_within_events": (self.proved_within if self.proved_within is not None else "all")
            if self.complete else 0,
            "collision_probability": float(f"{self.collision_probability:.3g}"),
            "violations": {
                name: {"shortest_events": self.shortest[name],
                       "orders": [[str(a) for a in order] for order in orders]}
                for name, orders in self.minimal_orders.items()
            },
        }
        if self.symmetry is not None:  # present only when asked for
            out["symmetry"] = self.symmetry
        if self.reduced:
            out["reduced"] = "persistent sets"
        return out


@dataclass(frozen=True, kw_only=True)
class ExploreOptions:
    """How far and how one exhaustive search runs, checked once, when made (immutable: :meth:`replace` derives
    one).  The command line, certify, the map and the explorer each build one and hand it to :func:`explore`.

    ``max_events``: the longest order searched (None: until exhausted).  ``max_states``: distinct states in all,
    the initial one included.  ``only`` stops after the first depth where that invariant is violated (the
    shrinker proves a counterexample shortest so).  ``alphabet`` restricts the events tried (None: the
    workload's): every order found is still a valid order of the workload, but absence is then proved only for
    that sub-alphabet.  ``prefix`` starts the search in the state after those events (an event of it that
    cannot happen has no effect): depths, shortest lengths and the orders returned count the events after it.
    ``deadline`` bounds the search.  ``workers`` processes expand each layer where every successor is a replay
    (a family with a machine is explored in this process: see :class:`sim.search.pool.Expander`); the result is
    the same for any count.  ``memory_limit``: bytes of resident memory (None: :data:`MEMORY_SHARE_DEFAULT` of
    the machine's).  ``accelerate=False`` replays every successor from scratch and leaves nothing out (the law
    suite's reference: the same states and proofs).  ``symmetry``, ``reduce``: see the module doc.  ``exact``
    keeps the states' keys in the visited set instead of fingerprints.  ``sleep=False`` tries every event in
    every state (states generated are then counted as TLC counts them).  ``findings`` names what is violated by
    finding (``invariant @ where``, :mod:`sim.core.findings`) where the checks say where (not in a search of the
    machine's own state predicates): ``only`` may then be a finding.
    """

    max_events: int | None
    max_states: int = MAX_STATES_DEFAULT
    only: str | None = None
    alphabet: tuple[Any, ...] | None = None
    prefix: tuple[Any, ...] = ()
    deadline: Deadline = NO_DEADLINE
    workers: int = 1
    memory_limit: int | None = None
    accelerate: bool = True
    symmetry: bool = False
    reduce: bool = False
    exact: bool = False
    sleep: bool = True
    findings: bool = False

    def __post_init__(self) -> None:
        if self.max_events is not None and not 1 <= self.max_events <= EXHAUSTIVE_DEPTH_MAX:
            raise InputError(f"--max-events must be between 1 and {EXHAUSTIVE_DEPTH_MAX}, got {self.max_events}")
        if not 1 <= self.max_states <= STATE_LIMIT_MAX:
            raise InputError(f"the state limit must be from 1 to {STATE_LIMIT_MAX:,}, not {self.max_states}")
        if self.workers < 1:
            raise InputError(f"a search needs at least 1 worker, not {self.workers}")
        if self.memory_limit is not None and self.memory_limit < 1:
            raise InputError(f"the memory limit must be at least 1 byte, not {self.memory_limit}")
        if self.alphabet is not None:  # any sequence given, kept as a tuple
            object.__setattr__(self, "alphabet", tuple(self.alphabet))
        object.__setattr__(self, "prefix", tuple(self.prefix))

    def replace(self, **changes: Any) -> "ExploreOptions":
        """These options with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)


def explore(family: Family, workload: Workload, protocol: Protocol, options: ExploreOptions,
            progress: Callable[[int, int, int], None] | None = None) -> ExhaustiveResult:
    """Search every state reachable in at most ``options.max_events`` events (None: until exhausted), breadth
    first, as ``options`` says (:class:`ExploreOptions`).  ``progress(depth, max_events or 0, distinct states)``
    follows each depth, and every :data:`PROGRESS_EVERY_S` seconds within one (``depth`` is then the last one
    finished).
    """
    events = list(family.alphabet(workload) if options.alphabet is None else options.alphabet)
    declared = family.symmetry(workload) if options.symmetry else None
    expansion = Expansion(family, workload, protocol, events, accelerate=options.accelerate,
                          canonical=declared.canonical if declared is not None else None, prefix=options.prefix,
                          findings=options.findings)
    expansion.deadline = options.deadline
    only = options.only
    if only is not None and options.findings and not expansion.by_finding:
        only = invariant_of(only)  # the states' predicates say which invariant, not where: stop at the first
    result = ExhaustiveResult(protocol.label, options.max_events, family.safety_invariants,
                              fingerprints=not options.exact)
    result.symmetry = declared.parts if declared is not None else None
    # persistent sets need independence: a machine whose events declare no footprints is searched unreduced
    result.reduced = options.reduce and expansion.machine is not None and expansion.independence.any
    limit = options.memory_limit
    if limit is None:
        limit = int(physical_bytes() * MEMORY_SHARE_DEFAULT) or None
    search = _Search(expansion, result, options, memory_limit=limit, only=only,
                     sleeping=options.sleep and options.accelerate and declared is None and not result.reduced)
    # the collector stays on where a state or a replay leaves reference cycles behind (see _no_cyclic_gc)
    acyclic = expansion.machine is not None and expansion.machine.acyclic_states
    with Expander(expansion, options.workers) as expander, _no_cyclic_gc(acyclic):
        search.run(expander, progress)
    if result.reduced and result.minimal_orders:
        _measure_unreduced(family, workload, protocol, events, result, options, limit)
    if result.reduced and not result.exhausted and not result.minimal_orders:
        result.proved_within = 0  # a reduced search bounded by a depth proves no absence (module doc)
    return result


class _Search:
    """One breadth-first search: its visited set, its layers and the result it fills."""

    def __init__(self, expansion: Expansion, result: ExhaustiveResult, options: ExploreOptions, *,
                 memory_limit: int | None, only: str | None, sleeping: bool):
        self.expansion, self.result = expansion, result
        self.visited = Visited(options.exact, len(expansion.events))
        self.max_states, self.memory_limit, self.deadline = options.max_states, memory_limit, options.deadline
        self.only = only  # options.only, or its invariant where the states' predicates name no finding
        self.independence = expansion.independence if sleeping and expansion.independence.any else None
        self.reducing = result.reduced and expansion.independence.any
        expansion.watching = self.reducing
        self.progress: Callable[[int, int, int], None] | None = None
        self.progress_at = time.monotonic()
        self.asleep: dict[int, int] = {}  # state number -> its sleep set, for the layer being expanded or built
        self.positions: dict[Any, int] = {}  # mark -> state number, for the layer being built (sleep sets meet)
        #: The first state numbers of the layer expanded and of the one being built, and the states the visited
        #: set holds but the search does not count (the start of several initial states), for :meth:`_check`.
        self.expanded, self.first, self.uncounted = 0, 1, 0

    def run(self, expander: Expander, progress: Callable[[int, int, int], None] | None) -> None:
        result, expansion = self.result, self.expansion
        self.progress = progress
        found = expansion.root_found()
        root = expansion.key(_root_key(expansion))
        number = self.visited.add(self.visited.mark(root if expansion.mode == "states" else (root, found)), -1, -1)
        assert number == 0
        result.states_generated, result.distinct_states, result.states_per_depth = 1, 1, [1]
        starts = bool(expansion.starting) and not expansion.prefix  # several initial states (_initial_states)
        self.uncounted, result.violating_states = int(starts), int(bool(found) and not starts)
        for invariant in sorted(found if not starts else ()):
            result.shortest[invariant], result.minimal_orders[invariant] = 0, [()]
        layer = Layer()
        layer.append((0, expansion.root(), found if not starts else frozenset()))
        self.asleep = {0: 0}
        depth = 0
        if starts:
            layer = self._initial_states(layer, expander)
            if not result.complete:
                return
        while self.result.max_events is None or depth < self.result.max_events:
            depth += 1
            keep = self.result.max_events is None or depth < self.result.max_events
            built = self._next(layer, expander, depth, keep)
            result.states_per_depth.append(len(built) if keep else built.count)
            self._check(built)
            if progress is not None:
                progress(depth, result.max_events or 0, result.distinct_states)
            if not result.complete:
                break
            if not built.count:
                result.reason = "exhausted"
                break
            if self.only is not None and self.only in result.shortest:
                result.reason, result.complete = "found", False
                break
            layer = built
        result.proved_within = None if result.exhausted else depth
        layer.close()

    def _initial_states(self, start: Layer, expander: Expander) -> Layer:
        """Several initial states: the machine's :meth:`~sim.core.machine.Machine.initial` is where its starting
        events choose one, not a state -- the states they lead to are the search's states at depth 0, and the
        only ones counted there (TLC's initial states)."""
        expansion, result = self.expansion, self.result
        root = expansion.root()
        others = [expansion.events[i] for i in expansion.enabled_of(root if expansion.mode == "states" else root[0])
                  if not expansion.starting >> i & 1]
        if others:
            raise InputError(f"only starting events may happen in a machine's initial() state when it has several "
                             f"initial states; {', '.join(map(str, others[:3]))} can too")
        result.distinct_states = result.states_generated = 0
        self.asleep = {0: ((1 << len(expansion.events)) - 1) & ~expansion.starting}  # the starting events alone
        built = self._next(start, expander, 1, True, shortest=0)
        result.pruned = 0  # the other events were never candidates there, not pruned
        self.asleep = dict.fromkeys(self.asleep, 0)  # the events after a start: none asleep
        result.states_per_depth = [len(built)]
        self._check(built)
        start.close()
        return built

    def _next(self, layer: Layer, expander: Expander, depth: int, keep: bool, shortest: int | None = None) -> Any:
        """Expand every entry of a layer; the states found new, in the order found (a counted-only layer when
        it is the last).  Violations found there are ``shortest`` events long (default: ``depth``)."""
        spill = self.memory_limit // 2 if self.memory_limit else None
        mark = min(spill // 2, ENCODE_MARK_MAX) if spill else None
        built = Layer(spill, encode_bytes=mark, codec=self.expansion.layer_codec(self.visited)) if keep else _Counted()
        asleep, self.asleep, self.positions = self.asleep, {}, {}
        found_here: dict[str, list[tuple[Any, ...]]] = {}
        if self.expansion.fusable and expander.pool is None and (self.independence or not any(asleep.values())):
            expand_fused(self, layer, built, keep, asleep, found_here, depth)  # the common case (sim.search.fused)
        else:
            for (number, node, found), (successors, slept) in expander.map(layer, depth, asleep):
                if self._stopped():
                    break
                self._progress_within(depth)
                self.result.pruned += slept
                chosen = self._chosen(successors, found, node) if self.reducing else successors
                self._add(number, found, chosen, asleep.get(number, 0), built, keep, found_here, depth)
                if not self.result.complete:
                    break
        length = depth if shortest is None else shortest  # and the event choosing the initial state, if one did
        for invariant, orders in found_here.items():
            assert all(len(order) == length + self.uncounted for order in orders), f"an order of {invariant} " \
                f"found {length} events deep is {[len(order) for order in orders]} long: the trace is not the search's"
            self.result.shortest[invariant] = length
            self.result.minimal_orders[invariant] = orders
        return built

    def _progress_within(self, depth: int) -> None:
        """A progress call within the depth being built, if :data:`PROGRESS_EVERY_S` passed since the last."""
        if self.progress is not None and time.monotonic() - self.progress_at >= PROGRESS_EVERY_S:
            self.progress_at = time.monotonic()
            self.progress(depth - 1, self.result.max_events or 0, self.result.distinct_states)

    def _check(self, built: Any) -> None:
        """A layer just built, checked against the visited set and the counts the result reports
        (:meth:`Visited.check_layer`, :func:`check_counts`), and two of its states against their own consistency
        (:meth:`~sim.core.machine.Machine.check_state`): once per depth, never per successor."""
        first, self.first = self.first, len(self.visited)
        self.visited.check_layer(self.expanded, first, built.count, len(self.expansion.events))
        self.expanded = first
        check_counts(self.result.distinct_states, self.result.states_per_depth, len(self.visited), self.uncounted)
        machine = self.expansion.machine
        if isinstance(built, Layer):
            built.check()
            for _, node, _ in built.sample():
                if machine is not None:
                    machine.check_state(node if self.expansion.mode == "states" else node[0])

    def _add(self, number: int, found: frozenset[str], successors: list[Successor], asleep: int, built: Any,
             keep: bool, found_here: dict[str, list[tuple[Any, ...]]], depth: int) -> None:
        """Count each successor, note the violations it shows first, and keep each new state (this loop runs once
        per successor: the visited set's operations are written out here, not called)."""
        result, visited = self.result, self.visited
        judged = self.expansion.mode == "states"  # violations are the states' own: judged once, on new states
        independent = self.independence.independent if self.independence is not None else None
        seen, parents, events, exact = visited.seen, visited.parent, visited.event, visited.exact
        table = seen.add if visited.compact else None  # the C table's add says whether a fingerprint was new
        tried, generated = 0, len(successors)
        for position, (event, shown, key, node, _) in enumerate(successors):
            if shown is not found:  # the order through this step first violates something (or the step does)
                self._violating(number, event, shown - found, found_here)
            merged = key if judged else (key, shown)
            mark = merged if exact else hash(merged)
            if (not table(mark)) if table is not None else mark in seen:
                if keep and independent is not None and mark in self.positions:  # met again in this layer
                    self.asleep[self.positions[mark]] &= (asleep | tried) & independent[event]
                tried |= 1 << event
                continue
            if table is None:
                seen.add(mark)
            child = len(parents)
            parents.append(number)
            events.append(event)
            if judged:
                shown = self.expansion.judge(node)
                if shown:
                    self._violating(number, event, shown, found_here)
            result.violating_states += bool(shown)
            if keep:
                built.append((child, node, shown))
                if independent is not None:
                    self.asleep[child] = (asleep | tried) & independent[event]
                    self.positions[mark] = child
            else:
                built.count += 1
            tried |= 1 << event
            result.distinct_states += 1
            if result.distinct_states > self.max_states:
                result.complete, result.reason, generated = False, "state_limit", position + 1
                break
            if self.memory_limit and result.distinct_states % MEMORY_CHECK_EVERY == 0 and \
                    resident_bytes() > self.memory_limit:
                result.complete, result.reason, generated = False, "memory_limit", position + 1
                break
        result.states_generated += generated

    def _violating(self, number: int, event: int, newly: frozenset[str],
                   found_here: dict[str, list[tuple[Any, ...]]]) -> None:
        """Record the order through ``event`` from state ``number`` for each invariant it first violates."""
        events = self.expansion.events
        for invariant in sorted(newly):
            if invariant not in self.result.shortest:
                found_here.setdefault(invariant, []).append(self.visited.order(number, events) + (events[event],))

    def _chosen(self, successors: list[Successor], found: frozenset[str], node: Any) -> list[Successor]:
        """The successors of the smallest persistent set whose events are invisible and all lead to new
        states; all of them where there is none (see :mod:`sim.search.reduction`)."""
        if len(successors) < 2:
            return successors
        enabled = 0
        for successor in successors:
            enabled |= 1 << successor[0]
        by_event = {s[0]: s for s in successors}
        best: list[Successor] | None = None
        enabling = self.expansion.enabling(node, enabled)
        for successor in successors:
            bound = len(best) if best is not None else len(successors)
            ample = self.expansion.independence.persistent(enabled, successor[0], enabling, bound)
            if ample is None or ample == enabled:
                continue
            picked = [by_event[e] for e in bits(ample)]
            if all(not visible and shown == found and self._new(key, shown) for _, shown, key, _, visible in picked):
                best = picked
        return best if best is not None else successors

    def _new(self, key: Any, shown: frozenset[str]) -> bool:
        mark = self.visited.mark(key if self.expansion.mode == "states" else (key, shown))
        return mark not in self.visited.seen

    def _stopped(self) -> bool:
        if self.deadline.expired():
            self.result.complete, self.result.reason = False, self.deadline.name
            self.deadline.note("exhaustive")
            return True
        return False


class _Counted:
    """The last layer: counted, never expanded, so nothing of it is kept but its fingerprints."""

    def __init__(self) -> None:
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def close(self) -> None:
        """Nothing is kept."""


def _root_key(expansion: Expansion) -> Any:
    if expansion.mode == "replay":
        family = expansion.family
        return family.state_key(family.replay(expansion.workload.base, expansion.protocol, expansion.root()))
    assert expansion.machine is not None
    root = expansion.root()
    return expansion.machine.key(root if expansion.mode == "states" else root[0])


def _measure_unreduced(family: Family, workload: Workload, protocol: Protocol, events: list,
                       result: ExhaustiveResult, options: ExploreOptions, limit: int | None) -> None:
    """A reduced search found violations, maybe later than their shortest orders: search again, unreduced,
    bounded by the longest length found, and keep its shortest lengths and orders (and whatever else it
    finds within that bound)."""
    bound = max(result.shortest.values())
    if bound == 0:
        return
    again = explore(family, workload, protocol, ExploreOptions(
        max_events=bound, max_states=options.max_states, alphabet=tuple(events), deadline=options.deadline,
        symmetry=options.symmetry, memory_limit=limit, prefix=options.prefix))
    if not again.complete:
        result.complete, result.reason = False, again.reason
        return
    result.shortest, result.minimal_orders = dict(again.shortest), dict(again.minimal_orders)
    if not result.exhausted:
        result.proved_within = bound


@contextlib.contextmanager
def _no_cyclic_gc(off: bool = True) -> Iterator[None]:
    """States are trees of tuples, never cycles: the cyclic collector only costs time here, so it is off
    during the search and back on after.  Not when every successor is a replay (``off`` False): a replay's
    kernel leaves cycles behind, which would pile up until the search ends and then be collected all at
    once, seconds past its deadline."""
    enabled = gc.isenabled()
    if off:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
