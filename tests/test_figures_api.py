"""The notebook figures (sim.figures): every figure the review draws, from a sweep frame, a fuzz result or a
review -- no hand-built dicts."""

from __future__ import annotations

import functools

import pytest
from matplotlib.figure import Figure

import sim
import sim.app.notebook_figures as figures


@functools.cache
def _frame():
    return sim.sweep_frame("tiny", ["none", "plan"], seeds=80, workers=1)


@functools.cache
def _found():
    return sim.fuzz("tiny", ["none", "plan"], seeds=80, workers=1, advise=False)


def _texts(figure: Figure) -> str:
    """Every text of a figure: annotations, tick labels and legends."""
    texts = [t for ax in figure.axes for t in ax.texts + ax.get_xticklabels() + ax.get_yticklabels()]
    legends = [*figure.legends, *(ax.get_legend() for ax in figure.axes if ax.get_legend() is not None)]
    texts += [t for legend in legends for t in legend.get_texts()]
    return " ".join(t.get_text() for t in texts)


def test_safety_vs_availability_from_a_frame_and_from_a_result_agree():
    """The same sweep gives the same points whether drawn from its DataFrame or from sim.fuzz's result."""
    from_frame = figures.safety_vs_availability(_frame())
    from_result = figures.safety_vs_availability(_found())
    assert isinstance(from_frame, Figure) and _texts(from_frame) == _texts(from_result)
    assert "none" in _texts(from_frame) and "plan" in _texts(from_frame)


def test_swimlane_of_a_counterexample_by_invariant_or_position():
    by_name = figures.swimlane(_found(), "lost_update @ stale_plan")
    assert "human_edit app.py" in _texts(by_name)
    assert isinstance(figures.swimlane(_found(), "lost_update"), Figure)  # an invariant: its first finding
    assert isinstance(figures.swimlane(_found(), ("none", "lost_update")), Figure)
    assert isinstance(figures.swimlane(_found(), 0), Figure)
    with pytest.raises(sim.InputError, match="no counterexample 'nothing'"):
        figures.swimlane(_found(), "nothing")


def test_verdict_matrix_of_a_result_with_scenarios():
    figure = figures.verdict_matrix(_found(), [sim.load_scenario("scenarios/seed/concurrent_edit.toml")])
    assert "concurrent_edit" in _texts(figure)


def test_verdict_matrix_rows_name_each_finding_and_never_repeat():
    """Two findings of one invariant under one protocol (lost_update @ lost_ack, lost_update @ stale_plan) are
    two rows that read differently: each row label names its finding whole, where included."""
    from sim.report.review import counterexample_rows

    figure = figures.verdict_matrix(_found())
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert len(labels) == len(set(labels)), labels
    findings = [example.row.finding for example in counterexample_rows(_found(), "tiny")]
    assert len({f.split(" @ ")[0] for f in findings}) < len(findings)  # an invariant found at two places
    for label, finding in zip(labels, findings):
        assert " ".join(label.split()).startswith(finding), (label, finding)


def test_interference_from_a_result_and_from_a_frame_with_fault_counts():
    """From a result: the review's levelled sweeps; from a frame: grouped by each run's fault count."""
    assert isinstance(figures.interference(_found(), seeds=20), Figure)
    frame = _frame().copy()
    if not any(column in frame.columns for column in figures.FAULT_COUNT_COLUMNS):
        frame["faults"] = frame["events"] % 3 + 1  # a stand-in until the frame carries the fault count
    figure = figures.interference(frame)
    assert "none" in _texts(figure)
    with pytest.raises(sim.InputError, match="fault count"):
        figures.interference(_frame().drop(columns=[c for c in figures.FAULT_COUNT_COLUMNS
                                                    if c in _frame().columns]))


def test_exposure_from_an_effects_result():
    found = sim.fuzz("effects-pr", ["unkeyed-retry", "keyed"], seeds=40, workers=1, advise=False)
    assert isinstance(figures.exposure(found, seeds=60), Figure)
    with pytest.raises(sim.InputError, match="only the effects family"):
        figures.exposure(_found(), seeds=10)


def test_every_figure_of_a_review(tmp_path):
    """sim.app.notebook_figures.review draws every figure a review folder holds, named as its files are."""
    design = tmp_path / "d.toml"
    design.write_text('format = 1\nname = "small"\nprotocols = ["none", "plan"]\nseeds = 30\nworkload = "tiny"\n')
    results = sim.review([design])
    drawn = figures.review(results)
    assert {"verdict_matrix_small", "safety_vs_availability_small", "interference_small"} <= set(drawn)
    assert any(name.startswith("swimlane_") for name in drawn)
    design = results.designs[0]
    assert design.name == "small" and "_family" not in str(results.to_json())
    assert isinstance(figures.safety_vs_availability(design), Figure)
    assert isinstance(figures.safety_vs_availability(results.to_json()["designs"][0]), Figure)  # results.json's
    assert isinstance(figures.swimlane(design), Figure)
    assert isinstance(figures.verdict_matrix(design), Figure)


def test_anything_else_is_one_clear_error():
    with pytest.raises(sim.InputError, match="sweep DataFrame"):
        figures.safety_vs_availability({"not": "a result"})
