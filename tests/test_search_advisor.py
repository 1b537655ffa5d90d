"""The counterfactual advisor (sim.search.advisor)."""

from __future__ import annotations

import functools

import sim
from sim.checks.base import run_checks
from sim.checks.workspace import WORKSPACE_CHECKS
from sim.protocol import parse_protocol
from sim.replay import replay
from sim.search.advisor import advise, knob_combinations, short_label, strength
from sim.search.workload import load_workload

ORDER = ["plan", "human_edit app.py", "dispatch s1", "deliver s1"]


@functools.lru_cache(maxsize=None)
def _setup():
    workload = load_workload("seed-fuzz")
    events = tuple(sim.parse_action(t, workload.base.files, workload.base.step_ids()) for t in ORDER)
    advice = advise(workload, parse_protocol("step-dedupe"), "lost_update", events, sample_seeds=100)
    return workload, events, advice


def _violations(workload, label, events):
    history, _ = replay(workload.base, parse_protocol(label), events)
    return run_checks(WORKSPACE_CHECKS, history).safety_violations


def test_the_order_violates_lost_update_under_step_dedupe():
    """The advisor's input really is a counterexample: step-dedupe loses an update on it."""
    workload, events, _ = _setup()
    assert "lost_update" in {v.invariant for v in _violations(workload, "step-dedupe", events)}


def test_every_protocol_in_removed_by_replays_the_order_cleanly():
    """Every protocol the advisor lists as removing the violation replays the order with no safety violation."""
    workload, events, advice = _setup()
    assert advice.removed_by
    for label in advice.removed_by:
        assert not _violations(workload, label, events), label


def test_recommended_protocol_is_in_removed_by():
    """The recommended protocol is one of those that remove the violation."""
    _, _, advice = _setup()
    assert advice.recommended is not None
    assert advice.recommended in advice.removed_by


def test_protocol_under_test_is_not_in_removed_by():
    """The protocol that violates is never advised as its own fix."""
    _, _, advice = _setup()
    assert parse_protocol("step-dedupe").label not in {parse_protocol(p).label for p in advice.removed_by}


def test_removed_by_is_ordered_weakest_first():
    """removed_by lists candidates by non-decreasing strength."""
    _, _, advice = _setup()
    strengths = [strength(parse_protocol(p)) for p in advice.removed_by]
    assert strengths == sorted(strengths)


def test_recommended_is_the_weakest_priced_safe_candidate():
    """The recommendation has the lowest strength among priced candidates whose sample sweep was clean."""
    _, _, advice = _setup()
    safe = [p for p in advice.priced if p["sample_violating_runs"] == 0]
    if safe:
        assert advice.recommended_strength == min(p["strength"] for p in safe)
        assert advice.sample_safety_violations == 0


def test_short_labels_parse_back_to_the_same_protocol():
    """Every knob combination's short label parses back to the same knobs."""
    for protocol in knob_combinations(parse_protocol("step-dedupe")):
        assert parse_protocol(short_label(protocol)).knobs == protocol.knobs
