"""Expanding a layer in the common case, with nothing built for a successor already seen.

The common case: the family's states are judged by the checks' state
predicates (or by the machine itself), the state is its own key, no orbit is
asked for, no persistent set is followed and the layer is expanded in this
process (:attr:`sim.search.expansion.Expansion.fusable`).  Then one entry
costs one call of the machine's ``successors`` (TLA+'s ``Next`` in one call;
where it has none, its ``enabled`` and an ``advance`` per event) and one call
of the visited set's ``fresh`` (the C table fingerprints and holds every
successor of the entry at once, and gives back the new ones): a successor
already seen costs no Python code, and no per-successor tuple is built.  The
new states are judged, traced and kept :data:`FLUSH_STATES` at a time, each
state predicate mapped over them.  With sleep sets (the family declares
footprints) a successor still costs a few Python operations: whether it was
tried, and where it meets a state found earlier in the same layer.

Where the checks are folds over each step's history records (the workspace
family), :func:`expand_folded` does what the ``folds`` expansion and ``_add``
do in one loop: a successor costs its step, a lookup per record (most records
are read by no check), and the visited set's ``add``, with no tuple built
for it.

The result is the one :meth:`sim.search.exhaustive._Search._add` gives,
successor for successor: the same states numbered in the same order, the
same trace, sleep sets and violations.  Where an entry could reach the state
limit or a memory reading (every :data:`~sim.search.layers.MEMORY_CHECK_EVERY`
states), the states pending are kept and the entry goes through ``_add``
itself, which stops at the exact successor.
"""

from __future__ import annotations

from itertools import compress, repeat
from typing import Any, Iterable

from sim.core.history import Event, plain_time
from sim.search.expansion import NONE_FOUND
from sim.search.layers import MEMORY_CHECK_EVERY

#: The search whose layer is expanded (:class:`sim.search.exhaustive._Search`, which calls this module: named,
#: not imported, so that no import goes back to it).
Search = Any

#: Entries expanded between two looks at the clock for a progress call, and new states judged and kept at once.
PROGRESS_ENTRIES = 256
FLUSH_STATES = 1024

Entry = tuple[int, Any, frozenset[str]]


def expand_fused(search: Search, layer: Iterable[Entry], built: Any, keep: bool, asleep: dict[int, int],
                 found_here: dict[str, list[tuple[Any, ...]]], depth: int) -> None:
    """Expand every entry of ``layer`` into ``built``, as ``_Search._next`` does entry by entry (the module doc):
    sleep sets where the search keeps them, else the loop with nothing per seen successor; where the checks are
    folds, :func:`expand_folded`."""
    if search.expansion.mode == "folds":
        expand_folded(search, layer, built, keep, asleep, found_here, depth)
    elif search.independence is not None:
        _expand_sleeping(search, layer, built, keep, asleep, found_here, depth)
    else:
        _expand_plain(search, layer, built, keep, found_here, depth)


def _timed(search: Search) -> bool:
    """Whether the search's deadline can pass (one that never does is not asked per entry)."""
    return getattr(search.deadline, "end", 0) is not None


def _stop(search: Search, distinct: int) -> int:
    """The first count of distinct states at which ``_add`` would look at a limit: the state limit passed, or
    the next memory reading."""
    stop = search.max_states + 1
    if search.memory_limit:
        stop = min(stop, (distinct // MEMORY_CHECK_EVERY + 1) * MEMORY_CHECK_EVERY)
    return stop


def _expand_plain(search: Search, layer: Iterable[Entry], built: Any, keep: bool,
                  found_here: dict[str, list[tuple[Any, ...]]], depth: int) -> None:
    """No sleep sets: each entry's successors handed to the visited set whole, its new states kept in bulk."""
    result, expansion = search.result, search.expansion
    assert expansion.machine is not None
    successors_of, events, fresh = expansion.successors_function(), expansion.events, search.visited.fresh
    expired, watched, timed = search.deadline.expired, search.progress is not None, _timed(search)
    distinct, generated = result.distinct_states, result.states_generated
    stop, parents = _stop(search, distinct), search.visited.parent
    pending: list[tuple[int, Any]] = []  # new states not yet judged nor kept, in the order numbered
    for done, (number, state, found) in enumerate(layer):
        if timed and expired() and search._stopped():
            break
        if watched and not done % PROGRESS_ENTRIES:
            search._progress_within(depth)
        pairs = successors_of(state, events)
        if distinct + len(pairs) >= stop:  # a limit may be looked at within this entry: successor by successor
            distinct, generated = _one_by_one(search, (number, state, found), pairs, 0, built, keep, found_here,
                                              depth, pending, (distinct, generated))
            if not result.complete:
                break
            stop = _stop(search, distinct)
            continue
        generated += len(pairs)
        new = fresh(pairs if type(pairs) is list else list(pairs))
        if new:
            parents.extend([number] * len(new))
            pending += new
            distinct += len(new)
            if len(pending) >= FLUSH_STATES:
                _flush(search, pending, built, keep, found_here)
    _flush(search, pending, built, keep, found_here)
    result.distinct_states, result.states_generated = distinct, generated


def _one_by_one(search: Search, entry: Entry, pairs: list[tuple[int, Any]], mask: int, built: Any, keep: bool,
                found_here: dict[str, list[tuple[Any, ...]]], depth: int, pending: list[tuple[int, Any]],
                counts: tuple[int, int]) -> tuple[int, int]:
    """An entry whose successors may reach a limit: the states pending kept, then the entry given to
    ``_Search._add`` successor by successor (it stops at the exact one); the counts of distinct and generated
    states after it."""
    number, _, found = entry
    result = search.result
    _flush(search, pending, built, keep, found_here)
    result.distinct_states, result.states_generated = counts
    search._add(number, found, [(p, found, s, s, False) for p, s in pairs], mask, built, keep, found_here, depth)
    return result.distinct_states, result.states_generated


def _flush(search: Search, pending: list[tuple[int, Any]], built: Any, keep: bool,
           found_here: dict[str, list[tuple[Any, ...]]]) -> None:
    """The states found since the last flush (``(position, state)`` pairs, in the order numbered, their parents
    already traced), then none: their events traced, their judgement (the violations they show first recorded,
    in order) and their layer entries."""
    if not pending:
        return
    visited = search.visited
    first = len(visited.event)
    positions, states = zip(*pending)
    pending.clear()
    visited.event.extend(positions)
    verdicts = search.expansion.judge_all(states)
    if verdicts is not None:
        search.result.violating_states += sum(1 for verdict in verdicts if verdict)
        for child in compress(range(first, first + len(states)), verdicts):
            search._violating(visited.parent[child], visited.event[child], verdicts[child - first], found_here)
    if keep:
        built.extend(zip(range(first, first + len(states)), states, verdicts or repeat(NONE_FOUND)))
    else:
        built.count += len(states)


def _expand_sleeping(search: Search, layer: Iterable[Entry], built: Any, keep: bool, asleep: dict[int, int],
                     found_here: dict[str, list[tuple[Any, ...]]], depth: int) -> None:
    """Sleep sets: each successor's fingerprint held in turn, the events tried so far noted, and a state met
    again in the layer being built given the sleep set its arrivals agree on."""
    result, expansion, visited = search.result, search.expansion, search.visited
    assert expansion.machine is not None and search.independence is not None
    successors_of, events, independent = expansion.successors_function(), expansion.events, \
        search.independence.independent
    own, enabled_of, advance = expansion.own_successors, expansion.enabled_of, expansion.machine.advance
    exact, seen = visited.exact, visited.seen
    add = seen.add if visited.compact else None
    expired, watched, timed = search.deadline.expired, search.progress is not None, _timed(search)
    sleeps, positions = search.asleep, search.positions
    distinct, generated = result.distinct_states, result.states_generated
    stop, parents = _stop(search, distinct), search.visited.parent
    pending: list[tuple[int, Any]] = []  # new states not yet judged nor kept, in the order numbered
    for done, (number, state, found) in enumerate(layer):
        if timed and expired() and search._stopped():
            break
        if watched and not done % PROGRESS_ENTRIES:
            search._progress_within(depth)
        mask = asleep.get(number, 0)
        if not mask:
            pairs = successors_of(state, events)
        elif own:
            pairs = [pair for pair in successors_of(state, events) if not mask >> pair[0] & 1]
        else:  # an event asleep is not advanced
            pairs = [(i, advance(state, events[i])) for i in enabled_of(state) if not mask >> i & 1]
        result.pruned += mask.bit_count()
        if distinct + len(pairs) >= stop:  # a limit may be looked at within this entry: successor by successor
            distinct, generated = _one_by_one(search, (number, state, found), pairs, mask, built, keep, found_here,
                                              depth, pending, (distinct, generated))
            if not result.complete:
                break
            stop = _stop(search, distinct)
            continue
        generated += len(pairs)
        tried, first = 0, len(parents)
        new: list[tuple[int, Any]] = []
        for pair in pairs:
            event = pair[0]
            mark = pair[1] if exact else hash(pair[1])
            if (add(mark) if add is not None else mark not in seen and not seen.add(mark)):
                if keep:
                    child = first + len(new)
                    sleeps[child] = (mask | tried) & independent[event]
                    positions[mark] = child
                new.append(pair)
            elif keep and mark in positions:  # met again in this layer
                sleeps[positions[mark]] &= (mask | tried) & independent[event]
            tried |= 1 << event
        if new:
            parents.extend([number] * len(new))
            pending += new
            distinct += len(new)
            if len(pending) >= FLUSH_STATES:
                _flush(search, pending, built, keep, found_here)
    _flush(search, pending, built, keep, found_here)
    result.distinct_states, result.states_generated = distinct, generated


def expand_folded(search: Search, layer: Iterable[Entry], built: Any, keep: bool, asleep: dict[int, int],
                  found_here: dict[str, list[tuple[Any, ...]]], depth: int) -> None:
    """Expand every entry of ``layer`` into ``built`` where the checks are folds (``folds`` mode): what
    :meth:`~sim.search.expansion.Expansion._by_folds` and ``_Search._add`` do, in one loop with no successor tuple
    built.  A step whose records no fold reads costs its step, a lookup per record and the visited set's ``add``; a
    record a fold reads is fed to it as an event.  New entries are kept :data:`FLUSH_STATES` at a time."""
    result, expansion, visited = search.result, search.expansion, search.visited
    machine, resolved, readers_of, feed = expansion.machine, expansion.resolved, expansion.readers, expansion.feed
    assert machine is not None
    own, enabled, enabled_of, alphabet = expansion.own_enabled, machine.enabled, expansion.enabled_of, expansion.events
    independent = search.independence.independent if search.independence is not None else None
    exact, seen, parents, events = visited.exact, visited.seen, visited.parent, visited.event
    add = seen.add if visited.compact else None
    expired, watched, timed = search.deadline.expired, search.progress is not None, _timed(search)
    sleeps, positions, violating, time = search.asleep, search.positions, search._violating, \
        plain_time(depth - 1 + len(expansion.prefix))
    distinct, stop = result.distinct_states, _stop(search, result.distinct_states)
    new: list[Entry] = []
    for done, (number, node, found) in enumerate(layer):
        if timed and expired() and search._stopped():
            break
        if watched and not done % PROGRESS_ENTRIES:
            search._progress_within(depth)
        mask = asleep.get(number, 0)
        if distinct + len(new) + len(resolved) >= stop:  # a limit may be looked at within this entry
            distinct = _through_add(search, (number, node, found), mask, (built, keep, new, distinct), found_here,
                                    depth)
            if not result.complete:
                break
            stop = _stop(search, distinct)
            continue
        state, carries, length = node
        tried = generated = 0
        result.pruned += mask.bit_count()
        for position in enabled(state, alphabet) if own else enabled_of(state):
            if mask >> position & 1:
                continue
            generated += 1
            action, _, step = resolved[position]
            after, records = step(state, action)
            fed, shown, index = carries, found, length
            for actor, event_name, fields in records:
                index += 1
                readers = readers_of[event_name]
                if readers:
                    fed, shown = feed(readers, fed, shown, Event(index - 1, time, actor, event_name, fields))
            if shown is not found:  # the order through this step first violates something
                violating(number, position, shown - found, found_here)
            mark = (after, shown) if exact else hash((after, shown))
            if (not add(mark)) if add is not None else mark in seen:
                if keep and independent is not None and mark in positions:  # met again in this layer
                    sleeps[positions[mark]] &= (mask | tried) & independent[position]
                tried |= 1 << position
                continue
            if add is None:
                seen.add(mark)
            child = len(parents)
            parents.append(number)
            events.append(position)
            if shown:
                result.violating_states += 1
            new.append((child, (after, fed, index), shown))
            if keep and independent is not None:
                sleeps[child] = (mask | tried) & independent[position]
                positions[mark] = child
            tried |= 1 << position
        result.states_generated += generated
        if len(new) >= FLUSH_STATES:  # kept, and counted where progress reads the count
            distinct = result.distinct_states = _kept(built, keep, new, distinct)
    result.distinct_states = _kept(built, keep, new, distinct)


def _kept(built: Any, keep: bool, new: list[Entry], distinct: int) -> int:
    """The new entries held since the last call kept in the layer being built (counted only, in the last layer),
    then none; the count of distinct states after them."""
    if keep:
        built.extend(new)
    else:
        built.count += len(new)
    distinct += len(new)
    new.clear()
    return distinct


def _through_add(search: Search, entry: Entry, mask: int, building: tuple[Any, bool, list[Entry], int],
                 found_here: dict[str, list[tuple[Any, ...]]], depth: int) -> int:
    """A folded entry whose successors may reach a limit: the new entries held kept (``building``: the layer built,
    whether it keeps entries, those held, the distinct states counted), then the entry expanded and given to
    ``_Search._add``, which stops at the exact successor; the count of distinct states after it."""
    built, keep, new, distinct = building
    search.result.distinct_states = _kept(built, keep, new, distinct)
    number, node, found = entry
    successors, slept = search.expansion.expand(node, found, depth, mask)
    search.result.pruned += slept
    search._add(number, found, successors, mask, built, keep, found_here, depth)
    return int(search.result.distinct_states)
