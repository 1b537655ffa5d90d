"""The smallest reliability class per transition (classes.py): found by the single-fault search, not read
off the effect class; the four classes are presets naming every knob."""

from __future__ import annotations

from sim.families.effects import FAMILY
from sim.families.effects.classes import classes_section, smallest_classes
from sim.families.effects.knobs import PRESETS, RELIABILITY_CLASSES, TABLE
from sim.registry import FAMILIES


def test_the_four_classes_are_presets_that_name_every_knob_and_never_relabel_others():
    """Each class sets every knob but key_retention; a protocol spelt by knobs keeps its old label."""
    for label in RELIABILITY_CLASSES:
        assert set(TABLE.presets[label]) == set(TABLE.names()) - {"key_retention"}
    assert TABLE.parse("governed-saga").knobs == TABLE.parse("keyed-fingerprint-reconcile").knobs
    durable = TABLE.parse("durable-workflow")
    assert TABLE.build(durable.knobs).label == "keyed-fingerprint-reconcile,compensation=off,approval=off"
    assert FAMILY.presets == PRESETS and not set(PRESETS) & set(RELIABILITY_CLASSES)


def test_the_search_finds_no_class_for_the_keyless_announcement():
    """agent-pr-workflow: every step is clean from restartable-job up, except post_slack, which no class
    protects (a duplicated request to an endpoint that takes no key)."""
    findings = {f.transition: f for f in smallest_classes(FAMILY, FAMILIES.load_workload("agent-pr-workflow"))}
    assert {n: f.smallest for n, f in findings.items()} == {
        "create_branch": "restartable-job", "open_pr": "restartable-job", "run_ci": "restartable-job",
        "post_slack": None, "merge_pr": "restartable-job"}
    assert findings["post_slack"].violated["governed-saga"] == ["duplicate_effect"]


def test_the_review_section_has_one_row_per_transition():
    section = classes_section(FAMILY, FAMILIES.load_workload("agent-pr-workflow"))
    rows = section["table"]["rows"]
    assert [r[0] for r in rows] == ["create_branch", "open_pr", "run_ci", "post_slack", "merge_pr"]
    assert rows[3][2].startswith("none of the four")
