"""``fencesim conform --runtime``: the cruel grid on a real durable runtime, compared cell by cell with the
model; a planted worker bug is a disagreement exported side by side and replayable; bad input is exit 4."""

from __future__ import annotations

import importlib.util
import json

import pytest

needs_dbos = pytest.mark.skipif(importlib.util.find_spec("dbos") is None,
                                reason="needs the dbos package (pip install -e '.[real]')")


@pytest.mark.parametrize("args, says", [
    (["--runtime", "dbos", "--seeds", "5"], "--seeds does not go with --runtime"),
    (["--runtime", "dbos", "--cells", "fuzz"], "--cells 'fuzz'"),
    (["--runtime", "dbos", "--plant", "nonsense"], "--plant 'nonsense'"),
    (["--runtime", "no-such-program-anywhere --flag"], "neither dbos, temporal, nor a program"),
    (["--cell", "terminate open_pr after_commit"], "--cell and --plant go with --runtime"),
])
def test_bad_runtime_options_are_one_line_and_exit_4(cli, tmp_path, args, says):
    done = cli("conform", *args, "--out", tmp_path / "out")
    assert done.returncode == 4, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


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
    assert "--plant skip_reconcile" in open(side).read()
    replayed = cli("run", scenario, "--json")
    assert replayed.returncode == 0, replayed.stderr  # the model's side keeps every invariant
