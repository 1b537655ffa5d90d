"""The workers' policy (policy.py): what a worker does next from its own view -- approvals with a grace
period, blind retries without reconciliation, escalation when reconciliation cannot prove."""

from __future__ import annotations

import functools

import sim
from sim.families.effects import FAMILY
from sim.families.effects.faults import FaultEvent
from sim.families.effects.policy import APPROVAL_GRACE_S


@functools.cache
def _base():
    return sim.load_workload("effects-pr").base


def _run(label, *faults):
    return FAMILY.replay(_base(), FAMILY.parse_protocol(label), faults)


def _violated(replay):
    return sorted({v.invariant for v in FAMILY.check(replay.history).safety_violations})


def _times(replay, transition, *names):
    return {e.event: e.time for e in replay.history if e.get("transition") == transition and e.event in names}


SLOW = FaultEvent("slow_approval", "publish_release", "before_intent")


def test_approval_on_waits_for_the_human_however_late():
    """With approval=on the worker asks and waits until the (two days late) approval, then publishes."""
    replay = _run("keyed-fingerprint-reconcile", SLOW)
    times = _times(replay, "publish_release", "approval_requested", "approved", "intent_recorded")
    assert times["approval_requested"] < times["approved"] < times["intent_recorded"]
    assert _violated(replay) == []


def test_approval_off_asks_then_goes_ahead_after_the_grace_period():
    """With approval=off the worker still asks, but publishes unapproved once the grace period has passed."""
    replay = _run("keyed-fingerprint-reconcile,approval=off", SLOW)
    times = _times(replay, "publish_release", "approval_requested", "approved", "intent_recorded")
    assert APPROVAL_GRACE_S == 600.0
    assert times["intent_recorded"] - times["approval_requested"] >= APPROVAL_GRACE_S
    assert times["intent_recorded"] < times["approved"]
    assert _violated(replay) == ["unapproved_irreversible"]


def test_approval_off_with_a_prompt_human_waits_for_the_approval():
    """A human who answers within the grace period is waited for, so nothing is unapproved."""
    replay = _run("keyed-fingerprint-reconcile,approval=off")
    times = _times(replay, "publish_release", "approval_requested", "approved", "intent_recorded")
    assert times["approval_requested"] < times["approved"] < times["intent_recorded"]
    assert _violated(replay) == []


def test_approval_follows_compensation_by_default():
    """compensation=off also turns the approval wait off unless approval is set."""
    assert _violated(_run("keyed-fingerprint-reconcile,compensation=off", SLOW)) == ["unapproved_irreversible"]
    assert _violated(_run("keyed-fingerprint-reconcile,compensation=off,approval=on", SLOW)) == []


LOST = FaultEvent("lose_response", "open_pr", "after_commit")


def _open_pr_steps(replay):
    return [(e.event, e.get("outcome") or e.get("attempt") or e.get("result")) for e in replay.history
            if e.get("transition") == "open_pr" and e.event in ("timed_out", "dispatched", "reconciled",
                                                                 "human_exception", "deduplicated", "committed")]


def test_reconcile_off_retries_an_unknown_outcome_blindly():
    """With reconcile=off an unknown outcome is dispatched again under the same key, not escalated."""
    replay = _run("keyed,on_timeout=unknown", LOST)
    assert _open_pr_steps(replay) == [("dispatched", 1), ("committed", None), ("timed_out", "unknown"),
                                      ("dispatched", 2), ("deduplicated", None)]
    assert _violated(replay) == []


def test_blind_retry_without_keys_duplicates_the_effect():
    """The same blind retry without idempotency keys commits a second PR."""
    replay = _run("unkeyed-retry,on_timeout=unknown", LOST)
    assert ("dispatched", 2) in _open_pr_steps(replay)
    assert _violated(replay) == ["duplicate_effect", "lost_success"]


def test_reconcile_on_looks_before_retrying():
    """With reconcile=on the unknown outcome is reconciled (found) and never dispatched again."""
    replay = _run("keyed-reconcile", LOST)
    assert _open_pr_steps(replay) == [("dispatched", 1), ("committed", None), ("timed_out", "unknown"),
                                      ("reconciled", "found")]


def test_unprovable_reconciliation_is_escalated_to_a_human():
    """When reconciliation cannot prove the outcome the worker escalates and waits for the human."""
    replay = _run("keyed-reconcile", LOST, FaultEvent("unprovable", "open_pr", "reconcile"))
    assert ("human_exception", None) in _open_pr_steps(replay)
    assert FAMILY.measure(replay)["tasks_escalated"] == 1
    assert _violated(replay) == []

