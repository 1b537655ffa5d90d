"""The shrinker's contract is asserted: every accepted candidate is strictly shorter than the order it replaces,
an order the exhaustive search hands it shows the target on replay, and the result is no longer than the input
and still shows the target.  Each test plants one break and shows the shrink stops on it."""

from __future__ import annotations

import functools

import pytest

import sim
from sim.core.family import Replay
from sim.search import shrink as shrinking
from sim.search.exhaustive import ExploreOptions, explore
from sim.search.oracle import Oracle

FAMILY = sim.family("workspace")
NONE = FAMILY.parse_protocol("none")


@functools.cache
def _lost_update() -> tuple:
    """A shortest lost_update of tiny under none, with two events that play no part in it."""
    workload = sim.load_workload("tiny")
    options = ExploreOptions(max_events=4, only="lost_update")
    (order, *_) = explore(FAMILY, workload, NONE, options).minimal_orders["lost_update"]
    return tuple(order) + tuple(FAMILY.alphabet(workload)[:2])


def _shrink(**options):
    return shrinking.shrink(FAMILY, sim.load_workload("tiny"), NONE, _lost_update(), "lost_update", **options)


class _Growing:
    """An oracle that answers every candidate with a longer order."""

    def __call__(self, events):
        return tuple(events) + ("one more",)

    def exhausted(self):
        return False


def test_the_shrink_as_written_passes_its_own_checks():
    """Unplanted, the shrink runs through every check and returns a shorter order that still shows the bug."""
    result = _shrink()
    assert len(result.events) < len(_lost_update()) and result.reason == "shortest"


def test_a_pass_that_accepts_a_longer_candidate_stops_the_shrink():
    """Each accepted candidate is strictly shorter: an oracle answering with a longer order would never end."""
    with pytest.raises(AssertionError, match="accepted 3 events in place of 3"):
        shrinking.minimize(("a", "b", "c"), _Growing())


def test_an_order_the_search_finds_that_does_not_replay_stops_the_shrink(monkeypatch):
    """An order exhaustive search claims shows the bug is replayed before it replaces the shrink's: a search and a
    replay that disagree are a bug, not a shorter counterexample."""
    monkeypatch.setattr(shrinking, "_shown_by", lambda search, target, oracle: [()])
    with pytest.raises(AssertionError, match="does not show lost_update"):
        _shrink()


def test_a_result_that_no_longer_shows_the_bug_stops_the_shrink(monkeypatch):
    """The shrink's result must still show its target: a last pass that loses it is caught at the end."""
    monkeypatch.setattr(shrinking, "_fewest_switches",
                        lambda family, workload, current, oracle: (current[1:], 0, True))
    with pytest.raises(AssertionError, match="no longer shows lost_update"):
        _shrink()


def test_the_oracle_checks_an_order_without_counting_it():
    """A postcondition's replay is no step of the shrink: the replays reported and the cache stay as they were."""
    oracle = Oracle(FAMILY, sim.load_workload("tiny").base, NONE, "lost_update", max_replays=10)
    assert oracle.shows(_lost_update()) and not oracle.shows(())
    assert oracle.replays == 0 and oracle.cache == {}


def test_an_oracle_whose_replay_keeps_events_it_was_not_given_stops(monkeypatch):
    """The events that took effect are a sub-order of those replayed: a valid order with an event added would let a
    pass accept a candidate no shorter than the one it tried."""
    monkeypatch.setattr(Replay, "valid_order", lambda self: tuple(self.events) + tuple(self.events[:1]))
    oracle = Oracle(FAMILY, sim.load_workload("tiny").base, NONE, "lost_update", max_replays=10)
    with pytest.raises(AssertionError, match="are not a sub-order of"):
        oracle(_lost_update())
