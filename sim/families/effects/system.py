"""The runtime's state and how it is recorded: the base every group of operations builds on.

One :class:`Runtime` (see :mod:`sim.families.effects.runtime`) holds the
queue's leases, the durable event log, the external system, the workers'
memories and the requests and responses in flight.  Operations live in one
module per concern -- queue and leases, workflow versions, the four moments
of a transition, recovery, sagas -- and call only what is here to change
state: :meth:`RuntimeBase._emit` records an event (and keeps durable ones in
the log); :meth:`RuntimeBase.worker_append` is a worker's write, refused after its
lease expired when ``lease_fence=on`` (it raises :class:`Fenced`).  An
operation that cannot happen at its point raises
:class:`~sim.core.machine.Skipped` (:meth:`RuntimeBase.refused` builds it
with the script line) and changes nothing; the driver that asked records it
(:meth:`RuntimeBase.attempt`).
"""

from __future__ import annotations

from typing import Any, Callable

from sim.core.history import History
from sim.core.knobs import Protocol
from sim.core.machine import Skipped
from sim.core.values import JsonObject
from sim.families.effects import transition_fields
from sim.families.effects.external import ExternalSystem, Observation, Request
from sim.families.effects.knobs import EffectsKnobs
from sim.families.effects.state import DURABLE_EVENTS, EventLog, WorkerMemory, WorkerTask, default_head, fingerprint_of
from sim.families.effects.workflow import Transition, Workflow, version_2


class OperationSkipped(Skipped):
    """An operation that cannot happen at its point: the reason, and the script line and task it is recorded
    under."""

    def __init__(self, reason: str, line: str, task: str | None):
        super().__init__(reason)
        self.line, self.task = line, task


class Fenced(Exception):
    """A worker's append was refused because its lease expired (lease_fence=on): it stops on the task."""

#: Compute units per operation, for replay waste and cost per verified task.
MODEL_CALL_UNITS = 1.0
TOOL_CALL_UNITS = 0.2
LOOKUP_UNITS = 0.1
RESUME_UNITS = 0.5
HUMAN_EXCEPTION_UNITS = 20.0


class RuntimeBase:
    """Queue, leases, event log, external system and worker memories of one run."""

    def __init__(
        self,
        env,
        protocol: Protocol,
        workflow: Workflow,
        arguments: dict[str, JsonObject] | None = None,
        tenant: str = "acme",
        next_number: int = 1,
    ):
        self.env = env
        self.protocol = protocol
        knobs = EffectsKnobs.of(protocol)
        self.workflows = {1: workflow, 2: version_2(workflow)}
        self.code_version = 1
        self.arguments_by_transition = arguments or {}
        self.tenant = tenant
        self.history = History()
        self.log = EventLog()
        self.external = ExternalSystem(knobs.idempotency, float(knobs.key_retention), next_number,
                                       knobs.irreversible_keys == "on")
        self.workers: dict[str, WorkerMemory] = {}
        self.leases: dict[str, list] = {}  # task -> [holder, epoch]
        self.deliveries: dict[str, int] = {}
        self.in_flight: list[Request] = []
        self.responses: list[tuple[Request, str, Any]] = []
        self.armed: dict[tuple[str, str, str], list[Any]] = {}  # faults waiting for their moment
        self.last_dispatch_s: dict[tuple[str, str], float] = {}
        self.abort_s: dict[str, float] = {}
        self.checkpoint_s: dict[str, float] = {}
        self.request_count = 0
        self.last_request: Request | None = None
        self.verdicts: list[dict[str, Any]] = []
        #: Hooks for the autonomous driver (None in scripted replay).
        self.on_dispatch: Callable[[Request], None] | None = None
        self.on_human_record: Callable[[str], None] | None = None
        self.on_fault_fired: Callable[[Any], None] | None = None


    def __getstate__(self) -> dict[str, object]:
        """Pickled without the driver's hooks (the driver that unpickles the run sets them again)."""
        hooks = ("on_dispatch", "on_human_record", "on_fault_fired")
        return {name: None if name in hooks else value for name, value in vars(self).items()}

    @property
    def knobs(self) -> EffectsKnobs:
        """The protocol's knob values, typed (read from ``protocol`` each time: a planted bug may swap it)."""
        return EffectsKnobs.of(self.protocol)

    def arm_fault(self, task: str, name: str, kind: str, token: Any = None) -> None:
        """A fault that strikes at T's next matching moment (its reconcile, compensation, retry)."""
        self.armed.setdefault((task, name, kind), []).append(token)

    def consume_fault(self, task: str, name: str, kind: str) -> bool:
        """Whether a fault armed for this moment strikes now (it is used up)."""
        tokens = self.armed.get((task, name, kind))
        if not tokens:
            return False
        token = tokens.pop(0)
        if token is not None and self.on_fault_fired is not None:
            self.on_fault_fired(token)
        return True

    def _emit(self, actor: str, event: str, task: str | None, **fields: Any):
        record = self.history.append(self.env.now, actor, event, task=task, **fields)
        if event in DURABLE_EVENTS and task is not None:
            self.log.append(task, event, record.fields)
        return record

    @staticmethod
    def refused(line: str, reason: str, task: str | None = None) -> OperationSkipped:
        """The exception an operation raises when it cannot happen here (``raise self.refused(...)``)."""
        return OperationSkipped(reason, line, task)

    def record_skip(self, skipped: OperationSkipped) -> None:
        self.history.append(self.env.now, "script", "skipped", task=skipped.task, line=skipped.line,
                            reason=skipped.reason)

    def attempt(self, operation: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
        """Perform an operation; one that cannot happen here is recorded as skipped (False)."""
        try:
            operation(*args, **kwargs)
        except OperationSkipped as skipped:
            self.record_skip(skipped)
            return False
        return True

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

    def worker_append(self, worker: str, task: str, event: str, **fields: Any):
        """A worker's write to the event log; refused after its lease expired if fenced."""
        task_memory = self.workers[worker].tasks[task]
        holder, epoch = self.leases[task]
        if self.knobs.lease_fence == "on" and (holder != worker or task_memory.epoch != epoch):
            self._emit("log", "append_refused", task, worker=worker, refused=event, holder=holder,
                       transition=fields.get("transition"))
            task_memory.fenced = True
            raise Fenced(f"{worker} was fenced off {task}")
        record = self._emit(worker, event, task, **fields)
        task_memory.view.apply(event, record.fields)
        return record

    def workflow_of(self, version: int) -> Workflow:
        return self.workflows[version]

    def transition(self, worker_task: WorkerTask, name: str) -> Transition | None:
        return self.workflows[worker_task.version].get(name)

    def _any_transition(self, name: str) -> Transition | None:
        return self.workflows[1].get(name) or self.workflows[2].get(name)

    def _known_transition(self, name: str) -> Transition:
        """A transition of either version, for a name the scenario or a request already names (it exists)."""
        transition = self._any_transition(name)
        assert transition is not None, f"{name} is in neither workflow version"
        return transition

    def arguments(self, task: str, transition: Transition) -> JsonObject:
        """The durable arguments of a transition: the scenario's, plus the task marker and head."""
        given = self.arguments_by_transition.get(transition.logical, {})
        out: JsonObject = {"task": task, "transition": transition.logical, "head": default_head(task)}
        out.update(given)
        return out

    def logical_of(self, name: str) -> str:
        """A transition's logical name (stable when version 2 renames it)."""
        transition = self._any_transition(name)
        return transition.logical if transition is not None else name

    def honours_keys(self, transition: Transition) -> bool:
        """Whether this transition's endpoint deduplicates by idempotency key (the protocol may send none)."""
        return transition.honours_keys(self.knobs.irreversible_keys == "on", self.knobs.ledger_dedupe)

    def approval_due(self, task: str, transition: Transition) -> bool:
        """Whether T needs a human's approval before its intent in this task (a condition on its arguments is
        evaluated on the task's durable arguments)."""
        return transition.approval_needed(self.arguments(task, transition))

    def endpoint_record(self, task: str, transition: Transition) -> JsonObject:
        """What a committed effect records of its endpoint, for the checks and the blast radius, where it
        differs from what its class implies (so a history of a workflow that declares nothing is unchanged):
        ``approval_required`` (whether its approval was due; the class default is: irreversible ones),
        and ``reconcile_by`` (what it can be queried by; default ``key``).  Whether it can be deleted is its
        ``compensation``, recorded beside."""
        out: JsonObject = {}
        due = self.approval_due(task, transition)
        if due != transition_fields.default("approval", bool, transition.effect_class):
            out["approval_required"] = due
        if transition.queried_by != transition_fields.default("reconcile_by", str):
            out["reconcile_by"] = transition.queried_by
        return out

    def key_of(self, task: str, transition: Transition, generation: int) -> str:
        """``idempotency_key = tenant + task + transition + attempt_generation``."""
        return f"{self.tenant}:{task}:{transition.name}:{generation}"

    def worker_task(self, worker: str, task: str, line: str) -> WorkerTask:
        """The worker's memory of the task (the operation is refused, for the script ``line``, if it has none)."""
        memory = self.workers.get(worker)
        if memory is None or not memory.alive:
            raise self.refused(line, f"worker {worker} is not running", task)
        task_memory = memory.tasks.get(task)
        if task_memory is None:
            raise self.refused(line, f"worker {worker} has not been delivered {task}", task)
        if task_memory.fenced:
            raise self.refused(line, f"worker {worker} was fenced off {task}", task)
        return task_memory

    def holder(self, task: str) -> str | None:
        lease = self.leases.get(task)
        return lease[0] if lease else None

    def new_worker_name(self) -> str:
        return f"w{len(self.workers) + 1}"

    def _acts_on(self, worker: str, task: str, wt: WorkerTask, transition: Transition) -> tuple[tuple[str, int], ...]:
        """The observations a step's request is built from: each earlier read of the workflow.

        With ``pin_reads=on`` the version the log recorded (fetched again by its content hash when the worker
        no longer holds it).  With ``pin_reads=off`` what the worker still holds in memory; a worker that lost
        it (it resumed after a crash or took the task over) reads again and acts on what the world holds now.
        """
        if transition.is_read:
            return ()
        acts_on, pinned = [], self.knobs.pin_reads == "on"
        for read in self.workflows[wt.version].reads_before(transition.name):
            if wt.view.status(read.name) != "done":
                continue
            version = wt.view.get(read.name).observed if pinned else wt.observations.get(read.name)
            if version is None:
                observation = self._observation(task, read.logical, read.object_kind)
                version = observation.number
                self._emit("git", "observed", task, transition=read.name, logical=read.logical, worker=worker,
                           effect=observation.effect, version=version, content_hash=observation.content_hash,
                           reread=True)
            wt.observations[read.name] = version
            acts_on.append((read.logical, version))
        return tuple(acts_on)

    def _observation(self, task: str, logical: str, kind: str) -> Observation:
        version = self.external.observe(task, logical)
        return Observation(kind, version, fingerprint_of({"task": task, "read": logical, "version": version}))

    def _find(self, items, task: str, transition: str, request_id: str | None, get=lambda x: x):
        for item in items:
            request = get(item)
            if request.task == task and request.transition == transition and (
                request_id is None or request.request_id == request_id
            ):
                return item
        return None
