"""The cruel grid: computed per cell, and its counterexamples replay to the same history."""

from __future__ import annotations

from pathlib import Path

from sim.protocol import parse_protocol
from sim.runtime import load_runtime_scenario, run_runtime_scenario
from sim.runtime.cruel import counterexample_toml, cruel_grid
from sim.runtime.faults import BOUNDARIES, CRUEL_FAULTS, FaultEntry, FaultSchedule
from sim.runtime.runner import run_autonomous
from sim.tomlfile import read_toml


def test_keyed_fingerprint_reconcile_passes_every_cell():
    """The seed's recommended design keeps one authoritative outcome in all 80 cells."""
    grid = cruel_grid(parse_protocol("keyed-fingerprint-reconcile", "runtime"))
    assert len(grid.cells) == 4 * len(BOUNDARIES) * len(CRUEL_FAULTS)
    assert grid.violations == []


def test_unkeyed_retry_duplicates_after_dispatch_and_commit():
    """Unkeyed retry duplicates exactly where a request may have committed unseen."""
    grid = cruel_grid(parse_protocol("unkeyed-retry", "runtime"))
    boundaries = {c.boundary for c in grid.violations}
    assert boundaries == {"after_dispatch", "after_commit"}
    assert all("duplicate_effect" in c.invariants for c in grid.violations)


def test_keyed_without_reconcile_records_unknown_as_failed():
    """Keys stop duplicates, but a timeout recorded as failed is still the process error."""
    grid = cruel_grid(parse_protocol("keyed", "runtime"))
    assert grid.violations
    assert {i for c in grid.violations for i in c.invariants} == {"unknown_as_failed"}


def test_grid_json_shape():
    """to_json is {transition: {boundary: {fault: 'ok' | [invariant, ...]}}}."""
    document = cruel_grid(parse_protocol("unkeyed-retry", "runtime")).to_json()
    assert list(document) == ["create_branch", "open_pr", "create_preview", "publish_release"]
    cell = document["open_pr"]["after_commit"]["terminate"]
    assert cell[0] == "duplicate_effect"
    assert document["open_pr"]["before_intent"]["terminate"] == "ok"


def test_counterexamples_replay_to_the_same_history(tmp_path):
    """Each exported cell, replayed as a script, gives the autonomous run's history and violations."""
    protocol = parse_protocol("unkeyed-retry", "runtime")
    grid = cruel_grid(protocol)
    for cell in grid.violations:
        path = tmp_path / "cx.toml"
        path.write_text(counterexample_toml(protocol, grid.workflow, cell, "deadbeef"), encoding="utf-8")
        data, text = read_toml(path)
        assert data["format"] == 1 and data["invariant"] == cell.invariants[0] and data["commit"] == "deadbeef"
        replayed = run_runtime_scenario(load_runtime_scenario(path, data, text), protocol)
        original, _ = run_autonomous(protocol, grid.workflow, ["task_42"], FaultSchedule(
            [FaultEntry("task_42", cell.transition, cell.boundary, cell.fault)]))
        assert replayed.history.to_jsonl() == original.history.to_jsonl()
        assert sorted({v.invariant for v in replayed.violations}) == sorted(cell.invariants)
        assert replayed.expectation_met is True


def test_counterexample_under_a_safe_protocol_is_clean(tmp_path):
    """The same script replayed under keyed-fingerprint-reconcile violates nothing."""
    protocol = parse_protocol("unkeyed-retry", "runtime")
    grid = cruel_grid(protocol)
    cell = next(c for c in grid.violations if c.boundary == "after_commit" and c.fault == "terminate")
    path = tmp_path / "cx.toml"
    path.write_text(counterexample_toml(protocol, grid.workflow, cell), encoding="utf-8")
    data, text = read_toml(path)
    result = run_runtime_scenario(load_runtime_scenario(Path(path), data, text),
                                  parse_protocol("keyed-fingerprint-reconcile", "runtime"))
    assert result.violations == []
