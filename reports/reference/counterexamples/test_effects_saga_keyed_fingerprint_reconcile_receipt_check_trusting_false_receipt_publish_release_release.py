# Written by fencesim: a regression test of a minimal counterexample.
"""Regression: Minimal order violating false_receipt under keyed-fingerprint-reconcile,receipt_check=trusting, found by the review of effects-saga (seed 82).

Kept the right way round: the first test holds once the design is fixed
(it asserts that the advisor's fix keyed-fingerprint-reconcile holds on the order); the second documents that the protocol under
review violates false_receipt on this order.
"""

from pathlib import Path

import pytest

import sim

SCENARIO = Path(__file__).with_name("effects_saga_keyed_fingerprint_reconcile_receipt_check_trusting_false_receipt_publish_release_release.toml")

def test_effects_saga_keyed_fingerprint_reconcile_receipt_check_trusting_false_receipt_publish_release_release_holds():
    """Under keyed-fingerprint-reconcile the minimal order violates no safety invariant."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "keyed-fingerprint-reconcile")
    assert result.violations == []


def test_effects_saga_keyed_fingerprint_reconcile_receipt_check_trusting_false_receipt_publish_release_release_violates_under_the_reviewed_protocol():
    """Under keyed-fingerprint-reconcile,receipt_check=trusting the minimal order still violates false_receipt (why this file exists)."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "keyed-fingerprint-reconcile,receipt_check=trusting")
    assert "false_receipt" in [v.invariant for v in result.violations]
