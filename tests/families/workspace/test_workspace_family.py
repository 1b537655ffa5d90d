"""The workspace family through the family contract (family.py): identity, workloads, measures,
timeline cells, counterexamples and the single-fault grid's cells."""

from __future__ import annotations

import functools

import pytest

import sim
from sim.core.history import Event
from sim.families.workspace import FAMILY
from sim.families.workspace.checks import CHECKS
from sim.families.workspace.faults import base_order


@functools.cache
def _workload(name):
    return sim.load_workload(name)


def test_identity_and_checks():
    """The family is called 'workspace', has no alias, defaults to step-dedupe and runs the workspace checks."""
    assert (FAMILY.name, FAMILY.aliases, FAMILY.default_protocol) == ("workspace", (), "step-dedupe")
    assert FAMILY.checks == CHECKS
    assert FAMILY.presets == ("none", "plan", "step", "step-dedupe")
    assert set(FAMILY.lanes) == {"planner", "router", "client", "network", "executor", "human"}


def test_workload_base_is_a_scenario_without_events():
    """A workspace workload's base is its scenario with no events, named after the workload."""
    workload = _workload("seed-fuzz")
    assert workload.family == "workspace" and workload.base.events == []
    assert workload.base.step_ids() == ["s1", "s2", "s3"] and workload.name == "seed-fuzz"


def test_measure_counts_verdicts_and_applied_steps():
    """measure counts each verdict kind and the steps planned and applied."""
    order = [str(a) for a in base_order(_workload("tiny"))]
    replay = FAMILY.replay(_workload("tiny").base, FAMILY.parse_protocol("step"), _parse(order))
    measured = FAMILY.measure(replay)
    assert measured["verdict_applied"] == 2 and measured["verdict_rejected_stale_rev"] == 0
    assert (measured["steps_planned"], measured["steps_applied"]) == (2, 2)


def _parse(texts):
    from sim.families.workspace.scenario import parse_action

    base = _workload("tiny").base
    return [parse_action(t, base.files, base.step_ids()) for t in texts]


@pytest.mark.parametrize(("fields", "shown"), [
    ({"event": "deliver", "step": "s1", "verdict": "applied"}, "deliver s1 -> applied"),
    ({"event": "human_edit", "path": "app.py", "hunk": "tests"}, "human_edit app.py#tests"),
    ({"event": "preempt", "point": "after_write"}, "preempt after_write"),
    ({"event": "preempt"}, "preempt now"),
    ({"event": "replan", "stale": True}, "replan stale"),
    ({"event": "ack", "step": "s2", "verdict": "applied"}, "ack s2"),
])
def test_describe_writes_a_timeline_cell(fields, shown):
    """A history event becomes a short timeline cell naming its step, target and verdict."""
    name = fields.pop("event")
    assert FAMILY.describe(Event(0, 0, "x", name, fields)) == shown


def test_faults_are_the_interference_events():
    """Human edits, preemptions, lost acks, retries, duplicates and re-plans are marked as faults."""
    assert all(FAMILY.is_fault(Event(0, 0, "x", n, {})) for n in
               ("human_edit", "preempt", "lose_ack", "retry", "duplicate", "replan"))
    assert not any(FAMILY.is_fault(Event(0, 0, "x", n, {})) for n in ("plan", "dispatch", "deliver", "ack"))


def test_counterexample_keeps_the_workload_and_carries_the_meta():
    """A counterexample scenario holds the workload's files and plan, the order, the protocol and the meta."""
    workload = _workload("seed-fuzz")
    events = _parse(["plan", "dispatch s1", "human_edit app.py", "deliver s1"])
    scenario = FAMILY.counterexample(workload, FAMILY.parse_protocol("none"), "lost_update", events,
                                     {"name": "cx", "description": "why", "invariant": "lost_update", "seed": 4})
    assert (scenario.name, scenario.description, scenario.protocol) == ("cx", "why", "none")
    assert scenario.meta == {"invariant": "lost_update", "seed": 4} and scenario.expect == {}
    assert scenario.files == workload.base.files and scenario.events == events
    assert workload.base.events == []


def test_single_faults_insert_each_fault_once_after_each_base_event():
    """The grid's cells insert one alphabet event that is not in the base order after each base event."""
    workload = _workload("tiny")
    base = [str(a) for a in base_order(workload)]
    faults = [str(a) for a in FAMILY.alphabet(workload) if str(a) not in base]
    cells = FAMILY.single_faults(workload)
    assert len(cells) == len(faults) * len(base)
    first = cells[0]
    assert first.labels == (faults[0], "after plan")
    assert [str(e) for e in first.events] == ["plan", faults[0]] + base[1:]


def test_grid_labels_name_every_label_of_a_cell():
    """The family names as many grid labels as each single-fault cell carries."""
    cells = FAMILY.single_faults(_workload("tiny"))
    assert len(FAMILY.grid_labels) == len(cells[0].labels)
