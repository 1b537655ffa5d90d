"""Workspace fault orders (faults.py): generate(workload, seed) is a pure function of its inputs; the
fault-free base order; the alphabet exhaustive search walks."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import random
import subprocess
import sys
import textwrap

import pytest

import sim
from sim.families.workspace import FAMILY
from sim.families.workspace.faults import (
    FAULT_CLASSES,
    _draw_classes,
    alphabet,
    base_order,
    generate,
)
from sim.families.workspace.scenario import Action


@functools.cache
def _workload(name):
    return sim.load_workload(name)


def _strs(order):
    return [str(a) for a in order]


def test_generate_returns_a_tuple_of_actions():
    """An order is a tuple of parsed workspace Actions (no schedule object around it)."""
    order = generate(_workload("seed-fuzz"), 3)
    assert isinstance(order, tuple) and all(isinstance(a, Action) for a in order)
    assert FAMILY.generate(_workload("seed-fuzz"), 3) == order


def test_same_seed_gives_same_order():
    """Generating twice with one seed gives the same event order."""
    workload = _workload("seed-fuzz")
    for seed in range(50):
        assert generate(workload, seed) == generate(workload, seed)


def test_order_ignores_module_level_random_state():
    """The order depends only on (workload, seed): reseeding the global random module changes nothing."""
    workload = _workload("multi-file")
    before = [generate(workload, seed) for seed in range(30)]
    random.seed(12345)
    random.random()
    after = [generate(workload, seed) for seed in range(30)]
    assert before == after


def test_order_is_the_same_in_another_process_and_hash_seed(repo_root):
    """A fresh process with a different PYTHONHASHSEED generates the same orders."""
    workload = _workload("multi-file")
    here = [_strs(generate(workload, seed)) for seed in range(20)]
    code = textwrap.dedent("""
        import json
        import sim
        from sim.families.workspace.faults import generate
        w = sim.load_workload("multi-file")
        print(json.dumps([[str(a) for a in generate(w, s)] for s in range(20)]))
    """)
    env = dict(os.environ, PYTHONHASHSEED="4242")
    out = subprocess.run([sys.executable, "-c", code], cwd=repo_root, env=env, capture_output=True, text=True,
                         timeout=60, check=True)
    assert json.loads(out.stdout) == here


def test_different_seeds_give_different_orders():
    """Seeds are not ignored: many seeds give many distinct orders."""
    workload = _workload("seed-fuzz")
    orders = {tuple(_strs(generate(workload, seed))) for seed in range(100)}
    assert len(orders) > 50


def test_non_swarm_mode_turns_on_every_listed_class():
    """Without swarm mode every seed draws from exactly the workload's classes, with its rates."""
    workload = _workload("seed-fuzz")
    assert not workload.swarm
    for seed in range(30):
        assert _draw_classes(workload, random.Random(seed)) == (workload.classes, workload.weights())


def test_swarm_mode_draws_non_empty_subsets_of_the_classes():
    """In swarm mode each seed draws a non-empty subset of the classes, and the subsets vary."""
    workload = _workload("multi-file")
    assert workload.swarm
    drawn = [_draw_classes(workload, random.Random(seed))[0] for seed in range(200)]
    for classes in drawn:
        assert classes and set(classes) <= set(workload.classes)
    assert len(set(drawn)) > 10
    assert any(set(c) < set(workload.classes) for c in drawn)


def test_swarm_mode_inserts_only_drawn_classes():
    """A swarm seed whose drawn classes exclude human_edit never inserts a human_edit."""
    workload = _workload("multi-file")
    checked = 0
    for seed in range(200):
        classes, _ = _draw_classes(workload, random.Random(seed))
        if "human_edit" not in classes:
            assert all(a.kind != "human_edit" for a in generate(workload, seed))
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("name", ["seed-fuzz", "multi-file", "tiny"])
def test_orders_never_exceed_max_events(name):
    """No generated order is longer than the workload's max_events, even with a tight limit."""
    workload = _workload(name)
    for limit in (workload.max_events, 6, len(workload.base.plan) * 3 + 2):
        tight = dataclasses.replace(workload, max_events=limit, per_run_max=20)
        for seed in range(200):
            assert len(generate(tight, seed)) <= limit


def test_generated_order_starts_from_the_fault_free_order():
    """Every step's dispatch, and the plan, appear in every generated order."""
    workload = _workload("seed-fuzz")
    for seed in range(50):
        kinds = _strs(generate(workload, seed))
        assert "plan" in kinds
        for step in workload.base.step_ids():
            assert f"dispatch {step}" in kinds


def test_base_order_is_plan_then_dispatch_deliver_ack_per_step():
    """The fault-free order is plan, then dispatch, deliver, ack for each step in plan order."""
    assert _strs(base_order(_workload("tiny"))) == [
        "plan", "dispatch s1", "deliver s1", "ack s1", "dispatch s2", "deliver s2", "ack s2"]


def test_alphabet_lists_every_event_of_the_classes_in_a_fixed_order():
    """The tiny workload's alphabet: the base events, each step's faults, then human edits, preempts and replans."""
    assert _strs(alphabet(_workload("tiny"))) == [
        "plan", "dispatch s1", "deliver s1", "ack s1", "lose_ack s1", "retry s1", "duplicate s1",
        "dispatch s2", "deliver s2", "ack s2", "lose_ack s2", "retry s2", "duplicate s2", "human_edit app.py",
        "preempt", "preempt before_write", "preempt after_write", "preempt after_journal", "replan", "replan stale"]


def test_alphabet_follows_the_workloads_classes():
    """Only the listed classes contribute events: seed-fuzz has no replan stale; hunked files add hunk edits."""
    seed_fuzz = _strs(alphabet(_workload("seed-fuzz")))
    assert "replan" in seed_fuzz and "replan stale" not in seed_fuzz
    multi = _strs(alphabet(_workload("multi-file")))
    assert {"human_edit app.py", "human_edit app.py#handler", "human_edit app.py#tests"} <= set(multi)


def test_alphabet_for_the_first_steps_only():
    """alphabet(workload, steps) keeps only the first steps' events, and the family's alphabets grow by step."""
    workload = _workload("tiny")
    first = _strs(alphabet(workload, 1))
    assert "dispatch s1" in first and "dispatch s2" not in first and "human_edit app.py" in first
    assert [len(a) for a in FAMILY.alphabets(workload)] == [len(first), len(alphabet(workload))]


def test_fault_classes_are_the_workspace_vocabulary():
    """The workspace fault classes are the seed's interference classes plus lose_ack, a stale re-plan and the
    verifier's test failure."""
    assert FAULT_CLASSES == ("human_edit", "preempt", "lose_ack", "retry", "duplicate", "replan", "replan_stale",
                             "tests_fail")
    assert FAMILY.fault_classes == FAULT_CLASSES
