"""Which faults of an order a workload's ``[telemetry]`` gives a rate for (docs/incidents.md).

An estimate from telemetry (:mod:`sim.search.incidents`) can only see the fault classes the telemetry rates: an
order that needs another one (``tests_fail`` without ``test_failures_per_session``) gets 0 from it, which is
silence, not a measurement.  The review's triage reads :func:`unrated_faults` to say so.
"""

from __future__ import annotations

from typing import Any, Sequence

from sim.core.family import Family
from sim.core.workload import Workload
from sim.search.incidents import WORKSPACE_RATES


def _fault_class(event: Any) -> str:
    """The fault class of one event of an order, as the telemetry names it (``replan stale``: replan_stale)."""
    fault = getattr(event, "fault", None)
    if fault is not None:
        return str(fault)
    kind = str(getattr(event, "kind", event))
    return f"{kind}_stale" if kind == "replan" and getattr(event, "point", None) == "stale" else kind


def _rated_classes(family: Family, workload: Workload) -> frozenset[str]:
    """The fault classes a workload's ``[telemetry]`` gives a rate for (a key it sets, even to 0)."""
    telemetry = workload.telemetry or {}
    if family.name == "workspace":
        return frozenset(fault for key, (fault, _) in WORKSPACE_RATES.items() if key in telemetry)
    if family.name == "effects":  # ambiguous requests (no acknowledgement: lost, late or timed out, or the
        # worker lost) are what the shares rate; reconciliation only when measured
        rated = {"terminate", "lose_request", "lose_response", "timeout", "delay_ack"}
        return frozenset(rated | {fault for fault, key in EFFECTS_KEYS.items() if key in telemetry})
    return frozenset()


#: The effects faults a ``[telemetry]`` key rates only when it is set (the others are rated by the shares).
EFFECTS_KEYS = {"unprovable": "reconciled_share"}


def unrated_faults(family: Family, workload: Workload, events: Sequence[Any]) -> list[str]:
    """The fault classes an order needs that the workload's telemetry gives no rate for, sorted: an estimate
    of how often the order happens cannot see them (its 0 would be silence, not a measurement)."""
    if not events:
        return []
    rated = _rated_classes(family, workload)
    faults = {_fault_class(event) for event in events if family.fault_count(workload, (event,))}
    return sorted(faults - rated)


def telemetry_key(family: Family, fault: str) -> str | None:
    """The ``[telemetry]`` key that would rate a fault class, or None when fencesim has none for it yet (a user
    can then not rate it: the hint must not ask them to)."""
    if family.name == "workspace":
        return next((key for key, (rated, _) in WORKSPACE_RATES.items() if rated == fault), None)
    if family.name == "effects":
        return EFFECTS_KEYS.get(fault)
    return None

