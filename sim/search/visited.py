"""The states exhaustive search has seen: one visited set over the whole search, and how each was reached.

As TLC keeps it: the visited set holds a 64-bit *fingerprint* of each state
(its merge key -- the family's state key and the invariants already violated
-- hashed), not the state, and beside it a *trace*: for each state, in the
order found, the number of the state it was first reached from and the
event that led there.  A counterexample's order is read back by walking the
trace from its last state to the initial one, so no state holds its order.
What this costs per state: the set's slot and the fingerprint's integer
(about 60 bytes in CPython) and 8 bytes of trace.

Two different states with one fingerprint would be taken for one, and the
second never expanded: :func:`collision_probability` is TLC's optimistic
estimate of that chance, reported beside every result.  The fingerprint is
the interpreter's hash of the key, so it changes with ``PYTHONHASHSEED``;
every count and order is the same in every process unless a collision
happened, which the estimate bounds.  ``exact=True`` keeps the keys
themselves instead (no collision possible, several hundred bytes a state).
"""

from __future__ import annotations

from array import array
from typing import Any, Hashable, Sequence

#: The fingerprint's width, in bits (what the collision estimate divides by).
FINGERPRINT_BITS = 64


class Visited:
    """Every state found: its fingerprint (or key), and the trace that leads back to the start."""

    def __init__(self, exact: bool = False):
        self.exact = exact
        self.seen: set[Any] = set()
        self.parent = array("q")  # state number -> the state it was first reached from (-1: the initial state)
        self.event = array("l")  # state number -> the alphabet position of the event that reached it

    def __len__(self) -> int:
        return len(self.parent)

    def mark(self, key: Hashable) -> Any:
        """What the visited set holds for a merge key: its fingerprint, or (exact) the key itself."""
        return key if self.exact else hash(key)

    def add(self, mark: Any, parent: int, event: int) -> int | None:
        """The number of a state not seen before (recorded as reached from ``parent`` by ``event``), or None."""
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

    def bytes_per_state(self) -> float:
        """What the visited set and the trace take per state, estimated (the set's table and its integers)."""
        count = max(1, len(self.parent))
        table = self.seen.__sizeof__()
        integers = 0 if self.exact else 32 * count
        return (table + integers + self.parent.itemsize * count + self.event.itemsize * count) / count


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
