"""A design map a budget stopped: "alike" groups never mix decided and undecided designs, a design not decided
is alike to nothing, and the map's sentences say "violated" and "not decided" apart, as its table does."""

from __future__ import annotations

import pytest

from sim.registry import FAMILIES
from sim.report.map_check import map_contradictions
from sim.report.phrases import map_lines, map_rows
from sim.search.budget import Deadline
from sim.search.lattice import SAFE, UNDECIDED, VIOLATED, DesignMap, design_map

FAMILY = FAMILIES.get("workspace")
TINY = FAMILIES.load_workload("tiny")
KNOBS = ["fence", "dedupe"]
DECIDED = 4  # the designs the budget let the map search, in lattice order


@pytest.fixture(scope="module")
def stopped() -> DesignMap:
    """The map of fence x dedupe on tiny within 4 events, as a budget that ran out after its first four designs
    leaves it: those four decided, the five others never searched (their searches all end at once, empty)."""
    full = design_map(FAMILY, TINY, KNOBS, 4, seeds=0)
    never = design_map(FAMILY, TINY, KNOBS, 4, seeds=0, deadline=Deadline(0.0))
    assert [p.status() for p in never.points] == [UNDECIDED] * 9
    points = full.points[:DECIDED] + never.points[DECIDED:]
    return DesignMap(FAMILY, TINY, full.knobs, 4, points, "--budget", full.held)


def test_a_group_never_mixes_decided_and_undecided_designs(stopped):
    for group in stopped.groups():
        assert len({p.status() for p in group}) == 1, [p.protocol.label for p in group]


def test_a_design_not_decided_is_alike_to_nothing(stopped):
    """The five designs the budget never searched share the same empty search; they are five rows, not one
    "(and 4 alike)" row."""
    undecided = [g for g in stopped.groups() if g[0].status() == UNDECIDED]
    assert [len(g) for g in undecided] == [1] * (9 - DECIDED)
    document = stopped.document()
    for point in document.protocols:
        if point.status == UNDECIDED:
            assert point.same_as == point.protocol
    _, rows = map_rows(document)
    assert not any("alike" in row[0] and row[1].startswith(UNDECIDED) for row in rows)
    assert [row[1] for row in rows if row[1].startswith(UNDECIDED)] == [
        "not decided (the budget stopped its search)"] * (9 - DECIDED)


def test_decided_designs_that_behave_alike_are_still_one_group():
    """The rule leaves complete maps as they were: stamp_at changes nothing beside fence=plan."""
    drawn = design_map(FAMILY, TINY, ["fence", "stamp_at"], 4, seeds=0)
    group = next(g for g in drawn.groups() if g[0].protocol.label == "plan")
    assert {"plan", "plan,stamp_at=plan", "plan,stamp_at=apply"} <= {p.protocol.label for p in group}
    assert {p.status() for p in group} == {SAFE}


def test_the_sentences_say_violated_and_not_decided_apart(stopped):
    """"Not safe within the bound" named violated and undecided designs alike; the sentences now list each
    with the verdict its row gives it, and the check finds nothing to contradict."""
    document = stopped.document()
    lines = map_lines(document)
    violated = [p.protocol for p in document.protocols if p.status == VIOLATED and p.same_as == p.protocol]
    undecided = [p.protocol for p in document.protocols if p.status == UNDECIDED]
    assert f"Violated within the bound (drawn apart, never on the front): {', '.join(violated)}." in lines
    assert any(line.startswith("Not decided within the bound") and line.endswith(f": {', '.join(undecided)}.")
               for line in lines)
    assert not any("Not safe" in line for line in lines)
    assert document.not_decided == tuple(undecided) and document.violated_apart == tuple(violated)
    assert map_contradictions(document) == []


def test_a_design_nobody_measured_has_no_cost_and_a_certificate_speaks_of_the_decided_only(stopped):
    """A design the budget never ran shows "-" for its findings per run (not 0.00); a certificate drawn from the
    decided designs says so before its "iff"."""
    document = stopped.document()
    _, rows = map_rows(document)
    never = [row for row in rows if row[1].startswith(UNDECIDED)]
    assert never and all(row[4] == "-" for row in never)
    words = [c.words for c in document.certificates]
    assert words and all("among the designs the search decided" in w for w in words if "not decided" in w)
    assert map_contradictions(document) == []
