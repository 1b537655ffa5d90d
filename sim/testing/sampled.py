"""The laws checked on orders Hypothesis draws (and shrinks), and on a bounded walk from the empty order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from hypothesis import given
from hypothesis import strategies as st

from sim.core.history import History
from sim.core.machine import drive
from sim.testing.context import FUTURE_EVENTS_MAX, ORDER_EVENTS_MAX, ORDERS_KEPT_PER_KEY, PAIRS_CHECKED_MAX, _text
from sim.testing.context import LawContext as _Context


def _deterministic(ctx: _Context) -> None:
    @ctx.settings
    @given(ctx.orders())
    def law(order):
        one, two = ctx.replay(order), ctx.replay(order)
        if (one.history.to_jsonl(), one.skipped, one.end) != (two.history.to_jsonl(), two.skipped, two.end):
            raise ctx.broken("deterministic", f"{_text(order)} replayed twice gave two runs")

    law()


def _deletion(ctx: _Context) -> None:
    @ctx.settings
    @given(ctx.orders(), st.integers(min_value=0))
    def law(order, which):
        valid = ctx.replay(order).valid_order()
        if not valid:
            return
        shorter = valid[:which % len(valid)] + valid[which % len(valid) + 1:]
        try:
            ctx.replay(shorter)
        except Exception as error:  # noqa: BLE001 - any failure breaks the law
            raise ctx.broken("deletion", f"{_text(shorter)} (from {_text(valid)}) failed: {error!r}") from error

    law()


def _machine_replay(ctx: _Context) -> None:
    family = ctx.family

    @ctx.settings
    @given(ctx.orders(), st.integers(min_value=0, max_value=ORDER_EVENTS_MAX))
    def law(order, split):
        machine = family.machine(ctx.base, ctx.protocol)
        assert machine is not None  # check_family asks this law only of a family with a machine
        replayed, driven = ctx.replay(order), drive(machine, order)
        if driven.history.to_jsonl() != replayed.history.to_jsonl() or driven.skipped != replayed.skipped:
            raise ctx.broken("machine_replay", f"{_text(order)}: the machine and the replay disagree")
        split = min(split, len(order))
        head = ctx.replay(order[:split])
        resumed = drive(machine, order[split:], family.final_state(head), head.history, start=split)
        if resumed.history.to_jsonl() != replayed.history.to_jsonl():
            raise ctx.broken("machine_replay", f"{_text(order)} resumed after {split} events differs from its replay")

    law()


def _enabled_exact(ctx: _Context) -> None:
    family = ctx.family

    @ctx.settings
    @given(ctx.orders())
    def law(order):
        valid = ctx.replay(order).valid_order()
        head = ctx.replay(valid)
        machine = family.machine(ctx.base, ctx.protocol)
        assert machine is not None  # check_family asks this law only of a family with a machine
        state = family.final_state(head)
        listed = machine.enabled(state, ctx.alphabet)
        asked = [i for i, event in enumerate(ctx.alphabet) if machine.why_not(state, event) is None]
        if listed != asked:
            raise ctx.broken("enabled_exact", f"after {_text(valid)} the machine's enabled() lists other events "
                             "than its guard lets through")
        stepped = [(i, machine.key(machine.advance(state, ctx.alphabet[i]))) for i in asked]
        if [(i, machine.key(after)) for i, after in machine.successors(state, ctx.alphabet)] != stepped:
            raise ctx.broken("enabled_exact", f"after {_text(valid)} the machine's successors() gives other events "
                             "or other states than its guard and advance()")
        for event in ctx.alphabet:
            allowed = machine.why_not(state, event) is None
            taken = not ctx.replay(valid + (event,)).last_skipped
            if not machine.drives_replay and allowed and not taken:
                raise ctx.broken("enabled_exact", f"after {_text(valid)} the guard lets through an event the "
                                 f"replay skips: {event}")
            if not machine.drives_replay:
                continue  # its events strike in the run's order, not the list's: it may refuse one a list takes
            if allowed != taken:
                what = "lets through an event the replay skips" if allowed else "refuses an event the replay takes"
                raise ctx.broken("enabled_exact", f"after {_text(valid)} the guard {what}: {event}")

    law()



@dataclass
class _Node:
    """A state reached by an order, as the law sees it."""

    order: tuple[Any, ...]
    key: Any
    violated: frozenset[str]
    state: Any = None  # the machine state (machine families)
    history: Any = None  # the history so far (machine families)


def _child(ctx: _Context, node: _Node, event: Any) -> tuple[_Node | None, tuple]:
    """The node after one more event (None if it is skipped) and what the event showed: its records'
    actors, names and verdicts, and the safety invariants newly violated."""
    order = node.order + (event,)
    if ctx.machine is None:
        run = ctx.replay(order)
        if run.last_skipped:
            return None, ("skipped",)
        before = len(ctx.replay(node.order).history)
        shown = tuple((e.actor, e.event, e.get("verdict")) for e in list(run.history)[before:])
        violated = frozenset(ctx.violated(run))
        return _Node(order, ctx.family.state_key(run), violated), (shown, violated - node.violated)
    if ctx.machine.why_not(node.state, event) is not None:
        return None, ("skipped",)
    state, records = ctx.machine.step(node.state, event)
    history = History(node.history)
    for actor, name, fields in records:
        history.append(len(node.order), actor, name, **fields)
    violated = frozenset(v.invariant for v in ctx.family.check(history).safety_violations)
    shown = tuple((actor, name, fields.get("verdict")) for actor, name, fields in records)
    return _Node(order, ctx.machine.key(state), violated, state, history), (shown, violated - node.violated)


def _walk(ctx: _Context, group: Callable[[_Node], Any] | None = None) -> list[list[_Node]]:
    """Nodes grouped by depth and ``group`` (default: state key and invariants violated), breadth first from
    the empty order, bounded; the groups of more than one node."""
    if ctx.machine is None:
        root = _Node((), None, frozenset())
    else:
        state = ctx.machine.initial()
        root = _Node((), ctx.machine.key(state), frozenset(), state, History())
    groups: list[list[_Node]] = []
    frontier, steps = [root], 0
    for _ in range(ctx.walk_depth):
        layer: dict[Any, list[_Node]] = {}
        for node in frontier:
            for event in ctx.alphabet:
                if steps >= ctx.steps_max:
                    break
                steps += 1
                child, _ = _child(ctx, node, event)
                if child is not None:
                    kept = layer.setdefault((child.key, child.violated) if group is None else group(child), [])
                    if len(kept) < ORDERS_KEPT_PER_KEY:
                        kept.append(child)
        groups += [nodes for nodes in layer.values() if len(nodes) > 1]
        frontier = [nodes[0] for nodes in layer.values()]
    return groups


def _equal_futures(ctx: _Context) -> None:
    """Pairs of nodes with one key must answer every event alike, and their successors must again share a
    key -- followed for ``FUTURE_EVENTS_MAX`` events (a bounded bisimulation), within a budget of steps."""
    by_states = ctx.judged_by_states()
    # judged by state predicates, the search merges on the key alone (what was violated on the way is the
    # states' own): pairs are grouped by key, and what they must show alike is the records, not new violations
    groups = _walk(ctx, (lambda node: node.key) if by_states else None)
    pairs = [(nodes[0], other, 0) for nodes in groups for other in nodes[1:]][:PAIRS_CHECKED_MAX]
    steps = 0
    while pairs and steps < ctx.steps_max:
        first, other, depth = pairs.pop(0)
        for event in ctx.alphabet:
            steps += 2
            (one, shown_one), (two, shown_two) = _child(ctx, first, event), _child(ctx, other, event)
            if by_states:
                shown_one, shown_two = shown_one[:1], shown_two[:1]
            if shown_one != shown_two or (one is None) != (two is None) or (
                    one is not None and two is not None and one.key != two.key):
                raise ctx.broken("equal_keys_equal_futures",
                                 f"{_text(first.order)} and {_text(other.order)} have one state key, but "
                                 f"{event} after them differs")
            if one is not None and two is not None and depth + 1 < FUTURE_EVENTS_MAX:
                pairs.append((one, two, depth + 1))


def _symmetric(ctx: _Context) -> None:
    declared = ctx.family.symmetry(ctx.workload)
    assert declared is not None  # check_family calls this law only for a declared symmetry
    canonical, maps = declared.canonical, declared.permutations

    @ctx.settings
    @given(ctx.orders(), st.integers(min_value=0, max_value=max(0, len(maps) - 1)))
    def law(order, which):
        renamed = [maps[which](event) for event in order]
        one, two = ctx.replay(order), ctx.replay(renamed)
        if one.skipped != two.skipped:
            differs = "skips other events"
        elif ctx.violated(one) != ctx.violated(two):
            differs = "violates other invariants"
        elif canonical(ctx.key(one)) != canonical(ctx.key(two)):
            differs = "ends in another orbit (another canonical key)"
        else:
            return
        raise ctx.broken("symmetric", f"{_text(order)} renamed to {_text(renamed)} {differs}")

    if maps:  # a symmetry of one part renames nothing: only the orbit futures are left to check
        law()
    _orbit_futures(ctx, canonical, ((lambda event: event),) + tuple(maps))


def _orbit_futures(ctx: _Context, canonical: Callable[[Any], Any], maps: tuple[Callable[[Any], Any], ...]) -> None:
    """Pairs of nodes with one canonical key must answer every event alike up to one renaming of the second's
    events (the same skip and new violations, children again with one canonical key), followed for
    ``FUTURE_EVENTS_MAX`` events within a budget of steps."""
    groups = _walk(ctx, lambda node: (canonical(node.key), node.violated))
    pairs = [(nodes[0], other, 0) for nodes in groups for other in nodes[1:]][:PAIRS_CHECKED_MAX]
    steps = 0
    while pairs and steps < ctx.steps_max:
        first, other, depth = pairs.pop(0)
        answers = [_child(ctx, first, event) for event in ctx.alphabet]
        steps += len(answers)
        matched = None
        for rename in maps:
            children = []
            for event, (one, shown_one) in zip(ctx.alphabet, answers):
                steps += 1
                two, shown_two = _child(ctx, other, rename(event))
                if (one is None) != (two is None) or shown_one[-1] != shown_two[-1] or (
                        one is not None and two is not None and canonical(one.key) != canonical(two.key)):
                    break
                children.append((one, two))
            else:
                matched = children
                break
        if matched is None:
            raise ctx.broken("symmetric", f"{_text(first.order)} and {_text(other.order)} have one canonical key, "
                             "but no renaming makes the events after them answer alike")
        if depth + 1 < FUTURE_EVENTS_MAX:
            pairs += [(one, two, depth + 1) for one, two in matched if one is not None and two is not None]


def _parse_event(ctx: _Context) -> None:
    @ctx.settings
    @given(ctx.orders())
    def law(order):
        for event in list(order) + ctx.alphabet:
            back = ctx.family.parse_event(ctx.base, str(event))
            if back != event:
                raise ctx.broken("parse_event", f"{event!s} reads back as {back!s}")

    law()

