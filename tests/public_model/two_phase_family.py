"""A public model written as a fencesim family: Two-Phase Commit, as tlaplus/Examples specifies it.

Transcribed from ``specifications/transaction_commit/TwoPhase.tla`` (Lamport's
spec, checked there by TLC with ``RM = {r1, r2, r3}``: 288 distinct states,
1,146 states generated, depth 11).  Each TLA+ action is an event, with the
action's guard as the machine's guard; an action that leaves the state as it
was (``RMRcvCommitMsg(rm)`` for an ``rm`` already committed) is taken all the
same, as TLC takes it, so states generated are counted as TLC counts them.
The invariants are the spec's ``TPTypeOK`` and the ``TCConsistent`` of
``TCommit.tla`` that ``TwoPhase`` implements (no resource manager committed
while another aborted), each written twice: as a predicate on the state (what
exhaustive search reads) and as a fold over the history (what replays read);
the law suite checks they agree.

``planted=True`` plants a bug: the transaction manager may commit without
every resource manager prepared (``TMCommit``'s ``tmPrepared = RM`` dropped).
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Hashable, Iterable, Literal, Mapping, NamedTuple, Sequence

from sim.core.checks import CheckSpec, Fold, Violation
from sim.core.errors import ScenarioError
from sim.core.family import Family, Replay
from sim.core.footprint import Part, access, keyed
from sim.core.kernel import END_COMPLETED, RunEnd
from sim.core.knobs import Protocol
from sim.core.machine import Machine, Record, drive
from sim.core.mechanisms import Knobs, knob, knob_table
from sim.core.symmetry import Symmetry, renamings
from sim.core.workload import Workload, build_workload, split_workload

RM_STATES = ("working", "prepared", "committed", "aborted")
TM_STATES = ("init", "committed", "aborted")
#: The actions of TPNext, in the spec's order; those taking an ``rm`` are listed once per resource manager.
TM_ACTIONS = ("TMCommit", "TMAbort")
RM_ACTIONS = ("TMRcvPrepared", "RMPrepare", "RMChooseToAbort", "RMRcvCommitMsg", "RMRcvAbortMsg")


@dataclass(frozen=True)
class TwoPhaseKnobs(Knobs):
    """The spec has no knobs; ``commit`` is the planted bug's switch (``any``: commit without every prepare)."""

    commit: Literal["all_prepared", "any"] = knob("all_prepared", "all_prepared: TMCommit needs every RM prepared "
                                                  "(the spec); any: it does not (a planted bug)",
                                                  ranks={"any": 0, "all_prepared": 1})


#: What each action reads and writes: ``rm_state``, ``prepared`` (the TM's tmPrepared) and ``prepared_sent``
#: (the Prepared messages) are keyed by resource manager.
EVENTS = {
    "TMCommit": access("tm_state prepared", "tm_state commit_sent"),
    "TMAbort": access("tm_state", "tm_state abort_sent"),
    "TMRcvPrepared": access("tm_state prepared_sent[rm]", "prepared[rm]"),
    "RMPrepare": access("rm_state[rm]", "rm_state[rm] prepared_sent[rm]"),
    "RMChooseToAbort": access("rm_state[rm]", "rm_state[rm]"),
    "RMRcvCommitMsg": access("commit_sent", "rm_state[rm]"),
    "RMRcvAbortMsg": access("abort_sent", "rm_state[rm]"),
}

TABLE = knob_table(TwoPhaseKnobs, family="two-phase", presets={"spec": {"commit": "all_prepared"}}, events=EVENTS)


@dataclass(frozen=True)
class Action:
    kind: str
    rm: str | None = None

    def __str__(self) -> str:
        return self.kind if self.rm is None else f"{self.kind} {self.rm}"


class TwoPhaseState(NamedTuple):
    """rmState, tmState, tmPrepared and msgs (split: the Prepared messages sent, Commit sent, Abort sent)."""

    rm_state: tuple[str, ...]
    tm_state: str
    prepared: frozenset[str]
    prepared_sent: frozenset[str]
    commit_sent: bool
    abort_sent: bool


_RM_STATES = frozenset(RM_STATES)


def type_ok_violated(state: TwoPhaseState) -> bool:
    """Not TPTypeOK (every resource manager and message is one of the workload's by construction: the state
    holds no others, so what is left to check is each variable's range)."""
    return not (_RM_STATES.issuperset(state.rm_state) and state.tm_state in TM_STATES)


def inconsistent(state: TwoPhaseState) -> bool:
    """Not TCConsistent: one resource manager committed while another aborted."""
    return "committed" in state.rm_state and "aborted" in state.rm_state


class TwoPhaseMachine(Machine):
    def __init__(self, rms: tuple[str, ...], any_commit: bool):
        self.rms, self.any_commit = rms, any_commit
        self.index = {rm: i for i, rm in enumerate(rms)}

    def initial(self) -> TwoPhaseState:
        return TwoPhaseState(("working",) * len(self.rms), "init", frozenset(), frozenset(), False, False)

    def why_not(self, state: TwoPhaseState, event: Action) -> str | None:
        kind, rm = event.kind, event.rm
        if kind == "TMCommit":
            ok = state.tm_state == "init" and (self.any_commit or state.prepared == set(self.rms))
        elif kind == "TMAbort":
            ok = state.tm_state == "init"
        elif kind == "TMRcvPrepared":
            ok = state.tm_state == "init" and rm in state.prepared_sent
        elif kind in ("RMPrepare", "RMChooseToAbort"):
            ok = state.rm_state[self.index[rm]] == "working"  # type: ignore[index]
        elif kind == "RMRcvCommitMsg":
            ok = state.commit_sent
        else:
            ok = state.abort_sent
        return None if ok else f"{event} is not enabled"

    def enabled(self, state: TwoPhaseState, events: Sequence[Action]) -> list[int]:
        """The enabled actions read off the state (TPNext's disjuncts), as positions of the alphabet: the
        alphabet is TMCommit, TMAbort, then the five RM actions of each RM in turn (``alphabet``)."""
        rm_state, tm_state, prepared, prepared_sent, commit_sent, abort_sent = state
        out = []
        if tm_state == "init":
            if self.any_commit or len(prepared) == len(self.rms):
                out.append(0)
            out.append(1)
        for i, rm in enumerate(self.rms):
            base = 2 + 5 * i
            if tm_state == "init" and rm in prepared_sent:
                out.append(base)
            if rm_state[i] == "working":
                out += (base + 1, base + 2)
            if commit_sent:
                out.append(base + 3)
            if abort_sent:
                out.append(base + 4)
        return out

    def disabled_by(self, state: TwoPhaseState, event: Action) -> Sequence[Part] | None:
        """The part one false condition of the action's guard reads (``--reduce`` grows persistent sets from it)."""
        kind, rm = event.kind, event.rm
        if kind in ("TMCommit", "TMAbort", "TMRcvPrepared") and state.tm_state != "init":
            return [("tm_state", None)]
        if kind == "TMCommit":
            return [("prepared", next(r for r in self.rms if r not in state.prepared))]
        if kind == "TMRcvPrepared":
            return [("prepared_sent", rm)]
        if kind in ("RMPrepare", "RMChooseToAbort"):
            return [("rm_state", rm)]
        return [("commit_sent", None)] if kind == "RMRcvCommitMsg" else [("abort_sent", None)]

    def advance(self, state: TwoPhaseState, event: Action) -> TwoPhaseState:
        kind, rm = event.kind, event.rm
        if kind == "TMCommit":
            return state._replace(tm_state="committed", commit_sent=True)
        if kind == "TMAbort":
            return state._replace(tm_state="aborted", abort_sent=True)
        if kind == "TMRcvPrepared":
            return state._replace(prepared=state.prepared | {rm})
        new = {"RMPrepare": "prepared", "RMChooseToAbort": "aborted", "RMRcvCommitMsg": "committed",
               "RMRcvAbortMsg": "aborted"}[kind]
        position = self.index[rm]  # type: ignore[index]
        rm_state = state.rm_state[:position] + (new,) + state.rm_state[position + 1:]
        if kind == "RMPrepare":
            return state._replace(rm_state=rm_state, prepared_sent=state.prepared_sent | {rm})
        return state._replace(rm_state=rm_state)

    def step(self, state: TwoPhaseState, event: Action) -> tuple[TwoPhaseState, list[Record]]:
        after = self.advance(state, event)
        actor = "tm" if event.kind.startswith("TM") else str(event.rm)
        fields: dict[str, Any] = {"rm_state": list(after.rm_state), "tm_state": after.tm_state}
        return after, [(actor, event.kind, fields)]

    def skip_record(self, event: Action, reason: str) -> None:
        return None

    def parts(self, state: TwoPhaseState) -> Mapping[Part, Any]:
        return {("tm_state", None): state.tm_state, ("commit_sent", None): state.commit_sent,
                ("abort_sent", None): state.abort_sent, **keyed("rm_state", zip(self.rms, state.rm_state)),
                **keyed("prepared", ((rm, rm in state.prepared) for rm in self.rms)),
                **keyed("prepared_sent", ((rm, rm in state.prepared_sent) for rm in self.rms))}


def _consistency_feed(carry: None, event: Any) -> tuple[None, tuple[Violation, ...]]:
    shown = event.get("rm_state") or []
    if "committed" in shown and "aborted" in shown:
        return carry, (Violation("consistent", event.index, None, "one RM committed while another aborted"),)
    return carry, ()


def _type_ok_feed(carry: None, event: Any) -> tuple[None, tuple[Violation, ...]]:
    if not set(event.get("rm_state") or []) <= set(RM_STATES) or event.get("tm_state") not in TM_STATES:
        return carry, (Violation("type_ok", event.index, None, "a variable left its type"),)
    return carry, ()


@dataclass
class TwoPhaseScenario:
    name: str
    rms: list[str]
    events: list[Action]
    protocol: str | None = None
    expect: dict[str, str] = field(default_factory=dict)
    description: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    family: str = "two-phase"

    def with_events(self, events: Iterable[Action]) -> "TwoPhaseScenario":
        return TwoPhaseScenario(self.name, self.rms, list(events), self.protocol, dict(self.expect),
                                self.description, dict(self.meta), self.path)


class TwoPhaseFamily(Family):
    name = "two-phase"
    title = "Two-Phase Commit (tlaplus/Examples, TwoPhase.tla)"
    knobs = TABLE
    default_protocol = "spec"
    fault_classes = ("interleave",)
    history_events = frozenset((*TM_ACTIONS, *RM_ACTIONS))

    checks = (CheckSpec("type_ok", Fold("type_ok", None, _type_ok_feed), True, "TPTypeOK", state=type_ok_violated),
              CheckSpec("consistent", Fold("consistent", None, _consistency_feed), True, "TCConsistent",
                        state=inconsistent))

    def _parse(self, data: dict, source: Any) -> TwoPhaseScenario:
        rms = data.get("rms")
        if not isinstance(rms, list) or not rms or not all(isinstance(r, str) for r in rms):
            raise source.error("rms must be a non-empty list of names", "rms")
        events = [self.parse_event_text(str(text), rms) for text in data.get("events", [])]
        return TwoPhaseScenario(str(data.get("name", "two-phase")), rms, events, data.get("protocol"),
                                path=Path(source.path))

    @staticmethod
    def parse_event_text(text: str, rms: Sequence[str]) -> Action:
        words = text.split()
        if words and words[0] in TM_ACTIONS and len(words) == 1:
            return Action(words[0])
        if len(words) == 2 and words[0] in RM_ACTIONS and words[1] in rms:
            return Action(words[0], words[1])
        raise ScenarioError(f"unknown event {text!r}")

    def load_scenario(self, data: dict, source: Any) -> TwoPhaseScenario:
        return self._parse(data, source)

    def dump_scenario(self, scenario: TwoPhaseScenario) -> dict[str, Any]:
        return {"format": 1, "family": self.name, "name": scenario.name, "rms": scenario.rms,
                "events": [str(e) for e in scenario.events], **({"protocol": scenario.protocol}
                                                                if scenario.protocol else {})}

    def load_workload(self, data: dict, source: Any) -> Workload:
        scenario_part, faults, limits = split_workload(data, source)
        base = self._parse(scenario_part, source)
        return build_workload(self.name, self.fault_classes, base, base.name, base.description, faults, limits,
                              source)

    def parse_event(self, scenario: TwoPhaseScenario, text: str) -> Action:
        return self.parse_event_text(text, scenario.rms)

    def alphabet(self, workload: Workload) -> list[Action]:
        rms = workload.base.rms
        return [Action(kind) for kind in TM_ACTIONS] + [Action(kind, rm) for rm in rms for kind in RM_ACTIONS]

    def generate(self, workload: Workload, seed: int) -> tuple[Action, ...]:
        rng = random.Random(seed)
        machine = TwoPhaseMachine(tuple(workload.base.rms), False)
        state, order = machine.initial(), []
        for _ in range(20):
            enabled = [a for a in self.alphabet(workload) if machine.why_not(state, a) is None]
            if not enabled:
                break
            action = rng.choice(enabled)
            order.append(action)
            state = machine.advance(state, action)
        return tuple(order)

    def replay(self, scenario: TwoPhaseScenario, protocol: Protocol, events: Iterable[Action] | None = None) -> Replay:
        events = tuple(scenario.events if events is None else events)
        driven = drive(self.machine(scenario, protocol), events)
        return Replay(events, driven.history, RunEnd(END_COMPLETED, len(events), len(events)), driven.state,
                      driven.skipped)

    def machine(self, scenario: TwoPhaseScenario, protocol: Protocol) -> TwoPhaseMachine:
        return TwoPhaseMachine(tuple(scenario.rms), TwoPhaseKnobs.of(protocol).commit == "any")

    def final_state(self, replay: Replay) -> TwoPhaseState:
        return replay.state

    def state_key(self, replay: Replay) -> Hashable:
        return replay.state

    def symmetry(self, workload: Workload) -> Symmetry | None:
        """The resource managers run the same code and no invariant names one (TLC's ``SYMMETRY Permutations(RM)``):
        a state's orbit is its multiset of (rm state, prepared at the TM, Prepared sent) per RM."""
        rms = list(workload.base.rms)
        if len(rms) > SYMMETRIC_RMS_MAX:
            return None
        return Symmetry(f"resource managers {', '.join(rms)}", functools.partial(_orbit, tuple(rms)),
                        renamings(rms, _renamed))

    def footprint_keys(self, workload: Workload, event: Action) -> Mapping[str, Iterable[str]]:
        return {"rm": (event.rm,)} if event.rm is not None else {}

    def verdicts(self, replay: Replay) -> list[dict[str, Any]]:
        return []

    def counterexample(self, workload: Workload, protocol: Protocol, invariant: str, events: Sequence[Action],
                       meta: dict[str, Any]) -> TwoPhaseScenario:
        scenario = workload.base.with_events(events)
        scenario.protocol = protocol.label
        return scenario


#: The most resource managers whose renamings are listed for the law suite (n! - 1 of them).
SYMMETRIC_RMS_MAX = 6


def _orbit(rms: tuple[str, ...], state: TwoPhaseState) -> Hashable:
    """The state without the RMs' names: each RM's (state, prepared at the TM, Prepared sent), sorted."""
    rm_state, tm_state, prepared, prepared_sent, commit_sent, abort_sent = state
    per_rm = sorted((rm_state[i], rm in prepared, rm in prepared_sent) for i, rm in enumerate(rms))
    return (tuple(per_rm), tm_state, commit_sent, abort_sent)


def _renamed(event: Action, mapping: dict[str, str]) -> Action:
    return event if event.rm is None else Action(event.kind, mapping[event.rm])


FAMILY = TwoPhaseFamily()


def workload_text(rms: Sequence[str]) -> str:
    """A workload file of the family for these resource managers."""
    listed = ", ".join(f'"{rm}"' for rm in rms)
    return f'format = 1\nfamily = "two-phase"\nname = "two-phase-{len(rms)}"\nrms = [{listed}]\n' \
           '[faults]\nclasses = ["interleave"]\n'
