"""The autonomous runtime: workers, external system, lease supervisor and humans as SimPy processes.

Workers follow the protocol's policy (:func:`decide`); the fault schedule
(:class:`sim.runtime.faults.FaultSchedule`, data) says where faults strike.
The driver only *reads* the schedule: it never draws a random number.  All
state changes go through :class:`sim.runtime.engine.Runtime`, whose trace is
the scripted form of the run.
"""

from __future__ import annotations

from sim.runtime.engine import OK, Runtime
from sim.runtime.faults import FaultSchedule
from sim.runtime.models import Request

#: Simulated durations (seconds).  Named here so a review can read the model's clock.
STEP_S = 1.0  # a worker's durable append, one model/tool step
COMMIT_LATENCY_S = 1.0  # request -> effect committed at the external system
RESPONSE_LATENCY_S = 0.5  # commit -> response at the worker
ACK_TIMEOUT_S = 10.0  # a worker stops waiting for a response
LEASE_TTL_S = 28.0  # a dead worker's lease expires this long after its last heartbeat
DELAY_ACK_S = 60.0  # a delayed acknowledgement arrives this late (beyond ACK_TIMEOUT_S)
APPROVAL_DELAY_S = 300.0  # a human approves an irreversible step
HUMAN_RESOLVE_S = 3600.0  # a human resolves an exception
COMPENSATION_RETRY_S = 30.0
LIVENESS_BUDGET_S = 3 * 24 * 3600.0  # after the faults, every task must be terminal within this
MAX_ATTEMPTS = 5  # dispatches of one transition before the worker gives up and aborts


def decide(rt: Runtime, worker: str, task: str) -> tuple[str, str | None] | None:
    """The next operation a worker's policy takes for a task, from its own view (None: nothing to do)."""
    wt = rt.workers[worker].tasks[task]
    view = wt.view
    if view.terminal is not None:
        return None
    workflow = rt.workflow_of(wt.version)
    if view.aborted:
        if rt.protocol.compensation == "on":
            for transition in reversed(workflow.transitions):
                tv = view.transitions.get(transition.name)
                if transition.compensation and tv is not None and tv.status == "done" and not tv.compensated:
                    return "compensate", transition.name
        return "close", None
    for transition in workflow.transitions:
        name = transition.name
        status = view.status(name)
        if status == "done":
            continue
        if status == "pending":
            if transition.effect_class == "irreversible" and rt.approval and name not in view.approved:
                return ("wait_approval" if name in view.approval_requested else "request_approval"), name
            return "intent", name
        if status == "intent":
            return "dispatch", name
        if status == "dispatched":
            evidence = wt.evidence.get(name)
            if evidence is not None:
                return ("escalate" if evidence.outcome == "rejected" else "receipt"), name
            return "timeout", name
        if status == "unknown":
            return ("reconcile" if rt.protocol.reconcile == "on" else "escalate"), name
        if status == "failed":
            return ("dispatch" if view.get(name).attempts < MAX_ATTEMPTS else "abort"), name
        if status == "not_found":
            return "dispatch", name
        if status == "found":
            return ("receipt" if name in wt.evidence else "reconcile"), name
        if status == "unprovable":
            return "escalate", name
        if status == "escalated":
            return "wait_human", name
    return "close", None


class AutoDriver:
    """Runs tasks to completion under a fault schedule."""

    def __init__(self, rt: Runtime, schedule: FaultSchedule | None = None):
        self.rt = rt
        self.env = rt.env
        self.schedule = schedule or FaultSchedule([])
        self.request_flags: dict[str, set[str]] = {}
        self.notices: dict[str, object] = {}
        self.humans_started: set[tuple[str, str, str]] = set()
        rt.on_dispatch = self._serve_later
        rt.on_human_record = self._notice

    # -- starting ------------------------------------------------------------------

    def start_task(self, task: str) -> None:
        """Accept a task and hand it to a fresh worker (used by cruel and exposure runs)."""
        self.rt.accept(task)
        worker = self.rt.new_worker_name()
        self.rt.deliver(worker, task)
        self.env.process(self.worker_loop(worker, task))

    def recover(self) -> None:
        """After a script: the system heals and finishes every unfinished task from durable history."""
        rt = self.rt
        for request in list(rt.in_flight):
            self.env.process(self.serve(request))
        for request, _, _ in list(rt.responses):
            self.env.process(self.deliver_response(request, RESPONSE_LATENCY_S))
        for task in list(rt.leases):
            if rt.log.reduce(task).terminal is not None:
                continue
            holder = rt.holder(task)
            memory = rt.workers.get(holder) if holder else None
            if memory is not None and memory.alive and task in memory.tasks and not memory.tasks[task].fenced:
                self.env.process(self.worker_loop(holder, task))
            else:
                self.env.process(self.replace(holder, task, 0.0 if holder is None else LEASE_TTL_S))

    def replace(self, holder: str | None, task: str, wait_s: float):
        """The lease supervisor: a lost holder's lease expires, a new worker resumes from the log."""
        yield self.env.timeout(wait_s)
        rt = self.rt
        if rt.log.reduce(task).terminal is not None or rt.holder(task) != holder:
            return
        successor = rt.new_worker_name()
        if holder is None:
            rt.lease(successor, task)
        else:
            rt.lease_expire(holder, successor, task)
        rt.deliver(successor, task)
        self.env.process(self.worker_loop(successor, task))

    # -- the worker ----------------------------------------------------------------

    def _running(self, worker: str, task: str) -> bool:
        memory = self.rt.workers.get(worker)
        return memory is not None and memory.alive and task in memory.tasks and not memory.tasks[task].fenced

    def worker_loop(self, worker: str, task: str):
        rt, env = self.rt, self.env
        while self._running(worker, task):
            action = decide(rt, worker, task)
            if action is None:
                return
            op, name = action
            if op in ("wait_approval", "wait_human"):
                self._start_human(task, name, op)
                yield self._notice_event(task)
                continue
            if op == "intent":
                self.boundary(worker, task, name, "before_intent")
                if not self._running(worker, task):
                    return
            if op == "compensate" and self.schedule.take(task, name, "compensate", "compensation_fails"):
                rt.arm(task, name, "compensation_fails")
            if op == "reconcile" and self.schedule.take(task, name, "reconcile", "unprovable"):
                rt.arm(task, name, "unprovable")
            yield env.timeout(STEP_S)
            if not self._running(worker, task):
                return
            result = self.perform(op, worker, task, name)
            if result != OK:
                if result == "skipped":
                    raise AssertionError(f"the policy chose {op} {name} for {worker}, which the runtime refused")
                return
            if op == "intent":
                self.boundary(worker, task, name, "after_intent")
            elif op == "receipt":
                self.boundary(worker, task, name, "after_receipt")
            elif op == "compensate" and rt.workers[worker].tasks.get(task) is not None:
                if not rt.workers[worker].tasks[task].view.transitions[name].compensated:
                    yield env.timeout(COMPENSATION_RETRY_S)
            elif op == "dispatch":
                request = rt.last_request
                self.boundary(worker, task, name, "after_dispatch", request)
                if not self._running(worker, task):
                    return
                answer = env.event()
                rt.workers[worker].tasks[task].waiting[request.request_id] = answer
                yield answer | env.timeout(ACK_TIMEOUT_S)
                if self._running(worker, task):
                    rt.workers[worker].tasks[task].waiting.pop(request.request_id, None)

    def perform(self, op: str, worker: str, task: str, name: str | None) -> str:
        rt = self.rt
        if op == "close":
            return rt.close(worker, task)
        method = {
            "intent": rt.intent, "dispatch": rt.dispatch, "timeout": rt.timeout, "reconcile": rt.reconcile,
            "receipt": rt.receipt, "escalate": rt.escalate, "request_approval": rt.request_approval,
            "compensate": rt.compensate, "abort": rt.abort,
        }[op]
        return method(worker, task, name)

    # -- humans --------------------------------------------------------------------

    def _notice_event(self, task: str):
        event = self.notices.get(task)
        if event is None or event.triggered:
            event = self.notices[task] = self.env.event()
        return event

    def _notice(self, task: str) -> None:
        event = self.notices.get(task)
        if event is not None and not event.triggered:
            event.succeed()

    def _start_human(self, task: str, name: str, op: str) -> None:
        key = (task, name, op)
        if key in self.humans_started:
            return
        self.humans_started.add(key)
        self.env.process(self.human(task, name, op))

    def human(self, task: str, name: str, op: str):
        if op == "wait_approval":
            yield self.env.timeout(APPROVAL_DELAY_S)
            self.rt.approve(task, name)
        else:
            yield self.env.timeout(HUMAN_RESOLVE_S)
            self.rt.resolve(task, name)
            self.humans_started.discard((task, name, op))

    # -- the external system -------------------------------------------------------

    def _serve_later(self, request: Request) -> None:
        self.env.process(self.serve(request))

    def serve(self, request: Request):
        rt = self.rt
        flags = self.request_flags.setdefault(request.request_id, set())
        yield self.env.timeout(COMMIT_LATENCY_S)
        if "delay_request" in flags:
            yield self.env.timeout(DELAY_ACK_S)
        if request not in rt.in_flight:
            return
        if "lose_request" in flags:
            rt.lose_request(request.task, request.transition, request.request_id)
            return
        rt.commit(request.task, request.transition, request.request_id)
        self.boundary(request.worker, request.task, request.transition, "after_commit", request)
        delay = RESPONSE_LATENCY_S + (DELAY_ACK_S if "delay_response" in flags else 0.0)
        yield from self.deliver_response(request, delay)

    def deliver_response(self, request: Request, delay_s: float):
        yield self.env.timeout(delay_s)
        rt = self.rt
        if not any(item[0] is request for item in rt.responses):
            return
        if "lose_response" in self.request_flags.get(request.request_id, ()):
            rt.lose_response(request.task, request.transition, request.request_id)
        else:
            rt.respond(request.task, request.transition, request.request_id)

    # -- faults --------------------------------------------------------------------

    def boundary(self, worker: str, task: str, name: str, boundary: str, request: Request | None = None) -> None:
        """Apply every scheduled fault at this (task, transition, boundary), once."""
        for fault in self.schedule.take_all(task, name, boundary):
            self.inject(fault, worker, task, name, boundary, request)

    def inject(self, fault: str, worker: str, task: str, name: str, boundary: str, request: Request | None) -> None:
        rt = self.rt
        flags = self.request_flags.setdefault(request.request_id, set()) if request is not None else set()
        holder = rt.holder(task)
        if fault == "terminate":
            if rt.workers.get(worker) is not None and rt.workers[worker].alive:
                rt.crash(worker)
                if holder == worker:
                    self.env.process(self.replace(worker, task, LEASE_TTL_S))
        elif fault == "change_owner":
            if holder is not None:
                self.env.process(self.replace(holder, task, 0.0))
        elif fault == "duplicate":
            if request is not None:
                copy = rt.duplicate_request(task, name, request.request_id)
                if not isinstance(copy, str):
                    self.env.process(self.serve(copy))
            else:
                rt.deliver(None, task, duplicate=True)
        elif fault == "delay_ack":
            if request is not None:
                flags.add("delay_request" if boundary == "after_dispatch" else "delay_response")
            else:
                # the queue's acknowledgement deadline passes: it redelivers the task to another worker
                rt.deliver(rt.new_worker_name(), task)
        elif fault in ("lose_request", "lose_response"):
            flags.add(fault)
        else:
            raise AssertionError(f"unknown fault {fault!r} at {boundary}")
