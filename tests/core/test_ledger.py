"""Blast radius: each counterexample's effect ledger names what the customer lost and who must act, from the
history's fields alone; a sweep's ledgers become rates per 10,000 runs."""

from __future__ import annotations

from sim.core.ledger import LedgerTally
from sim.registry import FAMILIES


def _ledger(path):
    scenario = FAMILIES.load_scenario(path)
    family = FAMILIES.family_for(scenario)
    replay = family.replay(scenario, family.parse_protocol(scenario.protocol))
    return [e.to_json() for e in family.effect_ledger(replay.history)]


def test_a_lost_update_names_the_overwritten_human_edit_and_the_step(repo_root):
    """The seed's minimal lost update: the human's edit of app.py (event 2) overwritten by s1."""
    entries = _ledger(repo_root / "scenarios/regressions/seed_fuzz_none_lost_update.toml")
    assert entries == [{"kind": "human_edit_overwritten", "event_index": 3, "object": "app.py",
                        "happened": "edited by human at event 2, overwritten by s1",
                        "who": "the human who made the edit", "can_do": "redo or merge it",
                        "what": "app.py edited by human at event 2, overwritten by s1",
                        "who_acts": "the human who made the edit: redo or merge it"}]


def test_a_step_applied_twice_is_one_entry(repo_root):
    """A retried step applied again is named once (its own earlier write is not a lost edit)."""
    entries = _ledger(repo_root / "scenarios/regressions/seed_fuzz_none_duplicate_effect.toml")
    assert [e["kind"] for e in entries] == ["step_applied_twice"]


def test_an_effects_duplicate_names_the_external_object(repo_root):
    """Unkeyed retry: the second preview duplicates the first, which is orphaned."""
    entries = _ledger(repo_root / "scenarios/regressions/effects_saga_unkeyed_retry_duplicate_effect.toml")
    assert {"kind": "object_duplicated", "object": "preview#4", "happened": "duplicates preview#3 (task_42 / "
            "create_preview)", "who": "an operator", "can_do": "close or delete the duplicate",
            "what": "preview#4 duplicates preview#3 (task_42 / create_preview)",
            "who_acts": "an operator: close or delete the duplicate", "event_index": 27} in entries
    assert any(e["kind"] == "object_orphaned" and "preview#3" in e["what"] for e in entries)


def test_an_owed_compensation_is_named_with_its_operation(repo_root):
    """A task closed compensated while its branch was never deleted: the operator must run delete_branch."""
    entries = _ledger(repo_root / "scenarios/regressions/effects_saga_unkeyed_retry_unresolved_compensation.toml")
    owed = [e for e in entries if e["kind"] == "compensation_owed"]
    assert owed and owed[0]["who_acts"] == "an operator: run delete_branch"


def test_a_safe_run_has_an_empty_ledger():
    """The seed's fault-free order under step-dedupe touches nothing it should not."""
    family, workload = FAMILIES.get("workspace"), FAMILIES.load_workload("tiny")
    from sim.families.workspace.faults import base_order

    replay = family.replay(workload.base, family.parse_protocol("step-dedupe"), base_order(workload))
    assert family.effect_ledger(replay.history) == []


def test_ledger_rates_per_ten_thousand_runs_carry_an_interval():
    """Counts per kind scale to 10,000 runs with the exact Poisson interval, never below zero."""
    from sim.core.ledger import Entry

    tally = LedgerTally()
    for run in range(200):
        entry = Entry("object_duplicated", "x", "duplicates y", "an operator", "delete it")
        tally.add([entry] if run % 40 == 0 else [])
    rate = tally.to_json()["kinds"]["object_duplicated"]["rate"]
    assert tally.runs == 200 and rate["value"] == 250.0 and 0 <= rate["low"] < 250 < rate["high"]
