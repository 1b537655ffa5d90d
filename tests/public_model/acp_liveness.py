"""ACP-SB's liveness, as the spec states it: ``Spec == Init /\\ [][progN]_vars /\\ fairness`` with

    fairness == /\\ \\A i \\in participants : WF_vars(parProg(i))
                /\\ WF_vars(coordProgB)

(deaths, ``parDie(i)`` and ``coordDie``, are left outside fairness).  The spec's properties, and what its
configuration's comments record of TLC:

* ``AC3_2 == <> (every participant decided \\/ some participant faulty \\/ the coordinator faulty)`` -- liveness,
  checked by TLC: holds;
* ``AC5 == <> \\A i : participant i decided \\/ faulty`` -- "the termination property that this SB algorithm
  doesn't have": TLC finds it violated;
* ``DecisionReachedNoFault == (\\A i : alive) ~> (\\A k : decided)`` -- listed among the invalid properties:
  TLC finds it violated.

Each WF conjunct is one fairness group: ``parProg(i)`` is participant ``i``'s four actions, ``coordProgB`` the
coordinator's ``makeDecision`` and its actions on every participant.  Dropping the coordinator's fairness
(``unfair=["coordinator"]``) is the planted fairness bug: the coordinator may then stop forever, and AC3_2 no
longer holds.
"""

from __future__ import annotations

from typing import Any, Sequence

from acp_family import COORDINATOR_ON, AcpFamily, AcpState, Action  # the tests put this folder on the path

from sim.core.knobs import Protocol
from sim.core.liveness import Eventually, LeadsTo, LivenessModel
from sim.core.machine import Record
from sim.core.workload import Workload

DECIDED = ("commit", "abort")


def ac3_2(state: AcpState, carry: Any) -> bool:
    return (all(p.decision in DECIDED for p in state.participants) or any(not p.alive for p in state.participants)
            or state.coordinator is not None and not state.coordinator.alive)


def ac5(state: AcpState, carry: Any) -> bool:
    return all(p.decision in DECIDED or not p.alive for p in state.participants)


def _all_alive(state: AcpState) -> bool:
    return all(p.alive for p in state.participants)


def _all_decided(state: AcpState) -> bool:
    return all(p.decision != "undecided" for p in state.participants)


def owed(carry: Any, before: AcpState, event: Action, after: AcpState, records: Sequence[Record]) -> bool:
    """``P ~> Q`` keeps whether ``P`` held since ``Q`` last did (a history variable)."""
    return bool((carry or _all_alive(before)) and not _all_decided(before))


def decision_pending(state: AcpState, carry: Any) -> frozenset[str]:
    due = (carry or _all_alive(state)) and not _all_decided(state)
    return frozenset(("decision",)) if due and state.coordinator is not None else frozenset()


def role(state: AcpState, carry: Any, event: Action) -> str:
    return "free" if event.kind in ("parDie", "coordDie") else "fair"


def group(event: Action) -> Any:
    if event.kind == "makeDecision" or event.kind in COORDINATOR_ON:
        return "coordProgB"
    return ("parProg", event.who)


def assumption(event: Action) -> str:
    return "coordinator" if group(event) == "coordProgB" else "participants"


MODEL = LivenessModel(
    properties=(Eventually("AC3_2", ac3_2), Eventually("AC5", ac5),
                LeadsTo("DecisionReachedNoFault", decision_pending)),
    role=role, group=group, assumption=assumption, start=False, update=owed,
    assumptions={"coordinator": "WF(coordProgB): the coordinator's enabled work is eventually done",
                 "participants": "WF(parProg(i)) for each participant i"})


class LiveAcpFamily(AcpFamily):
    """ACP-SB with the spec's fairness and liveness properties."""

    def liveness(self, workload: Workload, protocol: Protocol) -> LivenessModel:
        return MODEL


LIVE_FAMILY = LiveAcpFamily()
