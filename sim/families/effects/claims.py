"""The durable-effects seed's claims about its mechanisms, judged by what a sweep found.

Hypotheses, not requirements: where a claim does not survive the search, this
says so plainly, citing the counts.
"""

from __future__ import annotations

from typing import Sequence

from sim.core.knobs import Protocol
from sim.families.effects.knobs import EffectsKnobs


def judge(by_protocol: dict[str, dict], protocols: Sequence[Protocol]) -> list[dict]:
    """Claims that apply to the protocols swept, each with ``holds`` and the evidence."""
    out = []
    for protocol in protocols:
        tally = by_protocol[protocol.label]
        knobs = EffectsKnobs.of(protocol)
        found, runs = tally["violating_runs_by_invariant"], tally["runs"]
        if knobs.idempotency != "none":
            out.append(_claim(protocol.label, "stable keys make a retried effect singular (duplicate_effect)",
                              found["duplicate_effect"], runs, ("duplicate_effect",)))
        if knobs.on_timeout == "unknown":
            out.append(_claim(protocol.label, "a timeout recorded as unknown is never taken for a failure "
                                              "(unknown_as_failed)", found["unknown_as_failed"], runs,
                              ("unknown_as_failed",)))
        if knobs.reconcile == "on":
            out.append(_claim(protocol.label, "reconciling before any retry never loses or repeats a committed "
                                              "effect (lost_success)", found["lost_success"], runs, ("lost_success",)))
        if knobs.idempotency == "key+fingerprint" and knobs.reconcile == "on":
            out.append(_claim(protocol.label, "keys, fingerprints and reconciliation give one authoritative "
                                              "outcome per task (every safety invariant)",
                              tally["violating_runs"], runs, tuple(sorted(found))))
    return out


def _claim(protocol: str, claim: str, violating_runs: int, runs: int, invariants: tuple[str, ...]) -> dict:
    """A claim as the sweep judged it; the review settles it against the rest of its evidence
    (:func:`sim.search.claims_evidence.settle`)."""
    return {
        "protocol": protocol, "claim": claim, "invariants": list(invariants), "holds": violating_runs == 0,
        "violating_runs": violating_runs, "runs": runs,
        "evidence": (f"not found in {runs} runs (sampling, not a proof)" if violating_runs == 0
                     else f"DOES NOT HOLD: {violating_runs} of {runs} runs violate it; see the minimal order below"),
    }
