"""What 'fencesim fuzz' runs (sim.search.pipeline): sweep, shrink each distinct violation, advise, judge claims."""

from __future__ import annotations

import functools

import sim
from sim.core.findings import invariant_of
from sim.families.effects import FAMILY as EFFECTS
from sim.families.workspace import FAMILY
from sim.search.options import SearchOptions
from sim.search.pipeline import FuzzResult, fuzz


@functools.cache
def _fuzzed(advise):
    return fuzz(FAMILY, sim.load_workload("seed-fuzz"), ["none", "plan"], SearchOptions(150, workers=1, advise=advise))


def test_each_distinct_violation_is_shrunk_once_in_sorted_order():
    """One counterexample per (protocol, finding) the sweep found, in sorted order, each shrunk: the seed's
    failure domains tell a lost update over a human's edit (stale_plan) from one a retry re-applied (lost_ack)."""
    result = _fuzzed(False)
    assert isinstance(result, FuzzResult)
    keys = [(c.protocol.label, c.finding) for c in result.counterexamples]
    assert keys == sorted(result.summary.found)
    assert {(label, invariant_of(finding)) for label, finding in keys} == {("none", "duplicate_effect"),
                                                                           ("none", "lost_update")}
    assert ("none", "lost_update @ stale_plan") in keys and ("none", "lost_update @ lost_ack") in keys
    for example in result.counterexamples:
        assert len(example.events) < len(example.found_order)
        assert example.shrunk.one_minimal and example.seed == example.run


def test_advice_is_attached_when_asked():
    """With advise=True each counterexample carries the advisor's answer for its shrunk order."""
    examples = _fuzzed(True).counterexamples
    assert {(c.protocol.label, c.invariant) for c in examples} == {("none", "duplicate_effect"),
                                                                    ("none", "lost_update")}
    for example in examples:
        assert example.advice is not None and example.advice.events == [str(e) for e in example.events]
        assert example.advice.recommended is not None


def test_claims_are_judged_for_the_protocols_swept():
    """The family's claims are judged from the sweep's tallies: only the plan fence's claims apply, and hold."""
    claims = _fuzzed(False).claims
    assert {c["protocol"] for c in claims} == {"plan"} and all(c["holds"] for c in claims)
    assert any("stale_accept" in c["claim"] for c in claims) and any("loud" in c["claim"] for c in claims)


def test_the_pipeline_runs_the_effects_family_too():
    """Through the contract the same pipeline fuzzes, shrinks and judges an effects workload."""
    result = fuzz(EFFECTS, sim.load_workload("effects-saga"), ["keyed"], SearchOptions(60, workers=1, advise=False))
    assert result.counterexamples and result.family is EFFECTS
    for example in result.counterexamples:
        replay = EFFECTS.replay(result.workload.base, example.protocol, example.events)
        assert example.invariant in {v.invariant for v in EFFECTS.check(replay.history).safety_violations}
    assert any("duplicate_effect" in c["claim"] for c in result.claims)
