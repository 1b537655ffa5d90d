"""The workspace family's planner, router, client, human and network (actors.py), replayed from small
scripted orders: what each may do at each point, and what is skipped."""

from __future__ import annotations

import sim
from sim.core.result import run_scenario as run
from sim.families.workspace import FAMILY

HUNKED_FILES = {"app.py": {"handler": "h0", "tests": "t0"}}
HUNKED_PLAN = [{"id": "s1", "path": "app.py", "patch": {"handler": "h1"}}]
REPLAN = [{"id": "s2", "path": "app.py", "patch": "v1-tail"}]


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


def test_deliver_with_nothing_in_flight_is_skipped(make_scenario):
    """A deliver with no copy in flight is recorded skipped with a reason and writes nothing."""
    result = run_scenario(make_scenario(["plan", "deliver s1", "dispatch s1"]), "step")
    skipped = _events(result, "deliver")[0]
    assert skipped.get("skipped") is True and "in flight" in skipped["reason"]
    assert result.verdicts == []
    assert _events(result, "dispatch")[0]["stamped_base_rev"] == 0  # rev unchanged by the skipped deliver


def test_dispatch_before_plan_is_skipped(make_scenario):
    """A dispatch before the plan is recorded skipped; the later dispatch is the step's real one."""
    result = run_scenario(make_scenario(["dispatch s1", "plan", "dispatch s1", "deliver s1"]), "step")
    first, second = _events(result, "dispatch")
    assert first.get("skipped") is True and first["reason"]
    assert "skipped" not in second and second["copy"] == 1
    assert result.outcome == "applied"


def test_second_plan_is_skipped(make_scenario):
    """A second plan event is recorded skipped; the first plan stands."""
    result = run_scenario(make_scenario(["plan", "plan"]), "step")
    plans = _events(result, "plan")
    assert "skipped" not in plans[0] and plans[1].get("skipped") is True
    assert "already" in plans[1]["reason"]


def test_dispatch_before_previous_verdict_skipped_with_pipeline_off(make_scenario):
    """With pipeline=off, dispatching s2 before s1's delivery produced a verdict is skipped."""
    result = run_scenario(make_scenario(["plan", "dispatch s1", "dispatch s2"]), "step")
    s2 = _events(result, "dispatch")[-1]
    assert s2.get("skipped") is True and "pipeline=off" in s2["reason"]


def test_dispatch_ahead_allowed_with_pipeline_on(make_scenario):
    """With pipeline=on, s2 is dispatched before s1 has a verdict."""
    result = run_scenario(make_scenario(["plan", "dispatch s1", "dispatch s2"]), "step,pipeline=on")
    assert [e.get("step") for e in _events(result, "dispatch", skipped=False)] == ["s1", "s2"]


def test_dispatch_needs_verdict_not_ack_with_pipeline_off(make_scenario):
    """With pipeline=off, s2 may be dispatched once s1 has a verdict, even though its ack was lost."""
    result = run_scenario(make_scenario(["plan", "dispatch s1", "deliver s1", "lose_ack s1", "dispatch s2"]), "step")
    assert [e.get("step") for e in _events(result, "dispatch", skipped=False)] == ["s1", "s2"]


def test_dispatch_never_repeats(make_scenario):
    """A second dispatch of one step is skipped (a dispatch never re-stamps)."""
    result = run_scenario(make_scenario(["plan", "dispatch s1", "human_edit app.py", "dispatch s1"]), "step")
    assert _events(result, "dispatch")[1].get("skipped") is True


def test_retry_resends_the_same_stamp(make_scenario):
    """A retry after the workspace moved carries the dispatch's stamped rev and hash, not new ones."""
    result = run_scenario(make_scenario(["plan", "dispatch s1", "human_edit app.py", "retry s1", "deliver s1",
                                         "deliver s1"]), "step")
    dispatch, = _events(result, "dispatch")
    retry, = _events(result, "retry")
    stamps = (dispatch["stamped_base_rev"], dispatch["stamped_pre_hash"])
    assert (retry["stamped_base_rev"], retry["stamped_pre_hash"]) == stamps == (0, dispatch["hash_current"])
    retried = _events(result, "deliver", step="s1")[-1]
    assert retried["origin"] == "retry" and retried["stamped_base_rev"] == 0


def test_retry_before_dispatch_is_skipped(make_scenario):
    """A retry of a step never dispatched is skipped."""
    result = run_scenario(make_scenario(["plan", "retry s1"]), "step")
    assert _events(result, "retry")[0].get("skipped") is True


def test_duplicate_with_nothing_in_flight_is_skipped(make_scenario):
    """A duplicate with no copy in flight is skipped; one in flight adds a copy that is delivered too."""
    result = run_scenario(make_scenario(["plan", "duplicate s1", "dispatch s1", "duplicate s1", "deliver s1",
                                         "deliver s1"]), "none")
    duplicates = _events(result, "duplicate")
    assert duplicates[0].get("skipped") is True and "skipped" not in duplicates[1]
    assert [e["origin"] for e in _events(result, "deliver")] == ["dispatch", "duplicate"]
    assert _invariants(result) == ["duplicate_effect", "lost_update"]


def test_human_edit_before_plan_is_skipped(make_scenario):
    """A human edit before the plan is recorded skipped and does not move the rev."""
    result = run_scenario(make_scenario(["human_edit app.py", "plan"]), "step")
    assert _events(result, "human_edit")[0].get("skipped") is True
    assert _events(result, "plan")[0]["snapshot_rev"] == 0


def test_drift_check_rejects_replan_at_dispatch(seed_dir):
    """drift_check=reject answers replan_drift's re-planned s2 with rejected:drift at its dispatch event."""
    result = run_scenario(sim.load_scenario(seed_dir / "replan_drift.toml"), "step,drift_check=reject")
    last = result.verdicts[-1]
    assert (last["step"], last["verdict"]) == ("s2", "rejected:drift")
    event = result.history[last["event_index"]]
    assert event.event == "dispatch" and event["domain"] == "replan_drift"
    assert [e["action"] for e in _events(result, "deliver", skipped=True)] == ["deliver s2"]


def test_overlap_check_rejects_same_file_plan_at_plan_event(make_scenario):
    """overlap_check=on rejects a two-step whole-file plan at the plan event and every dispatch is skipped."""
    result = run_scenario(make_scenario(["plan", "dispatch s1", "deliver s1"]), "step,overlap_check=on")
    plan = _events(result, "plan")[0]
    assert plan["verdict"] == "rejected:overlap" and plan["overlap"] == [["s1", "s2"]]
    assert result.verdicts == [{"event_index": 0, "step": None, "verdict": "rejected:overlap"}]
    assert _events(result, "dispatch")[0].get("skipped") is True


def test_overlap_rejection_with_pipeline_off_is_spurious(make_scenario):
    """An overlap rejection under pipeline=off is counted as a spurious rejection."""
    result = run_scenario(make_scenario(["plan"]), "step,overlap_check=on")
    assert _findings(result) == ["spurious_rejection"]


def test_overlap_rejection_with_pipeline_on_is_not_spurious(make_scenario):
    """An overlap rejection under pipeline=on is not counted as spurious."""
    result = run_scenario(make_scenario(["plan"]), "step,overlap_check=on,pipeline=on")
    assert _events(result, "plan")[0]["verdict"] == "rejected:overlap"
    assert _findings(result) == []


def test_overlap_check_admits_disjoint_hunks(make_scenario):
    """Steps patching different hunks of one file do not overlap, so the plan is admitted."""
    plan = HUNKED_PLAN + [{"id": "s2", "path": "app.py", "patch": {"tests": "t1"}}]
    result = run_scenario(make_scenario(["plan", "dispatch s1", "dispatch s2"], files=HUNKED_FILES, plan=plan),
                          "step,overlap_check=on,pipeline=on")
    assert "verdict" not in _events(result, "plan")[0]
    assert len(_events(result, "dispatch", skipped=False)) == 2


def test_human_edit_of_hunk_changes_only_that_hunk(make_scenario):
    """A hunk edit leaves the file's other hunks as they were (seen through the truth hashes of a later step)."""
    scenario = make_scenario(["plan", "human_edit app.py#tests t-human", "dispatch s1", "deliver s1"],
                             files=HUNKED_FILES, plan=HUNKED_PLAN)
    delivery = _events(run_scenario(scenario, "step"), "deliver")[0]
    assert delivery["verdict"] == "applied"
    assert delivery["hunks_before"] == delivery["expected_prior_hunks"]


def test_stale_replan_under_step_dedupe_is_lost_update(make_scenario):
    """'replan stale' under step-dedupe applies over content the new model never saw: lost_update."""
    events = ["plan", "dispatch s1", "deliver s1", "ack s1", "replan stale", "dispatch s2", "deliver s2"]
    result = run_scenario(make_scenario(events, replan=REPLAN), "step-dedupe")
    assert result.outcome == "applied"
    assert _invariants(result) == ["lost_update"]
    violation, = result.violations
    assert violation.step == "s2" and violation.domain == "replan_drift"


def test_fresh_replan_under_step_dedupe_is_safe(make_scenario):
    """'replan' (from the current snapshot) under step-dedupe applies with no violation."""
    events = ["plan", "dispatch s1", "deliver s1", "ack s1", "replan", "dispatch s2", "deliver s2"]
    result = run_scenario(make_scenario(events, replan=REPLAN), "step-dedupe")
    assert result.outcome == "applied"
    assert _invariants(result) == []


def test_replan_claims_old_plan_base(make_scenario):
    """A re-planned step claims the original plan's base rev 0 while its stamp at dispatch reads rev 1."""
    events = ["plan", "dispatch s1", "deliver s1", "ack s1", "replan", "dispatch s2"]
    result = run_scenario(make_scenario(events, replan=REPLAN), "step")
    dispatch = _events(result, "dispatch", step="s2")[0]
    assert (dispatch["claimed_base_rev"], dispatch["stamped_base_rev"]) == (0, 1)
    assert dispatch["replanned"] == "replan" and dispatch["model"] == "model-B"


def test_lose_ack_drops_answer(make_scenario):
    """lose_ack consumes the answer, so a later ack of that step is skipped."""
    result = run_scenario(make_scenario(["plan", "dispatch s1", "deliver s1", "lose_ack s1", "ack s1"]), "step")
    lost = _events(result, "lose_ack")[0]
    assert lost["verdict"] == "applied"
    assert _events(result, "ack")[0].get("skipped") is True
