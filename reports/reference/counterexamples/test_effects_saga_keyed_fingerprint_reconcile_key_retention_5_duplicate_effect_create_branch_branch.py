# Written by fencesim: a regression test of a minimal counterexample.
"""Regression: Minimal order violating duplicate_effect under keyed-fingerprint-reconcile,key_retention=5, found by the review of effects-saga (seed 16).

Kept the right way round: the first test holds once the design is fixed
(it asserts that the advisor's fix keyed-fingerprint-reconcile,irreversible_keys=on holds on the order); the second documents that the protocol under
review violates duplicate_effect on this order.
"""

from pathlib import Path

import pytest

import sim

SCENARIO = Path(__file__).with_name("effects_saga_keyed_fingerprint_reconcile_key_retention_5_duplicate_effect_create_branch_branch.toml")

def test_effects_saga_keyed_fingerprint_reconcile_key_retention_5_duplicate_effect_create_branch_branch_holds():
    """Under keyed-fingerprint-reconcile,irreversible_keys=on the minimal order violates no safety invariant."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "keyed-fingerprint-reconcile,irreversible_keys=on")
    assert result.violations == []


def test_effects_saga_keyed_fingerprint_reconcile_key_retention_5_duplicate_effect_create_branch_branch_violates_under_the_reviewed_protocol():
    """Under keyed-fingerprint-reconcile,key_retention=5 the minimal order still violates duplicate_effect (why this file exists)."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "keyed-fingerprint-reconcile,key_retention=5")
    assert "duplicate_effect" in [v.invariant for v in result.violations]
