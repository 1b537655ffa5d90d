"""Kept results (sim.search.kept): one computation per key while its owners are the same objects."""

from __future__ import annotations

from sim.search.kept import Kept


def test_a_result_is_computed_once_per_key_and_owners_and_the_oldest_goes_first():
    kept, calls = Kept(2), []
    owner = object()
    assert kept.get("a", (owner, owner), lambda: calls.append("a") or 1) == 1
    assert kept.get("a", (owner, owner), lambda: calls.append("a again") or 2) == 1  # a fresh tuple of the same
    assert kept.get("a", (object(),), lambda: calls.append("other owner") or 3) == 3
    kept.get("b", (owner,), lambda: calls.append("b") or 4)
    kept.get("c", (owner,), lambda: calls.append("c") or 5)
    kept.get("a", (object(),), lambda: calls.append("a evicted") or 6)
    assert calls == ["a", "other owner", "b", "c", "a evicted"]
