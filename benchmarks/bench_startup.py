"""Start-up of the command line: what a command costs before it does any work.

    .venv/bin/python benchmarks/bench_startup.py             # 9 runs of each, medians
    .venv/bin/python benchmarks/bench_startup.py --runs 21

Each command runs in a fresh interpreter, interleaved with the baselines measured in the same run: the bare
interpreter (``python -c pass``) and the command-line library alone (``python -c "import typer"``, the floor
any Typer program pays).  Printed: the median wall time of each, and its ratio to the bare interpreter.  The
commands: ``fencesim --help``, ``explore --help``, ``check`` on a recorded history, and ``explore`` of the
smallest workload (two events deep) -- for a small model, start-up is most of the wall time.

Not a test: it asserts nothing about time.  The numbers go to docs/limits.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCESIM = [sys.executable, "-c", "import sys; from sim.entry import main; sys.argv[0] = 'fencesim'; main()"]

RUNS = {
    "python -c pass (baseline)": [sys.executable, "-c", "pass"],
    "python -c 'import typer'": [sys.executable, "-c", "import typer"],
    "fencesim --help": [*FENCESIM, "--help"],
    "fencesim explore --help": [*FENCESIM, "explore", "--help"],
    "fencesim check clean.jsonl": [*FENCESIM, "check", "scenarios/histories/clean.jsonl"],
    "fencesim explore tiny/plan, 2 events": [*FENCESIM, "explore", "--workload", "tiny", "--protocol", "plan",
                                              "--max-events", "2"],
}


def once(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in RUNS}
    for _ in range(args.runs):  # interleaved: every command sees the same minutes of the machine
        for name, command in RUNS.items():
            times[name].append(once(command))
    base = statistics.median(times["python -c pass (baseline)"])
    print(f"start-up, median of {args.runs} runs each (fresh interpreter per run)")
    print(f"{'command':<40} {'median s':>9} {'x bare python':>14}")
    for name, measured in times.items():
        median = statistics.median(measured)
        print(f"{name:<40} {median:>9.3f} {median / base:>13.1f}x")


if __name__ == "__main__":
    main()
