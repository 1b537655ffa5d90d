"""run_scenario for any family, and the RunResult it returns."""

from __future__ import annotations

from sim.core.result import RunResult, run_scenario
from sim.families.effects import FAMILY as EFFECTS
from sim.families.workspace import FAMILY as WORKSPACE


def test_default_protocol_is_the_scenarios_then_the_familys(make_scenario):
    """Without a protocol, a run uses the scenario's own protocol, else the family's default."""
    assert run_scenario(WORKSPACE, make_scenario(["plan"], protocol="plan")).protocol.label == "plan"
    assert run_scenario(WORKSPACE, make_scenario(["plan"])).protocol.label == WORKSPACE.default_protocol
    assert WORKSPACE.default_protocol == "step-dedupe" and EFFECTS.default_protocol == "keyed-fingerprint-reconcile"


def test_protocol_text_and_object_give_the_same_run(make_scenario):
    """A protocol given as text or as a Protocol gives the same history."""
    scenario = make_scenario(["plan", "dispatch s1", "human_edit app.py", "deliver s1"])
    by_text = run_scenario(WORKSPACE, scenario, "none")
    by_object = run_scenario(WORKSPACE, scenario, WORKSPACE.parse_protocol("none"))
    assert by_text.history.to_jsonl() == by_object.history.to_jsonl()
    assert isinstance(by_text, RunResult) and by_text.family == "workspace"


def test_expect_is_looked_up_by_the_protocol_label(seed_dir):
    """The [expect] entry for the run's label decides expectation_met; without one it is None."""
    from sim.registry import FAMILIES

    scenario = FAMILIES.load_scenario(seed_dir / "concurrent_edit.toml")
    met = run_scenario(WORKSPACE, scenario, "none")
    assert (met.expect.outcome, met.outcome, met.expectation_met) == ("applied", "applied", True)
    unexpected = run_scenario(WORKSPACE, scenario, "fence=step,stamp_at=apply")
    assert unexpected.expect is None and unexpected.expectation_met is None
    assert "expect" not in unexpected.to_json() and "expect_met" not in unexpected.to_json()


def test_to_json_has_the_documented_keys(make_scenario):
    """A run's JSON has scenario, family, protocol, verdicts, violations, availability, checks, end, history and
    outcome."""
    result = run_scenario(WORKSPACE, make_scenario(["plan", "dispatch s1", "human_edit app.py", "deliver s1"]), "none")
    document = result.to_json()
    assert {"scenario", "family", "protocol", "verdicts", "violations", "availability", "checks", "end", "history",
            "outcome"} <= set(document)
    assert document["end"] == "completed" and document["violations"][0]["invariant"] == "lost_update"
    assert result.last_verdict == "applied" and document["checks"]["lost_update"] == "violated"


def test_violations_are_safety_and_availability_is_counted(make_scenario):
    """violations holds safety findings only; a spurious rejection is in availability."""
    result = run_scenario(WORKSPACE, make_scenario(["plan"]), "step,overlap_check=on")
    assert result.violations == [] and [v.invariant for v in result.availability] == ["spurious_rejection"]


LOST_UPDATE = ["plan", "dispatch s1", "deliver s1", "ack s1", "dispatch s2", "human_edit app.py human-refactor",
               "deliver s2"]


def test_a_violation_the_expect_entry_declares_passes(make_scenario):
    """run's rule: a violation [expect] declares (exactly, met) passes; one it does not declare fails, as does an
    entry not met; a run with no violation and no mismatch passes."""
    declared = make_scenario(LOST_UPDATE, expect={"none": {"outcome": "applied", "violations": ["lost_update"]}})
    run = run_scenario(WORKSPACE, declared, "none")
    assert [v.invariant for v in run.violations] == ["lost_update"]
    assert (run.violations_expected, run.expectation_met, run.passes) == (True, True, True)
    assert run.to_json()["violations_expected"] is True
    outcome_only = run_scenario(WORKSPACE, make_scenario(LOST_UPDATE, expect={"none": "applied"}), "none")
    assert (outcome_only.violations_expected, outcome_only.expectation_met, outcome_only.passes) == (
        False, True, False)
    undeclared = run_scenario(WORKSPACE, make_scenario(LOST_UPDATE), "none")
    assert (undeclared.violations_expected, undeclared.passes) == (False, False)
    wrong_outcome = make_scenario(LOST_UPDATE, expect={"none": {"outcome": "deduped", "violations": ["lost_update"]}})
    assert run_scenario(WORKSPACE, wrong_outcome, "none").passes is False
    clean = run_scenario(WORKSPACE, declared, "step")
    assert (clean.violations, clean.violations_expected, clean.passes) == ([], False, True)
    missing = make_scenario(LOST_UPDATE, expect={"step": {"violations": ["lost_update"]}})
    assert run_scenario(WORKSPACE, missing, "step").passes is False


def test_an_expect_entry_is_found_however_its_protocol_is_spelt(make_scenario):
    """An entry labelled with another spelling of the protocol run (every knob alike) is that run's."""
    from sim.core.expect import labels_not_run

    scenario = make_scenario(LOST_UPDATE, expect={"fence=step,dedupe=journal": "rejected:stale_rev",
                                                  "step-dedupe,drift_check=reject": "rejected:stale_rev"})
    run = run_scenario(WORKSPACE, scenario, "step-dedupe")
    assert run.expect is not None and run.expectation_met is True
    ran = [WORKSPACE.parse_protocol(p) for p in WORKSPACE.presets]
    assert labels_not_run(scenario.expect, ran, WORKSPACE.parse_protocol) == ["step-dedupe,drift_check=reject"]
