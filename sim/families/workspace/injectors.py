"""Fault injectors of the workspace family.

Most workspace faults are events the actors perform (a human edit, a lost
ack, a duplicate, a retry, a re-plan).  A preemption at a named point of the
*next* delivery (``preempt before_write|after_write|after_journal``) is armed
here by the order and consulted by the executor at each point; the executor
never decides a fault itself.
"""

from __future__ import annotations


class CrashInjector:
    """The executor's fault injector: a preemption armed for the next delivery."""

    def __init__(self):
        self.armed: str | None = None

    def arm(self, point: str) -> None:
        self.armed = point

    def fires(self, point: str) -> bool:
        if self.armed == point:
            self.armed = None
            return True
        return False
