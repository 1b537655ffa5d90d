"""The workspace family's executor (executor.py): fences, dedupe stores, journal writes and preemptions,
replayed from small scripted orders."""

from __future__ import annotations

import sim
from sim.core.result import run_scenario as run
from sim.families.workspace import FAMILY

HUNKED_FILES = {"app.py": {"handler": "h0", "tests": "t0"}}
HUNKED_PLAN = [{"id": "s1", "path": "app.py", "patch": {"handler": "h1"}}]


def run_scenario(scenario, protocol=None):
    """Run a workspace scenario under a protocol (default: the scenario's own) with the family's checks."""
    return run(FAMILY, scenario, protocol)


def _events(result, name=None, step=None, skipped=None):
    out = []
    for event in result.history:
        if name is not None and event.event != name:
            continue
        if step is not None and event.get("step") != step:
            continue
        if skipped is not None and bool(event.get("skipped")) != skipped:
            continue
        out.append(event)
    return out


def _invariants(result):
    return sorted({v.invariant for v in result.violations})


def _findings(result):
    return sorted({v.invariant for v in result.availability})


def test_preempt_before_plan_is_skipped(make_scenario):
    """A preemption before the plan is recorded skipped, like every event that cannot happen yet."""
    result = run_scenario(make_scenario(["preempt", "preempt after_write", "plan", "dispatch s1", "deliver s1"]),
                          "step-dedupe")
    assert [e.get("skipped") for e in _events(result, "preempt")] == [True, True]
    delivery, = _events(result, "deliver")
    assert "preempted" not in delivery and delivery["incarnation"] == 1


def test_preempt_before_write_writes_nothing_and_sends_no_answer(make_scenario):
    """preempt before_write uses up the message: no verdict, no write, and a following ack is skipped."""
    result = run_scenario(make_scenario(["plan", "dispatch s1", "preempt before_write", "deliver s1", "ack s1",
                                         "human_edit app.py"]), "step-dedupe")
    delivery, = _events(result, "deliver")
    assert delivery["preempted"] == "before_write"
    assert "verdict" not in delivery and "hash_after" not in delivery and "journal_key" not in delivery
    assert _events(result, "ack")[0].get("skipped") is True
    assert _events(result, "human_edit")[0]["rev_after"] == 1  # the only write was the human's
    assert result.verdicts == []


def test_preempt_before_write_then_retry_applies_once(make_scenario):
    """After a before_write preemption the retry applies the step, once, with no violation."""
    result = run_scenario(make_scenario(["plan", "dispatch s1", "preempt before_write", "deliver s1", "retry s1",
                                         "deliver s1"]), "step-dedupe")
    assert result.outcome == "applied"
    assert _invariants(result) == []


def test_after_write_preemption_with_after_write_journal_loses_key(make_scenario):
    """journal_write=after_write: preempt after_write keeps the write, loses the key, and journal_loss fires."""
    result = run_scenario(make_scenario(["plan", "dispatch s1", "preempt after_write", "deliver s1", "ack s1"]),
                          "step-dedupe,journal_write=after_write")
    delivery, = _events(result, "deliver")
    assert delivery["verdict"] == "applied" and "hash_after" in delivery
    assert "journal_key" not in delivery
    assert _events(result, "ack")[0].get("skipped") is True
    assert _invariants(result) == ["journal_loss"]


def test_after_write_preemption_with_atomic_journal_keeps_key(make_scenario):
    """journal_write=atomic: preempt after_write keeps write and key, so the retry is deduped and nothing fires."""
    result = run_scenario(make_scenario(["plan", "dispatch s1", "preempt after_write", "deliver s1", "retry s1",
                                         "deliver s1"]), "step-dedupe")
    first, second = _events(result, "deliver")
    assert first["journal_key"] == "s1@0" and first["preempted"] == "after_write"
    assert second["verdict"] == "deduped"
    assert _invariants(result) == []
    assert result.checks.status()["journal_loss"] == "ok"


def test_memory_dedupe_works_without_preemption(make_scenario):
    """dedupe=memory answers a retry 'deduped' while the executor lives."""
    result = run_scenario(make_scenario(["plan", "dispatch s1", "deliver s1", "retry s1", "deliver s1"]),
                          "fence=none,dedupe=memory")
    assert result.outcome == "deduped" and _invariants(result) == []


def test_memory_dedupe_dies_with_preemption(make_scenario):
    """dedupe=memory loses its keys on preempt, so the retry applies again: duplicate_effect."""
    result = run_scenario(make_scenario(["plan", "dispatch s1", "deliver s1", "preempt", "retry s1", "deliver s1"]),
                          "fence=none,dedupe=memory")
    assert result.outcome == "applied twice"
    assert "duplicate_effect" in _invariants(result)


def test_journal_dedupe_survives_preemption(make_scenario):
    """dedupe=journal keeps its keys across a preempt, so the retry is deduped and nothing fires."""
    result = run_scenario(make_scenario(["plan", "dispatch s1", "deliver s1", "preempt", "retry s1", "deliver s1"]),
                          "fence=none,dedupe=journal")
    assert result.outcome == "deduped"
    assert _invariants(result) == []


def test_edit_to_other_hunk_makes_step_fence_reject_spuriously(make_scenario):
    """A human edit to another hunk makes a step-fenced step stale, counted as a spurious rejection."""
    scenario = make_scenario(["plan", "dispatch s1", "human_edit app.py#tests t-human", "deliver s1"],
                             files=HUNKED_FILES, plan=HUNKED_PLAN)
    result = run_scenario(scenario, "step")
    assert result.outcome in ("rejected:pre_hash", "rejected:stale_rev")
    assert _invariants(result) == []
    assert _findings(result) == ["spurious_rejection"]


def test_edit_to_other_hunk_is_no_lost_update_without_fence(make_scenario):
    """Under fence=none an edit to another hunk of the file is no lost_update: only named hunks compare."""
    scenario = make_scenario(["plan", "dispatch s1", "human_edit app.py#tests t-human", "deliver s1"],
                             files=HUNKED_FILES, plan=HUNKED_PLAN)
    result = run_scenario(scenario, "none")
    assert result.outcome == "applied"
    assert _invariants(result) == []


def test_edit_to_same_hunk_is_lost_update_without_fence(make_scenario):
    """Under fence=none an edit to the hunk the patch names is a lost_update."""
    scenario = make_scenario(["plan", "dispatch s1", "human_edit app.py#handler h-human", "deliver s1"],
                             files=HUNKED_FILES, plan=HUNKED_PLAN)
    assert _invariants(run_scenario(scenario, "none")) == ["lost_update"]


def test_stamp_at_apply_on_concurrent_edit_is_lost_update(seed_dir):
    """fence=step,stamp_at=apply (the seed code's stamp) applies over the human's edit: lost_update."""
    result = run_scenario(sim.load_scenario(seed_dir / "concurrent_edit.toml"), "fence=step,stamp_at=apply")
    assert result.outcome == "applied"
    assert "lost_update" in _invariants(result)


def test_stamp_at_apply_on_preemption_retry_is_duplicate_effect(seed_dir):
    """fence=step,stamp_at=apply re-stamps the retry at apply, so s1 is written twice: duplicate_effect."""
    result = run_scenario(sim.load_scenario(seed_dir / "preemption_retry.toml"), "fence=step,stamp_at=apply")
    assert result.outcome == "applied twice"
    assert "duplicate_effect" in _invariants(result)


def test_stamp_at_apply_dedupe_key_changes(seed_dir):
    """With stamp_at=apply and a journal, the retry's key is (s1, 1), so the journal misses it."""
    result = run_scenario(sim.load_scenario(seed_dir / "preemption_retry.toml"),
                          "step-dedupe,stamp_at=apply")
    keys = [e.get("journal_key") for e in _events(result, "deliver")]
    assert keys == ["s1@0", "s1@1"]
    assert "duplicate_effect" in _invariants(result)
