"""The durable-effects seed's claims (claims.py), judged by a sweep's counts."""

from __future__ import annotations

from sim.families.effects import FAMILY
from sim.families.effects.claims import judge


def _tally(runs=50, violating=0, **found):
    by_invariant = {n: 0 for n in FAMILY.safety_invariants}
    by_invariant.update(found)
    return {"runs": runs, "violating_runs": violating, "violating_runs_by_invariant": by_invariant,
            "human_exceptions": 0}


def _claims(label, tally):
    protocol = FAMILY.parse_protocol(label)
    return judge({protocol.label: tally}, [protocol])


def test_unkeyed_retry_claims_nothing():
    """Without keys, unknown outcomes or reconciliation no claim applies."""
    assert _claims("unkeyed-retry", _tally(violating=50, duplicate_effect=50)) == []


def test_the_full_design_carries_four_claims_that_hold_on_clean_counts():
    """keyed-fingerprint-reconcile claims singular effects, unknown-not-failed, no lost success, one outcome."""
    claims = _claims("keyed-fingerprint-reconcile", _tally())
    assert len(claims) == 4 and all(c["holds"] for c in claims)
    assert any("lost_success" in c["claim"] for c in claims)


def test_a_broken_claim_cites_its_counts():
    """A claim broken by the sweep does not hold and cites how many runs broke it."""
    claims = _claims("keyed-fingerprint-reconcile", _tally(violating=3, duplicate_effect=3))
    keys = next(c for c in claims if "duplicate_effect" in c["claim"])
    assert keys["holds"] is False and "3 of 50" in keys["evidence"]
    whole = next(c for c in claims if "every safety invariant" in c["claim"])
    assert whole["holds"] is False


def test_lost_success_is_claimed_only_with_reconciliation():
    """The no-lost-success claim belongs to reconciliation; keyed alone does not make it."""
    assert not any("lost_success" in c["claim"] for c in _claims("keyed", _tally()))
    assert not any("unknown_as_failed" in c["claim"] for c in _claims("keyed", _tally()))
    assert any("lost_success" in c["claim"] for c in _claims("keyed-reconcile", _tally()))
