"""The seed's "deliberately cruel" test, as a grid.

For every transition of the saga, every boundary between its moments
(``before_intent`` ... ``after_receipt``) and every fault (terminate the
worker, duplicate the last message, delay the acknowledgement, change the
lease owner), run one task with exactly that fault, let the system resume
from durable history, and run every check.  A cell is ``"ok"`` or the list
of violated invariants.  Each violating cell exports as a scripted runtime
scenario (the run's own trace) that ``fencesim run`` replays to the same
history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import tomli_w

from sim.checks.base import run_checks
from sim.checks.runtime import RUNTIME_CHECKS
from sim.protocol import Protocol
from sim.runtime.faults import BOUNDARIES, CRUEL_FAULTS, FaultEntry, FaultSchedule
from sim.runtime.runner import run_autonomous
from sim.runtime.workflow import Workflow, saga

CRUEL_TASK = "task_42"


@dataclass
class CruelCell:
    transition: str
    boundary: str
    fault: str
    invariants: list[str]
    trace: list[str]
    last_verdict: str | None

    @property
    def ok(self) -> bool:
        return not self.invariants


@dataclass
class CruelGrid:
    protocol: Protocol
    workflow: Workflow
    cells: list[CruelCell] = field(default_factory=list)

    @property
    def violations(self) -> list[CruelCell]:
        return [c for c in self.cells if not c.ok]

    def to_json(self) -> dict[str, Any]:
        """``{transition: {boundary: {fault: "ok" | [invariant, ...]}}}``."""
        out: dict[str, Any] = {}
        for cell in self.cells:
            out.setdefault(cell.transition, {}).setdefault(cell.boundary, {})[cell.fault] = (
                "ok" if cell.ok else list(cell.invariants))
        return out


def run_cell(protocol: Protocol, workflow: Workflow, transition: str, boundary: str, fault: str) -> CruelCell:
    """One cell: a single fault at one boundary of one transition."""
    schedule = FaultSchedule([FaultEntry(CRUEL_TASK, transition, boundary, fault)])
    rt, _ = run_autonomous(protocol, workflow, [CRUEL_TASK], schedule)
    report = run_checks(RUNTIME_CHECKS, rt.history)
    invariants = sorted({v.invariant for v in report.safety_violations},
                        key=[s.name for s in RUNTIME_CHECKS].index)
    last = rt.verdicts[-1]["verdict"] if rt.verdicts else None
    return CruelCell(transition, boundary, fault, invariants, list(rt.trace or []), last)


def cruel_grid(protocol: Protocol, workflow: Workflow | None = None) -> CruelGrid:
    """Every (transition, boundary, fault) cell for one protocol, in table order.

    >>> from sim.runtime import parse_runtime_protocol
    >>> grid = cruel_grid(parse_runtime_protocol("keyed-fingerprint-reconcile"))
    >>> len(grid.cells), len(grid.violations)
    (80, 0)
    """
    workflow = workflow or saga()
    grid = CruelGrid(protocol, workflow)
    for transition in workflow.names():
        for boundary in BOUNDARIES:
            for fault in CRUEL_FAULTS:
                grid.cells.append(run_cell(protocol, workflow, transition, boundary, fault))
    return grid


def counterexample_name(protocol: Protocol, cell: CruelCell) -> str:
    slug = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in protocol.label)
    return f"{slug}__{cell.transition}__{cell.boundary}__{cell.fault}.toml"


def counterexample_toml(protocol: Protocol, workflow: Workflow, cell: CruelCell, commit: str | None = None) -> str:
    """The cell's run as a scripted runtime scenario (format 1) that replays with no seed."""
    data: dict[str, Any] = {
        "format": 1,
        "family": "runtime",
        "name": f"cruel {cell.transition} {cell.boundary} {cell.fault}",
        "description": (f"fencesim cruel: {cell.fault} at {cell.boundary} of {cell.transition} under "
                        f"{protocol.label} violates {', '.join(cell.invariants)}"),
        "protocol": protocol.label,
        "invariant": cell.invariants[0],
        "seed": 0,
        "cell": f"{cell.transition}/{cell.boundary}/{cell.fault}",
        "task": CRUEL_TASK,
        "workflow": workflow.names(),
        "events": list(cell.trace),
    }
    if commit:
        data["commit"] = commit
    if cell.last_verdict is not None:
        data["expect"] = {protocol.label: cell.last_verdict}
    return "# cruel cells use no random numbers: seed 0 is a placeholder\n" + tomli_w.dumps(data, multiline_strings=False)
