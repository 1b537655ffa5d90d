"""A finding's domain is its cause (docs/workspace.md, "Failure domains"): a checkpoint restore over a later edit
is a domain of its own, and a re-plan is the domain only where it changed what happened."""

from __future__ import annotations

from sim.core.result import run_scenario
from sim.families.workspace import FAMILY

FILES = {"app.py": {"head": "h0", "body": "b0"}}
PLAN = [{"id": "s1", "path": "app.py", "patch": {"head": "h1"}}]


def _lost_update_domains(make_scenario, events, protocol, replan=None):
    scenario = make_scenario(events, files=FILES, plan=PLAN, replan=replan)
    result = run_scenario(FAMILY, scenario, protocol)
    return [v.domain for v in result.violations if v.invariant == "lost_update"]


def test_a_restore_over_a_later_edit_is_a_checkpoint_restore_finding(make_scenario):
    events = ["plan", "dispatch s1", "deliver s1", "human_edit app.py#body", "tests_fail app.py"]
    assert _lost_update_domains(make_scenario, events, "step-dedupe,checkpoint=per_step") == ["checkpoint_restore"]


def test_a_replan_before_the_edit_that_breaks_the_step_plays_no_part(make_scenario):
    """The re-planned step overwrites an edit the first plan's step would have overwritten too: a stale plan."""
    events = ["plan", "replan stale", "human_edit app.py#head", "dispatch s1", "deliver s1"]
    assert _lost_update_domains(make_scenario, events, "step") == ["stale_plan"]
    without = ["plan", "human_edit app.py#head", "dispatch s1", "deliver s1"]
    assert _lost_update_domains(make_scenario, without, "step") == ["stale_plan"]


def test_a_replan_that_moves_the_patch_onto_the_edit_is_replan_drift(make_scenario):
    """The first plan's step patched an untouched hunk; the re-plan patches the edited one from the old snapshot:
    without the re-plan nothing is lost, so the re-plan is the cause."""
    replan = [{"id": "s1", "path": "app.py", "patch": {"body": "b1"}}]
    events = ["plan", "human_edit app.py#body", "replan stale", "dispatch s1", "deliver s1"]
    assert _lost_update_domains(make_scenario, events, "step", replan) == ["replan_drift"]
    without = ["plan", "human_edit app.py#body", "dispatch s1", "deliver s1"]
    assert _lost_update_domains(make_scenario, without, "step", replan) == []


def test_a_restore_over_a_human_edit_is_in_the_blast_radius(make_scenario):
    """The restore destroyed the human's edit: the ledger names it, as it names an edit a step overwrote."""
    events = ["plan", "dispatch s1", "deliver s1", "human_edit app.py#body", "tests_fail app.py"]
    result = run_scenario(FAMILY, make_scenario(events, files=FILES, plan=PLAN), "step-dedupe,checkpoint=per_step")
    entries = FAMILY.effect_ledger(result.history)
    assert [(e.kind, e.object) for e in entries] == [("human_edit_overwritten", "app.py#body")]
    assert "restoring s1's checkpoint" in entries[0].happened
