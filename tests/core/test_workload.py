"""Workload files: strict [faults] and [limits] parsing with errors at file:line (shown on workspace
workloads), and finding a workload by name."""

from __future__ import annotations

import pytest

import sim
from sim.core.errors import ScenarioError
from sim.core.workload import FAULT_KEYS, Workload, resolve_workload
from sim.families.workspace.faults import FAULT_CLASSES

WORKLOAD_HEAD = """\
format = 1
name = "broken"
files = { "app.py" = "v0" }
plan = [ { id = "s1", path = "app.py", patch = "v1" } ]

[faults]
"""


def _write(tmp_path, faults_body: str):
    path = tmp_path / "broken.toml"
    path.write_text(WORKLOAD_HEAD + faults_body)
    return path


def _error_of(path) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        sim.load_workload(str(path))
    return info.value


def test_a_valid_workload_file_loads_with_its_defaults(tmp_path):
    """A workload with only classes gets weight 1 each, per_run_max 4, no swarm and max_events 64."""
    workload = sim.load_workload(str(_write(tmp_path, 'classes = ["human_edit", "preempt"]\n')))
    assert isinstance(workload, Workload) and workload.family == "workspace"
    assert workload.classes == ("human_edit", "preempt") and workload.weights() == [1.0, 1.0]
    assert (workload.per_run_max, workload.swarm, workload.max_events) == (4, False, 64)
    assert workload.base.events == [] and workload.name == "broken"


def test_classes_default_to_every_class_of_the_family(tmp_path):
    """Without a classes list, the workload draws from every fault class of its family."""
    assert sim.load_workload(str(_write(tmp_path, ""))).classes == FAULT_CLASSES


def test_unknown_fault_class_is_refused_with_file_and_line(tmp_path):
    """An unknown fault class raises ScenarioError at the line naming it, listing the family's classes."""
    path = _write(tmp_path, 'classes = ["human_edit", "meteor_strike"]\n')
    error = _error_of(path)
    assert error.where == f"{path}:7"
    assert "meteor_strike" in error.message
    assert all(name in error.message for name in FAULT_CLASSES)


def test_close_misspelling_gets_a_suggestion(tmp_path):
    """A misspelt class name is answered with the closest known one."""
    assert "did you mean 'preempt'" in _error_of(_write(tmp_path, 'classes = ["preemt"]\n')).message


def test_negative_rate_is_refused_with_file_and_line(tmp_path):
    """A negative rate raises ScenarioError at the rates line."""
    path = _write(tmp_path, 'classes = ["human_edit", "preempt"]\nrates = { human_edit = -1.0 }\n')
    error = _error_of(path)
    assert error.where == f"{path}:8"
    assert "human_edit" in error.message


def test_non_numeric_rate_is_refused_with_file_and_line(tmp_path):
    """A rate that is not a number raises ScenarioError at the rates line."""
    path = _write(tmp_path, 'classes = ["human_edit"]\nrates = { human_edit = "often" }\n')
    assert _error_of(path).where == f"{path}:8"


def test_boolean_rate_is_refused(tmp_path):
    """A boolean is not a number, even though Python counts it as one."""
    path = _write(tmp_path, 'classes = ["human_edit"]\nrates = { human_edit = true }\n')
    assert _error_of(path).where == f"{path}:8"


def test_rate_for_an_unlisted_class_is_refused(tmp_path):
    """A rate for a class not in the classes list raises ScenarioError with file:line."""
    path = _write(tmp_path, 'classes = ["human_edit"]\nrates = { preempt = 1.0 }\n')
    assert _error_of(path).where == f"{path}:8"


def test_every_weight_zero_is_refused(tmp_path):
    """At least one listed class needs a positive weight."""
    path = _write(tmp_path, 'classes = ["human_edit"]\nrates = { human_edit = 0.0 }\n')
    assert "positive" in _error_of(path).message


def test_class_listed_twice_is_refused(tmp_path):
    """A fault class listed twice is an error at the classes line."""
    path = _write(tmp_path, 'classes = ["human_edit", "human_edit"]\n')
    error = _error_of(path)
    assert error.where == f"{path}:7" and "twice" in error.message


def test_unknown_faults_key_is_refused_with_file_and_line(tmp_path):
    """An unknown key in [faults] raises ScenarioError naming it, at its line, with the allowed keys."""
    path = _write(tmp_path, 'classes = ["human_edit"]\nfrequency = 3\n')
    error = _error_of(path)
    assert error.where == f"{path}:8"
    assert "frequency" in error.message
    for key in FAULT_KEYS:
        assert key in error.message


def test_unknown_limits_key_is_refused(tmp_path):
    """An unknown key in [limits] is refused with the allowed key and a suggestion."""
    path = _write(tmp_path, 'classes = ["human_edit"]\n\n[limits]\nmax_event = 10\n')
    error = _error_of(path)
    assert error.where == f"{path}:10"
    assert "did you mean 'max_events'" in error.message


@pytest.mark.parametrize("line, fragment", [("swarm = 1", "true or false"),
                                            ("per_run_max = 0", "per_run_max"),
                                            ("per_run_max = 2.5", "whole number"),
                                            ("per_run_max = 1001", "1000")])
def test_swarm_and_per_run_max_are_strict(tmp_path, line, fragment):
    """swarm must be a boolean and per_run_max a whole number from 1 to the limit."""
    assert fragment in _error_of(_write(tmp_path, f'classes = ["human_edit"]\n{line}\n')).message


def test_max_events_out_of_range_is_refused(tmp_path):
    """[limits] max_events must be a whole number from 1 to its limit."""
    path = _write(tmp_path, 'classes = ["human_edit"]\n\n[limits]\nmax_events = 0\n')
    assert "max_events" in _error_of(path).message


def test_workload_error_string_starts_with_file_and_line(tmp_path):
    """The error's text is 'file:line: message', the one line the CLI prints."""
    path = _write(tmp_path, 'classes = ["nope"]\n')
    assert str(_error_of(path)).startswith(f"{path}:7: ")


def test_unknown_workload_name_is_refused():
    """An unknown workload name raises ScenarioError listing the known workloads."""
    with pytest.raises(ScenarioError) as info:
        sim.load_workload("no-such-workload")
    assert "seed-fuzz" in str(info.value) and "effects-saga" in str(info.value)


def test_resolve_workload_takes_a_name_or_a_path(tmp_path, repo_root, monkeypatch):
    """A name resolves to scenarios/workloads/NAME.toml; a .toml path is taken as it is."""
    monkeypatch.chdir(repo_root)
    assert resolve_workload("tiny").resolve() == (repo_root / "scenarios" / "workloads" / "tiny.toml").resolve()
    assert resolve_workload(str(tmp_path / "mine.toml")) == tmp_path / "mine.toml"


def test_named_workloads_load_from_another_directory(tmp_path, monkeypatch):
    """Outside the checkout a workload name still finds the shipped workload files."""
    monkeypatch.chdir(tmp_path)
    assert sim.load_workload("tiny").name == "tiny"
