"""The autonomous run as data: workers, external system, lease supervisor and humans as process records.

The same run as :mod:`sim.families.effects.driver` -- the same policy, the
same injectors, the same operations of the runtime, in the same order, so
the same history byte for byte -- on a kernel whose whole state is data
(:mod:`sim.families.effects.agenda`).  A process is a
:class:`~sim.families.effects.actors.Proc`: its kind, where it stands
(``pc``) and its locals; resuming it runs its code
(:mod:`sim.families.effects.actors`) from there to its next wait.  So a run can be copied at any moment
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

import weakref
from typing import Any

from sim.core.kernel import END_COMPLETED, END_EVENT_LIMIT, END_TIME_LIMIT, RunEnd
from sim.families.effects import actors, driver
from sim.families.effects.actors import AFTER_COMMIT, HUMAN, REPLACE, SERVE, TOP, Proc
from sim.families.effects.agenda import INFINITY, Agenda
from sim.families.effects.driver import LEASE_TTL_S
from sim.families.effects.external import Request
from sim.families.effects.faults import FaultSchedule, inject
from sim.families.effects.runcopy import copy_runtime
from sim.families.effects.runtime import Runtime


class _Link:
    """What the injectors (``driver.env.process``) and the runtime's hooks hold of the run: a weak reference, so
    a run is no reference cycle and is freed as soon as it is dropped (exhaustive search makes many)."""

    __slots__ = ("ref",)

    def __init__(self, run: "AutoRun"):
        self.ref = weakref.ref(run)

    def _run(self) -> "AutoRun":
        run = self.ref()
        assert run is not None, "a run's runtime outlived the run"
        return run

    def process(self, proc: Proc) -> None:
        self._run().spawn(proc)

    def serve_later(self, request: Request) -> None:
        self._run().spawn(self._run().serve(request))

    def notice(self, task: str) -> None:
        self._run()._notice(task)


class AutoRun:
    """One autonomous run of the durable-effects model under a fault schedule, or pausing at its reads."""

    lease_ttl_s = LEASE_TTL_S

    def __init__(self, rt: Runtime, agenda: Agenda, schedule: FaultSchedule | None = None, pausing: bool = False):
        self.rt, self.agenda = rt, agenda
        self.env = _Link(self)
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
        self.scenario: Any = None  # the scenario of a fault list's run (set by the runner: the family's machine)
        self._hook(rt)

    def _hook(self, rt: Runtime) -> None:
        rt.env = self.agenda  # the clock (``now``)
        rt.on_dispatch = self.env.serve_later
        rt.on_human_record = self.env.notice
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

    def recover(self) -> None:
        """After a script: the system heals and finishes every unfinished task from durable history -- the
        external system answers what is in flight, a live lease holder goes on, a lost one is replaced after its
        lease expires."""
        rt = self.rt
        for request in list(rt.in_flight):
            self.spawn(self.serve(request))
        for request, _, _ in list(rt.responses):
            self.request_flags.setdefault(request.request_id, set())
            self.spawn(Proc("serve", AFTER_COMMIT, request.worker, request.task, request.transition, request=request))
        for task in list(rt.leases):
            if rt.log.reduce(task).terminal is not None:
                continue
            holder = rt.holder(task)
            if holder is not None and self.running(holder, task):
                self.spawn(Proc("worker", TOP, holder, task))
            else:
                self.supervise(holder, task, 0.0 if holder is None else LEASE_TTL_S)

    def supervise(self, holder: str | None, task: str, wait_s: float) -> None:
        """The lease supervisor: after ``wait_s`` without a heartbeat the lease moves on."""
        self.spawn(Proc("replace", REPLACE, holder, task, value=wait_s))

    def serve(self, request: Request) -> Proc:
        """The external system's process for one request (started by :meth:`spawn`, as SimPy's ``process``)."""
        return Proc("serve", SERVE, request.worker, request.task, request.transition, request=request)

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
        return _CODE[proc.kind](self, pid, proc)

    def sleep(self, pid: int, proc: Proc, delay: float, pc: int) -> bool:
        proc.pc = pc
        self.agenda.wait(pid, self.agenda.timeout(delay))
        return True

    def end(self, pid: int) -> bool:
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

    def running(self, worker: str, task: str) -> bool:
        memory = self.rt.workers.get(worker)
        return memory is not None and memory.alive and task in memory.tasks and not memory.tasks[task].fenced

    def ack_timeout_s(self, name: str) -> float:
        return driver.ack_timeout_s(self.rt, name)

    def late_s(self, name: str, flag: str) -> float:
        return driver.late_s(self.rt, name, flag)

    def perform(self, op: str, worker: str, task: str, name: str) -> None:
        driver.perform(self.rt, op, worker, task, name)

    # -- humans ----------------------------------------------------------------------------

    def notice_event(self, task: str) -> int:
        eid = self.notices.get(task)
        if eid is None or self.agenda.triggered(eid):
            eid = self.notices[task] = self.agenda.event()
        return eid

    def _notice(self, task: str) -> None:
        eid = self.notices.get(task)
        if eid is not None and not self.agenda.triggered(eid):
            self.agenda.succeed(eid)

    def start_human(self, task: str, name: str, op: str) -> None:
        key = (task, name, op)
        if key in self.humans_started:
            return
        self.humans_started.add(key)
        self.spawn(Proc("human", HUMAN, None, task, name, op, value=False))

    def __getstate__(self) -> dict[str, object]:
        """A run pickles without its weak link (exhaustive search spills a layer of states to disk)."""
        state = {name: getattr(self, name) for name in vars(self) if name != "env"}
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        vars(self).update(state)
        self.env = _Link(self)
        self._hook(self.rt)

    def copy(self) -> "AutoRun":
        """An independent copy of the run as it stands (paused at a read, or between events)."""
        agenda = self.agenda.copy()
        other = AutoRun.__new__(AutoRun)
        other.agenda, other.env = agenda, _Link(other)
        other.schedule, other.pausing = self.schedule, self.pausing
        other.request_flags = {rid: set(flags) for rid, flags in self.request_flags.items()}
        other.notices = dict(self.notices)
        other.humans_started = set(self.humans_started)
        other.paused = dict(self.paused)
        other.fired = list(self.fired)
        other.procs = {pid: proc.copy() for pid, proc in self.procs.items()}
        other.next_pid, other.at_read, other.scenario = self.next_pid, self.at_read, self.scenario
        other.rest = None if self.rest is None else list(self.rest)
        other.rt = copy_runtime(self.rt, agenda)
        other._hook(other.rt)
        return other


#: The code of each kind of process (:mod:`sim.families.effects.actors`).
_CODE = {"worker": actors.worker, "serve": actors.serve, "human": actors.human, "replace": actors.replace}
