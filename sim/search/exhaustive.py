"""Exhaustive bounded enumeration of event orders.

Breadth-first over order length: every valid order of up to ``max_events``
events over the workload's alphabet (its protocol events plus the events of
its fault classes).  Orders that reach the same state -- the actors' whole
state plus the set of invariants already violated and the steps already
applied -- are merged, keeping the first order and counting how many
reached it; this is sound because what can happen next, and whether it
violates an invariant, depends only on that state.  So the search proves
absence of every safety violation within the bound, or returns, for each
violated invariant, the shortest length at which it can happen and every
violating order of that length (one representative per merged prefix).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sim.checks.base import run_checks
from sim.checks.workspace import SAFETY_INVARIANTS, WORKSPACE_CHECKS
from sim.errors import InputError
from sim.protocol import Protocol
from sim.replay import replay_world
from sim.scenario import PREEMPT_POINTS, Action
from sim.search.workload import Workload

#: Limits: distinct states kept per depth, and the deepest bound accepted.
MAX_STATES_DEFAULT = 200_000
MAX_EVENTS_LIMIT = 12


def alphabet(workload: Workload, steps: int | None = None) -> list[Action]:
    """Every event the workload can produce, in a fixed order (optionally for its first ``steps`` steps)."""
    classes = set(workload.classes)
    events = [Action("plan")]
    for step in workload.base.plan[:steps]:
        sid = step.step_id
        events += [Action("dispatch", sid), Action("deliver", sid), Action("ack", sid)]
        if "lose_ack" in classes or "preempt" in classes:
            events.append(Action("lose_ack", sid))
        if "retry" in classes:
            events.append(Action("retry", sid))
        if "duplicate" in classes:
            events.append(Action("duplicate", sid))
    if "human_edit" in classes:
        for path, hunks in workload.base.files.items():
            events.append(Action("human_edit", path=path))
            if len(hunks) > 1:
                events += [Action("human_edit", path=path, hunk=h) for h in hunks]
    if "preempt" in classes:
        events += [Action("preempt")] + [Action("preempt", point=p) for p in PREEMPT_POINTS]
    if "replan" in classes:
        events.append(Action("replan"))
    if "replan_stale" in classes:
        events.append(Action("replan", point="stale"))
    return events


def signature(world, violated: frozenset[str]) -> str:
    """Everything that decides what can happen next, as a deterministic string."""
    ws, client, executor, planner = world.workspace, world.client, world.executor, world.planner
    applied = sorted({e.get("step") for e in world.history if e.event == "deliver" and e.get("verdict") == "applied"})
    return repr((
        ws.rev, sorted((p, sorted(h.items())) for p, h in ws.files.items()), sorted(ws.journal),
        sorted(executor.memory), executor.crashes.armed, client.plan_rejected,
        [(s.step_id, sorted(s.patch.items()), s.claimed_base_rev, s.claimed_pre_hash, sorted(s.truth.items()),
          s.replanned) for s in client.steps],
        sorted((k, m.stamped_base_rev, m.stamped_pre_hash) for k, m in client.sent.items()), sorted(client.refused),
        planner.snapshot_rev, planner.model_number, world.human.edits,
        [(m.step.step_id, m.origin, m.stamped_base_rev, m.stamped_pre_hash, sorted(m.step.patch.items()),
          sorted(m.step.truth.items())) for m in world.requests.in_flight],
        [(a.step_id, a.verdict) for a in world.answers.in_flight],
        sorted(world.verdict_steps), applied, sorted(violated),
    ))


@dataclass
class ExhaustiveResult:
    protocol: str
    max_events: int
    orders_explored: int = 0
    distinct_states: int = 0
    complete: bool = True
    reason: str = "bound_reached"
    shortest: dict[str, int] = field(default_factory=dict)
    minimal_orders: dict[str, list[tuple[Action, ...]]] = field(default_factory=dict)

    @property
    def violated(self) -> bool:
        return bool(self.minimal_orders)

    def to_json(self) -> dict:
        return {
            "protocol": self.protocol, "max_events": self.max_events, "orders_explored": self.orders_explored,
            "distinct_states": self.distinct_states, "complete": self.complete, "end": self.reason,
            "proved_absent": [n for n in SAFETY_INVARIANTS if n not in self.minimal_orders] if self.complete else [],
            "violations": {
                name: {"shortest_events": self.shortest[name],
                       "orders": [[str(a) for a in order] for order in orders]}
                for name, orders in self.minimal_orders.items()
            },
        }


def _step(workload: Workload, protocol: Protocol, order: tuple[Action, ...]):
    world, _ = replay_world(workload.base, protocol, order)
    last = world.history[len(world.history) - 1] if len(world.history) else None
    if last is not None and last.get("skipped") and last.time == len(order) - 1:
        return None, None
    report = run_checks(WORKSPACE_CHECKS, world.history)
    violated = frozenset(v.invariant for v in report.safety_violations)
    return world, violated


def explore(workload: Workload, protocol: Protocol, max_events: int,
            max_states: int = MAX_STATES_DEFAULT, only: str | None = None,
            steps: int | None = None) -> ExhaustiveResult:
    """Enumerate every valid order of up to ``max_events`` events (see module doc).

    ``only`` stops at the first depth where that invariant is violated (used
    by the shrinker to prove a counterexample is as short as possible).
    ``steps`` restricts the alphabet to the plan's first steps: every order
    found is still a valid order of the whole workload, but absence is then
    proved only for that sub-alphabet (``complete`` stays about the bound).
    """
    if not 1 <= max_events <= MAX_EVENTS_LIMIT:
        raise InputError(f"--max-events must be between 1 and {MAX_EVENTS_LIMIT}, got {max_events}")
    result = ExhaustiveResult(protocol.label, max_events)
    events = alphabet(workload, steps)
    frontier: dict[str, tuple[tuple[Action, ...], int, frozenset[str]]] = {"root": ((), 1, frozenset())}
    seen_states = 0
    for depth in range(1, max_events + 1):
        layer: dict[str, tuple[tuple[Action, ...], int, frozenset[str]]] = {}
        found_here: dict[str, list[tuple[Action, ...]]] = {}
        for order, count, parent_violated in frontier.values():
            for action in events:
                candidate = order + (action,)
                world, violated = _step(workload, protocol, candidate)
                if world is None:
                    continue
                result.orders_explored += count
                for name in sorted(violated - parent_violated):
                    if name not in result.shortest:
                        found_here.setdefault(name, []).append(candidate)
                key = signature(world, violated)
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
