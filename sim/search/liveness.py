"""Liveness under fairness: fair cycles in the reachable state graph, found and shown as lassos.

A family's :class:`~sim.core.liveness.LivenessModel` names its properties
and each event's role (``fault``, ``fair``, ``free``); this module judges
them on the graph its machine reaches (``fencesim explore --liveness``).

**The graph.**  Every state reachable with at most ``max_faults`` fault
events, and every event enabled in it: breadth first by the number of
faults (a state is expanded at the fewest faults it can be reached with,
so the bound cuts only fault events).  A node is the machine's key with
the properties' carries.  The graph is *complete* when every node was
expanded (no state limit, deadline or memory cut it), and *exhausted* when,
besides, no fault event was cut by the bound: the answer then holds for any
number of faults.

**A violation** of a property is a fair behaviour on which it fails: a
*lasso*, a prefix from an initial state (faults allowed), then a cycle taken
forever with no fault in it (faults are finite).  For ``<>goal`` the whole
behaviour stays out of ``goal``; for ``pending ~> done`` some item stays
pending from a point on.  A cycle is fair when every fairness group enabled
in all of its states is taken somewhere in it (weak fairness, judged per
strongly connected component of the states the property's failure allows, as
TLC does); a state in which no fair event is enabled lets the behaviour stay
there forever (the cycle is then empty: nothing is left that must happen).
A step that leaves the node as it was is no step (TLA+'s ``<<A>>_vars``): it
is neither enabled for fairness nor taken, and it is not kept as an edge.

**What is answered**, per property: ``violated`` with the lasso whose prefix
has the fewest faults, then the fewest events, and among those the shortest cycle found (a cycle
must take each obligation once; it is shortest when at most one group is
obliged, otherwise short: each obligation is reached by the shortest way from
the last); ``holds`` when the graph is complete and no fair violating cycle
is in it; ``not decided`` otherwise, saying what cut the graph.  A violation
found in an incomplete graph is real: its states were all expanded, so their
enabled events are all known.  A property that holds while no state ever
had anything pending (or the goal held from the start) is ``vacuous``.

**Reductions.**  Sleep sets, persistent sets and symmetry are not used here.
Sleep sets and persistent sets keep every *state* but drop transitions, and
a cycle's fairness is judged on transitions (a persistent set may leave a
fair event out of every state of a cycle: the ignoring problem); symmetry
merges states whose items are interchangeable, and a property that names an
item (a step) is not symmetric.  The graph is the unreduced one.
"""
from __future__ import annotations

import time
from collections import deque
from typing import Any, Callable, Hashable, Sequence

from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.liveness import ROLES, LivenessModel
from sim.core.workload import Workload
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.fair_cycles import judge
from sim.search.liveness_graph import Edge, Graph, LivenessResult, Verdict, shown_events

__all__ = ["LIVENESS_STATES_DEFAULT", "MAX_FAULTS_MAX", "LivenessResult", "Verdict", "check_liveness",
           "liveness_model", "shown_events"]

#: Limits: nodes of the graph by default, and the most faults a behaviour may have.
LIVENESS_STATES_DEFAULT = 2_000_000
MAX_FAULTS_MAX = 1_000
#: Seconds between two progress calls while the graph is built.
PROGRESS_EVERY_S = 5.0


def check_liveness(family: Family, workload: Workload, protocol: Protocol, max_faults: int,
                   max_states: int = LIVENESS_STATES_DEFAULT, unfair: Sequence[str] = (),
                   deadline: Deadline = NO_DEADLINE,
                   progress: Callable[[int, int], None] | None = None) -> LivenessResult:
    """Judge the family's liveness properties under ``protocol`` on every behaviour with at most ``max_faults``
    faults (see the module docstring).  ``unfair`` names fairness assumptions dropped; ``progress(states,
    faults)`` follows the graph's construction."""
    machine, model = liveness_model(family, workload, protocol, max_faults, unfair)
    result = LivenessResult(protocol.label, max_faults, tuple(sorted(set(unfair))))
    events = list(family.alphabet(workload)) + list(model.events)
    graph = _build(machine, model, events, max_faults, max_states, frozenset(unfair), deadline, progress, result)
    result.states = len(graph.states)
    result.edges = sum(len(e) for e in graph.edges if e is not None)
    result.exhausted = result.complete and not graph.cut_faults
    if result.exhausted:
        result.reason = "exhausted"
    acted = {_kind(events[e]) for edges in graph.edges if edges for e, _, fault, _ in edges if fault}
    result.acted = tuple(sorted(acted))
    for prop in model.properties:
        result.verdicts[prop.name] = judge(graph, prop, model, events, result)
    return result


def liveness_model(family: Family, workload: Workload, protocol: Protocol, max_faults: int,
                   unfair: Sequence[str] = ()) -> tuple[Any, LivenessModel]:
    """The machine and liveness model a check judges, or an :class:`InputError` saying why there is none (asked
    before any search, so a command's bad option stops it at once)."""
    if not 0 <= max_faults <= MAX_FAULTS_MAX:
        raise InputError(f"--max-faults must be from 0 to {MAX_FAULTS_MAX}, not {max_faults}")
    model = family.liveness(workload, protocol)
    machine = model.machine if model is not None and model.machine is not None else \
        family.machine(workload.base, protocol)
    if machine is None or model is None:
        raise InputError(f"the {family.name} family has no liveness properties yet: explore --liveness judges a "
                         "family that declares them in its liveness() (see docs/liveness.md)")
    unknown = sorted(set(unfair) - set(model.assumptions))
    if unknown:
        raise InputError(f"unknown fairness assumption {', '.join(unknown)}: the {family.name} family's are "
                         f"{', '.join(sorted(model.assumptions)) or 'none'}")
    return machine, model


def _kind(event: Any) -> str:
    return str(event).split(" ", 1)[0]


def _build(machine: Any, model: LivenessModel, events: list, max_faults: int, max_states: int,
           unfair: frozenset[str], deadline: Deadline, progress: Callable[[int, int], None] | None,
           result: LivenessResult) -> Graph:
    """The graph, breadth first by faults (0-1: a system event costs nothing, a fault one)."""
    graph = Graph()
    start = model.start
    queue: deque[int] = deque()
    alphabets: dict[tuple[int, ...], list] = {}
    for starting, state in _initial_states(machine, events):
        number, new = graph.node((machine.key(state), start), state, start, 0, model.properties)
        if new:
            graph.initial.append(number)
            graph.starting[number] = starting
            queue.append(number)
    shown_at = time.monotonic()
    while queue:
        number = queue.popleft()
        if graph.edges[number] is not None:
            continue  # reached again at fewer faults and expanded then
        if deadline.expired():
            result.complete, result.reason = False, deadline.name
            deadline.note("liveness")
            break
        if len(graph.states) > max_states:
            result.complete, result.reason = False, "state_limit"
            break
        state, carries, faults = graph.states[number], graph.carries[number], graph.faults[number]
        cut = model.cut(state)
        if cut is not None:  # left unexpanded: what follows it is not known
            graph.cut[number] = cut
            if result.complete:
                result.complete, result.reason = False, cut
            continue
        edges: list[Edge] = []
        fair: set[Hashable] = set()
        roles = [model.role(state, carries, event) for event in events]
        for position in _enabled(machine, state, events, roles, faults >= max_faults, graph, alphabets):
            event, role = events[position], roles[position]
            fault = role == "fault"
            group = model.group(event) if role == "fair" and model.assumption(event) not in unfair else None
            after, new_carries = model.next(machine, state, carries, event)
            target, new = graph.node((machine.key(after), new_carries), after, new_carries, faults + fault,
                                     model.properties)
            if new or graph.edges[target] is None and graph.faults[target] > faults + fault:
                graph.faults[target] = faults + fault
                (queue.append if fault else queue.appendleft)(target)
            if target == number:
                continue  # a step that changes nothing is no step: neither enabled for fairness nor taken
            if group is not None:
                fair.add(group)
            edges.append((position, target, fault, group))
        graph.edges[number] = edges
        graph.fair[number] = frozenset(fair)
        graph.states[number] = graph.carries[number] = None  # judged by its labels from now on
        if progress is not None and time.monotonic() - shown_at >= PROGRESS_EVERY_S:
            shown_at = time.monotonic()
            progress(len(graph.states), faults)
    if progress is not None and result.complete:
        progress(len(graph.states), max_faults)
    return graph


def _enabled(machine: Any, state: Any, events: list, roles: list[str], at_bound: bool, graph: Graph,
             alphabets: dict[tuple[int, ...], list]) -> list[int]:
    """The events enabled in ``state``; at the fault bound, only those that are not faults (a fault there is
    not followed, so whether it is enabled is not asked: the graph is then not exhausted).  ``alphabets``: the
    events asked about at the bound, one list per set of positions, so a machine that prepares an alphabet once
    (keyed by the list) is given the same list each time."""
    for event, role in zip(events, roles):
        if role not in ROLES:
            raise ValueError(f"liveness role of {event} is {role!r}, not one of {ROLES}")
    if not at_bound:
        return machine.enabled(state, events)
    wanted = [i for i, role in enumerate(roles) if role != "fault"]
    if len(wanted) < len(events):
        graph.cut_faults = True
    if not wanted:
        return []
    key = tuple(wanted)
    asked = alphabets.get(key)
    if asked is None:
        asked = alphabets[key] = [events[i] for i in wanted]
    return [wanted[j] for j in machine.enabled(state, asked)]


def _initial_states(machine: Any, events: list) -> list[tuple[int | None, Any]]:
    """The machine's initial states, each with the starting event that chose it (None: :meth:`initial`)."""
    root = machine.initial()
    starting = [i for i, e in enumerate(events) if machine.starts(e)]
    if not starting:
        return [(None, root)]
    return [(i, machine.advance(root, events[i])) for i in starting if machine.why_not(root, events[i]) is None]
