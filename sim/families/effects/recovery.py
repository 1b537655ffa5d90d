"""Recovering an unknown outcome: reconciliation against the external system, escalation to a human.

Query by key, then by task marker and head; prove, disprove, or hand to a human."""

from __future__ import annotations

from sim.families.effects.state import Evidence, WorkerTask
from sim.families.effects.system import HUMAN_EXCEPTION_UNITS, LOOKUP_UNITS, RuntimeBase
from sim.families.effects.workflow import Transition


def reconcile(rt: RuntimeBase, worker: str, task: str, name: str) -> None:
    line = f"reconcile {name} by {worker}"
    if rt.knobs.reconcile == "off":
        raise rt.refused(line, "reconcile=off", task)
    wt = rt.worker_task(worker, task, line)
    status = wt.view.status(name)
    if status not in ("unknown", "dispatched", "found"):
        raise rt.refused(line, f"{name} is {status}: nothing to reconcile", task)
    transition = rt.transition(wt, name)
    if transition is None:
        raise rt.refused(line, f"{name} is not in workflow version {wt.version}", task)
    if transition.is_read:
        raise rt.refused(line, f"{name} is a read: it created nothing to reconcile; read again", task)
    result, query, obj = _lookup(rt, wt, task, transition)
    since = rt.last_dispatch_s.get((task, name))
    rt.worker_append(worker, task, "reconciled", transition=name, result=result, query=query,
                     effect=obj.effect if obj else None, number=obj.number if obj else None,
                     latency_s=None if since is None else rt.env.now - since,
                     compute_units=LOOKUP_UNITS)
    if result == "found":
        wt.evidence[name] = Evidence("reconciliation", "found", obj.effect)
    return


def _lookup(rt: RuntimeBase, wt: WorkerTask, task: str, transition: Transition):
    """The reconciler: query by key, then by task marker and head; prove or fail to prove.

    What the endpoint can be queried by (``reconcile_by``) bounds it: by key then marker, by marker only, or
    not at all -- then nothing can be proved and the outcome goes to a human."""
    by = transition.queried_by
    query = "key" if rt.knobs.idempotency != "none" and by == "key" else "marker"
    if rt.consume_fault(task, transition.logical, "unprovable"):
        return "unprovable", query if by != "none" else "none", None
    if by == "none":
        return "unprovable", "none", None
    view = wt.view.get(transition.name)
    expected_head = rt.arguments(task, transition)["head"]
    trusting = rt.knobs.receipt_check == "trusting"
    obj = rt.external.by_key(view.key, rt.env.now) if by == "key" else None
    if obj is not None:
        if trusting or (obj.fingerprint == view.fingerprint and obj.head == expected_head and obj.open):
            return "found", "key", obj
        return "unprovable", "key", obj
    for candidate in rt.external.by_marker(task, transition.logical, transition.object_kind):
        if trusting:
            return "found", "marker", candidate
        if (not candidate.foreign and candidate.generation == view.generation
            and candidate.head == expected_head and candidate.open):
            return "found", "marker", candidate
    return "not_found", query, None


def escalate(rt: RuntimeBase, worker: str, task: str, name: str) -> None:
    line = f"escalate {name} by {worker}"
    wt = rt.worker_task(worker, task, line)
    status = wt.view.status(name)
    rejected = wt.evidence.get(name) is not None and wt.evidence[name].outcome == "rejected"
    if status not in ("unknown", "unprovable") and not rejected:
        raise rt.refused(line, f"{name} is {status}: nothing for a human to decide", task)
    record = rt.worker_append(worker, task, "human_exception", transition=name,
                              reason="fingerprint_conflict" if rejected else status,
                              compute_units=HUMAN_EXCEPTION_UNITS)
    wt.evidence.pop(name, None)
    rt._verdict(record, name, "escalated")
    return


def resolve(rt: RuntimeBase, task: str, name: str) -> None:
    """A human looks at the external system itself and records what is true."""
    line = f"resolve {name}"
    view = rt.log.reduce(task)
    if view.status(name) != "escalated":
        raise rt.refused(line, f"{name} is not waiting for a human", task)
    transition = rt._known_transition(name)
    tv = view.get(name)
    head = rt.arguments(task, transition)["head"]
    truth = next((o for o in rt.external.by_marker(task, transition.logical, transition.object_kind)
                  if not o.foreign and o.generation == tv.generation and o.head == head and o.open), None)
    record = rt._emit("human", "human_resolved", task, transition=name,
                      outcome="found" if truth else "not_found", effect=truth.effect if truth else None)
    rt._notify(task, "human_resolved", record.fields)
    if truth is not None:
        receipt = rt._emit("human", "receipt_recorded", task, transition=name, effect=truth.effect,
                           receipt=truth.effect, source="human")
        rt._notify(task, "receipt_recorded", receipt.fields)
        rt._verdict(receipt, name, "done:human")
    return
