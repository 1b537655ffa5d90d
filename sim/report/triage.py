"""Triage: a design's findings ranked by expected incidents times blast radius, with the inputs shown.

A review may find several bugs (findings: an invariant *and where* it breaks, :mod:`sim.core.findings`).
Which to fix first?  The one that hits most often and leaves the most to clean up:

* **expected incidents** -- where the workload (or the design) gives ``[telemetry]``, the expected runs per
  month violating the finding's invariant, as ``fencesim incidents`` computes them (source ``telemetry``;
  per invariant, so two places one invariant breaks share it); else the share of the sweep's runs that show
  the finding (source :data:`SWEEP_SOURCE`: the generator's fault rates, not production);
* **blast radius** -- the ledger entries of the finding's minimal counterexample (:mod:`sim.core.ledger`: the
  things a person must clean up), at least 1 when it violates but its ledger is empty;
* **score** = incidents x blast; ties are broken by finding name, then protocol.

Within one design every finding's rate has the same source, so the scores compare.  This module computes
nothing: it ranks the numbers :mod:`sim.app.reviewing` gathered (the sweep's tallies, one ``incidents`` call per
design) and shapes them for ``results.json``, the report and a DataFrame.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Protocol, Self, Sequence, TypeVar

from sim.core.records import Record
from sim.core.values import JsonObject, JsonValue

TELEMETRY_SOURCE = "telemetry"
SWEEP_SOURCE = "sweep rate, generator's fault rates, not production"
BLAST_LEDGER = "ledger entries of the minimal counterexample"
BLAST_EMPTY = "ledger empty; counted as 1 because it violates"


@dataclass(frozen=True)
class Rate:
    """How often a finding is expected: ``value`` (incidents per month under telemetry, else violating runs per
    run of the sweep), where it comes from (``source``) and its numbers in words (``detail``)."""

    value: float
    source: str
    detail: str


@dataclass(frozen=True)
class Triage(Record):
    """One finding of one protocol, with the inputs of its rank: expected incidents (``rate``, per month under
    telemetry, per run of the sweep otherwise) and their source, the blast radius and its source, and
    ``score = rate x blast``.  ``rank`` is its place in its design (1 first), ``counterexample`` the name of
    its minimal counterexample."""

    finding: str
    protocol: str
    rate: float
    rate_source: str
    blast: int
    blast_source: str
    score: float
    rate_detail: str = ""
    counterexample: str = ""
    rank: int = 0

    def to_json(self) -> JsonObject:
        """The row as ``results.json`` gives it (rate and score to 6 decimals)."""
        return _TriageJson(rank=self.rank, finding=self.finding, protocol=self.protocol,
                           counterexample=self.counterexample, rate=round(self.rate, 6), rate_source=self.rate_source,
                           rate_detail=self.rate_detail, blast=self.blast, blast_source=self.blast_source,
                           score=round(self.score, 6)).to_json()

    def as_written(self) -> Triage:
        """The row with its rate and score as ``results.json`` gives them (6 decimals)."""
        return replace(self, rate=round(self.rate, 6), score=round(self.score, 6))

    @classmethod
    def from_json(cls, value: JsonValue, where: str = "") -> Self:
        row = _TriageJson.from_json(value, where)
        return cls(row.finding, row.protocol, row.rate, row.rate_source, row.blast, row.blast_source, row.score,
                   row.rate_detail, row.counterexample, row.rank)


@dataclass(frozen=True, slots=True, kw_only=True)
class _TriageJson(Record):
    """A triage row as written."""

    rank: int = 0
    finding: str
    protocol: str
    counterexample: str = ""
    rate: float = 0.0
    rate_source: str = ""
    rate_detail: str = ""
    blast: int = 1
    blast_source: str = ""
    score: float = 0.0


def sweep_rate(violating_runs: int, runs: int) -> Rate:
    """The share of the sweep's runs showing a finding (the generator's fault rates, not production)."""
    return Rate(violating_runs / runs if runs else 0.0, SWEEP_SOURCE, f"{violating_runs} of {runs} runs")


#: The source of a rate the telemetry cannot give: the order needs a fault it has no rate for.
UNKNOWN_SOURCE = "unknown: the telemetry gives no rate for a fault the order needs"


def unknown_rate(sweep: Rate, faults: Sequence[str], keys: Sequence[str | None] | None = None) -> Rate:
    """The rate of a finding whose order needs ``faults`` the telemetry has no rate for: unknown (never a
    silent 0), ranked by the sweep's rate, which ``detail`` gives with the faults named -- and for each, the
    ``[telemetry]`` key that would rate it (``keys``, in the same order), or that fencesim has none yet."""
    keys = list(keys) if keys is not None else [None] * len(faults)
    addable = [f"{key} for {fault}" for fault, key in zip(faults, keys) if key is not None]
    keyless = [fault for fault, key in zip(faults, keys) if key is None]
    hints = ([f"set {', '.join(addable)} in [telemetry]"] if addable else []) + (
        [f"no telemetry key rates {', '.join(keyless)} yet"] if keyless else [])
    return Rate(sweep.value, UNKNOWN_SOURCE,
                f"rate unknown: the telemetry gives no rate for {', '.join(faults)} ({'; '.join(hints)}); "
                f"ranked by the sweep's rate, {sweep.detail}")


def telemetry_rate(runs: Mapping[str, float | None], invariant: str, period: float, unit: str, seeds: int) -> Rate:
    """Expected runs per ``period`` violating ``invariant`` (``runs``: ``{value, low, high}`` of
    :class:`~sim.search.incidents.CheckIncidents`), from telemetry."""
    high = "unbounded" if runs.get("high") is None else f"{runs['high']:,.2f}"
    return Rate(float(runs["value"] or 0.0), TELEMETRY_SOURCE,
                f"{runs['value']:,.2f} [{runs['low']:,.2f}, {high}] {unit} violating {invariant} per "
                f"{period:,.0f} {unit} a month ({seeds:,} sampled runs; every place {invariant} breaks)")


def blast_of(ledger: Sequence[Any]) -> tuple[int, str]:
    """The blast radius of a minimal counterexample: its ledger entries, at least 1 (it violates)."""
    if not ledger:
        return 1, BLAST_EMPTY
    return len(ledger), BLAST_LEDGER


def rank(items: Iterable[Triage]) -> list[Triage]:
    """Highest score first; equal scores (to 9 decimals: ``0.1 x 3`` ties ``0.3``) by finding name, then
    protocol. Each gets its ``rank`` (1 first)."""
    ordered = sorted(items, key=lambda t: (-round(t.score, 9), t.finding, t.protocol))
    return [replace(t, rank=position) for position, t in enumerate(ordered, 1)]


class Ranked(Protocol):
    """What the triage reads of a counterexample row (:class:`~sim.report.results.CounterexampleRow`)."""

    @property
    def name(self) -> str: ...
    @property
    def protocol(self) -> str: ...
    @property
    def shown_finding(self) -> str: ...
    @property
    def ledger(self) -> Sequence[Any]: ...


def triage(counterexamples: Sequence[Ranked], rates: Mapping[tuple[str, str], Rate]) -> list[Triage]:
    """A design's findings ranked: one per counterexample row, its rate from ``rates[(protocol, finding)]`` (a
    finding without one: rate 0)."""
    out = []
    for example in counterexamples:
        finding = example.shown_finding
        rate = rates.get((example.protocol, finding), Rate(0.0, SWEEP_SOURCE, "no rate measured"))
        blast, blast_source = blast_of(example.ledger)
        out.append(Triage(finding, example.protocol, rate.value, rate.source, blast, blast_source,
                          rate.value * blast, rate.detail, example.name))
    return rank(out)


Item = TypeVar("Item")


def in_triage_order(counterexamples: Sequence[Item], ranked: Sequence[Triage], name: Callable[[Item], str]
                    ) -> list[Item]:
    """``counterexamples`` in the order of ``ranked`` (matched by counterexample name, ``name(c)``); any not
    ranked keep their order, after the ranked ones."""
    place = {t.counterexample: t.rank for t in ranked}
    indexed = list(enumerate(counterexamples))
    return [c for _, c in sorted(indexed, key=lambda pair: (place.get(name(pair[1]), len(place) + 1), pair[0]))]


#: The report's triage table, column by column.
TABLE_COLUMNS = ("rank", "finding", "protocol", "expected incidents", "source", "blast radius", "score")


def triage_table(rows: Sequence[Triage]) -> tuple[list[str], list[list[str]]]:
    """The triage of a design (its ``triage`` rows, as ``results.json`` gives them) as a table: columns and
    rows."""
    table = []
    for row in (r.as_written() for r in rows):
        blast = f"{row.blast}" if row.blast_source == BLAST_LEDGER else f"{row.blast} (ledger empty)"
        rate = row.rate_detail if row.rate_source == TELEMETRY_SOURCE else (
            f"{_number(row.rate)} per run" + (f" ({row.rate_detail})" if row.rate_detail else ""))
        table.append([str(row.rank), row.finding, row.protocol, rate, row.rate_source, blast, _number(row.score)])
    return list(TABLE_COLUMNS), table


def triage_words(rows: Sequence[Triage]) -> str:
    """One sentence saying how the findings are ranked and where their rates come from."""
    sources = sorted({row.rate_source for row in rows})
    unit = ("expected runs a month violating the finding's invariant, from the workload's telemetry"
            if sources == [TELEMETRY_SOURCE] else
            "the share of the sweep's runs showing the finding (the generator's fault rates, not production)")
    unknown = (" A finding whose order needs a fault the telemetry gives no rate for has an unknown rate "
               "(source 'unknown'): it is ranked by the sweep's share of runs, not comparable with the "
               "telemetry's figures." if UNKNOWN_SOURCE in sources else "")
    if UNKNOWN_SOURCE in sources and TELEMETRY_SOURCE in sources:
        unit = "expected runs a month violating the finding's invariant, from the workload's telemetry"
    return (f"Findings ranked by expected incidents x blast radius (score), highest first, ties by finding "
            f"name then protocol; the counterexamples below follow this order. Expected incidents: {unit}."
            f"{unknown} Blast radius: the ledger entries of the finding's minimal counterexample (at least 1).")


#: Findings the review's terminal lists first (the report lists them all).
TERMINAL_TRIAGE = 5


def triage_lines(rows: Sequence[Triage], shown: int = TERMINAL_TRIAGE) -> list[str]:
    """The first findings of a design's triage as terminal lines: rank, finding, protocol and the inputs of its
    score; a last line says how many more the report lists."""
    if not rows:
        return []
    lines = ["fix first (expected incidents x blast radius; the report lists every finding):"]
    for row in (r.as_written() for r in rows[:shown]):
        rate = row.rate_detail if row.rate_source == TELEMETRY_SOURCE else f"{_number(row.rate)} per run"
        if row.rate_source == UNKNOWN_SOURCE:
            rate = f"rate unknown ({row.rate_detail.split(' (')[0].removeprefix('rate unknown: ')}), sweep {rate}"
        lines.append(f"  {row.rank}. {row.finding} under {row.protocol}: {rate} x blast {row.blast} "
                     f"= {_number(row.score)}")
    if len(rows) > shown:
        lines.append(f"  ... and {len(rows) - shown} more in the report")
    return lines


def _number(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    return f"{value:.4g}"


class Triaged(Protocol):
    """What :func:`triage_frame` reads of a design's review (:class:`~sim.report.results.DesignRow`)."""

    @property
    def name(self) -> str: ...
    @property
    def triage(self) -> Sequence[Triage] | None: ...


def triage_frame(designs: Iterable[Triaged]) -> Any:
    """A DataFrame of the triage of every design (a review's design rows): one row per finding and protocol,
    in rank order, the numbers as ``results.json`` gives them."""
    import pandas as pd

    columns = ["design", "rank", "finding", "protocol", "counterexample", "rate", "rate_source", "rate_detail",
               "blast", "blast_source", "score"]
    rows = [{"design": design.name, **row.to_json()} for design in designs for row in design.triage or ()]
    return pd.DataFrame(rows, columns=columns)
