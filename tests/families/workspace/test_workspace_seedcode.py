"""The transcription of the seed article's fixture (seedcode.py), bugs included."""

from __future__ import annotations

from sim.families.workspace.matrix import ROW_PRESETS
from sim.families.workspace.seedcode import ROWS, seed_code_table


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


def test_seed_code_rows_are_the_table_rows():
    """The fixture answers the same four rows as the printed table, in its order."""
    assert list(ROWS) == list(ROW_PRESETS) == list(seed_code_table())
