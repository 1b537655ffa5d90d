"""Expanding one state of exhaustive search: every event tried, each successor judged.

Three ways, the fastest the family allows (each gives the same successors
and the same violations):

* **states** -- the family has a machine and every safety check has a
  ``state`` predicate: a successor costs one guard and one
  :meth:`~sim.core.machine.Machine.advance`, and the predicates judge it; no
  history record is built or read.
* **folds** -- a machine, and every safety check is a fold: an entry keeps its
  state and the checks' carries, and a successor costs one guard, one step
  and one fold step per check over the records it produced.
* **replay** -- otherwise every successor is a replay of its whole order.
  One entry can then cost seconds (a replay per event of the alphabet), so
  the search's deadline is looked at before each replay: an entry expanded
  past it is cut short, and the search, seeing the deadline passed, keeps
  none of it.

An entry of a layer is ``(number, node, found)``: its state's number in the
visited set, what expanding it needs (the state and carries, or its order),
and the invariants already violated on the way to it.
"""

from __future__ import annotations

import inspect
from itertools import compress
from typing import Any, Callable, Sequence

from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.findings import findings_of
from sim.core.history import Event, plain_time
from sim.core.knobs import Protocol
from sim.core.machine import Machine
from sim.core.workload import Workload
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.layers import Codec
from sim.search.reduction import Independence

#: One event taken in one state, as a plain tuple (built for every successor, so no object is made):
#: ``(event, found, key, node, visible)`` -- its alphabet position, the invariants violated so far on the way
#: through it (in ``states`` mode the parent's, judged when the state is new), the merge key's state part, what
#: expanding it needs, whether it shows something a safety check reads.  A NamedTuple of these fields made an
#: exhaustive search 3 to 8% slower (the public models, the workspace family): building one is a Python call.
Successor = tuple[int, frozenset[str], Any, Any, bool]


#: No invariant violated (one value, shared).
NONE_FOUND: frozenset[str] = frozenset()


class Expansion:
    """What expanding an entry needs, for one (family, workload, protocol) (sent once to each worker)."""

    def __init__(self, family: Family, workload: Workload, protocol: Protocol, events: list, *, accelerate: bool,
                 canonical: Callable[[Any], Any] | None, prefix: tuple = (), findings: bool = False):
        self.family, self.workload, self.protocol, self.events = family, workload, protocol, events
        self.canonical = canonical
        safety = [spec for spec in family.checks if spec.safety]
        machine = family.machine(workload.base, protocol) if accelerate else None
        self.predicates = [(spec.name, spec.state) for spec in safety if spec.state is not None]
        #: The checks' predicates on steps (before, after), asked of every successor (states mode).
        self.transitions = [(spec.name, spec.transition) for spec in safety if spec.transition is not None]
        predicated = sum(1 for spec in safety if spec.state is not None or spec.transition is not None)
        for spec in safety:
            _takes(spec.name, "state", spec.state, ("state",))
            _takes(spec.name, "transition", spec.transition, ("before", "after"))
        folds = [spec.fold for spec in safety]
        #: The machine judges its states itself (:meth:`~sim.core.machine.Machine.judge`), by invariant or finding.
        self.judges = machine is not None and type(machine).judge is not Machine.judge
        if machine is not None and safety and (self.judges or predicated == len(safety)):
            self.mode = "states"
        elif machine is not None and all(f is not None for f in folds):
            self.mode = "folds"
        else:
            self.mode, machine = "replay", None
        self.machine = machine
        #: Violations are named by finding (``invariant @ where``), not invariant: except where the invariants
        #: are the states' own predicates, which say whether, not where.
        self.by_finding = findings and (self.mode != "states" or self.judges)
        self.folds = [f for f in folds if f is not None] if self.mode == "folds" else []
        self.readers = _Readers(self.folds)
        self.resolved = [(a, *machine.resolve(a)) for a in events] if machine is not None else []
        # A step predicate reads the whole step, which no footprint declares: with one, every step is taken (no
        # sleep set or persistent set skips the step of an event independent of the one before it).
        reads = accelerate and not self.transitions
        prints = [family.footprint(workload, protocol, a) for a in events] if reads else [None] * len(events)
        self.independence = Independence(prints)
        self.own_enabled = machine is not None and type(machine).enabled is not Machine.enabled
        self.own_successors = machine is not None and type(machine).successors is not Machine.successors
        #: The events that choose one of several initial states (:meth:`~sim.core.machine.Machine.starts`), as a
        #: mask of alphabet positions (0: the machine has one initial state).
        self.starting = sum(1 << i for i, event in enumerate(events) if machine.starts(event)) if machine else 0
        # the state is its own key and no orbit is asked for: no call per successor to compute it
        self.plain_key = machine is not None and canonical is None and type(machine).key is Machine.key
        self.watching = False  # set by a search following persistent sets (visibility is then judged)
        self.prejudge = False  # set in a worker process: a machine that judges states judges each successor there
        #: The search starts after these events (those that take effect; the rest have none), at depth 0.
        self.prefix = tuple(prefix)
        #: The search's deadline, set by the search (a replayed entry stops trying events once it has passed).
        self.deadline: Deadline = NO_DEADLINE
        self._root, self._root_found = self._start()

    def _start(self) -> tuple[Any, frozenset[str]]:
        """The root entry's node and the invariants already violated on the way to it (after the prefix)."""
        if self.mode == "replay":
            if not self.prefix:
                return (), NONE_FOUND
            replay = self.family.replay(self.workload.base, self.protocol, self.prefix)
            return replay.valid_order(), self.names(self.family.check(replay.history).safety_violations)
        machine = self.machine
        assert machine is not None
        if self.mode == "states":
            if not self.transitions:
                state = machine.state_after(self.prefix)
                return state, self.judge(state)
            state, stepped = machine.initial(), NONE_FOUND
            for action in self.prefix:  # the steps of the prefix are judged too
                if machine.why_not(state, action) is None:
                    after = machine.advance(state, action)
                    stepped, state = self.stepped(state, after, stepped), after
            return state, self.judge(state) | stepped
        state = machine.initial()
        carries, length, found = tuple(fold.start for fold in self.folds), 0, NONE_FOUND
        for depth, action in enumerate(self.prefix):
            if machine.why_not(state, action) is not None:
                continue
            state, records = machine.step(state, action)
            for actor, event_name, fields in records:
                length += 1
                readers = self.readers[event_name]
                if readers:
                    carries, found = self.feed(readers, carries, found,
                                               Event(length - 1, plain_time(depth), actor, event_name, fields))
        return (state, carries, length), found

    @property
    def fusable(self) -> bool:
        """Whether a layer may be expanded by :mod:`sim.search.fused`: states judged by themselves or by the checks'
        folds, the state its own key, no persistent set followed, in the search's process."""
        return (self.mode != "replay" and self.plain_key and not self.watching and not self.prejudge
                and not self.transitions)

    def successors_function(self) -> Callable[[Any, Sequence[Any]], list[tuple[int, Any]]]:
        """``successors(state, events)``: the machine's own, or its enabled events (:meth:`enabled_of`: the
        guards in one call where it offers ``enabled``) each advanced."""
        machine = self.machine
        assert machine is not None
        if self.own_successors:
            return machine.successors
        enabled_of, advance = self.enabled_of, machine.advance

        def successors(state: Any, events: Sequence[Any]) -> list[tuple[int, Any]]:
            return [(i, advance(state, events[i])) for i in enabled_of(state)]

        return successors

    def root(self) -> Any:
        return self._root

    def layer_codec(self, visited: Any) -> Codec | None:
        """How a layer of this search encodes its entries: where states are judged (``states`` mode) and the machine
        rebuilds them by order (:attr:`~sim.core.machine.Machine.rebuilt_by_order`), as their numbers and verdicts,
        each state rebuilt from the root along the order ``visited`` traced for it; else None (pickled whole)."""
        machine = self.machine
        if machine is None or self.mode != "states" or not machine.rebuilt_by_order:
            return None
        root, events, along, order = self._root, self.events, machine.along, visited.order

        def shrink(chunk: list[Any]) -> list[Any]:
            return [(number, found) for number, _, found in chunk]

        def grow(chunk: list[Any]) -> list[Any]:
            return [(number, along(root, order(number, events)), found) for number, found in chunk]

        return shrink, grow

    def names(self, violations: Any) -> frozenset[str]:
        """The names the search gives violations: their invariants, or their findings (``by_finding``)."""
        if not self.by_finding:
            return frozenset(v.invariant for v in violations)
        return frozenset(findings_of(self.family, self.workload.base, violations))

    def root_found(self) -> frozenset[str]:
        return self._root_found

    def key(self, state_key: Any) -> Any:
        return state_key if self.canonical is None else self.canonical(state_key)

    def expand(self, node: Any, found: frozenset[str], depth: int, asleep: int) -> tuple[list[Successor], int]:
        """Every event not asleep that takes effect in the node's state, each as a :data:`Successor` ``(event,
        found, key, node, visible)``, and how many events slept."""
        if self.mode == "states":
            return self._by_states(node, found, asleep)
        if self.mode == "folds":
            return self._by_folds(node, found, depth, asleep)
        return self._by_replay(node, asleep)

    def _by_states(self, state: Any, found: frozenset[str], asleep: int) -> tuple[list[Successor], int]:
        machine, key_of, events = self.machine, self.key, self.events
        assert machine is not None
        advance, machine_key, out = machine.advance, machine.key, []
        plain = self.plain_key
        if self.own_successors and not self.prejudge:  # the machine's own Next: every successor in one call
            if plain:
                out = [(p, found, after, after, False) for p, after in machine.successors(state, events)
                       if not asleep >> p & 1]
            else:
                out = [(p, found, key_of(machine_key(after)), after, False)
                       for p, after in machine.successors(state, events) if not asleep >> p & 1]
        else:
            for position in self.enabled_of(state):
                if asleep >> position & 1:
                    continue
                after = advance(state, events[position])
                if self.prejudge:
                    machine.judge(after, self.by_finding)  # kept on the state, which goes back to the parent with it
                out.append((position, found, after if plain else key_of(machine_key(after)), after, False))
        slept = bin(asleep).count("1")
        if self.transitions:  # a step's own violations, beside the state's: the search records them as it takes it
            out = [(p, self.stepped(state, n, f), k, n, v) for p, f, k, n, v in out]
        if self.watching:  # the persistent-set condition asks which successors change a predicate's value
            before = self.judge(state)
            out = [(p, f, k, n, self.judge(n) != before) for p, f, k, n, _ in out]
        return out, slept

    def enabling(self, node: Any, enabled: int) -> Callable[[int], int] | None:
        """For persistent sets in a node's state: the events that may enable each disabled event, from the parts
        the machine says disable it (None: the footprints' reads are all the search knows)."""
        machine = self.machine
        if machine is None or type(machine).disabled_by is Machine.disabled_by:
            return None
        state = node if self.mode == "states" else node[0]
        independence, events = self.independence, self.events

        def enabling(event: int) -> int:
            parts = machine.disabled_by(state, events[event])
            if parts is None:
                return independence.enablers[event]
            mask = 0
            for part in parts:
                mask |= independence.writers(part)
            return mask & ~(1 << event)

        return enabling

    def judge(self, state: Any) -> frozenset[str]:
        """The state predicates' invariants violated in ``state`` (``states`` mode), or the machine's own judgement."""
        if self.judges:
            assert self.machine is not None
            return self.machine.judge(state, self.by_finding) or NONE_FOUND
        bad = [name for name, violated in self.predicates if violated(state)]
        return frozenset(bad) if bad else NONE_FOUND

    def stepped(self, before: Any, after: Any, found: frozenset[str]) -> frozenset[str]:
        """``found`` and the invariants the step from ``before`` to ``after`` violates by the checks' transition
        predicates (``found`` itself, the same object, when it violates none)."""
        bad = [name for name, violated in self.transitions if violated(before, after)]
        return found | frozenset(bad) if bad else found

    def judge_all(self, states: Sequence[Any]) -> list[frozenset[str]] | None:
        """:meth:`judge` of each state, in order, or None when none violates anything: each state predicate
        mapped over the states at once (no list or set is built for a state that violates nothing)."""
        if self.judges:
            verdicts = [self.judge(state) for state in states]
            return verdicts if any(verdicts) else None
        out: list[frozenset[str]] | None = None
        for name, violated in self.predicates:
            hits = list(map(violated, states))
            if not any(hits):
                continue
            if out is None:
                out = [NONE_FOUND] * len(states)
            for i in compress(range(len(states)), hits):
                out[i] = out[i] | {name}
        return out

    def enabled_of(self, state: Any) -> list[int]:
        machine = self.machine
        assert machine is not None
        if self.own_enabled:
            return machine.enabled(state, self.events)
        return [i for i, (action, why_not, _) in enumerate(self.resolved) if why_not(state, action) is None]

    def _by_folds(self, node: Any, found: frozenset[str], depth: int, asleep: int) -> tuple[list[Successor], int]:
        state, carries, length = node
        machine, readers_of, key_of = self.machine, self.readers, self.key
        assert machine is not None
        time = plain_time(depth - 1 + len(self.prefix))
        out, resolved = [], self.resolved
        for position in self.enabled_of(state):
            if asleep >> position & 1:
                continue
            action, _, step = resolved[position]
            after, records = step(state, action)
            fed, shown, index, visible = carries, found, length, False
            for actor, event_name, fields in records:
                readers = readers_of[event_name]
                index += 1
                if readers:
                    visible = True
                    fed, shown = self.feed(readers, fed, shown, Event(index - 1, time, actor, event_name, fields))
            out.append((position, shown, key_of(machine.key(after)), (after, fed, index), visible))
        return out, asleep.bit_count()

    def feed(self, readers: list, carries: tuple, shown: frozenset[str], event: Event) -> tuple[tuple,
                                                                                                 frozenset[str]]:
        """One history record, fed to each safety fold that reads it (``readers``): the folds' carries after it,
        and ``shown`` with what it violates (the same object when it violates nothing new).  A field recorded as
        None is left out of the event, as a history leaves it out."""
        if None in event.fields.values():
            event.fields = {k: v for k, v in event.fields.items() if v is not None}
        fed = list(carries)
        for slot, invariant, feed in readers:
            fed[slot], violations = feed(fed[slot], event)
            if not violations:
                continue
            if self.by_finding:
                shown = shown | self.names(violations)
            elif invariant not in shown:
                shown = shown | {invariant}
        return tuple(fed), shown

    def _by_replay(self, order: tuple, asleep: int) -> tuple[list[Successor], int]:
        family, protocol, base, expired = self.family, self.protocol, self.workload.base, self.deadline.expired
        slept, out = 0, []
        for position, action in enumerate(self.events):
            if expired():
                break
            if asleep >> position & 1:
                slept += 1
                continue
            replay = family.replay(base, protocol, order + (action,))
            if replay.last_skipped:
                continue
            violated = self.names(family.check(replay.history).safety_violations)
            out.append((position, violated, self.key(family.state_key(replay)), order + (action,), True))
        return out, slept


def _takes(check: str, name: str, predicate: Callable[..., bool] | None, parameters: tuple[str, ...]) -> None:
    """A check's predicate can be called as the search calls it, or one line saying what it must take."""
    if predicate is None:
        return
    try:
        inspect.signature(predicate).bind(*parameters)
    except TypeError:
        raise InputError(f"check {check!r}: {name}= must take ({', '.join(parameters)}), but "
                         f"{getattr(predicate, '__qualname__', predicate)!s} takes "
                         f"{inspect.signature(predicate)}") from None
    except ValueError:  # no signature to read (a builtin): called as it is
        return


class _Readers(dict):
    """event name -> (position, invariant, feed) of each safety fold that reads events of that name, filled
    on first lookup (a plain dict lookup afterwards: it is read once per record of every successor)."""

    def __init__(self, folds: list) -> None:
        super().__init__()
        self.folds = folds

    def __missing__(self, event_name: str) -> list:
        readers = self[event_name] = [
            (i, f.name, f.feed) for i, f in enumerate(self.folds) if f.reads_event(event_name)]
        return readers
