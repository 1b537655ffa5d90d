"""Time budgets: a wall-clock deadline shared by every phase of a search.

A run of the model never reads the clock; only the search decides, between
runs, whether to go on.  A budget that stops a search makes its result
depend on the machine's speed: whatever stopped says so (``reason =
"budget"``), and the counterexample found so far is still reported --
marked 1-minimal or not, never called shortest unless proved.
"""

from __future__ import annotations

import time


class Deadline:
    """A named wall-clock limit; ``Deadline(None)`` never expires.

    ``spent_before``: seconds of the same budget an interrupted run already spent (a resumed run gets
    only what is left: ``seconds - spent_before``)."""

    def __init__(self, seconds: float | None, name: str = "--budget", spent_before: float = 0.0):
        self.seconds = seconds
        self.name = name
        self.spent_before = float(spent_before)
        self.started = time.monotonic()
        self.end = None if seconds is None else self.started + max(0.0, float(seconds) - self.spent_before)
        self.hit: list[str] = []  # where it stopped something (phase names), for the report

    def spent(self) -> float:
        """Seconds of this budget spent so far, by this run and the runs it resumes."""
        return self.spent_before + (time.monotonic() - self.started)

    def expired(self) -> bool:
        return self.end is not None and time.monotonic() >= self.end

    def remaining(self) -> float:
        return float("inf") if self.end is None else max(0.0, self.end - time.monotonic())

    def within(self, seconds: float | None, name: str) -> "Deadline":
        """A deadline that ends at the earlier of this one and ``seconds`` from now."""
        inner = Deadline(seconds, name)
        if inner.end is None or (self.end is not None and self.end < inner.end):
            inner.end, inner.name = self.end, self.name
            inner.spent_before, inner.started, inner.seconds = self.spent_before, self.started, self.seconds
        inner.hit = self.hit
        return inner

    def note(self, phase: str) -> None:
        if phase not in self.hit:
            self.hit.append(phase)


NO_DEADLINE = Deadline(None)


#: What one run costs beside its events, in replayed order events (building the model, running the checks):
#: the unit of the deterministic work limits below.
RUN_COST_EVENTS = 20


def work_of(runs: int, events: int) -> int:
    """The work of replaying ``runs`` runs of ``events`` order events in all."""
    return runs * RUN_COST_EVENTS + events


class WorkLimit:
    """A limit on replay work (runs and order events, :func:`work_of`), optionally inside a wall-clock
    ``deadline``: it stops a search at the same point on every machine, so what it returns does not
    depend on the machine's speed (only a ``--budget`` does).  It reads like a :class:`Deadline`."""

    def __init__(self, units: int, name: str, deadline: Deadline = NO_DEADLINE):
        self.units, self.name, self.deadline, self.used = units, name, deadline, 0

    def charge(self, runs: int, events: int) -> None:
        self.used += work_of(runs, events)

    def left(self) -> int:
        return max(0, self.units - self.used)

    def expired(self) -> bool:
        if self.deadline.expired():
            self.name = self.deadline.name
            return True
        return self.used >= self.units

    def note(self, phase: str) -> None:
        self.deadline.note(phase)
