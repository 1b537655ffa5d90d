"""What ``fencesim serve`` and ``sim.serve`` explore, read from the user's files: a design, a workload with
protocols, scenario files (exported counterexamples) or a review folder's counterexamples.

This module reads the files (through the registry and the design loader); :mod:`sim.webapp` then knows the
families only through the family contract.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from sim.core.errors import InputError, ScenarioError
from sim.core.family import Family
from sim.core.files import Source as FileSource
from sim.core.knobs import refuse_duplicates
from sim.core.workload import Workload
from sim.webapp.views import Explorer, Source, source_of

#: Keys of a scenario file that a workload does not have (a scenario without its workload becomes one).
SCENARIO_ONLY_KEYS = ("events", "protocol", "expect", "invariant", "seed", "commit", "workload", "minimal", "cell",
                      "format")


def _protocols(family: Family, texts: Sequence[str]) -> tuple[Any, ...]:
    chosen = [family.parse_protocol(text) for text in texts]
    refuse_duplicates(chosen)
    return tuple(chosen)


def workload_source(name: str, protocols: Sequence[str] = ()) -> Source:
    from sim.registry import FAMILIES

    workload = FAMILIES.load_workload(name)
    family = FAMILIES.family_for(workload)
    chosen = _protocols(family, protocols) if protocols else tuple(family.parse_protocol(p) for p in family.presets)
    return Source(_ident(workload.name), f"workload {workload.name}", family, workload, chosen,
                  description=workload.description)


def design_sources(path: str | Path) -> list[Source]:
    from sim.app.designs import load_design

    design = load_design(path)
    sources = [Source(_ident(design.name), f"design {design.name} (workload {design.workload.name})", design.family,
                      design.workload, tuple(design.protocols), description=design.description)]
    for scenario in design.scenarios:
        sources.append(source_of(_ident(scenario.name), f"scenario {scenario.name}", design.family, design.workload,
                                 scenario, _own_first(design.family, scenario, design.protocols)))
    return sources


def scenario_source(path: str | Path, protocols: Sequence[str] = ()) -> Source:
    """A scenario file: its workload (the one it names, else one made from the scenario) gives the alphabet."""
    from sim.registry import FAMILIES

    scenario = FAMILIES.load_scenario(path)
    family = FAMILIES.family_for(scenario)
    workload = _workload_of(family, scenario)
    offered = _protocols(family, protocols) if protocols else _own_first(family, scenario, ())
    return source_of(_ident(Path(path).stem), f"{Path(path).name}", family, workload, scenario, offered, str(path))


def review_sources(folder: str | Path) -> list[Source]:
    """Every counterexample of a review folder (``counterexamples/*.toml``), its design's protocols offered."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"--review {folder}: not a folder (give the folder `fencesim review --out` wrote)")
    files = sorted((folder / "counterexamples").glob("*.toml"))
    if not files:
        raise InputError(f"--review {folder}: no counterexamples/*.toml in it (give the folder `fencesim review "
                         "--out` wrote)")
    protocols = _review_protocols(folder / "results.json")
    sources = []
    for path in files:
        source = scenario_source(path)
        offered = [p for p in protocols.get(source.family.name, ()) if p]
        extra = tuple(source.family.parse_protocol(p) for p in offered)
        source.protocols = tuple(dict.fromkeys(source.protocols + extra))
        sources.append(source)
    return sources


def _review_protocols(results: Path) -> dict[str, list[str]]:
    """The protocols each family's designs reviewed, from results.json (none if it is missing or unreadable)."""
    from sim.report.results import read_results

    try:
        document = read_results(results)
    except InputError:
        return {}
    out: dict[str, list[str]] = {}
    for design in document.designs:
        out.setdefault(design.family, []).extend(row.protocol for row in design.protocols)
    return out


def _own_first(family: Family, scenario: Any, others: Sequence[Any]) -> tuple[Any, ...]:
    own = [family.parse_protocol(scenario.protocol)] if getattr(scenario, "protocol", "") else []
    presets = [family.parse_protocol(p) for p in family.presets]
    return tuple(dict.fromkeys([*own, *others, *presets]))


def _workload_of(family: Family, scenario: Any) -> Workload:
    """The workload a scenario file names (``workload = "seed-fuzz"``), else one made of the scenario itself."""
    from sim.registry import FAMILIES

    named = (getattr(scenario, "meta", {}) or {}).get("workload")
    if isinstance(named, str):
        try:
            workload = FAMILIES.load_workload(named)
            if FAMILIES.family_for(workload) is family:
                return workload
        except (InputError, OSError):
            pass
    data = {k: v for k, v in family.dump_scenario(scenario).items() if k not in SCENARIO_ONLY_KEYS}
    try:
        return family.load_workload(data, FileSource(str(getattr(scenario, "path", "") or scenario.name)))
    except ScenarioError:  # a script no workload can hold (the effects family's stories): its own events only
        return Workload(scenario.name, family.name, scenario, tuple(family.fault_classes),
                        {name: 1.0 for name in family.fault_classes}, extra={"events_only": True})


def _ident(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "scenario"


def explorer_for(design: str | None = None, workload: str | None = None, protocols: Sequence[str] = (),
                 scenarios: Sequence[str | Path] = (), review: str | Path | None = None) -> Explorer:
    """The explorer over what was given (at least one of design, workload, scenarios, review)."""
    if design is not None and workload is not None:
        raise InputError("give --design or --workload, not both (a design names its workload)")
    if protocols and workload is None and not scenarios:
        raise InputError("--protocol goes with --workload or --scenario (a design names its own protocols)")
    sources: list[Source] = []
    if design is not None:
        sources += design_sources(design)
    if workload is not None:
        sources.append(workload_source(workload, protocols))
    sources += [scenario_source(path, protocols) for path in scenarios]
    if review is not None:
        sources += review_sources(review)
    if not sources:
        sources.append(workload_source("tiny", protocols))
    return Explorer(sources)
