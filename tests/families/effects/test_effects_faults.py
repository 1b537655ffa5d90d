"""Effects faults as data (faults.py): fault events and their text, the seeded generator, the alphabet,
the schedule the driver reads, and the exposure draws."""

from __future__ import annotations

import dataclasses
import functools
import os
import random
import subprocess
import sys

import pytest

import sim
from sim.families.effects import FAMILY
from sim.families.effects.faults import (
    BOUNDARIES,
    CRUEL_FAULTS,
    FAULT_CLASSES,
    FAULT_POINTS,
    POINTS,
    ExposureRates,
    FaultEntry,
    FaultEvent,
    FaultSchedule,
    alphabet,
    applies,
    exposure_schedule,
    generate,
    parse_fault,
    schedule_for,
    task_rng,
)
from sim.families.effects.workflow import SAGA_TRANSITIONS, saga


@functools.cache
def _workload(name="effects-saga"):
    return sim.load_workload(name)


def _generate(workload, seed):
    return generate(workload.base.workflow, workload.classes, workload.rates, workload.per_run_max, workload.swarm,
                    workload.max_events, seed)


def test_fault_event_prints_as_fault_transition_point():
    """A fault event's text is 'FAULT TRANSITION POINT', and parse_fault reads it back."""
    event = FaultEvent("terminate", "open_pr", "after_dispatch")
    assert str(event) == "terminate open_pr after_dispatch"
    assert parse_fault(str(event), saga()) == event


@pytest.mark.parametrize("text, fragment", [("terminate open_pr", "FAULT TRANSITION POINT"),
                                            ("explode open_pr after_commit", "unknown fault"),
                                            ("terminate open_prr after_commit", "unknown transition"),
                                            ("lose_response open_pr after_dispatch", "strikes at after_commit"),
                                            (7, "must be a string")])
def test_parse_fault_says_what_is_allowed(text, fragment):
    """A bad fault raises ValueError naming what is allowed."""
    with pytest.raises(ValueError, match=fragment):
        parse_fault(text, saga())


def test_cruel_faults_strike_at_every_boundary():
    """The four cruel faults may strike at each of the five boundaries between a transition's moments."""
    assert CRUEL_FAULTS == ("terminate", "duplicate", "delay_ack", "change_owner")
    assert BOUNDARIES == ("before_intent", "after_intent", "after_dispatch", "after_commit", "after_receipt")
    assert all(FAULT_POINTS[f] == BOUNDARIES for f in CRUEL_FAULTS)
    assert set(POINTS) == set(BOUNDARIES) | {"reconcile", "compensate"}
    assert FAMILY.fault_classes == FAULT_CLASSES and "zombie" in FAULT_CLASSES


def test_applies_limits_approval_and_compensation_faults():
    """slow_approval applies only to irreversible steps, compensation_fails only to compensable ones."""
    release, branch = SAGA_TRANSITIONS[3], SAGA_TRANSITIONS[0]
    assert applies("slow_approval", release) and not applies("slow_approval", branch)
    assert applies("compensation_fails", branch) and not applies("compensation_fails", release)


def test_alphabet_places_every_class_on_every_transition_it_applies_to():
    """The alphabet lists, per transition, each class at each of its points, in a fixed order."""
    cruel = alphabet(saga(), CRUEL_FAULTS)
    assert len(cruel) == 4 * 4 * 5
    assert [str(e) for e in cruel[:2]] == ["terminate create_branch before_intent",
                                           "terminate create_branch after_intent"]
    assert alphabet(saga(), ["slow_approval"]) == [FaultEvent("slow_approval", "publish_release", "before_intent")]
    assert FAMILY.alphabet(_workload("effects-pr")) == alphabet(_workload("effects-pr").base.workflow,
                                                                _workload("effects-pr").classes)


def test_same_seed_gives_the_same_faults():
    """The generator is a pure function of (workload, seed)."""
    workload = _workload()
    for seed in range(50):
        assert _generate(workload, seed) == _generate(workload, seed) == FAMILY.generate(workload, seed)


def test_generator_ignores_module_level_random_state():
    """Reseeding the global random module changes no order."""
    workload = _workload()
    before = [_generate(workload, seed) for seed in range(30)]
    random.seed(99)
    assert [_generate(workload, seed) for seed in range(30)] == before


def test_generated_orders_vary_respect_limits_and_are_sorted_by_point():
    """Seeds give varied orders of 1..per_run_max faults, sorted by transition then point."""
    workload = _workload()
    transitions = [t.name for t in workload.base.workflow.transitions]
    orders = [_generate(workload, seed) for seed in range(200)]
    assert len({tuple(map(str, o)) for o in orders}) > 100
    for order in orders:
        assert 1 <= len(order) <= min(workload.per_run_max, workload.max_events)
        keys = [(transitions.index(e.transition), POINTS.index(e.point)) for e in order]
        assert keys == sorted(keys)
        assert all(e.point in FAULT_POINTS[e.fault] for e in order)
    tight = dataclasses.replace(workload, max_events=1, per_run_max=10)
    assert all(len(_generate(tight, seed)) <= 1 for seed in range(50))


def test_generator_is_the_same_in_another_process(repo_root):
    """A fresh process with another hash seed generates the same fault lists."""
    code = ("import sim\nw = sim.load_workload('effects-saga')\nf = sim.family('effects')\n"
            "print([[str(e) for e in f.generate(w, s)] for s in range(20)])")
    out = subprocess.run([sys.executable, "-c", code], cwd=repo_root, capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONHASHSEED="777"), timeout=60)
    assert out.stdout.strip() == str([[str(e) for e in FAMILY.generate(_workload(), s)] for s in range(20)])


def test_schedule_hands_out_each_entry_once_in_list_order():
    """take_all returns a point's entries once; take finds one fault class at a point and uses it up."""
    schedule = FaultSchedule([FaultEntry("t", "open_pr", "after_commit", "lose_response", 0),
                              FaultEntry("t", "open_pr", "after_commit", "duplicate", 1),
                              FaultEntry("t", "open_pr", "reconcile", "unprovable", 2)])
    assert len(schedule) == 3
    assert [e.fault for e in schedule.take_all("t", "open_pr", "after_commit")] == ["lose_response", "duplicate"]
    assert schedule.take_all("t", "open_pr", "after_commit") == []
    assert schedule.take("t", "open_pr", "reconcile", "terminate") is None
    assert schedule.take("t", "open_pr", "reconcile", "unprovable").token == 2
    assert schedule.take("t", "open_pr", "reconcile", "unprovable") is None


def test_schedule_refuses_unknown_points_and_faults():
    """An entry with an unknown point or fault is a ValueError."""
    with pytest.raises(ValueError):
        FaultSchedule([FaultEntry("t", "open_pr", "sometime", "terminate")])
    with pytest.raises(ValueError):
        FaultSchedule([FaultEntry("t", "open_pr", "after_commit", "explode")])


def test_schedule_for_tokens_are_positions_in_the_order():
    """schedule_for makes one entry per fault of the order, its token the fault's position."""
    events = [FaultEvent("terminate", "open_pr", "after_dispatch"), FaultEvent("unprovable", "open_pr", "reconcile")]
    schedule = schedule_for("task_42", events)
    assert [(e.task, e.fault, e.token) for e in schedule.entries] == [("task_42", "terminate", 0),
                                                                     ("task_42", "unprovable", 1)]


def test_exposure_draws_are_a_pure_function_of_seed_task_and_rates():
    """Same (seed, task, rates) -> same schedule; another seed -> (generally) another."""
    names = [f"t{i}" for i in range(1, 8)]
    high = ExposureRates(ambiguous_rate=0.5)
    a = exposure_schedule("x", names, high, task_rng(20))
    b = exposure_schedule("x", names, high, task_rng(20))
    c = exposure_schedule("x", names, high, task_rng(21))
    assert a == b and a != c


def test_task_rng_follows_the_sweep_seed_convention():
    """Task i of a simulation with seed m draws from random.Random(m + i), like run i of a sweep."""
    assert task_rng(7).random() == random.Random(7).random()


def test_exposure_draws_strike_first_requests_only_with_known_faults():
    """Exposure entries use terminate, lose_request, lose_response and unprovable at their points only."""
    names = [f"t{i}" for i in range(1, 8)]
    high = ExposureRates(ambiguous_rate=0.5)
    entries = [e for i in range(200) for e in exposure_schedule(f"task_{i}", names, high, task_rng(i))]
    allowed = {("terminate", "after_dispatch"), ("lose_request", "after_dispatch"), ("lose_response", "after_commit"),
               ("unprovable", "reconcile")}
    assert entries and {(e.fault, e.point) for e in entries} <= allowed
    assert exposure_schedule("x", names, ExposureRates(ambiguous_rate=0.0), task_rng(0)) == []
