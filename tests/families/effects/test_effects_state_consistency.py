"""An effects state asserts its own consistency (:meth:`EffectsMachine.check_state`): the history it counts,
the agenda, the workers' views of the log, the requests in flight and answered.  Each test plants one break in
a state the machine reached and shows the check names it."""

from __future__ import annotations

import heapq

import pytest

import sim
from sim.families.effects.state import TaskView

FAMILY = sim.family("effects")
#: A fault that leaves two requests in flight (the original and its copy) at the state it reaches.
DUPLICATED = "duplicate publish_release after_dispatch"


def _machine():
    return FAMILY.machine(sim.load_workload("effects-pr").base, FAMILY.parse_protocol("keyed"))


def _state():
    """A fresh state after the duplicated dispatch (plants change it in place)."""
    (event,) = [e for e in FAMILY.alphabet(sim.load_workload("effects-pr")) if str(e) == DUPLICATED]
    return _machine().state_after([event])


def _earlier(state):
    agenda = state.run.agenda
    when, priority, counter, eid = heapq.heappop(agenda.queue)
    heapq.heappush(agenda.queue, (agenda.now - 1, priority, counter, eid))


def _answered_in_flight(state):
    state.rt.responses.append((state.rt.in_flight[0], "committed", None))


def _ahead_of_the_log(state):
    (memory,) = state.rt.workers.values()
    (worker_task,) = memory.tasks.values()
    worker_task.view.records += 1


PLANTS = {
    "a record the state does not count": (lambda s: setattr(s, "length", s.length + 1), "counts"),
    "an event scheduled before now": (_earlier, "before now"),
    "a triggered event never scheduled": (lambda s: s.run.agenda.events.__setitem__(10**6, [[], True, "event"]),
                                          "are not the triggered ones"),
    "a request both in flight and answered": (_answered_in_flight, "both in flight and answered"),
    "a request numbered above the count": (lambda s: setattr(s.rt, "request_count", 0), "numbered above"),
    "a worker's view ahead of the log": (_ahead_of_the_log, "folded"),
}


def test_the_state_reached_passes_its_check():
    """Unplanted, the state after the duplicated dispatch is consistent, with two requests in flight."""
    state = _state()
    _machine().check_state(state)
    assert len(state.rt.in_flight) == 2


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_broken_part_fails_the_check(plant):
    """The check names what broke (each plant breaks one invariant of a reached state)."""
    state = _state()
    change, message = PLANTS[plant]
    change(state)
    with pytest.raises(AssertionError, match=message):
        _machine().check_state(state)


def test_a_view_in_an_unknown_status_fails_its_check():
    """A transition's view stands in one of the statuses the reducer knows."""
    view = TaskView("t")
    view.get("a").status = "sideways"
    with pytest.raises(AssertionError, match="unknown status 'sideways'"):
        view.check(0)
