"""A fuzz run as files and a document: export every counterexample, build the ``--json`` document."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Mapping

from sim.core import stats
from sim.core.family import Family
from sim.core.values import JsonObject
from sim.report.advice import advice_document
from sim.report.explain import explained, finding_violation
from sim.report.export import counterexample_name, current_commit, export, fencesim_version, shown_path
from sim.search.pipeline import FuzzResult, identical_groups
from sim.search.tally import ProtocolTally


def export_all(result: FuzzResult, out: Path) -> list[JsonObject]:
    """Export each counterexample (TOML, timeline, pytest) and describe it for the document."""
    family, workload = result.family, result.workload
    commit = current_commit()
    examples = []
    for example in result.counterexamples:
        label, invariant = example.protocol.label, example.invariant
        name = counterexample_name(workload.name, label, invariant, example.where)
        meta = {"name": name, "invariant": invariant, "workload": workload.name, "commit": commit,
                "minimal": True, "seed": example.seed,
                "description": (f"Minimal order violating {example.finding} under {label}, found by fuzzing workload "
                                f"{workload.name} (seed {example.seed}).")}
        scenario = family.counterexample(workload, example.protocol, invariant, example.events, meta)
        replay = family.replay(scenario, example.protocol)
        report = family.check(replay.history, (invariant,))
        marked = sorted({v.event_index for v in report.safety_violations if v.event_index is not None})
        detail, facts = explained(finding_violation(family, scenario, report.safety_violations, example.finding))
        fix = example.advice.recommended if example.advice is not None else None
        paths = export(family, scenario, replay.history, out, marked, fix)
        shrunk = example.shrunk
        entry: JsonObject = {
            "protocol": label, "invariant": invariant, "where": example.where, "finding": example.finding,
            "events": [str(e) for e in example.events],
            "actors": [family.actor(e) for e in example.events],
            "file": shown_path(paths.scenario), "timeline": shown_path(paths.timeline),
            "pytest": shown_path(paths.pytest),
            "seed": example.seed, "run": example.run, "original_events": shrunk.original_length,
            "shrink": {"replays": shrunk.replays, "end": shrunk.reason, "one_minimal": shrunk.one_minimal,
                       "shortest_proved": shrunk.shortest_proved, "actor_switches": shrunk.switches,
                       "fewest_switches": shrunk.fewest_switches},
            "violating_events": marked,
            "detail": detail, "explanation": [fact.to_json() for fact in facts],
            "replay": f"fencesim run {shlex.quote(shown_path(paths.scenario))}",
        }
        if example.advice is not None:
            entry["advice"] = advice_document(example.advice).to_json()
        entry["ledger"] = [e.to_json() for e in family.effect_ledger(replay.history)]
        examples.append(entry)
    return examples


def protocol_document(family: Family, tally: ProtocolTally) -> JsonObject:
    """One protocol's counts, with its liveness beside its safety (work done, and whether it did any)."""
    out = tally.to_json()
    if family.progress is not None:
        out["progress"] = tally.progress(family)
        out["applies_nothing"] = tally.applies_nothing(family)
    if family.safe_progress is not None:
        out["safe_progress"] = safe_progress(family, tally)
    return out


def safe_progress(family: Family, tally: ProtocolTally) -> JsonObject:
    """Work done safely of one protocol's runs (``Family.safe_progress``), as ``progress`` gives work done."""
    measured, planned_by = family.safe_progress or ("", "")
    done, planned = (int(tally.measures.get(name, 0)) for name in (measured, planned_by))
    return {"done": done, "planned": planned, "share": stats.share(done, planned).to_json(),
            "what": f"{measured} / {planned_by}"}


def mechanisms_document(result: FuzzResult) -> JsonObject:
    """Per protocol, the non-default mechanisms that never acted on the workload, and the groups of
    protocols whose results are identical (:func:`sim.search.pipeline.identical_groups`: equal tallies and
    the same minimal counterexample per invariant; a report shows a group once)."""
    family, summary = result.family, result.summary
    never = {p.label: [item["line"] for item in
                       family.never_fired(result.workload, p, summary.tallies[p.label].measures)]
             for p in result.protocols if p.label in summary.tallies}
    return {"never_fired": {label: lines for label, lines in never.items() if lines},
            "identical": identical_groups(result)}


def fuzz_document(result: FuzzResult, examples: list[JsonObject]) -> JsonObject:
    """The ``fencesim fuzz --json`` document."""
    summary = result.summary
    return {
        "family": result.family.name,
        "workload": result.workload.name,
        "seed_start": summary.seed_start,
        "seeds": summary.seeds,
        "seeds_done": summary.seeds_done,
        "invariants": list(result.family.safety_invariants),
        "availability": list(result.family.availability_columns),
        "runs": summary.runs,
        "violating_runs": summary.violating_runs,
        "violating_runs_by_invariant": summary.by_invariant(),
        "by_protocol": {label: protocol_document(result.family, t) for label, t in summary.tallies.items()},
        "counterexamples": examples,
        "mechanisms": mechanisms_document(result),
        "claims": result.claims,
        "coverage_warnings": coverage_warnings(summary.tallies),
        "saturation": [[seeds, dict(counts)] for seeds, counts in summary.saturation],
        "stopped": summary.stopped,
        "meta": {"commit": current_commit(), "fencesim_version": fencesim_version()},
    }


def coverage_warnings(tallies: Mapping[str, ProtocolTally]) -> list[str]:
    """One line per declared coverage goal a protocol's sweep never reached (a CI job warns on each)."""
    lines = []
    for label, tally in tallies.items():
        runs = tally.runs
        for goal in tally.coverage.never():
            lines.append(f"coverage goal {goal!r} never reached under {label} ({runs} run{'' if runs == 1 else 's'})")
    return lines


def timings(result: FuzzResult) -> dict[Any, float]:
    """Wall-clock seconds of the run's parts, for JUnit (kept out of the JSON document, which must be the
    same bytes for the same inputs): ``"sweep"`` and each (protocol, invariant)'s shrink and advice."""
    out: dict[Any, float] = {"sweep": result.sweep_seconds}
    for example in result.counterexamples:
        out[(example.protocol.label, example.finding)] = example.seconds
    return out
