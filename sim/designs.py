"""Designs under review: a family, the protocols to compare, a workload, scenarios to replay.

A design file (TOML, ``format = 1``) is what an architect brings to
``fencesim review --design FILE``::

    format = 1
    name = "billing-repo"
    description = "Three files, five steps; is drift checking worth its rejections?"
    family = "workspace"                     # optional: else the workload's family, else workspace
    protocols = ["step-dedupe", "step-dedupe,drift_check=reject"]
    seeds = 1000                             # optional (the command's --seeds wins)
    workload = "seed-fuzz"                   # a workload name or a path relative to this file ...
    scenarios = ["stories/*.toml"]           # optional scripted scenarios for the verdict matrix

    [workload]                               # ... or the workload inline (a workload file's keys)
    files = { "app.py" = "v0" }
    plan = [ { id = "s1", path = "app.py", patch = "v1" } ]
    [workload.faults]
    classes = ["human_edit", "retry"]

Without ``--design`` the review takes each family's :class:`ReviewPlan`:
the seed's presets and the weakened variants the seed discusses.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.core.errors import ProtocolError, ScenarioError
from sim.core.family import Family
from sim.core.files import Source, read_toml
from sim.core.knobs import Protocol
from sim.core.workload import Workload, did_you_mean, resolve_workload
from sim.registry import FAMILIES

FILE_KEYS = ("format", "name", "description", "family", "protocols", "seeds", "workload", "scenarios")
#: The most seeds a design may ask for (a limit on everything).
SEEDS_LIMIT = 1_000_000


@dataclass
class Design:
    """One design under review."""

    name: str
    family: Family
    workload: Workload
    protocols: list[Protocol]
    scenarios: list[Any] = field(default_factory=list)
    seeds: int = 1000
    description: str = ""
    source: str = "default"


def repository_root() -> Path:
    """The folder holding ``scenarios/`` (the current directory, else the source checkout)."""
    here = Path.cwd()
    if (here / "scenarios").is_dir():
        return here
    return Path(__file__).resolve().parents[1]


def _scenarios(patterns, base: Path, source: Source | None) -> list[Any]:
    out = []
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise ScenarioError("scenarios must be a list of file patterns", source.where("scenarios") if source else None)
        matches = sorted(glob.glob(str(base / pattern)))
        if not matches:
            where = source.where("scenarios") if source else None
            raise ScenarioError(f"scenario pattern {pattern!r} matches no file (from {base})", where)
        out += [FAMILIES.load_scenario(path) for path in matches]
    return out


def default_designs(seeds: int | None = None) -> list[Design]:
    """Each family's review plan: the seeds' designs."""
    root = repository_root()
    designs = []
    for family in FAMILIES.families:
        plan = family.review_plan
        if plan is None:
            continue
        workload = FAMILIES.load_workload(str(resolve_workload(plan.workload)))
        designs.append(Design(
            name=plan.workload, family=family, workload=workload,
            protocols=[family.parse_protocol(p) for p in plan.protocols],
            scenarios=_scenarios(plan.scenarios, root, None), seeds=seeds or plan.seeds,
            description=plan.title, source="default",
        ))
    return designs


def load_design(path: str | Path, seeds: int | None = None) -> Design:
    """Load a design file; every mistake is one ScenarioError with ``file:line``."""
    data, source = read_toml(path, "design file")
    base = Path(path).resolve().parent
    for key in data:
        if key not in FILE_KEYS:
            raise source.error(f"unknown key {key!r}{did_you_mean(key, FILE_KEYS)}; design keys: "
                               f"{', '.join(FILE_KEYS)}", key)
    name = data.get("name", Path(path).stem)
    description = data.get("description", "")
    if not isinstance(name, str) or not isinstance(description, str):
        raise source.error("name and description must be strings", "name")
    raw = data.get("workload")
    if raw is None:
        raise source.error("a design needs a workload: a name, a path, or a [workload] table", None)
    if isinstance(raw, str):
        candidate = base / raw
        if candidate.exists():
            workload = FAMILIES.load_workload(str(candidate))
        else:
            try:
                workload = FAMILIES.load_workload(raw)
            except ScenarioError as error:
                if "unknown workload" not in str(error):
                    raise
                raise source.error(f"{error} (a path is relative to the design file)", "workload") from None
    elif isinstance(raw, dict):
        table = dict(raw)
        family_name = data.get("family", table.get("family", FAMILIES.default.name))
        table.setdefault("family", family_name)
        table.setdefault("name", name)
        family = FAMILIES.family_of(table, source)
        workload = family.load_workload(table, source)
    else:
        raise source.error("workload must be a name, a path, or a [workload] table", "workload")
    family = FAMILIES.get(workload.family)
    if "family" in data and FAMILIES.get(data["family"]) is not family:
        raise source.error(f"family {data['family']!r} does not match the workload's family {family.name!r}",
                           "family")
    protocols_raw = data.get("protocols", list(family.presets))
    if not isinstance(protocols_raw, list) or not protocols_raw or not all(isinstance(p, str) for p in protocols_raw):
        raise source.error("protocols must be a non-empty list of protocol strings", "protocols")
    protocols = []
    for text in protocols_raw:
        try:
            protocols.append(family.parse_protocol(text))
        except ProtocolError as error:
            raise source.error(str(error), f'"{text}"') from None
        if protocols[-1].label in [p.label for p in protocols[:-1]]:
            raise source.error(f"protocols names {protocols[-1].label!r} more than once", f'"{text}"')
    chosen_seeds = data.get("seeds", 1000)
    if not isinstance(chosen_seeds, int) or isinstance(chosen_seeds, bool) or not 1 <= chosen_seeds <= SEEDS_LIMIT:
        raise source.error(f"seeds must be a whole number from 1 to {SEEDS_LIMIT}", "seeds")
    patterns = data.get("scenarios", [])
    if not isinstance(patterns, list):
        raise source.error("scenarios must be a list of file patterns", "scenarios")
    scenarios = _scenarios(patterns, base, source)
    for scenario in scenarios:
        if FAMILIES.family_for(scenario) is not family:
            raise source.error(f"scenario {scenario.name!r} belongs to another family than the design's "
                               f"({family.name})", "scenarios")
    return Design(name=name, family=family, workload=workload, protocols=protocols, scenarios=scenarios,
                  seeds=seeds or chosen_seeds, description=description, source=str(path))
