"""No false alarms: a protocol that exhaustive search proves safe within its bound shows no safety violation
in a long sweep of the same workload (this test runs FENCESIM_FALSE_ALARM_SEEDS seeds, 3,000 by default;
benchmarks/bench_search.py runs 100,000)."""

from __future__ import annotations

import os

import pytest

from sim.registry import FAMILIES
from sim.search.exhaustive import ExploreOptions, explore
from sim.search.sweep import sweep

SEEDS = int(os.environ.get("FENCESIM_FALSE_ALARM_SEEDS", "3000"))
SAFE = [("tiny", "plan", 7), ("tiny", "step-dedupe,drift_check=reject", 7), ("retries", "none,dedupe=journal", 6),
        ("effects-pr", "keyed-fingerprint-reconcile,irreversible_keys=on", 2),
        ("effects-zombie", "keyed-fingerprint-reconcile", 2)]


@pytest.mark.slow
@pytest.mark.quality
@pytest.mark.parametrize("case", SAFE, ids=[f"{w}:{p}" for w, p, _ in SAFE])
def test_proved_safe_protocols_never_cry_wolf(case):
    """Exhaustive search proves every invariant absent within the bound, and the sweep finds no violation."""
    name, label, bound = case
    workload = FAMILIES.load_workload(name)
    family = FAMILIES.family_for(workload)
    protocol = family.parse_protocol(label)
    proof = explore(family, workload, protocol, ExploreOptions(max_events=bound, workers=2))
    assert proof.complete and not proof.violated
    summary, _ = sweep(family, workload, [protocol], SEEDS, workers=2)
    assert summary.tallies[protocol.label].violating_runs == 0
