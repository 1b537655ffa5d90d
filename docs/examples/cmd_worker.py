"""A worker of your own under fencesim's faults: ``fencesim conform --runtime "python3 docs/examples/cmd_worker.py"``.

Standard library only.  It speaks the worker protocol of ``docs/real-runtimes.md`` itself -- ``start`` and
``ready``, ``run`` and ``deliver`` and their ``reply``, ``continue`` after every record, ``approve`` and
``resolve``, recovery named in ``recover``, ``done``, ``stop`` -- over a durable runtime of its own: a
SQLite step log (one row per step, by position, written only by the task's owner) shared by every worker of
a run in the ``state`` folder.  It borrows the effects policy (intent, dispatch, call, receipt, timeouts,
reconciliation, compensation, approval: what to do, not how to make it durable) from fencesim's
``worker_kit``, whose files are standard library only too; a team in another language writes its own.

What the runtime here promises, as DBOS does (``docs/real-runtimes.md``, "DBOS"):

* **A step is recorded once, by its owner.**  A step whose output is in the log is replayed (its events are
  not sent again); one that is not is executed, then its output is written -- only if this worker still
  owns the task (the lease fence).  A worker that lost the task reports ``append_refused`` and stops.
* **A message is durable.**  A human's approval or resolution is stored before its ``reply``; the task
  reads it as a step, so a successor replays what its predecessor read.
* **Recovery is the successor's own.**  A worker started with ``recover: ["w1"]`` gets no ``run`` or
  ``deliver``: it takes the task over from the dead worker by itself, right after ``ready``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import time
from contextlib import closing
from pathlib import Path


def _kit():
    """fencesim's worker_kit (standard library only), found beside this file in a checkout or where fencesim
    is installed -- without importing fencesim itself."""
    import importlib.util

    here = Path(__file__).resolve().parents[2] / "sim" / "real" / "runtimes"
    if not (here / "worker_kit").is_dir():
        spec = importlib.util.find_spec("sim")
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit("cmd_worker.py needs fencesim's sim/real/runtimes/worker_kit (pip install fencesim)")
        here = Path(next(iter(spec.submodule_search_locations))) / "real" / "runtimes"
    sys.path.insert(0, str(here))
    import worker_kit

    return worker_kit


kit = _kit()

DATABASE = "cmd_worker.sqlite"
#: Seconds between looks for a human's message (approval, resolution).
MESSAGE_POLL_S = 0.05


class Parked(Exception):
    """This worker no longer owns the task: its execution stops here."""


class StepLog:
    """The durable store: who owns the task, each step's output by position, the humans' messages."""

    def __init__(self, state: str):
        self.path = os.path.join(state, DATABASE)
        with closing(self.connect()) as db:
            db.executescript("""
                CREATE TABLE IF NOT EXISTS task (task TEXT PRIMARY KEY, owner TEXT, status TEXT);
                CREATE TABLE IF NOT EXISTS steps (task TEXT, position INTEGER, name TEXT, output TEXT,
                                                  PRIMARY KEY (task, position));
                CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, task TEXT, topic TEXT, body TEXT);
            """)

    def connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        return db

    def owner(self, task: str) -> tuple[str, str] | None:
        with closing(self.connect()) as db:
            return db.execute("SELECT owner, status FROM task WHERE task = ?", (task,)).fetchone()

    def claim(self, task: str, me: str, dead: list[str] | None = None) -> bool:
        """Own the task: a new one, or (``dead``) a pending one whose owner the supervisor declared dead."""
        db = self.connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute("SELECT owner, status FROM task WHERE task = ?", (task,)).fetchone()
            if row is None and dead is None:
                db.execute("INSERT INTO task VALUES (?, ?, 'pending')", (task, me))
            elif row is not None and dead is not None and row[0] in dead and row[1] == "pending":
                db.execute("UPDATE task SET owner = ? WHERE task = ?", (me, task))
            else:
                db.execute("ROLLBACK")
                return False
            db.execute("COMMIT")
            return True
        finally:
            db.close()

    def recorded(self, task: str, position: int) -> dict | None:
        with closing(self.connect()) as db:
            row = db.execute("SELECT output FROM steps WHERE task = ? AND position = ?", (task, position)).fetchone()
        return None if row is None else json.loads(row[0])

    def record(self, task: str, position: int, name: str, output: dict, me: str, consume: int | None = None,
               finished: bool = False) -> bool:
        """Write a step's output if ``me`` still owns the task (the fence); False when it does not."""
        db = self.connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute("SELECT owner FROM task WHERE task = ?", (task,)).fetchone()
            if row is None or row[0] != me:
                db.execute("ROLLBACK")
                return False
            db.execute("INSERT INTO steps VALUES (?, ?, ?, ?)", (task, position, name, json.dumps(output)))
            if consume is not None:
                db.execute("DELETE FROM messages WHERE id = ?", (consume,))
            if finished:
                db.execute("UPDATE task SET status = 'finished' WHERE task = ?", (task,))
            db.execute("COMMIT")
            return True
        finally:
            db.close()

    def send(self, task: str, topic: str, body: dict) -> None:
        with closing(self.connect()) as db:
            db.execute("INSERT INTO messages (task, topic, body) VALUES (?, ?, ?)", (task, topic, json.dumps(body)))

    def message(self, task: str, topic: str) -> tuple[int, dict] | None:
        with closing(self.connect()) as db:
            row = db.execute("SELECT id, body FROM messages WHERE task = ? AND topic = ? ORDER BY id LIMIT 1",
                             (task, topic)).fetchone()
        return None if row is None else (row[0], json.loads(row[1]))


class Worker:
    """One worker process: the protocol's requests, and the task's execution over the step log."""

    def __init__(self, config, channel):
        self.config, self.channel, self.me, self.task = config, channel, config.worker, config.task
        self.log = StepLog(config.state)
        client = kit.ExternalClient(config.external, config.worker, config.ack_timeout_s)
        # A call is in doubt when another worker recorded its dispatch: that one may have sent it and died.
        self.bodies = kit.StepBodies(config, channel, client, self.me, lambda dispatch: dispatch["by"] != self.me)
        self.running: threading.Thread | None = None
        self.position = 0
        channel.handlers.update(run=self.deliver, deliver=self.deliver, approve=self.message, resolve=self.message)

    # -- the task's execution ------------------------------------------------------------------------

    def execute(self) -> None:
        self.position = 0
        try:
            outcome, recorded = kit.drive(kit.TaskPolicy(self.config, self.channel), self.step, self.recv)
        except (Parked, kit.HarnessGone):
            return  # a fenced execution stops; a gone harness ends the run
        except Exception as error:  # the harness reports it; the run has no verdict
            self.channel.tell({"kind": "error", "message": f"{type(error).__name__}: {error}"[:500]})
            return
        self.channel.tell({"kind": "done", "outcome": outcome, "worker": self.me, "recorded": recorded})

    def step(self, call) -> tuple[dict, bool]:
        """Replay the step at this position if it is recorded, else run its body and record its output."""
        self.position += 1
        done = self.log.recorded(self.task, self.position)
        if done is not None:
            return done, done.get("by") == self.me  # fresh only if this worker ran it
        output = self.bodies.run(call.kind, call.args)
        if not self.log.record(self.task, self.position, call.name, output, self.me, finished=call.kind == "close"):
            self.refused(kit.STEP_EVENTS.get(call.name.split(":")[0], call.kind), kit.transition_of(call))
        return output, True

    def recv(self, request) -> dict | None:
        """A human's message as a step: replayed if recorded, else waited for (None after its timeout)."""
        self.position += 1
        done = self.log.recorded(self.task, self.position)
        if done is not None:
            return done["message"]
        end = time.monotonic() + request.timeout_s
        found = self.log.message(self.task, request.topic)
        while found is None and time.monotonic() < end:
            time.sleep(MESSAGE_POLL_S)
            found = self.log.message(self.task, request.topic)
        ident, body = found if found is not None else (None, None)
        if not self.log.record(self.task, self.position, f"recv:{request.topic}", {"message": body, "by": self.me},
                               self.me, consume=ident):
            self.refused("record", request.topic.split(":", 1)[-1])
        return body

    def refused(self, event: str, transition: str | None) -> None:
        """The fence: this worker's record was refused (another owns the task); report it and stop."""
        self.channel.emit({"kind": "event", "event": "append_refused", "actor": "log", "task": self.task,
                           "worker": self.me, "refused": event, "transition": transition})
        raise Parked(event)

    def start_execution(self) -> None:
        if self.running is None or not self.running.is_alive():
            self.running = threading.Thread(target=self.execute, daemon=True)
            self.running.start()

    # -- requests from the harness ---------------------------------------------------------------------

    def deliver(self, request: dict) -> None:
        """``run`` or ``deliver``: start the task (``started``), or say who has it."""
        before = self.log.owner(self.task)
        if before is None and self.log.claim(self.task, self.me):
            result, holder = "started", self.me
            self.start_execution()
        elif before is not None and before[1] == "finished":
            result, holder = "finished", before[0]
        elif before is not None and before[0] == self.me:
            result, holder = "ignored", self.me  # this worker runs it already
        else:
            result, holder = "busy", (before or (None,))[0]
        self.channel.tell({"kind": "reply", "op": request["op"], "result": result, "holder": holder})

    def message(self, request: dict) -> None:
        """A human's approval or resolution, stored durably before the reply (it may come before ``continue``)."""
        topic = f"{'approve' if request['op'] == 'approve' else 'resolve'}:{request['transition']}"
        self.log.send(self.task, topic, dict(request.get("message", {}), transition=request["transition"]))
        self.channel.tell({"kind": "reply", "op": request["op"], "transition": request["transition"]})

    def recover(self) -> list[str]:
        """Take over the task from the workers ``recover`` names, by itself (no run or deliver will come)."""
        if self.config.recover and self.log.claim(self.task, self.me, dead=list(self.config.recover)):
            return [self.task]
        return []


def main() -> int:
    channel = kit.Channel(out=kit.protocol_stdout())  # anything printed by a library goes to stderr
    start = channel.read_request()
    if start is None or start["op"] != "start":
        sys.stderr.write('the first request must be {"op": "start", ...}\n')
        return 4
    try:
        config = kit.WorkerConfig.from_start(start)
        if config.plant:
            raise ValueError("this worker carries no planted bugs")
        os.makedirs(config.state, exist_ok=True)
        worker = Worker(config, channel)
        recovering = worker.recover()
        channel.tell({"kind": "ready", "worker": config.worker, "runtime": "cmd-example", "pid": os.getpid(),
                      "recovering": recovering})
        if recovering:
            worker.start_execution()
        channel.serve()
    except Exception as error:  # the harness reports it; the run has no verdict
        channel.tell({"kind": "error", "message": f"{type(error).__name__}: {error}"[:500]})
        return 3
    return 0


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)  # the task's thread may wait for a continue that will never come
