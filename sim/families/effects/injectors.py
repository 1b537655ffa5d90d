"""Fault injectors of the durable-effects family: what each fault does when its point is reached.

The driver calls :func:`inject` at a transition's point with the fault the
schedule names; the injector acts through the runtime's operations (crash,
lease change, duplicate, lose, arm) and through the driver's processes, and
says whether the fault took effect.  Injectors read the schedule; they never
draw a random number.
"""

from __future__ import annotations

from sim.families.effects.external import Request
from sim.families.effects.faults import FaultEntry
from sim.families.effects.system import OperationSkipped

#: A stalled worker wakes this long after its point (beyond the lease TTL), seconds.
ZOMBIE_PAUSE_S = 45.0


def inject(driver, entry: FaultEntry, worker: str, task: str, name: str, request: Request | None) -> bool:
    """Apply one fault at (task, transition, point); return whether it took effect now."""
    rt = driver.rt
    fault, point = entry.fault, entry.point
    flags = driver.request_flags.setdefault(request.request_id, set()) if request is not None else None
    holder = rt.holder(task)
    alive = rt.workers.get(worker) is not None and rt.workers[worker].alive
    if fault == "terminate":
        if not alive:
            return False
        rt.crash(worker)
        if holder == worker:
            driver.supervise(worker, task, driver.lease_ttl_s)
        return True
    if fault == "zombie":
        if not alive or holder != worker:
            return False
        driver.paused[worker] = ZOMBIE_PAUSE_S
        driver.supervise(worker, task, driver.lease_ttl_s)
        return True
    if fault == "change_owner":
        if holder is None:
            return False
        driver.supervise(holder, task, 0.0)
        return True
    if fault == "duplicate":
        if request is not None:
            try:
                copy = rt.duplicate_request(task, name, request.request_id)
            except OperationSkipped as skipped:
                rt.record_skip(skipped)
                return False
            driver.env.process(driver.serve(copy))
            return True
        return rt.attempt(rt.deliver, None, task, duplicate=True)
    if fault == "delay_ack":
        if flags is not None:  # there is a request in flight
            flags.add("delay_request" if point == "after_dispatch" else "delay_response")
            return True
        # the queue's acknowledgement deadline passes: it redelivers the task to another worker
        return rt.attempt(rt.deliver, rt.new_worker_name(), task)
    if fault == "timeout":
        if flags is None:  # no request in flight
            return False
        flags.add("slow_commit")
        return True
    if fault in ("lose_request", "lose_response"):
        if flags is None:  # no request in flight
            return False
        flags.add(fault)
        return True
    if fault == "retry_changed":
        rt.arm_fault(task, rt.logical_of(name), "retry_changed", entry.token)
        return False  # it fires when the retry it changes is dispatched
    if fault == "foreign_object":
        return rt.attempt(rt.foreign_object, task, name)
    if fault == "upgrade":
        return rt.attempt(rt.upgrade, 2)
    if fault == "slow_approval":
        return False  # it acts when the human is asked (see the driver); reached here, it came too late
    if fault == "postcondition_fails":
        return rt.attempt(rt.fail, task, name)
    if fault == "read_changes":
        return rt.attempt(rt.read_changes, task, name)
    raise AssertionError(f"fault {fault!r} has no injector at {point}")

