"""A review's results as typed values: what flows from the search to the report, one record per kind of row.

:mod:`sim.app.reviewing` builds a :class:`DesignRow` per design -- its protocols (:class:`ProtocolRow`),
minimal counterexamples (:class:`CounterexampleRow`, with the advisor's :class:`~sim.report.advice.AdviceDocument`),
the verdict matrix (:class:`VerdictMatrix`), interference curves, coverage, the design map
(:class:`~sim.search.map_document.MapDocument`), the Engine table (:class:`CertifyDocument`), what a budget cut
(:class:`Cut`) -- and :mod:`sim.report` renders those values, reading attributes.  ``results.json`` is
:class:`ReviewDocument` written once (``to_json()``, :mod:`sim.report.folder`), and read back into the same
types by ``from_json()`` (``fencesim diff``, :func:`sim.triage_frame`, a notebook's figures of a report
folder), a document that does not fit refused with one line (exit 4).

What stays a document -- a family's own sections and its claims, whose shape the family decides -- is a
:data:`~sim.core.values.JsonObject`.  Keys a review written by an older fencesim lacks are optional here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from sim.core.errors import InputError
from sim.core.files import json_error_words, read_text
from sim.core.records import Record, optional
from sim.core.stats import Share
from sim.core.values import JsonObject, JsonValue
from sim.report.advice import AdviceDocument
from sim.report.explain import FactRow
from sim.report.triage import Triage
from sim.search.claims_evidence import ExhaustiveRow
from sim.search.map_document import MapDocument

#: The format of ``results.json`` (its ``format`` key).
RESULTS_FORMAT = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Counted(Record):
    """Runs counted, with the share of all runs and its interval."""

    count: int
    share: Share


@dataclass(frozen=True, slots=True, kw_only=True)
class InvariantRuns(Record):
    """The runs violating one invariant, with their share."""

    violating_runs: int
    share: Share | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AvailabilityCount(Record):
    """An availability finding (spurious rejections, human exceptions): its count and its rate per run."""

    count: int
    per_run: float


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkDone(Record):
    """Work done against work planned, with the share's interval."""

    done: int
    planned: int
    share: Share


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtocolRow(Record):
    """Safety, availability and work done of one protocol over the sweep, its verdict, and the exhaustive
    search of it (``exhaustive``; none where the budget stopped it first)."""

    protocol: str
    knobs: str = ""
    runs: int = 0
    violating_runs: Counted | None = None
    by_invariant: dict[str, InvariantRuns] = field(default_factory=dict)
    availability: dict[str, AvailabilityCount] = field(default_factory=dict)
    progress: WorkDone | None = None
    applies_nothing: bool = False
    verdict: str
    safe_progress: WorkDone | None = optional()
    never_fired: tuple[str, ...] | None = optional()
    exhaustive: ExhaustiveRow | None = optional()

    @property
    def violates(self) -> bool:
        """Whether any run of the sweep violated a safety invariant."""
        return self.violating_runs is not None and self.violating_runs.count > 0


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerEntry(Record):
    """One thing a violating run left a person to clean up (:mod:`sim.core.ledger`)."""

    kind: str
    object: str
    happened: str
    who: str
    can_do: str
    what: str
    who_acts: str
    event_index: int | None = optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class ExampleFiles(Record):
    """A counterexample's files in the report folder."""

    scenario: str
    timeline: str
    pytest: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CounterexampleRow(Record):
    """One minimal counterexample: its order and how it was proved minimal, the seed it came from, what breaks
    (and why, as facts), the advisor's answer and the blast radius; the report folder adds its timeline, files,
    commands and figure."""

    name: str
    protocol: str
    invariant: str
    where: str | None = None
    finding: str | None = None
    events: tuple[str, ...] = ()
    seed: int | None = None
    run: int | None = None
    original_events: int | None = None
    one_minimal: bool = True
    shortest_proved: bool = False
    shrink_end: str = ""
    violating_events: tuple[int, ...] = ()
    detail: str = ""
    explanation: tuple[FactRow, ...] = ()
    advice: AdviceDocument | None = None
    ledger: tuple[LedgerEntry, ...] = ()
    timeline: str | None = optional()
    files: ExampleFiles | None = optional()
    replay: str | None = optional()
    serve: str | None = optional()
    figure: str | None = optional()

    @property
    def shown_finding(self) -> str:
        """The finding (``invariant @ where``), or the invariant where a document names none."""
        return self.finding or self.invariant


@dataclass(frozen=True, slots=True, kw_only=True)
class MatrixCell(Record):
    """One protocol replaying one scenario or counterexample: the run's outcome, the invariants it violates,
    and the cell's text."""

    outcome: str | None = None
    violated: tuple[str, ...] = ()
    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class VerdictMatrix(Record):
    """Every protocol (``rows``) against every scripted scenario and minimal counterexample (``columns``,
    shown as ``labels``); ``cells[(row, column)]``.  Written with each cell keyed ``"row<TAB>column"``."""

    rows: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    cells: dict[tuple[str, str], MatrixCell] = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        return {"rows": list(self.rows), "columns": list(self.columns), "labels": list(self.labels),
                "cells": {f"{row}\t{column}": cell.to_json() for (row, column), cell in self.cells.items()}}

    @classmethod
    def from_json(cls, value: JsonValue, where: str = "") -> Self:
        keyed = _MatrixJson.from_json(value, where)
        cells = {}
        for key, cell in keyed.cells.items():
            row, tab, column = key.partition("\t")
            if not tab:
                raise InputError(f"{where or 'matrix'}.cells: the key {key!r} is not a protocol and a column "
                                 "joined by a tab")
            cells[row, column] = cell
        return cls(rows=keyed.rows, columns=keyed.columns, labels=keyed.labels, cells=cells)


@dataclass(frozen=True, slots=True, kw_only=True)
class _MatrixJson(Record):
    """The matrix as written: its cells keyed by text."""

    rows: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    cells: dict[str, MatrixCell] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class InterferencePoint(Record):
    """The violating-run share of one protocol at one level of faults per run (at most)."""

    faults_per_run: int
    runs: int
    violating_runs: int
    share: Share


@dataclass(frozen=True, slots=True, kw_only=True)
class KindCount(Record):
    """One kind of ledger entry over a sweep's violating runs: its count and its rate per ``per_runs`` runs."""

    count: int
    rate: Share


@dataclass(frozen=True, slots=True, kw_only=True)
class BlastRadius(Record):
    """The effect ledgers of a protocol's violating runs, per kind, per ``per_runs`` runs."""

    runs: int = 0
    per_runs: int = 10_000
    kinds: dict[str, KindCount] = field(default_factory=dict)
    method: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CoverageRow(Record):
    """Per protocol: the declared goals (runs reaching each), those never reached, the distinct behaviours
    and the blast radius."""

    protocol: str
    goals: dict[str, int] = field(default_factory=dict)
    never: tuple[str, ...] = ()
    distinct_behaviours: int = 0
    blast_radius: BlastRadius = field(default_factory=BlastRadius)


@dataclass(frozen=True, slots=True, kw_only=True)
class Cut(Record):
    """One part of a review a budget stopped: ``section`` a stable key (``sweep``, ``shrink``, ``advisor``,
    ``certify``, ``exhaustive``, ``interference``, ``sections``, ``map``, ``telemetry``, ``liveness``),
    ``title`` the section as the report names it, ``left_out`` what it did not do, ``command`` what completes
    it.  Written with its Not covered :meth:`line`."""

    section: str
    title: str
    left_out: str
    command: str

    def line(self) -> str:
        """The Not covered line: the section by name, what was left out, the command in backticks."""
        return f"the budget cut {self.title}: {self.left_out}; `{self.command}` completes it"

    def to_json(self) -> JsonObject:
        return _CutJson(section=self.section, title=self.title, left_out=self.left_out, command=self.command,
                        line=self.line()).to_json()

    @classmethod
    def from_json(cls, value: JsonValue, where: str = "") -> Self:
        written = _CutJson.from_json(value, where)
        return cls(section=written.section, title=written.title, left_out=written.left_out, command=written.command)


@dataclass(frozen=True, slots=True, kw_only=True)
class _CutJson(Record):
    """A cut as written: with its line."""

    section: str
    title: str
    left_out: str
    command: str
    line: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TransitionAnswer(Record):
    """One transition of an Engine table (``fencesim certify``): its verdict within the bound, the shortest
    order of each finding (``repeats``, ``lost``), what each shows when replayed, and the change proposed."""

    transition: str
    verdict: str
    within_events: int | str | None = None
    repeats: tuple[str, ...] | None = optional()
    lost: tuple[str, ...] | None = optional()
    violates: dict[str, tuple[str, ...]] | None = optional()
    shows: dict[str, tuple[str, ...]] | None = optional(with_="violates")
    change: str | None = optional()
    change_checked: bool | None = optional(with_="change")
    change_endpoint: bool | None = optional(with_="change")
    exported: tuple[str, ...] | None = optional()

    def order(self, kind: str) -> tuple[str, ...] | None:
        """The shortest order of one finding (``repeats`` or ``lost``), or None."""
        return self.repeats if kind == "repeats" else self.lost if kind == "lost" else None


@dataclass(frozen=True, slots=True, kw_only=True)
class CertifyDocument(Record):
    """Each transition certified under an engine: exactly once within N events, or the shortest order that
    repeats or loses it (``fencesim certify``)."""

    engine: str
    protocol: str
    knobs_after_engine: str = ""
    max_events: int
    complete: bool
    distinct_states: int = 0
    transitions: tuple[TransitionAnswer, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Lasso(Record):
    """A liveness violation: the events of the prefix, then what repeats forever."""

    prefix: tuple[str, ...] = ()
    cycle: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class LivenessVerdict(Record):
    """One liveness property under fairness: ``holds``, ``violated`` (its lasso) or ``not decided``."""

    status: str
    lasso: Lasso | None = optional()
    still_going_after: tuple[str, ...] | None = optional()
    item: str | None = optional()
    vacuous: bool | None = optional()
    note: str | None = optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class LivenessRow(Record):
    """One protocol of a review's Liveness section: the graph searched and each property's verdict."""

    protocol: str
    max_faults: int = 0
    states: int = 0
    edges: int = 0
    complete: bool = True
    exhausted: bool = False
    end: str = ""
    unfair: tuple[str, ...] = ()
    faults_acted: tuple[str, ...] = ()
    properties: dict[str, LivenessVerdict] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadRow(Record):
    """The workload a design was reviewed on, as the report names it."""

    name: str
    classes: tuple[str, ...] = ()
    per_run_max: int = 0
    max_events: int = 0
    swarm: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DesignRow(Record):
    """One design's review (see the module docstring): its entry of ``results.json``."""

    name: str
    family: str = ""
    family_title: str = ""
    description: str = ""
    source: str = ""
    workload: WorkloadRow = field(default_factory=lambda: WorkloadRow(name=""))
    seeds: int = 0
    seeds_done: int = 0
    invariants: tuple[str, ...] = ()
    availability: tuple[str, ...] = ()
    progress_label: str = "work done"
    safe_progress_label: str | None = None
    protocols: tuple[ProtocolRow, ...] = ()
    identical: tuple[tuple[str, ...], ...] = ()
    #: Required: a design whose findings cannot be read is no review of it.
    counterexamples: tuple[CounterexampleRow, ...]
    triage: tuple[Triage, ...] | None = optional()
    claims: tuple[JsonObject, ...] = ()
    matrix: VerdictMatrix = field(default_factory=VerdictMatrix)
    interference: dict[str, tuple[InterferencePoint, ...]] = field(default_factory=dict)
    coverage: tuple[CoverageRow, ...] = ()
    saturation: tuple[tuple[int, dict[str, int]], ...] = ()
    sections: tuple[JsonObject, ...] = ()
    map: MapDocument | None = None
    certify: CertifyDocument | None = None
    not_covered: tuple[str, ...] = ()
    budget_stopped: tuple[str, ...] = ()
    budget_cuts: tuple[Cut, ...] | None = optional()
    contradictions: tuple[str, ...] | None = optional()
    #: The figures of the report folder, by kind (``heatmap``, ``safety``...), written by the folder.
    figures: dict[str, str] | None = optional()
    #: Wall-clock seconds of the design's review.
    seconds: float | None = optional()

    def cut(self, section: str) -> Cut | None:
        """What the budget cut of one section (None: nothing, or a review from before cuts were listed)."""
        return next((c for c in self.budget_cuts or () if c.section == section), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportMeta(Record):
    """What made a report: when, which fencesim at which commit, on which Python and platform, how long."""

    generated_at: str = ""
    fencesim_version: str = ""
    commit: str = ""
    python: str = ""
    platform: str = ""
    seconds: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewDocument(Record):
    """``results.json``: the review's own fields, each design's review, and the report folder's meta and
    files (none before the folder is written)."""

    format: int = RESULTS_FORMAT
    budget_s: float | None = None
    budget_stopped: tuple[str, ...] = ()
    statistics: dict[str, str] = field(default_factory=dict)
    designs: tuple[DesignRow, ...] = ()
    meta: ReportMeta | None = optional()
    files: tuple[str, ...] | None = optional()


def read_results(path: str | Path) -> ReviewDocument:
    """A review's ``results.json`` (or the report folder holding it), read into its typed values; a file that
    is not one is one :class:`InputError` saying where."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    text = read_text(path, "review's results.json")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise InputError(f"not a review's results.json (JSON): {json_error_words(error)}", str(path)) from None
    try:
        return ReviewDocument.from_json(data)
    except InputError as error:
        raise InputError(f"not a review's results.json fencesim can read: {error.message}", str(path)) from None
