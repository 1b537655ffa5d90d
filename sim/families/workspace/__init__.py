"""The workspace family: revision-fenced patch steps (planner, client, executor, humans, router).

``FAMILY`` is the family as the search and the CLI see it (the family
contract, :mod:`sim.core.family`); the modules beside this one are its model.
"""

from sim.families.workspace.family import WorkspaceFamily

FAMILY = WorkspaceFamily()

__all__ = ["FAMILY", "WorkspaceFamily"]
