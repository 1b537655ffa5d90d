"""The docs' knob and footprint tables are generated from the knob tables, like the field, fault and cell tables:
a knob added, renamed, re-ranked or re-worded in its declaration and not in the docs fails here, and the message
is the table to paste."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sim.core.knobs import KnobTable
from sim.families.effects.knobs import TABLE as EFFECTS
from sim.families.workspace.knobs import TABLE as WORKSPACE

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize(("page", "table"), [("workspace.md", WORKSPACE), ("effects.md", EFFECTS)])
def test_the_knob_table_in_the_docs_is_generated_from_the_declarations(page: str, table: KnobTable):
    """Every knob in declaration order, with its values and their ranks, its default (or whom it follows) and
    its meaning, exactly as ``TABLE.docs_table()`` renders them."""
    assert table.docs_table() in (DOCS / page).read_text(encoding="utf-8"), (
        f"docs/{page}'s table of knobs differs from the {table.family} knob table; paste:\n" + table.docs_table())


def test_the_footprint_table_in_the_docs_is_generated_from_the_declarations():
    """docs/workspace.md's footprint table is every row of the workspace footprints, in declaration order,
    exactly as ``TABLE.footprint_docs_table()`` renders them."""
    assert WORKSPACE.footprint_docs_table() in (DOCS / "workspace.md").read_text(encoding="utf-8"), (
        "docs/workspace.md's table of footprints differs from the workspace knob table; paste:\n"
        + WORKSPACE.footprint_docs_table())


def test_the_generated_cells_say_ranks_defaults_and_ladders():
    """The cells the generator writes: values weakest first with their ranks, a followed knob's default, a
    numeric knob's unit and ladder, a footprint's 'always' and '--'."""
    rows = {line.split(" | ")[0].strip("| `"): line for line in WORKSPACE.docs_table().splitlines()[2:]}
    assert rows["journal_gc"].startswith(
        "| `journal_gc` | `session_end` (0), `eager` (0), `never` (1), `after_checkpoint` (1) | `never` | ")
    assert rows["stamp_at"].startswith("| `stamp_at` | `apply` (0), `plan` (1), `dispatch` (1) | `dispatch` | ")
    effects = EFFECTS.docs_table()
    assert "| `approval` | `off` (0), `on` (1) | follows `compensation` | " in effects
    assert ("| `key_retention` | a number of seconds (its rank is its value; the advisor tries 5, 30, 604800) "
            "| 604800 | ") in effects
    footprints = WORKSPACE.footprint_docs_table().splitlines()
    assert footprints[2] == ("| always | `plan` | `snapshot`, `files`, `rev`, `model_number`, `file_revs` | "
                             "`snapshot`, `snapshot_rev`, `steps`, `plan_base_rev`, `plan_rejected`, `snapshot_revs` |")
    assert "| always | `tests_fail` | `steps`, `applied` | -- |" in footprints
    assert "| `fence=plan` | `dispatch` | `plan_base_rev`, `snapshot_revs` | -- |" in footprints


def test_the_reliability_classes_in_the_docs_set_the_knobs_their_presets_set():
    """docs/effects.md's table of the four reliability classes names, per class, every knob its preset sets
    (in full, or as an earlier class with changes), so a knob added to the classes is added there too."""
    text = (DOCS / "effects.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    start = lines.index("| Class | Mechanisms it turns on | Knobs |")
    shown: dict[str, dict[str, str]] = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        name, _, knobs = (cell.strip() for cell in line.strip("|").split(" | "))
        name = name.strip("`")
        match = re.match(r"as `([a-z-]+)` with (.*?)(?: \(|$)", knobs)
        base, listed = (dict(shown[match.group(1)]), match.group(2)) if match else ({}, knobs)
        base.update(part.split("=", 1) for part in re.findall(r"`([a-z_]+=[a-z_+]+)`", listed))
        shown[name] = base
    assert shown == {name: dict(EFFECTS.presets[name]) for name in shown}
    assert list(shown) == ["ephemeral-call", "restartable-job", "durable-workflow", "governed-saga"]
