"""``mypy sim`` passes in a venv with only the test extra (``make test`` on a machine without Node, or without
Temporal): every module sim imports from an optional extra's package is one of the modules pyproject's mypy
overrides let be missing.

A module sim imports is *optional* when it cannot be imported here, or when the package it comes from is named
by an optional extra other than ``test`` and neither by the dependencies nor by ``test`` (the ``restate`` extra's
``restate-sdk`` and ``hypercorn``, the ``real`` extra's ``dbos``, the ``temporal`` extra's ``temporalio``).
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _distribution(requirement: str) -> str:
    """A requirement's distribution name, normalised (``restate-sdk==1.3.0`` -> ``restate-sdk``)."""
    name = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    assert name, requirement
    return re.sub(r"[-_.]+", "-", name.group(0)).lower()


def _always_installed() -> set[str]:
    project = PYPROJECT["project"]
    return {_distribution(r) for r in project["dependencies"] + project["optional-dependencies"]["test"]}


def _optional() -> set[str]:
    extras = PYPROJECT["project"]["optional-dependencies"]
    named = {_distribution(r) for extra, requirements in extras.items() if extra != "test" for r in requirements}
    return named - _always_installed()


def _imported_top_level() -> set[str]:
    """The third-party top-level modules sim's code imports (not the standard library's, not sim's own files:
    a worker script imports its siblings by their bare names)."""
    own = {p.stem for p in (REPO / "sim").rglob("*.py")} | {p.name for p in (REPO / "sim").rglob("*") if p.is_dir()}
    found: set[str] = set()
    for path in (REPO / "sim").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "sim" and m not in own}


def _ignored_when_missing() -> set[str]:
    modules: set[str] = set()
    for override in PYPROJECT["tool"]["mypy"]["overrides"]:
        if override.get("ignore_missing_imports"):
            names = override["module"]
            modules |= {names} if isinstance(names, str) else set(names)
    return modules


def optional_modules() -> set[str]:
    """The modules sim imports that a venv with only the test extra may lack."""
    from_package = importlib.metadata.packages_distributions()
    optional = _optional()
    out = set()
    for module in _imported_top_level():
        if importlib.util.find_spec(module) is None:
            out.add(module)
        elif {_distribution(d) for d in from_package.get(module, ())} & optional:
            out.add(module)
    return out


def test_the_optional_extras_modules_are_found_through_their_packages():
    """The scan finds the optional runtimes' modules, installed here or not."""
    assert {"restate", "hypercorn", "dbos", "temporalio"} <= optional_modules()
    assert "restate-sdk" in _optional() and "hypercorn" in _optional() and "starlette" not in _optional()


def test_mypy_may_miss_every_optional_module():
    """Each optional module, and its submodules, is in a mypy override with ignore_missing_imports."""
    ignored = _ignored_when_missing()
    missing = sorted(m for m in optional_modules() if m not in ignored or f"{m}.*" not in ignored)
    assert not missing, f"add {missing} (and each with '.*') to pyproject's [[tool.mypy.overrides]]"
