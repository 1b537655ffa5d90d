"""The runtime model: scripted stories, protocol knobs, determinism, input errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sim.errors import ScenarioError
from sim.protocol import parse_protocol
from sim.runtime import load_runtime_scenario, run_runtime_scenario
from sim.runtime.faults import FaultEntry, FaultSchedule
from sim.runtime.runner import run_autonomous
from sim.runtime.workflow import saga
from sim.tomlfile import read_toml

ROOT = Path(__file__).resolve().parents[1]
STORIES = ROOT / "scenarios" / "runtime"


def load(path: Path):
    data, text = read_toml(path)
    return load_runtime_scenario(path, data, text)


def run(path: Path, label: str):
    return run_runtime_scenario(load(path), parse_protocol(label, "runtime"))


def invariants(result):
    return sorted({v.invariant for v in result.violations})


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text('family = "runtime"\n' + body, encoding="utf-8")
    return path


@pytest.mark.parametrize("story", sorted(STORIES.glob("*.toml")), ids=lambda p: p.stem)
def test_stories_meet_every_expectation(story):
    """Every [expect] entry of every story holds under its protocol."""
    scenario = load(story)
    assert scenario.expect
    for label, expected in scenario.expect.items():
        result = run_runtime_scenario(scenario, parse_protocol(label, "runtime"))
        assert result.last_verdict == expected, (story.name, label)


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


def test_optimistic_checkpoint_is_unverified():
    """A checkpoint written right after dispatch claims work no receipt proves."""
    rt, _ = run_autonomous(parse_protocol("keyed-fingerprint-reconcile,checkpoint=optimistic", "runtime"),
                           saga(["open_pr"]), ["t"])
    from sim.checks.runtime import unverified_checkpoint

    assert unverified_checkpoint(rt.history).violations


def test_human_exception_when_reconciliation_cannot_prove():
    """An unprovable reconciliation goes to a human, who records what the Git host shows."""
    schedule = FaultSchedule([FaultEntry("t", "open_pr", "after_commit", "lose_response"),
                              FaultEntry("t", "open_pr", "reconcile", "unprovable")])
    rt, _ = run_autonomous(parse_protocol("keyed-fingerprint-reconcile", "runtime"), saga(["open_pr"]), ["t"], schedule)
    events = [e.event for e in rt.history]
    assert "human_exception" in events and "human_resolved" in events
    assert rt.verdicts[-1]["verdict"] == "done:human"


def test_deleting_schedule_entries_still_gives_a_valid_run():
    """Any sub-schedule of a fault schedule runs to a terminal task (faults are data)."""
    entries = [FaultEntry("t", "open_pr", "after_dispatch", "terminate"),
               FaultEntry("t", "open_pr", "after_dispatch", "lose_request"),
               FaultEntry("t", "open_pr", "reconcile", "unprovable")]
    for drop in range(len(entries)):
        kept = entries[:drop] + entries[drop + 1:]
        rt, end = run_autonomous(parse_protocol("keyed-reconcile", "runtime"), saga(["open_pr"]), ["t"],
                                 FaultSchedule(kept))
        assert end.reason == "completed"
        assert any(e.event == "task_terminal" for e in rt.history)


@pytest.mark.parametrize("body, needle", [
    ('events = ["accept task_1", "explode"]\n', "unknown event"),
    ('events = ["accept task_1", "intent open_prr"]\n', "unknown transition"),
    ('events = ["accept task_1", "lease_expire w1 w2"]\n', "lease_expire W -> W2"),
    ('events = ["@5 accept task_1", "@2 lease w1"]\n', "back in time"),
    ('workflow = ["nope"]\nevents = ["accept task_1"]\n', "unknown transition"),
    ('colour = 1\nevents = ["accept task_1"]\n', "unknown key"),
])
def test_bad_scenarios_name_file_and_line(tmp_path, body, needle):
    """A malformed runtime scenario raises ScenarioError with file:line and what is allowed."""
    path = write(tmp_path, body)
    with pytest.raises(ScenarioError) as caught:
        load(path)
    assert needle in caught.value.message
    assert caught.value.where.startswith(f"{path}:")


SCRIPT = """
import sys
from pathlib import Path
from sim.protocol import parse_protocol
from sim.runtime import load_runtime_scenario, run_runtime_scenario
from sim.tomlfile import read_toml
path = Path(sys.argv[1])
data, text = read_toml(path)
result = run_runtime_scenario(load_runtime_scenario(path, data, text), parse_protocol(sys.argv[2], "runtime"))
sys.stdout.write(result.history.to_jsonl())
"""


def test_history_bytes_identical_across_processes_and_hash_seeds():
    """The same scenario gives the same history bytes under different PYTHONHASHSEED values."""
    outputs = []
    for hash_seed in ("1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(STORIES / "saga_preview_failure.toml"),
                               "unkeyed-retry"], capture_output=True, env=env, cwd=ROOT, check=True)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and outputs[0].count(b"\n") > 20
