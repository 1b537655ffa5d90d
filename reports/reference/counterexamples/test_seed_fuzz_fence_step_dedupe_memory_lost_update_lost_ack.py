# Written by fencesim: a regression test of a minimal counterexample.
"""Regression: Minimal order violating lost_update under fence=step,dedupe=memory, found by the review of seed-fuzz (seed 945).

Kept the right way round: the first test holds once the design is fixed
(it asserts that the advisor's fix step,dedupe=memory,drift_check=reject holds on the order); the second documents that the protocol under
review violates lost_update on this order.
"""

from pathlib import Path

import pytest

import sim

SCENARIO = Path(__file__).with_name("seed_fuzz_fence_step_dedupe_memory_lost_update_lost_ack.toml")

def test_seed_fuzz_fence_step_dedupe_memory_lost_update_lost_ack_holds():
    """Under step,dedupe=memory,drift_check=reject the minimal order violates no safety invariant."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "step,dedupe=memory,drift_check=reject")
    assert result.violations == []


def test_seed_fuzz_fence_step_dedupe_memory_lost_update_lost_ack_violates_under_the_reviewed_protocol():
    """Under fence=step,dedupe=memory the minimal order still violates lost_update (why this file exists)."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "fence=step,dedupe=memory")
    assert "lost_update" in [v.invariant for v in result.violations]
