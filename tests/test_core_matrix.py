"""The seed's verdict matrix: the model reproduces the printed table; the seed code differs in five cells."""

from __future__ import annotations

import pytest

from sim.matrix import ROW_PRESETS, SEED_SCENARIOS, SEED_TABLE, compute_matrix, matrix_frame
from sim.seedcode import seed_code_table

DIFFERING_CELLS = {
    ("fence=plan", "replan_drift"), ("fence=step", "concurrent_edit"), ("fence=step", "preemption_retry"),
    ("dedupe on", "concurrent_edit"), ("dedupe on", "preemption_retry"),
}


@pytest.fixture(scope="module")
def document():
    return compute_matrix()


def test_model_table_equals_seed_table(document):
    """All 12 cells of the model's table equal the seed article's printed table."""
    assert document["table"] == SEED_TABLE
    assert document["matches_seed_table"] is True


def test_seed_table_has_twelve_cells():
    """The printed table has the four rows and three scenarios of the seed."""
    assert list(SEED_TABLE) == list(ROW_PRESETS) == ["fence=none", "fence=plan", "fence=step", "dedupe on"]
    assert all(list(cells) == list(SEED_SCENARIOS) for cells in SEED_TABLE.values())


def test_differences_are_exactly_the_five_documented_cells(document):
    """The seed code differs from the model in exactly the five cells of DESIGN section 5."""
    cells = [(d["row"], d["scenario"]) for d in document["differences"]]
    assert len(cells) == 5 and set(cells) == DIFFERING_CELLS


def test_every_difference_says_why(document):
    """Each difference carries a non-empty explanation that is not the 'unexplained' fallback."""
    for difference in document["differences"]:
        assert difference["why"].strip()
        assert "not explained" not in difference["why"]


def test_differences_quote_both_answers(document):
    """Each difference quotes the model's (table) answer and the seed code's answer for its cell."""
    for difference in document["differences"]:
        row, name = difference["row"], difference["scenario"]
        assert difference["table"] == document["table"][row][name]
        assert difference["seed_code"] == document["seed_code"][row][name]
        assert difference["table"] != difference["seed_code"]


def test_seed_code_reproduces_documented_behaviour():
    """The transcribed fixture: step fence checks nothing, plan fence answers the re-plan with pre_hash."""
    table = seed_code_table()
    assert table == {
        "fence=none": {"concurrent_edit": "applied", "preemption_retry": "applied twice", "replan_drift": "applied"},
        "fence=plan": {"concurrent_edit": "rejected:stale_rev", "preemption_retry": "rejected:stale_rev",
                       "replan_drift": "rejected:pre_hash"},
        "fence=step": {"concurrent_edit": "applied", "preemption_retry": "applied twice", "replan_drift": "applied"},
        "dedupe on": {"concurrent_edit": "applied", "preemption_retry": "applied twice", "replan_drift": "applied"},
    }


def test_seed_code_with_dedupe_everywhere_dedupes_the_none_row():
    """Run with the fixture's default dedupe=True, the none row's retry says 'deduped' (the footnote)."""
    assert seed_code_table(dedupe_everywhere=True)["fence=none"]["preemption_retry"] == "deduped"


def test_footnote_names_the_sixth_difference(document):
    """The matrix document footnotes the none-row retry that dedupe everywhere would change."""
    assert any("fence=none" in note and "preemption_retry" in note and "deduped" in note
               for note in document["footnotes"])


def test_matrix_frame_has_one_row_per_cell(document):
    """matrix_frame gives 12 rows with the model equal to the seed table."""
    frame = matrix_frame(document)
    assert len(frame) == 12
    assert (frame["model"] == frame["seed_table"]).all()
