"""The smallest reliability class per transition (classes.py): answered by certify's own function under each
class (sim.app.certifying.transition_answers), not read off the effect class; the four classes are presets naming every
knob; the table and certify cannot disagree, and a planted disagreement is caught."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

import sim.app.reliability_classes as classes
from sim.app.certifying import EXACTLY_ONCE, REPEATS, certify
from sim.app.reliability_classes import classes_section, disagreements, smallest_classes
from sim.families.effects import FAMILY
from sim.families.effects.knobs import PRESETS, RELIABILITY_CLASSES, TABLE
from sim.registry import FAMILIES

UPGRADE = Path(__file__).with_name("dependency_upgrade.toml")


@functools.cache
def _workload(name):
    return FAMILIES.load_workload(name)


@functools.cache
def _findings(name):
    return tuple(smallest_classes(FAMILY, _workload(name)))


def test_the_four_classes_are_presets_that_name_every_knob_and_never_relabel_others():
    """Each class sets every knob but key_retention; a protocol spelt by knobs keeps its old label."""
    for label in RELIABILITY_CLASSES:
        assert set(TABLE.presets[label]) == set(TABLE.names()) - {"key_retention"}
    assert TABLE.parse("governed-saga").knobs == TABLE.parse("keyed-fingerprint-reconcile").knobs
    durable = TABLE.parse("durable-workflow")
    assert TABLE.build(durable.knobs).label == "keyed-fingerprint-reconcile,compensation=off,approval=off"
    assert FAMILY.presets == PRESETS and not set(PRESETS) & set(RELIABILITY_CLASSES)


def test_the_search_finds_no_class_for_the_keyless_announcement():
    """agent-pr-workflow: every step is exactly once from restartable-job up, except post_slack, which no class
    protects (a duplicated request to an endpoint that takes no key): the endpoint option certify proves is
    given, not a bare "the endpoint must change"."""
    findings = {f.transition: f for f in _findings("agent-pr-workflow")}
    assert {n: f.smallest for n, f in findings.items()} == {
        "create_branch": "restartable-job", "open_pr": "restartable-job", "run_ci": "restartable-job",
        "post_slack": None, "merge_pr": "restartable-job"}
    assert findings["post_slack"].verdict["governed-saga"] == REPEATS
    assert findings["post_slack"].violated["governed-saga"] == ["duplicate_effect"]
    assert findings["post_slack"].change_checked and "keys = true" in findings["post_slack"].change


def test_the_review_section_has_one_row_per_transition():
    section = classes_section(FAMILY, _workload("agent-pr-workflow"))
    rows = section["table"]["rows"]
    assert [r[0] for r in rows] == ["create_branch", "open_pr", "run_ci", "post_slack", "merge_pr"]
    assert rows[3][2].startswith("none of the four") and "proved by the search" in rows[3][2]


def test_a_release_a_knob_fixes_is_not_said_to_need_a_new_endpoint():
    """issue 41: the table said publish_package needs "none of the four: the endpoint itself must change" while
    certify proves irreversible_keys=on fixes it; the table now gives certify's proved change."""
    findings = {f.transition: f for f in _findings(str(UPGRADE))}
    publish = findings["publish_package"]
    assert publish.smallest is None
    assert (publish.change, publish.change_checked, publish.change_endpoint) == ("irreversible_keys=on", True, False)
    row = next(r for r in classes_section(FAMILY, _workload(str(UPGRADE)))["table"]["rows"]
               if r[0] == "publish_package")
    assert row[2] == "none of the four; governed-saga,irreversible_keys=on (proved by the search)"
    assert "must change" not in row[2]


@pytest.mark.parametrize("name", ["agent-pr-workflow", str(UPGRADE)])
def test_the_table_and_certify_agree(name):
    """Row by row, what certify answers under each class within the table's bound: no disagreement; and
    certify's own command answers the same under the largest class."""
    workload = _workload(name)
    findings = list(_findings(name))
    assert disagreements(findings, workload) == []
    depth = findings[0].within
    for answer in certify(workload, "temporal", "", max_events=depth, propose=False).answers:
        assert answer.verdict  # the engine's certificate is answered by the same function
    last = {f.transition: f for f in findings}
    from sim.app.certifying import transition_answers

    for answer in transition_answers(workload, RELIABILITY_CLASSES[-1], depth)[0]:
        finding = last[answer.transition]
        if answer.verdict == EXACTLY_ONCE:
            assert finding.smallest is not None
        else:
            assert finding.smallest is None and finding.change == answer.change


def test_a_planted_disagreement_is_caught(monkeypatch):
    """The table read off anything but certify's proofs is caught: its answers for publish_package replaced by
    the old claim (the endpoint must change, unchecked), and a smallest class certify does not prove."""
    workload = _workload(str(UPGRADE))
    real = classes.class_answers

    def planted(*args, **kwargs):
        answers = real(*args, **kwargs)
        last = answers[RELIABILITY_CLASSES[-1]]["publish_package"]
        last.change, last.change_checked = "the endpoint of publish_package must change", False
        answers["durable-workflow"]["post_slack"].verdict = EXACTLY_ONCE
        return answers

    monkeypatch.setattr(classes, "class_answers", planted)
    findings = smallest_classes(FAMILY, workload)
    monkeypatch.undo()
    found = disagreements(findings, workload)
    assert any(line.startswith("publish_package: the table proposes") for line in found), found
    assert any(line.startswith("post_slack under durable-workflow: the table says 'exactly once'") for line in found)
