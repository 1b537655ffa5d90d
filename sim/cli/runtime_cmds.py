"""``fencesim cruel`` and ``fencesim exposure``: the runtime family's commands."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from sim.cli.app import EXIT_OK, EXIT_VIOLATION, app, emit_json, human_console, write_atomically
from sim.errors import InputError

JSON_HELP = "Machine output (JSON) on stdout; human output goes to stderr."


def _current_commit() -> str | None:
    """The repository commit the counterexamples come from (None outside a git checkout)."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                              cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


@app.command()
def cruel(
    protocol: Optional[List[str]] = typer.Option(
        None, "--protocol", "-p",
        help="Runtime preset and/or knobs, e.g. keyed-fingerprint-reconcile or keyed,lease_fence=off; "
        "repeat for several. Default: the four presets."),
    out: Path = typer.Option(Path("counterexamples/cruel"), "--out",
                             help="Folder for the counterexample scenario files."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """The seed's cruel test: every transition boundary x {terminate, duplicate, delay ack, change owner}."""
    from sim.runtime import RUNTIME_PRESETS, parse_runtime_protocol
    from sim.runtime.cruel import counterexample_name, counterexample_toml, cruel_grid
    from sim.runtime.faults import BOUNDARIES, CRUEL_FAULTS

    protocols = [parse_runtime_protocol(text) for text in (protocol or list(RUNTIME_PRESETS))]
    console = human_console(json_out)
    document = {}
    written: list[Path] = []
    commit = None
    for chosen in protocols:
        grid = cruel_grid(chosen)
        document[chosen.label] = grid.to_json()
        table = Table(title=f"cruel grid under {chosen.label}", header_style="bold")
        table.add_column("transition")
        table.add_column("boundary")
        for fault in CRUEL_FAULTS:
            table.add_column(fault)
        cells = grid.to_json()
        for transition, boundaries in cells.items():
            for boundary in BOUNDARIES:
                shown = [c if c == "ok" else ", ".join(c) for c in (boundaries[boundary][f] for f in CRUEL_FAULTS)]
                table.add_row(transition, boundary, *shown)
        console.print(table)
        for cell in grid.violations:
            if commit is None:
                commit = _current_commit() or ""
            path = out / counterexample_name(chosen, cell)
            write_atomically(path, counterexample_toml(chosen, grid.workflow, cell, commit or None))
            written.append(path)
        verdict = "every cell ok" if not grid.violations else f"{len(grid.violations)} of {len(grid.cells)} cells violate"
        console.print(f"{chosen.label}: {verdict}", markup=False)
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
    protocol: Optional[List[str]] = typer.Option(None, "--protocol", "-p", help="Presets to simulate (default: all four)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Duplicate-effect exposure: the seed's worked example exactly, and (--simulate) measured in the model."""
    from sim.runtime import RUNTIME_PRESETS, parse_runtime_protocol
    from sim.runtime.exposure import analytic_json
    from sim.runtime.faults import ExposureRates

    rates = {name: _rate(value, name.replace("_", "-")) for name, value in
             (("ambiguous_rate", ambiguous_rate), ("committed_rate", committed_rate), ("reconcile_rate", reconcile_rate))}
    console = human_console(json_out)
    document: dict = {"analytic": analytic_json(tasks=tasks, transitions=transitions, **rates)}
    table = Table(title="exposure (analytic, exact; the shown integer rounded half up)", header_style="bold")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    for name, value in document["analytic"].items():
        table.add_row(name, f"{value:,}")
    console.print(table)
    if simulate:
        from sim.runtime.exposure import simulate as run_simulation, simulated_json

        presets = protocol or list(RUNTIME_PRESETS)
        for label in presets:
            parse_runtime_protocol(label)
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
