"""The autonomous run as data: workers, external system, lease supervisor and humans as process records.

The same run as :mod:`sim.families.effects.driver` -- the same policy, the
same injectors, the same operations of the runtime, in the same order, so
the same history byte for byte -- on a kernel whose whole state is data
(:mod:`sim.families.effects.agenda`).  A process is a :class:`Proc`: its
kind, where it stands (``pc``) and its locals; resuming it runs its code
from there to its next wait.  So a run can be copied at any moment
(:meth:`AutoRun.copy`) and continued twice: what exhaustive search needs
to take a fault in a state without replaying the order that led there.

**Reads of the fault schedule.**  A fault strikes where the driver reads
the schedule: at a transition's boundary (every entry of ``(task,
transition, point)``, once: :meth:`AutoRun.boundary`), when a worker is
about to reconcile or compensate, and when a human is asked for an
approval (one entry of one fault class each: :meth:`AutoRun.take`).  With a
schedule (a sweep's or a fuzz order's fault list) a read applies what the
schedule holds and the process goes on.  Without one (``pausing``), a read
*pauses* the run in the middle of the process that reads -- ``at_read``
says which read, ``rest`` holds the callbacks of the current event still to
run -- so the caller can apply faults there and continue
(:mod:`sim.families.effects.machine`).
"""

from __future__ import annotations

from typing import Any

from sim.core.history import History
from sim.core.kernel import END_COMPLETED, END_EVENT_LIMIT, END_TIME_LIMIT, RunEnd
from sim.families.effects.agenda import INFINITY, Agenda
from sim.families.effects.driver import (
    APPROVAL_DELAY_S,
    COMMIT_LATENCY_S,
    COMPENSATION_RETRY_S,
    DELAY_ACK_S,
    HUMAN_RESOLVE_S,
    LEASE_TTL_S,
    RESPONSE_LATENCY_S,
    SLOW_APPROVAL_S,
    SLOW_COMMIT_S,
    STEP_S,
)
from sim.families.effects.external import ExternalObject, ExternalSystem, Request
from sim.families.effects.faults import FaultSchedule, inject
from sim.families.effects.policy import approval_wait_left, decide
from sim.families.effects.runtime import Runtime
from sim.families.effects.state import EventLog, TaskView, TransitionView, WorkerMemory, WorkerTask
from sim.families.effects.system import Fenced, OperationSkipped
from sim.families.effects.transition_fields import ACK_TIMEOUT_S

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


class Answer:
    """What a worker waits on for a response (the runtime's ``respond`` succeeds it): an event of the agenda."""

    __slots__ = ("agenda", "eid")

    def __init__(self, agenda: Agenda, eid: int):
        self.agenda, self.eid = agenda, eid

    @property
    def triggered(self) -> bool:
        return self.agenda.triggered(self.eid)

    def succeed(self) -> None:
        self.agenda.succeed(self.eid)


class _Env:
    """What the injectors and the runtime ask of the environment: the clock, and starting a process."""

    __slots__ = ("run",)

    def __init__(self, run: "AutoRun"):
        self.run = run

    @property
    def now(self) -> float:
        return self.run.agenda.now

    def process(self, proc: Proc) -> None:
        self.run.spawn(proc)


class AutoRun:
    """One autonomous run of the durable-effects model under a fault schedule, or pausing at its reads."""

    lease_ttl_s = LEASE_TTL_S

    def __init__(self, rt: Runtime, agenda: Agenda, schedule: FaultSchedule | None = None, pausing: bool = False):
        self.rt, self.agenda = rt, agenda
        self.env = _Env(self)
        self.schedule = schedule or FaultSchedule([])
        self.pausing = pausing
        self.request_flags: dict[str, set[str]] = {}
        self.notices: dict[str, int] = {}
        self.humans_started: set[tuple[str, str, str]] = set()
        self.paused: dict[str, float] = {}
        self.fired: list[Any] = []
        self.procs: dict[int, Proc] = {}
        self.next_pid = 0
        self.at_read: tuple | None = None  # (kind, (task, logical, point), fault class, pid, context)
        self.rest: list | None = None
        self._hook(rt)

    def _hook(self, rt: Runtime) -> None:
        rt.env = self.env
        rt.on_dispatch = self._serve_later
        rt.on_human_record = self._notice
        rt.on_fault_fired = self.fired.append

    # -- starting --------------------------------------------------------------------------

    def spawn(self, proc: Proc) -> None:
        """Start a process now (it runs when the agenda reaches it, before anything else at this time)."""
        self.next_pid += 1
        self.procs[self.next_pid] = proc
        self.agenda.start(self.next_pid)

    def start_task(self, task: str) -> None:
        """Accept a task and hand it to a fresh worker."""
        rt = self.rt
        rt.attempt(rt.accept, task)
        worker = rt.new_worker_name()
        rt.attempt(rt.deliver, worker, task)
        self.spawn(Proc("worker", TOP, worker, task))

    def supervise(self, holder: str | None, task: str, wait_s: float) -> None:
        """The lease supervisor: after ``wait_s`` without a heartbeat the lease moves on."""
        self.spawn(Proc("replace", REPLACE, holder, task, value=wait_s))

    def serve(self, request: Request) -> Proc:
        """The external system's process for one request (started by :meth:`spawn`, as SimPy's ``process``)."""
        return Proc("serve", SERVE, request.worker, request.task, request.transition, request=request)

    def _serve_later(self, request: Request) -> None:
        self.spawn(self.serve(request))

    # -- running ---------------------------------------------------------------------------

    def run(self, max_events: int, max_time_s: float) -> RunEnd | None:
        """Process events until the agenda is empty or a limit is reached (as :meth:`sim.core.kernel.Kernel.run`);
        None when a read paused the run (``pausing``): call again to go on from there."""
        agenda = self.agenda
        if self.rest is not None:
            waiting, self.rest = self.rest, None
            assert self.at_read is not None
            pid = self.at_read[3]
            self.at_read = None
            if not self.resume(pid):
                self.rest = waiting
                return None
            self.rest = agenda.run_callbacks(waiting, self.resume)
            if self.rest is not None:
                return None
        resume = self.resume
        while agenda.steps < max_events:
            if agenda.peek() > max_time_s:
                return RunEnd(END_COMPLETED if agenda.peek() == INFINITY else END_TIME_LIMIT, agenda.now,
                              agenda.steps)
            self.rest = agenda.run_callbacks(agenda.pop(), resume)
            if self.rest is not None:
                return None
        next_time = agenda.peek()
        if next_time == INFINITY:
            return RunEnd(END_COMPLETED, agenda.now, agenda.steps)
        return RunEnd(END_TIME_LIMIT if next_time > max_time_s else END_EVENT_LIMIT, agenda.now, agenda.steps)

    def resume(self, pid: int) -> bool:
        """Run process ``pid`` from where it stands to its next wait (True), or to a read that pauses (False)."""
        proc = self.procs[pid]
        kind = proc.kind
        if kind == "worker":
            return self._worker(pid, proc)
        if kind == "serve" or kind == "respond":
            return self._serve(pid, proc)
        if kind == "human":
            return self._human(pid, proc)
        return self._replace(pid, proc)

    def _sleep(self, pid: int, proc: Proc, delay: float, pc: int) -> bool:
        proc.pc = pc
        self.agenda.wait(pid, self.agenda.timeout(delay))
        return True

    def _end(self, pid: int) -> bool:
        del self.procs[pid]
        self.agenda.ended()
        return True

    def _pause(self, kind: str, key: tuple[str, str, str], fault: str | None, pid: int, context: tuple) -> bool:
        self.at_read = (kind, key, fault, pid, context)
        return False

    # -- reads of the schedule -------------------------------------------------------------

    def boundary(self, pid: int, worker: str, task: str, name: str, point: str,
                 request: Request | None = None) -> bool:
        """Every scheduled fault at this (task, transition, point), once, in list order (False: paused here)."""
        logical = self.rt.logical_of(name)
        if self.pausing:
            return self._pause("all", (task, logical, point), None, pid, (worker, task, name, request))
        for entry in self.schedule.take_all(task, logical, point):
            if inject(self, entry, worker, task, name, request):
                self.fired.append(entry.token)
        return True

    def take(self, pid: int, task: str, name: str, point: str, fault: str) -> bool:
        """One scheduled fault of one class at this (task, transition, point) (False: paused here).  A fault taken
        at a recovery moment is armed in the runtime until the moment runs; a slow approval is kept by the
        human's process (``value``)."""
        logical = self.rt.logical_of(name)
        if self.pausing:
            return self._pause("one", (task, logical, point), fault, pid, (None, task, name, None))
        entry = self.schedule.take(task, logical, point, fault)
        if entry is not None:
            self.strike_one(pid, task, logical, fault, entry.token)
        return True

    def strike_one(self, pid: int, task: str, logical: str, fault: str, token: Any) -> None:
        """A fault of a one-class read takes effect (its token identifies it when it fires)."""
        if fault == "slow_approval":
            self.procs[pid].value = True
            self.fired.append(token)
        else:
            self.rt.arm_fault(task, logical, fault, token)

    # -- the worker ------------------------------------------------------------------------

    def _running(self, worker: str, task: str) -> bool:
        memory = self.rt.workers.get(worker)
        return memory is not None and memory.alive and task in memory.tasks and not memory.tasks[task].fenced

    def _worker(self, pid: int, p: Proc) -> bool:  # noqa: C901 -- the generator's loop, one label per wait
        rt, worker, task = self.rt, p.worker, p.task
        assert worker is not None
        pc = p.pc
        while True:
            if pc == TOP:
                if not self._running(worker, task):
                    return self._end(pid)
                pause = self.paused.pop(worker, 0.0)
                if pause:
                    return self._sleep(pid, p, pause, TOP)
                action = decide(rt, worker, task)
                if action is None:
                    return self._end(pid)
                p.op, p.name = action
                if p.op in ("wait_human", "wait_approval"):
                    return self._wait_for_human(pid, p)
                if p.op == "intent":
                    p.pc = AFTER_BEFORE_INTENT
                    if not self.boundary(pid, worker, task, p.name, "before_intent"):
                        return False
                    pc = AFTER_BEFORE_INTENT
                    continue
                pc = ARM
            elif pc == AFTER_BEFORE_INTENT:
                pc = TOP if not self._running(worker, task) or worker in self.paused else ARM
            elif pc == ARM:
                p.pc = SLEEP_STEP
                if p.op in ("compensate", "reconcile"):
                    fault = "unprovable" if p.op == "reconcile" else "compensation_fails"
                    if not self.take(pid, task, p.name, p.op, fault):
                        return False
                pc = SLEEP_STEP
            elif pc == SLEEP_STEP:
                return self._sleep(pid, p, STEP_S, AFTER_STEP)
            elif pc == AFTER_STEP:
                if not self._running(worker, task):
                    return self._end(pid)
                pc = self._after_step(pid, p)
                if pc == WAITS:
                    return True
                if pc == ENDS:
                    return self._end(pid)
                if pc == PAUSED:
                    return False
            elif pc == AFTER_DISPATCH:
                if not self._running(worker, task):
                    return self._end(pid)
                assert p.request is not None
                answer = self.agenda.event()
                rt.workers[worker].tasks[task].waiting[p.request.request_id] = Answer(self.agenda, answer)
                p.pc = AFTER_WAIT
                self.agenda.wait_any(pid, answer, self.agenda.timeout(self.ack_timeout_s(p.name)))
                return True
            else:  # AFTER_WAIT
                if self._running(worker, task):
                    assert p.request is not None
                    rt.workers[worker].tasks[task].waiting.pop(p.request.request_id, None)
                pc = TOP

    def _after_step(self, pid: int, p: Proc) -> int:
        """Perform the step the worker chose; where it goes next: a ``pc``, or WAITS, ENDS, PAUSED."""
        rt, worker, task, op, name = self.rt, p.worker, p.task, p.op, p.name
        assert worker is not None
        try:
            self.perform(op, worker, task, name)
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
            return TOP if self.boundary(pid, worker, task, name, "after_" + op) else PAUSED
        if op == "compensate" and rt.workers[worker].tasks.get(task) is not None:
            if not rt.workers[worker].tasks[task].view.transitions[name].compensated:
                self._sleep(pid, p, COMPENSATION_RETRY_S, TOP)
                return WAITS
        elif op == "dispatch":
            request = rt.last_request
            assert request is not None, "a dispatch that succeeded sent a request"
            p.request, p.pc = request, AFTER_DISPATCH
            return AFTER_DISPATCH if self.boundary(pid, worker, task, name, "after_dispatch", request) else PAUSED
        return TOP

    def _wait_for_human(self, pid: int, p: Proc) -> bool:
        rt, task, name, op = self.rt, p.task, p.name, p.op
        self._start_human(task, name, op)
        p.pc = TOP
        notice = self._notice_event(task)
        if op == "wait_human":
            self.agenda.wait(pid, notice)
            return True
        assert p.worker is not None
        left = approval_wait_left(rt, rt.workers[p.worker].tasks[task].view, name)
        if left is None or left == INFINITY:
            self.agenda.wait(pid, notice)
        else:
            self.agenda.wait_any(pid, notice, self.agenda.timeout(left))
        return True

    def ack_timeout_s(self, name: str) -> float:
        """How long a worker waits for a response of T: its timeout class, else ACK_TIMEOUT_S."""
        transition = self.rt._any_transition(name)
        declared = transition.timeout_s if transition is not None else None
        return ACK_TIMEOUT_S if declared is None else declared

    def late_s(self, name: str, flag: str) -> float:
        """How late a delayed request (``delay_ack``) or a slow commit (``timeout``) of T arrives."""
        extra = DELAY_ACK_S if flag == "delay_request" else SLOW_COMMIT_S
        waited = self.ack_timeout_s(name)
        return extra if waited == ACK_TIMEOUT_S else waited + (extra - ACK_TIMEOUT_S)

    def perform(self, op: str, worker: str, task: str, name: str) -> None:
        rt = self.rt
        if op == "close":
            return rt.close(worker, task)
        method = {
            "intent": rt.intent, "dispatch": rt.dispatch, "timeout": rt.timeout, "reconcile": rt.reconcile,
            "receipt": rt.receipt, "escalate": rt.escalate, "request_approval": rt.request_approval,
            "compensate": rt.compensate, "abort": rt.abort,
        }[op]
        return method(worker, task, name)

    # -- humans ----------------------------------------------------------------------------

    def _notice_event(self, task: str) -> int:
        eid = self.notices.get(task)
        if eid is None or self.agenda.triggered(eid):
            eid = self.notices[task] = self.agenda.event()
        return eid

    def _notice(self, task: str) -> None:
        eid = self.notices.get(task)
        if eid is not None and not self.agenda.triggered(eid):
            self.agenda.succeed(eid)

    def _start_human(self, task: str, name: str, op: str) -> None:
        key = (task, name, op)
        if key in self.humans_started:
            return
        self.humans_started.add(key)
        self.spawn(Proc("human", HUMAN, None, task, name, op, value=False))

    def _human(self, pid: int, p: Proc) -> bool:
        rt = self.rt
        if p.pc == HUMAN:
            if p.op != "wait_approval":
                return self._sleep(pid, p, HUMAN_RESOLVE_S, HUMAN_ACT)
            p.pc = HUMAN_WAIT
            if not self.take(pid, p.task, p.name, "before_intent", "slow_approval"):
                return False
        if p.pc == HUMAN_WAIT:
            return self._sleep(pid, p, SLOW_APPROVAL_S if p.value else APPROVAL_DELAY_S, HUMAN_ACT)
        if p.op == "wait_approval":
            rt.attempt(rt.approve, p.task, p.name)
        else:
            rt.attempt(rt.resolve, p.task, p.name)
            self.humans_started.discard((p.task, p.name, p.op))
        return self._end(pid)

    # -- the lease supervisor --------------------------------------------------------------

    def _replace(self, pid: int, p: Proc) -> bool:
        if p.pc == REPLACE:
            return self._sleep(pid, p, p.value, REPLACE_ACT)
        rt, holder, task = self.rt, p.worker, p.task
        if rt.log.reduce(task).terminal is not None or rt.holder(task) != holder:
            return self._end(pid)
        successor = rt.new_worker_name()
        if holder is None:
            rt.attempt(rt.lease, successor, task)
        else:
            rt.attempt(rt.lease_expire, holder, successor, task)
        rt.attempt(rt.deliver, successor, task)
        self.spawn(Proc("worker", TOP, successor, task))
        return self._end(pid)

    # -- the external system ---------------------------------------------------------------

    def _serve(self, pid: int, p: Proc) -> bool:
        rt, request = self.rt, p.request
        assert request is not None
        rid = request.request_id
        if p.pc == SERVE:
            self.request_flags.setdefault(rid, set())
            return self._sleep(pid, p, COMMIT_LATENCY_S, AFTER_LATENCY)
        if p.pc == AFTER_LATENCY:
            flags = self.request_flags[rid]
            if "delay_request" in flags:
                return self._sleep(pid, p, self.late_s(request.transition, "delay_request"), COMMIT)
            if "slow_commit" in flags:
                return self._sleep(pid, p, self.late_s(request.transition, "slow_commit"), COMMIT)
            p.pc = COMMIT
        if p.pc == COMMIT:
            if request not in rt.in_flight:
                return self._end(pid)
            if "lose_request" in self.request_flags[rid]:
                rt.attempt(rt.lose_request, request.task, request.transition, rid)
                return self._end(pid)
            rt.attempt(rt.commit, request.task, request.transition, rid)
            p.pc = AFTER_COMMIT
            if not self.boundary(pid, request.worker, request.task, request.transition, "after_commit", request):
                return False
        if p.pc == AFTER_COMMIT:
            delay = RESPONSE_LATENCY_S + (self.late_s(request.transition, "delay_request")
                                          if "delay_response" in self.request_flags[rid] else 0.0)
            return self._sleep(pid, p, delay, RESPONSE)
        if not any(item[0] is request for item in rt.responses):
            return self._end(pid)
        if "lose_response" in self.request_flags.get(rid, ()):
            rt.attempt(rt.lose_response, request.task, request.transition, rid)
        else:
            rt.attempt(rt.respond, request.task, request.transition, rid)
        return self._end(pid)

    # -- copying ---------------------------------------------------------------------------

    def copy(self) -> "AutoRun":
        """An independent copy of the run as it stands (paused at a read, or between events)."""
        agenda = self.agenda.copy()
        other = AutoRun.__new__(AutoRun)
        other.agenda, other.env = agenda, _Env(other)
        other.schedule, other.pausing = self.schedule, self.pausing
        other.request_flags = {rid: set(flags) for rid, flags in self.request_flags.items()}
        other.notices = dict(self.notices)
        other.humans_started = set(self.humans_started)
        other.paused = dict(self.paused)
        other.fired = list(self.fired)
        other.procs = {pid: proc.copy() for pid, proc in self.procs.items()}
        other.next_pid, other.at_read = self.next_pid, self.at_read
        other.rest = None if self.rest is None else list(self.rest)
        other.rt = copy_runtime(self.rt, agenda)
        other._hook(other.rt)
        return other


def copy_runtime(rt: Runtime, agenda: Agenda) -> Runtime:
    """An independent copy of the runtime's state (what the operations change is copied; what they only read --
    requests, evidence, records, the workflows -- is shared)."""
    other = rt.__class__.__new__(rt.__class__)
    other.__dict__.update(rt.__dict__)
    other.history = History(list(rt.history))
    log = EventLog()
    log.records = {task: list(records) for task, records in rt.log.records.items()}
    other.log = log
    other.external, objects = _copy_external(rt.external)
    other.workers = {name: _copy_memory(memory, agenda) for name, memory in rt.workers.items()}
    other.leases = {task: list(lease) for task, lease in rt.leases.items()}
    other.deliveries = dict(rt.deliveries)
    other.in_flight = list(rt.in_flight)
    other.responses = [(request, outcome, objects.get(id(obj), obj)) for request, outcome, obj in rt.responses]
    other.armed = {key: list(tokens) for key, tokens in rt.armed.items()}
    other.last_dispatch_s = dict(rt.last_dispatch_s)
    other.abort_s = dict(rt.abort_s)
    other.checkpoint_s = dict(rt.checkpoint_s)
    other.verdicts = list(rt.verdicts)
    return other


def _copy_external(external: ExternalSystem) -> tuple[ExternalSystem, dict[int, ExternalObject]]:
    other = ExternalSystem.__new__(ExternalSystem)
    other.__dict__.update(external.__dict__)
    objects: dict[int, ExternalObject] = {}
    copied = []
    for obj in external.objects:
        new = ExternalObject.__new__(ExternalObject)
        new.__dict__.update(obj.__dict__)
        objects[id(obj)] = new
        copied.append(new)
    other.objects = copied
    other.keys = {key: (objects.get(id(obj), obj), at, kept) for key, (obj, at, kept) in external.keys.items()}
    other.read_versions = dict(external.read_versions)
    return other, objects


def _copy_view(view: TaskView) -> TaskView:
    other = TaskView.__new__(TaskView)
    other.__dict__.update(view.__dict__)
    transitions = {}
    for name, tv in view.transitions.items():
        new = TransitionView.__new__(TransitionView)
        for slot in TransitionView.__slots__:
            setattr(new, slot, getattr(tv, slot))
        transitions[name] = new
    other.transitions = transitions
    other.approved = set(view.approved)
    other.approval_requested = dict(view.approval_requested)
    return other


def _copy_memory(memory: WorkerMemory, agenda: Agenda) -> WorkerMemory:
    tasks = {}
    for task, wt in memory.tasks.items():
        waiting = {rid: Answer(agenda, answer.eid) for rid, answer in wt.waiting.items()}
        tasks[task] = WorkerTask(_copy_view(wt.view), wt.epoch, wt.version, dict(wt.evidence), wt.fenced, waiting,
                                 dict(wt.observations))
    return WorkerMemory(memory.name, memory.alive, tasks)
