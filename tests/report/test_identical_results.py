"""Protocols whose results on a workload are identical (equal tallies, the same minimal counterexample per
invariant: ``sim.search.pipeline.identical_groups``) are one group, and fuzz and review show one section for
the group instead of repeating the same counterexample per protocol."""

from __future__ import annotations

import dataclasses
import json

import pytest

from sim.families.workspace import FAMILY
from sim.report.phrases import matrix_rows, shown_examples
from sim.report.results import DesignRow
from sim.search.options import SearchOptions
from sim.search.pipeline import fuzz, identical_groups
from tests.conftest import WEIGHED_WORKLOAD

WORKLOAD = WEIGHED_WORKLOAD.replace("TARGETS", '"api/handlers.py#auth" = 10')
DESIGN = """format = 1
name = "grouped"
family = "workspace"
protocols = ["step-dedupe", "step-dedupe,overlap_check=on", "none"]
seeds = 40
workload = "w.toml"
"""
GROUP = ["step-dedupe", "step-dedupe,overlap_check=on"]


@pytest.fixture(scope="module")
def workload_path(tmp_path_factory):
    folder = tmp_path_factory.mktemp("identical")
    (folder / "w.toml").write_text(WORKLOAD, encoding="utf-8")
    (folder / "design.toml").write_text(DESIGN, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def result(workload_path):
    from sim.registry import FAMILIES

    workload = FAMILIES.load_workload(str(workload_path / "w.toml"))
    return fuzz(FAMILY, workload, [*GROUP, "none"], SearchOptions(40, workers=1, advise=False))


def test_a_mechanism_that_never_acts_leaves_results_identical(result):
    """overlap_check=on on a plan with no shared hunk: the same tallies and orders, so one group; none is apart."""
    assert any(e.protocol.label == GROUP[0] for e in result.counterexamples)
    assert identical_groups(result) == [GROUP]


def test_equal_tallies_with_another_minimal_order_are_not_identical(result):
    """Identical needs the same minimal counterexample per invariant, not only equal counts."""
    examples = []
    for example in result.counterexamples:
        if example.protocol.label == GROUP[1]:
            example = dataclasses.replace(example, shrunk=dataclasses.replace(
                example.shrunk, events=tuple(reversed(example.shrunk.events))))
        examples.append(example)
    assert identical_groups(dataclasses.replace(result, counterexamples=examples)) == []


def test_unequal_tallies_are_not_identical(result):
    tallies = dict(result.summary.tallies)
    changed = dataclasses.replace(tallies[GROUP[1]], measures={**tallies[GROUP[1]].measures, "steps_applied": -1})
    summary = dataclasses.replace(result.summary, tallies={**tallies, GROUP[1]: changed})
    assert identical_groups(dataclasses.replace(result, summary=summary)) == []


def _design(examples, identical) -> DesignRow:
    return DesignRow.from_json({"name": "d", "counterexamples": examples, "identical": identical,
                                "matrix": {"rows": [], "columns": [e["name"] for e in examples], "cells": {}}})


def test_a_group_shows_its_first_protocols_counterexamples_once():
    """The report shows a group's first protocol's counterexample, standing for the others, and not theirs;
    the verdict matrix has one row for the order."""
    examples = [{"name": f"x_{p}", "protocol": p, "invariant": "lost_update", "events": ["plan"]}
                for p in [*GROUP, "none"]]
    design = _design(examples, [GROUP])
    assert [(e.protocol, others) for e, others in shown_examples(design)] == [
        (GROUP[0], GROUP[1:]), ("none", [])]
    _, rows, _ = matrix_rows(design)
    assert [row[0] for row in rows] == [f"minimal order: lost_update under {', '.join(GROUP)}",
                                        "minimal order: lost_update under none"]
    assert len(shown_examples(_design(examples, []))) == 3


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_review_prints_one_section_per_group(cli, workload_path, tmp_path):
    """The review's results name the group; summary.md, report.html and the terminal give one section for it,
    headed by its members, and never the counterexample under the second member alone."""
    out = cli("review", "--design", workload_path / "design.toml", "--out", tmp_path / "r", "--workers", "1",
              "--json", timeout=900)
    assert out.returncode in (0, 1), out.stderr
    design = json.loads(out.stdout)["designs"][0]
    assert design["identical"] == [GROUP]
    heading = "step-dedupe, step-dedupe,overlap_check=on: identical results on this workload"
    summary = (tmp_path / "r" / "summary.md").read_text(encoding="utf-8")
    assert "**`step-dedupe`, `step-dedupe,overlap_check=on`: identical results on this workload**" in summary
    ours = [e for e in design["counterexamples"] if e["protocol"] == GROUP[0]]
    assert ours
    for example in ours:
        assert summary.count(f"#### `{example['finding']}` under `step-dedupe`, `step-dedupe,overlap_check=on`") == 1
        assert f"#### `{example['finding']}` under `step-dedupe,overlap_check=on`" not in summary
        assert summary.count(f"`{' ; '.join(example['events'])}`") == 1
    report = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "identical results on this workload" in report
    text = cli("review", "--design", workload_path / "design.toml", "--out", tmp_path / "s", "--workers", "1",
               timeout=900)
    assert f"{heading} (" in text.stdout
