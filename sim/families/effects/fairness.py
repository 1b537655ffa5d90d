"""The durable-effects family's liveness: every accepted task reaches its terminal outcome, under fairness.

The family's machine (:mod:`sim.families.effects.machine`) has faults for
events: a state is a run paused where a fault can strike, and the rest of the
run is the workers' policy, deterministic.  For liveness the system's part
becomes events too, two of them, beside the faults of the alphabet:

* ``continue`` -- the run goes on from the read it is paused at, without a
  fault there, to its next read (or its end): the workers, the runtime, the
  timers and the lease supervisor act.  Weakly fair (assumption ``system``).
* ``answer`` -- the same from a read where a human is asked for an approval:
  the human answers, after the usual delay.  Weakly fair (assumption
  ``human``); ``explore --liveness --unfair human`` drops it: a human may
  never answer, and the task then waits forever.

Every fault is a fault (finitely many: ``--max-faults``).  The run's
simulated time is not a budget here: it goes on for :data:`HORIZON_S` (30
times the safety runs' budget), and a run still going then is *cut* -- what
follows it is not known, and a property that could fail through it is not
decided.  So two slow human approvals are a wait, never a failure: under
fairness the human answers.

One property: ``task_terminal`` -- each accepted task is pending until its
``task_terminal`` record.  A run that ends with nothing left to happen while
a task is pending is a lasso whose cycle is empty (it stays so forever): the
liveness form of ``no_terminal_outcome``.

What is not seen: a run that loops forever (a reconcile that keeps answering
``unprovable``) never repeats a state here -- the state holds the time and the
history -- so it reaches the horizon and is not decided, never violated.
"""

from __future__ import annotations

from typing import Any, Sequence

from sim.core.kernel import END_COMPLETED
from sim.core.liveness import LeadsTo, LivenessModel
from sim.core.machine import Record
from sim.families.effects.driver import LIVENESS_BUDGET_S
from sim.families.effects.machine import MAX_KERNEL_EVENTS, EffectsMachine, EffectsState, _grow

#: How far ahead a liveness check follows a run: simulated seconds and kernel steps.
HORIZON_S = 30 * LIVENESS_BUDGET_S
HORIZON_EVENTS = 2 * MAX_KERNEL_EVENTS


class SystemStep(str):
    """One of the system's two events (``continue``, ``answer``): its text is its name."""


CONTINUE, ANSWER = SystemStep("continue"), SystemStep("answer")

ASSUMPTIONS = {
    "system": "the workers, the runtime and its timers keep going: a run paused at a read goes on",
    "human": "a human asked for an approval eventually answers",
}


class LiveEffectsMachine(EffectsMachine):
    """The family's machine with the system's two events (see the module docstring)."""

    def __init__(self, machine: EffectsMachine):
        super().__init__(machine.scenario, machine.protocol, machine.runtime, [], machine.name_findings)
        self.safety = machine.safety
        self.max_kernel_events, self.budget_s = HORIZON_EVENTS, HORIZON_S

    def _system(self, state: EffectsState) -> SystemStep | None:
        """The system event the state enables: none once the run has ended."""
        if state.end is not None or state.run.at_read is None:
            return None
        return ANSWER if state.run.at_read[2] == "slow_approval" else CONTINUE

    def enabled(self, state: EffectsState, events: Sequence[Any]) -> list[int]:
        faults = [i for i, e in enumerate(events) if not isinstance(e, SystemStep)]
        positions = [faults[i] for i in super().enabled(state, [events[i] for i in faults])] if faults else []
        system = self._system(state)
        return positions + [i for i, e in enumerate(events) if e is system]

    def why_not(self, state: EffectsState, event: Any) -> str | None:
        if isinstance(event, SystemStep):
            return None if self._system(state) is event else f"{event} cannot happen here"
        return super().why_not(state, event)

    def advance(self, state: EffectsState, event: Any) -> EffectsState:
        if not isinstance(event, SystemStep):
            return super().advance(state, event)
        run = state.run.copy()
        assert run.at_read is not None
        popped, empty = set(state.popped), set(state.empty)
        kind, key, fault, _, _ = run.at_read
        if kind == "all":
            popped.add(key)
        elif not state.took:
            empty.add((key, fault))
        end = run.run(self.max_kernel_events, self.budget_s)
        history = run.rt.history
        return EffectsState(run, frozenset(popped), frozenset(empty), False, end,
                            _grow(state.history, history, state.length), len(history))

    def step(self, state: EffectsState, event: Any) -> tuple[EffectsState, list[Record]]:
        after = self.advance(state, event)
        return after, [(e.actor, e.event, dict(e.fields)) for e in list(after.rt.history)[state.length:]]


def unfinished(state: EffectsState, carry: Any) -> frozenset[str]:
    """The accepted tasks with no terminal outcome yet."""
    accepted, terminal = set(), set()
    for event in state.rt.history:
        if event.event == "accepted":
            accepted.add(str(event.get("task")))
        elif event.event == "task_terminal":
            terminal.add(str(event.get("task")))
    return frozenset(accepted - terminal)


#: What resolves an unknown outcome: a reconciliation that proved it either way, its receipt, a retry under its
#: key, a failure recorded, or a human handed it.
RESOLVES = frozenset({"receipt_recorded", "dispatched", "transition_failed", "human_exception", "human_resolved"})


def unresolved(state: EffectsState, carry: Any) -> frozenset[str]:
    """The transitions whose outcome is unknown (a timeout) and not yet resolved, as ``task/transition``."""
    open_: set[str] = set()
    for event in state.rt.history:
        key = f"{event.get('task')}/{event.get('transition')}"
        if event.event == "timed_out" and event.get("outcome") == "unknown":
            open_.add(key)
        elif key in open_ and (event.event in RESOLVES or event.event == "reconciled"
                               and event.get("result") in ("found", "not_found")):
            open_.discard(key)
    return frozenset(open_)


def role(state: EffectsState, carry: Any, event: Any) -> str:
    return "fair" if isinstance(event, SystemStep) else "fault"


def assumption(event: Any) -> str:
    return "human" if event is ANSWER else "system"


def cut(state: EffectsState) -> str | None:
    """A run stopped by the horizon (time or kernel steps) with work left: its future is not known."""
    if state.end is None or state.end.reason == END_COMPLETED:
        return None
    return "simulated_horizon" if state.end.reason == "time_limit" else "kernel_event_limit"


def model(machine: EffectsMachine) -> LivenessModel:
    return LivenessModel(
        properties=(LeadsTo("task_terminal", unfinished,
                            "every accepted task eventually reaches one terminal, evidenced outcome"),
                    LeadsTo("unknown_resolved", unresolved,
                            "every unknown outcome is eventually resolved: reconciled, retried under its key, or "
                            "handed to a human")),
        role=role, assumption=assumption, assumptions=ASSUMPTIONS, machine=LiveEffectsMachine(machine),
        events=(CONTINUE, ANSWER), cut=cut)
