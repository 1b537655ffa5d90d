"""Shrinking a violating event order to a minimal one.

Contract (each pass keeps it, and whether a pass makes progress is
deterministic): the order handed back still violates the invariant under
the protocol, contains no skipped event (every event can happen at its
point), and is 1-minimal -- dropping any single event makes the violation
disappear or leaves an event that cannot happen.

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
   (``shortest_proved``).

Event orders are lists whose validity is decided by the replay itself
(an event that cannot happen is skipped).  Hypothesis's shrinker serves
where Hypothesis drew the list (``sim.search.property``); a seed sweep's
order was drawn by the family's generator, not by Hypothesis, so it is shrunk
here by delta debugging, and both end in the same passes below.  Every search is
bounded by the named limits below; hitting one still returns the best
order found, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.core.family import Family
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


@dataclass
class ShrinkResult:
    events: tuple[Any, ...]
    original_length: int
    replays: int
    reason: str  # "minimal", "shortest" or a limit's name
    one_minimal: bool
    shortest_proved: bool


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
                events, granularity, reduced = kept, max(granularity - 1, 2), True
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
                events, changed = kept, True
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


def _tighten(family: Family, workload: Workload, protocol: Protocol, invariant: str, current: tuple[Any, ...],
             oracle: Oracle, accelerate: bool = True) -> tuple[tuple[Any, ...], bool]:
    from sim.search.exhaustive import explore

    for alphabet in family.alphabets(workload):
        bound = min(len(current) - 1, EXHAUSTIVE_TIGHTEN_MAX_EVENTS + 2)
        if bound < 1:
            break
        search = explore(family, workload, protocol, bound, max_states=EXHAUSTIVE_TIGHTEN_MAX_STATES,
                         only=invariant, alphabet=alphabet, deadline=oracle.deadline,
                         accelerate=accelerate)
        if invariant in search.minimal_orders:
            current, _ = _one_minimal(search.minimal_orders[invariant][0], oracle)
    if len(current) <= 1:  # a 1-minimal order of one event (or none) is as short as an order can be
        return current, True
    if len(current) - 1 > EXHAUSTIVE_TIGHTEN_MAX_EVENTS:
        return current, False
    proof = explore(family, workload, protocol, len(current) - 1, max_states=EXHAUSTIVE_TIGHTEN_MAX_STATES,
                    only=invariant, deadline=oracle.deadline, accelerate=accelerate)
    if invariant in proof.minimal_orders:  # pragma: no cover - the restricted searches found nothing shorter
        current, _ = _one_minimal(proof.minimal_orders[invariant][0], oracle)
        return current, False
    return current, proof.complete


def shrink(family: Family, workload: Workload, protocol: Protocol, events, invariant: str,
           max_replays: int = MAX_SHRINK_REPLAYS, tighten: bool = True, deadline: Deadline = NO_DEADLINE,
           max_seconds: float | None = SHRINK_SECONDS_MAX, accelerate: bool = True) -> ShrinkResult:
    """Shrink a violating order (see the module's contract).

    Bounded by ``max_replays``, by ``max_seconds`` of wall clock
    (``shrink_seconds``) and by ``deadline``; a limit hit returns the best
    order so far with the limit's name as ``reason``.
    """
    oracle = Oracle(family, workload.base, protocol, invariant, max_replays,
                    deadline.within(max_seconds, "shrink_seconds"))
    start = oracle(tuple(events))
    if start is None:
        raise ValueError(f"the order does not violate {invariant} under {protocol.label}")
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
    if oracle.deadline.expired():
        oracle.deadline.note("shrink")
        if not shortest:
            reason = oracle.limit_hit
    return ShrinkResult(tuple(current), len(tuple(events)), oracle.replays, reason, one_minimal, shortest)
