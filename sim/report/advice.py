"""The advisor's answer as documents give it (``fencesim fuzz --json`` and a review's ``results.json``).

:func:`advice_document` turns what :func:`sim.search.advisor.advise` returned into an
:class:`AdviceDocument`: the recommendation, whether it is a verified fix, the counts behind it, the
exhaustive search of it (:class:`AdviceProof`) and the runner-up (:class:`RunnerUp`).  The report's sentences
(:mod:`sim.report.phrases`) and the review's contradictions read these; ``to_json()`` writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim.core.records import Record, optional
from sim.core.values import JsonScalar, JsonValue


@dataclass(frozen=True, slots=True, kw_only=True)
class Remains(Record):
    """Another finding of the same invariant a proof found under the change (it fixes one finding only)."""

    finding: str
    shortest_events: int
    order: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AdviceProof(Record):
    """The exhaustive search of a change (:func:`sim.search.advice_proof.prove`): ``status`` ``proved``,
    ``disproved`` (its shortest order), ``elsewhere`` (what remains), or ``unproved`` (what stopped it)."""

    max_events: int | None = None
    distinct_states: int | None = None
    status: str
    shortest_events: int | None = optional()
    order: tuple[str, ...] | None = optional()
    remains: Remains | None = optional()
    within_events: int | None = optional()
    exhausted: bool | None = optional()
    stopped: str | None = optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerUp(Record):
    """The next best candidate after the recommendation: its sample, its proof when it was searched, its counts
    on the sweep's seeds when it was verified, and its verdict."""

    protocol: str
    changes: dict[str, JsonScalar] = field(default_factory=dict)
    sample_seeds: int = 0
    availability_per_run: float = 0.0
    progress_share: float | None = None
    safe_progress_share: float | None = None
    sample_violating_runs: int | None = None
    sample_runs_violating_it: int | None = None
    sample_new_violations: int | None = None
    applies_nothing: bool = False
    proof: AdviceProof | None = optional()
    runs_violating_it: int | None = optional()
    verified_seeds: int | None = optional(with_="runs_violating_it")
    runs_violating_invariant: int | None = optional(with_="runs_violating_it")
    runs_violating_it_before: int | None = optional(with_="runs_violating_it")
    violating_runs: int | None = optional(with_="runs_violating_it")
    verdict: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AdviceDocument(Record):
    """The advisor's answer: its recommendation (None: nothing found), whether it is a verified fix, and the
    counts behind it -- of the sweep's own seeds when verified, of a sample otherwise."""

    recommended: str | None = None
    changes: dict[str, str] = field(default_factory=dict)
    changes_needed: int | None = None
    fixes: bool | None = None
    progress_share: float | None = None
    availability_per_run: float | None = None
    seed_start: int = 0
    seeds: int = 0
    verified_seeds: int = 0
    runs_violating_it: int | None = None
    runs_violating_it_before: int | None = None
    violating_runs: int | None = None
    sample_violating_runs: int | None = None
    sample_seeds: int = 0
    sample_runs_violating_it: int | None = None
    sample_runs_violating_it_before: int | None = None
    stopped: str | None = None
    proof: AdviceProof | None = None
    runner_up: RunnerUp | None = None
    kept: dict[str, str] = field(default_factory=dict)
    #: The work done safely its cost is ranked by (families that tell it apart).
    safe_progress_share: float | None = optional()
    #: When nothing is recommended: what lies beyond any protocol (the endpoint itself must change).
    beyond_protocol: str | None = optional()
    #: Advice on one finding: its invariant, where, and the runs violating the invariant at any where.
    invariant: str | None = optional(with_="where")
    where: str | None = optional()
    runs_violating_invariant: int | None = optional(with_="where")
    #: The other findings the exported order still shows under the recommendation.
    order_still_shows: tuple[str, ...] | None = optional()


def _proof(found: Any) -> AdviceProof | None:
    return None if found is None else AdviceProof.from_json(found, "proof")


def advice_document(advice: Any) -> AdviceDocument:
    """The advisor's answer (:class:`sim.search.advisor.Advice`) as a document."""
    runner: JsonValue = advice.runner_up
    return AdviceDocument(
        recommended=advice.recommended, changes={k: str(v) for k, v in advice.changes.items()},
        changes_needed=advice.changes_needed, fixes=advice.fixes, progress_share=advice.progress_share,
        availability_per_run=advice.availability_per_run, seed_start=advice.seed_start, seeds=advice.seeds,
        verified_seeds=advice.verified_seeds, runs_violating_it=advice.runs_violating_it,
        runs_violating_it_before=advice.runs_violating_it_before, violating_runs=advice.violating_runs,
        sample_violating_runs=advice.sample_violating_runs, sample_seeds=advice.sample_seeds,
        sample_runs_violating_it=advice.sample_runs_violating_it,
        sample_runs_violating_it_before=advice.sample_runs_violating_it_before, stopped=advice.stopped,
        proof=_proof(advice.proof), runner_up=None if runner is None else RunnerUp.from_json(runner, "runner_up"),
        kept=dict(advice.kept), safe_progress_share=advice.safe_progress_share,
        beyond_protocol=advice.beyond_protocol or None,
        invariant=advice.invariant if advice.where else None, where=advice.where or None,
        runs_violating_invariant=advice.runs_violating_invariant if advice.where else None,
        order_still_shows=tuple(advice.order_still_shows) or None)
