"""``fencesim conform --runtime``: the cruel grid on a real durable runtime, compared cell by cell with the
model; a planted worker bug is a disagreement exported side by side and replayable; bad input is exit 4."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.real.runtimes.processes import runtime_unavailable

needs_dbos = pytest.mark.skipif(runtime_unavailable("dbos") is not None, reason=str(runtime_unavailable("dbos")))


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("args, says", [
    (["--runtime", "dbos", "--seeds", "5", "--cells", "cruel"], "--seeds does not go with --cells"),
    (["--runtime", "dbos", "--seeds", "5", "--cell", "terminate open_pr after_commit"],
     "--seeds does not go with --cell"),
    (["--runtime", "dbos", "--seeds", "0"], "'--seeds': 0 is out of range: from 1"),
    (["--runtime", "dbos", "--seeds", "1001"], "--seeds must be from 1 to 1000"),
    (["--runtime", "dbos", "--seeds", "2", "--seed-start", "-1"], "'--seed-start': -1 is out of range: from 0"),
    (["--runtime", "dbos", "--seeds", "2", "--shrink-seconds", "0"], "'--shrink-seconds': 0 is out of range: more"),
    (["--runtime", "dbos", "--scenario", "scenarios/runtime/pr_lost_response.toml", "--seeds", "2"],
     "--scenario does not go with --seeds"),
    (["--runtime", "dbos", "--executor", "python3"], "--executor does not go with --runtime"),
    (["--runtime", "dbos", "--cells", "fuzz"], "--cells 'fuzz'"),
    (["--runtime", "dbos", "--plant", "nonsense"], "--plant 'nonsense'"),
    (["--runtime", "no-such-program-anywhere --flag"], "neither dbos, temporal, restate, nor a program"),
    (["--cell", "terminate open_pr after_commit"], "--cell, --cells, --plant and --keep-runs go with --runtime"),
    (["--cells", "cruel"], "--cell, --cells, --plant and --keep-runs go with --runtime"),
])
def test_bad_runtime_options_are_one_line_and_exit_4(cli, tmp_path, args, says):
    done = cli("conform", *args, "--out", tmp_path / "out")
    assert done.returncode == 4, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # over 3 s: outside the fast lane
@needs_dbos
def test_a_workspace_workload_or_an_unknown_cell_is_refused(cli, tmp_path):
    done = cli("conform", "--runtime", "dbos", "--workload", "tiny", "--out", tmp_path / "a")
    assert done.returncode == 4 and "is a workspace workload" in done.stderr
    done = cli("conform", "--runtime", "dbos", "--cell", "terminate nowhere after_commit", "--out", tmp_path / "b")
    assert done.returncode == 4 and "is not a cell of effects-saga's cruel grid" in done.stderr


@needs_dbos
@pytest.mark.real
def test_cells_agree_and_a_planted_bug_is_a_disagreement_exported_and_replayable(cli, tmp_path):
    """unkeyed-retry duplicates at committed-no-receipt in both; skip_reconcile planted in the worker
    duplicates the release where the model does not; the export replays the model's side."""
    cell = "terminate publish_release after_commit"
    done = cli("conform", "--runtime", "dbos", "-p", "unkeyed-retry", "--cell", cell, "--out", tmp_path / "ok",
               "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["by_protocol"]["unkeyed-retry"]["agreeing"] == 1
    (only,) = document["cells"]
    assert only["real"]["duplicates"] == only["model"]["duplicates"] == {"publish_release": 1}
    assert only["kills"] == 1
    out = tmp_path / "planted"
    done = cli("conform", "--runtime", "dbos", "-p", "keyed-fingerprint-reconcile", "--cell", cell,
               "--plant", "skip_reconcile", "--out", out, "--json", timeout=300)
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    (found,) = document["disagreements"]
    assert found["model"]["duplicates"] == {} and found["real"]["duplicates"] == {"publish_release": 1}
    assert "duplicate_effect" in found["real"]["violations"]
    scenario = next(p for p in document["exported"] if p.endswith(".toml"))
    side = next(p for p in document["exported"] if p.endswith(".side-by-side.txt"))
    assert "--plant skip_reconcile" in Path(side).read_text()
    replayed = cli("run", scenario, "--json")
    assert replayed.returncode == 0, replayed.stderr  # the model's side keeps every invariant


@needs_dbos
@needs_dbos
@pytest.mark.real
def test_a_person_resolves_a_held_keyless_announcement_after_it_settles(cli, tmp_path):
    """A held post_slack request under the reconciling protocol: the person looks once the held request has
    committed (as the model's person, an hour later) and finds it -- one announcement on both sides.  The
    person used to look at once, answer not_found and make the worker post it again."""
    done = cli("conform", "--runtime", "dbos", "--workload", "agent-pr-workflow", "-p",
               "keyed-fingerprint-reconcile,irreversible_keys=on", "--cell", "delay_ack post_slack after_dispatch",
               "--out", tmp_path / "o", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    (only,) = json.loads(done.stdout)["cells"]
    assert only["real"]["duplicates"] == only["model"]["duplicates"] == {}
    assert only["real"]["effects"]["post_slack"] == 1


@pytest.mark.real
def test_seeds_are_the_fuzzers_fault_lists_and_not_applicable_ones_are_listed_not_agreed(cli, tmp_path):
    """--seeds 2 --seed-start 26: seed 26 draws two faults (both struck on DBOS, the run agrees); seed 27 draws a
    slow approval, which the harness cannot express: not applicable, with the reason, never counted as agreeing."""
    from sim.registry import FAMILIES

    done = cli("conform", "--runtime", "dbos", "-p", "unkeyed-retry", "--seeds", "2", "--seed-start", "26",
               "--out", tmp_path / "out", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    row = document["by_protocol"]["unkeyed-retry"]
    assert (document["unit"], row["seeds"], row["applicable"], row["agreeing"], row["not_applicable"]) == \
        ("seeds", 2, 1, 1, 1)
    workload = FAMILIES.load_workload("effects-saga")
    family = FAMILIES.family_for(workload)
    ran, skipped = document["cells"]
    assert ran["faults"] == [str(e) for e in family.generate(workload, 26)] and len(ran["faults"]) == 2
    assert ran["agrees"] and ran["struck"] == 2
    assert skipped["seed"] == 27 and "slow_approval" in skipped["not_applicable"] and "agrees" not in skipped
    assert "not applicable under unkeyed-retry (1 seeds): slow_approval" in done.stderr


@needs_dbos
@pytest.mark.real
def test_a_planted_bug_is_found_by_seeds_shrunk_and_replayed_from_the_export(cli, tmp_path):
    """receipt_before_call planted: seed 26's two-fault list disagrees (a false receipt the model never has);
    every fault is irrelevant to it, so it shrinks to the empty list; the exported scenario replays both
    sides: the model's with fencesim run (no violation), the real one with conform --scenario."""
    out = tmp_path / "planted"
    done = cli("conform", "--runtime", "dbos", "-p", "keyed-fingerprint-reconcile", "--seeds", "1",
               "--seed-start", "26", "--plant", "receipt_before_call", "--out", out, "--json", timeout=400)
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    (found,) = document["disagreements"]
    assert found["seed"] == 26 and len(found["faults"]) == 2 and found["shrunk_to"] == []
    (shrunk,) = document["shrunk"]
    assert any("false_receipt" in d for d in shrunk["differences"])
    scenario = next(p for p in document["exported"] if p.endswith(".toml"))
    side = Path(next(p for p in document["exported"] if p.endswith(".side-by-side.txt"))).read_text()
    assert f"--scenario {scenario} --plant receipt_before_call" in side and "--seed-start 26" in side
    assert cli("run", scenario, "--json").returncode == 0  # the model's side keeps every invariant


@needs_dbos
@pytest.mark.real
@pytest.mark.real_full  # one more real run of what the test above covers; the replay from the export is its own
def test_an_exported_seed_disagreement_replays_on_the_real_runtime(cli, tmp_path):
    """conform --runtime dbos --scenario EXPORTED.toml plays the shrunk list again: the same disagreement."""
    out = tmp_path / "planted"
    done = cli("conform", "--runtime", "dbos", "-p", "keyed-fingerprint-reconcile", "--seeds", "1",
               "--seed-start", "26", "--plant", "receipt_before_call", "--out", out, "--json", timeout=400)
    assert done.returncode == 1, done.stderr
    scenario = next(p for p in json.loads(done.stdout)["exported"] if p.endswith(".toml"))
    again = cli("conform", "--runtime", "dbos", "--scenario", scenario, "--plant", "receipt_before_call",
                "--out", tmp_path / "again", "--json", timeout=300)
    assert again.returncode == 1, again.stderr
    (replayed,) = json.loads(again.stdout)["disagreements"]
    assert "false_receipt" in replayed["real"]["violations"] and replayed["model"]["violations"] == []


def test_a_failed_real_run_is_shown_side_by_side_without_a_real_observation():
    """A real run that failed or hung has no observation: its side-by-side text says why instead of crashing
    the export (which would lose the whole table)."""
    from sim.cli.conform_runtime_report import side_by_side
    from sim.real.runtimes.compare import CellComparison

    model = {"effects": {"open_pr": 1}, "duplicates": {}, "receipts": {"open_pr": 1}, "compensations": [],
             "outcome": ["succeeded"], "violations": []}
    cell = CellComparison("unkeyed-retry", ("open_pr", "after_commit", "terminate"), model=model,
                          failed="the run took longer than its limit (300 s)")
    text = side_by_side(cell, "fencesim conform ...")
    assert "the real run failed: the run took longer than its limit (300 s)" in text
    assert "!=effects" in text and "  open_pr" not in text


@pytest.mark.real
def test_the_table_lists_violating_not_applicable_and_not_played_cells_each_by_name(cli, tmp_path):
    """Which cells violate (each side's invariants), which are not applicable (per cell, under its reason) and
    which were not played, without --json; a retry_changed cell is never counted as agreeing."""
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "cmd_worker.py"
    done = cli("conform", "--runtime", f"{sys.executable} {example}", "-p", "unkeyed-retry",
               "--cell", "terminate publish_release after_commit", "--cell", "upgrade open_pr after_intent",
               "--cell", "retry_changed open_pr after_dispatch", "--out", tmp_path / "out", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    header, row = out.splitlines()[1:3]
    assert "not played" in header and "could not judge" in header and "violating (model / real)" in header
    assert row.split()[:6] == ["unkeyed-retry", "3", "1", "0", "1", "1"]  # cells, agree, disagree, not played, n/a
    assert "violating under unkeyed-retry (1 cells):" in out
    assert "terminate publish_release after_commit (model: duplicate_effect, lost_success, unknown_as_failed;" in out
    assert "not applicable under unkeyed-retry (1 cells): upgrade" in out
    assert "    upgrade open_pr after_intent" in out
    assert "not played under unkeyed-retry, retry_changed open_pr after_dispatch: no fault was played" in out
    assert "every judged run agrees (1)" in out


@pytest.mark.real
def test_keep_runs_keeps_each_runs_folder_and_says_where(cli, tmp_path):
    """--keep-runs DIR: the run's folder (the external system's database and request log, every process's log)
    is kept in a folder of its own, named by protocol and cell; the output and the JSON say where."""
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "cmd_worker.py"
    keep = tmp_path / "runs"
    done = cli("conform", "--runtime", f"{sys.executable} {example}", "-p", "unkeyed-retry", "--cell",
               "terminate publish_release after_commit", "--out", tmp_path / "out", "--keep-runs", keep, "--json",
               timeout=300)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    (cell,) = document["cells"]
    folder = keep / "unkeyed_retry__terminate_publish_release_after_commit"
    assert cell["kept"] == str(folder) and document["kept"] == str(keep)
    assert (folder / "external" / "external.sqlite").is_file()
    assert (folder / "process-1.log").is_file() and (folder / "clock.sqlite").is_file()
    assert f"run folder kept: {folder}" in done.stderr


@pytest.mark.slow  # subprocesses
def test_keep_runs_wants_a_new_or_empty_folder(cli, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("x")
    (tmp_path / "a-file").write_text("x")
    for given, says in (("full", "is not empty: give a new or empty folder"), ("a-file", "not a folder")):
        done = cli("conform", "--runtime", "dbos", "--cell", "terminate open_pr after_commit", "--keep-runs",
                   tmp_path / given, "--out", tmp_path / "out")
        assert done.returncode == 4, done.stderr
        assert says in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert (tmp_path / "full" / "mine.txt").read_text() == "x"


@pytest.mark.real
def test_json_keeps_stdout_pure_and_says_its_progress_on_stderr(cli, tmp_path):
    """--json: stdout is one JSON document; stderr says which cell of how many runs, and the time elapsed."""
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "cmd_worker.py"
    done = cli("conform", "--runtime", f"{sys.executable} {example}", "-p", "unkeyed-retry", "--cell",
               "terminate publish_release after_commit", "--cell", "terminate open_pr after_commit",
               "--out", tmp_path / "out", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["cells"]) == 2
    assert "conform: cell 1 of 2 (unkeyed-retry: terminate open_pr after_commit), " in done.stderr
    assert "conform: cell 2 of 2 (unkeyed-retry: terminate publish_release after_commit), " in done.stderr
    assert " s elapsed" in done.stderr
