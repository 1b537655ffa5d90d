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


def _violating_histories():
    for path in SOURCES:
        scenario = FAMILIES.load_scenario(path)
        family = FAMILIES.family_for(scenario)
        for label in [scenario.protocol] if scenario.protocol else list(family.presets):
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
