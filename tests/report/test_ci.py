"""CI outputs of a fuzz run (sim.report.ci): JUnit XML and the GitHub job summary, from a fuzz document that
carries its family's invariants and availability columns."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from sim.report.ci import junit_xml, markdown_summary

ROOT = Path(__file__).resolve().parents[2]


def _document(invariants=("lost_update", "duplicate_effect"), availability=("spurious_rejections",)):
    tally = lambda runs, found: {"runs": runs, "violating_runs": sum(found.values()),
                                 "violating_runs_by_invariant": {n: found.get(n, 0) for n in invariants},
                                 **{a: 3 for a in availability}}
    return {
        "workload": "seed-fuzz", "family": "workspace", "seed_start": 0, "seeds": 10, "runs": 20, "violating_runs": 4, "invariants": list(invariants),
        "availability": list(availability),
        "by_protocol": {"none": tally(10, {"lost_update": 4}), "plan": tally(10, {})},
        "counterexamples": [{"protocol": "none", "invariant": "lost_update",
                             "events": ["plan", "dispatch s1", "human_edit app.py", "deliver s1"],
                             "replay": "fencesim run counterexamples/x.toml"}],
    }


def test_junit_has_one_testcase_per_protocol_and_invariant():
    """One suite per protocol, one testcase per invariant plus liveness; a failure only for the counterexamples."""
    root = ET.fromstring(junit_xml(_document(), {"sweep": 2.0, ("none", "lost_update"): 0.5}))
    names = sorted((s.get("name"), c.get("name")) for s in root.iter("testsuite") for c in s.iter("testcase"))
    assert names == sorted((f"fencesim fuzz {p}", n) for p in ("none", "plan")
                           for n in ("lost_update", "duplicate_effect", "liveness"))
    failed = [(c.get("classname"), c.get("name")) for c in root.iter("testcase") if c.find("failure") is not None]
    assert failed == [("fencesim.fuzz.seed-fuzz.none", "lost_update")]
    assert (root.get("tests"), root.get("failures")) == ("6", "1")
    times = {(c.get("classname"), c.get("name")): c.get("time") for c in root.iter("testcase")}
    assert times[("fencesim.fuzz.seed-fuzz.none", "lost_update")] == "0.500"
    assert times[("fencesim.fuzz.seed-fuzz.plan", "liveness")] == "1.000"


def test_junit_failure_carries_the_order_and_the_replay_command():
    """A failure's message counts the violating runs; its text lists the order and the replay command."""
    failure = next(ET.fromstring(junit_xml(_document())).iter("failure"))
    assert failure.get("message") == "lost_update violated in 4 of 10 run(s)"
    assert "human_edit app.py" in failure.text and "replay: fencesim run counterexamples/x.toml" in failure.text


def test_junit_follows_the_documents_invariants_for_any_family():
    """The test cases come from the document's invariants, so an effects document gets effects invariants."""
    document = _document(invariants=("duplicate_effect", "lost_success"), availability=("human_exceptions",))
    document["counterexamples"] = []
    names = {c.get("name") for c in ET.fromstring(junit_xml(document)).iter("testcase")}
    assert "lost_success" in names and "lost_update" not in names


def test_markdown_summary_has_a_row_per_protocol_with_availability_columns():
    """The summary's table has the invariants and availability columns, one row per protocol, and the replays."""
    text = markdown_summary(_document())
    assert text.startswith("## fencesim fuzz: workload `seed-fuzz`")
    assert "| protocol | runs | violating runs | lost_update | duplicate_effect | spurious_rejections | work done |" in text
    assert "| `none` | 10 | 4 | 4 | 0 | 3 | n/a |" in text and "| `plan` | 10 | 0 | 0 | 0 | 3 | n/a |" in text
    assert "replay: `fencesim run counterexamples/x.toml`" in text


def test_report_ci_compiles_on_the_oldest_supported_python():
    """sim/report/ci.py compiles on every Python that pyproject's requires-python admits (3.11 included)."""
    source = (ROOT / "sim" / "report" / "ci.py").read_text()
    compile(source, "sim/report/ci.py", "exec")


def test_junit_stays_well_formed_xml_with_control_characters_in_names():
    """A workload or protocol name holding control characters (or a lone surrogate) is written escaped, so
    the JUnit file still parses."""
    import xml.etree.ElementTree as ET

    from sim.report.ci import junit_xml

    document = {"family": "workspace", "workload": "w\x01\x1b[31m", "seed_start": 0, "seeds": 1,
                "invariants": ["lost_update"], "counterexamples": [],
                "by_protocol": {"none\x07": {"runs": 1, "violating_runs": 0,
                                             "violating_runs_by_invariant": {"lost_update": 0}}},
                "budget_s": None}
    root = ET.fromstring(junit_xml(document).encode("utf-8"))
    names = [suite.get("name") for suite in root.iter("testsuite")]
    assert names == ["fencesim fuzz none\\x07"]
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["workload"] == "w\\x01\\x1b[31m" and props["budget_s"] == "none"
