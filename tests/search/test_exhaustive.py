"""Exhaustive bounded enumeration (sim.search.exhaustive) on the tiny workspace workload, and on the
effects-pr workload through the same contract."""

from __future__ import annotations

import dataclasses
import functools

import pytest

import sim
from sim.core.errors import InputError
from sim.families.effects import FAMILY as EFFECTS
from sim.families.workspace import FAMILY
from sim.search import exhaustive
from sim.search.exhaustive import EXHAUSTIVE_DEPTH_MAX, MAX_STATES_DEFAULT, STATE_LIMIT_MAX, ExploreOptions


@functools.cache
def _tiny():
    return sim.load_workload("tiny")


def parse_protocol(label):
    return FAMILY.parse_protocol(label)


def explore(workload, protocol, max_events, **options):
    return exhaustive.explore(FAMILY, workload, protocol, ExploreOptions(max_events=max_events, **options))


@functools.cache
def _explore(label, max_events):
    return explore(_tiny(), parse_protocol(label), max_events)


def test_plan_fence_has_no_safety_violation_within_five_events():
    """explore(tiny, plan, 5) finds no safety violation and covers the whole bound."""
    result = _explore("plan", 5)
    assert not result.violated
    assert result.minimal_orders == {}
    assert result.complete


def test_plan_fence_proof_names_every_invariant_absent():
    """A complete, clean search reports every safety invariant as proved absent."""
    data = _explore("plan", 5).to_json()
    assert set(data["proved_absent"]) == {"lost_update", "duplicate_effect", "stale_accept", "journal_loss"}
    assert data["violations"] == {}


def test_no_fence_finds_lost_update_at_four_and_duplicate_effect_at_five():
    """explore(tiny, none, 5) finds lost_update at 4 events and duplicate_effect at 5, and nothing else."""
    result = _explore("none", 5)
    assert result.complete
    assert result.shortest == {"lost_update": 4, "duplicate_effect": 5}


@pytest.mark.parametrize("invariant", ["lost_update", "duplicate_effect"])
def test_minimal_orders_have_the_shortest_length_and_replay_to_the_violation(invariant):
    """Every minimal order has the reported shortest length and replays, unskipped, to its violation."""
    result = _explore("none", 5)
    protocol = parse_protocol("none")
    assert result.minimal_orders[invariant]
    for order in result.minimal_orders[invariant]:
        assert len(order) == result.shortest[invariant]
        history = FAMILY.replay(_tiny().base, protocol, order).history
        assert not any(e.get("skipped") for e in history)
        assert invariant in {v.invariant for v in FAMILY.check(history).safety_violations}


@pytest.mark.parametrize("label", ["plan", "none"])
def test_states_generated_is_at_least_distinct_states(label):
    """Each distinct state was generated at least once, the initial one included (TLC's two counts)."""
    result = _explore(label, 5)
    assert result.distinct_states > 1
    assert result.states_generated >= result.distinct_states
    assert sum(result.states_per_depth) == result.distinct_states and result.states_per_depth[0] == 1


def test_same_call_twice_gives_identical_json():
    """Two identical explore calls give identical to_json()."""
    first = explore(_tiny(), parse_protocol("none"), 5).to_json()
    assert first == _explore("none", 5).to_json()


def test_lower_bound_finds_nothing_below_the_shortest():
    """With a bound of 3, no fence still shows no violation: the shortest is 4."""
    result = explore(_tiny(), parse_protocol("none"), 3)
    assert result.complete and not result.violated


def test_only_stops_at_the_first_depth_of_that_invariant():
    """With only=lost_update the search ends at depth 4 with reason found."""
    result = explore(_tiny(), parse_protocol("none"), 6, only="lost_update")
    assert result.reason == "found"
    assert result.shortest == {"lost_update": 4}


def test_state_limit_ends_with_a_named_reason():
    """A tiny state limit stops the search, marks it incomplete and names the limit."""
    result = explore(_tiny(), parse_protocol("none"), 5, max_states=5)
    assert not result.complete
    assert result.reason == "state_limit"
    assert result.to_json()["proved_absent"] == []


@pytest.mark.parametrize("bound", [0, EXHAUSTIVE_DEPTH_MAX + 1])
def test_out_of_range_bound_is_refused(bound):
    """A bound outside 1..EXHAUSTIVE_DEPTH_MAX raises InputError."""
    with pytest.raises(InputError):
        explore(_tiny(), parse_protocol("none"), bound)


def test_the_options_are_checked_once_when_made_and_never_change():
    """ExploreOptions refuses a bad limit when built (before any search), takes its fields by name only, keeps an
    alphabet and a prefix as tuples, and derives a changed copy with replace (checked again)."""
    for bad, words in (({"max_events": 0}, "--max-events"), ({"max_states": 0}, "state limit"),
                       ({"workers": 0}, "worker"), ({"memory_limit": 0}, "memory limit")):
        with pytest.raises(InputError, match=words):
            ExploreOptions(**{"max_events": 3, **bad})
    with pytest.raises(TypeError):
        ExploreOptions(3)  # type: ignore[misc]
    options = ExploreOptions(max_events=3, alphabet=["a", "b"], prefix=["a"])
    assert options.alphabet == ("a", "b") and options.prefix == ("a",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_events = 4  # type: ignore[misc]
    assert options.replace(max_events=None).max_events is None and options.max_events == 3
    with pytest.raises(InputError):
        options.replace(max_states=STATE_LIMIT_MAX + 1)
    assert ExploreOptions(max_events=None).max_states == MAX_STATES_DEFAULT


def test_a_restricted_alphabet_finds_only_orders_over_it():
    """With an alphabet of the first step's events, every order found uses only those events."""
    first_step = FAMILY.alphabets(_tiny())[0]
    result = explore(_tiny(), parse_protocol("none"), 5, alphabet=first_step)
    assert result.shortest == {"lost_update": 4, "duplicate_effect": 5}
    assert len(first_step) < len(FAMILY.alphabet(_tiny()))
    allowed = {str(e) for e in first_step}
    assert all(str(e) in allowed for orders in result.minimal_orders.values() for order in orders for e in order)


def test_to_json_reports_orders_states_and_the_end():
    """to_json names the protocol, bound, counts, completeness, end reason and each violation's orders."""
    data = _explore("none", 5).to_json()
    assert {"protocol", "max_events", "distinct_states", "states_generated", "states_per_depth", "diameter",
            "exhausted", "complete", "end", "proved_absent", "proved_within_events", "collision_probability",
            "violations"} <= set(data)
    assert data["violations"]["lost_update"]["shortest_events"] == 4
    assert all(isinstance(e, str) for order in data["violations"]["lost_update"]["orders"] for e in order)
    assert set(data["proved_absent"]) == {"stale_accept", "journal_loss"}


@functools.cache
def _effects(label):
    return exhaustive.explore(EFFECTS, sim.load_workload("effects-pr"), EFFECTS.parse_protocol(label),
                              ExploreOptions(max_events=1))


def test_effects_single_faults_under_the_full_design_break_only_the_keyless_release():
    """On effects-pr, every single fault under keyed-fingerprint-reconcile is safe except on the keyless release."""
    result = _effects("keyed-fingerprint-reconcile")
    assert result.complete and result.shortest == {"duplicate_effect": 1, "lost_success": 1}
    assert {order[0].transition for order in result.minimal_orders["duplicate_effect"]} == {"publish_release"}


def test_effects_lease_fence_off_is_found_with_one_fault():
    """Without the lease fence one zombie is enough for a second writer to duplicate an effect."""
    orders = _effects("keyed-fingerprint-reconcile,lease_fence=off").minimal_orders["duplicate_effect"]
    assert any(order[0].fault == "zombie" and order[0].transition == "open_pr" for order in orders)


def test_a_family_with_a_machine_is_explored_in_one_process_whatever_the_workers():
    """Sending states to workers costs more than one transition each: with a machine the search keeps to this
    process; a search that replays each candidate (no machine asked for) still gets its workers."""
    from sim.search.expansion import Expansion
    from sim.search.pool import Expander

    tiny = sim.load_workload("tiny")
    workspace = sim.family("workspace")
    direct = Expansion(workspace, tiny, workspace.parse_protocol("plan"), list(workspace.alphabet(tiny)),
                       accelerate=True, canonical=None)
    assert direct.machine is not None and Expander(direct, 2).workers == 1
    saga = sim.load_workload("effects-saga")
    effects = sim.family("effects")
    replaying = Expansion(effects, saga, effects.parse_protocol("keyed"), list(effects.alphabet(saga))[:3],
                          accelerate=False, canonical=None)
    assert replaying.machine is None and Expander(replaying, 2).workers == 2
    one = explore(tiny, parse_protocol("plan"), 5, workers=1).to_json()
    assert explore(tiny, parse_protocol("plan"), 5, workers=2).to_json() == one


@pytest.mark.slow  # seconds of replays up to the deadline
def test_a_replayed_search_ends_at_its_deadline_with_the_collector_on(monkeypatch):
    """Every successor of a replayed search (no machine asked for) is a replay, whose kernel leaves cycles
    behind: the cyclic
    collector stays on (with it off they piled up, hundreds of MB, and were collected all at once, seconds
    past the deadline), and the deadline is looked at before each replay."""
    import gc
    import time

    from sim.search.budget import Deadline

    saga = sim.load_workload("effects-saga")
    effects = sim.family("effects")
    collector: list[bool] = []
    replay = effects.replay
    monkeypatch.setattr(effects, "replay", lambda *args: (collector.append(gc.isenabled()), replay(*args))[1])
    started = time.monotonic()
    result = exhaustive.explore(effects, saga, effects.parse_protocol("keyed"),
                                ExploreOptions(max_events=3, deadline=Deadline(4, "the limit"), accelerate=False))
    assert time.monotonic() - started < 4 + 0.8
    assert not result.complete and result.reason == "the limit"
    assert collector and all(collector)
