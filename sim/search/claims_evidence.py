"""A claim is the verdict of all of a run's evidence, not of its sweep alone.

A family judges its seed's claims by the sweep's counts
(:meth:`~sim.core.family.Family.claims`: each claim names the protocol and
the invariants it speaks for).  A review has more evidence than that, and a
claim "holds" only if none of it shows the claim's invariants violated
under the claim's protocol:

* the sweep (violating runs);
* the verdict matrix (scripted scenarios and minimal counterexamples,
  replayed under every protocol);
* the family's own sections (``violations``: the effects family's
  per-transition single-fault grid under each reliability class);
* the design map (each protocol of its lattice explored exhaustively);
* an exhaustive search of the claim's protocol within the design's bound
  (:func:`protocol_proofs`).

What survives is worded by what backs it: "proved within N events by
exhaustive search" when the search finished, else "not found in N runs
(sampling)" with the depth the search cleared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.records import Record, json_objects, json_text, json_texts
from sim.core.values import JsonObject
from sim.core.workload import Workload
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.map_document import MapDocument

if TYPE_CHECKING:
    from sim.search.exhaustive import ExhaustiveResult


def protocol_proofs(family: Family, workload: Workload, protocols: Sequence[Protocol], max_events: int,
                    deadline: Deadline = NO_DEADLINE) -> dict[str, ExhaustiveResult]:
    """One exhaustive search per protocol within ``max_events`` events (none once ``deadline`` has passed)."""
    from sim.search.advice_proof import by_invariant, proof_states, shared_search
    from sim.search.exhaustive import ExploreOptions, explore

    out: dict[str, ExhaustiveResult] = {}
    for protocol in protocols:
        if not deadline.expired():
            states = proof_states(family, workload, protocol)
            shared = shared_search(family, workload, protocol, max_events, states, deadline)
            out[protocol.label] = by_invariant(shared) if shared is not None else explore(
                family, workload, protocol, ExploreOptions(max_events=max_events, max_states=states, deadline=deadline))
    return out


def settle(family: Family, claims: Sequence[JsonObject],
           cells: Mapping[tuple[str, str], Sequence[str]] | None = None, sections: Sequence[JsonObject] = (),
           drawn_map: MapDocument | None = None, proofs: Mapping[str, Any] | None = None) -> list[JsonObject]:
    """Each claim judged by every piece of evidence given (the module doc); new objects, the same order.
    ``cells``: the verdict matrix, ``(protocol, column)`` -> the invariants that cell violates."""
    return [_settled(family, dict(claim), cells or {}, sections, drawn_map, proofs or {}) for claim in claims]


def _settled(family: Family, claim: JsonObject, cells: Mapping[tuple[str, str], Sequence[str]],
             sections: Sequence[JsonObject], drawn_map: MapDocument | None, proofs: Mapping[str, Any]) -> JsonObject:
    label = json_text(claim.get("protocol"))
    invariants = set(json_texts(claim.get("invariants")) or family.safety_invariants)
    protocol = family.parse_protocol(label)
    against: list[str] = []
    if claim.get("violating_runs"):
        against.append(f"{claim['violating_runs']} of {claim['runs']} runs of the sweep violate it")
    hits = [f"{column} ({', '.join(hit)})" for (row, column), violated in cells.items()
            for hit in [sorted(invariants & set(violated))] if row == label and hit]
    against += _grouped("the verdict matrix", "order", hits)
    for section in sections:
        found = [f"{json_text(f.get('invariant'))} at {json_text(f.get('where'))}"
                 for f in json_objects(section.get("violations"))
                 if f.get("invariant") in invariants and _same(family, json_text(f.get("protocol")), protocol)]
        against += _grouped(json_text(section.get("title"), "a section"), "finding", found)
    for point in drawn_map.protocols if drawn_map is not None else ():
        if not _same(family, point.protocol, protocol):
            continue
        for name in sorted(invariants):
            verdict = point.invariants.get(name)
            if verdict is not None and verdict.status == "violated":
                against.append(f"the design map: {name} in {verdict.shortest_events} events")
    proof = proofs.get(label)
    if proof is not None:
        for name in sorted(invariants & set(proof.minimal_orders)):
            order = ", ".join(str(e) for e in proof.minimal_orders[name][0])
            against.append(f"exhaustive search: {name} in {proof.shortest[name]} events ({order})")
    if against:
        claim["holds"] = False
        claim["evidence"] = "DOES NOT HOLD: " + "; ".join(dict.fromkeys(against))
    elif claim["holds"]:
        claim["evidence"] = _support(claim, proof)
    claim["refuted_by"] = list(dict.fromkeys(against))
    return claim


def _grouped(source: str, noun: str, items: list[str]) -> list[str]:
    """One line for a source's evidence: its first item and how many more."""
    if not items:
        return []
    more = f" and {len(items) - 1} more {noun}(s)" if len(items) > 1 else ""
    return [f"{source}: {items[0]}{more}"]


def _support(claim: JsonObject, proof: Any) -> str:
    runs = claim.get("runs")
    sampled = json_text(claim.get("evidence")) if runs is None else f"not found in {runs} runs"
    if proof is None:
        return sampled + " (sampling, not a proof)"
    if proof.complete:
        within = "at any length (every state searched)" if proof.exhausted else f"within {proof.max_events} events"
        return f"proved {within} by exhaustive search; {sampled}"
    cleared = max(0, len(proof.states_per_depth) - 2)
    return (f"{sampled} (sampling, not a proof: exhaustive search cleared orders of up to {cleared} "
            f"event{'' if cleared == 1 else 's'})")


def _same(family: Family, label: str, protocol: Protocol) -> bool:
    try:
        return family.parse_protocol(label) == protocol
    except InputError:  # a label this family's table does not read (never equal)
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class ShortestOrder(Record):
    """An invariant an exhaustive search found violated: the length of its shortest order, and the order."""

    shortest_events: int
    order: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ExhaustiveRow(Record):
    """A protocol's exhaustive search as its review row shows it: the bound, whether it finished (and what
    ended it), the depth it cleared, what it proved absent and each invariant it found violated."""

    max_events: int = 0
    complete: bool = False
    end: str = ""
    distinct_states: int = 0
    within_events: int = 0
    proved_absent: tuple[str, ...] = ()
    violated: dict[str, ShortestOrder] = field(default_factory=dict)


def proof_row(result: Any) -> ExhaustiveRow:
    """A protocol's exhaustive search (:class:`~sim.search.exhaustive.ExhaustiveResult`) as its review row
    shows it."""
    return ExhaustiveRow(
        max_events=result.max_events, complete=result.complete, end=result.reason,
        distinct_states=result.distinct_states,
        within_events=result.max_events if result.complete else max(0, len(result.states_per_depth) - 2),
        proved_absent=tuple(result.proved_absent),
        violated={name: ShortestOrder(shortest_events=result.shortest[name],
                                      order=tuple(str(e) for e in result.minimal_orders[name][0]))
                  for name in sorted(result.minimal_orders)})
