"""Triage: a design's findings ranked by expected incidents x blast radius, the inputs shown beside the rank
(sim/report/triage.py), and the review showing its findings in that order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.report import triage as t
from sim.report.results import CounterexampleRow, DesignRow, LedgerEntry

REPO = Path(__file__).resolve().parents[2]
DESIGN = REPO / "scenarios" / "designs" / "usage-charge.toml"


def example(name, protocol="p", ledger=1, invariant=None) -> CounterexampleRow:
    """A counterexample row as the review gives it: ``ledger`` entries (a number of them)."""
    invariant = invariant or name.partition(" @ ")[0]
    entry = LedgerEntry(kind="k", object="o", happened="h", who="w", can_do="c", what="w", who_acts="h")
    return CounterexampleRow(name=f"cx-{name}-{protocol}", protocol=protocol, invariant=invariant, finding=name,
                             ledger=(entry,) * ledger)


#: Rate alone, blast alone and the score each order these three differently.
OFTEN = example("lost_update @ s1 (a.py)", ledger=1)       # 0.50 x 1 = 0.5
WIDE = example("duplicate_effect @ s2 (b.py)", ledger=5)   # 0.05 x 5 = 0.25
BOTH = example("stale_accept @ s1 (a.py)", ledger=3)       # 0.30 x 3 = 0.9
RATES = {("p", OFTEN.shown_finding): t.sweep_rate(50, 100), ("p", WIDE.shown_finding): t.sweep_rate(5, 100),
         ("p", BOTH.shown_finding): t.sweep_rate(30, 100)}
EXPECTED = [BOTH.shown_finding, OFTEN.shown_finding, WIDE.shown_finding]


def ranked_findings(rank=t.rank):
    return [x.finding for x in rank(t.triage([OFTEN, WIDE, BOTH], RATES))]


def test_a_higher_rate_times_blast_comes_first():
    ranked = t.triage([OFTEN, WIDE, BOTH], RATES)
    assert [x.finding for x in ranked] == EXPECTED
    assert [x.rank for x in ranked] == [1, 2, 3]
    assert [x.score for x in ranked] == pytest.approx([0.9, 0.5, 0.25])


def test_the_ordering_check_fails_on_a_rate_only_ranking():
    """A planted bug -- ranking by rate alone, or by blast alone -- gives another order, which the check above
    would reject: the test discriminates."""
    def by_rate(items):
        return t.rank(t.Triage(**{**x.__dict__, "score": x.rate}) for x in items)

    def by_blast(items):
        return t.rank(t.Triage(**{**x.__dict__, "score": x.blast}) for x in items)

    assert ranked_findings() == EXPECTED
    assert ranked_findings(by_rate) != EXPECTED
    assert ranked_findings(by_blast) != EXPECTED


def test_the_inputs_of_the_rank_are_shown():
    first = t.triage([OFTEN, WIDE, BOTH], RATES)[0].to_json()
    assert first == {"rank": 1, "finding": BOTH.finding, "protocol": "p", "counterexample": BOTH.name,
                     "rate": 0.3, "rate_source": t.SWEEP_SOURCE, "rate_detail": "30 of 100 runs", "blast": 3,
                     "blast_source": t.BLAST_LEDGER, "score": 0.9}
    columns, rows = t.triage_table(t.triage([OFTEN, WIDE, BOTH], RATES))
    assert columns == ["rank", "finding", "protocol", "expected incidents", "source", "blast radius", "score"]
    assert rows[0] == ["1", BOTH.finding, "p", "0.3 per run (30 of 100 runs)", t.SWEEP_SOURCE, "3", "0.9"]
    assert "not production" in t.SWEEP_SOURCE


def test_a_tie_is_broken_by_finding_name_then_protocol():
    a, b = example("b_invariant @ x", ledger=2), example("a_invariant @ y", ledger=1)
    c = example("a_invariant @ y", protocol="o", ledger=1)
    rates = {("p", a.shown_finding): t.sweep_rate(1, 10), ("p", b.shown_finding): t.sweep_rate(2, 10),
             ("o", c.shown_finding): t.sweep_rate(2, 10)}
    ranked = t.triage([a, b, c], rates)
    assert [x.score for x in ranked] == pytest.approx([0.2, 0.2, 0.2])
    assert [(x.finding, x.protocol) for x in ranked] == [("a_invariant @ y", "o"), ("a_invariant @ y", "p"),
                                                         ("b_invariant @ x", "p")]
    assert [x.finding for x in t.triage([c, b, a], rates)] == [x.finding for x in ranked]  # input order is moot
    three = example("c_invariant", ledger=3)  # 0.1 x 3 is 0.30000000000000004 in floating point: still a tie
    rates = {("p", three.shown_finding): t.sweep_rate(1, 10), ("p", "a_invariant @ y"): t.sweep_rate(3, 10)}
    assert [x.finding for x in t.triage([three, b], rates)] == ["a_invariant @ y", "c_invariant"]


def test_an_empty_ledger_counts_as_one_and_says_so():
    bare = example("journal_loss", ledger=0)
    (only,) = t.triage([bare], {("p", "journal_loss"): t.sweep_rate(4, 10)})
    assert (only.blast, only.blast_source, only.score) == (1, t.BLAST_EMPTY, pytest.approx(0.4))
    assert t.triage_table([only])[1][0][5] == "1 (ledger empty)"


def test_a_finding_without_a_rate_scores_zero_and_says_so():
    (only,) = t.triage([OFTEN], {})
    assert (only.rate, only.score, only.rate_detail) == (0.0, 0.0, "no rate measured")


def test_telemetry_rates_name_their_source_and_interval():
    rate = t.telemetry_rate({"value": 682.2751, "low": 671.7851, "high": 692.4839}, "lost_update", 10_000, "plans",
                            500)
    assert (rate.value, rate.source) == (682.2751, "telemetry")
    assert rate.detail.startswith("682.28 [671.79, 692.48] plans violating lost_update per 10,000 plans a month")
    unbounded = t.telemetry_rate({"value": 1.0, "low": 0.0, "high": None}, "x", 10_000, "tasks", 500)
    assert "unbounded" in unbounded.detail
    (row,) = t.triage_table([t.Triage("x", "p", 1.0, "telemetry", 2, t.BLAST_LEDGER, 2.0, unbounded.detail,
                                      rank=1)])[1]
    assert row[3] == unbounded.detail and row[4] == "telemetry"


def test_counterexamples_follow_the_triage_order():
    rows = [OFTEN, WIDE, BOTH, example("unranked")]
    ranked = t.triage(rows[:3], RATES)
    assert [r.finding for r in t.in_triage_order(rows, ranked, lambda r: r.name)] == [*EXPECTED, "unranked"]


def test_the_frame_has_one_row_per_finding_in_rank_order():
    design = DesignRow(name="d", counterexamples=(), triage=tuple(t.triage([OFTEN, WIDE, BOTH], RATES)))
    frame = t.triage_frame([design, DesignRow(name="clean", counterexamples=(), triage=())])
    assert list(frame["finding"]) == EXPECTED and list(frame["rank"]) == [1, 2, 3]
    assert set(frame["design"]) == {"d"} and list(frame["score"]) == pytest.approx([0.9, 0.5, 0.25])


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_review_ranks_a_small_design(cli, tmp_path):
    """End to end on usage-charge (two findings under ledger_dedupe=off): results.json carries ``triage`` in
    score order, the counterexamples and the matrix's counterexample columns follow it, both files show it."""
    out = tmp_path / "report"
    done = cli("review", "-d", DESIGN, "--out", out, "--seeds", "40", "--workers", "1", timeout=600)
    assert done.returncode in (0, 1), done.stderr
    design = json.loads((out / "results.json").read_text())["designs"][0]
    ranked = design["triage"]
    assert len(ranked) == len(design["counterexamples"]) >= 2
    scores = [row["score"] for row in ranked]
    assert scores == sorted(scores, reverse=True) and [row["rank"] for row in ranked] == list(range(1, len(ranked) + 1))
    for row in ranked:
        assert row["rate_source"] == t.SWEEP_SOURCE and row["blast"] >= 1
        assert row["score"] == pytest.approx(row["rate"] * row["blast"], abs=1e-6)
    names = [row["counterexample"] for row in ranked]
    assert [e["name"] for e in design["counterexamples"]] == names
    assert [c for c in design["matrix"]["columns"] if c in names] == names
    summary = (out / "summary.md").read_text()
    assert "### Triage" in summary and summary.index("### Triage") < summary.index("### Minimal counterexamples")
    assert 'id="triage-usage-charge"' in (out / "report.html").read_text()
    import sim

    assert list(sim.triage_frame(out)["counterexample"]) == names


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_a_design_with_telemetry_ranks_by_expected_incidents(tmp_path):
    """A design's [telemetry] makes the rates expected incidents a month (one small incidents estimate)."""
    import sim

    text = DESIGN.read_text().replace('name = "usage-charge"', 'name = "usage-charge-telemetry"')
    path = tmp_path / "design.toml"
    path.write_text(text + "\n[telemetry]\nambiguous_share = 0.2\ncommitted_share = 0.6\n")
    review = sim.review(path, seeds=40, workers=1)
    ranked = review.designs[0].row.triage
    assert ranked and {row.rate_source for row in ranked} <= {"telemetry", t.UNKNOWN_SOURCE}
    rated = [row for row in ranked if row.rate_source == "telemetry"]
    assert rated and all("a month" in row.rate_detail for row in rated)
    examples = {e.name: e for e in review.designs[0].row.counterexamples}
    for row in ranked:  # an unknown rate is an order needing a fault the telemetry has no rate for (duplicate)
        if row.rate_source == t.UNKNOWN_SOURCE:
            assert "no rate for duplicate" in row.rate_detail
            assert any(e.startswith("duplicate ") for e in examples[row.counterexample].events)
    scores = [row.score for row in ranked]
    assert scores == sorted(scores, reverse=True)


def _sweep(telemetry):
    """A sweep's result as triage_rates reads it: one protocol, 3 of 10 runs showing each of two findings."""
    from types import SimpleNamespace as NS

    tally = NS(by_finding={"lost_update @ s1": 3, "lost_update @ s2": 3}, runs=10)
    result = NS(family=None, workload=NS(telemetry=telemetry), summary=NS(tallies={"p": tally}),
                protocols=[NS(label="p")])
    examples = [NS(row=example(f"lost_update @ {step}"), events=()) for step in ("s1", "s2")]
    return result, examples


class _Clock:
    def __init__(self, expired):
        self._expired = expired

    def expired(self):
        return self._expired


def test_without_telemetry_no_incidents_are_estimated(monkeypatch):
    import sim.app.reviewing as reviewing

    monkeypatch.setattr(reviewing, "_incidents", lambda *a: pytest.fail("estimated incidents without telemetry"))
    rates = reviewing.triage_rates(*_sweep(None))
    assert {r.source for r in rates.values()} == {t.SWEEP_SOURCE} and {r.value for r in rates.values()} == {0.3}


def test_telemetry_is_estimated_once_per_design_and_shared_by_an_invariant(monkeypatch):
    from types import SimpleNamespace as NS

    import sim.app.reviewing as reviewing
    from sim.search.incidents import Estimate

    calls = []
    estimate = NS(protocols={"p": {"lost_update": NS(runs=Estimate(40.0, 30.0, 50.0))}}, period=10_000.0,
                  unit="plans", seeds=500)
    monkeypatch.setattr(reviewing, "_incidents", lambda *a: calls.append(a) or (estimate, ""))
    rates = reviewing.triage_rates(*_sweep({"human_edits_per_file_hour": 0.2}))
    assert len(calls) == 1
    assert {(r.source, r.value) for r in rates.values()} == {("telemetry", 40.0)}


@pytest.mark.parametrize(("expired", "reason", "needle"), [
    (True, "", "the budget stopped the review before the telemetry estimate"),
    (False, "ambiguous_share is required", "the telemetry could not be estimated: ambiguous_share is required"),
])
def test_telemetry_not_estimated_falls_back_to_the_sweep_and_says_why(monkeypatch, expired, reason, needle):
    import sim.app.reviewing as reviewing

    monkeypatch.setattr(reviewing, "_incidents", lambda *a: (None, reason))
    rates = reviewing.triage_rates(*_sweep({"ambiguous_share": 0.1}), _Clock(expired))
    assert {r.source for r in rates.values()} == {t.SWEEP_SOURCE}
    assert all(r.detail == f"3 of 10 runs; {needle}" for r in rates.values())


def test_an_order_needing_a_fault_the_telemetry_has_no_rate_for_has_an_unknown_rate(tmp_path):
    """A checkpoint-restore order needs tests_fail: telemetry without test_failures_per_session cannot rate it,
    so its rate is unknown and says why (never a silent 0); with the key set it is rated."""
    from sim.registry import FAMILIES
    from sim.search.unrated import unrated_faults

    path = tmp_path / "w.toml"
    path.write_text('format = 1\nname = "w"\nfamily = "workspace"\nfiles = { "a.py" = "a0" }\n'
                    'plan = [ { id = "s1", path = "a.py", patch = "a1" } ]\n'
                    '[faults]\nclasses = ["human_edit", "tests_fail"]\n'
                    '[telemetry]\nhuman_edits_per_file_hour = 0.1\n')
    workload = FAMILIES.load_workload(str(path))
    family = FAMILIES.get("workspace")
    order = [family.parse_event(workload.base, e) for e in
             ("plan", "dispatch s1", "deliver s1", "human_edit a.py", "tests_fail a.py", "replan stale")]
    assert unrated_faults(family, workload, order) == ["replan_stale", "tests_fail"]
    rate = t.unknown_rate(t.sweep_rate(2, 200), ["tests_fail"])
    assert rate.source == t.UNKNOWN_SOURCE and rate.value == 0.01 and "no rate for tests_fail" in rate.detail
    (line,) = t.triage_lines([t.Triage("f", "p", rate.value, rate.source, 1, t.BLAST_LEDGER, rate.value,
                                       rate.detail, rank=1)])[1:]
    assert "rate unknown" in line and "tests_fail" in line


def test_the_unknown_rate_hint_names_a_key_only_where_one_exists():
    """A fault some [telemetry] key rates gets that key; a fault no key rates (an effects change_owner) is said
    to have none, never 'add it to [telemetry]'."""
    from sim.registry import FAMILIES
    from sim.search.unrated import telemetry_key

    workspace, effects = FAMILIES.get("workspace"), FAMILIES.get("effects")
    assert telemetry_key(workspace, "tests_fail") == "test_failures_per_session"
    assert telemetry_key(effects, "unprovable") == "reconciled_share"
    assert telemetry_key(effects, "change_owner") is None
    rate = t.unknown_rate(t.sweep_rate(2, 200), ["change_owner", "unprovable"], [None, "reconciled_share"])
    assert ("(set reconciled_share for unprovable in [telemetry]; no telemetry key rates change_owner yet)"
            in rate.detail)
