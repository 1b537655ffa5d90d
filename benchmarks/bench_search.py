"""Search speed and scale, every figure a ratio against a baseline measured in the same run.

    python benchmarks/bench_search.py           # about 5 minutes on 2 cores
    python benchmarks/bench_search.py --full    # adds the million-seed memory run and depth 10 (about 15 minutes)

1. shrink      every distinct counterexample of the shipped workloads (both families), shrunk with the
               search's accelerations (exhaustive tightening resumes from snapshots, skips events that
               cannot take effect and one order of independent events) against the same shrink replaying
               every candidate from scratch (the code before the accelerations).
2. exhaustive  plan on the tiny workload: orders/s and distinct states/s with the accelerations (1 and 2
               workers) against full replays on one worker, at depth 8 (and depth 10 with --full).
3. throughput  sweep runs/s against the bare-Python model, with the cost of generating an order measured
               apart: generation alone, the bare model alone, fencesim's replay+checks alone.
4. workers     sweep runs/s with 2 workers against 1.
5. memory      peak RSS of a sweep of 10k, 100k (and 1M with --full) seeds, each in a fresh process.
6. growth      time per run as seeds, steps per plan, files and faults per run grow (table + plot), and a
               profile of where a run's time goes (kernel, model, history, checks, generation).
7. alarms      100,000 seeds (--full; 10,000 otherwise) of every protocol exhaustive search proves safe
               within its bound: no safety violation may appear.

Results are printed and written to benchmarks/results/ (growth.png, growth.csv).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bare_model import bare_sweep  # noqa: E402

from sim.core.workload import Workload  # noqa: E402
from sim.families.workspace.scenario import build_scenario  # noqa: E402
from sim.registry import FAMILIES  # noqa: E402
from sim.search.exhaustive import ExploreOptions, explore  # noqa: E402
from sim.search.oracle import evaluate  # noqa: E402
from sim.search.shrink import shrink  # noqa: E402
from sim.search.sweep import sweep  # noqa: E402

RESULTS = HERE / "results"
SHIPPED = [("seed-fuzz", ["none", "step", "step-dedupe", "fence=step,stamp_at=apply",
                          "step-dedupe,journal_write=after_write", "fence=none,dedupe=memory"]),
           ("multi-file", ["none", "step-dedupe", "step-dedupe,journal_write=after_write"]),
           ("three-files", ["none", "step-dedupe", "step-dedupe,journal_write=after_write"]),
           ("tiny", ["none", "step-dedupe,journal_write=after_write"]),
           ("effects-saga", ["unkeyed-retry", "keyed", "keyed-reconcile", "keyed-fingerprint-reconcile",
                             "keyed-fingerprint-reconcile,lease_fence=off",
                             "keyed-fingerprint-reconcile,receipt_check=trusting"]),
           ("effects-pr", ["unkeyed-retry", "keyed", "keyed-fingerprint-reconcile"])]


def line(measure: str, ours: str, baseline: str, ratio: str) -> None:
    print(f"  {measure:<58} | {ours:>14} | {baseline:>14} | {ratio}", flush=True)


def part_shrink() -> None:
    print("\n[1] shrink: every shipped counterexample, accelerated vs full replays (seconds, one core)")
    total_fast = total_slow = 0.0
    worst = 0.0
    for name, protocols in SHIPPED:
        workload = FAMILIES.load_workload(name)
        family = FAMILIES.family_for(workload)
        summary, _ = sweep(family, workload, protocols, 1000, workers=1)
        for (label, invariant), found in sorted(summary.found.items()):
            protocol = family.parse_protocol(label)
            started = time.perf_counter()
            fast = shrink(family, workload, protocol, found.order, invariant)
            fast_s = time.perf_counter() - started
            started = time.perf_counter()
            slow = shrink(family, workload, protocol, found.order, invariant, accelerate=False, max_seconds=None)
            slow_s = time.perf_counter() - started
            assert [str(e) for e in fast.events] == [str(e) for e in slow.events], (name, label, invariant)
            total_fast, total_slow, worst = total_fast + fast_s, total_slow + slow_s, max(worst, fast_s)
            line(f"{name} {label} {invariant} ({len(found.order)}->{len(fast.events)}, {fast.reason})",
                 f"{fast_s:.3f}", f"{slow_s:.3f}", f"{slow_s / max(fast_s, 1e-9):.2f}x")
    line("all shipped counterexamples (sum)", f"{total_fast:.2f}", f"{total_slow:.2f}",
         f"{total_slow / max(total_fast, 1e-9):.2f}x; slowest accelerated {worst:.2f} s")


def part_exhaustive(depths: list[int]) -> None:
    print("\n[2] exhaustive: plan on tiny (accelerated vs full replays, one worker)")
    family = FAMILIES.get("workspace")
    workload = FAMILIES.load_workload("tiny")
    protocol = family.parse_protocol("plan")
    for depth in depths:
        runs = {}
        for label, kwargs in (("accelerated, 2 workers", {"workers": 2}), ("accelerated, 1 worker", {"workers": 1}),
                              ("full replays, 1 worker", {"workers": 1, "accelerate": False})):
            if depth > 8 and label != "accelerated, 2 workers":
                continue
            started = time.perf_counter()
            result = explore(family, workload, protocol, ExploreOptions(max_events=depth, **kwargs))
            seconds = time.perf_counter() - started
            runs[label] = (seconds, result)
            print(f"  depth {depth}, {label}: {seconds:.1f} s, {result.states_generated:,} generated "
                  f"({result.states_generated / seconds:,.0f}/s), {result.distinct_states:,} states "
                  f"({result.distinct_states / seconds:,.0f}/s), {result.pruned:,} pruned, "
                  f"proved absent: {', '.join(result.to_json()['proved_absent'])}", flush=True)
        if "full replays, 1 worker" in runs:
            fast, slow = runs["accelerated, 1 worker"][0], runs["full replays, 1 worker"][0]
            line(f"depth {depth} seconds (baseline: full replays)", f"{fast:.1f}", f"{slow:.1f}",
                 f"{slow / fast:.2f}x faster; 2 workers {runs['accelerated, 2 workers'][0]:.1f} s")


def _replay_only(family, workload, protocol, orders) -> float:
    started = time.perf_counter()
    for order in orders:
        evaluate(family, workload.base, protocol, order)
    return time.perf_counter() - started


def part_throughput(seeds: int) -> None:
    print(f"\n[3] throughput: {seeds:,} seeds, one core; generation measured apart")
    family = FAMILIES.get("workspace")
    workload = FAMILIES.load_workload("seed-fuzz")
    started = time.perf_counter()
    orders = [family.generate(workload, seed) for seed in range(seeds)]
    generation = time.perf_counter() - started
    started = time.perf_counter()
    bare_sweep(workload, "none", seeds)
    bare_with_generation = time.perf_counter() - started
    bare_only = max(1e-9, bare_with_generation - generation)
    ours_only = _replay_only(family, workload, family.parse_protocol("none"), orders)
    line("generation alone, orders/s (baseline: bare model alone)", f"{seeds / generation:,.0f}",
         f"{seeds / bare_only:,.0f}", f"{bare_only / generation:.2f}x the bare model's speed")
    line("replay + checks alone, runs/s (baseline: bare model alone)", f"{seeds / ours_only:,.0f}",
         f"{seeds / bare_only:,.0f}", f"1/{ours_only / bare_only:.1f}")
    started = time.perf_counter()
    sweep(family, workload, ["none"], seeds, workers=1)
    whole = time.perf_counter() - started
    line("whole sweep incl. generation, runs/s (baseline: bare incl.)", f"{seeds / whole:,.0f}",
         f"{seeds / bare_with_generation:,.0f}", f"1/{whole / bare_with_generation:.1f}")


def part_workers(seeds: int) -> None:
    print(f"\n[4] workers: {seeds:,} seeds x 2 protocols")
    family = FAMILIES.get("workspace")
    workload = FAMILIES.load_workload("seed-fuzz")
    timing = {}
    for workers in (1, 2):
        samples = []
        for _ in range(3):
            started = time.perf_counter()
            sweep(family, workload, ["none", "step-dedupe"], seeds, workers=workers)
            samples.append(time.perf_counter() - started)
        timing[workers] = statistics.median(samples)
    line("runs/s, 2 workers (baseline: 1 worker)", f"{2 * seeds / timing[2]:,.0f}", f"{2 * seeds / timing[1]:,.0f}",
         f"{timing[1] / timing[2]:.2f}x speed-up")


MEMORY_CHILD = """
import resource, sys, time
sys.path.insert(0, {root!r})
from sim.registry import FAMILIES
from sim.search.sweep import sweep
family = FAMILIES.get("workspace"); workload = FAMILIES.load_workload("seed-fuzz")
started = time.perf_counter()
summary, _ = sweep(family, workload, ["none"], {seeds}, workers=2)
# VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a child of a big parent would report its size
own = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(own, children, round(time.perf_counter() - started, 1), summary.runs)
"""


def part_memory(sizes: list[int]) -> None:
    print("\n[5] memory: peak RSS of one sweep (protocol none, 2 workers), each in a fresh process")
    measured = {}
    for seeds in sizes:
        done = subprocess.run([sys.executable, "-c", MEMORY_CHILD.format(root=str(HERE.parent), seeds=seeds)],
                              capture_output=True, text=True, check=True)
        own, children, seconds, runs = done.stdout.split()
        measured[seeds] = (int(own) / 1024, int(children) / 1024)
        print(f"  {seeds:>9,} seeds: {seconds} s, {runs} runs, main {measured[seeds][0]:.1f} MiB, "
              f"largest worker {measured[seeds][1]:.1f} MiB", flush=True)
    smallest = min(sizes)
    for seeds in sizes[1:]:
        line(f"peak RSS main, {seeds:,} seeds (baseline {smallest:,})", f"{measured[seeds][0]:.1f} MiB",
             f"{measured[smallest][0]:.1f} MiB", f"{measured[seeds][0] / measured[smallest][0]:.3f}")


def _synthetic(files: int, steps: int, per_run_max: int) -> Workload:
    names = [f"f{i}.py" for i in range(files)]
    data = {"name": f"{files}f{steps}s", "files": {n: "v0" for n in names},
            "plan": [{"id": f"s{i + 1}", "path": names[i % files], "patch": f"v{i + 1}"} for i in range(steps)],
            "events": []}
    base = build_scenario(data)
    classes = ("human_edit", "preempt", "lose_ack", "retry", "duplicate", "replan")
    return Workload(data["name"], "workspace", base, classes, {c: 1.0 for c in classes}, per_run_max=per_run_max,
                    max_events=400)


def part_growth(out: Path) -> None:
    print("\n[6] growth: microseconds per run (protocol step-dedupe, one core, 600 seeds per point)")
    family = FAMILIES.get("workspace")
    rows = []
    for axis, values in (("steps", [1, 2, 4, 8, 16]), ("files", [1, 2, 4, 8, 16]), ("faults", [1, 2, 4, 8, 16])):
        for value in values:
            steps = value if axis == "steps" else 4
            files = value if axis == "files" else 2
            faults = value if axis == "faults" else 4
            workload = _synthetic(files, steps, faults)
            started = time.perf_counter()
            summary, _ = sweep(family, workload, ["step-dedupe"], 600, workers=1)
            seconds = time.perf_counter() - started
            events = summary.tallies["step-dedupe"].events / 600
            rows.append((axis, value, seconds / 600 * 1e6, events))
            print(f"  {axis:>6} = {value:>3}: {seconds / 600 * 1e6:8.0f} us/run, {events:6.1f} events/run "
                  f"({seconds / 600 * 1e6 / max(events, 1):.0f} us/event)", flush=True)
    family_seeds = []
    for seeds in (1000, 4000, 16000):
        started = time.perf_counter()
        sweep(family, FAMILIES.load_workload("seed-fuzz"), ["step-dedupe"], seeds, workers=1)
        family_seeds.append((seeds, time.perf_counter() - started))
        print(f"  seeds = {seeds:>6}: {family_seeds[-1][1]:.2f} s ({seeds / family_seeds[-1][1]:,.0f} runs/s)")
    print("  growth: time is linear in seeds (runs/s constant) and, per run, linear in events; steps and "
          "faults add events, files add none (a file costs only its hash)")
    out.mkdir(exist_ok=True)
    (out / "growth.csv").write_text("axis,value,us_per_run,events_per_run\n"
                                    + "".join(f"{a},{v},{u:.1f},{e:.2f}\n" for a, v, u, e in rows))
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4), layout="constrained")
    ax = figure.subplots()
    for axis in ("steps", "files", "faults"):
        points = [(v, u) for a, v, u, _ in rows if a == axis]
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=f"{axis} (others fixed)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("steps per plan / files / faults per run")
    ax.set_ylabel("microseconds per run")
    ax.set_title("Cost of one fuzz run as the workload grows (step-dedupe, one core)")
    ax.legend()
    figure.savefig(out / "growth.png", dpi=90)
    print(f"  table and plot: {out / 'growth.csv'}, {out / 'growth.png'}")
    profile = cProfile.Profile()
    workload = FAMILIES.load_workload("seed-fuzz")
    profile.enable()
    sweep(family, workload, ["step-dedupe"], 2000, workers=1)
    profile.disable()
    stats = pstats.Stats(profile)
    buckets = {"kernel (SimPy + sim/core/kernel)": 0.0, "model (sim/families)": 0.0, "history (sim/core/history)": 0.0,
               "checks": 0.0, "generation": 0.0, "other": 0.0}
    for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():
        if "checks.py" in filename:
            buckets["checks"] += tottime
        elif filename.endswith("faults.py") or "random.py" in filename:
            buckets["generation"] += tottime
        elif "simpy" in filename or filename.endswith("core/kernel.py"):
            buckets["kernel (SimPy + sim/core/kernel)"] += tottime
        elif filename.endswith("core/history.py"):
            buckets["history (sim/core/history)"] += tottime
        elif "sim/families" in filename:
            buckets["model (sim/families)"] += tottime
        else:
            buckets["other"] += tottime
    total = sum(buckets.values())
    print("  where a run's time goes (profile of 2,000 runs): "
          + ", ".join(f"{name} {value / total:.0%}" for name, value in buckets.items()))


def part_false_alarms(seeds: int) -> None:
    print(f"\n[7] no false alarms: {seeds:,} seeds of each protocol exhaustive search proves safe in its bound")
    for name, label, bound in (("tiny", "plan", 7), ("tiny", "step-dedupe,drift_check=reject", 7),
                               ("retries", "none,dedupe=journal", 6),
                               ("effects-pr", "keyed-fingerprint-reconcile,irreversible_keys=on", 2),
                               ("effects-zombie", "keyed-fingerprint-reconcile", 2)):
        workload = FAMILIES.load_workload(name)
        family = FAMILIES.family_for(workload)
        proof = explore(family, workload, family.parse_protocol(label), ExploreOptions(max_events=bound, workers=2))
        started = time.perf_counter()
        summary, _ = sweep(family, workload, [label], seeds, workers=2)
        tally = summary.tallies[family.parse_protocol(label).label]
        print(f"  {name} {label}: proved safe to {bound} events ({proof.complete}); {tally.runs:,} runs, "
              f"{tally.violating_runs} violating, {time.perf_counter() - started:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="add the 1M-seed memory run and exhaustive depth 10")
    args = parser.parse_args()
    started = time.perf_counter()
    print("measure                                                      |       fencesim |       baseline | ratio")
    part_shrink()
    part_exhaustive([8, 10] if args.full else [8])
    part_throughput(20000)
    part_workers(4000)
    part_memory([10_000, 100_000, 1_000_000] if args.full else [10_000, 100_000])
    part_growth(RESULTS)
    part_false_alarms(100_000 if args.full else 10_000)
    print(f"\ntotal wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
