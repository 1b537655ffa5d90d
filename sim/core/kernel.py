"""A thin layer over SimPy: the environment, the run's one random source,
mailboxes between actors, and limits that end a run with a named reason.

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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import simpy

#: Default limits.  A run that reaches one ends with the named reason.
KERNEL_STEPS_MAX = 100_000
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
        import simpy  # here, not at the top: a command that runs no SimPy model never loads it

        self.env = simpy.Environment(initial_time=start_time)
        self.seed = seed
        self._random: random.Random | None = None

    @property
    def random(self) -> random.Random:
        """The run's one random source, seeded with ``seed`` (made on first use: most runs draw nothing)."""
        if self._random is None:
            self._random = random.Random(self.seed)
        return self._random

    @property
    def now(self) -> float:
        return self.env.now

    def process(self, generator) -> simpy.Process:
        return self.env.process(generator)

    def mailbox(self) -> "Mailbox":
        return Mailbox(self.env)

    def run(
        self,
        max_events: int = KERNEL_STEPS_MAX,
        max_time_s: float = MAX_TIME_S_DEFAULT,
    ) -> RunEnd:
        """Step the environment until it is empty or a limit is reached.

        Failed SimPy events are never swallowed: an exception inside a
        process propagates out of ``run``.
        """
        env = self.env
        step, peek = env.step, env.peek
        steps = 0
        while steps < max_events:
            next_time = peek()
            if next_time > max_time_s:
                reason = END_COMPLETED if next_time == float("inf") else END_TIME_LIMIT
                return RunEnd(reason, env.now, steps)
            step()
            steps += 1
        next_time = peek()
        if next_time == float("inf"):
            return RunEnd(END_COMPLETED, env.now, steps)
        return RunEnd(END_TIME_LIMIT if next_time > max_time_s else END_EVENT_LIMIT, env.now, steps)


class Mailbox:
    """A queue with one reader: ``get()`` is a SimPy event that fires with the next item put.

    The cheapest hand-over between two processes at one simulated time (a ``simpy.Store`` does
    the same with more bookkeeping); items come out in the order they were put.
    """

    __slots__ = ("env", "items", "waiting")

    def __init__(self, env: simpy.Environment):
        self.env = env
        self.items: deque[Any] = deque()
        self.waiting: simpy.Event | None = None

    def put(self, item: Any) -> None:
        waiting = self.waiting
        if waiting is not None:
            self.waiting = None
            waiting.succeed(item)
        else:
            self.items.append(item)

    def get(self) -> simpy.Event:
        event = self.env.event()
        if self.items:
            event.succeed(self.items.popleft())
        else:
            self.waiting = event
        return event
