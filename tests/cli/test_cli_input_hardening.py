"""Every reproducer of a traceback, a blind pass or a sharp edge in reading input ends as it should: exit 4
with one line naming the file (and line), exit 6 where a check cannot judge, never a traceback -- from the
environment (FENCESIM_FAMILIES), the command line (huge integers, a protocol twice) and signals too."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sim.cli.app import main

REPO = Path(__file__).resolve().parents[2]
CLEAN = (REPO / "scenarios" / "histories" / "clean.jsonl").read_text().splitlines()
STORY = (REPO / "scenarios" / "runtime" / "pr_lost_response.toml").read_text()
SEED = (REPO / "scenarios" / "seed" / "concurrent_edit.toml").read_text()
ACCEPTED = {"index": 0, "time": 0, "actor": "queue", "event": "accepted", "task": "task_42", "workflow_version": 1}
COMMITTED = {"index": 1, "time": 2, "actor": "git", "event": "committed", "task": "task_42", "transition": "open_pr",
             "generation": 1, "key": "k", "fingerprint": "f", "effect": "pull_request#812",
             "effect_class": "keyed_creation", "compensation": "close_pr"}


def run_cli(*args) -> tuple[int, str, str]:
    """``fencesim ARGS`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


def _one_line(code: int, stderr: str, expected: int = 4) -> str:
    assert code == expected, stderr
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("fencesim: "), stderr
    return lines[0]


def _jsonl(path: Path, rows) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


# -- check never passes blind -------------------------------------------------------------------------------

BLIND = {
    "duplicated_key": lambda: [CLEAN[0], CLEAN[1], CLEAN[2].replace('"verdict":"applied"',
                                                                    '"verdict":"applied","verdict":"deduped"')],
    "unknown_verdict": lambda: [line.replace('"verdict":"applied"', '"verdict":"accepted"') for line in CLEAN],
    "misspelt_event": lambda: [line.replace('"event":"deliver"', '"event":"delivr"') for line in CLEAN],
    "mixed_families": lambda: [*CLEAN, json.dumps({**COMMITTED, "index": 99})],
    "indices_all_zero": lambda: [json.dumps({**json.loads(line), "index": 0}) for line in CLEAN],
    "succeeded_after_a_failure": lambda: [
        ACCEPTED, COMMITTED,
        {"index": 2, "time": 3, "actor": "w1", "event": "receipt_recorded", "task": "task_42",
         "transition": "open_pr", "effect": "pull_request#812"},
        {"index": 3, "time": 4, "actor": "w1", "event": "transition_failed", "task": "task_42",
         "transition": "create_preview"},
        {"index": 4, "time": 5, "actor": "w2", "event": "task_terminal", "task": "task_42", "outcome": "succeeded"}],
}


@pytest.mark.parametrize("kind", sorted(BLIND))
def test_check_never_passes_the_six_blind_histories(kind, tmp_path):
    """Each kind of history check used to pass (exit 0) is refused (4) or judged not_evaluable (6)."""
    code, _, stderr = run_cli("check", _jsonl(tmp_path / "h.jsonl", BLIND[kind]()))
    assert code in (4, 6), stderr
    if code == 4:
        assert "h.jsonl" in _one_line(code, stderr)


# -- the tracebacks the fuzz found: each one clear line -----------------------------------------------------

def _history_with(row) -> list:
    return [ACCEPTED, {"index": 1, "time": 1, "actor": "w1", "task": "task_42", **row}]


@pytest.mark.parametrize("rows, fragment", [
    ([CLEAN[0][:-1] + ',"copy":' + "9" * 5000 + "}"], "5000 digits"),
    (_history_with({"event": "migrated", "to_version": 2, "renamed": [1]}), "[old, new] pairs"),
    (_history_with({"event": "checkpoint_saved", "completed": [["open_pr"]]}), "list of names"),
    ([{"actor": "executor", "event": "x" * 100_000}], "100000 characters"),
])
def test_check_refuses_histories_that_used_to_crash(rows, fragment, tmp_path):
    """A huge integer, renamed: [1], completed: [["open_pr"]], a 100,000-character event: one line."""
    line = _one_line(*run_cli("check", _jsonl(tmp_path / "h.jsonl", rows))[::2])
    assert fragment in line and len(line) < 1000 and "h.jsonl:" in line


@pytest.mark.parametrize("text, fragment", [
    (SEED.replace('path = "app.py"', 'path = { x = "app.py" }', 1), "unknown path a table"),
    (STORY.replace('title = "Fix the flaky login test"', "title = 07:32:00"), "07:32:00 (a TOML time)"),
    (STORY.replace('workflow = ["open_pr"]', 'workflow = "generic:' + "9" * 5000 + '"'), "from 1 to 100"),
    (STORY.replace('"09:00:33 close"', '"@1e20 close"'), "past the limit"),
    ("family = false\n" + SEED, "unknown family false"),
    ("\ufeff" + SEED, "byte-order mark"),
])
def test_run_refuses_scenarios_that_used_to_crash_or_pass(text, fragment, tmp_path):
    """A table for a path, a TOML time in arguments, generic:<5000 digits>, a time past 10^15 s, a
    boolean family, a BOM: one line naming the file, no Python repr."""
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    line = _one_line(*run_cli("run", path)[::2])
    assert fragment in line and "s.toml" in line and "datetime" not in line and "False" not in line


def test_non_utf8_text_names_its_position(tmp_path):
    """A Latin-1 byte in a scenario names its line and column."""
    path = tmp_path / "s.toml"
    path.write_bytes(SEED.replace("plan =", "pl\xe9n =", 1).encode("latin-1"))
    assert "s.toml:5: not UTF-8 text at column 3" in _one_line(*run_cli("run", path)[::2])


@pytest.mark.parametrize("args", [
    ("conform", "--workers", "1" + "0" * 30, "--seeds", "2"),
    ("conform", "--seeds", "1" + "0" * 30),
    ("fuzz", "--seeds", "9" * 40),
])
def test_integer_options_beyond_64_bits_are_usage_errors(args):
    """--workers or --seeds near 10^30 is a usage error (it overflowed in C before)."""
    assert "too large" in _one_line(*run_cli(*args)[::2])


# -- sharp edges of reading input ---------------------------------------------------------------------------

@pytest.mark.parametrize("protocols, fragment", [
    (("step", "step"), "names 'step' more than once"),
    (("step-dedupe", "fence=step,dedupe=journal"), "is the same protocol as 'step-dedupe'"),
])
def test_run_refuses_a_protocol_twice(protocols, fragment):
    """run refuses literal duplicates and equal protocols spelt differently."""
    args = [a for p in protocols for a in ("-p", p)]
    assert fragment in _one_line(*run_cli("run", REPO / "scenarios/seed/concurrent_edit.toml", *args)[::2])


def test_run_json_renders_no_event_table():
    """run --json: the JSON on stdout, one line per run on stderr, no table of events."""
    code, stdout, stderr = run_cli("run", REPO / "scenarios/seed/concurrent_edit.toml", "-p", "step", "--json")
    assert code == 0 and json.loads(stdout)[0]["protocol"] == "step"
    assert "== concurrent_edit" not in stderr and "actor" not in stderr
    assert "concurrent_edit under step: outcome rejected:stale_rev" in stderr


def test_cruel_json_renders_no_table_and_budget_marks_cells_not_run(tmp_path):
    """cruel --json prints no grid table; --budget stops the grid and marks the cells it did not run."""
    code, stdout, stderr = run_cli("cruel", "-p", "keyed", "--budget", "0.000001", "--json", "--out", tmp_path)
    document = json.loads(stdout)["keyed"]
    cells = [cell for boundaries in document.values() for faults in boundaries.values() for cell in faults.values()]
    assert cells and set(cells) == {"not_run"} and code == 0
    assert "┃" not in stderr and "--budget stopped the grid" in stderr


def test_cruel_refuses_a_bad_budget(tmp_path):
    """--budget must be a positive number of seconds."""
    assert "--budget" in _one_line(*run_cli("cruel", "--budget", "-1", "--out", tmp_path)[::2])


def test_a_design_given_as_a_workload_is_named(tmp_path):
    """fuzz --workload DESIGN says it is a design and how to review it (not 'did you mean protocol')."""
    line = _one_line(*run_cli("fuzz", "--workload", REPO / "scenarios/designs/three-files.toml", "--seeds", "1",
                              "--out", tmp_path)[::2])
    assert "this is a design file" in line and "fencesim review --design" in line and "three-files.toml:" in line


def test_a_workload_given_as_a_design_is_named(tmp_path):
    """review --design WORKLOAD says it is a workload and how to fuzz it."""
    line = _one_line(*run_cli("review", "--design", REPO / "scenarios/workloads/tiny.toml", "--out", tmp_path)[::2])
    assert "this is a workload file" in line and "fencesim fuzz --workload" in line


def test_a_workload_given_to_run_is_named():
    """run WORKLOAD says it is a workload."""
    assert "this is a workload file" in _one_line(*run_cli("run", REPO / "scenarios/workloads/tiny.toml")[::2])


def test_a_wrong_workload_path_names_the_design_and_line(tmp_path):
    """A design whose workload file does not exist names the design's file and the workload line."""
    design = tmp_path / "design.toml"
    design.write_text('name = "d"\nprotocols = ["step"]\nworkload = "monorepo-wl.toml"\n', encoding="utf-8")
    line = _one_line(*run_cli("review", "--design", design, "--out", tmp_path / "out")[::2])
    assert f"{design}:3: workload 'monorepo-wl.toml': no such file" in line


def test_a_design_naming_one_protocol_twice_is_refused(tmp_path):
    """A design's protocols may not name one protocol twice, however spelt."""
    design = tmp_path / "design.toml"
    design.write_text('workload = "tiny"\nprotocols = ["step-dedupe", "fence=step,dedupe=journal"]\n')
    assert "spelt otherwise" in _one_line(*run_cli("review", "--design", design, "--out", tmp_path / "o")[::2])


# -- the environment and signals (fresh processes) ----------------------------------------------------------

BAD_MODULES = {"raises": "raise ValueError('boom')\n", "exits": "import sys\nsys.exit(0)\n",
               "exits_quietly": "raise SystemExit\n"}


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("spec", [".", "..x", ".sim", "raises", "exits", "exits_quietly", "a/b:FAMILY"])
def test_a_bad_family_module_is_one_line(spec, cli, tmp_path):
    """FENCESIM_FAMILIES naming a relative module, a path, a module that raises or exits: exit 4, one line,
    never 'a bug in fencesim', never a silent exit 0."""
    for name, body in BAD_MODULES.items():
        (tmp_path / f"{name}.py").write_text(body)
    history = _jsonl(tmp_path / "h.jsonl", CLEAN)
    done = cli("check", history, env_extra={"FENCESIM_FAMILIES": spec, "PYTHONPATH": str(tmp_path)})
    line = _one_line(done.returncode, done.stderr)
    assert "FENCESIM_FAMILIES" in line and "bug in fencesim" not in line


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("command", [["matrix"], ["exposure"], ["run", "scenarios/seed/concurrent_edit.toml"]])
def test_every_command_refuses_a_bad_family_variable(command, cli):
    """Commands that need no family module (matrix, exposure) refuse a bad FENCESIM_FAMILIES like the others."""
    done = cli(*command, env_extra={"FENCESIM_FAMILIES": "nonexistent"})
    line = _one_line(done.returncode, done.stderr)
    assert "FENCESIM_FAMILIES" in line


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_two_sigterms_end_with_exit_two(tmp_path):
    """Two SIGTERMs 50 ms apart during a command end with exit 2 and no traceback (the second one used to
    kill the process with signal 15 while it was exiting)."""
    prelude = ("import sys, time\nimport sim.families.workspace.matrix as m\n"
               "def slow():\n    print('ready', file=sys.stderr, flush=True)\n    time.sleep(60)\n"
               "m.compute_matrix = slow\nfrom sim.cli import main\nmain()\n")
    for _ in range(3):
        process = subprocess.Popen([sys.executable, "-c", prelude, "matrix"], cwd=REPO, stderr=subprocess.PIPE,
                                   text=True, env=dict(os.environ, NO_COLOR="1"))
        assert process.stderr.readline().strip() == "ready"
        process.send_signal(signal.SIGTERM)
        time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        stderr = process.communicate(timeout=60)[1]
        assert process.returncode == 2 and "Traceback" not in stderr, stderr


def test_the_determinism_check_hash_seed_stays_in_range():
    """The fresh interpreter's PYTHONHASHSEED never exceeds what Python accepts (4294967295 wraps to 0)."""
    from sim.cli.determinism import other_hash_seed

    assert [other_hash_seed(s) for s in ("4294967295", "7", None, "random")] == ["0", "8", "4242", "4242"]


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.slow  # over 3 s: outside the fast lane
def test_fuzz_checks_determinism_under_the_largest_hash_seed(tmp_path):
    """PYTHONHASHSEED=4294967295 in the environment: the fresh interpreter gets 0, and the check passes."""
    done = subprocess.run([sys.executable, "-c", "from sim.cli import main; main()", "fuzz", "-w", "tiny", "-p",
                           "plan", "--seeds", "3", "--workers", "1", "--no-advise", "--out", str(tmp_path / "o"),
                           "--check-determinism", "--json"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONHASHSEED": "4294967295"})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert json.loads(done.stdout)["determinism"]["hash_seed"] == "0"


def test_check_lists_at_most_a_hundred_violations(tmp_path):
    """A history with thousands of violations lists the first hundred on the terminal and counts the rest."""
    rows = []
    for task in range(150):
        base = {"time": len(rows), "task": f"t{task}"}
        rows += [{**base, "actor": "queue", "event": "accepted"},
                 {**COMMITTED, **base, "effect": f"pr#{task}"},
                 {**base, "actor": "w1", "event": "task_terminal", "outcome": "failed"}]
    code, stdout, _ = run_cli("check", _jsonl(tmp_path / "h.jsonl", [{**r, "index": i} for i, r in enumerate(rows)]))
    assert code == 1 and stdout.count("VIOLATED") == 100 and "... and 50 more violation(s)" in stdout


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.slow  # over 3 s: outside the fast lane
def test_a_sweep_interrupted_before_its_first_chunk_resumes(tmp_path):
    """An interrupt before the first chunk ends leaves a state that --resume accepts (it used to lack the
    saturation curve, so the printed resume command was refused)."""
    prelude = ("import sim.search.pipeline as p\n"
               "def interrupted(*args, **kwargs):\n    raise KeyboardInterrupt\n"
               "p.fuzz = interrupted\nfrom sim.cli import main\nmain()\n")
    out = tmp_path / "sw"
    cut = subprocess.run([sys.executable, "-c", prelude, "fuzz", "-w", "tiny", "-p", "plan", "--seeds", "300",
                          "--workers", "1", "--no-advise", "--out", str(out)], cwd=REPO, capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, NO_COLOR="1"))
    assert cut.returncode == 2 and f"fencesim fuzz --resume {out}" in cut.stderr, cut.stderr
    resumed = subprocess.run([sys.executable, "-c", "from sim.cli import main; main()", "fuzz", "--resume", str(out),
                              "--json"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["seeds_done"] == 300


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("command", [["run"], ["review", "--seeds", "2", "--design"]])
def test_a_very_long_path_is_named_by_its_start_and_end(command, cli, tmp_path):
    """A 4,995-character path is not echoed whole: its start, its end and its length, on one short line."""
    done = cli(*command, "p" * 4990 + ".toml")
    line = _one_line(done.returncode, done.stderr)
    assert len(line) < 300 and "4,995 characters" in line and line.count("p") < 200


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_emoji_shortcodes_in_a_value_are_shown_as_written(cli):
    """':x:' in a knob value is the user's text, never rendered as an emoji."""
    done = cli("run", "-p", "fence=:x:", "scenarios/seed/concurrent_edit.toml")
    assert "':x:'" in _one_line(done.returncode, done.stderr)
