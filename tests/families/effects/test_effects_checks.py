"""Each invariant of the effects (runtime) family fires on a planted bug and stays silent on a correct history."""

from __future__ import annotations

import pytest

from sim.core.checks import run_checks
from sim.core.history import History
from sim.families.effects import FAMILY, checks


def history(*rows):
    return History.from_dicts([dict(actor=r[0], event=r[1], **r[2]) for r in rows])


T = {"task": "t1", "transition": "open_pr", "logical": "open_pr", "generation": 1}


def commit(effect, **extra):
    return ("git", "committed", dict(T, effect=effect, key="k1", fingerprint="f1", compensation="close_pr", **extra))


def receipt(effect):
    return ("w1", "receipt_recorded", dict(T, effect=effect))


def violated(check, h):
    return [v.invariant for v in check(h).violations]


def test_duplicate_effect_fires_on_two_commits():
    """Two committed effects for one logical transition and generation are a duplicate."""
    assert violated(checks.duplicate_effect, history(commit("pr#1"), commit("pr#2"))) == ["duplicate_effect"]


def test_duplicate_effect_silent_on_new_generation():
    """A deliberate new attempt (new generation) is not a duplicate."""
    h = history(commit("pr#1"), ("git", "committed", dict(T, effect="pr#2", generation=2)))
    assert violated(checks.duplicate_effect, h) == []


def test_duplicate_effect_not_evaluable_without_fields():
    """A recorded history lacking 'effect' is not evaluable rather than passing."""
    assert checks.duplicate_effect(history(("git", "committed", {"task": "t1"}))).status == "not_evaluable"


def test_lost_success_fires_when_committed_effect_recorded_failed():
    """A committed, never receipted effect whose transition was recorded failed is a lost success."""
    h = history(commit("pr#1"), ("w2", "timed_out", dict(T, outcome="failed")))
    assert violated(checks.lost_success, h) == ["lost_success"]


def test_lost_success_silent_when_receipted():
    """A committed effect that ends up receipted was not lost, even after a failed timeout."""
    h = history(commit("pr#1"), ("w2", "timed_out", dict(T, outcome="failed")), receipt("pr#1"))
    assert violated(checks.lost_success, h) == []


def test_unknown_as_failed_fires_and_stays_silent():
    """A timeout recorded failed fires; recorded unknown does not."""
    assert violated(checks.unknown_as_failed, history(("w1", "timed_out", dict(T, outcome="failed")))) == [
        "unknown_as_failed"]
    assert violated(checks.unknown_as_failed, history(("w1", "timed_out", dict(T, outcome="unknown")))) == []


def test_false_receipt_fires_on_foreign_effect():
    """A receipt naming an object that is not the transition's committed effect is false."""
    h = history(commit("pr#1"), ("git", "foreign_created", dict(T, effect="pr#9")), receipt("pr#9"))
    assert violated(checks.false_receipt, h) == ["false_receipt"]
    assert violated(checks.false_receipt, history(commit("pr#1"), receipt("pr#1"))) == []


def test_fingerprint_conflict_fires_when_other_arguments_accepted():
    """A deduplicated answer to the same key with another fingerprint is a conflict accepted."""
    h = history(commit("pr#1"), ("git", "deduplicated", dict(T, effect="pr#1", key="k1", fingerprint="f2")))
    assert violated(checks.fingerprint_conflict, h) == ["fingerprint_conflict"]
    same = history(commit("pr#1"), ("git", "deduplicated", dict(T, effect="pr#1", key="k1", fingerprint="f1")))
    assert violated(checks.fingerprint_conflict, same) == []


def test_unresolved_compensation_fires_when_closed_owing():
    """A task closed failed with an uncompensated reversible effect owes a compensation."""
    h = history(commit("pr#1"), ("w1", "task_terminal", {"task": "t1", "outcome": "failed"}))
    assert violated(checks.unresolved_compensation, h) == ["unresolved_compensation"]
    done = history(commit("pr#1"), ("w1", "compensated", dict(T, effect="pr#1")),
                   ("w1", "task_terminal", {"task": "t1", "outcome": "compensated"}))
    assert violated(checks.unresolved_compensation, done) == []


def test_unapproved_irreversible_fires_without_approval():
    """An irreversible commit needs an earlier approval."""
    release = ("git", "committed", {"task": "t1", "transition": "publish_release", "effect": "release#1",
                                    "effect_class": "irreversible"})
    assert violated(checks.unapproved_irreversible, history(release)) == ["unapproved_irreversible"]
    approved = ("human", "approved", {"task": "t1", "transition": "publish_release"})
    assert violated(checks.unapproved_irreversible, history(approved, release)) == []


def test_unapproved_irreversible_takes_a_commits_class_from_its_intent():
    """A commit that omits its effect_class is judged by the class its intent recorded, never passed blind; with
    neither, the check cannot tell and says so."""
    step = {"task": "t1", "transition": "publish_release", "logical": "publish_release", "generation": 1}
    intent = ("w1", "intent_recorded", dict(step, effect_class="irreversible"))
    release = ("git", "committed", dict(step, effect="release#1"))
    branch = ("git", "committed", dict(T, effect="branch#1", effect_class="keyed_creation"))
    assert violated(checks.unapproved_irreversible, history(branch, intent, release)) == ["unapproved_irreversible"]
    approved = ("human", "approved", {"task": "t1", "transition": "publish_release"})
    assert violated(checks.unapproved_irreversible, history(branch, approved, intent, release)) == []
    owed_none = ("git", "committed", dict(step, effect="release#1", approval_required=False))
    assert violated(checks.unapproved_irreversible, history(branch, intent, owed_none)) == []
    blind = checks.unapproved_irreversible(history(branch, release))
    assert blind.status == "not_evaluable" and "event 1 (committed) lacks 'effect_class'" in blind.reason


def test_unresolved_compensation_cannot_judge_a_commit_without_its_task():
    """Whose effect a commit without 'task' is cannot be told: a closed task's debt is not judged blind."""
    taskless = ("git", "committed", {k: v for k, v in commit("pr#1")[2].items() if k != "task"})
    closed = ("w1", "task_terminal", {"task": "t1", "outcome": "failed"})
    result = checks.unresolved_compensation(history(commit("branch#1"), taskless, closed))
    assert result.status == "not_evaluable" and "lacks 'task'" in result.reason


def test_unverified_checkpoint_fires_before_receipt():
    """A checkpoint claiming a transition complete before its receipt is unverified."""
    cp = ("w1", "checkpoint_saved", {"task": "t1", "completed": ["open_pr"]})
    assert violated(checks.unverified_checkpoint, history(cp)) == ["unverified_checkpoint"]
    assert violated(checks.unverified_checkpoint, history(receipt("pr#1"), cp)) == []


def test_version_mismatch_fires_without_migration():
    """Resuming under another workflow version needs a recorded migration."""
    accepted = ("queue", "accepted", {"task": "t1", "workflow_version": 1})
    resumed = ("w2", "resumed", {"task": "t1", "workflow_version": 2})
    assert violated(checks.version_mismatch, history(accepted, resumed)) == ["version_mismatch"]
    migrated = ("w2", "migrated", {"task": "t1", "from_version": 1, "to_version": 2})
    assert violated(checks.version_mismatch, history(accepted, migrated, resumed)) == []


def test_no_terminal_outcome_fires_for_unfinished_task():
    """An accepted task with no terminal outcome violates liveness."""
    accepted = ("queue", "accepted", {"task": "t1"})
    assert violated(checks.no_terminal_outcome, history(accepted)) == ["no_terminal_outcome"]
    terminal = ("w1", "task_terminal", {"task": "t1", "outcome": "succeeded"})
    assert violated(checks.no_terminal_outcome, history(accepted, terminal)) == []


def test_unverified_checkpoint_keeps_receipts_across_a_migration():
    """A receipt recorded under a transition's old name still verifies a checkpoint naming its new name."""
    migrated = ("w2", "migrated", {"task": "t1", "renamed": [["open_pr", "open_pull_request"]]})
    cp = ("w2", "checkpoint_saved", {"task": "t1", "completed": ["open_pull_request"]})
    assert violated(checks.unverified_checkpoint, history(receipt("pr#1"), migrated, cp)) == []


def test_a_task_waiting_at_the_time_budget_is_not_finished_not_a_safety_violation():
    """A run that reached its simulated time budget with a task waiting (a slow approval) counts it as not
    finished (availability); the same task in a run with nothing left to happen is stuck (safety)."""
    waiting = (("queue", "accepted", {"task": "t1"}),
               ("w1", "approval_requested", {"task": "t1", "transition": "publish_release", "at_s": 172811.0}))
    budget = run_checks(checks.CHECKS, history(*waiting, ("kernel", "run_ended", {"reason": "time_limit"})))
    assert report_names(budget.safety_violations) == []
    assert [(v.invariant, v.step, v.safety) for v in budget.availability_findings] == [
        ("not_finished", "publish_release", False)]
    assert budget.status()["no_terminal_outcome"] == "ok"
    stuck = run_checks(checks.CHECKS, history(*waiting, ("kernel", "run_ended", {"reason": "completed"})))
    assert report_names(stuck.safety_violations) == ["no_terminal_outcome"]
    assert stuck.availability_findings == []


def report_names(violations):
    return [v.invariant for v in violations]


def test_no_terminal_outcome_is_not_evaluable_when_the_run_was_cut_short():
    """A run that ended on a limit cannot prove liveness either way."""
    h = history(("queue", "accepted", {"task": "t1"}), ("kernel", "run_ended", {"reason": "event_limit"}))
    assert checks.no_terminal_outcome(h).status == "not_evaluable"


def test_human_exceptions_are_counted_not_safety():
    """Each escalation to a human is an availability finding, never a safety violation."""
    h = history(("w1", "human_exception", {"task": "t1", "transition": "open_pr", "reason": "unprovable"}))
    result = checks.human_exceptions(h)
    assert [(v.invariant, v.safety) for v in result.violations] == [("human_exceptions", False)]
    report = run_checks(checks.CHECKS, h)
    assert report.safety_violations == [] and len(report.availability_findings) == 1


def test_checks_have_stable_names_and_two_availability_checks():
    """The effects checks are thirteen safety invariants, and human_exceptions and not_finished, each counted
    under its own name."""
    assert checks.SAFETY_INVARIANTS == (
        "duplicate_effect", "lost_success", "unknown_as_failed", "false_receipt", "fingerprint_conflict",
        "unresolved_compensation", "unapproved_irreversible", "unverified_checkpoint", "version_mismatch",
        "no_terminal_outcome", "split_outcome", "stranded_irreversible", "check_after_effect")
    assert FAMILY.checks == checks.CHECKS and FAMILY.availability_columns == ("human_exceptions", "not_finished")
    assert all(spec.fields for spec in checks.CHECKS)


@pytest.mark.parametrize("spec", checks.CHECKS, ids=lambda s: s.name)
def test_every_check_is_silent_on_an_empty_history(spec):
    """No events, no violations."""
    assert spec.function(History()).violations == ()


def test_checks_are_silent_on_a_simulated_correct_run(stories_dir):
    """Every check of the family is 'ok' on the model's keyed-fingerprint-reconcile run of a story."""
    import sim

    result = sim.run_scenario(stories_dir / "pr_lost_response.toml", "keyed-fingerprint-reconcile")
    assert set(result.checks.status().values()) == {"ok"}


def test_split_outcome_flags_a_task_closed_twice():
    """Two terminal outcomes for one task (a zombie closed it too) violate split_outcome; one does not."""
    from sim.core.history import History

    history = History()
    history.append(1, "w1", "task_terminal", task="t", outcome="succeeded")
    assert checks.split_outcome(history).status == "ok"
    history.append(2, "w2", "task_terminal", task="t", outcome="compensated")
    result = checks.split_outcome(history)
    assert result.status == "violated" and result.violations[0].event_index == 1
