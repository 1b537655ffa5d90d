"""Copying a run's runtime: what the operations change is copied, what they only read is shared.

Requests, evidence, history records and the workflows are never changed once made, so a copy shares them; the
durable log, the external system's objects and keys, the workers' memories, leases and queues are copied.  An
answer a worker waits on is an event of the copy's own agenda.
"""

from __future__ import annotations

from sim.core.history import History
from sim.families.effects.agenda import Agenda, Answer
from sim.families.effects.external import ExternalObject, ExternalSystem
from sim.families.effects.runtime import Runtime
from sim.families.effects.state import EventLog, TaskView, TransitionView, WorkerMemory, WorkerTask


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
        tasks[task] = WorkerTask(view=_copy_view(wt.view), epoch=wt.epoch, version=wt.version,
                                 evidence=dict(wt.evidence), fenced=wt.fenced, waiting=waiting,
                                 observations=dict(wt.observations))
    return WorkerMemory(memory.name, memory.alive, tasks)
