"""The docs' knob and footprint tables say what the knob tables declare (a knob added, renamed or re-ranked in
its declaration and not in the docs fails here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sim.core.knobs import KnobTable
from sim.families.effects.knobs import TABLE as EFFECTS
from sim.families.workspace.knobs import TABLE as WORKSPACE

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _rows(text: str, header: str) -> list[list[str]]:
    """The rows of the Markdown table under ``header`` (cells stripped)."""
    lines = text.splitlines()
    start = lines.index(header)
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def _values(cell: str) -> dict[str, int] | None:
    """``none` (0), `plan` (1)`` -> {"none": 0, "plan": 1}; None for a numeric knob's description."""
    found = re.findall(r"`([^`]+)` \((\d+)\)", cell)
    return {value: int(rank) for value, rank in found} if found else None


@pytest.mark.parametrize(("page", "table"), [("workspace.md", WORKSPACE), ("effects.md", EFFECTS)])
def test_the_knob_table_in_the_docs_is_the_declared_one(page: str, table: KnobTable):
    """Every knob in declaration order, with its values, their ranks and its default (or whom it follows)."""
    rows = _rows((DOCS / page).read_text(encoding="utf-8"), "| Knob | Values (rank) | Default | Meaning |")
    assert [row[0].strip("`") for row in rows] == list(table.names())
    for row, knob in zip(rows, table.knobs):
        if knob.values is None:
            ladder = ", ".join(knob.show(v) for v in knob.ladder)
            assert f"tries {ladder})" in row[1], f"{knob.name}: the docs should list the ladder {ladder}"
            assert row[2] == knob.show(knob.default)
            continue
        assert _values(row[1]) == {value: knob.ranks.get(value, 0) for value in knob.values}, knob.name
        assert row[2] == (f"follows `{knob.follows}`" if knob.follows else f"`{knob.default}`"), knob.name


def _template_cell(text: str) -> str:
    return " ".join(re.findall(r"`([^`]+)`", text))


def test_the_footprint_table_in_the_docs_is_the_declared_one():
    """docs/workspace.md's footprint table is every row of the workspace footprints, in declaration order."""
    rows = _rows((DOCS / "workspace.md").read_text(encoding="utf-8"), "| When | Event | Reads | Writes |")
    shown = [("" if when == "always" else when.strip("`"), kind.strip("`"), _template_cell(reads),
              _template_cell(writes)) for when, kind, reads, writes in rows]
    assert shown == WORKSPACE.footprint_rows()
