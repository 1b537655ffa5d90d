"""Sagas: approvals of irreversible steps, failure, compensation, closing a task; faults armed
for the reconciler and compensations, and foreign objects at the external system.

Approval, abort, compensation (retried until done), close with one terminal outcome."""

from __future__ import annotations

from sim.families.effects.external import Request
from sim.families.effects.state import WorkerTask
from sim.families.effects.system import TOOL_CALL_UNITS, RuntimeBase


def request_approval(rt: RuntimeBase, worker: str, task: str, name: str) -> None:
    line = f"request_approval {name} by {worker}"
    wt = rt.worker_task(worker, task, line)
    if name in wt.view.approval_requested or name in wt.view.approved:
        raise rt.refused(line, f"approval of {name} already requested", task)
    rt.worker_append(worker, task, "approval_requested", transition=name, at_s=rt.env.now)
    return


def approve(rt: RuntimeBase, task: str, name: str) -> None:
    line = f"approve {name}"
    if name in rt.log.reduce(task).approved:
        raise rt.refused(line, f"{name} is already approved", task)
    record = rt._emit("human", "approved", task, transition=name)
    rt._notify(task, "approved", record.fields)
    return


def fail(rt: RuntimeBase, task: str, name: str) -> None:
    """The verifier finds T's postcondition false (or T cannot be done): the task aborts."""
    line = f"fail {name}"
    if task not in rt.leases:
        raise rt.refused(line, f"{task} is not accepted", task)
    record = rt._emit("verifier", "transition_failed", task, transition=name, reason="postcondition_failed")
    rt.abort_s.setdefault(task, rt.env.now)
    rt._notify(task, "transition_failed", record.fields)
    rt._verdict(record, name, "failed")
    return


def abort(rt: RuntimeBase, worker: str, task: str, name: str) -> None:
    line = f"abort {name} by {worker}"
    rt.worker_task(worker, task, line)
    # an at-most-once engine gives a transition up after its first dispatch; otherwise its retries ran out
    reason = "at_most_once" if rt.knobs.delivery == "at_most_once" else "retries_exhausted"
    record = rt.worker_append(worker, task, "transition_failed", transition=name, reason=reason)
    rt.abort_s.setdefault(task, rt.env.now)
    rt._verdict(record, name, "failed")
    return


def compensate(rt: RuntimeBase, worker: str, task: str, name: str) -> None:
    line = f"compensate {name} by {worker}"
    wt = rt.worker_task(worker, task, line)
    transition = rt.transition(wt, name)
    tv = wt.view.transitions.get(name)
    if rt.knobs.compensation == "off" or not wt.view.aborted:
        raise rt.refused(line, "no compensation is owed (compensation off or task not aborted)", task)
    if transition is None or transition.compensation is None or tv is None or tv.status != "done" or tv.compensated:
        raise rt.refused(line, f"{name} has no committed effect to compensate", task)
    age = rt.env.now - rt.abort_s.get(task, rt.env.now)
    if rt.consume_fault(task, transition.logical, "compensation_fails"):
        record = rt.worker_append(worker, task, "compensation_failed", transition=name,
                                  compensation=transition.compensation, effect=tv.effect,
                                  compute_units=TOOL_CALL_UNITS)
        rt._verdict(record, name, "compensation_failed")
        return
    record = rt.worker_append(worker, task, "compensated", transition=name, compensation=transition.compensation,
                              effect=tv.effect, age_s=age, compute_units=TOOL_CALL_UNITS)
    for obj in rt.external.objects:
        if obj.effect == tv.effect:
            obj.open = False
    rt._verdict(record, name, "compensated")
    return


def close(rt: RuntimeBase, worker: str, task: str) -> None:
    line = f"close by {worker}"
    wt = rt.worker_task(worker, task, line)
    outcome = closing_outcome(rt, wt)
    if outcome is None:
        raise rt.refused(line, f"{task} has unfinished transitions or owed compensations", task)
    rt.worker_append(worker, task, "task_terminal", outcome=outcome)
    rt._emit("queue", "acked", task, worker=worker)
    return


def closing_outcome(rt: RuntimeBase, wt: WorkerTask) -> str | None:
    view = wt.view
    if view.terminal is not None:
        return None
    names = rt.workflows[wt.version].names()
    if not view.aborted:
        return "succeeded" if all(view.status(n) == "done" for n in names) else None
    if rt.knobs.compensation == "off":
        return "failed"
    for transition in rt.workflows[wt.version].transitions:
        tv = view.transitions.get(transition.name)
        if transition.compensation and tv is not None and tv.status == "done" and not tv.compensated:
            return None
    return "compensated"


def arm(rt: RuntimeBase, task: str, name: str, kind: str) -> None:
    rt.arm_fault(task, name, kind)
    rt._emit("faults", "fault_armed", task, transition=name, fault=kind)
    return


def read_changes(rt: RuntimeBase, task: str, name: str) -> None:
    """The outside world a read observes moves on: the next observation of T sees a new version."""
    line = f"read_changes {name}"
    transition = rt._any_transition(name)
    if transition is None or not transition.is_read:
        raise rt.refused(line, f"{name} is not a read: nothing it observes can change", task)
    version = rt.external.change_read(task, transition.logical)
    rt._emit("git", "read_changed", task, transition=name, logical=transition.logical, version=version)
    return


def foreign_object(rt: RuntimeBase, task: str, name: str) -> None:
    """Someone else creates an object carrying T's task marker, but not its key or head."""
    transition = rt._known_transition(name)
    request = Request(request_id="foreign", worker="human", task=task, transition=name, logical=transition.logical,
                      kind=transition.object_kind, generation=1, key=None, fingerprint="foreign", head="f0e1a2b",
                      attempt=0)
    obj = rt.external.create(request, rt.env.now, foreign=True)
    rt._emit("git", "foreign_created", task, transition=name, effect=obj.effect, number=obj.number,
             head=obj.head)
    return
