"""The protocol families: one package each, written against :mod:`sim.core.family`.

No family imports another, the search, the reports or the CLI.
"""
