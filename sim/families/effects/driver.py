"""The autonomous run's clock and the worker's operations: what the processes of a run
(:mod:`sim.families.effects.actors`, run by :mod:`sim.families.effects.autorun`) wait for and do.

Workers follow the protocol's policy (:mod:`sim.families.effects.policy`);
the fault schedule (data) says where faults strike and the injectors
(:mod:`sim.families.effects.injectors`, named by the fault registry) apply them.  A run only *reads*
the schedule: it never draws a random number.  All state changes go through
the runtime's operations.
"""

from __future__ import annotations

from sim.families.effects.runtime import Runtime
from sim.families.effects.transition_fields import ACK_TIMEOUT_S

#: Simulated durations (seconds).  Named here so a review can read the model's clock.
STEP_S = 1.0  # a worker's durable append, one model/tool step
COMMIT_LATENCY_S = 1.0  # request -> effect committed at the external system
RESPONSE_LATENCY_S = 0.5  # commit -> response at the worker
# ACK_TIMEOUT_S (10 s): a worker stops waiting for a response -- the default timeout class of a transition,
# declared with the transition fields (sim/families/effects/transition_fields.py).
LEASE_TTL_S = 28.0  # a silent worker's lease expires this long after its last heartbeat
DELAY_ACK_S = 60.0  # a delayed acknowledgement arrives this late (beyond ACK_TIMEOUT_S)
SLOW_COMMIT_S = ACK_TIMEOUT_S + STEP_S + 0.5  # a "timeout": commits after the worker gave up and reconciled
APPROVAL_DELAY_S = 300.0  # a human approves an irreversible step
SLOW_APPROVAL_S = 2 * 24 * 3600.0  # ... or, with the slow_approval fault, two days later
HUMAN_RESOLVE_S = 3600.0  # a human resolves an exception
COMPENSATION_RETRY_S = 30.0
LIVENESS_BUDGET_S = 3 * 24 * 3600.0  # a run's simulated time (after a script's last event): then time_limit


def ack_timeout_s(rt: Runtime, name: str) -> float:
    """How long a worker waits for a response of T: its timeout class, else ACK_TIMEOUT_S."""
    transition = rt._any_transition(name)
    declared = transition.timeout_s if transition is not None else None
    return ACK_TIMEOUT_S if declared is None else declared


def late_s(rt: Runtime, name: str, flag: str) -> float:
    """How late a delayed request (``delay_ack``) or a slow commit (``timeout``) of T arrives: past the worker's
    wait for T by as much as past the default wait."""
    extra = DELAY_ACK_S if flag == "delay_request" else SLOW_COMMIT_S
    waited = ack_timeout_s(rt, name)
    return extra if waited == ACK_TIMEOUT_S else waited + (extra - ACK_TIMEOUT_S)


def perform(rt: Runtime, op: str, worker: str, task: str, name: str) -> None:
    """A worker's chosen operation on the runtime (the policy's ``op`` names it)."""
    if op == "close":
        return rt.close(worker, task)
    method = {
        "intent": rt.intent, "dispatch": rt.dispatch, "timeout": rt.timeout, "reconcile": rt.reconcile,
        "receipt": rt.receipt, "escalate": rt.escalate, "request_approval": rt.request_approval,
        "compensate": rt.compensate, "abort": rt.abort,
    }[op]
    return method(worker, task, name)
