"""The JSON-lines channel between a worker and the harness: requests on stdin, records on stdout.

Every ``event`` and ``point`` record waits for the harness's ``{"op": "continue"}`` before the worker goes
on: that is where the harness may SIGKILL or SIGSTOP the worker instead.  Standard library only.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
from typing import Any, Callable

from .config import CHANNEL_TIMEOUT_S


def protocol_stdout():
    """The protocol channel's own stream, taken from stdout before anything else can write there: file
    descriptor 1 is then pointed at stderr, so whatever a runtime or its SDK prints or logs -- from Python or
    from native code writing to descriptor 1 directly (Temporal's core) -- lands in the worker's log, never on
    the channel (the harness reads a non-protocol line as a broken run it cannot judge)."""
    import logging
    import os

    sys.stdout.flush()
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(stream=sys.stderr)
    return channel


class HarnessGone(Exception):
    """The harness stopped answering (stdin closed, or no ``continue`` within CHANNEL_TIMEOUT_S)."""


class Channel:
    """JSON lines to and from the harness; :meth:`emit` waits for ``continue``, :meth:`tell` does not."""

    def __init__(self, inp=None, out=None):
        self.inp = inp or sys.stdin
        self.out = out or sys.stdout
        self.write_lock = threading.Lock()
        self.emit_lock = threading.Lock()  # one record awaiting its continue at a time
        self.continues: queue.Queue = queue.Queue()
        self.handlers: dict[str, Callable[[dict], None]] = {}

    def tell(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        with self.write_lock:
            self.out.write(line + "\n")
            self.out.flush()

    def emit(self, record: dict[str, Any]) -> None:
        """Send a record and wait for the harness's continue (the harness may kill the worker instead)."""
        with self.emit_lock:
            self.tell(record)
            try:
                answer = self.continues.get(timeout=CHANNEL_TIMEOUT_S)
            except queue.Empty:
                raise HarnessGone(f"no continue within {CHANNEL_TIMEOUT_S:.0f} s") from None
            if answer is None:
                raise HarnessGone("the harness closed the channel")

    def event(self, event: str, **fields: Any) -> None:
        self.emit({"kind": "event", "event": event, **{k: v for k, v in fields.items() if v is not None}})

    def point(self, point: str, transition: str) -> None:
        self.emit({"kind": "point", "point": point, "transition": transition})

    def read_request(self) -> dict[str, Any] | None:
        line = self.inp.readline()
        if not line:
            return None
        request = json.loads(line)
        if not isinstance(request, dict) or not isinstance(request.get("op"), str):
            raise ValueError(f"a request must be an object with an 'op', not {line[:120]!r}")
        return request

    def serve(self) -> None:
        """Read requests until stdin closes or ``stop``: ``continue`` wakes the record waiting, other ops go to
        their handlers (on this thread)."""
        while True:
            request = self.read_request()
            if request is None or request["op"] == "stop":
                self.continues.put(None)
                return
            if request["op"] == "continue":
                self.continues.put(True)
                continue
            handler = self.handlers.get(request["op"])
            if handler is None:
                self.tell({"kind": "error", "message": f"unknown request {request['op']!r}"})
                continue
            handler(request)
