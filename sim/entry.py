"""The ``fencesim`` program's entry point.

A SIGTERM that arrives while the command line is still importing its libraries ends the program as
Ctrl-C does (exit 2), not with signal 15: the handler is installed here, before those imports.
"""

from __future__ import annotations

import signal
import sys


def _interrupted(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def main() -> None:
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        from sim.cli import main as command_line
    except KeyboardInterrupt:
        sys.stderr.write("fencesim: interrupted\n")
        sys.exit(2)
    command_line()
