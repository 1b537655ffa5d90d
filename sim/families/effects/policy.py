"""The worker's policy: what a worker does next for a task, from its own view of the log.

A worker acts on what it knows -- its reduction of the events it read when
it resumed and of what it wrote since -- so a zombie that outlived its
lease acts on a stale view.  The policy never draws a random number and
never looks at the external system except through recorded evidence.
"""

from __future__ import annotations

#: Dispatches of one transition before the worker gives up and aborts the task.
MAX_ATTEMPTS = 5
#: With ``approval=off``, how long a worker waits for an approval it asked for before going ahead.
APPROVAL_GRACE_S = 600.0


def approval_wait_left(rt, view, name: str) -> float | None:
    """Seconds the worker still waits for T's approval (None: it need not wait)."""
    if name in view.approved:
        return None
    if rt.knobs.approval == "on":
        return float("inf")
    asked = view.approval_requested.get(name)
    if asked is None:
        return float("inf")
    left = asked + APPROVAL_GRACE_S - rt.env.now
    return left if left > 0 else None


def _may_dispatch_again(rt, view, transition) -> bool:
    """Whether a transition dispatched before may be dispatched again: fewer than MAX_ATTEMPTS dispatches, and
    (``delivery=at_most_once``) none at all -- an at-most-once engine gives the transition up instead (a read,
    which changes nothing, is read again)."""
    attempts = view.get(transition.name).attempts
    return attempts < MAX_ATTEMPTS and (rt.knobs.delivery == "at_least_once" or attempts == 0 or transition.is_read)


def decide(rt, worker: str, task: str) -> tuple[str, str] | None:
    """The next operation a worker's policy takes for a task and the transition it names ("" for ``close``),
    from its own view (None: nothing to do)."""
    wt = rt.workers[worker].tasks[task]
    view = wt.view
    if view.terminal is not None:
        return None
    workflow = rt.workflow_of(wt.version)
    if view.aborted:
        if rt.knobs.compensation == "on":
            for transition in reversed(workflow.transitions):
                tv = view.transitions.get(transition.name)
                if transition.compensation and tv is not None and tv.status == "done" and not tv.compensated:
                    return "compensate", transition.name
        return "close", ""
    for transition in workflow.transitions:
        name = transition.name
        status = view.status(name)
        if status == "done":
            continue
        if status == "pending":
            if rt.approval_due(task, transition) and name not in view.approved:
                if name not in view.approval_requested:
                    return "request_approval", name
                if approval_wait_left(rt, view, name) is not None:
                    return "wait_approval", name
            return "intent", name
        if status == "intent":
            return "dispatch", name
        if status == "dispatched":
            evidence = wt.evidence.get(name)
            if evidence is not None:
                return ("escalate" if evidence.outcome == "rejected" else "receipt"), name
            return "timeout", name
        if status == "unknown":
            if rt.knobs.reconcile == "on" and not transition.is_read:  # a read is simply read again
                return "reconcile", name
            # no way to prove the outcome: a blind retry under the same key
            return ("dispatch" if _may_dispatch_again(rt, view, transition) else "abort"), name
        if status == "failed":
            return ("dispatch" if _may_dispatch_again(rt, view, transition) else "abort"), name
        if status == "not_found":
            return ("dispatch" if rt.knobs.delivery == "at_least_once" or transition.is_read else "abort"), name
        if status == "found":
            return ("receipt" if name in wt.evidence else "reconcile"), name
        if status == "unprovable":
            return "escalate", name
        if status == "escalated":
            return "wait_human", name
    return "close", ""
