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
from sim.real.runtimes.restate_server import restate_unavailable


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


class SleepingServer(ServerProcess):
    """A runtime's server that says nothing on a pipe (as Restate's, which writes to a log): a sleeping process."""

    title = "a stand-in server"

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_watched_servers_exit_is_news_at_once_and_its_stop_is_none():
    import time

    from sim.real.runtimes.processes import WATCH_S, Inbox

    inbox, server = Inbox(), SleepingServer()
    server.watch(inbox)
    started = time.monotonic()
    server.process.send_signal(signal.SIGKILL)
    assert inbox.get(5.0) == ("runtime-server", None)
    assert time.monotonic() - started < 1.0 and WATCH_S <= 0.25
    inbox, server = Inbox(), SleepingServer()
    watcher = server.watch(inbox)
    server.stop()  # the harness's own stop is no news
    watcher.join(timeout=5.0)
    assert not watcher.is_alive() and inbox.items.empty()


#: Run before the command: the run gets a server that writes nothing on a pipe; once the worker reports
#: open_pr's intent, the harness holds the worker (no record comes any more, as from a worker waiting on a dead
#: server) and the server is SIGKILLed.
DEAD_SILENT_SERVER = """
import os, signal, subprocess, sys
from sim.real.runtimes import cell_run, processes

class SilentServer(processes.ServerProcess):
    title = "a silent stand-in server"
    def __init__(self, root):
        self.root, self.process, self.address = root, None, "127.0.0.1:9"
    def start(self):
        with open(self.root / "silent.log", "ab") as log:
            self.process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], stdout=log,
                                            stderr=log, start_new_session=True)

cell_run.runtime_server = lambda runtime, root, *rest: SilentServer(root)
_on_event = cell_run.CellRun.on_event
def on_event(self, source, record):
    _on_event(self, source, record)
    if record.get("event") == "intent_recorded" and record.get("transition") == "open_pr" \\
            and not getattr(self, "server_killed", False):
        self.server_killed = True
        self.held.add(source)
        os.kill(self.runtime_server.process.pid, signal.SIGKILL)
cell_run.CellRun.on_event = on_event
"""


@pytest.mark.real
def test_a_silent_servers_death_is_could_not_judge_at_once(cli, tmp_path):
    """The server dies while the worker waits on it: the cell could not be judged, with the server's exit, at
    once -- not after the harness's 30 s wait for a record (Restate's death took 32 s to notice)."""
    import json
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "cmd_worker.py"
    done = cli("conform", "--runtime", f"{sys.executable} {example}", "-p", "unkeyed-retry", "--cell",
               "terminate publish_release after_commit", "--out", tmp_path / "out", "--json",
               prelude=DEAD_SILENT_SERVER, timeout=300)
    assert done.returncode == 7, done.stderr
    (cell,) = json.loads(done.stdout)["could_not_judge"]
    assert cell["could_not_judge"] == ("could not judge: the runtime's server (a silent stand-in server) stopped "
                                       "answering (its process exited with status -9)")
    assert cell["seconds"] < 10, cell["seconds"]
    assert "Traceback" not in done.stderr and "hung" not in done.stderr


@pytest.mark.real
@pytest.mark.skipif(restate_unavailable() is not None, reason=str(restate_unavailable()))
def test_a_runtimes_server_that_does_not_start_is_could_not_judge(cli, tmp_path):
    """A server that exits while starting is the harness's failure, not the runtime's: could not judge (exit 7),
    its exit status and where its log is -- never a disagreement (it used to be one: exit 1, exported)."""
    import json

    server = tmp_path / "restate-server"
    server.write_text("#!/bin/sh\necho 'cannot bind' >&2\nexit 3\n", encoding="utf-8")
    server.chmod(0o755)
    done = cli("conform", "--runtime", "restate", "-p", "unkeyed-retry", "--cell",
               "terminate publish_release after_commit", "--out", tmp_path / "out", "--keep-runs", tmp_path / "runs",
               "--json", env_extra={"FENCESIM_RESTATE_SERVER": str(server)}, timeout=300)
    assert done.returncode == 7, done.stderr
    document = json.loads(done.stdout)
    (cell,) = document["could_not_judge"]
    assert cell["could_not_judge"] == (
        "could not judge: the runtime's server (the Restate server) did not start (its process exited with status "
        "3; it exited before it answered its health check; see restate.log in the run's folder, which --keep-runs "
        "keeps)")
    assert "cannot bind" in (tmp_path / "runs" / cell["kept"].rsplit("/", 1)[1] / "restate.log").read_text()
    assert document["disagreements"] == [] and document["exported"] == []
