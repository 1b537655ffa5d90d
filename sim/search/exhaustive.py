"""Exhaustive bounded enumeration of event orders, for any family.

Breadth-first over order length: every order of up to ``max_events`` events
over the family's alphabet for the workload in which every event takes
effect (an order whose last event has no effect is the same run as its
prefix and is not extended).  Orders that reach the same state -- the
family's :meth:`~sim.core.family.Family.state_key` plus the set of
invariants already violated -- are merged, keeping the first order and
counting how many reached it; this is sound because what can happen next,
and whether it violates an invariant, depends only on that state.  So the
search proves the absence of every safety violation within the bound, or
returns, for each violated invariant, the shortest length at which it can
happen and every violating order of that length (one representative per
merged prefix).

Two things make it fast without changing what it proves.  Where the family
has a machine (:meth:`~sim.core.family.Family.machine`: its model as a
transition system over one state value) and its safety checks are folds
(:class:`~sim.core.checks.Fold`), each frontier entry keeps its state and
the checks' carries, no kernel runs, an event the guard refuses is never
tried, and a candidate costs one transition and one fold step per check.
Where two adjacent events are independent
(:meth:`~sim.core.family.Family.independent`: derived from the footprints
the family declares -- neither writes what the other reads or writes -- and
checked by the law suite), only the order with the earlier alphabet entry
first is tried -- the other reaches the same state with the same violations
(``pruned_commuting`` counts the orders skipped so).

One more, asked for (``symmetry=True``, ``fencesim explore --symmetry``),
changes what is counted but not what is proved: where the family declares
interchangeable parts (:mod:`sim.core.symmetry`), states are merged per
orbit -- one state for all its renamings -- so ``distinct_states`` counts
orbits.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import multiprocessing.pool
import signal
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.footprint import independent
from sim.core.history import Event, plain_time
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.search.budget import NO_DEADLINE, Deadline

#: Limits: distinct states kept per depth (by default, and the most ``fencesim explore --state-limit`` takes),
#: and the deepest bound accepted.
MAX_STATES_DEFAULT = 1_000_000
STATE_LIMIT_MAX = 100_000_000
EXHAUSTIVE_DEPTH_MAX = 12


@dataclass
class ExhaustiveResult:
    protocol: str
    max_events: int
    invariants: tuple[str, ...]
    orders_explored: int = 0
    pruned: int = 0  # orders not replayed because two adjacent independent events were swapped
    distinct_states: int = 0
    complete: bool = True
    reason: str = "bound_reached"
    shortest: dict[str, int] = field(default_factory=dict)
    minimal_orders: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    symmetry: str | None = None  # the interchangeable parts when states were merged per orbit

    @property
    def violated(self) -> bool:
        return bool(self.minimal_orders)

    def to_json(self) -> dict:
        out = {
            "protocol": self.protocol, "max_events": self.max_events, "orders_explored": self.orders_explored,
            "distinct_states": self.distinct_states, "pruned_commuting": self.pruned, "complete": self.complete,
            "end": self.reason,
            "proved_absent": [n for n in self.invariants if n not in self.minimal_orders] if self.complete else [],
            "violations": {
                name: {"shortest_events": self.shortest[name],
                       "orders": [[str(a) for a in order] for order in orders]}
                for name, orders in self.minimal_orders.items()
            },
        }
        if self.symmetry is not None:  # present only when asked for: a search without it reads as it always did
            out["symmetry"] = self.symmetry
        return out


@dataclass
class _Context:
    """What expanding a frontier entry needs (sent once to each worker process).

    With the family's machine (and every safety check written as a fold) an entry's node is
    ``(state, fold carries, history length)`` and a candidate costs one guard, one transition and one
    fold step per check over the events it produced.  Otherwise each candidate is replayed whole.
    """

    family: Family
    workload: Workload
    protocol: Protocol
    events: list
    accelerate: bool = True
    canonical: Callable[[Any], Any] | None = None  # symmetry reduction: a state key -> its orbit's

    def __post_init__(self) -> None:
        self.rank = {str(event): index for index, event in enumerate(self.events)}
        self.commute = _commuting(self.family, self.workload, self.protocol, self.events) if self.accelerate else set()
        self.names = [str(event) for event in self.events]
        self._after: dict[str | None, tuple[list, int]] = {}
        safety = [spec for spec in self.family.checks if spec.safety]
        folds = [spec.fold for spec in safety]
        machine = self.family.machine(self.workload.base, self.protocol) if self.accelerate else None
        self.machine = machine if machine is not None and all(f is not None for f in folds) else None
        self.folds = [f for f in folds if f is not None] if self.machine is not None else []
        self._readers = _Readers(self.folds)

    def root(self) -> Any:
        if self.machine is None:
            return None
        return (self.machine.initial(), tuple(fold.start for fold in self.folds), 0)

    def expand(self, entry, keep_nodes: bool) -> tuple[list, int]:
        """Every effective one-event extension of a frontier entry: (order, violated, key, node)."""
        if self.machine is not None:
            return self._expand_direct(entry, keep_nodes)
        return self._expand_replaying(entry)

    def _pruned(self, last: str | None, name: str) -> bool:
        return last is not None and (last, name) in self.commute and self.rank[name] < self.rank[last]

    def _choices(self, last: str | None) -> tuple[list, int]:
        """The events tried after ``last`` (independent ones ranked earlier are pruned) and how many were pruned."""
        choices = self._after.get(last)
        if choices is None:
            kept = [a for a, n in zip(self.events, self.names) if not self._pruned(last, n)]
            if self.machine is not None:
                kept = [(a, *self.machine.resolve(a)) for a in kept]
            choices = self._after[last] = (kept, len(self.events) - len(kept))
        return choices

    def _expand_direct(self, entry, keep_nodes: bool) -> tuple[list, int]:
        order, _, violated, (state, carries, length) = entry
        assert self.machine is not None  # expand() comes here only with a machine
        key_of, readers_of, canonical = self.machine.key, self._readers, self.canonical
        choices, pruned = self._choices(str(order[-1]) if order else None)
        time = plain_time(len(order))
        outcomes = []
        for action, why_not, step in choices:
            if why_not(state, action) is not None:
                continue
            after, records = step(state, action)
            fed, found, index = carries, violated, length
            for actor, event_name, fields in records:
                readers = readers_of[event_name]
                index += 1
                if not readers:
                    continue
                if None in fields.values():
                    fields = {k: v for k, v in fields.items() if v is not None}
                event = Event(index - 1, time, actor, event_name, fields)
                fed = list(fed)
                for position, invariant, feed in readers:
                    fed[position], shown = feed(fed[position], event)
                    if shown and invariant not in found:
                        found = found | {invariant}
            node = (after, tuple(fed), index) if keep_nodes else None
            key = key_of(after) if canonical is None else canonical(key_of(after))
            outcomes.append((order + (action,), found, (key, found), node))
        return outcomes, pruned

    def _expand_replaying(self, entry) -> tuple[list, int]:
        order = entry[0]
        family, protocol, base = self.family, self.protocol, self.workload.base
        choices, pruned = self._choices(str(order[-1]) if order else None)
        outcomes = []
        for action in choices:
            replay = family.replay(base, protocol, order + (action,))
            if replay.last_skipped:
                continue
            violated = frozenset(v.invariant for v in family.check(replay.history).safety_violations)
            key = family.state_key(replay)
            if self.canonical is not None:
                key = self.canonical(key)
            outcomes.append((order + (action,), violated, (key, violated), None))
        return outcomes, pruned


def _commuting(family: Family, workload: Workload, protocol: Protocol, events: list) -> set[tuple[str, str]]:
    """The pairs of events independent by their footprints (:meth:`~sim.core.family.Model.independent`)."""
    prints = [family.footprint(workload, protocol, event) for event in events]
    return {(str(a), str(b)) for a, first in zip(events, prints) for b, second in zip(events, prints)
            if a != b and independent(first, second)}


class _Readers(dict):
    """event name -> (position, invariant, feed) of each safety fold that reads events of that name, filled
    on first lookup (a plain dict lookup afterwards: it is read once per record of every candidate)."""

    def __init__(self, folds: list) -> None:
        super().__init__()
        self.folds = folds

    def __missing__(self, event_name: str) -> list:
        readers = self[event_name] = [
            (i, f.name, f.feed) for i, f in enumerate(self.folds) if f.reads_event(event_name)]
        return readers


#: Frontier entries per task handed to a worker process.
EXPAND_CHUNK = 64
_WORKER: dict[str, Any] = {}


def _init_worker(context: _Context) -> None:
    # interrupts are the parent's to handle: a worker dies quietly when the pool is terminated
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _WORKER["context"] = context


def _expand_chunk(task) -> list:
    entries, keep = task
    return [_WORKER["context"].expand(entry, keep) for entry in entries]


class _Expander:
    """Expands frontier entries in this process, or in a pool of workers (results in frontier order).

    Workers help only where a candidate is replayed whole (a family without a machine): with a machine a
    candidate costs one transition, less than sending its state to a worker and its children back, so the
    search stays in this process whatever ``workers`` says (measured on three-files / step-dedupe to depth
    8: 36 s in one process, 89 s with two workers; the result is the same for any worker count)."""

    def __init__(self, context: _Context, workers: int):
        self.context = context
        self.workers = 1 if context.machine is not None else max(1, workers)
        self.pool: multiprocessing.pool.Pool | None = None

    def __enter__(self) -> "_Expander":
        if self.workers > 1:
            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
            self.pool = ctx.Pool(self.workers, initializer=_init_worker, initargs=(self.context,))
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()

    def map(self, entries: list, keep: bool) -> Iterator[tuple[list, int]]:
        if self.pool is None or len(entries) < 2 * EXPAND_CHUNK:
            for entry in entries:
                yield self.context.expand(entry, keep)
            return
        chunks = [(entries[i:i + EXPAND_CHUNK], keep) for i in range(0, len(entries), EXPAND_CHUNK)]
        for results in self.pool.imap(_expand_chunk, chunks):
            yield from results


def explore(family: Family, workload: Workload, protocol: Protocol, max_events: int,
            max_states: int = MAX_STATES_DEFAULT, only: str | None = None,
            alphabet: Sequence[Any] | None = None, deadline: Deadline = NO_DEADLINE, workers: int = 1,
            progress: Callable[[int, int, int], None] | None = None, accelerate: bool = True,
            symmetry: bool = False) -> ExhaustiveResult:
    """Enumerate every valid order of up to ``max_events`` events (see module doc).

    ``only`` stops at the first depth where that invariant is violated (used
    by the shrinker to prove a counterexample is as short as possible).
    ``alphabet`` restricts the events tried: every order found is still a
    valid order of the workload, but absence is then proved only for that
    sub-alphabet.  ``workers`` processes expand each depth's frontier in
    chunks, merged in frontier order, so the result is the same for any
    worker count (a family with a machine is explored in this process: see
    :class:`_Expander`).  ``progress(depth, max_events, states)`` follows each depth.
    ``accelerate=False`` replays every candidate from scratch and prunes nothing
    (the law suite's reference; the result is the same).  ``symmetry=True``
    merges states per orbit of the workload's interchangeable parts, where the
    family declares some (:meth:`~sim.core.family.Model.symmetry`; otherwise it
    changes nothing): the same shortest lengths and invariants proved absent,
    with orbits counted instead of states (``result.symmetry`` names the parts).
    """
    if not 1 <= max_events <= EXHAUSTIVE_DEPTH_MAX:
        raise InputError(f"--max-events must be between 1 and {EXHAUSTIVE_DEPTH_MAX}, got {max_events}")
    result = ExhaustiveResult(protocol.label, max_events, family.safety_invariants)
    events = list(family.alphabet(workload) if alphabet is None else alphabet)
    declared = family.symmetry(workload) if symmetry else None
    context = _Context(family, workload, protocol, events, accelerate,
                       declared.canonical if declared is not None else None)
    result.symmetry = declared.parts if declared is not None else None
    # frontier: key -> [order, orders merged into it, invariants violated, node to expand (or None)]
    frontier: dict[Any, list] = {"root": [(), 1, frozenset(), context.root()]}
    seen_states = 0
    with _Expander(context, workers) as expander, _no_cyclic_gc():
        for depth in range(1, max_events + 1):
            layer, size, found_here = _next_layer(frontier, expander, depth < max_events, result, max_states,
                                                  deadline)
            seen_states += size
            for invariant, orders in found_here.items():
                result.shortest[invariant] = depth
                result.minimal_orders[invariant] = orders
            if progress is not None:
                progress(depth, max_events, seen_states)
            if not result.complete or not size or (only is not None and only in result.shortest):
                if only is not None and only in result.shortest:
                    result.reason = "found"
                elif not size and result.complete:
                    result.reason = "exhausted"
                break
            frontier = layer
        # dropped while the cyclic collector is still off: re-enabled first, it would traverse every state of
        # the last layer once before they are freed (a tenth of the search's time at depth 10)
        frontier = layer = {}
    result.distinct_states = seen_states
    return result


@contextlib.contextmanager
def _no_cyclic_gc():
    """States are trees of tuples, never cycles: the cyclic collector only costs time here (a third of it
    at depth 9 on the tiny workload), so it is off during the search and back on after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _next_layer(frontier: dict[Any, list], expander: "_Expander", keep: bool, result: ExhaustiveResult,
                max_states: int, deadline: Deadline) -> tuple[dict[Any, list], int, dict[str, list]]:
    """Expand every frontier entry by one event; merge equal keys, keeping the first order (frontier order).

    Returns the next frontier, its number of distinct states and the orders that first violate an invariant
    here.  The last layer (``keep`` false) is counted, never expanded: only its keys are kept, in a set."""
    layer: dict[Any, list] = {}
    last: set[Any] = set()
    found_here: dict[str, list[tuple[Any, ...]]] = {}
    entries = list(frontier.values())
    for (_, count, parent_violated, _), (outcomes, pruned) in zip(entries, expander.map(entries, keep)):
        if deadline.expired():
            result.complete, result.reason = False, deadline.name
            deadline.note("exhaustive")
            break
        result.pruned += pruned * count
        result.orders_explored += count * len(outcomes)
        left = len(outcomes)
        for candidate, violated, key, node in outcomes:
            left -= 1
            if violated is not parent_violated:
                for invariant in sorted(violated - parent_violated):
                    if invariant not in result.shortest:
                        found_here.setdefault(invariant, []).append(candidate)
            if keep:
                entry = [candidate, count, violated, node]
                kept = layer.setdefault(key, entry)
                if kept is not entry:
                    kept[1] += count
                    continue
                size = len(layer)
            else:
                before = len(last)
                last.add(key)
                size = len(last)
                if size == before:
                    continue
            if size > max_states:
                result.orders_explored -= count * left  # the candidates after this one were not explored
                result.complete, result.reason = False, "state_limit"
                break
        if not result.complete:
            break
    return layer, len(layer) if keep else len(last), found_here
