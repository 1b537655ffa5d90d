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
is shortest (in events) and, among those, the shortest cycle found (a cycle
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
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence

from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.liveness import ROLES, Eventually, LeadsTo, LivenessModel
from sim.core.workload import Workload
from sim.search.budget import NO_DEADLINE, Deadline

#: Limits: nodes of the graph by default, and the most faults a behaviour may have.
LIVENESS_STATES_DEFAULT = 2_000_000
MAX_FAULTS_MAX = 1_000
#: Seconds between two progress calls while the graph is built.
PROGRESS_EVERY_S = 5.0


@dataclass
class Verdict:
    """One property's answer (see the module docstring)."""

    name: str
    status: str  # "holds" | "violated" | "not decided"
    prefix: tuple[Any, ...] = ()
    cycle: tuple[Any, ...] = ()  # empty: nothing fair is enabled at the end of the prefix, which lasts forever
    item: Any = None  # the pending item that stays pending (a LeadsTo property)
    vacuous: bool = False
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status}
        if self.status == "violated":
            out["lasso"] = {"prefix": [str(e) for e in self.prefix], "cycle": [str(e) for e in self.cycle]}
        elif self.prefix:
            out["still_going_after"] = shown_events(self.prefix)
        if self.item is not None and (self.status == "violated" or self.prefix):
            out["item"] = str(self.item)
        if self.vacuous:
            out["vacuous"] = True
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class LivenessResult:
    """The liveness of one protocol: the graph searched and each property's verdict."""

    protocol: str
    max_faults: int
    unfair: tuple[str, ...] = ()
    states: int = 0
    edges: int = 0
    complete: bool = True
    exhausted: bool = False
    reason: str = "bound_reached"
    acted: tuple[str, ...] = ()  # the fault kinds taken somewhere in the graph
    verdicts: dict[str, Verdict] = field(default_factory=dict)

    @property
    def violated(self) -> bool:
        return any(v.status == "violated" for v in self.verdicts.values())

    def to_json(self) -> dict[str, Any]:
        return {"max_faults": self.max_faults, "states": self.states, "edges": self.edges,
                "complete": self.complete, "exhausted": self.exhausted, "end": self.reason,
                "unfair": list(self.unfair), "faults_acted": list(self.acted)}


def shown_events(events: Sequence[Any]) -> list[str]:
    """Events as text, a run of three or more equal ones as one (``continue ×4,210``): a run followed to its
    horizon takes thousands of the system's steps."""
    out: list[str] = []
    texts = [str(e) for e in events]
    i = 0
    while i < len(texts):
        j = i
        while j < len(texts) and texts[j] == texts[i]:
            j += 1
        out += [f"{texts[i]} ×{j - i:,}"] if j - i >= 3 else texts[i:j]
        i = j
    return out


#: One edge: (alphabet position, target node, whether it is a fault, its fairness group or None).
Edge = tuple[int, int, bool, Hashable]


class Graph:
    """The reachable states within the fault bound, their edges and the properties' carries."""

    def __init__(self) -> None:
        self.index: dict[Hashable, int] = {}
        self.states: list[Any] = []  # a node's state until it is expanded (then None: only its labels are kept)
        self.carries: list[Any] = []
        self.labels: list[tuple] = []  # per property: the items pending (LeadsTo) or whether the goal holds
        self.faults: list[int] = []
        self.edges: list[list[Edge] | None] = []  # None: not expanded
        self.fair: list[frozenset] = []  # the fair groups enabled in each expanded node
        self.initial: list[int] = []
        self.cut_faults = False
        self.cut: dict[int, str] = {}  # nodes the model could not follow further, and why
        self.starting: dict[int, int | None] = {}  # an initial node's starting event (several initial states)
        self._parent: list[tuple[int, int] | None] | None = None
        self._distance: list[int] = []

    def distances(self) -> list[int]:
        """Each node's distance in events from the nearest initial node (breadth first, faults included)."""
        if self._parent is None:
            parent: list[tuple[int, int] | None] = [None] * len(self.states)
            distance = [-1] * len(self.states)
            queue = deque(self.initial)
            for n in self.initial:
                distance[n] = 0
            while queue:
                node = queue.popleft()
                for event, target, _, _ in self.edges[node] or ():
                    if distance[target] < 0:
                        distance[target], parent[target] = distance[node] + 1, (node, event)
                        queue.append(target)
            self._parent, self._distance = parent, distance
        return self._distance

    def path_to(self, goal: int) -> list[int]:
        """The events of a shortest path from an initial node to ``goal``, beginning with the event that chose
        that initial node where the machine has several (an order begins where its run starts)."""
        self.distances()
        assert self._parent is not None
        path: list[int] = []
        step = self._parent[goal]
        while step is not None:
            node, event = step
            path.append(event)
            step = self._parent[node]
            goal = node
        chosen = self.starting.get(goal)
        if chosen is not None:
            path.append(chosen)
        return path[::-1]

    def node(self, key: Hashable, state: Any, carries: Any, faults: int,
             properties: Sequence[Any] = ()) -> tuple[int, bool]:
        number = self.index.get(key)
        if number is not None:
            return number, False
        number = self.index[key] = len(self.states)
        self.states.append(state)
        self.carries.append(carries)
        self.labels.append(tuple(p.goal(state, carries) if isinstance(p, Eventually) else p.pending(state, carries)
                                 for p in properties))
        self.faults.append(faults)
        self.edges.append(None)
        self.fair.append(frozenset())
        return number, True


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
        result.verdicts[prop.name] = _judge(graph, prop, model, events, result)
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
    carrying, start = model.carries, model.start
    queue: deque[int] = deque()
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
        for position in _enabled(machine, state, events, roles, faults >= max_faults, graph):
            event, role = events[position], roles[position]
            fault = role == "fault"
            group = model.group(event) if role == "fair" and model.assumption(event) not in unfair else None
            if carrying:
                after, records = machine.step(state, event)
                new_carries = model.update(carries, state, event, after, records)
            else:
                after, new_carries = machine.advance(state, event), carries
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


def _enabled(machine: Any, state: Any, events: list, roles: list[str], at_bound: bool, graph: Graph) -> list[int]:
    """The events enabled in ``state``; at the fault bound, only those that are not faults (a fault there is
    not followed, so whether it is enabled is not asked: the graph is then not exhausted)."""
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
    return [wanted[j] for j in machine.enabled(state, [events[i] for i in wanted])]


def _initial_states(machine: Any, events: list) -> list[tuple[int | None, Any]]:
    """The machine's initial states, each with the starting event that chose it (None: :meth:`initial`)."""
    root = machine.initial()
    starting = [i for i, e in enumerate(events) if machine.starts(e)]
    if not starting:
        return [(None, root)]
    return [(i, machine.advance(root, events[i])) for i in starting if machine.why_not(root, events[i]) is None]


# -- judging one property ----------------------------------------------------------------------------------


def _judge(graph: Graph, prop: Any, model: LivenessModel, events: list, result: LivenessResult) -> Verdict:
    if isinstance(prop, Eventually):
        failing = _avoiding(graph, model.properties.index(prop))
        candidates = [(None, failing)]
        vacuous = not failing
    else:
        index = model.properties.index(prop)
        pending = [labels[index] for labels in graph.labels]
        items = sorted({i for p in pending for i in p}, key=repr)
        candidates = [(item, {n for n, p in enumerate(pending) if item in p}) for item in items]
        vacuous = not items
    best: tuple | None = None
    distance = graph.distances()
    for item, allowed in candidates:
        for entry, cycle in _fair_cycles(graph, allowed, distance):
            ranked = (distance[entry], len(cycle), repr(item))
            if best is None or ranked < best[0]:
                best = (ranked, item, entry, cycle)
    if best is not None:
        _, item, entry, cycle = best
        prefix = graph.path_to(entry)
        return Verdict(prop.name, "violated", tuple(events[e] for e in prefix), tuple(events[e] for e in cycle),
                       item)
    if not result.complete:
        return _undecided(graph, prop, candidates, distance, events, result)
    within = "at any number of faults" if result.exhausted else \
        f"within {result.max_faults} fault{'s' if result.max_faults != 1 else ''}"
    return Verdict(prop.name, "holds", vacuous=vacuous,
                   note=("vacuous: nothing was ever pending" if vacuous and isinstance(prop, LeadsTo) else
                         "vacuous: the goal held from the start" if vacuous else f"every fair behaviour {within}"))


def _undecided(graph: Graph, prop: Any, candidates: list, distance: list[int], events: list,
               result: LivenessResult) -> Verdict:
    """Not decided: what cut the graph, and where the property's failure was left going -- the nearest state
    the model could not follow further with the item still pending (a run still going at its horizon)."""
    cut = result.reason if result.reason.startswith("--") else "the " + result.reason.replace("_", " ")
    nearest = min(((distance[n], repr(item), n, item) for item, allowed in candidates for n in graph.cut
                   if n in allowed), default=None)
    if nearest is None:
        return Verdict(prop.name, "not decided", note=f"the graph was cut by {cut}")
    _, _, node, item = nearest
    prefix = tuple(events[e] for e in graph.path_to(node))
    pending = f"{item} still pending" if item is not None else "the goal not reached"
    shown = " ; ".join(shown_events(prefix)) or "the start"
    return Verdict(prop.name, "not decided", prefix=prefix, item=item,
                   note=f"after {shown} the run was still going at the {graph.cut[node].replace('_', ' ')}, "
                        f"{pending}: a loop without end, or a wait longer than that (the graph was cut by {cut})")


def _avoiding(graph: Graph, index: int) -> set[int]:
    """The nodes reachable from an initial node through nodes where the goal of property ``index`` does not
    hold (themselves excluded)."""
    def holds(n: int) -> bool:
        return bool(graph.labels[n][index])

    bad = {n for n in graph.initial if not holds(n)}
    stack = list(bad)
    while stack:
        for _, target, _, _ in graph.edges[stack.pop()] or ():
            if target not in bad and not holds(target):
                bad.add(target)
                stack.append(target)
    return bad


def _fair_cycles(graph: Graph, allowed: set[int], distance: list[int]) -> list[tuple[int, list[int]]]:
    """Each way to stay in ``allowed`` forever, fairly: (an entry node, the cycle's events from it, empty when
    nothing fair is enabled there) -- one per stuttering node and per fair strongly connected component."""
    found: list[tuple[int, list[int]]] = []
    expanded = {n for n in allowed if graph.edges[n] is not None}
    for n in sorted(expanded):
        if not graph.fair[n]:
            found.append((n, []))
    for component in _components(graph, expanded):
        members = set(component)
        inside = [(n, e, t, g) for n in component for e, t, fault, g in graph.edges[n] or () if not fault
                  and t in members]
        if not inside:
            continue
        obliged = frozenset.intersection(*(graph.fair[n] for n in component))
        taken = {g for _, _, _, g in inside}
        if obliged <= taken:
            entry = min(component, key=lambda n: (distance[n], n))  # the nearest to an initial state
            found.append((entry, _cycle(graph, members, entry, set(obliged))))
    return found


def _components(graph: Graph, nodes: set[int]) -> list[list[int]]:
    """The strongly connected components of ``nodes`` over their non-fault edges (Tarjan's, iteratively)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(_inner(graph, root, nodes)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(_inner(graph, child, nodes))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                out.append(sorted(component))
    return out


def _inner(graph: Graph, node: int, nodes: set[int]) -> list[int]:
    return [t for _, t, fault, _ in graph.edges[node] or () if not fault and t in nodes]


def _cycle(graph: Graph, members: set[int], entry: int, obliged: set[Hashable]) -> list[int]:
    """A cycle from ``entry`` within ``members`` that takes every obliged group: to the nearest edge of a group
    still owed, from where it leads, until none is owed, then the shortest way back."""
    events: list[int] = []
    at = entry
    while obliged:
        path, at = _nearest(graph, members, at, lambda e, t, g: g in obliged)
        for event, group in path:
            obliged.discard(group)
            events.append(event)
    path, at = _nearest(graph, members, at, lambda e, t, g: t == entry)
    events.extend(event for event, _ in path)
    return events


def _nearest(graph: Graph, members: set[int], start: int,
             wanted: Callable[[int, int, Hashable], bool]) -> tuple[list[tuple[int, Hashable]], int]:
    """The shortest walk in ``members`` from ``start`` whose last edge is ``wanted``: its (event, group) edges
    and where it ends."""
    parent: dict[int, tuple[int, int, Hashable] | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for event, target, fault, group in graph.edges[node] or ():
            if fault or target not in members:
                continue
            if wanted(event, target, group):
                walk = [(event, group)]
                back = node
                while parent[back] is not None:
                    previous, e, g = parent[back]  # type: ignore[misc]
                    walk.append((e, g))
                    back = previous
                return walk[::-1], target
            if target not in parent:
                parent[target] = (node, event, group)
                queue.append(target)
    raise AssertionError("a strongly connected component holds a walk to each of its edges")


def lasso_replay(family: Family, scenario: Any, protocol: Protocol) -> str:
    """What a lasso file (``explore --liveness --out``) shows when replayed: whether its cycle, played twice,
    left the machine's state as it found it.  Its ``lasso`` table must fit its events (else an InputError)."""
    lasso = scenario.meta.get("lasso")
    events = list(scenario.events)
    if not (isinstance(lasso, dict) and all(isinstance(lasso.get(k), int) and lasso[k] >= 0
                                            for k in ("prefix", "cycle"))
            and lasso["prefix"] + 2 * lasso["cycle"] == len(events)):
        raise InputError(f"{scenario.name}: its lasso table must give the prefix's and the cycle's event counts, "
                         f"prefix + 2 x cycle = the {len(events)} events")
    prop, item = lasso.get("property", "the property"), lasso.get("item")
    pending = f"{item} stays pending" if item is not None else f"{prop} never holds"
    prefix, cycle = lasso["prefix"], lasso["cycle"]
    if not cycle:
        return (f"lasso ({prop}): after its {prefix} event(s) nothing the system must do is enabled: it stays "
                f"there forever, and {pending}")
    machine = family.machine(scenario, protocol)
    if machine is None:
        return f"lasso ({prop}): {prefix} event(s), then a cycle of {cycle} played twice"
    once = machine.key(machine.state_after(events[:prefix + cycle]))
    twice = machine.key(machine.state_after(events))
    if once != twice:
        return (f"lasso ({prop}): NOT a lasso of this code: the cycle of {cycle} event(s) played twice does not "
                "return to the state it left")
    shown = ", ".join(map(str, events[prefix:prefix + cycle]))
    return (f"lasso ({prop}): after its {prefix} event(s), the cycle of {cycle} ({shown}) played twice leaves the "
            f"state as it found it: it repeats forever, and {pending}")
