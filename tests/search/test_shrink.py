"""Shrinking quality (sim.search.shrink): planted weaknesses are found and shrunk to the shortest order, on
the workspace family and through the same contract on the effects family."""

from __future__ import annotations

import functools

import pytest

import sim
from sim.families.effects import FAMILY as EFFECTS
from sim.families.effects.faults import FaultEvent
from sim.families.workspace import FAMILY
from sim.families.workspace.faults import base_order
from sim.search import exhaustive
from sim.search import shrink as shrinking
from sim.search import sweep as sweeping

pytestmark = pytest.mark.quality

SEEDS = 1000


@functools.cache
def _workload(name):
    return sim.load_workload(name)


def parse_protocol(label):
    return FAMILY.parse_protocol(label)


def shrink(workload, protocol, events, invariant, **options):
    return shrinking.shrink(FAMILY, workload, protocol, events, invariant, **options)


def explore(workload, protocol, max_events, **options):
    return exhaustive.explore(FAMILY, workload, protocol, exhaustive.ExploreOptions(max_events=max_events, **options))


def sweep(workload, protocols, seeds, workers=None):
    return sweeping.sweep(FAMILY, workload, protocols, seeds, workers=workers)


SWEPT = ("none", "fence=none,dedupe=memory", "step-dedupe,journal_write=after_write", "fence=step,stamp_at=apply")


@functools.cache
def _sweep(workload):
    labels = SWEPT if workload == "seed-fuzz" else ("none",)
    summary, _ = sweep(_workload(workload), list(labels), SEEDS, workers=2)
    return summary.found


def _found(workload, label):
    """(protocol, invariant) -> the first order the sweep kept for the invariant, whatever its finding."""
    wanted, out = parse_protocol(label).label, {}
    for (protocol, _), found in sorted(_sweep(workload).items(), key=lambda item: item[1].run):
        if protocol == wanted:
            out.setdefault((protocol, found.invariant), found)
    return out


@functools.cache
def _shrunk(workload, label, invariant):
    found = _found(workload, label)[(parse_protocol(label).label, invariant)]
    return shrink(_workload(workload), parse_protocol(label), found.order, invariant)


def _violated(workload, label, events):
    history = FAMILY.replay(_workload(workload).base, parse_protocol(label), events).history
    skipped = any(e.get("skipped") for e in history)
    return {v.invariant for v in FAMILY.check(history).safety_violations}, skipped


PLANTED = [
    ("none", "lost_update"),
    ("none", "duplicate_effect"),
    ("fence=none,dedupe=memory", "duplicate_effect"),
    ("step-dedupe,journal_write=after_write", "journal_loss"),
    ("fence=step,stamp_at=apply", "lost_update"),
    ("fence=step,stamp_at=apply", "duplicate_effect"),
]


@pytest.mark.slow
@pytest.mark.parametrize("label,invariant", PLANTED)
def test_planted_weakness_is_found_by_the_sweep(label, invariant):
    """A sweep of 1000 seeds on seed-fuzz finds the planted weakness."""
    assert (parse_protocol(label).label, invariant) in _found("seed-fuzz", label)


def test_none_lost_update_shrinks_to_four_events():
    """Under none, lost_update shrinks to a 4-event order with a human edit."""
    result = _shrunk("seed-fuzz", "none", "lost_update")
    assert len(result.events) == 4
    assert any(a.kind == "human_edit" for a in result.events)


def test_none_duplicate_effect_shrinks_to_five_events():
    """Under none, duplicate_effect shrinks to 5 events delivering one step twice."""
    result = _shrunk("seed-fuzz", "none", "duplicate_effect")
    assert len(result.events) == 5
    assert sum(1 for a in result.events if a.kind == "deliver") == 2


@pytest.mark.slow
def test_memory_dedupe_duplicate_effect_involves_a_preempt():
    """With dedupe in memory and no fence, the shrunk duplicate_effect needs a preempt (memory lost on restart)."""
    result = _shrunk("seed-fuzz", "fence=none,dedupe=memory", "duplicate_effect")
    assert any(a.kind == "preempt" for a in result.events)


def test_after_write_journal_loss_shrinks_to_the_known_order():
    """With journal_write=after_write, journal_loss shrinks to plan, dispatch, preempt after_write, deliver."""
    result = _shrunk("seed-fuzz", "step-dedupe,journal_write=after_write", "journal_loss")
    assert [str(a) for a in result.events] == ["plan", "dispatch s1", "preempt after_write", "deliver s1"]


@pytest.mark.parametrize("invariant,length", [("lost_update", 4), ("duplicate_effect", 5)])
def test_stamp_at_apply_shrinks_like_no_fence(invariant, length):
    """Stamping at apply defeats the step fence: its counterexamples are as short as under none."""
    result = _shrunk("seed-fuzz", "fence=step,stamp_at=apply", invariant)
    assert len(result.events) == length


@pytest.mark.slow
@pytest.mark.parametrize("label,invariant", PLANTED)
def test_shrunk_order_is_one_minimal(label, invariant):
    """Removing any single event of a shrunk order removes the violation or leaves a skipped event."""
    result = _shrunk("seed-fuzz", label, invariant)
    violated, skipped = _violated("seed-fuzz", label, result.events)
    assert invariant in violated and not skipped
    for index in range(len(result.events)):
        shorter = result.events[:index] + result.events[index + 1:]
        violated, skipped = _violated("seed-fuzz", label, shorter)
        assert invariant not in violated or skipped, [str(a) for a in shorter]


@pytest.mark.parametrize("label,invariant", [("none", "lost_update"), ("none", "duplicate_effect")])
def test_shrink_result_reports_its_contract(label, invariant):
    """The result says it is 1-minimal and proved shortest, and is shorter than the original."""
    result = _shrunk("seed-fuzz", label, invariant)
    assert result.one_minimal and result.shortest_proved and result.reason == "shortest"
    assert len(result.events) < result.original_length


@pytest.fixture(scope="module")
def tiny_none_exhaustive():
    return explore(_workload("tiny"), parse_protocol("none"), 6)


@pytest.mark.slow
@pytest.mark.parametrize("invariant,shortest", [("lost_update", 4), ("duplicate_effect", 5)])
def test_shrunk_length_equals_the_exhaustive_shortest(tiny_none_exhaustive, invariant, shortest):
    """On tiny under none, the shrunk order is exactly as long as the shortest order exhaustive search finds."""
    assert tiny_none_exhaustive.complete
    assert tiny_none_exhaustive.shortest[invariant] == shortest
    assert len(_shrunk("tiny", "none", invariant).events) == shortest


@pytest.mark.parametrize("invariant", ["lost_update", "duplicate_effect"])
def test_seed_fuzz_shrinks_to_the_tiny_shortest(invariant):
    """The seed-fuzz counterexamples under none are as short as the shortest tiny orders (4 and 5)."""
    expected = {"lost_update": 4, "duplicate_effect": 5}[invariant]
    assert len(_shrunk("seed-fuzz", "none", invariant).events) == expected


def test_shrinking_is_deterministic():
    """Shrinking the same order twice gives the same result."""
    found = _found("seed-fuzz", "none")[("none", "lost_update")]
    first = shrink(_workload("seed-fuzz"), parse_protocol("none"), found.order, "lost_update")
    second = shrink(_workload("seed-fuzz"), parse_protocol("none"), found.order, "lost_update")
    assert first == second


def test_shrink_refuses_an_order_without_the_violation():
    """Shrinking a fault-free order raises ValueError: there is nothing to shrink."""
    workload = _workload("seed-fuzz")
    with pytest.raises(ValueError):
        shrink(workload, parse_protocol("none"), base_order(workload), "lost_update")


def test_replay_limit_ends_with_a_named_reason():
    """A shrink that runs out of replays still returns a violating order and says which limit it hit."""
    found = _found("seed-fuzz", "none")[("none", "lost_update")]
    result = shrink(_workload("seed-fuzz"), parse_protocol("none"), found.order, "lost_update", max_replays=3)
    assert result.reason == "replay_limit" and not result.one_minimal and not result.shortest_proved
    violated, skipped = _violated("seed-fuzz", "none", result.events)
    assert "lost_update" in violated and not skipped


def test_without_tightening_the_result_is_one_minimal_but_not_proved_shortest():
    """tighten=False skips the exhaustive passes: the order is 1-minimal, its length not proved shortest."""
    found = _found("seed-fuzz", "none")[("none", "duplicate_effect")]
    result = shrink(_workload("seed-fuzz"), parse_protocol("none"), found.order, "duplicate_effect", tighten=False)
    assert result.one_minimal and result.reason == "minimal" and not result.shortest_proved


def test_effects_order_shrinks_to_the_one_fault_that_matters():
    """An effects fault list with extra faults shrinks to the single fault that duplicates the effect."""
    workload = sim.load_workload("effects-pr")
    protocol = EFFECTS.parse_protocol("unkeyed-retry")
    order = (FaultEvent("upgrade", "open_pr", "before_intent"), FaultEvent("terminate", "open_pr", "after_commit"),
             FaultEvent("foreign_object", "publish_release", "before_intent"))
    result = shrinking.shrink(EFFECTS, workload, protocol, order, "duplicate_effect")
    assert [str(e) for e in result.events] == ["terminate open_pr after_commit"]
    assert result.one_minimal and result.shortest_proved and result.reason == "shortest"


MINI_RUNTIME = """family = "effects"
workflow = ["create_branch", "open_pr", "publish_release"]
[faults]
classes = ["terminate", "zombie", "change_owner", "lose_response", "retry_changed", "duplicate", "timeout"]
rates = { zombie = 2, change_owner = 2 }
per_run_max = 3
"""


def test_an_order_tightened_to_one_event_is_shortest_without_a_depth_zero_search(tmp_path):
    """A restricted alphabet can shrink an order to one event; that is proved shortest as it stands (it
    once asked exhaustive search for depth 0 and failed with a usage error)."""
    path = tmp_path / "mini.toml"
    path.write_text(MINI_RUNTIME)
    workload = sim.load_workload(str(path))
    protocol = EFFECTS.parse_protocol("keyed-fingerprint-reconcile,lease_fence=off")
    summary, _ = sweeping.sweep(EFFECTS, workload, [protocol.label], 50, workers=1)
    assert summary.found, "the zombie workload finds nothing under lease_fence=off"
    for (_, invariant), found in summary.found.items():
        result = shrinking.shrink(EFFECTS, workload, protocol, found.order, invariant)
        assert result.shortest_proved and len(result.events) <= 1, (invariant, result)
