"""Search: seed sweeps, shrinking, exhaustive enumeration, the advisor."""
