"""Fuzzing workloads, the part every family shares: fault classes, their weights, limits.

A workload file is a family's scenario without ``events`` plus::

    [faults]
    classes = ["human_edit", "preempt", "retry"]   # the family's fault classes; default: all
    rates = { human_edit = 2.0 }                   # relative weights (default 1 each)
    per_run_max = 4                                # faults per run: 1..per_run_max
    swarm = false                                  # true: each seed draws classes and weights

    [limits]
    max_events = 64                                # a generated order never exceeds this

    [coverage]
    reach = ["deliver verdict=deduped"]            # goals every sweep reports as reached or never

    [telemetry]
    human_edits_per_file_hour = 0.2                # rates measured in production (docs/incidents.md)
    plan_hours = 0.5

Everything is checked strictly: unknown keys are errors (with the closest
known key), booleans are booleans, numbers are finite and in range, and at
least one listed class has a positive weight.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.core.errors import ScenarioError
from sim.core.values import JsonObject, kind, shown

PER_RUN_MAX_DEFAULT = 4
#: Limits on what a workload may ask for.
PER_RUN_MAX_LIMIT = 1_000
ORDER_EVENTS_DEFAULT = 64
ORDER_EVENTS_MAX = 10_000
FAULT_KEYS = ("classes", "rates", "per_run_max", "swarm")
LIMIT_KEYS = ("max_events",)


@dataclass
class Workload:
    """What a sweep fuzzes: a base scenario (no events) of one family and its faults."""

    name: str
    family: str
    base: Any
    classes: tuple[str, ...]
    rates: dict[str, float]
    per_run_max: int = PER_RUN_MAX_DEFAULT
    swarm: bool = False
    max_events: int = ORDER_EVENTS_DEFAULT
    path: Path | None = None
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: Goals every sweep of the workload reports as reached or never (``[coverage] reach``; sim.core.coverage).
    coverage: tuple[Any, ...] = ()
    #: Rates measured in production (``[telemetry]``; ``fencesim incidents``), or None: the workload gives none.
    telemetry: dict[str, float] | None = None

    def weights(self) -> list[float]:
        return [self.rates[c] for c in self.classes]


#: Longest word ``did_you_mean`` compares (a 100,000-character typo has no close match worth the time).
_MAX_GUESSED_CHARS = 100


def did_you_mean(word: Any, choices) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or nothing."""
    if not isinstance(word, str) or len(word) > _MAX_GUESSED_CHARS:
        return ""
    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_key_error(source, table: str, key: str, allowed) -> ScenarioError:
    return source.error(f"unknown key {shown(key)} in {table}{did_you_mean(key, allowed)}; keys: "
                        f"{', '.join(allowed)}", key)


def whole_number(value: Any, name: str, source, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise source.error(f"{name} must be a whole number from {low} to {high}, not {shown(value)}", name)
    return value


def split_workload(data: JsonObject, source) -> tuple[JsonObject, JsonObject, JsonObject]:
    """Take ``[faults]`` and ``[limits]`` out of a workload table: (scenario part, faults, limits)."""
    data = dict(data)
    faults, limits = data.pop("faults", {}), data.pop("limits", {})
    if not isinstance(faults, dict):
        raise source.error(f"[faults] must be a table, not {kind(faults)}", "faults")
    if not isinstance(limits, dict):
        raise source.error(f"[limits] must be a table such as {{ max_events = 64 }}, not {kind(limits)}", "limits")
    return data, faults, limits


def build_workload(family: str, fault_classes: tuple[str, ...], base: Any, name: str, description: str,
                   faults: JsonObject, limits: JsonObject, source) -> Workload:
    """Validate ``[faults]`` and ``[limits]`` against the family's fault classes."""
    for key in faults:
        if key not in FAULT_KEYS:
            raise unknown_key_error(source, "[faults]", key, FAULT_KEYS)
    for key in limits:
        if key not in LIMIT_KEYS:
            raise unknown_key_error(source, "[limits]", key, LIMIT_KEYS)
    given = faults.get("classes", list(fault_classes))
    if not fault_classes and not faults:  # a model with no faults (a TLA+ spec): every order is an interleaving
        given = []
    elif not isinstance(given, list) or not given:
        raise source.error(f"[faults] classes must be a non-empty list of fault classes, not {shown(given)}",
                           "classes")
    classes: list[str] = []
    for item in given:
        if not isinstance(item, str) or item not in fault_classes:
            raise source.error(f"unknown fault class {shown(item)}{did_you_mean(item, fault_classes)}; "
                               f"classes of the {family} family: {', '.join(fault_classes)}",
                               item if isinstance(item, str) else "classes")
        classes.append(item)
    if len(set(classes)) != len(classes):
        raise source.error("a fault class is listed twice in [faults] classes", "classes")
    rates = faults.get("rates", {})
    if not isinstance(rates, dict):
        raise source.error("[faults] rates must be a table class = weight", "rates")
    for item, value in rates.items():
        if item not in classes:
            raise source.error(f"rate for {shown(item)}, which is not a listed class ({', '.join(classes)})", "rates")
        if (not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value)
                or value < 0 or value > 1e9):
            raise source.error(f"rate {item!r} must be a finite number from 0 to 1e9, not {shown(value)}", "rates")
    weights = {c: float(rates.get(c, 1.0)) for c in classes}
    if classes and not any(w > 0 for w in weights.values()):
        raise source.error("every fault class has weight 0; give at least one a positive rate", "rates")
    swarm = faults.get("swarm", False)
    if not isinstance(swarm, bool):
        raise source.error(f"swarm must be true or false, not {shown(swarm)}", "swarm")
    per_run_max = whole_number(faults.get("per_run_max", PER_RUN_MAX_DEFAULT), "per_run_max", source, 1,
                               PER_RUN_MAX_LIMIT)
    max_events = whole_number(limits.get("max_events", ORDER_EVENTS_DEFAULT), "max_events", source, 1,
                              ORDER_EVENTS_MAX)
    return Workload(name=name, family=family, base=base, classes=tuple(classes), rates=weights,
                    per_run_max=per_run_max, swarm=swarm, max_events=max_events,
                    path=Path(source.path), description=description)


def workloads_dir() -> Path:
    """``scenarios/workloads`` of the current directory, else of the source checkout."""
    here = Path.cwd() / "scenarios" / "workloads"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[2] / "scenarios" / "workloads"


def available_workloads() -> list[str]:
    directory = workloads_dir()
    return sorted(p.stem for p in directory.glob("*.toml")) if directory.is_dir() else []


def resolve_workload(name_or_path: str) -> Path:
    """A workload name (``seed-fuzz``) or a path to a workload file."""
    if not isinstance(name_or_path, str) or not name_or_path or "\x00" in name_or_path:
        raise ScenarioError(f"a workload is a name or a path, not {shown(name_or_path)}")
    path = Path(name_or_path)
    try:
        if path.suffix == ".toml" or path.exists():
            return path
        candidate = workloads_dir() / f"{name_or_path}.toml"
        if candidate.exists():
            return candidate
    except OSError as error:  # a name longer than the file system allows, a loop of links...
        raise ScenarioError(f"workload {shown(name_or_path)}: {error.strerror or error}") from None
    names = available_workloads()
    raise ScenarioError(
        f"unknown workload {shown(name_or_path)}{did_you_mean(name_or_path, names)}; workloads: "
        f"{', '.join(names) or '(none found)'} (or give a path to a workload file)"
    )


# -- [telemetry]: rates measured in production (docs/incidents.md) --------------------------------------

#: The keys ``[telemetry]`` takes, by family: key -> (kind, meaning).  Kinds: ``rate`` (a mean count, from 0
#: to 1e9), ``share`` (a probability, 0 to 1), ``size`` (a positive number, at most 1e12).  A ``rate`` key
#: drives the fault class named in its meaning's first word.
TELEMETRY_KEYS: dict[str, dict[str, tuple[str, str]]] = {
    "workspace": {
        "human_edits_per_file_hour": ("rate", "human_edit: human edits per file of the workload per hour"),
        "preemptions_per_executor_hour": ("rate", "preempt: executor preemptions per executor-hour"),
        "lost_acks_per_request": ("rate", "lose_ack: acknowledgements lost per request"),
        "retries_per_request": ("rate", "retry: client retries per request"),
        "duplicates_per_request": ("rate", "duplicate: duplicated deliveries per request"),
        "model_swaps_per_session": ("rate", "replan: silent model swaps (re-plans) per plan session"),
        "stale_replans_per_session": ("rate", "replan_stale: stale re-plans per plan session"),
        "test_failures_per_session": ("rate", "tests_fail: test failures after a step's write, per plan session"),
        "plan_hours": ("size", "hours a plan session lasts (default 1)"),
        "requests_per_plan": ("size", "requests a plan makes (default: its steps)"),
        "executors": ("size", "executors serving a plan (default 1)"),
        "plans_per_month": ("size", "plans per month, the period's size (default 10,000)"),
    },
    "effects": {
        "ambiguous_share": ("share", "share of requests whose acknowledgement does not arrive"),
        "committed_share": ("share", "share of ambiguous requests that had committed"),
        "reconciled_share": ("share", "share of reconciliations that prove the outcome (default 1)"),
        "worker_loss_share": ("share", "share of ambiguous requests where the worker is lost (default 0.5)"),
        "tasks_per_month": ("size", "tasks per month, the period's size (default 10,000)"),
    },
}
TELEMETRY_BOUNDS = {"rate": (0.0, 1e9), "share": (0.0, 1.0), "size": (0.0, 1e12)}


def parse_telemetry(table: Any, workload: Workload, source) -> dict[str, float]:
    """Validate a ``[telemetry]`` table for the workload's family: known keys, finite numbers in range, and
    every positive rate on a class the workload's ``[faults] classes`` lists."""
    allowed = TELEMETRY_KEYS.get(workload.family)
    if allowed is None:
        raise source.error(f"the {workload.family} family takes no [telemetry] table", "telemetry")
    if not isinstance(table, dict):
        raise source.error(f"[telemetry] must be a table such as {{ {next(iter(allowed))} = 0.1 }}, not "
                           f"{kind(table)}", "telemetry")
    values: dict[str, float] = {}
    for key, value in table.items():
        if key not in allowed:
            raise unknown_key_error(source, "[telemetry]", key, tuple(allowed))
        spec, meaning = allowed[key]
        low, high = TELEMETRY_BOUNDS[spec]
        number_ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not number_ok or not low <= value <= high or (spec == "size" and value <= 0):
            bound = (f"a number above 0 and at most {high:,.0f}" if spec == "size"
                     else f"a number from {low:,.0f} to {high:,.0f}")
            raise source.error(f"[telemetry] {key} must be {bound}, not {shown(value)}", key)
        fault_class = meaning.split(":")[0]
        if spec == "rate" and value > 0 and fault_class not in workload.classes:
            raise source.error(f"[telemetry] {key} drives {fault_class}, which [faults] classes does not list "
                               f"({', '.join(workload.classes)})", key)
        values[key] = float(value)
    return values
