"""The laws every protocol family keeps, as a suite a family's author runs on their own family.

    >>> from sim.testing import check_family                        # doctest: +SKIP
    >>> check_family(MY_FAMILY, my_workload)                          # doctest: +SKIP

Each law is what a part of fencesim relies on; a family that breaks one gets
wrong answers from that part, silently.  :func:`check_family` runs them all
(Hypothesis draws and shrinks the orders) and raises :class:`LawBroken`
naming the law, the protocol and the smallest orders that show it:

1. ``deterministic`` -- an order replays to the same history bytes, skipped
   events and end every time (sweeps, shrinking and exported counterexamples
   rely on it);
2. ``deletion`` -- deleting any event of a valid order still gives a run
   (shrinking deletes events);
3. ``machine_replay`` -- for a family with a :meth:`~sim.core.family.Family.machine`:
   driving the machine directly gives the replay's history bytes and
   skipped events, and continuing from the state a prefix ended in gives the
   rest of the run (exhaustive search drives the machine, fuzzing replays);
4. ``enabled_exact`` -- for a family with a machine: the machine's guard lets
   an event through exactly when the replay takes it (an event the guard
   refuses is never tried by exhaustive search, so a wrong refusal hides
   behaviour);
5. ``independent_commute`` -- two events the family calls independent, both
   taking effect, reach the same state key and violations in either order,
   and neither disables the other (exhaustive search tries one order);
6. ``equal_keys_equal_futures`` -- orders with the same state key (found by
   a bounded walk that keeps several orders per key) answer every next
   event alike -- the same skip, records, verdicts and new violations --
   and reach equal keys again, followed for a few events (exhaustive search
   merges them: an unsound key makes "proved absent" wrong);
7. ``symmetric`` -- for a workload whose family declares interchangeable
   parts (:meth:`~sim.core.family.Model.symmetry`): renaming the parts in an
   order skips the same events, violates the same invariants and ends in the
   same orbit (the same canonical key); and orders with one canonical key
   answer every next event alike up to some renaming -- the same skip and new
   violations, children again in one orbit -- followed for a few events
   (``explore --symmetry`` keeps one state per orbit);
8. ``parse_event`` -- ``parse_event(str(e)) == e`` for every event
   (``--resume`` and baselines read orders back from text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.core.family import Family, Replay
from sim.core.history import History
from sim.core.knobs import Protocol
from sim.core.machine import drive
from sim.core.workload import Workload

#: Defaults of the suite: examples Hypothesis draws per law, the longest order drawn, the walk that finds
#: orders with equal state keys (its depth and the replays it may spend), continuations tried per pair.
EXAMPLES_DEFAULT = 60
ORDER_EVENTS_MAX = 16
WALK_DEPTH_DEFAULT = 4
ORDERS_KEPT_PER_KEY = 3
PAIRS_CHECKED_MAX = 400
FUTURE_EVENTS_MAX = 3
#: Steps the walk and the pairs may take: driving the machine one event, or one replay without it.
MACHINE_STEPS_MAX = 60_000
REPLAY_STEPS_MAX = 1_500

LAWS = ("deterministic", "deletion", "machine_replay", "enabled_exact", "independent_commute",
        "equal_keys_equal_futures", "symmetric", "parse_event")


class LawBroken(AssertionError):
    """A family breaks one of the laws (the message names it, the protocol and the orders)."""

    def __init__(self, law: str, protocol: str, detail: str):
        self.law, self.protocol = law, protocol
        super().__init__(f"law {law!r} broken under {protocol}: {detail}")


def check_family(family: Family, workload: Workload, protocols: Sequence[str | Protocol] | None = None,
                 laws: Sequence[str] = LAWS, examples: int = EXAMPLES_DEFAULT,
                 walk_depth: int = WALK_DEPTH_DEFAULT) -> dict[str, str]:
    """Check every law on ``workload`` under each protocol (default: the family's presets).

    Returns law -> ``"held"`` or ``"not applicable: why"``; raises :class:`LawBroken` on the first law
    broken.  Deterministic: Hypothesis is derandomized and the walk is seeded.
    """
    unknown = sorted(set(laws) - set(LAWS))
    if unknown:
        raise ValueError(f"unknown law(s) {', '.join(unknown)}; laws: {', '.join(LAWS)}")
    chosen = [family.parse_protocol(p) for p in (protocols or family.presets)]
    has_machine = family.machine(workload.base, chosen[0]) is not None
    outcome: dict[str, str] = {}
    for law in laws:
        if law in ("machine_replay", "enabled_exact") and not has_machine:
            outcome[law] = "not applicable: the family has no machine (every candidate is replayed)"
            continue
        if law == "symmetric" and family.symmetry(workload) is None:
            outcome[law] = "not applicable: the family declares no interchangeable parts in this workload"
            continue
        for protocol in chosen:
            _LAW_FUNCTIONS[law](_Context(family, workload, protocol, examples, walk_depth))
        outcome[law] = "held"
    return outcome


class _Context:
    """One (family, workload, protocol) under test, with the order strategy the laws draw from."""

    def __init__(self, family: Family, workload: Workload, protocol: Protocol, examples: int, walk_depth: int):
        self.family, self.workload, self.protocol = family, workload, protocol
        self.base = workload.base
        self.alphabet = list(family.alphabet(workload))
        self.examples, self.walk_depth = examples, walk_depth
        self.machine = family.machine(self.base, protocol)
        self.steps_max = REPLAY_STEPS_MAX if self.machine is None else MACHINE_STEPS_MAX
        self.settings = settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                                 suppress_health_check=list(HealthCheck))

    def replay(self, events: Sequence[Any]) -> Replay:
        return self.family.replay(self.base, self.protocol, tuple(events))

    def key(self, replay: Replay) -> Any:
        """The state key exhaustive search merges on: the machine's, or the family's for a replay."""
        if self.machine is None:
            return self.family.state_key(replay)
        return self.machine.key(self.family.final_state(replay))

    def violated(self, replay: Replay, since: int = 0) -> set[str]:
        return {v.invariant for v in self.family.check(replay.history).safety_violations
                if v.event_index is None or v.event_index >= since}

    def broken(self, law: str, detail: str) -> LawBroken:
        return LawBroken(law, self.protocol.label, detail)

    def orders(self) -> st.SearchStrategy:
        """Orders the family's own generator draws, edited by inserting and deleting events."""
        family, workload, alphabet = self.family, self.workload, self.alphabet

        @st.composite
        def edited(draw):
            order = list(family.generate(workload, draw(st.integers(min_value=0, max_value=10_000))))
            for _ in range(draw(st.integers(min_value=0, max_value=4))):
                if order and draw(st.booleans()):
                    del order[draw(st.integers(min_value=0, max_value=len(order) - 1))]
                else:
                    order.insert(draw(st.integers(min_value=0, max_value=len(order))), draw(st.sampled_from(alphabet)))
            return order[:ORDER_EVENTS_MAX]

        return edited()


def _text(events: Sequence[Any]) -> str:
    return "[" + ", ".join(str(e) for e in events) + "]"


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
        state = family.final_state(head)
        for event in ctx.alphabet:
            allowed = machine.why_not(state, event) is None
            taken = not ctx.replay(valid + (event,)).last_skipped
            if allowed != taken:
                what = "lets through an event the replay skips" if allowed else "refuses an event the replay takes"
                raise ctx.broken("enabled_exact", f"after {_text(valid)} the guard {what}: {event}")

    law()


def _independent_commute(ctx: _Context) -> None:
    family = ctx.family
    pairs = [(a, b) for a in ctx.alphabet for b in ctx.alphabet
             if a != b and family.independent_under(ctx.protocol, a, b)]
    if not pairs:
        return

    @ctx.settings
    @given(ctx.orders(), st.sampled_from(pairs))
    def law(order, pair):
        first, second = pair
        valid = ctx.replay(order).valid_order()
        alone = [not ctx.replay(valid + (e,)).last_skipped for e in pair]
        if not all(alone):
            return
        one, two = ctx.replay(valid + (first, second)), ctx.replay(valid + (second, first))
        n = len(valid)
        if {n, n + 1} & (one.skipped | two.skipped):
            raise ctx.broken("independent_commute",
                             f"after {_text(valid)}, one of {first} / {second} disables the other")
        if family.state_key(one) != family.state_key(two) or ctx.violated(one) != ctx.violated(two):
            raise ctx.broken("independent_commute", f"after {_text(valid)}, {first} and {second} do not commute")

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
    pairs = [(nodes[0], other, 0) for nodes in _walk(ctx) for other in nodes[1:]][:PAIRS_CHECKED_MAX]
    steps = 0
    while pairs and steps < ctx.steps_max:
        first, other, depth = pairs.pop(0)
        for event in ctx.alphabet:
            steps += 2
            (one, shown_one), (two, shown_two) = _child(ctx, first, event), _child(ctx, other, event)
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


_LAW_FUNCTIONS: dict[str, Callable[[_Context], None]] = {
    "deterministic": _deterministic, "deletion": _deletion, "machine_replay": _machine_replay,
    "enabled_exact": _enabled_exact, "independent_commute": _independent_commute,
    "equal_keys_equal_futures": _equal_futures, "symmetric": _symmetric, "parse_event": _parse_event,
}
