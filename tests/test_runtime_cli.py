"""``fencesim cruel`` and ``fencesim exposure`` through the command line: output and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fencesim(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from sim.cli import main; main()", *args],
                          capture_output=True, text=True, cwd=cwd)


def test_exposure_json_defaults():
    """With no flags, --json gives exactly the seed's five numbers."""
    done = fencesim("exposure", "--json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["analytic"] == {
        "requests": 70000, "ambiguous": 2870, "already_committed": 1722, "auto_reconciled": 2861.39,
        "human_exceptions": 8.61, "human_exceptions_rounded": 9}


def test_exposure_flags_and_bad_rate():
    """Rates are flags; a rate above one is an input error (exit 4, one line)."""
    done = fencesim("exposure", "--json", "--tasks", "100", "--transitions", "2", "--ambiguous-rate", "0.5")
    assert json.loads(done.stdout)["analytic"]["ambiguous"] == 100
    bad = fencesim("exposure", "--ambiguous-rate", "4.1")
    assert bad.returncode == 4 and "between 0 and 1" in bad.stderr


def test_exposure_simulate_json_shape():
    """--simulate adds {preset: {metric: {value, ci_low, ci_high}}} and reports progress on stderr."""
    done = fencesim("exposure", "--json", "--simulate", "--seeds", "100", "-p", "keyed")
    assert done.returncode == 0
    document = json.loads(done.stdout)
    assert set(document["simulated"]["keyed"]["duplicate_effects"]) == {"value", "ci_low", "ci_high"}
    assert "simulating keyed" in done.stderr


def test_cruel_safe_protocol_exits_zero(tmp_path):
    """keyed-fingerprint-reconcile: every cell ok, exit 0, no files."""
    done = fencesim("cruel", "--protocol", "keyed-fingerprint-reconcile", "--json", "--out", str(tmp_path / "cx"))
    assert done.returncode == 0
    grid = json.loads(done.stdout)["keyed-fingerprint-reconcile"]
    assert {cell for b in grid.values() for f in b.values() for cell in f.values()} == {"ok"}
    assert not (tmp_path / "cx").exists()


def test_cruel_unkeyed_exits_one_and_counterexample_replays(tmp_path):
    """unkeyed-retry: exit 1, counterexample files, and 'fencesim run FILE' reproduces the violation."""
    out = tmp_path / "cx"
    done = fencesim("cruel", "--protocol", "unkeyed-retry", "--out", str(out))
    assert done.returncode == 1
    files = sorted(out.glob("*.toml"))
    assert len(files) == 32
    assert "fencesim run" in done.stdout
    replay = fencesim("run", str(files[0]), "--json")
    assert replay.returncode == 1
    result = json.loads(replay.stdout)[0]
    assert "duplicate_effect" in {v["invariant"] for v in result["violations"]}


def test_cruel_default_out_is_under_the_current_directory(tmp_path):
    """Without --out, counterexamples go to ./counterexamples/cruel."""
    done = fencesim("cruel", "-p", "keyed", cwd=tmp_path)
    assert done.returncode == 1
    assert list((tmp_path / "counterexamples" / "cruel").glob("keyed__*.toml"))


def test_run_story_exits_zero_and_shows_reconciliation():
    """fencesim run pr_lost_response.toml shows the reconciliation and the receipt, exit 0."""
    done = fencesim("run", "scenarios/runtime/pr_lost_response.toml")
    assert done.returncode == 0
    assert "reconciled" in done.stdout and "receipt_recorded" in done.stdout and "pull_request#812" in done.stdout


def test_cruel_bad_protocol_is_an_input_error():
    """An unknown preset is one line and exit 4."""
    done = fencesim("cruel", "-p", "keyed-magic")
    assert done.returncode == 4 and "unknown runtime preset" in done.stderr
