"""Duplicate-effect exposure: the seed's worked example, exactly, and measured in the model.

Analytic (:func:`analytic`): exact decimal arithmetic, nothing rounded on
the way; only ``human_exceptions_rounded`` is rounded, half up.  With the
defaults it is the seed's example: 70,000 requests; 2,870 ambiguous; 1,722
already committed; 2,861.39 reconciled automatically; 8.61 -> 9 human
exceptions.

Simulated (:func:`simulate`, in :mod:`sim.families.effects.exposure_simulation`
and importable from here): the worked example's workflow (N keyed
transitions), or a user's, run task by task in the runtime model under each
protocol, with 95% intervals.  This module also draws the figure and writes
a review's exposure sections.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pandas as pd

from sim.core.errors import InputError
from sim.families.effects.exposure_simulation import (
    BATCH_TASKS,
    BY_TRANSITION,
    COUNT_METRICS,
    EXERCISED_BY_CLASS,
    FIXED_CANDIDATES,
    INTERVAL_METHODS,
    NOT_EXERCISED,
    TASK_COLUMNS,
    TASK_SHARE_METRICS,
    WORKFLOW_INTERVAL_METHODS,
    check_exercised,
    correct,
    measure_by_transition,
    measure_tasks,
    not_exercised,
    simulate,
    simulated_json,
    simulated_table,
    summarise,
    violating_tasks,
)
from sim.families.effects.exposure_workflow import decimal_number as _decimal
from sim.families.effects.exposure_workflow import decimal_rate
from sim.families.effects.workflow import Workflow

__all__ = ["ANALYTIC_FIELDS", "BATCH_TASKS", "BY_TRANSITION", "COUNT_METRICS", "EXERCISED_BY_CLASS",
           "FIXED_CANDIDATES", "INTERVAL_METHODS", "NOT_EXERCISED", "TASK_COLUMNS", "TASK_SHARE_METRICS",
           "WORKED_EXAMPLE", "WORKFLOW_INTERVAL_METHODS", "analytic", "analytic_json", "analytic_table",
           "check_exercised", "correct", "exposure_figure", "flatten_by_transition", "measure_by_transition",
           "measure_tasks", "not_exercised", "plain_number", "review_sections", "simulate", "simulated_json",
           "simulated_table", "summarise", "violating_tasks", "workflow_label"]

WORKED_EXAMPLE: dict[str, Any] = {
    "tasks": 10_000,
    "transitions": 7,
    "ambiguous_rate": "0.041",
    "committed_rate": "0.60",
    "reconcile_rate": "0.997",
}

ANALYTIC_FIELDS = ("requests", "ambiguous", "already_committed", "auto_reconciled", "human_exceptions",
                   "human_exceptions_rounded")


def analytic(tasks: Any = 10_000, transitions: Any = 7, ambiguous_rate: Any = "0.041",
             committed_rate: Any = "0.60", reconcile_rate: Any = "0.997") -> dict[str, Decimal | int]:
    """The worked example's arithmetic, exact.  Rates are fractions (0.041, not 4.1%).

    >>> a = analytic()
    >>> a["requests"], a["ambiguous"], a["already_committed"], a["auto_reconciled"], a["human_exceptions"]
    (Decimal('70000'), Decimal('2870.000'), Decimal('1722.00000'), Decimal('2861.390000'), Decimal('8.610000'))
    >>> a["human_exceptions_rounded"]
    9
    """
    rates = {name: decimal_rate(value, name) for name, value in
             (("ambiguous_rate", ambiguous_rate), ("committed_rate", committed_rate),
              ("reconcile_rate", reconcile_rate))}
    requests = _decimal(tasks, "tasks") * _decimal(transitions, "transitions")
    ambiguous = requests * rates["ambiguous_rate"]
    human = ambiguous * (1 - rates["reconcile_rate"])
    return {
        "requests": requests,
        "ambiguous": ambiguous,
        "already_committed": ambiguous * rates["committed_rate"],
        "auto_reconciled": ambiguous * rates["reconcile_rate"],
        "human_exceptions": human,
        "human_exceptions_rounded": int(human.to_integral_value(rounding=ROUND_HALF_UP)),
    }


def plain_number(value: Decimal | int) -> int | float:
    """A Decimal as JSON wants it: an int when whole, else the float with the same digits."""
    if isinstance(value, int):
        return value
    return int(value) if value == value.to_integral_value() else float(value)


def analytic_json(**rates: Any) -> dict[str, int | float]:
    return {name: plain_number(value) for name, value in analytic(**rates).items()}


def analytic_table(**rates: Any) -> pd.DataFrame:
    """The analytic quantities as a DataFrame (quantity, value)."""
    values = analytic_json(**rates)
    return pd.DataFrame({"quantity": list(values), "value": list(values.values())})


# -- simulation ------------------------------------------------------------------------

#: Per-task columns measured from each task's history.
def exposure_figure(simulated: dict[str, dict[str, dict[str, float]]], analytic_values: dict | None = None):
    """A matplotlib Figure: duplicate effects and human exceptions per preset, with CIs (for notebooks)."""
    from matplotlib.figure import Figure

    analytic_values = analytic_values or analytic_json()
    figure = Figure(figsize=(9, 3.6))
    axes = figure.subplots(1, 2)
    presets = list(simulated)
    for ax, metric, reference, label in (
        (axes[0], "duplicate_effects", analytic_values["already_committed"], "analytic exposure"),
        (axes[1], "human_exceptions", analytic_values["human_exceptions"], "analytic human exceptions"),
    ):
        values = [simulated[p][metric]["value"] for p in presets]
        low = [v - simulated[p][metric]["ci_low"] for p, v in zip(presets, values)]
        high = [simulated[p][metric]["ci_high"] - v for p, v in zip(presets, values)]
        ax.bar(range(len(presets)), values, yerr=[low, high], capsize=4, color="#4c72b0")
        ax.axhline(float(reference), color="#c44e52", linestyle="--", label=label)
        ax.set_xticks(range(len(presets)), presets, rotation=20, ha="right", fontsize=8)
        ax.set_title(metric.replace("_", " "))
        ax.legend(fontsize=8)
    figure.tight_layout()
    return figure


# -- the review's sections ----------------------------------------------------------------------------

def review_sections(scenario, protocols, simulated_tasks: int, telemetry: dict | None = None) -> list[dict]:
    """A review's exposure: the design's workflow (its arithmetic, and the model run under each protocol its
    transitions exercise, per transition too), then the worked example as a reference table only.

    ``telemetry``: the workload's (or the design's) ``[telemetry]``; the rates and tasks per period it gives
    replace the worked example's, and the section says which it used."""
    from sim.families.effects.exposure_draws import ExposureRates
    from sim.families.effects.exposure_workflow import (
        differences,
        telemetry_rates,
        telemetry_tasks,
        workflow_analytic,
    )

    workflow = scenario.workflow
    tasks = telemetry_tasks(telemetry) or WORKED_EXAMPLE["tasks"]
    side_effecting = [t.name for t in workflow.side_effecting()]
    rates = {k: v for k, v in WORKED_EXAMPLE.items() if k.endswith("_rate")}
    given = telemetry_rates(telemetry)
    rates.update(given)
    accepted, refused = [], []
    for protocol in protocols:
        try:
            check_exercised(protocol, workflow)
            accepted.append(protocol.label)
        except InputError as error:
            refused.append(f"{protocol.label}: {error.message}")
    analytic = {name: plain_number(value) for name, value in
                workflow_analytic(workflow, tasks, arguments=scenario.arguments, **rates).items()}
    draws = ExposureRates(float(rates["ambiguous_rate"]), float(rates["committed_rate"]),
                          float(rates["reconcile_rate"]),
                          worker_loss_share=float((telemetry or {}).get("worker_loss_share", 0.5)))
    simulated = simulated_json(simulate(accepted, seeds=simulated_tasks, tasks=tasks, workflow=workflow,
                                        arguments=scenario.arguments, rates=draws)) if accepted else {}
    metrics = {label: flatten_by_transition(values) for label, values in simulated.items()}
    shown = (f"{_percent(rates['ambiguous_rate'])} of requests ambiguous, {_percent(rates['committed_rate'])} of "
             f"those already committed, {_percent(rates['reconcile_rate'])} reconcilable")
    source = ("the rates of its [telemetry] (" + ", ".join(sorted(given)) + " given; the worked example's for "
              "the rest)" if given or telemetry_tasks(telemetry) else "the worked example's rates")
    own = {
        "title": f"Duplicate-effect exposure of this design's workflow ({workflow_label(workflow)})",
        "text": (f"This design's own workflow: {len(side_effecting)} side-effecting transitions per task "
                 f"({', '.join(side_effecting)}), {tasks:,} tasks per period, with {source}: {shown}. The "
                 f"arithmetic is exact and counts as the simulation does; the simulation runs the model on "
                 f"{simulated_tasks:,} tasks per protocol and scales to {tasks:,}, its irreversible and keyless "
                 "steps included; rows 'T: metric' are per transition. verified_tasks are terminal tasks with a "
                 "receipt for every request and no safety violation; a fixed count has no interval and a count of "
                 "tasks is bounded by the tasks. Where the arithmetic and the model differ: "
                 + "; ".join(differences(workflow, scenario.arguments)) + "."),
        "analytic": analytic, "metrics": metrics,
        "reference": {"duplicate_effects": analytic["already_committed"],
                      "human_exceptions": analytic["human_exceptions"]},
        "plot": ["duplicate_effects", "human_exceptions"],
        "methods": dict(WORKFLOW_INTERVAL_METHODS), "unit": f"per {tasks:,} tasks", "not_simulated": refused,
    }
    reference = {
        "title": "Reference only: the seed's worked example (not this design)",
        "text": (f"The seed's worked example, the same for every design and shown only for comparison: "
                 f"{WORKED_EXAMPLE['tasks']:,} tasks x {WORKED_EXAMPLE['transitions']} keyed transitions "
                 "(generic:7), by exact arithmetic."),
        "analytic": analytic_json(), "metrics": {}, "reference": {}, "plot": [],
        "methods": {"arithmetic": "exact decimal arithmetic, the last line rounded half up"},
        "unit": f"per {WORKED_EXAMPLE['tasks']:,} tasks", "not_simulated": [],
    }
    return [own, reference]


def _percent(rate: Any) -> str:
    """A rate as the text shows it (0.041 -> 4.1%), exact."""
    value = (Decimal(str(rate)) * 100).normalize()
    return f"{value:f}%"


def workflow_label(workflow: Workflow) -> str:
    return "declared in the file" if workflow.spec is not None else workflow.name


def flatten_by_transition(metrics: dict) -> dict:
    """A protocol's metrics with its per-transition counts as rows ``T: metric`` (tables show one row each)."""
    out = {m: v for m, v in metrics.items() if m != "by_transition"}
    for name, values in metrics.get("by_transition", {}).items():
        for metric in ("duplicate_effects", "human_exceptions"):
            out[f"{name}: {metric}"] = values[metric]
    return out
