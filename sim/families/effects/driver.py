"""The autonomous runtime: workers, external system, lease supervisor and humans as SimPy processes.

Workers follow the protocol's policy (:mod:`sim.families.effects.policy`);
the fault schedule (data) says where faults strike and the injectors
(:mod:`sim.families.effects.injectors`, named by the fault registry) apply them.  The driver only *reads*
the schedule: it never draws a random number.  All state changes go through
the runtime's operations.  Which faults took effect is recorded in
``fired`` (their tokens, in the order they fired).
"""

from __future__ import annotations

from typing import Any

from sim.families.effects.external import Request
from sim.families.effects.faults import FaultSchedule, inject
from sim.families.effects.policy import approval_wait_left, decide
from sim.families.effects.runtime import Runtime
from sim.families.effects.system import Fenced, OperationSkipped
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


class AutoDriver:
    """Runs tasks to completion under a fault schedule."""

    lease_ttl_s = LEASE_TTL_S

    def __init__(self, rt: Runtime, schedule: FaultSchedule | None = None):
        self.rt = rt
        self.env = rt.env
        self.schedule = schedule or FaultSchedule([])
        self.request_flags: dict[str, set[str]] = {}
        self.notices: dict[str, Any] = {}
        self.humans_started: set[tuple[str, str, str]] = set()
        self.paused: dict[str, float] = {}
        self.fired: list[Any] = []
        self.scenario: Any = None  # the scenario of a fault list's run (set by the runner)
        rt.on_dispatch = self._serve_later
        rt.on_human_record = self._notice
        rt.on_fault_fired = self.fired.append

    # -- starting ------------------------------------------------------------------

    def start_task(self, task: str) -> None:
        """Accept a task and hand it to a fresh worker."""
        self.rt.attempt(self.rt.accept, task)
        worker = self.rt.new_worker_name()
        self.rt.attempt(self.rt.deliver, worker, task)
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
            if holder is not None and self._running(holder, task):
                self.env.process(self.worker_loop(holder, task))
            else:
                self.supervise(holder, task, 0.0 if holder is None else LEASE_TTL_S)

    def supervise(self, holder: str | None, task: str, wait_s: float) -> None:
        """The lease supervisor: after ``wait_s`` without a heartbeat the lease moves on."""
        self.env.process(self._replace(holder, task, wait_s))

    def _replace(self, holder: str | None, task: str, wait_s: float):
        yield self.env.timeout(wait_s)
        rt = self.rt
        if rt.log.reduce(task).terminal is not None or rt.holder(task) != holder:
            return
        successor = rt.new_worker_name()
        if holder is None:
            rt.attempt(rt.lease, successor, task)
        else:
            rt.attempt(rt.lease_expire, holder, successor, task)
        rt.attempt(rt.deliver, successor, task)
        self.env.process(self.worker_loop(successor, task))

    # -- the worker ----------------------------------------------------------------

    def _running(self, worker: str, task: str) -> bool:
        memory = self.rt.workers.get(worker)
        return memory is not None and memory.alive and task in memory.tasks and not memory.tasks[task].fenced

    def worker_loop(self, worker: str, task: str):
        rt, env = self.rt, self.env
        refused = None
        while self._running(worker, task):
            pause = self.paused.pop(worker, 0.0)
            if pause:
                yield env.timeout(pause)
                continue
            action = decide(rt, worker, task)
            if action is None:
                return
            op, name = action
            if op == "wait_human":
                self._start_human(task, name, op)
                yield self._notice_event(task)
                continue
            if op == "wait_approval":
                self._start_human(task, name, op)
                left = approval_wait_left(rt, rt.workers[worker].tasks[task].view, name)
                notice = self._notice_event(task)
                yield notice if left is None or left == float("inf") else notice | env.timeout(left)
                continue
            if op == "intent":
                self.boundary(worker, task, name, "before_intent")
                if not self._running(worker, task) or worker in self.paused:
                    continue
            if op in ("compensate", "reconcile"):
                self._arm_for_moment(task, name, op)
            yield env.timeout(STEP_S)
            if not self._running(worker, task):
                return
            try:
                self.perform(op, worker, task, name)
            except OperationSkipped as skipped:
                # A human or the verifier changed the worker's view during the step: decide again.  The same
                # refusal on an unchanged view would loop forever, so it is a bug in the model.
                rt.record_skip(skipped)
                records = rt.workers[worker].tasks[task].view.records
                if refused == (op, name, records):
                    raise AssertionError(
                        f"the policy chose {op} {name} for {worker}, which the runtime refused") from skipped
                refused = (op, name, records)
                continue
            except Fenced:
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
                assert request is not None, "a dispatch that succeeded sent a request"
                self.boundary(worker, task, name, "after_dispatch", request)
                if not self._running(worker, task):
                    return
                answer = env.event()
                rt.workers[worker].tasks[task].waiting[request.request_id] = answer
                yield answer | env.timeout(self.ack_timeout_s(name))
                if self._running(worker, task):
                    rt.workers[worker].tasks[task].waiting.pop(request.request_id, None)

    def ack_timeout_s(self, name: str) -> float:
        return ack_timeout_s(self.rt, name)

    def late_s(self, name: str, flag: str) -> float:
        return late_s(self.rt, name, flag)

    def perform(self, op: str, worker: str, task: str, name: str) -> None:
        perform(self.rt, op, worker, task, name)

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
            slow = self.schedule.take(task, self.rt.logical_of(name), "before_intent", "slow_approval")
            if slow is not None:
                self.fired.append(slow.token)
            yield self.env.timeout(SLOW_APPROVAL_S if slow is not None else APPROVAL_DELAY_S)
            self.rt.attempt(self.rt.approve, task, name)
        else:
            yield self.env.timeout(HUMAN_RESOLVE_S)
            self.rt.attempt(self.rt.resolve, task, name)
            self.humans_started.discard((task, name, op))

    # -- the external system -------------------------------------------------------

    def _serve_later(self, request: Request) -> None:
        self.env.process(self.serve(request))

    def serve(self, request: Request):
        rt = self.rt
        flags = self.request_flags.setdefault(request.request_id, set())
        yield self.env.timeout(COMMIT_LATENCY_S)
        if "delay_request" in flags:
            yield self.env.timeout(self.late_s(request.transition, "delay_request"))
        elif "slow_commit" in flags:
            yield self.env.timeout(self.late_s(request.transition, "slow_commit"))
        if request not in rt.in_flight:
            return
        if "lose_request" in flags:
            rt.attempt(rt.lose_request, request.task, request.transition, request.request_id)
            return
        rt.attempt(rt.commit, request.task, request.transition, request.request_id)
        self.boundary(request.worker, request.task, request.transition, "after_commit", request)
        delay = RESPONSE_LATENCY_S + (self.late_s(request.transition, "delay_request") if "delay_response" in flags
                                      else 0.0)
        yield from self.deliver_response(request, delay)

    def deliver_response(self, request: Request, delay_s: float):
        yield self.env.timeout(delay_s)
        rt = self.rt
        if not any(item[0] is request for item in rt.responses):
            return
        if "lose_response" in self.request_flags.get(request.request_id, ()):
            rt.attempt(rt.lose_response, request.task, request.transition, request.request_id)
        else:
            rt.attempt(rt.respond, request.task, request.transition, request.request_id)

    # -- faults --------------------------------------------------------------------

    def boundary(self, worker: str, task: str, name: str, point: str, request: Request | None = None) -> None:
        """Apply every scheduled fault at this (task, transition, point), once, in list order."""
        for entry in self.schedule.take_all(task, self.rt.logical_of(name), point):
            if inject(self, entry, worker, task, name, request):
                self.fired.append(entry.token)

    def _arm_for_moment(self, task: str, name: str, op: str) -> None:
        """Faults of a recovery moment wait in the runtime until the reconcile or compensation runs."""
        kind = "unprovable" if op == "reconcile" else "compensation_fails"
        entry = self.schedule.take(task, self.rt.logical_of(name), op, kind)
        if entry is not None:
            self.rt.arm_fault(task, self.rt.logical_of(name), kind, entry.token)


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
