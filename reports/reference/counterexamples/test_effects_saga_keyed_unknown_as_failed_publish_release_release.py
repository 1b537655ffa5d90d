# Written by fencesim: a regression test of a minimal counterexample.
"""Regression: Minimal order violating unknown_as_failed under keyed, found by the review of effects-saga (seed 20).

Kept the right way round: the first test holds once the design is fixed
(it asserts that the advisor's fix keyed,on_timeout=unknown holds on the order); the second documents that the protocol under
review violates unknown_as_failed on this order.
"""

from pathlib import Path

import pytest

import sim

SCENARIO = Path(__file__).with_name("effects_saga_keyed_unknown_as_failed_publish_release_release.toml")

def test_effects_saga_keyed_unknown_as_failed_publish_release_release_holds():
    """Under keyed,on_timeout=unknown the minimal order violates no safety invariant."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "keyed,on_timeout=unknown")
    assert result.violations == []


def test_effects_saga_keyed_unknown_as_failed_publish_release_release_violates_under_the_reviewed_protocol():
    """Under keyed the minimal order still violates unknown_as_failed (why this file exists)."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "keyed")
    assert "unknown_as_failed" in [v.invariant for v in result.violations]
