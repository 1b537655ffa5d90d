"""Protocol strings, parsed by the shared KnobTable parser: presets, knob overrides, ranks, and
errors that list what is allowed (shown on the workspace and effects tables)."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Literal

import pytest

from sim.core.errors import InputError, ProtocolError
from sim.core.knobs import Knob, KnobTable, Protocol
from sim.families.effects.knobs import TABLE as EFFECTS
from sim.families.workspace.knobs import TABLE as WORKSPACE
from sim.families.workspace.knobs import WorkspaceKnobs


def test_knob_overrides_preset():
    """'step-dedupe,journal_write=after_write' keeps the preset's knobs and changes journal_write."""
    protocol = WORKSPACE.parse("step-dedupe,journal_write=after_write")
    assert [protocol.knobs[k] for k in ("fence", "dedupe", "journal_write")] == ["step", "journal", "after_write"]
    assert protocol.label == "step-dedupe,journal_write=after_write"


def test_knobs_alone_build_a_protocol():
    """'fence=step,stamp_at=apply' sets both knobs; dedupe stays at its default 'off'."""
    protocol = WORKSPACE.parse("fence=step,stamp_at=apply")
    assert [protocol.knobs[k] for k in ("fence", "stamp_at", "dedupe")] == ["step", "apply", "off"]


def test_knob_before_preset_still_overrides():
    """A knob written before the preset overrides it all the same."""
    assert WORKSPACE.parse("dedupe=memory,step-dedupe").knobs["dedupe"] == "memory"


def test_spaces_around_parts_are_ignored():
    """Whitespace around the comma-separated parts and around '=' does not matter."""
    assert WORKSPACE.parse(" step , dedupe = memory ") == WORKSPACE.parse("step,dedupe=memory")


def test_unknown_preset_lists_presets():
    """An unknown preset raises ProtocolError naming the family and every preset."""
    with pytest.raises(ProtocolError) as caught:
        WORKSPACE.parse("stepp")
    assert "unknown workspace preset" in str(caught.value)
    for name in WORKSPACE.presets:
        assert name in str(caught.value)


def test_unknown_knob_lists_knobs():
    """An unknown knob raises ProtocolError naming every knob of the family."""
    with pytest.raises(ProtocolError) as caught:
        WORKSPACE.parse("step,colour=red")
    for knob in WORKSPACE.names():
        assert knob in str(caught.value)


def test_unknown_value_lists_allowed_values():
    """An unknown knob value raises ProtocolError listing the knob's allowed values."""
    with pytest.raises(ProtocolError) as caught:
        WORKSPACE.parse("fence=wall")
    assert "none, plan, step" in str(caught.value)


def test_two_presets_are_an_error():
    """Two presets in one protocol string raise ProtocolError."""
    with pytest.raises(ProtocolError, match="preset"):
        WORKSPACE.parse("step,plan")


def test_duplicated_knob_is_an_error():
    """The same knob given twice raises ProtocolError, even with the same value."""
    with pytest.raises(ProtocolError, match="twice"):
        WORKSPACE.parse("fence=step,fence=step")


def test_empty_protocol_is_an_error():
    """An empty (or blank) protocol string raises ProtocolError (an input error) naming the presets."""
    with pytest.raises(ProtocolError) as caught:
        WORKSPACE.parse("   ")
    assert isinstance(caught.value, InputError)
    assert "step-dedupe" in str(caught.value)


@pytest.mark.parametrize("text", ["step,,", " , ", "step,", ",step", "step,,dedupe=memory"])
def test_empty_part_is_refused(text):
    """An empty part between commas (step,,) is refused instead of being skipped silently."""
    with pytest.raises(ProtocolError, match="empty part"):
        WORKSPACE.parse(text)


def test_protocol_is_immutable_and_with_knobs_builds_another():
    """Setting a knob on a Protocol fails; with_knobs returns a new one and leaves the old unchanged."""
    step = WORKSPACE.parse("step")
    with pytest.raises(AttributeError):
        step.fence = "none"
    dedupe = step.with_knobs(dedupe="journal")
    assert (step.knobs["dedupe"], dedupe.knobs["dedupe"]) == ("off", "journal")
    assert dedupe == WORKSPACE.parse("step-dedupe")
    assert dedupe.label == "step,dedupe=journal"


def test_with_knobs_rejects_unknown_value():
    """with_knobs validates values like the parser does."""
    with pytest.raises(ProtocolError):
        WORKSPACE.parse("step").with_knobs(dedupe="disk")


def test_with_knobs_label_parses_back_to_the_same_protocol():
    """The label of a protocol built by with_knobs parses back to that protocol (labels are replayed)."""
    changed = WORKSPACE.parse("step-dedupe,journal_write=after_write").with_knobs(journal_write="atomic")
    assert WORKSPACE.parse(changed.label) == changed


def test_a_protocol_is_read_as_its_familys_typed_knobs():
    """A protocol has no knob attributes (a misspelt one would be Any): a family reads it as its typed
    dataclass, which has each knob and no other."""
    protocol = WORKSPACE.parse("step")
    assert not hasattr(protocol, "fence")
    typed = WorkspaceKnobs.of(protocol)
    assert (typed.fence, typed.dedupe) == ("step", "off") and WorkspaceKnobs.of(protocol) is typed
    with pytest.raises(AttributeError):
        _ = typed.idempotency  # type: ignore[attr-defined]


def test_explicit_lists_the_knobs_the_label_set():
    """explicit holds the knobs the preset and the overrides set, not the defaults."""
    protocol = WORKSPACE.parse("step-dedupe,journal_write=after_write")
    assert protocol.explicit == frozenset({"fence", "dedupe", "journal_write"})
    assert WORKSPACE.parse("pipeline=on").explicit == frozenset({"pipeline"})


def test_changes_from_names_the_differing_knobs_with_this_value():
    """changes_from gives the knobs that differ from the other protocol, with this protocol's values."""
    base = WORKSPACE.parse("step-dedupe,journal_write=after_write")
    fixed = WORKSPACE.parse("step-dedupe,drift_check=reject")
    assert fixed.changes_from(base) == {"journal_write": "atomic", "drift_check": "reject"}
    assert base.changes_from(base) == {}


def test_describe_lists_every_knob_in_table_order():
    """describe spells every knob and its value in table order (the knobs read from the table: one added there
    is expected here too)."""
    described = WORKSPACE.parse("step").describe()
    assert described.startswith("fence=step,stamp_at=dispatch,dedupe=off,journal_write=atomic,")
    parts = [part.split("=") for part in described.split(",")]
    assert [name for name, _ in parts] == list(WORKSPACE.names())
    expected = dict(dataclasses.asdict(WorkspaceKnobs.defaults()), fence="step")
    assert dict(parts) == {name: WORKSPACE.knob(name).show(value) for name, value in expected.items()}


def test_the_declared_defaults_are_typed_values_of_the_table():
    """Knobs.defaults() is every knob at the default its field declares, as the family's typed values."""
    for table in (WORKSPACE, EFFECTS):
        values = table.values_type.defaults()
        assert isinstance(values, table.values_type)
        assert dataclasses.asdict(values) == {knob.name: knob.default for knob in table.knobs}
    assert WorkspaceKnobs.defaults() == WorkspaceKnobs.of(WORKSPACE.parse("none"))


def test_build_labels_a_protocol_by_its_shortest_spelling():
    """build(knobs) gives a protocol labelled by a preset plus only the knobs that differ from it."""
    knobs = dict(WORKSPACE.parse("step-dedupe").knobs, drift_check="reject")
    built = WORKSPACE.build(knobs)
    assert built.label == "step-dedupe,drift_check=reject"
    assert WORKSPACE.parse(built.label) == built
    assert WORKSPACE.build(WORKSPACE.parse("plan").knobs).label == "plan"


def test_protocols_of_two_families_are_never_equal():
    """Equality compares the family and the knobs; a hash agrees with equality."""
    assert WORKSPACE.parse("none") != EFFECTS.parse("unkeyed-retry")
    assert hash(WORKSPACE.parse("step,dedupe=journal")) == hash(WORKSPACE.parse("step-dedupe"))
    assert WORKSPACE.parse("none").family == "workspace" and EFFECTS.parse("keyed").family == "effects"


def test_protocol_pickles_with_its_label_and_table():
    """A protocol survives pickling (sweep workers receive it) with its label, knobs and table."""
    protocol = WORKSPACE.parse("step-dedupe,journal_write=after_write")
    again = pickle.loads(pickle.dumps(protocol))
    assert (again, again.label, again.explicit, again.table.family) == (
        protocol, protocol.label, protocol.explicit, "workspace")


def test_ranks_order_values_by_protection():
    """A knob's rank says how much protection a value gives; equal ranks are alternatives."""
    dedupe, stamp_at = WORKSPACE.knob("dedupe"), WORKSPACE.knob("stamp_at")
    assert dedupe.rank("off") < dedupe.rank("memory") < dedupe.rank("journal")
    assert stamp_at.rank("plan") == stamp_at.rank("dispatch") > stamp_at.rank("apply")


def test_weakenings_are_the_values_below_the_top_rank():
    """weakenings lists every value ranked below a knob's strongest one (what a planted bug may set)."""
    assert WORKSPACE.knob("dedupe").weakenings() == ("off", "memory")
    assert WORKSPACE.knob("stamp_at").weakenings() == ("apply",)
    assert EFFECTS.knob("key_retention").weakenings() == (5.0, 30.0)


def test_numeric_knob_parses_numbers_and_ranks_by_value():
    """A numeric knob (key_retention) takes a finite number >= 0, ranks by value and proposes its ladder."""
    knob = EFFECTS.knob("key_retention")
    assert EFFECTS.parse("keyed,key_retention=5").knobs["key_retention"] == 5.0
    assert knob.rank(3600.0) > knob.rank(5.0)
    assert knob.candidates() == (5.0, 30.0, 7 * 24 * 3600.0)
    assert knob.show(3600.0) == "3600"


@pytest.mark.parametrize(("value", "fragment"), [("-1", "negative"), ("abc", "number"), ("inf", "finite"),
                                                 ("nan", "finite")])
def test_numeric_knob_refuses_bad_numbers(value, fragment):
    """A numeric knob refuses a negative, non-numeric or non-finite value with one line."""
    with pytest.raises(ProtocolError, match=fragment):
        EFFECTS.parse(f"keyed,key_retention={value}")


def test_followed_knob_takes_the_value_of_the_knob_it_follows():
    """approval follows compensation unless the protocol sets it."""
    assert EFFECTS.parse("keyed,compensation=off").knobs["approval"] == "off"
    assert EFFECTS.parse("keyed,compensation=off,approval=on").knobs["approval"] == "on"
    assert EFFECTS.parse("keyed").knobs["approval"] == "on"


def test_a_table_of_ones_own_parses_with_the_shared_parser():
    """A family's own KnobTable gets presets, knobs and errors from the shared parser."""
    table = KnobTable("toy", (Knob("lock", ("off", "on"), "off", "a lock", ranks={"off": 0, "on": 1}),),
                      {"safe": {"lock": "on"}})
    protocol = table.parse("safe")
    assert isinstance(protocol, Protocol) and protocol.knobs["lock"] == "on" and protocol.family == "toy"
    assert list(table.preset_protocols()) == ["safe"]
    with pytest.raises(ProtocolError, match="unknown toy preset"):
        table.parse("unsafe")


@pytest.mark.parametrize(("text", "fragment"), [
    ("drift_chek=reject", "did you mean 'drift_check'"),
    ("step-dedupe,drift_check=rejct", "did you mean 'reject'"),
    ("step-dedup", "did you mean 'step-dedupe'"),
    ("step-dedupe,drift_check", "is a knob, not a preset: give it a value, drift_check=off|reject"),
])
def test_misspelt_knobs_values_and_presets_get_a_guess(text, fragment):
    """An unknown knob, value or preset names the closest known one."""
    from sim.families.workspace.knobs import TABLE

    with pytest.raises(ProtocolError) as caught:
        TABLE.parse(text)
    assert fragment in str(caught.value)


def test_equal_protocols_spelt_differently_are_refused_as_duplicates():
    """step-dedupe and fence=step,dedupe=journal are one protocol: refused, naming both spellings."""
    from sim.core.knobs import refuse_duplicates
    from sim.families.workspace.knobs import TABLE

    with pytest.raises(ProtocolError, match="'fence=step,dedupe=journal' is the same protocol as 'step-dedupe'"):
        refuse_duplicates([TABLE.parse("step-dedupe"), TABLE.parse("fence=step,dedupe=journal")])
    with pytest.raises(ProtocolError, match="names 'step' more than once"):
        refuse_duplicates([TABLE.parse("step"), TABLE.parse("step")])
    refuse_duplicates([TABLE.parse("step"), TABLE.parse("step-dedupe")])


def test_a_long_protocol_is_cut_in_the_message():
    """A 100,000-character unknown preset is quoted cut."""
    from sim.families.workspace.knobs import TABLE

    with pytest.raises(ProtocolError) as caught:
        TABLE.parse("x" * 100_000)
    assert len(str(caught.value)) < 400


def test_an_unknown_expect_label_names_its_own_line_not_a_line_that_contains_its_text(tmp_path):
    """``step-dedup`` is inside ``protocol = "step-dedupe"`` (line 3): the error names the [expect] key's line."""
    import sim
    from sim.core.errors import ScenarioError

    path = tmp_path / "exp.toml"
    path.write_text('format = 1\nname = "e"\nprotocol = "step-dedupe"\nfiles = { "a.py" = "v0" }\n'
                    'plan = [ { id = "s1", path = "a.py", patch = "v1" } ]\nevents = [ "plan" ]\n\n[expect]\n'
                    'step-dedupe = "applied"\nstep-dedup = "applied"\n')
    with pytest.raises(ScenarioError) as raised:
        sim.load_scenario(path)
    assert f"{path}:10" in str(raised.value) and "step-dedup" in str(raised.value)


def test_a_preset_named_like_a_knob_is_refused_when_the_table_is_declared():
    """`-p dec` could never reach such a preset (it reads as the knob), so the table itself is refused."""
    from sim.core.mechanisms import Knobs, knob, knob_table

    @dataclasses.dataclass(frozen=True)
    class Two(Knobs):
        dec: Literal["off", "on"] = knob("off", "whether Dec is an action")

    with pytest.raises(ValueError, match="preset 'dec' has the name of a knob"):
        knob_table(Two, family="two", presets={"dec": {"dec": "on"}})
    assert knob_table(Two, family="two", presets={"decrementing": {"dec": "on"}}).presets
