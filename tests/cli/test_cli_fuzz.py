"""The `fencesim fuzz` command (sim.cli.fuzz), run as a subprocess: JSON, exported counterexamples, CI outputs,
exhaustive mode and input errors, for both families."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sim.core.findings import invariant_of

REPO_ROOT = Path(__file__).resolve().parents[2]
INVARIANTS = ("lost_update", "duplicate_effect", "stale_accept", "journal_loss")
PATH_KEYS = ("file", "timeline", "pytest", "replay")


def _fencesim(*args, env_extra=None):
    env = dict(os.environ, NO_COLOR="1")
    env.pop("GITHUB_STEP_SUMMARY", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", "from sim.cli import main; main()", *map(str, args)],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=180, check=False)


@pytest.fixture(scope="module")
def none_run(tmp_path_factory):
    """fuzz seed-fuzz under none, 300 seeds, with --json."""
    base = tmp_path_factory.mktemp("fuzz_none")
    out = _fencesim("fuzz", "--workload", "seed-fuzz", "--protocol", "none", "--seeds", 300, "--json",
                    "--out", base / "out", "--no-advise")
    return out, base


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory):
    """fuzz seed-fuzz under none, 300 seeds, with --junit and a GitHub step summary."""
    base = tmp_path_factory.mktemp("fuzz_ci")
    summary = base / "summary.md"
    summary.write_text("# earlier content\n")
    out = _fencesim("fuzz", "--workload", "seed-fuzz", "--protocol", "none", "--seeds", 300, "--json",
                    "--out", base / "out", "--junit", base / "junit.xml", "--no-advise",
                    env_extra={"GITHUB_STEP_SUMMARY": str(summary)})
    return out, base


@pytest.fixture(scope="module")
def plan_run(tmp_path_factory):
    """fuzz seed-fuzz under plan, 300 seeds, with --json."""
    base = tmp_path_factory.mktemp("fuzz_plan")
    return _fencesim("fuzz", "--workload", "seed-fuzz", "--protocol", "plan", "--seeds", 300, "--json",
                     "--out", base / "out", "--no-advise")


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_violating_fuzz_exits_one(none_run):
    """A fuzz run that finds a safety violation exits 1."""
    out, _ = none_run
    assert out.returncode == 1, out.stderr


def test_fuzz_json_has_the_documented_keys(none_run):
    """The JSON document has family, invariants, availability, runs, violating_runs, by_invariant, by_protocol,
    counterexamples and claims."""
    document = json.loads(none_run[0].stdout)
    assert {"family", "invariants", "availability", "runs", "violating_runs", "violating_runs_by_invariant",
            "by_protocol", "counterexamples", "claims"} <= set(document)
    assert (document["family"], document["invariants"], document["availability"]) == (
        "workspace", list(INVARIANTS), ["spurious_rejections"])
    assert document["runs"] == 300
    assert 0 < document["violating_runs"] <= 300
    assert set(document["violating_runs_by_invariant"]) == set(INVARIANTS)


def test_fuzz_json_by_protocol_has_its_tallies(none_run):
    """Each by_protocol entry has runs, violating_runs, by_invariant and spurious_rejections."""
    tally = json.loads(none_run[0].stdout)["by_protocol"]["none"]
    assert {"runs", "violating_runs", "violating_runs_by_invariant", "spurious_rejections"} <= set(tally)
    assert tally["runs"] == 300


def _counterexamples(none_run) -> list[dict]:
    """The none run's counterexamples: lost_update and duplicate_effect, one per failure domain each shows in
    (a loop over them checks something)."""
    examples = json.loads(none_run[0].stdout)["counterexamples"]
    assert {e["invariant"] for e in examples} == {"lost_update", "duplicate_effect"}, examples
    assert len({e["finding"] for e in examples}) == len(examples) > 2
    return examples


def test_fuzz_json_counterexamples_name_protocol_invariant_events_file(none_run):
    """Each counterexample has protocol, invariant, events and file; none yields lost_update and duplicate_effect."""
    examples = json.loads(none_run[0].stdout)["counterexamples"]
    for example in examples:
        assert {"protocol", "invariant", "events", "file"} <= set(example)
        assert Path(example["file"]).exists()
    assert {(e["protocol"], e["invariant"]) for e in examples} == {("none", "lost_update"),
                                                                   ("none", "duplicate_effect")}
    lengths = {i: min(len(e["events"]) for e in examples if e["invariant"] == i) for i in ("lost_update",
                                                                                          "duplicate_effect")}
    assert lengths == {"lost_update": 4, "duplicate_effect": 5}


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_each_counterexample_file_replays_with_exit_one(none_run):
    """`fencesim run FILE` on every exported counterexample exits 1 (the violation reproduces)."""
    for example in _counterexamples(none_run):
        replayed = _fencesim("run", example["file"])
        assert replayed.returncode == 1, replayed.stdout + replayed.stderr


def test_json_mode_keeps_stdout_pure_json(none_run):
    """With --json, stdout is exactly one JSON document and human output goes to stderr."""
    out, _ = none_run
    json.loads(out.stdout)
    assert "violating" in out.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_ci_outputs_keep_the_violation_exit_code(ci_run):
    """With --junit and GITHUB_STEP_SUMMARY a violating fuzz run still exits 1, not 3."""
    out, _ = ci_run
    assert out.returncode == 1, out.stderr


def test_junit_has_one_testcase_per_protocol_and_finding(ci_run):
    """The JUnit XML has a suite per protocol: a failing testcase per finding, a passing one per invariant not
    violated, and one for liveness."""
    findings = {c["finding"] for c in json.loads(ci_run[0].stdout)["counterexamples"]}
    clean = [i for i in INVARIANTS if i not in {invariant_of(f) for f in findings}]
    root = ET.parse(ci_run[1] / "junit.xml").getroot()
    cases = root.findall(".//testcase")
    assert sorted(c.get("name") for c in cases) == sorted([*findings, *clean, "liveness"])
    failed = {c.get("name") for c in cases if c.find("failure") is not None}
    assert failed == findings and {invariant_of(f) for f in failed} == {"lost_update", "duplicate_effect"}
    assert root.get("tests") == str(len(cases)) and root.get("failures") == str(len(findings))


def test_junit_failure_carries_the_replay_command(ci_run):
    """A JUnit failure's text carries the fencesim run command that reproduces it."""
    root = ET.parse(ci_run[1] / "junit.xml").getroot()
    assert list(root.iter("failure"))
    for failure in root.iter("failure"):
        assert "fencesim run " in failure.text


def test_github_step_summary_is_appended(ci_run):
    """With GITHUB_STEP_SUMMARY set, a Markdown summary is appended after the existing content."""
    text = (ci_run[1] / "summary.md").read_text()
    assert text.startswith("# earlier content\n")
    assert "## fencesim fuzz" in text
    assert "| `none` | 300 |" in text


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_clean_fuzz_exits_zero(plan_run):
    """Fuzzing the plan fence finds no safety violation and exits 0."""
    assert plan_run.returncode == 0, plan_run.stderr
    document = json.loads(plan_run.stdout)
    assert document["violating_runs"] == 0
    assert all(v == 0 for v in document["violating_runs_by_invariant"].values())
    assert document["counterexamples"] == []


def test_clean_fuzz_reports_many_spurious_rejections(plan_run):
    """The plan fence pays for its safety in spurious rejections (at least one per three runs)."""
    tally = json.loads(plan_run.stdout)["by_protocol"]["plan"]
    assert tally["spurious_rejections"] >= 100


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_junit_with_two_protocols_has_two_suites(tmp_path):
    """Two protocols give two suites: a testcase per finding, one per invariant not violated, and liveness."""
    junit = tmp_path / "junit.xml"
    out = _fencesim("fuzz", "--protocol", "plan", "--protocol", "step", "--seeds", 20, "--out", tmp_path / "out",
                    "--junit", junit, "--no-advise")
    assert out.returncode in (0, 1), out.stderr
    root = ET.parse(junit).getroot()
    suites = {s.get("name"): [c.get("name") for c in s.iter("testcase")] for s in root.iter("testsuite")}
    assert set(suites) == {"fencesim fuzz plan", "fencesim fuzz step"}
    for names in suites.values():
        assert names.count("liveness") == 1 and len(names) == len(set(names))
        assert sorted({invariant_of(n) for n in names if n != "liveness"}) == sorted(INVARIANTS)


def _without_paths(document):
    for example in document["counterexamples"]:
        for key in PATH_KEYS:
            example.pop(key, None)
    return document


@pytest.mark.slow
def test_json_is_the_same_with_one_and_two_workers(tmp_path):
    """--workers 1 and --workers 2 give the same JSON apart from output paths."""
    args = ["fuzz", "--workload", "seed-fuzz", "--protocol", "none", "--protocol", "step-dedupe", "--seeds", 300,
            "--json", "--no-advise"]
    one = _fencesim(*args, "--workers", 1, "--out", tmp_path / "one")
    two = _fencesim(*args, "--workers", 2, "--out", tmp_path / "two")
    assert one.returncode == two.returncode == 1
    assert _without_paths(json.loads(one.stdout)) == _without_paths(json.loads(two.stdout))


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_exhaustive_on_tiny_under_none_exits_one_and_reports_orders_and_states():
    """--exhaustive --max-events 5 on tiny under none exits 1 and reports orders and states explored."""
    out = _fencesim("fuzz", "--exhaustive", "--max-events", 5, "--workload", "tiny", "--protocol", "none", "--json")
    assert out.returncode == 1, out.stderr
    (result,) = json.loads(out.stdout)["protocols"]
    assert result["states_generated"] >= result["distinct_states"] > 0
    assert result["violations"]["lost_update"]["shortest_events"] == 4
    assert result["violations"]["duplicate_effect"]["shortest_events"] == 5
    assert "states generated" in out.stderr and "distinct states" in out.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_exhaustive_human_output_reports_orders_and_states():
    """Without --json the exhaustive summary on stdout names TLC's counts and what was proved."""
    out = _fencesim("fuzz", "--exhaustive", "--max-events", 3, "--workload", "tiny", "--protocol", "plan")
    assert out.returncode == 0, out.stderr
    assert "states generated" in out.stdout and "distinct states" in out.stdout and "proved absent" in out.stdout


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("args", [
    ["--workload", "no-such-workload"],
    ["--protocol", "frobnicate=on"],
    ["--seeds", "0"],
], ids=["unknown-workload", "unknown-knob", "zero-seeds"])
def test_input_errors_exit_four_with_one_line(tmp_path, args):
    """A user's mistake exits 4 with one line on stderr and no traceback."""
    out = _fencesim("fuzz", *args, "--out", tmp_path / "out", "--no-advise")
    assert out.returncode == 4, out.stdout + out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_exported_pytest_files_pass(none_run):
    """Each exported pytest file passes where it was written (without advice its 'holds' test is an xfail)."""
    for example in _counterexamples(none_run):
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", example["pytest"]],
                              cwd=Path(example["pytest"]).parent, capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 passed, 1 xfailed" in done.stdout


def test_counterexample_timelines_mark_the_violation(none_run):
    """Each exported timeline marks the violating event with '>>' and the injected faults with '*'."""
    for example in _counterexamples(none_run):
        text = Path(example["timeline"]).read_text()
        assert any(line.startswith(">>") and "|" in line for line in text.splitlines())
        assert "* " in text and example["violating_events"]


@pytest.fixture(scope="module")
def effects_run(tmp_path_factory):
    """fuzz effects-saga under keyed and keyed-fingerprint-reconcile,irreversible_keys=on, 120 seeds."""
    base = tmp_path_factory.mktemp("fuzz_effects")
    out = _fencesim("fuzz", "--workload", "effects-saga", "-p", "keyed", "-p",
                    "keyed-fingerprint-reconcile,irreversible_keys=on", "--seeds", 120, "--json", "--workers", 1,
                    "--out", base / "out", "--junit", base / "junit.xml", "--no-advise")
    return out, base


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_effects_fuzz_reports_the_runtime_family(effects_run):
    """Fuzzing an effects workload names the effects family, its invariants and human_exceptions."""
    out, _ = effects_run
    assert out.returncode == 1, out.stderr
    document = json.loads(out.stdout)
    assert document["family"] == "effects" and document["availability"] == ["human_exceptions", "not_finished"]
    assert "lost_success" in document["invariants"]
    assert {e["protocol"] for e in document["counterexamples"]} == {"keyed"}
    assert "human_exceptions" in document["by_protocol"]["keyed"]


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_effects_counterexamples_are_fault_lists_that_replay(effects_run):
    """Each effects counterexample is a fault-list file that 'fencesim run' replays to a violation (exit 1)."""
    examples = json.loads(effects_run[0].stdout)["counterexamples"]
    assert examples
    for example in examples[:2]:
        assert all(len(e.split()) == 3 for e in example["events"])
        replayed = _fencesim("run", example["file"], "--json")
        assert replayed.returncode == 1, replayed.stderr
        assert example["invariant"] in {v["invariant"] for v in json.loads(replayed.stdout)[0]["violations"]}


def test_effects_junit_uses_the_runtime_invariants(effects_run):
    """The JUnit file of an effects fuzz has a testcase per protocol and runtime invariant."""
    names = {c.get("name") for c in ET.parse(effects_run[1] / "junit.xml").getroot().iter("testcase")}
    assert "lost_success" in names and "lost_update" not in names


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_effects_workload_exhaustive_with_one_fault(tmp_path):
    """--exhaustive on effects-pr enumerates fault lists: the keyless release fails under the full design."""
    out = _fencesim("fuzz", "--exhaustive", "--max-events", 1, "--workload", "effects-pr", "--protocol",
                    "keyed-fingerprint-reconcile", "--json")
    assert out.returncode == 1, out.stderr
    (result,) = json.loads(out.stdout)["protocols"]
    assert result["violations"]["duplicate_effect"]["shortest_events"] == 1
    assert all(order[0].split()[1] == "publish_release"
               for order in result["violations"]["duplicate_effect"]["orders"])


def test_workers_below_one_is_an_input_error(tmp_path):
    """--workers 0 is refused with one line (exit 4)."""
    out = _fencesim("fuzz", "--workers", 0, "--seeds", 5, "--out", tmp_path / "out")
    assert out.returncode == 4 and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_junit_naming_a_directory_is_an_input_error(tmp_path):
    """--junit pointing at a directory is a user's mistake: exit 4 with one line, before any work."""
    out = _fencesim("fuzz", "--workload", "tiny", "-p", "plan", "--seeds", 5, "--no-advise", "--out",
                    tmp_path / "out", "--junit", tmp_path)
    assert out.returncode == 4, out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_out_naming_a_file_is_an_input_error(tmp_path):
    """--out pointing at a file is a user's mistake: exit 4 with one line, before any work."""
    blocker = tmp_path / "plain"
    blocker.write_text("x")
    out = _fencesim("fuzz", "--workload", "tiny", "-p", "none", "--seeds", 5, "--no-advise", "--out", blocker)
    assert out.returncode == 4, out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_terminal_table_gives_spurious_rejections_and_work_done(cli, tmp_path):
    """Per protocol: violating runs, spurious rejections per run and the share of steps applied; the seed's
    claims that fail come before those that hold; the seed range that ran is stated."""
    out = cli("fuzz", "-w", "seed-fuzz", "-p", "plan", "-p", "step-dedupe", "--seeds", "100", "--workers", "1",
              "--no-advise", "--out", tmp_path)
    assert out.returncode == 1, out.stderr
    assert "spurious rejections (per run)" in out.stdout and "steps applied / steps planned" in out.stdout
    assert "seeds 0..99 ran per protocol" in out.stdout
    claims = [line for line in out.stdout.splitlines() if line.strip().startswith(("[FAILS]", "[holds]"))]
    assert claims and claims[0].strip().startswith("[FAILS]")
    assert [c.strip()[:7] for c in claims] == sorted((c.strip()[:7] for c in claims), key=lambda t: t != "[FAILS]")
