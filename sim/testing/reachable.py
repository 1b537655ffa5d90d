"""The laws checked on every state reachable within a small depth, exhaustively (nothing sampled).

Exhaustive search prunes an order when two adjacent events are independent,
and independence is derived from the footprints a family declares
(:mod:`sim.core.footprint`).  A footprint that under-declares a read or a
write makes the derived claim wrong and the proof skip states silently, and a
sampled check can miss the one state that shows it.  So these laws visit
every state within ``depth`` events of the start, breadth first (one
shortest order per state), and try every event of the alphabet in each:

* ``footprint`` -- the machine's parts determine its state key (nothing the
  key holds is left out of them); an event changes only parts its footprint
  declares written; and two states equal in every part an event declares
  read answer the event alike -- the same skip, the same records (actor,
  name, verdict), each written part set to the same value or left as it was.
  A failure names the event, the part and the shortest orders that show it.
* ``independent_commute`` -- in every state, two events independent by their
  footprints neither enable nor disable each other, and reach the same state
  key with the same violations in either order (a family whose safety checks
  are all state predicates is judged by states: the same key is enough).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

from sim.core.footprint import Footprint, FootprintError, Part, independent, overlaps, shown_part
from sim.core.history import History
from sim.core.machine import Machine
from sim.testing.context import LawBroken, LawContext, _text

#: The depth to which the exhaustive laws visit every state (events from the start), and the most states they
#: visit: a workload whose states within the depth exceed it is refused with the depth that fits.
FOOTPRINT_DEPTH_DEFAULT = 5
REACHED_STATES_MAX = 200_000

#: What a part is when a state has no such part (a key present in one state and not in another).
_ABSENT = ("<absent>",)


class _Answer:
    """What one event did in one state (an event the guard refused has None instead); parts on first use, from
    the graph's parts of equal states (``parts_of``)."""

    __slots__ = ("parts_of", "state", "records", "key", "_parts")

    def __init__(self, machine: Any, state: Any, records: tuple, parts_of: Callable[[Any], Mapping[Part, Any]]):
        self.parts_of, self.state, self.records = parts_of, state, records
        self.key = machine.key(state)
        self._parts: Mapping[Part, Any] | None = None

    @property
    def parts(self) -> Mapping[Part, Any]:
        if self._parts is None:
            self._parts = self.parts_of(self.state)
        return self._parts


@dataclass
class _Reached:
    """A state reached by a shortest order, with every event's answer in it."""

    order: tuple[Any, ...]
    state: Any
    key: Hashable
    parts: Mapping[Part, Any]
    history: History
    answers: dict[int, _Answer | None] = field(default_factory=dict)  # alphabet position -> answer
    judged: frozenset[str] = frozenset()  # what the state predicates found along the order (state_invariants)
    ordered: tuple[tuple[Part, ...], tuple[Any, ...]] | None = None  # its parts in order (Reachable.sorted_parts)


class Reachable:
    """Every machine state within ``depth`` events of the start, and each event's answer in each of them."""

    def __init__(self, ctx: LawContext, depth: int):
        machine = ctx.machine
        assert machine is not None  # the laws below are asked only of a family with a machine
        self.ctx, self.machine, self.depth = ctx, machine, depth
        start = machine.initial()
        self.predicates = [(spec.name, spec.state) for spec in ctx.family.checks if spec.safety and spec.state]
        self.transitions = [(spec.name, spec.transition) for spec in ctx.family.checks
                            if spec.safety and spec.transition]
        #: a state's parts, by state: a state reached by several orders (most are) is taken apart once
        self._parts: dict[Any, Mapping[Part, Any]] = {}
        self._shapes: dict[tuple[Part, ...], tuple[Part, ...]] = {}  # the parts nodes have, one object each
        self.nodes = [_Reached((), start, machine.key(start), self.parts_of(start), History(),
                               judged=self.judge(start))]
        seen = {self.nodes[0].key}
        frontier = list(self.nodes)
        for level in range(depth + 1):
            layer = []
            for node in frontier:
                self._answer_all(node)
                if level == depth:
                    continue
                for position, answer in node.answers.items():
                    if answer is None or answer.key in seen:
                        continue
                    seen.add(answer.key)
                    event = ctx.alphabet[position]
                    child = _Reached(node.order + (event,), answer.state, answer.key, answer.parts,
                                     _extended(node.history, len(node.order), answer.records),
                                     judged=node.judged | self.judge(answer.state)
                                     | self.judge_step(node.state, answer.state))
                    layer.append(child)
            if len(self.nodes) + len(layer) > REACHED_STATES_MAX:
                raise LawBroken("footprint", ctx.protocol.label,
                                f"more than {REACHED_STATES_MAX:,} states within {depth} events: give a smaller "
                                f"depth (footprint_depth={level})")
            self.nodes += layer
            frontier = layer
        #: the nodes by state (``answer_in`` reads their answers)
        self.by_state = {node.state: node for node in self.nodes}

    def judge(self, state: Any) -> frozenset[str]:
        return frozenset(name for name, violated in self.predicates if violated(state))

    def judge_step(self, before: Any, after: Any) -> frozenset[str]:
        return frozenset(name for name, violated in self.transitions if violated(before, after))

    def _answer_all(self, node: _Reached) -> None:
        machine = self.machine
        for position, event in enumerate(self.ctx.alphabet):
            if machine.why_not(node.state, event) is not None:
                node.answers[position] = None
                continue
            after, records = machine.step(node.state, event)
            node.answers[position] = _Answer(machine, after, tuple(records), self.parts_of)

    def sorted_parts(self, node: _Reached) -> tuple[tuple[Part, ...], tuple[Any, ...]]:
        """A node's parts in order (name, then key) and their values, sorted once; the parts are one object for
        every node that has the same parts."""
        if node.ordered is None:
            items = sorted(node.parts.items(), key=lambda item: _order(item[0]))
            shape = tuple(part for part, _ in items)
            node.ordered = (self._shapes.setdefault(shape, shape), tuple(value for _, value in items))
        return node.ordered

    def parts_of(self, state: Any) -> Mapping[Part, Any]:
        """The machine's parts of ``state``, computed once per distinct state (a state is a value: equal states
        have equal parts)."""
        parts = self._parts.get(state)
        if parts is None:
            parts = self._parts[state] = self.machine.parts(state)
        return parts

    def answer_in(self, state: Any, position: int) -> _Answer | None:
        """What the alphabet's event at ``position`` does in ``state``: a node's answer where ``state`` is a node's
        (every event was answered in it: a step is a function of the state value), else the machine asked."""
        node = self.by_state.get(state)
        if node is not None and position in node.answers:
            return node.answers[position]
        machine, event = self.machine, self.ctx.alphabet[position]
        if machine.why_not(state, event) is not None:
            return None
        after, records = machine.step(state, event)
        return _Answer(machine, after, tuple(records), self.parts_of)


def _extended(history: History, position: int, records: Iterable[tuple[str, str, dict]]) -> History:
    out = History(history)
    for actor, name, fields in records:
        out.append(position, actor, name, **fields)
    return out


def footprints(ctx: LawContext) -> list[Footprint | None]:
    """Every alphabet event's footprint under the protocol (a declaration that cannot be resolved breaks the
    law ``footprint``)."""
    try:
        return [ctx.family.footprint(ctx.workload, ctx.protocol, event) for event in ctx.alphabet]
    except FootprintError as error:
        raise ctx.broken("footprint", str(error)) from None


# -- the law ``footprint`` ------------------------------------------------------------------------------------


def footprint_law(ctx: LawContext, graph: Reachable) -> None:
    prints = footprints(ctx)
    _parts_determine_key(ctx, graph)
    for position, declared in enumerate(prints):
        if declared is None:
            continue
        _writes_declared(ctx, graph, position, declared)
        _reads_declared(ctx, graph, position, declared)
    _disabled_stays_disabled(ctx, graph, prints)


def _disabled_stays_disabled(ctx: LawContext, graph: Reachable, prints: list[Footprint | None]) -> None:
    """Where the machine names what disables an event (``disabled_by``), no event that writes none of those
    parts enables it (persistent sets rely on it)."""
    machine = graph.machine
    if type(machine).disabled_by is Machine.disabled_by:
        return
    alphabet = ctx.alphabet
    for node in graph.nodes:
        for position, answer in node.answers.items():
            if answer is not None:
                continue
            parts = machine.disabled_by(node.state, alphabet[position])
            if parts is None:
                continue
            for other, then in node.answers.items():
                theirs = prints[other]
                if then is None or theirs is None or any(theirs.declares_written(p) or
                                                         any(overlaps(w, p) for w in theirs.writes) for p in parts):
                    continue
                if machine.why_not(then.state, alphabet[position]) is None:
                    raise ctx.broken("footprint", f"{_after(node)}, {alphabet[other]} enables "
                                     f"{alphabet[position]}, though it writes none of the parts disabled_by names "
                                     f"({_listed(parts)})")


def _parts_determine_key(ctx: LawContext, graph: Reachable) -> None:
    owners: dict[Any, _Reached] = {}
    for node in graph.nodes:
        shape = graph.sorted_parts(node)
        other = owners.setdefault(shape, node)
        if other.key != node.key:
            raise ctx.broken("footprint", f"after {_text(other.order)} and after {_text(node.order)} the machine's "
                             "parts are equal but the state keys differ: parts() leaves out something the key holds")


def _differing(before: Mapping[Part, Any], after: Mapping[Part, Any]) -> list[Part]:
    """The parts whose values differ between two states (present in one only included), in no order."""
    if before is after:  # equal states share their parts (Reachable.parts_of)
        return []
    return [p for p, value in after.items() if before.get(p, _ABSENT) is not value
            and before.get(p, _ABSENT) != value] + [p for p in before if p not in after]


def _changed(before: Mapping[Part, Any], after: Mapping[Part, Any]) -> list[Part]:
    return sorted(_differing(before, after), key=_order)


def _listed(parts: Iterable[Part]) -> str:
    return ", ".join(shown_part(p) for p in parts) or "nothing"


def _writes_declared(ctx: LawContext, graph: Reachable, position: int, declared: Footprint) -> None:
    event = ctx.alphabet[position]
    written: dict[Part, bool] = {}  # part -> whether the footprint declares it written (asked once per part)
    for node in graph.nodes:
        answer = node.answers[position]
        if answer is None:
            continue
        changed = _differing(node.parts, answer.parts)
        for part in changed:
            if part not in written:
                written[part] = declared.declares_written(part)
        undeclared = sorted((p for p in changed if not written[p]), key=_order)
        if undeclared:
            raise ctx.broken("footprint", f"{event} changes {_listed(undeclared)}, which its footprint does not "
                             f"declare written (it declares: {_listed(sorted(declared.writes, key=_order))}), "
                             f"after {_text(node.order)}")


def _order(part: Part) -> tuple[str, str]:
    return (part[0], part[1] or "")


def _shown(records: Sequence[tuple[str, str, dict]]) -> tuple:
    return tuple((actor, name, fields.get("verdict")) for actor, name, fields in records)


def _reads_declared(ctx: LawContext, graph: Reachable, position: int, declared: Footprint) -> None:
    """States equal in every part the event declares read must answer it alike (see the module docstring)."""
    groups: dict[Any, list[_Reached]] = {}
    # by the parts a node has (most nodes have the same): the parts read, as one object, and where they sit
    reading: dict[tuple[Part, ...], tuple[tuple[Part, ...], tuple[int, ...]]] = {}
    named: dict[tuple[Part, ...], tuple[Part, ...]] = {}  # the same parts read, one object
    for node in graph.nodes:
        shape, values = graph.sorted_parts(node)
        found = reading.get(shape)
        if found is None:
            places = tuple(k for k, part in enumerate(shape) if declared.declares_read(part))
            parts = tuple(shape[k] for k in places)
            found = reading[shape] = (named.setdefault(parts, parts), places)
        parts, places = found
        # grouped by the parts read and their values: equal in every part the event declares read
        groups.setdefault((id(parts), tuple([values[k] for k in places])), []).append(node)
    for members in groups.values():
        if len(members) > 1:
            _alike(ctx, members, position, declared)


def _alike(ctx: LawContext, members: list[_Reached], position: int, declared: Footprint) -> None:
    first = members[0]
    one = first.answers[position]
    written: dict[Part, tuple[Any, _Reached]] = {}  # part -> (the value some member set it to, that member)
    kept: dict[Part, list[_Reached]] = {}
    for node in members:
        answer = node.answers[position]
        if (answer is None) != (one is None):
            _unread(ctx, first, node, position, declared, "is taken in one and refused in the other")
        if answer is None or one is None:
            continue
        if _shown(answer.records) != _shown(one.records):
            _unread(ctx, first, node, position, declared, "records other events or verdicts")
        for part in node.parts.keys() | answer.parts.keys():
            old, new = node.parts.get(part, _ABSENT), answer.parts.get(part, _ABSENT)
            if old == new:
                kept.setdefault(part, []).append(node)
                continue
            seen = written.setdefault(part, (new, node))
            if seen[0] != new:
                _unread(ctx, seen[1], node, position, declared, f"sets {shown_part(part)} to other values")
    for part, (value, setter) in written.items():
        for node in kept.get(part, ()):
            if node.parts.get(part, _ABSENT) != value:
                _unread(ctx, setter, node, position, declared, f"changes {shown_part(part)} in one and not the other")


def _unread(ctx: LawContext, one: _Reached, two: _Reached, position: int, declared: Footprint, how: str) -> None:
    event = ctx.alphabet[position]
    differ = [p for p in _changed(one.parts, two.parts) if not declared.declares_read(p)]
    raise ctx.broken("footprint", f"{event} depends on a part its footprint does not declare read (it declares: "
                     f"{_listed(sorted(declared.reads, key=_order))}): after {_text(one.order)} and after "
                     f"{_text(two.order)}, equal in every part it declares read, it {how}; the two states differ "
                     f"in {_listed(differ)}")


# -- the law ``independent_commute`` ----------------------------------------------------------------------------


def commute_law(ctx: LawContext, graph: Reachable) -> None:
    prints = footprints(ctx)
    alphabet = ctx.alphabet
    partners = [[j for j in range(len(alphabet)) if i != j and independent(prints[i], prints[j])]
                for i in range(len(alphabet))]
    judged = _judged_events(ctx)
    for node in graph.nodes:
        answers = node.answers
        for i, one in answers.items():
            if one is None:  # i;j needs i enabled (j;i, with j enabled, asks whether j enables i)
                continue
            for j in partners[i]:
                # i;j against j;i with both enabled is asked once, as (the smaller, the larger)
                if j > i or answers[j] is None:
                    _commutes(ctx, graph, node, i, j, judged)


def _judged_events(ctx: LawContext) -> Callable[[str], bool] | None:
    """Which record names a safety check reads, when every safety check is a fold that says so (None: any
    record may be read).  Two orders whose records no check reads cannot differ in their violations.  When
    every safety check is a state predicate, none: the search judges states, not orders, and the two orders'
    intermediate states are states of their own (each reached and judged)."""
    safety = [spec for spec in ctx.family.checks if spec.safety]
    if safety and all(spec.state is not None for spec in safety):
        return lambda name: False
    folds = [spec.fold for spec in safety]
    if any(fold is None for fold in folds):
        return None
    return lambda name: any(fold.reads_event(name) for fold in folds if fold is not None)


def _after(node: _Reached) -> str:
    """``after [order]`` for a message (written only when one is raised: a law that holds meets millions of pairs)."""
    return f"after {_text(node.order)}"


def _commutes(ctx: LawContext, graph: Reachable, node: _Reached, i: int, j: int,
              judged: Callable[[str], bool] | None) -> None:
    first, second = ctx.alphabet[i], ctx.alphabet[j]
    one = node.answers[i]
    if one is None:
        return
    then = graph.answer_in(one.state, j)
    alone = node.answers[j]
    if then is None:
        if alone is not None:
            raise ctx.broken("independent_commute", f"{_after(node)}, {first} disables {second}, though their "
                             "footprints make them independent")
        return
    if alone is None:
        raise ctx.broken("independent_commute", f"{_after(node)}, {first} enables {second}, though their "
                         "footprints make them independent")
    back = graph.answer_in(alone.state, i)
    if back is None:
        raise ctx.broken("independent_commute", f"{_after(node)}, {second} disables {first}, though their footprints "
                         "make them independent")
    if then.key != back.key:
        raise ctx.broken("independent_commute", f"{_after(node)}, {first} and {second} (independent by their "
                         "footprints) reach different states in the two orders")
    if judged is not None and not any(judged(name) for _, name, _ in one.records + then.records):
        return  # no safety check reads what either order recorded
    start = len(node.order)
    forward = _extended(_extended(node.history, start, one.records), start + 1, then.records)
    backward = _extended(_extended(node.history, start, alone.records), start + 1, back.records)
    ahead, behind = ctx.violated_in(forward), ctx.violated_in(backward)
    if ahead != behind:
        raise ctx.broken("independent_commute", f"{_after(node)}, {first} ; {second} violates "
                         f"{', '.join(sorted(ahead)) or 'nothing'} and {second} ; {first} "
                         f"{', '.join(sorted(behind)) or 'nothing'}, though their footprints make them independent: "
                         f"declare what those checks read of a step among the reads of {first} and {second}")


# -- the law ``state_invariants`` --------------------------------------------------------------------------------


def state_law(ctx: LawContext, graph: Reachable) -> None:
    """Each safety check's state (or step) predicate and its history check agree: along every order to a state
    within the depth, the predicate holds in some state (or step) the order passes exactly when the history check
    finds a violation."""
    names = {name for name, _ in (*graph.predicates, *graph.transitions)}
    for node in graph.nodes:
        by_history = ctx.violated_in(node.history) & names
        if by_history != node.judged:
            more, fewer = sorted(by_history - node.judged), sorted(node.judged - by_history)
            raise ctx.broken("state_invariants", f"after {_text(node.order)} the history checks find "
                             f"{', '.join(more) or 'nothing more'} and the state and step predicates "
                             f"{', '.join(fewer) or 'nothing more'}: a predicate and its check disagree")
    steps = {name for name, _ in graph.transitions}
    for node in graph.nodes if steps else ():  # every step out of every state, into a state seen or not
        before = ctx.violated_in(node.history) & steps
        for position, answer in node.answers.items():
            if answer is None:
                continue
            after = _extended(node.history, len(node.order), answer.records)
            by_history = (ctx.violated_in(after) & steps) - before
            by_step = graph.judge_step(node.state, answer.state) - before
            if by_history != by_step:
                raise ctx.broken("state_invariants", f"the step {ctx.alphabet[position]} after {_text(node.order)}: "
                                 f"the history checks find {', '.join(sorted(by_history)) or 'nothing'} and the "
                                 f"step predicates {', '.join(sorted(by_step)) or 'nothing'}: a predicate and its "
                                 "check disagree")
