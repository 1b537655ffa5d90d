"""``fencesim review``: the main job -- a report folder a design review can read."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from sim.cli.app import EXIT_OK, EXIT_VIOLATION, JSON_HELP, app, emit_json, human_console
from sim.cli.progress import progress_for
from sim.core.errors import InputError

if TYPE_CHECKING:
    from rich.table import Table

    from sim.report.results import DesignRow

DEFAULT_OUT = Path("reports/latest")


@app.command()
def review(
    design: Optional[List[Path]] = typer.Option(
        None, "--design", "-d", help="A design file (TOML: family, protocols, workload); repeat to review several. "
        "Default: the seeds' designs."),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="The report folder: new, empty or an earlier report "
                             "(replaced as a whole, only when complete)."),
    budget: Optional[float] = typer.Option(None, "--budget", help="Seconds of wall clock for the whole review; "
                                           "the report says where the budget stopped the search."),
    seeds: Optional[int] = typer.Option(None, "--seeds", min=1, help="Seeds per protocol (default: each design's)."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="Parallel processes (default: all cores)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Review designs: safety and availability per protocol, minimal counterexamples as swimlanes, the
    smallest fix, the verdict matrix, exposure -- as summary.md, report.html, results.json and figures."""
    from sim.app.designs import default_designs, load_design
    from sim.app.reviewing import run_review
    from sim.report.folder import check_report_dir, write_review
    from sim.report.phrases import identical_lines
    from sim.report.triage import triage_lines
    from sim.search.sweep import default_workers

    if budget is not None and not budget > 0:
        raise InputError(f"--budget must be a positive number of seconds, not {budget}")
    check_report_dir(out)
    designs = [load_design(path, seeds) for path in design] if design else default_designs(seeds)
    check_report_dir(out, inputs=_inputs(designs))
    started = time.monotonic()
    with progress_for(json_out, {}) as bar:
        results = run_review(designs, budget, workers, progress=bar)
        write_review(results, out, time.monotonic() - started, workers or default_workers())
    seconds = time.monotonic() - started
    console = human_console(json_out)
    violated = False
    for design_review in results.designs:
        reviewed = design_review.row
        console.print(_table(reviewed))
        never = _never_fired_lines(reviewed)
        if never:
            console.print("mechanisms that never acted on this workload (their numbers are the design's without "
                          "them):\n" + "\n".join(never), markup=False)
        for line in identical_lines(reviewed):
            console.print(line, markup=False)
        for line in triage_lines(reviewed.triage or ()):
            console.print(line, markup=False)
        violated = violated or any(row.violates for row in reviewed.protocols)
    cuts = [(d.row.name, cut) for d in results.designs for cut in d.row.budget_cuts or ()]
    for name, cut in cuts:
        console.print(f"{name}: {cut.line()}", markup=False)
    if results.budget_stopped and not cuts:
        console.print(f"the budget stopped: {', '.join(results.budget_stopped)} (see the report)",
                      markup=False)
    console.print(f"review written to {out}/ in {seconds:.0f} s: open {out}/report.html or read {out}/summary.md",
                  markup=False)
    if json_out:
        document = results.to_json()
        document["out"] = str(out)
        emit_json(document)
    return EXIT_VIOLATION if violated else EXIT_OK


def _inputs(designs) -> list[tuple[str, Path]]:
    """The files a review reads: each design's file, its workload's and its scenarios'."""
    found: list[tuple[str, Path]] = []
    for design in designs:
        if design.source not in ("default", "", None) and Path(design.source).exists():
            found.append(("--design", Path(design.source)))
        if design.workload.path is not None:
            found.append(("workload", Path(design.workload.path)))
        found += [("scenario", Path(s.path)) for s in design.scenarios if getattr(s, "path", None)]
    return found


def _table(reviewed: DesignRow) -> Table:
    """One row per protocol: verdict, violating runs, the minimal counterexamples, the availability findings
    (spurious rejections, human exceptions) per run and the share of work done."""
    from rich.table import Table

    from sim.core.wrapping import name_cell, name_width, unbroken

    table = Table(title=f"{reviewed.name} ({reviewed.family} family, {reviewed.seeds_done} seeds each)",
                  header_style="bold")
    availability = [name.replace("_", " ") for name in reviewed.availability]
    safe = any(row.safe_progress is not None for row in reviewed.protocols)
    for column in ("protocol", "verdict", "violating runs", "minimal counterexamples (length)",
                   *(f"{name} per run" for name in availability), reviewed.progress_label,
                   *(["applied safely / planned"] if safe else [])):
        # names are pre-broken after "," and "=" (never folded inside a word): a protocol cell keeps its width
        table.add_column(column, overflow="fold", min_width=name_width(
            name_cell(r.protocol) for r in reviewed.protocols) if column == "protocol" else None)
    for row in reviewed.protocols:
        examples = [e for e in reviewed.counterexamples if e.protocol == row.protocol]
        shown = ", ".join(f"{e.shown_finding} ({len(e.events)} event{'s' if len(e.events) != 1 else ''})"
                          for e in examples) or "-"
        share = f"{row.violating_runs.share.value:.1%}" if row.violating_runs is not None else "n/a"
        progress = f"{row.progress.share.value:.0%}" if row.progress else "n/a"
        found = [f"{row.availability[name].per_run:.2f} ({row.availability[name].count})"
                 for name in reviewed.availability]
        safely = [f"{row.safe_progress.share.value:.0%}" if row.safe_progress is not None else "n/a"] if safe else []
        table.add_row(name_cell(row.protocol), row.verdict, share, shown, *found, progress, *safely)
    return unbroken(table)


def _never_fired_lines(reviewed: DesignRow) -> list[str]:
    """Each protocol's mechanisms that never acted on the design's workload (its numbers equal the design
    without them there)."""
    return [f"  {row.protocol}: {line}" for row in reviewed.protocols for line in row.never_fired or ()]
