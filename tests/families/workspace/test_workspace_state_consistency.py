"""A workspace state asserts its own consistency (:meth:`WorkspaceMachine.check_state`): each test plants one
broken field in a state the machine reached and shows the check names it; the states the machine reaches
pass."""

from __future__ import annotations

import functools

import pytest

import sim
from sim.families.workspace.state import Label

FAMILY = sim.family("workspace")
PROTOCOL = "step-dedupe,rev_scope=file,checkpoint=per_step"


@functools.cache
def _machine():
    return FAMILY.machine(sim.load_workload("tiny").base, FAMILY.parse_protocol(PROTOCOL))


def _state():
    """After the plan, s1 sent, retried and applied: a write, a journal key, a checkpoint, a copy in flight."""
    events = {str(event): event for event in FAMILY.alphabet(sim.load_workload("tiny"))}
    return _machine().state_after([events[name] for name in ("plan", "dispatch s1", "retry s1", "deliver s1")])


def test_the_states_the_machine_reaches_pass_their_check():
    """Every state of tiny within four events, under a protocol with file revisions and checkpoints, passes."""
    machine, events = _machine(), FAMILY.alphabet(sim.load_workload("tiny"))
    layer, seen = [machine.initial()], set()
    for _ in range(4):
        found = {machine.advance(state, event) for state in layer for event in events
                 if machine.why_not(state, event) is None}
        layer = sorted(found - seen, key=repr)
        seen |= found
        for state in layer:
            machine.check_state(state)
    assert len(seen) > 50


PLANTS = {
    "a write that moved the workspace rev and no file's": (
        lambda s: s._replace(rev=s.rev + 1), "is not the sum of the files' revisions"),
    "a plan without its snapshot's rev": (lambda s: s._replace(snapshot_rev=None), "are set together"),
    "steps out of plan order": (lambda s: s._replace(steps=s.steps[::-1]), "are not the plan's"),
    "a step sent twice": (lambda s: s._replace(sent=s.sent * 2), "a step sent twice"),
    "a step both sent and refused": (
        lambda s: s._replace(refused=frozenset({"s1"}), verdict_steps=s.verdict_steps | {"s1"}),
        "both sent and refused"),
    "a later step sent before an earlier one": (
        lambda s: s._replace(sent=(("s2", s.sent[0][1]._replace(step=s.steps[1])),)), "the plan's first 1"),
    "a copy in flight nobody counted": (lambda s: s._replace(copies=Label((0, 0))), "more copies in flight"),
    "a dedupe key of no step": (lambda s: s._replace(journal=frozenset({("s9", 0)})), "a dedupe key of no step"),
    "a checkpoint of a step never applied": (lambda s: s._replace(applied=frozenset()), "never applied"),
    "a preemption armed at no point": (lambda s: s._replace(armed="sideways"), "armed at 'sideways'"),
    "a counter below its start": (lambda s: s._replace(edits=-1), "went below its start"),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_broken_field_fails_the_check(plant):
    """The check names what broke (each plant breaks one invariant of a reached state)."""
    state = _state()
    _machine().check_state(state)
    change, message = PLANTS[plant]
    with pytest.raises(AssertionError, match=message):
        _machine().check_state(change(state))
