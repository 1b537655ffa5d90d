"""The design review as work: every number a room needs about one or more designs, as one document.

For each design (a family, a workload, the protocols to compare) the review
runs, through the family contract only:

1. the fuzz pipeline -- a seed sweep, each distinct violation shrunk to a
   minimal order, the advisor's smallest fix and its cost;
2. safety and availability per protocol: violating runs per invariant with
   Wilson intervals, availability findings, the share of work done (steps
   applied, tasks completed) -- a protocol that does nothing is flagged,
   never summarised as "no safety violation";
3. the verdict matrix: every protocol against every scripted scenario and
   every minimal counterexample, replayed with no seed;
4. interference curves: the violating-run share as the faults per run grow;
5. coverage and blast radius: the saturation curve of distinct behaviours
   against seeds, declared goals never reached, and the effect ledger of the
   violating runs per 10,000 plans or tasks;
6. the family's own sections (the effects family's exposure tables);
6a. the triage: the findings ranked by expected incidents (telemetry, else the sweep's rate) times blast
   radius (:mod:`sim.report.triage`), the order the counterexamples and the matrix's rows are shown in;
7. what the review did not cover, and where a budget stopped it.

:func:`run_review` returns a :class:`~sim.report.review.ReviewResult`: per
design its ``results.json`` entry (JSON values only) beside the family,
workload and replayed counterexample runs it came from; :mod:`sim.report`
shapes the rows (:mod:`sim.report.review`) and writes the report folder
(:mod:`sim.report.folder`) from them -- the report layer runs nothing.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Mapping, Sequence

from sim.app.designs import Design
from sim.app.review_cuts import (
    certify_cut,
    fuzz_cuts,
    interference_cut,
    map_cut,
    proof_cuts,
    review_command,
    sections_cut,
    telemetry_cut,
    workload_argument,
)
from sim.app.review_liveness import liveness_cut, liveness_section
from sim.core import stats
from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.values import JsonObject
from sim.core.workload import Workload
from sim.report.baseline import workload_digest
from sim.report.consistency import contradictions
from sim.report.export import file_stem
from sim.report.results import (
    CertifyDocument,
    Cut,
    DesignRow,
    InterferencePoint,
    MatrixCell,
    ProtocolRow,
    VerdictMatrix,
    WorkloadRow,
)
from sim.report.review import (
    DesignReview,
    Progress,
    ReviewedCounterexample,
    ReviewResult,
    counterexample_rows,
    coverage_rows,
    progress_label,
    protocol_rows,
    safe_progress_label,
)
from sim.report.triage import Rate, Triage, in_triage_order, sweep_rate, telemetry_rate, triage, unknown_rate
from sim.search.advice_proof import proof_bound
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.claims_evidence import proof_row, protocol_proofs, settle
from sim.search.map_document import MapDocument
from sim.search.options import SearchOptions
from sim.search.oracle import evaluate
from sim.search.pipeline import FuzzResult, fuzz, identical_groups
from sim.search.sweep import sweep

#: Faults per run (at most) of the interference curves, and the share of a design's seeds each level gets.
INTERFERENCE_LEVELS = (1, 2, 4, 8)
INTERFERENCE_SEED_SHARE = 0.25


def verdict_matrix(family: Family, workload: Workload, protocols: Sequence[Protocol], scenarios: Sequence[Any],
                   examples: Sequence[ReviewedCounterexample]) -> VerdictMatrix:
    """Every protocol against every scripted scenario and minimal counterexample.

    A scenario's cell is its outcome (the last verdict) and the invariants it
    violates; a counterexample's cell is the invariants its order violates
    under that protocol, or ``ok``.
    """
    columns: list[str] = []
    labels: list[str] = []
    cells: dict[tuple[str, str], MatrixCell] = {}
    for scenario in scenarios:
        columns.append(scenario.name)
        labels.append(scenario.name)
        for protocol in protocols:
            evaluation = evaluate(family, scenario, protocol, scenario.events)
            outcome = family.outcome(evaluation.replay) or "-"
            cells[(protocol.label, scenario.name)] = MatrixCell(
                outcome=outcome, violated=tuple(evaluation.violated),
                text=", ".join(evaluation.violated) or (outcome if outcome != "-" else "ok"))
    for example in examples:
        row = example.row
        columns.append(row.name)
        labels.append(f"{row.shown_finding} under {row.protocol}")
        for protocol in protocols:
            evaluation = evaluate(family, workload.base, protocol, example.events)
            cells[(protocol.label, row.name)] = MatrixCell(
                outcome=family.outcome(evaluation.replay), violated=tuple(evaluation.violated),
                text=", ".join(evaluation.violated) or "ok")
    return VerdictMatrix(rows=tuple(p.label for p in protocols), columns=tuple(columns), labels=tuple(labels),
                         cells=cells)


def interference(family: Family, workload: Workload, protocols: Sequence[Protocol], seeds: int, workers: int | None,
                 deadline: Deadline) -> dict[str, tuple[InterferencePoint, ...]]:
    """Violating-run share per protocol as the faults per run grow (Wilson intervals)."""
    curves: dict[str, list[InterferencePoint]] = {p.label: [] for p in protocols}
    per_level = _interference_seeds(seeds)
    for level in INTERFERENCE_LEVELS:
        if deadline.expired():
            deadline.note("interference curves")
            break
        levelled = dataclasses.replace(workload, per_run_max=level)
        summary, _ = sweep(family, levelled, list(protocols), per_level, workers=workers, deadline=deadline)
        for protocol in protocols:
            tally = summary.tallies[protocol.label]
            curves[protocol.label].append(InterferencePoint(
                faults_per_run=level, runs=tally.runs, violating_runs=tally.violating_runs,
                share=stats.share(tally.violating_runs, tally.runs).rounded()))
    return {label: tuple(points) for label, points in curves.items()}


def _interference_seeds(seeds: int) -> int:
    """Seeds per protocol at each level of the interference curves."""
    return max(20, int(seeds * INTERFERENCE_SEED_SHARE))


def not_covered(family: Family, workload: Workload, protocols: Sequence[Protocol], seeds: int,
                result: FuzzResult) -> list[str]:
    """What the review did not look at, in plain words."""
    out = []
    missing = [c for c in family.fault_classes if c not in workload.classes]
    if missing:
        out.append(f"fault classes not drawn by workload {workload.name}: {', '.join(missing)}")
    held = [k.name for k in family.knobs.knobs if len({str(p.knobs[k.name]) for p in protocols}) == 1]
    if held:
        values = ", ".join(f"{k}={family.knobs.knob(k).show(protocols[0].knobs[k])}" for k in held)
        out.append(f"knobs held at one value across the protocols compared: {values}")
    out.append(f"seeds {result.summary.seed_start}..{result.summary.seed_start + result.summary.seeds_done - 1} "
               f"per protocol ({result.summary.seeds_done} runs each); each generated order held at most "
               f"{workload.per_run_max} faults and {workload.max_events} events (the events of the order the search "
               "draws, not of the whole run); orders outside these bounds were not tried")
    unproved = [e for e in result.counterexamples if e.shrunk.one_minimal and not e.shrunk.shortest_proved]
    if unproved:
        out.append(f"{len(unproved)} counterexample(s) are 1-minimal but not proved shortest (the exhaustive "
                   "bound or a limit stopped the proof)")
    unshrunk = [e for e in result.counterexamples if not e.shrunk.one_minimal]
    if unshrunk:
        limits = ", ".join(sorted({e.shrunk.reason for e in unshrunk}))
        out.append(f"{len(unshrunk)} counterexample(s) are not minimal: shrinking was stopped by {limits}, so "
                   "they may hold events that do not matter")
    return out


def review_design(design: Design, workers: int | None = None, deadline: Deadline = NO_DEADLINE,
                  progress: Progress | None = None) -> DesignReview:
    """The review of one design (see the module docstring).  Under a budget its parts run in the order they
    matter: the sweep (with shrinking and advice), the Engine table the design asks for, the exhaustive
    search of each protocol, then the optional sections (interference curves, the family's sections, the
    design map); each part the budget stopped is a cut (:mod:`sim.app.review_cuts`), named in Not covered."""
    family, workload, protocols, seeds = design.family, design.workload, design.protocols, design.seeds
    started = time.monotonic()
    earlier = list(deadline.hit)  # the phases stopped in the designs before this one
    del deadline.hit[:]

    def sweep_progress(done: int, total: int, violating: int = 0) -> None:
        if progress is not None:
            progress(f"{design.name}: sweep", done, total)

    def shrink_progress(what: str, events: int) -> None:
        if progress is not None:
            progress(f"{design.name}: shrinking and advice", 0, 1, f"{what}, {events} events")

    bound = design.map.max_events if design.map is not None else None
    result = fuzz(family, workload, protocols, SearchOptions(seeds, workers=workers, deadline=deadline,
                                                             progress=sweep_progress, proof_depth=bound,
                                                             shrink_progress=shrink_progress))
    examples = counterexample_rows(result, design.name)
    telemetry_skipped = bool(examples and workload.telemetry and deadline.expired())
    ranked = triage([e.row for e in examples], triage_rates(result, examples, deadline))
    examples = in_triage_order(examples, ranked, name=lambda e: e.row.name)
    certified = _certified(design, workload, deadline, progress)
    certify_stopped = certified is not None and not certified.complete and deadline.expired()
    if progress is not None:
        progress(f"{design.name}: exhaustive search of each protocol", 0, 1)
    proofs = protocol_proofs(family, workload, protocols, proof_bound(workload, bound), deadline)
    if progress is not None:
        progress(f"{design.name}: interference curves", 0, 1)
    curves = interference(family, workload, protocols, seeds, workers, deadline)
    matrix = verdict_matrix(family, workload, protocols, design.scenarios, examples)
    sections_skipped = deadline.expired() and _has_sections(family)
    sections = [] if deadline.expired() else _with_classes(family, workload,
                                                           family.review_sections(workload, protocols, seeds))
    live = None if deadline.expired() else liveness_section(family, workload, protocols, deadline,
                                                            workload_argument(design),
                                                            _phase(progress, f"{design.name}: liveness"))
    sections += [live.to_json()] if live is not None else []
    drawn_map = _drawn_map(design, workers, deadline, progress)
    row = dataclasses.replace(_design_row(design, result, examples, ranked, matrix, curves, sections, drawn_map,
                                          certified, proofs), budget_stopped=tuple(deadline.hit))
    deadline.hit[:] = earlier + [phase for phase in deadline.hit if phase not in earlier]
    cuts = (fuzz_cuts(design, row) + telemetry_cut(design, telemetry_skipped)
            + cuts_of(design, row, result.protocols, proofs, certify_stopped, sections_skipped)
            + liveness_cut(design, live, deadline.name))
    if row.budget_stopped and not cuts:  # a phase stopped that no cut names: say so, with the review's command
        cuts.append(Cut(section="review", title="the review", command=review_command(design),
                        left_out=f"the phases {', '.join(row.budget_stopped)} were stopped"))
    row = dataclasses.replace(row, budget_cuts=tuple(cuts), not_covered=row.not_covered + tuple(c.line() for c in cuts))
    # every statement of the review read back against every other (none is expected: each found is a bug)
    found = tuple(contradictions(row))
    row = dataclasses.replace(row, contradictions=found, seconds=round(time.monotonic() - started, 1),
                              not_covered=row.not_covered + tuple(f"CONTRADICTION in this review: {line}"
                                                                  for line in found))
    return DesignReview(row, family, workload, examples)


def cuts_of(design: Design, row: DesignRow, protocols: Sequence[Protocol], proofs: Mapping[str, Any],
            certify_stopped: bool, sections_skipped: bool) -> list[Cut]:
    """Each part of the design's review after the sweep that the budget stopped, in the order the review runs
    them: the Engine table, the protocols' searches, the interference curves, the family's sections, the map."""
    bound = proof_bound(design.workload, design.map.max_events if design.map is not None else None)
    cuts = certify_cut(design, row.certify, certify_stopped, _certify_depth(design.workload),
                       REVIEW_CERTIFY_STATES)
    cuts += proof_cuts(design, protocols, proofs, bound)
    cuts += interference_cut(design, row.interference, INTERFERENCE_LEVELS, _interference_seeds(design.seeds))
    cuts += sections_cut(design, design.family.name) if sections_skipped else []
    return cuts + map_cut(design, row.map)


def _has_sections(family: Family) -> bool:
    """Whether the family adds sections of its own to a review (it overrides ``Family.review_sections``)."""
    return type(family).review_sections is not Family.review_sections


def _phase(progress: Progress | None, phase: str) -> Callable[[str], None] | None:
    """A phase's progress, one item at a time (its name), or None without progress."""
    if progress is None:
        return None

    def item(name: str) -> None:
        progress(phase, 0, 1, name)

    return item


def search_progress(progress: Progress | None, phase: str) -> Callable[[int, int, int], None] | None:
    """An exhaustive search's progress (``depth, max_events, distinct states``) as a review phase's line: "PHASE
    (depth 2 of 3, 9,311 states), 40 s elapsed"."""
    if progress is None:
        return None
    shown = progress
    shown(phase, 0, 1)

    def searching(depth: int, max_events: int, states: int) -> None:
        shown(phase, 0, 1, f"depth {depth} of {max_events}, {states:,} states")

    return searching


def _drawn_map(design: Design, workers: int | None, deadline: Deadline,
               progress: Progress | None) -> MapDocument | None:
    """The design's ``map`` section (``fencesim map``), or None without one or time left."""
    if design.map is None or deadline.expired():
        return None
    from sim.search.lattice import design_map

    phase = f"{design.name}: design map"

    def mapping(done: int, total: int, label: str) -> None:
        if progress is not None:
            progress(phase, done, total, label)

    mapping(0, 1, "")
    request, family = design.map, design.family
    base = family.parse_protocol(request.base) if request.base is not None else None
    return design_map(family, design.workload, request.knobs, request.max_events, seeds=request.seeds,
                      workers=workers or 1, deadline=deadline, base=base, progress=mapping).document()


def _design_row(design: Design, result: FuzzResult, examples: Sequence[ReviewedCounterexample],
                ranked: Sequence[Triage], matrix: VerdictMatrix, curves: dict[str, tuple[InterferencePoint, ...]],
                sections: Sequence[JsonObject], drawn_map: MapDocument | None, certified: CertifyDocument | None,
                proofs: Mapping[str, Any]) -> DesignRow:
    """The design's review, before its budget cuts and contradictions."""
    family, workload, protocols, seeds = design.family, design.workload, design.protocols, design.seeds
    cells = {key: cell.violated for key, cell in matrix.cells.items()}
    return DesignRow(
        name=design.name, family=family.name, family_title=family.title, description=design.description,
        source=design.source,
        workload=WorkloadRow(name=workload.name, classes=tuple(workload.classes), per_run_max=workload.per_run_max,
                             max_events=workload.max_events, swarm=workload.swarm),
        seeds=seeds, seeds_done=result.summary.seeds_done, invariants=tuple(family.safety_invariants),
        availability=tuple(family.availability_columns), progress_label=progress_label(family),
        safe_progress_label=safe_progress_label(family), protocols=tuple(_searched_rows(protocol_rows(result), proofs)),
        identical=tuple(tuple(group) for group in identical_groups(result)),
        counterexamples=tuple(example.row for example in examples), triage=tuple(ranked),
        claims=tuple(settle(family, result.claims, cells, sections, drawn_map, proofs)), matrix=matrix,
        interference=curves, coverage=tuple(coverage_rows(result)),
        saturation=tuple((seeds_run, dict(counts)) for seeds_run, counts in result.summary.saturation),
        sections=tuple(sections), map=drawn_map, certify=certified,
        not_covered=tuple(not_covered(family, workload, protocols, seeds, result)))


def _with_classes(family: Family, workload: Workload, sections: list[JsonObject]) -> list[JsonObject]:
    """An effects design's sections with the smallest reliability class per transition after its own exposure:
    answered by certify's own function (:mod:`sim.app.reliability_classes`), so the table and certify cannot
    disagree."""
    if family.name != "effects":
        return sections
    from sim.app.reliability_classes import classes_section

    return sections[:1] + [classes_section(family, workload)] + sections[1:]


def _certified(design: Design, workload: Workload, deadline: Deadline,
               progress: Progress | None) -> CertifyDocument | None:
    """The design's ``engine`` certificate (``fencesim certify``), or None without an engine or time left."""
    if design.engine is None or deadline.expired():
        return None
    from sim.app.certifying import certify, depth_within

    engine, extra = (part.strip() for part in design.engine.partition(",")[::2])
    depth = depth_within(workload, engine, extra, _certify_depth(workload), REVIEW_CERTIFY_STATES)
    while True:
        found = certify(workload, engine, extra, depth, deadline, max_states=REVIEW_CERTIFY_STATES,
                        progress=search_progress(progress, f"{design.name}: certify under {design.engine}"))
        if found.reason != "state_limit" or depth == 1 or deadline.expired():
            return found.document()
        depth -= 1  # the deeper search passes the review's limit: certify every transition one event less deep


#: Distinct states of each of the review's Engine-table searches (about 8 s on one core: the effects family's
#: machine judges 1,000 to 1,900 states a second; certify proposes changes with a search each).  The table is
#: certified as deep as a search is expected to stay within it (``sim.app.certifying.depth_within``), one event less
#: if the search still passes it, and Not covered gives the ``fencesim certify`` command for the whole depth.
REVIEW_CERTIFY_STATES = 12_000


def _certify_depth(workload: Workload) -> int:
    """The events the review's Engine table asks for: certify's default, within the workload's order length."""
    from sim.app.certifying import CERTIFY_DEPTH_DEFAULT

    return min(CERTIFY_DEPTH_DEFAULT, workload.max_events)


#: Runs sampled per protocol when a review estimates its findings' incidents from telemetry (``fencesim
#: incidents`` samples 10,000 or 2,000): enough to rank, cheap beside the sweep.
TRIAGE_INCIDENT_SEEDS = 500
_INCIDENTS_CACHE: dict[tuple[Any, ...], tuple[Any, str]] = {}


def triage_rates(result: FuzzResult, examples: Sequence[ReviewedCounterexample],
                 deadline: Deadline = NO_DEADLINE) -> dict[tuple[str, str], Rate]:
    """The expected incidents of each counterexample's finding, keyed ``(protocol, finding)``: from the
    workload's ``[telemetry]`` (one ``incidents`` estimate per design, cached, for the protocols with findings)
    where it has one, else the sweep's share of runs showing the finding."""
    family, workload = result.family, result.workload
    rows = [e.row for e in examples]
    tallies = result.summary.tallies
    rates = {}
    for row in rows:
        tally = tallies.get(row.protocol)
        finding = row.shown_finding
        if tally is not None:
            rates[row.protocol, finding] = sweep_rate(tally.by_finding.get(finding, 0), tally.runs)
    if not rows or not workload.telemetry:
        return rates
    if deadline.expired():
        return _without_telemetry(rates, "the budget stopped the review before the telemetry estimate")
    labels = {row.protocol for row in rows}
    protocols = [p for p in result.protocols if p.label in labels]
    estimate, reason = _incidents(family, workload, protocols)
    if estimate is None:
        return _without_telemetry(rates, f"the telemetry could not be estimated: {reason}")
    from sim.search.unrated import telemetry_key, unrated_faults

    for example in examples:
        row = example.row
        key = (row.protocol, row.shown_finding)
        unrated = unrated_faults(family, workload, example.events)
        if unrated and key in rates:  # an estimate blind to a fault the order needs: unknown, not 0
            rates[key] = unknown_rate(rates[key], unrated, [telemetry_key(family, fault) for fault in unrated])
            continue
        found = estimate.protocols.get(row.protocol, {}).get(row.invariant)
        if found is not None:
            rates[key] = telemetry_rate(found.runs.to_json(), row.invariant, estimate.period, estimate.unit,
                                        estimate.seeds)
    return rates


def _without_telemetry(rates: dict[tuple[str, str], Rate], why: str) -> dict[tuple[str, str], Rate]:
    """The sweep's rates, each saying why the workload's telemetry was not used."""
    return {key: dataclasses.replace(rate, detail=f"{rate.detail}; {why}") for key, rate in rates.items()}


def _incidents(family: Family, workload: Workload, protocols: Sequence[Protocol]) -> tuple[Any, str]:
    """``incidents`` on a small seed budget, once per (workload, telemetry, protocols), and ``""``; or None
    and the reason when the telemetry cannot be estimated (the sweep's rates are used then)."""
    from sim.search.incidents import incidents

    key = (family.name, workload_digest(family, workload), tuple(sorted((workload.telemetry or {}).items())),
           tuple(p.describe() for p in protocols), TRIAGE_INCIDENT_SEEDS)
    if key not in _INCIDENTS_CACHE:
        try:
            _INCIDENTS_CACHE[key] = (incidents(family, workload, protocols, seeds=TRIAGE_INCIDENT_SEEDS), "")
        except InputError as error:
            _INCIDENTS_CACHE[key] = (None, str(error))
    return _INCIDENTS_CACHE[key]


def _searched_rows(rows: list[ProtocolRow], proofs: Mapping[str, Any]) -> list[ProtocolRow]:
    """Each protocol's row with its exhaustive search; a violation only the search found is its verdict too."""
    out = []
    for row in rows:
        searched = proofs.get(row.protocol)
        if searched is None:
            out.append(row)
            continue
        verdict = row.verdict
        if searched.minimal_orders and verdict != "violates safety":
            verdict = "violates safety (exhaustive search; no sampled run)"
        out.append(dataclasses.replace(row, exhaustive=proof_row(searched), verdict=verdict))
    return out


def _distinct_protocols(design: Design) -> None:
    """A design compares distinct protocols: the same one spelled twice (``step-dedupe`` and
    ``fence=step,dedupe=journal``) would be reviewed twice and its findings doubled."""
    for position, protocol in enumerate(design.protocols):
        for earlier in design.protocols[:position]:
            if earlier == protocol:
                same = (f"{earlier.label!r}" if earlier.label == protocol.label else
                        f"the same protocol as {earlier.label!r} and {protocol.label!r} ({protocol.describe()})")
                raise InputError(f"design {design.name!r} ({design.source}) names {same} more than once; give "
                                 "each protocol once")


def run_review(designs: Sequence[Design], budget_s: float | None = None, workers: int | None = None,
               progress: Progress | None = None) -> ReviewResult:
    """Review every design within ``budget_s`` seconds of wall clock (None: no budget).

    Designs must have distinct names: a name keys the design's section, figures and files."""
    seen: dict[str, str] = {}
    for design in designs:
        key = file_stem(design.name)
        if key in seen:
            same = "the same name" if seen[key] == design.name else f"names that make the same files ({seen[key]!r})"
            raise InputError(f"two designs have {same}: {design.name!r}; give each design file its own "
                             "name = \"...\"")
        seen[key] = design.name
        _distinct_protocols(design)
    deadline = Deadline(budget_s, "--budget")
    reviewed = [review_design(design, workers, deadline, progress) for design in designs]
    return ReviewResult(budget_s, tuple(deadline.hit), reviewed)
