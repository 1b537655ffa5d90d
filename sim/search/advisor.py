"""The counterfactual advisor: the smallest change to the design under review that
removes a violation, and what it costs.

Starting from the protocol that was fuzzed, the advisor tries every change
of one knob, then of two, ... (up to ``ADVISOR_MAX_CHANGES``), where each
changed knob moves to a value of equal or higher rank in the family's knob
table: it never proposes dropping a mechanism the design has.  A candidate
*removes* the violation when the minimal counterexample replays under it
with no safety violation at all.  At the smallest number of changes that
has such candidates, the candidates are priced by a sample sweep of the same
workload beside the design's own -- runs still violating the invariant, runs
violating another invariant beyond what the design already did, work done,
availability findings (spurious rejections, human exceptions) per run -- and
the recommendation is the one that never shows the invariant in its sample,
then adds no new violation, then does the most work (the family's progress
share: steps applied, tasks completed -- a fix that applies nothing is no
fix), then has the fewest availability findings.  The
advice is what the search measured, not a claim of safety.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Sequence

from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.oracle import evaluate

#: How many knobs a proposal may change, seeds of the sample sweep that prices each
#: candidate, and how many candidates are priced.
ADVISOR_MAX_CHANGES = 2
ADVISOR_SAMPLE_SEEDS = 200
ADVISOR_CANDIDATES_PRICED = 6


@dataclass
class Advice:
    protocol: str
    invariant: str
    events: list[str]
    changes_needed: int | None  # knobs changed by the recommendation (None: nothing found)
    removed_by: list[str]  # every candidate at that size under which the counterexample is clean
    recommended: str | None
    changes: dict[str, Any] = field(default_factory=dict)
    availability_per_run: float | None = None
    progress_share: float | None = None
    sample_violating_runs: int | None = None  # runs of the sample violating any safety invariant
    sample_seeds: int = 0
    sample_runs_violating_it: int | None = None  # ... violating this invariant, under the recommendation
    sample_runs_violating_it_before: int | None = None  # ... and under the protocol as given
    priced: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        return dict(self.__dict__)


def candidates(protocol: Protocol, changes: int) -> list[Protocol]:
    """Protocols that change exactly ``changes`` knobs of ``protocol``, none to a lower rank."""
    table = protocol.table
    options: list[tuple[str, list[Any]]] = []
    for knob in table.knobs:
        current = protocol.knobs[knob.name]
        better = [v for v in knob.candidates() if v != current and knob.rank(v) >= knob.rank(current)]
        if better:
            options.append((knob.name, better))
    out = []
    for chosen in itertools.combinations(options, changes):
        names = [name for name, _ in chosen]
        for values in itertools.product(*(vals for _, vals in chosen)):
            given = {k: protocol.knobs[k] for k in table.names()}
            given.update(zip(names, values))
            out.append(table.build(given))
    return out


def rank_gain(candidate: Protocol, base: Protocol) -> float:
    return sum(k.rank(candidate.knobs[k.name]) - k.rank(base.knobs[k.name]) for k in base.table.knobs)


def advise(family: Family, workload: Workload, protocol: Protocol, invariant: str, events: Sequence[Any],
           sample_seeds: int = ADVISOR_SAMPLE_SEEDS, workers: int = 1,
           max_changes: int = ADVISOR_MAX_CHANGES, deadline: Deadline = NO_DEADLINE) -> Advice:
    """The smallest change to ``protocol`` under which ``events`` is clean, priced on the workload.

    ``deadline``: once it expires no further candidate is priced (at least one always is), and the
    advisor is noted among the phases the budget stopped."""
    from sim.search.sweep import sweep

    advice = Advice(protocol.label, invariant, [str(e) for e in events], None, [], None, sample_seeds=sample_seeds)
    for count in range(1, max_changes + 1):
        clean = [c for c in candidates(protocol, count)
                 if not evaluate(family, workload.base, c, events).violated]
        if not clean:
            continue
        clean.sort(key=lambda c: (rank_gain(c, protocol), c.label))
        advice.changes_needed = count
        advice.removed_by = [c.label for c in clean]
        base, _ = sweep(family, workload, [protocol], sample_seeds, workers=workers)
        before = base.tallies[protocol.label].by_invariant
        for candidate in clean[:ADVISOR_CANDIDATES_PRICED]:
            if advice.priced and deadline.expired():
                deadline.note("advisor")
                break
            summary, _ = sweep(family, workload, [candidate], sample_seeds, workers=workers)
            tally = summary.tallies[candidate.label]
            found = sum(tally.counted.values())
            progress = family.progress_share(tally.measures)
            advice.priced.append({
                "protocol": candidate.label, "changes": candidate.changes_from(protocol),
                "availability_per_run": round(found / max(1, tally.runs), 4),
                "progress_share": None if progress is None else round(progress, 4),
                "sample_violating_runs": tally.violating_runs,
                "sample_runs_violating_it": tally.by_invariant[invariant],
                "sample_new_violations": sum(max(0, n - before[name]) for name, n in tally.by_invariant.items()
                                             if name != invariant),
            })
        best = min(advice.priced, key=lambda p: (p["sample_runs_violating_it"] > 0, p["sample_runs_violating_it"],
                                                  p["sample_new_violations"] > 0, p["sample_new_violations"],
                                                  -(p["progress_share"] or 0.0), p["availability_per_run"],
                                                  p["protocol"]))
        advice.recommended = best["protocol"]
        advice.changes = best["changes"]
        advice.availability_per_run = best["availability_per_run"]
        advice.progress_share = best["progress_share"]
        advice.sample_violating_runs = best["sample_violating_runs"]
        advice.sample_runs_violating_it = best["sample_runs_violating_it"]
        advice.sample_runs_violating_it_before = before[invariant]
        break
    return advice
