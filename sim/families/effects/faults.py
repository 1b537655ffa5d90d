"""Faults of the durable-effects family, as data: the registry of fault classes, the events of a fuzz order,
the seeded generator, and the schedule the driver reads.

**The registry** (:data:`REGISTRY`) declares each fault class once: the points it may strike, which
transitions it applies to, its injector (:mod:`sim.families.effects.injectors`) and its doc line.  The
alphabet, the generator, the cruel grid (:mod:`sim.families.effects.cruel`), the driver's dispatch
(:func:`inject`), the docs' table of faults (:func:`docs_table`, checked against ``docs/effects.md``) and
the schema the real harness reads (``workflow_schema.json``) all come from it.

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

The exposure simulations' draws are in :mod:`sim.families.effects.exposure_draws` (importable from here too).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from sim.core.values import JsonObject
from sim.families.effects import injectors
from sim.families.effects.exposure_draws import ExposureRates, exposure_schedule, task_rng
from sim.families.effects.external import Request
from sim.families.effects.injectors import Injector
from sim.families.effects.points import BOUNDARIES, POINTS, RECOVERY_POINTS, FaultEntry
from sim.families.effects.workflow import Transition, Workflow

__all__ = ["BOUNDARIES", "CRUEL_FAULTS", "FAULT_CLASSES", "FAULT_POINTS", "POINTS", "RECOVERY_POINTS", "REGISTRY",
           "ExposureRates", "FaultClass", "FaultEntry", "FaultEvent", "FaultSchedule", "alphabet", "applies",
           "docs_table", "exposure_schedule", "generate", "inject", "parse_fault", "schedule_for", "task_rng"]


def _every(transition: Transition) -> bool:
    return True


def _not_a_read(transition: Transition) -> bool:
    """Nothing to do to a read (it is never reconciled, its arguments carry no key, nothing can copy it)."""
    return not transition.is_read


@dataclass(frozen=True)
class FaultClass:
    """One fault class: where it strikes, what it strikes, what it does.

    ``inject`` is None for a class the driver applies at its recovery moment itself (it takes the entry
    from the schedule when the reconciliation or the compensation runs).  ``scope`` is the docs' note on
    which transitions it applies to (shown beside its points), ``doc`` what its injector does."""

    name: str
    points: tuple[str, ...]
    inject: Injector | None
    doc: str
    applies: Callable[[Transition], bool] = _every
    scope: str = ""
    cruel: bool = False

    def points_doc(self) -> str:
        where = "the five boundaries" if self.points == BOUNDARIES else ", ".join(f"`{p}`" for p in self.points)
        return f"{where} ({self.scope})" if self.scope else where

    def to_json(self) -> JsonObject:
        """The class as the schema the real harness reads writes it."""
        applies = self.scope or ("every transition but a read" if self.applies is _not_a_read else "every transition")
        return {"name": self.name, "points": list(self.points), "applies_to": applies, "cruel": self.cruel,
                "doc": self.doc}


#: Every fault class, in the order the alphabet, the generator's lists and the docs name them.
REGISTRY: tuple[FaultClass, ...] = (
    FaultClass("terminate", BOUNDARIES, injectors.terminate,
               "the worker crashes (memory and evidence lost); if it held the lease, the supervisor hands the task "
               "to a new worker after the lease TTL (28 s), which resumes from the log", cruel=True),
    FaultClass("duplicate", BOUNDARIES, injectors.duplicate,
               "at `after_dispatch` or `after_commit`: the network sends a copy of the request, served "
               "independently. Elsewhere: the queue redelivers the task to its holder, which ignores it", cruel=True),
    FaultClass("delay_ack", BOUNDARIES, injectors.delay_ack,
               "at `after_dispatch`: the request reaches the Git host 60 s late (after the worker's timeout). At "
               "`after_commit`: the response arrives 60 s late. Elsewhere: the queue's acknowledgement deadline "
               "passes and it redelivers the task to a new worker, which finds the lease busy", cruel=True),
    FaultClass("change_owner", BOUNDARIES, injectors.change_owner,
               "the lease moves to a new worker now, while the old one keeps running (a zombie; only the lease "
               "fence stops it)", cruel=True),
    FaultClass("zombie", BOUNDARIES, injectors.zombie,
               "the lease holder stalls for 45 s; its lease expires after 28 s and a successor takes over; the "
               "stalled worker then wakes and keeps acting on its stale view"),
    FaultClass("lose_request", ("after_dispatch",), injectors.lose, "the request never reaches the Git host"),
    FaultClass("lose_response", ("after_commit",), injectors.lose, "the effect commits; the response is lost"),
    FaultClass("timeout", ("after_dispatch",), injectors.timeout,
               "the request commits 11.5 s after its normal time: after the worker gave up waiting (10 s) and "
               "after its first reconciliation"),
    FaultClass("retry_changed", ("after_dispatch",), injectors.retry_changed,
               "the next retry of this transition regenerates its request body (a new fingerprint); it fires when "
               "that retry is dispatched, and has no effect if there is none", applies=_not_a_read),
    FaultClass("foreign_object", ("before_intent",), injectors.foreign_object,
               "someone else creates an object carrying the task's marker (not its key, and another head)",
               applies=_not_a_read),
    FaultClass("upgrade", BOUNDARIES, injectors.upgrade,
               "the workflow changes to version 2 mid-task (takes effect when a worker next resumes, under "
               "`version_policy`)"),
    FaultClass("slow_approval", ("before_intent",), injectors.slow_approval,
               "the human approves two days after being asked instead of 300 s",
               applies=lambda t: t.needs_approval, scope="transitions that need approval: irreversible ones by "
               "default"),
    FaultClass("unprovable", ("reconcile",), None,
               "that transition's next reconciliation cannot prove the outcome (result `unprovable`), so it goes "
               "to a human", applies=_not_a_read),
    FaultClass("compensation_fails", ("compensate",), None,
               "the compensation fails once; the worker retries it 30 s later",
               applies=lambda t: t.compensation is not None, scope="transitions with a compensation"),
    FaultClass("postcondition_fails", ("after_receipt",), injectors.postcondition_fails,
               "the verifier finds the effect wrong: the transition fails and the task aborts (a declared "
               "transition only with `postcondition = true`)", applies=lambda t: t.verified),
    FaultClass("read_changes", BOUNDARIES, injectors.read_changes,
               "the world a read observes moves on: its next observation sees a new version (`read_changed`)",
               applies=lambda t: t.is_read, scope="reads only"),
)
_BY_NAME = {fault.name: fault for fault in REGISTRY}
#: Each fault class and the points it may strike.
FAULT_POINTS: dict[str, tuple[str, ...]] = {fault.name: fault.points for fault in REGISTRY}
FAULT_CLASSES = tuple(FAULT_POINTS)
#: Who makes each fault happen: the lane an exported order draws it in (fewest changes of actor).
ACTOR_OF_FAULT = {"terminate": "worker", "zombie": "worker", "change_owner": "worker", "upgrade": "deploy",
                  "duplicate": "network", "lose_request": "network", "lose_response": "network",
                  "delay_ack": "network", "timeout": "network", "slow_approval": "human",
                  "foreign_object": "endpoint", "postcondition_fails": "endpoint", "compensation_fails": "endpoint",
                  "unprovable": "endpoint", "retry_changed": "endpoint", "read_changes": "endpoint"}
#: The seed's "deliberately cruel" faults.
CRUEL_FAULTS = tuple(fault.name for fault in REGISTRY if fault.cruel)


def fault_class(name: str) -> FaultClass:
    return _BY_NAME[name]


def applies(fault: str, transition: Transition) -> bool:
    """Whether a fault class can do anything to this transition."""
    return _BY_NAME[fault].applies(transition)


def inject(driver, entry: FaultEntry, worker: str, task: str, name: str, request: Request | None) -> bool:
    """Apply one fault at (task, transition, point) through its class's injector; whether it took effect now."""
    injector = _BY_NAME[entry.fault].inject
    if injector is None:
        raise AssertionError(f"fault {entry.fault!r} has no injector at {entry.point}")
    return injector(driver, entry, worker, task, name, request)


def docs_table() -> str:
    """The Markdown table of fault classes in ``docs/effects.md`` (a test checks the page holds it verbatim)."""
    lines = ["| Fault | Points | What its injector does |", "|---|---|---|"]
    lines += [f"| `{f.name}` | {f.points_doc()} | {f.doc} |" for f in REGISTRY]
    return "\n".join(lines)


@dataclass(frozen=True)
class FaultEvent:
    """One event of an effects order: a fault striking a transition at a point."""

    fault: str
    transition: str
    point: str

    def __str__(self) -> str:
        return f"{self.fault} {self.transition} {self.point}"


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
