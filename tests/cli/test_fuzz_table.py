"""fencesim fuzz's protocol table never loses a character: written to a file it is as wide as its widest row
(each row one line, never wrapped or cut at the log width); on a width asked for (COLUMNS) its cells wrap
between words, whole, with no ellipsis."""

from __future__ import annotations

import io
import sys

from sim.cli.app import LOG_WIDTH, human_console
from sim.cli.fuzz_print import print_summary

LABELS = ["keyed-fingerprint-reconcile,receipt_check=trusting,lease_fence=off", "plan,drift_check=reject",
          "step-dedupe,journal_write=after_write,drift_check=reject,overlap_check=on"]
NOTHING = "APPLIES NOTHING: no violation because no work is done"


def _document() -> dict:
    """A fuzz document whose table is wider than LOG_WIDTH: long names, two availability columns, and work
    done that says a protocol applies nothing."""
    tally = {"runs": 300, "violating_runs": 120, "spurious_rejections": 75, "human_exceptions": 12,
             "violating_runs_by_invariant": {"lost_update": 100, "duplicate_effect": 40, "unknown_as_failed": 30},
             "progress": {"share": {"value": 0.0}, "what": "steps_applied"}, "applies_nothing": True,
             "safe_progress": {"share": {"value": 0.0}}}
    return {"workload": "w", "family": "workspace", "seed_start": 0, "seeds": 300, "seeds_done": 300, "runs": 900,
            "violating_runs": 360, "availability": ["spurious_rejections", "human_exceptions"],
            "by_protocol": {label: tally for label in LABELS}, "counterexamples": []}


def _printed(monkeypatch, columns: str | None) -> str:
    buffer = io.StringIO()
    monkeypatch.setattr(sys, "stdout", buffer)
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    print_summary(human_console(False), _document())
    return buffer.getvalue()


def test_a_table_written_to_a_file_is_whole_one_row_a_line(monkeypatch):
    """No terminal, no COLUMNS: each protocol's row is one line holding its whole name and every cell whole,
    even though the table is wider than LOG_WIDTH."""
    rows = [line for line in _printed(monkeypatch, None).splitlines() if "│" in line]
    assert len(rows) == len(LABELS), rows
    for label, row in zip(LABELS, rows):
        assert f" {label} " in row and NOTHING in row and "duplicate_effect 40, unknown_as_failed 30" in row
    assert max(len(row.rstrip()) for row in rows) > LOG_WIDTH  # wider than the log width: not narrowed to it


def test_a_table_at_a_width_asked_for_wraps_cells_whole(monkeypatch):
    """COLUMNS=100: the cells wrap between words and after commas, every word whole, nothing cut to '…'."""
    text = _printed(monkeypatch, "100")
    assert "…" not in text
    table = " ".join(line for line in text.splitlines() if "│" in line)
    for word in [*NOTHING.split(), "receipt_check=trusting,", "unknown_as_failed", "overlap_check=on"]:
        assert word in table, word
