"""``fencesim incidents``: expected incidents per month from a workload's ``[telemetry]`` rates."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

import typer

from sim.cli.app import EXIT_OK, JSON_HELP, app, emit_json, human_console
from sim.core.errors import InputError
from sim.core.values import JsonObject

if TYPE_CHECKING:
    pass

#: The seed's worked-example quantities a simulated figure estimates: (quantity, protocol, check).
SEED_FIGURES = (
    ("already_committed", "unkeyed-retry", "duplicate_effect"),
    ("ambiguous", "keyed", "unknown_as_failed"),
    ("human_exceptions", "keyed-reconcile", "human_exceptions"),
    ("human_exceptions", "keyed-fingerprint-reconcile", "human_exceptions"),
)


def seed_arithmetic(workload, result) -> JsonObject:
    """For an effects workload: the seed's exposure arithmetic at the telemetry's rates and period, counted
    with the workflow's semantics (reads apart, unqueryable endpoints to a human), and each simulated figure
    that estimates one of its quantities, with whether the interval holds it and, when not, why."""
    from sim.families.effects.exposure import plain_number
    from sim.families.effects.exposure_workflow import outside_reasons, workflow_analytic

    telemetry = workload.telemetry
    workflow = workload.base.workflow
    analytic = {name: plain_number(value) for name, value in workflow_analytic(
        workflow, result.period, ambiguous_rate=str(telemetry["ambiguous_share"]),
        committed_rate=str(telemetry["committed_share"]),
        reconcile_rate=str(telemetry.get("reconciled_share", 1.0)), arguments=workload.base.arguments).items()}
    compared = []
    for quantity, protocol, check in SEED_FIGURES:
        found = result.protocols.get(protocol, {}).get(check)
        if found is not None:
            within = found.violations.contains(analytic[quantity])
            item = {"quantity": quantity, "analytic": analytic[quantity], "protocol": protocol,
                    "check": check, "violations": found.violations.to_json(), "within": within}
            if not within:
                above = analytic[quantity] > found.violations.low
                item["why_outside"] = outside_reasons(workflow, quantity, check, above)
            compared.append(item)
    return {"analytic": analytic, "compared": compared}


#: What is printed beside the estimates, by family name: the seed's exposure arithmetic for the effects family.
BESIDE = {"effects": seed_arithmetic}


def _cell(estimate) -> str:
    high = "unbounded" if estimate.high is None else f"{estimate.high:,.2f}"
    return f"{estimate.value:,.2f} [{estimate.low:,.2f}, {high}]"


def _print(console, result, document: dict) -> None:
    from rich.table import Table

    from sim.core.wrapping import name_cell, name_width, unbroken

    unit = f"{result.period:,.0f} {result.unit}"
    console.print(f"{result.workload} ({result.family}): expected incidents per {unit} a month", markup=False)
    means = ", ".join(f"{name} {value:.4g}" for name, value in result.fault_means.items()) or "none"
    console.print(f"faults per {result.unit[:-1]} (mean): {means}; {len(result.strata)} strata, tail not sampled "
                  f"{result.tail_probability:.3g}", markup=False)
    console.print(f"method: {result.method}", markup=False)
    console.print(f"interval: {result.interval}", markup=False)
    for measure, title in (("runs", f"{result.unit} violating"), ("violations", "violations")):
        table = Table(title=f"{title} per {unit} (estimate [95% simultaneous interval])", header_style="bold")
        table.add_column("check")
        for label in result.protocols:  # a header broken after "," and "=", never inside a word
            table.add_column(name_cell(label, 24), justify="right", min_width=name_width([name_cell(label, 24)]))
        first = next(iter(result.protocols.values()))
        for name, found in first.items():
            kind = "" if found.safety else " (availability)"
            table.add_row(name + kind, *(_cell(getattr(checks[name], measure)) for checks in result.protocols.values()))
        console.print(unbroken(table))
    for item in document.get("seed_arithmetic", {}).get("compared", []):
        verdict = "within the interval" if item["within"] else (
            "OUTSIDE the interval: " + "; ".join(item.get("why_outside", ())))
        console.print(f"seed's arithmetic: {item['quantity']} = {item['analytic']:,} ; {item['check']} under "
                      f"{item['protocol']}: {_cell_json(item['violations'])} ({verdict})", markup=False)
    for note in result.notes:
        console.print(f"note: {note}", markup=False)


def _cell_json(values: dict) -> str:
    high = "unbounded" if values["high"] is None else f"{values['high']:,.2f}"
    return f"{values['value']:,.2f} [{values['low']:,.2f}, {high}]"


@app.command()
def incidents(
    workload: str = typer.Option(..., "--workload", "-w",
                                 help="A workload with a [telemetry] table (name or file); it names the family."),
    protocol: Optional[List[str]] = typer.Option(None, "--protocol", "-p",
                                                 help="Repeat for several; default: the family's presets."),
    plans: Optional[int] = typer.Option(None, "--plans", "--tasks",
                                        help="Plans (or tasks) per month; default: the telemetry's "
                                        "plans_per_month / tasks_per_month, else 10,000."),
    seeds: Optional[int] = typer.Option(None, "--seeds",
                                        help="Runs sampled per protocol (shared by every protocol); default "
                                        "10,000 for a workspace workload, 2,000 for an effects one."),
    seed_start: int = typer.Option(0, "--seed-start", min=0, help="First seed of the sampled orders."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Expected runs violating each check, and violations, per month from the workload's [telemetry] rates:
    stratified importance sampling over the number of faults per run, with simultaneous 95% intervals
    (docs/incidents.md). Exit 0 (an estimate, not a verdict); 4 on a bad input."""
    from sim.cli.fuzz import distinct_protocols
    from sim.registry import FAMILIES
    from sim.search.incidents import SEEDS_MAX
    from sim.search.incidents import incidents as estimate

    if seeds is not None and not 1 <= seeds <= SEEDS_MAX:
        raise InputError(f"--seeds must be from 1 to {SEEDS_MAX:,}, not {seeds}")
    if plans is not None and not 1 <= plans <= 10 ** 12:
        raise InputError(f"--plans must be from 1 to 1,000,000,000,000, not {plans}")
    loaded = FAMILIES.load_workload(workload)
    family = FAMILIES.family_for(loaded)
    protocols = distinct_protocols(family, list(protocol or family.presets), "--protocol")
    result = estimate(family, loaded, protocols, period=plans, seeds=seeds, seed_start=seed_start)
    document = result.to_json()
    beside = BESIDE.get(family.name)
    if beside is not None:
        document["seed_arithmetic"] = beside(loaded, result)
    if json_out:
        emit_json(document)
    else:
        _print(human_console(False), result, document)
    return EXIT_OK
