"""Fuzzing benchmarks of fencesim, each against a baseline measured in the same run.

    python benchmarks/bench_fuzz.py --quick    # smoke run, about 2 minutes on 2 cores (default)
    python benchmarks/bench_fuzz.py --full     # bigger sweeps; memory part 10k vs 200k seeds
    python benchmarks/bench_fuzz.py --only memory --full

Parts (see benchmarks/README.md for how to read the table):

1. throughput   sweep(workers=1) runs/s vs a bare-Python loop (bare_model.py) over the
                same generated orders, checks included in both; violation counts compared.
2. workers      sweep(workers=2) vs sweep(workers=1) on the same seeds.
3. counterexample  time to the first lost_update under "none" (sweep chunk by chunk from
                seed 0) and to its minimal form (shrink) vs Hypothesis stateful testing of
                the bare model.
4. memory       peak RSS of one sweep of 10k seeds vs one of 50k (--quick) or 200k (--full)
                seeds, each in its own subprocess, keep_rows=False.

Numbers are medians over --repeats; ratios are taken between medians.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bare_model import BareRun, bare_sweep  # noqa: E402

from sim.families.workspace import FAMILY  # noqa: E402
from sim.families.workspace.faults import PREEMPT_CHOICES  # noqa: E402
from sim.registry import FAMILIES  # noqa: E402
from sim.search.shrink import shrink  # noqa: E402
from sim.search.sweep import CHUNK_SEEDS  # noqa: E402
from sim.search.sweep import sweep as family_sweep  # noqa: E402

parse_protocol = FAMILY.parse_protocol
load_workload = FAMILIES.load_workload


def sweep(workload, protocols, *args, **kwargs):
    return family_sweep(FAMILY, workload, protocols, *args, **kwargs)

WORKLOAD = "seed-fuzz"
ROWS: list[tuple[str, str, str, str]] = []  # (measure, fencesim, baseline, ratio)
NOTES: list[str] = []


def median(values):
    return statistics.median(values)


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - start, out


def row(measure: str, ours: str, base: str, ratio: str) -> None:
    ROWS.append((measure, ours, base, ratio))
    print(f"  {measure}: fencesim {ours} | baseline {base} | ratio {ratio}", flush=True)


# -- 1. sweep throughput vs a bare-Python loop ---------------------------------------------

def bench_throughput(workload, seeds: int, repeats: int) -> None:
    print(f"\n[1] throughput: sweep(workers=1) vs bare-Python loop, {seeds} seeds x {repeats} repeats", flush=True)
    for label in ("none", "step-dedupe"):
        protocol = parse_protocol(label)
        ours, bare, real_counts, bare_counts = [], [], None, None
        for _ in range(repeats):
            seconds, (summary, _) = timed(sweep, workload, [protocol], seeds, 0, 1)
            ours.append(seconds)
            tally = summary.tallies[protocol.label]
            counts = {"lost_update": tally.by_invariant["lost_update"],
                      "duplicate_effect": tally.by_invariant["duplicate_effect"]}
            real_counts = real_counts or counts
            seconds, counts = timed(bare_sweep, workload, protocol, seeds, 0)
            bare.append(seconds)
            bare_counts = bare_counts or {k: counts[k] for k in ("lost_update", "duplicate_effect")}
        ours_rate, bare_rate = seeds / median(ours), seeds / median(bare)
        row(f"runs/s, protocol {label}", f"{ours_rate:,.0f}", f"{bare_rate:,.0f}", f"{ours_rate / bare_rate:.3f}"
            f" (1/{bare_rate / ours_rate:.1f})")
        same = real_counts == bare_counts
        line = (f"violating runs, protocol {label}: fencesim lost_update={real_counts['lost_update']} "
                f"duplicate_effect={real_counts['duplicate_effect']}; bare lost_update={bare_counts['lost_update']} "
                f"duplicate_effect={bare_counts['duplicate_effect']} -> "
                + ("SAME" if same else "DIFFERENT: the bare model and fencesim disagree"))
        print("  " + line, flush=True)
        NOTES.append(line)


# -- 2. two workers vs one -----------------------------------------------------------------

def bench_workers(workload, seeds: int, repeats: int) -> None:
    protocols = ["none", "step-dedupe"]
    print(f"\n[2] workers: sweep(workers=2) vs sweep(workers=1), {seeds} seeds x {len(protocols)} protocols "
          f"x {repeats} repeats (cpu_count={os.cpu_count()})", flush=True)
    one, two = [], []
    for _ in range(repeats):
        seconds, (s1, _) = timed(sweep, workload, protocols, seeds, 0, 1)
        one.append(seconds)
        seconds, (s2, _) = timed(sweep, workload, protocols, seeds, 0, 2)
        two.append(seconds)
        if s1.by_invariant() != s2.by_invariant():
            NOTES.append("workers=2 and workers=1 reported DIFFERENT violation counts")
    runs = seeds * len(protocols)
    row("runs/s, workers=2 (baseline workers=1)", f"{runs / median(two):,.0f}", f"{runs / median(one):,.0f}",
        f"{median(one) / median(two):.2f}x speed-up")


# -- 3. time to first counterexample and its minimal form -----------------------------------

def fencesim_first_counterexample(workload, protocol, max_seeds: int = 1_000_000):
    """Sweep one chunk at a time from seed 0 until lost_update shows up; then shrink it."""
    start = time.perf_counter()
    seed_start = 0
    found = None
    while found is None and seed_start < max_seeds:
        summary, _ = sweep(workload, [protocol], CHUNK_SEEDS, seed_start, 1)
        found = summary.found.get((protocol.label, "lost_update"))
        seed_start += CHUNK_SEEDS
    if found is None:
        raise RuntimeError("no lost_update found")
    t_found = time.perf_counter() - start
    result = shrink(FAMILY, workload, protocol, found.order, "lost_update")
    t_min = time.perf_counter() - start
    return t_found, t_min, found, result


def hypothesis_first_counterexample(workload, protocol, max_examples: int):
    """Hypothesis stateful testing over the bare model: time until it reports its shrunk failure."""
    from hypothesis import HealthCheck, settings
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

    steps = [s.step_id for s in workload.base.plan]
    paths = list(workload.base.files)
    base, fence, dedupe = workload.base, protocol.knobs["fence"], protocol.knobs["dedupe"]
    record: dict[str, list] = {"last": []}

    class WorkspaceMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.run = BareRun(base, fence, dedupe)
            self.steps_taken: list[tuple[str, bool]] = []
            record["last"] = self.steps_taken

        def _did(self, name, done):
            self.steps_taken.append((name, done))

        @rule()
        def plan(self):
            self._did("plan", self.run.plan())

        @rule(step=st.sampled_from(steps))
        def dispatch(self, step):
            self._did(f"dispatch {step}", self.run.dispatch(step))

        @rule(step=st.sampled_from(steps))
        def deliver(self, step):
            self._did(f"deliver {step}", self.run.deliver(step))

        @rule(step=st.sampled_from(steps))
        def ack(self, step):
            self._did(f"ack {step}", self.run.answer(step))

        @rule(path=st.sampled_from(paths))
        def human_edit(self, path):
            self._did(f"human_edit {path}", self.run.human_edit(path, None, None))

        @rule(step=st.sampled_from(steps))
        def retry(self, step):
            self._did(f"retry {step}", self.run.retry(step))

        @rule(step=st.sampled_from(steps))
        def duplicate(self, step):
            self._did(f"duplicate {step}", self.run.duplicate(step))

        @rule(point=st.sampled_from(PREEMPT_CHOICES))
        def preempt(self, point):
            self._did(f"preempt {point or ''}".strip(), self.run.preempt(point))

        @invariant()
        def no_lost_update(self):
            assert self.run.lost_update == 0, "lost_update"

    config = settings(max_examples=max_examples, deadline=None, database=None, derandomize=True,
                      suppress_health_check=list(HealthCheck))
    start = time.perf_counter()
    failure = None
    try:
        run_state_machine_as_test(WorkspaceMachine, settings=config)
    except AssertionError as error:
        failure = error
    seconds = time.perf_counter() - start
    if failure is None:
        return seconds, None, None, None
    notes = getattr(failure, "__notes__", []) or []
    noted = [line.strip() for note in notes for line in str(note).splitlines()]
    from_notes = sum(1 for line in noted
                     if line.startswith("state.") and not line.startswith(("state.teardown", "state.no_lost_update")))
    last = record["last"]
    return seconds, (from_notes or None), last, noted


def bench_counterexample(workload, repeats: int, max_examples: int) -> None:
    protocol = parse_protocol("none")
    print(f"\n[3] first counterexample, protocol none: fencesim sweep+shrink vs Hypothesis stateful "
          f"(max_examples={max_examples}), {repeats} repeats", flush=True)
    found_t, min_t, hyp_t = [], [], []
    found = result = hyp = None
    for _ in range(repeats):
        t_found, t_min, found, result = fencesim_first_counterexample(workload, protocol)
        found_t.append(t_found)
        min_t.append(t_min)
        hyp = hypothesis_first_counterexample(workload, protocol, max_examples)
        hyp_t.append(hyp[0])
    print(f"  fencesim: first lost_update at run {found.run} (seed {found.seed}), {len(found.order)} events; "
          f"shrunk to {len(result.events)} events ({result.reason}, {result.replays} replays): "
          f"{', '.join(str(e) for e in result.events)}", flush=True)
    seconds, from_notes, last, noted = hyp
    if last is None:
        line = f"Hypothesis found NO lost_update within max_examples={max_examples}"
        print("  " + line, flush=True)
        NOTES.append(line)
        steps_txt = "none found"
    else:
        effective = [name for name, done in last if done]
        steps_txt = (f"{from_notes} steps" if from_notes is not None else f"{len(last)} steps (recorded)")
        print(f"  Hypothesis: shrunk example has {steps_txt} "
              f"(from its report: {from_notes if from_notes is not None else 'not parsable'}; "
              f"recorded in the final replay: {len(last)}, of which {len(effective)} had an effect): "
              f"{', '.join(effective)}", flush=True)
    row("seconds to first lost_update (baseline: Hypothesis, shrunk)", f"{median(found_t):.3f}",
        f"{median(hyp_t):.3f}", f"hypothesis/fencesim = {median(hyp_t) / median(found_t):.1f}")
    row("seconds to minimal lost_update (baseline: Hypothesis, shrunk)", f"{median(min_t):.3f}",
        f"{median(hyp_t):.3f}", f"hypothesis/fencesim = {median(hyp_t) / median(min_t):.2f}")
    row("events in minimal counterexample", f"{len(result.events)} ({result.reason})", steps_txt,
        "-")


# -- 4. memory: small vs large sweep ---------------------------------------------------------

def mem_child(seeds: int, workers: int) -> None:
    """Run one sweep and print peak RSS (KiB on Linux) of this process and of its pool workers."""
    workload = load_workload(WORKLOAD)
    start = time.perf_counter()
    summary, _ = sweep(workload, ["none"], seeds, 0, workers, keep_rows=False)
    seconds = time.perf_counter() - start
    print(json.dumps({
        "seeds": seeds, "workers": workers, "seconds": seconds, "runs": summary.runs,
        "maxrss_self_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "maxrss_workers_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    }))


def run_mem_child(seeds: int, workers: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--mem-child", str(seeds), str(workers)],
                         check=True, capture_output=True, text=True, cwd=str(HERE.parent))
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_memory(small: int, large: int, workers: int, mode: str) -> None:
    print(f"\n[4] memory ({mode}): peak RSS of a sweep of {small:,} vs {large:,} seeds, protocol none, "
          f"workers={workers}, keep_rows=False, one subprocess each", flush=True)
    a = run_mem_child(small, workers)
    print(f"  {small:,} seeds: {a['seconds']:.1f} s, main {a['maxrss_self_kib'] / 1024:.1f} MiB, "
          f"largest worker {a['maxrss_workers_kib'] / 1024:.1f} MiB", flush=True)
    b = run_mem_child(large, workers)
    print(f"  {large:,} seeds: {b['seconds']:.1f} s, main {b['maxrss_self_kib'] / 1024:.1f} MiB, "
          f"largest worker {b['maxrss_workers_kib'] / 1024:.1f} MiB", flush=True)
    row(f"peak RSS main process, {large:,} seeds (baseline {small:,})", f"{b['maxrss_self_kib'] / 1024:.1f} MiB",
        f"{a['maxrss_self_kib'] / 1024:.1f} MiB", f"{b['maxrss_self_kib'] / a['maxrss_self_kib']:.3f}")
    if workers > 1:
        row(f"peak RSS largest worker, {large:,} seeds (baseline {small:,})",
            f"{b['maxrss_workers_kib'] / 1024:.1f} MiB", f"{a['maxrss_workers_kib'] / 1024:.1f} MiB",
            f"{b['maxrss_workers_kib'] / a['maxrss_workers_kib']:.3f}")


def print_table(mode: str) -> None:
    headers = ("measure", "fencesim (median)", "baseline (median)", "ratio")
    widths = [max(len(h), *(len(r[i]) for r in ROWS)) for i, h in enumerate(headers)]
    line = " | ".join(h.ljust(w) for h, w in zip(headers, widths))
    print(f"\n== results ({mode}) ==")
    print(line)
    print("-+-".join("-" * w for w in widths))
    for r in ROWS:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))
    for note in NOTES:
        print("note: " + note)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smoke run (default); memory part 10k vs 50k seeds")
    size.add_argument("--full", action="store_true", help="bigger sweeps; memory part 10k vs 200k seeds")
    parser.add_argument("--only", choices=("throughput", "workers", "counterexample", "memory"), action="append",
                        help="run only these parts (repeatable)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mem-workers", type=int, default=2)
    parser.add_argument("--mem-child", nargs=2, type=int, metavar=("SEEDS", "WORKERS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.mem_child:
        mem_child(*args.mem_child)
        return 0
    mode = "full" if args.full else "quick"
    parts = args.only or ["throughput", "workers", "counterexample", "memory"]
    throughput_seeds = 5000 if args.full else 2000
    large = 200_000 if args.full else 50_000
    print(f"fencesim fuzz benchmarks: mode={mode}, workload={WORKLOAD}, repeats={args.repeats}, "
          f"python {sys.version.split()[0]}, cpu_count={os.cpu_count()}", flush=True)
    workload = load_workload(WORKLOAD)
    total = time.perf_counter()
    if "throughput" in parts:
        bench_throughput(workload, throughput_seeds, args.repeats)
    if "workers" in parts:
        bench_workers(workload, 4000, args.repeats)
    if "counterexample" in parts:
        bench_counterexample(workload, args.repeats, max_examples=1000)
    if "memory" in parts:
        bench_memory(10_000, large, args.mem_workers, mode)
    print_table(mode)
    print(f"total wall time {time.perf_counter() - total:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
