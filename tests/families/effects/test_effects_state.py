"""The durable task state (state.py): the reducer of the event log, fingerprints and default heads."""

from __future__ import annotations

from sim.families.effects.state import EventLog, TaskView, default_head, fingerprint_of


def _log(*events):
    log = EventLog()
    for event, fields in events:
        log.append("t", event, fields)
    return log


def test_the_reducer_walks_a_transition_through_its_moments():
    """intent -> dispatched -> unknown -> found -> done, with generation, key and attempts recorded."""
    log = _log(("intent_recorded", {"transition": "open_pr", "generation": 1, "key": "k", "fingerprint": "f"}),
               ("dispatched", {"transition": "open_pr"}))
    view = log.reduce("t")
    assert view.status("open_pr") == "dispatched" and view.get("open_pr").attempts == 1
    assert (view.get("open_pr").key, view.get("open_pr").fingerprint) == ("k", "f")
    log.append("t", "timed_out", {"transition": "open_pr", "outcome": "unknown"})
    assert log.reduce("t").status("open_pr") == "unknown"
    log.append("t", "reconciled", {"transition": "open_pr", "result": "found"})
    log.append("t", "receipt_recorded", {"transition": "open_pr", "effect": "pull_request#1"})
    done = log.reduce("t")
    assert done.status("open_pr") == "done" and done.get("open_pr").effect == "pull_request#1"
    assert done.status("never_seen") == "pending"


def test_unprovable_reconciliation_and_escalation():
    """A reconciliation that proves nothing is 'unprovable'; a human exception 'escalated'."""
    view = TaskView("t")
    view.apply("reconciled", {"transition": "open_pr", "result": "unprovable"})
    assert view.status("open_pr") == "unprovable"
    view.apply("human_exception", {"transition": "open_pr"})
    assert view.status("open_pr") == "escalated"


def test_failure_aborts_and_a_migration_renames():
    """A failed transition aborts the task; a migration moves a transition's state to its new name."""
    view = _log(("receipt_recorded", {"transition": "open_pr", "effect": "pr#1"}),
                ("migrated", {"to_version": 2, "renamed": [["open_pr", "open_pull_request"]]}),
                ("transition_failed", {"transition": "create_preview"}),
                ("task_terminal", {"outcome": "compensated"})).reduce("t")
    assert view.version == 2 and view.status("open_pull_request") == "done" and "open_pr" not in view.transitions
    assert view.aborted and view.status("create_preview") == "failed" and view.terminal == "compensated"


def test_approvals_are_remembered_with_when_they_were_asked():
    """approval_requested records when the worker asked; approved records the approval."""
    view = _log(("approval_requested", {"transition": "publish_release", "at_s": 5.5}),
                ("approved", {"transition": "publish_release"})).reduce("t")
    assert view.approval_requested == {"publish_release": 5.5} and view.approved == {"publish_release"}


def test_fingerprint_is_canonical_and_short():
    """A fingerprint hashes the canonical arguments: key order does not matter, any value does; 12 hex digits."""
    assert fingerprint_of({"a": 1, "b": "x"}) == fingerprint_of({"b": "x", "a": 1})
    assert fingerprint_of({"a": 1}) != fingerprint_of({"a": 2})
    assert len(fingerprint_of({})) == 12


def test_default_head_is_a_stable_short_hash_of_the_task():
    """Without a head in the scenario, a task's head is a 7-digit hash of its name."""
    assert default_head("task_42") == default_head("task_42") != default_head("task_43")
    assert len(default_head("task_42")) == 7
