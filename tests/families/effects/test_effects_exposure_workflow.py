"""Exposure of a user's workflow (exposure.py with ``workflow=``, ``fencesim exposure --workload``, the
review's sections): per-transition duplicates, fixed counts without intervals, intervals of task counts
bounded by the tasks, and "verified" that excludes a task with a safety violation."""

from __future__ import annotations

import contextlib
import io
import json
import random

import pytest

from sim.cli.app import main
from sim.core.errors import InputError
from sim.families.effects import FAMILY, exposure
from sim.families.effects.faults import ExposureRates, exposure_schedule
from sim.registry import FAMILIES

TASKS = 40_000


@pytest.fixture(scope="module")
def agent():
    return FAMILIES.load_workload("agent-pr-workflow").base


@pytest.fixture(scope="module")
def keyed(agent):
    return exposure.simulated_json(exposure.simulate(["keyed"], seeds=300, tasks=TASKS, workflow=agent.workflow,
                                                     arguments=agent.arguments))["keyed"]


def test_duplicates_sit_at_the_keyless_announcement_and_not_at_the_keyed_merge(keyed):
    """Under keyed (a timeout is a failure, retried blindly): post_slack is announced twice, with an interval;
    the merge is keyed by its pull request, so never."""
    slack = keyed["by_transition"]["post_slack"]["duplicate_effects"]
    assert slack["value"] > 0 and slack["ci_low"] < slack["value"] < slack["ci_high"]
    assert keyed["by_transition"]["merge_pr"]["duplicate_effects"]["value"] == 0
    assert keyed["by_transition"]["run_ci"]["duplicate_effects"]["value"] == 0


def test_fixed_counts_have_no_interval_and_task_counts_stay_within_the_tasks(keyed):
    """requests is 5 per task for every task: exact. A count of tasks never has an interval past TASKS."""
    assert keyed["requests"] == {"value": 5.0 * TASKS, "ci_low": None, "ci_high": None}
    for name in exposure.TASK_SHARE_METRICS:
        assert 0 <= keyed[name]["ci_low"] <= keyed[name]["value"] <= keyed[name]["ci_high"] <= TASKS


def test_verified_excludes_a_task_that_duplicated_an_effect(keyed):
    """Every task terminates with its receipts, but the ones that announced twice are not verified."""
    assert keyed["terminal_verified_tasks"]["value"] == TASKS
    assert keyed["verified_tasks"]["value"] < TASKS
    lost = keyed["tasks_with_a_safety_violation"]["value"]
    assert keyed["verified_tasks"]["value"] == pytest.approx(TASKS - lost)


def test_the_same_inputs_give_the_same_numbers(agent, keyed):
    """Determinism: a second simulation is identical."""
    again = exposure.simulated_json(exposure.simulate(["keyed"], seeds=300, tasks=TASKS, workflow=agent.workflow,
                                                      arguments=agent.arguments))["keyed"]
    assert again == keyed


def test_the_worked_example_draws_exactly_as_before():
    """A duplicate rate of 0 draws four uniforms per transition, as the worked example always did."""
    names = ["t1", "t2", "t3"]
    rng = random.Random(5)
    exposure_schedule("task_0", names, ExposureRates(), rng)
    reference = random.Random(5)
    for _ in range(4 * len(names)):
        reference.random()
    assert rng.random() == reference.random()
    copied = exposure_schedule("task_0", names, ExposureRates(ambiguous_rate=0.0, duplicate_rate=1.0),
                               random.Random(5))
    assert [e.fault for e in copied] == ["duplicate"] * 3


def test_a_workflow_exercises_the_knobs_its_transitions_need(agent):
    """approval and irreversible_keys are exercised by an irreversible step, refused for generic:7."""
    protocol = FAMILY.parse_protocol("keyed-fingerprint-reconcile,approval=off")
    exposure.check_exercised(protocol, agent.workflow)
    with pytest.raises(InputError, match="approval"):
        exposure.check_exercised(protocol)
    with pytest.raises(InputError, match="ledger_dedupe"):
        exposure.check_exercised(FAMILY.parse_protocol("keyed,ledger_dedupe=off"), agent.workflow)


def test_the_cli_takes_a_workload():
    """exposure --workload: the arithmetic counts the workflow's own side-effecting transitions."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        with pytest.raises(SystemExit) as exit_:
            main(["exposure", "--workload", "agent-pr-workflow", "--tasks", str(TASKS), "--json"])
    assert exit_.value.code == 0
    document = json.loads(out.getvalue())
    assert document["analytic"]["requests"] == 5 * TASKS
    assert document["workflow"]["side_effecting"] == ["create_branch", "open_pr", "run_ci", "post_slack", "merge_pr"]


def test_the_review_shows_the_design_workflow_and_the_worked_example_only_as_a_reference(agent):
    """Two sections: the design's own exposure (per transition too), then the labelled reference table."""
    protocols = [FAMILY.parse_protocol("keyed")]
    own, reference = exposure.review_sections(agent, protocols, 60)
    assert "this design's workflow" in own["title"] and own["analytic"]["requests"] == 50_000
    assert "post_slack: duplicate_effects" in own["metrics"]["keyed"]
    assert reference["title"].startswith("Reference only") and reference["metrics"] == {}
    assert reference["analytic"]["requests"] == 70_000
