# Written by fencesim: a regression test of a minimal counterexample.
"""Regression: Minimal order violating duplicate_effect under unkeyed-retry, found by the review of effects-saga (seed 20).

Kept the right way round: the first test holds once the design is fixed
(it asserts that the advisor's fix unkeyed-retry,delivery=at_most_once holds on the order); the second documents that the protocol under
review violates duplicate_effect on this order.
"""

from pathlib import Path

import pytest

import sim

SCENARIO = Path(__file__).with_name("effects_saga_unkeyed_retry_duplicate_effect_publish_release_release.toml")

def test_effects_saga_unkeyed_retry_duplicate_effect_publish_release_release_holds():
    """Under unkeyed-retry,delivery=at_most_once the minimal order violates no safety invariant."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "unkeyed-retry,delivery=at_most_once")
    assert result.violations == []


def test_effects_saga_unkeyed_retry_duplicate_effect_publish_release_release_violates_under_the_reviewed_protocol():
    """Under unkeyed-retry the minimal order still violates duplicate_effect (why this file exists)."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "unkeyed-retry")
    assert "duplicate_effect" in [v.invariant for v in result.violations]
