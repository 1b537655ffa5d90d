"""``fencesim review``: the main job -- a report folder a design review can read."""

from __future__ import annotations

import time
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from sim.cli.app import EXIT_OK, EXIT_VIOLATION, JSON_HELP, app, emit_json, human_console
from sim.cli.progress import Bar, progress_wanted
from sim.core.errors import InputError
from sim.core.files import check_output_dir

DEFAULT_OUT = Path("reports/latest")


@app.command()
def review(
    design: Optional[List[Path]] = typer.Option(
        None, "--design", "-d", help="A design file (TOML: family, protocols, workload); repeat to review several. "
        "Default: the seeds' designs."),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="The report folder (replaced only when complete)."),
    budget: Optional[float] = typer.Option(None, "--budget", help="Seconds of wall clock for the whole review; "
                                           "the report says where the budget stopped the search."),
    seeds: Optional[int] = typer.Option(None, "--seeds", min=1, help="Seeds per protocol (default: each design's)."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="Parallel processes (default: all cores)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Review designs: safety and availability per protocol, minimal counterexamples as swimlanes, the
    smallest fix, the verdict matrix, exposure -- as summary.md, report.html, results.json and figures."""
    from sim.designs import default_designs, load_design
    from sim.report.folder import check_report_dir, write_review
    from sim.report.review import public, run_review

    if budget is not None and not budget > 0:
        raise InputError(f"--budget must be a positive number of seconds, not {budget}")
    check_output_dir(out, "--out")
    check_report_dir(out)
    designs = [load_design(path, seeds) for path in design] if design else default_designs(seeds)
    started = time.monotonic()
    with Bar(progress_wanted(json_out)) as bar:
        results = run_review(designs, budget, workers, progress=bar)
        write_review(results, out, time.monotonic() - started)
    seconds = time.monotonic() - started
    console = human_console(json_out)
    violated = False
    for reviewed in results["designs"]:
        table = Table(title=f"{reviewed['name']} ({reviewed['family']} family, {reviewed['seeds_done']} seeds each)",
                      header_style="bold")
        for column in ("protocol", "verdict", "violating runs", "minimal counterexamples (length)",
                       reviewed["progress_label"]):
            table.add_column(column)
        for row in reviewed["protocols"]:
            examples = [e for e in reviewed["counterexamples"] if e["protocol"] == row["protocol"]]
            shown = ", ".join(f"{e['invariant']} ({len(e['events'])} event{'s' if len(e['events']) != 1 else ''})"
                              for e in examples) or "-"
            share = row["violating_runs"]["share"]
            progress = f"{row['progress']['share']['value']:.0%}" if row["progress"] else "n/a"
            table.add_row(row["protocol"], row["verdict"], f"{share['value']:.1%}", shown, progress)
            violated = violated or row["violating_runs"]["count"] > 0
        console.print(table)
    if results["budget_stopped"]:
        console.print(f"the budget stopped: {', '.join(results['budget_stopped'])} (see the report)", markup=False)
    console.print(f"review written to {out}/ in {seconds:.0f} s: open {out}/report.html or read {out}/summary.md",
                  markup=False)
    if json_out:
        document = public(results)
        document["out"] = str(out)
        emit_json(document)
    return EXIT_VIOLATION if violated else EXIT_OK
