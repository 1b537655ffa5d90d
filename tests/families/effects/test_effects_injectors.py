"""What each fault does when its point is reached (injectors.py), run through fault lists on the
effects-pr workload: zombies and owner changes against the lease fence, lost and late messages,
and faults that find nothing to act on."""

from __future__ import annotations

import functools

import pytest

import sim
from sim.families.effects import FAMILY
from sim.families.effects.driver import LEASE_TTL_S
from sim.families.effects.faults import BOUNDARIES, FaultEvent
from sim.families.effects.injectors import ZOMBIE_PAUSE_S


@functools.cache
def _base():
    return sim.load_workload("effects-pr").base


def _run(label, *faults):
    return FAMILY.replay(_base(), FAMILY.parse_protocol(label), faults)


def _violated(replay):
    return sorted({v.invariant for v in FAMILY.check(replay.history).safety_violations})


def test_a_zombie_wakes_after_its_lease_has_expired():
    """A stalled worker sleeps longer than the lease TTL, so its successor is already running when it wakes."""
    assert ZOMBIE_PAUSE_S > LEASE_TTL_S
    replay = _run("keyed-fingerprint-reconcile,lease_fence=off", FaultEvent("zombie", "open_pr", "after_intent"))
    expired = next(e for e in replay.history if e.event == "lease_expired")
    assert expired["zombie"] is True and expired["worker"] == "w1"


def _duplicated(replay):
    return sorted({v.step for v in FAMILY.check(replay.history).safety_violations if v.invariant == "duplicate_effect"})


@pytest.mark.parametrize("point", BOUNDARIES)
def test_an_unfenced_zombie_is_a_second_writer_of_the_task(point):
    """With lease_fence=off the zombie keeps running the task beside its successor: the keyless release is
    published twice (keys dedupe the PR) and the task is closed twice; without keys the PR is opened twice too."""
    zombie = FaultEvent("zombie", "open_pr", point)
    keyed = _run("keyed-fingerprint-reconcile,lease_fence=off", zombie)
    assert _violated(keyed) == ["duplicate_effect", "split_outcome"] and _duplicated(keyed) == ["publish_release"]
    assert {e.actor for e in keyed.history if e.event == "dispatched" and e["transition"] == "publish_release"} == {
        "w1", "w2"}
    unkeyed = _duplicated(_run("unkeyed-retry,lease_fence=off", zombie))
    assert unkeyed == (["publish_release"] if point == "after_receipt" else ["open_pr", "publish_release"])


def test_keys_on_every_endpoint_stop_duplicates_but_not_the_second_close():
    """With irreversible_keys=on every effect is keyed, so an unfenced zombie duplicates nothing -- but it
    still closes the task a second time, which only the lease fence prevents."""
    for point in BOUNDARIES:
        zombie = FaultEvent("zombie", "open_pr", point)
        assert _violated(_run("keyed-fingerprint-reconcile,lease_fence=off,irreversible_keys=on", zombie)) == [
            "split_outcome"]


@pytest.mark.parametrize("point", BOUNDARIES)
def test_the_lease_fence_keeps_a_zombie_harmless(point):
    """With the fence on, the zombie's appends are refused and nothing is violated."""
    replay = _run("keyed-fingerprint-reconcile", FaultEvent("zombie", "open_pr", point))
    assert _violated(replay) == []
    assert any(e.event == "append_refused" and e["worker"] == "w1" for e in replay.history)


def test_change_owner_without_the_fence_leaves_two_writers():
    """change_owner moves the lease while the old worker keeps running: unfenced, both publish the release."""
    fault = FaultEvent("change_owner", "open_pr", "before_intent")
    assert _violated(_run("keyed-fingerprint-reconcile,lease_fence=off", fault)) == ["duplicate_effect",
                                                                                    "split_outcome"]
    assert _violated(_run("keyed-fingerprint-reconcile", fault)) == []


def test_terminate_crashes_the_worker_and_a_replacement_resumes():
    """terminate crashes the worker; after the lease expires a new worker resumes from the log."""
    replay = _run("keyed-reconcile", FaultEvent("terminate", "open_pr", "after_commit"))
    assert [e.actor for e in replay.history if e.event == "crashed"] == ["w1"]
    resumed = [e for e in replay.history if e.event == "resumed" and not e.get("first")]
    assert resumed and resumed[0].actor == "w2" and _violated(replay) == []


def test_lost_request_never_commits():
    """lose_request loses the request before the external system sees it."""
    replay = _run("keyed-reconcile", FaultEvent("lose_request", "open_pr", "after_dispatch"))
    assert [e.event for e in replay.history if e.event == "request_lost"] == ["request_lost"]
    assert [e["result"] for e in replay.history if e.event == "reconciled"] == ["not_found"]


def test_duplicate_request_is_deduplicated_by_key():
    """A duplicated request of a keyed creation is answered with the existing PR."""
    replay = _run("keyed-reconcile", FaultEvent("duplicate", "open_pr", "after_dispatch"))
    assert [e.event for e in replay.history if e.event == "request_duplicated"] == ["request_duplicated"]
    assert any(e.event == "deduplicated" for e in replay.history) and _violated(replay) == []


def test_foreign_object_appears_at_the_external_system():
    """foreign_object creates someone else's object carrying the task's marker."""
    replay = _run("keyed-reconcile", FaultEvent("foreign_object", "open_pr", "before_intent"))
    assert [e.event for e in replay.history if e.event == "foreign_created"] == ["foreign_created"]


def test_postcondition_failure_aborts_and_compensates():
    """postcondition_fails aborts the task; the committed PR is compensated and the task ends compensated."""
    replay = _run("keyed-reconcile", FaultEvent("postcondition_fails", "open_pr", "after_receipt"))
    assert any(e.event == "compensated" for e in replay.history)
    assert [e["outcome"] for e in replay.history if e.event == "task_terminal"] == ["compensated"]


def test_upgrade_deploys_version_two_mid_task():
    """upgrade changes the workflow to version 2 at its point."""
    replay = _run("keyed-reconcile", FaultEvent("upgrade", "open_pr", "after_intent"))
    assert [e["workflow_version"] for e in replay.history if e.event == "upgraded"] == [2]


@pytest.mark.parametrize("fault", [FaultEvent("retry_changed", "open_pr", "after_dispatch"),
                                   FaultEvent("unprovable", "open_pr", "reconcile"),
                                   FaultEvent("compensation_fails", "open_pr", "compensate")],
                         ids=str)
def test_a_fault_with_nothing_to_act_on_is_skipped(fault):
    """A fault whose moment never comes (no retry, no reconciliation, no abort) has no effect and is skipped."""
    replay = _run("keyed-fingerprint-reconcile", fault)
    assert replay.skipped == frozenset({0}) and replay.valid_order() == ()
