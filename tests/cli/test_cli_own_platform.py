"""A design review's own platform: ``matrix --table verdicts`` on a design or workload of one's own, ``map
--base`` varying only the named knobs from the design under review, and certificates naming what they hold."""

from __future__ import annotations

import json

from sim.families.workspace.verdicts import ROWS, mapped


def test_the_verdict_table_judges_a_designs_own_protocols_on_its_workload(cli):
    done = cli("matrix", "--table", "verdicts", "--design", "scenarios/designs/three-files.toml", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["protocols"] == ["step-dedupe", "step-dedupe,journal_write=after_write",
                                     "step-dedupe,drift_check=reject"]
    assert document["workload"] == "three-files" and document["platform"] is None
    replan = next(r for r in document["rows"] if r["row"] == "replan_current")
    assert "dispatch s3" in replan["events"]  # the workload's own second step of app.py
    drift = next(c for c in replan["cells"] if c["protocol"] == "step-dedupe,drift_check=reject")
    assert drift["verdict"] == "rejected:drift" and not drift["matches"]


def test_a_row_the_workload_cannot_hold_says_why(cli):
    import sim

    base = sim.load_workload("tiny").base
    sibling = next(r for r in ROWS if r.name == "overlapping_siblings")
    assert "no second step" in mapped(sibling, base)
    done = cli("matrix", "--table", "verdicts", "-w", "tiny", "-p", "step-dedupe")
    assert done.returncode == 0 and "overlapping_siblings: not expressible" in done.stdout


def test_the_verdict_table_refuses_an_effects_design_and_options_without_it(cli):
    done = cli("matrix", "--table", "verdicts", "--design", "scenarios/designs/usage-charge.toml")
    assert done.returncode == 4 and "effects family" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = cli("matrix", "-w", "tiny")
    assert done.returncode == 4 and "go with --table verdicts" in done.stderr


def test_map_from_a_base_keeps_its_knobs_names_them_and_draws_the_front_among_safe_designs(cli):
    done = cli("map", "-w", "three-files", "--base", "step-dedupe,checkpoint=per_step", "--knobs",
               "drift_check", "--max-events", "4", "--seeds", "20", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["base"] == "step-dedupe,checkpoint=per_step"
    assert document["held"]["checkpoint"] == "per_step" and document["held"]["fence"] == "step"
    assert all("checkpoint=per_step" in p["protocol"] for p in document["protocols"])
    assert all("checkpoint=per_step" in c["words"] and "held fixed" in c["words"] for c in document["certificates"])
    statuses = {p["protocol"]: p["status"] for p in document["protocols"]}
    assert all(statuses[label] == "safe" for label in document["pareto_front"])
    assert set(document["unsafe_apart"]) == {label for label, s in statuses.items() if s != "safe"} & {
        p["same_as"] for p in document["protocols"]}
