"""The single-fault enumerator (sim.search.grid), for any family that lists cells."""

from __future__ import annotations

import functools

import sim
from sim.families.effects import FAMILY as EFFECTS
from sim.families.effects.cruel import cruel_workload
from sim.families.workspace import FAMILY
from sim.search.grid import Grid, GridCell, run_cell, single_fault_grid


@functools.cache
def _grid(family_name, workload_name, label):
    family = sim.family(family_name)
    workload = cruel_workload() if workload_name == "cruel" else sim.load_workload(workload_name)
    return single_fault_grid(family, workload, family.parse_protocol(label))


def test_grid_runs_every_cell_of_the_family_in_order():
    """The grid has one result per cell the family lists, in the family's order."""
    grid = _grid("workspace", "tiny", "none")
    assert [c.labels for c in grid.cells] == [c.labels for c in FAMILY.single_faults(sim.load_workload("tiny"))]
    assert grid.family == "workspace" and grid.protocol == FAMILY.parse_protocol("none")


def test_violations_are_the_cells_with_an_invariant():
    """A cell is ok when it violates nothing; violations lists the others."""
    grid = _grid("workspace", "tiny", "none")
    assert grid.violations and all(c.invariants for c in grid.violations)
    assert all(c.ok for c in grid.cells if c not in grid.violations)
    assert len(grid.violations) < len(grid.cells)


def test_workspace_single_faults_under_none_include_the_human_edit_lost_update():
    """Under fence=none a human edit after a dispatch loses an update in a one-fault cell."""
    cells = {c.labels: c for c in _grid("workspace", "tiny", "none").violations}
    assert "lost_update" in cells[("human_edit app.py", "after dispatch s1")].invariants


def test_run_cell_records_the_outcome():
    """A cell's result carries its labels, order, invariants and the family's outcome."""
    workload = cruel_workload()
    cell = EFFECTS.single_faults(workload)[0]
    result = run_cell(EFFECTS, workload, EFFECTS.parse_protocol("keyed-fingerprint-reconcile"), cell)
    assert isinstance(result, GridCell)
    assert (result.labels, result.events, result.invariants, result.outcome) == (cell.labels, cell.events, [], "done")


def test_to_json_nests_labels_outermost_first():
    """to_json nests cells by their labels, the last label mapping to 'ok' or the invariants."""
    grid = Grid("toy", None, ("row", "column"), [GridCell(("a", "x"), (), [], None),
                                                 GridCell(("a", "y"), (), ["boom"], None)])
    assert grid.to_json() == {"a": {"x": "ok", "y": ["boom"]}}
    assert _grid("effects", "cruel", "keyed-fingerprint-reconcile").to_json()["publish_release"]["after_commit"][
        "duplicate"] == ["duplicate_effect"]


def test_a_family_without_cells_gives_an_empty_grid():
    """A family whose single_faults is empty gives a grid with no cell and no violation."""
    from sim.core.family import Family

    class NoGrid(type(FAMILY)):
        def single_faults(self, workload):
            return Family.single_faults(self, workload)

    grid = single_fault_grid(NoGrid(), sim.load_workload("tiny"), FAMILY.parse_protocol("none"))
    assert grid.cells == [] and grid.violations == [] and grid.to_json() == {}
