"""A third protocol family, written only against the family contract: a shared register.

Two (or more) clients each increment a register once: ``read C`` reads
the value and its version, ``write C`` writes the value read plus one.
Knob ``write``: ``blind`` (the write lands whatever happened since the
read -- the lost-update bug) or ``cas`` (compare-and-set: the write lands
only if the version is still the one read, else it is rejected).  The
invariant ``lost_update``: a write landed on a version other than the one
its client read, so another client's increment vanished.

Nothing in the search, the report layer or the CLI knows this family: the
test builds a registry with it and runs the unchanged sweep, shrinker,
exhaustive search, advisor and export (``docs/adding-a-family.md`` walks
through this file).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Hashable, Iterable, Literal, Mapping, NamedTuple, Sequence

from sim.core.checks import CheckResult, CheckSpec, Violation
from sim.core.errors import ScenarioError
from sim.core.family import Family, Replay
from sim.core.footprint import Part, access, keyed
from sim.core.kernel import END_COMPLETED, RunEnd
from sim.core.knobs import Protocol
from sim.core.machine import Machine, Record, drive
from sim.core.mechanisms import Knobs, knob, knob_table
from sim.core.symmetry import Symmetry, renamings
from sim.core.workload import Workload, build_workload, split_workload


@dataclass(frozen=True)
class RegisterKnobs(Knobs):
    """The register's one knob, declared once (its values are the field's type)."""

    write: Literal["blind", "cas"] = knob("blind", "blind: write whatever changed; cas: only on the version read",
                                          ranks={"blind": 0, "cas": 1})


#: What each event reads and writes (the machine's parts: ``read`` and ``done`` are keyed by client).  ``read C``
#: and ``read D`` touch different keys, so exhaustive search tries one of their orders; a write touches the
#: register, which every other event reads.
EVENTS = {"read": access("read[client] done[client] value version", "read[client]"),
          "write": access("read[client] version", "value version done[client] read[client]")}

TABLE = knob_table(RegisterKnobs, family="register", presets={"blind": {"write": "blind"}, "cas": {"write": "cas"}},
                   events=EVENTS)


@dataclass(frozen=True)
class Op:
    """One event: a client reads or writes."""

    kind: str
    client: str

    def __str__(self) -> str:
        return f"{self.kind} {self.client}"


@dataclass
class RegisterScenario:
    name: str
    clients: list[str]
    events: list[Op]
    protocol: str | None = None
    expect: dict[str, str] = field(default_factory=dict)
    description: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    family: str = "register"

    def with_events(self, events) -> "RegisterScenario":
        return RegisterScenario(self.name, self.clients, list(events), self.protocol, dict(self.expect),
                                self.description, dict(self.meta), self.path)


def lost_update(history) -> CheckResult:
    """A write landed on a version other than the one its client read."""
    found = [Violation("lost_update", e.index, e.get("client"),
                       f"{e.get('client')} wrote over version {e.get('version_before')}, read {e.get('read_version')}")
             for e in history if e.event == "write" and e.get("verdict") == "applied"
             and e.get("read_version") != e.get("version_before")]
    return CheckResult.from_violations("lost_update", found)


def rejected_writes(history) -> CheckResult:
    """A compare-and-set that failed (counted: the client must read again)."""
    found = [Violation("rejected_writes", e.index, e.get("client"), "compare-and-set failed", safety=False)
             for e in history if e.event == "write" and e.get("verdict") == "rejected"]
    return CheckResult.from_violations("rejected_writes", found)


class RegisterFamily(Family):
    name = "register"
    title = "a shared register incremented by several clients"
    knobs = TABLE
    default_protocol = "cas"
    lanes = ("A", "B", "C")
    fault_classes = ("interleave",)
    history_events = frozenset({"read", "write"})
    progress = ("increments_applied", "clients")
    checks = (CheckSpec("lost_update", lost_update, True, "an increment vanished",
                        requires={"write": ("verdict", "read_version", "version_before")}),
              CheckSpec("rejected_writes", rejected_writes, False, "a compare-and-set failed",
                        requires={"write": ("verdict",)}, count_as="rejected_writes"))

    # -- files: a scenario is { clients = [...], events = [...] }; a workload has no events --------------

    def _parse(self, data: dict, source) -> RegisterScenario:
        clients = data.get("clients")
        if not isinstance(clients, list) or not clients or not all(isinstance(c, str) for c in clients):
            raise source.error("clients must be a non-empty list of names", "clients")
        events = []
        for text in data.get("events", []):
            words = str(text).split()
            if len(words) != 2 or words[0] not in ("read", "write") or words[1] not in clients:
                raise source.error(f"event {text!r}: write 'read C' or 'write C' for a client C", str(text))
            events.append(Op(words[0], words[1]))
        meta = {k: data[k] for k in ("invariant", "seed", "commit", "workload", "minimal") if k in data}
        return RegisterScenario(str(data.get("name", "register")), clients, events, data.get("protocol"),
                                dict(data.get("expect", {})), str(data.get("description", "")), meta,
                                Path(source.path))

    def load_scenario(self, data, source) -> RegisterScenario:
        return self._parse(data, source)

    def dump_scenario(self, scenario: RegisterScenario) -> dict[str, Any]:
        out: dict[str, Any] = {"format": 1, "family": self.name, "name": scenario.name}
        if scenario.description:
            out["description"] = scenario.description
        if scenario.protocol:
            out["protocol"] = scenario.protocol
        out.update(scenario.meta)
        out["clients"] = scenario.clients
        out["events"] = [str(e) for e in scenario.events]
        return out

    def load_workload(self, data, source) -> Workload:
        scenario_part, faults, limits = split_workload(data, source)
        if "events" in scenario_part:
            raise ScenarioError("a workload has no events", source.where("events"))
        base = self._parse(scenario_part, source)
        return build_workload(self.name, self.fault_classes, base, base.name, base.description, faults, limits,
                              source)

    # -- orders: a random interleaving of each client's read-then-write ------------------------------

    def parse_event(self, scenario: RegisterScenario, text: str) -> Op:
        kind, client = text.split()
        return Op(kind, client)

    def generate(self, workload: Workload, seed: int) -> tuple[Op, ...]:
        rng = random.Random(seed)
        pending = {c: [Op("read", c), Op("write", c)] for c in workload.base.clients}
        order = []
        while pending:
            client = rng.choice(sorted(pending))
            order.append(pending[client].pop(0))
            if not pending[client]:
                del pending[client]
        return tuple(order)

    def alphabet(self, workload: Workload) -> list[Op]:
        return [Op(kind, c) for c in workload.base.clients for kind in ("read", "write")]

    def replay(self, scenario: RegisterScenario, protocol: Protocol, events: Iterable[Op] | None = None) -> Replay:
        events = tuple(scenario.events if events is None else events)
        driven = drive(self.machine(scenario, protocol), events)
        return Replay(events, driven.history, RunEnd(END_COMPLETED, len(events), len(events)), driven.state,
                      driven.skipped)

    def machine(self, scenario: RegisterScenario, protocol: Protocol) -> "RegisterMachine":
        return RegisterMachine(tuple(scenario.clients), RegisterKnobs.of(protocol).write == "cas")

    def footprint_keys(self, workload: Workload, event: Op) -> Mapping[str, Iterable[str]]:
        return {"client": (event.client,)}

    def final_state(self, replay: Replay) -> "RegisterState":
        return replay.state

    def state_key(self, replay: Replay) -> Hashable:
        return replay.state

    def symmetry(self, workload: Workload) -> Symmetry | None:
        """The clients run the same code and no check names one: any renaming of them is a symmetry."""
        clients = list(workload.base.clients)
        if not 2 <= len(clients) <= SYMMETRIC_CLIENTS_MAX:
            return None
        return Symmetry(f"clients {', '.join(clients)}", orbit_key, renamings(clients, renamed))

    # -- judgement and presentation --------------------------------------------------------------

    def verdicts(self, replay: Replay) -> list[dict[str, Any]]:
        return [{"event_index": e.index, "step": e.get("client"), "verdict": e.get("verdict")}
                for e in replay.history if e.event == "write"]

    def measure(self, replay: Replay) -> dict[str, float]:
        value, _, _, done, clients = replay.state
        return {"increments_applied": len(done), "clients": clients, "final_value": value}

    def counterexample(self, workload: Workload, protocol: Protocol, invariant: str, events: Sequence[Op],
                       meta: dict[str, Any]) -> RegisterScenario:
        scenario = workload.base.with_events(events)
        scenario.name = meta.get("name", scenario.name)
        scenario.description = meta.get("description", "")
        scenario.protocol = protocol.label
        scenario.meta = {k: v for k, v in meta.items() if k not in ("name", "description")}
        return scenario


#: The most clients whose renamings are listed (n! - 1 of them).
SYMMETRIC_CLIENTS_MAX = 5


def renamed(op: Op, mapping: dict[str, str]) -> Op:
    return Op(op.kind, mapping[op.client])


def orbit_key(state: "RegisterState") -> Hashable:
    """The state without the clients' names: the register, the values read (as a sorted list), how many
    clients are done -- the clients that neither read nor are done are the rest."""
    return (state.value, state.version, tuple(sorted(seen for _, seen in state.read)), len(state.done),
            state.clients)


class RegisterState(NamedTuple):
    """The whole state of a run: the register, what each client read, who is done."""

    value: int
    version: int
    read: tuple[tuple[str, tuple[int, int]], ...]  # client -> (value, version) it read, sorted by client
    done: tuple[str, ...]  # clients whose increment landed, sorted
    clients: int


class RegisterMachine(Machine):
    """Each client reads once, then writes what it read plus one (blind, or compare-and-set)."""

    def __init__(self, names: tuple[str, ...], cas: bool):
        self.names, self.clients, self.cas = names, len(names), cas

    def initial(self) -> RegisterState:
        return RegisterState(0, 0, (), (), self.clients)

    def parts(self, state: RegisterState) -> Mapping[Part, Any]:
        """The register, and each client's read and whether it is done (the footprints' keyed parts)."""
        reading = dict(state.read)
        return {("value", None): state.value, ("version", None): state.version, ("clients", None): state.clients,
                **keyed("read", ((c, reading.get(c)) for c in self.names)),
                **keyed("done", ((c, c in state.done) for c in self.names))}

    def why_not(self, state: RegisterState, op: Op) -> str | None:
        reading = dict(state.read)
        if op.kind == "read" and (op.client in reading or op.client in state.done):
            return f"{op.client} has already read"
        if op.kind == "write" and op.client not in reading:
            return f"{op.client} has nothing read to write"
        return None

    def step(self, state: RegisterState, op: Op) -> tuple[RegisterState, list[Record]]:
        reading = dict(state.read)
        if op.kind == "read":
            reading[op.client] = (state.value, state.version)
            record = (op.client, "read", dict(client=op.client, value=state.value, version=state.version))
            return state._replace(read=tuple(sorted(reading.items()))), [record]
        seen_value, seen_version = reading.pop(op.client)
        fields = dict(client=op.client, read_version=seen_version, version_before=state.version)
        state = state._replace(read=tuple(sorted(reading.items())))
        if self.cas and seen_version != state.version:
            return state, [(op.client, "write", dict(verdict="rejected", **fields))]
        state = state._replace(value=seen_value + 1, version=state.version + 1,
                               done=tuple(sorted(state.done + (op.client,))))
        return state, [(op.client, "write", dict(verdict="applied", value=state.value, **fields))]

    def skip_record(self, op: Op, reason: str) -> None:
        return None  # the register's histories hold only what happened


FAMILY = RegisterFamily()


class ShakyRegisterFamily(RegisterFamily):
    """The register with a planted nondeterminism: its history depends on the interpreter's hash seed."""

    name = "register-shaky"

    def replay(self, scenario, protocol, events=None):
        replay = super().replay(scenario, protocol, events)
        if len(replay.history):
            replay.history[0].fields["salt"] = hash("fencesim")
        return replay


SHAKY = ShakyRegisterFamily()
