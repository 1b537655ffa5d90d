"""The effects family through the family contract (family.py): identity, workloads, the state key,
measures, timeline cells and counterexamples."""

from __future__ import annotations

import functools

import pytest

import sim
from sim.core.errors import ScenarioError
from sim.core.history import Event
from sim.families.effects import FAMILY
from sim.families.effects.faults import FaultEvent

TERMINATE = FaultEvent("terminate", "open_pr", "after_commit")
UNUSED = FaultEvent("retry_changed", "open_pr", "after_dispatch")


@functools.cache
def _workload(name="effects-pr"):
    return sim.load_workload(name)


def _run(label, *faults):
    return FAMILY.replay(_workload().base, FAMILY.parse_protocol(label), faults)


def test_identity():
    """The family is 'effects' (alias 'runtime', its former name), defaults to keyed-fingerprint-reconcile, cells
    are 3-labelled."""
    assert (FAMILY.name, FAMILY.aliases, FAMILY.default_protocol) == ("effects", ("runtime",),
                                                                       "keyed-fingerprint-reconcile")
    assert FAMILY.presets == ("unkeyed-retry", "keyed", "keyed-reconcile", "keyed-fingerprint-reconcile")
    assert FAMILY.grid_labels == ("transition", "boundary", "fault")
    assert {"w1", "w2", "git", "human", "log"} <= set(FAMILY.lanes)


def test_workload_base_is_a_fault_list_without_faults():
    """An effects workload's base is its task and workflow with an empty fault list."""
    workload = _workload("effects-saga")
    assert workload.family == "effects" and workload.base.faults == [] and workload.swarm
    assert workload.base.arguments["open_pr"]["head"] == "7ac1e05"
    assert (_workload().per_run_max, _workload().max_events) == (3, 6)


@pytest.mark.parametrize("line, fragment", [('events = ["accept task_1"]', "lists no events or faults"),
                                            ('faults = ["terminate open_pr after_commit"]', "lists no faults")])
def test_workload_with_events_or_faults_is_refused(tmp_path, line, fragment):
    """A workload lists no events or fault list: its [faults] table says which classes to draw."""
    path = tmp_path / "w.toml"
    path.write_text(f'family = "effects"\nworkflow = ["open_pr"]\n{line}\n', encoding="utf-8")
    with pytest.raises(ScenarioError, match=fragment) as caught:
        sim.load_workload(str(path))
    assert caught.value.where == f"{path}:3"


def test_state_key_is_the_faults_fired_and_those_waiting():
    """The state key lists the faults that fired in firing order and those that had no effect, so two
    orders of the same faults that fire alike are merged (their runs agree)."""
    replay = _run("keyed-reconcile", TERMINATE, UNUSED)
    assert FAMILY.state_key(replay) == (("terminate open_pr after_commit",),
                                        ("retry_changed open_pr after_dispatch",))
    swapped = _run("keyed-reconcile", UNUSED, TERMINATE)
    assert FAMILY.state_key(swapped) == FAMILY.state_key(replay)
    assert swapped.history.to_jsonl() == replay.history.to_jsonl()
    assert FAMILY.state_key(_run("keyed-reconcile", TERMINATE)) != FAMILY.state_key(replay)


def test_verdicts_and_outcome_follow_the_transitions():
    """Verdicts name the transition; the outcome is the last transition's verdict."""
    replay = _run("keyed-reconcile", TERMINATE)
    verdicts = FAMILY.verdicts(replay)
    assert [(v["step"], v["verdict"]) for v in verdicts] == [("open_pr", "unknown"), ("open_pr", "done:reconciled"),
                                                             ("publish_release", "done")]
    assert FAMILY.outcome(replay) == "done"


def test_measure_counts_tasks_completed_and_escalated():
    """measure counts tasks accepted, completed, ended otherwise and escalated to a human."""
    measured = FAMILY.measure(_run("keyed-reconcile", TERMINATE))
    assert {k: v for k, v in measured.items() if not k.startswith("fired_")} == {
        "tasks": 1, "tasks_completed": 1, "tasks_compensated_or_failed": 0, "tasks_escalated": 0}
    failed = FAMILY.measure(_run("keyed-reconcile", FaultEvent("postcondition_fails", "open_pr", "after_receipt")))
    assert failed["tasks_completed"] == 0 and failed["tasks_compensated_or_failed"] == 1


def test_the_mechanisms_that_acted_are_measured_from_the_history():
    """fired_<knob> comes from the knob table's predicates: a timeout left unknown fires on_timeout, a
    reconciliation fires reconcile; a protocol whose reconciliation never ran says why."""
    delayed = FAMILY.measure(_run("keyed-reconcile", FaultEvent("delay_ack", "open_pr", "after_dispatch")))
    assert delayed["fired_on_timeout"] == 1 and delayed["fired_reconcile"] == 1
    quiet = FAMILY.measure(_run("keyed,reconcile=on", TERMINATE))
    lines = [item["line"] for item in FAMILY.never_fired(None, "keyed,reconcile=on", quiet)]
    assert lines == ["reconcile=on never fired: on_timeout=failed leaves no outcome unknown to reconcile"]


def test_describe_and_faults_in_a_timeline():
    """Timeline cells name the transition and effect; crashes and lease expiries are marked as faults."""
    expired = Event(0, 0, "lease", "lease_expired", {"worker": "w1", "successor": "w2", "zombie": True})
    assert FAMILY.describe(expired) == "lease_expired w1 -> w2 (zombie)"
    committed = Event(1, 1, "git", "committed", {"transition": "open_pr", "effect": "pull_request#1"})
    assert FAMILY.describe(committed) == "committed open_pr pull_request#1"
    assert FAMILY.is_fault(expired) and FAMILY.is_fault(Event(2, 2, "w1", "crashed", {}))
    assert not FAMILY.is_fault(committed)
    assert FAMILY.is_fault(Event(3, 3, "verifier", "transition_failed", {"reason": "postcondition_failed"}))
    assert not FAMILY.is_fault(Event(3, 3, "w1", "transition_failed", {"reason": "other"}))


def test_counterexample_is_a_fault_list_with_the_meta():
    """A counterexample keeps the workload's task and workflow, lists the faults and carries the meta."""
    scenario = FAMILY.counterexample(_workload(), FAMILY.parse_protocol("unkeyed-retry"), "duplicate_effect",
                                     [TERMINATE], {"name": "cx", "description": "why", "seed": 3,
                                                   "invariant": "duplicate_effect"})
    assert (scenario.name, scenario.description, scenario.protocol) == ("cx", "why", "unkeyed-retry")
    assert scenario.faults == [TERMINATE] and scenario.meta == {"seed": 3, "invariant": "duplicate_effect"}
    assert scenario.task == _workload().base.task and _workload().base.faults == []


def test_single_faults_are_the_workloads_classes_at_boundaries():
    """The family's grid places each of the workload's classes at each boundary it may strike."""
    labels = [cell.labels for cell in FAMILY.single_faults(_workload())]
    assert ("open_pr", "after_dispatch", "zombie") in labels
    assert ("publish_release", "before_intent", "slow_approval") in labels
    assert not any(label[2] == "slow_approval" and label[0] == "open_pr" for label in labels)
    assert not any(label[1] in ("reconcile", "compensate") for label in labels)
