"""What ``fencesim fuzz`` runs, for any family: sweep, shrink each distinct violation,
advise, judge the family's claims.  Writing files is the report layer's job.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from sim.core.family import Family
from sim.core.findings import finding_id
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.search.advisor import Advice, Tallies
from sim.search.advisor import advise as run_advisor
from sim.search.budget import Deadline, work_of
from sim.search.claims_evidence import settle
from sim.search.options import SearchOptions
from sim.search.shrink import ShrinkResult, shrink
from sim.search.sweep import default_workers, run_sweep
from sim.search.tally import Found, SweepSummary


@dataclass
class Counterexample:
    """One finding (protocol, invariant, where: :mod:`sim.core.findings`): where the sweep first saw it,
    shrunk."""

    protocol: Protocol
    invariant: str
    seed: int
    run: int
    found_order: tuple[Any, ...]
    shrunk: ShrinkResult
    advice: Advice | None = None
    seconds: float = 0.0
    where: str = ""

    @property
    def events(self) -> tuple[Any, ...]:
        return self.shrunk.events

    @property
    def finding(self) -> str:
        return finding_id(self.invariant, self.where)


@dataclass
class FuzzResult:
    family: Family
    workload: Workload
    protocols: list[Protocol]
    summary: SweepSummary
    counterexamples: list[Counterexample] = field(default_factory=list)
    claims: list[dict] = field(default_factory=list)
    sweep_seconds: float = 0.0


def identical_groups(result: FuzzResult) -> list[list[str]]:
    """Groups (two or more labels, in the order the protocols were given) of protocols whose results on the
    workload are *identical*: a report shows one section for a group instead of repeating it per protocol.

    Two protocols' results are identical when, over the same seeds,

    * their sweep tallies are equal (:meth:`~sim.search.tally.ProtocolTally.to_json`): runs, violating runs,
      violating runs per invariant, every availability count, every summed measure (work done, applied
      safely, verdicts, each ``fired_<knob>``), coverage and blast radius; and
    * they violate the same invariants with the same counterexamples: per invariant, the same first violating
      seed and run and the same minimal order, event for event.

    The advisor's answer is not compared: it starts from each protocol, so it names a different design."""
    keys: dict[str, tuple[str, tuple]] = {}
    for protocol in result.protocols:
        tally = result.summary.tallies.get(protocol.label)
        if tally is None or protocol.label in keys:
            continue
        examples = tuple(sorted((e.finding, e.seed, e.run, tuple(str(event) for event in e.events))
                                for e in result.counterexamples if e.protocol.label == protocol.label))
        keys[protocol.label] = (json.dumps(tally.to_json(), sort_keys=True, default=str), examples)
    groups: dict[tuple[str, tuple], list[str]] = {}
    for label, key in keys.items():
        groups.setdefault(key, []).append(label)
    return [members for members in groups.values() if len(members) > 1]


#: Share of a budget the sweep may use; shrinking, export and the advisor get the rest.
SWEEP_SHARE = 0.5

def fuzz(family: Family, workload: Workload, protocols: Sequence[Protocol | str], options: SearchOptions) -> FuzzResult:
    """Sweep ``options.seeds`` seeds per protocol, shrink each distinct violation, advise on each.

    ``options.deadline`` bounds the whole run: the sweep stops early (after at most ``SWEEP_SHARE`` of the
    budget, so what it found is still shrunk), shrinking returns the best order so far, the advisor prices
    and verifies fewer candidates or is skipped -- each says so.  The advisor verifies its fixes on the
    seeds this sweep ran, reusing the sweep's own tallies.  The sweep reads the rest of ``options``
    (:func:`~sim.search.sweep.run_sweep`).
    """
    parsed = [family.parse_protocol(p) for p in protocols]
    deadline = options.deadline
    started = time.monotonic()
    summary, _ = run_sweep(family, workload, parsed, options.replace(deadline=sweep_deadline(deadline)))
    result = FuzzResult(family, workload, parsed, summary, sweep_seconds=time.monotonic() - started)
    by_label = {p.label: p for p in parsed}
    tallies = Tallies(family, workload, options.seed_start, summary.seeds_done, options.workers,
                      known={p: summary.tallies[p.label] for p in parsed})
    found_items = sorted(summary.found.items())
    for position, ((label, finding), found) in enumerate(found_items):
        began = time.monotonic()
        if options.shrink_progress is not None:
            options.shrink_progress(f"{label} / {finding}", len(found.order))
        # Under a budget each violation left gets an equal share of what remains (to shrink it, then to
        # advise on it), so none goes unshrunk.
        share = deadline if deadline.end is None else deadline.within(
            deadline.remaining() / (len(found_items) - position), deadline.name)
        example = _counterexample(result, by_label[label], found, options, share, tallies)
        example.seconds = time.monotonic() - began
        result.counterexamples.append(example)
    result.claims = settle(family, family.claims({label: t.to_json() for label, t in summary.tallies.items()}, parsed))
    return result


def _counterexample(result: FuzzResult, protocol: Protocol, found: Found, options: SearchOptions,
                    share: Deadline, tallies: Tallies) -> Counterexample:
    """One finding shrunk within ``share`` of the budget, then advised on (if the options ask)."""
    family, workload = result.family, result.workload
    shrunk = shrink(family, workload, protocol, found.order, found.finding, deadline=share,
                    max_seconds=options.shrink_seconds)
    example = Counterexample(protocol, found.invariant, found.seed, found.run, found.order, shrunk,
                             where=found.where)
    if options.advise and share.expired():
        options.deadline.note("advisor")
    elif options.advise:
        example.advice = run_advisor(family, workload, protocol, found.finding, shrunk.events, deadline=share,
                                     workers=options.workers or default_workers(), seed_start=options.seed_start,
                                     seeds=result.summary.seeds_done, tallies=tallies,
                                     proof_depth=options.proof_depth)
    return example


def sweep_deadline(deadline: Deadline) -> Deadline:
    """What the sweep may spend of a budget: ``SWEEP_SHARE`` of the whole budget, less what an interrupted
    run already spent (``deadline.spent_before``), so a resumed run ends its sweep where the uninterrupted
    one would have."""
    if deadline.end is None:
        return deadline
    whole = deadline.remaining() + deadline.spent_before
    return deadline.within(max(0.0, whole * SWEEP_SHARE - deadline.spent_before), deadline.name)


def replay_orders(family: Family, scenario: Any, jobs: Sequence[tuple[Protocol, tuple[Any, ...]]],
                  workers: int | None = None, max_work: int | None = None) -> list[tuple[str, ...] | None]:
    """The safety invariants each ``(protocol, events)`` violates when replayed on ``scenario``, in order;
    many jobs run on ``workers`` processes (a baseline's thousands of entries).  ``max_work``: the replay
    work (:func:`~sim.search.budget.work_of`) to spend at most, in job order -- the jobs past it are None,
    the same ones on every machine."""
    from sim.search.oracle import evaluate

    workers = workers or default_workers()
    results: list[tuple[str, ...] | None] = [None] * len(jobs)
    if max_work is not None:
        spent, kept = 0, 0
        for _, events in jobs:
            spent += work_of(1, len(events))
            if spent > max_work and kept:
                break
            kept += 1
        jobs = list(jobs)[:kept]
    if workers <= 1 or len(jobs) < REPLAY_PARALLEL_FROM or not _can_fork():
        for index, (protocol, events) in enumerate(jobs):
            results[index] = evaluate(family, scenario, protocol, events).violated
        return results
    from sim.search.workers import Workers

    _JOBS.update(family=family, scenario=scenario, jobs=list(jobs))  # the forked workers inherit them
    try:
        with Workers(workers) as pool:
            for index, violated in enumerate(pool.imap(_replay_job, range(len(jobs)), chunksize=REPLAY_BATCH)):
                results[index] = violated
    finally:
        _JOBS.clear()
    return results


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


#: Jobs below this count are replayed in this process (a pool costs more than it saves); jobs per batch.
REPLAY_PARALLEL_FROM = 400
REPLAY_BATCH = 50
_JOBS: dict[str, Any] = {}


def _replay_job(index: int) -> tuple[str, ...]:
    from sim.search.oracle import evaluate

    protocol, events = _JOBS["jobs"][index]
    return evaluate(_JOBS["family"], _JOBS["scenario"], protocol, events).violated
