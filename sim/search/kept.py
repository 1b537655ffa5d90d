"""Results kept in this process for every question asked of them, the most recent last.

A search that answers many questions (each finding's proof, each transition's certificate) is run once per
key and kept.  A key holds the ids of the objects it was computed from; an id is reused once its object is
gone, so an entry answers only while the very objects it was computed from (its ``owners``) are alive and the
same.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Sequence


class Kept:
    """At most ``limit`` results, each under a key with the objects it was computed from."""

    def __init__(self, limit: int):
        self.limit = limit
        self._items: dict[Hashable, tuple[Sequence[Any], Any]] = {}

    def get(self, key: Hashable, owners: Sequence[Any], compute: Callable[[], Any]) -> Any:
        """The result kept under ``key`` for these ``owners`` (compared by identity), else ``compute()``,
        kept."""
        kept = self._items.pop(key, None)
        if kept is None or len(kept[0]) != len(owners) or any(a is not b for a, b in zip(kept[0], owners)):
            kept = (tuple(owners), compute())
        self._items[key] = kept
        while len(self._items) > self.limit:
            self._items.pop(next(iter(self._items)))
        return kept[1]
