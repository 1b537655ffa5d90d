"""The four moments of a transition: intent recorded, dispatched, committed externally, receipt recorded.

Also what happens to a request between them: a lost request, a lost or late
response, a duplicated request, and the worker's timeout."""

from __future__ import annotations

from sim.families.effects.state import Evidence, WorkerTask, fingerprint_of
from sim.families.effects.external import Request
from sim.families.effects.system import Fenced, MODEL_CALL_UNITS, TOOL_CALL_UNITS


class MomentOps:
    """Intent, dispatch, commit, response, timeout, receipt."""

    def intent(self, worker: str, task: str, name: str) -> None:
        line = f"intent {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        transition = self.transition(wt, name)
        if transition is None:
            raise self.refused(line, f"{name} is not in workflow version {wt.version}", task)
        status = wt.view.status(name)
        if status != "pending":
            raise self.refused(line, f"{name} is already {status}", task)
        if transition.effect_class == "irreversible" and self.approval and name not in wt.view.approved:
            raise self.refused(line, f"{name} is irreversible and not approved", task)
        generation = wt.view.get(name).generation
        arguments = self.arguments(task, transition)
        record = self.worker_append(worker, task, "intent_recorded", transition=name, logical=transition.logical,
                              generation=generation, key=self.key_of(task, transition, generation),
                              fingerprint=fingerprint_of(arguments), effect_class=transition.effect_class,
                              compute_units=MODEL_CALL_UNITS)
        return

    def dispatch(self, worker: str, task: str, name: str, changed: bool = False) -> None:
        line = f"{'retry_changed' if changed else 'dispatch'} {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        transition = self.transition(wt, name)
        if transition is None:
            raise self.refused(line, f"{name} is not in workflow version {wt.version}", task)
        status = wt.view.status(name)
        allowed = {"intent", "failed", "not_found"}
        if self.protocol.reconcile == "off":
            allowed.add("unknown")
        if changed:
            allowed |= {"dispatched", "unknown"}
        if status not in allowed:
            reason = ("its outcome is unknown: reconcile first" if status in ("unknown", "dispatched")
                      else f"{name} is {status}")
            raise self.refused(line, reason, task)
        view = wt.view.get(name)
        arguments = self.arguments(task, transition)
        if not changed and self.consume_fault(task, transition.logical, "retry_changed"):
            changed = True  # the retry regenerates its request body (a new model call)
        if changed:
            arguments = dict(arguments, body_revision=view.attempts + 1)
        fingerprint = fingerprint_of(arguments)
        self.request_count += 1
        request_id = f"r{self.request_count}"
        record = self.worker_append(worker, task, "dispatched", transition=name, attempt=view.attempts + 1,
                              request=request_id, key=view.key, fingerprint=fingerprint,
                              changed_arguments=changed or None, compute_units=TOOL_CALL_UNITS)
        self.last_dispatch_s[(task, name)] = self.env.now
        request = Request(request_id, worker, task, name, transition.logical, transition.object_kind,
                          view.generation, view.key, fingerprint, arguments["head"], view.attempts,
                          transition.effect_class)
        self.in_flight.append(request)
        self.last_request = request
        if self.protocol.checkpoint == "optimistic":
            self._checkpoint(worker, task, wt, extra=name)
        if self.on_dispatch is not None:
            self.on_dispatch(request)
        return

    def commit(self, task: str, name: str, request_id: str | None = None) -> None:
        line = f"commit {name}" + (f" {request_id}" if request_id else "")
        request = self._find(self.in_flight, task, name, request_id)
        if request is None:
            raise self.refused(line, f"no request of {name} in flight", task)
        self.in_flight.remove(request)
        outcome, obj = self.external.handle(request, self.env.now)
        common = dict(transition=name, logical=request.logical, generation=request.generation,
                      request=request.request_id,
                      key=request.key if self.external.keyed(request) else None,
                      fingerprint=request.fingerprint, effect=obj.effect, number=obj.number, head=obj.head)
        if outcome == "committed":
            transition = self._any_transition(name)
            self._emit("git", "committed", task, effect_class=transition.effect_class,
                       compensation=transition.compensation, **common)
        elif outcome == "deduplicated":
            self._emit("git", "deduplicated", task, stored_fingerprint=obj.fingerprint, **common)
        else:
            record = self._emit("git", "rejected", task, reason="fingerprint_conflict",
                                stored_fingerprint=obj.fingerprint, **common)
            self._verdict(record, name, "rejected:fingerprint_conflict")
        self.responses.append((request, outcome, obj))
        return

    def respond(self, task: str, name: str, request_id: str | None = None) -> None:
        line = f"respond {name}" + (f" {request_id}" if request_id else "")
        item = self._find(self.responses, task, name, request_id, get=lambda r: r[0])
        if item is None:
            raise self.refused(line, f"no response of {name} pending", task)
        self.responses.remove(item)
        request, outcome, obj = item
        memory = self.workers.get(request.worker)
        task_memory = memory.tasks.get(task) if memory is not None and memory.alive else None
        if task_memory is None:
            self._emit("network", "response_lost", task, transition=name, request=request.request_id,
                       worker=request.worker, reason="receiver_gone", effect=obj.effect)
            return
        late = task_memory.view.status(name) not in ("dispatched",) or None
        self._emit(request.worker, "response_delivered", task, transition=name, request=request.request_id,
                   outcome=outcome, effect=obj.effect, number=obj.number, late=late)
        if not late:
            task_memory.evidence[name] = Evidence("response", outcome, obj.effect, request.request_id)
        waiting = task_memory.waiting.pop(request.request_id, None)
        if waiting is not None and not waiting.triggered:
            waiting.succeed()
        return

    def lose_response(self, task: str, name: str, request_id: str | None = None) -> None:
        line = f"lose_response {name}" + (f" {request_id}" if request_id else "")
        item = self._find(self.responses, task, name, request_id, get=lambda r: r[0])
        if item is None:
            raise self.refused(line, f"no response of {name} pending", task)
        self.responses.remove(item)
        self._emit("network", "response_lost", task, transition=name, request=item[0].request_id,
                   worker=item[0].worker, reason="network", effect=item[2].effect)
        return

    def lose_request(self, task: str, name: str, request_id: str | None = None) -> None:
        line = f"lose_request {name}" + (f" {request_id}" if request_id else "")
        request = self._find(self.in_flight, task, name, request_id)
        if request is None:
            raise self.refused(line, f"no request of {name} in flight", task)
        self.in_flight.remove(request)
        self._emit("network", "request_lost", task, transition=name, request=request.request_id)
        return

    def duplicate_request(self, task: str, name: str, request_id: str | None = None) -> Request | str:
        """The network delivers a request twice: a copy goes into flight (even after the original arrived)."""
        line = f"duplicate_request {name}" + (f" {request_id}" if request_id else "")
        original = self._find(self.in_flight, task, name, request_id) or self._find(
            self.responses, task, name, request_id, get=lambda r: r[0])
        if isinstance(original, tuple):
            original = original[0]
        if original is None:
            raise self.refused(line, f"no request of {name} to duplicate", task)
        self.request_count += 1
        copy = Request(f"r{self.request_count}", original.worker, task, name, original.logical, original.kind,
                       original.generation, original.key, original.fingerprint, original.head, original.attempt,
                       original.effect_class)
        self.in_flight.append(copy)
        self._emit("network", "request_duplicated", task, transition=name, request=copy.request_id,
                   original=original.request_id)
        return copy

    def timeout(self, worker: str, task: str, name: str) -> None:
        line = f"timeout {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        if wt.view.status(name) != "dispatched":
            raise self.refused(line, f"{name} is not awaiting a response", task)
        waited = any(r.worker == worker and r.task == task and r.transition == name for r in self.in_flight) or any(
            r[0].worker == worker and r[0].task == task and r[0].transition == name for r in self.responses)
        outcome = self.protocol.on_timeout
        record = self.worker_append(worker, task, "timed_out", transition=name, outcome=outcome,
                              reason="no_response" if waited else "in_doubt_on_resume")
        self._verdict(record, name, outcome)
        return

    def receipt(self, worker: str, task: str, name: str) -> None:
        line = f"receipt {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        status = wt.view.status(name)
        if status == "done":
            raise self.refused(line, f"{name} already has a receipt", task)
        evidence = wt.evidence.get(name)
        if evidence is None or evidence.outcome == "rejected":
            raise self.refused(line, f"no response or lookup proves {name}", task)
        record = self.worker_append(worker, task, "receipt_recorded", transition=name, effect=evidence.effect,
                              receipt=evidence.effect, source=evidence.source, request=evidence.request_id)
        verdict = {"reconciliation": "done:reconciled", "response": "done"}[evidence.source]
        if evidence.outcome == "deduplicated":
            verdict = "done:deduplicated"
        self._verdict(record, name, verdict)
        del wt.evidence[name]
        if self.protocol.checkpoint == "verified":
            self._checkpoint(worker, task, wt)
        return

    def _checkpoint(self, worker: str, task: str, wt: WorkerTask, extra: str | None = None) -> None:
        completed = [n for n, v in wt.view.transitions.items() if v.status == "done"]
        if extra is not None and extra not in completed:
            completed.append(extra)
        try:
            self.worker_append(worker, task, "checkpoint_saved", completed=completed, workflow_version=wt.version)
        except Fenced:
            return  # the transition's own record stands; the worker stops at its next step
        self.checkpoint_s[task] = self.env.now
