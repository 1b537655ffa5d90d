"""fencesim's reference worker on Restate (pinned: ``restate-sdk==1.3.0``, the server from the npm package
``@restatedev/restate-server``).

Restate is a journaling server: it pushes each invocation to a *deployment* (an HTTP endpoint it registered)
and keeps the invocation's journal; the SDK replays the journal on every retry.  One process here is one
worker serving the deployment's endpoint; the harness gives every worker the same address, so after a kill
the successor is the deployment the server retries (a Restate deployment is immutable: every retry of an
invocation goes to the endpoint it started on).  The task is one Restate workflow (its key is the task's
name) running the shared policy (:class:`worker_kit.TaskPolicy`); every durable step is one ``ctx.run``
whose result is journaled once the body returned; humans' approvals and resolutions are durable promises,
resolved through the workflow's shared ``message`` handler.

What Restate provides, and how it maps (``docs/real-runtimes.md``):

* **No explicit recovery.**  A dead worker's invocation is retried by the server, with backoff, until an
  endpoint answers at the deployment's address: the successor resumes it by replaying the journal.
* **A journaled step is replayed, never run again**; a step whose result was not journaled runs again (at
  least once).  The call in such a step is *in doubt* when another worker recorded its dispatch.
* **Redelivery is idempotent.**  Submitting the workflow again under its key answers ``PreviouslyAccepted``.
* **The fence is the server's**: an attempt it has given up on cannot add to the journal.  A zombie (a
  frozen worker still holding the address) and a lease moved to a live worker cannot be expressed: the
  address is one endpoint.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import urllib.error
import urllib.request
from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:  # the checker reads the package import
    from . import worker_kit as kit
else:  # run as a script (python -I restate_worker.py): standard library, restate-sdk, hypercorn, worker_kit
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import worker_kit as kit

import restate

RESTATE_SDK_VERSION = "1.3.0"
#: Seconds a request to the server's ingress or admin API may take.
REQUEST_LIMIT_S = 30.0
#: Seconds the worker waits for its endpoint to listen.
LISTEN_LIMIT_S = 30.0
#: Attempts of one step's body before the invocation fails (a body answers; only a dead worker retries it).
STEP_ATTEMPTS = 10

WORKFLOW = restate.Workflow("fencesim")
#: The runtime of this process (the handlers are module-level).
RUNTIME: list["RestateRuntime"] = []


def _post(url: str, body: dict | None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={} if body is None else {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_LIMIT_S) as answer:  # noqa: S310 - loopback only
            text = answer.read().decode() or "{}"
    except urllib.error.HTTPError as error:  # the server's own words say what was wrong
        raise RuntimeError(f"{url}: {error.code} {error.read().decode(errors='replace')[:300]}") from None
    return json.loads(text)


def _address_held(port: int) -> bool:
    """Whether a live process already listens at the deployment's address."""
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


class RestateRuntime:
    """A worker process serving the deployment's endpoint, for one task's workflow."""

    def __init__(self, config: kit.WorkerConfig, channel: kit.Channel):
        self.config, self.channel, self.me = config, channel, config.worker
        fields = config.runtime
        self.ingress, self.admin, self.port = fields["ingress"], fields["admin"], int(fields["port"])
        self.client = kit.ExternalClient(config.external, config.worker, config.ack_timeout_s)
        self.bodies = kit.StepBodies(config, channel, self.client, self.me, lambda dispatch: dispatch["by"] != self.me)
        self.loop = asyncio.new_event_loop()
        self.stopped = asyncio.Event()
        # A worker started while another still serves the address (the queue redelivered the task to a new
        # worker) stands by: it answers deliveries through the ingress, and the live worker keeps the task.
        self.standing_by = _address_held(self.port)
        if not self.standing_by:
            listening = threading.Event()
            threading.Thread(target=self._serve, args=(listening,), daemon=True).start()
            if not listening.wait(LISTEN_LIMIT_S):
                raise RuntimeError(f"the endpoint did not listen on 127.0.0.1:{self.port}")
            # Registering the same endpoint again is idempotent: the first worker registers it, successors find it.
            _post(f"{self.admin}/deployments", {"uri": f"http://127.0.0.1:{self.port}"})
        channel.handlers.update(run=self.deliver, deliver=self.deliver, approve=self.message, resolve=self.message)

    def _serve(self, listening: threading.Event) -> None:
        from hypercorn.asyncio import serve
        from hypercorn.config import Config

        asyncio.set_event_loop(self.loop)
        settings = Config()
        settings.bind = [f"127.0.0.1:{self.port}"]
        settings.loglevel = "WARNING"
        settings.accesslog = None

        async def main() -> None:
            self.loop.call_later(0.2, listening.set)  # serve() binds before it first yields
            await serve(APP, settings, shutdown_trigger=self.stopped.wait)

        self.loop.run_until_complete(main())

    # -- requests from the harness --------------------------------------------------------------

    started_here = False

    def deliver(self, request: dict) -> None:
        """Submit the task's workflow under its key: a new invocation, or the one that exists."""
        if request["op"] == "run":
            self.started_here = True
        answer = _post(f"{self.ingress}/fencesim/{self.config.task}/run/send", None)
        if answer.get("status") == "Accepted":
            result = "started"
        else:
            result = "ignored" if request["op"] == "deliver" and self.started_here else "busy"
        self.channel.tell({"kind": "reply", "op": request["op"], "result": result, "holder": None})

    def message(self, request: dict) -> None:
        """A human's approval or resolution: resolves the workflow's durable promise of that topic."""
        topic = f"{'approve' if request['op'] == 'approve' else 'resolve'}:{request['transition']}"
        payload = dict(request.get("message", {}), transition=request["transition"])
        _post(f"{self.ingress}/fencesim/{self.config.task}/message/send", {"topic": topic, "payload": payload})
        self.channel.tell({"kind": "reply", "op": request["op"], "transition": request["transition"]})

    # -- lifetime ---------------------------------------------------------------------------------

    def recovered(self) -> dict:
        return {"recovering": [], "restate_sdk": RESTATE_SDK_VERSION, "standing_by": self.standing_by}

    def shutdown(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self.stopped.set)
        except RuntimeError:  # the loop already ended
            pass


@WORKFLOW.main()
async def run(ctx: restate.WorkflowContext) -> str:
    """The task: the shared policy, each step a ``ctx.run``, each human's message a durable promise."""
    runtime = RUNTIME[0]
    running = kit.TaskPolicy(runtime.config, runtime.channel).run()
    answer: Any = None  # the policy's last request answered
    options: restate.RunOptions[dict] = restate.RunOptions(max_attempts=STEP_ATTEMPTS,
                                                           initial_retry_interval=timedelta(milliseconds=100))
    while True:
        try:
            request = running.send(answer)
        except StopIteration as finished:
            outcome, recorded = finished.value
            runtime.channel.tell({"kind": "done", "outcome": outcome, "worker": runtime.me, "recorded": recorded})
            return outcome
        if isinstance(request, kit.StepCall):
            executed: list[bool] = []

            def body(kind: str = request.kind, args: dict = request.args, executed: list[bool] = executed) -> dict:
                executed.append(True)  # run here, not replayed from the journal
                return runtime.bodies.run(kind, args)

            out = await ctx.run_typed(request.name, body, options)
            answer = (out, bool(executed))
        else:
            who, what = await restate.select(message=ctx.promise(request.topic).value(),
                                             timeout=ctx.sleep(timedelta(seconds=request.timeout_s)))
            answer = what if who == "message" else None


@WORKFLOW.handler()
async def message(ctx: restate.WorkflowSharedContext, body: dict) -> None:
    """A human's message: resolve the promise the task waits on (or will wait on)."""
    await ctx.promise(body["topic"]).resolve(body["payload"])


APP = restate.app([WORKFLOW])


def main() -> int:
    channel_out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
    sys.stdout = sys.stderr
    channel = kit.Channel(out=channel_out)

    def make(config: kit.WorkerConfig, _channel: kit.Channel) -> RestateRuntime:
        runtime = RestateRuntime(config, channel)
        RUNTIME.append(runtime)
        return runtime

    return kit.serve_worker(make, "restate", channel=channel)


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)
