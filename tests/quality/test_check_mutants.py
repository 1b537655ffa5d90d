"""Tests that kill the mutants of the two check modules that the focused check suite let survive.

Each planted history pins the exact result of a check (name, status, every violation with its event,
step, detail, domain and safety, or the not_evaluable reason), so a mutant that changes any of them --
or that changes which events a check reads -- fails here.  Found with mutmut over
``sim/families/workspace/checks.py`` and ``sim/families/effects/checks.py``.
"""

from __future__ import annotations

import pytest

from sim.core.checks import NOT_EVALUABLE, OK, VIOLATED, CheckResult, Violation
from sim.core.history import History
from sim.families.effects import checks as fx
from sim.families.workspace import checks as ws

pytestmark = pytest.mark.quality


def _h(*rows):
    return History.from_dicts(rows)


def _ok(name):
    return CheckResult(name, OK)


def _violated(name, *violations):
    return CheckResult(name, VIOLATED, tuple(violations))


def _not_evaluable(name, reason):
    return CheckResult(name, NOT_EVALUABLE, (), reason)


# -- workspace family --------------------------------------------------------------------------------------

def _deliver(step="s1", verdict="applied", **fields):
    """A delivery with every field the workspace checks read; None drops a field."""
    row = {"actor": "executor", "event": "deliver", "step": step, "path": "app.py", "verdict": verdict,
           "fence": "step", "dedupe": "journal", "origin": "dispatch", "copy": 1, "stamped_base_rev": 0,
           "rev_at_apply": 0, "hash_before": "h0", "expected_prior_hash": "h0", "journal_key": f"{step}@0"}
    row.update(fields)
    return {k: v for k, v in row.items() if v is not None}


def _reject(step="s2", verdict="rejected:stale_rev", **fields):
    """A rejected delivery whose truth fields say applying would have been safe (hashes equal)."""
    truth = {"dedupe": "off", "journal_key": None, "stamped_base_rev": 1, "rev_at_apply": 2,
             "hash_before": "h1", "expected_prior_hash": "h1"}
    return _deliver(step, verdict, **{**truth, **fields})


def test_ws_skipped_deliveries_are_not_read():
    """A delivery marked skipped is ignored by every delivery-reading check, however wrong its fields."""
    history = _h(_deliver("s1"), _deliver("s1", skipped=True, stamped_base_rev=5, hash_before="human"))
    assert ws.duplicate_effect(history) == _ok("duplicate_effect")
    assert ws.stale_accept(history) == _ok("stale_accept")
    assert ws.lost_update(history) == _ok("lost_update")


@pytest.mark.parametrize("fields, domain", [
    ({"domain": "replan_drift", "origin": "retry"}, "replan_drift"),
    ({"domain": "elsewhere", "origin": "retry"}, "lost_ack"),
    ({"origin": "duplicate"}, "duplicate_delivery"),
    ({"origin": "dispatch", "replanned": True}, "replan_drift"),
    ({"origin": "dispatch"}, "stale_plan"),
])
def test_ws_violation_domain(fields, domain):
    """A recorded domain among DOMAINS wins; otherwise retry, duplicate, replanned, else stale_plan."""
    history = _h(_deliver("s2", hash_before="human", expected_prior_hash="h1", **fields))
    assert ws.lost_update(history) == _violated("lost_update", Violation(
        "lost_update", 0, "s2", "s2 wrote app.py over content human but its author expected h1", domain))


def test_ws_lost_update_needs_both_hashes():
    """An applied write with hash_before but no expected_prior_hash (and no hunks) is not evaluable."""
    history = _h(_deliver(expected_prior_hash=None))
    assert ws.lost_update(history) == _not_evaluable(
        "lost_update", "event 0 lacks hunks_before/expected_prior_hunks and hash fields")


def test_ws_lost_update_compares_only_named_hunks():
    """With hunks recorded, a change outside the patch's expected hunks is no lost update."""
    fine = _deliver(hunks_before={"a": "x", "b": "changed"}, expected_prior_hunks={"a": "x"}, hash_before="h9")
    lost = _deliver("s2", hunks_before={"a": "y"}, expected_prior_hunks={"a": "x"})
    assert ws.lost_update(_h(fine)) == _ok("lost_update")
    assert ws.lost_update(_h(fine, lost)) == _violated("lost_update", Violation(
        "lost_update", 1, "s2", "s2 wrote app.py over content h0 but its author expected h0", "stale_plan"))


def test_ws_duplicate_effect_exact():
    """A second apply of a step names the first event, its copy and origin ('?'/'unknown' when absent)."""
    history = _h({"actor": "planner", "event": "plan"}, _deliver("s1"),
                 _deliver("s1", copy=2, origin="retry"), _deliver("s1", copy=None, origin=None))
    assert ws.duplicate_effect(history) == _violated(
        "duplicate_effect",
        Violation("duplicate_effect", 2, "s1", "s1 applied again (first at event 1, copy 2 via retry)", "lost_ack"),
        Violation("duplicate_effect", 3, "s1", "s1 applied again (first at event 1, copy ? via unknown)",
                  "stale_plan"),
    )


def test_ws_duplicate_effect_without_step_is_not_evaluable():
    """An applied delivery with no step cannot be judged for duplicates."""
    history = _h(_deliver("s1"), _deliver(None))
    assert ws.duplicate_effect(history) == _not_evaluable("duplicate_effect", "event 1 has no step")


def test_ws_stale_accept_exact():
    """A fenced apply at a rev other than its stamp is pinned to its event, step and domain."""
    history = _h(_deliver("s1"), _deliver("s2", stamped_base_rev=1, rev_at_apply=2, origin="retry"),
                 _deliver("s3", fence="none", stamped_base_rev=1, rev_at_apply=2))
    assert ws.stale_accept(history) == _violated("stale_accept", Violation(
        "stale_accept", 1, "s2", "s2 stamped base rev 1 applied at rev 2", "lost_ack"))


def test_ws_stale_accept_not_evaluable_reason():
    """An applied delivery lacking rev_at_apply makes stale_accept not evaluable, naming the event."""
    history = _h(_deliver("s1"), _deliver("s2", rev_at_apply=None))
    assert ws.stale_accept(history) == _not_evaluable(
        "stale_accept", "event 1 lacks fence/stamped_base_rev/rev_at_apply")


def test_ws_journal_loss_exact():
    """A journal write without its key (with and without preemption) and an early key removal are each pinned."""
    history = _h(
        _deliver("s1", journal_key=None),
        _deliver("s2", journal_key=None, preempted="after_write"),
        {"actor": "network", "event": "ack", "step": "s3"},
        {"actor": "journal", "event": "journal_remove", "step": "s3", "journal_key": "s3@0"},
        {"actor": "journal", "event": "journal_remove", "step": "s4", "journal_key": "s4@0"},
        _deliver("s5", journal_key=None, dedupe="off"),
    )
    assert ws.journal_loss(history) == _violated(
        "journal_loss",
        Violation("journal_loss", 0, "s1", "s1 was written but its journal key is not in the journal", "lost_ack"),
        Violation("journal_loss", 1, "s2", "s2 was written but its journal key is not in the journal "
                  "(executor preempted after_write)", "lost_ack"),
        Violation("journal_loss", 4, "s4", "journal key s4@0 removed while s4 can still be retried", "lost_ack"),
    )


def test_ws_journal_loss_not_evaluable_reason():
    """Deliveries that never record their dedupe mode make journal_loss not evaluable."""
    history = _h(_deliver("s1", dedupe=None))
    assert ws.journal_loss(history) == _not_evaluable("journal_loss", "no delivery records its dedupe mode")


@pytest.mark.parametrize("event", ["ack", "lose_ack"])
def test_ws_spurious_rejection_ignores_ack_verdicts(event):
    """An ack or lost ack carrying a rejected verdict is no rejection, and does not stop the scan."""
    history = _h({"actor": "network", "event": event, "step": "s2", "verdict": "rejected:stale_rev"},
                 _reject("s2"))
    assert ws.spurious_rejection(history) == _violated("spurious_rejection", Violation(
        "spurious_rejection", 1, "s2",
        "rejected:stale_rev although applying s2 would have replaced exactly what its author expected",
        "stale_plan", safety=False))


def test_ws_spurious_rejection_scans_past_every_kind_of_event():
    """Events without a verdict, applies, overlap rejections and already-applied rejections never end the scan."""
    history = _h(
        {"actor": "planner", "event": "plan"},
        _deliver("s1"),
        _reject(None, "rejected:overlap", pipeline="off"),
        _reject(None, "rejected:overlap", pipeline="on"),
        _reject("s1", "rejected:duplicate", origin="retry"),
        _deliver("s1", "replayed"),
        _reject("s2", "rejected:stale_hash", origin="duplicate"),
    )
    assert ws.spurious_rejection(history) == _violated(
        "spurious_rejection",
        Violation("spurious_rejection", 2, None,
                  "plan rejected for overlapping siblings although pipeline=off dispatches them in order",
                  "stale_plan", safety=False),
        Violation("spurious_rejection", 4, "s1",
                  "s1 was already applied; the client now believes finished work failed (rejected:duplicate)",
                  "lost_ack", safety=False),
        Violation("spurious_rejection", 6, "s2",
                  "rejected:stale_hash although applying s2 would have replaced exactly what its author expected",
                  "duplicate_delivery", safety=False),
    )


def test_ws_spurious_rejection_not_evaluable_reason():
    """A rejection without hunks or hashes makes spurious_rejection not evaluable, naming the event."""
    history = _h(_deliver("s1"), _reject("s2", hash_before=None))
    assert ws.spurious_rejection(history) == _not_evaluable(
        "spurious_rejection", "rejection at event 1 lacks the truth fields")


def test_ws_needed_rejection_is_not_spurious():
    """A rejection whose truth says the write would have replaced unexpected content is correct."""
    history = _h(_reject("s2", hash_before="human"))
    assert ws.spurious_rejection(history) == _ok("spurious_rejection")


# -- effects family ----------------------------------------------------------------------------------------

T = {"task": "t1", "transition": "open_pr", "logical": "open_pr", "generation": 1}


def _ev(event, actor="w1", **fields):
    """An effects-family event; None drops a field."""
    row = {"actor": actor, "event": event, **fields}
    return {k: v for k, v in row.items() if v is not None}


def _commit(effect, **fields):
    return _ev("committed", "git", **{**T, "effect": effect, "key": "k1", "fingerprint": "f1",
                                      "compensation": "close_pr", **fields})


def _receipt(effect, **fields):
    return _ev("receipt_recorded", **{**T, "effect": effect, **fields})


def test_fx_renamed_state_is_the_same_logical_step():
    """Two commits of one logical transition under different state names are a duplicate."""
    history = _h(_commit("pr#1"), _commit("pr#2", transition="open_pr_v2"))
    assert fx.duplicate_effect(history) == _violated("duplicate_effect", Violation(
        "duplicate_effect", 1, "open_pr_v2", "pr#2 duplicates pr#1 for t1/open_pr", "duplicate_delivery"))


def test_fx_without_logical_the_transition_groups():
    """Commits without a logical field are grouped by transition: two transitions are no duplicate."""
    history = _h(_commit("pr#1", logical=None), _commit("m#1", transition="merge_pr", logical=None))
    assert fx.duplicate_effect(history) == _ok("duplicate_effect")


def test_fx_duplicate_effect_generation_defaults_to_one():
    """A commit without a generation is generation 1; the same effect recorded twice is no duplicate."""
    history = _h(_commit("pr#1", generation=None), _commit("pr#1", generation=None), _commit("pr#2", task="t2"),
                 _commit("pr#3"), _commit("pr#4"))
    assert fx.duplicate_effect(history) == _violated(
        "duplicate_effect",
        Violation("duplicate_effect", 3, "open_pr", "pr#3 duplicates pr#1 for t1/open_pr", "duplicate_delivery"),
        Violation("duplicate_effect", 4, "open_pr", "pr#4 duplicates pr#1 for t1/open_pr", "duplicate_delivery"),
    )


def test_fx_duplicate_effect_not_evaluable_reason():
    """A commit lacking 'effect' makes duplicate_effect not evaluable, naming event and field."""
    history = _h(_commit("pr#1"), _commit(None))
    assert fx.duplicate_effect(history) == _not_evaluable(
        "duplicate_effect", "event 1 (committed) lacks 'effect'")


def test_fx_lost_success_not_evaluable_reason():
    """A commit lacking 'effect' makes lost_success not evaluable rather than crash or pass."""
    history = _h(_commit(None))
    assert fx.lost_success(history) == _not_evaluable("lost_success", "event 0 (committed) lacks 'effect'")


@pytest.mark.parametrize("failure", [_ev("timed_out", **T, outcome="failed"), _ev("transition_failed", **T)])
def test_fx_lost_success_recorded_failed_exact(failure):
    """An unreceipted commit whose transition is later recorded failed is pinned to that record."""
    history = _h(_commit("pr#1"), failure)
    assert fx.lost_success(history) == _violated("lost_success", Violation(
        "lost_success", 1, "open_pr", "pr#1 committed but was recorded as failed", "lost_ack"))


def test_fx_lost_success_done_again_exact():
    """An unreceipted commit done again in the same group (a missing generation is 1) is pinned to the repeat."""
    history = _h(_commit("pr#1"), _commit("pr#2", generation=None), _receipt("pr#2", generation=None))
    assert fx.lost_success(history) == _violated("lost_success", Violation(
        "lost_success", 1, "open_pr", "pr#1 committed but was done again as pr#2", "lost_ack"))


def test_fx_lost_success_group_keeps_the_commit_generation():
    """A repeat in the commit's own later generation is a lost success; in another generation it is not."""
    again = _h(_commit("pr#1", generation=2), _commit("pr#2", generation=2), _receipt("pr#2", generation=2))
    other = _h(_commit("pr#1", generation=2), _commit("pr#2"), _receipt("pr#2"))
    default = _h(_commit("pr#1", generation=None), _commit("pr#2", generation=2), _receipt("pr#2", generation=2))
    assert fx.lost_success(again) == _violated("lost_success", Violation(
        "lost_success", 1, "open_pr", "pr#1 committed but was done again as pr#2", "lost_ack"))
    assert fx.lost_success(other) == _ok("lost_success")
    assert fx.lost_success(default) == _ok("lost_success")


def test_fx_lost_success_reads_only_later_failures_of_the_same_transition():
    """Earlier failures, other tasks' failures, other transitions' commits and plain events lose nothing."""
    history = _h(
        _ev("transition_failed", **T),
        _commit("pr#1"),
        _ev("dispatched", **T),
        _ev("transition_failed", **{**T, "task": "t2"}),
        _ev("timed_out", **{**T, "transition": "merge_pr", "logical": "merge_pr"}, outcome="failed"),
        _ev("timed_out", **T, outcome="unknown"),
        _commit("m#1", transition="merge_pr", logical="merge_pr"),
        _receipt("m#1", transition="merge_pr", logical="merge_pr"),
    )
    assert fx.lost_success(history) == _ok("lost_success")


def test_fx_lone_unreceipted_commit_is_no_lost_success():
    """A commit never receipted but neither failed nor repeated is not (yet) a lost success."""
    assert fx.lost_success(_h(_commit("pr#1"))) == _ok("lost_success")


def test_fx_unknown_as_failed_exact():
    """A timeout recorded failed is pinned to its event and transition; one lacking 'outcome' is not evaluable."""
    history = _h(_ev("timed_out", **T, outcome="unknown"), _ev("timed_out", **T, outcome="failed"))
    assert fx.unknown_as_failed(history) == _violated("unknown_as_failed", Violation(
        "unknown_as_failed", 1, "open_pr", "a timeout of open_pr was recorded as failed, not unknown", "lost_ack"))
    assert fx.unknown_as_failed(_h(_ev("timed_out", **T))) == _not_evaluable(
        "unknown_as_failed", "event 0 lacks 'outcome'")


def test_fx_false_receipt_owners():
    """A receipt matches a committed or deduplicated effect by logical name or by state name."""
    history = _h(
        _ev("deduplicated", **{**T, "task": "t2"}, effect="pr#9"),
        _receipt("pr#9", task="t2"),
        _commit("pr#1", transition="open_pr_v1", logical="open"),
        _receipt("pr#1", transition="open_pr_v1", logical="other"),
        _receipt("pr#1", transition="open_pr_v2", logical="open"),
    )
    assert fx.false_receipt(history) == _ok("false_receipt")


def test_fx_false_receipt_exact():
    """A receipt matching no committed effect of its transition is pinned; one lacking 'effect' is not evaluable."""
    history = _h(_commit("pr#1"), _receipt("pr#2", transition="merge_pr", logical="merge_pr"))
    assert fx.false_receipt(history) == _violated("false_receipt", Violation(
        "false_receipt", 1, "merge_pr", "receipt pr#2 matches no committed effect of merge_pr"))
    assert fx.false_receipt(_h(_commit("pr#1"), _receipt(None))) == _not_evaluable(
        "false_receipt", "event 1 lacks 'effect'")


def test_fx_fingerprint_conflict_prefers_the_recorded_stored_fingerprint():
    """A deduplication that records the stored fingerprint is judged against it, not the first commit's."""
    history = _h(_commit("pr#1"), _ev("deduplicated", **T, key="k1", fingerprint="f2", stored_fingerprint="f2"))
    assert fx.fingerprint_conflict(history) == _ok("fingerprint_conflict")


def test_fx_fingerprint_conflict_exact():
    """Reuse of a key with another fingerprint is pinned; a dedupe with nothing to compare is not evaluable."""
    history = _h(_commit("pr#1"), _ev("deduplicated", **T, key="k1", fingerprint="f2"))
    assert fx.fingerprint_conflict(history) == _violated("fingerprint_conflict", Violation(
        "fingerprint_conflict", 1, "open_pr", "key k1 reused with fingerprint f2 (stored f1) and accepted"))
    alone = _h(_ev("deduplicated", **T, key="k9", fingerprint="f2"))
    assert fx.fingerprint_conflict(alone) == _not_evaluable("fingerprint_conflict", "event 0 lacks fingerprints")


def test_fx_unresolved_compensation_succeeded_task_needs_no_compensation_field():
    """Only unsuccessful tasks need 'compensation' recorded: a succeeded one is judged, and is ok."""
    history = _h(_commit("pr#1", compensation=None), _ev("task_terminal", task="t1", outcome="succeeded"))
    assert fx.unresolved_compensation(history) == _ok("unresolved_compensation")


def test_fx_unresolved_compensation_exact():
    """A failed task owing a compensation is pinned after a succeeded one; no 'compensation' is not evaluable."""
    history = _h(
        _commit("pr#0", task="t0"),
        _commit("pr#1"),
        _ev("task_terminal", task="t0", outcome="succeeded"),
        _ev("task_terminal", task="t1", outcome="failed"),
    )
    assert fx.unresolved_compensation(history) == _violated("unresolved_compensation", Violation(
        "unresolved_compensation", 3, "open_pr", "t1 closed failed with pr#1 still owing close_pr"))
    bare = _h(_commit("pr#1", compensation=None), _ev("task_terminal", task="t1", outcome="failed"))
    assert fx.unresolved_compensation(bare) == _not_evaluable(
        "unresolved_compensation", "no 'committed' event records 'compensation' (which effects are owed one)")


def test_fx_unapproved_irreversible_exact():
    """An irreversible commit without approval is pinned; an approved one and a clean run are ok by name."""
    history = _h(_ev("approved", **T), _commit("pr#1", effect_class="irreversible"),
                 _commit("m#1", transition="merge_pr", logical="merge_pr", effect_class="irreversible"))
    assert fx.unapproved_irreversible(history) == _violated("unapproved_irreversible", Violation(
        "unapproved_irreversible", 2, "merge_pr", "m#1 is irreversible and was not approved"))
    assert fx.unapproved_irreversible(_h(_commit("pr#1", effect_class="keyed_creation"))) == _ok(
        "unapproved_irreversible")
    assert fx.unapproved_irreversible(_h(_commit("pr#1", approval_required=False))) == _ok("unapproved_irreversible")
    assert fx.unapproved_irreversible(_h(_commit("pr#1"))) == _not_evaluable(
        "unapproved_irreversible", "event 0 (committed) lacks 'effect_class' and no intent_recorded of its "
        "transition records one (whether it was irreversible)")


def test_fx_unapproved_irreversible_reads_the_class_of_the_same_steps_intent():
    """A classless commit takes its intent's class: of its task, logical transition and generation only."""
    intent = _ev("intent_recorded", **{**T, "effect_class": "irreversible"})
    other_generation = _ev("intent_recorded", **{**T, "generation": 2, "effect_class": "irreversible"})
    assert fx.unapproved_irreversible(_h(intent, _commit("pr#1"))) == _violated("unapproved_irreversible", Violation(
        "unapproved_irreversible", 1, "open_pr", "pr#1 is irreversible and was not approved"))
    assert fx.unapproved_irreversible(_h(other_generation, _commit("pr#1"))).status == NOT_EVALUABLE
    read = _ev("intent_recorded", **{**T, "effect_class": "read"})
    assert fx.unapproved_irreversible(_h(read, _commit("pr#1"))) == _ok("unapproved_irreversible")


def test_fx_unverified_checkpoint_exact():
    """Migrations without renames and checkpoints without 'completed' are fine; an unreceipted claim is pinned."""
    history = _h(
        _receipt("pr#1"),
        _ev("migrated", task="t1", to_version=2),
        _ev("checkpoint_saved", task="t1"),
        _ev("checkpoint_saved", task="t1", completed=["open_pr", "merge_pr"]),
    )
    assert fx.unverified_checkpoint(history) == _violated("unverified_checkpoint", Violation(
        "unverified_checkpoint", 3, "merge_pr", "checkpoint claims merge_pr complete before any receipt"))
    assert fx.unverified_checkpoint(_h(_receipt("pr#1"))) == _ok("unverified_checkpoint")


def test_fx_version_mismatch_follows_each_task_and_its_migrations():
    """Versions are kept per task, default to 1, follow migrations (keeping the version without to_version)."""
    history = _h(
        _ev("accepted", task="t1", workflow_version=2),
        _ev("accepted", task="t2"),
        _ev("resumed", task="t1", workflow_version=2),
        _ev("resumed", task="t2", workflow_version=1),
        _ev("migrated", task="t2", to_version=3),
        _ev("resumed", task="t2", workflow_version=3),
        _ev("migrated", task="t1"),
        _ev("resumed", task="t1", workflow_version=2),
        _ev("migrated", task="t3"),
        _ev("resumed", task="t3", workflow_version=1),
        _ev("resumed", task="t4", workflow_version=1),
        _ev("resumed", task="t1"),
        _ev("checkpoint_saved", task="t1", workflow_version=7),
    )
    assert fx.version_mismatch(history) == _ok("version_mismatch")


def test_fx_version_mismatch_exact():
    """A resume under another version is pinned to its event with the task's own version."""
    history = _h(_ev("accepted", task="t1", workflow_version=2), _ev("resumed", task="t1", workflow_version=1))
    assert fx.version_mismatch(history) == _violated("version_mismatch", Violation(
        "version_mismatch", 1, None, "t1 (version 2) resumed under version 1 without a migration"))


def test_fx_no_terminal_outcome_exact():
    """A run that ended with nothing left to happen is judged, pinned to the last event; a run ended by its time
    budget is not (its unfinished tasks are not_finished); another limit is not evaluable."""
    history = _h(_ev("accepted", task="t1"), _ev("accepted", task="t2"), _ev("task_terminal", task="t2"),
                 _ev("run_ended", "sim", reason="completed"))
    assert fx.no_terminal_outcome(history) == _violated("no_terminal_outcome", Violation(
        "no_terminal_outcome", 3, None, "t1 has no terminal outcome"))
    assert fx.no_terminal_outcome(_h(_ev("accepted", task="t1"))) == _violated("no_terminal_outcome", Violation(
        "no_terminal_outcome", 0, None, "t1 has no terminal outcome"))
    budget = _h(_ev("accepted", task="t1"), _ev("run_ended", "sim", reason="time_limit"))
    assert fx.no_terminal_outcome(budget) == _ok("no_terminal_outcome")
    cut = _h(_ev("accepted", task="t1"), _ev("run_ended", "sim", reason="event_limit"))
    assert fx.no_terminal_outcome(cut) == _not_evaluable(
        "no_terminal_outcome", "the run was cut short by the event_limit limit")
    assert fx.no_terminal_outcome(_h()) == _ok("no_terminal_outcome")


def test_fx_not_finished_exact():
    """A task still waiting at the time budget is counted (availability), pinned to run_ended, naming its last
    event; a run that completed, or hit the event limit, counts none."""
    history = _h(_ev("accepted", task="t1"), _ev("accepted", task="t2"), _ev("task_terminal", task="t2"),
                 _ev("approval_requested", "w1", task="t1", transition="publish"),
                 _ev("run_ended", "sim", reason="time_limit"))
    assert fx.not_finished(history) == _violated("not_finished", Violation(
        "not_finished", 4, "publish", "t1 was not finished when the simulated time budget ran out (its last event: "
        "approval_requested of publish)", safety=False))
    quiet = _h(_ev("accepted", task="t1"), _ev("run_ended", "sim", reason="time_limit"))
    assert fx.not_finished(quiet) == _violated("not_finished", Violation(
        "not_finished", 1, None, "t1 was not finished when the simulated time budget ran out (its last event: "
        "accepted)", safety=False))
    for reason in ("completed", "event_limit"):
        ended = _h(_ev("accepted", task="t1"), _ev("run_ended", "sim", reason=reason))
        assert fx.not_finished(ended) == _ok("not_finished")
    assert fx.not_finished(_h(_ev("accepted", task="t1"))) == _ok("not_finished")


def test_fx_split_outcome_exact():
    """A task closed twice names both workers and outcomes; a terminal without a task is not evaluable."""
    history = _h(_ev("task_terminal", "w1", task="t1", outcome="succeeded"),
                 _ev("task_terminal", "w2", task="t2", outcome="failed"),
                 _ev("task_terminal", "w3", task="t1", outcome="failed"))
    assert fx.split_outcome(history) == _violated("split_outcome", Violation(
        "split_outcome", 2, None, "t1 closed again by w3 (failed) after w1 closed it (succeeded) at event 0",
        "duplicate_delivery"))
    assert fx.split_outcome(_h(_ev("task_terminal", outcome="failed"))) == _not_evaluable(
        "split_outcome", "event 0 lacks 'task'")


def test_fx_human_exceptions_exact():
    """Each escalation is counted (not safety) with its transition and reason, 'unknown' when none."""
    history = _h(_ev("human_exception", **T, reason="ambiguous"), _ev("human_exception", **T))
    assert fx.human_exceptions(history) == _violated(
        "human_exceptions",
        Violation("human_exceptions", 0, "open_pr", "open_pr escalated to a human (ambiguous)", safety=False),
        Violation("human_exceptions", 1, "open_pr", "open_pr escalated to a human (unknown)", safety=False),
    )
