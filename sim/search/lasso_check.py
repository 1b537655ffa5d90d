"""Replaying a lasso file (``explore --liveness --out``): does the cycle still repeat, or the run still stall?

A lasso file is a scenario of its family whose ``[lasso]`` table says which of its events are the prefix
and which one turn of the cycle (played twice), which property fails and for what item, the fairness
assumptions dropped, and the workload it was found on.  :func:`check_lasso` refuses a table that does not
fit (one line, before any run); :func:`replay_lasso` plays the events on the machine with the liveness
model's carry and says whether the lasso holds on this code:

* a cycle: both turns can happen, and the second leaves the state (and carry) as the first did, with the
  item pending all along -- it repeats forever;
* no cycle: after the events, the system's own steps that are not events of a scenario (the effects
  family's ``continue``; a human's ``answer`` unless that assumption is dropped) are taken while one is
  enabled, and then the item is pending and no fair event is left -- it stays so forever.

On code that fixed the bug the replay says the lasso is gone, and why.
"""

from __future__ import annotations

from typing import Any

from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.liveness import Eventually, LivenessModel
from sim.core.workload import Workload

#: The keys a ``[lasso]`` table may hold.
LASSO_KEYS = ("property", "item", "prefix", "cycle", "unfair", "workload")
#: System steps taken after a lasso's events before it is judged (a run's reads: far more than any has).
SYSTEM_STEPS_MAX = 100_000


def check_lasso(family: Family, scenario: Any, protocol: Protocol, workload: Workload) -> dict[str, Any]:
    """The scenario's ``[lasso]`` table, checked against its events and the family's liveness model on the
    workload it was found on."""
    where = f"{getattr(scenario, 'path', None) or scenario.name}: [lasso]"
    lasso = scenario.meta.get("lasso")
    if not isinstance(lasso, dict):
        raise InputError(f"{where} must be a table")
    unknown = sorted(set(lasso) - set(LASSO_KEYS))
    if unknown:
        raise InputError(f"{where} has unknown key(s) {', '.join(unknown)}; known: {', '.join(LASSO_KEYS)}")
    prefix, cycle = lasso.get("prefix"), lasso.get("cycle")
    if not (isinstance(prefix, int) and isinstance(cycle, int) and _count(prefix) and _count(cycle)
            and prefix + 2 * cycle == len(scenario.events)):
        raise InputError(f"{where} must give the prefix's and the cycle's event counts, prefix + 2 x cycle = the "
                         f"{len(scenario.events)} events")
    model = family.liveness(workload, protocol)
    names = [p.name for p in model.properties] if model is not None else []
    if lasso.get("property") not in names:
        raise InputError(f"{where} property {lasso.get('property')!r} is not a liveness property of the "
                         f"{family.name} family ({', '.join(names) or 'none'})")
    unfair = lasso.get("unfair", [])
    if not isinstance(unfair, list) or not set(unfair) <= set(model.assumptions if model else ()):
        raise InputError(f"{where} unfair must list fairness assumptions of the family "
                         f"({', '.join(sorted(model.assumptions)) if model else 'none'})")
    for key in ("item", "workload"):
        if key in lasso and not isinstance(lasso[key], str):
            raise InputError(f"{where} {key} must be a string")
    return lasso


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def replay_lasso(family: Family, scenario: Any, protocol: Protocol, workload: Workload) -> tuple[bool, str]:
    """(whether the lasso holds on this code, what the replay showed, in a sentence)."""
    lasso = check_lasso(family, scenario, protocol, workload)
    model = family.liveness(workload, protocol)
    machine = model.machine if model is not None and model.machine is not None else family.machine(workload.base,
                                                                                                   protocol)
    if model is None or machine is None:
        return False, "lasso: not judged (the family has no liveness model for this file)"
    prop = next(p for p in model.properties if p.name == lasso["property"])
    item, unfair = lasso.get("item"), set(lasso.get("unfair", []))
    prefix, cycle, events = lasso["prefix"], lasso["cycle"], list(scenario.events)
    label = f"lasso ({prop.name}{', ' + item + ' pending' if item else ''})"
    state, carry, marks = machine.initial(), model.start, {}
    for position, event in enumerate(events):
        if machine.why_not(state, event) is not None:
            return False, f"{label}: NOT a lasso of this code: event {position + 1} ({event}) cannot happen here"
        state, carry = model.next(machine, state, carry, event)
        if position + 1 in (prefix + cycle, prefix + 2 * cycle) and cycle:
            marks[position + 1] = (machine.key(state), carry)
        if position + 1 > prefix and not _failing(prop, state, carry, item):
            return False, f"{label}: NOT a lasso of this code: the property holds again at event {position + 1}"
    if cycle:
        if marks[prefix + cycle] != marks[prefix + 2 * cycle]:
            return False, (f"{label}: NOT a lasso of this code: the cycle of {cycle} played twice does not return "
                           "to the state it left")
        shown = ", ".join(map(str, events[prefix:prefix + cycle]))
        return True, (f"{label}: after its {prefix} event(s), the cycle of {cycle} ({shown}) played twice leaves "
                      "the state as it found it: it repeats forever")
    return _stays(family, machine, model, prop, state, carry, item, unfair, workload, label, prefix)


def _stays(family: Family, machine: Any, model: LivenessModel, prop: Any, state: Any, carry: Any, item: Any,
           unfair: set[str], workload: Workload, label: str, prefix: int) -> tuple[bool, str]:
    """No cycle: the system's own steps taken while fair, then nothing fair left and the property failing."""
    system = list(model.events)
    for _ in range(SYSTEM_STEPS_MAX):
        fair = [e for e in system if _fair(model, state, carry, e, unfair) and machine.why_not(state, e) is None]
        if not fair:
            break
        state, carry = model.next(machine, state, carry, fair[0])
    if not _failing(prop, state, carry, item):
        return False, f"{label}: NOT a lasso of this code: the system goes on and the property holds"
    for event in list(family.alphabet(workload)) + system:
        if _fair(model, state, carry, event, unfair) and machine.why_not(state, event) is None:
            after, again = model.next(machine, state, carry, event)
            if (machine.key(after), again) != (machine.key(state), carry):
                return False, f"{label}: NOT a lasso of this code: {event} can still happen (the run would go on)"
    dropped = (f" (with {', '.join(sorted(unfair))} not assumed fair; the replay above lets every actor act)"
               if unfair else "")
    return True, (f"{label}: after its {prefix} event(s){dropped} nothing the system must do is enabled: it stays "
                  "there forever")


def _fair(model: LivenessModel, state: Any, carry: Any, event: Any, unfair: set[str]) -> bool:
    return model.role(state, carry, event) == "fair" and model.assumption(event) not in unfair


def _failing(prop: Any, state: Any, carry: Any, item: Any) -> bool:
    if isinstance(prop, Eventually):
        return not prop.goal(state, carry)
    pending = prop.pending(state, carry)
    return item in pending if item is not None else bool(pending)
