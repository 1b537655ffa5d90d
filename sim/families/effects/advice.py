"""What no protocol can fix: a counterexample at an endpoint that declares it cannot deduplicate a request.

The advisor searches knob changes.  A transition that declares ``keys = false`` (its endpoint takes every
request as new: Slack's announcement API) can still be duplicated by the network or by a request delayed
past the worker's wait, whatever the protocol; a key sent to it means nothing.  When the advisor finds no
change of knobs that removes such a counterexample, this says so plainly -- and never proposes a key.
"""

from __future__ import annotations

from typing import Any, Sequence

from sim.core.knobs import Protocol
from sim.families.effects.workflow import Transition, version_2

#: Invariants a keyless endpoint can violate however careful the protocol: an effect done twice.
DUPLICATION = frozenset({"duplicate_effect", "lost_success"})


def keyless_endpoints(scenario, names: set[str]) -> list[Transition]:
    """The transitions named (of version 1 or 2) that declare ``keys = false``."""
    workflow = scenario.workflow
    known = {t.name: t for t in workflow.transitions + version_2(workflow).transitions}
    return [known[n] for n in sorted(names) if n in known and known[n].keys is False]


def beyond_protocol(family, scenario, protocol: Protocol, invariant: str, events: Sequence[Any]) -> str | None:
    """The plain answer for a counterexample no knob removes, when it sits at a keyless endpoint."""
    if invariant not in DUPLICATION:
        return None
    replay = family.replay(scenario, protocol, events)
    report = family.check(replay.history, [invariant])
    names = {v.step for v in report.safety_violations if v.invariant == invariant and v.step}
    keyless = keyless_endpoints(scenario, names)
    if not keyless:
        return None
    steps = ", ".join(t.name for t in keyless)
    queried = [t.name for t in keyless if t.queried_by == "none"]
    unqueryable = (f"; {', '.join(queried)} cannot be queried for what it did either, so an unknown outcome "
                   "goes to a human") if queried else ""
    return (f"no protocol change removes this; the endpoint itself must become idempotent ({steps} takes every "
            f"request it receives as a new one, so a copied or late request is done twice{unqueryable})")


def endpoint_refuses(scenario, base: Protocol, candidate: Protocol) -> str | None:
    """Why no endpoint of the workflow can take the knob changes of ``candidate`` (None: some can).

    The advisor asks this of every candidate (``Family.candidate_allowed``) and proposes none refused:
    ``idempotency=key+fingerprint`` where no keyed endpoint compares fingerprints (each declares ``fingerprint
    = false``), keys where no endpoint honours one, ``ledger_dedupe=key`` without an append that takes keys,
    ``irreversible_keys=on`` where every irreversible endpoint declares its keys itself."""
    workflow = scenario.workflow
    transitions = list(workflow.transitions) + [t for t in version_2(workflow).transitions
                                                if workflow.get(t.name) is None]
    knobs = candidate.knobs
    keyed = [t for t in transitions
             if t.honours_keys(knobs.get("irreversible_keys") == "on", str(knobs.get("ledger_dedupe")))]
    changed = {name for name in knobs if knobs[name] != base.knobs.get(name)}
    if "idempotency" in changed and knobs["idempotency"] != "none" and not keyed:
        return "no endpoint of the workflow honours an idempotency key"
    if ("idempotency" in changed and knobs["idempotency"] == "key+fingerprint"
            and not any(t.compares_fingerprints for t in keyed)):
        return "no keyed endpoint of the workflow compares fingerprints (each declares fingerprint = false)"
    if "ledger_dedupe" in changed and knobs["ledger_dedupe"] == "key" and not any(
            t.effect_class == "append" and t.keys is not False for t in transitions):
        return "no append of the workflow takes a key at its ledger"
    if "irreversible_keys" in changed and knobs["irreversible_keys"] == "on" and not any(
            t.effect_class == "irreversible" and t.keys is None for t in transitions):
        return "every irreversible endpoint of the workflow declares its keys itself"
    return None
