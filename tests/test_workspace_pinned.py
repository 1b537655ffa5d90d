"""The workspace family's results are pinned: digests of the --json output of a fixed
set of scenarios and seeds, recorded before the code moved into the family layout.

Only the parts that are the family's behaviour are hashed (histories, verdicts,
violations, sweep tallies, the first violating seed and its shrunk order, what
exhaustive search proves); fields added later beside them do not change a digest.
"""

from __future__ import annotations

import glob
import hashlib
import json

import pytest

PINNED = {
    "run_seed": "fe515ebe7e0f32731c44948e747b4c7b8c1dd0576da0661eabfb66a00656974d",
    "run_regressions": "d397c07aa5b93aa5dee1f8dd96bd291adf0fb8a0e7bb5976f64467591c98fea7",
    # Re-pinned twice.  Findings by failure domain: one counterexample per (protocol, invariant, domain), so
    # the lists hold more (none: lost_update @ stale_plan, @ lost_ack, @ duplicate_delivery, @ replan_drift);
    # the tallies and each invariant's shortest length per protocol are as before (checked when re-pinned).
    # Before that, when the shrinker's last pass began exporting the fewest-actor-switch order: the one change is
    # none/duplicate_effect's order, from "plan ; dispatch s1 ; deliver s1 ; retry s1 ; deliver s1" (the old
    # digest, f5cfb80a..., is that document with this order) to "... retry s1 ; deliver s1 ; deliver s1".
    # Re-pinned a third time (old c891ce2f...) when domains became causes: a re-planned step is replan_drift only
    # where the re-plan changed what happened, so the old 5-event replan_drift orders (the stale plan's order
    # plus a replan that played no part) are stale_plan runs now, and replan_drift's counterexample is a real
    # one (6 events under none and step-dedupe: "plan ; dispatch s1 ; replan ; deliver s1 ; dispatch s2 ;
    # deliver s2").  Tallies by invariant and each invariant's shortest length per protocol are unchanged.
    "fuzz_seed": "901002ce0cecebc122c9a061aedc66ddef7aabb90149ff47f15f028336cb2f98",
    # Re-pinned for the same pass (old e000d1bf...): duplicate_effect under fence=none,dedupe=memory now reads
    # "plan ; dispatch s1 ; retry s1 ; deliver s1 ; preempt ; deliver s1" and its lost_update "plan ; dispatch s1 ;
    # human_edit app.py#handler ; deliver s1" (as many switches as before, earlier in the alphabet).
    # Re-pinned with fuzz_seed for domains by cause (old 3c182013...): replan_drift's counterexample is 10 events
    # (was 5); tallies by invariant and shortest lengths unchanged.
    "fuzz_multi": "d256376057789c7b80a0312efd3099908aa73a1cc36ecee3ae3093452439e121",
    "exhaustive_tiny": "f1d57658e9ac6c3975750526a7ba299e8574f26ae450152e7919004b7ed07119",
}


def project_run(doc):
    """A run's pinned part; a violation's ``explanation`` (added later, beside the rest) is left out."""
    return [{**{k: r[k] for k in ("scenario", "protocol", "verdicts", "history")},
             "violations": [{k: v for k, v in violation.items() if k != "explanation"}
                            for violation in r["violations"]]}
            for r in doc]


def project_fuzz(doc):
    return {
        "runs": doc["runs"], "violating_runs": doc["violating_runs"],
        "by_protocol": {p: {"runs": t["runs"], "violating_runs": t["violating_runs"],
                            "by_invariant": t["violating_runs_by_invariant"],
                            "spurious_rejections": t["spurious_rejections"]}
                        for p, t in doc["by_protocol"].items()},
        "counterexamples": [{k: c[k] for k in ("protocol", "invariant", "events", "seed", "run", "original_events")}
                            for c in doc["counterexamples"]],
    }


def project_exhaustive(doc):
    return [{"protocol": p["protocol"], "proved_absent": p["proved_absent"],
             "shortest": {n: v["shortest_events"] for n, v in p["violations"].items()}} for p in doc["protocols"]]


def digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _json(cli, *args):
    done = cli(*args)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def _seed_files(repo_root, folder):
    return sorted(glob.glob(str(repo_root / "scenarios" / folder / "*.toml")))


@pytest.mark.slow
def test_replays_are_unchanged(cli, repo_root):
    """Seed scenarios and regression files replay to the pinned histories and verdicts."""
    protocols = ["none", "plan", "step", "step-dedupe", "fence=step,stamp_at=apply",
                 "step-dedupe,journal_write=after_write"]
    args = [a for p in protocols for a in ("-p", p)]
    seed = _json(cli, "run", *_seed_files(repo_root, "seed"), *args, "--json")
    assert digest(project_run(seed)) == PINNED["run_seed"]
    regressions = sorted(glob.glob(str(repo_root / "scenarios" / "regressions" / "seed_fuzz_*.toml")))
    assert digest(project_run(_json(cli, "run", *regressions, "--json"))) == PINNED["run_regressions"]


@pytest.mark.slow
def test_sweeps_and_shrinks_are_unchanged(cli, tmp_path):
    """Sweep tallies, first violating seeds and shrunk orders match the pinned digests."""
    common = ["--no-advise", "--json", "--out", str(tmp_path), "--workers", "2"]
    seed = _json(cli, "fuzz", "--workload", "seed-fuzz", "-p", "none", "-p", "plan", "-p", "step-dedupe",
                 "--seeds", "300", *common)
    assert digest(project_fuzz(seed)) == PINNED["fuzz_seed"]
    multi = _json(cli, "fuzz", "--workload", "multi-file", "-p", "step", "-p", "fence=none,dedupe=memory",
                  "--seeds", "200", *common)
    assert digest(project_fuzz(multi)) == PINNED["fuzz_multi"]


@pytest.mark.slow
def test_exhaustive_proofs_are_unchanged(cli):
    """What exhaustive search proves on the tiny workload is pinned."""
    doc = _json(cli, "fuzz", "--workload", "tiny", "--exhaustive", "--max-events", "5",
                "-p", "none", "-p", "plan", "-p", "step-dedupe", "--json")
    assert digest(project_exhaustive(doc)) == PINNED["exhaustive_tiny"]
