"""``fencesim diff``: the findings of two runs compared (exit 1 on a new one)."""

from __future__ import annotations

import typer

from sim.cli.app import EXIT_OK, EXIT_VIOLATION, JSON_HELP, app, emit_json, human_console


@app.command()
def diff(
    before: str = typer.Argument(..., help="The earlier run: a fuzz --json document or a review's results.json."),
    after: str = typer.Argument(..., help="The later run, of the same kind."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Compare the findings (invariant @ where, per protocol) of two runs: new, still there, fixed.

    Exit 0 when the later run has no finding the earlier one lacks, 1 when it has one, 4 on a file that is
    not a fencesim run."""
    from sim.report.diffing import compare, read_findings

    comparison = compare(read_findings(before), read_findings(after))
    if json_out:
        emit_json(comparison.to_json())
    else:
        console = human_console(False)
        for title, found in (("new", comparison.new), ("fixed", comparison.fixed),
                             ("still there", comparison.still)):
            console.print(f"{title}: {len(found)}", markup=False)
            for finding in found:
                console.print(f"  {finding.words()}", markup=False)
    code = EXIT_VIOLATION if comparison.new else EXIT_OK
    raise typer.Exit(code)
