"""The effects family's exhaustive search: its machine against the replay of every candidate, in the same run.

    .venv/bin/python benchmarks/bench_effects.py                 # ratio at depths 1-2, table to depth 3
    .venv/bin/python benchmarks/bench_effects.py --max-depth 4   # the table to depth 4 (tens of minutes)

1. ratio   effects-saga under keyed-fingerprint-reconcile at depths 1 and 2: distinct states a second with
           the machine (a run paused where a fault can strike, each state judged by its completion) against
           the same search replaying every candidate order from scratch (``accelerate=False``: the path
           before the machine).  Both find the same invariants at the same shortest lengths (printed).
2. table   effects-saga (keyed-fingerprint-reconcile) and agent-pr-workflow (temporal, the engine certify
           runs) at each depth up to ``--max-depth``: distinct states, seconds, states a second and peak
           memory, each search in a fresh process (peak memory is a process's high-water mark).

Not a test: it asserts nothing about time.  The numbers go to docs/limits.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

TABLE = (("effects-saga", "keyed-fingerprint-reconcile"), ("agent-pr-workflow", "temporal"))


def one_search(workload: str, protocol: str, depth: int, machine: bool) -> dict:
    """One exhaustive search in this process: its counts, seconds and peak memory."""
    import sim
    from sim.search.exhaustive import ExploreOptions, explore

    family = sim.family("effects")
    loaded = sim.load_workload(workload)
    started = time.perf_counter()
    options = ExploreOptions(max_events=depth, accelerate=machine)
    result = explore(family, loaded, family.parse_protocol(protocol), options)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"workload": workload, "protocol": protocol, "depth": depth, "machine": machine,
            "distinct": result.distinct_states, "generated": result.states_generated, "seconds": seconds,
            "states_per_s": result.distinct_states / seconds, "peak_bytes": peak, "complete": result.complete,
            "shortest": dict(sorted(result.shortest.items()))}


def in_fresh_process(workload: str, protocol: str, depth: int, machine: bool) -> dict:
    code = (f"import json, sys; sys.path.insert(0, {str(HERE)!r}); from bench_effects import one_search; "
            f"print(json.dumps(one_search({workload!r}, {protocol!r}, {depth}, {machine})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def ratio() -> None:
    print("1. ratio: effects-saga, keyed-fingerprint-reconcile -- machine against replay, same run")
    print(f"{'depth':>5} {'replay st/s':>12} {'machine st/s':>13} {'ratio':>7}  same shortest lengths")
    for depth in (1, 2):
        replay = in_fresh_process("effects-saga", "keyed-fingerprint-reconcile", depth, False)
        machine = in_fresh_process("effects-saga", "keyed-fingerprint-reconcile", depth, True)
        same = replay["shortest"] == machine["shortest"]
        print(f"{depth:>5} {replay['states_per_s']:>12,.0f} {machine['states_per_s']:>13,.0f} "
              f"{machine['states_per_s'] / replay['states_per_s']:>6.1f}x  {same}  "
              f"(replay {replay['seconds']:.1f} s / {replay['distinct']:,} states, "
              f"machine {machine['seconds']:.1f} s / {machine['distinct']:,} states)")


def table(max_depth: int) -> None:
    print(f"\n2. table: the machine, each search in a fresh process (depths 1-{max_depth})")
    print(f"{'workload':<20} {'protocol':<28} {'depth':>5} {'states':>10} {'seconds':>9} {'st/s':>7} {'peak MB':>8}")
    for workload, protocol in TABLE:
        for depth in range(1, max_depth + 1):
            row = in_fresh_process(workload, protocol, depth, True)
            print(f"{workload:<20} {protocol:<28} {depth:>5} {row['distinct']:>10,} {row['seconds']:>9.1f} "
                  f"{row['states_per_s']:>7,.0f} {row['peak_bytes'] / 2**20:>8,.0f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-depth", type=int, default=3)
    parser.add_argument("--only", choices=("ratio", "table"), action="append")
    args = parser.parse_args()
    parts = args.only or ["ratio", "table"]
    if "ratio" in parts:
        ratio()
    if "table" in parts:
        table(args.max_depth)


if __name__ == "__main__":
    main()
