"""A thin layer over SimPy: the environment, the run's one random source,
channels between actors, and limits that end a run with a named reason.

The kernel knows nothing about protocols.  Everything random in a run comes
from ``Kernel.random`` (seeded once); models never draw from it to decide
faults -- fault schedules are data, read by each family's injectors.  Ties between events
at one simulated time are broken by SimPy's ``(time, priority, counter)``
order, which never compares objects, so a run is a pure function of its
inputs.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import simpy

#: Default limits.  A run that reaches one ends with the named reason.
MAX_EVENTS_DEFAULT = 100_000
MAX_TIME_S_DEFAULT = 1_000_000.0

END_COMPLETED = "completed"
END_EVENT_LIMIT = "event_limit"
END_TIME_LIMIT = "time_limit"


@dataclass(frozen=True)
class RunEnd:
    """Why and when a run ended."""

    reason: str
    time: float
    kernel_events: int


class Kernel:
    """A SimPy environment with a seeded random source and run limits.

    >>> k = Kernel(seed=7)
    >>> def ticker(env):
    ...     while True:
    ...         yield env.timeout(1)
    >>> _ = k.env.process(ticker(k.env))
    >>> k.run(max_time_s=10).reason
    'time_limit'
    """

    def __init__(self, seed: int = 0, start_time: float = 0.0):
        self.env = simpy.Environment(initial_time=start_time)
        self.seed = seed
        self.random = random.Random(seed)

    @property
    def now(self) -> float:
        return self.env.now

    def process(self, generator) -> simpy.Process:
        return self.env.process(generator)

    def channel(self, name: str) -> "Channel":
        return Channel(self, name)

    def run(
        self,
        max_events: int = MAX_EVENTS_DEFAULT,
        max_time_s: float = MAX_TIME_S_DEFAULT,
    ) -> RunEnd:
        """Step the environment until it is empty or a limit is reached.

        Failed SimPy events are never swallowed: an exception inside a
        process propagates out of ``run``.
        """
        env = self.env
        steps = 0
        while True:
            next_time = env.peek()
            if next_time == float("inf"):
                return RunEnd(END_COMPLETED, env.now, steps)
            if next_time > max_time_s:
                return RunEnd(END_TIME_LIMIT, env.now, steps)
            if steps >= max_events:
                return RunEnd(END_EVENT_LIMIT, env.now, steps)
            env.step()
            steps += 1


class Channel:
    """Messages in flight between two actors, with fault hooks.

    Messages sit in an ordered in-flight list until an injector (or the
    scripted schedule) decides what happens to them: ``deliver`` hands the
    oldest copy matching a predicate to the receiver's inbox, ``duplicate``
    adds a second copy, ``drop`` loses one.  The receiver reads its inbox, a
    SimPy ``Store``.  Order is insertion order, never hash order.
    """

    def __init__(self, kernel: Kernel, name: str):
        self.kernel = kernel
        self.name = name
        self.in_flight: deque[Any] = deque()
        self.inbox = simpy.Store(kernel.env)

    def send(self, message: Any) -> None:
        self.in_flight.append(message)

    def find(self, match: Callable[[Any], bool]) -> Any | None:
        for message in self.in_flight:
            if match(message):
                return message
        return None

    def _take(self, match: Callable[[Any], bool]) -> Any | None:
        message = self.find(match)
        if message is not None:
            self.in_flight.remove(message)
        return message

    def deliver(self, match: Callable[[Any], bool]):
        """Move the oldest matching message to the inbox; return it (or None)."""
        message = self._take(match)
        if message is not None:
            self.inbox.put(message)
        return message

    def drop(self, match: Callable[[Any], bool]):
        """Lose the oldest matching message; return it (or None)."""
        return self._take(match)

    def duplicate(self, match: Callable[[Any], bool], copy: Callable[[Any], Any]):
        """Append a copy of the oldest matching message; return the copy."""
        message = self.find(match)
        if message is None:
            return None
        duplicate = copy(message)
        self.in_flight.append(duplicate)
        return duplicate

    def __iter__(self) -> Iterator[Any]:
        return iter(self.in_flight)

    def __len__(self) -> int:
        return len(self.in_flight)
