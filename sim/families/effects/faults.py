"""Faults of the durable-effects family, as data: the events of a fuzz order, the
seeded generator, the schedule the driver reads, and the exposure draws.

An order of this family is a list of faults, each striking one transition
at one point: ``terminate open_pr after_dispatch``.  Points are the
boundaries between a transition's four moments (``before_intent``,
``after_intent``, ``after_dispatch``, ``after_commit``, ``after_receipt``)
and two recovery moments (``reconcile``, ``compensate``).  The worker's
policy runs the task; the driver applies each fault when the task first
reaches its point, in list order for faults at the same point.  A fault
whose point is never reached, or that finds nothing to act on, has no
effect -- so deleting any fault still gives a valid run.

Generator rule (documented contract): run ``i`` of a sweep starting at
``seed_start`` uses ``random.Random(seed_start + i)``; it draws how many
faults (1..``per_run_max``), then for each its class (by weight; in swarm
mode the classes that are on and their weights are drawn first), the
transition and the point.  The order depends only on (workload, seed).

Exposure simulations follow the same convention: task ``i`` of a
simulation with seed ``m`` draws from ``random.Random(m + i)`` --
independent of batching, process and order, so a task's faults are the same
under every protocol (common random numbers make protocols comparable).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Iterable

from sim.families.effects.workflow import Transition, Workflow

#: The boundaries between a transition's moments, in order (the cruel grid's columns).
BOUNDARIES = ("before_intent", "after_intent", "after_dispatch", "after_commit", "after_receipt")
#: Recovery moments where a fault can strike a transition.
RECOVERY_POINTS = ("reconcile", "compensate")
POINTS = BOUNDARIES + RECOVERY_POINTS
#: The seed's "deliberately cruel" faults.
CRUEL_FAULTS = ("terminate", "duplicate", "delay_ack", "change_owner")

#: Each fault class, the points it may strike, and what it does (docs/effects.md has the long form).
FAULT_POINTS: dict[str, tuple[str, ...]] = {
    "terminate": BOUNDARIES,            # the worker dies; its lease expires; a new worker resumes from the log
    "duplicate": BOUNDARIES,            # the last message again: the request if one was just sent, else the task
    "delay_ack": BOUNDARIES,            # the acknowledgement comes late: request, response, or the queue's
    "change_owner": BOUNDARIES,         # the lease moves to a new worker while the old one keeps running
    "zombie": BOUNDARIES,               # the worker stalls past its lease, then wakes and acts on a stale view
    "lose_request": ("after_dispatch",),   # the request never reaches the external system
    "lose_response": ("after_commit",),    # the effect commits, the response is lost
    "timeout": ("after_dispatch",),        # the request commits just after the worker gave up waiting
    "retry_changed": ("after_dispatch",),  # the next retry regenerates its arguments (a new fingerprint)
    "foreign_object": ("before_intent",),  # someone else creates an object carrying the task's marker
    "upgrade": BOUNDARIES,                 # the workflow changes to version 2 mid-task
    "slow_approval": ("before_intent",),   # the human approves an irreversible step very late
    "unprovable": ("reconcile",),          # the reconciliation query cannot prove the outcome
    "compensation_fails": ("compensate",), # the compensation fails once (it must be retried)
    "postcondition_fails": ("after_receipt",),  # the verifier finds the effect wrong: the task aborts
    "read_changes": BOUNDARIES,            # the outside world a read observes moves on (a new version)
}
FAULT_CLASSES = tuple(FAULT_POINTS)


@dataclass(frozen=True)
class FaultEvent:
    """One event of an effects order: a fault striking a transition at a point."""

    fault: str
    transition: str
    point: str

    def __str__(self) -> str:
        return f"{self.fault} {self.transition} {self.point}"


def applies(fault: str, transition: Transition) -> bool:
    """Whether a fault class can do anything to this transition."""
    if fault == "slow_approval":
        return transition.needs_approval
    if fault == "compensation_fails":
        return transition.compensation is not None
    if fault == "postcondition_fails":
        return transition.verified
    if fault == "read_changes":
        return transition.is_read
    if fault in READ_IMMUNE:
        return not transition.is_read
    return True


#: Faults that do nothing to a read (it is never reconciled, its arguments carry no key, nothing can copy it).
READ_IMMUNE = frozenset({"unprovable", "retry_changed", "foreign_object"})


def parse_fault(text: Any, workflow: Workflow) -> FaultEvent:
    """``FAULT TRANSITION POINT``; raise ValueError saying what is allowed."""
    if not isinstance(text, str):
        raise ValueError(f"a fault must be a string, not {text!r}")
    words = text.split()
    if len(words) != 3:
        raise ValueError(f"write a fault as 'FAULT TRANSITION POINT', not {text!r}")
    fault, name, point = words
    if fault not in FAULT_POINTS:
        raise ValueError(f"unknown fault {fault!r}; faults: {', '.join(FAULT_CLASSES)}")
    transition = workflow.get(name)
    if transition is None:
        raise ValueError(f"unknown transition {name!r}; transitions: {', '.join(workflow.names())}")
    if point not in FAULT_POINTS[fault]:
        raise ValueError(f"{fault} strikes at {', '.join(FAULT_POINTS[fault])}, not {point!r}")
    return FaultEvent(fault, name, point)


def alphabet(workflow: Workflow, classes: Iterable[str]) -> list[FaultEvent]:
    """Every fault the classes can place on the workflow, in a fixed order."""
    chosen = [c for c in FAULT_CLASSES if c in set(classes)]
    return [FaultEvent(fault, t.name, point) for t in workflow.transitions for fault in chosen
            if applies(fault, t) for point in FAULT_POINTS[fault]]


def _draw_classes(classes: tuple[str, ...], rates: dict[str, float], swarm: bool,
                  rng: random.Random) -> tuple[tuple[str, ...], list[float]]:
    if not swarm:
        return classes, [rates[c] for c in classes]
    on = tuple(c for c in classes if rng.random() < 0.5) or (rng.choice(classes),)
    return on, [rng.random() + 0.05 for _ in on]


def generate(workflow: Workflow, classes: tuple[str, ...], rates: dict[str, float], per_run_max: int,
             swarm: bool, max_events: int, seed: int) -> tuple[FaultEvent, ...]:
    """The faults of one run, sorted by where they strike (see the module's rule)."""
    rng = random.Random(seed)
    on, weights = _draw_classes(classes, rates, swarm, rng)
    drawn: list[FaultEvent] = []
    for _ in range(min(rng.randint(1, per_run_max), max_events)):
        fault = rng.choices(on, weights)[0]
        targets = [t for t in workflow.transitions if applies(fault, t)]
        if not targets:
            continue
        transition = rng.choice(targets)
        drawn.append(FaultEvent(fault, transition.name, rng.choice(FAULT_POINTS[fault])))
    order = {t.name: i for i, t in enumerate(workflow.transitions)}
    drawn.sort(key=lambda e: (order[e.transition], POINTS.index(e.point)))
    return tuple(drawn)


# -- the schedule the driver reads ------------------------------------------------------

@dataclass(frozen=True)
class FaultEntry:
    """A fault for one task; ``token`` identifies it when it fires (its position in the order)."""

    task: str
    transition: str  # the logical transition (stable across workflow versions)
    point: str
    fault: str
    token: Any = None


class FaultSchedule:
    """Entries looked up by (task, transition, point); each is used once, in list order."""

    def __init__(self, entries: Iterable[FaultEntry]):
        self.entries = list(entries)
        self._pending: dict[tuple[str, str, str], list[FaultEntry]] = {}
        for entry in self.entries:
            if entry.point not in POINTS or entry.fault not in FAULT_POINTS:
                raise ValueError(f"unknown fault {entry.fault!r} or point {entry.point!r}")
            self._pending.setdefault((entry.task, entry.transition, entry.point), []).append(entry)

    def take_all(self, task: str, transition: str, point: str) -> list[FaultEntry]:
        return self._pending.pop((task, transition, point), [])

    def take(self, task: str, transition: str, point: str, fault: str) -> FaultEntry | None:
        entries = self._pending.get((task, transition, point), [])
        for entry in entries:
            if entry.fault == fault:
                entries.remove(entry)
                return entry
        return None

    def __len__(self) -> int:
        return len(self.entries)


def schedule_for(task: str, events: Iterable[FaultEvent]) -> FaultSchedule:
    """The schedule of one task's order; each entry's token is its position in the order."""
    return FaultSchedule(FaultEntry(task, e.transition, e.point, e.fault, i) for i, e in enumerate(events))


# -- exposure draws ---------------------------------------------------------------------

@dataclass(frozen=True)
class ExposureRates:
    """The probabilities the exposure generator draws with (the worked example's by default).

    ``ambiguous_rate``: a request's acknowledgement does not arrive (timeout or
    worker loss).  ``committed_rate``: an ambiguous request had committed.
    ``reconcile_rate``: a reconciliation can prove the outcome.
    ``worker_loss_share``: of the ambiguous requests, the share where the
    worker itself is lost (crashes after dispatch; a replacement resumes
    after the lease expires) rather than timing out.
    """

    ambiguous_rate: float = 0.041
    committed_rate: float = 0.60
    reconcile_rate: float = 0.997
    worker_loss_share: float = 0.5
    #: A healthy request the network also delivers twice (at-least-once delivery).  0 (the worked example's)
    #: draws nothing, so the streams of the default are unchanged; above 0, a fifth uniform per transition.
    duplicate_rate: float = 0.0


def task_rng(seed: int) -> random.Random:
    """The random source of one simulated task: ``random.Random(seed)`` (seed = seed_start + task index)."""
    return random.Random(seed)


def exposure_schedule(task: str, transitions: list[str], rates: ExposureRates,
                      rng: random.Random) -> list[FaultEntry]:
    """One task's faults: four uniforms per transition, drawn whatever their use (stable streams).

    Faults strike a transition's first request only; a retry is healthy, so
    the simulated counts compare with the worked example's arithmetic, which
    counts each logical request once.
    """
    width = 5 if rates.duplicate_rate > 0 else 4
    draws = [[rng.random() for _ in range(width)] for _ in transitions]
    entries: list[FaultEntry] = []
    for name, (ambiguous, committed, lost, provable, *copied) in zip(transitions, draws):
        if ambiguous >= rates.ambiguous_rate:
            if copied and copied[0] < rates.duplicate_rate:
                entries.append(FaultEntry(task, name, "after_dispatch", "duplicate"))
            continue
        if lost < rates.worker_loss_share:
            entries.append(FaultEntry(task, name, "after_dispatch", "terminate"))
        if committed >= rates.committed_rate:
            entries.append(FaultEntry(task, name, "after_dispatch", "lose_request"))
        elif lost >= rates.worker_loss_share:
            entries.append(FaultEntry(task, name, "after_commit", "lose_response"))
        if provable >= rates.reconcile_rate:
            entries.append(FaultEntry(task, name, "reconcile", "unprovable"))
    return entries
