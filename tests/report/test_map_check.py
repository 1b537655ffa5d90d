"""The map's sentences read back against its table (sim.report.map_check): nothing on maps as the search draws
them, and each planted mismatch between a sentence and a row -- the one the issue met among them -- found."""

from __future__ import annotations

import dataclasses

import pytest

from sim.registry import FAMILIES
from sim.report.consistency import contradictions
from sim.report.map_check import map_contradictions
from sim.report.phrases import map_lines
from sim.report.results import DesignRow
from sim.search.budget import Deadline
from sim.search.lattice import DesignMap, design_map
from sim.search.map_document import MapDocument

FAMILY = FAMILIES.get("workspace")
TINY = FAMILIES.load_workload("tiny")


@pytest.fixture(scope="module")
def complete() -> MapDocument:
    """fence x stamp_at x dedupe on tiny within 5 events: minimal safe designs, "what if" lines, monotonicity
    findings, designs violated and none undecided."""
    return design_map(FAMILY, TINY, ["fence", "stamp_at", "dedupe"], 5, seeds=20).document()


@pytest.fixture(scope="module")
def stopped() -> MapDocument:
    """fence x dedupe within 4 events as a budget leaves it: the first four designs decided, five never searched."""
    full = design_map(FAMILY, TINY, ["fence", "dedupe"], 4, seeds=0)
    never = design_map(FAMILY, TINY, ["fence", "dedupe"], 4, seeds=0, deadline=Deadline(0.0))
    return DesignMap(FAMILY, TINY, full.knobs, 4, full.points[:4] + never.points[4:], "--budget",
                     full.held).document()


def _undecided(document: MapDocument) -> str:
    return next(p.protocol for p in document.protocols if p.status == "not decided")


def _planted(document: MapDocument, change) -> MapDocument:
    """The map with ``change`` made to its JSON document, read back."""
    written = document.to_json()
    change(written)
    return MapDocument.from_json(written)


def test_maps_as_drawn_have_no_contradiction(complete, stopped):
    assert any(line.startswith("What if we drop this?") for line in map_lines(complete))
    assert any(line.startswith("Finding:") for line in map_lines(complete))
    assert map_contradictions(complete) == []
    assert map_contradictions(stopped) == []


def test_a_sentence_calling_an_undecided_design_violated_is_caught(stopped):
    """The issue's map: its sentence put a design among the violated while its row said "not decided"."""
    label = _undecided(stopped)
    found = map_contradictions(_planted(stopped, lambda d: d["violated_apart"].append(label)))
    assert any(f"calls {label} violated, but its table says 'not decided" in line for line in found), found


def test_the_old_wording_of_an_undecided_design_is_caught(stopped):
    """A renderer that lists every design not proved safe as violated (the wording the issue met) is caught by
    the same check, fed that renderer's sentences."""
    def old(document: MapDocument) -> list[str]:
        return [line.replace("Not decided within the bound", "Violated within the bound")
                for line in map_lines(document)]

    label = _undecided(stopped)
    found = map_contradictions(stopped, sentences=old)
    assert any(f"calls {label} violated" in line for line in found), found


def test_a_safe_design_the_table_shows_violated_is_caught(complete):
    violated = next(p for p in complete.protocols if p.status == "violated" and p.same_as == p.protocol)
    found = map_contradictions(_planted(complete, lambda d: d["minimal_safe"].append(violated.protocol)))
    assert any(f"calls {violated.protocol} safe, but its table says 'violated'" in line for line in found), found


def test_a_what_if_line_with_another_length_than_the_table_is_caught(complete):
    written = complete.to_json()
    entry = next(e for found in written["nearest_unsafe"].values() for e in found)
    entry["shortest_events"] += 1
    found = map_contradictions(MapDocument.from_json(written))
    assert any(f"says {entry['protocol']} breaks {entry['invariant']} in {entry['shortest_events']} events" in line
               for line in found), found


def test_a_row_standing_for_an_undecided_design_among_decided_ones_is_caught(stopped):
    """The issue's row "unkeyed-retry (and 22 alike...) | not decided": a design not decided grouped with
    another; and a decided design in the row of an undecided one."""
    planted = stopped.to_json()
    undecided = [p for p in planted["protocols"] if p["status"] == "not decided"]
    undecided[1]["same_as"] = undecided[0]["protocol"]
    decided = next(p for p in planted["protocols"] if p["status"] == "violated")
    decided["same_as"] = undecided[0]["protocol"]
    found = map_contradictions(MapDocument.from_json(planted))
    assert any(f"groups {undecided[1]['protocol']}, not decided, as alike to" in line for line in found), found
    assert any(f"shows {decided['protocol']} as 'not decided" in line for line in found), found


def test_a_review_lists_the_map_mismatch_among_its_contradictions(stopped):
    planted = stopped.to_json()
    planted["violated_apart"].append(_undecided(stopped))
    design = DesignRow(name="d", counterexamples=(), map=MapDocument.from_json(planted))
    assert any("the map's sentence" in line for line in contradictions(design))
    assert contradictions(dataclasses.replace(design, map=stopped)) == []
