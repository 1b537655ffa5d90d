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
            number = self.parent[number]
        return tuple(reversed(out))

    def bytes_per_state(self) -> float:
        """What the visited set and the trace take per state, estimated (the set's table and its integers)."""
        count = max(1, len(self.parent))
        table = self.seen.__sizeof__()
        integers = 0 if self.exact else 32 * count
        return (table + integers + self.parent.itemsize * count + self.event.itemsize * count) / count


def collision_probability(distinct: int, generated: int) -> float:
    """TLC's optimistic estimate of the chance that some state was wrongly taken for one already seen:
    ``distinct * (generated - distinct) / 2**64`` (each of the generated states that were looked up and found
    could have been a new state with a seen fingerprint)."""
    return max(0, distinct) * max(0, generated - distinct) / float(2 ** FINGERPRINT_BITS)
