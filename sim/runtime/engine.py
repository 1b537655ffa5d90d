"""The runtime family's operations: one method per event of the vocabulary.

Both drivers call these and nothing else -- the scripted replay
(:mod:`sim.runtime.runner`) in the order a scenario lists, the autonomous
driver (:mod:`sim.runtime.driver`) in the order its worker policy and fault
schedule produce.  Every call appends its script line to :attr:`Runtime.trace`
so an autonomous run exports as a scripted scenario that replays to the same
history.

An operation that cannot happen at its point under the protocol (reconcile
with ``reconcile=off``, a receipt without a response or lookup to prove it)
is recorded as ``skipped`` and changes nothing, so one script replays under
every protocol.  Worker writes go through the event log, which refuses
appends from a worker whose lease expired when ``lease_fence=on``.
"""

from __future__ import annotations

from typing import Any, Callable

from sim.history import History, _plain_time
from sim.protocol import Protocol
from sim.runtime.models import (
    DURABLE_EVENTS,
    EventLog,
    Evidence,
    ExternalSystem,
    Request,
    WorkerMemory,
    WorkerTask,
    default_head,
    fingerprint_of,
)
from sim.runtime.protocol import approval_on
from sim.runtime.workflow import Transition, Workflow, version_2

OK = "ok"
SKIPPED = "skipped"
FENCED = "fenced"

#: Compute units per operation, for replay waste and cost per verified task.
MODEL_CALL_UNITS = 1.0
TOOL_CALL_UNITS = 0.2
LOOKUP_UNITS = 0.1
RESUME_UNITS = 0.5
HUMAN_EXCEPTION_UNITS = 20.0


class Runtime:
    """Queue, leases, event log, external system and worker memories of one run."""

    def __init__(
        self,
        env,
        protocol: Protocol,
        workflow: Workflow,
        arguments: dict[str, dict[str, Any]] | None = None,
        tenant: str = "acme",
        next_number: int = 1,
        record_trace: bool = True,
    ):
        self.env = env
        self.protocol = protocol
        self.workflows = {1: workflow, 2: version_2(workflow)}
        self.code_version = 1
        self.arguments_by_transition = arguments or {}
        self.tenant = tenant
        self.history = History()
        self.log = EventLog()
        self.external = ExternalSystem(protocol.idempotency, float(protocol.key_retention), next_number)
        self.approval = approval_on(protocol)
        self.workers: dict[str, WorkerMemory] = {}
        self.leases: dict[str, list] = {}  # task -> [holder, epoch]
        self.deliveries: dict[str, int] = {}
        self.in_flight: list[Request] = []
        self.responses: list[tuple[Request, str, Any]] = []
        self.armed: dict[tuple[str, str, str], int] = {}
        self.last_dispatch_s: dict[tuple[str, str], float] = {}
        self.abort_s: dict[str, float] = {}
        self.checkpoint_s: dict[str, float] = {}
        self.request_count = 0
        self.last_request: Request | None = None
        self.trace: list[str] | None = [] if record_trace else None
        self.verdicts: list[dict[str, Any]] = []
        #: Hooks for the autonomous driver (None in scripted replay).
        self.on_dispatch: Callable[[Request], None] | None = None
        self.on_human_record: Callable[[str], None] | None = None

    # -- recording -----------------------------------------------------------------

    def _line(self, text: str) -> None:
        if self.trace is not None:
            self.trace.append(f"@{_plain_time(self.env.now)} {text}")

    def _emit(self, actor: str, event: str, task: str | None, **fields: Any):
        record = self.history.append(self.env.now, actor, event, task=task, **fields)
        if event in DURABLE_EVENTS and task is not None:
            self.log.append(task, event, record.fields)
        return record

    def _skip(self, line: str, reason: str, task: str | None = None) -> str:
        self.history.append(self.env.now, "script", "skipped", task=task, line=line, reason=reason)
        return SKIPPED

    def _verdict(self, record, transition: str, verdict: str) -> None:
        self.verdicts.append({"event_index": record.index, "step": transition, "verdict": verdict})

    def _notify(self, task: str, event: str, fields: dict[str, Any]) -> None:
        """Durable records written by others (humans, verifier) reach the workers running the task."""
        for memory in self.workers.values():
            task_memory = memory.tasks.get(task)
            if memory.alive and task_memory is not None:
                task_memory.view.apply(event, fields)
        if self.on_human_record is not None:
            self.on_human_record(task)

    def _append(self, worker: str, task: str, event: str, **fields: Any):
        """A worker's write to the event log; refused after its lease expired if fenced."""
        task_memory = self.workers[worker].tasks[task]
        holder, epoch = self.leases[task]
        if self.protocol.lease_fence == "on" and (holder != worker or task_memory.epoch != epoch):
            self._emit("log", "append_refused", task, worker=worker, refused=event, holder=holder,
                       transition=fields.get("transition"))
            task_memory.fenced = True
            return None
        record = self._emit(worker, event, task, **fields)
        task_memory.view.apply(event, record.fields)
        return record

    # -- helpers -------------------------------------------------------------------

    def workflow_of(self, version: int) -> Workflow:
        return self.workflows[version]

    def transition(self, worker_task: WorkerTask, name: str) -> Transition | None:
        return self.workflows[worker_task.version].get(name)

    def arguments(self, task: str, transition: Transition) -> dict[str, Any]:
        """The durable arguments of a transition: the scenario's, plus the task marker and head."""
        given = self.arguments_by_transition.get(transition.logical, {})
        out = {"task": task, "transition": transition.logical, "head": default_head(task)}
        out.update(given)
        return out

    def key_of(self, task: str, transition: Transition, generation: int) -> str:
        """``idempotency_key = tenant + task + transition + attempt_generation``."""
        return f"{self.tenant}:{task}:{transition.name}:{generation}"

    def worker_task(self, worker: str, task: str, line: str) -> WorkerTask | str:
        """Record the script line, then the worker's memory of the task, or SKIPPED with the reason."""
        self._line(line)
        memory = self.workers.get(worker)
        if memory is None or not memory.alive:
            return self._skip(line, f"worker {worker} is not running", task)
        task_memory = memory.tasks.get(task)
        if task_memory is None:
            return self._skip(line, f"worker {worker} has not been delivered {task}", task)
        if task_memory.fenced:
            return self._skip(line, f"worker {worker} was fenced off {task}", task)
        return task_memory

    def holder(self, task: str) -> str | None:
        lease = self.leases.get(task)
        return lease[0] if lease else None

    def new_worker_name(self) -> str:
        return f"w{len(self.workers) + 1}"

    def _find(self, items, task: str, transition: str, request_id: str | None, get=lambda x: x):
        for item in items:
            request = get(item)
            if request.task == task and request.transition == transition and (
                request_id is None or request.request_id == request_id
            ):
                return item
        return None

    # -- queue and leases ----------------------------------------------------------

    def accept(self, task: str) -> str:
        line = f"accept {task}"
        self._line(line)
        if task in self.leases:
            return self._skip(line, "task already accepted", task)
        self.leases[task] = [None, 0]
        self.deliveries[task] = 0
        self.checkpoint_s[task] = self.env.now
        self._emit("queue", "accepted", task, workflow_version=self.code_version,
                   workflow=self.workflows[1].name)
        return OK

    def _grant(self, task: str, worker: str) -> None:
        lease = self.leases[task]
        lease[0], lease[1] = worker, lease[1] + 1
        self.workers.setdefault(worker, WorkerMemory(worker))
        self._emit("lease", "lease_granted", task, worker=worker, epoch=lease[1])

    def lease(self, worker: str, task: str) -> str:
        line = f"lease {worker}"
        self._line(line)
        if task not in self.leases:
            return self._skip(line, f"{task} is not accepted", task)
        holder = self.holder(task)
        if holder is not None:
            return self._skip(line, f"the lease is held by {holder}", task)
        self._grant(task, worker)
        return OK

    def lease_expire(self, worker: str, successor: str, task: str) -> str:
        line = f"lease_expire {worker} -> {successor}"
        self._line(line)
        if self.holder(task) != worker:
            return self._skip(line, f"{worker} does not hold the lease of {task}", task)
        if successor in self.workers and not self.workers[successor].alive:
            return self._skip(line, f"{successor} has crashed", task)
        self._emit("lease", "lease_expired", task, worker=worker, successor=successor,
                   zombie=self.workers[worker].alive or None)
        self._grant(task, successor)
        return OK

    def deliver(self, worker: str | None, task: str, duplicate: bool = False) -> str:
        line = "duplicate" if duplicate else (f"deliver {worker}" if worker else "deliver")
        self._line(line)
        if task not in self.leases:
            return self._skip(line, f"{task} is not accepted", task)
        worker = worker or self.holder(task)
        if worker is None:
            return self._skip(line, "no lease holder to deliver to; name a worker", task)
        memory = self.workers.setdefault(worker, WorkerMemory(worker))
        if not memory.alive:
            return self._skip(line, f"worker {worker} has crashed", task)
        if self.log.reduce(task).terminal is not None:
            return self._skip(line, f"{task} is finished; its message was acknowledged", task)
        self.deliveries[task] += 1
        holder = self.holder(task)
        if holder is None:
            self._grant(task, worker)
        elif holder != worker:
            self._emit("queue", "delivered", task, worker=worker, delivery=self.deliveries[task],
                       duplicate=duplicate or None)
            self._emit(worker, "lease_busy", task, holder=holder)
            return OK
        self._emit("queue", "delivered", task, worker=worker, delivery=self.deliveries[task],
                   duplicate=duplicate or None)
        current = memory.tasks.get(task)
        if current is not None and not current.fenced:
            self._emit(worker, "redelivery_ignored", task, reason="already running the task")
            return OK
        self._start(memory, task)
        return OK

    def _start(self, memory: WorkerMemory, task: str) -> None:
        """A worker (re)starts a task from durable history, under the version policy."""
        view = self.log.reduce(task)
        first = not any(event == "resumed" for event, _ in self.log.records.get(task, ()))
        run_version = self._version_for(memory.name, task, view)
        task_memory = WorkerTask(self.log.reduce(task), self.leases[task][1], run_version)
        memory.tasks[task] = task_memory
        self._append(memory.name, task, "resumed", workflow_version=run_version, first=first,
                     recovery_point_s=None if first else self.env.now - self.checkpoint_s[task],
                     compute_units=RESUME_UNITS)

    def _version_for(self, worker: str, task: str, view) -> int:
        task_version, code = view.version, self.code_version
        policy = self.protocol.version_policy
        if task_version == code or policy == "pinned":
            return task_version
        if policy == "none":
            return code
        new = self.workflows[code]
        if policy == "replay":
            recorded = [n for n in view.transitions if view.transitions[n].status != "pending"]
            expected = new.names()[: len(recorded)]
            if recorded != expected:
                self._emit(worker, "replay_divergence", task, recorded=recorded, replayed=expected,
                           workflow_version=code)
                return task_version
        self._emit(worker, "migrated", task, from_version=task_version, to_version=code,
                   renamed=[list(pair) for pair in new.renamed], method="replay" if policy == "replay" else "migration")
        return code

    def crash(self, worker: str) -> str:
        line = f"crash {worker}"
        self._line(line)
        memory = self.workers.get(worker)
        if memory is None or not memory.alive:
            return self._skip(line, f"worker {worker} is not running")
        memory.alive = False
        memory.tasks.clear()
        self._emit(worker, "crashed", None)
        return OK

    def upgrade(self, version: int) -> str:
        line = f"upgrade {version}"
        self._line(line)
        if version != 2 or self.code_version != 1:
            return self._skip(line, "only the upgrade from version 1 to 2 is modelled")
        self.code_version = 2
        self._emit("deploy", "upgraded", None, workflow_version=2,
                   inserted=[t.name for t in self.workflows[2].transitions if t.logical.startswith("verify_")],
                   renamed=[list(p) for p in self.workflows[2].renamed])
        return OK

    # -- the four moments ----------------------------------------------------------

    def intent(self, worker: str, task: str, name: str) -> str:
        line = f"intent {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        if isinstance(wt, str):
            return wt
        transition = self.transition(wt, name)
        if transition is None:
            return self._skip(line, f"{name} is not in workflow version {wt.version}", task)
        status = wt.view.status(name)
        if status != "pending":
            return self._skip(line, f"{name} is already {status}", task)
        if transition.effect_class == "irreversible" and self.approval and name not in wt.view.approved:
            return self._skip(line, f"{name} is irreversible and not approved", task)
        generation = wt.view.get(name).generation
        arguments = self.arguments(task, transition)
        record = self._append(worker, task, "intent_recorded", transition=name, logical=transition.logical,
                              generation=generation, key=self.key_of(task, transition, generation),
                              fingerprint=fingerprint_of(arguments), effect_class=transition.effect_class,
                              compute_units=MODEL_CALL_UNITS)
        return OK if record is not None else FENCED

    def dispatch(self, worker: str, task: str, name: str, changed: bool = False) -> str:
        line = f"{'retry_changed' if changed else 'dispatch'} {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        if isinstance(wt, str):
            return wt
        transition = self.transition(wt, name)
        if transition is None:
            return self._skip(line, f"{name} is not in workflow version {wt.version}", task)
        status = wt.view.status(name)
        allowed = {"intent", "failed", "not_found"}
        if self.protocol.reconcile == "off":
            allowed.add("unknown")
        if changed:
            allowed |= {"dispatched", "unknown"}
        if status not in allowed:
            reason = ("its outcome is unknown: reconcile first" if status in ("unknown", "dispatched")
                      else f"{name} is {status}")
            return self._skip(line, reason, task)
        view = wt.view.get(name)
        arguments = self.arguments(task, transition)
        if changed:
            arguments = dict(arguments, body_revision=view.attempts + 1)
        fingerprint = fingerprint_of(arguments)
        self.request_count += 1
        request_id = f"r{self.request_count}"
        record = self._append(worker, task, "dispatched", transition=name, attempt=view.attempts + 1,
                              request=request_id, key=view.key, fingerprint=fingerprint,
                              changed_arguments=changed or None, compute_units=TOOL_CALL_UNITS)
        if record is None:
            return FENCED
        self.last_dispatch_s[(task, name)] = self.env.now
        request = Request(request_id, worker, task, name, transition.logical, transition.object_kind,
                          view.generation, view.key, fingerprint, arguments["head"], view.attempts)
        self.in_flight.append(request)
        self.last_request = request
        if self.protocol.checkpoint == "optimistic":
            self._checkpoint(worker, task, wt, extra=name)
        if self.on_dispatch is not None:
            self.on_dispatch(request)
        return OK

    def commit(self, task: str, name: str, request_id: str | None = None) -> str:
        line = f"commit {name}" + (f" {request_id}" if request_id else "")
        self._line(line)
        request = self._find(self.in_flight, task, name, request_id)
        if request is None:
            return self._skip(line, f"no request of {name} in flight", task)
        self.in_flight.remove(request)
        outcome, obj = self.external.handle(request, self.env.now)
        common = dict(transition=name, logical=request.logical, generation=request.generation,
                      request=request.request_id, key=request.key if self.protocol.idempotency != "none" else None,
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
        return OK

    def _any_transition(self, name: str) -> Transition:
        return self.workflows[1].get(name) or self.workflows[2].get(name)

    def respond(self, task: str, name: str, request_id: str | None = None) -> str:
        line = f"respond {name}" + (f" {request_id}" if request_id else "")
        self._line(line)
        item = self._find(self.responses, task, name, request_id, get=lambda r: r[0])
        if item is None:
            return self._skip(line, f"no response of {name} pending", task)
        self.responses.remove(item)
        request, outcome, obj = item
        memory = self.workers.get(request.worker)
        task_memory = memory.tasks.get(task) if memory is not None and memory.alive else None
        if task_memory is None:
            self._emit("network", "response_lost", task, transition=name, request=request.request_id,
                       worker=request.worker, reason="receiver_gone", effect=obj.effect)
            return OK
        late = task_memory.view.status(name) not in ("dispatched",) or None
        self._emit(request.worker, "response_delivered", task, transition=name, request=request.request_id,
                   outcome=outcome, effect=obj.effect, number=obj.number, late=late)
        if not late:
            task_memory.evidence[name] = Evidence("response", outcome, obj.effect, request.request_id)
        waiting = task_memory.waiting.pop(request.request_id, None)
        if waiting is not None and not waiting.triggered:
            waiting.succeed()
        return OK

    def lose_response(self, task: str, name: str, request_id: str | None = None) -> str:
        line = f"lose_response {name}" + (f" {request_id}" if request_id else "")
        self._line(line)
        item = self._find(self.responses, task, name, request_id, get=lambda r: r[0])
        if item is None:
            return self._skip(line, f"no response of {name} pending", task)
        self.responses.remove(item)
        self._emit("network", "response_lost", task, transition=name, request=item[0].request_id,
                   worker=item[0].worker, reason="network", effect=item[2].effect)
        return OK

    def lose_request(self, task: str, name: str, request_id: str | None = None) -> str:
        line = f"lose_request {name}" + (f" {request_id}" if request_id else "")
        self._line(line)
        request = self._find(self.in_flight, task, name, request_id)
        if request is None:
            return self._skip(line, f"no request of {name} in flight", task)
        self.in_flight.remove(request)
        self._emit("network", "request_lost", task, transition=name, request=request.request_id)
        return OK

    def duplicate_request(self, task: str, name: str, request_id: str | None = None) -> Request | str:
        """The network delivers a request twice: a copy goes into flight (even after the original arrived)."""
        line = f"duplicate_request {name}" + (f" {request_id}" if request_id else "")
        self._line(line)
        original = self._find(self.in_flight, task, name, request_id) or self._find(
            self.responses, task, name, request_id, get=lambda r: r[0])
        if isinstance(original, tuple):
            original = original[0]
        if original is None:
            return self._skip(line, f"no request of {name} to duplicate", task)
        self.request_count += 1
        copy = Request(f"r{self.request_count}", original.worker, task, name, original.logical, original.kind,
                       original.generation, original.key, original.fingerprint, original.head, original.attempt)
        self.in_flight.append(copy)
        self._emit("network", "request_duplicated", task, transition=name, request=copy.request_id,
                   original=original.request_id)
        return copy

    def timeout(self, worker: str, task: str, name: str) -> str:
        line = f"timeout {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        if isinstance(wt, str):
            return wt
        if wt.view.status(name) != "dispatched":
            return self._skip(line, f"{name} is not awaiting a response", task)
        waited = any(r.worker == worker and r.task == task and r.transition == name for r in self.in_flight) or any(
            r[0].worker == worker and r[0].task == task and r[0].transition == name for r in self.responses)
        outcome = self.protocol.on_timeout
        record = self._append(worker, task, "timed_out", transition=name, outcome=outcome,
                              reason="no_response" if waited else "in_doubt_on_resume")
        if record is None:
            return FENCED
        self._verdict(record, name, outcome)
        return OK

    def reconcile(self, worker: str, task: str, name: str) -> str:
        line = f"reconcile {name} by {worker}"
        if self.protocol.reconcile == "off":
            self._line(line)
            return self._skip(line, "reconcile=off", task)
        wt = self.worker_task(worker, task, line)
        if isinstance(wt, str):
            return wt
        status = wt.view.status(name)
        if status not in ("unknown", "dispatched", "found"):
            return self._skip(line, f"{name} is {status}: nothing to reconcile", task)
        transition = self.transition(wt, name)
        result, query, obj = self._lookup(wt, task, transition)
        since = self.last_dispatch_s.get((task, name))
        record = self._append(worker, task, "reconciled", transition=name, result=result, query=query,
                              effect=obj.effect if obj else None, number=obj.number if obj else None,
                              latency_s=None if since is None else self.env.now - since,
                              compute_units=LOOKUP_UNITS)
        if record is None:
            return FENCED
        if result == "found":
            wt.evidence[name] = Evidence("reconciliation", "found", obj.effect)
        return OK

    def _lookup(self, wt: WorkerTask, task: str, transition: Transition):
        """The reconciler: query by key, then by task marker and head; prove or fail to prove."""
        armed = (task, transition.name, "unprovable")
        if self.armed.get(armed):
            self.armed[armed] -= 1
            return "unprovable", "key" if self.protocol.idempotency != "none" else "marker", None
        view = wt.view.get(transition.name)
        expected_head = self.arguments(task, transition)["head"]
        trusting = self.protocol.receipt_check == "trusting"
        obj = self.external.by_key(view.key, self.env.now)
        if obj is not None:
            if trusting or (obj.fingerprint == view.fingerprint and obj.head == expected_head and obj.open):
                return "found", "key", obj
            return "unprovable", "key", obj
        for candidate in self.external.by_marker(task, transition.logical, transition.object_kind):
            if trusting:
                return "found", "marker", candidate
            if (not candidate.foreign and candidate.generation == view.generation
                    and candidate.head == expected_head and candidate.open):
                return "found", "marker", candidate
        return "not_found", "key" if self.protocol.idempotency != "none" else "marker", None

    def receipt(self, worker: str, task: str, name: str) -> str:
        line = f"receipt {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        if isinstance(wt, str):
            return wt
        status = wt.view.status(name)
        if status == "done":
            return self._skip(line, f"{name} already has a receipt", task)
        evidence = wt.evidence.get(name)
        if evidence is None or evidence.outcome == "rejected":
            return self._skip(line, f"no response or lookup proves {name}", task)
        record = self._append(worker, task, "receipt_recorded", transition=name, effect=evidence.effect,
                              receipt=evidence.effect, source=evidence.source, request=evidence.request_id)
        if record is None:
            return FENCED
        verdict = {"reconciliation": "done:reconciled", "response": "done"}[evidence.source]
        if evidence.outcome == "deduplicated":
            verdict = "done:deduplicated"
        self._verdict(record, name, verdict)
        del wt.evidence[name]
        if self.protocol.checkpoint == "verified":
            self._checkpoint(worker, task, wt)
        return OK

    def _checkpoint(self, worker: str, task: str, wt: WorkerTask, extra: str | None = None) -> None:
        completed = [n for n, v in wt.view.transitions.items() if v.status == "done"]
        if extra is not None and extra not in completed:
            completed.append(extra)
        if self._append(worker, task, "checkpoint_saved", completed=completed,
                        workflow_version=wt.version) is not None:
            self.checkpoint_s[task] = self.env.now

    # -- exceptions, approvals, compensation, closing ------------------------------

    def escalate(self, worker: str, task: str, name: str) -> str:
        line = f"escalate {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        if isinstance(wt, str):
            return wt
        status = wt.view.status(name)
        rejected = wt.evidence.get(name) is not None and wt.evidence[name].outcome == "rejected"
        if status not in ("unknown", "unprovable") and not rejected:
            return self._skip(line, f"{name} is {status}: nothing for a human to decide", task)
        record = self._append(worker, task, "human_exception", transition=name,
                              reason="fingerprint_conflict" if rejected else status,
                              compute_units=HUMAN_EXCEPTION_UNITS)
        if record is None:
            return FENCED
        wt.evidence.pop(name, None)
        self._verdict(record, name, "escalated")
        return OK

    def resolve(self, task: str, name: str) -> str:
        """A human looks at the external system itself and records what is true."""
        line = f"resolve {name}"
        self._line(line)
        view = self.log.reduce(task)
        if view.status(name) != "escalated":
            return self._skip(line, f"{name} is not waiting for a human", task)
        transition = self._any_transition(name)
        tv = view.get(name)
        head = self.arguments(task, transition)["head"]
        truth = next((o for o in self.external.by_marker(task, transition.logical, transition.object_kind)
                      if not o.foreign and o.generation == tv.generation and o.head == head and o.open), None)
        record = self._emit("human", "human_resolved", task, transition=name,
                            outcome="found" if truth else "not_found", effect=truth.effect if truth else None)
        self._notify(task, "human_resolved", record.fields)
        if truth is not None:
            receipt = self._emit("human", "receipt_recorded", task, transition=name, effect=truth.effect,
                                 receipt=truth.effect, source="human")
            self._notify(task, "receipt_recorded", receipt.fields)
            self._verdict(receipt, name, "done:human")
        return OK

    def request_approval(self, worker: str, task: str, name: str) -> str:
        line = f"request_approval {name} by {worker}"
        wt = self.worker_task(worker, task, line)
        if isinstance(wt, str):
            return wt
        if name in wt.view.approval_requested or name in wt.view.approved:
            return self._skip(line, f"approval of {name} already requested", task)
        record = self._append(worker, task, "approval_requested", transition=name)
        return OK if record is not None else FENCED

    def approve(self, task: str, name: str) -> str:
        line = f"approve {name}"
        self._line(line)
        if name in self.log.reduce(task).approved:
            return self._skip(line, f"{name} is already approved", task)
        record = self._emit("human", "approved", task, transition=name)
        self._notify(task, "approved", record.fields)
        return OK

    def fail(self, task: str, name: str) -> str:
        """The verifier finds T's postcondition false (or T cannot be done): the task aborts."""
        line = f"fail {name}"
        self._line(line)
        if task not in self.leases:
            return self._skip(line, f"{task} is not accepted", task)
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
            return self._skip(line, "no compensation is owed (compensation off or task not aborted)", task)
        if transition is None or transition.compensation is None or tv is None or tv.status != "done" or tv.compensated:
            return self._skip(line, f"{name} has no committed effect to compensate", task)
        armed = (task, name, "compensation_fails")
        age = self.env.now - self.abort_s.get(task, self.env.now)
        if self.armed.get(armed):
            self.armed[armed] -= 1
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
            return self._skip(line, f"{task} has unfinished transitions or owed compensations", task)
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

    # -- armed faults (data, applied by the reconciler and compensations) ---------

    def arm(self, task: str, name: str, kind: str) -> str:
        line = f"{kind} {name}"
        self._line(line)
        key = (task, name, kind)
        self.armed[key] = self.armed.get(key, 0) + 1
        self._emit("faults", "fault_armed", task, transition=name, fault=kind)
        return OK

    def foreign_object(self, task: str, name: str) -> str:
        """Someone else creates an object carrying T's task marker, but not its key or head."""
        line = f"foreign_object {name}"
        self._line(line)
        transition = self._any_transition(name)
        request = Request("foreign", "human", task, name, transition.logical, transition.object_kind, 1, None,
                          "foreign", "f0e1a2b", 0)
        obj = self.external.create(request, self.env.now, foreign=True)
        self._emit("git", "foreign_created", task, transition=name, effect=obj.effect, number=obj.number,
                   head=obj.head)
        return OK
