"""The ``fencesim`` command line: thin commands over the library; importing this package
registers every command."""

from sim.cli import (
    certify,  # noqa: F401
    conform,  # noqa: F401
    diff,  # noqa: F401
    effects,  # noqa: F401
    explore,  # noqa: F401
    fuzz,  # noqa: F401
    incidents,  # noqa: F401
    review,  # noqa: F401
    scenarios,  # noqa: F401
    serve,  # noqa: F401
)
from sim.cli import map as _map  # noqa: F401,E402
from sim.cli.app import app, main  # noqa: F401
