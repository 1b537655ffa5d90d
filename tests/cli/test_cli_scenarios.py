"""fencesim matrix, run and check (sim.cli.scenarios) as subprocesses: JSON output, exit codes, and one-line
input errors, for both families."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.core.history import History

REPO_ROOT = Path(__file__).resolve().parents[2]
PRESET_ARGS = ("--protocol", "none", "--protocol", "plan", "--protocol", "step", "--protocol", "step-dedupe")
SEED_FILES = ("scenarios/seed/concurrent_edit.toml", "scenarios/seed/preemption_retry.toml",
              "scenarios/seed/replan_drift.toml")
SCENARIO_HEAD = """\
name = "bad"
files = { "app.py" = "v0" }
plan = [ { id = "s1", path = "app.py", patch = "v1" } ]
"""


def _assert_one_line_input_error(completed):
    assert completed.returncode == 4, completed.stderr
    assert "Traceback" not in completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith("fencesim: ")
    return lines[0]


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_matrix_json_has_table_seed_code_differences(cli):
    """'matrix --json' prints one JSON document with table, seed_code and differences, and exits 0."""
    completed = cli("matrix", "--json")
    assert completed.returncode == 0, completed.stderr
    document = json.loads(completed.stdout)
    assert {"table", "seed_code", "differences"} <= set(document)
    assert len(document["differences"]) == 5


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_run_all_seeds_under_all_presets_meets_expect(cli):
    """Running the three seeds under the four presets gives 12 JSON entries, each meeting its [expect]."""
    completed = cli("run", *SEED_FILES, *PRESET_ARGS, "--json")
    assert completed.returncode in (0, 1), completed.stderr
    entries = json.loads(completed.stdout)
    assert len(entries) == 12
    for entry in entries:
        assert {"scenario", "protocol", "verdicts", "violations", "history"} <= set(entry)
        assert entry["expect_met"] is True, (entry["scenario"], entry["protocol"])
    assert sorted((e["scenario"], e["protocol"]) for e in entries) == sorted(
        (s, p) for s in ("concurrent_edit", "preemption_retry", "replan_drift")
        for p in ("none", "plan", "step", "step-dedupe"))


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_run_with_violation_exits_one_and_reports_it(cli):
    """concurrent_edit under fence=step,stamp_at=apply exits 1 and reports lost_update."""
    completed = cli("run", SEED_FILES[0], "--protocol", "fence=step,stamp_at=apply", "--json")
    assert completed.returncode == 1, completed.stderr
    entry, = json.loads(completed.stdout)
    assert "lost_update" in [v["invariant"] for v in entry["violations"]]


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_run_without_violation_exits_zero(cli):
    """concurrent_edit under step exits 0 with no violation."""
    completed = cli("run", SEED_FILES[0], "--protocol", "step", "--json")
    assert completed.returncode == 0, completed.stderr
    entry, = json.loads(completed.stdout)
    assert entry["violations"] == [] and entry["outcome"] == "rejected:stale_rev"


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_run_human_output_names_the_violation(cli):
    """Without --json the human report on stdout names the violated invariant."""
    completed = cli("run", SEED_FILES[0], "--protocol", "fence=step,stamp_at=apply")
    assert completed.returncode == 1
    assert "lost_update" in completed.stdout


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize(
    ("events", "fragment"),
    [('events = [ "plan",\n  "dispatch s1"\n  "deliver s1" ]\n', "malformed TOML"),
     ('events = [ "plan", "explode s1" ]\n', "unknown event"),
     ('events = [ "plan", "dispatch s9" ]\n', "unknown step")],
    ids=["malformed_toml", "unknown_event", "unknown_step"],
)
def test_bad_scenario_exits_four_with_one_line(cli, tmp_path, events, fragment):
    """A bad scenario file exits 4 with exactly one line on stderr, naming the file and no traceback."""
    path = tmp_path / "bad.toml"
    path.write_text(SCENARIO_HEAD + events, encoding="utf-8")
    line = _assert_one_line_input_error(cli("run", path))
    assert "bad.toml:" in line and fragment in line


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_unknown_knob_exits_four_with_one_line(cli):
    """An unknown protocol knob exits 4 with one line listing the knobs."""
    line = _assert_one_line_input_error(cli("run", SEED_FILES[0], "--protocol", "step,colour=red"))
    assert "colour" in line and "fence" in line


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_missing_scenario_file_exits_four_with_one_line(cli):
    """A scenario file that does not exist exits 4 with one line naming it."""
    line = _assert_one_line_input_error(cli("run", "scenarios/seed/absent.toml"))
    assert "absent.toml" in line


def _write_history(tmp_path, rows, name="h.jsonl"):
    path = tmp_path / name
    path.write_text(History.from_dicts(rows).to_jsonl(), encoding="utf-8")
    return path


APPLIED = {"actor": "executor", "event": "deliver", "step": "s1", "path": "app.py", "verdict": "applied",
           "fence": "step", "dedupe": "journal", "stamped_base_rev": 0, "rev_at_apply": 0,
           "hash_before": "h0", "expected_prior_hash": "h0", "journal_key": "s1@0"}


def test_check_violating_history_exits_one(cli, tmp_path):
    """'check' on a history with a step applied twice exits 1 and names duplicate_effect."""
    path = _write_history(tmp_path, [APPLIED, dict(APPLIED, rev_at_apply=1, stamped_base_rev=1, hash_before="h1",
                                                   expected_prior_hash="h1", journal_key="s1@1")])
    completed = cli("check", path, "--json")
    assert completed.returncode == 1, completed.stderr
    assert [v["invariant"] for v in json.loads(completed.stdout)["violations"]] == ["duplicate_effect"]


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_check_clean_history_exits_zero(cli, tmp_path):
    """'check' on a clean recorded history exits 0 with every check ok."""
    path = _write_history(tmp_path, [APPLIED, {"actor": "network", "event": "ack", "step": "s1"}])
    completed = cli("check", path, "--json")
    assert completed.returncode == 0, completed.stderr
    assert set(json.loads(completed.stdout)["checks"].values()) == {"ok"}


def test_check_corrupt_history_exits_four_with_line(cli, tmp_path):
    """'check' on a history with a line that is not JSON exits 4 with one line naming file:line."""
    path = tmp_path / "corrupt.jsonl"
    path.write_text(json.dumps(APPLIED) + "\n{oops\n", encoding="utf-8")
    line = _assert_one_line_input_error(cli("check", path))
    assert "corrupt.jsonl:2" in line


def test_check_missing_history_exits_four(cli, tmp_path):
    """'check' on a missing file exits 4 with one line."""
    _assert_one_line_input_error(cli("check", tmp_path / "absent.jsonl"))


def test_check_simulated_history_round_trips(cli, tmp_path):
    """A history written by the simulator and checked by 'check' gives the run's verdict on safety."""
    import sim

    result = sim.run_scenario(sim.load_scenario(REPO_ROOT / "scenarios/seed/preemption_retry.toml"), "none")
    path = tmp_path / "run.jsonl"
    path.write_text(result.history.to_jsonl(), encoding="utf-8")
    completed = cli("check", path, "--json")
    assert completed.returncode == 1
    assert sorted({v["invariant"] for v in json.loads(completed.stdout)["violations"]}) == sorted(
        {v.invariant for v in result.violations})


def test_check_history_with_bad_index_exits_four(cli, tmp_path):
    """'check' on a history whose index is not an integer is an input error: exit 4, one line."""
    path = tmp_path / "bad_index.jsonl"
    path.write_text('{"index":"x","actor":"a","event":"e"}\n', encoding="utf-8")
    _assert_one_line_input_error(cli("check", path))


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_empty_history_with_a_family_exits_five(cli, tmp_path):
    """'check --family workspace' on an empty history exits 5 (nothing was run)."""
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    assert cli("check", path, "--family", "workspace").returncode == 5


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_empty_history_exits_five(cli, tmp_path):
    """'check' on an empty history exits 5 (nothing was run), with or without --family."""
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    assert cli("check", path).returncode == 5


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_check_infers_the_effects_family(cli, tmp_path):
    """'check' without --family recognises an effects history and runs the effects checks on it."""
    import sim

    result = sim.run_scenario(sim.load_scenario(REPO_ROOT / "scenarios/runtime/pr_lost_response.toml"),
                              "unkeyed-retry")
    path = tmp_path / "runtime.jsonl"
    path.write_text(result.history.to_jsonl(), encoding="utf-8")
    completed = cli("check", path, "--json")
    assert completed.returncode == 1, completed.stderr
    document = json.loads(completed.stdout)
    assert document["family"] == "effects" and "lost_success" in document["checks"]
    assert sorted({v["invariant"] for v in document["violations"]}) == sorted({v.invariant for v in result.violations})


def test_check_refuses_a_history_of_the_other_family(cli, tmp_path):
    """'check --family effects' on a workspace history is refused: those checks cannot judge it."""
    path = _write_history(tmp_path, [APPLIED, dict(APPLIED, journal_key="s1@1")])
    completed = cli("check", path, "--family", "runtime", "--json")
    assert completed.returncode == 4 and "workspace family" in completed.stderr


def test_check_without_the_fields_a_check_needs_exits_six(cli, tmp_path):
    """Bare actor/event lines that would violate are not passed: checks say not_evaluable, exit 6."""
    path = _write_history(tmp_path, [{"actor": "executor", "event": "deliver", "step": "s1"}] * 2)
    completed = cli("check", path, "--json")
    document = json.loads(completed.stdout)
    assert completed.returncode == 6
    assert document["checks"]["duplicate_effect"] == "not_evaluable"
    assert "verdict" in document["not_evaluable"]["duplicate_effect"]


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_check_reports_every_invalid_line(cli, tmp_path):
    """Every invalid line is named in the one error line, with a wrong-typed field too."""
    path = tmp_path / "h.jsonl"
    path.write_text('not json\n{"actor": "a"}\n{"actor": "executor", "event": "deliver", "step": 5}\n')
    completed = cli("check", path)
    assert completed.returncode == 4 and "Traceback" not in completed.stderr
    assert "line 1" in completed.stderr and "line 2" in completed.stderr
    typed = tmp_path / "t.jsonl"
    typed.write_text('{"actor": "executor", "event": "deliver", "step": 5, "verdict": "applied"}\n')
    completed = cli("check", typed)
    assert completed.returncode == 4 and "'step' must be a string, not 5 (a whole number)" in completed.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_check_history_no_family_claims_exits_four(cli, tmp_path):
    """A history whose events no family uses is refused with one line asking for --family."""
    path = _write_history(tmp_path, [{"actor": "a", "event": "heartbeat"}])
    line = _assert_one_line_input_error(cli("check", path))
    assert "--family" in line


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_check_unknown_family_exits_four(cli, tmp_path):
    """An unknown --family is an input error with one line listing the families."""
    path = _write_history(tmp_path, [APPLIED])
    line = _assert_one_line_input_error(cli("check", path, "--family", "rocket"))
    assert "workspace, effects" in line


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_run_story_exits_zero_and_shows_reconciliation(cli):
    """fencesim run pr_lost_response.toml shows the reconciliation and the receipt, exit 0."""
    completed = cli("run", "scenarios/runtime/pr_lost_response.toml")
    assert completed.returncode == 0, completed.stderr
    assert "reconciled" in completed.stdout and "receipt_recorded" in completed.stdout
    assert "pull_request#812" in completed.stdout


def test_run_story_json_under_every_expect_protocol(cli):
    """A runtime story run under its [expect] protocols meets each, with runtime verdicts in the JSON."""
    labels = ("keyed-fingerprint-reconcile", "keyed-reconcile", "keyed", "unkeyed-retry")
    completed = cli("run", "scenarios/runtime/pr_lost_response.toml", *[a for p in labels for a in ("-p", p)],
                    "--json")
    assert completed.returncode == 1, completed.stderr  # unkeyed-retry and keyed violate invariants
    entries = json.loads(completed.stdout)
    assert [e["protocol"] for e in entries] == list(labels)
    assert all(e["expect_met"] is True and e["family"] == "effects" for e in entries)
    assert entries[0]["verdicts"][-1]["verdict"] == "done:reconciled"


def test_run_exits_one_on_an_expect_mismatch(cli, tmp_path):
    """A run whose outcome does not match the file's [expect] exits 1 even with no violation."""
    text = (SCENARIO_HEAD + 'events = [ "plan", "dispatch s1", "deliver s1" ]\n'
            + '[expect]\nstep = "rejected:stale_rev"\n')
    path = tmp_path / "mismatch.toml"
    path.write_text(text, encoding="utf-8")
    completed = cli("run", path, "-p", "step")
    assert completed.returncode == 1, completed.stderr
    assert "[expect] mismatch" in completed.stdout


LOST_UPDATE_EVENTS = ('events = [ "plan", "dispatch s1", "deliver s1", "ack s1", "dispatch s2", '
                      '"human_edit app.py human-refactor", "deliver s2" ]\n')
TWO_STEP_HEAD = """\
name = "declared"
files = { "app.py" = "v0" }
plan = [ { id = "s1", path = "app.py", patch = "v1" }, { id = "s2", path = "app.py", patch = "v2" } ]
"""


def test_run_exits_zero_when_expect_declares_the_violation(cli, tmp_path):
    """A violation the file's [expect] declares (and every expectation met) exits 0, and the output says the
    violation was expected; the same violation under an entry that declares none exits 1, saying why."""
    path = tmp_path / "declared.toml"
    path.write_text(TWO_STEP_HEAD + LOST_UPDATE_EVENTS + '[expect]\nnone = { outcome = "applied", '
                    'violations = ["lost_update"] }\n', encoding="utf-8")
    completed = cli("run", path, "-p", "none")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "lost_update" in completed.stdout and "(expected by [expect])" in completed.stdout
    assert ("1 run(s): 1 with a safety violation, expected by [expect]; 0 not matching [expect] -- exit 0: every "
            "violation expected by [expect] and every expectation met") in completed.stdout
    path.write_text(TWO_STEP_HEAD + LOST_UPDATE_EVENTS + '[expect]\nnone = "applied"\n', encoding="utf-8")
    completed = cli("run", path, "-p", "none")
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert ("1 run(s): 1 with a safety violation; 0 not matching [expect] -- exit 1: 1 run(s) with a violation "
            "[expect] does not declare") in completed.stdout
    document = json.loads(cli("run", path, "-p", "none", "--json").stdout)
    assert document[0]["violations_expected"] is False and document[0]["expect_met"] is True


def test_run_warns_about_expect_entries_for_protocols_not_run(cli, tmp_path):
    """Without --protocol a scenario runs under its family's presets: an [expect] entry for another protocol is
    not checked, and a warning on stderr names it (the exit code is the runs' own)."""
    path = tmp_path / "unrun.toml"
    path.write_text(TWO_STEP_HEAD + LOST_UPDATE_EVENTS + '[expect]\nnone = { outcome = "applied", violations = '
                    '["lost_update"] }\n"step-dedupe,drift_check=reject" = "rejected:stale_rev"\n'
                    '"fence=step,dedupe=journal" = "rejected:stale_rev"\n', encoding="utf-8")
    completed = cli("run", path, "--json")
    assert completed.returncode == 0, completed.stderr
    assert [e["protocol"] for e in json.loads(completed.stdout)] == ["none", "plan", "step", "step-dedupe"]
    warnings = [line for line in completed.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: {path}: [expect] has entries for protocols that were not run, so they were not "
                        "checked: 'step-dedupe,drift_check=reject' (run them with --protocol)"]
    named = cli("run", path, "-p", "none", "-p", "step-dedupe,drift_check=reject", "-p", "step-dedupe")
    assert named.returncode == 0 and "warning:" not in named.stderr, named.stderr


def test_run_without_protocol_runs_every_preset_of_the_family(cli):
    """A scenario without its own protocol, run without --protocol, runs under each of its family's presets."""
    completed = cli("run", "scenarios/seed/replan_drift.toml", "--json")
    assert [e["protocol"] for e in json.loads(completed.stdout)] == ["none", "plan", "step", "step-dedupe"]
