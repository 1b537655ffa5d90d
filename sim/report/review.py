"""The review's results as rows: protocols with their intervals, counterexamples, the advisor's answer.

The work of a review (sweeps, shrinking, the verdict matrix, interference
curves) is :mod:`sim.app.reviewing`; this module only turns what that work
returned into the typed rows (:mod:`sim.report.results`) ``results.json`` and the report show.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from sim.core import stats
from sim.core.family import Family
from sim.core.ledger import Entry
from sim.core.values import JsonObject
from sim.report.advice import advice_document
from sim.report.explain import explained, finding_violation
from sim.report.export import counterexample_name
from sim.report.results import (
    AvailabilityCount,
    BlastRadius,
    Counted,
    CounterexampleRow,
    CoverageRow,
    DesignRow,
    InvariantRuns,
    LedgerEntry,
    ProtocolRow,
    ReviewDocument,
    WorkDone,
)
from sim.search.pipeline import FuzzResult


@dataclass
class ReviewedCounterexample:
    """One minimal counterexample of a review: ``row`` (its entry in ``results.json``), the run its order
    replays to (``history``) and the order itself (``events``)."""

    row: CounterexampleRow
    history: Any
    events: tuple[Any, ...]


@dataclass
class DesignReview:
    """One design's review: ``row`` (its entry in ``results.json``), the family and workload it ran on and its
    counterexamples with their runs (``counterexamples[i].row is row.counterexamples[i]``)."""

    row: DesignRow
    family: Family
    workload: Any
    counterexamples: list[ReviewedCounterexample] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.row.name

    @property
    def seconds(self) -> float:
        """Wall-clock seconds the design's review took."""
        return self.row.seconds or 0.0

    def to_json(self) -> JsonObject:
        """The design's entry of ``results.json``, with its wall time."""
        return self.row.to_json()


@dataclass
class ReviewResult:
    """What :func:`sim.app.reviewing.run_review` returns: the review's budget (``budget_s``, None: none) and
    the phases it stopped, and one :class:`DesignReview` per design."""

    budget_s: float | None
    budget_stopped: tuple[str, ...]
    designs: list[DesignReview]

    def document(self) -> ReviewDocument:
        """``results.json`` without the report folder's own fields (meta, files)."""
        return ReviewDocument(budget_s=self.budget_s, budget_stopped=self.budget_stopped,
                              statistics=dict(stats.METHODS), designs=tuple(d.row for d in self.designs))

    def to_json(self) -> JsonObject:
        """``results.json`` without the report folder's own fields (meta, figures, files)."""
        return self.document().to_json()


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


def protocol_rows(result: FuzzResult) -> list[ProtocolRow]:
    """Safety, availability and liveness of each protocol, with intervals."""
    family = result.family
    rows = []
    for protocol in result.protocols:
        tally = result.summary.tallies[protocol.label]
        done = tally.progress(family)
        applies_nothing = tally.applies_nothing(family)
        violating = tally.violating_runs
        if violating:
            verdict = "violates safety"
        elif applies_nothing:
            verdict = "applies nothing"
        else:
            verdict = "no safety violation found"
        safe = None
        if family.safe_progress is not None:
            safe_done, planned = (int(tally.measures.get(n, 0)) for n in family.safe_progress)
            safe = WorkDone(done=safe_done, planned=planned, share=stats.share(safe_done, planned).rounded())
        never = [item["line"] for item in family.never_fired(result.workload, protocol, tally.measures)]
        rows.append(ProtocolRow(
            protocol=protocol.label, knobs=protocol.describe(), runs=tally.runs,
            violating_runs=Counted(count=violating, share=stats.share(violating, tally.runs).rounded()),
            by_invariant={name: InvariantRuns(violating_runs=n, share=stats.share(n, tally.runs).rounded())
                          for name, n in tally.by_invariant.items()},
            availability={name: AvailabilityCount(count=n, per_run=round(n / max(1, tally.runs), 4))
                          for name, n in tally.counted.items()},
            # the review names what is counted once, in its progress label
            progress=None if done is None else WorkDone(done=done["done"], planned=done["planned"],
                                                        share=stats.share(done["done"], done["planned"]).rounded()),
            applies_nothing=applies_nothing, verdict=verdict, safe_progress=safe, never_fired=tuple(never) or None))
    return rows


def coverage_rows(result: FuzzResult) -> list[CoverageRow]:
    """Per protocol: the declared goals (runs reaching each, or never), distinct behaviours, and the blast radius
    (the effect ledgers of its violating runs, per kind, per 10,000 runs)."""
    rows = []
    for protocol in result.protocols:
        tally = result.summary.tallies[protocol.label]
        rows.append(CoverageRow(protocol=protocol.label, goals=dict(tally.coverage.reached),
                                never=tuple(tally.coverage.never()),
                                distinct_behaviours=tally.coverage.sketch.count(),
                                blast_radius=BlastRadius.from_json(tally.ledger.to_json(), "blast_radius")))
    return rows


def ledger_row(entry: Entry) -> LedgerEntry:
    """One ledger entry as a document gives it."""
    return LedgerEntry(kind=entry.kind, object=entry.object, happened=entry.happened, who=entry.who,
                       can_do=entry.can_do, what=entry.what, who_acts=entry.who_acts, event_index=entry.event_index)


def counterexample_rows(result: FuzzResult, design_name: str) -> list[ReviewedCounterexample]:
    """Each distinct minimal counterexample: its order, how it was proved, the fix, and its run."""
    family, workload = result.family, result.workload
    out = []
    for example in result.counterexamples:
        name = counterexample_name(design_name, example.protocol.label, example.invariant, example.where)
        replay = family.replay(workload.base, example.protocol, example.events)
        report = family.check(replay.history, (example.invariant,))
        marked = sorted({v.event_index for v in report.safety_violations if v.event_index is not None})
        detail, facts = explained(finding_violation(family, workload.base, report.safety_violations,
                                                    example.finding))
        advice = example.advice
        row = CounterexampleRow(
            name=name, protocol=example.protocol.label, invariant=example.invariant, where=example.where,
            finding=example.finding, events=tuple(str(e) for e in example.events), seed=example.seed,
            run=example.run, original_events=example.shrunk.original_length,
            one_minimal=example.shrunk.one_minimal, shortest_proved=example.shrunk.shortest_proved,
            shrink_end=example.shrunk.reason, violating_events=tuple(marked), detail=detail, explanation=facts,
            advice=None if advice is None else advice_document(advice),
            ledger=tuple(ledger_row(e) for e in family.effect_ledger(replay.history)))
        out.append(ReviewedCounterexample(row, replay.history, tuple(example.events)))
    return out


def with_counterexamples(row: DesignRow, examples: list[ReviewedCounterexample]) -> DesignRow:
    """The design's row holding ``examples``' rows (in their order)."""
    return replace(row, counterexamples=tuple(e.row for e in examples))
