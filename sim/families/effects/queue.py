"""The queue and the leases: accepting a task, handing it to a worker, worker loss.

At-least-once delivery of a task's message; one lease holder per task."""

from __future__ import annotations

from sim.families.effects import versions
from sim.families.effects.state import WorkerMemory, WorkerTask
from sim.families.effects.system import RESUME_UNITS, RuntimeBase


def accept(rt: RuntimeBase, task: str) -> None:
    line = f"accept {task}"
    if task in rt.leases:
        raise rt.refused(line, "task already accepted", task)
    rt.leases[task] = [None, 0]
    rt.deliveries[task] = 0
    rt.checkpoint_s[task] = rt.env.now
    rt._emit("queue", "accepted", task, workflow_version=rt.code_version,
             workflow=rt.workflows[1].name)
    return


def _grant(rt: RuntimeBase, task: str, worker: str) -> None:
    lease = rt.leases[task]
    lease[0], lease[1] = worker, lease[1] + 1
    rt.workers.setdefault(worker, WorkerMemory(worker))
    rt._emit("lease", "lease_granted", task, worker=worker, epoch=lease[1])


def lease(rt: RuntimeBase, worker: str, task: str) -> None:
    line = f"lease {worker}"
    if task not in rt.leases:
        raise rt.refused(line, f"{task} is not accepted", task)
    holder = rt.holder(task)
    if holder is not None:
        raise rt.refused(line, f"the lease is held by {holder}", task)
    _grant(rt, task, worker)
    return


def lease_expire(rt: RuntimeBase, worker: str, successor: str, task: str) -> None:
    line = f"lease_expire {worker} -> {successor}"
    if rt.holder(task) != worker:
        raise rt.refused(line, f"{worker} does not hold the lease of {task}", task)
    if successor in rt.workers and not rt.workers[successor].alive:
        raise rt.refused(line, f"{successor} has crashed", task)
    rt._emit("lease", "lease_expired", task, worker=worker, successor=successor,
             zombie=rt.workers[worker].alive or None)
    _grant(rt, task, successor)
    return


def deliver(rt: RuntimeBase, worker: str | None, task: str, duplicate: bool = False) -> None:
    line = "duplicate" if duplicate else (f"deliver {worker}" if worker else "deliver")
    if task not in rt.leases:
        raise rt.refused(line, f"{task} is not accepted", task)
    worker = worker or rt.holder(task)
    if worker is None:
        raise rt.refused(line, "no lease holder to deliver to; name a worker", task)
    memory = rt.workers.setdefault(worker, WorkerMemory(worker))
    if not memory.alive:
        raise rt.refused(line, f"worker {worker} has crashed", task)
    if rt.log.reduce(task).terminal is not None:
        raise rt.refused(line, f"{task} is finished; its message was acknowledged", task)
    rt.deliveries[task] += 1
    holder = rt.holder(task)
    if holder is None:
        _grant(rt, task, worker)
    elif holder != worker:
        rt._emit("queue", "delivered", task, worker=worker, delivery=rt.deliveries[task],
                 duplicate=duplicate or None)
        rt._emit(worker, "lease_busy", task, holder=holder)
        return
    rt._emit("queue", "delivered", task, worker=worker, delivery=rt.deliveries[task],
             duplicate=duplicate or None)
    current = memory.tasks.get(task)
    if current is not None and not current.fenced:
        rt._emit(worker, "redelivery_ignored", task, reason="already running the task")
        return
    _start(rt, memory, task)
    return


def _start(rt: RuntimeBase, memory: WorkerMemory, task: str) -> None:
    """A worker (re)starts a task from durable history, under the version policy."""
    view = rt.log.reduce(task)
    first = not any(event == "resumed" for event, _ in rt.log.records.get(task, ()))
    run_version = versions._version_for(rt, memory.name, task, view)
    task_memory = WorkerTask(rt.log.reduce(task), rt.leases[task][1], run_version)
    memory.tasks[task] = task_memory
    rt.worker_append(memory.name, task, "resumed", workflow_version=run_version, first=first,
                     recovery_point_s=None if first else rt.env.now - rt.checkpoint_s[task],
                     compute_units=RESUME_UNITS)


def crash(rt: RuntimeBase, worker: str) -> None:
    line = f"crash {worker}"
    memory = rt.workers.get(worker)
    if memory is None or not memory.alive:
        raise rt.refused(line, f"worker {worker} is not running")
    memory.alive = False
    memory.tasks.clear()
    rt._emit(worker, "crashed", None)
    return
