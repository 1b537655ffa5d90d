"""``fencesim cruel`` and ``fencesim exposure``: commands of the durable-effects family."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from sim.cli.app import EXIT_OK, EXIT_VIOLATION, JSON_HELP, app, emit_json, human_console
from sim.core.errors import InputError
from sim.core.knobs import refuse_duplicates
from sim.report.outputs import check_output_dir

if TYPE_CHECKING:
    from rich.table import Table

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
    """The grid, its fault columns in as many tables as it takes to fit the console's width (the transition
    and boundary columns repeated in each): a cell is never cut.  A console too narrow even for one fault
    column beside them gets the grid as lines, one cell a line."""
    from rich.table import Table
    faults = list(dict.fromkeys(f for boundaries in document.values() for cells in boundaries.values()
                                for f in cells))
    rows = [(transition, boundary, [_cell_text(cells.get(f)) for f in faults])
            for transition, boundaries in document.items() for boundary, cells in boundaries.items()]

    def width(header: str, texts: list[str]) -> int:
        return max(len(line) for text in [header, *texts] for line in text.splitlines() or [""])

    fixed = [width("transition", [r[0] for r in rows]), width("boundary", [r[1] for r in rows])]
    needed = [width(f, [r[2][i] for r in rows]) for i, f in enumerate(faults)]
    chunks = _fit(fixed, needed, console.width)
    if chunks is None:
        console.print(f"cruel grid under {label}", markup=False, style="bold")
        for transition, boundary, texts in rows:
            for fault, text in zip(faults, texts):
                console.print(f"  {transition} {boundary} {fault}: {text.replace(chr(10), ', ')}", markup=False)
        return
    for number, (start, end) in enumerate(chunks, 1):
        part = "" if len(chunks) == 1 else \
            f" (faults {start + 1}-{end} of {len(faults)}, part {number} of {len(chunks)})"
        table = Table(title=f"cruel grid under {label}{part}", header_style="bold")
        for column, cells_width in (("transition", fixed[0]), ("boundary", fixed[1]),
                                    *zip(faults[start:end], needed[start:end])):
            table.add_column(column, min_width=cells_width, no_wrap=True)
        for transition, boundary, texts in rows:
            table.add_row(transition, boundary, *texts[start:end])
        console.print(table)


def _fit(fixed: list[int], needed: list[int], limit: int) -> list[tuple[int, int]] | None:
    """Fault columns ``[start, end)`` per table so each table (a column takes its width plus 3: padding and a
    border, and 1 more for the last border) fits ``limit``; None when one column beside the fixed ones does
    not."""
    base = sum(w + 3 for w in fixed) + 1
    chunks: list[tuple[int, int]] = []
    start, used = 0, base
    for index, w in enumerate(needed):
        if base + w + 3 > limit:
            return None
        if used + w + 3 > limit:
            chunks.append((start, index))
            start, used = index, base
        used += w + 3
    if start < len(needed) or not chunks:
        chunks.append((start, len(needed)))
    return chunks


def _cell_text(value) -> str:
    """``ok``, ``not_run``, the invariants a cell violates, or ``-`` where the fault does not apply."""
    if value is None:
        return "-"
    return value if isinstance(value, str) else "\n".join(value)  # one invariant a line: narrow columns


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
        verdict = ("every cell ok" if not grid.violations
                   else f"{len(grid.violations)} of {len(grid.cells)} cells violate")
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
    tasks: Optional[int] = typer.Option(None, "--tasks", min=1,
                                        help="Tasks per period (default: the workload's [telemetry] "
                                        "tasks_per_month, else 10,000)."),
    transitions: Optional[int] = typer.Option(
        None, "--transitions", min=1,
        help="External side-effecting transitions per task (default 7, or the workload's own)."),
    ambiguous_rate: Optional[str] = typer.Option(
        None, "--ambiguous-rate", help="Share of requests with a timeout or lost acknowledgement (default: the "
        "workload's [telemetry] ambiguous_share, else 0.041)."),
    committed_rate: Optional[str] = typer.Option(
        None, "--committed-rate", help="Share of ambiguous requests that had committed (default: the workload's "
        "[telemetry] committed_share, else 0.60)."),
    reconcile_rate: Optional[str] = typer.Option(
        None, "--reconcile-rate", help="Share of reconciliations that prove the outcome (default: the workload's "
        "[telemetry] reconciled_share, else 0.997)."),
    duplicate_rate: str = typer.Option(
        "0", "--duplicate-rate",
        help="Share of healthy requests the network also delivers twice (simulation only; default 0, as the "
        "worked example)."),
    workload: Optional[str] = typer.Option(
        None, "--workload", "-w",
        help="An effects workload (name or file): the exposure of its own workflow instead of the worked "
        "example's generic:7."),
    simulate: bool = typer.Option(False, "--simulate",
                                  help="Also measure the quantities by running the runtime model."),
    seeds: Optional[int] = typer.Option(None, "--seeds", min=2,
                                        help="Simulated tasks (one seed each); default --tasks."),
    seed: int = typer.Option(0, "--seed", min=0, help="Master seed; task i draws from random.Random(seed + i)."),
    protocol: Optional[List[str]] = typer.Option(
        None, "--protocol", "-p",
        help="Protocols to simulate, presets and/or knobs (default: the four presets); a knob the workflow "
        "cannot exercise is refused."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Duplicate-effect exposure: the seed's worked example exactly (or a workload's workflow), and
    (--simulate) measured in the model."""
    from sim.families.effects import FAMILY
    from sim.families.effects.exposure import WORKED_EXAMPLE, check_exercised
    from sim.families.effects.exposure_workflow import telemetry_tasks

    loaded = _exposure_workload(workload)
    base = loaded.base if loaded is not None else None
    telemetry = loaded.telemetry if loaded is not None else None
    given = {"ambiguous_rate": ambiguous_rate, "committed_rate": committed_rate, "reconcile_rate": reconcile_rate}
    rates = _exposure_rates(given, telemetry)
    tasks = tasks or telemetry_tasks(telemetry) or int(WORKED_EXAMPLE["tasks"])
    duplicates = float(_rate(duplicate_rate, "duplicate-rate"))
    workflow = base.workflow if base is not None else None
    count_transitions = transitions or (len(workflow.side_effecting()) if workflow is not None else 7)
    presets = protocol or list(FAMILY.presets)
    _check_simulation_options(simulate, tasks if seeds is None else seeds, protocol, seeds, duplicate_rate)
    if simulate:
        for label in presets:  # refuse a knob the simulation would ignore before printing anything
            check_exercised(FAMILY.parse_protocol(label), workflow)
    console = human_console(json_out)
    document = _analytic_document(loaded, tasks, rates, transitions, count_transitions, given)
    _print_analytic(console, document, workflow)
    if simulate:
        _exposure_simulation(console, document, presets, seeds or tasks, tasks, count_transitions, seed, rates,
                             duplicates, base, float((telemetry or {}).get("worker_loss_share", 0.5)))
    if json_out:
        emit_json(document)
    return EXIT_OK


def _exposure_rates(given: dict[str, str | None], telemetry) -> dict[str, str]:
    """Each rate: the flag's, else the workload's [telemetry], else the worked example's (checked)."""
    from sim.families.effects.exposure import WORKED_EXAMPLE
    from sim.families.effects.exposure_workflow import telemetry_rates

    defaults = {**{k: str(v) for k, v in WORKED_EXAMPLE.items() if k.endswith("_rate")},
                **telemetry_rates(telemetry)}
    out = {}
    for name, value in given.items():
        out[name] = _rate(value if value is not None else defaults[name], name.replace("_", "-"))
    return out


def _analytic_document(loaded, tasks: int, rates: dict[str, str], transitions: int | None,
                       count_transitions: int, given: dict[str, str | None]) -> dict:
    """The arithmetic: a workload's workflow counted as its simulation counts it (with why it differs from
    the worked example), else the worked example's for ``count_transitions`` transitions."""
    from sim.families.effects.exposure import analytic_json, plain_number
    from sim.families.effects.exposure_workflow import differences, telemetry_rates, workflow_analytic

    if loaded is None:
        return {"analytic": analytic_json(tasks=tasks, transitions=count_transitions, **rates)}
    base, workflow = loaded.base, loaded.base.workflow
    if transitions is None:
        analytic = {name: plain_number(value) for name, value in
                    workflow_analytic(workflow, tasks, arguments=base.arguments, **rates).items()}
        document: dict = {"analytic": analytic, "differences": differences(workflow, base.arguments)}
    else:
        document = {"analytic": analytic_json(tasks=tasks, transitions=count_transitions, **rates)}
    document["rates"] = {**rates, "tasks": tasks,
                         "from_telemetry": sorted(k for k in telemetry_rates(loaded.telemetry) if given[k] is None)}
    document["workflow"] = {"workload": base.name, "transitions": workflow.names(),
                            "side_effecting": [t.name for t in workflow.side_effecting()]}
    return document


def _check_simulation_options(simulate: bool, simulated_tasks: int, protocol, seeds, duplicate_rate: str) -> None:
    """The options only a simulation reads are refused without ``--simulate`` (they would change nothing), and
    a simulation runs at most EXPOSURE_SIMULATED_TASKS_MAX tasks."""
    from sim.cli.bounds import EXPOSURE_SIMULATED_TASKS_MAX

    if not simulate:
        given = [name for name, value in (("--protocol", protocol), ("--seeds", seeds)) if value]
        if float(_rate(duplicate_rate, "duplicate-rate")) != 0:
            given.append("--duplicate-rate")
        if given:
            raise InputError(f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} only to a simulation: "
                             "add --simulate (the analytic "
                             "exposure has no protocol, seeds or duplicate deliveries)")
    elif simulated_tasks > EXPOSURE_SIMULATED_TASKS_MAX:
        raise InputError(f"--simulate runs {simulated_tasks:,} tasks (--seeds, or --tasks without it); a simulation "
                         f"runs at most {EXPOSURE_SIMULATED_TASKS_MAX:,} (give --seeds N to simulate fewer and "
                         "scale to --tasks)")


def _exposure_workload(workload: str | None):
    """The effects workload named by ``--workload`` (None without one)."""
    if workload is None:
        return None
    from sim.registry import FAMILIES

    loaded = FAMILIES.load_workload(workload)
    if FAMILIES.family_for(loaded).name != "effects":
        raise InputError(f"--workload {workload}: exposure needs an effects (runtime) workload, not a "
                         f"{FAMILIES.family_for(loaded).name} one")
    return loaded


def _print_analytic(console, document: dict, workflow) -> None:
    from rich.table import Table
    title = "exposure (analytic, exact; the shown integer rounded half up)"
    if workflow is not None:
        title += f": {len(workflow.side_effecting())} side-effecting transitions per task of this workflow"
    table = Table(title=title, header_style="bold")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    for name, value in document["analytic"].items():
        table.add_row(name, f"{value:,}")
    console.print(table)
    if document.get("rates", {}).get("from_telemetry"):
        console.print(f"rates from the workload's [telemetry]: {', '.join(document['rates']['from_telemetry'])}",
                      markup=False)
    for line in document.get("differences", []):
        console.print(f"why the arithmetic differs: {line}", markup=False)


def _exposure_simulation(console, document, presets, count, tasks, transitions, seed, rates, duplicates,
                         base, worker_loss_share: float = 0.5) -> None:
    from sim.families.effects.exposure import simulate as run_simulation
    from sim.families.effects.exposure import simulated_json
    from sim.families.effects.faults import ExposureRates

    errors = human_console(True)

    def progress(preset: str, done: int, total: int) -> None:
        if done == total or done % 2000 == 0:
            errors.print(f"simulating {preset}: {done:,}/{total:,} tasks", markup=False)

    simulated = run_simulation(
        presets=presets, seeds=count, tasks=tasks, transitions=transitions, master_seed=seed,
        rates=ExposureRates(float(rates["ambiguous_rate"]), float(rates["committed_rate"]),
                            float(rates["reconcile_rate"]), worker_loss_share=worker_loss_share,
                            duplicate_rate=duplicates),
        progress=progress, workflow=base.workflow if base is not None else None,
        arguments=base.arguments if base is not None else None,
    )
    document["simulated"] = simulated_json(simulated)
    title = f"simulated: {count:,} tasks per preset, scaled to {tasks:,} tasks, 95% CI"
    console.print(exposure_table(document["simulated"], presets, title, strict=base is not None))
    if base is not None:
        console.print(by_transition_table(document["simulated"], presets, tasks))
        console.print("verified_tasks: terminal tasks with a receipt for every request and no safety violation; "
                      "a fixed count (requests) has no interval; counts of tasks are bounded by the tasks",
                      markup=False)


def _cell(cell: dict, fixed: bool = False) -> str:
    if cell["value"] is None:
        return "n/a"
    if cell.get("ci_low") is None or cell.get("ci_high") is None or fixed:
        return f"{cell['value']:,.2f}"
    return f"{cell['value']:,.2f} [{cell['ci_low']:,.2f}, {cell['ci_high']:,.2f}]"


def exposure_table(simulated: dict, presets: list[str], title: str, strict: bool = False) -> Table:
    """Metric rows, one column per protocol.  A fixed count (``requests`` of the worked example, the same for
    every task) is shown without the interval its JSON still carries."""
    from rich.table import Table
    table = Table(title=title, header_style="bold")
    table.add_column("metric")
    for label in presets:
        table.add_column(label, justify="right")
    metrics = [m for m in next(iter(simulated.values())) if m != "by_transition"]
    for metric in metrics:
        fixed = metric == "requests" and not strict
        table.add_row(metric, *[_cell(simulated[label][metric], fixed) for label in presets])
    return table


def by_transition_table(simulated: dict, presets: list[str], tasks: int) -> Table:
    """Duplicate effects and human exceptions per transition of the user's workflow, per protocol."""
    from rich.table import Table
    table = Table(title=f"per transition, per {tasks:,} tasks, 95% CI (exact Poisson)", header_style="bold")
    table.add_column("transition")
    table.add_column("metric")
    for label in presets:
        table.add_column(label, justify="right")
    names = list(simulated[presets[0]]["by_transition"])
    for name in names:
        for metric in ("duplicate_effects", "human_exceptions", "unknown_as_failed"):
            table.add_row(name, metric, *[_cell(simulated[p]["by_transition"][name][metric]) for p in presets])
    return table
