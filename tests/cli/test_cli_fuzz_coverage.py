"""Coverage and blast radius in fuzz's outputs: a declared goal no order reaches is reported *never* and
warned about (terminal, JUnit, job summary); a reachable one is counted; the saturation curve is a JUnit
property and in the document; each counterexample carries its effect ledger."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from tests.conftest import REPO_ROOT


def _workload(tmp_path):
    text = (REPO_ROOT / "scenarios" / "workloads" / "seed-fuzz.toml").read_text(encoding="utf-8")
    path = tmp_path / "seed-fuzz-goals.toml"
    path.write_text(text.replace('name = "seed-fuzz"', 'name = "seed-fuzz-goals"')
                    + '\n[coverage]\nreach = ["deliver verdict=deduped", "deliver verdict=compensated"]\n',
                    encoding="utf-8")
    return path


def test_a_goal_never_reached_is_warned_and_a_reached_one_counted(cli, tmp_path):
    summary = tmp_path / "summary.md"
    junit = tmp_path / "fuzz.xml"
    done = cli("fuzz", "-w", _workload(tmp_path), "-p", "step-dedupe", "-p", "none", "--seeds", "60",
               "--workers", "1", "--no-advise", "--out", tmp_path / "out", "--junit", junit, "--json",
               env_extra={"GITHUB_STEP_SUMMARY": str(summary)}, timeout=600)
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    coverage = document["by_protocol"]["step-dedupe"]["coverage"]
    assert coverage["goals"]["deliver verdict=deduped"] > 0
    assert coverage["never"] == ["deliver verdict=compensated"]
    assert "coverage goal 'deliver verdict=compensated' never reached under step-dedupe (60 runs)" in \
        document["coverage_warnings"]
    assert "warning: coverage goal 'deliver verdict=compensated' never reached under step-dedupe" in done.stderr
    assert "never reached" in summary.read_text(encoding="utf-8")
    suites = {s.get("name"): s for s in ET.parse(junit).getroot()}
    properties = {p.get("name"): p.get("value") for p in suites["fencesim fuzz step-dedupe"].iter("property")}
    assert properties["coverage_never"] == "deliver verdict=compensated"
    curve = [point.split(":") for point in properties["saturation"].split()]
    assert curve and int(curve[-1][0]) == 60 and int(curve[-1][1]) > 1
    assert [s[0] for s in document["saturation"]][-1] == 60
    lost = next(c for c in document["counterexamples"] if c["protocol"] == "none"
                and c["finding"] == "lost_update @ stale_plan")  # a human's edit overwritten: a stale plan
    assert any(e["kind"] == "human_edit_overwritten" and "app.py" in e["what"] for e in lost["ledger"]), lost["ledger"]
    assert "blast radius:" in done.stderr
