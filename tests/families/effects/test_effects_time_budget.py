"""A run that reaches its simulated time budget with a task still waiting is not finished (availability), never a
safety finding: two approvals of two days each outlast the three-day budget of a workflow that is otherwise safe."""

from __future__ import annotations

import pytest

import sim
from sim.families.effects.driver import LIVENESS_BUDGET_S, SLOW_APPROVAL_S
from sim.registry import FAMILIES
from sim.search.exhaustive import ExploreOptions, explore

SLOW_APPROVALS = '''format = 1
family = "effects"
name = "slow-approvals"
description = "A release pipeline whose two irreversible steps each wait for a human's approval."
task = "task_1"
workflow = [
  { name = "open_pr", class = "keyed_creation", object = "pull_request", compensation = "close_pr" },
  { name = "merge_pr", class = "irreversible", object = "merge", keys = true },
  { name = "publish_package", class = "irreversible", object = "package", keys = true },
]

[faults]
classes = ["slow_approval"]
per_run_max = 2

[limits]
max_events = 2
'''


@pytest.fixture
def workload(tmp_path):
    path = tmp_path / "slow-approvals.toml"
    path.write_text(SLOW_APPROVALS)
    return FAMILIES.load_workload(str(path))


def test_two_slow_approvals_outlast_the_budget():
    """The premise: two slow approvals take longer than the run's simulated time budget."""
    assert 2 * SLOW_APPROVAL_S > LIVENESS_BUDGET_S > SLOW_APPROVAL_S


def test_slow_approvals_alone_are_not_a_safety_finding(workload):
    """A sweep counts the runs whose approvals outlast the budget as not finished, with no safety violation,
    no counterexample and so no advice."""
    result = sim.fuzz(workload, ["governed-saga"], seeds=50, workers=1)
    tally = result.summary.tallies["governed-saga"]
    assert tally.violating_runs == 0 and not result.counterexamples
    assert tally.counted["not_finished"] > 0 and tally.counted["human_exceptions"] == 0


def test_the_exhaustive_search_finds_no_violation_in_two_slow_approvals(workload):
    """The exhaustive search judges states by their completion: two slow approvals end at the time budget, so no
    safety invariant is violated within the bound."""
    family = FAMILIES.family_for(workload)
    result = explore(family, workload, family.parse_protocol("governed-saga"), ExploreOptions(max_events=2))
    assert result.complete and not result.violated
    assert "no_terminal_outcome" in result.proved_absent


def test_the_replayed_order_counts_not_finished(workload):
    """The order of both slow approvals ends at the time budget with the task waiting on its second approval."""
    family = FAMILIES.family_for(workload)
    order = [family.parse_event(workload.base, text) for text in (
        "slow_approval merge_pr before_intent", "slow_approval publish_package before_intent")]
    replay = family.replay(workload.base, family.parse_protocol("governed-saga"), order)
    assert replay.end.reason == "time_limit"
    report = family.check(replay.history)
    assert report.safety_violations == []
    assert [(v.invariant, v.step) for v in report.availability_findings] == [("not_finished", "publish_package")]
