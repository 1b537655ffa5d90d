"""The seed's "deliberately cruel" test, as the cells of a single-fault grid.

For every transition of the saga, every boundary between its moments
(``before_intent`` ... ``after_receipt``) and every fault (terminate the
worker, duplicate the last message, delay the acknowledgement, change the
lease owner), run one task with exactly that fault, let the system resume
from durable history, and run every check.  The search's single-fault
enumerator (:mod:`sim.search.grid`) runs the cells; a violating cell exports
as a fault list that ``fencesim run`` replays with no seed.
"""

from __future__ import annotations

from sim.core.family import Cell
from sim.core.workload import Workload
from sim.families.effects.faults import BOUNDARIES, CRUEL_FAULTS, FAULT_POINTS, FaultEvent, applies
from sim.families.effects.knobs import FAMILY_NAME
from sim.families.effects.scenario import RuntimeScenario
from sim.families.effects.workflow import saga

CRUEL_TASK = "task_42"


def cruel_workload() -> Workload:
    """The saga of one task with the four cruel faults."""
    base = RuntimeScenario(name="cruel", protocol=None, expect={}, path=None, task=CRUEL_TASK, workflow=saga(),
                           faults=[], description="The seed's cruel test: one task of the four-step saga.")
    return Workload(name="cruel", family=FAMILY_NAME, base=base, classes=CRUEL_FAULTS,
                    rates={c: 1.0 for c in CRUEL_FAULTS}, per_run_max=1, max_events=1,
                    description=base.description)


def cells(workload: Workload) -> list[Cell]:
    """(transition, boundary, fault) for every transition, boundary and fault class of the workload."""
    out = []
    for transition in workload.base.workflow.transitions:
        for boundary in BOUNDARIES:
            for fault in workload.classes:
                if boundary in FAULT_POINTS[fault] and applies(fault, transition):
                    out.append(Cell((transition.name, boundary, fault),
                                    (FaultEvent(fault, transition.name, boundary),)))
    return out
