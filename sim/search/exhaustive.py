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
can resume a run (:meth:`~sim.core.family.Family.snapshot`), each frontier
state keeps a snapshot and a candidate costs one event, not a replay of its
whole prefix.  Where two adjacent events are independent
(:meth:`~sim.core.family.Family.independent`: they commute in every state),
only the order with the earlier alphabet entry first is tried -- the other
reaches the same state with the same violations (``pruned_commuting``
counts the orders skipped so).
"""

from __future__ import annotations

import multiprocessing
import signal
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.search.budget import NO_DEADLINE, Deadline

#: Limits: distinct states kept per depth, and the deepest bound accepted.
MAX_STATES_DEFAULT = 1_000_000
MAX_EVENTS_LIMIT = 12


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

    @property
    def violated(self) -> bool:
        return bool(self.minimal_orders)

    def to_json(self) -> dict:
        return {
            "protocol": self.protocol, "max_events": self.max_events, "orders_explored": self.orders_explored,
            "distinct_states": self.distinct_states, "pruned_commuting": self.pruned, "complete": self.complete, "end": self.reason,
            "proved_absent": [n for n in self.invariants if n not in self.minimal_orders] if self.complete else [],
            "violations": {
                name: {"shortest_events": self.shortest[name],
                       "orders": [[str(a) for a in order] for order in orders]}
                for name, orders in self.minimal_orders.items()
            },
        }


@dataclass
class _Context:
    """What expanding a frontier entry needs (sent once to each worker process)."""

    family: Family
    workload: Workload
    protocol: Protocol
    events: list
    accelerate: bool = True

    def __post_init__(self) -> None:
        self.rank = {str(event): index for index, event in enumerate(self.events)}
        self.commute = {(str(a), str(b)) for a in self.events for b in self.events
                        if self.accelerate and self.family.independent(a, b)}

    def expand(self, entry, keep_snapshots: bool) -> tuple[list, int]:
        """Every effective one-event extension of a frontier entry: (order, violated, key, snapshot)."""
        order, _, _, snap = entry
        family, protocol, base = self.family, self.protocol, self.workload.base
        last = str(order[-1]) if order else None
        outcomes, pruned = [], 0
        for action in self.events:
            name = str(action)
            if last is not None and (last, name) in self.commute and self.rank[name] < self.rank[last]:
                pruned += 1  # the same run as (..., action, last), which is tried
                continue
            if snap is not None and not family.enabled(protocol, snap, action):
                continue
            if snap is not None:
                replay = family.resume(base, protocol, order, snap, (action,))
            else:
                replay = family.replay(base, protocol, order + (action,))
            if replay.last_skipped:
                continue
            violated = frozenset(v.invariant for v in family.check(replay.history).safety_violations)
            key = (family.state_key(replay), violated)
            keep = keep_snapshots and self.accelerate
            outcomes.append((order + (action,), violated, key, family.snapshot(replay) if keep else None))
        return outcomes, pruned


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
    """Expands frontier entries in this process, or in a pool of workers (results in frontier order)."""

    def __init__(self, context: _Context, workers: int):
        self.context, self.workers, self.pool = context, max(1, workers), None

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
            progress: Callable[[int, int, int], None] | None = None, accelerate: bool = True) -> ExhaustiveResult:
    """Enumerate every valid order of up to ``max_events`` events (see module doc).

    ``only`` stops at the first depth where that invariant is violated (used
    by the shrinker to prove a counterexample is as short as possible).
    ``alphabet`` restricts the events tried: every order found is still a
    valid order of the workload, but absence is then proved only for that
    sub-alphabet.  ``workers`` processes expand each depth's frontier in
    chunks, merged in frontier order, so the result is the same for any
    worker count.  ``progress(depth, max_events, states)`` follows each depth.
    ``accelerate=False`` replays every candidate from scratch and prunes nothing
    (the benchmark's baseline; the result is the same).
    """
    if not 1 <= max_events <= MAX_EVENTS_LIMIT:
        raise InputError(f"--max-events must be between 1 and {MAX_EVENTS_LIMIT}, got {max_events}")
    result = ExhaustiveResult(protocol.label, max_events, family.safety_invariants)
    events = list(family.alphabet(workload) if alphabet is None else alphabet)
    context = _Context(family, workload, protocol, events, accelerate)
    # frontier: key -> (order, orders merged into it, invariants violated, resumable snapshot or None)
    frontier: dict[Any, tuple[tuple[Any, ...], int, frozenset[str], Any]] = {"root": ((), 1, frozenset(), None)}
    seen_states = 0
    with _Expander(context, workers) as expander:
        for depth in range(1, max_events + 1):
            layer: dict[Any, tuple[tuple[Any, ...], int, frozenset[str], Any]] = {}
            found_here: dict[str, list[tuple[Any, ...]]] = {}
            entries = list(frontier.values())
            keep = depth < max_events
            for (order, count, parent_violated, _), (outcomes, pruned) in zip(entries, expander.map(entries, keep)):
                if deadline.expired():
                    result.complete, result.reason = False, deadline.name
                    deadline.note("exhaustive")
                    break
                result.pruned += pruned * count
                for candidate, violated, key, snap in outcomes:
                    result.orders_explored += count
                    for invariant in sorted(violated - parent_violated):
                        if invariant not in result.shortest:
                            found_here.setdefault(invariant, []).append(candidate)
                    if key in layer:
                        first, total, v, kept = layer[key]
                        layer[key] = (first, total + count, v, kept)
                    else:
                        layer[key] = (candidate, count, violated, snap)
                        if len(layer) > max_states:
                            result.complete, result.reason = False, "state_limit"
                            break
                if not result.complete:
                    break
            seen_states += len(layer)
            for invariant, orders in found_here.items():
                result.shortest[invariant] = depth
                result.minimal_orders[invariant] = orders
            if progress is not None:
                progress(depth, max_events, seen_states)
            if not result.complete or not layer or (only is not None and only in result.shortest):
                if only is not None and only in result.shortest:
                    result.reason = "found"
                elif not layer and result.complete:
                    result.reason = "exhausted"
                break
            frontier = layer
    result.distinct_states = seen_states
    return result
