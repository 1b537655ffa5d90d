"""``fencesim cruel`` and ``fencesim exposure``: commands of the durable-effects family."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from sim.cli.app import EXIT_OK, EXIT_VIOLATION, JSON_HELP, app, emit_json, human_console
from sim.core.errors import InputError
from sim.core.files import check_output_dir
from sim.core.knobs import refuse_duplicates

#: What a cell of the cruel grid shows when ``--budget`` stopped the grid before it ran.
NOT_RUN = "not_run"


def _grid(family, workload, protocol, deadline):
    """The single-fault grid under one protocol, cell by cell, until the deadline; (grid, cells not run)."""
    from sim.search.grid import Grid, run_cell

    grid = Grid(family.name, protocol, family.grid_labels)
    cells = family.single_faults(workload)
    for position, cell in enumerate(cells):
        if deadline.expired():
            deadline.note("cruel grid")
            return grid, cells[position:]
        grid.cells.append(run_cell(family, workload, protocol, cell))
    return grid, []


def _grid_json(grid, not_run) -> dict:
    document = grid.to_json()
    for cell in not_run:
        node = document
        for label in cell.labels[:-1]:
            node = node.setdefault(label, {})
        node[cell.labels[-1]] = NOT_RUN
    return document


def _print_grid(console, label: str, document: dict) -> None:
    faults = list(dict.fromkeys(f for boundaries in document.values() for cells in boundaries.values()
                                for f in cells))
    table = Table(title=f"cruel grid under {label}", header_style="bold")
    for column in ("transition", "boundary", *faults):
        table.add_column(column)
    for transition, boundaries in document.items():
        for boundary, cells in boundaries.items():
            table.add_row(transition, boundary, *(_cell_text(cells.get(f)) for f in faults))
    console.print(table)


def _cell_text(value) -> str:
    """``ok``, ``not_run``, the invariants a cell violates, or ``-`` where the fault does not apply."""
    if value is None:
        return "-"
    return value if isinstance(value, str) else ", ".join(value)


def _export_cell(family, workload, protocol, cell, out: Path, commit: str) -> Path:
    from sim.report.export import counterexample_name, export

    name = counterexample_name("cruel", protocol.label, "__".join(cell.labels))
    meta = {"name": name, "invariant": cell.invariants[0], "cell": "/".join(cell.labels), "commit": commit,
            "minimal": True, "workload": workload.name,
            "description": (f"fencesim cruel: {cell.labels[2]} at {cell.labels[1]} of {cell.labels[0]} "
                            f"under {protocol.label} violates {', '.join(cell.invariants)}")}
    scenario = family.counterexample(workload, protocol, cell.invariants[0], cell.events, meta)
    replay = family.replay(scenario, protocol)
    marked = [v.event_index for v in family.check(replay.history, cell.invariants[:1]).safety_violations]
    return export(family, scenario, replay.history, out, marked).scenario


@app.command()
def cruel(
    protocol: Optional[List[str]] = typer.Option(
        None, "--protocol", "-p",
        help="Runtime preset and/or knobs, e.g. keyed-fingerprint-reconcile or keyed,lease_fence=off; "
        "repeat for several. Default: the four presets."),
    workload: Optional[str] = typer.Option(
        None, "--workload", "-w",
        help="An effects workload (its workflow, task and fault classes); default: the saga with the four "
        "cruel faults."),
    out: Path = typer.Option(Path("counterexamples/cruel"), "--out",
                             help="Folder for the counterexample scenario files."),
    budget: Optional[float] = typer.Option(
        None, "--budget", help="Seconds of wall clock for the grid: cells not run by then are reported "
        "as not_run."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """The seed's cruel test: every transition boundary x {terminate, duplicate, delay ack, change owner}."""
    from sim.families.effects import FAMILY
    from sim.families.effects.cruel import cruel_workload
    from sim.registry import FAMILIES
    from sim.report.export import current_commit
    from sim.search.budget import Deadline

    if budget is not None and not (budget > 0 and budget < float("inf")):
        raise InputError(f"--budget must be a positive number of seconds, not {budget}")
    check_output_dir(out, "--out")
    chosen_workload = FAMILIES.load_workload(workload) if workload else cruel_workload()
    if chosen_workload.family != FAMILY.name:
        raise InputError(f"cruel runs an effects workload; {workload} belongs to the {chosen_workload.family} family")
    protocols = [FAMILY.parse_protocol(text) for text in (protocol or list(FAMILY.presets))]
    refuse_duplicates(protocols)
    console, deadline = human_console(json_out), Deadline(budget, "--budget")
    document, written, not_run, commit = {}, [], 0, None
    for chosen in protocols:
        grid, skipped = _grid(FAMILY, chosen_workload, chosen, deadline)
        document[chosen.label] = _grid_json(grid, skipped)
        not_run += len(skipped)
        if not json_out:
            _print_grid(console, chosen.label, document[chosen.label])
        for cell in grid.violations:
            commit = commit or current_commit()
            written.append(_export_cell(FAMILY, chosen_workload, chosen, cell, out, commit))
        verdict = "every cell ok" if not grid.violations else f"{len(grid.violations)} of {len(grid.cells)} cells violate"
        console.print(f"{chosen.label}: {verdict}" + (f" ({len(skipped)} not run)" if skipped else ""), markup=False)
    if not_run:
        console.print(f"--budget stopped the grid: {not_run} cell(s) not run (marked {NOT_RUN})", markup=False)
    if written:
        console.print(f"\n{len(written)} counterexample(s) written to {out}/; replay one with:", markup=False)
        console.print(f"  fencesim run {written[0]}", markup=False)
    if json_out:
        emit_json(document)
    return EXIT_VIOLATION if written else EXIT_OK


def _rate(text: str, name: str) -> str:
    from decimal import Decimal, InvalidOperation

    try:
        value = Decimal(text)
    except InvalidOperation:
        raise InputError(f"--{name} must be a number between 0 and 1, not {text!r}") from None
    if not value.is_finite() or not 0 <= value <= 1:
        raise InputError(f"--{name} must be between 0 and 1 (0.041 for 4.1%), not {text!r}")
    return text


@app.command()
def exposure(
    tasks: int = typer.Option(10_000, "--tasks", min=1, help="Tasks per period."),
    transitions: int = typer.Option(7, "--transitions", min=1, help="External side-effecting transitions per task."),
    ambiguous_rate: str = typer.Option("0.041", "--ambiguous-rate", help="Share of requests with a timeout or lost acknowledgement."),
    committed_rate: str = typer.Option("0.60", "--committed-rate", help="Share of ambiguous requests that had committed."),
    reconcile_rate: str = typer.Option("0.997", "--reconcile-rate", help="Share of reconciliations that prove the outcome."),
    simulate: bool = typer.Option(False, "--simulate", help="Also measure the quantities by running the runtime model."),
    seeds: Optional[int] = typer.Option(None, "--seeds", min=2, help="Simulated tasks (one seed each); default --tasks."),
    seed: int = typer.Option(0, "--seed", min=0, help="Master seed; task i uses SeedSequence([seed, i])."),
    protocol: Optional[List[str]] = typer.Option(
        None, "--protocol", "-p",
        help="Protocols to simulate, presets and/or knobs (default: the four presets); a knob the worked "
        "example cannot exercise is refused."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Duplicate-effect exposure: the seed's worked example exactly, and (--simulate) measured in the model."""
    from sim.families.effects import FAMILY
    from sim.families.effects.exposure import analytic_json, check_exercised
    from sim.families.effects.faults import ExposureRates

    rates = {name: _rate(value, name.replace("_", "-")) for name, value in
             (("ambiguous_rate", ambiguous_rate), ("committed_rate", committed_rate), ("reconcile_rate", reconcile_rate))}
    presets = protocol or list(FAMILY.presets)
    if simulate:
        for label in presets:  # refuse a knob the simulation would ignore before printing anything
            check_exercised(FAMILY.parse_protocol(label))
    console = human_console(json_out)
    document: dict = {"analytic": analytic_json(tasks=tasks, transitions=transitions, **rates)}
    table = Table(title="exposure (analytic, exact; the shown integer rounded half up)", header_style="bold")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    for name, value in document["analytic"].items():
        table.add_row(name, f"{value:,}")
    console.print(table)
    if simulate:
        from sim.families.effects.exposure import simulate as run_simulation
        from sim.families.effects.exposure import simulated_json

        count = seeds or tasks
        errors = human_console(True)

        def progress(preset: str, done: int, total: int) -> None:
            if done == total or done % 2000 == 0:
                errors.print(f"simulating {preset}: {done:,}/{total:,} tasks", markup=False)

        simulated = run_simulation(
            presets=presets, seeds=count, tasks=tasks, transitions=transitions, master_seed=seed,
            rates=ExposureRates(float(rates["ambiguous_rate"]), float(rates["committed_rate"]),
                                float(rates["reconcile_rate"])),
            progress=progress,
        )
        document["simulated"] = simulated_json(simulated)
        sim_table = Table(title=f"simulated: {count:,} tasks per preset, scaled to {tasks:,} tasks, 95% CI",
                          header_style="bold")
        sim_table.add_column("metric")
        for label in presets:
            sim_table.add_column(label, justify="right")
        metrics = list(next(iter(document["simulated"].values())))
        for metric in metrics:
            row = []
            for label in presets:
                cell = document["simulated"][label][metric]
                if cell["value"] is None:
                    row.append("n/a")
                elif cell["ci_low"] is None:
                    row.append(f"{cell['value']:,.2f}")
                else:
                    row.append(f"{cell['value']:,.2f} [{cell['ci_low']:,.2f}, {cell['ci_high']:,.2f}]")
            sim_table.add_row(metric, *row)
        console.print(sim_table)
    if json_out:
        emit_json(document)
    return EXIT_OK
