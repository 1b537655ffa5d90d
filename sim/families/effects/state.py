"""The durable task state and what a worker holds in memory.

* :class:`TaskView` -- the typed task state, a deterministic reduction of the
  task's durable events (``apply`` folds one event).  Workers resume by
  reducing the event log; a worker's in-memory view is the same reduction of
  what it has read and written, so a zombie's view is simply stale.
* :class:`EventLog` -- the durable, append-only log the reducer folds.
* :class:`WorkerMemory` / :class:`WorkerTask` / :class:`Evidence` -- what a
  worker knows and loses when it crashes.

No randomness and no checks live here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from sim.core.values import JsonObject


def fingerprint_of(arguments: JsonObject) -> str:
    """``request_fingerprint = hash(canonical arguments)``: sha256 of sorted compact JSON, 12 hex digits."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def default_head(task: str) -> str:
    """The head commit a task's work sits on, when the scenario does not give one."""
    return hashlib.sha256(task.encode("utf-8")).hexdigest()[:7]


class TransitionView:
    """What the durable log says about one transition."""

    __slots__ = ("status", "generation", "key", "fingerprint", "attempts", "effect", "compensated", "observed")

    def __init__(self) -> None:
        self.status = "pending"
        self.generation = 1
        self.key: str | None = None
        self.fingerprint: str | None = None
        self.attempts = 0
        self.effect: str | None = None
        self.compensated = False
        self.observed: int | None = None  # a read: the version its receipt recorded


#: Durable events about one transition: each names it (``transition=``).
_PER_TRANSITION = frozenset({"intent_recorded", "dispatched", "timed_out", "reconciled", "receipt_recorded",
                             "human_exception", "human_resolved", "approval_requested", "approved", "compensated"})


#: The statuses a transition's view may stand in.
STATUSES = ("pending", "intent", "dispatched", "unknown", "failed", "not_found", "found", "unprovable", "escalated",
            "done")


class TaskView:
    """Typed task state derived from durable events (a deterministic reducer).

    Statuses: :data:`STATUSES`.
    """

    def __init__(self, task: str):
        self.task = task
        self.version = 1
        self.transitions: dict[str, TransitionView] = {}
        self.aborted = False
        self.terminal: str | None = None
        self.approved: set[str] = set()
        self.approval_requested: dict[str, float] = {}  # transition -> when the worker asked
        self.records = 0

    def get(self, name: str) -> TransitionView:
        view = self.transitions.get(name)
        if view is None:
            view = self.transitions[name] = TransitionView()
        return view

    def apply(self, event: str, fields: dict[str, Any]) -> None:
        """Fold one durable event into the view."""
        self.records += 1
        name = fields.get("transition")
        if event == "accepted":
            self.version = fields.get("workflow_version", 1)
        elif event == "transition_failed":
            self.aborted = True
            if name is not None and self.get(name).status != "done":
                self.get(name).status = "failed"
        elif event == "checkpoint_saved":
            for completed in fields.get("completed", ()):
                view = self.get(completed)
                if view.status != "done":
                    view.status = "done"
        elif event == "migrated":
            self.version = fields.get("to_version", self.version)
            for old, new in fields.get("renamed", []):
                if old in self.transitions:
                    self.transitions[new] = self.transitions.pop(old)
        elif event == "task_terminal":
            self.terminal = fields.get("outcome")
        elif event in _PER_TRANSITION:
            assert name is not None, f"a {event} record names its transition"
            self._apply_to_transition(event, name, fields)

    def _apply_to_transition(self, event: str, name: str, fields: dict[str, Any]) -> None:
        if event == "intent_recorded":
            view = self.get(name)
            view.status = "intent"
            view.generation = fields.get("generation", 1)
            view.key = fields.get("key")
            view.fingerprint = fields.get("fingerprint")
        elif event == "dispatched":
            view = self.get(name)
            view.status = "dispatched"
            view.attempts += 1
        elif event == "timed_out":
            self.get(name).status = fields.get("outcome", "unknown")
        elif event == "reconciled":
            result = fields.get("result") or ""
            self.get(name).status = {"found": "found", "not_found": "not_found"}.get(result, "unprovable")
        elif event == "receipt_recorded":
            view = self.get(name)
            view.status = "done"
            view.effect = fields.get("effect")
            if "observed_version" in fields:
                view.observed = fields["observed_version"]
        elif event == "human_exception":
            self.get(name).status = "escalated"
        elif event == "human_resolved":
            if fields.get("outcome") == "not_found":
                self.get(name).status = "not_found"
        elif event == "approval_requested":
            self.approval_requested[name] = fields.get("at_s", 0.0)
        elif event == "approved":
            self.approved.add(name)
        elif event == "compensated":
            self.get(name).compensated = True

    def check(self, logged: int) -> None:
        """Assert the view's own consistency, for a task whose log holds ``logged`` records: a view folds some of
        them (a worker's may be stale: it does not see another worker's writes), never more; each transition
        stands in a known status, with counts that never went below their start."""
        assert 0 <= self.records <= logged, f"a view of {self.task} folded {self.records} records of {logged} logged"
        for name, view in self.transitions.items():
            assert view.status in STATUSES, f"{self.task}: {name} stands in an unknown status {view.status!r}"
            assert view.attempts >= 0 and view.generation >= 1, (
                f"{self.task}: {name} has {view.attempts} attempts in generation {view.generation}")

    def status(self, name: str) -> str:
        view = self.transitions.get(name)
        return view.status if view is not None else "pending"

    def recorded_order(self) -> list[str]:
        """Transitions with an intent, in the order the log first shows them (for replay checks)."""
        return [n for n, v in self.transitions.items() if v.status != "pending" or v.attempts]


#: Durable events: the ones the event log keeps and the reducer folds.
DURABLE_EVENTS = frozenset(
    {
        "accepted", "intent_recorded", "dispatched", "timed_out", "reconciled", "receipt_recorded",
        "human_exception", "human_resolved", "transition_failed", "approval_requested", "approved",
        "compensated", "compensation_failed", "checkpoint_saved", "migrated", "task_terminal",
        "resumed", "replay_divergence",
    }
)


class EventLog:
    """The durable, append-only event log: per task, the events the reducer folds."""

    def __init__(self) -> None:
        self.records: dict[str, list[tuple[str, dict[str, Any]]]] = {}

    def append(self, task: str, event: str, fields: dict[str, Any]) -> None:
        self.records.setdefault(task, []).append((event, fields))

    def reduce(self, task: str) -> TaskView:
        view = TaskView(task)
        for event, fields in self.records.get(task, ()):
            view.apply(event, fields)
        return view


@dataclass
class Evidence:
    """What a worker holds as proof of a transition's outcome (lost on crash)."""

    source: str  # response | reconciliation
    outcome: str  # committed | deduplicated | rejected | found | observed
    effect: str | None
    request_id: str | None = None
    version: int | None = None  # a read's observed version
    content_hash: str | None = None


@dataclass
class WorkerTask:
    """A worker's in-memory state for one task."""

    view: TaskView
    epoch: int
    version: int
    evidence: dict[str, Evidence] = field(default_factory=dict)
    fenced: bool = False
    waiting: dict[str, Any] = field(default_factory=dict)  # request id -> the answer it waits for (agenda.Answer)
    observations: dict[str, int] = field(default_factory=dict)  # read -> the version of what it holds (in memory)


@dataclass
class WorkerMemory:
    name: str
    alive: bool = True
    tasks: dict[str, WorkerTask] = field(default_factory=dict)
