"""Running the effects model (runner.py): scripted stories, protocol knobs on scripts, runs of a task
under a fault list, and history bytes that do not depend on the process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import sim
from sim.families.effects import FAMILY
from sim.families.effects.checks import unverified_checkpoint
from sim.families.effects.faults import FaultEntry, FaultEvent, FaultSchedule
from sim.families.effects.runner import replay, run_autonomous, run_faults, run_script
from sim.families.effects.workflow import saga

ROOT = Path(__file__).resolve().parents[3]
STORIES = ROOT / "scenarios" / "runtime"


def protocol(label: str):
    return FAMILY.parse_protocol(label)


def run(path: Path, label: str):
    return sim.run_scenario(sim.load_scenario(path), label)


def invariants(result):
    return sorted({v.invariant for v in result.violations})


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text('family = "effects"\n' + body, encoding="utf-8")
    return path


@pytest.mark.parametrize("story", sorted(STORIES.glob("*.toml")), ids=lambda p: p.stem)
def test_stories_meet_every_expectation(story):
    """Every [expect] entry of every story holds under its protocol."""
    scenario = sim.load_scenario(story)
    assert scenario.expect
    for label, expected in scenario.expect.items():
        result = sim.run_scenario(scenario, label)
        assert result.last_verdict == expected.outcome, (story.name, label)
        assert result.expectation_met is True


def test_pr_lost_response_reconciles_and_records_receipt():
    """The replacement finds PR #812 by key, records it as the receipt, and nothing is violated."""
    result = run(STORIES / "pr_lost_response.toml", "keyed-fingerprint-reconcile")
    reconciled = [e for e in result.history if e.event == "reconciled"]
    receipts = [e for e in result.history if e.event == "receipt_recorded"]
    assert reconciled[0]["result"] == "found" and reconciled[0]["effect"] == "pull_request#812"
    assert receipts[0]["receipt"] == "pull_request#812" and receipts[0].actor == "w2"
    assert result.violations == []


def test_pr_lost_response_unkeyed_retry_duplicates_the_pr():
    """Without keys or reconciliation the replacement opens PR #813 beside #812."""
    result = run(STORIES / "pr_lost_response.toml", "unkeyed-retry")
    assert invariants(result) == ["duplicate_effect", "lost_success", "unknown_as_failed"]
    assert {e["effect"] for e in result.history if e.event == "committed"} == {"pull_request#812",
                                                                                 "pull_request#813"}


def test_release_without_approval_is_published_unapproved(stories_dir):
    """With approval=off the scripted release goes out without a human's approval."""
    result = run(stories_dir / "release_needs_approval.toml", "keyed-fingerprint-reconcile,approval=off")
    assert invariants(result) == ["unapproved_irreversible"]
    assert invariants(run(stories_dir / "release_needs_approval.toml", "keyed-fingerprint-reconcile")) == []


def test_compensation_off_strands_the_saga(stories_dir):
    """With compensation=off the failed saga closes with its branch, PR and preview owed."""
    result = run(stories_dir / "saga_preview_failure.toml", "keyed-fingerprint-reconcile,compensation=off")
    assert invariants(result) == ["unresolved_compensation"] and len(result.violations) == 3


def test_retry_with_changed_arguments_needs_fingerprints(tmp_path):
    """A regenerated request body under the same key is accepted by 'key' and rejected by 'key+fingerprint'."""
    path = write(tmp_path, 'task = "t"\nworkflow = ["open_pr"]\nevents = ["accept t", "lease w1", "deliver", '
                 '"intent open_pr", "dispatch open_pr", "commit open_pr", "lose_response open_pr", '
                 '"retry_changed open_pr", "commit open_pr"]\n')
    assert "fingerprint_conflict" in invariants(run(path, "keyed-reconcile"))
    strict = run(path, "keyed-fingerprint-reconcile")
    assert invariants(strict) == []
    assert "rejected:fingerprint_conflict" in [v["verdict"] for v in strict.verdicts]


def test_trusting_receipt_check_accepts_a_foreign_object(tmp_path):
    """A lookup by task marker that trusts any matching-looking PR records a false receipt."""
    path = write(tmp_path, 'task = "t"\nworkflow = ["open_pr"]\nevents = ["accept t", "lease w1", "deliver", '
                 '"intent open_pr", "dispatch open_pr", "lose_request open_pr", "foreign_object open_pr", '
                 '"timeout open_pr", "reconcile open_pr", "receipt open_pr"]\n')
    assert "false_receipt" in invariants(run(path, "keyed-reconcile,receipt_check=trusting"))
    assert invariants(run(path, "keyed-reconcile")) == []


def test_lease_fence_stops_a_zombie(tmp_path):
    """With the fence on, an expired holder's append is refused; off, the zombie's write lands."""
    path = write(tmp_path, 'task = "t"\nworkflow = ["open_pr"]\nevents = ["accept t", "lease w1", "deliver", '
                 '"intent open_pr", "lease_expire w1 -> w2", "deliver w2", "dispatch open_pr by w1", '
                 '"commit open_pr"]\n')
    fenced = run(path, "unkeyed-retry")
    assert [e.event for e in fenced.history if e.event == "append_refused"] == ["append_refused"]
    assert invariants(fenced) == []
    assert "duplicate_effect" in invariants(run(path, "unkeyed-retry,lease_fence=off"))


def _upgrade_story(tmp_path):
    return write(tmp_path, 'task = "t"\nevents = ["accept t", "lease w1", "deliver", "intent create_branch", '
                 '"dispatch create_branch", "commit create_branch", "respond create_branch", '
                 '"receipt create_branch", "intent open_pr", "dispatch open_pr", "commit open_pr", '
                 '"respond open_pr", "receipt open_pr", "upgrade 2", "crash w1"]\n')


def test_version_policies_after_an_upgrade(tmp_path):
    """none repeats the renamed step (duplicate PR, version mismatch); pinned and migrate do not."""
    path = _upgrade_story(tmp_path)
    assert invariants(run(path, "unkeyed-retry,version_policy=none")) == ["duplicate_effect", "version_mismatch"]
    assert invariants(run(path, "keyed-fingerprint-reconcile,version_policy=none")) == [
        "duplicate_effect", "version_mismatch"]
    assert invariants(run(path, "keyed-fingerprint-reconcile")) == []
    migrated = run(path, "keyed-fingerprint-reconcile,version_policy=migrate")
    assert invariants(migrated) == []
    assert "verify_publish_release" in [e.get("transition") for e in migrated.history if e.event == "receipt_recorded"]
    replayed = run(path, "keyed-fingerprint-reconcile,version_policy=replay")
    assert [e.event for e in replayed.history if e.event == "replay_divergence"] == ["replay_divergence"]
    assert invariants(replayed) == []


def test_script_reports_skipped_operations_by_position(tmp_path):
    """An operation that cannot happen is recorded skipped and its position reported; the rest still runs."""
    path = write(tmp_path, 'task = "t"\nworkflow = ["open_pr"]\nrecover = false\nevents = ["accept t", '
                 '"receipt open_pr by w1", "lease w1", "deliver", "accept t"]\n')
    result = run_script(sim.load_scenario(path), protocol("keyed"))
    assert result.skipped == frozenset({1, 4})
    assert [e["line"] for e in result.history if e.event == "skipped"] == ["receipt open_pr by w1", "accept t"]
    assert result.history[len(result.history) - 1].event == "run_ended"


def test_script_without_recovery_leaves_the_task_unfinished(tmp_path):
    """recover = false stops after the script: the task has no terminal outcome."""
    path = write(tmp_path, 'task = "t"\nworkflow = ["open_pr"]\nrecover = false\nevents = ["accept t", '
                 '"lease w1", "deliver", "intent open_pr"]\n')
    assert invariants(run(path, "keyed")) == ["no_terminal_outcome"]


def test_optimistic_checkpoint_is_unverified():
    """A checkpoint written right after dispatch claims work no receipt proves."""
    rt, _, _ = run_autonomous(protocol("keyed-fingerprint-reconcile,checkpoint=optimistic"), saga(["open_pr"]), ["t"])
    assert unverified_checkpoint(rt.history).violations
    rt, _, _ = run_autonomous(protocol("keyed-fingerprint-reconcile"), saga(["open_pr"]), ["t"])
    assert not unverified_checkpoint(rt.history).violations


def test_human_exception_when_reconciliation_cannot_prove():
    """An unprovable reconciliation goes to a human, who records what the Git host shows."""
    schedule = FaultSchedule([FaultEntry("t", "open_pr", "after_commit", "lose_response"),
                              FaultEntry("t", "open_pr", "reconcile", "unprovable")])
    rt, _, end = run_autonomous(protocol("keyed-fingerprint-reconcile"), saga(["open_pr"]), ["t"], schedule)
    events = [e.event for e in rt.history]
    assert "human_exception" in events and "human_resolved" in events
    assert rt.verdicts[-1]["verdict"] == "done:human"
    assert end.reason == "completed" and events[-1] == "run_ended"


def test_deleting_schedule_entries_still_gives_a_valid_run():
    """Any sub-schedule of a fault schedule runs to a terminal task (faults are data)."""
    entries = [FaultEntry("t", "open_pr", "after_dispatch", "terminate"),
               FaultEntry("t", "open_pr", "after_dispatch", "lose_request"),
               FaultEntry("t", "open_pr", "reconcile", "unprovable")]
    for drop in range(len(entries)):
        kept = entries[:drop] + entries[drop + 1:]
        rt, _, end = run_autonomous(protocol("keyed-reconcile"), saga(["open_pr"]), ["t"], FaultSchedule(kept))
        assert end.reason == "completed"
        assert any(e.event == "task_terminal" for e in rt.history)


def test_fault_list_run_reports_unfired_faults_as_skipped():
    """Under a fault list, a fault whose point is never reached (or finds nothing to act on) is skipped."""
    scenario = sim.load_workload("effects-pr").base
    faults = (FaultEvent("lose_response", "open_pr", "after_commit"),
              FaultEvent("compensation_fails", "open_pr", "compensate"))
    result = run_faults(scenario, protocol("keyed-reconcile"), faults)
    assert result.skipped == frozenset({1})
    assert result.valid_order() == faults[:1]
    assert [e.event for e in result.history if e.event == "response_lost"] == ["response_lost"]


def test_replay_runs_the_scenarios_own_order_or_the_given_faults(stories_dir):
    """replay plays a script's own operations, or the given fault list under the workers' policy."""
    story = sim.load_scenario(stories_dir / "pr_lost_response.toml")
    scripted = replay(story, protocol("keyed-reconcile"))
    assert len(scripted.events) == len(story.ops) and scripted.state[1] is None
    faulted = replay(story, protocol("keyed-reconcile"), [FaultEvent("lose_response", "open_pr", "after_commit")])
    _, driver = faulted.state
    assert driver.fired == [0] and faulted.skipped == frozenset()


def test_runs_of_many_tasks_are_independent():
    """Tasks run side by side under one schedule each end terminal, and their faults strike only them."""
    schedule = FaultSchedule([FaultEntry("a", "open_pr", "after_commit", "lose_response")])
    rt, _, end = run_autonomous(protocol("keyed-reconcile"), saga(["open_pr"]), ["a", "b"], schedule)
    terminal = {e["task"] for e in rt.history if e.event == "task_terminal"}
    assert end.reason == "completed" and terminal == {"a", "b"}
    assert {e["task"] for e in rt.history if e.event == "response_lost"} == {"a"}


SCRIPT = """
import sys
import sim
result = sim.run_scenario(sim.load_scenario(sys.argv[1]), sys.argv[2])
sys.stdout.write(result.history.to_jsonl())
"""


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_history_bytes_identical_across_processes_and_hash_seeds():
    """The same scenario gives the same history bytes under different PYTHONHASHSEED values."""
    outputs = []
    for hash_seed in ("1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(STORIES / "saga_preview_failure.toml"),
                               "unkeyed-retry"], capture_output=True, env=env, cwd=ROOT, check=True)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and outputs[0].count(b"\n") > 20
