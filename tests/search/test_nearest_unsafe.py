"""Nearest unsafe neighbour of each minimal safe design: the one-knob change that breaks it, with a witness
that is a real violating order under the neighbour's protocol."""

from __future__ import annotations

import pytest

from sim.registry import FAMILIES
from sim.search.exhaustive import ExhaustiveResult
from sim.search.lattice import design_map
from sim.search.oracle import evaluate

FAMILY = FAMILIES.get("workspace")
TINY = FAMILIES.load_workload("tiny")


@pytest.fixture(scope="module")
def fence_dedupe():
    return design_map(FAMILY, TINY, ["fence", "dedupe"], 6, seeds=20)


def test_dropping_the_plan_fence_breaks_with_a_replayable_witness(fence_dedupe):
    (plan,) = fence_dedupe.minimal_safe()
    found = fence_dedupe.nearest_unsafe(plan)
    assert found and found[0].knob == "fence" and found[0].before == "plan"
    for entry in found:
        neighbour = next(p for p in fence_dedupe.points if p.protocol.label == entry.protocol)
        events = neighbour.search.minimal_orders[entry.invariant][0]
        assert tuple(str(e) for e in events) == entry.witness
        assert entry.shortest_events == len(events)
        result = evaluate(FAMILY, TINY.base, neighbour.protocol, events)
        assert entry.invariant in result.violated
    assert fence_dedupe.to_json()["nearest_unsafe"][plan.protocol.label] == [e.to_json() for e in found]


def test_a_neighbour_made_safe_leaves_the_list(fence_dedupe):
    (plan,) = fence_dedupe.minimal_safe()
    before = fence_dedupe.nearest_unsafe(plan)
    label = before[0].protocol
    neighbour = next(p for p in fence_dedupe.points if p.protocol.label == label)
    saved = neighbour.search
    try:
        neighbour.search = ExhaustiveResult(**{**vars(saved), "minimal_orders": {}, "shortest": {}})
        after = fence_dedupe.nearest_unsafe(plan)
        assert label not in [e.protocol for e in after]
        assert len(after) == len(before) - 1
    finally:
        neighbour.search = saved
