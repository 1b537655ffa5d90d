"""The Python API: 'import sim' gives the notebook user the same functions as the command line."""

from __future__ import annotations

import sim
from sim.protocol import Protocol


def test_import_sim_exposes_the_api():
    """Every name in sim.__all__ is importable from the package."""
    for name in sim.__all__:
        assert hasattr(sim, name), name


def test_presets_has_the_four_presets():
    """sim.PRESETS maps the four workspace presets to parsed Protocols, in table order."""
    assert list(sim.PRESETS) == ["none", "plan", "step", "step-dedupe"]
    assert all(isinstance(p, Protocol) for p in sim.PRESETS.values())
    assert sim.PRESETS["step-dedupe"].dedupe == "journal"


def test_run_scenario_accepts_a_preset_string(seed_dir):
    """sim.run_scenario takes a preset string and matches the scenario's [expect] for it."""
    result = sim.run_scenario(sim.load_scenario(seed_dir / "concurrent_edit.toml"), "none")
    assert result.outcome == "applied"
    assert [v.invariant for v in result.violations] == ["lost_update"]


def test_run_scenario_accepts_a_protocol(seed_dir):
    """sim.run_scenario takes a Protocol object and gives the same result as its preset string."""
    scenario = sim.load_scenario(seed_dir / "preemption_retry.toml")
    by_object = sim.run_scenario(scenario, sim.PRESETS["step-dedupe"])
    by_string = sim.run_scenario(scenario, "step-dedupe")
    assert by_object.protocol == by_string.protocol
    assert by_object.history.to_jsonl() == by_string.history.to_jsonl()
    assert by_object.expectation_met is True


def test_run_result_to_json_has_contract_keys(seed_dir):
    """A RunResult's JSON form has scenario, protocol, verdicts, violations, history and expect_met."""
    result = sim.run_scenario(sim.load_scenario(seed_dir / "replan_drift.toml"), "plan")
    document = result.to_json()
    assert {"scenario", "protocol", "verdicts", "violations", "history", "expect_met"} <= set(document)
    assert document["protocol"] == "plan" and document["expect_met"] is True


def test_check_history_runs_the_workspace_checks(seed_dir):
    """sim.check_history on a run's history gives the same statuses as the run's own checks."""
    result = sim.run_scenario(sim.load_scenario(seed_dir / "preemption_retry.toml"), "none")
    assert sim.check_history(result.history).status() == result.checks.status()


def test_compute_matrix_from_api(monkeypatch, repo_root):
    """sim.compute_matrix gives the matrix document that matches the seed table."""
    monkeypatch.chdir(repo_root)
    assert sim.compute_matrix()["matches_seed_table"] is True


def test_errors_form_one_tree():
    """ScenarioError and ProtocolError are InputErrors, and every InputError is a FencesimError."""
    assert issubclass(sim.ScenarioError, sim.InputError)
    assert issubclass(sim.ProtocolError, sim.InputError)
    assert issubclass(sim.InputError, sim.FencesimError)
