"""What every real worker needs, whatever its runtime: the workflow as data, keys and fingerprints, the
external system's HTTP client, the JSON-lines channel to the harness, and the worker's policy.

Standard library only: a worker process imports this file and its runtime, nothing of the model.
``docs/real-runtimes.md`` is the protocol a team implements to put its own worker under the same faults.

**The channel.**  Requests come on stdin, records go to stdout, one JSON object per line.  Every
``event`` and ``point`` record waits for the harness's ``{"op": "continue"}`` before the worker goes
on: that is where the harness may SIGKILL or SIGSTOP the worker instead, so every kill point is a
record.  An ``event`` is sent only once what it reports is durable in the runtime's own store
(``intent_recorded`` after the intent step committed, ``receipt_recorded`` after the call step's
output committed), and only by the process that made it durable: a step replayed from the store
during recovery reports nothing again.

**The policy** (:class:`TaskPolicy`) is the effects family's worker policy as real code paths over a
durable runtime: steps whose outputs are checkpointed (:class:`StepCall`, run by :class:`StepBodies`),
messages from humans (:class:`Recv`), and the runtime's own fence.  Per transition: approval for an
irreversible step, intent (key, fingerprint), dispatch (a durable record of the attempt before the request
leaves), the call, then the receipt -- or, with no answer, a timeout recorded as ``failed`` or ``unknown``,
reconciliation by key then by task marker, a retry under the same key, a human.  A call executed by a
process that did not record its dispatch is *in doubt*: its request may have left before that process
died, so it is not sent again blindly but recorded as a timeout (``in_doubt_on_resume``), exactly as the
model's resumed worker does.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

from .channel import Channel, HarnessGone, protocol_stdout
from .client import ExternalClient, NoAnswer
from .config import (
    ACK_TIMEOUT_DEFAULT_S,
    APPROVAL_GRACE_S,
    CHANNEL_TIMEOUT_S,
    DEFAULT_TENANT,
    FINGERPRINT_HEX_DIGITS,
    HEAD_HEX_DIGITS,
    HUMAN_WAIT_LIMIT_S,
    KNOBS,
    MAX_ATTEMPTS,
    MAX_COMPENSATION_TRIES,
    PLANTED_BUGS,
    TIMEOUT_CLASS_DEFAULT_S,
    TRANSITION_FIELDS,
    WAIT_CEILING_S,
    WAIT_FLOOR_S,
    Transition,
    WorkerConfig,
    default_head,
    fingerprint_of,
)
from .policy import TaskPolicy, drive
from .steps import STEP_EVENTS, Abort, Recv, StepBodies, StepCall, transition_of

__all__ = ["ACK_TIMEOUT_DEFAULT_S", "APPROVAL_GRACE_S", "CHANNEL_TIMEOUT_S", "DEFAULT_TENANT",
           "FINGERPRINT_HEX_DIGITS", "HEAD_HEX_DIGITS", "HUMAN_WAIT_LIMIT_S", "KNOBS", "MAX_ATTEMPTS",
           "MAX_COMPENSATION_TRIES", "PLANTED_BUGS", "STEP_EVENTS", "TIMEOUT_CLASS_DEFAULT_S", "TRANSITION_FIELDS",
           "WAIT_CEILING_S", "WAIT_FLOOR_S", "Abort", "Channel", "ExternalClient",
           "HarnessGone", "NoAnswer", "Recv", "StepBodies", "StepCall", "TaskPolicy", "Transition", "WorkerConfig",
           "default_head", "drive", "fingerprint_of", "protocol_stdout", "serve_worker", "transition_of"]


def serve_worker(make_runtime: Callable[[WorkerConfig, Channel], Any], runtime_name: str,
                 channel: Channel | None = None) -> int:
    """The main loop every reference worker shares: read ``start``, build the runtime, serve requests."""
    channel = channel or Channel()
    try:
        start = channel.read_request()
        if start is None or start["op"] != "start":
            sys.stderr.write('the first request must be {"op": "start", ...}\n')
            return 4
        config = WorkerConfig.from_start(start)
        unknown = sorted(config.plant - set(PLANTED_BUGS))
        if unknown:
            raise ValueError(f"unknown planted bug {unknown[0]!r}; bugs: {', '.join(PLANTED_BUGS)}")
        os.makedirs(config.state, exist_ok=True)
        runtime = make_runtime(config, channel)
        channel.tell({"kind": "ready", "worker": config.worker, "runtime": runtime_name, "pid": os.getpid(),
                      **runtime.recovered()})
        channel.serve()
        runtime.shutdown()
    except Exception as error:  # the harness reports it; the run has no verdict
        channel.tell({"kind": "error", "message": f"{type(error).__name__}: {error}"[:500]})
        return 3
    return 0
