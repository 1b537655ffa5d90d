"""``fencesim conform``: model and reference executor agree; a planted executor bug is found, shrunk and
exported with both histories; bad input is one line and exit 4."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from sim.real import executor as reference

pytestmark = [pytest.mark.real, pytest.mark.skipif(shutil.which("git") is None, reason="needs git")]

ACCEPTANCE = ("none", "plan", "step-dedupe", "step-dedupe,journal_write=after_write")


@pytest.mark.real_full  # a hundred real runs (25 seeds, four protocols); the record and mid-run tests stay
def test_model_and_reference_executor_agree_on_the_acceptance_protocols(cli, tmp_path):
    """Every run of tiny under the four protocols agrees: verdict per delivery, violations, final files."""
    args = ["conform", "--workload", "tiny", "--seeds", "25", "--workers", "2", "--out", tmp_path, "--json"]
    for protocol in ACCEPTANCE:
        args += ["--protocol", protocol]
    done = cli(*args, timeout=600)
    assert done.returncode == 0, done.stderr + done.stdout
    document = json.loads(done.stdout)
    rows = {row["protocol"]: row for row in document["protocols"]}
    assert set(rows) == set(ACCEPTANCE)
    for row in rows.values():
        assert row["runs"] == row["agreeing"] == 25
        assert row["deliveries"] == row["deliveries_agreeing"] > 0
        assert row["model_violating"] == row["real_violating"]
    assert rows["none"]["real_violating"] > 0 and rows["plan"]["real_violating"] == 0
    assert sum(row["crashes"] for row in rows.values()) > 0, "the seeds must kill the executor at least once"
    assert "every run agrees" in done.stderr
    assert not list(tmp_path.iterdir()), "nothing is exported when everything agrees"


def _planted(tmp_path: Path) -> str:
    """The reference executor without its revision check: only the hash check fences."""
    source = Path(reference.__file__).read_text()
    old = '        elif self.fence != "none" and stamped_rev != rev:\n            verdict = "rejected:stale_rev"\n'
    assert old in source
    path = tmp_path / "no_rev_check.py"
    path.write_text(source.replace(old, ""))
    return f"{sys.executable} -I {path}"


@pytest.mark.real_full  # about two minutes: thirty real seeds, then a shrink whose every probe is a real run
def test_a_planted_executor_bug_is_found_shrunk_and_exported(cli, tmp_path):
    """The rev check removed: conform disagrees (exit 1), shrinks to a short 1-minimal order, exports the
    scenario, both histories and a side-by-side view; replaying the scenario reproduces it with that executor
    and agrees with the reference one."""
    out = tmp_path / "out"
    executor = _planted(tmp_path)
    done = cli("conform", "-w", "tiny", "-p", "step-dedupe", "--seeds", "30", "--out", out, "--executor", executor)
    assert done.returncode == 1, done.stderr + done.stdout
    assert "DISAGREE step-dedupe" in done.stdout and "rejected:stale_rev" in done.stdout
    scenarios = sorted(out.glob("*.toml"))
    assert scenarios
    stem = scenarios[0].name[:-len(".toml")]
    for suffix in (".model.jsonl", ".real.jsonl", ".side-by-side.txt"):
        assert (out / f"{stem}{suffix}").stat().st_size > 0
    side = (out / f"{stem}.side-by-side.txt").read_text()
    assert "!=" in side and "rejected:pre_hash" in side
    from sim.registry import FAMILIES

    scenario = FAMILIES.load_scenario(scenarios[0])
    assert len(scenario.events) <= 6
    again = cli("conform", "--scenario", scenarios[0], "--executor", executor, "--out", tmp_path / "again")
    assert again.returncode == 1, again.stdout
    reference_run = cli("conform", "--scenario", scenarios[0], "--out", tmp_path / "ref")
    assert reference_run.returncode == 0, reference_run.stdout


def test_an_executor_that_cannot_start_is_an_input_error(cli, tmp_path):
    """An executor that prints something other than JSON is found before any seed runs: one line, exit 4."""
    executor = f"{sys.executable} -c \"print('hello')\""
    done = cli("conform", "-w", "tiny", "--seeds", "2", "--out", tmp_path, "--executor", executor)
    assert done.returncode == 4, done.stderr
    assert "the executor does not work" in done.stderr and "not JSON" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_an_executor_that_fails_mid_run_is_a_disagreement_with_its_partial_history(cli, tmp_path):
    """An executor that fails on a later delivery: the runs that reach it disagree (exit 1) with the reason;
    the export keeps the real history up to the failure and is not shrunk (every probe would fail alike)."""
    source = Path(reference.__file__).read_text()
    old = "        step, path, patch = message[\"step\"], message[\"path\"], message[\"patch\"]\n"
    assert old in source
    path = tmp_path / "fails_on_s2.py"
    path.write_text(source.replace(old, old + "        if step == 's2':\n            raise OSError('disk full')\n"))
    out = tmp_path / "out"
    done = cli("conform", "-w", "tiny", "--seeds", "8", "--out", out, "--executor", f"{sys.executable} -I {path}")
    assert done.returncode == 1, done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    assert "the executor failed: OSError: disk full" in done.stdout
    real = sorted(out.glob("*.real.jsonl"))
    assert real and '"event":"deliver"' in real[0].read_text()


@pytest.mark.parametrize("args, message", [
    (["--executor", "no-such-executor-program"], "not a program"),
    (["--workload", "effects-pr"], "workspace family"),
    (["--record", "x.jsonl"], "--record needs --scenario"),
    (["--seeds", "0"], "--seeds"),
    (["--protocol", "fence=sideways"], "fence"),
])
def test_bad_input_is_one_line_and_exit_4(cli, tmp_path, args, message):
    done = cli("conform", "--out", tmp_path / "out", *args, cwd=tmp_path)
    assert done.returncode == 4, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_record_writes_the_real_history(cli, tmp_path, repo_root):
    """--record with --scenario writes the real executor's history; fencesim check reads it."""
    target = tmp_path / "h.jsonl"
    done = cli("conform", "--scenario", repo_root / "scenarios/histories/journal-loss.toml", "--record", target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert target.read_text() == (repo_root / "scenarios/histories/journal-loss.jsonl").read_text()
    checked = cli("check", target)
    assert checked.returncode == 1 and "journal_loss" in checked.stdout
