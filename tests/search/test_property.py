"""Hypothesis property search over event lists (sim.search.property) agrees with the seed sweep and the
exhaustive search."""

from __future__ import annotations

import functools

import pytest

import sim
from sim.core.errors import InputError
from sim.families.workspace import FAMILY
from sim.search import property as searching
from sim.search.exhaustive import ExploreOptions, explore


@functools.cache
def load_workload(name):
    return sim.load_workload(name)


def hypothesis_search(workload, protocol, invariant, **options):
    return searching.hypothesis_search(FAMILY, workload, protocol, invariant, **options)


def test_hypothesis_finds_the_shortest_lost_update_under_none():
    """Hypothesis's shrunk example for fence=none is as short as the exhaustive shortest (4 events)."""
    tiny = load_workload("tiny")
    found = hypothesis_search(tiny, "none", "lost_update")
    assert found is not None
    options = ExploreOptions(max_events=5, only="lost_update")
    shortest = explore(FAMILY, tiny, sim.parse_protocol("none"), options).shortest["lost_update"]
    assert len(found.hypothesis_events) == len(found.events) == shortest == 4


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_hypothesis_finds_planted_journal_loss():
    """The after_write journal window is found and shrunk to plan, dispatch, preempt, deliver."""
    found = hypothesis_search(load_workload("seed-fuzz"), "step-dedupe,journal_write=after_write", "journal_loss")
    assert [str(e) for e in found.events] == ["plan", "dispatch s1", "preempt after_write", "deliver s1"]


@pytest.mark.slow
def test_hypothesis_finds_nothing_under_plan_fence():
    """Within its example limit, Hypothesis finds no lost update under the plan fence."""
    assert hypothesis_search(load_workload("tiny"), "plan", "lost_update", max_examples=500) is None


def test_hypothesis_search_is_repeatable():
    """Derandomized settings: the same call gives the same order."""
    tiny = load_workload("tiny")
    first = hypothesis_search(tiny, "none", "lost_update").hypothesis_events
    assert hypothesis_search(tiny, "none", "lost_update").hypothesis_events == first


def test_unknown_invariant_is_an_input_error():
    """Asking for an invariant that does not exist names the ones that do."""
    with pytest.raises(InputError, match="lost_update"):
        hypothesis_search(load_workload("tiny"), "none", "lost_updates")


def test_result_hands_the_hypothesis_order_to_the_shrinker():
    """The result keeps Hypothesis's order (no skipped event) and the shrinker's 1-minimal, shortest order."""
    found = hypothesis_search(load_workload("tiny"), "none", "lost_update")
    replayed = FAMILY.replay(load_workload("tiny").base, FAMILY.parse_protocol("none"), found.hypothesis_events)
    assert replayed.skipped == frozenset()
    assert found.shrunk.one_minimal and found.shrunk.shortest_proved and found.invariant == "lost_update"
