"""``fencesim matrix``, ``fencesim run`` and ``fencesim check``."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from sim.cli.app import (EXIT_NOTHING_RAN, EXIT_OK, EXIT_VIOLATION, app, emit_json,
                         human_console)
from sim.errors import InputError
from sim.protocol import WORKSPACE_PRESETS, parse_protocol

JSON_HELP = "Machine output (JSON) on stdout; human output goes to stderr."


@app.command()
def matrix(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> int:
    """The seed's verdict table computed by the model, beside the seed code's answers."""
    from sim.matrix import SEED_SCENARIOS, compute_matrix

    document = compute_matrix()
    if json_out:
        emit_json(document)
    console = human_console(json_out)
    table = Table(title="Verdict of the last delivery (model; seed code where it differs)")
    table.add_column("row")
    for name in SEED_SCENARIOS:
        table.add_column(name)
    differing = {(d["row"], d["scenario"]): d for d in document["differences"]}
    for row, cells in document["table"].items():
        shown = []
        for name in SEED_SCENARIOS:
            cell = cells[name]
            if (row, name) in differing:
                cell += f"\n(seed code: {differing[(row, name)]['seed_code']})"
            shown.append(cell)
        table.add_row(row, *shown)
    console.print(table)
    agree = "equals" if document["matches_seed_table"] else "DIFFERS FROM"
    console.print(f"The model's table {agree} the seed's printed table in all 12 cells.", markup=False)
    console.print(f"The seed's code disagrees with its table in {len(document['differences'])} cells:", markup=False)
    for d in document["differences"]:
        console.print(f"  {d['row']} / {d['scenario']}: table {d['table']}, seed code {d['seed_code']}"
                      f" -- {d['why']}", markup=False)
    for note in document["footnotes"]:
        console.print(f"  note: {note}", markup=False)
    return EXIT_OK


def _protocols_for(scenario, given: list[str]):
    family = getattr(scenario, "family", "workspace")
    if given:
        return [parse_protocol(text, family) for text in given]
    if scenario.protocol:
        return [parse_protocol(scenario.protocol, family)]
    if family == "runtime":
        from sim.protocol import presets

        return list(presets("runtime").values())
    return [parse_protocol(name) for name in WORKSPACE_PRESETS]


_QUIET_FIELDS = {
    "index", "time", "actor", "event", "verdict", "skipped", "reason", "action", "expected_prior_hunks",
    "hunks_before", "patch_hunks", "domain", "incarnation", "fence", "dedupe", "hash_current", "pipeline",
}


def _fmt_fields(event) -> str:
    """The fields a reader needs, hashes cut to 8 digits (the JSON keeps them whole)."""
    parts = []
    for key, value in event.to_dict().items():
        if key in _QUIET_FIELDS:
            continue
        if isinstance(value, str) and ("hash" in key) and len(value) > 8:
            value = value[:8]
        parts.append(f"{key}={value}")
    return " ".join(parts)


def print_result(console, result) -> None:
    """Human view of one run: the event order with verdicts, then the checks."""
    console.print(f"\n== {result.scenario} under {result.protocol.label} ==", markup=False, style="bold")
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in ("#", "t", "actor", "event", "verdict", "details"):
        table.add_column(column, overflow="fold")
    for event in result.history:
        if event.get("skipped"):
            table.add_row(str(event.index), str(event.time), event.actor, str(event.get("action", event.event)),
                          "skipped", event.get("reason", ""))
            continue
        verdict = event.get("verdict", "")
        table.add_row(str(event.index), str(event.time), event.actor, event.event, str(verdict or ""),
                      _fmt_fields(event))
    console.print(table)
    outcome = result.outcome if result.outcome is not None else result.last_verdict
    line = f"outcome: {outcome}"
    if result.expect is not None:
        line += f"   expected: {result.expect}   {'OK' if result.expectation_met else 'MISMATCH'}"
    console.print(line, markup=False)
    for name, status in result.checks.status().items():
        console.print(f"  {name:<26} {status}", markup=False)
    for v in result.violations:
        console.print(f"  VIOLATED {v.invariant} at event {v.event_index} ({v.step}): {v.detail}"
                      + (f" [domain {v.domain}]" if v.domain else ""), markup=False, style="red")
    for v in result.availability:
        console.print(f"  counted {v.invariant} at event {v.event_index} ({v.step}): {v.detail}"
                      + (f" [domain {v.domain}]" if v.domain else ""), markup=False)


@app.command()
def run(
    scenarios: List[Path] = typer.Argument(..., help="Scenario files (TOML), either family."),
    protocol: Optional[List[str]] = typer.Option(
        None, "--protocol", "-p",
        help="Preset and/or knobs, e.g. step-dedupe or fence=step,stamp_at=apply; repeat to run several. "
        "Default: the scenario's own protocol, else all four presets.",
    ),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Replay scripted event orders: verdict per delivery, checks, exit 1 on a violated invariant."""
    from sim.replay import run_scenario
    from sim.scenario import load_scenario

    loaded = [load_scenario(path) for path in scenarios]  # all input errors before any run
    plans = [(s, _protocols_for(s, protocol or [])) for s in loaded]
    console = human_console(json_out)
    results = []
    for scenario, protocols in plans:
        for chosen in protocols:
            result = run_scenario(scenario, chosen)
            results.append(result)
            print_result(console, result)
    if not results:
        return EXIT_NOTHING_RAN
    if json_out:
        emit_json([r.to_json() for r in results])
    violated = [r for r in results if r.violations]
    mismatched = [r for r in results if r.expectation_met is False]
    console.print(
        f"\n{len(results)} run(s): {len(violated)} with a safety violation, "
        f"{len(mismatched)} not matching [expect]", markup=False,
    )
    for r in mismatched:
        console.print(f"  [expect] mismatch: {r.scenario} under {r.protocol.label}: "
                      f"got {r.outcome or r.last_verdict}, expected {r.expect}", markup=False)
    return EXIT_VIOLATION if violated else EXIT_OK


@app.command()
def check(
    history_file: Path = typer.Argument(..., help="A recorded history, one JSON event per line."),
    family: str = typer.Option("workspace", "--family", help="workspace or runtime"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Run the invariant checks on a recorded history (simulated or from a real system)."""
    from sim.checks.base import run_checks
    from sim.history import History

    history = History.read(history_file)
    if family == "workspace":
        from sim.checks.workspace import WORKSPACE_CHECKS as specs
    elif family == "runtime":
        from sim.runtime import RUNTIME_CHECKS as specs
    else:
        raise InputError(f"unknown family {family!r}; families: workspace, runtime")
    report = run_checks(specs, history)
    if json_out:
        emit_json({
            "events": len(history),
            "checks": report.status(),
            "violations": [v.to_dict() for v in report.safety_violations],
            "availability": [v.to_dict() for v in report.availability_findings],
        })
    console = human_console(json_out)
    console.print(f"{history_file}: {len(history)} events", markup=False)
    for result in report.results:
        console.print(f"  {result.name:<26} {result.status}" + (f" ({result.reason})" if result.reason else ""),
                      markup=False)
    for v in report.safety_violations:
        console.print(f"  VIOLATED {v.invariant} at event {v.event_index} ({v.step}): {v.detail}", markup=False)
    if len(history) == 0:
        return EXIT_NOTHING_RAN
    return EXIT_VIOLATION if report.safety_violations else EXIT_OK
