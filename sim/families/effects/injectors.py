"""Fault injectors of the durable-effects family: what each fault does when its point is reached.

One function per fault class; the registry of fault classes (:data:`sim.families.effects.faults.REGISTRY`)
names each class's injector beside its points and its doc line, and the driver calls it through
:func:`sim.families.effects.faults.inject` at a transition's point with the fault the schedule names.  An
injector acts through the runtime's operations (crash, lease change, duplicate, lose, arm) and through the
driver's processes, and says whether the fault took effect.  Injectors read the schedule; they never draw a
random number.
"""

from __future__ import annotations

from typing import Any, Callable

from sim.families.effects.external import Request
from sim.families.effects.points import FaultEntry
from sim.families.effects.system import OperationSkipped

#: A stalled worker wakes this long after its point (beyond the lease TTL), seconds.
ZOMBIE_PAUSE_S = 45.0

#: ``injector(driver, entry, worker, task, transition, request)``: whether the fault took effect now.
Injector = Callable[[Any, FaultEntry, str, str, str, "Request | None"], bool]


def _alive(driver, worker: str) -> bool:
    state = driver.rt.workers.get(worker)
    return state is not None and state.alive


def _flags(driver, request: Request | None) -> set[str] | None:
    """The in-flight request's flags (None: no request in flight at this point)."""
    return driver.request_flags.setdefault(request.request_id, set()) if request is not None else None


def terminate(driver, entry: FaultEntry, worker: str, task: str, name: str, request: Request | None) -> bool:
    if not _alive(driver, worker):
        return False
    holder = driver.rt.holder(task)
    driver.rt.crash(worker)
    if holder == worker:
        driver.supervise(worker, task, driver.lease_ttl_s)
    return True


def zombie(driver, entry: FaultEntry, worker: str, task: str, name: str, request: Request | None) -> bool:
    if not _alive(driver, worker) or driver.rt.holder(task) != worker:
        return False
    driver.paused[worker] = ZOMBIE_PAUSE_S
    driver.supervise(worker, task, driver.lease_ttl_s)
    return True


def change_owner(driver, entry: FaultEntry, worker: str, task: str, name: str, request: Request | None) -> bool:
    holder = driver.rt.holder(task)
    if holder is None:
        return False
    driver.supervise(holder, task, 0.0)
    return True


def duplicate(driver, entry: FaultEntry, worker: str, task: str, name: str, request: Request | None) -> bool:
    rt = driver.rt
    if request is None:
        return rt.attempt(rt.deliver, None, task, duplicate=True)
    try:
        copy = rt.duplicate_request(task, name, request.request_id)
    except OperationSkipped as skipped:
        rt.record_skip(skipped)
        return False
    driver.env.process(driver.serve(copy))
    return True


def delay_ack(driver, entry: FaultEntry, worker: str, task: str, name: str, request: Request | None) -> bool:
    flags = _flags(driver, request)
    if flags is not None:  # there is a request in flight
        flags.add("delay_request" if entry.point == "after_dispatch" else "delay_response")
        return True
    rt = driver.rt  # the queue's acknowledgement deadline passes: it redelivers the task to another worker
    return rt.attempt(rt.deliver, rt.new_worker_name(), task)


def timeout(driver, entry: FaultEntry, worker: str, task: str, name: str, request: Request | None) -> bool:
    flags = _flags(driver, request)
    if flags is None:  # no request in flight
        return False
    flags.add("slow_commit")
    return True


def lose(driver, entry: FaultEntry, worker: str, task: str, name: str, request: Request | None) -> bool:
    """``lose_request`` and ``lose_response``: the in-flight request is flagged with the fault's name."""
    flags = _flags(driver, request)
    if flags is None:  # no request in flight
        return False
    flags.add(entry.fault)
    return True


def retry_changed(driver, entry: FaultEntry, worker: str, task: str, name: str, request: Request | None) -> bool:
    rt = driver.rt
    rt.arm_fault(task, rt.logical_of(name), "retry_changed", entry.token)
    return False  # it fires when the retry it changes is dispatched


def foreign_object(driver, entry: FaultEntry, worker: str, task: str, name: str, request: Request | None) -> bool:
    return driver.rt.attempt(driver.rt.foreign_object, task, name)


def upgrade(driver, entry: FaultEntry, worker: str, task: str, name: str, request: Request | None) -> bool:
    return driver.rt.attempt(driver.rt.upgrade, 2)


def slow_approval(driver, entry: FaultEntry, worker: str, task: str, name: str, request: Request | None) -> bool:
    """It acts when the human is asked (the driver takes it from the schedule); reached here, it came too late."""
    return False


def postcondition_fails(driver, entry: FaultEntry, worker: str, task: str, name: str,
                        request: Request | None) -> bool:
    return driver.rt.attempt(driver.rt.fail, task, name)


def read_changes(driver, entry: FaultEntry, worker: str, task: str, name: str, request: Request | None) -> bool:
    return driver.rt.attempt(driver.rt.read_changes, task, name)
