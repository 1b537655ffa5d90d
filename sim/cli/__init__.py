"""The ``fencesim`` command line: importing this package registers every command."""

from sim.cli.app import app, main  # noqa: F401
from sim.cli import workspace_cmds  # noqa: F401
from sim.cli import fuzz_cmds  # noqa: F401
from sim.cli import runtime_cmds  # noqa: F401
