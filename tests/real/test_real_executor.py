"""The reference executor against real crashes: a fresh git repository per run, a SQLite journal, SIGKILL at
every instrumented point (and at random moments), recovery from disk alone."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.families.workspace import content
from sim.real import executor as reference
from sim.real.driver import ExecutorProcess, RealWorkspace, git_environment, reference_command, run_real
from sim.registry import FAMILIES

pytestmark = [pytest.mark.real, pytest.mark.skipif(shutil.which("git") is None, reason="needs git")]

WORKSPACE = FAMILIES.get("workspace")
RETRIED = ["plan", "dispatch s1", "deliver s1", "retry s1", "deliver s1", "ack s1", "dispatch s2", "deliver s2",
           "ack s2"]


def _scenario(make_scenario, events):
    return make_scenario(events=events)


def _commits_with_key(repo: Path, key: str) -> int:
    log = subprocess.run(["git", "log", "--format=%B"], cwd=repo, capture_output=True, text=True, check=True).stdout
    return sum(1 for line in log.splitlines() if line == f"{reference.KEY_TRAILER}: {key}")


def _violated(history) -> set[str]:
    return {v.invariant for v in WORKSPACE.check(history).safety_violations}


# -- the disk format is the model's -------------------------------------------------------------

hunk_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=6)
hunk_texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)


@given(st.dictionaries(hunk_names, hunk_texts, min_size=1, max_size=4))
@settings(max_examples=300, deadline=None)
def test_disk_format_round_trips_and_hashes_as_the_model_does(hunks):
    """A file written by the executor reads back as the same hunks, and its hash, computed from the disk
    format's own definition, equals the model's content hash."""
    assert reference.decode_file(reference.encode_file(hunks)) == hunks
    assert reference.file_hash(hunks) == content.file_hash(hunks)
    for text in hunks.values():
        assert reference.hunk_hash(text) == content.hunk_hash(text)


# -- SIGKILL at every instrumented point -----------------------------------------------------------

@pytest.mark.parametrize("point", reference.POINTS)
def test_killed_at_every_point_recovers_from_disk_and_applies_once(point, make_scenario, tmp_path):
    """step-dedupe (atomic journal): killed at the point during s1's first delivery, the restarted executor
    recovers from disk; the retry is applied or deduplicated, never applied twice; no check fails."""
    scenario = _scenario(make_scenario, RETRIED)
    protocol = WORKSPACE.parse_protocol("step-dedupe")
    run = run_real(scenario, protocol, pause_points={1: point}, keep=tmp_path / "run")
    history = run.replay.history
    first, second = [e for e in history if e.event == "deliver" and e.get("step") == "s1"]
    assert first.get("preempted") == point
    assert _commits_with_key(tmp_path / "run" / "repo", "s1@0") == 1
    assert _violated(history) == set()
    assert [e.get("verdict") for e in history if e.event == "deliver"][-1] == "applied"  # s2
    recovered = run.incidents[0].recovered
    if point in ("before_write", "after_intent", "mid_write"):
        assert first.get("verdict") is None and second.get("verdict") == "applied"
    else:
        assert first.get("verdict") == "applied" and second.get("verdict") == "deduped"
        assert first.get("journal_key") == "s1@0"
    if point == "after_intent":
        assert recovered["intents_dropped"] == ["s1@0"]
    if point == "mid_write":
        assert recovered["torn_write_discarded"], "the replaced but uncommitted file must be discarded"
    if point == "after_commit":
        assert recovered["intents_completed"] == ["s1@0"]
    assert run.rev == 2 and run.files == {"app.py": {"_": "v2"}}


def test_after_write_journal_loses_the_key_for_real(make_scenario, tmp_path):
    """journal_write=after_write, killed after the commit: the restarted executor has no key (journal_loss);
    with no fence the retry writes s1 a second time -- two commits carry its key."""
    scenario = _scenario(make_scenario, RETRIED)
    for text, expected in (("step-dedupe,journal_write=after_write", {"journal_loss"}),
                           ("fence=none,dedupe=journal,journal_write=after_write", {"journal_loss", "duplicate_effect"})):
        keep = tmp_path / text.replace(",", "_").replace("=", "-")
        run = run_real(scenario, WORKSPACE.parse_protocol(text), pause_points={1: "after_write"}, keep=keep)
        assert expected <= _violated(run.replay.history), text
        assert run.incidents[0].recovered["journal_keys"] == []
        if "duplicate_effect" in expected:
            assert _commits_with_key(keep / "repo", "s1@0") == 2


def _planted(tmp_path: Path, name: str, old: str, new: str) -> list[str]:
    source = Path(reference.__file__).read_text()
    assert old in source, "the planted bug no longer matches the executor's code"
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(old, new))
    return [sys.executable, "-I", str(path)]


def test_a_recovery_that_forgets_intents_loses_keys_only_at_a_point_the_model_lacks(make_scenario, tmp_path):
    """Planted bug: recovery drops every intent, even one whose commit exists.  At the model's points the
    executor still agrees with the model (the key is marked applied before after_write); killed between the
    commit and the journal update -- a point only a real executor has -- it loses the key."""
    command = _planted(tmp_path, "forgetful", "                    if key in committed:", "                    if False:")
    scenario = _scenario(make_scenario, RETRIED)
    protocol = WORKSPACE.parse_protocol("step-dedupe")
    for point in reference.MODEL_POINTS:
        run = run_real(scenario, protocol, command=command, pause_points={1: point})
        assert _violated(run.replay.history) == set(), point
    run = run_real(scenario, protocol, command=command, pause_points={1: "after_commit"})
    assert "journal_loss" in _violated(run.replay.history)


def test_a_stale_git_lock_left_by_a_crash_is_removed_on_restart(tmp_path):
    """A git process killed mid-commit leaves .git/index.lock; the restarted executor removes it and works."""
    env = git_environment(tmp_path)
    workspace = RealWorkspace(tmp_path / "repo", {"app.py": {"_": "v0"}}, env)
    (workspace.repo / ".git" / "index.lock").write_text("")
    state = tmp_path / "state"
    state.mkdir()
    process = ExecutorProcess(reference_command(), workspace.repo, state, WORKSPACE.parse_protocol("step-dedupe"),
                              env, time.monotonic() + 60, tmp_path / "executor.log")
    try:
        ready = process.start()
        assert ready["locks_removed"] == ["index.lock"]
        records, killed = process.deliver(_message("s1", 0, workspace), None)
        assert killed is None and records[-1] == {"kind": "answer", "verdict": "applied"}
    finally:
        process.close()


def _message(step: str, rev: int, workspace: RealWorkspace) -> dict:
    return {"step": step, "path": "app.py", "patch": {"_": f"{step}-content"}, "origin": "dispatch", "copy": 1,
            "stamped_base_rev": rev, "stamped_pre_hash": workspace.hash("app.py")}


def test_random_sigkills_never_apply_a_step_twice(tmp_path):
    """SIGKILL at random moments of a delivery (inside git, inside SQLite, anywhere), then a retry of the same
    message: with step-dedupe every step ends applied exactly once, its key in the journal, the repository
    sound.  The kill times are random, so this is a search, not a proof; the seed keeps the delays the same."""
    rng = random.Random(2026)
    env = git_environment(tmp_path)
    workspace = RealWorkspace(tmp_path / "repo", {"app.py": {"_": "v0"}}, env)
    state = tmp_path / "state"
    state.mkdir()
    process = ExecutorProcess(reference_command(), workspace.repo, state, WORKSPACE.parse_protocol("step-dedupe"),
                              env, time.monotonic() + 240, tmp_path / "executor.log")
    try:
        process.start()
        for number in range(24):
            step = f"s{number}"
            message = _message(step, workspace.rev, workspace)
            process.kill_during(message, rng.uniform(0.0, 0.06))
            records, _ = process.deliver(dict(message, origin="retry", copy=2), None)
            assert records[-1]["verdict"] in ("applied", "deduped"), (step, records)
            assert _commits_with_key(workspace.repo, f"{step}@{message['stamped_base_rev']}") == 1, step
            assert f"{step}@{message['stamped_base_rev']}" in process.ready["journal_keys"] or \
                records[-1]["verdict"] == "applied"
    finally:
        process.close()
    fsck = subprocess.run(["git", "fsck", "--no-progress"], cwd=workspace.repo, capture_output=True, text=True, env=env)
    assert fsck.returncode == 0, fsck.stderr
    kinds = {tuple(sorted(k for k, v in i.recovered.items() if v and k != "journal_keys")) for i in process.incidents}
    assert len(process.incidents) == 24 and kinds, kinds


# -- sample histories ----------------------------------------------------------------------------------

HISTORIES = {
    "clean": set(),
    "lost-update-duplicate": {"lost_update", "duplicate_effect"},
    "journal-loss": {"journal_loss"},
}


@pytest.mark.parametrize("name", sorted(HISTORIES))
def test_sample_histories_are_what_the_executor_records(name, repo_root):
    """Each sample history under scenarios/histories re-records byte for byte from its scenario (the real
    executor is deterministic: fixed commit dates, logical time) and fencesim check finds exactly its
    violations."""
    folder = repo_root / "scenarios" / "histories"
    scenario = FAMILIES.load_scenario(folder / f"{name}.toml")
    run = run_real(scenario, WORKSPACE.parse_protocol(scenario.protocol))
    recorded = (folder / f"{name}.jsonl").read_text()
    assert run.replay.history.to_jsonl() == recorded
    from sim import check_history

    report = check_history(folder / f"{name}.jsonl")
    assert {v.invariant for v in report.safety_violations} == HISTORIES[name]
    assert not report.not_evaluable
