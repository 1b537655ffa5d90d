# Written by fencesim: a regression test of a minimal counterexample.
"""Regression: Minimal order violating lost_success under unkeyed-retry, found by the review of effects-saga (seed 20).

Kept the right way round: the first test holds once the design is fixed
(it asserts that the advisor's fix keyed,irreversible_keys=on holds on the order); the second documents that the protocol under
review violates lost_success on this order.
"""

from pathlib import Path

import pytest

import sim

SCENARIO = Path(__file__).with_name("effects_saga_unkeyed_retry_lost_success_publish_release_release.toml")

def test_effects_saga_unkeyed_retry_lost_success_publish_release_release_holds():
    """Under keyed,irreversible_keys=on the minimal order violates no safety invariant."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "keyed,irreversible_keys=on")
    assert result.violations == []


def test_effects_saga_unkeyed_retry_lost_success_publish_release_release_violates_under_the_reviewed_protocol():
    """Under unkeyed-retry the minimal order still violates lost_success (why this file exists)."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "unkeyed-retry")
    assert "lost_success" in [v.invariant for v in result.violations]
