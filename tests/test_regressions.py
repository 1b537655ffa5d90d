"""Every exported minimal counterexample in scenarios/regressions still fails the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

import sim
from sim.scenario import load_scenario

REGRESSIONS = sorted((Path(__file__).resolve().parents[1] / "scenarios" / "regressions").glob("*.toml"))


def test_regressions_exist_for_none():
    """The fence=none counterexamples the seed asks for are kept as named regressions."""
    names = {p.stem for p in REGRESSIONS}
    assert "seed_fuzz_none_lost_update" in names
    assert "seed_fuzz_none_duplicate_effect" in names


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_regression_replays_its_violation(path):
    """The minimal order, replayed with no seed, violates the invariant it was exported for."""
    scenario = load_scenario(path)
    result = sim.run_scenario(scenario, scenario.protocol)
    assert scenario.meta["invariant"] in [v.invariant for v in result.violations]
    assert not any(e.get("skipped") for e in result.history), "a minimal order has no skipped event"


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_regression_is_one_minimal(path):
    """Dropping any single event makes the violation disappear or leaves an event that cannot happen."""
    scenario = load_scenario(path)
    invariant = scenario.meta["invariant"]
    for index in range(len(scenario.events)):
        shorter = scenario.with_events(scenario.events[:index] + scenario.events[index + 1:])
        result = sim.run_scenario(shorter, scenario.protocol)
        skipped = any(e.get("skipped") for e in result.history)
        assert skipped or invariant not in [v.invariant for v in result.violations], index
