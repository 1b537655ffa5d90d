"""The program's registry of families, in one place (no family registers itself on import).

The workspace family is the default for files that name no family.  To add
a family, write it against :mod:`sim.core.family` and add it here -- or build
``FAMILIES.with_family(yours)`` in your own program or test.
"""

from __future__ import annotations

from sim.core.registry import Registry
from sim.families.effects import FAMILY as EFFECTS
from sim.families.workspace import FAMILY as WORKSPACE

FAMILIES = Registry((WORKSPACE, EFFECTS))
