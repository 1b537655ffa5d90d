# Written by fencesim: a regression test of a minimal counterexample.
"""Regression: Minimal order violating fingerprint_conflict under keyed, found by the review of effects-saga (seed 296).

Kept the right way round: the first test holds once the design is fixed
(it asserts that the advisor's fix unkeyed-retry,idempotency=key+fingerprint holds on the order); the second documents that the protocol under
review violates fingerprint_conflict on this order.
"""

from pathlib import Path

import pytest

import sim

SCENARIO = Path(__file__).with_name("effects_saga_keyed_fingerprint_conflict_create_preview_preview.toml")

def test_effects_saga_keyed_fingerprint_conflict_create_preview_preview_holds():
    """Under unkeyed-retry,idempotency=key+fingerprint the minimal order violates no safety invariant."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "unkeyed-retry,idempotency=key+fingerprint")
    assert result.violations == []


def test_effects_saga_keyed_fingerprint_conflict_create_preview_preview_violates_under_the_reviewed_protocol():
    """Under keyed the minimal order still violates fingerprint_conflict (why this file exists)."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "keyed")
    assert "fingerprint_conflict" in [v.invariant for v in result.violations]
