"""A check never passes what it cannot judge: dropping any field from every event of a violating history
turns no violated check into ok (it stays violated or says not_evaluable)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.core.history import Event, History
from sim.registry import FAMILIES

REPO = Path(__file__).resolve().parents[2]
SOURCES = (sorted((REPO / "scenarios" / "regressions").glob("*.toml"))
           + sorted((REPO / "scenarios" / "runtime").glob("*.toml")))


def _labels(scenario, family) -> list[str]:
    """The scenario's protocol (else the family's presets) and every protocol its ``[expect]`` table names."""
    labels = [scenario.protocol] if scenario.protocol else list(family.presets)
    return labels + [label for label in getattr(scenario, "expect", None) or {} if label not in labels]


def _violating_histories():
    for path in SOURCES:
        scenario = FAMILIES.load_scenario(path)
        family = FAMILIES.family_for(scenario)
        for label in _labels(scenario, family):
            history = family.replay(scenario, family.parse_protocol(label)).history
            status = family.check(history).status()
            violated = [name for name, value in status.items() if value == "violated"]
            if violated:
                yield f"{path.stem}:{label}", family, history, violated


CASES = list(_violating_histories())


@pytest.mark.quality
def test_the_shipped_scenarios_give_violating_histories():
    """The parametrized test below has cases (an empty parameter list would only skip it)."""
    assert len(CASES) >= 10


@pytest.mark.quality
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_dropping_a_field_never_turns_a_violation_into_ok(case):
    """For every field of the history, a copy without it keeps each violated check violated or not_evaluable."""
    _, family, history, violated = case
    fields = sorted({name for event in history for name in event.fields})
    assert fields and violated
    for field in fields:
        stripped = History(Event(e.index, e.time, e.actor, e.event, {k: v for k, v in e.fields.items() if k != field})
                           for e in history)
        status = family.check(stripped).status()
        assert all(status[name] != "ok" for name in violated), (field, status)


@pytest.mark.quality
def test_bare_actor_event_lines_are_not_evaluable():
    """A history of bare actor/event lines that would violate is not_evaluable, never ok."""
    family = FAMILIES.get("workspace")
    history = History.from_dicts([{"actor": "executor", "event": "deliver", "step": "s1"}] * 2)
    status = family.check(history).status()
    assert set(status.values()) == {"not_evaluable"}


#: (event, field) whose absence from one event rightly means the event says nothing a check judges: a
#: delivery without a verdict was cut short by a crash before any decision (the workspace checks' ``exempt``),
#: and a commit without a compensation owes none.
MAY_BE_ABSENT = {("deliver", "verdict"), ("committed", "compensation")}


def _without(history, position: int, field: str) -> History:
    return History(e if i != position else Event(e.index, e.time, e.actor, e.event,
                                                  {k: v for k, v in e.fields.items() if k != field})
                   for i, e in enumerate(history))


@pytest.mark.quality
def test_the_cases_include_an_unapproved_irreversible_effect():
    """The protocols an [expect] table names are cases too: the release published with approval=off."""
    assert any("unapproved_irreversible" in violated for _, _, _, violated in CASES)


@pytest.mark.quality
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_dropping_a_field_from_one_event_never_turns_a_violation_into_ok(case):
    """A field dropped from a single event (the irreversible commit's ``effect_class``, while other commits keep
    theirs) keeps each violated check violated or not_evaluable: a check reads what it lacks from another
    record of the same step, or says it cannot judge."""
    _, family, history, violated = case
    for position, event in enumerate(history):
        for field in sorted(event.fields):
            if (event.event, field) in MAY_BE_ABSENT:
                continue
            status = family.check(_without(history, position, field)).status()
            assert all(status[name] != "ok" for name in violated), (event.index, event.event, field, status)
