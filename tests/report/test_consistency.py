"""One truth per review (sim.report.consistency): no statement of a shipped design's review is contradicted by
another part of the same review, and the reader finds each kind of planted contradiction."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

import sim
from sim.report.consistency import contradictions
from sim.report.results import DesignRow, read_results

DESIGNS = sorted((Path(__file__).parents[2] / "scenarios" / "designs").glob("*.toml"))


@pytest.mark.slow
@pytest.mark.parametrize("path", DESIGNS, ids=[p.stem for p in DESIGNS])
def test_no_statement_of_a_shipped_design_is_contradicted(path):
    row = sim.review([str(path)], seeds=40).designs[0].row
    assert contradictions(row) == []
    assert row.contradictions == ()


@pytest.mark.slow
@pytest.mark.xdist_group("reference-review")  # the tests reading the one review (conftest)
def test_no_statement_of_the_reference_review_is_contradicted(reference_review):
    """The seeds' designs, as ``make reference`` reviews them (all their seeds), read back from results.json."""
    done, out = reference_review
    assert done.returncode == 1, done.stderr[-2000:]
    for row in read_results(out).designs:
        assert contradictions(row) == [], row.name
        assert row.contradictions == (), row.name


def _clause(fence: str) -> dict:
    return {"condition": f"fence={fence}", "knobs": {"fence": [fence]}, "proved_safe_example": fence}


def _entry(what: str) -> dict:
    """A ledger entry: one thing a violating run left to clean up."""
    return {"kind": "k", "object": what, "happened": "h", "who": "w", "can_do": "c", "what": what, "who_acts": "w"}


def _design() -> dict:
    """A small review, written by hand (its results.json entry, the keys it needs), every part of it agreeing."""
    return {
        "name": "d",
        "protocols": [{"protocol": "p", "verdict": "violates safety",
                       "by_invariant": {"lost_update": {"violating_runs": 3}, "journal_loss": {"violating_runs": 0}}},
                      {"protocol": "q", "verdict": "no safety violation found",
                       "by_invariant": {"lost_update": {"violating_runs": 0}, "journal_loss": {"violating_runs": 0}}}],
        "claims": [{"protocol": "q", "claim": "q never loses an update", "invariants": ["lost_update"],
                    "holds": True}],
        "counterexamples": [{"name": "p_lost", "protocol": "p", "invariant": "lost_update",
                             "advice": {"recommended": "q", "fixes": True, "proof": {"status": "proved"}}}],
        "triage": [{"rank": 1, "finding": "lost_update", "protocol": "p", "counterexample": "p_lost", "rate": 0.3,
                    "blast": 1, "score": 0.3}],
        "matrix": {"cells": {"p\tp_lost": {"violated": ["lost_update"]}, "q\tp_lost": {"violated": []}}},
        "sections": [],
        "map": {"protocols": [{"protocol": "p", "status": "violated", "knobs": {"fence": "none"},
                               "invariants": {"lost_update": {"status": "violated", "shortest_events": 4}}},
                              {"protocol": "q", "status": "safe", "knobs": {"fence": "plan"},
                               "invariants": {"lost_update": {"status": "safe"}}}],
                "minimal_safe": ["q"], "pareto_front": ["q"],
                "certificates": [{"invariant": "lost_update", "words": "no lost_update iff fence=plan",
                                  "clauses": [_clause("plan")]}]},
    }


def test_an_agreeing_review_has_no_contradiction():
    assert contradictions(DesignRow.from_json(_design())) == []


def _planted(change) -> list[str]:
    design = copy.deepcopy(_design())
    change(design)
    return contradictions(DesignRow.from_json(design))


@pytest.mark.parametrize("plant, words", [
    (lambda d: d["matrix"]["cells"].update({"q\tscripted": {"violated": ["lost_update"]}}),
     "holds under q, but verdict matrix cell scripted"),
    (lambda d: d["sections"].append({"title": "classes", "violations": [
        {"protocol": "q", "invariant": "lost_update", "where": "s1"}]}), "section 'classes'"),
    (lambda d: d["protocols"][1].update(exhaustive={"violated": {"lost_update": {"shortest_events": 5}}}),
     "exhaustive search (5 events)"),
    (lambda d: d["counterexamples"][0]["advice"].update(proof={"status": "unproved"}), "without an exhaustive proof"),
    (lambda d: d["map"]["protocols"][1]["invariants"]["lost_update"].update(status="violated"),
     "is called a fix of lost_update"),
    (lambda d: d["protocols"][0].update(verdict="no safety violation found"), "verdict is 'no safety violation"),
    (lambda d: d["protocols"][0]["by_invariant"]["lost_update"].update(violating_runs=0), "came from the sweep"),
    (lambda d: d["map"]["pareto_front"].append("p"), "Pareto front of safe designs"),
    (lambda d: d["counterexamples"][0]["advice"].update(safe_progress_share=0.0), "but it applies nothing"),
    (lambda d: d["map"]["protocols"][1].update(applies_nothing=True), "as a safe design to choose"),
    (lambda d: d["map"]["certificates"][0]["clauses"].append(_clause("none")), "admits p"),
    (lambda d: d["triage"][0].update(counterexample="p_other"), "which is not a counterexample"),
    (lambda d: d["triage"].clear(), "ranked 0 times by the triage"),
    (lambda d: d["triage"][0].update(blast=4, score=1.2), "a blast radius of 4, but its ledger has 0 entries"),
    (lambda d: d["triage"][0].update(score=0.9), "is not its rate x blast"),
    (lambda d: (d["counterexamples"].append({"name": "p_journal", "protocol": "p", "invariant": "journal_loss",
                                             "ledger": [_entry("a"), _entry("b")]}),
                d["triage"].append({"rank": 2, "finding": "journal_loss", "protocol": "p", "rate": 0.2,
                                    "counterexample": "p_journal", "blast": 2, "score": 0.4})),
     "(score 0.4) below lost_update under p (score 0.3)"),
    (lambda d: (d["counterexamples"].insert(0, {"name": "p_journal", "protocol": "p", "invariant": "journal_loss"}),
                d["triage"].append({"rank": 2, "finding": "journal_loss", "protocol": "p", "rate": 0.1,
                                    "counterexample": "p_journal", "blast": 1, "score": 0.1})),
     "not shown in the triage's order"),
    # a fix proved for one where only: the same invariant, at another where, under the fixed protocol
    (lambda d: d["counterexamples"][0]["advice"].update(runs_violating_invariant=2),
     "of its verified runs violate lost_update elsewhere"),
    (lambda d: (d["counterexamples"][0].update(where="stale_plan", finding="lost_update @ stale_plan"),
                d["counterexamples"][0]["advice"].update(proof={"status": "proved", "within_events": 6}),
                d["map"]["protocols"][1]["invariants"]["lost_update"].update(status="violated", shortest_events=5)),
     "q is proved free of lost_update within 6 events (p_lost's advice), but the design map shows lost_update "
     "in 5 events"),
    (lambda d: (d["counterexamples"][0]["advice"].update(
                    fixes=None, proof={"status": "proved", "within_events": 6}),
                d["counterexamples"].append({"name": "p_other", "protocol": "p", "invariant": "lost_update",
                                             "advice": {"recommended": "q", "proof": {
                                                 "status": "elsewhere", "within_events": 6, "remains": {
                                                     "finding": "lost_update @ checkpoint_restore",
                                                     "shortest_events": 5}}}})),
     "but the advisor's search (p_other: lost_update @ checkpoint_restore) shows lost_update in 5 events"),
    # the reliability-class table against certify (the Engine table), under the same protocol and bound
    (lambda d: (d.update(certify={"engine": "e", "protocol": "standard", "max_events": 1, "complete": True,
                                  "transitions": [
                    {"transition": "charge", "verdict": "repeats", "within_events": 1,
                     "repeats": ["terminate charge after_dispatch"]}]}),
                d["sections"].append({"title": "classes", "findings": [
                    {"transition": "charge", "smallest_class": "standard", "within_events": 1, "verdict": {},
                     "example": {}}]})),
     "the reliability-class table says charge happens exactly once under standard within 1 events, but the "
     "Engine table repeats or loses it in 1 events"),
    (lambda d: (d.update(certify={"engine": "e", "protocol": "p", "max_events": 3, "complete": True,
                                  "transitions": [
                    {"transition": "charge", "verdict": "exactly once", "within_events": 3}]}),
                d["counterexamples"].append({"name": "p_dup", "protocol": "p", "invariant": "duplicate_effect",
                                             "where": "charge (charge)", "events": ["a", "b"]})),
     "the Engine table says charge happens exactly once under p within 3 events, but counterexample p_dup"),
])
def test_each_planted_contradiction_is_found(plant, words):
    found = _planted(plant)
    assert any(words in line for line in found), found


def test_a_proof_within_fewer_events_than_a_violation_is_no_contradiction():
    """Proved within 4 events beside an exhaustive violation in 5: both true (the proof says what it covers)."""
    def plant(d):
        d["counterexamples"][0]["advice"].update(fixes=None, proof={"status": "proved", "within_events": 4})
        d["protocols"][1].update(exhaustive={"violated": {"lost_update": {"shortest_events": 5}}})
    assert not any("is proved free" in line for line in _planted(plant))
