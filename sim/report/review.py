"""The review's results as rows: protocols with their intervals, counterexamples, the advisor's answer.

The work of a review (sweeps, shrinking, the verdict matrix, interference
curves) is :mod:`sim.app.reviewing`; this module only turns what that work
returned into the rows ``results.json`` and the report show.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

from sim.core import stats
from sim.core.family import Family
from sim.report.explain import explained, finding_violation
from sim.report.export import counterexample_name
from sim.search.pipeline import FuzzResult

RESULTS_FORMAT = 1


@dataclass
class ReviewedCounterexample:
    """One minimal counterexample of a review: ``row`` (its entry in ``results.json``, JSON values only), the
    run its order replays to (``history``) and the order itself (``events``)."""

    row: dict[str, Any]
    history: Any
    events: tuple[Any, ...]


@dataclass
class DesignReview:
    """One design's review: ``row`` (its entry in ``results.json``, JSON values only), the family and workload
    it ran on, its counterexamples with their runs (``counterexamples[i].row is row["counterexamples"][i]``)
    and the seconds it took."""

    row: dict[str, Any]
    family: Family
    workload: Any
    counterexamples: list[ReviewedCounterexample] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def name(self) -> str:
        return str(self.row["name"])

    def to_json(self) -> dict[str, Any]:
        """The design's entry of ``results.json`` (a copy), with its wall time."""
        return {**copy.deepcopy(self.row), "seconds": self.seconds}


@dataclass
class ReviewResult:
    """What :func:`sim.app.reviewing.run_review` returns: the review's own fields (``row``: format, budget,
    statistics) and one :class:`DesignReview` per design."""

    row: dict[str, Any]
    designs: list[DesignReview]

    def to_json(self) -> dict[str, Any]:
        """``results.json`` without the report folder's own fields (meta, figures, files)."""
        return {**copy.deepcopy(self.row), "designs": [design.to_json() for design in self.designs]}
#: Below this share of work done, a protocol is flagged as doing (almost) nothing.

#: ``progress(phase, done, total)``, or with a note of how far the item is (``progress(phase, 0, 1, note)``: the
#: command line's bar and progress lines take both).
Progress = Callable[..., None]


def progress_label(family: Family) -> str:
    if family.progress is None:
        return "work done"
    done, planned = family.progress
    return f"{done.replace('_', ' ')} / {planned.replace('_', ' ')}"


def safe_progress_label(family: Family) -> str | None:
    """The work done safely a family measures, in words (None: it does not tell it apart)."""
    if family.safe_progress is None:
        return None
    done, planned = family.safe_progress
    return f"{done.replace('_', ' ')} / {planned.replace('_', ' ')}"


#: The advisor's answer as documents give it (``fencesim fuzz --json`` and ``results.json``).
ADVICE_KEYS = ("recommended", "changes", "changes_needed", "fixes", "progress_share", "availability_per_run",
               "seed_start", "seeds", "verified_seeds", "runs_violating_it", "runs_violating_it_before",
               "violating_runs", "sample_violating_runs", "sample_seeds", "sample_runs_violating_it",
               "sample_runs_violating_it_before", "stopped", "proof", "runner_up", "kept")


def advice_document(advice) -> dict[str, Any]:
    """The advisor's answer: its recommendation, whether it is a verified fix, and the counts behind it."""
    out = {key: getattr(advice, key) for key in ADVICE_KEYS}
    out["changes"] = {k: str(v) for k, v in advice.changes.items()}
    if getattr(advice, "safe_progress_share", None) is not None:
        out["safe_progress_share"] = advice.safe_progress_share  # the work done its cost is ranked by
    if getattr(advice, "beyond_protocol", None):
        out["beyond_protocol"] = advice.beyond_protocol
    if getattr(advice, "where", ""):  # advice on one finding: what it counts, and its invariant's runs at any where
        out.update(invariant=advice.invariant, where=advice.where,
                   runs_violating_invariant=advice.runs_violating_invariant)
    if getattr(advice, "order_still_shows", None):
        out["order_still_shows"] = list(advice.order_still_shows)
    return out


def protocol_rows(result: FuzzResult) -> list[dict[str, Any]]:
    """Safety, availability and liveness of each protocol, with intervals."""
    family = result.family
    rows = []
    for protocol in result.protocols:
        tally = result.summary.tallies[protocol.label]
        progress = tally.progress(family)
        if progress is not None:
            progress.pop("what")  # the review names it once, in its progress label
        applies_nothing = tally.applies_nothing(family)
        violating = tally.violating_runs
        if violating:
            verdict = "violates safety"
        elif applies_nothing:
            verdict = "applies nothing"
        else:
            verdict = "no safety violation found"
        rows.append({
            "protocol": protocol.label,
            "knobs": protocol.describe(),
            "runs": tally.runs,
            "violating_runs": {"count": violating, "share": stats.share(violating, tally.runs).to_json()},
            "by_invariant": {name: {"violating_runs": n, "share": stats.share(n, tally.runs).to_json()}
                             for name, n in tally.by_invariant.items()},
            "availability": {name: {"count": n, "per_run": round(n / max(1, tally.runs), 4)}
                             for name, n in tally.counted.items()},
            "progress": progress,
            "applies_nothing": applies_nothing,
            "verdict": verdict,
        })
        if family.safe_progress is not None:
            done, planned = (int(tally.measures.get(n, 0)) for n in family.safe_progress)
            rows[-1]["safe_progress"] = {"done": done, "planned": planned,
                                         "share": stats.share(done, planned).to_json()}
        never = [item["line"] for item in family.never_fired(result.workload, protocol, tally.measures)]
        if never:
            rows[-1]["never_fired"] = never
    return rows


def coverage_rows(result: FuzzResult) -> list[dict[str, Any]]:
    """Per protocol: the declared goals (runs reaching each, or never), distinct behaviours, and the blast radius
    (the effect ledgers of its violating runs, per kind, per 10,000 runs)."""
    rows = []
    for protocol in result.protocols:
        tally = result.summary.tallies[protocol.label]
        coverage = tally.coverage.to_json()
        rows.append({"protocol": protocol.label, "goals": coverage["goals"], "never": coverage["never"],
                     "distinct_behaviours": coverage["distinct_behaviours"], "blast_radius": tally.ledger.to_json()})
    return rows


def counterexample_rows(result: FuzzResult, design_name: str) -> list[ReviewedCounterexample]:
    """Each distinct minimal counterexample: its order, how it was proved, the fix, and its run."""
    family, workload = result.family, result.workload
    out = []
    for example in result.counterexamples:
        name = counterexample_name(design_name, example.protocol.label, example.invariant, example.where)
        replay = family.replay(workload.base, example.protocol, example.events)
        report = family.check(replay.history, (example.invariant,))
        marked = sorted({v.event_index for v in report.safety_violations if v.event_index is not None})
        advice = example.advice
        out.append(ReviewedCounterexample({
            "name": name, "protocol": example.protocol.label, "invariant": example.invariant,
            "where": example.where, "finding": example.finding,
            "events": [str(e) for e in example.events], "seed": example.seed, "run": example.run,
            "original_events": example.shrunk.original_length,
            "one_minimal": example.shrunk.one_minimal, "shortest_proved": example.shrunk.shortest_proved,
            "shrink_end": example.shrunk.reason,
            "violating_events": marked,
            **explained(finding_violation(family, workload.base, report.safety_violations, example.finding)),
            "advice": None if advice is None else advice_document(advice),
            "ledger": [e.to_json() for e in family.effect_ledger(replay.history)],
        }, replay.history, tuple(example.events)))
    return out
