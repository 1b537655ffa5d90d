"""``fencesim map``: the design-space map of a family's mechanisms on one workload."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from sim.cli.app import EXIT_OK, JSON_HELP, app, emit_json, human_console
from sim.core.errors import InputError

if TYPE_CHECKING:
    from sim.search.map_document import MapDocument


@app.command(name="map")
def map_command(
    workload: str = typer.Option("tiny", "--workload", "-w", help="Workload name or file (its family's knobs)."),
    knobs: Optional[str] = typer.Option(None, "--knobs", help="Comma-separated knobs to walk (default: every "
                                        "knob of the family); the others stay at --base's values."),
    base: Optional[str] = typer.Option(None, "--base", help="The design under review: the knobs not walked keep "
                                       "this protocol's values (default: their defaults); the certificate names "
                                       "them."),
    max_events: int = typer.Option(6, "--max-events", help="Bound of the exhaustive search of every protocol."),
    seeds: int = typer.Option(300, "--seeds", help="Seeds per protocol of the sweep that measures costs "
                              "(0: no costs, no Pareto front)."),
    workers: int = typer.Option(1, "--workers", help="Worker processes for each search and sweep."),
    budget: Optional[float] = typer.Option(None, "--budget", help="Seconds for the whole map; protocols the "
                                           "budget stops are 'not decided'."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for map.json and the Pareto figure "
                                       "(PNG and SVG)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Classify every combination of mechanisms: proved safe within N events, violated (with its shortest
    witness), or not decided; then the minimal safe designs, the Pareto front of safety against cost, a
    certificate per invariant, and monotonicity findings.  Exit 0 when the map is drawn (a map reports;
    it does not judge one design)."""
    from sim.cli.progress import progress_for
    from sim.registry import FAMILIES
    from sim.search.budget import NO_DEADLINE, Deadline
    from sim.search.lattice import MAP_DEPTH_MAX, design_map

    if not 1 <= max_events <= MAP_DEPTH_MAX:
        raise InputError(f"--max-events must be between 1 and {MAP_DEPTH_MAX}, got {max_events}")
    if seeds < 0 or workers < 1 or (budget is not None and budget <= 0):
        raise InputError("--seeds must be 0 or more, --workers 1 or more, --budget more than 0")
    loaded = FAMILIES.load_workload(workload)
    family = FAMILIES.family_for(loaded)
    names = [k.strip() for k in knobs.split(",")] if knobs is not None else None
    if names is not None and not all(names):
        raise InputError("--knobs: give knob names separated by single commas")
    if out is not None:
        from sim.report.outputs import check_output_dir

        out = check_output_dir(out, "--out")
    deadline = NO_DEADLINE if budget is None else Deadline(budget)
    try:
        start = family.parse_protocol(base) if base is not None else None
    except InputError as error:
        raise InputError(f"--base: {error}") from None
    with progress_for(json_out, {"protocols": "protocol"}) as bar:
        drawn = design_map(family, loaded, names, max_events, seeds=seeds, workers=workers, deadline=deadline,
                           progress=lambda done, total, label: bar("protocols", done, total, label), base=start)
    document = drawn.document()
    if out is not None:
        _write(document, out)
    if json_out:
        emit_json(document.to_json())
    else:
        _print(human_console(False), document)
    return EXIT_OK


def _write(document: MapDocument, out: Path) -> None:
    import json

    from sim.core.files import write_files_atomically
    from sim.report.figures import to_png, to_svg
    from sim.report.maps import pareto_figure

    figure = pareto_figure(document)
    write_files_atomically({out / "map.json": json.dumps(document.to_json(), indent=1, ensure_ascii=False) + "\n",
                            out / "pareto.svg": to_svg(figure)})
    (out / "pareto.png").write_bytes(to_png(figure))


def _print(console, document: MapDocument) -> None:
    from rich.table import Table
    table = Table(title=f"design map: {document.workload} ({document.family}), "
                        f"{len(document.protocols)} protocols, within {document.max_events} events",
                  header_style="bold")
    from sim.core.wrapping import name_cell, name_width, unbroken
    from sim.report.phrases import map_findings_per_run, map_verdict

    labels = [name_cell(p.protocol) for p in document.protocols]
    for column in ("protocol", "verdict", "shortest violations", "violating runs", "findings/run", "work done",
                   "same as"):
        # names are pre-broken after "," and "=" (never folded inside a word): a protocol cell keeps its width
        table.add_column(column, min_width=name_width(labels) if column in ("protocol", "same as") else None)
    for point in document.protocols:
        shortest = ", ".join(f"{name} {v.shortest_events}" for name, v in point.invariants.items()
                             if v.status == "violated")
        share = point.violating_share
        work = point.progress_share
        table.add_row(name_cell(point.protocol), map_verdict(point), shortest or "-",
                      "-" if share is None else f"{share.value:.0%}",
                      map_findings_per_run(point),
                      "-" if work is None else f"{work:.0%}",
                      "" if point.same_as == point.protocol else name_cell(point.same_as))
    console.print(unbroken(table))
    console.print(f"minimal safe designs: {', '.join(document.minimal_safe) or 'none'}")
    from sim.report.phrases import what_if_lines

    what_if = what_if_lines(document)
    if what_if:
        console.print("what if we drop this? (nearest unsafe neighbour of each minimal safe design)")
        for line in what_if:
            console.print(f"  - {line}", markup=False)
    console.print(f"Pareto front among designs proved safe (violating runs, findings per run, work not done): "
                  f"{', '.join(document.pareto_front) or 'none'}")
    from sim.report.phrases import map_not_decided, map_violated

    if map_violated(document):
        console.print(f"violated within the bound (drawn apart): {', '.join(map_violated(document))}", markup=False)
    if map_not_decided(document):
        console.print(f"not decided within the bound (a limit stopped the search; never called safe): "
                      f"{', '.join(map_not_decided(document))}", markup=False)
    if document.held:
        console.print("held fixed (not walked): " + ", ".join(f"{k}={v}" for k, v in document.held.items()))
    for certificate in document.certificates:
        console.print(f"certificate: {certificate.words}")
        for clause in certificate.clauses:
            console.print(f"  - {clause.condition}: e.g. {clause.proved_safe_example} proved safe")
        for excluded in certificate.excluded[:5]:
            console.print(f"  x {excluded.protocol} violates in {excluded.shortest_events}: "
                          f"{' ; '.join(excluded.witness or ())}")
    for finding in document.monotonicity_findings:
        console.print(f"finding: {finding.safe} is safe for {finding.invariant} but the stronger "
                      f"{finding.stronger_violates} violates it: {' ; '.join(finding.witness or ())}")
    if document.stopped:
        console.print(f"stopped by {document.stopped}: the protocols it cut short are 'not decided'")
