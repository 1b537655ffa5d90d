"""The liveness search's graph and answers: the nodes, their edges and labels, a property's verdict.

Built by :mod:`sim.search.liveness`, judged by :mod:`sim.search.fair_cycles`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import AbstractSet, Any, Hashable, Sequence

from sim.core.liveness import Eventually
from sim.core.values import JsonObject


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

    def to_json(self) -> JsonObject:
        out: JsonObject = {"status": self.status}
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

    def to_json(self) -> JsonObject:
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
        #: The paths measured, by the nodes they were kept within (None: all of them): each node's last step and cost.
        self._measured: dict[frozenset[int] | None, tuple[list[tuple[int, int] | None], list[tuple[int, int]]]] = {}
        self._calm: list[tuple[int, ...]] | None = None

    def calm_targets(self) -> list[tuple[int, ...]]:
        """Each node's targets by its non-fault edges, in the edges' order: listed once, when the graph is built
        and judged (as its distances are), for every property's and pending item's components."""
        if self._calm is None:
            self._calm = [tuple(t for _, t, fault, _ in edges if not fault) if edges else () for edges in self.edges]
        return self._calm

    def distances(self, within: AbstractSet[int] | None = None) -> list[tuple[int, int]]:
        """Each node's cost from the nearest initial node: (faults, events) of the path with the fewest faults,
        then the fewest events (a lasso that needs no fault is shown without one).  ``within``: the paths pass
        only through those nodes (a behaviour that never reaches a goal never passes a node where it holds);
        the others are unreached."""
        return self._measure(within)[1]

    def _measure(self, within: AbstractSet[int] | None) -> tuple[list[tuple[int, int] | None], list[tuple[int, int]]]:
        key = None if within is None else frozenset(within)
        if key in self._measured:
            return self._measured[key]
        if not self._measured:
            self.check()
        parent: list[tuple[int, int] | None] = [None] * len(self.states)
        unreached = (1 << 62, 0)
        cost = [unreached] * len(self.states)
        starts = [n for n in self.initial if key is None or n in key]
        heap = [((0, 0), n) for n in starts]
        for n in starts:
            cost[n] = (0, 0)
        while heap:
            here, node = heapq.heappop(heap)
            if here != cost[node]:
                continue
            for event, target, fault, _ in self.edges[node] or ():
                there = (here[0] + fault, here[1] + 1)
                if there < cost[target] and (key is None or target in key):
                    cost[target], parent[target] = there, (node, event)
                    heapq.heappush(heap, (there, target))
        self._measured[key] = parent, cost
        return parent, cost

    def check(self) -> None:
        """Assert the graph's bookkeeping, once it is built (one pass over its edges): a node per key, every list
        a node's long; initial nodes unique and fault-free; each edge leads to a node and away from its own
        (a step that changes nothing is no step), and no edge reaches a node with fewer faults than its
        source's plus its own (breadth first by faults expands each node at its fewest); a node's fair groups
        are those of its edges -- what weak fairness is judged on."""
        count = len(self.states)
        assert len(self.index) == count, f"{len(self.index)} keys for {count} nodes"
        assert len(self.carries) == len(self.labels) == len(self.faults) == len(self.edges) == len(self.fair) == \
            count, "a node's lists differ in length"
        assert len(set(self.initial)) == len(self.initial) and all(self.faults[n] == 0 for n in self.initial), (
            f"initial nodes {self.initial} repeat or are reached with faults")
        for number, edges in enumerate(self.edges):
            if edges is None:
                continue
            groups = set()
            for _, target, fault, group in edges:
                assert 0 <= target < count and target != number, f"node {number} has an edge to {target}"
                assert self.faults[target] <= self.faults[number] + fault, (
                    f"node {target} is reached from node {number} with fewer faults than it was expanded with")
                if group is not None:
                    groups.add(group)
            assert groups == self.fair[number], f"node {number}'s fair groups are not those of its edges"

    def path_to(self, goal: int, within: AbstractSet[int] | None = None) -> list[int]:
        """The events of the path :meth:`distances` measured (fewest faults, then events; ``within`` those nodes)
        to ``goal``, beginning with the event that chose that initial node where the machine has several (an
        order begins where its run starts)."""
        parent = self._measure(within)[0]
        path: list[int] = []
        step = parent[goal]
        while step is not None:
            node, event = step
            path.append(event)
            step = parent[node]
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
