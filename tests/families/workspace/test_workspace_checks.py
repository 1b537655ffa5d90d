"""The workspace family's checks as pure functions over hand-written histories: each fires on a planted
bug and is silent on a correct run; a history lacking the fields a check needs is 'not_evaluable', never 'ok'."""

from __future__ import annotations

import pytest

import sim
from sim.core.checks import NOT_EVALUABLE, OK, VIOLATED
from sim.core.history import History
from sim.families.workspace.checks import (
    CHECKS,
    SAFETY_INVARIANTS,
    duplicate_effect,
    journal_loss,
    lost_update,
    spurious_rejection,
    stale_accept,
)


def _apply(step="s1", index=None, **fields):
    """A delivery the executor applied, with every field the checks read; override to plant a bug."""
    row = {"actor": "executor", "event": "deliver", "step": step, "path": "app.py", "verdict": "applied",
           "fence": "step", "dedupe": "journal", "origin": "dispatch", "copy": 1,
           "stamped_base_rev": 0, "rev_at_apply": 0, "hash_before": "h0", "expected_prior_hash": "h0",
           "journal_key": f"{step}@0"}
    if index is not None:
        row["index"] = index
    row.update(fields)
    return {k: v for k, v in row.items() if v is not None}


def _reject(step="s2", verdict="rejected:stale_rev", **fields):
    row = {"actor": "executor", "event": "deliver", "step": step, "path": "app.py", "verdict": verdict,
           "fence": "step", "dedupe": "off", "origin": "dispatch", "stamped_base_rev": 1, "rev_at_apply": 2,
           "hash_before": "hX", "expected_prior_hash": "h1"}
    row.update(fields)
    return {k: v for k, v in row.items() if v is not None}


def _ack(step="s1"):
    return {"actor": "network", "event": "ack", "step": step, "verdict": "applied"}


def _history(*rows):
    return History.from_dicts(rows)


CLEAN = _history(
    {"actor": "planner", "event": "plan"},
    _apply("s1"), _ack("s1"),
    _apply("s2", stamped_base_rev=1, rev_at_apply=1, hash_before="h1", expected_prior_hash="h1", journal_key="s2@1"),
    _ack("s2"),
)


@pytest.mark.parametrize("check", [lost_update, duplicate_effect, stale_accept, journal_loss, spurious_rejection])
def test_check_is_silent_on_a_correct_run(check):
    """Every check reports 'ok' on a hand-written history of a correct step-dedupe run."""
    result = check(CLEAN)
    assert (result.status, result.violations) == (OK, ())


def test_checks_are_silent_on_a_simulated_correct_run(seed_dir):
    """Every check reports 'ok' on the model's step-dedupe run of preemption_retry."""
    result = sim.run_scenario(sim.load_scenario(seed_dir / "preemption_retry.toml"), "step-dedupe")
    assert set(result.checks.status().values()) == {OK}


def test_lost_update_fires_on_write_over_unexpected_content():
    """lost_update fires when an applied write replaced content other than its author's expected content."""
    history = _history(_apply("s2", hash_before="human", expected_prior_hash="h1", index=7))
    result = lost_update(history)
    assert result.status == VIOLATED
    violation, = result.violations
    assert (violation.invariant, violation.step, violation.event_index, violation.safety) == \
        ("lost_update", "s2", 7, True)
    assert violation.domain == "stale_plan"


def test_lost_update_compares_only_named_hunks():
    """lost_update compares the hunks the patch names, not the whole-file hash, when the history has them."""
    same_hunk = _apply(hash_before="hA", expected_prior_hash="hB",
                       hunks_before={"handler": "x"}, expected_prior_hunks={"handler": "x"})
    other_hunk = dict(same_hunk, hunks_before={"handler": "y"})
    assert lost_update(_history(same_hunk)).status == OK
    assert lost_update(_history(other_hunk)).status == VIOLATED


def test_lost_update_not_evaluable_without_truth_fields():
    """An applied delivery with neither hunk nor hash truth makes lost_update 'not_evaluable'."""
    result = lost_update(_history(_apply(hash_before=None, expected_prior_hash=None)))
    assert result.status == NOT_EVALUABLE and result.reason


def test_duplicate_effect_fires_on_second_application():
    """duplicate_effect fires when one step_id is applied twice, naming the retry's failure domain."""
    history = _history(_apply("s1"), _apply("s1", origin="retry", copy=2, journal_key="s1@1"))
    violation, = duplicate_effect(history).violations
    assert (violation.invariant, violation.step, violation.event_index) == ("duplicate_effect", "s1", 1)
    assert violation.domain == "lost_ack"


def test_duplicate_effect_ignores_deduped_replay():
    """A deduped second delivery is not a second effect."""
    history = _history(_apply("s1"), _apply("s1", verdict="deduped", origin="retry"))
    assert duplicate_effect(history).status == OK


def test_duplicate_effect_not_evaluable_without_step():
    """An applied delivery with no step makes duplicate_effect 'not_evaluable'."""
    assert duplicate_effect(_history(_apply(step=None))).status == NOT_EVALUABLE


def test_stale_accept_fires_on_buggy_real_executor():
    """stale_accept fires on a recorded real executor that applied a step stamped base 3 at rev 5."""
    history = _history(_apply("s3", stamped_base_rev=3, rev_at_apply=5))
    violation, = stale_accept(history).violations
    assert (violation.invariant, violation.step) == ("stale_accept", "s3")
    assert "3" in violation.detail and "5" in violation.detail


def test_stale_accept_ignores_unfenced_steps():
    """An unfenced (fence=none) step applied at another rev is not a stale accept."""
    assert stale_accept(_history(_apply(fence="none", stamped_base_rev=3, rev_at_apply=5))).status == OK


def test_stale_accept_not_evaluable_without_stamp():
    """An applied delivery lacking stamped_base_rev makes stale_accept 'not_evaluable'."""
    assert stale_accept(_history(_apply(stamped_base_rev=None))).status == NOT_EVALUABLE


def test_stale_accept_silent_on_model_protocols(seed_dir):
    """The model's own executor never stale-accepts, even under stamp_at=apply."""
    for name in ("concurrent_edit", "preemption_retry", "replan_drift"):
        result = sim.run_scenario(sim.load_scenario(seed_dir / f"{name}.toml"), "fence=step,stamp_at=apply")
        assert result.checks.status()["stale_accept"] == OK


def test_journal_loss_fires_on_applied_write_without_key():
    """journal_loss fires on a journal-deduped write recorded without its key."""
    violation, = journal_loss(_history(_apply(journal_key=None, preempted="after_write"))).violations
    assert violation.invariant == "journal_loss" and "after_write" in violation.detail


def test_journal_loss_fires_on_key_removed_before_ack():
    """journal_loss fires on a planted journal_remove of a key whose step was never acknowledged."""
    history = _history(_apply("s1"), {"actor": "executor", "event": "journal_remove", "step": "s1",
                                      "journal_key": "s1@0"}, _ack("s1"))
    violation, = journal_loss(history).violations
    assert (violation.step, violation.event_index) == ("s1", 1)


def test_journal_loss_silent_on_key_removed_after_ack():
    """Removing a key after its step was acknowledged is not a journal loss."""
    history = _history(_apply("s1"), _ack("s1"), {"actor": "executor", "event": "journal_remove", "step": "s1",
                                                  "journal_key": "s1@0"})
    assert journal_loss(history).status == OK


def test_journal_loss_ignores_writes_without_journal_dedupe():
    """A write under dedupe=off carries no key and is no journal loss."""
    assert journal_loss(_history(_apply(dedupe="off", journal_key=None))).status == OK


def test_journal_loss_not_evaluable_without_dedupe_mode():
    """Deliveries that never record their dedupe mode make journal_loss 'not_evaluable'."""
    assert journal_loss(_history(_apply(dedupe=None))).status == NOT_EVALUABLE


def test_spurious_rejection_fires_when_truth_matched():
    """A rejection of a step whose author's expected content was current is counted, not failed."""
    history = _history(_reject(hash_before="h1", expected_prior_hash="h1"))
    violation, = spurious_rejection(history).violations
    assert (violation.invariant, violation.safety) == ("spurious_rejection", False)


def test_spurious_rejection_fires_when_step_already_applied():
    """Rejecting a retry of an already-applied step is spurious: the client now thinks done work failed."""
    history = _history(_apply("s1"), _reject("s1", origin="retry"))
    violation, = spurious_rejection(history).violations
    assert violation.event_index == 1 and violation.domain == "lost_ack"


def test_spurious_rejection_silent_on_needed_rejection():
    """A rejection that prevented a real lost update is not spurious."""
    assert spurious_rejection(_history(_reject(hash_before="hX", expected_prior_hash="h1"))).status == OK


def test_spurious_rejection_is_availability_not_safety():
    """Spurious rejections are reported as availability findings, not as safety violations."""
    history = _history(_reject(hash_before="h1", expected_prior_hash="h1"))
    report = sim.check_history(history)
    assert report.safety_violations == [] and len(report.availability_findings) == 1


def test_spurious_rejection_not_evaluable_without_truth_fields():
    """A rejection lacking hash and hunk truth makes spurious_rejection 'not_evaluable', not 'ok'."""
    assert spurious_rejection(_history(_reject(hash_before=None, expected_prior_hash=None))).status == NOT_EVALUABLE


def test_minimal_real_history_is_not_evaluable_not_ok():
    """A real-system history with only step and verdict leaves the field-hungry checks 'not_evaluable'."""
    history = _history({"actor": "executor", "event": "deliver", "step": "s1", "verdict": "applied"})
    status = sim.check_history(history).status()
    assert status["lost_update"] == status["stale_accept"] == status["journal_loss"] == NOT_EVALUABLE


def test_check_history_reads_jsonl_file(tmp_path):
    """check_history reads a JSON-lines file and gives the same report as the in-memory history."""
    history = _history(_apply("s1"), _apply("s1", origin="duplicate"))
    path = tmp_path / "h.jsonl"
    path.write_text(history.to_jsonl(), encoding="utf-8")
    assert sim.check_history(path).status() == sim.check_history(history).status()


def test_workspace_checks_have_stable_names():
    """The workspace checks are lost_update, duplicate_effect, stale_accept, journal_loss (safety) and
    spurious_rejection (availability, counted as spurious_rejections)."""
    assert [c.name for c in CHECKS] == [
        "lost_update", "duplicate_effect", "stale_accept", "journal_loss", "spurious_rejection"]
    assert [c.safety for c in CHECKS] == [True, True, True, True, False]
    assert SAFETY_INVARIANTS == ("lost_update", "duplicate_effect", "stale_accept", "journal_loss")
    assert CHECKS[-1].column == "spurious_rejections"


def test_every_check_declares_the_fields_it_needs():
    """Each check names the delivery fields it needs, the verdict among them."""
    for spec in CHECKS:
        assert "verdict" in spec.requires["deliver"], spec.name


def test_spurious_overlap_rejection_under_pipeline_off():
    """A plan rejected for overlap while pipeline=off dispatches in order is counted as spurious."""
    plan = {"actor": "planner", "event": "plan", "verdict": "rejected:overlap", "pipeline": "off"}
    violation, = spurious_rejection(_history(plan)).violations
    assert violation.safety is False and violation.step is None
    assert spurious_rejection(_history(dict(plan, pipeline="on"))).status == OK


def test_deliveries_cut_short_before_the_write_do_not_make_checks_unjudgeable(make_scenario):
    """A run whose only delivery was killed before the write has no verdict anywhere: that is what happened,
    not a recorder that never writes verdicts, so every check judges it (and a drift rejection still counts)."""
    from sim.registry import FAMILIES

    family = FAMILIES.get("workspace")
    scenario = make_scenario(["plan", "dispatch s1", "preempt before_write", "deliver s1", "replan", "retry s1"])
    history = family.replay(scenario, family.parse_protocol("step-dedupe")).history
    assert [e.get("verdict") for e in history if e.event == "deliver"] == [None]
    report = family.check(history)
    assert not report.not_evaluable
    stripped = [dict(e.to_dict(), verdict=None) if e.event == "deliver" else e.to_dict() for e in history]
    from sim.core.history import History

    assert not family.check(History.from_dicts(stripped)).not_evaluable


def test_skipped_deliveries_do_not_make_checks_unjudgeable(make_scenario):
    """drift_check=reject refuses s1 at dispatch, so 'deliver s1' is skipped and records no step or verdict;
    the checks still judge the run and the drift rejection is counted."""
    from sim.registry import FAMILIES

    family = FAMILIES.get("workspace")
    scenario = make_scenario(["plan", "human_edit app.py", "dispatch s1", "deliver s1"])
    history = family.replay(scenario, family.parse_protocol("step-dedupe,drift_check=reject")).history
    assert [bool(e.get("skipped")) for e in history if e.event == "deliver"] == [True]
    report = family.check(history)
    assert not report.not_evaluable
    assert [v.invariant for v in report.availability_findings] == []  # the edit made the plan stale: a fair refusal
    assert [e.get("verdict") for e in history if e.event == "dispatch"] == ["rejected:drift"]
