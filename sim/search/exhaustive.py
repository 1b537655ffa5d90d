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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.oracle import evaluate

#: Limits: distinct states kept per depth, and the deepest bound accepted.
MAX_STATES_DEFAULT = 200_000
MAX_EVENTS_LIMIT = 12


@dataclass
class ExhaustiveResult:
    protocol: str
    max_events: int
    invariants: tuple[str, ...]
    orders_explored: int = 0
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
            "distinct_states": self.distinct_states, "complete": self.complete, "end": self.reason,
            "proved_absent": [n for n in self.invariants if n not in self.minimal_orders] if self.complete else [],
            "violations": {
                name: {"shortest_events": self.shortest[name],
                       "orders": [[str(a) for a in order] for order in orders]}
                for name, orders in self.minimal_orders.items()
            },
        }


def explore(family: Family, workload: Workload, protocol: Protocol, max_events: int,
            max_states: int = MAX_STATES_DEFAULT, only: str | None = None,
            alphabet: Sequence[Any] | None = None, deadline: Deadline = NO_DEADLINE) -> ExhaustiveResult:
    """Enumerate every valid order of up to ``max_events`` events (see module doc).

    ``only`` stops at the first depth where that invariant is violated (used
    by the shrinker to prove a counterexample is as short as possible).
    ``alphabet`` restricts the events tried: every order found is still a
    valid order of the workload, but absence is then proved only for that
    sub-alphabet.
    """
    if not 1 <= max_events <= MAX_EVENTS_LIMIT:
        raise InputError(f"--max-events must be between 1 and {MAX_EVENTS_LIMIT}, got {max_events}")
    result = ExhaustiveResult(protocol.label, max_events, family.safety_invariants)
    events = list(family.alphabet(workload) if alphabet is None else alphabet)
    frontier: dict[Any, tuple[tuple[Any, ...], int, frozenset[str]]] = {"root": ((), 1, frozenset())}
    seen_states = 0
    for depth in range(1, max_events + 1):
        layer: dict[Any, tuple[tuple[Any, ...], int, frozenset[str]]] = {}
        found_here: dict[str, list[tuple[Any, ...]]] = {}
        for order, count, parent_violated in frontier.values():
            for action in events:
                if deadline.expired():
                    result.complete, result.reason = False, deadline.name
                    deadline.note("exhaustive")
                    break
                candidate = order + (action,)
                evaluation = evaluate(family, workload.base, protocol, candidate)
                if evaluation.replay.last_skipped:
                    continue
                violated = frozenset(evaluation.violated)
                result.orders_explored += count
                for name in sorted(violated - parent_violated):
                    if name not in result.shortest:
                        found_here.setdefault(name, []).append(candidate)
                key = (family.state_key(evaluation.replay), violated)
                if key in layer:
                    first, total, v = layer[key]
                    layer[key] = (first, total + count, v)
                else:
                    layer[key] = (candidate, count, violated)
                    if len(layer) > max_states:
                        result.complete, result.reason = False, "state_limit"
                        break
            if not result.complete:
                break
        seen_states += len(layer)
        for name, orders in found_here.items():
            result.shortest[name] = depth
            result.minimal_orders[name] = orders
        if not result.complete or not layer or (only is not None and only in result.shortest):
            if only is not None and only in result.shortest:
                result.reason = "found"
            elif not layer and result.complete:
                result.reason = "exhausted"
            break
        frontier = layer
    result.distinct_states = seen_states
    return result
