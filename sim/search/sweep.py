"""Seed sweeps: N seeds x M protocols, in parallel, deterministic, streaming.

Run ``i`` of a sweep that starts at ``seed_start`` uses seed
``seed_start + i``, and its order depends only on (workload, seed), never on
the protocol, the worker count or the order in which runs finish.  Runs are
cut into chunks of consecutive seeds; workers return each chunk's rows and
the first violating order per (protocol, finding: invariant @ where).  Chunks are consumed in
run order (``imap``, not completion order), so everything a sweep reports is
identical whatever the worker count.  Only aggregates and one order per
distinct violation are kept, so memory does not grow with the number of
seeds unless the caller asks for every row.

The sweep knows a family only through its contract: ``generate``,
``replay``, ``checks`` and ``measure``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any, Generator, Sequence

from sim.core.coverage import Sketch
from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.findings import split
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.search.options import SearchOptions
from sim.search.oracle import evaluate
from sim.search.tally import Found, ProtocolTally, SweepState, SweepSummary, new_tally
from sim.search.workers import Workers

if TYPE_CHECKING:
    import pandas as pd

#: Seeds per task handed to a worker.
CHUNK_SEEDS = 250
#: The largest sweep a single call accepts (a limit on everything).
MAX_SEEDS = 10_000_000


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def run_row(family: Family, workload: Workload, protocol: Protocol, seed: int, index: int,
            tally: ProtocolTally | None = None) -> tuple[dict[str, Any], tuple[Any, ...], tuple[str, ...]]:
    """One run of a sweep: (flat row, valid order, findings shown: ``"invariant @ where"``); ``tally`` counts
    what the run reached (coverage) and, for a run that violates safety, what it did to the world (its effect
    ledger).  The row's ``findings`` are the same findings (violating runs are counted per finding)."""
    order = family.generate(workload, seed)
    result = evaluate(family, workload.base, protocol, order, explain=False)
    if tally is not None:
        tally.coverage.add_run(result.replay.history)
        tally.ledger.add(family.effect_ledger(result.replay.history) if result.violated else ())
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
    row["findings"] = result.findings
    row.update(family.measure(replay))
    return row, valid, result.findings


# Worker state, set once per process by the pool initialiser.
_STATE: dict[str, Any] = {}


def _init_worker(family: Family, workload: Workload, protocols: list[Protocol]) -> None:
    _STATE.update(family=family, workload=workload, protocols=protocols)


def _inside_points(marks: list, tallies: dict[str, ProtocolTally]) -> list[tuple[int, dict[str, int]]]:
    """The saturation points inside a chunk: the sweep so far merged with the chunk's part at each mark."""
    return [(runs, {k: Sketch([max(a, b) for a, b in zip(t.coverage.sketch.registers, registers[k])]).count()
                    for k, t in tallies.items()})
            for runs, registers in marks]


def saturation_mark(runs: int) -> bool:
    """Whether the saturation curve gets a point after ``runs`` seeds inside a chunk: 1, 2, 5, 10, 20, 50, ...
    (every chunk's end is a point too), so that a short sweep still draws a curve."""
    while runs >= 10 and runs % 10 == 0:
        runs //= 10
    return runs in (1, 2, 5)


def _run_chunk(task: tuple[int, int, int, bool]) -> tuple[dict[str, ProtocolTally], list[dict] | None, list, list]:
    """Runs ``count`` consecutive seeds: the chunk's tallies, its rows if asked, its first violations, and
    the distinct-behaviour sketches at the saturation points inside it (``saturation_mark``)."""
    first_index, count, seed_start, keep_rows = task
    family, workload, protocols = _STATE["family"], _STATE["workload"], _STATE["protocols"]
    tallies = {p.label: new_tally(family, workload) for p in protocols}
    rows: list[dict] | None = [] if keep_rows else None
    firsts = []
    marks: list[tuple[int, dict[str, list[int]]]] = []
    seen: set[tuple[str, str]] = set()
    measure_names: tuple[str, ...] | None = None
    for index in range(first_index, first_index + count):
        seed = seed_start + index
        for protocol in protocols:
            row, order, violated = run_row(family, workload, protocol, seed, index, tallies[protocol.label])
            if measure_names is None:
                measure_names = _measure_names(family, row)
            tallies[protocol.label].add(row, measure_names)
            if rows is not None:
                rows.append(dict(row, order=" ; ".join(str(e) for e in order),
                                 faults=family.fault_count(workload, order), findings=" ; ".join(row["findings"])))
            for finding in violated:
                if (protocol.label, finding) not in seen:
                    seen.add((protocol.label, finding))
                    firsts.append((protocol.label, finding, index, seed, order))
        if index + 1 < first_index + count and saturation_mark(index + 1):
            marks.append((index + 1, {k: list(t.coverage.sketch.registers) for k, t in tallies.items()}))
    return tallies, rows, firsts, marks


def _run_chunk_with(task, state):
    """The same chunk on a Dask worker, which gets the workload with the task."""
    if _STATE.get("key") is not state[3]:
        _STATE.update(family=state[0], workload=state[1], protocols=state[2], key=state[3])
    return _run_chunk(task)


def measure_names(family: Family, workload: Workload, protocol: Protocol) -> tuple[str, ...]:
    """The per-run measures a sweep of ``protocol`` on ``workload`` sums (from its first run)."""
    row, _, _ = run_row(family, workload, protocol, 0, 0)
    return _measure_names(family, row)


def _measure_names(family: Family, row: dict[str, Any]) -> tuple[str, ...]:
    fixed = {"run", "seed", "protocol", "events", "end", "violated", "findings", *family.availability_columns,
             *(f"violations_{n}" for n in family.safety_invariants)}
    return tuple(k for k in row if k not in fixed)


def iter_chunks(family: Family, workload: Workload, protocols: list[Protocol], tasks: list[tuple], workers: int,
                backend: str = "local", scheduler: str | None = None) -> Generator[tuple, None, None]:
    """Each task's result, in task order, whatever finishes first."""
    if backend == "dask":
        yield from _dask_chunks(family, workload, protocols, tasks, workers, scheduler)
        return
    if workers <= 1 or len(tasks) <= 1:
        _STATE.update(family=family, workload=workload, protocols=protocols)
        for task in tasks:
            yield _run_chunk(task)
        return
    with Workers(workers, _init_worker, (family, workload, protocols)) as pool:
        yield from pool.imap(_run_chunk, tasks)


def _dask_chunks(family: Family, workload: Workload, protocols: list[Protocol], tasks: list[tuple], workers: int,
                 scheduler: str | None) -> Generator[tuple, None, None]:
    """Chunks on a dask.distributed cluster: the one at ``scheduler``, or a LocalCluster of ``workers``."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise InputError("--backend dask needs dask.distributed: pip install 'fencesim[dask]'") from None
    import uuid

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=50)
    try:
        client = Client(scheduler or cluster, set_as_default=False)
    except OSError as error:
        if cluster is not None:
            cluster.close()
        raise InputError(f"cannot reach the Dask scheduler {scheduler}: {error}") from None
    try:
        state = client.scatter((family, workload, protocols, uuid.uuid4().hex), broadcast=True)
        window = max(2, 2 * len(client.scheduler_info().get("workers", {})) or 2)
        futures: list[Any] = [client.submit(_run_chunk_with, task, state, pure=False) for task in tasks[:window]]
        for position in range(len(tasks)):
            result = futures[position].result()
            futures[position] = None  # forget it: a million seeds never pile up in memory
            if position + window < len(tasks):
                futures.append(client.submit(_run_chunk_with, tasks[position + window], state, pure=False))
            yield result
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def sweep(family: Family, workload: Workload, protocols: Sequence[Protocol | str], seeds: int, seed_start: int = 0,
          workers: int | None = None, **options: Any) -> tuple[SweepSummary, list[dict] | None]:
    """:func:`run_sweep` with its :class:`~sim.search.options.SearchOptions` given as arguments (a notebook's
    call): ``sweep(family, workload, ["none"], 1000, workers=2, keep_rows=True)``."""
    return run_sweep(family, workload, protocols, SearchOptions(seeds, seed_start, workers, **options))


def run_sweep(family: Family, workload: Workload, protocols: Sequence[Protocol | str],
              options: SearchOptions) -> tuple[SweepSummary, list[dict] | None]:
    """Run every (seed, protocol); return the summary (and every row if ``options.keep_rows``).

    ``options.progress(done_seeds, total_seeds, violating_runs)`` is called after each chunk.  When
    ``options.deadline`` expires the sweep ends after the chunk in hand, with ``stopped`` set and
    ``seeds_done`` the seeds actually run (a prefix).  ``options.checkpoint(state)`` receives the sweep's
    state after every chunk; ``options.resume=state`` continues from one, and ends exactly as an
    uninterrupted sweep would (the chunks already counted are not run again).  ``backend="dask"`` runs the
    chunks on a ``dask.distributed`` cluster.
    """
    parsed = [family.parse_protocol(p) for p in protocols]
    seeds, deadline = options.seeds, options.deadline
    if not 0 < seeds <= MAX_SEEDS:
        raise InputError(f"--seeds must be between 1 and {MAX_SEEDS}, got {seeds}")
    run = _Progress(family, workload, parsed, options)
    starts = list(range(0, seeds, CHUNK_SEEDS))
    tasks = [(i, min(CHUNK_SEEDS, seeds - i), options.seed_start, options.keep_rows) for i in starts]
    chunks = iter_chunks(family, workload, parsed, tasks[run.first_chunk:], options.workers or default_workers(),
                         options.backend, options.scheduler)
    stopped = None
    try:
        for number, chunk in enumerate(chunks, start=run.first_chunk):
            run.add(number, min(CHUNK_SEEDS, seeds - starts[number]), *chunk)
            if deadline.expired() and run.done < seeds:
                stopped = deadline.name
                deadline.note("sweep")
                break
    finally:
        chunks.close()
    summary = SweepSummary(family=family.name, workload=workload.name, seed_start=options.seed_start, seeds=seeds,
                           protocols=[p.label for p in parsed], tallies=run.tallies,
                           found=dict(sorted(run.found.items())), seeds_done=run.done, stopped=stopped,
                           saturation=run.saturation)
    return summary, run.rows


class _Progress:
    """What a sweep has counted so far: its tallies, first violations and saturation points, from nothing or
    from the state of an interrupted sweep; each chunk's results are added in run order."""

    def __init__(self, family: Family, workload: Workload, protocols: list[Protocol], options: SearchOptions):
        self.options = options
        self.tallies = {p.label: new_tally(family, workload) for p in protocols}
        self.found: dict[tuple[str, str], Found] = {}
        self.done, self.first_chunk = 0, 0
        self.saturation: list[tuple[int, dict[str, int]]] = []
        self.rows: list[dict] | None = [] if options.keep_rows else None
        resume = options.resume
        if resume is not None:
            self.first_chunk, self.done = resume.next_chunk, resume.seeds_done
            self.saturation = [(int(n), dict(counts)) for n, counts in resume.saturation]
            for label, data in resume.tallies.items():
                self.tallies[label] = ProtocolTally(**data)
            for item in resume.found:
                order = tuple(family.parse_event(workload.base, text) for text in item["order"])
                found = Found(item["protocol"], item["invariant"], item["run"], item["seed"], order,
                              item.get("where", ""))
                self.found[(found.protocol, found.finding)] = found

    def add(self, number: int, seeds: int, chunk_tallies: dict[str, ProtocolTally], rows: list[dict],
            firsts: list[tuple], marks: list) -> None:
        """Count chunk ``number`` (of ``seeds`` seeds); checkpoint and report progress as the options ask."""
        tallies, options = self.tallies, self.options
        self.saturation += _inside_points(marks, tallies)
        for label, tally in chunk_tallies.items():
            tallies[label].merge(tally)
        for label, finding, index, seed, order in firsts:
            if (label, finding) not in self.found:  # chunks arrive in run order: the first is the lowest index
                invariant, where = split(finding)
                self.found[(label, finding)] = Found(label, invariant, index, seed, order, where)
        if self.rows is not None:
            self.rows.extend(rows)
        self.done += seeds
        self.saturation.append((self.done, {k: t.coverage.sketch.count() for k, t in tallies.items()}))
        if options.checkpoint is not None:
            options.checkpoint(self.state(number + 1))
        if options.progress:
            options.progress(self.done, options.seeds, sum(t.violating_runs for t in tallies.values()))

    def state(self, next_chunk: int) -> SweepState:
        return SweepState(next_chunk, self.done, {k: dataclasses.asdict(t) for k, t in self.tallies.items()},
                          [{"protocol": f.protocol, "invariant": f.invariant, "where": f.where, "run": f.run,
                            "seed": f.seed, "order": [str(e) for e in f.order]} for f in self.found.values()],
                          [[n, counts] for n, counts in self.saturation])


def sweep_frame(family: Family, workload: Workload, protocols: list[Protocol | str], seeds: int,
                seed_start: int = 0, workers: int | None = None) -> "pd.DataFrame":
    """A sweep as a DataFrame, one row per run: seed, protocol, violations per invariant,
    availability counts (spurious rejections...), the family's per-run measures, the run's valid order
    as text (``order``, events joined by `` ; ``) and how many of its events are faults (``faults``)."""
    _, rows = sweep(family, workload, protocols, seeds, seed_start, workers, keep_rows=True)
    import pandas as pd  # a second to import: only the DataFrame call pays for it

    return pd.DataFrame(rows)
