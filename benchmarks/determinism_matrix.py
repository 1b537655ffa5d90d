"""The determinism matrix: the same inputs give the same bytes, whatever runs them.

    python benchmarks/determinism_matrix.py            # about 3 minutes on 2 cores
    python benchmarks/determinism_matrix.py --seeds 1000

For one workload of each family, every cell runs in a fresh interpreter and
prints one sha256 over (a) the history bytes of every run of the sample and
(b) the sweep's summary (violating runs per invariant, availability counts).
The cells vary what must not matter: the interpreter (two fresh processes),
``PYTHONHASHSEED`` (0, 1 and random), the worker count (1 and 2) and the
backend (local processes, a Dask LocalCluster).  Last, the reference
executor records the three sample histories of ``scenarios/histories`` again
(fixed commit dates, logical time) and compares them with the committed
bytes.  Every digest in a row must be equal; the script exits 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = [("seed-fuzz", ["none", "step-dedupe"]), ("effects-saga", ["unkeyed-retry", "keyed-fingerprint-reconcile"])]
CELL = """
import hashlib, json, sys
from sim.registry import FAMILIES
from sim.search.determinism import digests
from sim.search.sweep import sweep
workload, protocols, backend = sys.argv[1], sys.argv[2].split(";"), sys.argv[5]
seeds, workers = int(sys.argv[3]), int(sys.argv[4])
loaded = FAMILIES.load_workload(workload)
family = FAMILIES.family_for(loaded)
histories = digests(family, loaded, protocols, range(seeds))
summary, _ = sweep(family, loaded, protocols, seeds, workers=workers, backend=backend)
tallies = {label: tally.to_json() for label, tally in summary.tallies.items()}
print(hashlib.sha256(json.dumps([histories, tallies], sort_keys=True).encode()).hexdigest())
"""


def cell(workload: str, protocols: list[str], seeds: int, workers: int, backend: str, hash_seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    done = subprocess.run([sys.executable, "-c", CELL, workload, ";".join(protocols), str(seeds), str(workers),
                           backend], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return "error: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    return done.stdout.strip()[:16]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=300)
    args = parser.parse_args()
    try:
        import distributed  # noqa: F401
        dask = True
    except ImportError:
        dask = False
    configs = [("process A, hash seed 0, 1 worker", 1, "local", "0"),
               ("process B, hash seed 0, 1 worker", 1, "local", "0"),
               ("hash seed 1, 1 worker", 1, "local", "1"),
               ("hash seed random, 2 workers", 2, "local", "random"),
               ("hash seed 1, 2 workers", 2, "local", "1")]
    if dask:
        configs.append(("Dask LocalCluster, 2 workers", 2, "dask", "random"))
    ok = True
    for workload, protocols in CASES:
        print(f"{workload} ({', '.join(protocols)}), {args.seeds} seeds: history bytes + sweep summary")
        seen = []
        for name, workers, backend, hash_seed in configs:
            digest = cell(workload, protocols, args.seeds, workers, backend, hash_seed)
            seen.append(digest)
            print(f"  {name:<36} {digest}")
        same = len(set(seen)) == 1 and not seen[0].startswith("error")
        ok &= same
        print(f"  {'IDENTICAL' if same else 'DIFFERENT'}")
    if shutil.which("git"):
        sys.path.insert(0, str(ROOT))
        from sim.real.driver import run_real
        from sim.registry import FAMILIES

        workspace = FAMILIES.get("workspace")
        print("real executor (git + SQLite): sample histories recorded again against the committed bytes")
        for toml in sorted((ROOT / "scenarios" / "histories").glob("*.toml")):
            scenario = FAMILIES.load_scenario(toml)
            digests = set()
            for _ in range(2):
                run = run_real(scenario, workspace.parse_protocol(scenario.protocol))
                digests.add(hashlib.sha256(run.replay.history.to_jsonl().encode()).hexdigest()[:16])
            committed = hashlib.sha256(toml.with_suffix(".jsonl").read_bytes()).hexdigest()[:16]
            same = digests == {committed}
            ok &= same
            print(f"  {toml.stem:<24} committed {committed}  recorded {', '.join(sorted(digests))}  "
                  f"{'IDENTICAL' if same else 'DIFFERENT'}")
    print(json.dumps({"identical": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
