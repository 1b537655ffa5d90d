"""The workspace family's transition system: guards written once, transitions over the state value.

Each event of the vocabulary has a guard (``why_not_<kind>``: why it cannot
happen now, or None) and a transition (``<kind>``: the next state and the
history records); ``ack`` and ``lose_ack`` share ``answer``.  Each actor's
guards and transitions are a room of their own, composed here:

* :mod:`~sim.families.workspace.core` -- what they share: the protocol read
  once as typed knobs, the plan, the readers of the state, the seams;
* :mod:`~sim.families.workspace.planner` -- ``plan`` and the router's ``replan``;
* :mod:`~sim.families.workspace.client` -- ``dispatch`` (stamps, drift) and ``retry``;
* :mod:`~sim.families.workspace.network` -- ``deliver``, ``duplicate``, ``ack`` /
  ``lose_ack``, ``settle``;
* :mod:`~sim.families.workspace.human` -- ``human_edit``;
* :mod:`~sim.families.workspace.executor` -- serving a message behind the
  fence, the dedupe store, ``preempt``;
* :mod:`~sim.families.workspace.recovery` -- the client's recovery
  (``on_reject=replan``);
* :mod:`~sim.families.workspace.checkpoints` -- checkpoints, ``tests_fail``, and
  the journal's garbage collection.

A guard and a transition are the documented seam for a planted bug: a
subclass overrides one of them (or ``dying``) and the family takes the class.
The SimPy actors (:mod:`sim.families.workspace.actors`) perform their events
through :meth:`WorkspaceMachine.perform`, and exhaustive search calls the
same guard and step directly.  Every mechanism a knob adds leaves the
states, records and skip reasons of a protocol without it as they were;
what each event reads and writes is declared with the knobs
(:mod:`sim.families.workspace.knobs`) and checked by the law suite.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from sim.core.knobs import Protocol
from sim.core.machine import Record
from sim.families.workspace.checkpoints import CheckpointsAndJournal
from sim.families.workspace.client import Client
from sim.families.workspace.core import ACTORS, Revs, WorkspaceCore
from sim.families.workspace.executor import Executor, domain_of
from sim.families.workspace.human import Human
from sim.families.workspace.network import SETTLE_ROUNDS_MAX, Network
from sim.families.workspace.planner import REPLAN_CACHE_ENTRIES, Planner, _overlaps, model_name
from sim.families.workspace.recovery import ClientRecovery
from sim.families.workspace.scenario import Action, WorkspaceScenario
from sim.families.workspace.state import State

__all__ = ["ACTORS", "REPLAN_CACHE_ENTRIES", "SETTLE_ROUNDS_MAX", "Revs", "WorkspaceCore", "WorkspaceMachine",
           "_overlaps", "domain_of", "model_name"]


class WorkspaceMachine(Planner, Client, Network, Human, Executor, ClientRecovery, CheckpointsAndJournal):
    """Planner, router, client, human, network and executor of one (scenario, protocol).

    A planted bug (for the quality suite) is a subclass overriding one transition; the family takes the
    class (``WorkspaceFamily(machine=...)``).
    """

    def __init__(self, scenario: WorkspaceScenario, protocol: Protocol):
        super().__init__(scenario, protocol)
        self._guards: dict[str, Callable[[State, Action], str | None]] = {
            "plan": self.why_not_plan, "replan": self.why_not_replan, "dispatch": self.why_not_dispatch,
            "retry": self.why_not_retry, "human_edit": self.why_not_human_edit, "preempt": self.why_not_preempt,
            "deliver": self.why_not_deliver, "duplicate": self.why_not_duplicate, "ack": self.why_not_answer,
            "lose_ack": self.why_not_answer, "tests_fail": self.why_not_tests_fail, "settle": self.why_not_settle,
        }
        #: the alphabet :meth:`enabled` last saw and its events by kind (None: a guard was overridden)
        self._enabling: tuple[Sequence[Action] | None, dict[str, list] | None] = (None, None)
        self._steps: dict[str, Callable[[State, Action], tuple[State, list[Record]]]] = {
            "plan": self.plan, "replan": self.replan, "dispatch": self.dispatch, "retry": self.retry,
            "human_edit": self.human_edit, "preempt": self.preempt, "deliver": self.deliver,
            "duplicate": self.duplicate, "ack": self.answer, "lose_ack": self.answer,
            "tests_fail": self.tests_fail, "settle": self.settle,
        }

    def enabled(self, state: State, events: Sequence[Action]) -> list[int]:
        """The positions of the events that can happen in ``state``: each kind's guard decided once for the
        state (the steps in flight, answered, sent), not asked per event, and no reason written for an event
        that cannot happen.  A class overriding a guard (a planted bug) is asked each guard, as the default does;
        the law ``enabled_exact`` holds this to the guards."""
        if events is not self._enabling[0]:
            self._enabling = (events, _kinds(events, self.order) if self._guards_as_written() else None)
        kinds = self._enabling[1]
        if kinds is None:
            return super().enabled(state, events)
        if state.snapshot is None:  # before the plan only the plan itself can happen
            return list(kinds["plan"])
        out = [*kinds["replan"], *kinds["human_edit"]]
        for position, point in kinds["preempt"]:
            if point is None or state.armed is None:
                out.append(position)
        if kinds["dispatch"] and state.steps and not state.plan_rejected:
            out += self._dispatchable(state, kinds["dispatch"])
        if state.requests:
            flying = {message.step.step_id for message in state.requests}
            out += [position for position, step_id in kinds["deliver"] if step_id in flying]
        if state.requests or state.answers:
            out += kinds["settle"]
        if state.answers:
            answered = {answer.step_id for answer in state.answers}
            out += [position for position, step_id in kinds["ack"] if step_id in answered]
        if state.sent:
            sent = {step_id for step_id, _ in state.sent}
            out += [position for position, step_id in kinds["retry"] if step_id in sent]
        out += [position for position, event in kinds["tests_fail"] if self.why_not_tests_fail(state, event) is None]
        out.sort()
        return out

    def _dispatchable(self, state: State, dispatches: list[tuple[int, int, str]]) -> list[int]:
        """The dispatches ``why_not_dispatch`` lets through, of a state with a plan not rejected: the next step of
        the plan (under pipeline=off once its predecessor has a verdict); with on_reject=replan any later one not
        already held back."""
        done = len(state.sent) + len(state.refused)
        waits = self.knobs.pipeline == "off"
        holds = self.knobs.on_reject == "replan"
        out = []
        for position, order, step_id in dispatches:
            if order < done:
                continue
            if order == done and not (waits and order > 0
                                      and state.steps[order - 1].step_id not in state.verdict_steps):
                out.append(position)
            elif holds and step_id not in state.held:
                out.append(position)
        return out

    def _guards_as_written(self) -> bool:
        """Whether every guard :meth:`enabled` decides by kind is this module's own (no subclass changed one)."""
        return all(getattr(type(self), name) is getattr(WorkspaceMachine, name) for name in _DECIDED)

    def why_not(self, state: State, event: Action) -> str | None:
        return self._guards[event.kind](state, event)

    def resolve(self, event: Action):
        return self._guards[event.kind], self._steps[event.kind]

    def step(self, state: State, event: Action) -> tuple[State, list[Record]]:
        return self._steps[event.kind](state, event)


#: The guards :meth:`WorkspaceMachine.enabled` decides from the state by kind, not by asking them.
_DECIDED = ("why_not", "why_not_plan", "why_not_dispatch", "why_not_replan", "why_not_human_edit", "why_not_preempt",
            "why_not_deliver", "why_not_duplicate", "why_not_answer", "why_not_retry", "why_not_settle")


def _kinds(events: Sequence[Action], order: dict[str, int]) -> dict[str, list[Any]] | None:
    """An alphabet's positions by what decides them: ``plan``, ``replan``, ``human_edit`` and ``settle`` by
    position; ``preempt`` with its point; ``deliver`` (and ``duplicate``), ``ack`` (and ``lose_ack``) and
    ``retry`` with their step; ``dispatch`` with the step's place in the plan (``order``) and the step;
    ``tests_fail`` with the event (its guard is asked).  None for an alphabet with an event of another kind
    (each guard is then asked)."""
    kinds: dict[str, list[Any]] = {name: [] for name in (
        "plan", "replan", "human_edit", "settle", "preempt", "deliver", "ack", "retry", "dispatch", "tests_fail")}
    group = {"duplicate": "deliver", "lose_ack": "ack"}
    for position, event in enumerate(events):
        kind = group.get(event.kind, event.kind)
        if kind in ("plan", "replan", "human_edit", "settle"):
            kinds[kind].append(position)
        elif kind == "preempt":
            kinds[kind].append((position, event.point))
        elif kind in ("deliver", "ack", "retry"):
            kinds[kind].append((position, event.step))
        elif kind == "dispatch" and event.step in order:
            kinds[kind].append((position, order[event.step], event.step))
        elif kind == "tests_fail":
            kinds[kind].append((position, event))
        else:
            return None
    return kinds
