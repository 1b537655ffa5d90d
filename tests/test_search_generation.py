"""Fault schedule generation (sim.faults.generate) and workload loading (sim.search.workload)."""

from __future__ import annotations

import dataclasses
import os
import random
import subprocess
import sys
import textwrap

import pytest

from sim.errors import ScenarioError
from sim.faults import generate
from sim.search.workload import FAULT_CLASSES, load_workload


def _strs(schedule):
    return [str(a) for a in schedule.events]


def test_same_seed_gives_same_order():
    """Generating twice with one seed gives the same event order and classes."""
    workload = load_workload("seed-fuzz")
    for seed in range(50):
        first, second = generate(workload, seed), generate(workload, seed)
        assert first == second


def test_order_ignores_module_level_random_state():
    """The order depends only on (workload, seed): reseeding the global random module changes nothing."""
    workload = load_workload("multi-file")
    before = [generate(workload, seed) for seed in range(30)]
    random.seed(12345)
    random.random()
    after = [generate(workload, seed) for seed in range(30)]
    assert before == after


def test_order_is_the_same_in_another_process_and_hash_seed(repo_root):
    """A fresh process with a different PYTHONHASHSEED generates the same orders."""
    workload = load_workload("multi-file")
    here = [_strs(generate(workload, seed)) for seed in range(20)]
    code = textwrap.dedent("""
        import json
        from sim.faults import generate
        from sim.search.workload import load_workload
        w = load_workload("multi-file")
        print(json.dumps([[str(a) for a in generate(w, s).events] for s in range(20)]))
    """)
    env = dict(os.environ, PYTHONHASHSEED="4242")
    out = subprocess.run([sys.executable, "-c", code], cwd=repo_root, env=env, capture_output=True, text=True,
                         timeout=60, check=True)
    import json

    assert json.loads(out.stdout) == here


def test_different_seeds_give_different_orders():
    """Seeds are not ignored: many seeds give many distinct orders."""
    workload = load_workload("seed-fuzz")
    orders = {tuple(_strs(generate(workload, seed))) for seed in range(100)}
    assert len(orders) > 50


def test_non_swarm_mode_turns_on_every_listed_class():
    """Without swarm mode every seed uses exactly the workload's classes."""
    workload = load_workload("seed-fuzz")
    assert not workload.swarm
    for seed in range(30):
        assert generate(workload, seed).classes == workload.classes


def test_swarm_mode_draws_non_empty_subsets_of_the_classes():
    """In swarm mode each seed draws a non-empty subset of the classes, and the subsets vary."""
    workload = load_workload("multi-file")
    assert workload.swarm
    drawn = [generate(workload, seed).classes for seed in range(200)]
    for classes in drawn:
        assert classes and set(classes) <= set(workload.classes)
    assert len(set(drawn)) > 10
    assert any(set(c) < set(workload.classes) for c in drawn)


def test_swarm_mode_inserts_only_drawn_classes():
    """A swarm seed whose subset excludes human_edit never inserts a human_edit."""
    workload = load_workload("multi-file")
    checked = 0
    for seed in range(200):
        schedule = generate(workload, seed)
        if "human_edit" not in schedule.classes:
            assert all(a.kind != "human_edit" for a in schedule.events)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("name", ["seed-fuzz", "multi-file", "tiny"])
def test_orders_never_exceed_max_events(name):
    """No generated order is longer than the workload's max_events, even with a tight limit."""
    workload = load_workload(name)
    for limit in (workload.max_events, 6, len(workload.base.plan) * 3 + 2):
        tight = dataclasses.replace(workload, max_events=limit, per_run_max=20)
        for seed in range(200):
            assert len(generate(tight, seed).events) <= limit


def test_generated_order_starts_from_the_fault_free_order():
    """Every step's dispatch, and the plan, appear in every generated order."""
    workload = load_workload("seed-fuzz")
    for seed in range(50):
        kinds = _strs(generate(workload, seed))
        assert "plan" in kinds
        for step in workload.base.step_ids():
            assert f"dispatch {step}" in kinds


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
        load_workload(str(path))
    return info.value


def test_unknown_fault_class_is_refused_with_file_and_line(tmp_path):
    """An unknown fault class raises ScenarioError at the line naming it."""
    path = _write(tmp_path, 'classes = ["human_edit", "meteor_strike"]\n')
    error = _error_of(path)
    assert error.where == f"{path}:7"
    assert "meteor_strike" in error.message
    assert all(name in error.message for name in FAULT_CLASSES)


def test_negative_rate_is_refused_with_file_and_line(tmp_path):
    """A negative rate raises ScenarioError at the rates line."""
    path = _write(tmp_path, 'classes = ["human_edit", "preempt"]\nrates = { human_edit = -1.0 }\n')
    error = _error_of(path)
    assert error.where == f"{path}:8"
    assert "human_edit" in error.message


def test_non_numeric_rate_is_refused_with_file_and_line(tmp_path):
    """A rate that is not a number raises ScenarioError at the rates line."""
    path = _write(tmp_path, 'classes = ["human_edit"]\nrates = { human_edit = "often" }\n')
    error = _error_of(path)
    assert error.where == f"{path}:8"


def test_rate_for_an_unlisted_class_is_refused(tmp_path):
    """A rate for a class not in the classes list raises ScenarioError with file:line."""
    path = _write(tmp_path, 'classes = ["human_edit"]\nrates = { preempt = 1.0 }\n')
    error = _error_of(path)
    assert error.where == f"{path}:8"


def test_unknown_faults_key_is_refused_with_file_and_line(tmp_path):
    """An unknown key in [faults] raises ScenarioError naming it, at its line, with the allowed keys."""
    path = _write(tmp_path, 'classes = ["human_edit"]\nfrequency = 3\n')
    error = _error_of(path)
    assert error.where == f"{path}:8"
    assert "frequency" in error.message
    for key in ("classes", "rates", "per_run_max", "swarm"):
        assert key in error.message


def test_workload_error_string_starts_with_file_and_line(tmp_path):
    """The error's text is 'file:line: message', the one line the CLI prints."""
    path = _write(tmp_path, 'classes = ["nope"]\n')
    assert str(_error_of(path)).startswith(f"{path}:7: ")


def test_unknown_workload_name_is_refused():
    """An unknown workload name raises ScenarioError listing the known workloads."""
    with pytest.raises(ScenarioError) as info:
        load_workload("no-such-workload")
    assert "seed-fuzz" in str(info.value)
