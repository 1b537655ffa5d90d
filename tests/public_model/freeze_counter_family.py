"""A bounded counter with a freeze switch, written as a TLA+ user would write it first: the test family of a
step invariant whose step is made by an event independent, by the footprints, of the one before it.

VARIABLES x, frozen.  Init: x = 0 /\\ frozen = FALSE.
Inc    == x < 3 /\\ x' = x + 1 /\\ UNCHANGED frozen
Dec    == x > 0 /\\ x' = x - 1 /\\ UNCHANGED frozen      (only with the knob dec=on)
Freeze == ~frozen /\\ frozen' = TRUE /\\ UNCHANGED x
Action property: [][frozen => x' >= x]_vars (once frozen, the counter never goes down).
Footprints: Inc and Dec read and write x, Freeze frozen -- so Dec and Freeze are independent, and the step
Dec taken after Freeze is one a sleep set would skip.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple

from sim.core.checks import CheckSpec, Fold, Violation
from sim.core.errors import ScenarioError
from sim.core.family import Family, Replay
from sim.core.footprint import access
from sim.core.kernel import END_COMPLETED, RunEnd
from sim.core.machine import Machine, drive
from sim.core.mechanisms import Knobs, knob, knob_table
from sim.core.workload import build_workload, split_workload

TOP = 3
ACTIONS = ("Inc", "Dec", "Freeze")


@dataclass(frozen=True)
class CounterKnobs(Knobs):
    dec: Literal["off", "on"] = knob("off", "off: the spec; on: Dec is an action", ranks={"on": 0, "off": 1})


EVENTS = {"Inc": access("x", "x"), "Dec": access("x", "x"), "Freeze": access("frozen", "frozen")}
TABLE = knob_table(CounterKnobs, family="freeze-counter", presets={"spec": {"dec": "off"}}, events=EVENTS)


@dataclass(frozen=True)
class Action:
    kind: str

    def __str__(self) -> str:
        return self.kind


class Counter(NamedTuple):
    x: int
    frozen: bool


def went_down_frozen(before: Counter, after: Counter) -> bool:
    return before.frozen and after.x < before.x


class CounterMachine(Machine):
    def __init__(self, dec: bool):
        self.dec = dec

    def initial(self) -> Counter:
        return Counter(0, False)

    def why_not(self, state: Counter, event: Action) -> str | None:
        if event.kind == "Inc":
            return None if state.x < TOP else "x is at its top"
        if event.kind == "Dec":
            return None if self.dec and state.x > 0 else "Dec is not enabled"
        return None if not state.frozen else "already frozen"

    def advance(self, state: Counter, event: Action) -> Counter:
        if event.kind == "Freeze":
            return Counter(state.x, True)
        return Counter(state.x + (1 if event.kind == "Inc" else -1), state.frozen)

    def step(self, state: Counter, event: Action):
        after = self.advance(state, event)
        return after, [("counter", event.kind, {"x": after.x, "frozen": after.frozen})]

    def skip_record(self, event: Action, reason: str) -> None:
        return None


def _monotone_feed(carry, event):
    before, after = Counter(*carry), Counter(event.get("x"), event.get("frozen"))
    found = (Violation("frozen_monotone", event.index, None, f"x went {before.x} -> {after.x} while frozen"),)
    return tuple(after), found if went_down_frozen(before, after) else ()


@dataclass
class CounterScenario:
    name: str
    events: list
    protocol: str | None = None
    expect: dict = field(default_factory=dict)
    description: str = ""
    meta: dict = field(default_factory=dict)
    path: Path | None = None
    family: str = "freeze-counter"

    def with_events(self, events) -> "CounterScenario":
        return CounterScenario(self.name, list(events), self.protocol, dict(self.expect), self.description,
                               dict(self.meta), self.path)


def _action(text: str) -> Action:
    if text.strip() in ACTIONS:
        return Action(text.strip())
    raise ScenarioError(f"unknown event {text!r}")


class CounterFamily(Family):
    name = "freeze-counter"
    title = "A bounded counter with a freeze switch"
    knobs = TABLE
    default_protocol = "spec"
    fault_classes = ("interleave",)
    history_events = frozenset(ACTIONS)
    checks = (CheckSpec("frozen_monotone", Fold("frozen_monotone", (0, False), _monotone_feed), True,
                        "[][frozen => x' >= x]_vars", transition=went_down_frozen),)

    def _parse(self, data, source) -> CounterScenario:
        return CounterScenario(str(data.get("name", "counter")), [_action(str(t)) for t in data.get("events", [])],
                               data.get("protocol"))

    def load_scenario(self, data, source):
        return self._parse(data, source)

    def dump_scenario(self, scenario):
        return {"format": 1, "family": self.name, "name": scenario.name,
                "events": [str(e) for e in scenario.events]}

    def load_workload(self, data, source):
        part, faults, limits = split_workload(data, source)
        base = self._parse(part, source)
        return build_workload(self.name, self.fault_classes, base, base.name, base.description, faults, limits,
                              source)

    def parse_event(self, scenario, text):
        return _action(text)

    def alphabet(self, workload):
        return [Action(kind) for kind in ACTIONS]

    def footprint_keys(self, workload, event):
        return {}

    def generate(self, workload, seed):
        chance = random.Random(seed)
        return tuple(Action(chance.choice(ACTIONS)) for _ in range(6))

    def replay(self, scenario, protocol, events=None):
        events = tuple(scenario.events if events is None else events)
        driven = drive(self.machine(scenario, protocol), events)
        return Replay(events, driven.history, RunEnd(END_COMPLETED, len(events), len(events)), driven.state,
                      driven.skipped)

    def machine(self, scenario, protocol):
        return CounterMachine(CounterKnobs.of(protocol).dec == "on")

    def final_state(self, replay):
        return replay.state

    def state_key(self, replay):
        return replay.state

    def verdicts(self, replay):
        return []

    def counterexample(self, workload, protocol, invariant, events, meta):
        scenario = workload.base.with_events(events)
        scenario.protocol = protocol.label
        return scenario


FAMILY = CounterFamily()
WORKLOAD = 'format = 1\nfamily = "freeze-counter"\nname = "counter"\n[faults]\nclasses = ["interleave"]\n'
