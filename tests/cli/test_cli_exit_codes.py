"""The exit codes the docs promise are the ones the commands give: the tables of README.md and
docs/formats.md are read, every code they list is one sys.exit code of sim.cli.app, and for each a command is
run that must exit with it.  Also the other places the docs and the tool used to contradict each other."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import reaped

REPO = Path(__file__).resolve().parents[2]


def readme_codes() -> set[int]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    return {int(c) for c in re.findall(r"`(\d)`", section)}


def formats_codes() -> dict[int, str]:
    text = (REPO / "docs" / "formats.md").read_text(encoding="utf-8")
    section = text.split("## Exit codes", 1)[1].split("Per command:", 1)[0]
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^\| (\d) \| (.+) \|$", section, re.M)}


def test_the_tables_agree_with_each_other_and_with_the_code():
    import importlib

    app = importlib.import_module("sim.cli.app")

    constants = {getattr(app, n) for n in dir(app) if n.startswith("EXIT_")}
    assert readme_codes() == set(formats_codes()) == constants == set(range(8))
    assert "could not be judged" in formats_codes()[7] and "7" in (REPO / "docs" / "real-runtimes.md").read_text()


def _interrupted(tmp_path) -> subprocess.CompletedProcess:
    """A sweep interrupted with Ctrl-C (SIGINT) once its state is on disk."""
    out = tmp_path / "sweep"
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    process = reaped(subprocess.Popen([sys.executable, "-c", "from sim.cli import main; main()", "fuzz", "--workload",
                                       "seed-fuzz", "--protocol", "step-dedupe", "--seeds", "1000000", "--out",
                                       str(out)], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    deadline = time.monotonic() + 120
    while not (out / "sweep-state.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _history(tmp_path, name: str, lines: list[dict]) -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.mark.slow  # eight commands, one of them a sweep interrupted
@pytest.mark.parametrize("code", range(8))
def test_each_documented_code_is_what_its_command_gives(cli, tmp_path, code):
    assert code in formats_codes()
    seed = "scenarios/seed/concurrent_edit.toml"
    if code == 0:
        done = cli("run", seed, "--protocol", "step")
    elif code == 1:
        done = cli("run", seed, "--protocol", "fence=step,stamp_at=apply")
    elif code == 2:
        done = _interrupted(tmp_path)
    elif code == 3:  # a bug planted in fencesim: a traceback and exit 3
        done = cli("run", seed, "--protocol", "step",
                   prelude="import sim.cli.scenarios as s\ns.print_result = lambda *a: 1 / 0")
        assert "ZeroDivisionError" in done.stderr
    elif code == 4:
        done = cli("run", tmp_path / "no-such-scenario.toml")
        assert len(done.stderr.strip().splitlines()) == 1
    elif code == 5:
        done = cli("check", _history(tmp_path, "empty.jsonl", []), "--family", "workspace")
    elif code == 6:
        done = cli("check", _history(tmp_path, "bare.jsonl", [{"actor": "executor", "event": "deliver",
                                                                "step": "s1"}] * 2))
    else:  # a worker whose protocol channel carries a log line: the run could not be judged
        done = cli("conform", "--runtime", f"{sys.executable} -c \"print('INFO worker starting')\"",
                   "--cell", "terminate open_pr after_commit", "-p", "unkeyed-retry", "--out", tmp_path / "out")
        assert "COULD NOT JUDGE" in done.stdout + done.stderr
    assert done.returncode == code, done.stderr[-2000:]
    if code != 3:
        assert "Traceback" not in done.stderr


def _without_protocol(tmp_path) -> str:
    text = (REPO / "scenarios" / "runtime" / "saga_preview_failure.toml").read_text(encoding="utf-8")
    path = tmp_path / "saga.toml"
    path.write_text("\n".join(line for line in text.splitlines() if not line.startswith("protocol")) + "\n",
                    encoding="utf-8")
    return str(path)


@pytest.mark.slow  # over 3 s: subprocesses
def test_run_on_a_workflow_scenario_runs_the_reliability_classes_only_when_named(cli, tmp_path):
    """docs/effects.md: the reliability classes are presets "not run unless named"."""
    from sim.families.effects.knobs import PRESETS, RELIABILITY_CLASSES

    path = _without_protocol(tmp_path)
    done = cli("run", path, "--json")
    ran = [r["protocol"] for r in json.loads(done.stdout)]
    assert ran == list(PRESETS), done.stderr
    assert "not run unless" in (REPO / "docs" / "effects.md").read_text(encoding="utf-8")
    assert not set(RELIABILITY_CLASSES) & set(ran)
    named = cli("run", path, "-p", "governed-saga", "--json")
    assert [r["protocol"] for r in json.loads(named.stdout)] == ["governed-saga"]


@pytest.mark.slow  # over 3 s: subprocesses
def test_a_run_with_no_scripted_verdict_names_the_tasks_outcome_never_none(cli):
    """ephemeral-call skips the scripted reconciliation and receipt: the outcome is the task's end."""
    done = cli("run", "scenarios/runtime/pr_lost_response.toml", "-p", "ephemeral-call")
    assert "outcome: succeeded" in done.stderr + done.stdout
    assert "outcome: None" not in done.stderr + done.stdout


def test_the_readme_sends_the_coverage_language_to_a_page_that_has_it():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "[coverage] reach" in readme and "docs/formats.md" in readme.split("[coverage] reach", 1)[1][:200]
    formats = (REPO / "docs" / "formats.md").read_text(encoding="utf-8")
    section = formats.split("### `[coverage]`", 1)[1].split("\n### ", 1)[0]
    for term in ("field=value", "field!=value", "!field", "* is any event", "GOALS_MAX"):
        assert term in section
    from sim.core.coverage import GOALS_MAX, parse_goal

    assert f"at most {GOALS_MAX} goals" in section
    for goal in re.findall(r"`((?:deliver|reconciled|\*) [^`]+)`", section):
        parse_goal(goal)  # every example the page gives is a goal the parser takes


def test_workspace_md_says_check_exits_6_when_checks_cannot_judge():
    text = (REPO / "docs" / "workspace.md").read_text(encoding="utf-8")
    assert "exits 0 when nothing was violated, even if some checks could not" not in text
    assert "`fencesim check` exits 6" in text


def test_check_judges_an_irreversible_commit_without_its_class_by_its_intent(tmp_path, cli):
    """A recorded release published unapproved, its commit's effect_class removed (the intent still says
    irreversible): `fencesim check` reports the violation (exit 1), not ok."""
    from sim.registry import FAMILIES

    scenario = FAMILIES.load_scenario(REPO / "scenarios" / "runtime" / "release_needs_approval.toml")
    family = FAMILIES.family_for(scenario)
    history = family.replay(scenario, family.parse_protocol("keyed-fingerprint-reconcile,approval=off")).history
    rows = [json.loads(line) for line in history.to_jsonl().splitlines()]
    release = next(r for r in rows if r["event"] == "committed" and r.get("effect_class") == "irreversible")
    del release["effect_class"]
    done = cli("check", _history(tmp_path, "release.jsonl", rows))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "VIOLATED unapproved_irreversible" in done.stdout


def test_the_expect_rule_is_the_same_in_the_readme_the_formats_table_and_run():
    """`[expect]` has one rule: run exits 1 on a violation [expect] does not declare or an entry not met, 0 when
    every violation was expected; README's exit codes, formats.md's table and run's last line say the same."""
    readme = (REPO / "README.md").read_text(encoding="utf-8").split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    formats = (REPO / "docs" / "formats.md").read_text(encoding="utf-8").split("## Exit codes", 1)[1]
    run_row = next(line for line in formats.splitlines() if line.startswith("| `fencesim run` |"))
    for text in (" ".join(readme.split()), formats_codes()[1], run_row):
        assert "does not declare" in text, text
    assert "expected by [expect]" in " ".join(readme.split()) and "expected by [expect]" in run_row
    assert "`[expect]` declares" in formats_codes()[0] and "[expect]" in " ".join(readme.split()).split("`1`")[0]
    from sim.cli.scenarios import _run_summary
    from sim.core.result import run_scenario
    from sim.families.workspace import FAMILY
    from sim.families.workspace.scenario import build_scenario

    events = ["plan", "dispatch s1", "deliver s1", "ack s1", "dispatch s2", "human_edit app.py", "deliver s2"]
    plan = [{"id": "s1", "path": "app.py", "patch": "v1"}, {"id": "s2", "path": "app.py", "patch": "v2"}]
    declared = build_scenario({"files": {"app.py": "v0"}, "plan": plan, "events": events,
                               "expect": {"none": {"violations": ["lost_update"]}}})
    line = _run_summary([run_scenario(FAMILY, declared, "none")])
    assert "1 with a safety violation, expected by [expect]" in line and line.split(" -- ")[1].startswith("exit 0")
    undeclared = build_scenario({"files": {"app.py": "v0"}, "plan": plan, "events": events})
    line = _run_summary([run_scenario(FAMILY, undeclared, "none")])
    assert line.split(" -- ")[1] == "exit 1: 1 run(s) with a violation [expect] does not declare"


def test_a_process_a_test_leaves_running_is_killed_when_it_ends():
    """What a test started and wrapped in ``reaped`` is killed when the test ends if it still runs (a failed
    interrupt test would otherwise leave its sweep of millions of seeds on a core for hours)."""
    from conftest import reap_started

    done = reaped(subprocess.Popen([sys.executable, "-c", "pass"]))
    done.wait()
    running = reaped(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]))
    assert reap_started() == 1 and running.poll() is not None and done.poll() == 0
    assert reap_started() == 0
