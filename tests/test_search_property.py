"""Hypothesis property search over event lists agrees with the seed sweep and the exhaustive search."""

from __future__ import annotations

import pytest

import sim
from sim.errors import InputError
from sim.search.exhaustive import explore
from sim.search.property import hypothesis_search
from sim.search.workload import load_workload


def test_hypothesis_finds_the_shortest_lost_update_under_none():
    """Hypothesis's shrunk example for fence=none is as short as the exhaustive shortest (4 events)."""
    tiny = load_workload("tiny")
    found = hypothesis_search(tiny, "none", "lost_update")
    assert found is not None
    shortest = explore(tiny, sim.parse_protocol("none"), 5, only="lost_update").shortest["lost_update"]
    assert len(found.hypothesis_events) == len(found.events) == shortest == 4


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
