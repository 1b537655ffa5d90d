"""The workspace seed's claims (claims.py), judged by a sweep's counts: which apply to which protocol,
and a claim that does not survive the counts says so."""

from __future__ import annotations

from sim.families.workspace import FAMILY
from sim.families.workspace.claims import judge


def _tally(runs=100, violating=0, spurious=0, **found):
    by_invariant = {n: 0 for n in FAMILY.safety_invariants}
    by_invariant.update(found)
    return {"runs": runs, "violating_runs": violating, "violating_runs_by_invariant": by_invariant,
            "spurious_rejections": spurious}


def test_step_dedupe_carries_the_fence_journal_and_lost_update_claims():
    """Under step-dedupe the P1, P2, idempotent-retry and no-lost-update claims apply and hold on clean counts."""
    protocol = FAMILY.parse_protocol("step-dedupe")
    claims = judge({protocol.label: _tally()}, [protocol])
    assert len(claims) == 4 and all(c["holds"] for c in claims)
    assert all("not found in 100 runs (sampling, not a proof)" == c["evidence"] for c in claims)


def test_a_violated_claim_does_not_hold_and_cites_the_counts():
    """A claim whose invariant was violated does not hold and says how many runs broke it."""
    protocol = FAMILY.parse_protocol("step-dedupe,journal_write=after_write")
    claims = judge({protocol.label: _tally(violating=7, journal_loss=7)}, [protocol])
    p2 = next(c for c in claims if "journal_loss" in c["claim"])
    assert p2["holds"] is False and "7 of 100" in p2["evidence"]


def test_none_carries_no_claim_and_plan_is_safe_but_loud():
    """fence=none claims nothing; the plan fence's claim needs no violation and some spurious rejections."""
    none, plan = FAMILY.parse_protocol("none"), FAMILY.parse_protocol("plan")
    claims = judge({"none": _tally(violating=50, lost_update=50), "plan": _tally(spurious=30)}, [none, plan])
    assert {c["protocol"] for c in claims} == {"plan"}
    loud = next(c for c in claims if "loud" in c["claim"])
    assert loud["holds"] is True and "30 spurious" in loud["evidence"]
    quiet = judge({"plan": _tally(spurious=0)}, [plan])
    assert next(c for c in quiet if "loud" in c["claim"])["holds"] is False


def test_family_claims_are_the_judges():
    """The family's claims() is this judgement."""
    protocol = FAMILY.parse_protocol("step")
    assert FAMILY.claims({"step": _tally()}, [protocol]) == judge({"step": _tally()}, [protocol])
