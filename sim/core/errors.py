"""One exception tree for the package.

Every error a user can cause is an :class:`InputError` (exit code 4 on the
command line): it carries one line that says where, what is wrong and what is
allowed.  A :class:`WorkerDied` is a worker process stopped from outside (exit
code 3, one line).  Anything else escaping from fencesim is a bug in fencesim.
"""

from __future__ import annotations


class FencesimError(Exception):
    """Base class of every exception fencesim raises on purpose."""


class WorkerDied(FencesimError, RuntimeError):
    """A worker process ended without answering its task: the system stops one when memory runs out, or
    someone killed it (:mod:`sim.search.workers`)."""


class InputError(FencesimError):
    """Bad input from the user: a scenario, a protocol string, a file.

    ``where`` is a location such as ``scenarios/x.toml:12`` (optional).
    """

    def __init__(self, message: str, where: str | None = None):
        self.message = message
        self.where = short_where(where) if where else where
        super().__init__(f"{self.where}: {message}" if self.where else message)


#: The longest location an error names whole; a longer one keeps its start and its end (the file's name).
WHERE_CHARS_MAX = 160


def short_where(where: str) -> str:
    """A location of at most about ``WHERE_CHARS_MAX`` characters: ``start...end (N characters)``."""
    if len(where) <= WHERE_CHARS_MAX:
        return where
    return f"{where[:60]}...{where[-60:]} ({len(where):,} characters)"


class ScenarioError(InputError):
    """A scenario or workload file that cannot be used as written."""


class ProtocolError(InputError):
    """An unknown protocol preset, knob or knob value."""


class HistoryError(InputError):
    """A recorded history (JSON lines) that cannot be read; ``problems`` lists (line, what) pairs."""

    problems: list = []
