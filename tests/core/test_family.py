"""The family contract: Replay, and what a family gets from the base class (shown on a toy family
and on the two shipped families)."""

from __future__ import annotations

from sim.core.checks import CheckResult, CheckSpec, Violation
from sim.core.family import Cell, Family, Replay
from sim.core.history import Event, History
from sim.core.kernel import RunEnd
from sim.core.knobs import Knob, KnobTable
from sim.families.effects import FAMILY as EFFECTS
from sim.families.workspace import FAMILY as WORKSPACE


def _no_boom(history):
    return CheckResult.from_violations("no_boom", [Violation("no_boom", e.index, None, "boom")
                                                   for e in history if e.event == "boom"])


def _quiet(history):
    return CheckResult.from_violations("quiet", [Violation("quiet", e.index, None, "noise", safety=False)
                                                 for e in history if e.event == "noise"])


class Counter(Family):
    """A toy family: each event is a word; 'boom' violates no_boom, 'skip' has no effect."""

    name = "counter"
    knobs = KnobTable("counter", (Knob("guard", ("off", "on"), "off", "a guard"),), {"plain": {}})
    checks = (CheckSpec("no_boom", _no_boom, True, "never boom"),
              CheckSpec("quiet", _quiet, False, "counted noise", count_as="noises"))

    def load_scenario(self, data, source):
        return data

    def dump_scenario(self, scenario):
        return scenario

    def load_workload(self, data, source):
        raise NotImplementedError

    def generate(self, workload, seed):
        return ()

    def parse_event(self, scenario, text):
        return text

    def alphabet(self, workload):
        return ["tick", "boom"]

    def replay(self, scenario, protocol, events=None):
        events = tuple(events or ())
        history = History()
        for word in events:
            if word != "skip":
                history.append(0, "toy", word, verdict=word)
        skipped = frozenset(i for i, w in enumerate(events) if w == "skip")
        return Replay(events, history, RunEnd("completed", 0, len(events)), None, skipped)

    def state_key(self, replay):
        return len(replay.history)

    def verdicts(self, replay):
        return [{"event_index": e.index, "step": None, "verdict": e["verdict"]} for e in replay.history]

    def counterexample(self, workload, protocol, invariant, events, meta):
        return list(events)


TOY = Counter()


def test_valid_order_drops_the_skipped_events():
    """valid_order keeps the events that took effect, in order."""
    replay = TOY.replay(None, None, ["tick", "skip", "boom", "skip"])
    assert replay.valid_order() == ("tick", "boom")


def test_last_skipped_says_whether_the_last_event_had_no_effect():
    """last_skipped is true only when the order's last event was skipped (and the order is not empty)."""
    assert TOY.replay(None, None, ["tick", "skip"]).last_skipped
    assert not TOY.replay(None, None, ["skip", "tick"]).last_skipped
    assert not TOY.replay(None, None, []).last_skipped


def test_safety_invariants_and_availability_columns_come_from_the_checks():
    """A family's safety invariants are its safety checks; availability columns use count_as."""
    assert TOY.safety_invariants == ("no_boom",) and TOY.availability_columns == ("noises",)
    assert WORKSPACE.availability_columns == ("spurious_rejections",)
    assert EFFECTS.availability_columns == ("human_exceptions", "not_finished")


def test_check_runs_all_checks_or_only_the_named_ones():
    """check runs every check, or only those named, over a history."""
    history = TOY.replay(None, None, ["boom", "noise"]).history
    assert TOY.check(history).status() == {"no_boom": "violated", "quiet": "violated"}
    assert list(TOY.check(history, ("quiet",)).status()) == ["quiet"]


def test_parse_protocol_passes_a_protocol_through():
    """parse_protocol parses text with the family's table and returns a Protocol object unchanged."""
    protocol = TOY.parse_protocol("plain,guard=on")
    assert TOY.parse_protocol(protocol) is protocol and protocol.knobs["guard"] == "on"
    assert TOY.presets == ("plain",)


def test_base_class_defaults():
    """Without overrides: outcome is the last verdict, no measures, no claims, one alphabet, no grid."""
    replay = TOY.replay(None, None, ["tick", "boom"])
    assert TOY.outcome(replay) == "boom" and TOY.outcome(TOY.replay(None, None, [])) is None
    assert TOY.measure(replay) == {} and TOY.claims({}, []) == []
    assert TOY.alphabets(None) == [["tick", "boom"]] and TOY.single_faults(None) == []


def test_default_describe_shows_the_verdict_and_marks_no_fault():
    """The default timeline cell is the event name and its verdict; no event is a fault by default."""
    event = Event(0, 0, "toy", "boom", {"verdict": "loud"})
    assert TOY.describe(event) == "boom -> loud"
    assert not TOY.is_fault(event)


def test_cell_holds_labels_and_order():
    """A grid cell is its labels (outermost first) and its order."""
    cell = Cell(("tick", "after plan"), ("tick",))
    assert cell.labels == ("tick", "after plan") and cell.events == ("tick",)
