"""fuzz in CI: budgets, baselines, JUnit, resume after a kill, and the Dask backend -- all end as promised."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMMON = ["-w", "seed-fuzz", "-p", "none", "-p", "step-dedupe", "--json"]


def _document(done, out):
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return json.loads(done.stdout.replace(str(out), "OUT"))


def test_baseline_turns_known_violations_green_and_new_ones_red(cli, tmp_path):
    """Written baseline: the same run passes (known); a new protocol's violation fails; a missing one is fixed."""
    base = tmp_path / "baseline.json"
    first = cli("fuzz", *COMMON, "--seeds", "300", "--out", tmp_path / "a", "--write-baseline", base, "--no-advise")
    assert first.returncode == 1 and json.loads(base.read_text())["entries"]
    again = cli("fuzz", *COMMON, "--seeds", "300", "--out", tmp_path / "b", "--baseline", base, "--no-advise")
    assert again.returncode == 0, again.stderr
    document = json.loads(again.stdout)
    assert document["baseline"]["new"] == 0 and all(c["baseline"] == "known" for c in document["counterexamples"])
    new = cli("fuzz", *COMMON, "-p", "fence=step,stamp_at=apply", "--seeds", "300", "--out", tmp_path / "c",
              "--baseline", base, "--no-advise")
    assert new.returncode == 1 and json.loads(new.stdout)["baseline"]["new"] >= 1
    fixed = cli("fuzz", "-w", "seed-fuzz", "-p", "step-dedupe", "--seeds", "300", "--out", tmp_path / "d",
                "--baseline", base, "--no-advise", "--json")
    assert fixed.returncode == 0 and {e["protocol"] for e in json.loads(fixed.stdout)["baseline"]["fixed"]} == {"none"}


def test_a_corrupt_baseline_is_one_line_and_exit_4(cli, tmp_path):
    """A baseline that is not one is refused before any work."""
    bad = tmp_path / "b.json"
    bad.write_text("{not json")
    done = cli("fuzz", *COMMON, "--seeds", "10", "--out", tmp_path, "--baseline", bad)
    assert done.returncode == 4 and "not a baseline" in done.stderr and "Traceback" not in done.stderr


def test_junit_carries_properties_times_and_liveness(cli, tmp_path):
    """One suite per protocol with its seed range, commit and version; a liveness case per protocol."""
    junit = tmp_path / "fuzz.xml"
    done = cli("fuzz", *COMMON, "-p", "none,overlap_check=on", "--seeds", "200", "--out", tmp_path, "--junit", junit,
               "--no-advise")
    assert done.returncode == 1
    root = ET.parse(junit).getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"fencesim fuzz none", "fencesim fuzz step-dedupe", "fencesim fuzz none,overlap_check=on"}
    props = {p.get("name"): p.get("value") for p in suites["fencesim fuzz none"].iter("property")}
    assert props["seeds"] == "0..199" and props["workload"] == "seed-fuzz" and props["commit"] and props["fencesim_version"]
    cases = {c.get("name"): c for c in suites["fencesim fuzz none"].iter("testcase")}
    assert "liveness" in cases and all(c.get("time") is not None for c in cases.values())
    assert cases["lost_update"].find("failure") is not None
    nothing = {c.get("name"): c for c in suites["fencesim fuzz none,overlap_check=on"].iter("testcase")}
    assert "applies nothing" in nothing["liveness"].find("failure").get("message")


def test_budget_ends_a_hard_search_in_about_its_time(cli, tmp_path):
    """--budget 5 on ten million seeds ends within seconds, names the budget and still exports what it found."""
    started = time.monotonic()
    done = cli("fuzz", "-w", "multi-file", "-p", "none", "--seeds", "10000000", "--budget", "5", "--out", tmp_path,
               "--json", timeout=300)
    elapsed = time.monotonic() - started
    assert done.returncode == 1, done.stderr[-2000:]
    document = json.loads(done.stdout)
    assert document["stopped"] == "--budget" and document["runs"] < 10_000_000
    assert document["counterexamples"] and Path(document["counterexamples"][0]["file"]).exists()
    assert elapsed < 60


def test_exhaustive_budget_says_nothing_is_proved(cli):
    """A budget that stops --exhaustive reports it incomplete and proves nothing."""
    done = cli("fuzz", "-w", "tiny", "--exhaustive", "--max-events", "10", "-p", "plan", "--budget", "1", "--json")
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)["protocols"]
    assert result["complete"] is False and result["end"] == "--budget" and result["proved_absent"] == []


@pytest.mark.slow
def test_a_killed_sweep_resumes_to_the_same_output(tmp_path):
    """SIGTERM mid-sweep exits 2 and keeps the sweep's state; --resume ends with the uninterrupted JSON."""
    args = [sys.executable, "-c", "from sim.cli import main; main()", "fuzz", *COMMON, "--seeds", "40000",
            "--workers", "2", "--no-advise"]
    env = {**os.environ, "NO_COLOR": "1"}
    whole = subprocess.run([*args, "--out", str(tmp_path / "whole")], cwd=REPO, env=env, capture_output=True,
                           text=True, timeout=600)
    out = tmp_path / "cut"
    process = subprocess.Popen([*args, "--out", str(out)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    state = out / "sweep-state.json"
    deadline = time.monotonic() + 120
    while not state.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2, stderr
    assert "Traceback" not in stderr
    assert json.loads(state.read_text())["sweep"]["seeds_done"] < 40000
    resumed = subprocess.run([sys.executable, "-c", "from sim.cli import main; main()", "fuzz", "--resume", str(out),
                              "--json"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert _document(resumed, out) == _document(whole, tmp_path / "whole")
    assert not state.exists()


@pytest.mark.slow
def test_dask_backend_equals_the_local_one(cli, tmp_path):
    """--backend dask on a LocalCluster of two workers gives the local backend's output."""
    pytest.importorskip("dask.distributed")
    local = cli("fuzz", *COMMON, "--seeds", "1500", "--workers", "2", "--no-advise", "--out", tmp_path / "l")
    dask = cli("fuzz", *COMMON, "--seeds", "1500", "--workers", "2", "--no-advise", "--backend", "dask",
               "--out", tmp_path / "d", timeout=300)
    assert _document(dask, tmp_path / "d") == _document(local, tmp_path / "l")
