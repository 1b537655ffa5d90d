"""A discrete-event kernel whose whole state is data: the effects family's runs, copyable at any moment.

SimPy runs a process as a Python generator, which cannot be copied, so a run
cannot be forked: exhaustive search had to replay every order from its start.
Here a process is a record (its kind, where it stands -- its ``pc`` -- and its
locals) and the kernel's queue holds numbers, never objects, so the state of
a run is a value one can copy (:meth:`Agenda.copy`) and continue twice.

The order of events is SimPy's own, so a run gives the same history byte for
byte as on SimPy (the differential test holds the two together):

* the queue is ordered by ``(time, priority, counter)``; a process starts
  with an ``URGENT`` event at once; a timeout, a succeeded event and a
  process's end are ``NORMAL``;
* an event's callbacks run in the order they were added when it is
  processed; a condition ``a | b`` is an event of its own, scheduled when
  the first of ``a`` or ``b`` is processed, and the process resumes when the
  condition is processed;
* every processed event, even one nobody waits for any more (a timeout that
  lost its race), counts as a kernel step and moves the clock: the limits
  of a run (steps, time) end it exactly where SimPy's would.

A callback is ``(RESUME, pid)`` -- resume a process -- or ``(CHECK, eid)`` --
tell a condition one of its events happened.  What a process does when it
resumes is its owner's business (:class:`Agenda` calls ``resume(pid)``).
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Callable

#: SimPy's priorities: a process starts before anything else scheduled at the same time.
URGENT = 0
NORMAL = 1
#: Callback kinds.
RESUME = 0
CHECK = 1
INFINITY = float("inf")


class Agenda:
    """The queue of scheduled events, the events not yet processed and their callbacks, and the clock.

    ``events`` maps an event number to ``[callbacks, triggered, kind]``; ``kind`` is ``"cond"`` for a condition
    (its callbacks then hold ``(RESUME, pid)`` of the process waiting for it).  A processed event leaves
    ``events``: an event number not there was processed (it is triggered).
    """

    __slots__ = ("now", "queue", "counter", "events", "steps")

    def __init__(self, now: float = 0.0) -> None:
        self.now = now
        self.queue: list[tuple[float, int, int, int]] = []
        self.counter = 0
        self.events: dict[int, list] = {}
        self.steps = 0

    def copy(self) -> "Agenda":
        other = Agenda.__new__(Agenda)
        other.now, other.counter, other.steps = self.now, self.counter, self.steps
        other.queue = list(self.queue)
        other.events = {eid: [None if rec[0] is None else list(rec[0]), rec[1], rec[2]]
                        for eid, rec in self.events.items()}
        return other

    def check(self) -> None:
        """Assert the agenda's own consistency: the events scheduled are exactly the triggered events not yet
        processed, each scheduled once, none before now (time can't go backwards), every number drawn from
        the counter."""
        queued = [eid for _, _, _, eid in self.queue]
        triggered = {eid for eid, record in self.events.items() if record[1]}
        assert len(set(queued)) == len(queued), f"an event scheduled twice: {sorted(queued)}"
        assert set(queued) == triggered, (
            f"scheduled events {sorted(set(queued))} are not the triggered ones not yet processed {sorted(triggered)}")
        assert not self.queue or self.queue[0][0] >= self.now, f"an event at {self.queue[0][0]}, before now {self.now}"
        assert all(counter <= self.counter for _, _, counter, _ in self.queue) and \
            all(eid <= self.counter for eid in self.events), f"a number above the counter {self.counter}"

    # -- making events ----------------------------------------------------------------------

    def _new(self, kind: str = "event") -> int:
        self.counter += 1
        self.events[self.counter] = [[], False, kind]
        return self.counter

    def _schedule(self, eid: int, priority: int = NORMAL, delay: float = 0.0) -> None:
        self.counter += 1
        heappush(self.queue, (self.now + delay, priority, self.counter, eid))

    def event(self) -> int:
        """A new event, triggered later by :meth:`succeed`."""
        return self._new()

    def succeed(self, eid: int) -> None:
        record = self.events[eid]
        assert not record[1], f"event {eid} was already triggered"
        record[1] = True
        self._schedule(eid)

    def triggered(self, eid: int) -> bool:
        record = self.events.get(eid)
        return record is None or record[1]

    def timeout(self, delay: float) -> int:
        """An event that happens ``delay`` seconds from now (scheduled at once, as SimPy's ``Timeout``)."""
        eid = self._new()
        self.events[eid][1] = True
        self._schedule(eid, NORMAL, delay)
        return eid

    def start(self, pid: int) -> None:
        """Process ``pid`` starts at once (SimPy's ``Initialize``: urgent)."""
        eid = self._new("init")
        self.events[eid] = [[(RESUME, pid)], True, "init"]
        self._schedule(eid, URGENT)

    def ended(self) -> None:
        """A process returned: SimPy schedules its own event (nobody waits for it; it still counts as a step)."""
        eid = self._new("end")
        self.events[eid][1] = True
        self._schedule(eid)

    def wait(self, pid: int, eid: int) -> None:
        """Process ``pid`` waits for event ``eid`` (it must not be processed yet)."""
        self.events[eid][0].append((RESUME, pid))

    def wait_any(self, pid: int, first: int, second: int) -> None:
        """Process ``pid`` waits for ``first | second`` (neither processed yet)."""
        cond = self._new("cond")
        self.events[first][0].append((CHECK, cond))
        self.events[second][0].append((CHECK, cond))
        self.events[cond][0].append((RESUME, pid))

    # -- running ----------------------------------------------------------------------------

    def peek(self) -> float:
        return self.queue[0][0] if self.queue else INFINITY

    def skip(self, delay: float) -> None:
        """A script's wait with nothing else scheduled: the clock moves on by ``delay`` (the same float SimPy's
        timeout gives: ``now + delay``) and the step counts, as the timeout's would."""
        assert not self.queue, "a script waits only while nothing else is scheduled"
        self.now += delay
        self.steps += 1

    def pop(self) -> list:
        """Take the next event off the queue, move the clock, count the step; its callbacks, to run in order."""
        self.now, _, _, eid = heappop(self.queue)
        self.steps += 1
        return self.events.pop(eid)[0]

    def run_callbacks(self, callbacks: list, resume: Callable[[int], bool]) -> list | None:
        """Run callbacks in order (a condition told of its event is scheduled then, as SimPy does); ``resume(pid)``
        False pauses: the callbacks still to run are returned."""
        for position, (kind, target) in enumerate(callbacks):
            if kind == CHECK:
                cond = self.events.get(target)
                if cond is not None and not cond[1]:
                    cond[1] = True
                    self._schedule(target)
            elif not resume(target):
                return callbacks[position + 1:]
        return None


class Answer:
    """An event of an agenda as the runtime holds it: what a worker waits on for a response (``respond`` succeeds
    it)."""

    __slots__ = ("agenda", "eid")

    def __init__(self, agenda: Agenda, eid: int):
        self.agenda, self.eid = agenda, eid

    @property
    def triggered(self) -> bool:
        return self.agenda.triggered(self.eid)

    def succeed(self) -> None:
        self.agenda.succeed(self.eid)
