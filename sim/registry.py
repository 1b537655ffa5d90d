"""The program's registry of families, in one place (no family registers itself on import).

The workspace family is the default for files that name no family.  To add
a family, write it against :mod:`sim.core.family` and either add it here, or
name it in the environment variable ``FENCESIM_FAMILIES`` as
``package.module:ATTRIBUTE`` (comma-separated for several) so the command
line and the API see it without a change to fencesim.
"""

from __future__ import annotations

import importlib
import os

from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.registry import Registry
from sim.families.effects import FAMILY as EFFECTS
from sim.families.workspace import FAMILY as WORKSPACE

SHIPPED = (WORKSPACE, EFFECTS)
ENVIRONMENT_VARIABLE = "FENCESIM_FAMILIES"


def extra_families(spec: str) -> list[Family]:
    """Families named ``module:attribute`` in ``spec`` (the environment variable's value)."""
    out = []
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        module_name, _, attribute = item.partition(":")
        try:
            family = getattr(importlib.import_module(module_name), attribute or "FAMILY")
        except (ImportError, AttributeError, ValueError) as error:
            raise InputError(f"{ENVIRONMENT_VARIABLE}: cannot load family {item!r} ({error}); "
                             "write package.module:ATTRIBUTE") from None
        if not isinstance(family, Family):
            raise InputError(f"{ENVIRONMENT_VARIABLE}: {item!r} is not a fencesim Family (see docs/adding-a-family.md)")
        out.append(family)
    return out


def build_registry() -> Registry:
    try:
        return Registry((*SHIPPED, *extra_families(os.environ.get(ENVIRONMENT_VARIABLE, ""))))
    except ValueError as error:  # two families share a name: a configuration mistake
        raise InputError(f"{ENVIRONMENT_VARIABLE}: {error}; give each family its own name") from None


FAMILIES = build_registry()
