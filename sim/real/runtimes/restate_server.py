"""Restate for a real run: the server from the npm package ``@restatedev/restate-server`` (which ships the
binary), started on loopback ports in the run's folder, and the reference worker's command.

``make restate`` installs the package into the project's own ``.restate/`` folder; ``FENCESIM_RESTATE_SERVER``
names another binary.  The Python side is the optional extra ``restate`` (``restate-sdk``, ``hypercorn``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from sim.real.runtimes.cells import NotApplicable
from sim.real.runtimes.processes import ServerProcess, _free_ports

#: The npm package and version ``make restate`` installs.
RESTATE_SERVER_PACKAGE = "@restatedev/restate-server@1.7.12"
#: Where ``make restate`` installs it: the project's own folder.
LOCAL_FOLDER = Path(__file__).resolve().parents[3] / ".restate"
#: Names another restate-server binary.
SERVER_VARIABLE = "FENCESIM_RESTATE_SERVER"
#: Seconds the server may take to answer its health check.
STARTUP_LIMIT_S = 60.0
INSTALL = "make restate (npm) and pip install -e '.[restate]'"


def server_program() -> str | None:
    """The restate-server binary: ``FENCESIM_RESTATE_SERVER``, the project's ``.restate/`` install (the
    platform package's binary, which needs no Node to run), or ``restate-server`` on PATH."""
    named = os.environ.get(SERVER_VARIABLE)
    if named:
        return named if Path(named).exists() else None
    modules = LOCAL_FOLDER / "node_modules" / "@restatedev"
    for candidate in sorted(modules.glob("restate-server-*/bin/restate-server")) if modules.is_dir() else []:
        return str(candidate)
    launcher = LOCAL_FOLDER / "node_modules" / ".bin" / "restate-server"
    if launcher.exists() and shutil.which("node"):
        return str(launcher)
    return shutil.which("restate-server")


def restate_unavailable() -> str | None:
    """Why the Restate runtime cannot run here (one line), or None when it can."""
    missing = [name for name in ("restate", "hypercorn") if importlib.util.find_spec(name) is None]
    if missing:
        return f"Restate's Python side is not installed ({', '.join(missing)}): {INSTALL}"
    if server_program() is None:
        return f"the Restate server is not installed ({RESTATE_SERVER_PACKAGE}): {INSTALL}"
    return None


def restate_command() -> list[str]:
    """The reference Restate worker, run as a script in isolated mode."""
    return [sys.executable, "-I", str(Path(__file__).resolve().with_name("restate_worker.py"))]


class RestateServer(ServerProcess):
    """One Restate server in the run's folder, on loopback ports; the workers' deployment address with it."""

    title = "the Restate server"
    log_name = "restate.log"

    def __init__(self, root: Path):
        self.root = root
        self.process: subprocess.Popen | None = None
        self.address: str | None = None
        self.ports: list[int] = []

    def fields(self) -> dict:
        """What every worker's ``start`` request carries: the ingress and admin URLs, the deployment's port."""
        ingress, admin, _node, worker = self.ports
        return {"ingress": f"http://127.0.0.1:{ingress}", "admin": f"http://127.0.0.1:{admin}", "port": worker}

    def start(self) -> None:
        from sim.real.runtimes.processes import _die_with_parent

        program = server_program()
        if program is None:
            raise NotApplicable(f"the Restate server is absent: {INSTALL}")
        self.ports = _free_ports(4)
        ingress, admin, node, _worker = self.ports
        env = {k: v for k, v in os.environ.items() if not k.startswith("RESTATE_")}
        env.update(RESTATE_INGRESS__BIND_ADDRESS=f"127.0.0.1:{ingress}",
                   RESTATE_ADMIN__BIND_ADDRESS=f"127.0.0.1:{admin}",
                   RESTATE_BIND_ADDRESS=f"127.0.0.1:{node}", RESTATE_ADVERTISED_ADDRESS=f"http://127.0.0.1:{node}/",
                   DO_NOT_TRACK="1", SCARF_ANALYTICS="false")
        command = [program, "--listen-mode", "tcp", "--base-dir", str(self.root / "restate"), "--node-name", "fencesim",
                   "--default-num-partitions", "1", "--no-logo"]
        with open(self.root / "restate.log", "ab") as log:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                            start_new_session=True, preexec_fn=_die_with_parent)
        self.address = f"127.0.0.1:{ingress}"
        end = time.monotonic() + STARTUP_LIMIT_S
        while time.monotonic() < end:
            if self.process.poll() is not None:
                raise self.did_not_start("it exited before it answered its health check")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{admin}/health", timeout=2):  # noqa: S310
                    pass
                socket.create_connection(("127.0.0.1", ingress), timeout=2).close()  # the ingress listens too
                return
            except OSError:
                time.sleep(0.1)
        raise self.did_not_start(f"it did not answer its health check in {STARTUP_LIMIT_S:.0f} s")

