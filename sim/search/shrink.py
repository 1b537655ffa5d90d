"""Shrinking a violating event order to a minimal one.

Contract (each pass keeps it, and whether a pass makes progress is
deterministic): the order handed back still violates the invariant under
the protocol, contains no skipped event (every event can happen at its
point), and is 1-minimal -- dropping any single event makes the violation
disappear or leaves an event that cannot happen.  It is asserted, not
assumed: every candidate a pass accepts is strictly shorter than the order
it replaces (or, reordered, ranks strictly before it), an order the
exhaustive search hands over is replayed before it is taken, and the
result is no longer than the input and still shows the target.

Passes, in order:

1. delta debugging (ddmin) over the order, with skipped events dropped
   after every accepted candidate;
2. single-event removal until no removal keeps the violation (1-minimal);
3. moving one event earlier, kept only when the moved order then shrinks
   to a strictly shorter 1-minimal order (interference that struck a late
   step can often strike the first one);
4. bounded exhaustive searches (``sim.search.exhaustive``) for a strictly
   shorter violating order, first over the family's smaller alphabets
   (:meth:`~sim.core.family.Family.alphabets`; for the workspace, the events
   of the plan's first step, then its first two, ...): any order found there
   is a valid order of the whole workload and replaces the result; finally,
   when the result is at most ``EXHAUSTIVE_TIGHTEN_MAX_EVENTS`` long, a
   search over the whole alphabet proves that no shorter order exists
   (``shortest_proved``);
5. among the reorderings of the result that still show the finding and are as short and 1-minimal, the one
   with the fewest changes of actor, then the earliest in the alphabet (``switches``, ``fewest_switches``):
   the order a reader follows with the fewest jumps between lanes.

The target is an invariant or a finding (``"invariant @ where"``, :mod:`sim.core.findings`): every pass
keeps the order showing *that* finding, so two bugs under one invariant shrink to two orders.

Event orders are lists whose validity is decided by the replay itself
(an event that cannot happen is skipped).  Hypothesis's shrinker serves
where Hypothesis drew the list (``sim.search.property``); a seed sweep's
order was drawn by the family's generator, not by Hypothesis, so it is shrunk
here by delta debugging, and both end in the same passes below.  Every search is
bounded by the named limits below; hitting one still returns the best
order found, with the reason.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Sequence

from sim.core.family import Family
from sim.core.findings import invariant_of, switches
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.oracle import Oracle

MAX_SHRINK_REPLAYS = 20_000
#: Wall-clock seconds one counterexample may take to shrink (``--shrink-seconds``).
SHRINK_SECONDS_MAX = 30.0
#: Orders up to this length are checked for a shorter one by exhaustive search.
EXHAUSTIVE_TIGHTEN_MAX_EVENTS = 7
EXHAUSTIVE_TIGHTEN_MAX_STATES = 150_000
#: Orders up to this length are reordered for the fewest changes of actor, trying at most this many replays.
REORDER_MAX_EVENTS = 8
REORDER_MAX_REPLAYS = 300


@dataclass
class ShrinkResult:
    events: tuple[Any, ...]
    original_length: int
    replays: int
    reason: str  # "minimal", "shortest" or a limit's name
    one_minimal: bool
    shortest_proved: bool
    #: Changes of actor along the order, and whether no reordering of it with fewer (or as few, earlier in the
    #: alphabet) still shows the finding (every such reordering was tried).
    switches: int = 0
    fewest_switches: bool = False


def _smaller(before: tuple[Any, ...], after: tuple[Any, ...]) -> tuple[Any, ...]:
    """An accepted candidate, which must be strictly shorter than the order it replaces (each pass makes
    progress, so the shrink ends within its limits; Hypothesis's shrinker keeps the same rule)."""
    assert len(after) < len(before), f"a shrink pass accepted {len(after)} events in place of {len(before)}"
    return after


def _ddmin(events: tuple[Any, ...], oracle: Oracle) -> tuple[Any, ...]:
    granularity = 2
    while len(events) >= 2 and not oracle.exhausted():
        size = max(1, len(events) // granularity)
        chunks = [events[i:i + size] for i in range(0, len(events), size)]
        reduced = False
        for index in range(len(chunks)):
            complement = tuple(e for j, c in enumerate(chunks) if j != index for e in c)
            kept = oracle(complement)
            if kept is not None:
                events, granularity, reduced = _smaller(events, kept), max(granularity - 1, 2), True
                break
            if oracle.exhausted():
                break
        if not reduced:
            if granularity >= len(events):
                break
            granularity = min(len(events), granularity * 2)
    return events


def _one_minimal(events: tuple[Any, ...], oracle: Oracle) -> tuple[tuple[Any, ...], bool]:
    changed = True
    while changed and not oracle.exhausted():
        changed = False
        for index in range(len(events)):
            kept = oracle(events[:index] + events[index + 1:])
            if kept is not None:
                events, changed = _smaller(events, kept), True
                break
    return events, not changed


def minimize(events, oracle) -> tuple[tuple[Any, ...], bool]:
    """Delta debugging, then single-event removal, with any oracle: ``oracle(events)`` returns the order
    to keep (the events that took effect) while the property of interest still holds, else None, and
    ``oracle.exhausted()`` says when to stop.  Returns the order and whether it is 1-minimal."""
    return _one_minimal(_ddmin(tuple(events), oracle), oracle)


def _move_earlier(events: tuple[Any, ...], oracle: Oracle) -> tuple[Any, ...]:
    improved = True
    while improved and not oracle.exhausted():
        improved = False
        for index in range(1, len(events)):
            for target in range(index):
                moved = events[:target] + (events[index],) + events[target:index] + events[index + 1:]
                kept = oracle(moved)
                if kept is None:
                    continue
                shorter, _ = _one_minimal(kept, oracle)
                if len(shorter) < len(events):
                    events, improved = shorter, True
                    break
            if improved or oracle.exhausted():
                break
    return events


def _shown_by(search: Any, target: str, oracle: Oracle) -> list[tuple[Any, ...]]:
    """The shortest orders a search found that show ``target`` (an invariant or a finding).  A search of the
    machine's own state predicates names violations by invariant only: its orders of the invariant are
    replayed to keep those that show the finding."""
    if target in search.minimal_orders:
        return search.minimal_orders[target]
    invariant = invariant_of(target)
    if invariant != target and invariant in search.minimal_orders:
        return [order for order in search.minimal_orders[invariant] if oracle(order) is not None]
    return []


def _tighten(family: Family, workload: Workload, protocol: Protocol, target: str, current: tuple[Any, ...],
             oracle: Oracle, accelerate: bool = True) -> tuple[tuple[Any, ...], bool]:
    from sim.search.exhaustive import ExploreOptions, explore

    by_finding = invariant_of(target) != target
    for alphabet in family.alphabets(workload):
        bound = min(len(current) - 1, EXHAUSTIVE_TIGHTEN_MAX_EVENTS + 2)
        if bound < 1:
            break
        search = explore(family, workload, protocol, ExploreOptions(
            max_events=bound, max_states=EXHAUSTIVE_TIGHTEN_MAX_STATES, only=target, alphabet=tuple(alphabet),
            deadline=oracle.deadline, accelerate=accelerate, findings=by_finding))
        shown = _shown_by(search, target, oracle)
        if shown:  # found by the search, not the oracle: the replay must agree that it shows the target
            current = _smaller(current, _one_minimal(shown[0], oracle)[0])
            assert oracle.shows(current), f"the search's order {[str(e) for e in current]} does not show {target}"
    if len(current) <= 1:  # a 1-minimal order of one event (or none) is as short as an order can be
        return current, True
    if len(current) - 1 > EXHAUSTIVE_TIGHTEN_MAX_EVENTS:
        return current, False
    proof = explore(family, workload, protocol, ExploreOptions(
        max_events=len(current) - 1, max_states=EXHAUSTIVE_TIGHTEN_MAX_STATES, only=target,
        deadline=oracle.deadline, accelerate=accelerate, findings=by_finding))
    shown = _shown_by(proof, target, oracle)
    if shown:  # pragma: no cover - the restricted searches found nothing shorter
        current, _ = _one_minimal(shown[0], oracle)
        return current, False
    # Searched by invariant (state predicates), a shorter violation elsewhere hides whether this finding has
    # a shorter order: proved only when the invariant has none.
    hidden = by_finding and invariant_of(target) in proof.minimal_orders
    return current, proof.complete and not hidden


def _fewest_switches(family: Family, workload: Workload, current: tuple[Any, ...],
                     oracle: Oracle) -> tuple[tuple[Any, ...], int, bool]:
    """Among the reorderings of a 1-minimal order that still show the finding, as long and 1-minimal too, the
    one with the fewest changes of actor (:meth:`~sim.core.family.Model.actor`), then the earliest in the
    alphabet: (order, its switches, whether every reordering ranked before it was tried)."""
    rank = {str(event): position for position, event in enumerate(family.alphabet(workload))}

    def key(order: Sequence[Any]) -> tuple[int, tuple[int, ...]]:
        return switches([family.actor(e) for e in order]), tuple(rank.get(str(e), len(rank)) for e in order)

    best = key(current)
    if len(current) < 2 or len(current) > REORDER_MAX_EVENTS:
        return current, best[0], len(current) < 2
    candidates: dict[tuple[str, ...], tuple[Any, ...]] = {}
    for order in itertools.permutations(current):
        candidates.setdefault(tuple(str(e) for e in order), order)
    tried = 0
    for order in sorted(candidates.values(), key=key):
        if key(order) >= best:
            return current, best[0], True
        if tried >= REORDER_MAX_REPLAYS or oracle.exhausted():
            return current, best[0], False
        tried += 1
        kept = oracle(order)
        if kept is not None and len(kept) == len(order):
            shrunk, _ = _one_minimal(kept, oracle)
            if len(shrunk) == len(order):
                assert key(shrunk) < best, f"a reordering accepted as {key(shrunk)}, not before {best}"
                return shrunk, key(shrunk)[0], True
    return current, best[0], True


def shrink(family: Family, workload: Workload, protocol: Protocol, events, invariant: str,
           max_replays: int = MAX_SHRINK_REPLAYS, tighten: bool = True, deadline: Deadline = NO_DEADLINE,
           max_seconds: float | None = SHRINK_SECONDS_MAX, accelerate: bool = True) -> ShrinkResult:
    """Shrink a violating order (see the module's contract); ``invariant`` may be a finding (``"invariant @
    where"``): the order then keeps showing that finding, not only its invariant.

    Bounded by ``max_replays``, by ``max_seconds`` of wall clock
    (``shrink_seconds``) and by ``deadline``; a limit hit returns the best
    order so far with the limit's name as ``reason``.
    """
    oracle = Oracle(family, workload.base, protocol, invariant, max_replays,
                    deadline.within(max_seconds, "shrink_seconds"))
    start = oracle(tuple(events))
    if start is None:
        raise ValueError(f"the order does not show {invariant} under {protocol.label}")
    current = _ddmin(start, oracle)
    current, one_minimal = _one_minimal(current, oracle)
    current = _move_earlier(current, oracle)
    current, one_minimal = _one_minimal(current, oracle)
    # One event that cannot be dropped (or none at all) is as short as an order can be.
    shortest = one_minimal and len(current) <= 1
    reason = "shortest" if shortest else ("minimal" if one_minimal else oracle.limit_hit)
    if tighten and one_minimal and len(current) > 1 and not oracle.exhausted():
        current, shortest = _tighten(family, workload, protocol, invariant, current, oracle, accelerate)
        one_minimal = True
        reason = "shortest" if shortest else reason
    actor_switches, fewest = switches([family.actor(e) for e in current]), False
    if one_minimal and not oracle.exhausted():
        current, actor_switches, fewest = _fewest_switches(family, workload, tuple(current), oracle)
    if oracle.deadline.expired():
        oracle.deadline.note("shrink")
        if not shortest:
            reason = oracle.limit_hit
    assert len(current) <= len(tuple(events)), f"a shrink of {len(tuple(events))} events ended with {len(current)}"
    assert oracle.shows(current), f"the shrunk order no longer shows {invariant}: {[str(e) for e in current]}"
    return ShrinkResult(tuple(current), len(tuple(events)), oracle.replays, reason, one_minimal, shortest,
                        actor_switches, fewest)
