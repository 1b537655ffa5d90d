"""Judging one liveness property on the graph: fair strongly connected components, stuttering states, lassos.

See :mod:`sim.search.liveness` for what is judged and why; this module finds, for a property, the fair ways
to stay where it fails (Tarjan's components over non-fault transitions, weak fairness per component, states
where nothing fair is enabled), picks the one nearest an initial state, and builds its cycle.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Hashable

from sim.core.liveness import Eventually, LeadsTo, LivenessModel
from sim.search.liveness_graph import Graph, LivenessResult, Verdict, shown_events


def judge(graph: Graph, prop: Any, model: LivenessModel, events: list, result: LivenessResult) -> Verdict:
    passable: set[int] | None = None  # the nodes a failing behaviour's prefix may pass through (None: any)
    if isinstance(prop, Eventually):
        failing = passable = _avoiding(graph, model.properties.index(prop))
        candidates = [(None, failing)]
        vacuous = not failing
    else:
        index = model.properties.index(prop)
        pending = [labels[index] for labels in graph.labels]
        items = sorted({i for p in pending for i in p}, key=repr)
        candidates = [(item, {n for n, p in enumerate(pending) if item in p}) for item in items]
        vacuous = not items
    best: tuple | None = None
    distance = graph.distances(passable)
    calm = graph.calm_targets()
    for item, allowed in candidates:
        for entry, cycle in _fair_cycles(graph, allowed, distance, calm):
            ranked = (distance[entry], len(cycle), repr(item))
            if best is None or ranked < best[0]:
                best = (ranked, item, entry, cycle)
    if best is not None:
        _, item, entry, cycle = best
        prefix = graph.path_to(entry, passable)
        _check_lasso(graph, prop, model.properties.index(prop), item, (prefix, entry, cycle), distance[entry])
        return Verdict(prop.name, "violated", tuple(events[e] for e in prefix), tuple(events[e] for e in cycle),
                       item)
    if not result.complete:
        return _undecided(graph, prop, candidates, (distance, passable), events, result)
    within = "at any number of faults" if result.exhausted else \
        f"within {result.max_faults} fault{'s' if result.max_faults != 1 else ''}"
    return Verdict(prop.name, "holds", vacuous=vacuous,
                   note=("vacuous: nothing was ever pending" if vacuous and isinstance(prop, LeadsTo) else
                         "vacuous: the goal held from the start" if vacuous else f"every fair behaviour {within}"))


def _check_lasso(graph: Graph, prop: Any, index: int, item: Any, lasso: tuple[list[int], int, list[int]],
                 distance: tuple[int, int]) -> None:
    """Assert a lasso is well formed before it is shown.  Its prefix walks the graph's edges from an initial node
    (after the event that chose it, where the machine has several) to the cycle's entry, with the faults and
    events measured there (the lasso shown is the one ranked); its cycle walks from the entry back to it with
    no fault (faults are finite) and takes every fair group enabled all along it (weak fairness), or is empty
    where nothing fair is enabled.  The property fails all along the cycle (and, for ``<>goal``, along the
    prefix too: the goal never holds)."""
    prefix, entry, cycle = lasso
    fails = (lambda n: not graph.labels[n][index]) if isinstance(prop, Eventually) else \
        (lambda n: item in graph.labels[n][index])
    walks = []
    for root in graph.initial:
        chosen = graph.starting.get(root)
        if chosen is not None and prefix[:1] != [chosen]:
            continue
        steps = prefix[1:] if chosen is not None else prefix
        nodes, faults, _ = _walk(graph, root, steps)
        if nodes and isinstance(prop, Eventually):
            assert all(fails(n) for n in nodes), f"the goal of {prop.name} holds on the prefix {prefix}"
        if nodes:
            walks.append((nodes[-1], faults, len(steps)))
    assert (entry, *distance) in walks, f"the prefix {prefix} walks from no initial node to the cycle's entry " \
                                        f"with the faults and events measured, {distance}: {walks}"
    nodes, faults, taken = _walk(graph, entry, cycle)
    assert nodes and nodes[-1] == entry and faults == 0, f"the cycle {cycle} from node {entry} does not return " \
                                                         f"to it without a fault: {nodes}, {faults} faults"
    assert all(fails(n) for n in nodes), f"{prop.name} holds somewhere on the cycle {cycle}"
    enabled = frozenset.intersection(*(graph.fair[n] for n in nodes))
    assert enabled <= taken, (f"the cycle {cycle} never takes {sorted(enabled - taken, key=repr)}, enabled all along "
                              f"it: it is no fair behaviour" if cycle else
                              f"node {entry} is kept forever while fair groups are enabled there")


def _walk(graph: Graph, start: int, events: list[int]) -> tuple[list[int], int, set[Hashable]]:
    """The nodes a walk by ``events`` from ``start`` along the graph's edges passes (empty: an event is no edge
    where it is taken), its faults and the fair groups it takes."""
    nodes, faults, groups = [start], 0, set[Hashable]()
    for event in events:
        step = next(((t, fault, g) for e, t, fault, g in graph.edges[nodes[-1]] or () if e == event), None)
        if step is None:
            return [], faults, groups
        nodes.append(step[0])
        faults += step[1]
        groups.add(step[2])
    return nodes, faults, groups


def _undecided(graph: Graph, prop: Any, candidates: list, measured: tuple[list[tuple[int, int]], set[int] | None],
               events: list, result: LivenessResult) -> Verdict:
    """Not decided: what cut the graph, and where the property's failure was left going -- the nearest state
    the model could not follow further with the item still pending (a run still going at its horizon)."""
    cut = result.reason if result.reason.startswith("--") else "the " + result.reason.replace("_", " ")
    distance, passable = measured
    nearest = min(((distance[n], repr(item), n, item) for item, allowed in candidates for n in graph.cut
                   if n in allowed), default=None)
    if nearest is None:
        return Verdict(prop.name, "not decided", note=f"the graph was cut by {cut}")
    _, _, node, item = nearest
    prefix = tuple(events[e] for e in graph.path_to(node, passable))
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


def _fair_cycles(graph: Graph, allowed: set[int], distance: list[tuple[int, int]],
                 calm: list[tuple[int, ...]]) -> list[tuple[int, list[int]]]:
    """Each way to stay in ``allowed`` forever, fairly: (an entry node, the cycle's events from it, empty when
    nothing fair is enabled there) -- one per stuttering node and per fair strongly connected component
    (``calm``: each node's targets by non-fault edges, :meth:`Graph.calm_targets`)."""
    found: list[tuple[int, list[int]]] = []
    expanded = {n for n in allowed if graph.edges[n] is not None}
    for n in sorted(expanded):
        if not graph.fair[n]:
            found.append((n, []))
    for component in _components(calm, expanded):
        if len(component) == 1 and component[0] not in calm[component[0]]:
            continue  # one node and no edge back to itself: no cycle (most components of a graph)
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


def _components(calm: list[tuple[int, ...]], nodes: set[int]) -> list[list[int]]:
    """The strongly connected components of ``nodes`` over their non-fault edges (Tarjan's, iteratively;
    ``calm``: each node's targets by those edges)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(_inner(calm, root, nodes)))]
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
                    work.append((child, iter(_inner(calm, child, nodes))))
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
    assert not stack and sum(map(len, out)) == len(nodes), (
        f"Tarjan's components hold {sum(map(len, out))} nodes of {len(nodes)}, {len(stack)} left on its stack")
    return out


def _inner(calm: list[tuple[int, ...]], node: int, nodes: set[int]) -> list[int]:
    return [t for t in calm[node] if t in nodes]


def _cycle(graph: Graph, members: set[int], entry: int, obliged: set[Hashable]) -> list[int]:
    """A cycle from ``entry`` within ``members`` that takes every obliged group: to the nearest edge of a group
    still owed, from where it leads, until none is owed, then the shortest way back.  The component is fair, but
    a cycle through part of it need not be: while a group is enabled all along the cycle and never taken in it,
    a detour from the entry to the nearest edge of that group, or to a node where it is not enabled (the
    component has one, or the group would be obliged), and back -- so the lasso shown is itself a fair
    behaviour."""
    steps: list[tuple[int, Hashable, int]] = []
    at = entry
    while obliged:
        path, at = _nearest(graph, members, at, lambda e, t, g: g in obliged)
        for _, group, _ in path:
            obliged.discard(group)
        steps += path
    steps += _nearest(graph, members, at, lambda e, t, g: t == entry)[0]
    owed = _unfair(graph, entry, steps)
    while owed:
        path, at = _nearest(graph, members, entry, _ending(graph, min(owed, key=repr)))
        steps += path + (_nearest(graph, members, at, lambda e, t, g: t == entry)[0] if at != entry else [])
        owed = _unfair(graph, entry, steps)
    return [event for event, _, _ in steps]


def _ending(graph: Graph, group: Hashable) -> Callable[[int, int, Hashable], bool]:
    """An edge that ends a group's continuous enabling: one of the group, or one to a node where it is not
    enabled."""
    return lambda event, target, taken: taken == group or group not in graph.fair[target]


def _unfair(graph: Graph, entry: int, steps: list[tuple[int, Hashable, int]]) -> frozenset:
    """The fair groups enabled in every node of a cycle and taken on none of its steps."""
    enabled = frozenset.intersection(graph.fair[entry], *(graph.fair[target] for _, _, target in steps))
    return enabled - {group for _, group, _ in steps}


def _nearest(graph: Graph, members: set[int], start: int,
             wanted: Callable[[int, int, Hashable], bool]) -> tuple[list[tuple[int, Hashable, int]], int]:
    """The shortest walk in ``members`` from ``start`` whose last edge is ``wanted``: its (event, group, target)
    edges and where it ends."""
    parent: dict[int, tuple[int, int, Hashable] | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for event, target, fault, group in graph.edges[node] or ():
            if fault or target not in members:
                continue
            if wanted(event, target, group):
                walk = [(event, group, target)]
                back = node
                while parent[back] is not None:
                    previous, e, g = parent[back]  # type: ignore[misc]
                    walk.append((e, g, back))
                    back = previous
                return walk[::-1], target
            if target not in parent:
                parent[target] = (node, event, group)
                queue.append(target)
    raise AssertionError("a strongly connected component holds a walk to each of its edges")
