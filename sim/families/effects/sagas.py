"""Sagas: approvals of irreversible steps, failure, compensation, closing a task; faults armed
for the reconciler and compensations, and foreign objects at the external system."""

from __future__ import annotations

from sim.families.effects.state import WorkerTask
from sim.families.effects.external import Request
from sim.families.effects.system import FENCED, OK, TOOL_CALL_UNITS


class SagaOps:
    """Approval, abort, compensation (retried until done), close with one terminal outcome."""

    def request_approval(self, worker: str, task: str, name: str) -> str:
        line = f"request_approval {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        if isinstance(wt, str):
            return wt
        if name in wt.view.approval_requested or name in wt.view.approved:
            return self.skip(line, f"approval of {name} already requested", task)
        record = self._append(worker, task, "approval_requested", transition=name, at_s=self.env.now)
        return OK if record is not None else FENCED

    def approve(self, task: str, name: str) -> str:
        line = f"approve {name}"
        if name in self.log.reduce(task).approved:
            return self.skip(line, f"{name} is already approved", task)
        record = self._emit("human", "approved", task, transition=name)
        self._notify(task, "approved", record.fields)
        return OK

    def fail(self, task: str, name: str) -> str:
        """The verifier finds T's postcondition false (or T cannot be done): the task aborts."""
        line = f"fail {name}"
        if task not in self.leases:
            return self.skip(line, f"{task} is not accepted", task)
        record = self._emit("verifier", "transition_failed", task, transition=name, reason="postcondition_failed")
        self.abort_s.setdefault(task, self.env.now)
        self._notify(task, "transition_failed", record.fields)
        self._verdict(record, name, "failed")
        return OK

    def abort(self, worker: str, task: str, name: str) -> str:
        line = f"abort {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        if isinstance(wt, str):
            return wt
        record = self._append(worker, task, "transition_failed", transition=name, reason="retries_exhausted")
        if record is None:
            return FENCED
        self.abort_s.setdefault(task, self.env.now)
        self._verdict(record, name, "failed")
        return OK

    def compensate(self, worker: str, task: str, name: str) -> str:
        line = f"compensate {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        if isinstance(wt, str):
            return wt
        transition = self.transition(wt, name)
        tv = wt.view.transitions.get(name)
        if self.protocol.compensation == "off" or not wt.view.aborted:
            return self.skip(line, "no compensation is owed (compensation off or task not aborted)", task)
        if transition is None or transition.compensation is None or tv is None or tv.status != "done" or tv.compensated:
            return self.skip(line, f"{name} has no committed effect to compensate", task)
        age = self.env.now - self.abort_s.get(task, self.env.now)
        if self.consume_fault(task, transition.logical, "compensation_fails"):
            record = self._append(worker, task, "compensation_failed", transition=name,
                                  compensation=transition.compensation, effect=tv.effect,
                                  compute_units=TOOL_CALL_UNITS)
            if record is not None:
                self._verdict(record, name, "compensation_failed")
            return OK if record is not None else FENCED
        record = self._append(worker, task, "compensated", transition=name, compensation=transition.compensation,
                              effect=tv.effect, age_s=age, compute_units=TOOL_CALL_UNITS)
        if record is None:
            return FENCED
        for obj in self.external.objects:
            if obj.effect == tv.effect:
                obj.open = False
        self._verdict(record, name, "compensated")
        return OK

    def close(self, worker: str, task: str) -> str:
        line = f"close by {worker}"
        wt = self.worker_task(worker, task, line)
        if isinstance(wt, str):
            return wt
        outcome = self.closing_outcome(wt)
        if outcome is None:
            return self.skip(line, f"{task} has unfinished transitions or owed compensations", task)
        record = self._append(worker, task, "task_terminal", outcome=outcome)
        if record is None:
            return FENCED
        self._emit("queue", "acked", task, worker=worker)
        return OK

    def closing_outcome(self, wt: WorkerTask) -> str | None:
        view = wt.view
        if view.terminal is not None:
            return None
        names = self.workflows[wt.version].names()
        if not view.aborted:
            return "succeeded" if all(view.status(n) == "done" for n in names) else None
        if self.protocol.compensation == "off":
            return "failed"
        for name in names:
            transition = self.workflows[wt.version].get(name)
            tv = view.transitions.get(name)
            if transition.compensation and tv is not None and tv.status == "done" and not tv.compensated:
                return None
        return "compensated"

    def arm(self, task: str, name: str, kind: str) -> str:
        self.arm_fault(task, name, kind)
        self._emit("faults", "fault_armed", task, transition=name, fault=kind)
        return OK

    def foreign_object(self, task: str, name: str) -> str:
        """Someone else creates an object carrying T's task marker, but not its key or head."""
        transition = self._any_transition(name)
        request = Request("foreign", "human", task, name, transition.logical, transition.object_kind, 1, None,
                          "foreign", "f0e1a2b", 0)
        obj = self.external.create(request, self.env.now, foreign=True)
        self._emit("git", "foreign_created", task, transition=name, effect=obj.effect, number=obj.number,
                   head=obj.head)
        return OK
