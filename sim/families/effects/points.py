"""Where a fault strikes a transition, and one strike as the driver's schedule holds it.

Points are the boundaries between a transition's four moments (``before_intent``, ``after_intent``,
``after_dispatch``, ``after_commit``, ``after_receipt``) and two recovery moments (``reconcile``,
``compensate``).  This module depends on nothing, so the fault classes (:mod:`sim.families.effects.faults`)
and their injectors (:mod:`sim.families.effects.injectors`) can both name a strike without importing each
other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The boundaries between a transition's moments, in order (the cruel grid's columns).
BOUNDARIES = ("before_intent", "after_intent", "after_dispatch", "after_commit", "after_receipt")
#: Recovery moments where a fault can strike a transition.
RECOVERY_POINTS = ("reconcile", "compensate")
POINTS = BOUNDARIES + RECOVERY_POINTS


@dataclass(frozen=True)
class FaultEntry:
    """A fault for one task; ``token`` identifies it when it fires (its position in the order)."""

    task: str
    transition: str  # the logical transition (stable across workflow versions)
    point: str
    fault: str
    token: Any = None
