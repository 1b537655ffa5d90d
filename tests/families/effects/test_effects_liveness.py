"""The effects family's liveness (:mod:`sim.families.effects.fairness`): slow human approvals are a wait, not a
failure, under fairness; a human who never answers, and a lease nobody expires after a crash, leave a task
waiting forever -- each found as a lasso."""

from __future__ import annotations

import pytest

from sim.families.effects.family import EffectsFamily
from sim.families.effects.runtime import Runtime
from sim.registry import FAMILIES
from sim.search.exhaustive import ExploreOptions, explore
from sim.search.liveness import check_liveness

TWO_APPROVALS = '''format = 1
family = "effects"
name = "two-approvals"
description = "Two approval-gated steps; each approval can be slow (two days): together they outlast the budget."
task = "task_1"
workflow = [
  { name = "deploy_staging", class = "idempotent", object = "deploy", approval = true },
  { name = "deploy_prod", class = "idempotent", object = "deploy", approval = true },
]

[faults]
classes = ["slow_approval"]
per_run_max = 2
'''


@pytest.fixture(scope="module")
def approvals(tmp_path_factory):
    path = tmp_path_factory.mktemp("liveness") / "two-approvals.toml"
    path.write_text(TWO_APPROVALS, encoding="utf-8")
    return FAMILIES.load_workload(str(path))


def test_approvals_slower_than_the_budget_end_under_fairness_and_are_no_safety_finding(approvals):
    family = FAMILIES.family_for(approvals)
    protocol = family.parse_protocol("keyed-reconcile")
    machine = family.machine(approvals.base, protocol)
    both = machine.initial()
    for event in family.alphabet(approvals):
        both = machine.advance(both, event)
    run = machine.completion(both)
    # both approvals slow: the safety run is cut by its simulated budget -- not finished, never a finding
    assert [e.get("reason") for e in run.rt.history if e.event == "run_ended"] == ["time_limit"]
    safety = explore(family, approvals, protocol, ExploreOptions(max_events=2))
    assert "no_terminal_outcome" in safety.proved_absent and not safety.violated
    # under fairness the humans answer, however slowly: the task ends
    live = check_liveness(family, approvals, protocol, 2)
    assert live.complete and live.acted == ("slow_approval",)
    assert live.verdicts["task_terminal"].status == "holds"


def test_a_human_who_may_never_answer_leaves_the_task_waiting_forever(approvals):
    family = FAMILIES.family_for(approvals)
    verdict = check_liveness(family, approvals, family.parse_protocol("keyed-reconcile"), 2,
                             unfair=("human",)).verdicts["task_terminal"]
    assert verdict.status == "violated" and verdict.item == "task_1"
    assert verdict.prefix == () and verdict.cycle == ()  # asked at once, never answered


class NeverExpiresLeases(Runtime):
    """Planted: the lease of a crashed worker never expires, so nobody takes its task over."""

    def lease_expire(self, worker, successor, task):
        raise self.refused(f"lease_expire {worker} -> {successor}", "planted: leases never expire", task)


def task_terminal(runtime: type[Runtime], workload: str, **options):
    """``task_terminal`` under keyed-reconcile within one fault, for a family whose runtime is ``runtime``."""
    family = EffectsFamily(runtime=runtime)
    return check_liveness(family, FAMILIES.load_workload(workload), family.parse_protocol("keyed-reconcile"), 1,
                          **options).verdicts["task_terminal"]


@pytest.mark.slow  # about 6 s: outside the fast lane
def test_planted_a_lease_nobody_expires_after_a_crash_strands_the_task():
    assert task_terminal(Runtime, "effects-saga").status == "holds"
    verdict = task_terminal(NeverExpiresLeases, "effects-saga")
    assert verdict.status == "violated" and verdict.cycle == ()
    assert [str(e) for e in verdict.prefix] == ["terminate create_branch before_intent", "continue"]


class ReconcilesForever(Runtime):
    """Planted: a reconciliation that cannot prove the outcome (``reconcile_by = "none"``) records nothing, so
    the outcome stays unknown and the worker reconciles again, without end."""

    def reconcile(self, worker, task, name):
        wt = self.worker_task(worker, task, f"reconcile {name} by {worker}")
        transition = self.transition(wt, name)
        if transition is not None and transition.queried_by == "none":
            return
        return super().reconcile(worker, task, name)


@pytest.mark.slow  # about 5 s: outside the fast lane
def test_planted_a_reconcile_loop_is_not_decided_and_says_where_the_run_was_still_going():
    """The documented limit: a run that loops forever never repeats a state (its time and history grow), so it
    is not a lasso -- the answer is 'not decided', naming the faults after which the run was still going."""
    verdict = task_terminal(ReconcilesForever, "agent-pr-workflow", max_states=20_000)
    assert verdict.status == "not decided" and verdict.item == "task_42"
    shown = verdict.to_json()["still_going_after"]
    assert shown[0].endswith("post_slack after_dispatch") and shown[1].startswith("continue ×")
    assert "still going at the kernel event limit" in verdict.note


class NobodyResolves(Runtime):
    """Planted: an escalated outcome is never resolved (the human's resolution is refused)."""

    def resolve(self, task, name, *args, **kwargs):
        raise self.refused(f"resolve {name}", "planted: nobody handles the escalation", task)


@pytest.mark.slow  # about 6 s: outside the fast lane
def test_planted_an_escalation_nobody_resolves_leaves_the_task_waiting_forever():
    assert task_terminal(Runtime, "agent-pr-workflow").status == "holds"
    verdict = task_terminal(NobodyResolves, "agent-pr-workflow")
    assert verdict.status == "violated" and verdict.cycle == ()
    # post_slack cannot be reconciled (reconcile_by = "none"): a lost outcome goes to a human, who never comes
    assert [str(e) for e in verdict.prefix] == ["terminate post_slack after_commit", "continue", "continue"]


def test_every_unknown_outcome_is_resolved_under_the_presets_and_vacuously_where_none_is_unknown():
    workload = FAMILIES.load_workload("effects-pr")
    family = FAMILIES.family_for(workload)
    answers = {}
    for label in family.presets:
        verdict = check_liveness(family, workload, family.parse_protocol(label), 1).verdicts["unknown_resolved"]
        answers[label] = (verdict.status, verdict.vacuous)
    # without reconciliation a timeout is recorded failed, never unknown: nothing was ever pending
    assert answers == {"unkeyed-retry": ("holds", True), "keyed": ("holds", True),
                       "keyed-reconcile": ("holds", False), "keyed-fingerprint-reconcile": ("holds", False)}
