"""Searches take turns: a few run at once, a few more wait, the rest are told to come back.

A search is CPU-bound and runs for up to the page's time limit; unbounded, many at once would share the
processor (each running far past its limit) and fill the threads the other pages are answered on.  So at
most :data:`SEARCHES_RUNNING` searches run at once and :data:`SEARCHES_WAITING` more wait for a turn, first
come first served, each at most :data:`SEARCH_WAIT_SECONDS`.  A search that finds the queue full, or whose
wait runs out, is refused at once with one line (503, ``Retry-After``).  Waiting costs no thread: a waiting
request sleeps on the event loop, so the pages keep answering.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from typing import AsyncIterator

import anyio

#: Searches running at once (the rest of the machine answers the pages).
SEARCHES_RUNNING = 2
#: Searches waiting for a turn; one more is refused.
SEARCHES_WAITING = 4
#: The longest a search waits for its turn, in seconds (the wait counts against its time limit).
SEARCH_WAIT_SECONDS = 10.0
#: How often a waiting search looks whether its turn has come, in seconds.
POLL_SECONDS = 0.05


class Busy(Exception):
    """No turn for a search now (503, one line)."""

    retry_after = 5


class Turns:
    """The searches running and waiting (shared by the event loop and the threads that run searches)."""

    def __init__(self, running: int | None = None, waiting: int | None = None, wait_seconds: float | None = None):
        self.running_limit = SEARCHES_RUNNING if running is None else running
        self.waiting_limit = SEARCHES_WAITING if waiting is None else waiting
        self.wait_seconds = SEARCH_WAIT_SECONDS if wait_seconds is None else wait_seconds
        self._lock = threading.Lock()
        self._running = 0
        self._queue: deque[object] = deque()

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Hold a turn for the body (:class:`Busy` when none is free and none comes within the wait)."""
        ticket = object()
        with self._lock:
            if self._running < self.running_limit and not self._queue:
                self._running += 1
                ticket = None
            elif len(self._queue) >= self.waiting_limit:
                raise Busy(f"the server is busy: {self._running} search(es) running and {len(self._queue)} "
                           "waiting, as many as it takes; try again in a moment")
            else:
                self._queue.append(ticket)
        if ticket is not None:
            await self._wait(ticket)
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1

    async def _wait(self, ticket: object) -> None:
        """Wait until ``ticket`` is first in the queue and a turn is free (:class:`Busy` after the wait)."""
        until = time.monotonic() + self.wait_seconds
        try:
            while True:
                with self._lock:
                    if self._queue[0] is ticket and self._running < self.running_limit:
                        self._queue.popleft()
                        self._running += 1
                        return
                if time.monotonic() >= until:
                    raise Busy(f"the server is busy: no search ended within {self.wait_seconds:g} s of waiting; "
                               "try again in a moment")
                await anyio.sleep(POLL_SECONDS)
        except BaseException:
            with self._lock:
                if ticket in self._queue:
                    self._queue.remove(ticket)
            raise

    def counts(self) -> tuple[int, int]:
        """(searches running, searches waiting) now."""
        with self._lock:
            return self._running, len(self._queue)
