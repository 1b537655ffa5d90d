"""Seed sweeps: N seeds x M protocols, in parallel, deterministic, streaming.

Runs are cut into chunks of consecutive seeds; workers return each chunk's
rows and the first violating order per (protocol, invariant).  Chunks are
consumed in run order (``imap``, not completion order), so everything a
sweep reports is identical whatever the worker count.  Only aggregates and
one order per distinct violation are kept, so memory does not grow with the
number of seeds unless the caller asks for every row.
"""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import pandas as pd

from sim.checks.workspace import SAFETY_INVARIANTS
from sim.protocol import Protocol, parse_protocol
from sim.scenario import Action
from sim.search.runs import run_one
from sim.search.workload import Workload, load_workload

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
    order: tuple[Action, ...]


@dataclass
class ProtocolTally:
    runs: int = 0
    violating_runs: int = 0
    by_invariant: dict[str, int] = field(default_factory=lambda: {n: 0 for n in SAFETY_INVARIANTS})
    spurious_rejections: int = 0
    events: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": self.runs, "violating_runs": self.violating_runs,
            "by_invariant": dict(self.by_invariant), "spurious_rejections": self.spurious_rejections,
        }


@dataclass
class SweepSummary:
    """Aggregates of a sweep plus the first order of each distinct violation."""

    workload: str
    seed_start: int
    seeds: int
    protocols: list[str]
    tallies: dict[str, ProtocolTally]
    found: dict[tuple[str, str], Found]

    @property
    def runs(self) -> int:
        return sum(t.runs for t in self.tallies.values())

    @property
    def violating_runs(self) -> int:
        return sum(t.violating_runs for t in self.tallies.values())

    def by_invariant(self) -> dict[str, int]:
        out = {n: 0 for n in SAFETY_INVARIANTS}
        for tally in self.tallies.values():
            for name, count in tally.by_invariant.items():
                out[name] += count
        return out


# Worker state, set once per process by the pool initialiser.
_WORKLOAD: Workload | None = None
_PROTOCOLS: list[Protocol] = []


def _init_worker(workload: Workload, protocols: list[Protocol]) -> None:
    global _WORKLOAD, _PROTOCOLS
    _WORKLOAD, _PROTOCOLS = workload, protocols


def _run_chunk(task: tuple[int, int, int, bool]) -> tuple[list[dict], list[tuple[str, str, int, int, tuple]]]:
    first_index, count, seed_start, keep_rows = task
    assert _WORKLOAD is not None
    rows, firsts = [], []
    seen: set[tuple[str, str]] = set()
    for index in range(first_index, first_index + count):
        seed = seed_start + index
        for protocol in _PROTOCOLS:
            outcome = run_one(_WORKLOAD, protocol, seed, index)
            rows.append(outcome.row)
            for invariant in outcome.violated:
                if (protocol.label, invariant) not in seen:
                    seen.add((protocol.label, invariant))
                    firsts.append((protocol.label, invariant, index, seed, outcome.order))
    if not keep_rows:  # keep only what the aggregates need
        rows = [_slim(r) for r in rows]
    return rows, firsts


def _slim(row: dict) -> dict:
    keep = {"protocol", "violated", "spurious_rejections", "events"}
    return {k: v for k, v in row.items() if k in keep or k.startswith("violations_")}


def iter_chunks(workload: Workload, protocols: list[Protocol], seeds: int, seed_start: int, workers: int,
                keep_rows: bool) -> Iterator[tuple[list[dict], list]]:
    tasks = [(i, min(CHUNK_SEEDS, seeds - i), seed_start, keep_rows) for i in range(0, seeds, CHUNK_SEEDS)]
    if workers <= 1 or len(tasks) <= 1:
        _init_worker(workload, protocols)
        for task in tasks:
            yield _run_chunk(task)
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with context.Pool(workers, initializer=_init_worker, initargs=(workload, protocols)) as pool:
        yield from pool.imap(_run_chunk, tasks)


def sweep(workload: Workload | str, protocols: list[Protocol | str], seeds: int, seed_start: int = 0,
          workers: int | None = None, progress: Callable[[int, int], None] | None = None,
          keep_rows: bool = False) -> tuple[SweepSummary, list[dict] | None]:
    """Run every (seed, protocol); return the summary (and every row if asked).

    ``progress(done_seeds, total_seeds)`` is called after each chunk.
    """
    if isinstance(workload, str):
        workload = load_workload(workload)
    protocols = [p if isinstance(p, Protocol) else parse_protocol(p) for p in protocols]
    if not 0 < seeds <= MAX_SEEDS:
        from sim.errors import InputError

        raise InputError(f"--seeds must be between 1 and {MAX_SEEDS}, got {seeds}")
    tallies = {p.label: ProtocolTally() for p in protocols}
    found: dict[tuple[str, str], Found] = {}
    all_rows: list[dict] | None = [] if keep_rows else None
    done = 0
    for rows, firsts in iter_chunks(workload, protocols, seeds, seed_start, workers or default_workers(), keep_rows):
        for row in rows:
            tally = tallies[row["protocol"]]
            tally.runs += 1
            tally.violating_runs += bool(row["violated"])
            tally.spurious_rejections += row["spurious_rejections"]
            tally.events += row["events"]
            for name in SAFETY_INVARIANTS:
                tally.by_invariant[name] += bool(row[f"violations_{name}"])
        for label, invariant, index, seed, order in firsts:
            key = (label, invariant)
            if key not in found:  # chunks arrive in run order: the first is the lowest index
                found[key] = Found(label, invariant, index, seed, order)
        if all_rows is not None:
            all_rows.extend(rows)
        done += len(rows) // max(1, len(protocols))
        if progress:
            progress(done, seeds)
    summary = SweepSummary(workload.name, seed_start, seeds, [p.label for p in protocols], tallies, found)
    return summary, all_rows


def sweep_frame(workload: Workload | str, protocols: list[Protocol | str], seeds: int, seed_start: int = 0,
                workers: int | None = None) -> pd.DataFrame:
    """A sweep as a DataFrame, one row per run: seed, protocol, verdict counts,
    violations per invariant, spurious rejections, event count.

    >>> df = sweep_frame("seed-fuzz", ["none", "step-dedupe"], seeds=100)  # doctest: +SKIP
    >>> df.groupby("protocol")["violations_lost_update"].sum()              # doctest: +SKIP
    """
    _, rows = sweep(workload, protocols, seeds, seed_start, workers, keep_rows=True)
    return pd.DataFrame(rows)
