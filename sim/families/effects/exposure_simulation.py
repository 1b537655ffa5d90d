"""Duplicate-effect exposure measured in the model: the worked example's workflow, or a user's, task by task.

:func:`simulate` runs the workflow (N keyed transitions, or a user's own) task by task in the runtime model
under each protocol.  Task ``i`` gets the faults :func:`sim.families.effects.exposure_draws.exposure_schedule`
draws from ``random.Random(seed + i)`` -- the convention of every sweep; the model reads them and never draws.
Counts are scaled to ``tasks`` tasks with exact Poisson intervals, shares get Wilson intervals, means a
delta-method interval clipped at zero (``sim.core.stats``); no interval goes below zero.  Batches of tasks
share one run (they never interact), which does not change any task's history.  A protocol
whose knobs the simulation cannot exercise is refused (:func:`check_exercised`), never silently run under
the default's numbers.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pandas as pd

from sim.core import stats
from sim.core.checks import run_checks
from sim.core.errors import InputError
from sim.core.knobs import Protocol
from sim.core.values import JsonObject
from sim.families.effects.checks import CHECKS
from sim.families.effects.exposure_draws import ExposureRates, exposure_schedule, task_rng
from sim.families.effects.faults import FaultSchedule
from sim.families.effects.knobs import PRESETS, TABLE
from sim.families.effects.runner import run_autonomous
from sim.families.effects.stats import ratio_estimate
from sim.families.effects.workflow import Workflow, generic, version_2

#: Tasks per run in a simulation.
BATCH_TASKS = 250

#: Knobs the worked example's faults cannot exercise, and why: a simulation that
#: set one would silently report the numbers of the default.  They are refused.
NOT_EXERCISED = {
    "compensation": "no task aborts (no postcondition fails)",
    "approval": "the worked example's workflow (generic:7) has no irreversible step",
    "version_policy": "no workflow upgrade happens mid-task",
    "lease_fence": "no worker outlives its lease (no zombie)",
    "receipt_check": "no foreign object carries a task's marker",
    "irreversible_keys": "the worked example's workflow (generic:7) has no irreversible step",
    "ledger_dedupe": "the worked example's workflow (generic:7) has no append step",
    "pin_reads": "no read observes a world that changes (the simulation draws no read_changes)",
}


#: For a user's workflow: the knobs its own transitions exercise (approval and irreversible keys with an
#: irreversible step, the ledger with an append); the others stay refused as above.
EXERCISED_BY_CLASS = {"approval": "irreversible", "irreversible_keys": "irreversible", "ledger_dedupe": "append"}


def not_exercised(workflow: Workflow | None = None) -> dict[str, str]:
    """The knobs a simulation of ``workflow`` (None: the worked example's) cannot exercise, and why."""
    if workflow is None:
        return NOT_EXERCISED
    classes = {t.effect_class for t in workflow.transitions}
    out = {name: why.replace("the worked example's workflow (generic:7)", "this workflow")
           for name, why in NOT_EXERCISED.items()
           if EXERCISED_BY_CLASS.get(name) not in classes}
    if "append" not in classes:
        out["ledger_dedupe"] = "this workflow has no append step"
    return out


def check_exercised(protocol: Protocol, workflow: Workflow | None = None) -> None:
    """Refuse, with one line, a protocol whose knobs the exposure simulation would silently ignore."""
    defaults = TABLE.resolve({})
    for name, why in not_exercised(workflow).items():
        knob = TABLE.knob(name)
        if protocol.knobs[name] != defaults[name]:
            raise InputError(
                f"exposure --simulate does not exercise {name}={knob.show(protocol.knobs[name])} ({why}); "
                f"search it with: fencesim fuzz --workload {'effects-saga' if workflow is None else 'FILE'} "
                f"--protocol '{protocol.label}'"
            )

TASK_COLUMNS = (
    "requests", "dispatches", "ambiguous", "already_committed", "duplicate_effects", "duplicate_deliveries",
    "auto_reconciled", "human_exceptions", "unknown_as_failed", "resumed_after_loss", "resumes",
    "recovery_point_s", "compensations_owed", "compensations_done", "compensation_age_s", "replay_divergence",
    "replay_compute_waste", "reconciliations", "reconciliation_latency_s", "compute_units", "terminal_verified",
    "reads", "approvals",
)


def _count_dispatch(columns: dict[str, np.ndarray], row: int, key: tuple, fields: dict, first: set[tuple],
                    reads: frozenset[str]) -> None:
    """A dispatch: the first of its transition is a request (of a read: a read), a later one a duplicate
    delivery (wasted compute)."""
    if key[1] in reads:
        if key not in first:
            first.add(key)
            columns["reads"][row] += 1
        return
    columns["dispatches"][row] += 1
    if key in first:
        columns["duplicate_deliveries"][row] += 1
        columns["replay_compute_waste"][row] += fields.get("compute_units", 0)
    else:
        first.add(key)
        columns["requests"][row] += 1


def measure_tasks(history, tasks: list[str], reads: frozenset[str] = frozenset()) -> dict[str, np.ndarray]:
    """Per-task metric columns from one batch history, in one pass; ``reads`` are counted apart from requests."""
    index = {task: i for i, task in enumerate(tasks)}
    columns = {name: np.zeros(len(tasks)) for name in TASK_COLUMNS}
    commits: dict[tuple, int] = {}
    reversible: dict[str, set[str]] = {}
    compensated: dict[str, set[str]] = {}
    committed_transitions: set[tuple] = set()
    timed_out: set[tuple] = set()
    receipts: dict[str, int] = {}
    first_dispatch: set[tuple] = set()
    for event in history:
        task = event.get("task")
        if task not in index:
            continue
        row = index[task]
        kind = event.event
        fields = event.fields
        if kind == "dispatched":
            _count_dispatch(columns, row, (task, fields["transition"]), fields, first_dispatch, reads)
        elif kind == "approved":
            columns["approvals"][row] += 1
        elif kind == "committed":
            group = (task, fields.get("logical"), fields.get("generation"))
            commits[group] = commits.get(group, 0) + 1
            if commits[group] > 1:
                columns["duplicate_effects"][row] += 1
            committed_transitions.add((task, fields["transition"]))
            if fields.get("compensation"):
                reversible.setdefault(task, set()).add(fields.get("effect"))
        elif kind == "timed_out":
            key = (task, fields["transition"])
            if key not in timed_out:
                timed_out.add(key)
                columns["ambiguous"][row] += 1
                if key in committed_transitions:
                    columns["already_committed"][row] += 1
            if fields.get("outcome") == "failed":
                columns["unknown_as_failed"][row] += 1
        elif kind == "reconciled":
            columns["reconciliations"][row] += 1
            columns["reconciliation_latency_s"][row] += fields.get("latency_s", 0)
            if fields.get("result") in ("found", "not_found"):
                columns["auto_reconciled"][row] += 1
        elif kind == "human_exception":
            columns["human_exceptions"][row] += 1
        elif kind == "resumed" and not fields.get("first"):
            columns["resumed_after_loss"][row] = 1
            columns["resumes"][row] += 1
            columns["recovery_point_s"][row] += fields.get("recovery_point_s", 0)
            columns["replay_compute_waste"][row] += fields.get("compute_units", 0)
        elif kind == "request_duplicated" or (kind == "delivered" and fields.get("duplicate")):
            columns["duplicate_deliveries"][row] += 1
        elif kind == "compensated":
            columns["compensations_done"][row] += 1
            compensated.setdefault(task, set()).add(fields.get("effect"))
            columns["compensation_age_s"][row] += fields.get("age_s", 0)
        elif kind == "replay_divergence":
            columns["replay_divergence"][row] += 1
        elif kind == "receipt_recorded" and fields.get("transition") not in reads:
            receipts[task] = receipts.get(task, 0) + 1
        elif kind == "task_terminal":
            if fields.get("outcome") == "succeeded" and receipts.get(task, 0) >= columns["requests"][row]:
                columns["terminal_verified"][row] = 1
            elif fields.get("outcome") != "succeeded":
                owed = reversible.get(task, set()) - compensated.get(task, set())
                columns["compensations_owed"][row] += len(owed)
        if "compute_units" in fields:
            columns["compute_units"][row] += fields["compute_units"]
    return columns


def simulate(
    presets: list[str] | None = None,
    seeds: int = 10_000,
    tasks: int = 10_000,
    transitions: int = 7,
    rates: ExposureRates | None = None,
    master_seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
    workflow: Workflow | None = None,
    arguments: dict[str, dict[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run ``seeds`` simulated tasks per preset; metrics scaled to ``tasks`` tasks, with 95% CIs.

    ``workflow``: a user's workflow (its irreversible and keyless steps included) instead of the worked
    example's ``generic:<transitions>``; its metrics follow the stricter rules of :func:`correct` and add
    per-transition counts (``by_transition``).  ``progress(preset, done, total)`` is called after each batch
    (the CLI prints it on stderr; the library never prints).
    """
    presets = list(presets or PRESETS)
    rates = rates or ExposureRates()
    run_workflow = workflow if workflow is not None else generic(transitions)
    names = [t.name for t in run_workflow.side_effecting()]
    protocols = [TABLE.parse(p) for p in presets]
    for protocol in protocols:
        check_exercised(protocol, workflow)
    out: dict[str, dict[str, Any]] = {}  # preset -> metric -> its triple, and "by_transition" -> name -> triples
    for preset, protocol in zip(presets, protocols):
        columns, by_transition, flagged = _run_protocol(protocol, run_workflow, names, seeds, rates, master_seed,
                                                        arguments, progress, preset, workflow is not None)
        out[preset] = summarise(columns, tasks)
        if workflow is not None:
            out[preset] = correct(out[preset], columns, tasks, flagged)
            out[preset]["by_transition"] = {
                name: {metric: _triple(stats.count(int(values.sum()), len(values), tasks))
                       for metric, values in metrics.items()} for name, metrics in by_transition.items()}
    return out


def _run_protocol(protocol, workflow, names, seeds, rates, master_seed, arguments, progress, label, strict):
    """Every batch of one protocol: per-task columns, per-transition columns, tasks with a safety violation."""
    parts: list[dict[str, np.ndarray]] = []
    by_parts: list[dict[str, dict[str, np.ndarray]]] = []
    flagged: list[np.ndarray] = []
    reads = frozenset(t.name for version in (workflow, version_2(workflow)) for t in version.transitions if t.is_read)
    for start in range(0, seeds, BATCH_TASKS):
        batch = [f"task_{i}" for i in range(start, min(seeds, start + BATCH_TASKS))]
        entries = [e for i in range(start, start + len(batch))
                   for e in exposure_schedule(f"task_{i}", names, rates, task_rng(master_seed + i))]
        rt, _, _ = run_autonomous(protocol, workflow, batch, FaultSchedule(entries), arguments=arguments)
        parts.append(measure_tasks(rt.history, batch, reads))
        if strict:
            by_parts.append(measure_by_transition(rt.history, batch, names))
            flagged.append(violating_tasks(rt.history, batch))
        if progress is not None:
            progress(label, start + len(batch), seeds)
    columns = {name: np.concatenate([p[name] for p in parts]) for name in TASK_COLUMNS}
    by_transition = {name: {metric: np.concatenate([p[name][metric] for p in by_parts]) for metric in BY_TRANSITION}
                     for name in names} if strict else {}
    return columns, by_transition, (np.concatenate(flagged) if strict else None)


#: Per-transition counts of a user's workflow: where the duplicates, the ambiguity and the humans are.
BY_TRANSITION = ("duplicate_effects", "ambiguous", "human_exceptions", "unknown_as_failed")


def measure_by_transition(history, tasks: list[str], names: list[str]) -> dict[str, dict[str, np.ndarray]]:
    """Per transition (by its logical name) and task: duplicate effects, ambiguous outcomes, humans."""
    index = {task: i for i, task in enumerate(tasks)}
    logical_of = {name: name for name in names}
    out = {name: {metric: np.zeros(len(tasks)) for metric in BY_TRANSITION} for name in names}
    commits: dict[tuple, int] = {}
    timed_out: set[tuple] = set()
    for event in history:
        task, name = event.get("task"), event.get("logical") or event.get("transition")
        if task not in index or logical_of.get(name) is None:
            continue
        row, metrics = index[task], out[name]
        if event.event == "committed":
            group = (task, name, event.get("generation"))
            commits[group] = commits.get(group, 0) + 1
            metrics["duplicate_effects"][row] += commits[group] > 1
        elif event.event == "timed_out":
            if (task, name) not in timed_out:
                timed_out.add((task, name))
                metrics["ambiguous"][row] += 1
            metrics["unknown_as_failed"][row] += event.get("outcome") == "failed"
        elif event.event == "human_exception":
            metrics["human_exceptions"][row] += 1
    return out


def violating_tasks(history, tasks: list[str]) -> np.ndarray:
    """1 for each task of the batch that some safety invariant finds violated, else 0."""
    index = {task: i for i, task in enumerate(tasks)}
    flagged = np.zeros(len(tasks))
    events = list(history)
    for violation in run_checks(CHECKS, history).safety_violations:
        if violation.event_index is None or not 0 <= violation.event_index < len(events):
            continue
        task = events[violation.event_index].get("task")
        if task in index:
            flagged[index[task]] = 1
    return flagged


def _triple(interval) -> dict[str, float]:
    return {"value": interval.value, "ci_low": interval.low, "ci_high": interval.high}


#: Counts that are fixed by construction when every task has the same (each side-effecting transition's first
#: request); a measured zero is not fixed (it keeps its upper bound).
FIXED_CANDIDATES = ("requests",)
#: Metrics that count tasks (at most one per task): their interval is a share of the tasks, never past them.
TASK_SHARE_METRICS = ("tasks_resumed_after_worker_loss", "terminal_verified_tasks", "verified_tasks")


def correct(summary: dict, c: dict[str, np.ndarray], tasks: int, flagged: np.ndarray | None) -> dict:
    """The stricter statistics of a user's workflow.

    A count that is the same for every task (``requests`` when no task stops early) is fixed: scaled exactly,
    with no interval.  A count of tasks is ``tasks`` x a Wilson share of the simulated tasks, so its interval
    never passes the population.  ``verified_tasks`` counts terminal tasks with a receipt for every request
    *and no safety violation* (a task that duplicated an effect is not verified), and
    ``cost_per_verified_task`` divides compute by them."""
    out = dict(summary)
    n = len(c["requests"])
    for name in FIXED_CANDIDATES:
        values = c[COUNT_METRICS[name]]
        if n and np.all(values == values[0]):
            out[name] = {"value": float(values[0]) * tasks, "ci_low": None, "ci_high": None}
    verified = c["terminal_verified"] if flagged is None else c["terminal_verified"] * (1 - flagged)
    shares = {"tasks_resumed_after_worker_loss": c["resumed_after_loss"],
              "terminal_verified_tasks": c["terminal_verified"], "verified_tasks": verified}
    for name, values in shares.items():
        interval = stats.share(int(values.sum()), n)
        out[name] = {"value": interval.value * tasks, "ci_low": interval.low * tasks, "ci_high": interval.high * tasks}
    for name in ("reads", "approvals"):  # counted apart from requests and exceptions, as the arithmetic does
        values = c[name]
        fixed = n and np.all(values == values[0])
        out[name] = ({"value": float(values[0]) * tasks, "ci_low": None, "ci_high": None} if fixed
                     else _triple(stats.count(int(values.sum()), n, tasks)))
    if flagged is not None:
        out["tasks_with_a_safety_violation"] = {"value": float(flagged.sum()) / n * tasks,
                                                "ci_low": stats.share(int(flagged.sum()), n).low * tasks,
                                                "ci_high": stats.share(int(flagged.sum()), n).high * tasks}
    value, low, high = ratio_estimate(c["compute_units"], verified)
    out["cost_per_verified_task"] = {"value": value, "ci_low": max(0.0, low) if low == low else low, "ci_high": high}
    return out


#: Metrics that count events (exact Poisson interval on the total, scaled to the period's tasks).
COUNT_METRICS = {
    "requests": "requests", "ambiguous": "ambiguous", "already_committed": "already_committed",
    "duplicate_effects": "duplicate_effects", "duplicate_deliveries": "duplicate_deliveries",
    "auto_reconciled": "auto_reconciled", "human_exceptions": "human_exceptions",
    "unknown_as_failed": "unknown_as_failed", "replay_divergence": "replay_divergence",
    "tasks_resumed_after_worker_loss": "resumed_after_loss", "terminal_verified_tasks": "terminal_verified",
}


def summarise(c: dict[str, np.ndarray], tasks: int) -> dict[str, dict[str, float]]:
    """The reported metrics: counts per ``tasks`` tasks, shares and means as measured, each with a 95% interval."""
    def triple(interval) -> dict[str, float]:
        return {"value": interval.value, "ci_low": interval.low, "ci_high": interval.high}

    n = len(c["requests"])
    out = {name: triple(stats.count(int(c[column].sum()), n, tasks)) for name, column in COUNT_METRICS.items()}
    waste = ratio_estimate(c["replay_compute_waste"] * tasks, np.ones(n))
    out["replay_compute_waste"] = {"value": waste[0], "ci_low": max(0.0, waste[1]), "ci_high": waste[2]}
    ambiguous = int(c["ambiguous"].sum())
    out["unknown_outcomes_reconciled_automatically"] = triple(
        stats.share(min(int(c["auto_reconciled"].sum()), ambiguous), ambiguous))
    done = int(c["compensations_done"].sum())
    out["compensation_success"] = triple(stats.share(done, done + int(c["compensations_owed"].sum())))
    for name, numerator, denominator in (
        ("mean_recovery_point_s", "recovery_point_s", "resumes"),
        ("compensation_age_s", "compensation_age_s", "compensations_done"),
        ("reconciliation_latency_s", "reconciliation_latency_s", "reconciliations"),
        ("cost_per_terminal_verified_task", "compute_units", "terminal_verified"),
    ):
        value, low, high = ratio_estimate(c[numerator], c[denominator])
        out[name] = {"value": value, "ci_low": max(0.0, low) if low == low else low, "ci_high": high}
    return out


#: How each metric's interval is computed (the report names the method).
INTERVAL_METHODS = {
    **{name: stats.METHODS["count"] for name in COUNT_METRICS},
    "unknown_outcomes_reconciled_automatically": stats.METHODS["share"],
    "compensation_success": stats.METHODS["share"],
    **{name: "delta-method normal interval of a ratio of sums, clipped at 0" for name in (
        "replay_compute_waste", "mean_recovery_point_s", "compensation_age_s", "reconciliation_latency_s",
        "cost_per_terminal_verified_task")},
}
#: A user's workflow (:func:`correct`): fixed counts have no interval, counts of tasks a share of them.
WORKFLOW_INTERVAL_METHODS = {
    **INTERVAL_METHODS,
    **{name: "tasks x Wilson score interval of the share of simulated tasks, 95% (never past the population)"
       for name in TASK_SHARE_METRICS + ("tasks_with_a_safety_violation",)},
    "cost_per_verified_task": "delta-method normal interval of a ratio of sums, clipped at 0",
    "fixed counts": "none: a count the same for every task is exact (requests, when no task stops early)",
}


def simulated_json(simulated: dict[str, dict[str, dict[str, float]]]) -> dict[str, JsonObject]:
    """NaN (a metric with nothing to measure, e.g. compensation age with no aborts) becomes null."""
    def clean(x: float) -> float | None:
        return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(x, 6)

    def metrics_json(metrics: dict) -> dict:
        return {m: (metrics_json(t) if m == "by_transition" or "value" not in t else
                    {k: clean(v) for k, v in t.items()}) for m, t in metrics.items()}

    return {p: metrics_json(metrics) for p, metrics in simulated.items()}


def simulated_table(simulated: dict[str, dict[str, dict[str, float]]] | None = None, **options: Any) -> pd.DataFrame:
    """A long DataFrame (preset, metric, value, ci_low, ci_high); runs :func:`simulate` if not given."""
    simulated = simulated if simulated is not None else simulate(**options)
    rows = [{"preset": preset, "metric": metric, **values}
            for preset, metrics in simulated.items() for metric, values in metrics.items()]
    return pd.DataFrame(rows, columns=["preset", "metric", "value", "ci_low", "ci_high"])
