"""One real run's actors: the processes, the record protocol, the queue, the lease supervisor and the humans.

:class:`CellRun` plays every actor the runtime does not have.  It starts the external system and the
worker processes (spares are spawned warm: a worker's imports take a second), hands the task's lease
from worker to worker, and runs the event loop: every worker record waits for the harness's
``continue``, every hook that fires is announced by the external system, and :meth:`CellRun.wait`
handles records until a condition holds -- never a sleep, every wait bounded (``RECORD_TIMEOUT_S``,
``STARTUP_TIMEOUT_S``, the run's deadline).  The humans answer as the model's do: an approval when asked,
and a resolution of an exception by looking at the external system itself -- after any held request has
settled, as the model's person answers an hour later (``docs/real-runtimes.md``).

What a fault does to the run -- when to kill, freeze, hold or duplicate -- is the choreography's
(:mod:`sim.real.runtimes.choreography`); :meth:`CellRun.play` runs its conditions.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from sim.core.history import History
from sim.core.values import JsonObject, JsonValue
from sim.real.external_system import ENDPOINT_FIELDS
from sim.real.runtimes import infrastructure, worker_kit
from sim.real.runtimes.processes import (
    RECORD_TIMEOUT_S,
    STARTUP_TIMEOUT_S,
    ExternalProcess,
    HarnessError,
    Inbox,
    RealEffectsError,
    TemporalServer,
    WorkerProcess,
)
from sim.real.runtimes.recorder import Recorder

#: Seconds one whole real run may take.
RUN_TIMEOUT_S = 300.0

Condition = Callable[[], bool]
Trap = Callable[[str, dict], bool]


def runtime_server(runtime: str, root: Path) -> Any:
    """The server a runtime's workers need (Temporal's dev server, Restate's), or None (DBOS, CMD)."""
    if runtime == "temporal":
        return TemporalServer(root)
    if runtime == "restate":
        from sim.real.runtimes.restate_server import RestateServer

        return RestateServer(root)
    return None


class CellRun:
    """The harness of one run: processes, the recorder, the queue, the lease and the humans."""

    def __init__(self, root: Path, transitions: list[dict], knobs: JsonObject, command: list[str], task: str,
                 tenant: str, deadline: float, ack_timeout_s: float, workflow_name: str, runtime: str = "dbos",
                 arguments: dict[str, JsonObject] | None = None, timeout_default_s: float | None = None):
        self.root, self.transitions, self.knobs = root, transitions, knobs
        self.command, self.task, self.tenant, self.deadline = command, task, tenant, deadline
        self.ack_timeout_s, self.workflow_name = ack_timeout_s, workflow_name
        self.arguments = dict(arguments or {})
        self.timeout_default_s = timeout_default_s
        self.plant: tuple[str, ...] = ()
        self.runtime = runtime
        self.by_name = {t["name"]: t for t in transitions}
        self.inbox = Inbox()
        self.runtime_server: Any = runtime_server(runtime, root)
        self.recorder = Recorder(root / "clock.sqlite")
        self.workers: dict[str, WorkerProcess] = {}
        self.spares: list[WorkerProcess] = []
        self.pending: dict[str, dict] = {}  # worker -> its record awaiting continue
        self.held: set[str] = set()  # workers whose records the choreography releases
        # While a request is held, a person asked to resolve waits until it has settled: the model's person
        # answers an hour later (HUMAN_RESOLVE_S), after any delayed request (docs/real-runtimes.md).
        self.holding = False
        self.deferred: list[tuple[str, str]] = []
        self.trap: Trap | None = None
        self.trapped: tuple[str, dict] | None = None
        self.replies: dict[str, list[dict]] = {}
        self.hooks: list[dict] = []
        self.exited: set[str] = set()
        self.backlog: list[tuple[str, dict | None]] = []  # records put aside while waiting for another one
        self.fenced: set[str] = set()
        self.ended: set[str] = set()  # workers whose execution of the task returned
        self.done_by: str | None = None
        self.holder = "w1"
        self.epoch = 0
        self.deliveries = 0
        self.kills = self.freezes = 0
        self.spawned = 0
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("DBOS_", "DBOS__"))}
        self.external = ExternalProcess(root, self.external_config(), root / "clock.sqlite", self.inbox)

    def external_config(self) -> dict:
        """The external system's configuration: each transition's endpoint as its fields declare it."""
        endpoints = {t["name"]: {f: t[f] for f in ENDPOINT_FIELDS} for t in self.transitions}
        return {"endpoints": endpoints, "fingerprints": "check" if self.knobs["idempotency"] == "key+fingerprint"
                else "ignore", "key_retention_s": _seconds(self.knobs.get("key_retention", 604800.0))}

    def start_request(self, name: str, recover: list[str]) -> JsonObject:
        """The ``start`` request worker ``name`` is sent (``docs/real-runtimes.md``): the workflow as data, the
        protocol, the transitions' arguments, where everything is."""
        request: JsonObject = {
            "op": "start", "worker": name, "task": self.task, "tenant": self.tenant,
            "workflow": {"name": self.workflow_name, "version": 1,
                         "transitions": [{f: t[f] for f in (*worker_kit.TRANSITION_FIELDS, "logical")}
                                         for t in self.transitions]},
            "protocol": {k: self.knobs[k] for k in worker_kit.KNOBS}, "arguments": self.arguments,
            "external": self.external.url, "state": str(self.root / "runtime"), "ack_timeout_s": self.ack_timeout_s,
            "recover": recover, "plant": sorted(self.plant),
            "runtime": ({"address": self.runtime_server.address} if not hasattr(self.runtime_server, "fields")
                        else self.runtime_server.fields()) if self.runtime_server else {}}
        if self.timeout_default_s is not None:
            request["timeout_default_s"] = self.timeout_default_s
        return request

    # -- recording ------------------------------------------------------------------------------

    def record(self, actor: str, event: str, **fields: Any) -> None:
        self.recorder.record(actor, event, **fields)

    def history(self, log: list[dict]) -> History:
        return self.recorder.history(log)

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
        self.inbox.reader(name, worker.output())
        worker.send(self.start_request(name, recover))
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
        """Handle records until ``condition`` holds (within the limits); a failure while the harness's own
        infrastructure is down is the infrastructure's (:mod:`~sim.real.runtimes.infrastructure`)."""
        try:
            while not condition():
                infrastructure.check(self)
                left = min(limit_s, self.deadline - time.monotonic())
                if left <= 0:
                    raise RealEffectsError(f"the run took longer than its limit ({RUN_TIMEOUT_S:.0f} s)")
                source, record = self.backlog.pop(0) if self.backlog else self.inbox.get(left)
                self.handle(source, record)
        except HarnessError:
            raise
        except RealEffectsError:
            infrastructure.check(self)
            raise

    def handle(self, source: str, record: dict | None) -> None:
        if infrastructure.ended(self, source, record):
            return
        assert record is not None
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
            infrastructure.not_a_record(source, record)
        self.pending[source] = record
        if kind == "event":
            self.on_event(source, record)
        if self.trap is not None and self.trap(source, record):
            self.trap, self.trapped = None, (source, record)
            return
        if source not in self.held:
            self.resume(source)

    def external_record(self, record: dict | None) -> None:
        if record is None:
            return
        self.hooks.append(record)
        if record.get("event") == "caller_killed":
            self.kills += 1
            self.workers[record["worker"]].expected_exit = True
        elif record.get("event") == "caller_frozen":
            self.freezes += 1

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

    # -- the humans -----------------------------------------------------------------------------------

    def resolve(self, source: str, name: str) -> None:
        """A human looks at the external system itself and records what is true (the model's resolve)."""
        t = self.by_name[name]
        head = self.head_of(t)
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

    def resolve_deferred(self) -> None:
        """The person looks at every exception deferred while a request was held, once it has settled."""
        self.holding = False
        for source, transition in self.deferred:
            self.resolve(source, transition)
        self.deferred.clear()

    def head_of(self, transition: dict) -> str:
        """The head a transition's work sits on: its arguments', else the task's default (the model's rule)."""
        given = self.arguments.get(transition["logical"], {}).get("head")
        return given if isinstance(given, str) else worker_kit.default_head(self.task)

    # -- conditions ---------------------------------------------------------------------------------

    def hook_seen(self, hook: str, event: str) -> Condition:
        return lambda: any(h.get("hook") == hook and h.get("event") == event for h in self.hooks)

    def request_done(self, hook: str) -> Condition:
        return lambda: any(h.get("event") == "request_done" and hook in h.get("hooks", ()) for h in self.hooks)

    def reply_from(self, worker: str, op: str) -> Condition:
        return lambda: any(r.get("op") == op for r in self.replies.get(worker, ()))

    def trap_at(self, predicate: Trap) -> Condition:
        """Hold the next worker record ``predicate`` accepts (it waits for its continue); the condition holds
        once one is trapped."""
        self.trap, self.trapped = predicate, None
        return lambda: self.trapped is not None

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

    def play(self, plan: Iterator[Any]) -> None:
        """Run the task under a plan (:meth:`Choreography.plan`): first how many more workers it needs, then
        the conditions it waits for, in order; then wait for the task's end and acknowledge it."""
        self.external.start()
        if self.runtime_server is not None:
            self.runtime_server.start()
            self.runtime_server.watch(self.inbox)  # its exit is news at once, not after a record times out
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
        infrastructure.check(self)  # a run that ended while its infrastructure was dying is not judged either
        self.record("queue", "acked", task=self.task, worker=self.done_by)

    def close(self) -> None:
        for worker in list(self.workers.values()) + self.spares:
            try:
                worker.stop()
            except Exception:  # closing must not hide the run's own error
                worker.kill()
        self.external.stop()
        if self.runtime_server is not None:
            self.runtime_server.stop()
        self.recorder.close()


def _seconds(value: JsonValue) -> float:
    """A knob's number of seconds (the table's checks let no other value through)."""
    assert isinstance(value, (int, float)), f"a number of seconds, not {value!r}"
    return float(value)
