"""A run is a pure function of (scenario, protocol, order): same bytes across processes and hash seeds."""

from __future__ import annotations

import os
import subprocess
import sys

import sim
from sim.scenario import build_scenario

#: A scenario that touches every source of possible hash-order dependence: several files and hunks, an overlap
#: check over hunk sets, a re-plan, duplicates, preemptions and human hunk edits.
BUSY = {
    "name": "busy",
    "files": {"app.py": {"handler": "h0", "tests": "t0", "docs": "d0"}, "lib.py": "l0", "cfg.toml": {"a": "1", "b": "2"}},
    "plan": [{"id": "s1", "path": "app.py", "patch": {"handler": "h1", "docs": "d1"}},
             {"id": "s2", "path": "lib.py", "patch": "l1"},
             {"id": "s3", "path": "cfg.toml", "patch": {"b": "3", "a": "0"}}],
    "replan": [{"id": "s3", "path": "cfg.toml", "patch": {"a": "9"}}],
    "events": ["plan", "dispatch s1", "duplicate s1", "human_edit app.py#tests t-h", "preempt after_write",
               "deliver s1", "deliver s1", "retry s1", "dispatch s2", "deliver s2", "lose_ack s2", "replan stale",
               "human_edit cfg.toml#b", "dispatch s3", "deliver s3", "preempt", "deliver s1", "ack s3"],
}
PROTOCOLS = ("none", "plan", "step", "step-dedupe", "step-dedupe,journal_write=after_write,pipeline=on,overlap_check=on",
             "fence=step,stamp_at=apply,dedupe=memory", "step,drift_check=reject")

PROGRAM = f"""
import sim
from sim.scenario import build_scenario
scenario = build_scenario({BUSY!r})
seeds = [sim.load_scenario(f"scenarios/seed/{{n}}.toml") for n in ("concurrent_edit", "preemption_retry", "replan_drift")]
import sys
for protocol in {PROTOCOLS!r}:
    for s in [scenario] + seeds:
        sys.stdout.write(sim.run_scenario(s, protocol).history.to_jsonl())
"""


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
