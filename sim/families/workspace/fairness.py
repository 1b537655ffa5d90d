"""The workspace family's liveness: every planned step settles, and no request waits forever for its answer.

Two properties (:mod:`sim.core.liveness`), judged by ``fencesim explore
--liveness`` on the machine's states:

* ``step_settled`` -- every planned step is eventually applied or refused
  with a reason: pending while the plan holds it with no verdict, or while
  the client has not had its verdict (something of it in flight, held back,
  or awaited) -- a rejection the client re-plans settles nothing, a plan
  rejected at admission settles all of its steps;
* ``request_answered`` -- no request waits forever for its ack: a step is
  awaiting from the client's dispatch or re-send until an answer for it
  reaches the client (``ack``).  The state forgets an answer the moment it is
  lost, so what the client still awaits is the model's carry, updated from
  each transition's records.

Fairness, per event, in the state it is taken in:

* ``plan``, ``dispatch``, ``deliver`` and ``ack`` are the system's own
  events, weakly fair (assumption ``system``): one that stays enabled
  happens;
* ``retry`` is the client's timeout, weakly fair (assumption ``timeout``)
  when the client awaits the step's answer and nothing of the step is in
  flight -- a request lost with a preempted executor, or an answer lost on
  the way.  Any other re-send is interference, a fault;
* ``preempt``, ``duplicate``, ``lose_ack``, ``human_edit``, ``replan`` (the
  model swapped) and ``tests_fail`` are faults: finitely many;
* ``settle`` may happen or not (``free``).
"""

from __future__ import annotations

from typing import Sequence

from sim.core.liveness import LeadsTo, LivenessModel
from sim.core.machine import Record
from sim.families.workspace.scenario import Action
from sim.families.workspace.state import State

#: Events the system takes by itself (weakly fair, assumption "system").
SYSTEM = ("plan", "dispatch", "deliver", "ack")
#: Events that may or may not happen.
FREE = ("settle",)

ASSUMPTIONS = {
    "system": "the planner, client, network and executor keep working: a plan, dispatch, delivery or ack that "
              "stays possible happens",
    "timeout": "the client re-sends a request whose answer it has not had, once nothing of it is in flight",
}


def awaiting(carry: frozenset[str], before: State, event: Action, after: State,
             records: Sequence[Record]) -> frozenset[str]:
    """The steps whose answer the client still awaits, after one transition's records."""
    out = set(carry)
    for _, name, fields in records:
        step = str(fields.get("step"))
        if name == "dispatch" and "copy" in fields or name == "retry":
            out.add(step)
        elif name == "ack":
            out.discard(step)
    return frozenset(out)


def in_flight(state: State, step_id: str) -> bool:
    return any(m.step.step_id == step_id for m in state.requests) or any(a.step_id == step_id
                                                                         for a in state.answers)


def role(state: State, carry: frozenset[str], event: Action) -> str:
    if event.kind in SYSTEM:
        return "fair"
    if event.kind == "retry":
        step = str(event.step)
        return "fair" if step in carry and not in_flight(state, step) else "fault"
    return "free" if event.kind in FREE else "fault"


def assumption(event: Action) -> str:
    return "timeout" if event.kind == "retry" else "system"


def unsettled(state: State, carry: frozenset[str]) -> frozenset[str]:
    """Steps planned that have no verdict yet, or whose verdict the client has not had (something of the step
    in flight, held back, or awaited): a rejection the client re-plans is not a step refused."""
    if state.plan_rejected:
        return frozenset()  # the whole plan was refused at admission, with its reason
    planned = frozenset(s.step_id for s in state.steps)
    busy = {m.step.step_id for m in state.requests} | {a.step_id for a in state.answers} | set(state.held)
    return (planned - state.verdict_steps) | (planned & (busy | carry))


def unanswered(state: State, carry: frozenset[str]) -> frozenset[str]:
    return carry


MODEL = LivenessModel(
    properties=(
        LeadsTo("step_settled", unsettled, "every planned step is eventually applied or refused with a reason"),
        LeadsTo("request_answered", unanswered, "no request waits forever for its answer"),
    ),
    role=role, assumption=assumption, assumptions=ASSUMPTIONS, start=frozenset(), update=awaiting)
