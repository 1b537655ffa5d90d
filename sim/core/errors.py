"""One exception tree for the package.

Every error a user can cause is an :class:`InputError` (exit code 4 on the
command line): it carries one line that says where, what is wrong and what is
allowed.  Anything else escaping from fencesim is a bug in fencesim.
"""

from __future__ import annotations


class FencesimError(Exception):
    """Base class of every exception fencesim raises on purpose."""


class InputError(FencesimError):
    """Bad input from the user: a scenario, a protocol string, a file.

    ``where`` is a location such as ``scenarios/x.toml:12`` (optional).
    """

    def __init__(self, message: str, where: str | None = None):
        self.message = message
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class ScenarioError(InputError):
    """A scenario or workload file that cannot be used as written."""


class ProtocolError(InputError):
    """An unknown protocol preset, knob or knob value."""


class HistoryError(InputError):
    """A recorded history (JSON lines) that cannot be read; ``problems`` lists (line, what) pairs."""

    problems: list = []
