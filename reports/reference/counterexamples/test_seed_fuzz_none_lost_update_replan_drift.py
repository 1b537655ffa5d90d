# Written by fencesim: a regression test of a minimal counterexample.
"""Regression: Minimal order violating lost_update under none, found by the review of seed-fuzz (seed 3).

Kept the right way round: the first test holds once the design is fixed
(it asserts that the advisor's fix plan holds on the order); the second documents that the protocol under
review violates lost_update on this order.
"""

from pathlib import Path

import pytest

import sim

SCENARIO = Path(__file__).with_name("seed_fuzz_none_lost_update_replan_drift.toml")

def test_seed_fuzz_none_lost_update_replan_drift_holds():
    """Under plan the minimal order violates no safety invariant."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "plan")
    assert result.violations == []


def test_seed_fuzz_none_lost_update_replan_drift_violates_under_the_reviewed_protocol():
    """Under none the minimal order still violates lost_update (why this file exists)."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "none")
    assert "lost_update" in [v.invariant for v in result.violations]
