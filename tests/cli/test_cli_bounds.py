"""Bounds of the command line (sim/cli/bounds.py and the checks beside it): every numeric option has a
documented bound enforced with one line and exit 4; output folders that cannot be scanned, edited sweep
states, one-seed reviews, MPLBACKEND and JSON lines with U+2028."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer
from conftest import reaped

from sim.cli import main
from sim.cli.app import app
from sim.cli.bounds import bound_of, bounds, numeric

REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 0
    return code, out.getvalue(), err.getvalue()


def _numeric_options():
    command = typer.main.get_command(app)
    for name, sub in command.commands.items():
        for param in sub.params:
            if numeric(param):
                yield name, param


def test_every_numeric_option_has_a_bound_and_docs_name_it():
    """The table holds every int or float option of every command, and docs/limits.md names each option."""
    limits = (REPO / "docs" / "limits.md").read_text()
    missing = [f"{name} {param.opts[0]}" for name, param in _numeric_options() if bound_of(name, param) is None]
    assert not missing
    for (name, option) in bounds():
        assert f"`{name} {option}`" in limits, f"docs/limits.md does not name {name} {option}"


@pytest.mark.parametrize("args, fragment", [
    (["map", "--budget", "nan"], "nan is not a finite number"),
    (["fuzz", "--budget", "inf"], "inf is not a finite number"),
    (["map", "--workers", "100000"], "from 1 to 64"),
    (["review", "--workers", "100000"], "from 1 to 64"),
    (["fuzz", "--workers", "4096"], "from 1 to 64"),
    (["conform", "-w", "tiny", "-p", "step", "--seeds", "9223372036854775807"], "from 1 to 100,000"),
    (["exposure", "--simulate", "--transitions", "10000001"], "from 1 to 100"),
    (["exposure", "--simulate", "--tasks", "1000000000"], "at most 1,000,000"),
    (["exposure", "-p", "fence==step"], "--protocol applies only to a simulation"),
    (["explore", "--memory-limit", "nan"], "nan is not a finite number"),
    (["cruel", "--budget", "-1"], "more than 0"),
])
def test_an_unbounded_option_is_refused_at_once_with_one_line(args, fragment):
    """Each value the issue found unbounded is refused before any work: exit 4, one line."""
    code, out, err = run(*args)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 4 and len(lines) == 1 and fragment in lines[0], err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", [["fuzz", "-w", "tiny", "--seeds", "1"], ["cruel"], ["map"], ["review"]])
def test_the_root_folder_is_refused_as_an_output(command):
    """--out / (a folder that cannot be scanned) is refused up front, exit 4, one line."""
    code, _, err = run(*command, "--out", "/")
    assert code == 4 and "root of the file system" in err and len(err.strip().splitlines()) == 1


def test_a_folder_whose_entries_vanish_while_scanned_is_refused(tmp_path):
    """An entry that cannot be stat'ed while the folder is scanned (as under /proc) is not fencesim's."""
    from sim.core.outputs import Ownership, foreign_entries

    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    assert foreign_entries(tmp_path, Ownership(lambda path: None)) == ["gone"]
    code, _, err = run("fuzz", "-w", "tiny", "--seeds", "1", "--out", "/proc/self")
    assert code == 4 and "Traceback" not in err


def _interrupted_state(tmp_path: Path) -> Path:
    """A sweep state written by a fuzz run interrupted by SIGINT after its first chunks."""
    out = tmp_path / "sweep"
    process = reaped(subprocess.Popen([sys.executable, "-c", "from sim.entry import main; main()", "fuzz", "-w",
                                       "tiny", "-p", "none", "--seeds", "2000000", "--workers", "1", "--no-advise",
                                       "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True, env={**os.environ, "PYTHONPATH": str(REPO)}))
    state = out / "sweep-state.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the state is first written after the first chunk
        if state.exists() and json.loads(state.read_text())["sweep"]["seeds_done"] > 0:
            break
        time.sleep(0.5)
    for _ in range(3):  # a second and a third Ctrl-C change nothing
        process.send_signal(signal.SIGINT)
        time.sleep(0.02)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 2, err
    assert "the sweep so far is kept" in err
    return out


@pytest.mark.slow
def test_an_edited_state_claiming_a_clean_sweep_is_refused(tmp_path):
    """Three Ctrl-C exit 2 with the state kept; that state, edited to claim no violating run while its
    measures say steps were applied unsafely, is refused on --resume (exit 4, one line)."""
    out = _interrupted_state(tmp_path)
    data = json.loads((out / "sweep-state.json").read_text())
    tally = data["sweep"]["tallies"]["none"]
    assert tally["violating_runs"] > 0
    tally["violating_runs"] = 0
    tally["by_invariant"] = {name: 0 for name in tally["by_invariant"]}
    tally["by_finding"] = {}
    data["sweep"]["found"] = []
    edited = tmp_path / "edited"
    edited.mkdir()
    (edited / "sweep-state.json").write_text(json.dumps(data))
    code, _, err = run("fuzz", "--resume", str(edited))
    assert code == 4 and "counts no violating run" in err and len(err.strip().splitlines()) == 1
    shutil.rmtree(out)


def test_a_state_that_plans_other_work_than_its_runs_is_refused(tmp_path):
    """Counts against seeds: a tally whose planned steps are not its runs times one run's is refused."""
    from sim.cli.fuzz_state import _Bad, _check_progress
    from sim.registry import FAMILIES

    workload = FAMILIES.load_workload("tiny")
    family = FAMILIES.family_for(workload)
    tally = {"runs": 10, "violating_runs": 0,
             "measures": {"steps_planned": 21, "steps_applied": 20, "steps_applied_safely": 20}}
    with pytest.raises(_Bad, match="plan 20"):
        _check_progress(tally, "step-dedupe", family, workload, 0)
    tally["measures"]["steps_planned"] = 20
    _check_progress(tally, "step-dedupe", family, workload, 0)
    tally["measures"]["steps_applied_safely"] = 12
    with pytest.raises(_Bad, match="counts no violating run"):
        _check_progress(tally, "step-dedupe", family, workload, 0)


@pytest.mark.slow
def test_a_review_of_one_seed_writes_its_report(tmp_path):
    """A design with seeds = 1 (inside the documented range) is reviewed: report written, no traceback;
    MPLBACKEND naming no backend changes nothing.  (A shipped design of two protocols: a larger one adds only
    its fixed proofs, about half a minute, to the same check.)"""
    design = (REPO / "scenarios" / "designs" / "pinned-dependencies.toml").read_text()
    path = tmp_path / "design.toml"
    path.write_text(re.sub(r"(?m)^seeds = .*$", "seeds = 1", design))
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "nonsense"}
    done = subprocess.run([sys.executable, "-c", "from sim.entry import main; main()", "review", "--design",
                           str(path), "--out", str(tmp_path / "r"), "--budget", "60"], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert (tmp_path / "r" / "report.html").exists() and (tmp_path / "r" / "summary.md").exists()


def test_metric_cells_without_an_interval_render():
    """A metric of one run has a value and no interval (ci_high None): shown as the value alone."""
    from sim.report.phrases import section_rows

    section = {"metrics": {"keyed": {"m": {"value": 1.0, "ci_low": 0.0, "ci_high": None}}}}
    assert section_rows(section) == (["metric", "keyed"], [["m", "1.00"]])


def test_the_command_line_chooses_its_plotting_backend(monkeypatch):
    """Whatever MPLBACKEND says, the command line sets Agg before matplotlib is imported."""
    monkeypatch.setenv("MPLBACKEND", "nonsense")
    run("matrix")
    assert os.environ["MPLBACKEND"] == "Agg"


def test_a_history_line_holding_u2028_is_one_event(tmp_path):
    """JSON lines split on \\n only: a raw U+2028 (or U+0085) inside a string is text."""
    path = tmp_path / "h.jsonl"
    path.write_text('{"actor":"planner","event":"plan","model":"a\u2028b\u0085c","steps":["s1"]}\r\n',
                    encoding="utf-8")
    code, out, err = run("check", str(path))
    assert code == 0 and "1 events" in out, err
