"""Start-up: ``fencesim --help``, ``check`` and ``explore`` load only what they use.

The heavy libraries -- pandas, NumPy, SciPy, matplotlib, Rich's tables, SimPy (the workspace family's runs),
the web app -- load when a command needs them, never to print help or to check a history.  Measured (not
asserted) by ``benchmarks/bench_startup.py``; what is asserted here is which modules a command loads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "numpy", "scipy", "matplotlib", "rich.table", "simpy", "starlette", "hypothesis")

PROBE = """
import json, sys
args, watched = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.argv = ["fencesim"] + args
from sim.entry import main
try:
    main()
except SystemExit as end:
    code = end.code
heavy = [name for name in watched if name in sys.modules]
sys.__stderr__.write("\\nLOADED " + json.dumps([code, heavy]) + "\\n")
"""


def loaded(args: list[str]) -> tuple[int, list[str]]:
    """The exit code of ``fencesim ARGS`` in a fresh interpreter, and which heavy modules it loaded."""
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args), json.dumps(HEAVY)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    line = [text for text in done.stderr.splitlines() if text.startswith("LOADED ")][-1]
    code, heavy = json.loads(line[len("LOADED "):])
    return code, heavy


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["--help"],
    ["explore", "--help"],
    ["check", "scenarios/histories/clean.jsonl"],
    ["explore", "--workload", "tiny", "--protocol", "plan", "--max-events", "2"],
    ["explore", "--workload", "effects-saga", "--protocol", "keyed", "--max-events", "1"],
], ids=["help", "explore-help", "check", "explore-workspace", "explore-effects"])
def test_light_commands_load_no_heavy_library(args):
    code, heavy = loaded(args)
    assert code in (0, 1) and heavy == []


@pytest.mark.slow
def test_the_probe_sees_a_heavy_library_when_one_is_loaded():
    """The check can fail: ``incidents`` estimates with SciPy, and the probe says so."""
    code, heavy = loaded(["incidents", "--workload", "telemetry-tiny", "--protocol", "plan", "--seeds", "20"])
    assert code == 0 and "scipy" in heavy
