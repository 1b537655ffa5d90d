"""The processes of an autonomous run, as code over records: the workers, the external system, humans and the
lease supervisor (:mod:`sim.families.effects.autorun` runs them).

Each is a function of the run and one :class:`Proc` -- its kind, where it stands (``pc``) and what it keeps
across waits -- that runs the process's code from ``pc`` to its next wait (True) or to a read of the fault
schedule that pauses the run (False).  Line for line the generators of :mod:`sim.families.effects.driver`:
one label per ``yield``, and one after each read of the schedule.
"""

from __future__ import annotations

from typing import Any

from sim.families.effects.agenda import INFINITY, Answer
from sim.families.effects.driver import (
    APPROVAL_DELAY_S,
    COMMIT_LATENCY_S,
    COMPENSATION_RETRY_S,
    HUMAN_RESOLVE_S,
    RESPONSE_LATENCY_S,
    SLOW_APPROVAL_S,
    STEP_S,
)
from sim.families.effects.external import Request
from sim.families.effects.policy import approval_wait_left, decide
from sim.families.effects.system import Fenced, OperationSkipped

#: The run a process belongs to (:class:`sim.families.effects.autorun.AutoRun`; named, not imported: the run
#: imports its processes' code).
AutoRun = Any

# Where a process stands (its ``pc``).  Worker:
TOP, AFTER_BEFORE_INTENT, ARM, SLEEP_STEP, AFTER_STEP, AFTER_DISPATCH, AFTER_WAIT = range(7)
# What a worker's step leads to besides its next pc:
WAITS, ENDS, PAUSED = -1, -2, -3
# The external system serving one request (and a response on its way):
SERVE, AFTER_LATENCY, COMMIT, AFTER_COMMIT, RESPONSE = range(10, 15)
# A human, the lease supervisor:
HUMAN, HUMAN_WAIT, HUMAN_ACT, REPLACE, REPLACE_ACT = range(20, 25)


class Proc:
    """One process: its kind (``worker``, ``serve``, ``respond``, ``human``, ``replace``), where it stands, and
    what it keeps across waits."""

    __slots__ = ("kind", "pc", "worker", "task", "name", "op", "refused", "request", "value")

    def __init__(self, kind: str, pc: int, worker: str | None = None, task: str = "", name: str = "",
                 op: str = "", request: Request | None = None, value: Any = None):
        self.kind, self.pc, self.worker, self.task, self.name, self.op = kind, pc, worker, task, name, op
        self.refused: Any = None
        self.request, self.value = request, value

    def copy(self) -> "Proc":
        other = Proc.__new__(Proc)
        other.kind, other.pc, other.worker, other.task, other.name, other.op = (
            self.kind, self.pc, self.worker, self.task, self.name, self.op)
        other.refused, other.request, other.value = self.refused, self.request, self.value
        return other

    def key(self) -> tuple:
        request = self.request.request_id if self.request is not None else None
        return (self.kind, self.pc, self.worker, self.task, self.name, self.op, self.refused, request, self.value)


def worker(run: AutoRun, pid: int, p: Proc) -> bool:  # noqa: C901 -- the generator's loop, one label per wait
    rt, worker, task = run.rt, p.worker, p.task
    assert worker is not None
    pc = p.pc
    while True:
        if pc == TOP:
            if not run.running(worker, task):
                return run.end(pid)
            pause = run.paused.pop(worker, 0.0)
            if pause:
                return run.sleep(pid, p, pause, TOP)
            action = decide(rt, worker, task)
            if action is None:
                return run.end(pid)
            p.op, p.name = action
            if p.op in ("wait_human", "wait_approval"):
                return _wait_for_human(run, pid, p)
            if p.op == "intent":
                p.pc = AFTER_BEFORE_INTENT
                if not run.boundary(pid, worker, task, p.name, "before_intent"):
                    return False
                pc = AFTER_BEFORE_INTENT
                continue
            pc = ARM
        elif pc == AFTER_BEFORE_INTENT:
            pc = TOP if not run.running(worker, task) or worker in run.paused else ARM
        elif pc == ARM:
            p.pc = SLEEP_STEP
            if p.op in ("compensate", "reconcile"):
                fault = "unprovable" if p.op == "reconcile" else "compensation_fails"
                if not run.take(pid, task, p.name, p.op, fault):
                    return False
            pc = SLEEP_STEP
        elif pc == SLEEP_STEP:
            return run.sleep(pid, p, STEP_S, AFTER_STEP)
        elif pc == AFTER_STEP:
            if not run.running(worker, task):
                return run.end(pid)
            pc = _after_step(run, pid, p)
            if pc == WAITS:
                return True
            if pc == ENDS:
                return run.end(pid)
            if pc == PAUSED:
                return False
        elif pc == AFTER_DISPATCH:
            if not run.running(worker, task):
                return run.end(pid)
            assert p.request is not None
            answer = run.agenda.event()
            rt.workers[worker].tasks[task].waiting[p.request.request_id] = Answer(run.agenda, answer)
            p.pc = AFTER_WAIT
            run.agenda.wait_any(pid, answer, run.agenda.timeout(run.ack_timeout_s(p.name)))
            return True
        else:  # AFTER_WAIT
            if run.running(worker, task):
                assert p.request is not None
                rt.workers[worker].tasks[task].waiting.pop(p.request.request_id, None)
            pc = TOP

def _after_step(run: AutoRun, pid: int, p: Proc) -> int:
    """Perform the step the worker chose; where it goes next: a ``pc``, or WAITS, ENDS, PAUSED."""
    rt, worker, task, op, name = run.rt, p.worker, p.task, p.op, p.name
    assert worker is not None
    try:
        run.perform(op, worker, task, name)
    except OperationSkipped as skipped:
        # A human or the verifier changed the worker's view during the step: decide again.  The same
        # refusal on an unchanged view would loop forever, so it is a bug in the model.
        rt.record_skip(skipped)
        records = rt.workers[worker].tasks[task].view.records
        if p.refused == (op, name, records):
            raise AssertionError(
                f"the policy chose {op} {name} for {worker}, which the runtime refused") from skipped
        p.refused = (op, name, records)
        return TOP
    except Fenced:
        return ENDS
    if op == "intent" or op == "receipt":
        p.pc = TOP
        return TOP if run.boundary(pid, worker, task, name, "after_" + op) else PAUSED
    if op == "compensate" and rt.workers[worker].tasks.get(task) is not None:
        if not rt.workers[worker].tasks[task].view.transitions[name].compensated:
            run.sleep(pid, p, COMPENSATION_RETRY_S, TOP)
            return WAITS
    elif op == "dispatch":
        request = rt.last_request
        assert request is not None, "a dispatch that succeeded sent a request"
        p.request, p.pc = request, AFTER_DISPATCH
        return AFTER_DISPATCH if run.boundary(pid, worker, task, name, "after_dispatch", request) else PAUSED
    return TOP

def _wait_for_human(run: AutoRun, pid: int, p: Proc) -> bool:
    rt, task, name, op = run.rt, p.task, p.name, p.op
    run.start_human(task, name, op)
    p.pc = TOP
    notice = run.notice_event(task)
    if op == "wait_human":
        run.agenda.wait(pid, notice)
        return True
    assert p.worker is not None
    left = approval_wait_left(rt, rt.workers[p.worker].tasks[task].view, name)
    if left is None or left == INFINITY:
        run.agenda.wait(pid, notice)
    else:
        run.agenda.wait_any(pid, notice, run.agenda.timeout(left))
    return True

def human(run: AutoRun, pid: int, p: Proc) -> bool:
    rt = run.rt
    if p.pc == HUMAN:
        if p.op != "wait_approval":
            return run.sleep(pid, p, HUMAN_RESOLVE_S, HUMAN_ACT)
        p.pc = HUMAN_WAIT
        if not run.take(pid, p.task, p.name, "before_intent", "slow_approval"):
            return False
    if p.pc == HUMAN_WAIT:
        return run.sleep(pid, p, SLOW_APPROVAL_S if p.value else APPROVAL_DELAY_S, HUMAN_ACT)
    if p.op == "wait_approval":
        rt.attempt(rt.approve, p.task, p.name)
    else:
        rt.attempt(rt.resolve, p.task, p.name)
        run.humans_started.discard((p.task, p.name, p.op))
    return run.end(pid)

# -- the lease supervisor --------------------------------------------------------------

def replace(run: AutoRun, pid: int, p: Proc) -> bool:
    if p.pc == REPLACE:
        return run.sleep(pid, p, p.value, REPLACE_ACT)
    rt, holder, task = run.rt, p.worker, p.task
    if rt.log.reduce(task).terminal is not None or rt.holder(task) != holder:
        return run.end(pid)
    successor = rt.new_worker_name()
    if holder is None:
        rt.attempt(rt.lease, successor, task)
    else:
        rt.attempt(rt.lease_expire, holder, successor, task)
    rt.attempt(rt.deliver, successor, task)
    run.spawn(Proc("worker", TOP, successor, task))
    return run.end(pid)

# -- the external system ---------------------------------------------------------------

def serve(run: AutoRun, pid: int, p: Proc) -> bool:
    rt, request = run.rt, p.request
    assert request is not None
    rid = request.request_id
    if p.pc == SERVE:
        run.request_flags.setdefault(rid, set())
        return run.sleep(pid, p, COMMIT_LATENCY_S, AFTER_LATENCY)
    if p.pc == AFTER_LATENCY:
        flags = run.request_flags[rid]
        if "delay_request" in flags:
            return run.sleep(pid, p, run.late_s(request.transition, "delay_request"), COMMIT)
        if "slow_commit" in flags:
            return run.sleep(pid, p, run.late_s(request.transition, "slow_commit"), COMMIT)
        p.pc = COMMIT
    if p.pc == COMMIT:
        if request not in rt.in_flight:
            return run.end(pid)
        if "lose_request" in run.request_flags[rid]:
            rt.attempt(rt.lose_request, request.task, request.transition, rid)
            return run.end(pid)
        rt.attempt(rt.commit, request.task, request.transition, rid)
        p.pc = AFTER_COMMIT
        if not run.boundary(pid, request.worker, request.task, request.transition, "after_commit", request):
            return False
    if p.pc == AFTER_COMMIT:
        delay = RESPONSE_LATENCY_S + (run.late_s(request.transition, "delay_request")
                                      if "delay_response" in run.request_flags[rid] else 0.0)
        return run.sleep(pid, p, delay, RESPONSE)
    if not any(item[0] is request for item in rt.responses):
        return run.end(pid)
    if "lose_response" in run.request_flags.get(rid, ()):
        rt.attempt(rt.lose_response, request.task, request.transition, rid)
    else:
        rt.attempt(rt.respond, request.task, request.transition, rid)
    return run.end(pid)

# -- copying ---------------------------------------------------------------------------
