"""The review's tables and sentences, as plain text: shared by the report document
(:mod:`sim.report.render`), the terminal's tables and the tests.

Each helper reads one design's review (a :class:`~sim.report.results.DesignRow`) or a part of it and
returns rows or words in no markup, except :func:`advice_text`, the advisor's line with its changes in backticks (the
document writes it as :class:`~sim.report.document.Marked` text).
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

from sim.core.records import json_number, json_object
from sim.core.stats import Share
from sim.core.values import JsonObject
from sim.report.advice import AdviceDocument, AdviceProof, RunnerUp
from sim.report.results import CounterexampleRow, DesignRow
from sim.search.map_document import MapDocument, MapPoint

SHARE = "{value:.1%} [{low:.1%}, {high:.1%}]"


def share_text(interval: Share | None) -> str:
    """A share with its interval (:data:`SHARE`), or ``n/a`` when there is none (or it is NaN)."""
    if interval is None or interval.value != interval.value:
        return "n/a"
    return SHARE.format(value=interval.value, low=interval.low, high=interval.high)


def headline_rows(design: DesignRow) -> tuple[list[str], list[list[str]]]:
    """The headline table of one design: a row per protocol, as narrow as its content allows (the
    invariants a protocol violates in one cell, so a family of eleven invariants still fits a page)."""
    availability = [name.replace("_", " ") for name in design.availability]
    safe = any(row.safe_progress is not None for row in design.protocols)
    columns = ["protocol", "verdict", "violating runs (95% Wilson)", "violating runs per invariant",
               *(f"{name} (per run)" for name in availability), design.progress_label,
               *(["applied safely / planned"] if safe else [])]
    rows = []
    for row in design.protocols:
        found = ", ".join(f"{name} {row.by_invariant[name].violating_runs}" for name in design.invariants
                          if row.by_invariant[name].violating_runs) or "none"
        counted = [f"{row.availability[name].count} ({row.availability[name].per_run})"
                   for name in design.availability]
        progress = share_text(row.progress.share) if row.progress else "n/a"
        verdict = row.verdict
        if verdict.startswith("violates safety"):
            verdict = "VIOLATES SAFETY" + verdict[len("violates safety"):]
        elif verdict != "no safety violation found":
            verdict = verdict.upper()
        safely = [share_text(row.safe_progress.share) if row.safe_progress is not None else "n/a"] if safe else []
        share = row.violating_runs.share if row.violating_runs is not None else None
        rows.append([row.protocol, verdict, share_text(share), found, *counted, progress, *safely])
    return columns, rows


def matrix_rows(design: DesignRow) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """The verdict matrix with one row per scenario or minimal counterexample and one column per protocol
    (so many counterexamples make it longer, never wider): columns, rows, and each cell's class."""
    matrix = design.matrix
    shown = {e.name: f"{e.shown_finding} under {', '.join([e.protocol, *others])}"
             for e, others in shown_examples(design)}
    names = {e.name for e in design.counterexamples}
    rows, classes = [], []
    for column in matrix.columns:
        if column in names and column not in shown:
            continue  # the same order as its identical-results group's first protocol's
        cells = [matrix.cells[r, column] for r in matrix.rows]
        label = f"minimal order: {shown[column]}" if column in shown else f"scenario {column}"
        rows.append([label, *(cell.text for cell in cells)])
        classes.append(["", *("bad" if cell.violated else "good" for cell in cells)])
    return ["scenario or counterexample", *matrix.rows], rows, classes


def sorted_claims(design: DesignRow) -> tuple[list[JsonObject], list[JsonObject]]:
    """The claims that fail (shown first, each in full) and those that hold (folded)."""
    return [c for c in design.claims if not c.get("holds")], [c for c in design.claims if c.get("holds")]


#: What a group of protocols with identical results shares (``sim.search.pipeline.identical_groups``).
IDENTICAL_WORDS = "equal counts and measures, and the same minimal counterexample per invariant"


def group_heading(group: Sequence[str]) -> str:
    """The heading of one group's section: ``a, b: identical results on this workload``."""
    return f"{', '.join(group)}: identical results on this workload"


def shown_examples(design: DesignRow) -> list[tuple[CounterexampleRow, list[str]]]:
    """The counterexamples a report shows, each with the protocols of its identical-results group it also
    stands for (``design.identical``): a group shows its first protocol's counterexamples once, and none of
    the others' (they are the same orders)."""
    grouped = {label: group for group in design.identical for label in group}
    out = []
    for example in design.counterexamples:
        group = grouped.get(example.protocol, (example.protocol,))
        if example.protocol == group[0]:
            out.append((example, list(group[1:])))
    return out


Example = TypeVar("Example")
#: What :func:`group_advice` reads of a counterexample: its protocol, its finding and its advice.
Advised = Callable[[Example], tuple[str, str, AdviceDocument | None]]


def group_advice(examples: Sequence[Example], example: Example, others: Sequence[str],
                 read: Advised[Example]) -> tuple[list[str], list[Example]]:
    """The advice of a group's other protocols for ``example``'s finding: the labels whose advice makes the
    same changes as ``example``'s, and the counterexamples whose advice asks for other changes."""
    same, differing = [], []
    _, finding, mine = read(example)
    for other in examples:
        protocol, found, theirs = read(other)
        if protocol not in others or found != finding:
            continue
        if _changes(mine) == _changes(theirs):
            same.append(protocol)
        else:
            differing.append(other)
    return same, differing


def _changes(advice: AdviceDocument | None) -> tuple[dict[str, str] | None, bool | None]:
    return (None, None) if advice is None else (advice.changes, advice.fixes)


def advised(example: CounterexampleRow) -> tuple[str, str, AdviceDocument | None]:
    """A review's counterexample as :func:`group_advice` reads it."""
    return example.protocol, example.shown_finding, example.advice


def identical_lines(design: DesignRow) -> list[str]:
    """One line per group of protocols with identical results on the design's workload."""
    return [f"{group_heading(group)} ({IDENTICAL_WORDS}; shown once, under {group[0]})"
            for group in design.identical]


def _runs(count: int) -> str:
    return f"{count} run" if count == 1 else f"{count} runs"


def advice_verdict(advice: AdviceDocument | None) -> str:
    """``fix`` (proved by exhaustive search: the invariant at every where), ``fixes this finding only`` (the
    finding is gone within the bound, another finding of its invariant remains), ``not proved`` (clean on
    every seed, the proof cut short),
    ``partial improvement`` (runs or an exhaustive order still violate), ``unverified`` (a sample only), or
    ``none`` when nothing was recommended."""
    if advice is None or not advice.recommended:
        return "none"
    status = advice.proof.status if advice.proof is not None else None
    if advice.runs_violating_it == 0 and (status == "elsewhere" or advice.runs_violating_invariant):
        return "fixes this finding only"
    if advice.fixes is True:
        return "fix"
    if advice.fixes is False:
        return "partial improvement"
    if status == "unproved" and advice.runs_violating_it == 0:
        return "not proved"
    return "unverified"


def proof_words(proof: AdviceProof | None, invariant: str) -> str:
    """What the exhaustive search of a recommendation showed, in words ("" when none ran)."""
    if proof is None:
        return ""
    bound = proof.max_events
    if proof.status == "proved":
        if proof.exhausted:
            return f"proved by exhaustive search: no order of any length violates {invariant}"
        return f"proved by exhaustive search within {bound} events"
    if proof.status == "elsewhere" and proof.remains is not None:
        remains = proof.remains
        count = remains.shortest_events
        return (f"exhaustive search: no order of up to {proof.within_events} events shows {invariant}, but "
                f"{remains.finding} remains in {count} event{'' if count == 1 else 's'} under it "
                f"({', '.join(remains.order)}): a fix of this finding, not of the invariant")
    if proof.status == "disproved":
        shortest = proof.shortest_events
        return (f"disproved by exhaustive search: {invariant} in {shortest} event{'' if shortest == 1 else 's'} "
                "under it "
                f"({', '.join(proof.order or ())})")
    return (f"not proved: exhaustive search cleared orders of up to {proof.within_events} of its {bound} "
            f"events before {proof.stopped} stopped it")


def advice_sentence(advice: AdviceDocument, invariant: str, availability: str = "availability findings") -> str:
    """What the advisor's recommendation buys and costs, on the seeds it was measured on (plain text).

    A count is compared only with a count of the same seeds: verified advice states the sweep's own
    seeds, unverified advice its sample, and never a "was" it did not measure."""
    parts = []
    verified = advice.verified_seeds or 0
    if advice.runs_violating_it is not None and verified:
        start = advice.seed_start
        span = f"seeds {start}..{start + verified - 1}"
        whole = "" if verified >= (advice.seeds or verified) else f" of the {advice.seeds} the sweep ran"
        where = f"on the sweep's own {span}{whole} and the exported order"
        was = advice.runs_violating_it_before
        parts.append(f"{invariant} in {advice.runs_violating_it} of {verified} runs"
                     + ("" if was is None else f" (was {was})"))
        if advice.runs_violating_invariant is not None:
            parts.append(f"{_runs(advice.runs_violating_invariant)} violating {advice.invariant} at any where")
        if advice.violating_runs is not None:
            parts.append(f"{_runs(advice.violating_runs)} violating any safety invariant")
    else:
        where = f"in a {advice.sample_seeds}-seed sample (not verified on the sweep's seeds)"
        if advice.sample_runs_violating_it is not None:
            parts.append(f"{invariant} in {_runs(advice.sample_runs_violating_it)}")
        if advice.sample_violating_runs is not None:
            parts.append(f"{_runs(advice.sample_violating_runs)} violating any safety invariant")
    parts.append(f"{advice.availability_per_run} {availability} per run")
    if advice.progress_share is not None:
        parts.append(f"work done {advice.progress_share:.0%}")
    if advice.safe_progress_share is not None:
        parts.append(f"applied safely {advice.safe_progress_share:.0%} (what the advisor's cost ranks by)")
    stopped = f"; {advice.stopped} stopped the advisor" if advice.stopped else ""
    return f"{where}: " + ", ".join(parts) + stopped


def advice_line(advice: AdviceDocument | None, invariant: str, availability: str, code: str = "") -> str:
    """The advisor's answer in one line: a proved fix, a seed-clean change not proved, a partial improvement
    (with its residual or its disproof), or none -- then the runner-up."""
    if advice is None:
        return "advisor not run"
    if not advice.recommended:
        if advice.beyond_protocol:
            return advice.beyond_protocol
        stopped = f" ({advice.stopped} stopped the search)" if advice.stopped else ""
        keeping = (" (never weakening what the design set: " + ", ".join(f"{code}{k}={v}{code}"
                                                                          for k, v in advice.kept.items()) + ")"
                   if advice.kept else "")
        return f"no change of up to two knobs{keeping} removes it from its order{stopped}"
    if advice.where:  # advice on one finding: its counts and its proof name the finding
        invariant = f"{advice.invariant or invariant} @ {advice.where}"
    changes = ", ".join(f"{k}={v}" for k, v in advice.changes.items())
    change = f"{code}{changes}{code} (giving {code}{advice.recommended}{code})"
    cost = advice_sentence(advice, invariant, availability)
    proof = proof_words(advice.proof, invariant)
    proof = f"; {proof}" if proof else ""
    verdict = advice_verdict(advice)
    others = advice.order_still_shows or ()
    if others:
        proof += (f"; under it the exported order still shows {', '.join(others)} (each a finding with its own "
                  "advice)")
    if verdict == "fix":
        line = f"smallest fix: {change}; verified {cost}{proof}"
    elif verdict == "fixes this finding only":
        line = f"removes this finding, not the invariant: {change}; verified {cost}{proof}"
    elif verdict == "not proved":
        line = f"no violation in {advice.verified_seeds} seeds (not proved): {change}; {cost}{proof}"
    elif verdict == "partial improvement":
        line = f"partial improvement, not a fix (runs or an order still violate {invariant}): {change}; {cost}{proof}"
    else:
        line = f"unverified proposal: {change}; {cost}{proof}"
    return line + _runner_up_words(advice.runner_up, invariant, availability, code)


def _runner_up_words(runner: RunnerUp | None, invariant: str, availability: str, code: str) -> str:
    if runner is None:
        return ""
    changes = ", ".join(f"{k}={v}" for k, v in runner.changes.items())
    runs = runner.runs_violating_it if runner.runs_violating_it is not None else runner.sample_runs_violating_it
    seeds = runner.verified_seeds or runner.sample_seeds
    work = runner.safe_progress_share  # the work done safely the advisor ranks by (None: not told apart)
    sampled = "" if runner.verified_seeds else " sampled"  # not the seeds the recommendation was verified on
    parts = [runner.verdict, f"{invariant} in {runs} of {seeds}{sampled} runs",
             f"{runner.availability_per_run:.2f} {availability} per run"]
    if work is not None:
        parts.append(f"work done safely {work:.0%}")
    proof = proof_words(runner.proof, invariant)
    if proof:
        parts.append(proof)
    return f". Runner-up: {code}{changes}{code} ({'; '.join(parts)})"


def advice_text(advice: AdviceDocument | None, invariant: str, availability: Sequence[str]) -> str:
    """:func:`advice_line` as the report writes it: changes and protocols in backticks, the availability
    columns (``availability``) joined in words."""
    return advice_line(advice, invariant, " + ".join(a.replace("_", " ") for a in availability), "`")


def proof_text(example: CounterexampleRow) -> str:
    """How minimal a counterexample is: proved shortest, 1-minimal, or stopped by a named limit."""
    if example.shortest_proved:
        return "proved shortest"
    if example.one_minimal:
        return "1-minimal (not proved shortest)"
    return f"not minimal: stopped by {example.shrink_end}"


def coverage_table(design: DesignRow) -> tuple[list[str], list[list[str]]]:
    """Per protocol: distinct behaviours, goals never reached, and the blast radius per 10,000 runs."""
    columns = ["protocol", "distinct behaviours", "coverage goals", "blast radius per 10,000 runs"]
    rows = []
    for row in design.coverage:
        goals = ", ".join(f"{goal}: {'NEVER' if goal in row.never else count}"
                          for goal, count in row.goals.items()) or "none declared"
        radius = "; ".join(f"{kind.replace('_', ' ')} {_rate(v.rate.value)} [{_rate(v.rate.low)}, "
                           f"{_rate(v.rate.high)}] ({v.count})" for kind, v in row.blast_radius.kinds.items()) or "none"
        rows.append([row.protocol, str(row.distinct_behaviours), goals, radius])
    return columns, rows


def map_findings_per_run(point: MapPoint) -> str:
    """A map point's availability findings per run, or "-" when no run measured it (a budget stopped it)."""
    if not point.runs:
        return "-"
    return f"{sum(point.availability_per_run.values()):.2f}"


def map_rows(document: MapDocument) -> tuple[list[str], list[list[str]]]:
    """One row per group of protocols that behave alike: its verdict within the bound, shortest violations,
    costs, and the protocols it stands for."""
    columns = ["protocol (and those alike)", "verdict", "shortest violations", "violating runs", "findings per run"]
    alike: dict[str, list[str]] = {}
    for point in document.protocols:
        alike.setdefault(point.representative, []).append(point.protocol)
    rows = []
    for point in document.protocols:
        if point.representative != point.protocol:
            continue
        shortest = ", ".join(f"{name} {_events_or_unknown(v.shortest_events)}" for name, v in point.invariants.items()
                             if v.status == "violated") or "-"
        share = point.violating_share
        others = [p for p in alike[point.protocol] if p != point.protocol]
        rows.append([point.protocol + (f" (and {len(others)} alike: {'; '.join(others[:3])}"
                                       f"{'...' if len(others) > 3 else ''})" if others else ""),
                     map_verdict(point), shortest, "-" if share is None else f"{share.value:.0%}",
                     map_findings_per_run(point)])
    return columns, rows


def _events_or_unknown(events: int | None) -> str:
    """A shortest violation's length, or ``?`` where a partial document gives none."""
    return "?" if events is None else str(events)


#: What stopped a map's search of one design, in words (a design it left not decided).
MAP_ENDS = {"--budget": "the budget stopped its search", "state_limit": "the state limit stopped its search",
            "memory_limit": "the memory limit stopped its search"}


def map_verdict(point: MapPoint) -> str:
    """A map point's verdict within the bound, and for a design not decided what stopped its search."""
    if point.status != "not decided":
        return point.status
    end = point.end or ""
    return f"not decided ({MAP_ENDS.get(end, f'its search ended: {end}')})"


def map_not_decided(document: MapDocument) -> list[str]:
    """The map's designs not decided within the bound (older documents: the unsafe apart not violated)."""
    if document.not_decided is not None:
        return list(document.not_decided)
    return [label for label in document.unsafe_apart if _status(document, label) == "not decided"]


def map_violated(document: MapDocument) -> list[str]:
    """The map's designs (one per group) shown violating an invariant within the bound."""
    if document.violated_apart is not None:
        return list(document.violated_apart)
    return [label for label in document.unsafe_apart if _status(document, label) == "violated"]


def _status(document: MapDocument, label: str) -> str | None:
    point = document.point(label)
    return None if point is None else point.status


def map_lines(document: MapDocument) -> list[str]:
    """The map in sentences: minimal safe designs, the Pareto front, each certificate, each finding."""
    bound = "?" if document.max_events is None else document.max_events
    lines = [f"Every combination of {', '.join(document.knobs)} explored exhaustively within {bound} events.",
             f"Minimal safe designs: {', '.join(document.minimal_safe) or 'none'}.",
             f"Pareto front among the designs proved safe (cost: findings per run, work not done): "
             f"{', '.join(document.pareto_front) or 'none'}."]
    violated, undecided = map_violated(document), map_not_decided(document)
    if violated:
        lines.append(f"Violated within the bound (drawn apart, never on the front): {', '.join(violated)}.")
    if undecided:
        lines.append("Not decided within the bound (a limit stopped the search; never called safe, never on the "
                     f"front): {', '.join(undecided)}.")
    if document.held:
        lines.append("Held fixed, not walked (every statement of the map assumes them): "
                     + ", ".join(f"{k}={v}" for k, v in document.held.items()) + ".")
    lines += [f"What if we drop this? {line}" for line in what_if_lines(document)]
    lines += [f"Certificate: {c.words}" for c in document.certificates]
    lines += [f"Finding: {f.safe} is safe for {f.invariant} but the stronger {f.stronger_violates} "
              f"violates it: {' ; '.join(f.witness or ())}" for f in document.monotonicity_findings]
    return lines


def _rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"


def coverage_words(design: DesignRow) -> str:
    """The coverage section's paragraph: what its numbers mean, and any goal never reached."""
    never = sorted({(g, r.protocol) for r in design.coverage for g in r.never})
    text = ("Distinct behaviours are the run signatures a sweep saw (estimated); where the saturation curve "
            "flattens, more seeds stopped finding new behaviour. The blast radius counts what violating runs did "
            "to the world: edits overwritten, steps applied twice, objects duplicated or orphaned (rate and 95% "
            "interval per 10,000 runs, count in brackets).")
    if never:
        text += " Warning: goals never reached -- " + "; ".join(f"{g} under {p}" for g, p in never) + "."
    return text


def section_rows(section: JsonObject) -> tuple[list[str], list[list[str]]]:
    """A family section's simulated metrics: a row per metric, a column per protocol, value [interval]."""
    simulated = json_object(section.get("metrics"))
    protocols = list(simulated)
    rows = []
    metrics = list(json_object(next(iter(simulated.values())))) if protocols else []
    for metric in metrics:
        row = [metric]
        for protocol in protocols:
            cell = json_object(json_object(simulated[protocol]).get(metric))
            value, low, high = (json_number(cell.get(key)) for key in ("value", "ci_low", "ci_high"))
            if value is None:
                row.append("n/a")
            elif low is None or high is None:  # one run has no interval
                row.append(f"{value:,.2f}")
            else:
                row.append(f"{value:,.2f} [{low:,.2f}, {high:,.2f}]")
        rows.append(row)
    return ["metric", *protocols], rows


def what_if_lines(document: MapDocument) -> list[str]:
    """"What if we drop this?": per minimal safe design, each one-knob change that breaks it, with the
    invariant and the length of its shortest witness order (or that no neighbour in the map breaks it)."""
    lines = []
    for design, found in (document.nearest_unsafe or {}).items():
        if not found:
            lines.append(f"{design}: no one-knob neighbour in the map breaks it")
            continue
        for entry in found:
            lines.append(f"{design}: {entry.knob} {entry.before} -> {entry.to} ({entry.protocol}) breaks "
                         f"{entry.invariant} in {entry.shortest_events} events: {' '.join(entry.witness)}")
    return lines
