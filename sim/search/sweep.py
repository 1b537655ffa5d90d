"""Seed sweeps: N seeds x M protocols, in parallel, deterministic, streaming.

Run ``i`` of a sweep that starts at ``seed_start`` uses seed
``seed_start + i``, and its order depends only on (workload, seed), never on
the protocol, the worker count or the order in which runs finish.  Runs are
cut into chunks of consecutive seeds; workers return each chunk's rows and
the first violating order per (protocol, invariant).  Chunks are consumed in
run order (``imap``, not completion order), so everything a sweep reports is
identical whatever the worker count.  Only aggregates and one order per
distinct violation are kept, so memory does not grow with the number of
seeds unless the caller asks for every row.

The sweep knows a family only through its contract: ``generate``,
``replay``, ``checks`` and ``measure``.
"""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import pandas as pd

from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.oracle import evaluate

#: Seeds per task handed to a worker.
CHUNK_SEEDS = 250
#: The largest sweep a single call accepts (a limit on everything).
MAX_SEEDS = 10_000_000


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


@dataclass
class Found:
    """The first run (lowest index) that violated an invariant under a protocol."""

    protocol: str
    invariant: str
    run: int
    seed: int
    order: tuple[Any, ...]


@dataclass
class ProtocolTally:
    """Counts over every run of one protocol.  ``by_invariant`` counts violating *runs*."""

    invariants: tuple[str, ...]
    availability: tuple[str, ...]
    runs: int = 0
    violating_runs: int = 0
    by_invariant: dict[str, int] = field(default_factory=dict)
    counted: dict[str, int] = field(default_factory=dict)
    measures: dict[str, float] = field(default_factory=dict)
    events: int = 0

    def __post_init__(self) -> None:
        self.by_invariant = {n: self.by_invariant.get(n, 0) for n in self.invariants}
        self.counted = {n: self.counted.get(n, 0) for n in self.availability}

    def add(self, row: dict[str, Any], measure_names: tuple[str, ...]) -> None:
        self.runs += 1
        self.violating_runs += bool(row["violated"])
        self.events += row["events"]
        for name in self.invariants:
            self.by_invariant[name] += bool(row[f"violations_{name}"])
        for name in self.availability:
            self.counted[name] += row[name]
        for name in measure_names:
            self.measures[name] = self.measures.get(name, 0) + row.get(name, 0)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"runs": self.runs, "violating_runs": self.violating_runs,
                               "violating_runs_by_invariant": dict(self.by_invariant)}
        out.update(self.counted)
        out["measures"] = dict(self.measures)
        return out


@dataclass
class SweepSummary:
    """Aggregates of a sweep plus the first order of each distinct violation."""

    family: str
    workload: str
    seed_start: int
    seeds: int
    protocols: list[str]
    tallies: dict[str, ProtocolTally]
    found: dict[tuple[str, str], Found]
    seeds_done: int = 0
    stopped: str | None = None  # the budget's name if it stopped the sweep early

    @property
    def runs(self) -> int:
        return sum(t.runs for t in self.tallies.values())

    @property
    def violating_runs(self) -> int:
        return sum(t.violating_runs for t in self.tallies.values())

    def by_invariant(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for tally in self.tallies.values():
            for name, count in tally.by_invariant.items():
                out[name] = out.get(name, 0) + count
        return out


def run_row(family: Family, workload: Workload, protocol: Protocol, seed: int, index: int
            ) -> tuple[dict[str, Any], tuple[Any, ...], tuple[str, ...]]:
    """One run of a sweep: (flat row, valid order, safety invariants violated)."""
    order = family.generate(workload, seed)
    result = evaluate(family, workload.base, protocol, order)
    replay, report = result.replay, result.report
    valid = replay.valid_order()
    row: dict[str, Any] = {"run": index, "seed": seed, "protocol": protocol.label, "events": len(valid),
                           "end": replay.end.reason}
    counts = {name: 0 for name in family.safety_invariants}
    for violation in report.safety_violations:
        counts[violation.invariant] += 1
    row.update({f"violations_{k}": v for k, v in counts.items()})
    for spec in family.checks:
        if not spec.safety:
            row[spec.column] = sum(1 for r in report.results if r.name == spec.name for _ in r.violations)
    row["violated"] = bool(result.violated)
    row.update(family.measure(replay))
    return row, valid, result.violated


# Worker state, set once per process by the pool initialiser.
_STATE: dict[str, Any] = {}


def _init_worker(family: Family, workload: Workload, protocols: list[Protocol]) -> None:
    _STATE.update(family=family, workload=workload, protocols=protocols)


def _run_chunk(task: tuple[int, int, int, bool]) -> tuple[list[dict], list[tuple[str, str, int, int, tuple]]]:
    first_index, count, seed_start, keep_rows = task
    family, workload, protocols = _STATE["family"], _STATE["workload"], _STATE["protocols"]
    rows, firsts = [], []
    seen: set[tuple[str, str]] = set()
    for index in range(first_index, first_index + count):
        seed = seed_start + index
        for protocol in protocols:
            row, order, violated = run_row(family, workload, protocol, seed, index)
            rows.append(row)
            for invariant in violated:
                if (protocol.label, invariant) not in seen:
                    seen.add((protocol.label, invariant))
                    firsts.append((protocol.label, invariant, index, seed, order))
    return rows, firsts


def iter_chunks(family: Family, workload: Workload, protocols: list[Protocol], seeds: int, seed_start: int,
                workers: int, keep_rows: bool) -> Iterator[tuple[list[dict], list]]:
    tasks = [(i, min(CHUNK_SEEDS, seeds - i), seed_start, keep_rows) for i in range(0, seeds, CHUNK_SEEDS)]
    if workers <= 1 or len(tasks) <= 1:
        _init_worker(family, workload, protocols)
        for task in tasks:
            yield _run_chunk(task)
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with context.Pool(workers, initializer=_init_worker, initargs=(family, workload, protocols)) as pool:
        yield from pool.imap(_run_chunk, tasks)


def sweep(family: Family, workload: Workload, protocols: list[Protocol | str], seeds: int, seed_start: int = 0,
          workers: int | None = None, progress: Callable[[int, int], None] | None = None,
          keep_rows: bool = False, deadline: Deadline = NO_DEADLINE) -> tuple[SweepSummary, list[dict] | None]:
    """Run every (seed, protocol); return the summary (and every row if asked).

    ``progress(done_seeds, total_seeds)`` is called after each chunk.  When
    ``deadline`` expires the sweep ends after the chunk in hand, with
    ``stopped`` set and ``seeds_done`` the seeds actually run (a prefix).
    """
    protocols = [family.parse_protocol(p) for p in protocols]
    if not 0 < seeds <= MAX_SEEDS:
        raise InputError(f"--seeds must be between 1 and {MAX_SEEDS}, got {seeds}")
    if seed_start < 0:
        raise InputError(f"--seed-start must be 0 or more, got {seed_start}")
    availability = family.availability_columns
    tallies = {p.label: ProtocolTally(family.safety_invariants, availability) for p in protocols}
    found: dict[tuple[str, str], Found] = {}
    all_rows: list[dict] | None = [] if keep_rows else None
    measure_names: tuple[str, ...] | None = None
    fixed = {"run", "seed", "protocol", "events", "end", "violated", *availability,
             *(f"violations_{n}" for n in family.safety_invariants)}
    done = 0
    for rows, firsts in iter_chunks(family, workload, protocols, seeds, seed_start, workers or default_workers(),
                                    keep_rows):
        for row in rows:
            if measure_names is None:
                measure_names = tuple(k for k in row if k not in fixed)
            tallies[row["protocol"]].add(row, measure_names)
        for label, invariant, index, seed, order in firsts:
            key = (label, invariant)
            if key not in found:  # chunks arrive in run order: the first is the lowest index
                found[key] = Found(label, invariant, index, seed, order)
        if all_rows is not None:
            all_rows.extend(rows)
        done += len(rows) // max(1, len(protocols))
        if progress:
            progress(done, seeds)
        if deadline.expired() and done < seeds:
            stopped = deadline.name
            deadline.note("sweep")
            break
    else:
        stopped = None
    summary = SweepSummary(family.name, workload.name, seed_start, seeds, [p.label for p in protocols], tallies, found,
                           done, stopped)
    return summary, all_rows


def sweep_frame(family: Family, workload: Workload, protocols: list[Protocol | str], seeds: int,
                seed_start: int = 0, workers: int | None = None) -> pd.DataFrame:
    """A sweep as a DataFrame, one row per run: seed, protocol, violations per invariant,
    availability counts (spurious rejections...), the family's per-run measures."""
    _, rows = sweep(family, workload, protocols, seeds, seed_start, workers, keep_rows=True)
    return pd.DataFrame(rows)
