"""fencesim's reference worker on DBOS Transact (pinned: ``dbos==3.4.0``; SQLite system database).

One process is one executor: ``executor_id`` is the worker's name (``w1``, ``w2``...), the workflow ID
is the task's name, the application version is explicit (``fencesim-<workflow>-v<version>``), and
the system database is a SQLite file in the run's folder.  The task is one DBOS workflow running the
shared policy (:class:`worker_kit.TaskPolicy`); each of its durable records is a DBOS step
(``DBOS.run_step``), whose output row is written only after the step returns -- so the receipt of a
call is durable exactly when the call step's output is.  Humans' approvals and resolutions are DBOS
messages (``DBOS.send`` / ``DBOS.recv``), durable across crashes.

What DBOS provides, and what this worker adds (``docs/real-runtimes.md`` has the long form):

* **Recovery.**  A restarted process under another executor ID does not resume a dead executor's
  workflow by itself (it stays PENDING: a stranded task); the harness names the dead executors in
  ``recover`` and this worker calls ``DBOS._recover_pending_workflows`` for them, which re-enqueues the
  workflow on DBOS's internal queue for the next poll (about a second).
* **The lease fence.**  Every execution of a workflow holds an owner token; a step recorded by an
  execution that lost ownership (its workflow was recovered elsewhere) is refused with
  ``DBOSWorkflowConflictIDError``.  This worker reports the refusal (``append_refused``) and lets DBOS
  park the stale execution.  The refusal comes when the step's output is recorded, after its body
  ran: a frozen worker that wakes inside a call sends its request before it learns it lost the task.
* **Redelivery.**  Starting the workflow again under its ID returns the existing execution: a
  duplicate delivery is ignored, and a delivery to another executor while one owns it finds it busy.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # the checker reads the package import
    from . import worker_kit as kit
else:  # run as a script (python -I dbos_worker.py): standard library, DBOS and worker_kit only
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import worker_kit as kit

#: The DBOS release this worker was built and measured against.
DBOS_VERSION = "3.4.0"
#: Seconds DBOS polls for messages on SQLite (no LISTEN/NOTIFY there); short, so approvals arrive at once.
NOTIFICATION_POLLING_S = 0.05
#: Seconds ``stop`` gives DBOS to shut down its threads.
SHUTDOWN_LIMIT_S = 5.0
SYSTEM_DATABASE = "dbos.sqlite"


class DBOSRuntime:
    """A DBOS executor running one task's workflow under the shared policy."""

    def __init__(self, config: kit.WorkerConfig, channel: kit.Channel):
        from dbos import DBOS

        self.config, self.channel = config, channel
        self.me = config.worker
        self.dbos = DBOS
        self.client = kit.ExternalClient(config.external, config.worker, config.ack_timeout_s)
        # A call is in doubt when another executor recorded its dispatch: that one may have sent it and died.
        self.bodies = kit.StepBodies(config, channel, self.client, self.me, lambda dispatch: dispatch["by"] != self.me)
        DBOS(config={
            "name": "fencesim",
            "system_database_url": f"sqlite:///{os.path.join(config.state, SYSTEM_DATABASE)}",
            "executor_id": config.worker,
            "application_version": f"fencesim-{config.workflow}-v{config.workflow_version}",
            "log_level": "WARNING",
            "notification_listener_polling_interval_sec": NOTIFICATION_POLLING_S,
        })
        runtime = self

        @DBOS.workflow(name="fencesim_task")
        def task_workflow() -> str:
            outcome, recorded = kit.drive(kit.TaskPolicy(config, channel), runtime.step, runtime.recv)
            channel.tell({"kind": "done", "outcome": outcome, "worker": runtime.me, "recorded": recorded})
            return outcome

        self.workflow = task_workflow
        DBOS.launch()
        self.recovering = []
        if config.recover:
            handles = DBOS._recover_pending_workflows(list(config.recover))
            self.recovering = [h.get_workflow_id() for h in handles]
        channel.handlers.update(run=self.deliver, deliver=self.deliver, approve=self.message,
                                resolve=self.message)

    # -- the policy's durable steps and messages --------------------------------------------------

    def step(self, call: kit.StepCall) -> tuple[dict, bool]:
        from dbos._error import DBOSWorkflowConflictIDError

        try:
            out = self.dbos.run_step({"name": call.name}, lambda: self.bodies.run(call.kind, call.args))
        except DBOSWorkflowConflictIDError:
            # Not a DBOS call here: inside a workflow even a status query is an owner-checked operation.
            self.channel.emit({"kind": "event", "event": "append_refused", "actor": "log", "task": self.config.task,
                               "worker": self.me, "refused": kit.STEP_EVENTS.get(call.name.split(":")[0], call.kind),
                               "transition": kit.transition_of(call)})
            raise  # DBOS parks this execution: it no longer owns the workflow
        return out, out.get("by") == self.me

    def recv(self, request: kit.Recv):
        return self.dbos.recv(request.topic, timeout_seconds=request.timeout_s)

    # -- requests from the harness --------------------------------------------------------------

    def deliver(self, request: dict) -> None:
        """Start the task's workflow under its ID: a new execution, or the one that exists."""
        from dbos import SetWorkflowID

        task = self.config.task
        before = self.dbos.get_workflow_status(task)
        if before is None:
            result = "started"
        elif before.status in ("SUCCESS", "ERROR", "CANCELLED"):
            result = "finished"
        elif before.executor_id == self.me:
            result = "ignored"
        else:
            result = "busy"
        with SetWorkflowID(task):
            self.dbos.start_workflow(self.workflow)
        self.channel.tell({"kind": "reply", "op": request["op"], "result": result,
                           "holder": before.executor_id if before is not None else self.me})

    def message(self, request: dict) -> None:
        """A human's approval or resolution, as a durable message to the task's workflow."""
        topic = f"{'approve' if request['op'] == 'approve' else 'resolve'}:{request['transition']}"
        self.dbos.send(self.config.task, dict(request.get("message", {}), transition=request["transition"]),
                       topic=topic)
        self.channel.tell({"kind": "reply", "op": request["op"], "transition": request["transition"]})

    # -- lifetime ---------------------------------------------------------------------------------

    def recovered(self) -> dict:
        return {"recovering": self.recovering, "dbos": DBOS_VERSION}

    def shutdown(self) -> None:
        done = threading.Event()

        def destroy() -> None:
            try:
                self.dbos.destroy(workflow_completion_timeout_sec=0)
            finally:
                done.set()

        threading.Thread(target=destroy, daemon=True).start()
        done.wait(SHUTDOWN_LIMIT_S)


def main() -> int:
    # The channel owns stdout; anything else a library prints goes to stderr (the worker's log).
    channel_out = kit.protocol_stdout()
    kit_channel = kit.Channel(out=channel_out)
    return kit.serve_worker(lambda config, _channel: DBOSRuntime(config, kit_channel), "dbos", channel=kit_channel)


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)  # DBOS's daemon threads must not keep a stopped worker alive
