"""The liveness search's graph and lassos are asserted before a verdict is given: the graph's bookkeeping
(fault counts, fair groups, no self-edges), Tarjan's components covering their nodes once, and a lasso whose
prefix walks to its entry as measured and whose cycle returns to it without a fault.  Each test plants one
break and shows the check stops on it."""

from __future__ import annotations

from typing import Any, Callable, Hashable

import pytest

from sim.core.liveness import Eventually, LivenessModel
from sim.core.machine import Machine
from sim.search import fair_cycles
from sim.search.liveness import check_liveness
from sim.search.liveness_graph import Graph

#: a -> b -> a forever, away from the goal (``go`` is enabled in a only, so weak fairness does not force it);
#: ``crash`` is a fault from b back to a.
EDGES = {"a": {"ping": "b", "go": "goal"}, "b": {"pong": "a", "crash": "a"}, "goal": {}}
ROLES = {"ping": "free", "pong": "free", "crash": "fault"}
#: The events' positions in the toy's alphabet (sorted).
CRASH, GO, PING, PONG = range(4)


class _Edges(Machine):
    """A machine given as its edges ``{state: {event: next state}}``, starting in a."""

    def __init__(self, edges: dict[str, dict[str, str]]):
        self.edges = edges

    def initial(self) -> str:
        return "a"

    def why_not(self, state: str, event: str) -> str | None:
        return None if event in self.edges[state] else "not here"

    def step(self, state: str, event: str) -> tuple[str, list]:
        return self.edges[state][event], [("toy", event, {})]


class _Toy:
    name = "toy"

    def __init__(self, edges: dict[str, dict[str, str]], roles: dict[str, str], goal: str = "goal",
                 group: Callable[[str], Hashable] = lambda event: event):
        self.edges, self.roles, self.goal, self.group = edges, roles, goal, group

    def machine(self, scenario: Any, protocol: Any) -> Machine:
        return _Edges(self.edges)

    def liveness(self, workload: Any, protocol: Any) -> LivenessModel:
        return LivenessModel((Eventually("reaches_goal", lambda state, carry: state == self.goal),),
                             role=lambda state, carry, event: self.roles.get(event, "fair"),
                             assumption=lambda event: "system", assumptions={"system": ""}, group=self.group)

    def alphabet(self, workload: Any) -> list[str]:
        return sorted({event for out in self.edges.values() for event in out})


class _Workload:
    base = None


class _Protocol:
    label = "toy"


def _verdict(edges=EDGES, roles=ROLES, goal="goal"):
    return check_liveness(_Toy(edges, roles, goal), _Workload(), _Protocol, 1).verdicts["reaches_goal"]


def _graph() -> Graph:
    """a --ping--> b, b --pong--> a, b --crash (a fault)--> a."""
    graph = Graph()
    a, _ = graph.node("a", "a", None, 0)
    b, _ = graph.node("b", "b", None, 0)
    graph.initial.append(a)
    graph.edges[a], graph.fair[a] = [(0, b, False, None)], frozenset()
    graph.edges[b], graph.fair[b] = [(1, a, False, None), (2, a, True, None)], frozenset()
    return graph


def test_the_lasso_as_built_passes_its_own_checks():
    """Unplanted, the search shows the ping-pong lasso, which walks the graph as measured."""
    verdict = _verdict()
    assert (verdict.status, verdict.prefix, verdict.cycle) == ("violated", (), ("ping", "pong"))


def test_a_cycle_that_does_not_return_to_its_entry_is_not_shown(monkeypatch):
    """A cycle that stops short of its entry is no behaviour that repeats forever."""
    cycle = fair_cycles._cycle
    monkeypatch.setattr(fair_cycles, "_cycle", lambda *args: cycle(*args)[:-1])
    with pytest.raises(AssertionError, match="does not return"):
        _verdict()


def test_a_cycle_through_a_fault_is_not_shown(monkeypatch):
    """Faults are finite: a cycle that takes one is no fair behaviour, and is refused before it is shown."""
    monkeypatch.setattr(fair_cycles, "_cycle", lambda graph, members, entry, obliged: [PING, CRASH])
    with pytest.raises(AssertionError, match=r"without a fault: \[0, \d, 0\], 1 faults"):
        _verdict()


def test_a_prefix_that_does_not_reach_the_entry_is_not_shown(monkeypatch):
    """The prefix shown is a walk from an initial node to the cycle's entry, as long as the distances measured."""
    monkeypatch.setattr(Graph, "path_to", lambda self, goal, within=None: [PING])  # to b, not the cycle's entry a
    with pytest.raises(AssertionError, match="walks from no initial node"):
        _verdict()


def test_a_prefix_through_the_goal_is_no_counterexample_to_reaching_it(monkeypatch):
    """A lasso against ``<>goal`` never reaches the goal, its prefix included."""
    monkeypatch.setattr(Graph, "path_to", lambda self, goal, within=None: [GO])
    with pytest.raises(AssertionError, match="the goal of reaches_goal holds on the prefix"):
        _verdict()


def test_the_prefix_of_a_lasso_against_a_goal_keeps_out_of_the_goal():
    """The shortest way to the cycle passes the goal (a, g, c); the lasso shown takes the longer way that never
    reaches it (a, e, f, c): a behaviour through the goal is no counterexample to reaching it."""
    edges = {"a": {"x": "g", "y": "e"}, "e": {"w": "f"}, "f": {"v": "c"}, "g": {"z": "c"}, "c": {"p": "d"},
             "d": {"q": "c"}}
    verdict = _verdict(edges, {}, goal="g")
    assert (verdict.status, verdict.prefix, verdict.cycle) == ("violated", ("y", "w", "v"), ("p", "q"))


#: c and d both enable ``go`` (one fairness group); the component {c, d, e, f} is fair, since go is taken on c -> e,
#: but its shortest cycle back to c, c -> d -> c, keeps go enabled all along and never takes it.
DETOUR = {"a": {"start": "c"}, "c": {"ping": "d", "go c": "e"}, "d": {"pong": "c", "go d": "e"}, "e": {"back": "f"},
          "f": {"again": "c"}}


def _detoured():
    toy = _Toy(DETOUR, {}, group=lambda event: event.split()[0])  # go c and go d: one group
    return check_liveness(toy, _Workload(), _Protocol, 1).verdicts["reaches_goal"]


def test_a_cycle_keeping_a_group_enabled_takes_it_so_the_lasso_is_fair():
    """The lasso shown is itself a fair behaviour: the cycle takes a detour through go rather than ping-pong forever
    with go enabled."""
    verdict = _detoured()
    assert (verdict.status, verdict.prefix, verdict.cycle) == (
        "violated", ("start",), ("ping", "pong", "go c", "back", "again"))


def test_a_cycle_that_never_takes_a_group_enabled_all_along_is_not_shown(monkeypatch):
    """Without the detour the ping-pong cycle is no fair behaviour, and the check refuses it."""
    monkeypatch.setattr(fair_cycles, "_unfair", lambda graph, entry, steps: frozenset())
    with pytest.raises(AssertionError, match="never takes \\['go'\\], enabled all along it"):
        _detoured()


def test_components_that_do_not_cover_their_nodes_stop_the_judgement(monkeypatch):
    """Tarjan's components partition the nodes they are asked about: a node outside them counted in is caught."""
    inner = fair_cycles._inner
    monkeypatch.setattr(fair_cycles, "_inner", lambda calm, node, nodes: inner(calm, node, nodes) + [99])
    graph = _graph()
    graph.node("c", "c", None, 0)
    graph.edges.extend([None] * 97)
    with pytest.raises(AssertionError, match="Tarjan's components hold"):
        fair_cycles._components(graph.calm_targets(), {0, 1})


def test_the_graph_as_built_passes_its_check():
    """The hand-built graph is well formed: its distances are measured."""
    assert _graph().distances() == [(0, 0), (0, 1)]


@pytest.mark.parametrize("plant,message", [
    (lambda graph: graph.edges[0].append((3, 0, False, None)), "has an edge to 0"),
    (lambda graph: graph.faults.__setitem__(1, 2), "fewer faults than it was expanded with"),
    (lambda graph: graph.fair.__setitem__(0, frozenset({"system"})), "fair groups are not those of its edges"),
    (lambda graph: graph.initial.append(0), "repeat or are reached with faults"),
    (lambda graph: graph.labels.pop(), "lists differ in length"),
])
def test_a_graph_with_broken_bookkeeping_is_refused_before_its_distances(plant, message):
    """A self-edge, a node reached with fewer faults than it was expanded with, fair groups that are not its
    edges', a repeated initial node, or a node missing from one of the lists is caught before any verdict."""
    graph = _graph()
    plant(graph)
    with pytest.raises(AssertionError, match=message):
        graph.distances()
