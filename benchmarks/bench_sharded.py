"""Would two workers beat one?  A sharded visited set, measured against one process in the same run.

Each of two worker processes owns the fingerprints of half the hash range
(as TLC's and Stateright's parallel checkers split theirs): per depth, each
expands the states it owns, sends every successor to its owner (pickled,
through a pipe), and keeps the new ones it owns.  The one-process search is
the same loop with no exchange.  Both run the family's machine on the same
workload and count the same states; the ratio is the answer.

    .venv/bin/python benchmarks/bench_sharded.py            # tiny / plan to depth 9, TwoPhase with 6 RMs
"""

from __future__ import annotations

import multiprocessing
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "public_model"))


def _machine(name: str) -> tuple[Any, list]:
    from sim.core.registry import Registry
    from sim.registry import FAMILIES, SHIPPED

    if name == "two-phase":
        from two_phase_family import FAMILY, workload_text

        path = Path(tempfile.gettempdir()) / "fencesim-bench-two-phase.toml"
        path.write_text(workload_text([f"r{i}" for i in range(1, 7)]), encoding="utf-8")
        workload = Registry((*SHIPPED, FAMILY)).load_workload(str(path))
        family, protocol = FAMILY, "spec"
    else:
        workload = FAMILIES.load_workload("tiny")
        family, protocol = FAMILIES.get("workspace"), "plan"
    return family.machine(workload.base, family.parse_protocol(protocol)), list(family.alphabet(workload))


def _successors(machine: Any, events: list, state: Any) -> list:
    out = []
    for event in events:
        if machine.why_not(state, event) is None:
            out.append(machine.advance(state, event))
    return out


def one_process(name: str, depth: int) -> tuple[float, int]:
    machine, events = _machine(name)
    started = time.perf_counter()
    start = machine.initial()
    seen, frontier = {hash(start)}, [start]
    for _ in range(depth):
        nxt = []
        for state in frontier:
            for after in _successors(machine, events, state):
                mark = hash(after)
                if mark not in seen:
                    seen.add(mark)
                    nxt.append(after)
        frontier = nxt
    return time.perf_counter() - started, len(seen)


def _worker(name: str, depth: int, me: int, pipe: Any, result: Any) -> None:
    machine, events = _machine(name)
    start = machine.initial()
    seen: set[int] = set()
    frontier = [start] if hash(start) % 2 == me else []
    if frontier:
        seen.add(hash(start))
    for _ in range(depth):
        mine, theirs = [], []
        for state in frontier:
            for after in _successors(machine, events, state):
                (mine if hash(after) % 2 == me else theirs).append(after)
        sent = pickle.dumps(theirs, protocol=pickle.HIGHEST_PROTOCOL)
        if me == 0:  # one sends first, the other receives first: a pipe holds little, two senders would wait forever
            pipe.send_bytes(sent)
            mine += pickle.loads(pipe.recv_bytes())
        else:
            received = pipe.recv_bytes()
            pipe.send_bytes(sent)
            mine += pickle.loads(received)
        frontier = []
        for after in mine:
            mark = hash(after)
            if mark not in seen:
                seen.add(mark)
                frontier.append(after)
    result.put(len(seen))


def two_workers(name: str, depth: int) -> tuple[float, int]:
    ctx = multiprocessing.get_context("fork")
    left, right = ctx.Pipe()
    results = ctx.Queue()
    started = time.perf_counter()
    workers = [ctx.Process(target=_worker, args=(name, depth, me, pipe, results)) for me, pipe in ((0, left),
                                                                                                    (1, right))]
    for worker in workers:
        worker.start()
    total = results.get() + results.get()
    for worker in workers:
        worker.join()
    return time.perf_counter() - started, total


def main() -> None:
    for name, depth in (("tiny", 9), ("two-phase", 20)):
        alone, states = one_process(name, depth)
        shared, counted = two_workers(name, depth)
        print(f"{name} to depth {depth}: one process {alone:.2f} s, two workers {shared:.2f} s "
              f"({alone / shared:.2f}x), states {states:,} / {counted:,}", flush=True)


if __name__ == "__main__":
    main()
