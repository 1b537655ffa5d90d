"""What exhaustive search may leave out, derived from the footprints a family declares.

Two reductions, both read from the same independence (two events are
independent when neither writes a part the other reads or writes:
:mod:`sim.core.footprint`, checked by the law suite):

* **Sleep sets** (on by default).  After trying ``a`` in a state, an event
  ``b`` independent of ``a`` that was tried there before ``a`` (or was asleep
  there) is asleep in the state ``a`` leads to: the order ``b a`` reaches
  what ``a b`` would, and was tried.  Only transitions are left out, never a
  state: every state is reached, at its shortest depth, so the distinct
  states, every shortest length and every proof are those of the unreduced
  search.  Where one state is reached several times in one layer, its sleep
  set is what all its arrivals agree on (their intersection).
* **Persistent sets** (``reduce=True``, ``fencesim explore --reduce``).  In a
  state, only a *persistent* subset of the enabled events is followed: a set
  no event outside it can interfere with before one of its own happens
  (closed under dependence for an enabled event, and under "may enable" for
  a disabled one: the events writing a part that one false condition of its
  guard reads, where the machine names them --
  :meth:`~sim.core.machine.Machine.disabled_by` -- else any part it reads).  It is used only when each
  of its events is *invisible* there (it records nothing a safety check reads
  and violates nothing) and leads to a state not seen before (the proviso
  that keeps breadth-first search from ignoring an event forever); else
  every enabled event is followed.  States are left out, so a reduced search
  finds violations (each replays) but may find them later than the shortest
  order, and it proves an invariant absent only when it has exhausted the
  reachable states.  Exhaustive search then measures each violation's
  shortest length with an unreduced search bounded by the length found.
"""

from __future__ import annotations

from typing import Callable, Sequence

from sim.core.footprint import Footprint, Part, independent, overlaps


class Independence:
    """Bit masks over the alphabet: which events are independent of each, and which may enable each."""

    def __init__(self, footprints: Sequence[Footprint | None]):
        count = len(footprints)
        self.size = count
        self.everything = (1 << count) - 1
        self.independent = [sum(1 << j for j in range(count) if j != i and independent(footprints[i], footprints[j]))
                            for i in range(count)]
        # a sleep set leaves out ``b a`` for having tried ``a b``: sound only if b is independent of a both ways
        assert all(self.independent[j] >> i & 1 for i in range(count) for j in bits(self.independent[i])), \
            "independence must be symmetric: an event is independent of one that is not independent of it"
        self.dependent = [self.everything & ~mask for mask in self.independent]
        self.enablers = [_enablers(footprints, i) for i in range(count)]
        self.footprints = list(footprints)
        self._writers: dict[Part, int] = {}

    def writers(self, part: Part) -> int:
        """The events whose footprints may write ``part`` (all of them for an event with no footprint)."""
        mask = self._writers.get(part)
        if mask is None:
            mask = 0
            for j, theirs in enumerate(self.footprints):
                if theirs is None or any(overlaps(w, part) for w in theirs.writes):
                    mask |= 1 << j
            self._writers[part] = mask
        return mask

    @property
    def any(self) -> bool:
        return any(self.independent)

    def asleep_after(self, event: int, asleep: int, tried_before: int) -> int:
        """The sleep set of the state ``event`` leads to, from its own state's sleep set and the events tried
        there before it."""
        return (asleep | tried_before) & self.independent[event]

    def persistent(self, enabled: int, seed: int, enabling: Callable[[int], int] | None = None,
                   smaller_than: int | None = None) -> int | None:
        """The enabled events of the persistent set grown from ``seed`` (see the module docstring), or None once
        it holds ``smaller_than`` enabled events or more (a smaller one is known: growing it further is waste).
        ``enabling(event)``: the events that may enable a disabled one here (default: any writing what it reads)."""
        chosen, work = 1 << seed, [seed]
        while work:
            if smaller_than is not None and bin(chosen & enabled).count("1") >= smaller_than:
                return None
            event = work.pop()
            if enabled >> event & 1:
                more = self.dependent[event]
            else:
                more = enabling(event) if enabling is not None else self.enablers[event]
            more &= ~chosen
            while more:
                low = more & -more
                chosen |= low
                work.append(low.bit_length() - 1)
                more ^= low
        return chosen & enabled


def _enablers(footprints: Sequence[Footprint | None], event: int) -> int:
    """Events that may enable ``event``: those writing a part it reads (all of them when a footprint is
    missing)."""
    own = footprints[event]
    mask = 0
    for other, theirs in enumerate(footprints):
        if other == event:
            continue
        if own is None or theirs is None or theirs.conflicts(Footprint(own.reads, frozenset())):
            mask |= 1 << other
    return mask


def bits(mask: int) -> list[int]:
    """The positions set in a mask, lowest first."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out
