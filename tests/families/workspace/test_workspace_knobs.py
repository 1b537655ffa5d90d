"""The workspace family's knob table: the presets of the seed table and the knobs' ranks."""

from __future__ import annotations

import pytest

import sim
from sim.families.workspace.knobs import PRESETS, TABLE

#: Every knob the presets leave alone, at its default (read from the table: a knob added there is here too).
DEFAULTS = {knob.name: knob.default for knob in TABLE.knobs if knob.name not in ("fence", "dedupe")}


@pytest.mark.parametrize(
    ("preset", "fence", "dedupe"),
    [("none", "none", "off"), ("plan", "plan", "off"), ("step", "step", "off"), ("step-dedupe", "step", "journal")],
)
def test_preset_resolves_to_design_knobs(preset, fence, dedupe):
    """Each preset sets fence and dedupe as the design says and leaves every other knob at its default."""
    protocol = TABLE.parse(preset)
    assert protocol.knobs == {"fence": fence, "dedupe": dedupe, **DEFAULTS}
    assert protocol.label == preset


def test_presets_are_the_seed_rows_in_order():
    """The workspace presets are none, plan, step, step-dedupe, in the seed table's row order."""
    assert PRESETS == ("none", "plan", "step", "step-dedupe")
    assert list(TABLE.preset_protocols()) == list(PRESETS)


def test_api_parse_protocol_defaults_to_the_workspace_family():
    """sim.parse_protocol without a family parses a workspace protocol, equal to the table's."""
    assert sim.parse_protocol("step-dedupe,journal_write=after_write") == TABLE.parse(
        "step-dedupe,journal_write=after_write")
    assert sim.parse_protocol("plan").family == "workspace"


def test_the_top_rank_of_every_knob_is_the_safe_design():
    """The strongest value of every knob is the step-dedupe design (nothing stronger is left to add)."""
    strongest = {k.name: max(k.values, key=k.rank) for k in TABLE.knobs}
    assert strongest["dedupe"] == "journal" and strongest["journal_write"] == "atomic"
    assert strongest["pipeline"] == "off" and strongest["drift_check"] == "reject"
    assert TABLE.knob("fence").rank("plan") == TABLE.knob("fence").rank("step") > TABLE.knob("fence").rank("none")


def test_the_platform_knobs_rank_alternatives_equal_and_bounded_journals_below():
    """Scopes, recovery and checkpoints are alternatives (equal ranks); only the journal's collection has
    weakenings: eager and session_end drop keys a late copy still needs."""
    for name in ("rev_scope", "drift_scope", "on_reject", "checkpoint"):
        assert TABLE.knob(name).weakenings() == ()
    assert TABLE.knob("journal_gc").weakenings() == ("session_end", "eager")
    assert TABLE.knob("journal_gc").rank("after_checkpoint") == TABLE.knob("journal_gc").rank("never")
