"""The seed's verdict matrix (matrix.py): the model reproduces the printed table; the seed code differs in
five cells, each explained."""

from __future__ import annotations

import pytest

from sim.families.workspace.matrix import (
    ROW_PRESETS,
    SEED_SCENARIOS,
    SEED_TABLE,
    compute_matrix,
    matrix_frame,
    model_table,
)

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
    """The seed code differs from the model in exactly five cells (docs/workspace.md)."""
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


def test_footnote_names_the_sixth_difference(document):
    """The matrix document footnotes the none-row retry that dedupe everywhere would change."""
    assert any("fence=none" in note and "preemption_retry" in note and "deduped" in note
               for note in document["footnotes"])


def test_matrix_frame_has_one_row_per_cell(document):
    """matrix_frame gives 12 rows with the model equal to the seed table."""
    frame = matrix_frame(document)
    assert len(frame) == 12
    assert (frame["model"] == frame["seed_table"]).all()


def test_model_table_reads_the_seed_files_from_any_directory(tmp_path, seed_dir, monkeypatch):
    """Outside the checkout the matrix still finds the seed scenarios, and a folder may be given."""
    monkeypatch.chdir(tmp_path)
    assert model_table() == SEED_TABLE
    assert model_table(seed_dir) == SEED_TABLE


def test_row_presets_are_workspace_presets():
    """Every row of the table is one workspace preset."""
    from sim.families.workspace.knobs import PRESETS

    assert list(ROW_PRESETS.values()) == list(PRESETS)
