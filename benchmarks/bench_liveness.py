"""What judging liveness costs beside building the graph it is judged on.

    .venv/bin/python benchmarks/bench_liveness.py                  # tiny and three-files, 2 faults, 3 runs
    .venv/bin/python benchmarks/bench_liveness.py --workload tiny --max-faults 3 --runs 5

The baseline, measured in the same run: a plain breadth-first loop over the same graph -- the machine's
``enabled`` and ``advance``, its key in a dict, faults counted by the same roles and bounded the same way, no
carry, no record, nothing judged.  Then ``check_liveness``: the graph with the model's carry (each
transition's records), every property's strongly connected components, and the lasso.  Printed: the medians,
the states each visits, and the ratio.  Not a test: it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import deque

from sim.registry import FAMILIES
from sim.search.liveness import check_liveness


def plain(family, workload, protocol, max_faults: int) -> int:
    machine, model = family.machine(workload.base, protocol), family.liveness(workload, protocol)
    events = list(family.alphabet(workload))
    root = machine.initial()
    seen = {machine.key(root): 0}
    queue = deque([(root, 0)])
    while queue:
        state, faults = queue.popleft()
        for position in machine.enabled(state, events):
            event = events[position]
            fault = model.role(state, frozenset(), event) == "fault"
            if fault and faults >= max_faults:
                continue
            after = machine.advance(state, event)
            key = machine.key(after)
            if key not in seen:
                seen[key] = faults + fault
                queue.append((after, faults + fault))
    return len(seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", action="append")
    parser.add_argument("--protocol", default="step-dedupe")
    parser.add_argument("--max-faults", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for name in args.workload or ["tiny", "three-files"]:
        workload = FAMILIES.load_workload(name)
        family = FAMILIES.family_for(workload)
        protocol = family.parse_protocol(args.protocol)
        times: dict[str, list[float]] = {"plain": [], "liveness": []}
        sizes = {}
        for _ in range(args.runs):
            start = time.perf_counter()
            sizes["plain"] = plain(family, workload, protocol, args.max_faults)
            times["plain"].append(time.perf_counter() - start)
            start = time.perf_counter()
            result = check_liveness(family, workload, protocol, args.max_faults)
            times["liveness"].append(time.perf_counter() - start)
            sizes["liveness"] = result.states
        base = statistics.median(times["plain"])
        for what, runs in times.items():
            median = statistics.median(runs)
            print(f"{name} {args.protocol} {args.max_faults} faults  {what:9} {sizes[what]:>9,} states  "
                  f"{median:7.2f} s  {median / base:5.2f}x")


if __name__ == "__main__":
    main()
