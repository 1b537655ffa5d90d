"""Sagas: approvals of irreversible steps, failure, compensation, closing a task; faults armed
for the reconciler and compensations, and foreign objects at the external system."""

from __future__ import annotations

from sim.families.effects.external import Request
from sim.families.effects.state import WorkerTask
from sim.families.effects.system import TOOL_CALL_UNITS, RuntimeBase


class SagaOps(RuntimeBase):
    """Approval, abort, compensation (retried until done), close with one terminal outcome."""

    def request_approval(self, worker: str, task: str, name: str) -> None:
        line = f"request_approval {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        if name in wt.view.approval_requested or name in wt.view.approved:
            raise self.refused(line, f"approval of {name} already requested", task)
        self.worker_append(worker, task, "approval_requested", transition=name, at_s=self.env.now)
        return

    def approve(self, task: str, name: str) -> None:
        line = f"approve {name}"
        if name in self.log.reduce(task).approved:
            raise self.refused(line, f"{name} is already approved", task)
        record = self._emit("human", "approved", task, transition=name)
        self._notify(task, "approved", record.fields)
        return

    def fail(self, task: str, name: str) -> None:
        """The verifier finds T's postcondition false (or T cannot be done): the task aborts."""
        line = f"fail {name}"
        if task not in self.leases:
            raise self.refused(line, f"{task} is not accepted", task)
        record = self._emit("verifier", "transition_failed", task, transition=name, reason="postcondition_failed")
        self.abort_s.setdefault(task, self.env.now)
        self._notify(task, "transition_failed", record.fields)
        self._verdict(record, name, "failed")
        return

    def abort(self, worker: str, task: str, name: str) -> None:
        line = f"abort {name} by {worker}"
        self.worker_task(worker, task, line)
        # an at-most-once engine gives a transition up after its first dispatch; otherwise its retries ran out
        reason = "at_most_once" if self.knobs.delivery == "at_most_once" else "retries_exhausted"
        record = self.worker_append(worker, task, "transition_failed", transition=name, reason=reason)
        self.abort_s.setdefault(task, self.env.now)
        self._verdict(record, name, "failed")
        return

    def compensate(self, worker: str, task: str, name: str) -> None:
        line = f"compensate {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        transition = self.transition(wt, name)
        tv = wt.view.transitions.get(name)
        if self.knobs.compensation == "off" or not wt.view.aborted:
            raise self.refused(line, "no compensation is owed (compensation off or task not aborted)", task)
        if transition is None or transition.compensation is None or tv is None or tv.status != "done" or tv.compensated:
            raise self.refused(line, f"{name} has no committed effect to compensate", task)
        age = self.env.now - self.abort_s.get(task, self.env.now)
        if self.consume_fault(task, transition.logical, "compensation_fails"):
            record = self.worker_append(worker, task, "compensation_failed", transition=name,
                                  compensation=transition.compensation, effect=tv.effect,
                                  compute_units=TOOL_CALL_UNITS)
            self._verdict(record, name, "compensation_failed")
            return
        record = self.worker_append(worker, task, "compensated", transition=name, compensation=transition.compensation,
                              effect=tv.effect, age_s=age, compute_units=TOOL_CALL_UNITS)
        for obj in self.external.objects:
            if obj.effect == tv.effect:
                obj.open = False
        self._verdict(record, name, "compensated")
        return

    def close(self, worker: str, task: str) -> None:
        line = f"close by {worker}"
        wt = self.worker_task(worker, task, line)
        outcome = self.closing_outcome(wt)
        if outcome is None:
            raise self.refused(line, f"{task} has unfinished transitions or owed compensations", task)
        self.worker_append(worker, task, "task_terminal", outcome=outcome)
        self._emit("queue", "acked", task, worker=worker)
        return

    def closing_outcome(self, wt: WorkerTask) -> str | None:
        view = wt.view
        if view.terminal is not None:
            return None
        names = self.workflows[wt.version].names()
        if not view.aborted:
            return "succeeded" if all(view.status(n) == "done" for n in names) else None
        if self.knobs.compensation == "off":
            return "failed"
        for transition in self.workflows[wt.version].transitions:
            tv = view.transitions.get(transition.name)
            if transition.compensation and tv is not None and tv.status == "done" and not tv.compensated:
                return None
        return "compensated"

    def arm(self, task: str, name: str, kind: str) -> None:
        self.arm_fault(task, name, kind)
        self._emit("faults", "fault_armed", task, transition=name, fault=kind)
        return

    def read_changes(self, task: str, name: str) -> None:
        """The outside world a read observes moves on: the next observation of T sees a new version."""
        line = f"read_changes {name}"
        transition = self._any_transition(name)
        if transition is None or not transition.is_read:
            raise self.refused(line, f"{name} is not a read: nothing it observes can change", task)
        version = self.external.change_read(task, transition.logical)
        self._emit("git", "read_changed", task, transition=name, logical=transition.logical, version=version)
        return

    def foreign_object(self, task: str, name: str) -> None:
        """Someone else creates an object carrying T's task marker, but not its key or head."""
        transition = self._known_transition(name)
        request = Request("foreign", "human", task, name, transition.logical, transition.object_kind, 1, None,
                          "foreign", "f0e1a2b", 0)
        obj = self.external.create(request, self.env.now, foreign=True)
        self._emit("git", "foreign_created", task, transition=name, effect=obj.effect, number=obj.number,
                   head=obj.head)
        return
