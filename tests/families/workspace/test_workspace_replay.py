"""Replaying a workspace order (replay.py): the seed table's cells, skipped events, run limits, verdicts
and outcomes, the state key, and runs as pure functions of (scenario, protocol, order) -- the same bytes
across processes and hash seeds."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import sim
from sim.core.result import run_scenario as run
from sim.families.workspace import FAMILY
from sim.families.workspace.replay import outcome_of, replay, verdicts_of
from sim.families.workspace.scenario import Action, build_scenario

PRESET_NAMES = ("none", "plan", "step", "step-dedupe")
SEEDS = ("concurrent_edit", "preemption_retry", "replan_drift")

#: A scenario that touches every source of possible hash-order dependence: several files and hunks, an overlap
#: check over hunk sets, a re-plan, duplicates, preemptions and human hunk edits.
BUSY = {
    "name": "busy",
    "files": {"app.py": {"handler": "h0", "tests": "t0", "docs": "d0"}, "lib.py": "l0",
              "cfg.toml": {"a": "1", "b": "2"}},
    "plan": [{"id": "s1", "path": "app.py", "patch": {"handler": "h1", "docs": "d1"}},
             {"id": "s2", "path": "lib.py", "patch": "l1"},
             {"id": "s3", "path": "cfg.toml", "patch": {"b": "3", "a": "0"}}],
    "replan": [{"id": "s3", "path": "cfg.toml", "patch": {"a": "9"}}],
    "events": ["plan", "dispatch s1", "duplicate s1", "human_edit app.py#tests t-h", "preempt after_write",
               "deliver s1", "deliver s1", "retry s1", "dispatch s2", "deliver s2", "lose_ack s2", "replan stale",
               "human_edit cfg.toml#b", "dispatch s3", "deliver s3", "preempt", "deliver s1", "ack s3"],
}
PROTOCOLS = ("none", "plan", "step", "step-dedupe",
             "step-dedupe,journal_write=after_write,pipeline=on,overlap_check=on",
             "fence=step,stamp_at=apply,dedupe=memory", "step,drift_check=reject")

PROGRAM = f"""
import sim
from sim.families.workspace.scenario import Action, build_scenario
scenario = build_scenario({BUSY!r})
seeds = [sim.load_scenario(f"scenarios/seed/{{n}}.toml")
         for n in ("concurrent_edit", "preemption_retry", "replan_drift")]
import sys
for protocol in {PROTOCOLS!r}:
    for s in [scenario] + seeds:
        sys.stdout.write(sim.run_scenario(s, protocol).history.to_jsonl())
"""


def run_scenario(scenario, protocol=None):
    """Run a workspace scenario under a protocol (default: the scenario's own) with the family's checks."""
    return run(FAMILY, scenario, protocol)


@pytest.mark.parametrize("scenario_name", SEEDS)
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_seed_cell_meets_expect(seed_dir, scenario_name, preset):
    """Each seed scenario under each preset gives the verdict its [expect] table names."""
    scenario = sim.load_scenario(seed_dir / f"{scenario_name}.toml")
    result = run_scenario(scenario, preset)
    assert result.expect == scenario.expect[preset]
    assert result.outcome == result.expect.outcome
    assert result.expectation_met is True


def test_run_scenario_default_protocol_is_scenario_protocol(make_scenario):
    """run_scenario with no protocol uses the scenario's own protocol."""
    result = run_scenario(make_scenario(["plan"], protocol="plan"))
    assert result.protocol.label == "plan"


def test_replay_with_other_events(make_scenario):
    """replay runs a given event list instead of the scenario's own."""
    scenario = make_scenario(["plan"])
    result = replay(scenario, sim.PRESETS["none"], events=list(make_scenario(["plan", "dispatch s1"]).events))
    assert [e.event for e in result.history] == ["plan", "dispatch"]
    assert [str(e) for e in result.events] == ["plan", "dispatch s1"]


def test_replay_event_limit_keeps_partial_history(make_scenario):
    """A replay that hits its kernel-event limit says 'event_limit' and still returns what it recorded."""
    scenario = make_scenario(["plan", "dispatch s1", "deliver s1", "ack s1", "dispatch s2", "deliver s2"])
    result = replay(scenario, sim.PRESETS["step"], max_kernel_events=12)
    assert result.end.reason == "event_limit"
    assert 0 < len(result.history) < 6


def test_replay_of_full_order_ends_completed(make_scenario):
    """A replay that runs its whole event order ends with 'completed'."""
    result = replay(make_scenario(["plan", "dispatch s1", "deliver s1"]), sim.PRESETS["step"])
    assert result.end.reason == "completed"
    assert len(result.history) == 3


def test_skipped_events_are_reported_by_position(make_scenario):
    """Replay.skipped holds the positions of the events that had no effect; valid_order drops them."""
    scenario = make_scenario(["deliver s1", "plan", "dispatch s1", "deliver s1", "ack s1", "dispatch s1"])
    result = replay(scenario, sim.PRESETS["step"])
    assert result.skipped == frozenset({0, 5})
    assert [str(e) for e in result.valid_order()] == ["plan", "dispatch s1", "deliver s1", "ack s1"]
    assert result.last_skipped
    assert replay(scenario, sim.PRESETS["step"], result.valid_order()).skipped == frozenset()


def test_final_world_is_the_replays_state(make_scenario):
    """Replay.state is the final World: its state value holds the workspace's rev and files after the run."""
    result = replay(make_scenario(["plan", "dispatch s1", "deliver s1"]), sim.PRESETS["step"])
    state = result.state.state
    assert state.rev == 1 and state.files == ((("_", "v1"),),)


def test_state_key_is_equal_for_orders_with_the_same_future(make_scenario):
    """An order and its valid order reach the same state key; a further write changes it."""
    scenario = make_scenario(["deliver s1", "plan", "dispatch s1", "deliver s1"])
    full = replay(scenario, sim.PRESETS["step"])
    valid = replay(scenario, sim.PRESETS["step"], full.valid_order())
    assert FAMILY.state_key(full) == FAMILY.state_key(valid)
    human = replay(scenario, sim.PRESETS["step"], list(full.valid_order()) + [Action("human_edit", path="app.py")])
    assert FAMILY.state_key(human) != FAMILY.state_key(full)


def test_verdicts_skip_acks_and_outcome_writes_applied_twice(make_scenario):
    """verdicts_of lists delivery verdicts (not acks); outcome_of writes a second application 'applied twice'."""
    scenario = make_scenario(["plan", "dispatch s1", "duplicate s1", "deliver s1", "ack s1", "deliver s1"])
    history = replay(scenario, sim.PRESETS["none"]).history
    assert [v["verdict"] for v in verdicts_of(history)] == ["applied", "applied"]
    assert all(history[v["event_index"]].event == "deliver" for v in verdicts_of(history))
    assert outcome_of(history) == "applied twice"
    assert outcome_of(replay(make_scenario(["plan"]), sim.PRESETS["none"]).history) is None


def _all_histories() -> str:
    scenario = build_scenario(BUSY)
    seeds = [sim.load_scenario(f"scenarios/seed/{n}.toml") for n in ("concurrent_edit", "preemption_retry",
                                                                       "replan_drift")]
    return "".join(sim.run_scenario(s, p).history.to_jsonl() for p in PROTOCOLS for s in [scenario] + seeds)


def _in_subprocess(repo_root, hash_seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    completed = subprocess.run([sys.executable, "-c", PROGRAM], cwd=str(repo_root), env=env,
                               capture_output=True, text=True, timeout=120, check=True)
    return completed.stdout


def test_repeated_runs_in_process_give_same_bytes(monkeypatch, repo_root):
    """Running the same scenarios twice in one process gives identical history bytes."""
    monkeypatch.chdir(repo_root)
    assert _all_histories() == _all_histories()


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_history_bytes_equal_across_hash_seeds(monkeypatch, repo_root):
    """Two processes with PYTHONHASHSEED 0 and 12345 write identical history bytes, equal to this process's."""
    first = _in_subprocess(repo_root, "0")
    second = _in_subprocess(repo_root, "12345")
    assert first and first == second
    monkeypatch.chdir(repo_root)
    assert first == _all_histories()


def test_busy_scenario_exercises_the_model(monkeypatch, repo_root):
    """The determinism scenario does produce verdicts of several kinds (so the comparison means something)."""
    monkeypatch.chdir(repo_root)
    verdicts = {v["verdict"] for p in PROTOCOLS for v in sim.run_scenario(build_scenario(BUSY), p).verdicts}
    assert len(verdicts) >= 3
