"""Playing one fault of the cruel grid against a real worker and the real external system.

:func:`run_real_effects` starts, in a fresh temporary folder, the external system
(:mod:`sim.real.external_system`) and a worker process of a durable runtime (DBOS by default), runs
one task of the workflow, strikes it with the fault at its point, and returns the recorded history in
the effects family's vocabulary, ready for ``fencesim check``.

The harness plays every actor the runtime does not have: the queue (deliveries, redeliveries), the
lease supervisor (it declares a dead or frozen worker's lease expired and starts a successor, which
recovers the task), the network (through the external system's hooks: a copy of a request, a held
request or reply, a lost one) and the humans (approvals, resolutions of exceptions).  It never sleeps
to synchronise: every worker record waits for the harness's ``continue``, every hook that fires is
announced by the external system, and the harness acts on those events.  Every wait is bounded
(``RECORD_TIMEOUT_S``, ``STARTUP_TIMEOUT_S``, ``RUN_TIMEOUT_S``).

Where a fault strikes, per boundary of transition T:

* ``before_intent``: the worker's ``before_intent`` point, inside T's intent step (nothing recorded yet);
* ``after_intent``: the worker's ``intent_recorded`` record (the intent step committed);
* ``after_dispatch``: the external system, T's first request, before storing it (dispatched, not committed);
* ``after_commit``: the external system, after storing it, before replying (committed, no receipt);
* ``after_receipt``: the worker's ``checkpoint_saved`` after T's receipt (``checkpoint=verified``; the
  receipt itself with ``optimistic``): the model's boundary comes after the receipt operation, which
  saves the checkpoint.

The history orders every record by its ticket on the run's shared clock (:class:`Clock`): the harness
takes one when it receives a worker's record (the worker waits for the ``continue`` before it acts
again), the external system when it commits.  ``time`` is the event's position: a real run's wall
clock is measured (``RealEffectsRun.seconds``) but never recorded, so re-recording a cell gives the
same bytes.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from sim.core.history import History
from sim.real import external_system
from sim.real.external_system import Clock
from sim.real.runtimes import worker_kit
from sim.real.runtimes.cells import (
    BOUNDARIES,
    CRUEL_FAULTS,
    FAULT_POINTS,
    FENCES,
    NOT_APPLICABLE,
    REAL_POINTS,
    REQUEST_BOUNDARIES,
    SAGA,
    TASK_DEFAULT,
    CellFault,
    NotApplicable,
    check_applicable,
    check_order,
    resolve_protocol,
    workflow_data,
)
from sim.real.runtimes.processes import (
    RECORD_TIMEOUT_S,
    STARTUP_TIMEOUT_S,
    STOP_TIMEOUT_S,
    ExternalProcess,
    Inbox,
    RealEffectsError,
    TemporalServer,
    WorkerProcess,
    dbos_command,
    temporal_command,
    temporal_program,
)

#: The public names, for a caller that imports everything from here.
__all__ = ["ACK_TIMEOUT_S", "BOUNDARIES", "CRUEL_FAULTS", "FAULT_POINTS", "FENCES", "NOT_APPLICABLE", "REAL_POINTS",
           "RUN_TIMEOUT_S", "SAGA", "CellFault", "CellRun", "NotApplicable", "RealEffectsError", "RealEffectsRun",
           "check_applicable", "check_order", "dbos_command", "resolve_protocol", "run_real_effects",
           "temporal_command", "temporal_program", "workflow_data"]

#: Seconds one whole real run may take.
RUN_TIMEOUT_S = 300.0
#: Seconds a worker waits for an answer from the external system in harness runs (its timeout: a
#: delayed request or reply costs this much real time, and a healthy request must never take as long).
ACK_TIMEOUT_S = 2.0
#: Server log records that become history events, with their actor and new name.
SERVER_EVENTS = {"committed": ("git", "committed"), "deduplicated": ("git", "deduplicated"),
                 "rejected": ("git", "rejected"), "request_duplicated": ("network", "request_duplicated"),
                 "reply_lost": ("network", "response_lost"), "request_dropped": ("network", "request_lost"),
                 "foreign_created": ("git", "foreign_created")}
#: Fields of those records the history keeps (the model's fields; the log keeps the rest).
SERVER_FIELDS = {"committed": ("task", "transition", "logical", "generation", "request", "key", "fingerprint",
                               "effect", "number", "head", "effect_class", "compensation"),
                 "deduplicated": ("task", "transition", "logical", "generation", "request", "key", "fingerprint",
                                  "effect", "number", "head", "stored_fingerprint"),
                 "rejected": ("task", "transition", "logical", "generation", "request", "key", "fingerprint",
                              "effect", "number", "head", "stored_fingerprint", "reason"),
                 "request_duplicated": ("task", "transition", "request", "original"),
                 "reply_lost": ("task", "transition", "request", "worker", "reason", "effect"),
                 "request_dropped": ("task", "transition", "request"),
                 "foreign_created": ("task", "transition", "effect", "number", "head")}


@dataclass
class RealEffectsRun:
    """One cell played against a real worker."""

    history: History
    seconds: float
    kills: int  # real SIGKILLs (by the harness and by the external system's hooks)
    freezes: int  # real SIGSTOPs
    workers: list[str]
    runtime: str
    fault: CellFault | None  # the first fault of the run's list (None: a healthy run)
    protocol: dict[str, Any]
    external_log: list[dict] = field(default_factory=list)
    objects: list[dict] = field(default_factory=list)
    faults: tuple[CellFault, ...] = ()  # every fault of the run's list, in the order they were played
    struck: int = 0  # how many of them struck (the others' points were never reached)


# -- one run ----------------------------------------------------------------------------------------

Condition = Callable[[], bool]


class CellRun:
    """The harness of one run: processes, the recorder, the humans, and the fault's choreography."""

    def __init__(self, root: Path, transitions: list[dict], knobs: dict[str, Any],
                 faults: CellFault | tuple[CellFault, ...] | None, command: list[str], task: str, tenant: str,
                 deadline: float, ack_timeout_s: float, workflow_name: str, runtime: str = "dbos"):
        self.root, self.transitions, self.knobs = root, transitions, knobs
        self.faults: tuple[CellFault, ...] = (faults,) if isinstance(faults, CellFault) else tuple(faults or ())
        self.current: CellFault | None = None  # the fault whose choreography runs now
        self.fault_index = 0  # its position in the list, from 1 (it names the external system's hooks)
        self.struck_count = 0
        self.command, self.task, self.tenant, self.deadline = command, task, tenant, deadline
        self.ack_timeout_s, self.workflow_name = ack_timeout_s, workflow_name
        self.plant: tuple[str, ...] = ()
        self.runtime = runtime
        self.runtime_server = TemporalServer(root) if runtime == "temporal" else None
        self.by_name = {t["name"]: t for t in transitions}
        self.inbox = Inbox()
        self.clock = Clock(root / "clock.sqlite")
        self.rows: list[tuple[int, str, str, dict]] = []
        self.workers: dict[str, WorkerProcess] = {}
        self.spares: list[WorkerProcess] = []
        self.pending: dict[str, dict] = {}  # worker -> its record awaiting continue
        self.held: set[str] = set()  # workers whose records the choreography releases
        # While a request is held, a person asked to resolve waits until it has settled: the model's person
        # answers an hour later (HUMAN_RESOLVE_S), after any delayed request (docs/real-runtimes.md).
        self.holding = False
        self.deferred: list[tuple[str, str]] = []
        self.trap: Callable[[str, dict], bool] | None = None
        self.trapped: tuple[str, dict] | None = None
        self.replies: dict[str, list[dict]] = {}
        self.hooks: list[dict] = []
        self.exited: set[str] = set()
        self.fenced: set[str] = set()
        self.ended: set[str] = set()  # workers whose execution of the task returned
        self.done_by: str | None = None
        self.holder = "w1"
        self.epoch = 0
        self.deliveries = 0
        self.kills = self.freezes = 0
        self.spawned = 0
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("DBOS_", "DBOS__"))}
        self.external = ExternalProcess(root, self._external_config(), root / "clock.sqlite", self.inbox)

    def _external_config(self) -> dict:
        endpoints = {t["name"]: {"class": t["class"], "object": t["object"], "keys": t["keys"],
                                 "reconcile_by": t["reconcile_by"], "compensation": t["compensation"]}
                     for t in self.transitions}
        return {"endpoints": endpoints, "fingerprints": "check" if self.knobs["idempotency"] == "key+fingerprint"
                else "ignore", "key_retention_s": float(self.knobs.get("key_retention", 604800.0))}

    # -- recording ------------------------------------------------------------------------------

    def record(self, actor: str, event: str, **fields: Any) -> None:
        self.rows.append((self.clock.tick(), actor, event, {k: v for k, v in fields.items() if v is not None}))

    def history(self, log: list[dict]) -> History:
        rows = list(self.rows)
        for line in log:
            mapped = SERVER_EVENTS.get(line["event"])
            if mapped is not None:
                actor, event = mapped
                fields = {k: line[k] for k in SERVER_FIELDS[line["event"]] if k in line}
                rows.append((line["seq"], actor, event, fields))
            elif line["event"] == "caller_killed":
                rows.append((line["seq"], line.get("worker") or "worker", "crashed", {}))
        rows.sort(key=lambda row: row[0])
        history = History()
        for position, (_, actor, event, fields) in enumerate(rows):
            history.append(position, actor, event, **fields)
        return history

    # -- processes ----------------------------------------------------------------------------------

    def spawn(self) -> WorkerProcess:
        self.spawned += 1
        return WorkerProcess(self.command, self.root / f"process-{self.spawned}.log", self.env)

    def launch(self, name: str, recover: list[str]) -> WorkerProcess:
        """Start worker ``name`` (from a spare process if one is warm) and wait for its ``ready``."""
        worker = self.spares.pop(0) if self.spares else self.spawn()
        worker.name = name
        self.workers[name] = worker
        self.external.control("workers", **{name: worker.process.pid})
        self.inbox.reader(name, worker.process.stdout)
        worker.send({"op": "start", "worker": name, "task": self.task, "tenant": self.tenant,
                     "workflow": {"name": self.workflow_name, "version": 1, "transitions": self.transitions},
                     "protocol": {k: self.knobs[k] for k in worker_kit.KNOBS}, "external": self.external.url,
                     "state": str(self.root / "runtime"), "ack_timeout_s": self.ack_timeout_s, "recover": recover,
                     "plant": sorted(self.plant),
                     "runtime": {"address": self.runtime_server.address} if self.runtime_server else {}})
        self.wait(lambda: name in self.replies and any(r.get("kind") == "ready" for r in self.replies[name]),
                  STARTUP_TIMEOUT_S)
        return worker

    def grant(self, worker: str, expired: str | None = None, zombie: bool = False) -> None:
        """The lease moves to ``worker`` (after ``expired``'s lease expired) and the queue delivers it the task."""
        if expired is not None:
            self.record("lease", "lease_expired", task=self.task, worker=expired, successor=worker,
                        zombie=True if zombie else None)
        self.epoch += 1
        self.holder = worker
        self.record("lease", "lease_granted", task=self.task, worker=worker, epoch=self.epoch)
        self.deliver_record(worker)

    def deliver_record(self, worker: str, duplicate: bool = False) -> None:
        self.deliveries += 1
        self.record("queue", "delivered", task=self.task, worker=worker, delivery=self.deliveries,
                    duplicate=True if duplicate else None)

    def next_worker(self) -> str:
        return f"w{len(self.workers) + 1}"

    def kill(self, name: str) -> None:
        self.workers[name].kill()
        self.kills += 1
        self.record(name, "crashed")

    def freeze(self, name: str) -> None:
        self.workers[name].signal(signal.SIGSTOP)
        self.freezes += 1

    def thaw(self, name: str) -> None:
        self.workers[name].signal(signal.SIGCONT)

    def resume(self, name: str) -> None:
        """Let a worker go on from the record it waits at."""
        self.held.discard(name)
        if name in self.pending:
            del self.pending[name]
            self.workers[name].send({"op": "continue"})

    def recover(self, dead: str) -> str:
        """The lease supervisor: ``dead``'s lease expires; a new worker recovers the task."""
        successor = self.next_worker()
        self.grant(successor, expired=dead)
        self.launch(successor, recover=[dead])
        return successor

    # -- the event loop -------------------------------------------------------------------------------

    def wait(self, condition: Condition, limit_s: float = RECORD_TIMEOUT_S) -> None:
        """Handle records until ``condition`` holds (within the limits)."""
        while not condition():
            left = min(limit_s, self.deadline - time.monotonic())
            if left <= 0:
                raise RealEffectsError(f"the run took longer than its limit ({RUN_TIMEOUT_S:.0f} s)")
            source, record = self.inbox.get(left)
            self.handle(source, record)

    def handle(self, source: str, record: dict | None) -> None:
        if source == "external":
            if record is not None:
                self.hooks.append(record)
                if record.get("event") == "caller_killed":
                    self.kills += 1
                    self.workers[record["worker"]].expected_exit = True
                elif record.get("event") == "caller_frozen":
                    self.freezes += 1
            return
        worker = self.workers[source]
        if record is None:
            self.exited.add(source)
            code = worker.process.wait(timeout=STOP_TIMEOUT_S)
            if not worker.expected_exit and code != -signal.SIGKILL:
                raise RealEffectsError(f"worker {source} exited with status {code} ({worker.stderr_tail()})")
            return
        kind = record.get("kind")
        if kind == "error":
            raise RealEffectsError(f"worker {source} failed: {record.get('message')}")
        if kind in ("ready", "reply", "note"):
            self.replies.setdefault(source, []).append(record)
            return
        if kind == "done":
            self.ended.add(source)
            if record.get("recorded", True):  # else it replayed another execution's records to the end
                self.done_by = source
            return
        if kind not in ("event", "point"):
            raise RealEffectsError(f"worker {source} sent a record of unknown kind: {record}")
        self.pending[source] = record
        if kind == "event":
            self.on_event(source, record)
        if self.trap is not None and self.trap(source, record):
            self.trap, self.trapped = None, (source, record)
            return
        if source not in self.held:
            self.resume(source)

    def on_event(self, source: str, record: dict) -> None:
        fields = {k: v for k, v in record.items() if k not in ("kind", "event", "actor")}
        if record["event"] == "append_refused" and "holder" not in fields:
            fields["holder"] = self.holder  # the lease supervisor knows who holds the task
        self.record(record.get("actor") or source, record["event"], **fields)
        event = record["event"]
        if event == "append_refused":
            self.fenced.add(source)
        elif event == "approval_requested":
            self.record("human", "approved", task=self.task, transition=record["transition"])
            self.workers[source].send({"op": "approve", "transition": record["transition"]})
        elif event == "human_exception":
            if self.holding:
                self.deferred.append((source, record["transition"]))
            else:
                self.resolve(source, record["transition"])

    def resolve(self, source: str, name: str) -> None:
        """A human looks at the external system itself and records what is true (the model's resolve)."""
        t = self.by_name[name]
        head = worker_kit.default_head(self.task)
        truth = next((o for o in self.external.objects()
                      if o["task"] == self.task and o["logical"] == t["logical"] and o["kind"] == t["object"]
                      and not o["foreign"] and o["generation"] == 1 and o["head"] == head and o["open"]), None)
        self.record("human", "human_resolved", task=self.task, transition=name,
                    outcome="found" if truth else "not_found", effect=truth["effect"] if truth else None)
        message = {"outcome": "not_found"}
        if truth is not None:
            self.record("human", "receipt_recorded", task=self.task, transition=name, effect=truth["effect"],
                        receipt=truth["effect"], source="human")
            message = {"outcome": "found", "effect": truth["effect"], "number": truth["number"]}
        self.workers[source].send({"op": "resolve", "transition": name, "message": message})

    # -- conditions ---------------------------------------------------------------------------------

    def hook_seen(self, hook: str, event: str) -> Condition:
        return lambda: any(h.get("hook") == hook and h.get("event") == event for h in self.hooks)

    def request_done(self, hook: str) -> Condition:
        return lambda: any(h.get("event") == "request_done" and hook in h.get("hooks", ()) for h in self.hooks)

    def reply_from(self, worker: str, op: str) -> Condition:
        return lambda: any(r.get("op") == op for r in self.replies.get(worker, ()))

    def settled(self, worker: str, mark: int = 0, in_step: bool = True) -> Condition:
        """A worker's stale execution has ended: fenced, finished or gone -- or, on Temporal, whose server
        refuses a stale attempt's completion without the worker learning it, its step has returned (a stale
        workflow task sends nothing the harness could see, so it is settled at once)."""
        def ended() -> bool:
            if worker in self.fenced or worker in self.exited or worker in self.ended:
                return True
            if self.runtime != "temporal":
                return False
            return not in_step or any(r.get("note") == "attempt_returned" for r in self.replies.get(worker, [])[mark:])

        return ended

    # -- the play ---------------------------------------------------------------------------------

    def play(self) -> None:
        self.external.start()
        if self.runtime_server is not None:
            self.runtime_server.start()
        plan = self.choreography()
        needed = next(plan)  # how many more worker processes the faults will need: spawn them warm now
        self.record("queue", "accepted", task=self.task, workflow=self.workflow_name, workflow_version=1)
        first = self.spawn()
        self.spares = [self.spawn() for _ in range(needed)]
        self.spares.insert(0, first)
        self.grant("w1")
        self.launch("w1", recover=[])
        self.workers["w1"].send({"op": "run"})
        for condition in plan:
            self.wait(condition)
        self.wait(lambda: self.done_by is not None)
        self.record("queue", "acked", task=self.task, worker=self.done_by)

    @property
    def struck(self) -> CellFault:
        """The fault being played (only its choreography asks, and a healthy run has none)."""
        if self.current is None:
            raise RuntimeError("this run plays no fault")
        return self.current

    @property
    def caught(self) -> tuple[str, dict]:
        """(worker, record) the trap caught; asked only once a trap's condition has held."""
        if self.trapped is None:
            raise RuntimeError("no worker record was trapped")
        return self.trapped

    def trap_at(self, predicate: Callable[[str, dict], bool]) -> Condition:
        self.trap, self.trapped = predicate, None
        return lambda: self.trapped is not None

    def trigger(self) -> Callable[[str, dict], bool]:
        """The worker record where the fault's boundary is (for the boundaries the worker reports)."""
        name, boundary = self.struck.transition, self.struck.boundary
        if boundary == "before_intent":
            return lambda s, r: (r.get("kind") == "point" and r.get("point") == "before_intent"
                                 and r.get("transition") == name)
        if boundary == "after_intent":
            return lambda s, r: r.get("event") == "intent_recorded" and r.get("transition") == name
        if boundary == "dispatch_recorded":  # inside the call step, before its request leaves
            return lambda s, r: (r.get("kind") == "point" and r.get("point") == "before_send"
                                 and r.get("transition") == name)
        if boundary == "response_received":  # inside the call step, its output (the receipt) not yet durable
            return lambda s, r: r.get("event") == "response_delivered" and r.get("transition") == name
        receipted: set[str] = set()
        optimistic = self.knobs["checkpoint"] == "optimistic"

        def after_receipt(source: str, record: dict) -> bool:
            if record.get("event") == "receipt_recorded" and record.get("transition") == name:
                receipted.add(source)
                return optimistic
            return (record.get("event") == "checkpoint_saved" and source in receipted
                    and name in record.get("completed", ()))

        return after_receipt

    def arm(self, action: str, stage: str | None = None) -> str:
        hook = f"f{self.fault_index}"
        stage = stage or ("before_store" if self.struck.boundary == "after_dispatch" else "after_store")
        self.external.control("arm", id=hook, transition=self.struck.transition, nth=1, stage=stage, action=action)
        return hook

    def choreography(self) -> Iterator[Any]:
        """The faults' steps: first how many extra workers they need, then the conditions they wait for.

        The faults are played one after another, in list order (the model's order: by transition, then by
        point).  Until a fault strikes, the run may also end: then its point was never reached, and neither
        was any later fault's (the model skips them too)."""
        plays = {"foreign_object": self.play_foreign_object, "postcondition_fails": self.play_postcondition,
                 "lose_request": self.play_lost, "lose_response": self.play_lost, "timeout": self.play_timeout,
                 "terminate": self.play_terminate, "duplicate": self.play_duplicate, "delay_ack": self.play_delay_ack,
                 "change_owner": self.play_hand_over, "zombie": self.play_hand_over}
        plans = []
        for index, fault in enumerate(self.faults, start=1):
            self.current, self.fault_index = fault, index
            plan = plays[fault.fault](fault.transition, fault.boundary in REQUEST_BOUNDARIES)
            plans.append((index, fault, plan, next(plan)))
        yield sum(needed for *_, needed in plans)
        for index, fault, plan, _ in plans:
            self.current, self.fault_index, self.trapped = fault, index, None
            first = next(plan, None)
            if first is None:
                continue
            yield lambda first=first: first() or self.done_by is not None
            if not first():  # the run ended before this fault's point: it never strikes, nor do the later ones
                self.trap = None
                return
            self.struck_count += 1
            yield from plan
        self.current = None

    def play_foreign_object(self, name: str, at_request: bool) -> Iterator[Any]:
        yield 0
        yield self.trap_at(self.trigger())
        self.external.control("foreign", task=self.task, transition=name, logical=self.by_name[name]["logical"],
                              head="f0e1a2b", generation=1, arguments={})
        self.resume(self.caught[0])

    def play_postcondition(self, name: str, at_request: bool) -> Iterator[Any]:
        """After T's receipt, its object is made invalid; the worker's check finds it."""
        yield 0
        yield self.trap_at(lambda s, r: r.get("event") == "receipt_recorded" and r.get("transition") == name)
        effect = self.caught[1]["effect"]
        self.external.control("invalidate", number=next(o["number"] for o in self.external.objects()
                                                       if o["effect"] == effect))
        self.resume(self.caught[0])

    def play_lost(self, name: str, at_request: bool) -> Iterator[Any]:
        yield 0
        yield self.request_done(self.arm("drop" if self.struck.fault == "lose_request" else "lose_reply"))

    def play_timeout(self, name: str, at_request: bool) -> Iterator[Any]:
        """The request commits just after the worker gave up and reconciled (or retried)."""
        yield 0
        hook = self.arm("hold", "before_store")
        yield self.hook_seen(hook, "held")
        yield self.trap_at(lambda s, r: r.get("transition") == name and r.get("event") in (
            "reconciled", "dispatched", "human_exception", "transition_failed")
            and not (r.get("event") == "dispatched" and r.get("attempt") == 1))
        self.external.control("release", hook=hook)
        yield self.request_done(hook)
        self.resume(self.caught[0])

    def play_terminate(self, name: str, at_request: bool) -> Iterator[Any]:
        """SIGKILL, then (once the struck request is settled) the lease supervisor's successor."""
        yield 1
        if at_request:
            hook = self.arm("kill_caller")
            yield self.hook_seen(hook, "caller_killed")
            victim = next(h["worker"] for h in self.hooks
                          if h.get("event") == "caller_killed" and h.get("hook") == hook)
            yield lambda: victim in self.exited
            yield self.request_done(hook)
        else:
            yield self.trap_at(self.trigger())
            victim = self.caught[0]
            self.kill(victim)
        if victim == self.holder:
            self.recover(victim)

    def play_duplicate(self, name: str, at_request: bool) -> Iterator[Any]:
        """A copy of the request, or a redelivery of the task to the worker that runs it."""
        yield 0
        if at_request:
            yield self.request_done(self.arm("duplicate"))
            return
        yield self.trap_at(self.trigger())
        source = self.caught[0]
        self.deliver_record(source, duplicate=True)
        self.workers[source].send({"op": "deliver"})
        yield self.reply_from(source, "deliver")
        if [r for r in self.replies[source] if r.get("op") == "deliver"][-1]["result"] == "ignored":
            self.record(source, "redelivery_ignored", task=self.task, reason="already running the task")
        self.resume(source)

    def play_delay_ack(self, name: str, at_request: bool) -> Iterator[Any]:
        """A request or reply held until T has settled; or the queue's deadline passing (a redelivery elsewhere)."""
        yield 0 if at_request else 1
        if at_request:
            hook = self.arm("hold")
            yield self.hook_seen(hook, "held")
            self.holding = True
            yield self.trap_at(lambda s, r: (r.get("transition") == name and r.get("event") in (
                "receipt_recorded", "human_exception", "transition_failed")) or r.get("event") == "task_terminal")
            self.external.control("release", hook=hook)
            yield self.request_done(hook)
            self.holding = False
            for source, transition in self.deferred:  # the person looks once the held request has settled
                self.resolve(source, transition)
            self.deferred.clear()
            self.resume(self.caught[0])
            return
        yield self.trap_at(self.trigger())
        source, other = self.caught[0], self.next_worker()
        self.deliver_record(other)
        self.launch(other, recover=[])
        self.workers[other].send({"op": "deliver"})
        yield self.reply_from(other, "deliver")
        result = [r for r in self.replies[other] if r.get("op") == "deliver"][-1]
        if result["result"] == "busy":
            self.record(other, "lease_busy", task=self.task, holder=result.get("holder") or source)
        self.workers[other].stop()
        yield lambda: other in self.exited
        self.resume(source)

    def play_hand_over(self, name: str, at_request: bool) -> Iterator[Any]:
        """The lease moves while its holder still lives: frozen while a successor recovers the task (and, for a
        zombie, finishes it), then woken; the successor goes on once the old one's stale execution has ended."""
        zombie = self.struck.fault == "zombie"
        yield 1
        hook = None
        if at_request:
            hook = self.arm("freeze_caller" if zombie else "hold")
            yield self.hook_seen(hook, "caller_frozen" if zombie else "held")
            if zombie:
                yield self.request_done(hook)
            old = self.holder
        else:
            yield self.trap_at(self.trigger())
            old = self.caught[0]
        if not (at_request and zombie):
            self.freeze(old)  # so its runtime cannot take the task back while the lease moves
        successor = self.next_worker()
        self.grant(successor, expired=old, zombie=True)
        if not zombie:
            self.held.add(successor)
        self.launch(successor, recover=[old])
        if zombie:
            yield lambda: self.done_by == successor  # the successor finished while the old one slept
        else:
            yield lambda: successor in self.pending  # the successor owns the task now
        if hook is not None and not zombie:
            # Released while the old worker is still frozen: its reply waits in its socket, so whether its
            # client's timer ran out during the hand-over cannot decide what it reads when it wakes.
            self.external.control("release", hook=hook)
            yield self.request_done(hook)
        mark = len(self.replies.get(old, []))
        self.thaw(old)
        in_step = at_request
        if self.trapped is not None and self.trapped[0] == old:
            record = self.trapped[1]
            in_step = record.get("kind") == "point" or record.get("event") == "response_delivered"
            self.resume(old)
        yield self.settled(old, mark, in_step)
        self.resume(successor)

    def close(self) -> None:
        for worker in list(self.workers.values()) + self.spares:
            try:
                worker.stop()
            except Exception:  # closing must not hide the run's own error
                worker.kill()
        self.external.stop()
        if self.runtime_server is not None:
            self.runtime_server.stop()
        self.clock.close()


def run_real_effects(workflow: Any = "saga", protocol: Any = "keyed-fingerprint-reconcile",
                     fault: CellFault | str | Sequence[CellFault | str] | None = None, *, runtime: str = "dbos",
                     command: list[str] | None = None, task: str = TASK_DEFAULT,
                     tenant: str = worker_kit.DEFAULT_TENANT, keep: Path | None = None,
                     timeout_s: float = RUN_TIMEOUT_S, ack_timeout_s: float = ACK_TIMEOUT_S,
                     plant: tuple[str, ...] = ()) -> RealEffectsRun:
    """Play one cell, a list of faults, or a healthy run (``fault=None``) against a real worker; return the
    recorded history.

    >>> run = run_real_effects("saga", "unkeyed-retry", "terminate open_pr after_commit")   # doctest: +SKIP
    >>> sim.check_history(run.history, "effects")                                             # doctest: +SKIP

    ``fault`` is one fault (``FAULT TRANSITION BOUNDARY``) or a list of them, played in the model's order
    (:func:`~sim.real.runtimes.cells.check_order` says which lists the harness can express).
    ``plant``: bugs the reference worker carries (``worker_kit.PLANTED_BUGS``), to test what finds them.
    ``keep``: copy the run's folder (the external system's database and request log, the runtime's
    database, every process's log) there afterwards.  Raises :class:`NotApplicable` for a fault or knob
    the runtime cannot express, :class:`RealEffectsError` when a process fails or hangs.
    """
    label, knobs = resolve_protocol(protocol)
    faults = _fault_list(fault)
    transitions = workflow_data(workflow, knobs)
    check_order(faults, knobs, runtime, [t["name"] for t in transitions])
    reads = [t["name"] for t in transitions if t["class"] == "read"]
    if reads:
        raise NotApplicable(f"{reads[0]} is a read: the external system serves reads (GET /v1/reads/T), but the "
                            "reference workers do not run them yet")
    verified = {f.transition for f in faults if f.fault == "postcondition_fails"}
    transitions = [dict(t, postcondition=True) if t["name"] in verified else t for t in transitions]
    if command is None:
        if runtime not in ("dbos", "temporal"):
            raise ValueError(f"no reference worker for runtime {runtime!r}; give command=")
        command = dbos_command() if runtime == "dbos" else temporal_command()
    name = workflow if isinstance(workflow, str) else getattr(workflow, "name", "custom")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fencesim-effects-") as tmp:
        root = Path(tmp)
        run = CellRun(root, transitions, knobs, faults, command, task, tenant, started + timeout_s, ack_timeout_s,
                      name, runtime)
        run.plant = tuple(plant)
        try:
            run.play()
        except RealEffectsError as error:
            error.history = run.history(run.external.log())  # what happened before it failed
            raise
        finally:
            run.close()
            if keep is not None:
                if keep.exists():
                    shutil.rmtree(keep)
                shutil.copytree(root, keep, symlinks=True)
        log = run.external.log()
        history = run.history(log)
        history.append(len(history), "kernel", "run_ended", reason="completed")
        objects = _objects(root)
    return RealEffectsRun(history, time.monotonic() - started, run.kills, run.freezes, sorted(run.workers), runtime,
                          faults[0] if faults else None, {"label": label, **knobs}, log, objects, faults,
                          run.struck_count)


def _fault_list(fault: CellFault | str | Sequence[CellFault | str] | None) -> tuple[CellFault, ...]:
    if fault is None:
        return ()
    if isinstance(fault, (str, CellFault)):
        fault = [fault]
    return tuple(CellFault.parse(f) if isinstance(f, str) else f for f in fault)


def _objects(root: Path) -> list[dict]:
    """The external system's objects at the end, read from its database."""
    import sqlite3

    path = root / "external" / external_system.DATABASE_FILE
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT number, kind, task, transition, open FROM objects ORDER BY number").fetchall()
    finally:
        db.close()
    return [{"number": n, "effect": f"{k}#{n}", "task": t, "transition": tr, "open": bool(o)}
            for n, k, t, tr, o in rows]
