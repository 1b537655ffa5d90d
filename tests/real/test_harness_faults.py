"""The real harness's own failures are never the runtime's: the external system killed mid-cell, Temporal's
dev server killed, a worker killed outside the fault plan, a log line on a worker's protocol channel -- each
is a run that *could not be judged* (exit 7 when no run disagrees), the other cells' results are kept and
written, and no traceback.  And a cell whose fault was never played, or never struck, is *not played*: it
never agrees."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from sim.real.runtimes.processes import runtime_unavailable
from sim.real.runtimes.restate_server import restate_unavailable

needs_dbos = pytest.mark.skipif(runtime_unavailable("dbos") is not None, reason=str(runtime_unavailable("dbos")))
needs_temporal = pytest.mark.skipif(runtime_unavailable("temporal") is not None,
                                    reason=str(runtime_unavailable("temporal")))
needs_restate = pytest.mark.skipif(restate_unavailable() is not None, reason=str(restate_unavailable()))

#: Run before the command: in run number KILL_IN_RUN, once the worker reports open_pr's intent, SIGKILL the
#: process KILL_WHAT names (the external system, Temporal's dev server, or the worker itself) -- a real kill of
#: a real process, outside the fault plan.
KILL_PRELUDE = textwrap.dedent("""
    import os, signal
    from sim.real.runtimes import cell_run
    RUNS = [0]
    _init, _on_event = cell_run.CellRun.__init__, cell_run.CellRun.on_event
    def __init__(self, *a, **k):
        _init(self, *a, **k)
        RUNS[0] += 1
        self.doomed = RUNS[0] == int(os.environ["KILL_IN_RUN"])
    def on_event(self, source, record):
        _on_event(self, source, record)
        if self.doomed and record.get("event") == "intent_recorded" and record.get("transition") == "open_pr":
            what = os.environ["KILL_WHAT"]
            process = {"external": lambda: self.external.process, "server": lambda: self.runtime_server.process,
                       "worker": lambda: self.workers[source].process}[what]()
            os.kill(process.pid, signal.SIGKILL)
            self.doomed = False
    cell_run.CellRun.__init__, cell_run.CellRun.on_event = __init__, on_event
""")

CELLS = ("terminate create_preview after_commit", "terminate publish_release after_commit",
         "lose_response publish_release after_commit")


def conform_with_a_kill(cli, tmp_path, runtime: str, what: str, run: int, cells=CELLS, timeout=600):
    args = ["conform", "--runtime", runtime, "-p", "unkeyed-retry", "--out", tmp_path / "out", "--json"]
    for cell in cells:
        args += ["--cell", cell]
    return cli(*args, prelude=KILL_PRELUDE, env_extra={"KILL_IN_RUN": str(run), "KILL_WHAT": what},
               timeout=timeout)


def statuses(document) -> dict[str, str]:
    return {c["cell"]: c["status"] for c in document["cells"]}


def assert_one_unjudged(done, unjudged: str, says: str, runs: int = 3) -> dict:
    assert done.returncode == 7, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    document = json.loads(done.stdout)
    found = statuses(document)
    assert len(found) == runs and found.pop(unjudged) == "could_not_judge"
    assert set(found.values()) == {"agrees"}, document["cells"]  # every other cell judged, kept and written
    (cell,) = document["could_not_judge"]
    assert cell["could_not_judge"].startswith("could not judge: ") and says in cell["could_not_judge"]
    assert cell["agrees"] is False and document["disagreements"] == []
    assert document["by_protocol"]["unkeyed-retry"]["could_not_judge"] == 1
    assert "COULD NOT JUDGE" in done.stderr and "not all runs judged" in done.stderr
    return document


@needs_dbos
@pytest.mark.real
def test_the_external_system_killed_mid_cell_is_could_not_judge_on_dbos(cli, tmp_path):
    """Killed while the second cell runs: that cell could not be judged (never DISAGREE with the dead system's
    lost_success), the first and third are judged and written, exit 7."""
    done = conform_with_a_kill(cli, tmp_path, "dbos", "external", run=2)
    document = assert_one_unjudged(done, "terminate publish_release after_commit", "the external system stopped")
    assert "DISAGREE" not in done.stderr and not document["exported"]


@pytest.mark.real
def test_the_external_system_killed_mid_cell_is_could_not_judge_with_a_worker_command(cli, tmp_path):
    """The same on a worker of one's own (docs/examples/cmd_worker.py): needs no runtime installed."""
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "cmd_worker.py"
    done = conform_with_a_kill(cli, tmp_path, f"{sys.executable} {example}", "external", run=2)
    assert_one_unjudged(done, "terminate publish_release after_commit", "the external system stopped")
    assert "DISAGREE" not in done.stderr


@needs_dbos
@pytest.mark.real
def test_a_worker_killed_outside_the_plan_is_could_not_judge(cli, tmp_path):
    """Exit status -9 that the plan did not deal is no hang and no silent pass; the planned kills of the other
    cells (by the harness, by the external system's hook) are still accepted."""
    done = conform_with_a_kill(cli, tmp_path, "dbos", "worker", run=1)
    document = assert_one_unjudged(done, "terminate create_preview after_commit", "killed outside the fault plan")
    assert "-9" in document["could_not_judge"][0]["could_not_judge"]
    assert "hung" not in done.stderr


@needs_temporal
@pytest.mark.real
@pytest.mark.slow  # Temporal: a dev server and a 5 s lease per kill, about a minute
def test_temporals_server_killed_mid_cell_is_could_not_judge(cli, tmp_path):
    done = conform_with_a_kill(cli, tmp_path, "temporal", "server", run=1, cells=CELLS[1:])
    assert_one_unjudged(done, "terminate publish_release after_commit", "Temporal's dev server) stopped answering",
                        runs=2)
    assert "unknown kind" not in done.stderr


@needs_restate
@pytest.mark.real
def test_restates_server_killed_mid_cell_is_could_not_judge_at_once(cli, tmp_path):
    """Restate's server writes to a log, not a pipe, and its worker waits on it in silence: its exit is watched,
    so the cell is not judged at once (it took the harness's 30 s wait for a record to notice)."""
    done = conform_with_a_kill(cli, tmp_path, "restate", "server", run=1, cells=CELLS[1:])
    document = assert_one_unjudged(done, "terminate publish_release after_commit",
                                   "the runtime's server (the Restate server) stopped answering (its process exited "
                                   "with status -9)", runs=2)
    assert document["could_not_judge"][0]["seconds"] < 10


@needs_dbos
@pytest.mark.real
def test_a_log_line_on_the_protocol_channel_is_could_not_judge(cli, tmp_path):
    """A worker whose runtime prints to stdout breaks the protocol channel: not a disagreement."""
    from sim.real.runtimes.processes import dbos_command

    noisy = tmp_path / "noisy_worker.py"
    noisy.write_text("import os, sys\nprint('12:00:01 INFO poller started', flush=True)\n"
                     f"os.execv(sys.executable, {dbos_command()!r})\n", encoding="utf-8")
    done = cli("conform", "--runtime", f"{sys.executable} {noisy}", "-p", "unkeyed-retry", "--cell", CELLS[1],
               "--out", tmp_path / "out", "--json", timeout=300)
    assert done.returncode == 7, done.stderr
    (cell,) = json.loads(done.stdout)["cells"]
    assert cell["status"] == "could_not_judge" and "protocol channel" in cell["could_not_judge"]
    assert "poller started" in cell["could_not_judge"] and "Traceback" not in done.stderr


def test_a_runtimes_output_to_descriptor_1_goes_to_stderr_not_the_channel(tmp_path):
    """``protocol_stdout``: print() and a native write to file descriptor 1 both land in the worker's log."""
    from pathlib import Path

    import sim.real.runtimes.worker_kit as kit

    code = (f"import os, sys; sys.path.insert(0, {str(Path(kit.__file__).parent.parent)!r})\n"
            "import worker_kit as kit\nchannel = kit.protocol_stdout()\n"
            "print('a library log'); os.write(1, b'native core log\\n')\n"
            "kit.Channel(out=channel).tell({'kind': 'note', 'note': 'only this'})\n")
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ['{"kind":"note","note":"only this"}']
    assert "a library log" in done.stderr and "native core log" in done.stderr


# -- not played is never agreement ---------------------------------------------------------------------


def _saga():
    from sim.registry import FAMILIES

    family = FAMILIES.get("effects")
    return family, FAMILIES.load_workload("effects-saga")


def test_a_retry_changed_cell_is_not_played_never_agreeing():
    """The model never fires retry_changed on the saga and the harness cannot express it: nothing is played
    (no real run at all), so the cell is not played -- not agreeing, not applicable, not a disagreement."""
    from sim.real.runtimes.compare import ConformTable, compare_cell

    family, target = _saga()
    cell = next(c for c in family.single_faults(target) if c.labels[2] == "retry_changed")
    found = compare_cell(family, target, family.parse_protocol("unkeyed-retry"), cell)
    assert (found.status, found.agrees, found.disagrees, found.applicable) == ("not_played", False, False, True)
    assert "no fault was played" in found.not_played
    table = ConformTable("dbos", [found])
    row = table.by_protocol()["unkeyed-retry"]
    assert (row["agreeing"], row["not_played"], row["disagreeing"]) == (0, 1, 0)
    assert found.to_json()["agrees"] is False and found.to_json()["status"] == "not_played"


def test_a_fault_list_that_never_struck_is_not_played(monkeypatch):
    """In --seeds mode a list whose faults never struck on the runtime was a healthy run: not played.  Had
    the sides differed, it would still be a disagreement."""
    from sim.real.runtimes import compare, harness

    family, target = _saga()
    protocol = family.parse_protocol("unkeyed-retry")
    events = tuple(family.generate(target, 3))
    assert events
    healthy = family.replay(target.base, protocol, []).history

    def unstruck(*args, **kwargs):
        return harness.RealEffectsRun(healthy, 0.1, 0, 0, ["w1"], "dbos", None, {}, struck=0)

    monkeypatch.setattr(harness, "run_real_effects", unstruck)
    monkeypatch.setattr(family, "replay", lambda *a, **k: type("R", (), {"history": healthy, "skipped": ()})())
    found = compare.compare_order(family, target, protocol, events, tuple(map(str, events)), seed=3)
    assert (found.status, found.agrees) == ("not_played", False)
    assert "never reached" in found.not_played

    struck_once = compare.compare_order  # the same list, one fault struck: judged, and it agrees
    monkeypatch.setattr(harness, "run_real_effects",
                        lambda *a, **k: harness.RealEffectsRun(healthy, 0.1, 0, 0, ["w1"], "dbos", None, {}, struck=1))
    assert struck_once(family, target, protocol, events, tuple(map(str, events)), seed=3).status == "agrees"


def test_an_unjudged_run_keeps_its_kills(monkeypatch):
    """`real kills` counts the kills of a failed or unjudged run too: they happened."""
    from sim.real.runtimes import compare, harness

    family, target = _saga()
    cell = next(c for c in family.single_faults(target) if c.labels == ("open_pr", "after_commit", "terminate"))

    def dies(*args, **kwargs):
        error = harness.HarnessError("the external system stopped answering")
        error.kills, error.freezes = 2, 1
        raise error

    monkeypatch.setattr(harness, "run_real_effects", dies)
    found = compare.compare_cell(family, target, family.parse_protocol("unkeyed-retry"), cell)
    assert found.status == "could_not_judge" and found.differences() == []
    row = compare.ConformTable("dbos", [found]).by_protocol()["unkeyed-retry"]
    assert (row["kills"], row["freezes"], row["could_not_judge"], row["disagreeing"]) == (2, 1, 1, 0)
