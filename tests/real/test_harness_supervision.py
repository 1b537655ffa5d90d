"""The harness's supervision of its own processes, with stand-ins for them (no runtime needed): a process of
its infrastructure that ended is told in one wording, however the harness learnt it."""

from __future__ import annotations

import signal
import subprocess
import sys
import types

import pytest

from sim.real.runtimes import infrastructure
from sim.real.runtimes.processes import ExternalProcess, HarnessError, ServerProcess, _free_ports


def killed_process() -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], stdout=subprocess.PIPE)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    process.stdout.close()
    return process


class FakeServer(ServerProcess):
    title = "a stand-in server"

    def __init__(self, process):
        self.process = process


def harness_error(call) -> str:
    with pytest.raises(HarnessError) as raised:
        call()
    return str(raised.value)


def test_a_dead_process_of_the_harness_is_told_in_one_wording_however_it_is_noticed():
    """Its output ended, its exit polled, or a call to it failed: the same words, with its exit status (the
    end of its output used to say "(its process ended)", the poll "; its process exited with status -9")."""
    external = ExternalProcess.__new__(ExternalProcess)
    external.process, external.port = killed_process(), _free_ports(1)[0]
    run = types.SimpleNamespace(external=external, runtime_server=None)
    said = "the external system stopped answering (its process exited with status -9)"
    assert harness_error(lambda: infrastructure.check(run)) == said
    assert harness_error(lambda: infrastructure.ended(run, "external", None)) == said
    called = harness_error(lambda: external.call("POST", "/_control/workers"))
    assert called == ("the external system stopped answering (its process exited with status -9; "
                      "POST /_control/workers: ConnectionRefusedError)")

    external.process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    server = FakeServer(killed_process())
    run = types.SimpleNamespace(external=external, runtime_server=server)
    try:
        said = "the runtime's server (a stand-in server) stopped answering (its process exited with status -9)"
        assert harness_error(lambda: infrastructure.check(run)) == said
        assert harness_error(lambda: infrastructure.ended(run, "runtime-server", None)) == said
    finally:
        external.process.kill()
        external.process.wait(timeout=10)
