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
    """Compare the findings (invariant @ where, per protocol) of two runs: new, still there, and those gone --
    fixed (the later run swept the same seeds), not drawn (it swept other seeds) or not run (it did not sweep
    the protocol).

    Exit 0 when the later run has no finding the earlier one lacks, 1 when it has one, 4 on a file that is
    not a fencesim run or on runs of two kinds."""
    from sim.report.diffing import compare, read_run

    comparison = compare(read_run(before), read_run(after))
    if json_out:
        emit_json(comparison.to_json())
    else:
        console = human_console(False)
        for title, found in (("new", comparison.new), ("fixed (the later run swept the same seeds)", comparison.fixed),
                             ("not drawn (the later run swept other seeds: gone from its sample, not shown fixed)",
                              comparison.not_drawn),
                             ("not run (the later run did not sweep the protocol)", comparison.not_run),
                             ("still there", comparison.still)):
            if found or title in ("new", "still there") or title.startswith("fixed"):
                console.print(f"{title}: {len(found)}", markup=False)
            for finding in found:
                console.print(f"  {finding.words()}", markup=False)
    code = EXIT_VIOLATION if comparison.new else EXIT_OK
    raise typer.Exit(code)
