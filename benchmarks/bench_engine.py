"""The engine's speed, every figure beside a baseline measured in the same run.

    python benchmarks/bench_engine.py                      # every part (about 15 minutes on 2 cores)
    python benchmarks/bench_engine.py --only sweep --only run-json
    python benchmarks/bench_engine.py --baseline REV       # another revision as the baseline

The baseline is a git revision of this repository (default: the commit before the state-value engine),
exported into a temporary folder and run in its own interpreter, interleaved with this checkout's runs
so that both see the same load.  Two versions of one package cannot share a process, so "the same run"
is one script run, not one interpreter.  The parts:

1. exhaustive-rate  tiny / plan to depth 10 on one worker: distinct states per second, this checkout
                    against the baseline (the same states: the counts must be equal).  With two cores the
                    checkout's search runs repeatedly beside the baseline's one run (the median is taken), so
                    both are timed on the same machine at the same minutes.
2. exhaustive-deep  tiny / plan to depth 12 and three-files / step-dedupe to depth 10 on 2 workers:
                    wall time, distinct states and peak memory (the search's process and its workers),
                    with the state limit that bounds the memory; then tiny / plan to depth 12 again with
                    the limit raised to 4,000,000 states per depth (``explore --state-limit``), where it
                    completes.
3. sweep            runs per second on seed-fuzz / none against the bare-Python model, in this process:
                    generation alone, the bare model alone, replay + checks alone, and the whole sweep
                    (generation included) against the bare model with generation.
4. run-json         ``fencesim run --json`` on a scenario of 100,000 events, this checkout against the
                    baseline.

Timings are the best of ``--repeats`` (default 3) for parts 3 and 4, one run each for part 2 and for the
baseline of part 1 (they are long; part 1's checkout runs as often as fits beside it); ratios are between
those figures.  Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: The commit before the engine drove a state value (tests/pinned/digests.json was recorded there).
BASELINE_DEFAULT = "dec7872"
PARTS = ("exhaustive-rate", "exhaustive-deep", "sweep", "run-json")

EXPLORE = """
import gc, json, resource, sys, time
from sim.registry import FAMILIES
from sim.search import exhaustive
family = FAMILIES.get("workspace")
workload = FAMILIES.load_workload({workload!r})
protocol = family.parse_protocol({protocol!r})
started = time.perf_counter()
if hasattr(exhaustive, "ExploreOptions"):
    options = exhaustive.ExploreOptions(max_events={depth}, workers={workers}, max_states={limit})
    result = exhaustive.explore(family, workload, protocol, options)
else:  # a revision before the options object (the baseline's)
    result = exhaustive.explore(family, workload, protocol, {depth}, workers={workers}, max_states={limit})
seconds = time.perf_counter() - started
own = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({{"seconds": seconds, "states": result.distinct_states,
                  "orders": getattr(result, "orders_explored", None) or getattr(result, "states_generated", 0),
                  "complete": result.complete, "end": result.reason, "own_kb": own, "workers_kb": children}}))
"""


def line(measure: str, ours: str, baseline: str, ratio: str) -> None:
    print(f"  {measure:<58} | {ours:>16} | {baseline:>16} | {ratio}", flush=True)


def export_baseline(revision: str, folder: Path) -> Path:
    """The baseline revision's files in a folder of their own (``git archive``: no work tree touched)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", revision],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def _child(code: str, path: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(path))
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=path)


def _result(child: subprocess.Popen, timeout_s: float = 3600) -> dict:
    stdout, stderr = child.communicate(timeout=timeout_s)
    if child.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{stderr[-3000:]}")
    return json.loads(stdout.strip().splitlines()[-1])


def run_python(code: str, path: Path, timeout_s: float = 3600) -> dict:
    return _result(_child(code, path), timeout_s)


def part_exhaustive_rate(baseline: Path) -> None:
    """This checkout's search runs again and again on one core while the baseline's one run takes the other, so
    both see the same machine: its speed drifts by more than a tenth within minutes here, and the baseline's
    run is minutes long.  The ratio is this checkout's median rate over the baseline's; with one core the two
    run one after the other."""
    print("\n[1] exhaustive search, tiny / plan to depth 10, one worker (distinct states per second)")
    code = EXPLORE.format(workload="tiny", protocol="plan", depth=10, workers=1, limit=1_000_000)
    if (os.cpu_count() or 1) < 2:
        runs, theirs = [run_python(code, ROOT)], run_python(code, baseline)
    else:
        running = _child(code, baseline)
        runs = [run_python(code, ROOT)]
        while running.poll() is None:
            runs.append(run_python(code, ROOT))
        theirs = _result(running)
    rates = sorted(run["states"] / run["seconds"] for run in runs)
    rate = rates[len(rates) // 2]
    same = all((run["states"], run["orders"]) == (theirs["states"], theirs["orders"]) for run in runs)
    theirs_rate = theirs["states"] / theirs["seconds"]
    line("distinct states / s", f"{rate:,.0f}", f"{theirs_rate:,.0f}",
         f"{rate / theirs_rate:.1f}x ({theirs['states']:,} states, {'same states' if same else 'DIFFERENT'})")
    line(f"  slowest, fastest of the checkout's {len(runs)} runs beside it",
         f"{rates[0]:,.0f}", f"{rates[-1]:,.0f}", f"{rates[0] / theirs_rate:.1f}x - {rates[-1] / theirs_rate:.1f}x")
    line("wall time, s (median run)", f"{theirs['states'] / rate:.1f}", f"{theirs['seconds']:.1f}", "")


def part_exhaustive_deep() -> None:
    print("\n[2] exhaustive search on 2 workers: wall time and peak memory (this checkout)")
    from sim.search.exhaustive import MAX_STATES_DEFAULT

    for workload, protocol, depth, limit in (("tiny", "plan", 12, MAX_STATES_DEFAULT),
                                             ("three-files", "step-dedupe", 10, MAX_STATES_DEFAULT),
                                             ("tiny", "plan", 12, 4_000_000)):
        got = run_python(EXPLORE.format(workload=workload, protocol=protocol, depth=depth, workers=2, limit=limit),
                         ROOT)
        memory = f"{got['own_kb'] / 1024:,.0f} MB + workers {got['workers_kb'] / 1024:,.0f} MB"
        line(f"{workload} / {protocol} to depth {depth}", f"{got['seconds']:.1f} s",
             f"{got['states']:,} states", f"{memory}; {got['end']}, state limit {limit:,} per depth")


def _best(repeats: int, work) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return best


def part_sweep(seeds: int, repeats: int) -> None:
    print(f"\n[3] sweep, seed-fuzz / none, {seeds:,} seeds, one core (CPU seconds, best of {repeats})")
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    from bare_model import bare_sweep

    from sim.registry import FAMILIES
    from sim.search.oracle import evaluate
    from sim.search.sweep import sweep

    family = FAMILIES.get("workspace")
    workload = FAMILIES.load_workload("seed-fuzz")
    protocol = family.parse_protocol("none")
    orders = [family.generate(workload, seed) for seed in range(seeds)]
    generation = _best(repeats, lambda: [family.generate(workload, seed) for seed in range(seeds)])
    bare_whole = _best(repeats, lambda: bare_sweep(workload, "none", seeds))
    bare_alone = max(1e-9, bare_whole - generation)
    def replay_and_check() -> None:
        for order in orders:  # each result dropped at once, as the sweep does
            evaluate(family, workload.base, protocol, order)

    ours = _best(repeats, replay_and_check)
    whole = _best(repeats, lambda: sweep(family, workload, ["none"], seeds, workers=1))
    line("generation alone, orders/s (baseline: bare model alone)", f"{seeds / generation:,.0f}",
         f"{seeds / bare_alone:,.0f}", "")
    line("replay + checks, runs/s (baseline: bare model alone)", f"{seeds / ours:,.0f}", f"{seeds / bare_alone:,.0f}",
         f"1/{ours / bare_alone:.1f} of the bare model's speed")
    line("whole sweep incl. generation, runs/s (baseline: bare incl.)", f"{seeds / whole:,.0f}",
         f"{seeds / bare_whole:,.0f}", f"1/{whole / bare_whole:.1f}")


def _long_scenario(path: Path, events: int) -> None:
    cycle = ["retry s1", "deliver s1", "ack s1", "human_edit app.py"]
    order = ["plan", "dispatch s1"] + [cycle[i % len(cycle)] for i in range(events - 2)]
    body = ",\n".join(f'  "{e}"' for e in order)
    path.write_text('format = 1\nname = "long"\nfiles = { "app.py" = "v0" }\n'
                    'plan = [ { id = "s1", path = "app.py", patch = "v1" }, '
                    '{ id = "s2", path = "app.py", patch = "v2" } ]\n'
                    f'protocol = "step-dedupe"\nevents = [\n{body}\n]\n', encoding="utf-8")


def part_run_json(baseline: Path, repeats: int) -> None:
    print(f"\n[4] fencesim run --json on 100,000 events (wall seconds, best of {repeats})")
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "long.toml"
        _long_scenario(scenario, 100_000)
        times = {}
        for name, path in (("ours", ROOT), ("baseline", baseline)):
            best = float("inf")
            for _ in range(repeats):
                started = time.perf_counter()
                subprocess.run([sys.executable, "-c", "from sim.cli import main; main()", "run", str(scenario),
                                "--json"], cwd=path, env=dict(os.environ, PYTHONPATH=str(path)),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=3600)
                best = min(best, time.perf_counter() - started)
            times[name] = best
        line("run --json, s", f"{times['ours']:.1f}", f"{times['baseline']:.1f}",
             f"{times['baseline'] / times['ours']:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=PARTS)
    parser.add_argument("--baseline", default=BASELINE_DEFAULT)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=3000)
    args = parser.parse_args()
    parts = args.only or list(PARTS)
    print(f"fencesim engine benchmark: this checkout against {args.baseline}; parts: {', '.join(parts)}")
    print(f"  {'measure':<58} | {'this checkout':>16} | {'baseline':>16} | ratio")
    folder = Path(tempfile.mkdtemp(prefix="fencesim-baseline-"))
    try:
        baseline = export_baseline(args.baseline, folder)
        if "exhaustive-rate" in parts:
            part_exhaustive_rate(baseline)
        if "exhaustive-deep" in parts:
            part_exhaustive_deep()
        if "sweep" in parts:
            part_sweep(args.seeds, args.repeats)
        if "run-json" in parts:
            part_run_json(baseline, args.repeats)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
