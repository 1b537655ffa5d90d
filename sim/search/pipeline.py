"""What ``fencesim fuzz`` runs, for any family: sweep, shrink each distinct violation,
advise, judge the family's claims.  Writing files is the report layer's job.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.search.advisor import Advice, advise as run_advisor
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.shrink import SHRINK_SECONDS_DEFAULT, ShrinkResult, shrink
from sim.search.sweep import SweepState, SweepSummary, sweep


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
    seconds: float = 0.0

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
    sweep_seconds: float = 0.0


#: Share of a budget the sweep may use; shrinking, export and the advisor get the rest.
SWEEP_SHARE = 0.5

def fuzz(family: Family, workload: Workload, protocols: Sequence[Protocol | str], seeds: int, seed_start: int = 0,
         workers: int | None = None, progress: Callable[[int, int], None] | None = None,
         advise: bool = True, deadline: Deadline = NO_DEADLINE,
         shrink_seconds: float | None = SHRINK_SECONDS_DEFAULT, backend: str = "local",
         scheduler: str | None = None, resume: SweepState | None = None,
         checkpoint: Callable[[SweepState], None] | None = None,
         shrink_progress: Callable[[str, int], None] | None = None) -> FuzzResult:
    """Sweep ``seeds`` seeds per protocol, shrink each distinct violation, advise on each.

    ``deadline`` bounds the whole run: the sweep stops early (after at most
    ``SWEEP_SHARE`` of the budget, so what it found is still shrunk), shrinking
    returns the best order so far, the advisor prices fewer candidates or is
    skipped -- each says so.
    """
    protocols = [family.parse_protocol(p) for p in protocols]
    started = time.monotonic()
    # The sweep may spend SWEEP_SHARE of what is left, so the violations it finds still get shrunk.
    sweep_deadline = deadline if deadline.end is None else deadline.within(deadline.remaining() * SWEEP_SHARE,
                                                                           deadline.name)
    summary, _ = sweep(family, workload, protocols, seeds, seed_start, workers, progress=progress,
                       deadline=sweep_deadline,
                       backend=backend, scheduler=scheduler, resume=resume, checkpoint=checkpoint)
    result = FuzzResult(family, workload, protocols, summary, sweep_seconds=time.monotonic() - started)
    by_label = {p.label: p for p in protocols}
    found_items = sorted(summary.found.items())
    for position, ((label, invariant), found) in enumerate(found_items):
        protocol = by_label[label]
        began = time.monotonic()
        if shrink_progress is not None:
            shrink_progress(f"{label} / {invariant}", len(found.order))
        # Under a budget each violation left gets an equal share of what remains, so none goes unshrunk.
        share = deadline if deadline.end is None else deadline.within(
            deadline.remaining() / (len(found_items) - position), deadline.name)
        shrunk = shrink(family, workload, protocol, found.order, invariant, deadline=share,
                        max_seconds=shrink_seconds)
        example = Counterexample(protocol, invariant, found.seed, found.run, found.order, shrunk)
        if advise and deadline.expired():
            deadline.note("advisor")
        elif advise:
            example.advice = run_advisor(family, workload, protocol, invariant, shrunk.events, deadline=deadline)
        example.seconds = time.monotonic() - began
        result.counterexamples.append(example)
    result.claims = family.claims({label: t.to_json() for label, t in summary.tallies.items()}, protocols)
    return result
