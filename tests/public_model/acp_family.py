"""A second public model as a fencesim family: the Atomic Commitment Protocol with simple broadcast (ACP-SB).

Transcribed from tlaplus/Examples' ``specifications/acp/ACP_SB.tla`` (Stephan Merz, after Babaoglu and
Toueg), checked there by TLC with ``participants = {p0, p1, p2}`` (``ACP_SB_TLC.cfg``): 54,944 distinct
states, 218,352 states generated, depth 21.  Its ``Init`` is a set of states -- every participant votes yes or
no -- so the family has **several initial states**: the machine's ``initial()`` is only where the eight
``Init`` events (one per vote vector) choose one (:meth:`~sim.core.machine.Machine.starts`), and exhaustive
search counts the states they lead to as its initial states, as TLC does.

Each TLA+ action is an event, its guard the machine's guard; an action that leaves the state as it was
(``sendVote(i)`` again) is taken all the same, as TLC takes it, so states generated are counted as TLC
counts them.  The invariants are the spec's AC1 (no participant commits while another aborts) and AC2 (a
commit needs every vote yes), each as a predicate on the state and a fold over the history.
``planted=True`` plants a bug: the coordinator decides commit once any vote is yes (``makeDecision``'s
``\\A`` turned ``\\E``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import partial
from typing import Any, Iterable, Literal, NamedTuple, Sequence

from sim.core.checks import CheckSpec, Fold, Violation
from sim.core.errors import ScenarioError
from sim.core.family import Family, Replay
from sim.core.kernel import END_COMPLETED, RunEnd
from sim.core.knobs import Protocol
from sim.core.machine import Machine, Record, drive
from sim.core.mechanisms import Knobs, knob, knob_table
from sim.core.workload import Workload, build_workload, split_workload

#: The coordinator's actions on one participant, the participants' own, and the two of the coordinator alone.
COORDINATOR_ON = ("request", "getVote", "detectFault", "coordBroadcast")
PARTICIPANT = ("sendVote", "abortOnVote", "abortOnTimeoutRequest", "decide", "parDie")
COORDINATOR = ("makeDecision", "coordDie")


@dataclass(frozen=True)
class AcpKnobs(Knobs):
    decide: Literal["all_yes", "any_yes"] = knob("all_yes", "all_yes: commit when every vote is yes (the spec); "
                                                 "any_yes: when one is (a planted bug)",
                                                 ranks={"any_yes": 0, "all_yes": 1})


TABLE = knob_table(AcpKnobs, family="acp", presets={"spec": {"decide": "all_yes"}})


@dataclass(frozen=True)
class Action:
    kind: str
    who: int | None = None  # the participant's index
    votes: tuple[str, ...] = ()  # an Init event's vote vector

    def __str__(self) -> str:
        if self.kind == "Init":
            return "Init " + ",".join(self.votes)
        return self.kind if self.who is None else f"{self.kind} p{self.who}"


class Participant(NamedTuple):
    vote: str
    alive: bool
    decision: str  # undecided | commit | abort
    vote_sent: bool


class Coordinator(NamedTuple):
    request: tuple[bool, ...]
    vote: tuple[str, ...]  # waiting | yes | no
    broadcast: tuple[str, ...]  # notsent | commit | abort
    decision: str
    alive: bool


class AcpState(NamedTuple):
    participants: tuple[Participant, ...]
    coordinator: Coordinator | None  # None: before Init (where the Init events choose the votes)


def ac1_violated(state: AcpState) -> bool:
    decisions = {p.decision for p in state.participants}
    return "commit" in decisions and "abort" in decisions


def ac2_violated(state: AcpState) -> bool:
    return any(p.decision == "commit" for p in state.participants) and any(
        p.vote != "yes" for p in state.participants)


#: The state's tuples built from their fields with no Python call (a NamedTuple's constructor and ``_replace``
#: are Python functions): what ``successors`` builds each next state with.
_state = partial(tuple.__new__, AcpState)
_coordinator = partial(tuple.__new__, Coordinator)
_participant = partial(tuple.__new__, Participant)


def _set(items: tuple, i: int, value: Any) -> tuple:
    return items[:i] + (value,) + items[i + 1:]


class AcpMachine(Machine):
    def __init__(self, n: int, any_yes: bool):
        self.n, self.any_yes = n, any_yes

    def initial(self) -> AcpState:
        return AcpState((), None)

    def starts(self, event: Action) -> bool:
        return event.kind == "Init"

    def why_not(self, state: AcpState, event: Action) -> str | None:
        return None if self._enabled(state, event) else f"{event} is not enabled"

    def successors(self, state: AcpState, events: Sequence[Action]) -> list[tuple[int, AcpState]]:
        """``Next`` in one function, each action's shared conditions computed once and each next state built
        with tuple operations (the fast path of docs/adding-a-family.md): positions of the alphabet
        (``AcpFamily.alphabet``: the Init events, the coordinator's two, then nine per participant), with the
        state after each."""
        c, ps, n = state.coordinator, state.participants, self.n
        if c is None:
            return [(i, self.advance(state, events[i])) for i in range(2 ** n)]
        base, out = 2 ** n, []
        add = out.append
        request, votes, broadcast, decision, alive = c
        undecided = decision == "undecided"
        if alive and undecided and "waiting" not in votes:
            commit = ("yes" in votes) if self.any_yes else all(v == "yes" for v in votes)
            add((base, _state((ps, _coordinator((request, votes, broadcast, "commit" if commit else "abort",
                                                  alive))))))
        if alive:
            add((base + 1, _state((ps, _coordinator((request, votes, broadcast, decision, False))))))
        asked = all(request)
        for i, p in enumerate(ps):
            at = base + 2 + 9 * i
            vote, p_alive, p_decision, sent = p
            if alive and not request[i]:
                requested = request[:i] + (True,) + request[i + 1:]
                add((at, _state((ps, _coordinator((requested, votes, broadcast, decision, alive))))))
            if alive and undecided and asked and votes[i] == "waiting":
                if sent:
                    got = votes[:i] + (vote,) + votes[i + 1:]
                    add((at + 1, _state((ps, _coordinator((request, got, broadcast, decision, alive))))))
                elif not p_alive:
                    add((at + 2, _state((ps, _coordinator((request, votes, broadcast, "abort", alive))))))
            if alive and not undecided and broadcast[i] == "notsent":
                sent_now = broadcast[:i] + (decision,) + broadcast[i + 1:]
                add((at + 3, _state((ps, _coordinator((request, votes, sent_now, decision, alive))))))
            if not p_alive:
                continue
            before, after = ps[:i], ps[i + 1:]
            if request[i]:
                add((at + 4, _state((before + (_participant((vote, True, p_decision, True)),) + after, c))))
            if p_decision == "undecided":
                if sent and vote == "no":
                    add((at + 5, _state((before + (_participant((vote, True, "abort", sent)),) + after, c))))
                if not alive and not request[i]:
                    add((at + 6, _state((before + (_participant((vote, True, "abort", sent)),) + after, c))))
                if broadcast[i] != "notsent":
                    add((at + 7, _state((before + (_participant((vote, True, broadcast[i], sent)),) + after, c))))
            add((at + 8, _state((before + (_participant((vote, False, p_decision, sent)),) + after, c))))
        return out

    def enabled(self, state: AcpState, events: Sequence[Action]) -> list[int]:
        """The guards asked in one call, without building a reason for each refused event (the fast path of
        docs/adding-a-family.md; the law suite's ``enabled_exact`` holds it to :meth:`why_not`)."""
        guard = self._enabled
        return [i for i, event in enumerate(events) if guard(state, event)]

    def _enabled(self, state: AcpState, event: Action) -> bool:  # noqa: C901 -- one guard per TLA+ action
        kind, i, c = event.kind, event.who, state.coordinator
        if c is None or kind == "Init":
            return c is None and kind == "Init"
        ps = state.participants
        if kind == "makeDecision":
            return c.alive and c.decision == "undecided" and all(v in ("yes", "no") for v in c.vote)
        if kind == "coordDie":
            return c.alive
        assert i is not None
        p = ps[i]
        if kind == "request":
            return c.alive and not c.request[i]
        if kind == "getVote":
            return (c.alive and c.decision == "undecided" and all(c.request) and c.vote[i] == "waiting"
                    and p.vote_sent)
        if kind == "detectFault":
            return (c.alive and c.decision == "undecided" and all(c.request) and c.vote[i] == "waiting"
                    and not p.alive and not p.vote_sent)
        if kind == "coordBroadcast":
            return c.alive and c.decision != "undecided" and c.broadcast[i] == "notsent"
        if kind == "sendVote":
            return p.alive and c.request[i]
        if kind == "abortOnVote":
            return p.alive and p.decision == "undecided" and p.vote_sent and p.vote == "no"
        if kind == "abortOnTimeoutRequest":
            return p.alive and p.decision == "undecided" and not c.alive and not c.request[i]
        if kind == "decide":
            return p.alive and p.decision == "undecided" and c.broadcast[i] != "notsent"
        return p.alive  # parDie

    def advance(self, state: AcpState, event: Action) -> AcpState:
        kind, i, c, ps = event.kind, event.who, state.coordinator, state.participants
        if kind == "Init":
            n = self.n
            return AcpState(tuple(Participant(v, True, "undecided", False) for v in event.votes),
                            Coordinator((False,) * n, ("waiting",) * n, ("notsent",) * n, "undecided", True))
        assert c is not None
        if kind == "makeDecision":
            votes = ("yes" in c.vote) if self.any_yes else all(v == "yes" for v in c.vote)
            return state._replace(coordinator=c._replace(decision="commit" if votes else "abort"))
        if kind == "coordDie":
            return state._replace(coordinator=c._replace(alive=False))
        assert i is not None
        p = ps[i]
        if kind == "request":
            return state._replace(coordinator=c._replace(request=_set(c.request, i, True)))
        if kind == "getVote":
            return state._replace(coordinator=c._replace(vote=_set(c.vote, i, p.vote)))
        if kind == "detectFault":
            return state._replace(coordinator=c._replace(decision="abort"))
        if kind == "coordBroadcast":
            return state._replace(coordinator=c._replace(broadcast=_set(c.broadcast, i, c.decision)))
        changed = {"sendVote": lambda: p._replace(vote_sent=True),
                   "abortOnVote": lambda: p._replace(decision="abort"),
                   "abortOnTimeoutRequest": lambda: p._replace(decision="abort"),
                   "decide": lambda: p._replace(decision=c.broadcast[i]),
                   "parDie": lambda: p._replace(alive=False)}[kind]()
        return state._replace(participants=_set(ps, i, changed))

    def step(self, state: AcpState, event: Action) -> tuple[AcpState, list[Record]]:
        after = self.advance(state, event)
        fields = {"decisions": [p.decision for p in after.participants],
                  "votes": [p.vote for p in after.participants]}
        return after, [("acp", event.kind, fields)]

    def skip_record(self, event: Action, reason: str) -> None:
        return None


def _ac1_feed(carry: None, event: Any) -> tuple[None, tuple[Violation, ...]]:
    decisions = set(event.get("decisions") or [])
    if {"commit", "abort"} <= decisions:
        return carry, (Violation("ac1", event.index, None, "a participant committed while another aborted"),)
    return carry, ()


def _ac2_feed(carry: None, event: Any) -> tuple[None, tuple[Violation, ...]]:
    if "commit" in (event.get("decisions") or []) and set(event.get("votes") or []) != {"yes"}:
        return carry, (Violation("ac2", event.index, None, "a participant committed though one voted no"),)
    return carry, ()


@dataclass
class AcpScenario:
    name: str
    participants: int
    events: list[Action]
    protocol: str | None = None
    description: str = ""
    family: str = "acp"

    def with_events(self, events: Iterable[Action]) -> "AcpScenario":
        return AcpScenario(self.name, self.participants, list(events), self.protocol, self.description)


class AcpFamily(Family):
    name = "acp"
    title = "Atomic Commitment, simple broadcast (tlaplus/Examples, ACP_SB.tla)"
    knobs = TABLE
    default_protocol = "spec"
    fault_classes = ("interleave",)
    history_events = frozenset(("Init", *COORDINATOR_ON, *PARTICIPANT, *COORDINATOR))
    checks = (CheckSpec("ac1", Fold("ac1", None, _ac1_feed), True, "AC1", state=ac1_violated),
              CheckSpec("ac2", Fold("ac2", None, _ac2_feed), True, "AC2", state=ac2_violated))

    def _parse(self, data: dict, source: Any) -> AcpScenario:
        n = data.get("participants")
        if not isinstance(n, int) or not 1 <= n <= 6:
            raise source.error("participants must be a count from 1 to 6", "participants")
        scenario = AcpScenario(str(data.get("name", "acp")), n, [], data.get("protocol"))
        scenario.events = [self.parse_event(scenario, str(text)) for text in data.get("events", [])]
        return scenario

    def load_scenario(self, data: dict, source: Any) -> AcpScenario:
        return self._parse(data, source)

    def dump_scenario(self, scenario: AcpScenario) -> dict[str, Any]:
        return {"format": 1, "family": self.name, "name": scenario.name, "participants": scenario.participants,
                "events": [str(e) for e in scenario.events]}

    def load_workload(self, data: dict, source: Any) -> Workload:
        scenario_part, faults, limits = split_workload(data, source)
        base = self._parse(scenario_part, source)
        return build_workload(self.name, self.fault_classes, base, base.name, base.description, faults, limits,
                              source)

    def parse_event(self, scenario: AcpScenario, text: str) -> Action:
        words = text.split()
        if len(words) == 2 and words[0] == "Init":
            votes = tuple(words[1].split(","))
            if len(votes) == scenario.participants and set(votes) <= {"yes", "no"}:
                return Action("Init", votes=votes)
        if len(words) == 1 and words[0] in COORDINATOR:
            return Action(words[0])
        if len(words) == 2 and words[0] in COORDINATOR_ON + PARTICIPANT and words[1].startswith("p"):
            who = words[1][1:]
            if who.isdigit() and int(who) < scenario.participants:
                return Action(words[0], int(who))
        raise ScenarioError(f"unknown event {text!r}")

    def alphabet(self, workload: Workload) -> list[Action]:
        n = workload.base.participants
        starts = [Action("Init", votes=votes) for votes in itertools.product(("yes", "no"), repeat=n)]
        return starts + [Action(kind) for kind in COORDINATOR] + [
            Action(kind, i) for i in range(n) for kind in COORDINATOR_ON + PARTICIPANT]

    def generate(self, workload: Workload, seed: int) -> tuple[Action, ...]:
        return ()

    def replay(self, scenario: AcpScenario, protocol: Protocol, events: Iterable[Action] | None = None) -> Replay:
        events = tuple(scenario.events if events is None else events)
        driven = drive(self.machine(scenario, protocol), events)
        return Replay(events, driven.history, RunEnd(END_COMPLETED, len(events), len(events)), driven.state,
                      driven.skipped)

    def machine(self, scenario: AcpScenario, protocol: Protocol) -> AcpMachine:
        return AcpMachine(scenario.participants, AcpKnobs.of(protocol).decide == "any_yes")

    def final_state(self, replay: Replay) -> AcpState:
        return replay.state

    def state_key(self, replay: Replay) -> AcpState:
        return replay.state

    def verdicts(self, replay: Replay) -> list[dict[str, Any]]:
        return []

    def counterexample(self, workload: Workload, protocol: Protocol, invariant: str, events: Sequence[Action],
                       meta: dict[str, Any]) -> AcpScenario:
        scenario = workload.base.with_events(events)
        scenario.protocol = protocol.label
        return scenario


FAMILY = AcpFamily()


@dataclass(frozen=True)
class NoKnobs(Knobs):
    """The spec as written: nothing to choose."""


class BareAcpFamily(AcpFamily):
    """The spec alone, as a TLA+ user writes it first: no knob, no fault class, no ``[faults]`` section in its
    workloads -- every order is an interleaving of the spec's actions."""

    name = "acp-bare"
    knobs = knob_table(NoKnobs, family="acp-bare", presets={"spec": {}})
    fault_classes = ()

    def machine(self, scenario: AcpScenario, protocol: Protocol) -> AcpMachine:
        return AcpMachine(scenario.participants, False)


BARE_FAMILY = BareAcpFamily()


def workload_text(participants: int) -> str:
    return (f'format = 1\nfamily = "acp"\nname = "acp-{participants}"\nparticipants = {participants}\n'
            '[faults]\nclasses = ["interleave"]\n')
