"""The sweep state of ``fencesim fuzz`` (``sweep-state.json`` in ``--out``): written after every chunk and
on an interrupt, read back by ``--resume``, and checked like any input.

The state holds every option the run started with -- the run's arguments
(workload and its digest, protocols, seeds, seed start, the advisor, the
shrink limit, the budget), the outputs it was asked for, the settings that
do not change results (workers, backend, scheduler), the seconds of the
budget already spent, and the sweep's tallies -- so ``fencesim fuzz
--resume DIR`` is the complete command that continues it.  A state file is
read with the same care as a workload: every field's type and range, and
every tally checked against the others (no more violating runs than runs,
a first violation for every invariant counted, seeds that the chunks ran),
so a damaged or edited file is one line and exit 4, never a traceback or an
impossible count.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from sim.core.errors import FencesimError, InputError
from sim.core.files import json_error_words, read_text, strict_json
from sim.core.findings import finding_id
from sim.core.values import shown

STATE_FILE = "sweep-state.json"
STATE_FORMAT = 3
#: Largest count a tally may hold (far beyond any sweep: ten million seeds of ten thousand events).
MAX_COUNT = 10**15
SECTIONS = ("format", "arguments", "outputs", "settings", "budget", "sweep")
ARGUMENTS = ("workload", "protocols", "seeds", "seed_start", "advise", "workload_digest", "shrink_seconds",
             "budget_s")
OUTPUTS = ("baseline", "junit", "write_baseline", "check_determinism", "force", "json")
SETTINGS = ("workers", "backend", "scheduler")
SWEEP = ("next_chunk", "seeds_done", "tallies", "found", "saturation")
TALLY = ("invariants", "availability", "runs", "violating_runs", "by_invariant", "by_finding", "counted", "measures",
         "events", "coverage", "ledger")
COVERAGE = ("goals", "reached", "kinds", "skips", "sketch")
FOUND = ("protocol", "invariant", "where", "run", "seed", "order")


class _Bad(Exception):
    """A field of the state that is not what it must be (turned into one InputError line)."""


def state_document(arguments: dict, outputs: dict, settings: dict, spent_s: float, sweep: dict) -> dict:
    return {"format": STATE_FORMAT, "arguments": arguments, "outputs": outputs, "settings": settings,
            "budget": {"spent_s": round(spent_s, 3)}, "sweep": sweep}


def read_state(folder: Path) -> dict:
    """The sweep state in ``folder``, its structure checked (the tallies are checked against the family by
    :func:`check_against`)."""
    path = Path(folder) / STATE_FILE
    if not path.exists() and not path.is_symlink():
        raise InputError(f"nothing to resume: {path} does not exist (it is written by a fuzz run with --out {folder})")
    text = read_text(path, "sweep state")
    try:
        data = strict_json(text)
    except (ValueError, RecursionError) as error:
        reason = json_error_words(error)
        raise InputError(f"corrupt sweep state ({reason}); delete it to start afresh", str(path)) from None
    try:
        _check_structure(data)
    except _Bad as error:
        raise InputError(f"not a sweep state this fencesim can resume: {error}; delete it to start afresh",
                         str(path)) from None
    return data



def _shown(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _table(data: Any, name: str, keys: tuple[str, ...]) -> dict:
    if not isinstance(data, dict):
        raise _Bad(f"{name} must be an object, not {_shown(data)}")
    missing = [k for k in keys if k not in data]
    extra = [k for k in data if k not in keys]
    if missing or extra:
        raise _Bad(f"{name} must hold exactly {', '.join(keys)}"
                   + (f" (missing {', '.join(missing)})" if missing else f" (unknown {', '.join(map(str, extra))})"))
    return data


def _int(value: Any, name: str, low: int = 0, high: int = MAX_COUNT) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise _Bad(f"{name} must be a whole number from {low} to {high}, not {_shown(value)}")
    return value


def _number(value: Any, name: str, low: float = 0.0, high: float = 1e15) -> float:
    if (not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value)
            or not low <= value <= high):
        raise _Bad(f"{name} must be a number from {low:g} to {high:g}, not {_shown(value)}")
    return float(value)


def _text(value: Any, name: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value or len(value) > 10_000:
        raise _Bad(f"{name} must be a non-empty string{' or null' if optional else ''}, not {_shown(value)}")
    return value


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise _Bad(f"{name} must be true or false, not {_shown(value)}")
    return value


def _check_structure(data: Any) -> None:
    from sim.search.sweep import CHUNK_SEEDS, MAX_SEEDS

    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
        got = data.get("format") if isinstance(data, dict) else None
        raise _Bad(f"format {_shown(got)} (this fencesim writes format {STATE_FORMAT})")
    _table(data, "the state", SECTIONS)
    arguments = _table(data["arguments"], "arguments", ARGUMENTS)
    _text(arguments["workload"], "arguments.workload")
    protocols = arguments["protocols"]
    if not isinstance(protocols, list) or not protocols or len(protocols) > 1000:
        raise _Bad(f"arguments.protocols must be a non-empty list, not {_shown(protocols)}")
    for label in protocols:
        _text(label, "arguments.protocols[]")
    if len(set(protocols)) != len(protocols):
        raise _Bad("arguments.protocols names a protocol twice")
    seeds = _int(arguments["seeds"], "arguments.seeds", 1, MAX_SEEDS)
    _int(arguments["seed_start"], "arguments.seed_start", 0, 2**63 - 1 - seeds)
    _flag(arguments["advise"], "arguments.advise")
    _text(arguments["workload_digest"], "arguments.workload_digest", optional=True)
    _number(arguments["shrink_seconds"], "arguments.shrink_seconds", 1e-9)
    if arguments["budget_s"] is not None:
        _number(arguments["budget_s"], "arguments.budget_s", 1e-9)
    outputs = _table(data["outputs"], "outputs", OUTPUTS)
    for key in ("baseline", "junit", "write_baseline"):
        _text(outputs[key], f"outputs.{key}", optional=True)
    for key in ("check_determinism", "force", "json"):
        _flag(outputs[key], f"outputs.{key}")
    settings = _table(data["settings"], "settings", SETTINGS)
    if settings["workers"] is not None:
        _int(settings["workers"], "settings.workers", 1, 4096)
    if settings["backend"] not in ("local", "dask"):
        raise _Bad(f"settings.backend must be local or dask, not {_shown(settings['backend'])}")
    _text(settings["scheduler"], "settings.scheduler", optional=True)
    budget = _table(data["budget"], "budget", ("spent_s",))
    _number(budget["spent_s"], "budget.spent_s")
    sweep = _table(data["sweep"], "sweep", SWEEP)
    chunks = -(-seeds // CHUNK_SEEDS)
    next_chunk = _int(sweep["next_chunk"], "sweep.next_chunk", 0, chunks)
    done = _int(sweep["seeds_done"], "sweep.seeds_done", 0, seeds)
    if done != min(next_chunk * CHUNK_SEEDS, seeds):
        raise _Bad(f"sweep.seeds_done is {done}, but {next_chunk} chunk(s) of {CHUNK_SEEDS} seeds ran "
                   f"{min(next_chunk * CHUNK_SEEDS, seeds)}")
    tallies = sweep["tallies"]
    if not isinstance(tallies, dict) or sorted(tallies) != sorted(protocols):
        raise _Bad("sweep.tallies must hold one tally per protocol of arguments.protocols")
    for label, tally in tallies.items():
        _check_tally(tally, f"sweep.tallies[{label!r}]", done)
    _check_saturation(sweep["saturation"], protocols, done)
    if not isinstance(sweep["found"], list):
        raise _Bad(f"sweep.found must be a list, not {_shown(sweep['found'])}")
    for position, item in enumerate(sweep["found"]):
        _check_found(item, f"sweep.found[{position}]", arguments, done)


def _check_tally(tally: Any, name: str, done: int) -> None:
    _table(tally, name, TALLY)
    for key in ("invariants", "availability"):
        if not isinstance(tally[key], list) or not all(isinstance(v, str) for v in tally[key]):
            raise _Bad(f"{name}.{key} must be a list of names")
    runs = _int(tally["runs"], f"{name}.runs", 0, MAX_COUNT)
    if runs != done:
        raise _Bad(f"{name}.runs is {runs}, but the sweep ran {done} seeds per protocol")
    violating = _int(tally["violating_runs"], f"{name}.violating_runs", 0, runs)
    by_invariant = tally["by_invariant"]
    if not isinstance(by_invariant, dict) or sorted(by_invariant) != sorted(tally["invariants"]):
        raise _Bad(f"{name}.by_invariant must count each of its invariants")
    counts = [_int(v, f"{name}.by_invariant[{k!r}]", 0, violating) for k, v in by_invariant.items()]
    if violating and sum(counts) < violating:
        raise _Bad(f"{name}: {violating} violating runs, but only {sum(counts)} violations counted")
    by_finding = tally["by_finding"]
    if not isinstance(by_finding, dict) or len(by_finding) > 100_000:
        raise _Bad(f"{name}.by_finding must be an object of counts per finding")
    for key, value in by_finding.items():
        _int(value, f"{name}.by_finding[{key!r}]", 1, violating)
    counted = tally["counted"]
    if not isinstance(counted, dict) or sorted(counted) != sorted(tally["availability"]):
        raise _Bad(f"{name}.counted must count each of its availability findings")
    for key, value in counted.items():
        _int(value, f"{name}.counted[{key!r}]")
    measures = tally["measures"]
    if not isinstance(measures, dict) or len(measures) > 1000:
        raise _Bad(f"{name}.measures must be an object of numbers")
    for key, value in measures.items():
        _number(value, f"{name}.measures[{key!r}]")
    _int(tally["events"], f"{name}.events")
    _check_coverage(tally["coverage"], f"{name}.coverage", runs)
    ledger = _table(tally["ledger"], f"{name}.ledger", ("runs", "counts"))
    _int(ledger["runs"], f"{name}.ledger.runs", 0, runs)
    _counts(ledger["counts"], f"{name}.ledger.counts")


def _counts(data: Any, name: str, high: int = MAX_COUNT) -> None:
    if not isinstance(data, dict) or len(data) > 10_000:
        raise _Bad(f"{name} must be an object of counts")
    for key, value in data.items():
        _int(value, f"{name}[{key!r}]", 0, high)


def _check_coverage(coverage: Any, name: str, runs: int) -> None:
    from sim.core.coverage import SKETCH_BITS, parse_goal
    from sim.core.errors import FencesimError

    _table(coverage, name, COVERAGE)
    goals = coverage["goals"]
    if not isinstance(goals, list) or len(goals) > 1000:
        raise _Bad(f"{name}.goals must be a list of goals")
    for position, goal in enumerate(goals):
        text = goal.get("text") if isinstance(goal, dict) else goal
        try:
            parse_goal(text)
        except (FencesimError, TypeError, AttributeError):
            raise _Bad(f"{name}.goals[{position}] is not a goal: {_shown(text)}") from None
    _counts(coverage["reached"], f"{name}.reached", runs)
    _counts(coverage["kinds"], f"{name}.kinds")
    _counts(coverage["skips"], f"{name}.skips")
    sketch = _table(coverage["sketch"], f"{name}.sketch", ("registers",))
    registers = sketch["registers"]
    if not isinstance(registers, list) or len(registers) != 1 << SKETCH_BITS or not all(
            isinstance(r, int) and not isinstance(r, bool) and 0 <= r <= 64 for r in registers):
        raise _Bad(f"{name}.sketch.registers must be {1 << SKETCH_BITS} whole numbers from 0 to 64")


def _check_saturation(points: Any, protocols: list, done: int) -> None:
    if not isinstance(points, list) or len(points) > 1_000_000:
        raise _Bad("sweep.saturation must be a list of [seeds run, {protocol: distinct behaviours}]")
    last = 0
    for position, point in enumerate(points):
        if not isinstance(point, list) or len(point) != 2 or not isinstance(point[1], dict) \
                or sorted(point[1]) != sorted(protocols):
            raise _Bad(f"sweep.saturation[{position}] must be [seeds run, {{protocol: distinct behaviours}}]")
        last = _int(point[0], f"sweep.saturation[{position}][0]", last + 1 if position else 1, done)
        for label, count in point[1].items():
            _int(count, f"sweep.saturation[{position}][1][{label!r}]", 0, last)


def _check_found(item: Any, name: str, arguments: dict, done: int) -> None:
    _table(item, name, FOUND)
    if item["protocol"] not in arguments["protocols"]:
        raise _Bad(f"{name}.protocol {_shown(item['protocol'])} is not one of the sweep's protocols")
    _text(item["invariant"], f"{name}.invariant")
    if not isinstance(item["where"], str) or len(item["where"]) > 1000:
        raise _Bad(f"{name}.where must be a string (where the violation happens, or empty)")
    run = _int(item["run"], f"{name}.run", 0, max(0, done - 1))
    if done == 0:
        raise _Bad(f"{name}: a violation found before any seed ran")
    if item["seed"] != arguments["seed_start"] + run or isinstance(item["seed"], bool):
        raise _Bad(f"{name}.seed must be seed_start + run = {arguments['seed_start'] + run}, not "
                   f"{_shown(item['seed'])}")
    order = item["order"]
    if not isinstance(order, list) or not all(isinstance(e, str) and len(e) <= 10_000 for e in order) \
            or len(order) > 10_000:
        raise _Bad(f"{name}.order must be a list of at most 10000 events (strings)")


def load_workload(data: dict, path: Path):
    """The workload a state names (a name or a path), or one line naming the state file."""
    from sim.registry import FAMILIES

    try:
        return FAMILIES.load_workload(data["arguments"]["workload"])
    except InputError as error:
        raise InputError(f"the sweep's workload cannot be loaded ({error}); delete it to start afresh",
                         str(path)) from None


def check_against(data: dict, family, workload, path: Path) -> None:
    """The state's tallies against the family and workload: its invariants and findings, the orders it
    found (they must read and violate what they say), one first violation per violating (protocol,
    invariant) and none for an invariant never counted."""
    try:
        _check_meaning(data, family, workload)
    except _Bad as error:
        raise InputError(f"not a sweep state this fencesim can resume: {error}; delete it to start afresh",
                         str(path)) from None


def _check_measures(measures: dict, label: str, family, workload) -> None:
    """Only the measures a sweep of this protocol sums (``fired_deddupe`` is no measure of any protocol)."""
    if not measures:
        return
    from sim.search.sweep import measure_names

    try:
        known = set(measure_names(family, workload, family.parse_protocol(label)))
    except FencesimError as error:
        raise _Bad(f"sweep.tallies[{label!r}]: {error}") from None
    unknown = sorted(set(measures) - known)
    if unknown:
        raise _Bad(f"sweep.tallies[{label!r}].measures has {shown(unknown[0])}, which no sweep of it measures")


def _check_progress(tally: dict, label: str, family, workload, seed_start: int) -> None:
    """The tally's measures against its counts: work planned is the runs times what one run plans (the same
    in every run of a workload: measured by replaying the first seed), work done and done safely are within
    it, and work done unsafely means violating runs (an edited state that claims a clean sweep beside
    measures of unsafe work is refused)."""
    measures, runs = tally["measures"], tally["runs"]
    if not measures or not runs or family.progress is None:
        return
    done_name, planned_name = family.progress
    from sim.search.oracle import evaluate

    protocol = family.parse_protocol(label)
    one = family.measure(evaluate(family, workload.base, protocol, family.generate(workload, seed_start)).replay)
    per_run = one.get(planned_name)
    where = f"sweep.tallies[{label!r}]"
    if per_run is not None and measures.get(planned_name) != per_run * runs:
        raise _Bad(f"{where}.measures[{planned_name!r}] is {_shown(measures.get(planned_name))}, but {runs} runs "
                   f"plan {per_run * runs:g} ({per_run:g} each)")
    planned = measures.get(planned_name, 0)
    done = measures.get(done_name, 0)
    if done > planned:
        raise _Bad(f"{where}.measures: {done_name} {done:g} exceeds {planned_name} {planned:g}")
    if family.safe_progress is None:
        return
    safe = measures.get(family.safe_progress[0], 0)
    if safe > done:
        raise _Bad(f"{where}.measures: {family.safe_progress[0]} {safe:g} exceeds {done_name} {done:g}")
    if safe < done and tally["violating_runs"] == 0:
        raise _Bad(f"{where} counts no violating run, but its measures say {done - safe:g} of {done:g} "
                   f"{done_name.replace('_', ' ')} were not safe")


def _check_meaning(data: dict, family, workload) -> None:
    sweep = data["sweep"]
    labels = set()
    for label in data["arguments"]["protocols"]:
        try:
            labels.add(family.parse_protocol(label).label)
        except FencesimError as error:
            raise _Bad(f"arguments.protocols: {error}") from None
    for label, tally in sweep["tallies"].items():
        if tuple(tally["invariants"]) != tuple(family.safety_invariants) or tuple(tally["availability"]) != tuple(
                family.availability_columns):
            raise _Bad(f"sweep.tallies[{label!r}] counts other invariants than the {family.name} family's")
        _check_measures(tally["measures"], label, family, workload)
        _check_progress(tally, label, family, workload, data["arguments"]["seed_start"])
        if tally["events"] > tally["runs"] * max(1, workload.max_events):
            raise _Bad(f"sweep.tallies[{label!r}].events exceeds {workload.max_events} events per run")
    pairs, findings = set(), set()
    for position, item in enumerate(sweep["found"]):
        finding = finding_id(item["invariant"], item["where"])
        if item["invariant"] not in family.safety_invariants:
            raise _Bad(f"sweep.found[{position}].invariant {item['invariant']!r} is not an invariant of the "
                       f"{family.name} family")
        if (item["protocol"], finding) in findings:
            raise _Bad(f"sweep.found names {finding} under {item['protocol']} twice")
        findings.add((item["protocol"], finding))
        pairs.add((item["protocol"], item["invariant"]))
        if len(item["order"]) > workload.max_events:
            raise _Bad(f"sweep.found[{position}].order is longer than the workload's max_events")
        try:
            order = tuple(family.parse_event(workload.base, text) for text in item["order"])
        except (FencesimError, ValueError) as error:
            raise _Bad(f"sweep.found[{position}].order: {error}") from None
        from sim.search.oracle import evaluate

        protocol = family.parse_protocol(item["protocol"])
        if finding not in evaluate(family, workload.base, protocol, order, (item["invariant"],)).findings:
            raise _Bad(f"sweep.found[{position}].order does not show {finding} under {item['protocol']}")
    for label, tally in sweep["tallies"].items():
        for finding, count in tally["by_finding"].items():
            if (label, finding) not in findings:
                raise _Bad(f"sweep.tallies[{label!r}] counts {count} runs showing {finding}, but sweep.found "
                           "has no order for it")
        for invariant, count in tally["by_invariant"].items():
            if bool(count) != ((label, invariant) in pairs):
                raise _Bad(f"sweep.tallies[{label!r}] counts {count} runs violating {invariant}, but sweep.found "
                           f"{'has no order' if count else 'has an order'} for it")


def resume_command(folder: Path, json_out: bool) -> str:
    """The one command that continues the sweep in ``folder`` (every other option is in its state)."""
    import shlex

    return f"fencesim fuzz --resume {shlex.quote(str(folder))}" + (" --json" if json_out else "")
