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
    map = { knobs = ["fence", "dedupe"], max_events = 6, seeds = 200 }   # optional: a design-map section
    telemetry = { ambiguous_share = 0.02 }   # optional: rates measured in production, over the workload's

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from sim.core.errors import InputError, ProtocolError, ScenarioError
from sim.core.family import Family
from sim.core.files import Source, read_toml
from sim.core.knobs import Protocol
from sim.core.registry import DESIGN_KEYS, USE
from sim.core.values import kind, name_problem, shown, text_problem
from sim.core.workload import Workload, did_you_mean, parse_telemetry, resolve_workload
from sim.registry import FAMILIES

FILE_KEYS = ("format", "name", "description", "family", "protocols", "seeds", "workload", "scenarios", "map",
             "telemetry", "engine")
MAP_KEYS = ("knobs", "max_events", "seeds", "base")
#: The most seeds a design may ask for (a limit on everything).
SEEDS_LIMIT = 1_000_000
#: The most scenario files a design's patterns may match.
MAX_SCENARIOS = 1_000


@dataclass(frozen=True, slots=True)
class Design:
    """One design under review: the family, the workload, the protocols compared (distinct), the scripted
    scenarios of the verdict matrix, the seeds per protocol, where it was read from (``source``: its file, or
    ``default`` for a family's review plan), and the optional sections it asks for -- a design map (``map``)
    and an Engine table (``engine``)."""

    name: str
    family: Family
    workload: Workload
    protocols: tuple[Protocol, ...]
    scenarios: tuple[Any, ...] = ()
    seeds: int = 1000
    description: str = ""
    source: str = "default"
    map: MapRequest | None = None
    #: ``engine = "temporal"`` (or ``"temporal,idempotency=key"``: the engine's preset, then your knobs): the
    #: review certifies each transition under it (``fencesim certify``; effects designs only).
    engine: str | None = None

    @property
    def from_file(self) -> bool:
        """Whether the design was read from a file of its own (not a family's review plan)."""
        return self.source not in ("default", "")


def _engine(raw: Any, family: Family, source: Source) -> str | None:
    if raw is None:
        return None
    if family.name != "effects":
        raise source.error(f"engine applies to effects designs; this design's family is {family.name}", "engine")
    if not isinstance(raw, str):
        raise source.error(f"engine must be a string such as \"temporal\", not {kind(raw)}", "engine")
    from sim.app.certifying import engine_protocol

    name, _, extra = raw.partition(",")
    try:
        engine_protocol(name.strip(), extra.strip())
    except InputError as error:
        raise source.error(f"engine: {error}", "engine") from None
    return raw


@dataclass(frozen=True)
class MapRequest:
    """A design's ``map`` table: the knobs whose lattice the review maps, the depth, the seeds of its costs."""

    knobs: tuple[str, ...]
    max_events: int = 6
    seeds: int = 200
    base: str | None = None  # the protocol whose values the knobs not walked keep (None: their defaults)


def _map_request(raw: Any, family: Family, source: Source) -> MapRequest | None:
    """The design's ``map`` table, checked against the family's knobs and the map's limits."""
    from sim.core.errors import InputError
    from sim.search.lattice import MAP_DEPTH_MAX, lattice

    if raw is None:
        return None

    def fail(message: str) -> ScenarioError:
        table = "[map]" in source.text
        return source.error(message, "[map]") if table else source.error(message, "map", after_key="map")

    if not isinstance(raw, dict):
        raise fail(f"map must be a table (knobs, max_events, seeds), not {kind(raw)}")
    for key in raw:
        if key not in MAP_KEYS:
            raise fail(f"unknown key {shown(key)} in map{did_you_mean(key, MAP_KEYS)}; map keys: "
                       f"{', '.join(MAP_KEYS)}")
    knobs = raw.get("knobs")
    if not isinstance(knobs, list) or not knobs or not all(isinstance(k, str) for k in knobs):
        raise fail(f"map.knobs must be a non-empty list of knob names, not {shown(knobs)}")
    depth, seeds = raw.get("max_events", 6), raw.get("seeds", 200)
    for name, value, low, high in (("max_events", depth, 1, MAP_DEPTH_MAX), ("seeds", seeds, 0, SEEDS_LIMIT)):
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise fail(f"map.{name} must be a whole number from {low} to {high}, not {shown(value)}")
    base = raw.get("base")
    if base is not None and not isinstance(base, str):
        raise fail(f"map.base must be a protocol (a string), not {shown(base)}")
    try:
        lattice(family, knobs, family.parse_protocol(base) if base is not None else None)
    except (InputError, ProtocolError) as error:
        raise fail(f"map: {error}") from None
    return MapRequest(tuple(knobs), depth, seeds, base)


def repository_root() -> Path:
    """The folder holding ``scenarios/`` (the current directory, else the source checkout)."""
    here = Path.cwd()
    if (here / "scenarios").is_dir():
        return here
    return Path(__file__).resolve().parents[1]


def _scenarios(patterns, base: Path, source: Source | None) -> list[Any]:
    where = source.where("scenarios") if source else None
    paths: list[str] = []
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern or "\x00" in pattern:
            raise ScenarioError(f"scenarios must be a list of file patterns, not {shown(pattern)} in it", where)
        matches = sorted(glob.glob(str(base / pattern)))
        if not matches:
            raise ScenarioError(f"scenario pattern {shown(pattern)} matches no file (from {base})", where)
        paths += matches
        if len(paths) > MAX_SCENARIOS:
            raise ScenarioError(f"scenario patterns match more than {MAX_SCENARIOS} files (the limit of a design)",
                                where)
    return [FAMILIES.load_scenario(path) for path in paths]


def _protocols(raw: Any, family: Family, source: Source) -> list[Protocol]:
    """The design's protocols, parsed; the same protocol twice (however spelt) is refused."""
    if not isinstance(raw, list) or not raw or not all(isinstance(p, str) for p in raw):
        raise source.error(f"protocols must be a non-empty list of protocol strings, not {shown(raw)}", "protocols")
    protocols: list[Protocol] = []
    for text in raw:
        try:
            protocol = family.parse_protocol(text)
        except ProtocolError as error:
            raise source.error(str(error), f'"{text}"') from None
        same = next((p for p in protocols if p == protocol), None)
        if same is not None:
            how = ("more than once" if same.label == protocol.label
                   else f"twice: {text!r} is {same.label!r} spelt otherwise")
            raise source.error(f"protocols names {same.label!r} {how} (every knob the same); give each protocol once",
                               f'"{text}"')
        protocols.append(protocol)
    return protocols


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
            protocols=tuple(family.parse_protocol(p) for p in plan.protocols),
            scenarios=tuple(_scenarios(plan.scenarios, root, None)), seeds=seeds or plan.seeds,
            description=plan.title, source="default",
        ))
    return designs


#: Keys a scenario or workload has and a design has not: a file with them and no ``workload`` is not a design.
OTHER_KIND_KEYS = ("files", "plan", "events", "faults", "limits", "task", "workflow", "arguments", "expect")


def _not_a_design(data: Mapping[str, object], source: Source) -> ScenarioError | None:
    """A workload or scenario given where a design is expected, named as such."""
    if "workload" in data or any(key in data for key in DESIGN_KEYS):
        return None
    tell = next((key for key in OTHER_KIND_KEYS if key in data), None)
    if tell is None:
        return None
    found = "scenario" if "events" in data or isinstance(data.get("faults"), list) else "workload"
    return source.error(f"this is a {found} file, not a design ('{tell}' is a {found}'s key): "
                        f"{USE[found].format(path=source.path)}", tell)


def _workload_file(raw: str, base: Path, source: Source) -> Workload:
    """The workload a design names: a path relative to the design file, else a workload name.  A name or
    path that reads no file is the design's mistake, so the error names the design's file and line."""
    candidate = base / raw if "\x00" not in raw else None
    try:
        exists = candidate is not None and candidate.exists()
    except OSError:
        exists = False
    if exists:
        return FAMILIES.load_workload(str(candidate))
    try:
        return FAMILIES.load_workload(raw)
    except ScenarioError as error:
        if error.where not in (None, raw) and "unknown workload" not in error.message:
            raise  # a mistake inside the workload file: it names its own file and line
        raise source.error(f"workload {shown(raw)}: {error.message} (a path is relative to the design file's "
                           f"folder, {base})", "workload") from None


def load_design(path: str | Path, seeds: int | None = None) -> Design:
    """Load a design file; every mistake is one ScenarioError with ``file:line``."""
    data, source = read_toml(path, "design file")
    base = Path(path).resolve().parent
    wrong = _not_a_design(data, source)
    if wrong:
        raise wrong
    for key in data:
        if key not in FILE_KEYS:
            raise source.error(f"unknown key {shown(key)}{did_you_mean(key, FILE_KEYS)}; design keys: "
                               f"{', '.join(FILE_KEYS)}", key)
    name = data.get("name", Path(path).stem)
    problem = name_problem(name, "name", spaces=True) or text_problem(data.get("description", ""), "description")
    if problem:
        raise source.error(problem, "name" if problem.startswith("name") else "description")
    description = data.get("description", "")
    raw = data.get("workload")
    if raw is None:
        raise source.error("a design needs a workload: a name, a path, or a [workload] table", None)
    if isinstance(raw, str):
        workload = _workload_file(raw, base, source)
    elif isinstance(raw, dict):
        table = dict(raw)
        family_name = data.get("family", table.get("family", FAMILIES.default.name))
        table.setdefault("family", family_name)
        table.setdefault("name", name)
        workload = FAMILIES.workload_from(table, source)
    else:
        raise source.error(f"workload must be a name, a path, or a [workload] table, not {kind(raw)}", "workload")
    family = FAMILIES.get(workload.family)
    if "telemetry" in data:  # the design's rates, over (and checked like) the workload's [telemetry]
        workload.telemetry = {**(workload.telemetry or {}), **parse_telemetry(data["telemetry"], workload, source)}
    if "family" in data and FAMILIES.family_of(data, source) is not family:
        raise source.error(f"family {shown(data['family'])} does not match the workload's family {family.name!r}",
                           "family")
    protocols = _protocols(data.get("protocols", list(family.presets)), family, source)
    chosen_seeds = data.get("seeds", 1000)
    if not isinstance(chosen_seeds, int) or isinstance(chosen_seeds, bool) or not 1 <= chosen_seeds <= SEEDS_LIMIT:
        raise source.error(f"seeds must be a whole number from 1 to {SEEDS_LIMIT}, not {shown(chosen_seeds)}",
                           "seeds")
    patterns = data.get("scenarios", [])
    if not isinstance(patterns, list):
        raise source.error(f"scenarios must be a list of file patterns, not {kind(patterns)}", "scenarios")
    scenarios = _scenarios(patterns, base, source)
    for scenario in scenarios:
        if FAMILIES.family_for(scenario) is not family:
            raise source.error(f"scenario {scenario.name!r} belongs to another family than the design's "
                               f"({family.name})", "scenarios")
    return Design(name=name, family=family, workload=workload, protocols=tuple(protocols), scenarios=tuple(scenarios),
                  seeds=seeds or chosen_seeds, description=description, source=str(path),
                  map=_map_request(data.get("map"), family, source), engine=_engine(data.get("engine"), family, source))
