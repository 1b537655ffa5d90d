"""The states exhaustive search has seen: one visited set over the whole search, and how each was reached.

As TLC keeps it: the visited set holds a 64-bit *fingerprint* of each state
(its merge key -- the family's state key and the invariants already violated
-- hashed), not the state, and beside it a *trace*: for each state, in the
order found, the number of the state it was first reached from and the
event that led there.  A counterexample's order is read back by walking the
trace from its last state to the initial one, so no state holds its order.

The fingerprints are kept in one table of 64-bit slots, a C extension
(``sim/search/_fingerprints.c``, built by ``pip install``): open addressing,
grown by half when three quarters full, so 10.7 to 16 bytes a state, and one
call per successor (``add`` says whether the fingerprint was new), or one per
expanded state (``add_new`` takes all its successors and gives back the new
ones: :attr:`Visited.fresh`, what :mod:`sim.search.fused` asks).  Where
the extension did not compile, a Python set of the same fingerprints stands
in, with the same results: about 83 bytes a state (its slots and the
integers).  The trace takes 5 bytes a state (a 32-bit parent, an 8-bit
event; 6 with an alphabet over 127 events).  Measured on tiny / plan to
depth 10 (240,060 states, ``benchmarks/bench_checker.py --only memory``):
15.5 bytes a state in the table, just after a growth, against 82.9 in the
Python set; 20.5 and 87.9 with the trace (16 bytes before it was narrowed).

Two different states with one fingerprint would be taken for one, and the
second never expanded: :func:`collision_probability` is TLC's optimistic
estimate of that chance, reported beside every result.  The fingerprint is
the interpreter's hash of the key, so it changes with ``PYTHONHASHSEED``;
every count and order is the same in every process unless a collision
happened, which the estimate bounds.  ``exact=True`` keeps the keys
themselves, in a Python set (no collision possible, several hundred bytes
a state).
"""

from __future__ import annotations

import sys
from array import array
from typing import Any, Callable, Hashable, Sequence

try:
    from sim.search._fingerprints import FingerprintSet
except ImportError:  # not compiled on this machine: a Python set stands in
    TABLE: Callable[[], Any] | None = None
else:
    TABLE = FingerprintSet

#: The fingerprint's width, in bits (what the collision estimate divides by).
FINGERPRINT_BITS = 64
#: States a trace can number (its parents are 32-bit); the search's state limit stays below it.
TRACE_STATES_MAX = 2 ** 31 - 1
#: Bytes of a 64-bit integer object in a Python set of fingerprints (36, as the allocator rounds it).
INTEGER_BYTES = 48


def event_type(alphabet: int) -> str:
    """The array type of a trace's events: the smallest signed one that holds every position of the
    alphabet, and -1 (the initial state's)."""
    return "b" if alphabet <= 127 else "h" if alphabet <= 32767 else "l"


class Visited:
    """Every state found: its fingerprint (or key), and the trace that leads back to the start."""

    def __init__(self, exact: bool = False, alphabet: int = 1 << 31):
        self.exact = exact
        #: Whether the fingerprints are in the C table, whose ``add`` says whether one was new.
        self.compact = not exact and TABLE is not None
        self.seen: Any = TABLE() if self.compact and TABLE is not None else set()
        self.parent = array("i")  # state number -> the state it was first reached from (-1: the initial state)
        self.event = array(event_type(alphabet))  # state number -> the position of the event that reached it
        #: ``fresh(pairs)``: for the ``(position, state)`` successors of one state, each state's mark held, in
        #: order; the pairs whose mark was new (the C table does it in one call; a Python loop stands in).
        self.fresh: Callable[[list], list] = getattr(self.seen, "add_new", None) or _fresh_in(self.seen, exact)

    def __len__(self) -> int:
        return len(self.parent)

    def mark(self, key: Hashable) -> Any:
        """What the visited set holds for a merge key: its fingerprint, or (exact) the key itself."""
        return key if self.exact else hash(key)

    def add(self, mark: Any, parent: int, event: int) -> int | None:
        """The number of a state not seen before (recorded as reached from ``parent`` by ``event``), or None."""
        if self.compact:
            if not self.seen.add(mark):
                return None
        else:
            before = len(self.seen)
            self.seen.add(mark)
            if len(self.seen) == before:
                return None
        self.parent.append(parent)
        self.event.append(event)
        return len(self.parent) - 1

    def order(self, number: int, events: Sequence[Any]) -> tuple[Any, ...]:
        """The events that first reached state ``number``, from the initial state."""
        out = []
        while number > 0:
            out.append(events[self.event[number]])
            parent = self.parent[number]
            assert parent < number, f"state {number} was first reached from state {parent}, numbered after it"
            number = parent
        return tuple(reversed(out))

    def check_layer(self, expanded: int, first: int, count: int, alphabet: int) -> None:
        """The bookkeeping of one depth, checked once it is built: the states numbered from ``first`` on are the
        ``count`` states it found, each reached from a state of the layer it expanded (numbered from
        ``expanded`` to ``first``) -- so each is at that layer's depth plus one, and its order that long -- by
        an event of the alphabet.  The visited set holds each state once, with its trace.  Scans of the
        trace's new part, at C speed: a wrong count here is a wrong ``distinct_states``, a wrong parent a
        wrong shortest length."""
        end = len(self.parent)
        assert len(self.seen) == end == len(self.event), (
            f"the visited set holds {len(self.seen)} states, its trace {end} parents and {len(self.event)} events")
        assert end - first == count, f"a layer counted {count} new states, the visited set numbered {end - first}"
        if not count:
            return
        with memoryview(self.parent) as parents, parents[first:end] as new:
            low, high = min(new), max(new)
        assert expanded <= low and high < first, (
            f"the states numbered {first} to {end - 1} were reached from states {low} to {high}, not all of the "
            f"layer expanded ({expanded} to {first - 1}): their depths differ")
        with memoryview(self.event) as events, events[first:end] as new:
            low, high = min(new), max(new)
        assert 0 <= low and high < alphabet, f"a state was reached by event {low if low < 0 else high}, " \
                                              f"outside the alphabet's {alphabet}"

    def set_bytes_per_state(self) -> float:
        """What the visited set takes per state: the C table's slots, as allocated; or the Python set's table and
        its integers (:data:`INTEGER_BYTES` each; with ``exact``, the set's table only)."""
        count = max(1, len(self.seen))
        if self.compact:
            return self.seen.table_bytes / count
        return (sys.getsizeof(self.seen) + (0 if self.exact else INTEGER_BYTES * len(self.seen))) / count

    def bytes_per_state(self) -> float:
        """What the visited set and the trace take per state."""
        return self.set_bytes_per_state() + self.parent.itemsize + self.event.itemsize


def _fresh_in(seen: Any, exact: bool) -> Callable[[list], list]:
    """:attr:`Visited.fresh` for a Python set of fingerprints, or (``exact``) of keys, or a table whose ``add``
    says whether a fingerprint was new."""
    says = not isinstance(seen, set)

    def fresh(pairs: list) -> list:
        out = []
        for pair in pairs:
            mark = pair[1] if exact else hash(pair[1])
            if says:
                if seen.add(mark):
                    out.append(pair)
            elif mark not in seen:
                seen.add(mark)
                out.append(pair)
        return out

    return fresh


def check_counts(distinct: int, per_depth: Sequence[int], visited: int, uncounted: int) -> None:
    """What a search reports adds up: ``distinct_states`` is the sum of the states found per depth, and the
    visited set holds them all (and ``uncounted`` more: the start several initial states come from, which is no
    state of the search)."""
    assert distinct == sum(per_depth), f"{distinct} distinct states, but the depths found {sum(per_depth)}"
    assert visited == distinct + uncounted, (
        f"the visited set holds {visited} states, the search counted {distinct} (and {uncounted} uncounted)")


def collision_probability(distinct: int, generated: int) -> float:
    """TLC's optimistic estimate of the chance that some state was wrongly taken for one already seen:
    ``distinct * (generated - distinct) / 2**64`` (each of the generated states that were looked up and found
    could have been a new state with a seen fingerprint)."""
    return max(0, distinct) * max(0, generated - distinct) / float(2 ** FINGERPRINT_BITS)
