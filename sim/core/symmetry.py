"""Symmetry reduction: the interchangeable parts of a workload, as its family declares them.

A workload may have parts that no transition and no invariant tells apart --
clients running the same code, workers of one pool, tenants of one plan.
Every state then has twins that differ only by which part is which, and
their futures are the same up to that renaming.  A family says so with
:meth:`~sim.core.family.Model.symmetry`, returning a :class:`Symmetry`:

- ``permutations``: the renamings, each as a map of events (an event of one
  part to the same event of another), every element of the group but the
  identity;
- ``canonical``: a state key to one representative of its orbit -- equal for
  two keys exactly when some renaming maps one state to the other.

``fencesim explore --symmetry`` (``ExploreOptions(symmetry=True)``) then keeps
one state per orbit: the states merged are those with equal canonical keys,
and the order kept is a real order of the workload (the first that reached
the orbit), so every counterexample still replays as printed.  It is sound
when renaming an order renames its run: the renamed order skips the same
events, violates the same invariants and reaches a state of the same
orbit; and when equal canonical keys have futures equal up to a renaming.
The law suite checks both (:func:`sim.testing.check_family`, law
``symmetric``).  What it changes: ``distinct_states`` counts orbits, not
states, and fewer violating orders are listed (one per orbit); the orders
merged are still counted in ``orders_explored``, and the shortest lengths
and the invariants proved absent are the search's without it.  Measured on
the register example of ``docs/adding-a-family.md`` (every client reads,
then writes): four clients to depth 8 keep 57 orbits of 518 states under
compare-and-set, and lost updates are still proved absent.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence


@dataclass(frozen=True)
class Symmetry:
    """The interchangeable parts of one workload (see the module doc)."""

    parts: str  # what is interchangeable, as a user reads it: "clients A, B, C"
    canonical: Callable[[Hashable], Hashable]  # a state key -> the representative key of its orbit
    permutations: tuple[Callable[[Any], Any], ...]  # the renamings but the identity, each a map of events


def renamings(names: Sequence[str], rename: Callable[[Any, dict[str, str]], Any]) -> tuple[Callable[[Any], Any], ...]:
    """Every renaming of ``names`` but the identity, each as a map of events; ``rename(event, mapping)`` renames
    one event (``mapping``: old name -> new).  ``len(names)!`` - 1 maps: meant for a handful of parts."""
    maps = []
    for image in itertools.permutations(names):
        mapping = dict(zip(names, image))
        if any(old != new for old, new in mapping.items()):
            maps.append(lambda event, mapping=mapping: rename(event, mapping))
    return tuple(maps)
