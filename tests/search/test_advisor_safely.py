"""The advisor's cost reads *applied safely*: of two candidates that both remove a violation, the one whose
writes replace what their authors expected wins over one that applies more steps by clobbering."""

from __future__ import annotations

from sim.families.workspace import FAMILY
from sim.report.advice import advice_document
from sim.report.phrases import advice_sentence
from sim.search.advisor import ADVISOR_LIMIT_NAME, Advice, _price, _recommend
from sim.search.budget import WorkLimit
from sim.search.tally import ProtocolTally

BASE = FAMILY.parse_protocol("step-dedupe")
#: applies more steps, but a third of them over content their author never saw
CLOBBERS = FAMILY.parse_protocol("step-dedupe,drift_check=reject")
#: applies fewer, every one safely
SAFE = FAMILY.parse_protocol("step-dedupe,stamp_at=plan")


def _tally(applied: int, safely: int) -> ProtocolTally:
    return ProtocolTally(FAMILY.safety_invariants, FAMILY.availability_columns, runs=100,
                         measures={"steps_planned": 200, "steps_applied": applied, "steps_applied_safely": safely})


class _Tallies:
    """Stands in for the advisor's sweeps: a fixed tally per protocol."""

    seeds = 100

    def __init__(self) -> None:
        self.by = {BASE: _tally(150, 140), CLOBBERS: _tally(190, 120), SAFE: _tally(160, 160)}

    def get(self, protocol, seeds, limit=None):
        return self.by[protocol]


def _priced() -> tuple[list[dict], Advice]:
    advice = Advice(BASE.label, "lost_update", [], None, [], None, sample_seeds=100, seeds=100)
    limit = WorkLimit(10**9, ADVISOR_LIMIT_NAME)
    return _price(FAMILY, BASE, "lost_update", [CLOBBERS, SAFE], _Tallies(), 100, limit, advice), advice


def test_the_cost_ranks_by_applied_safely_not_by_applied():
    """CLOBBERS applies 95% of the plan, SAFE 80%; applied safely it is 60% against 80%: SAFE is priced first,
    and each priced candidate carries both shares."""
    priced, advice = _priced()
    assert [entry["protocol"] for entry in priced] == [SAFE.label, CLOBBERS.label]
    assert [(p["progress_share"], p["safe_progress_share"]) for p in advice.priced] == [(0.8, 0.8), (0.95, 0.6)]


def test_the_recommendation_states_both_shares():
    """The advice keeps work done (applied) as reported today and adds the applied-safely share its cost read;
    the sentence a report prints names both."""
    priced, advice = _priced()
    _recommend(advice, 1, [p["protocol"] for p in priced], priced[0])
    assert (advice.progress_share, advice.safe_progress_share) == (0.8, 0.8)
    document = advice_document(advice)
    assert document.progress_share == 0.8 and document.safe_progress_share == 0.8
    assert "work done 80%, applied safely 80%" in advice_sentence(document, "lost_update")


def test_a_family_without_applied_safely_is_priced_by_work_done():
    """The effects family does not tell work done safely apart: no safe share, and no key for it."""
    from sim.families.effects import FAMILY as EFFECTS

    assert EFFECTS.safe_progress is None and EFFECTS.safe_progress_share({"tasks_completed": 1}) is None
    document = advice_document(Advice("keyed", "duplicate_effect", [], None, [], None))
    assert "safe_progress_share" not in document.to_json()
