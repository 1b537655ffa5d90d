"""The ``fencesim`` command line: thin commands over the library; importing this package
registers every command."""

from sim.cli.app import app, main  # noqa: F401
from sim.cli import scenarios  # noqa: F401
from sim.cli import fuzz  # noqa: F401
from sim.cli import effects  # noqa: F401
from sim.cli import review  # noqa: F401
from sim.cli import conform  # noqa: F401
from sim.cli import map as _map  # noqa: F401,E402
