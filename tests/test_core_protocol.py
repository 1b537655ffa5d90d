"""Protocol strings: presets, knob overrides, and errors that list what is allowed."""

from __future__ import annotations

import pytest

from sim.errors import InputError, ProtocolError
from sim.protocol import WORKSPACE_PRESETS, parse_protocol, presets

DEFAULTS = {"stamp_at": "dispatch", "journal_write": "atomic", "drift_check": "off",
            "overlap_check": "off", "pipeline": "off"}


@pytest.mark.parametrize(
    ("preset", "fence", "dedupe"),
    [("none", "none", "off"), ("plan", "plan", "off"), ("step", "step", "off"), ("step-dedupe", "step", "journal")],
)
def test_preset_resolves_to_design_knobs(preset, fence, dedupe):
    """Each preset sets fence and dedupe as DESIGN section 2 says and leaves every other knob at its default."""
    protocol = parse_protocol(preset)
    assert protocol.knobs == {"fence": fence, "dedupe": dedupe, **DEFAULTS}
    assert protocol.label == preset


def test_presets_are_the_seed_rows_in_order():
    """The workspace presets are none, plan, step, step-dedupe, in the seed table's row order."""
    assert WORKSPACE_PRESETS == ("none", "plan", "step", "step-dedupe")
    assert list(presets()) == list(WORKSPACE_PRESETS)


def test_knob_overrides_preset():
    """'step-dedupe,journal_write=after_write' keeps the preset's knobs and changes journal_write."""
    protocol = parse_protocol("step-dedupe,journal_write=after_write")
    assert (protocol.fence, protocol.dedupe, protocol.journal_write) == ("step", "journal", "after_write")


def test_knobs_alone_build_a_protocol():
    """'fence=step,stamp_at=apply' sets both knobs; dedupe stays at its default 'off'."""
    protocol = parse_protocol("fence=step,stamp_at=apply")
    assert (protocol.fence, protocol.stamp_at, protocol.dedupe) == ("step", "apply", "off")


def test_knob_before_preset_still_overrides():
    """A knob written before the preset overrides it all the same."""
    assert parse_protocol("dedupe=memory,step-dedupe").dedupe == "memory"


def test_spaces_around_parts_are_ignored():
    """Whitespace around the comma-separated parts and around '=' does not matter."""
    assert parse_protocol(" step , dedupe = memory ") == parse_protocol("step,dedupe=memory")


def test_unknown_preset_lists_presets():
    """An unknown preset raises ProtocolError naming every preset."""
    with pytest.raises(ProtocolError) as caught:
        parse_protocol("stepp")
    for name in WORKSPACE_PRESETS:
        assert name in str(caught.value)


def test_unknown_knob_lists_knobs():
    """An unknown knob raises ProtocolError naming every knob."""
    with pytest.raises(ProtocolError) as caught:
        parse_protocol("step,colour=red")
    for knob in ("fence", "stamp_at", "dedupe", "journal_write", "drift_check", "overlap_check", "pipeline"):
        assert knob in str(caught.value)


def test_unknown_value_lists_allowed_values():
    """An unknown knob value raises ProtocolError listing the knob's allowed values."""
    with pytest.raises(ProtocolError) as caught:
        parse_protocol("fence=wall")
    assert "none, plan, step" in str(caught.value)


def test_two_presets_are_an_error():
    """Two presets in one protocol string raise ProtocolError."""
    with pytest.raises(ProtocolError, match="preset"):
        parse_protocol("step,plan")


def test_duplicated_knob_is_an_error():
    """The same knob given twice raises ProtocolError, even with the same value."""
    with pytest.raises(ProtocolError, match="twice"):
        parse_protocol("fence=step,fence=step")


def test_empty_protocol_is_an_error():
    """An empty protocol string raises ProtocolError (an input error)."""
    with pytest.raises(ProtocolError) as caught:
        parse_protocol(" , ")
    assert isinstance(caught.value, InputError)


def test_protocol_is_immutable_and_with_knobs_builds_another():
    """Setting a knob on a Protocol fails; with_knobs returns a new one and leaves the old unchanged."""
    step = parse_protocol("step")
    with pytest.raises(AttributeError):
        step.fence = "none"
    dedupe = step.with_knobs(dedupe="journal")
    assert (step.dedupe, dedupe.dedupe) == ("off", "journal")
    assert dedupe == parse_protocol("step-dedupe")


def test_with_knobs_rejects_unknown_value():
    """with_knobs validates values like the parser does."""
    with pytest.raises(ProtocolError):
        parse_protocol("step").with_knobs(dedupe="disk")
