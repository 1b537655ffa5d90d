"""Does any statement of a review contradict another part of the same review?

A review says many things about one design: per protocol a verdict and
counts, the seed's claims, minimal counterexamples with the advisor's fix,
the verdict matrix, family sections (the effects family's per-transition
single-fault grid) and a design map with its certificates.  Each is computed
by a different part of the tool; this module reads them all back from a
design's ``results.json`` entry (JSON values only, nothing is run) and lists
every pair that cannot both be true:

* a claim that holds while a counterexample, a matrix cell, a section, a map
  point or an exhaustive search shows its invariant violated under its
  protocol;
* a fix that is not proved, or that the map or the matrix shows violating
  the invariant it fixes (at any where: a fix of one finding that leaves
  another of its invariant is no fix);
* a proof that an invariant is absent within N events under a protocol,
  beside any exhaustive search of the same review (each protocol's, the
  map's, another of the advisor's) violating it there in N events or fewer;
* an "exactly once within N events" of the Engine table (certify) or the
  reliability-class table beside another part of the review repeating or
  losing that transition under the same protocol in N events or fewer;
* a protocol verdict of "no safety violation found" beside a counterexample
  of that protocol, or a sweep count of 0 beside a counterexample of the
  sweep;
* a certificate whose condition admits a protocol the map shows violating,
  a minimal safe design or a Pareto point drawn among safe designs that is
  not safe; a sentence of the map that its table contradicts, or a row of
  the table whose designs do not share its verdict
  (:mod:`sim.report.map_check`);
* a triage (``sim.report.triage``) that does not rank exactly the review's
  counterexamples, in the order they are shown, by ``rate x blast`` from
  their ledgers.

The review runs it on every design and reports what it finds; the test suite
asserts it finds nothing on every shipped design, and that it finds a
planted contradiction.
"""

from __future__ import annotations

import functools

from sim.core.records import json_int, json_object, json_objects, json_text, json_texts
from sim.core.values import JsonObject
from sim.report.advice import AdviceProof
from sim.report.map_check import map_contradictions
from sim.report.results import CounterexampleRow, DesignRow
from sim.search.map_document import MapDocument

#: Below this share of work done a design "applies nothing" (as the sweep's tally says it).
APPLIES_NOTHING_BELOW = 0.01


def contradictions(design: DesignRow) -> list[str]:
    """Every contradiction between the statements of one design's review (empty: none)."""
    out: list[str] = []
    out += _claims(design)
    out += _fixes(design)
    out += _proofs(design)
    out += _exactly_once(design)
    out += _verdicts(design)
    out += _map(design.map)
    out += map_contradictions(design.map)
    out += _triage(design)
    return list(dict.fromkeys(out))


def _triage(design: DesignRow) -> list[str]:
    """The triage ranks each counterexample once, highest score first, in the order the counterexamples are
    shown, its blast radius read from the counterexample's ledger and its score = rate x blast (each number as
    ``results.json`` gives it)."""
    if design.triage is None:
        return []
    out: list[str] = []
    ranked = [row.as_written() for row in design.triage]
    examples = {e.name: e for e in design.counterexamples}
    names = [row.counterexample for row in ranked]
    for name in names:
        if name not in examples:
            out.append(f"the triage ranks {name}, which is not a counterexample of this review")
    for name in examples:
        if names.count(name) != 1:
            out.append(f"counterexample {name} is ranked {names.count(name)} times by the triage, not once")
    if [n for n in examples if n in names] != [n for n in names if n in examples]:
        out.append("the counterexamples are not shown in the triage's order")
    for before, after in zip(ranked, ranked[1:]):
        if after.score > before.score:
            out.append(f"the triage ranks {after.finding} under {after.protocol} (score {after.score}) "
                       f"below {before.finding} under {before.protocol} (score {before.score})")
    for row in ranked:
        example = examples.get(row.counterexample)
        if example is not None and row.blast != max(1, len(example.ledger)):
            out.append(f"the triage gives {row.counterexample} a blast radius of {row.blast}, but its ledger "
                       f"has {len(example.ledger)} entries (1 at least)")
        if abs(row.score - row.rate * row.blast) > 1e-5 * max(1.0, abs(row.score)):
            out.append(f"the triage's score of {row.counterexample} ({row.score}) is not its rate x blast "
                       f"({row.rate} x {row.blast})")
    return out


def _violations(design: DesignRow) -> dict[tuple[str, str], str]:
    """(protocol label, invariant) -> where the review shows it violated, from every part but the claims."""
    shown: dict[tuple[str, str], str] = {}
    for example in design.counterexamples:
        shown.setdefault((example.protocol, example.invariant), f"counterexample {example.name}")
    for (row, column), cell in design.matrix.cells.items():
        for name in cell.violated:
            shown.setdefault((row, name), f"verdict matrix cell {column}")
    for section in design.sections:
        for found in json_objects(section.get("violations")):
            shown.setdefault((json_text(found.get("protocol")), json_text(found.get("invariant"))),
                             f"section {json_text(section.get('title'))!r} ({json_text(found.get('where'))})")
    for point in design.map.protocols if design.map is not None else ():
        for name, verdict in point.invariants.items():
            if verdict.status == "violated":
                shown.setdefault((point.protocol, name), "the design map")
    for protocol in design.protocols:
        for name, counts in protocol.by_invariant.items():
            if counts.violating_runs:
                shown.setdefault((protocol.protocol, name), f"{counts.violating_runs} runs of the sweep")
        for name, hit in (protocol.exhaustive.violated if protocol.exhaustive is not None else {}).items():
            shown.setdefault((protocol.protocol, name), f"exhaustive search ({hit.shortest_events} events)")
    return shown


def _claims(design: DesignRow) -> list[str]:
    shown = _violations(design)
    out = []
    for claim in design.claims:
        if not claim.get("holds"):
            continue
        label = json_text(claim.get("protocol"))
        for name in json_texts(claim.get("invariants")):
            where = shown.get((label, name))
            if where is not None:
                out.append(f"the claim {json_text(claim.get('claim'))!r} holds under {label}, but {where} shows "
                           f"{name} violated under it")
    return out


def _fixes(design: DesignRow) -> list[str]:
    shown = _violations(design)
    out = []
    for example in design.counterexamples:
        advice = example.advice
        if advice is None or advice.fixes is not True:
            continue
        label, name = advice.recommended, example.invariant
        if advice.proof is None or advice.proof.status != "proved":
            out.append(f"{label} is called a fix of {example.name} without an exhaustive proof")
        work = advice.safe_progress_share if advice.safe_progress_share is not None else advice.progress_share
        if work is not None and work < APPLIES_NOTHING_BELOW:
            out.append(f"{label} is called a fix of {example.name}, but it applies nothing (work done "
                       f"{work:.0%})")
        if advice.runs_violating_invariant:
            out.append(f"{label} is called a fix of {example.name}, but {advice.runs_violating_invariant} of "
                       f"its verified runs violate {name} elsewhere")
        where = shown.get((label or "", name))  # a fix is of the invariant, at every where: any violation refutes it
        if where is not None:
            out.append(f"{label} is called a fix of {name} ({example.name}), but {where} shows {name} "
                       "violated under it")
    return out


def _least(found: dict[tuple[str, str], tuple[int, str]], label: str, name: str, events: int | None,
           source: str) -> None:
    """Keep, per (protocol, name), the fewest events any part of the review shows it in, and which part."""
    if isinstance(events, int) and ((label, name) not in found or events < found[label, name][0]):
        found[label, name] = (events, source)


def _searched(design: DesignRow) -> dict[tuple[str, str], tuple[int, str]]:
    """(protocol label, invariant) -> the fewest events any exhaustive search of the review violated it in, and
    which search: each protocol's, the map's, the advisor's disproofs and what its proofs found remaining."""
    found: dict[tuple[str, str], tuple[int, str]] = {}
    note = functools.partial(_least, found)
    for row in design.protocols:
        for name, hit in (row.exhaustive.violated if row.exhaustive is not None else {}).items():
            note(row.protocol, name, hit.shortest_events, "the protocol's exhaustive search")
    for point in design.map.protocols if design.map is not None else ():
        for name, verdict in point.invariants.items():
            if verdict.status == "violated":
                note(point.protocol, name, verdict.shortest_events, "the design map")
    for example, label, proof in _advice_proofs(design):
        name = example.invariant
        if proof.status == "disproved":
            note(label, name, proof.shortest_events, f"the advisor's search ({example.name})")
        if proof.status == "elsewhere" and proof.remains is not None:
            note(label, name, proof.remains.shortest_events,
                 f"the advisor's search ({example.name}: {proof.remains.finding})")
    return found


def _advice_proofs(design: DesignRow) -> list[tuple[CounterexampleRow, str, AdviceProof]]:
    """Every (counterexample, the change searched, its proof) of the advisor, its runner-up's too."""
    out = []
    for example in design.counterexamples:
        advice = example.advice
        if advice is None:
            continue
        if advice.recommended and advice.proof is not None:
            out.append((example, advice.recommended, advice.proof))
        runner = advice.runner_up
        if runner is not None and runner.protocol and runner.proof is not None:
            out.append((example, runner.protocol, runner.proof))
    return out


def _proofs(design: DesignRow) -> list[str]:
    """A proof that an invariant is absent within N events under a protocol, beside any exhaustive search of the
    same run violating it under that protocol in N events or fewer: a proof covers the invariant at every
    where."""
    found = _searched(design)
    out = []
    for example, label, proof in _advice_proofs(design):
        if proof.status != "proved":
            continue
        name = example.invariant
        hit = found.get((label, name))
        bound = proof.within_events if proof.within_events is not None else proof.max_events
        if hit is not None and (proof.exhausted or bound is None or hit[0] <= bound):
            out.append(f"{label} is proved free of {name} within {bound} events ({example.name}'s advice), but "
                       f"{hit[1]} shows {name} in {hit[0]} events under it")
    return out


#: Certify's verdict of a transition that neither repeats nor is lost within its bound.
EXACTLY_ONCE = "exactly once"


def _once_statements(design: DesignRow) -> list[tuple[str, str, int, str]]:
    """Every "exactly once within N events" of the review: (protocol, transition, N, who says it) -- the
    Engine table (certify) and the reliability-class table (a transition's smallest clean class)."""
    out = []
    certified = design.certify
    for answer in certified.transitions if certified is not None else ():
        if answer.verdict == EXACTLY_ONCE and isinstance(answer.within_events, int):
            out.append((_engine(design), answer.transition, answer.within_events, "the Engine table"))
    for finding in _class_findings(design):
        smallest, within = json_text(finding.get("smallest_class")), json_int(finding.get("within_events"))
        if smallest and within is not None:
            out.append((smallest, json_text(finding.get("transition")), within, "the reliability-class table"))
    return out


def _engine(design: DesignRow) -> str:
    """The protocol of the design's Engine table ("" without one)."""
    return design.certify.protocol if design.certify is not None else ""


def _class_findings(design: DesignRow) -> list[JsonObject]:
    return [f for section in design.sections for f in json_objects(section.get("findings")) if "smallest_class" in f]


def _repeated_or_lost(design: DesignRow) -> dict[tuple[str, str], tuple[int, str]]:
    """(protocol, transition) -> the fewest events any part of the review repeats or loses it in, and which."""
    found: dict[tuple[str, str], tuple[int, str]] = {}
    note = functools.partial(_least, found)
    certified = design.certify
    for answer in certified.transitions if certified is not None else ():
        orders = [order for order in (answer.repeats, answer.lost) if order is not None]
        if answer.verdict not in (EXACTLY_ONCE, "not proved") and orders:
            note(_engine(design), answer.transition, min(len(o) for o in orders), "the Engine table")
    for finding in _class_findings(design):
        shortest = json_object(finding.get("example"))
        for label, verdict in json_object(finding.get("verdict")).items():
            order = json_text(shortest.get(label))
            events = 0 if order in ("", "with no fault") else len(order.split("; "))
            note(label, json_text(finding.get("transition")), events, f"the reliability-class table ({verdict})")
    for example in design.counterexamples:
        if example.invariant in ("duplicate_effect", "lost_success") and example.where:
            name = example.where.split(" (")[0]
            note(example.protocol, name, len(example.events), f"counterexample {example.name}")
    return found


def _exactly_once(design: DesignRow) -> list[str]:
    """An "exactly once within N events" beside any part of the review repeating or losing the transition under
    the same protocol in N events or fewer."""
    found = _repeated_or_lost(design)
    out = []
    for label, name, within, who in _once_statements(design):
        hit = found.get((label, name))
        if hit is not None and hit[0] <= within:
            out.append(f"{who} says {name} happens exactly once under {label} within {within} events, but {hit[1]} "
                       f"repeats or loses it in {hit[0]} events")
    return out


def _verdicts(design: DesignRow) -> list[str]:
    out = []
    rows = {row.protocol: row for row in design.protocols}
    for example in design.counterexamples:
        row = rows.get(example.protocol)
        if row is None:
            continue
        if not row.verdict.startswith("violates safety"):
            out.append(f"{example.protocol}'s verdict is {row.verdict!r}, but counterexample "
                       f"{example.name} violates {example.invariant} under it")
        counts = row.by_invariant.get(example.invariant)
        if counts is None or not counts.violating_runs:
            out.append(f"the sweep counts no run of {example.protocol} violating {example.invariant}, but "
                       f"its counterexample {example.name} came from the sweep")
    return out


def _map(drawn: MapDocument | None) -> list[str]:
    if not drawn:
        return []
    out = []
    points = {p.protocol: p for p in drawn.protocols}
    for label in drawn.minimal_safe:
        if points[label].status != "safe":
            out.append(f"the map lists {label} as a minimal safe design, but its status is {points[label].status}")
    for label in [*drawn.pareto_front, *drawn.minimal_safe]:
        if points[label].applies_nothing:
            out.append(f"the map offers {label} as a safe design to choose, but it applies nothing")
    for label in drawn.pareto_front:
        if points[label].status != "safe":
            out.append(f"the map draws {label} on the Pareto front of safe designs, but its status is "
                       f"{points[label].status}")
    for certificate in drawn.certificates:
        name = certificate.invariant
        for point in points.values():
            found = point.invariants.get(name)
            if found is None or found.status != "violated":
                continue
            for clause in certificate.clauses:
                if all(str(point.knobs.get(k)) in [str(v) for v in values] for k, values in clause.knobs.items()):
                    out.append(f"the certificate {certificate.words!r} admits {point.protocol}, which the "
                               f"map shows violating {name}")
    return out
