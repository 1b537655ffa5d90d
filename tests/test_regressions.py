"""Every exported minimal counterexample in scenarios/regressions (both families) still fails the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.registry import FAMILIES

REGRESSIONS = sorted((Path(__file__).resolve().parents[1] / "scenarios" / "regressions").glob("*.toml"))


def _load(path):
    scenario = FAMILIES.load_scenario(path)
    family = FAMILIES.family_for(scenario)
    return scenario, family, family.parse_protocol(scenario.protocol)


def test_regressions_exist_for_both_families():
    """The fence=none counterexamples the seed asks for, and the effects presets', are kept as regressions."""
    names = {p.stem for p in REGRESSIONS}
    assert {"seed_fuzz_none_lost_update", "seed_fuzz_none_duplicate_effect"} <= names
    for preset in ("unkeyed_retry", "keyed", "keyed_reconcile", "keyed_fingerprint_reconcile"):
        assert f"effects_saga_{preset}_duplicate_effect" in names


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_regression_replays_its_violation(path):
    """The minimal order, replayed with no seed, violates the invariant it was exported for."""
    scenario, family, protocol = _load(path)
    replay = family.replay(scenario, protocol)
    assert scenario.meta["invariant"] in [v.invariant for v in family.check(replay.history).safety_violations]
    assert not replay.skipped, "a minimal order has no event without effect"


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_regression_is_one_minimal(path):
    """Dropping any single event makes the violation disappear or leaves an event without effect."""
    scenario, family, protocol = _load(path)
    invariant = scenario.meta["invariant"]
    events = list(scenario.events)
    for index in range(len(events)):
        replay = family.replay(scenario, protocol, events[:index] + events[index + 1:])
        violated = [v.invariant for v in family.check(replay.history, (invariant,)).safety_violations]
        assert replay.skipped or invariant not in violated, index
