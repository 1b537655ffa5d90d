"""The harness's own infrastructure, and telling its failures from the runtime's.

A real run has processes that are the harness's, not the runtime's under test: the external system, the
runtime's server (Temporal's dev server), and the OS the workers run on.  When one of them fails -- the
external system or the server stops answering, a worker is killed by something outside the fault plan --
the run says nothing about the runtime: it is a :class:`~sim.real.runtimes.processes.HarnessError` ("could
not judge"), never a disagreement (``docs/real-runtimes.md``).
"""

from __future__ import annotations

import signal
import time
from typing import Any

from sim.real.runtimes.processes import EXIT_WAIT_S, STOP_TIMEOUT_S, HarnessError, RealEffectsError

#: Seconds a worker's unplanned SIGKILL waits for the external system to say its hook did it.
KILL_ANNOUNCE_S = 5.0


def check(run: Any) -> None:
    """Raise :class:`HarnessError` when the run's external system or its runtime's server has stopped."""
    if run.external.gone():
        raise HarnessError(run.external.stopped())
    server = run.runtime_server
    if server is not None and server.gone():
        raise HarnessError(server.stopped())


def worker_ended(run: Any, source: str) -> None:
    """Worker ``source``'s channel closed: fine when the plan ended it (the harness's kill or stop, the external
    system's ``kill_caller``); a SIGKILL or SIGTERM from anything else is the harness's failure; any other end
    is the runtime's (:class:`RealEffectsError`: the run failed)."""
    worker = run.workers[source]
    run.exited.add(source)
    code = worker.process.wait(timeout=STOP_TIMEOUT_S)
    if worker.expected_exit:
        return
    if code in (-signal.SIGKILL, -signal.SIGTERM):
        if killed_by_external(run, source):  # the plan's kill_caller, announced after the worker's end
            return
        check(run)
        raise HarnessError(f"worker {source} was killed outside the fault plan (exit status {code}): something "
                           "other than the harness ended it")
    raise RealEffectsError(f"worker {source} exited with status {code} ({worker.stderr_tail()})")


def killed_by_external(run: Any, worker: str) -> bool:
    """Did the external system's ``kill_caller`` hook kill ``worker``?  It kills, then announces: the
    announcement may come after the worker's end, so wait for it a little (other records put aside, in order,
    for the run's loop)."""
    end = time.monotonic() + KILL_ANNOUNCE_S
    while not run.workers[worker].expected_exit and time.monotonic() < end:
        try:
            source, record = run.inbox.get(end - time.monotonic())
        except RealEffectsError:
            break
        if source == "external" and record is not None:
            run.external_record(record)
        else:
            run.backlog.append((source, record))
    return bool(run.workers[worker].expected_exit)


def ended(run: Any, source: str, record: dict | None) -> bool:
    """Handle what is not a worker's protocol record: the external system's announcements, the end of a
    process's output (the external system's or the server's: they are gone; a worker's: :func:`worker_ended`).
    True when ``record`` is handled here."""
    if source == "external":
        if record is None:  # its stdout closed: the process is gone, or going
            raise HarnessError(run.external.stopped(wait_s=EXIT_WAIT_S))
        run.external_record(record)
        return True
    if source == "runtime-server":  # its output ended, or its process exited (ServerProcess.watch)
        raise HarnessError(run.runtime_server.stopped(wait_s=EXIT_WAIT_S))
    if record is None:
        worker_ended(run, source)
        return True
    return False


def not_a_record(source: str, record: dict) -> None:
    """A line on a worker's protocol channel that is no protocol record: a runtime's or a library's log."""
    shown = record.get("line", record) if record.get("kind") == "garbage" else record
    raise HarnessError(f"worker {source}'s protocol channel (its stdout) carried a line that is not a protocol "
                       f"record -- a library's log? its logging belongs on stderr: {str(shown)[:160]!r}")
