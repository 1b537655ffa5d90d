"""The `fencesim fuzz` command-line contract (DESIGN section 7), run as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
INVARIANTS = ("lost_update", "duplicate_effect", "stale_accept", "journal_loss")
PATH_KEYS = ("file", "timeline", "pytest", "replay")


def _fencesim(*args, env_extra=None):
    env = dict(os.environ, NO_COLOR="1")
    env.pop("GITHUB_STEP_SUMMARY", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", "from sim.cli import main; main()", *map(str, args)],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=180)


# sim/report_ci.py line 23 nests double quotes inside a double-quoted f-string
# (f"...{tally["by_invariant"][invariant]}..."), valid only from Python 3.12 (PEP 701);
# pyproject says requires-python >= 3.11 and the venv runs 3.11, so importing the module
# raises SyntaxError and `fuzz --junit` / GITHUB_STEP_SUMMARY crash with exit 3.
REPORT_CI_BUG = ("sim/report_ci.py:23 uses a PEP 701 nested-quote f-string: SyntaxError on Python 3.11 "
                 "(requires-python >= 3.11), so --junit and GITHUB_STEP_SUMMARY crash with exit 3")


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
    base = tmp_path_factory.mktemp("fuzz_plan")
    return _fencesim("fuzz", "--workload", "seed-fuzz", "--protocol", "plan", "--seeds", 300, "--json",
                     "--out", base / "out", "--no-advise")


def test_violating_fuzz_exits_one(none_run):
    """A fuzz run that finds a safety violation exits 1."""
    out, _ = none_run
    assert out.returncode == 1, out.stderr


def test_fuzz_json_has_the_documented_keys(none_run):
    """The JSON document has runs, violating_runs, by_invariant, by_protocol and counterexamples."""
    document = json.loads(none_run[0].stdout)
    assert {"runs", "violating_runs", "by_invariant", "by_protocol", "counterexamples"} <= set(document)
    assert document["runs"] == 300
    assert 0 < document["violating_runs"] <= 300
    assert set(document["by_invariant"]) == set(INVARIANTS)


def test_fuzz_json_by_protocol_has_its_tallies(none_run):
    """Each by_protocol entry has runs, violating_runs, by_invariant and spurious_rejections."""
    tally = json.loads(none_run[0].stdout)["by_protocol"]["none"]
    assert {"runs", "violating_runs", "by_invariant", "spurious_rejections"} <= set(tally)
    assert tally["runs"] == 300


def test_fuzz_json_counterexamples_name_protocol_invariant_events_file(none_run):
    """Each counterexample has protocol, invariant, events and file; none yields lost_update and duplicate_effect."""
    examples = json.loads(none_run[0].stdout)["counterexamples"]
    for example in examples:
        assert {"protocol", "invariant", "events", "file"} <= set(example)
        assert Path(example["file"]).exists()
    assert {(e["protocol"], e["invariant"]) for e in examples} == {("none", "lost_update"), ("none", "duplicate_effect")}
    lengths = {e["invariant"]: len(e["events"]) for e in examples}
    assert lengths == {"lost_update": 4, "duplicate_effect": 5}


def test_each_counterexample_file_replays_with_exit_one(none_run):
    """`fencesim run FILE` on every exported counterexample exits 1 (the violation reproduces)."""
    for example in json.loads(none_run[0].stdout)["counterexamples"]:
        replayed = _fencesim("run", example["file"])
        assert replayed.returncode == 1, replayed.stdout + replayed.stderr


def test_json_mode_keeps_stdout_pure_json(none_run):
    """With --json, stdout is exactly one JSON document and human output goes to stderr."""
    out, _ = none_run
    json.loads(out.stdout)
    assert "violating" in out.stderr


def test_report_ci_imports_on_the_oldest_supported_python():
    """sim.report_ci compiles on every Python that pyproject's requires-python admits (3.11 included)."""
    source = (REPO_ROOT / "sim" / "report_ci.py").read_text()
    compile(source, "sim/report_ci.py", "exec")


def test_ci_outputs_keep_the_violation_exit_code(ci_run):
    """With --junit and GITHUB_STEP_SUMMARY a violating fuzz run still exits 1, not 3."""
    out, _ = ci_run
    assert out.returncode == 1, out.stderr


def test_junit_has_one_testcase_per_protocol_and_invariant(ci_run):
    """The JUnit XML has one testcase per protocol x invariant, failing exactly for the violated ones."""
    root = ET.parse(ci_run[1] / "junit.xml").getroot()
    cases = root.findall(".//testcase")
    assert sorted(c.get("name") for c in cases) == sorted(f"none :: {n}" for n in INVARIANTS)
    failed = {c.get("name") for c in cases if c.find("failure") is not None}
    assert failed == {"none :: lost_update", "none :: duplicate_effect"}
    assert root.get("tests") == "4" and root.get("failures") == "2"


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


def test_clean_fuzz_exits_zero(plan_run):
    """Fuzzing the plan fence finds no safety violation and exits 0."""
    assert plan_run.returncode == 0, plan_run.stderr
    document = json.loads(plan_run.stdout)
    assert document["violating_runs"] == 0
    assert all(v == 0 for v in document["by_invariant"].values())
    assert document["counterexamples"] == []


def test_clean_fuzz_reports_many_spurious_rejections(plan_run):
    """The plan fence pays for its safety in spurious rejections (at least one per three runs)."""
    tally = json.loads(plan_run.stdout)["by_protocol"]["plan"]
    assert tally["spurious_rejections"] >= 100


def test_junit_with_two_protocols_has_eight_testcases(tmp_path):
    """Two protocols give 2 x 4 JUnit testcases."""
    junit = tmp_path / "junit.xml"
    out = _fencesim("fuzz", "--protocol", "plan", "--protocol", "step", "--seeds", 20, "--out", tmp_path / "out",
                    "--junit", junit, "--no-advise")
    assert out.returncode in (0, 1), out.stderr
    names = [c.get("name") for c in ET.parse(junit).getroot().iter("testcase")]
    assert sorted(names) == sorted(f"{p} :: {n}" for p in ("plan", "step") for n in INVARIANTS)


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


def test_exhaustive_on_tiny_under_none_exits_one_and_reports_orders_and_states():
    """--exhaustive --max-events 5 on tiny under none exits 1 and reports orders and states explored."""
    out = _fencesim("fuzz", "--exhaustive", "--max-events", 5, "--workload", "tiny", "--protocol", "none", "--json")
    assert out.returncode == 1, out.stderr
    (result,) = json.loads(out.stdout)["protocols"]
    assert result["orders_explored"] >= result["distinct_states"] > 0
    assert result["violations"]["lost_update"]["shortest_events"] == 4
    assert result["violations"]["duplicate_effect"]["shortest_events"] == 5
    assert "orders" in out.stderr and "distinct states" in out.stderr


def test_exhaustive_human_output_reports_orders_and_states():
    """Without --json the exhaustive summary on stdout names orders and distinct states."""
    out = _fencesim("fuzz", "--exhaustive", "--max-events", 3, "--workload", "tiny", "--protocol", "plan")
    assert out.returncode == 0, out.stderr
    assert "orders" in out.stdout and "distinct states" in out.stdout


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
