"""Fuzzing workloads: files, a fixed step list, fault classes and their rates.

A workload file (TOML, ``format = 1``) is a scenario without ``events`` plus
a ``[faults]`` table::

    [faults]
    classes = ["human_edit", "preempt", "retry", "replan", "duplicate"]
    rates = { human_edit = 1.0, preempt = 1.0 }   # relative weights (default 1 each)
    per_run_max = 4                               # interference events per run: 1..per_run_max
    swarm = false                                 # true: each seed draws classes and rates

    [limits]
    max_events = 64                               # a generated order never exceeds this
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.errors import ScenarioError
from sim.scenario import WorkspaceScenario, build_scenario
from sim.tomlfile import read_toml, where

#: Every fault class of the workspace vocabulary.
FAULT_CLASSES = ("human_edit", "preempt", "lose_ack", "retry", "duplicate", "replan", "replan_stale")
PER_RUN_MAX_DEFAULT = 4
MAX_EVENTS_DEFAULT = 64


@dataclass
class Workload:
    """What a sweep fuzzes: a base scenario (files, plan, replan) and fault rates."""

    name: str
    base: WorkspaceScenario
    classes: tuple[str, ...]
    rates: dict[str, float]
    per_run_max: int = PER_RUN_MAX_DEFAULT
    swarm: bool = False
    max_events: int = MAX_EVENTS_DEFAULT
    path: Path | None = None
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def workloads_dir() -> Path:
    here = Path.cwd() / "scenarios" / "workloads"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[2] / "scenarios" / "workloads"


def available_workloads() -> list[str]:
    directory = workloads_dir()
    return sorted(p.stem for p in directory.glob("*.toml")) if directory.is_dir() else []


def resolve_workload(name_or_path: str) -> Path:
    """A workload name (``seed-fuzz``) or a path to a workload file."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        return path
    candidate = workloads_dir() / f"{name_or_path}.toml"
    if candidate.exists():
        return candidate
    raise ScenarioError(
        f"unknown workload {name_or_path!r}; workloads: {', '.join(available_workloads()) or '(none found)'}"
        " (or give a path to a workload file)"
    )


def load_workload(name_or_path: str) -> Workload:
    path = resolve_workload(name_or_path)
    data, text = read_toml(path)
    faults = data.pop("faults", {})
    limits = data.pop("limits", {})
    data.setdefault("events", [])
    base = build_scenario(data, path, text)
    if not isinstance(faults, dict):
        raise ScenarioError("[faults] must be a table", where(path, text, "faults"))
    unknown = sorted(set(faults) - {"classes", "rates", "per_run_max", "swarm"})
    if unknown:
        raise ScenarioError(f"unknown [faults] key {unknown[0]!r}; keys: classes, rates, per_run_max, swarm",
                            where(path, text, unknown[0]))
    classes = faults.get("classes", list(FAULT_CLASSES))
    if not isinstance(classes, list) or not classes:
        raise ScenarioError("[faults] classes must be a non-empty list", where(path, text, "classes"))
    for name in classes:
        if name not in FAULT_CLASSES:
            raise ScenarioError(f"unknown fault class {name!r}; classes: {', '.join(FAULT_CLASSES)}",
                                where(path, text, str(name)))
    rates = faults.get("rates", {})
    if not isinstance(rates, dict):
        raise ScenarioError("[faults] rates must be a table class = weight", where(path, text, "rates"))
    for name, value in rates.items():
        if name not in classes or not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise ScenarioError(f"rate {name!r} must be a non-negative number for a listed class",
                                where(path, text, "rates"))
    per_run_max = faults.get("per_run_max", PER_RUN_MAX_DEFAULT)
    max_events = limits.get("max_events", MAX_EVENTS_DEFAULT)
    for label, value in (("per_run_max", per_run_max), ("max_events", max_events)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ScenarioError(f"{label} must be a positive integer", where(path, text, label))
    return Workload(
        name=str(data.get("name", path.stem)), base=base, classes=tuple(classes),
        rates={c: float(rates.get(c, 1.0)) for c in classes}, per_run_max=per_run_max,
        swarm=bool(faults.get("swarm", False)), max_events=max_events, path=path,
        description=str(data.get("description", "")),
    )
