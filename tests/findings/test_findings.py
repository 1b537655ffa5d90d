"""Findings, not invariants: two bugs under one invariant are two findings, each with its own order and advice;
the exported order has the fewest changes of actor; ``fencesim diff`` compares the findings of two runs."""

from __future__ import annotations

import json
import textwrap

import sim
from sim.core.findings import finding_id, split, switches
from sim.families.workspace.family import WorkspaceFamily
from sim.search import pipeline
from sim.search.options import SearchOptions
from sim.search.oracle import evaluate
from sim.search.shrink import shrink
from tests.cli.test_cli_input_hardening import run_cli

WORKFLOW = textwrap.dedent('''\
    format = 1
    family = "effects"
    name = "notify-and-charge"
    task = "task_7"
    workflow = [
      { name = "notify_user", class = "irreversible", object = "email", keys = false, reconcile_by = "none",\
        approval = false },
      { name = "charge_usage", class = "append", object = "charge", compensation = "refund_charge" },
    ]

    [faults]
    classes = ["duplicate"]
    per_run_max = 2

    [limits]
    max_events = 4
    ''')


def test_a_finding_is_named_by_its_invariant_and_where():
    assert finding_id("duplicate_effect", "send_email (email)") == "duplicate_effect @ send_email (email)"
    assert split("duplicate_effect @ send_email (email)") == ("duplicate_effect", "send_email (email)")
    assert finding_id("lost_update", "") == "lost_update" and split("lost_update") == ("lost_update", "")
    assert switches(["planner", "client", "client", "human"]) == 2


def test_two_duplicates_under_one_invariant_are_two_findings_with_their_own_orders_and_advice(tmp_path):
    path = tmp_path / "notify-and-charge.toml"
    path.write_text(WORKFLOW)
    workload = sim.load_workload(str(path))
    family = sim.family("effects")
    result = pipeline.fuzz(family, workload, ["ledger_dedupe=off"], SearchOptions(200, workers=1))
    duplicates = {e.where: e for e in result.counterexamples if e.invariant == "duplicate_effect"}
    assert set(duplicates) == {"notify_user (email)", "charge_usage (charge)"}
    for where, example in duplicates.items():
        # each order shows its own finding (not merely the invariant)
        shown = evaluate(family, workload.base, example.protocol, example.events).findings
        assert example.finding in shown, (where, shown)
    email, charge = duplicates["notify_user (email)"], duplicates["charge_usage (charge)"]
    assert [str(e) for e in email.events] != [str(e) for e in charge.events]
    assert charge.advice is not None and charge.advice.recommended is not None
    assert "ledger_dedupe" in charge.advice.changes and charge.advice.changes["ledger_dedupe"] == "key"
    assert email.advice is not None and email.advice.recommended is None
    assert email.advice.beyond_protocol and "idempotent" in email.advice.beyond_protocol
    tally = result.summary.tallies["ledger_dedupe=off"]
    assert tally.by_finding[email.finding] > 0 and tally.by_finding[charge.finding] > 0


class _SameLane(WorkspaceFamily):
    """The client and the network drawn in one lane: a planted actor map under which one of two equally
    short orders has fewer changes of actor."""

    def actor(self, event):
        actor = super().actor(event)
        return "client" if actor == "network" else actor


def _kept_order(family):
    workload = sim.load_workload("tiny")
    protocol = family.parse_protocol("none")
    start = [family.parse_event(workload.base, text)
             for text in ("plan", "dispatch s1", "human_edit app.py", "deliver s1")]
    assert "lost_update" in evaluate(family, workload.base, protocol, start).violated
    return shrink(family, workload, protocol, start, "lost_update")


def test_of_two_equally_short_orders_the_one_exported_has_fewer_actor_switches():
    planted = _kept_order(_SameLane())
    events = [str(e) for e in planted.events]
    # plan | dispatch, deliver (one lane) with the edit between them is 3 switches; the edit first is 2
    assert len(events) == 4 and planted.shortest_proved
    assert planted.switches == 2 and planted.fewest_switches
    assert events.index("human_edit app.py") < events.index("dispatch s1"), events
    plain = _kept_order(WorkspaceFamily())
    assert len(plain.events) == 4 and plain.switches == switches([WorkspaceFamily().actor(e) for e in plain.events])


def _document(examples, seed_start=0, runs=100, protocols=("none",)):
    return {"format": 1, "workload": "w", "seed_start": seed_start,
            "by_protocol": {label: {"runs": runs} for label in protocols},
            "counterexamples": [{"protocol": "none", "invariant": inv, "where": where,
                                 "finding": finding_id(inv, where), "events": ["a"]} for inv, where in examples]}


def test_diff_exits_1_naming_a_new_finding_and_0_on_identical_runs(tmp_path):
    before, after = tmp_path / "a.json", tmp_path / "b.json"
    before.write_text(json.dumps(_document([("duplicate_effect", "send_email (email)")])))
    after.write_text(json.dumps(_document([("duplicate_effect", "send_email (email)"),
                                           ("duplicate_effect", "charge_usage (charge)")])))
    code, out, _ = run_cli("diff", before, after)
    assert code == 1 and "new: 1" in out and "duplicate_effect @ charge_usage (charge)" in out
    code, out, _ = run_cli("diff", before, before)
    assert code == 0 and "new: 0" in out
    code, out, _ = run_cli("diff", after, before)
    assert code == 0 and "fixed (the later run swept the same seeds): 1" in out  # gone on the same seeds
    (tmp_path / "bad.json").write_text("{")
    code, _, err = run_cli("diff", before, tmp_path / "bad.json")
    assert code == 4 and "not JSON" in err and "Traceback" not in err


def test_diff_tells_fixed_from_not_drawn_and_not_run(tmp_path):
    """A finding gone is fixed only when the later run swept its protocol over the same seeds: over other
    seeds it was not drawn, without its protocol it was not run; a fuzz document and a review are refused."""
    both = [("duplicate_effect", "send_email (email)"), ("duplicate_effect", "charge_usage (charge)")]
    before = tmp_path / "a.json"
    before.write_text(json.dumps(_document(both)))
    other_seeds, no_protocol = tmp_path / "b.json", tmp_path / "c.json"
    other_seeds.write_text(json.dumps(_document(both[:1], seed_start=1000)))
    no_protocol.write_text(json.dumps(_document([], protocols=("keyed",))))
    code, out, _ = run_cli("diff", before, other_seeds, "--json")
    compared = json.loads(out)
    assert code == 0 and compared["fixed"] == [] and [f["finding"] for f in compared["not_drawn"]] == [
        "duplicate_effect @ charge_usage (charge)"]
    code, out, _ = run_cli("diff", before, no_protocol, "--json")
    assert code == 0 and len(json.loads(out)["not_run"]) == 2 and json.loads(out)["fixed"] == []
    review = tmp_path / "results.json"
    review.write_text(json.dumps({"format": 1, "designs": [{"name": "w", "protocols": [], "counterexamples": []}]}))
    code, _, err = run_cli("diff", review, before)
    assert code == 4 and "compare two runs of one kind" in err and "Traceback" not in err


def test_diff_refuses_a_later_run_whose_findings_cannot_be_read(tmp_path):
    """A later run whose counterexamples (or a review's design) were given another type is refused (exit 4),
    never compared as having no new finding (it was exit 0: the new finding passed unread)."""
    before, after = tmp_path / "a.json", tmp_path / "b.json"
    before.write_text(json.dumps(_document([("duplicate_effect", "send_email (email)")])))
    for damaged in ("x", {}, None, 0):
        document = _document([("duplicate_effect", "send_email (email)"), ("lost_success", "charge_usage")])
        document["counterexamples"] = damaged
        after.write_text(json.dumps(document))
        code, _, err = run_cli("diff", before, after)
        assert code == 4 and "'counterexamples' must be a list" in err and "Traceback" not in err, (damaged, err)
    design = {"name": "w", "protocols": [], "counterexamples": []}
    review, damaged_review = tmp_path / "r1.json", tmp_path / "r2.json"
    review.write_text(json.dumps({"format": 1, "designs": [design]}))
    for broken in ("oops", {"name": "w", "protocols": []}, dict(design, counterexamples="x")):
        damaged_review.write_text(json.dumps({"format": 1, "designs": [design, broken]}))
        code, _, err = run_cli("diff", review, damaged_review)
        assert code == 4 and "Traceback" not in err and ("designs[1]" in err or "must be a list" in err), err


def test_a_baseline_knows_findings_not_invariants(tmp_path):
    """A baseline holding the e-mail's duplicate does not make the charge's duplicate known."""
    path = tmp_path / "notify-and-charge.toml"
    path.write_text(WORKFLOW)
    written = tmp_path / "baseline.json"
    common = ("fuzz", "--workload", path, "--protocol", "ledger_dedupe=off", "--seeds", "100", "--no-advise",
              "--workers", "1")
    code, _, err = run_cli(*common, "--out", tmp_path / "one", "--write-baseline", written)
    assert code in (0, 1) and written.is_file(), err
    baseline = json.loads(written.read_text())
    wheres = {e.get("where") for e in baseline["entries"] if e["invariant"] == "duplicate_effect"}
    assert wheres == {"notify_user (email)", "charge_usage (charge)"}
    baseline["entries"] = [e for e in baseline["entries"] if e.get("where") != "charge_usage (charge)"]
    written.write_text(json.dumps(baseline))
    code, out, err = run_cli(*common, "--out", tmp_path / "two", "--baseline", written, "--json")
    document = json.loads(out)
    status = {c["finding"]: c["baseline"] for c in document["counterexamples"]}
    assert status["duplicate_effect @ charge_usage (charge)"] == "new"
    assert status["duplicate_effect @ notify_user (email)"] == "known"
    assert code == 1
