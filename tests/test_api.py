"""The Python API (sim/__init__.py): 'import sim' gives the notebook user the same functions as the
command line, for both families."""

from __future__ import annotations

import pytest

import sim
from sim.core.knobs import Protocol


def test_import_sim_exposes_the_api():
    """Every name in sim.__all__ is importable from the package."""
    assert sim.__all__
    for name in sim.__all__:
        assert hasattr(sim, name), name


def test_unknown_attribute_is_an_attribute_error():
    """A name the package does not have raises AttributeError (not a lookup of something else)."""
    with pytest.raises(AttributeError):
        sim.no_such_name  # noqa: B018


def test_presets_has_the_four_presets():
    """sim.PRESETS maps the four workspace presets to parsed Protocols, in table order."""
    assert list(sim.PRESETS) == ["none", "plan", "step", "step-dedupe"]
    assert all(isinstance(p, Protocol) for p in sim.PRESETS.values())
    assert sim.PRESETS["step-dedupe"].knobs["dedupe"] == "journal"


def test_family_and_families_name_both_families():
    """sim.family finds a family by name or alias; sim.FAMILIES is the program's registry."""
    assert sim.family("workspace").name == "workspace"
    assert sim.family("effects") is sim.family("runtime")  # the former name is an alias
    assert sim.FAMILIES.names() == ["workspace", "effects"]


def test_parse_protocol_takes_a_family_name():
    """sim.parse_protocol parses a workspace protocol by default and another family's when named."""
    assert sim.parse_protocol("step-dedupe").family == "workspace"
    effects = sim.parse_protocol("keyed,lease_fence=off", "effects")
    assert (effects.family, effects.knobs["idempotency"], effects.knobs["lease_fence"]) == ("effects", "key", "off")
    with pytest.raises(sim.ProtocolError):
        sim.parse_protocol("keyed")


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


def test_run_scenario_accepts_a_path_of_either_family(seed_dir, stories_dir):
    """sim.run_scenario loads a path itself, whichever family the file names."""
    assert sim.run_scenario(seed_dir / "replan_drift.toml", "plan").expectation_met is True
    story = sim.run_scenario(stories_dir / "pr_lost_response.toml", "keyed-reconcile")
    assert (story.family, story.outcome, story.expectation_met) == ("effects", "done:reconciled", True)


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


def test_check_history_infers_the_runtime_family(stories_dir):
    """sim.check_history on a runtime history runs the runtime checks without being told the family."""
    result = sim.run_scenario(stories_dir / "pr_lost_response.toml", "unkeyed-retry")
    report = sim.check_history(result.history)
    assert report.status() == result.checks.status()
    assert "lost_success" in report.status()
    assert sim.check_history(result.history, "effects").status() == report.status()


def test_load_workload_of_either_family():
    """sim.load_workload finds workloads of both families by name."""
    assert sim.load_workload("seed-fuzz").family == "workspace"
    assert sim.load_workload("effects-saga").family == "effects"


def test_sweep_frame_takes_a_workload_name_or_object():
    """sim.sweep_frame accepts a workload name or a loaded workload and gives the same rows."""
    by_name = sim.sweep_frame("tiny", ["none"], seeds=5, workers=1)
    by_object = sim.sweep_frame(sim.load_workload("tiny"), ["none"], seeds=5, workers=1)
    assert by_name.equals(by_object) and len(by_name) == 5


def test_fuzz_returns_shrunk_counterexamples_without_writing_files(tmp_path, monkeypatch):
    """sim.fuzz sweeps, shrinks and (optionally) advises, and writes nothing."""
    monkeypatch.chdir(tmp_path)
    result = sim.fuzz("tiny", ["none"], seeds=30, workers=1, advise=False)
    assert {c.invariant for c in result.counterexamples} >= {"lost_update"}
    assert all(c.advice is None for c in result.counterexamples)
    assert list(tmp_path.iterdir()) == []


def test_compute_matrix_from_api(monkeypatch, repo_root):
    """sim.compute_matrix gives the matrix document that matches the seed table."""
    monkeypatch.chdir(repo_root)
    assert sim.compute_matrix()["matches_seed_table"] is True


def test_errors_form_one_tree():
    """ScenarioError, ProtocolError and HistoryError are InputErrors, and every InputError is a FencesimError."""
    assert issubclass(sim.ScenarioError, sim.InputError)
    assert issubclass(sim.ProtocolError, sim.InputError)
    assert issubclass(sim.HistoryError, sim.InputError)
    assert issubclass(sim.InputError, sim.FencesimError)


def test_input_error_text_is_where_then_message():
    """An InputError reads 'where: message' when it knows where, else just the message."""
    assert str(sim.ScenarioError("bad", "f.toml:3")) == "f.toml:3: bad"
    assert str(sim.InputError("bad")) == "bad"


@pytest.mark.real
@pytest.mark.skipif(__import__("shutil").which("git") is None, reason="needs git")
def test_conform_frame_is_one_row_per_run_and_agrees():
    """sim.conform_frame runs the model and the reference executor; every row agrees."""
    import sim

    frame = sim.conform_frame("tiny", ["none", "step-dedupe"], seeds=6)
    assert len(frame) == 12 and set(frame["protocol"]) == {"none", "step-dedupe"}
    assert frame["agree"].all() and (frame["deliveries"] == frame["deliveries_agreeing"]).all()


def test_exposure_frame_is_a_long_frame_of_the_worked_example_or_a_users_workflow():
    """sim.exposure_frame: one row per (preset, metric), of generic:7 or of a workload's own workflow."""
    worked = sim.exposure_frame(protocols=["unkeyed-retry"], seeds=100)
    assert list(worked.columns) == ["preset", "metric", "value", "ci_low", "ci_high"]
    assert set(worked.preset) == {"unkeyed-retry"} and "duplicate_effects" in set(worked.metric)
    own = sim.exposure_frame("agent-pr-workflow", ["keyed-fingerprint-reconcile"], tasks=40_000, seeds=100)
    requests = own[own.metric == "requests"].value.iloc[0]
    assert requests == 40_000 * 5  # five side-effecting transitions per task of that workflow
    with pytest.raises(sim.InputError):
        sim.exposure_frame("tiny")
