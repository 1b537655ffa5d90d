"""The runtime of one run: every operation of the durable-effects vocabulary on one object.

Both drivers call these operations and nothing else -- the scripted replay
(:mod:`sim.families.effects.runner`) in the order a story lists, the
autonomous run (:mod:`sim.families.effects.autorun`) in the order its
worker policy and fault schedule produce.  An operation that cannot happen
at its point under the protocol raises ``Skipped``, is recorded as
``skipped`` and changes nothing, so one script replays under every protocol.

The state of a run and its bookkeeping (records, the log, a worker's write,
lookups) is :class:`~sim.families.effects.system.RuntimeBase`; each concern's
operations are plain functions of that state in their own module -- the
queue and leases (``queue``), versions (``versions``), the four moments
(``moments``), recovery (``recovery``), approvals and sagas (``sagas``) --
named here as the runtime's methods.  A subclass that overrides one (the
quality suite's planted bugs) changes it wherever a driver or a script
calls it.
"""

from __future__ import annotations

from sim.families.effects import moments, queue, recovery, sagas, versions
from sim.families.effects.system import Fenced, OperationSkipped, RuntimeBase

__all__ = ["Fenced", "OperationSkipped", "Runtime"]


class Runtime(RuntimeBase):
    """One run's state and the operations of the vocabulary on it."""

    # the queue and the leases
    accept = queue.accept
    lease = queue.lease
    lease_expire = queue.lease_expire
    deliver = queue.deliver
    crash = queue.crash
    # versions
    upgrade = versions.upgrade
    # the four moments, and a request between them
    intent = moments.intent
    dispatch = moments.dispatch
    commit = moments.commit
    respond = moments.respond
    lose_response = moments.lose_response
    lose_request = moments.lose_request
    duplicate_request = moments.duplicate_request
    timeout = moments.timeout
    receipt = moments.receipt
    # an unknown outcome
    reconcile = recovery.reconcile
    escalate = recovery.escalate
    resolve = recovery.resolve
    # approvals and sagas
    request_approval = sagas.request_approval
    approve = sagas.approve
    fail = sagas.fail
    abort = sagas.abort
    compensate = sagas.compensate
    close = sagas.close
    closing_outcome = sagas.closing_outcome
    arm = sagas.arm
    read_changes = sagas.read_changes
    foreign_object = sagas.foreign_object
