"""The queue and the leases: accepting a task, handing it to a worker, worker loss."""

from __future__ import annotations

from sim.families.effects.state import WorkerMemory, WorkerTask
from sim.families.effects.system import RESUME_UNITS
from sim.families.effects.versions import VersionOps


class QueueOps(VersionOps):
    """At-least-once delivery of a task's message; one lease holder per task."""

    def accept(self, task: str) -> None:
        line = f"accept {task}"
        if task in self.leases:
            raise self.refused(line, "task already accepted", task)
        self.leases[task] = [None, 0]
        self.deliveries[task] = 0
        self.checkpoint_s[task] = self.env.now
        self._emit("queue", "accepted", task, workflow_version=self.code_version,
                   workflow=self.workflows[1].name)
        return

    def _grant(self, task: str, worker: str) -> None:
        lease = self.leases[task]
        lease[0], lease[1] = worker, lease[1] + 1
        self.workers.setdefault(worker, WorkerMemory(worker))
        self._emit("lease", "lease_granted", task, worker=worker, epoch=lease[1])

    def lease(self, worker: str, task: str) -> None:
        line = f"lease {worker}"
        if task not in self.leases:
            raise self.refused(line, f"{task} is not accepted", task)
        holder = self.holder(task)
        if holder is not None:
            raise self.refused(line, f"the lease is held by {holder}", task)
        self._grant(task, worker)
        return

    def lease_expire(self, worker: str, successor: str, task: str) -> None:
        line = f"lease_expire {worker} -> {successor}"
        if self.holder(task) != worker:
            raise self.refused(line, f"{worker} does not hold the lease of {task}", task)
        if successor in self.workers and not self.workers[successor].alive:
            raise self.refused(line, f"{successor} has crashed", task)
        self._emit("lease", "lease_expired", task, worker=worker, successor=successor,
                   zombie=self.workers[worker].alive or None)
        self._grant(task, successor)
        return

    def deliver(self, worker: str | None, task: str, duplicate: bool = False) -> None:
        line = "duplicate" if duplicate else (f"deliver {worker}" if worker else "deliver")
        if task not in self.leases:
            raise self.refused(line, f"{task} is not accepted", task)
        worker = worker or self.holder(task)
        if worker is None:
            raise self.refused(line, "no lease holder to deliver to; name a worker", task)
        memory = self.workers.setdefault(worker, WorkerMemory(worker))
        if not memory.alive:
            raise self.refused(line, f"worker {worker} has crashed", task)
        if self.log.reduce(task).terminal is not None:
            raise self.refused(line, f"{task} is finished; its message was acknowledged", task)
        self.deliveries[task] += 1
        holder = self.holder(task)
        if holder is None:
            self._grant(task, worker)
        elif holder != worker:
            self._emit("queue", "delivered", task, worker=worker, delivery=self.deliveries[task],
                       duplicate=duplicate or None)
            self._emit(worker, "lease_busy", task, holder=holder)
            return
        self._emit("queue", "delivered", task, worker=worker, delivery=self.deliveries[task],
                   duplicate=duplicate or None)
        current = memory.tasks.get(task)
        if current is not None and not current.fenced:
            self._emit(worker, "redelivery_ignored", task, reason="already running the task")
            return
        self._start(memory, task)
        return

    def _start(self, memory: WorkerMemory, task: str) -> None:
        """A worker (re)starts a task from durable history, under the version policy."""
        view = self.log.reduce(task)
        first = not any(event == "resumed" for event, _ in self.log.records.get(task, ()))
        run_version = self._version_for(memory.name, task, view)
        task_memory = WorkerTask(self.log.reduce(task), self.leases[task][1], run_version)
        memory.tasks[task] = task_memory
        self.worker_append(memory.name, task, "resumed", workflow_version=run_version, first=first,
                     recovery_point_s=None if first else self.env.now - self.checkpoint_s[task],
                     compute_units=RESUME_UNITS)

    def crash(self, worker: str) -> None:
        line = f"crash {worker}"
        memory = self.workers.get(worker)
        if memory is None or not memory.alive:
            raise self.refused(line, f"worker {worker} is not running")
        memory.alive = False
        memory.tasks.clear()
        self._emit(worker, "crashed", None)
        return
