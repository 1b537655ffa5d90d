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
from typing import Any

from sim.report.map_check import map_contradictions
from sim.search.map_document import MapDocument, MapPoint

#: Below this share of work done a design "applies nothing" (as the sweep's tally says it).
APPLIES_NOTHING_BELOW = 0.01


def contradictions(design: dict[str, Any]) -> list[str]:
    """Every contradiction between the statements of one design's review (empty: none)."""
    out: list[str] = []
    out += _claims(design)
    out += _fixes(design)
    out += _proofs(design)
    out += _exactly_once(design)
    out += _verdicts(design)
    out += _map(_drawn(design))
    out += map_contradictions(_drawn(design))
    out += _triage(design)
    return list(dict.fromkeys(out))


def _triage(design: dict[str, Any]) -> list[str]:
    """The triage ranks each counterexample once, highest score first, in the order the counterexamples are
    shown, its blast radius read from the counterexample's ledger and its score = rate x blast."""
    if "triage" not in design:
        return []
    out: list[str] = []
    ranked = design["triage"] or []
    examples = {e["name"]: e for e in design.get("counterexamples") or ()}
    names = [row["counterexample"] for row in ranked]
    for name in names:
        if name not in examples:
            out.append(f"the triage ranks {name}, which is not a counterexample of this review")
    for name in examples:
        if names.count(name) != 1:
            out.append(f"counterexample {name} is ranked {names.count(name)} times by the triage, not once")
    if [n for n in examples if n in names] != [n for n in names if n in examples]:
        out.append("the counterexamples are not shown in the triage's order")
    for before, after in zip(ranked, ranked[1:]):
        if after["score"] > before["score"]:
            out.append(f"the triage ranks {after['finding']} under {after['protocol']} (score {after['score']}) "
                       f"below {before['finding']} under {before['protocol']} (score {before['score']})")
    for row in ranked:
        example = examples.get(row["counterexample"])
        if example is not None and row["blast"] != max(1, len(example.get("ledger") or ())):
            out.append(f"the triage gives {row['counterexample']} a blast radius of {row['blast']}, but its ledger "
                       f"has {len(example.get('ledger') or ())} entries (1 at least)")
        if abs(row["score"] - row["rate"] * row["blast"]) > 1e-5 * max(1.0, abs(row["score"])):
            out.append(f"the triage's score of {row['counterexample']} ({row['score']}) is not its rate x blast "
                       f"({row['rate']} x {row['blast']})")
    return out


def _violations(design: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(protocol label, invariant) -> where the review shows it violated, from every part but the claims."""
    shown: dict[tuple[str, str], str] = {}
    for example in design.get("counterexamples") or ():
        shown.setdefault((example["protocol"], example["invariant"]), f"counterexample {example['name']}")
    for key, cell in ((design.get("matrix") or {}).get("cells") or {}).items():
        row, column = key.split("\t", 1)
        for name in cell.get("violated") or ():
            shown.setdefault((row, name), f"verdict matrix cell {column}")
    for section in design.get("sections") or ():
        for found in section.get("violations") or ():
            shown.setdefault((found["protocol"], found["invariant"]),
                             f"section {section.get('title', '')!r} ({found['where']})")
    for point in _points(design):
        for name, verdict in point.invariants.items():
            if verdict.status == "violated":
                shown.setdefault((point.protocol, name), "the design map")
    for row in design.get("protocols") or ():
        for name, counts in (row.get("by_invariant") or {}).items():
            if counts["violating_runs"]:
                shown.setdefault((row["protocol"], name), f"{counts['violating_runs']} runs of the sweep")
        for name, found in ((row.get("exhaustive") or {}).get("violated") or {}).items():
            shown.setdefault((row["protocol"], name), f"exhaustive search ({found['shortest_events']} events)")
    return shown


def _claims(design: dict[str, Any]) -> list[str]:
    shown = _violations(design)
    out = []
    for claim in design.get("claims") or ():
        if not claim["holds"]:
            continue
        for name in claim.get("invariants") or ():
            where = shown.get((claim["protocol"], name))
            if where is not None:
                out.append(f"the claim {claim['claim']!r} holds under {claim['protocol']}, but {where} shows "
                           f"{name} violated under it")
    return out


def _fixes(design: dict[str, Any]) -> list[str]:
    shown = _violations(design)
    out = []
    for example in design.get("counterexamples") or ():
        advice = example.get("advice") or {}
        if advice.get("fixes") is not True:
            continue
        label, name = advice["recommended"], example["invariant"]
        if (advice.get("proof") or {}).get("status") != "proved":
            out.append(f"{label} is called a fix of {example['name']} without an exhaustive proof")
        work = advice.get("safe_progress_share", advice.get("progress_share"))
        if work is not None and work < APPLIES_NOTHING_BELOW:
            out.append(f"{label} is called a fix of {example['name']}, but it applies nothing (work done "
                       f"{work:.0%})")
        if advice.get("runs_violating_invariant"):
            out.append(f"{label} is called a fix of {example['name']}, but {advice['runs_violating_invariant']} of "
                       f"its verified runs violate {name} elsewhere")
        where = shown.get((label, name))  # a fix is of the invariant, at every where: any violation refutes it
        if where is not None:
            out.append(f"{label} is called a fix of {name} ({example['name']}), but {where} shows {name} "
                       "violated under it")
    return out


def _least(found: dict[tuple[str, str], tuple[int, str]], label: str, name: str, events: Any, source: str) -> None:
    """Keep, per (protocol, name), the fewest events any part of the review shows it in, and which part."""
    if isinstance(events, int) and ((label, name) not in found or events < found[label, name][0]):
        found[label, name] = (events, source)


def _searched(design: dict[str, Any]) -> dict[tuple[str, str], tuple[int, str]]:
    """(protocol label, invariant) -> the fewest events any exhaustive search of the review violated it in, and
    which search: each protocol's, the map's, the advisor's disproofs and what its proofs found remaining."""
    found: dict[tuple[str, str], tuple[int, str]] = {}
    note = functools.partial(_least, found)
    for row in design.get("protocols") or ():
        for name, hit in ((row.get("exhaustive") or {}).get("violated") or {}).items():
            note(row["protocol"], name, hit.get("shortest_events"), "the protocol's exhaustive search")
    for point in _points(design):
        for name, verdict in point.invariants.items():
            if verdict.status == "violated":
                note(point.protocol, name, verdict.shortest_events, "the design map")
    for example, advice, proof in _advice_proofs(design):
        name = example["invariant"]
        if proof.get("status") == "disproved":
            note(advice["recommended"], name, proof.get("shortest_events"), f"the advisor's search ({example['name']})")
        if proof.get("status") == "elsewhere":
            note(advice["recommended"], name, proof["remains"].get("shortest_events"),
                 f"the advisor's search ({example['name']}: {proof['remains'].get('finding')})")
    return found


def _advice_proofs(design: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """Every (counterexample, advice, proof) of the advisor, its runner-up's too."""
    out = []
    for example in design.get("counterexamples") or ():
        advice = example.get("advice") or {}
        for given in (advice, advice.get("runner_up") or {}):
            label = given.get("recommended") or given.get("protocol")
            if label and given.get("proof"):
                out.append((example, {**given, "recommended": label}, given["proof"]))
    return out


def _proofs(design: dict[str, Any]) -> list[str]:
    """A proof that an invariant is absent within N events under a protocol, beside any exhaustive search of the
    same run violating it under that protocol in N events or fewer: a proof covers the invariant at every
    where."""
    found = _searched(design)
    out = []
    for example, advice, proof in _advice_proofs(design):
        if proof.get("status") != "proved":
            continue
        label, name = advice["recommended"], example["invariant"]
        hit = found.get((label, name))
        bound = proof.get("within_events", proof.get("max_events"))
        if hit is not None and (proof.get("exhausted") or not isinstance(bound, int) or hit[0] <= bound):
            out.append(f"{label} is proved free of {name} within {bound} events ({example['name']}'s advice), but "
                       f"{hit[1]} shows {name} in {hit[0]} events under it")
    return out


#: Certify's verdict of a transition that neither repeats nor is lost within its bound.
EXACTLY_ONCE = "exactly once"


def _once_statements(design: dict[str, Any]) -> list[tuple[str, str, int, str]]:
    """Every "exactly once within N events" of the review: (protocol, transition, N, who says it) -- the
    Engine table (certify) and the reliability-class table (a transition's smallest clean class)."""
    out = []
    certified = design.get("certify") or {}
    for answer in certified.get("transitions") or ():
        if answer.get("verdict") == EXACTLY_ONCE and isinstance(answer.get("within_events"), int):
            out.append((certified["protocol"], answer["transition"], answer["within_events"], "the Engine table"))
    for finding in _class_findings(design):
        if finding.get("smallest_class"):
            out.append((finding["smallest_class"], finding["transition"], finding["within_events"],
                        "the reliability-class table"))
    return out


def _class_findings(design: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for section in design.get("sections") or () for f in section.get("findings") or ()
            if "smallest_class" in f]


def _repeated_or_lost(design: dict[str, Any]) -> dict[tuple[str, str], tuple[int, str]]:
    """(protocol, transition) -> the fewest events any part of the review repeats or loses it in, and which."""
    found: dict[tuple[str, str], tuple[int, str]] = {}
    note = functools.partial(_least, found)
    certified = design.get("certify") or {}
    for answer in certified.get("transitions") or ():
        orders = [answer[k] for k in ("repeats", "lost") if answer.get(k) is not None]
        if answer.get("verdict") not in (EXACTLY_ONCE, "not proved") and orders:
            note(certified["protocol"], answer["transition"], min(len(o) for o in orders), "the Engine table")
    for finding in _class_findings(design):
        for label, verdict in (finding.get("verdict") or {}).items():
            example = (finding.get("example") or {}).get(label, "")
            events = 0 if example in ("", "with no fault") else len(example.split("; "))
            note(label, finding["transition"], events, f"the reliability-class table ({verdict})")
    for example in design.get("counterexamples") or ():
        if example["invariant"] in ("duplicate_effect", "lost_success") and example.get("where"):
            name = example["where"].split(" (")[0]
            note(example["protocol"], name, len(example.get("events") or ()), f"counterexample {example['name']}")
    return found


def _exactly_once(design: dict[str, Any]) -> list[str]:
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


def _verdicts(design: dict[str, Any]) -> list[str]:
    out = []
    rows = {row["protocol"]: row for row in design.get("protocols") or ()}
    for example in design.get("counterexamples") or ():
        row = rows.get(example["protocol"])
        if row is None:
            continue
        if not row["verdict"].startswith("violates safety"):
            out.append(f"{example['protocol']}'s verdict is {row['verdict']!r}, but counterexample "
                       f"{example['name']} violates {example['invariant']} under it")
        if not row["by_invariant"].get(example["invariant"], {}).get("violating_runs"):
            out.append(f"the sweep counts no run of {example['protocol']} violating {example['invariant']}, but "
                       f"its counterexample {example['name']} came from the sweep")
    return out


def _drawn(design: dict[str, Any]) -> MapDocument | None:
    return MapDocument.from_json(design["map"]) if design.get("map") else None


def _points(design: dict[str, Any]) -> tuple[MapPoint, ...]:
    drawn = _drawn(design)
    return drawn.protocols if drawn is not None else ()


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
                if all(_shown(point.knobs.get(k)) in [_shown(v) for v in values] for k, values in clause.knobs.items()):
                    out.append(f"the certificate {certificate.words!r} admits {point.protocol}, which the "
                               f"map shows violating {name}")
    return out


def _shown(value: Any) -> str:
    return str(value)
