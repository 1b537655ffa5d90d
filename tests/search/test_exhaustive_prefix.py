"""Exhaustive search from a path (``ExploreOptions(prefix=...)``, what the explorer's "shortest violation from here"
runs): depths count the events after the path, every order returned violates once appended to it and not one
event sooner, and the three ways of expanding a state (state predicates, folds, replays) agree."""

from __future__ import annotations

import pytest

from sim.registry import FAMILIES
from sim.search.exhaustive import ExploreOptions, explore
from sim.search.expansion import Expansion


@pytest.fixture(scope="module")
def seed_fuzz():
    workload = FAMILIES.load_workload("seed-fuzz")
    family = FAMILIES.family_for(workload)
    return family, workload, {str(e): e for e in family.alphabet(workload)}


def _violated(family, workload, protocol, order):
    replay = family.replay(workload.base, protocol, tuple(order))
    return {v.invariant for v in family.check(replay.history).safety_violations}


@pytest.mark.parametrize("accelerate", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_the_search_starts_after_the_prefix(seed_fuzz, accelerate):
    family, workload, events = seed_fuzz
    protocol = family.parse_protocol("none")
    prefix = (events["plan"], events["dispatch s1"])
    whole = explore(family, workload, protocol, ExploreOptions(max_events=4, accelerate=accelerate))
    after = explore(family, workload, protocol, ExploreOptions(max_events=4, prefix=prefix, accelerate=accelerate))
    assert whole.shortest["lost_update"] == 4
    assert after.shortest["lost_update"] == 2  # two of the four events are the prefix
    assert [str(e) for e in after.minimal_orders["lost_update"][0]] == ["human_edit app.py", "deliver s1"]
    for name, orders in after.minimal_orders.items():
        for order in orders:
            assert name in _violated(family, workload, protocol, prefix + tuple(order))
            assert name not in _violated(family, workload, protocol, prefix + tuple(order)[:-1])


@pytest.mark.slow  # over 3 s: every successor replayed
def test_the_ways_of_expanding_agree_from_a_prefix(seed_fuzz):
    family, workload, events = seed_fuzz
    protocol = family.parse_protocol("step,dedupe=memory")
    prefix = (events["plan"], events["dispatch s1"], events["deliver s1"])
    fast = explore(family, workload, protocol, ExploreOptions(max_events=3, prefix=prefix))
    slow = explore(family, workload, protocol,
                   ExploreOptions(max_events=3, prefix=prefix, accelerate=False, sleep=False))
    assert fast.shortest == slow.shortest
    assert fast.distinct_states == slow.distinct_states
    mode = Expansion(family, workload, protocol, list(events.values()), accelerate=True, canonical=None,
                     prefix=prefix).mode
    assert mode in ("states", "folds")


def test_a_prefix_that_already_violates_is_found_at_depth_0(seed_fuzz):
    family, workload, events = seed_fuzz
    protocol = family.parse_protocol("none")
    prefix = tuple(events[t] for t in ("plan", "dispatch s1", "human_edit app.py", "deliver s1"))
    result = explore(family, workload, protocol, ExploreOptions(max_events=1, prefix=prefix))
    assert result.shortest["lost_update"] == 0 and result.minimal_orders["lost_update"] == [()]


def test_an_event_of_the_prefix_that_cannot_happen_has_no_effect(seed_fuzz):
    family, workload, events = seed_fuzz
    protocol = family.parse_protocol("none")
    noisy = (events["deliver s1"], events["plan"], events["ack s1"], events["dispatch s1"])
    clean = (events["plan"], events["dispatch s1"])
    assert explore(family, workload, protocol, ExploreOptions(max_events=3, prefix=noisy)).shortest == \
        explore(family, workload, protocol, ExploreOptions(max_events=3, prefix=clean)).shortest


def test_a_family_without_a_machine_searches_by_replay_from_the_prefix():
    workload = FAMILIES.load_workload("effects-saga")
    family = FAMILIES.family_for(workload)
    protocol = family.parse_protocol("keyed")
    alphabet = family.alphabet(workload)
    fault = next(e for e in alphabet if str(e) == "zombie publish_release after_commit")
    after = explore(family, workload, protocol, ExploreOptions(max_events=1, prefix=(fault,), alphabet=alphabet[:5]))
    assert after.shortest.get("lost_success") == 0
    before = explore(family, workload, protocol, ExploreOptions(max_events=1, alphabet=alphabet[:5]))
    assert "lost_success" not in before.shortest
