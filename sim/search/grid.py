"""The single-fault enumerator: every cell of a family's single-fault grid, checked.

A family lists its cells (:meth:`~sim.core.family.Family.single_faults`):
each one fault at one point of the fault-free run -- for the effects
family, every (transition, boundary, fault) of the seed's "deliberately
cruel" test.  Each cell runs once and is ``ok`` or the list of invariants it
violates; its order is already minimal in faults (one), so a violating
cell exports as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim.core.family import Cell, Family
from sim.core.knobs import Protocol
from sim.core.values import JsonObject
from sim.core.workload import Workload
from sim.search.oracle import evaluate


@dataclass
class GridCell:
    labels: tuple[str, ...]
    events: tuple[Any, ...]
    invariants: list[str]
    outcome: str | None

    @property
    def ok(self) -> bool:
        return not self.invariants


@dataclass
class Grid:
    family: str
    protocol: Protocol
    label_names: tuple[str, ...]
    cells: list[GridCell] = field(default_factory=list)

    @property
    def violations(self) -> list[GridCell]:
        return [c for c in self.cells if not c.ok]

    def to_json(self) -> JsonObject:
        """Nested by label: ``{transition: {boundary: {fault: "ok" | [invariant, ...]}}}``."""
        out: JsonObject = {}
        for cell in self.cells:
            node = out
            for label in cell.labels[:-1]:
                child = node.setdefault(label, {})
                assert isinstance(child, dict), f"label {label!r} is both a cell and a group of cells"
                node = child
            node[cell.labels[-1]] = "ok" if cell.ok else list(cell.invariants)
        return out


def run_cell(family: Family, workload: Workload, protocol: Protocol, cell: Cell) -> GridCell:
    evaluation = evaluate(family, workload.base, protocol, cell.events)
    return GridCell(cell.labels, cell.events, list(evaluation.violated), family.outcome(evaluation.replay))


def single_fault_grid(family: Family, workload: Workload, protocol: Protocol) -> Grid:
    """Every cell of the family's single-fault grid for the workload, in the family's order."""
    grid = Grid(family.name, protocol, family.grid_labels)
    for cell in family.single_faults(workload):
        grid.cells.append(run_cell(family, workload, protocol, cell))
    return grid
