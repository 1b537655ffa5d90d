"""Conformance: the same event orders in the model and against a real executor.

For each seed, the workload's generator draws one order; the model replays
it, the driver plays it against the executor process, and the real history
goes through the same path as ``fencesim check`` (JSON lines, read back,
schema and field types validated, checks run).  The two runs *agree* when

* every event has the same name, actor and skip status at the same place;
* every delivery has the same step, verdict and crash point, and the same
  value for each field both histories record about it (stamps, revisions,
  hashes, journal key, incarnation);
* the checks report the same violations (invariant, event, step);
* the workspace ends with the same files and revision.

A disagreement is shrunk (delta debugging, then single-event removal, with
"the runs still disagree" as the property) and exported: the order as a
scenario file, both histories, and a side-by-side view.
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Sequence

from sim.core.family import Family, Replay
from sim.core.files import write_files_atomically
from sim.core.history import History
from sim.core.knobs import Protocol
from sim.core.values import JsonObject
from sim.core.workload import Workload
from sim.real.driver import RealRun, RealRunError, run_real
from sim.search.budget import Deadline
from sim.search.shrink import minimize

#: Fields of a delivery compared between model and reality (when the model records the field).
DELIVERY_FIELDS = ("step", "verdict", "preempted", "origin", "copy", "fence", "dedupe", "stamped_base_rev",
                   "stamped_pre_hash", "rev_at_apply", "hash_before", "hunks_before", "hash_after", "rev_after",
                   "journal_key", "incarnation", "expected_prior_hash", "expected_prior_hunks", "domain")
#: Wall-clock seconds one disagreement may take to shrink (each probe is a real run).
CONFORM_SHRINK_SECONDS_MAX = 120.0
#: Differences kept per run (the first ones tell the story).
MAX_DIFFERENCES = 12


@dataclass
class Side:
    """One side of a comparison: its history, violations and final workspace."""

    history: History
    violations: list[tuple[str, int | None, str | None]]  # (invariant, event index, step)
    files: dict[str, Any]
    rev: int
    problems: list[str] = field(default_factory=list)  # lines of the history that are not valid
    unjudged: dict[str, str] = field(default_factory=dict)  # check -> why it could not judge the history


def model_side(family: Family, scenario: Any, protocol: Protocol, events: Sequence[Any]) -> tuple[Side, Replay]:
    replay = family.replay(scenario, protocol, events)
    report = family.check(replay.history)
    world = replay.state
    files = {path: dict(world.machine.file(world.state, path)) for path in world.machine.paths}
    violations = [(v.invariant, v.event_index, v.step) for v in report.safety_violations]
    return Side(replay.history, violations, files, world.state.rev, unjudged=_unjudged(report)), replay


def _unjudged(report) -> dict[str, str]:
    return {r.name: r.reason for r in report.not_evaluable}


def real_side(family: Family, run: RealRun) -> Side:
    """The real history, read back as ``fencesim check`` reads a file, validated and checked."""
    history = History.from_jsonl(run.replay.history.to_jsonl(), where="real history")
    problems = [f"real history line {index}: {text}" for index, text in family.validate_history(history)]
    report = family.check(history)
    violations = [(v.invariant, v.event_index, v.step) for v in report.safety_violations]
    return Side(history, violations, run.files, run.rev, problems, _unjudged(report))


def _shown(value: Any) -> str:
    return "absent" if value is None else repr(value)


def compare(model: Side, real: Side) -> tuple[list[str], int, int]:
    """The differences (empty when the runs agree), deliveries compared, deliveries agreeing."""
    differences = list(real.problems)
    deliveries = agreeing = 0
    for index in range(max(len(model.history), len(real.history))):
        m = model.history[index] if index < len(model.history) else None
        r = real.history[index] if index < len(real.history) else None
        if m is None or r is None:
            side, only = ("model", m) if r is None else ("real executor", r)
            if only is not None:
                differences.append(f"event {index}: only the {side} has {only.event} ({only.actor})")
            continue
        if (m.event, m.actor, bool(m.get("skipped"))) != (r.event, r.actor, bool(r.get("skipped"))):
            differences.append(f"event {index}: model {m.actor} {m.event}{' (skipped)' if m.get('skipped') else ''}, "
                               f"real {r.actor} {r.event}{' (skipped)' if r.get('skipped') else ''}")
            continue
        if m.event != "deliver" or m.get("skipped"):
            continue
        deliveries += 1
        unequal = [name for name in DELIVERY_FIELDS if m.get(name) != r.get(name)]
        if unequal:
            differences.append(f"event {index} deliver {m.get('step')}: " + ", ".join(
                f"{name} model {_shown(m.get(name))} real {_shown(r.get(name))}" for name in unequal))
        else:
            agreeing += 1
    for name in sorted(set(real.unjudged) - set(model.unjudged)):
        differences.append(f"{name} could not judge the real history ({real.unjudged[name]}) but judged the model's")
    for name in sorted(set(model.unjudged) - set(real.unjudged)):
        differences.append(f"{name} could not judge the model's history ({model.unjudged[name]}) but judged the "
                           "real one")
    if model.violations != real.violations:
        differences.append(f"violations: model {_violations(model.violations)}, real {_violations(real.violations)}")
    if model.rev != real.rev or model.files != real.files:
        differences.append(f"final workspace: model rev {model.rev} {model.files}, real rev {real.rev} {real.files}")
    return differences[:MAX_DIFFERENCES], deliveries, agreeing


def _violations(found: list[tuple[str, int | None, str | None]]) -> str:
    return "[" + ", ".join(f"{name} at {index} ({step})" for name, index, step in found) + "]" if found else "none"


@dataclass
class SeedResult:
    protocol: str
    seed: int | None  # None: a scenario's own order
    events: int
    deliveries: int
    deliveries_agreeing: int
    model_violations: list[str]
    real_violations: list[str]
    differences: list[str]
    seconds: float
    crashes: int
    failed: bool = False  # the real run failed: the executor hung, died or broke the interface

    @property
    def agree(self) -> bool:
        return not self.differences


@dataclass
class Comparison:
    """One order in the model and against the executor."""

    model: Side
    real: Side | None  # None: the real run failed before any event
    differences: list[str]
    deliveries: int
    agreeing: int
    seconds: float
    incidents: list = field(default_factory=list)  # the executor's crashes and what each restart recovered
    failed: bool = False  # the real run failed (hung, broke the interface): no verdict to compare


def conform_order(family: Family, scenario: Any, protocol: Protocol, events: Sequence[Any],
                  command: list[str] | None = None, keep: Path | None = None) -> Comparison:
    """Run one order in the model and against the real executor, and compare."""
    model, _ = model_side(family, scenario, protocol, events)
    started = time.monotonic()
    try:
        run = run_real(scenario, protocol, events, command=command, keep=keep)
    except RealRunError as error:
        partial = None
        if error.history is not None:
            partial = Side(error.history, [], {}, -1)
        return Comparison(model, partial, [f"the real run failed: {error}"], 0, 0, time.monotonic() - started,
                          list(error.incidents), failed=True)
    real = real_side(family, run)
    differences, deliveries, agreeing = compare(model, real)
    return Comparison(model, real, differences, deliveries, agreeing, run.seconds, list(run.incidents))


def conform_seed(family: Family, workload: Workload, protocol: Protocol, seed: int | None,
                 command: list[str] | None = None, events: Sequence[Any] | None = None) -> SeedResult:
    """One seed's order (or ``events``, a scenario's own) in the model and against the executor."""
    if events is None:
        if seed is None:
            raise ValueError("conform_seed needs a seed or the events to play")
        events = family.generate(workload, seed)
    found = conform_order(family, workload.base, protocol, events, command)
    return SeedResult(
        protocol.label, seed, len(events), found.deliveries, found.agreeing,
        [f"{name} {step}" for name, _, step in found.model.violations],
        [f"{name} {step}" for name, _, step in found.real.violations] if found.real and not found.failed else [],
        found.differences, round(found.seconds, 3), len(found.incidents), found.failed,
    )


_WORKER: dict[str, Any] = {}


def _init(family: Family, workload: Workload, command: list[str] | None, worker: bool = False) -> None:
    if worker:  # Ctrl-C is the parent's to handle: workers end quietly when it shuts the pool down
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _WORKER.update(family=family, workload=workload, command=command)


def _run(task: tuple[Protocol, int]) -> SeedResult:
    protocol, seed = task
    return conform_seed(_WORKER["family"], _WORKER["workload"], protocol, seed, _WORKER["command"])


def run_seeds(family: Family, workload: Workload, protocols: Sequence[Protocol], seeds: Sequence[int],
              workers: int = 1, command: list[str] | None = None,
              on_result: Callable[[SeedResult], None] | None = None) -> dict[str, list[SeedResult]]:
    """Every (protocol, seed) pair, in parallel when ``workers`` > 1; results in seed order."""
    tasks = [(p, s) for p in protocols for s in seeds]
    results: dict[str, list[SeedResult]] = {p.label: [] for p in protocols}
    if workers <= 1:
        _init(family, workload, command)
        outcomes = map(_run, tasks)
        for result in outcomes:
            results[result.protocol].append(result)
            if on_result:
                on_result(result)
    else:
        pool = ProcessPoolExecutor(workers, initializer=_init, initargs=(family, workload, command, True))
        try:
            for result in pool.map(_run, tasks, chunksize=4):
                results[result.protocol].append(result)
                if on_result:
                    on_result(result)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
    return results


@dataclass
class Summary:
    protocol: str
    runs: int
    agreeing: int
    deliveries: int
    deliveries_agreeing: int
    model_violating: int
    real_violating: int
    crashes: int
    slowest: float
    slowest_seed: int | None
    median: float

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


def summarize(protocol: str, results: list[SeedResult]) -> Summary:
    slowest = max(results, key=lambda r: r.seconds, default=None)
    return Summary(
        protocol, len(results), sum(r.agree for r in results), sum(r.deliveries for r in results),
        sum(r.deliveries_agreeing for r in results), sum(bool(r.model_violations) for r in results),
        sum(bool(r.real_violations) for r in results), sum(r.crashes for r in results),
        slowest.seconds if slowest else 0.0, slowest.seed if slowest else None,
        round(statistics.median(r.seconds for r in results), 3) if results else 0.0,
    )


class DisagreementOracle:
    """Do the model and the real executor still disagree on an order?  Each probe is a real run."""

    def __init__(self, family: Family, scenario: Any, protocol: Protocol, command: list[str] | None,
                 deadline: Deadline):
        self.family, self.scenario, self.protocol, self.command, self.deadline = (
            family, scenario, protocol, command, deadline)
        self.probes = 0
        self.cache: dict[tuple[str, ...], tuple[Any, ...] | None] = {}

    def exhausted(self) -> bool:
        return self.deadline.expired()

    def __call__(self, events) -> tuple[Any, ...] | None:
        key = tuple(str(e) for e in events)
        if key not in self.cache:
            self.probes += 1
            found = conform_order(self.family, self.scenario, self.protocol, tuple(events), self.command)
            if found.differences:
                skipped = {e.index for e in found.model.history if e.get("skipped")}
                self.cache[key] = tuple(e for i, e in enumerate(events) if i not in skipped)
            else:
                self.cache[key] = None
        return self.cache[key]


@dataclass
class Disagreement:
    protocol: str
    seed: int | None  # None: a scenario's own order
    original_length: int
    order: list[str]
    one_minimal: bool
    differences: list[str]
    files: list[str]
    probes: int


def shrink_and_export(family: Family, workload: Workload, protocol: Protocol, result: SeedResult, out_dir: Path,
                      command: list[str] | None = None, seconds: float = CONFORM_SHRINK_SECONDS_MAX,
                      events: Sequence[Any] | None = None,
                      skip_orders: Collection[tuple[str, ...]] = frozenset()) -> Disagreement | None:
    """Shrink one disagreement to a 1-minimal order (within ``seconds``) and write it out; None (nothing
    written) when it shrinks to an order in ``skip_orders``."""
    if events is None:
        if result.seed is None:
            raise ValueError("a scenario's own order is shrunk from its events: give them")
        events = family.generate(workload, result.seed)
    oracle = DisagreementOracle(family, workload.base, protocol, command, Deadline(seconds, "shrink_seconds"))
    order, one_minimal = tuple(events), False
    if not result.failed:  # a run that failed outright has nothing to shrink: every probe would fail the same way
        order = oracle(events) or tuple(events)
        order, one_minimal = minimize(order, oracle)
    if tuple(str(e) for e in order) in skip_orders:
        return None
    found = conform_order(family, workload.base, protocol, order, command)
    if not found.differences:  # pragma: no cover - a flaky executor; keep the seed's whole order
        order, one_minimal = tuple(events), False
        found = conform_order(family, workload.base, protocol, order, command)
    model, real, differences = found.model, found.real, found.differences
    from sim.report.export import scenario_toml, slug

    origin = "scenario" if result.seed is None else f"seed{result.seed}"
    base = workload.name[len("conform__"):] if workload.name.startswith("conform__") else workload.name
    name = f"conform__{slug(base)}__{slug(protocol.label)}__{origin}" if result.seed is not None else \
        (workload.name if workload.name.startswith("conform__") else f"conform__{slug(base)}__{slug(protocol.label)}")
    description = (f"The model and the real executor disagree on this order ({protocol.label}, "
                   f"{'its scenario' if result.seed is None else f'seed {result.seed}'}, "
                   f"shrunk from {len(events)} to {len(order)} events): " + "; ".join(differences[:3]))
    scenario = family.counterexample(workload, protocol, "conformance", order, {"name": name,
                                                                                "description": description})
    files = {
        out_dir / f"{name}.toml": scenario_toml(family, scenario),
        out_dir / f"{name}.model.jsonl": model.history.to_jsonl(),
        out_dir / f"{name}.real.jsonl": real.history.to_jsonl() if real else "",
        out_dir / f"{name}.side-by-side.txt": side_by_side(model, real, differences, found.incidents),
    }
    write_files_atomically(files)
    return Disagreement(protocol.label, result.seed, len(events), [str(e) for e in order], one_minimal,
                        differences, [str(p) for p in files], oracle.probes)


def _brief(event) -> str:
    if event is None:
        return ""
    text = f"{event.actor} {event.event}"
    if event.get("step"):
        text += f" {event.get('step')}"
    if event.get("skipped"):
        return text + " (skipped)"
    if event.get("verdict"):
        text += f" -> {event.get('verdict')}"
    if event.get("preempted"):
        text += f" [killed {event.get('preempted')}]"
    if event.get("point"):
        text += f" {event.get('point')}"
    return text


def side_by_side(model: Side, real: Side | None, differences: list[str], incidents: Sequence[Any] = ()) -> str:
    """The two histories in two columns; ``!=`` marks a row where they differ; then the differences, and each
    restart of the executor with what it recovered from disk."""
    rows = [("#", "model", "real executor", "")]
    real_history = real.history if real else History()
    for index in range(max(len(model.history), len(real_history))):
        m = model.history[index] if index < len(model.history) else None
        r = real_history[index] if index < len(real_history) else None
        same = m is not None and r is not None and m.event == r.event and all(
            m.get(n) == r.get(n) for n in DELIVERY_FIELDS)
        rows.append((str(index), _brief(m), _brief(r), "" if same else "!="))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"{a:>{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d}".rstrip() for a, b, c, d in rows]
    lines += ["", "Differences:"] + [f"  - {d}" for d in differences]
    if incidents:
        lines += ["", "Executor restarts (killed at, then what the new process recovered from disk):"]
        for number, incident in enumerate(incidents, start=1):
            recovered = ", ".join(f"{k}={v}" for k, v in incident.recovered.items() if v not in ([], None, ""))
            lines.append(f"  {number}. killed {incident.point or 'between deliveries'}; recovered: "
                         f"{recovered or 'nothing'}")
    return "\n".join(lines) + "\n"


def preflight(family: Family, scenario: Any, protocol: Protocol, command: list[str] | None) -> None:
    """Start the executor once on an order of no events: an executor that cannot start, hangs or breaks the
    interface is the user's input to fix, not a disagreement to shrink."""
    run_real(scenario, protocol, (), command=command)
