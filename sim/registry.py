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
from sim.core.values import cut, shown
from sim.families.effects import FAMILY as EFFECTS
from sim.families.workspace import FAMILY as WORKSPACE

SHIPPED = (WORKSPACE, EFFECTS)
ENVIRONMENT_VARIABLE = "FENCESIM_FAMILIES"


def _module_problem(module_name: str, attribute: str) -> str | None:
    parts = module_name.split(".")
    if not module_name or not all(part.isidentifier() for part in parts):
        return "the module must be a dotted name such as mypackage.myfamily (no leading dot, no path)"
    if attribute and not attribute.isidentifier():
        return "the attribute after ':' must be a Python name"
    return None


def _load_family(item: str) -> Family:
    """The family ``module:attribute`` names; any failure of the user's module is an input error."""
    module_name, _, attribute = item.partition(":")
    module_name, attribute = module_name.strip(), attribute.strip()
    problem = _module_problem(module_name, attribute)
    if problem:
        raise InputError(f"{ENVIRONMENT_VARIABLE}: {shown(item)}: {problem}; write package.module:ATTRIBUTE")
    try:
        family = getattr(importlib.import_module(module_name), attribute or "FAMILY")
    except (ImportError, AttributeError) as error:
        raise InputError(f"{ENVIRONMENT_VARIABLE}: cannot load family {shown(item)} ({cut(str(error), 200)}); "
                         "write package.module:ATTRIBUTE") from None
    except SystemExit as error:
        raise InputError(f"{ENVIRONMENT_VARIABLE}: importing {module_name!r} called sys.exit({shown(error.code)}); "
                         "a family module must define a family, not end the program") from None
    except Exception as error:  # the user's module failed: not a bug in fencesim
        raise InputError(f"{ENVIRONMENT_VARIABLE}: importing {module_name!r} raised {type(error).__name__}: "
                         f"{cut(str(error), 200)} (the error is in that module, not in fencesim)") from None
    if not isinstance(family, Family):
        raise InputError(f"{ENVIRONMENT_VARIABLE}: {shown(item)} is not a fencesim Family "
                         "(see docs/adding-a-family.md)")
    return family


def extra_families(spec: str) -> list[Family]:
    """Families named ``module:attribute`` in ``spec`` (the environment variable's value)."""
    return [_load_family(item) for item in (part.strip() for part in spec.split(",")) if item]


def build_registry() -> Registry:
    try:
        return Registry((*SHIPPED, *extra_families(os.environ.get(ENVIRONMENT_VARIABLE, ""))))
    except ValueError as error:  # two families share a name: a configuration mistake
        raise InputError(f"{ENVIRONMENT_VARIABLE}: {error}; give each family its own name") from None


FAMILIES = build_registry()
