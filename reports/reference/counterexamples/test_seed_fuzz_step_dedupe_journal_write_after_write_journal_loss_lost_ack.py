# Written by fencesim: a regression test of a minimal counterexample.
"""Regression: Minimal order violating journal_loss under step-dedupe,journal_write=after_write, found by the review of seed-fuzz (seed 20).

Kept the right way round: the first test holds once the design is fixed
(it asserts that the advisor's fix step-dedupe holds on the order); the second documents that the protocol under
review violates journal_loss on this order.
"""

from pathlib import Path

import pytest

import sim

SCENARIO = Path(__file__).with_name("seed_fuzz_step_dedupe_journal_write_after_write_journal_loss_lost_ack.toml")

def test_seed_fuzz_step_dedupe_journal_write_after_write_journal_loss_lost_ack_holds():
    """Under step-dedupe the minimal order violates no safety invariant."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "step-dedupe")
    assert result.violations == []


def test_seed_fuzz_step_dedupe_journal_write_after_write_journal_loss_lost_ack_violates_under_the_reviewed_protocol():
    """Under step-dedupe,journal_write=after_write the minimal order still violates journal_loss (why this file exists)."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "step-dedupe,journal_write=after_write")
    assert "journal_loss" in [v.invariant for v in result.violations]
