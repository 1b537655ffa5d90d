"""Invariant checks: pure functions over a history (DESIGN section 3)."""
