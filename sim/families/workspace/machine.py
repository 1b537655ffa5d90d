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

from typing import Callable

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
        self._steps: dict[str, Callable[[State, Action], tuple[State, list[Record]]]] = {
            "plan": self.plan, "replan": self.replan, "dispatch": self.dispatch, "retry": self.retry,
            "human_edit": self.human_edit, "preempt": self.preempt, "deliver": self.deliver,
            "duplicate": self.duplicate, "ack": self.answer, "lose_ack": self.answer,
            "tests_fail": self.tests_fail, "settle": self.settle,
        }

    def why_not(self, state: State, event: Action) -> str | None:
        return self._guards[event.kind](state, event)

    def resolve(self, event: Action):
        return self._guards[event.kind], self._steps[event.kind]

    def step(self, state: State, event: Action) -> tuple[State, list[Record]]:
        return self._steps[event.kind](state, event)
