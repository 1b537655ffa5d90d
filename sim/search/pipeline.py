"""What ``fencesim fuzz`` runs, for any family: sweep, shrink each distinct violation,
advise, judge the family's claims.  Writing files is the report layer's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.search.advisor import Advice, advise as run_advisor
from sim.search.shrink import ShrinkResult, shrink
from sim.search.sweep import SweepSummary, sweep


@dataclass
class Counterexample:
    """One distinct violation (protocol, invariant): where the sweep first saw it, shrunk."""

    protocol: Protocol
    invariant: str
    seed: int
    run: int
    found_order: tuple[Any, ...]
    shrunk: ShrinkResult
    advice: Advice | None = None

    @property
    def events(self) -> tuple[Any, ...]:
        return self.shrunk.events


@dataclass
class FuzzResult:
    family: Family
    workload: Workload
    protocols: list[Protocol]
    summary: SweepSummary
    counterexamples: list[Counterexample] = field(default_factory=list)
    claims: list[dict] = field(default_factory=list)


def fuzz(family: Family, workload: Workload, protocols: Sequence[Protocol | str], seeds: int, seed_start: int = 0,
         workers: int | None = None, progress: Callable[[int, int], None] | None = None,
         advise: bool = True) -> FuzzResult:
    """Sweep ``seeds`` seeds per protocol, shrink each distinct violation, advise on each."""
    protocols = [family.parse_protocol(p) for p in protocols]
    summary, _ = sweep(family, workload, protocols, seeds, seed_start, workers, progress=progress)
    result = FuzzResult(family, workload, protocols, summary)
    by_label = {p.label: p for p in protocols}
    for (label, invariant), found in sorted(summary.found.items()):
        protocol = by_label[label]
        shrunk = shrink(family, workload, protocol, found.order, invariant)
        example = Counterexample(protocol, invariant, found.seed, found.run, found.order, shrunk)
        if advise:
            example.advice = run_advisor(family, workload, protocol, invariant, shrunk.events)
        result.counterexamples.append(example)
    result.claims = family.claims({label: t.to_json() for label, t in summary.tallies.items()}, protocols)
    return result
