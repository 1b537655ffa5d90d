"""The counterfactual advisor (sim.search.advisor): the fewest knob changes from the fuzzed protocol that
remove a violation, never lowering a knob's rank, priced by a sample sweep."""

from __future__ import annotations

import functools

import pytest

import sim
from sim.families.effects import FAMILY as EFFECTS
from sim.families.effects.faults import FaultEvent
from sim.families.workspace import FAMILY
from sim.families.workspace.scenario import parse_action
from sim.search.advisor import Advice, advise, candidates, rank_gain
from sim.search.oracle import evaluate

JOURNAL_LOSS = ("step-dedupe,journal_write=after_write", "journal_loss",
                ("plan", "dispatch s1", "preempt after_write", "deliver s1"))
LOST_UPDATE = ("step-dedupe", "lost_update", ("plan", "human_edit app.py", "dispatch s1", "deliver s1"))


@functools.cache
def _workload(name="seed-fuzz"):
    return sim.load_workload(name)


def _events(texts):
    base = _workload().base
    return tuple(parse_action(t, base.files, base.step_ids()) for t in texts)


@functools.cache
def _advice(case):
    label, invariant, texts = case
    return advise(FAMILY, _workload(), FAMILY.parse_protocol(label), invariant, _events(texts), sample_seeds=100)


def _violations(label, events):
    history = FAMILY.replay(_workload().base, FAMILY.parse_protocol(label), events).history
    return FAMILY.check(history).safety_violations


@pytest.mark.parametrize("case", [JOURNAL_LOSS, LOST_UPDATE], ids=["journal_loss", "lost_update"])
def test_the_order_violates_under_the_reviewed_protocol(case):
    """The advisor's input really is a counterexample under the protocol it reviews."""
    label, invariant, texts = case
    assert invariant in {v.invariant for v in _violations(label, _events(texts))}


@pytest.mark.parametrize("case", [JOURNAL_LOSS, LOST_UPDATE], ids=["journal_loss", "lost_update"])
def test_every_protocol_in_removed_by_replays_the_order_cleanly(case):
    """Every protocol the advisor lists as removing the violation replays the order with no safety violation."""
    advice = _advice(case)
    assert advice.removed_by
    for label in advice.removed_by:
        assert not _violations(label, _events(case[2])), label


@pytest.mark.parametrize("case", [JOURNAL_LOSS, LOST_UPDATE], ids=["journal_loss", "lost_update"])
def test_proposals_change_the_fewest_knobs_and_never_lower_a_rank(case):
    """Each proposal changes exactly changes_needed knobs of the reviewed protocol, each to an equal or higher rank."""
    advice = _advice(case)
    reviewed = FAMILY.parse_protocol(case[0])
    assert advice.changes_needed == 1
    for label in advice.removed_by:
        proposal = FAMILY.parse_protocol(label)
        changed = proposal.changes_from(reviewed)
        assert len(changed) == advice.changes_needed
        for name, value in changed.items():
            knob = FAMILY.knobs.knob(name)
            assert knob.rank(value) >= knob.rank(reviewed.knobs[name])


@pytest.mark.parametrize("case", [JOURNAL_LOSS, LOST_UPDATE], ids=["journal_loss", "lost_update"])
def test_recommended_protocol_is_a_priced_remover(case):
    """The recommendation removes the violation, is priced, and its changes are what it changes."""
    advice = _advice(case)
    assert advice.recommended in advice.removed_by
    assert advice.recommended in [p["protocol"] for p in advice.priced]
    assert advice.changes == FAMILY.parse_protocol(advice.recommended).changes_from(FAMILY.parse_protocol(case[0]))


def test_protocol_under_test_is_not_in_removed_by():
    """The protocol that violates is never advised as its own fix."""
    advice = _advice(LOST_UPDATE)
    assert FAMILY.parse_protocol("step-dedupe") not in {FAMILY.parse_protocol(p) for p in advice.removed_by}


def test_removed_by_is_ordered_by_rank_gain():
    """removed_by lists candidates by non-decreasing rank gain over the reviewed protocol."""
    advice = _advice(LOST_UPDATE)
    reviewed = FAMILY.parse_protocol("step-dedupe")
    gains = [rank_gain(FAMILY.parse_protocol(p), reviewed) for p in advice.removed_by]
    assert gains == sorted(gains)


def test_recommendation_is_the_cleanest_then_busiest_then_cheapest_priced_candidate():
    """The recommendation never shows the invariant in its sample, then adds no violation, then does the
    most work safely (steps applied safely), then has the fewest availability findings per run."""
    advice = _advice(LOST_UPDATE)
    best = min(advice.priced, key=lambda p: (p["sample_runs_violating_it"], p["sample_new_violations"],
                                             -p["safe_progress_share"], p["availability_per_run"]))
    assert (advice.sample_violating_runs, advice.progress_share, advice.availability_per_run) == (
        best["sample_violating_runs"], best["progress_share"], best["availability_per_run"])
    assert advice.sample_violating_runs == 0


def test_journal_loss_fix_is_an_atomic_journal_write():
    """For the after_write journal window the advisor recommends journal_write=atomic."""
    advice = _advice(JOURNAL_LOSS)
    assert FAMILY.parse_protocol(advice.recommended).knobs["journal_write"] == "atomic"


def test_recommendation_applies_work():
    """The recommended fix still applies planned steps in its sample (a fix that applies nothing is no fix)."""
    advice = _advice(JOURNAL_LOSS)
    assert advice.progress_share is not None and advice.progress_share > 0


def test_priced_candidates_carry_their_progress_share():
    """Each priced candidate reports the share of planned steps its sample applied."""
    for priced in _advice(LOST_UPDATE).priced:
        assert 0 <= priced["progress_share"] <= 1
    assert _advice(LOST_UPDATE).progress_share > 0


def test_atomic_journal_write_removes_the_journal_loss():
    """journal_write=atomic is among the single changes that remove the after_write journal loss."""
    assert "step-dedupe" in _advice(JOURNAL_LOSS).removed_by


def test_advice_to_json_has_the_documented_keys():
    """Advice serialises its protocol, invariant, events, changes needed, proposals, recommendation and prices."""
    document = _advice(LOST_UPDATE).to_json()
    assert {"protocol", "invariant", "events", "changes_needed", "removed_by", "recommended", "changes",
            "availability_per_run", "progress_share", "sample_violating_runs", "sample_seeds",
            "priced"} <= set(document)
    assert document["events"] == list(LOST_UPDATE[2]) and document["sample_seeds"] == 100


def _raised_from_defaults(preset: str, skip: tuple[str, ...] = ()) -> list[str]:
    """The one-knob changes of a knob left at its default, in table order: each value other than the default
    ranked at least as high (read from the table: a knob added there is expected here too)."""
    return [f"{preset},{k.name}={k.show(v)}" for k in FAMILY.knobs.knobs if k.name not in skip
            for v in k.candidates() if v != k.default and k.rank(v) >= k.rank(k.default)]


def test_candidates_change_exactly_n_knobs_to_equal_or_higher_ranks():
    """candidates(p, n) differ from p in exactly n knobs, none ranked lower, and are labelled parseably."""
    reviewed = FAMILY.parse_protocol("step-dedupe")
    singles = candidates(reviewed, 1)
    assert [c.label for c in singles] == ["plan,dedupe=journal", "step-dedupe,stamp_at=plan",
                                          *_raised_from_defaults("step-dedupe", ("fence", "stamp_at", "dedupe"))]
    assert "step-dedupe,drift_check=reject" in [c.label for c in singles]
    for n in (1, 2):
        for candidate in candidates(reviewed, n):
            changed = candidate.changes_from(reviewed)
            assert len(changed) == n
            assert all(FAMILY.knobs.knob(k).rank(v) >= FAMILY.knobs.knob(k).rank(reviewed.knobs[k])
                       for k, v in changed.items())
            assert FAMILY.parse_protocol(candidate.label).knobs == candidate.knobs


def test_candidates_of_the_weakest_protocol_include_each_stronger_value():
    """From fence=none every knob may move up: the fences, both dedupe stores, drift and overlap checks."""
    labels = [c.label for c in candidates(FAMILY.parse_protocol("none"), 1)]
    assert labels == ["plan", "step", *_raised_from_defaults("none", ("fence",))]
    assert labels[2:7] == ["none,stamp_at=plan", "none,dedupe=memory", "none,dedupe=journal",
                           "none,drift_check=reject", "none,overlap_check=on"]


def test_effects_release_duplicate_is_fixed_by_keying_irreversible_endpoints():
    """For a duplicated release under keyed-fingerprint-reconcile the one-knob fix is irreversible_keys=on."""
    advice = advise(EFFECTS, sim.load_workload("effects-pr"), EFFECTS.parse_protocol("keyed-fingerprint-reconcile"),
                    "duplicate_effect", (FaultEvent("duplicate", "publish_release", "after_commit"),), sample_seeds=20)
    assert (advice.changes_needed, advice.changes) == (1, {"irreversible_keys": "on"})
    assert advice.removed_by == ["keyed-fingerprint-reconcile,irreversible_keys=on"]


def test_a_change_that_removes_the_finding_is_advised_though_the_order_shows_others():
    """The advice is about its own finding: a change under which the order no longer shows it is a candidate
    even when the order still shows other findings (each has its own advice), and those are named."""
    workload = sim.load_workload("effects-pr")
    order = (FaultEvent("terminate", "open_pr", "after_commit"),)
    reviewed = EFFECTS.parse_protocol("unkeyed-retry")
    one = advise(EFFECTS, workload, reviewed, "duplicate_effect", order, sample_seeds=10, max_changes=1)
    assert isinstance(one, Advice) and one.changes_needed == 1 and one.recommended in one.removed_by
    assert one.order_still_shows and not any(f.startswith("duplicate_effect") for f in one.order_still_shows)
    replayed = evaluate(EFFECTS, workload.base, EFFECTS.parse_protocol(one.recommended), order)
    assert "duplicate_effect" not in replayed.violated and list(replayed.findings) == one.order_still_shows


def test_nothing_within_the_change_limit_leaves_no_recommendation():
    """When no change of up to max_changes knobs removes the violation, nothing is recommended."""
    workload = sim.load_workload("effects-pr")
    order = (FaultEvent("terminate", "open_pr", "after_commit"),)
    reviewed = EFFECTS.parse_protocol("unkeyed-retry")
    none = advise(EFFECTS, workload, reviewed, "duplicate_effect", order, sample_seeds=10, max_changes=0)
    assert (none.changes_needed, none.recommended, none.removed_by) == (None, None, [])


@functools.cache
def _retention_case():
    """A sweep of keyed-fingerprint-reconcile,key_retention=5 on effects-saga and its counterexamples."""
    from sim.search.options import SearchOptions
    from sim.search.pipeline import fuzz

    return fuzz(EFFECTS, sim.load_workload("effects-saga"), ["keyed-fingerprint-reconcile,key_retention=5"],
                SearchOptions(300, workers=1, advise=False))


def _example(result, invariant):
    return next(c for c in result.counterexamples if c.invariant == invariant)


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_a_fix_is_offered_only_when_no_run_of_the_sweep_violates_it():
    """Restoring key_retention alone leaves runs duplicating effects: it is labelled a partial improvement
    with its residual count, never offered as a fix (it was, with 12 violating runs in its sample)."""
    result = _retention_case()
    example = _example(result, "duplicate_effect")
    one = advise(EFFECTS, result.workload, example.protocol, "duplicate_effect", example.events, max_changes=1,
                 seeds=300, tallies=None)
    assert one.recommended and one.fixes is False and one.runs_violating_it > 0
    from sim.report.advice import advice_document
    from sim.report.phrases import advice_line

    line = advice_line(advice_document(one), "duplicate_effect", "human exceptions")
    assert line.startswith("partial improvement, not a fix")
    assert f"duplicate_effect in {one.runs_violating_it} of 300 runs (was " in line
    two = advise(EFFECTS, result.workload, example.protocol, "duplicate_effect", example.events, seeds=300)
    # clean on every seed; its exhaustive proof stops at a replayed family's state budget, so it is offered as
    # "no violation in 300 seeds (not proved)", never as a proved fix
    assert two.fixes is None and two.proof["status"] == "unproved"
    assert two.runs_violating_it == 0 and two.verified_seeds == 300
    assert not evaluate_violates(two.recommended, result, example.events)


def evaluate_violates(label, result, events):
    from sim.search.oracle import evaluate

    return evaluate(EFFECTS, result.workload.base, EFFECTS.parse_protocol(label), events).violated


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_count_before_is_the_sweeps_own_never_a_sample_zero():
    """The 'was' count is of the same seeds as the count it is compared with: the sweep's own count of the
    violation (never 0 for a violation the sweep found)."""
    result = _retention_case()
    tally = result.summary.tallies["keyed-fingerprint-reconcile,key_retention=5"]
    compared = 0
    for example in result.counterexamples:
        advice = advise(EFFECTS, result.workload, example.protocol, example.invariant, example.events, seeds=300)
        if advice.runs_violating_it_before is not None:
            assert advice.runs_violating_it_before == tally.by_invariant[example.invariant] > 0
            compared += 1
    assert compared > 0, "no counterexample's advice gave a count before"


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_advisor_at_the_largest_limits_stops_at_its_work_limit():
    """A workload at its documented maxima (1,000 faults per run, 10,000 events): the advisor stops at its
    work limit, says so, still answers -- and answers the same on a second try (the limit
    counts replayed runs and events, not seconds)."""
    import dataclasses

    from sim.search.oracle import evaluate

    workload = dataclasses.replace(sim.load_workload("effects-saga"), per_run_max=1000, max_events=10_000)
    protocol = EFFECTS.parse_protocol("unkeyed-retry")
    order = EFFECTS.generate(workload, 0)
    invariant = evaluate(EFFECTS, workload.base, protocol, order).violated[0]
    advice = advise(EFFECTS, workload, protocol, invariant, order, seeds=1000, max_work=60_000)
    assert advice.stopped == "the advisor's work limit" and advice.recommended is not None
    again = advise(EFFECTS, workload, protocol, invariant, order, seeds=1000, max_work=60_000)
    assert again.to_json() == advise(EFFECTS, workload, protocol, invariant, order, seeds=1000,
                                     max_work=60_000).to_json()


def test_a_candidate_is_proved_once_per_run_and_again_under_a_deadline(monkeypatch):
    """The advices of one run share their tallies, and with them each proof: a candidate several findings
    share is searched once, each advice given its own copy; under a deadline (which cuts at a time) it is
    searched each time."""
    from sim.search import advisor
    from sim.search.budget import Deadline

    searched = []
    monkeypatch.setattr(advisor, "prove", lambda *args: searched.append(args) or {"status": "proved", "by": []})
    tallies = advisor.Tallies(FAMILY, _workload("tiny"), 0, 10)
    plan, step = FAMILY.parse_protocol("plan"), FAMILY.parse_protocol("step")
    first = tallies.proof(plan, "lost_update", 6, advisor.NO_DEADLINE)
    first["by"].append("one advice")
    assert tallies.proof(plan, "lost_update", 6, advisor.NO_DEADLINE) == {"status": "proved", "by": []}
    assert len(searched) == 1
    tallies.proof(plan, "lost_update", 5, advisor.NO_DEADLINE)
    tallies.proof(step, "lost_update", 6, advisor.NO_DEADLINE)
    tallies.proof(plan, "duplicate_effect", 6, advisor.NO_DEADLINE)
    assert len(searched) == 4
    later = Deadline(3600.0)
    tallies.proof(plan, "lost_update", 6, later)
    tallies.proof(plan, "lost_update", 6, later)
    tallies.proof(plan, "lost_update", 7, later)
    assert len(searched) == 7
    tallies.proof(plan, "lost_update", 7, advisor.NO_DEADLINE)  # one cut at a time is never kept
    assert len(searched) == 8
