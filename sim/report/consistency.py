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
  the invariant it fixes;
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

from typing import Any

from sim.report.map_check import map_contradictions

#: Below this share of work done a design "applies nothing" (as the sweep's tally says it).
APPLIES_NOTHING_BELOW = 0.01


def contradictions(design: dict[str, Any]) -> list[str]:
    """Every contradiction between the statements of one design's review (empty: none)."""
    out: list[str] = []
    out += _claims(design)
    out += _fixes(design)
    out += _verdicts(design)
    out += _map(design.get("map"))
    out += map_contradictions(design.get("map"))
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
    for point in (design.get("map") or {}).get("protocols") or ():
        for name, verdict in (point.get("invariants") or {}).items():
            if verdict.get("status") == "violated":
                shown.setdefault((point["protocol"], name), "the design map")
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
        where = shown.get((label, name))
        if example.get("where"):  # a fix of one finding: another finding of the invariant may stand under it
            same = [e for e in design.get("counterexamples") or ()
                    if e["protocol"] == label and e.get("finding") == example.get("finding")]
            where = f"counterexample {same[0]['name']}" if same else None
        if where is not None:
            out.append(f"{label} is called a fix of {name} ({example['name']}), but {where} shows {name} "
                       "violated under it")
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


def _map(drawn: dict[str, Any] | None) -> list[str]:
    if not drawn:
        return []
    out = []
    points = {p["protocol"]: p for p in drawn.get("protocols") or ()}
    for label in drawn.get("minimal_safe") or ():
        if points[label]["status"] != "safe":
            out.append(f"the map lists {label} as a minimal safe design, but its status is {points[label]['status']}")
    for label in [*(drawn.get("pareto_front") or ()), *(drawn.get("minimal_safe") or ())]:
        if points[label].get("applies_nothing"):
            out.append(f"the map offers {label} as a safe design to choose, but it applies nothing")
    for label in drawn.get("pareto_front") or ():
        if points[label]["status"] != "safe":
            out.append(f"the map draws {label} on the Pareto front of safe designs, but its status is "
                       f"{points[label]['status']}")
    for certificate in drawn.get("certificates") or ():
        name = certificate["invariant"]
        for point in points.values():
            if (point.get("invariants") or {}).get(name, {}).get("status") != "violated":
                continue
            for clause in certificate["clauses"]:
                if all(_shown(point["knobs"].get(k)) in [_shown(v) for v in values]
                       for k, values in clause["knobs"].items()):
                    out.append(f"the certificate {certificate['words']!r} admits {point['protocol']}, which the "
                               f"map shows violating {name}")
    return out


def _shown(value: Any) -> str:
    return str(value)
