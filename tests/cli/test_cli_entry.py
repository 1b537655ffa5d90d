"""The program's entry point: a SIGTERM while the command line is still importing its libraries ends it
with exit 2, as Ctrl-C does, never with signal 15."""

from __future__ import annotations

import subprocess
import sys

SIGTERM_DURING_IMPORT = """
import builtins, os, signal
real_import = builtins.__import__
def importing(name, *args, **kwargs):
    if name == "typer":
        builtins.__import__ = real_import
        os.kill(os.getpid(), signal.SIGTERM)
    return real_import(name, *args, **kwargs)
builtins.__import__ = importing
import sys
sys.argv = ["fencesim", "matrix"]
from sim.entry import main
main()
"""


def test_a_sigterm_while_importing_ends_with_exit_2():
    """The handler is installed before the libraries are imported."""
    done = subprocess.run([sys.executable, "-c", SIGTERM_DURING_IMPORT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "interrupted" in done.stderr and "Traceback" not in done.stderr
