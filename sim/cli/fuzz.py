"""``fencesim fuzz``: sweep, shrink each distinct violation, export, advise -- for any family."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional

import typer

from sim.cli.app import EXIT_OK, EXIT_VIOLATION, JSON_HELP, app, emit_json, human_console
from sim.core.errors import InputError
from sim.core.files import check_output_dir, check_output_file, write_atomically

DEFAULT_OUT = Path("counterexamples")


def _progress(enabled: bool):
    if not enabled:
        return None
    state = {"last": -1}

    def report(done: int, total: int) -> None:
        percent = int(100 * done / total)
        if percent != state["last"]:
            state["last"] = percent
            sys.stderr.write(f"\rfuzz: {done}/{total} seeds ({percent}%)")
            if done >= total:
                sys.stderr.write("\n")
            sys.stderr.flush()

    return report


@app.command()
def fuzz(
    workload: str = typer.Option("seed-fuzz", "--workload", "-w",
                                 help="A workload name (scenarios/workloads) or file; it names the family."),
    protocol: Optional[List[str]] = typer.Option(None, "--protocol", "-p",
                                                 help="Repeat to fuzz several; default: the family's presets."),
    seeds: int = typer.Option(1000, "--seeds", help="Seeds per protocol."),
    seed_start: int = typer.Option(0, "--seed-start", help="Run i uses seed seed_start + i."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Parallel processes (default: the core count)."),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="Where counterexamples are written."),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Write JUnit XML here."),
    exhaustive: bool = typer.Option(False, "--exhaustive", help="Enumerate every valid order up to --max-events."),
    max_events: int = typer.Option(6, "--max-events", help="Bound of --exhaustive."),
    advise: bool = typer.Option(True, "--advise/--no-advise", help="Run the counterfactual advisor on each counterexample."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Hunt violations: sweep seeds, shrink each distinct violation, export it, print its replay command."""
    from sim.registry import FAMILIES

    if workers is not None and workers < 1:
        raise InputError("--workers must be at least 1")
    # every output path is checked before any work starts: a sweep's results are never lost to a bad path
    check_output_dir(out, "--out")
    if junit is not None:
        check_output_file(junit, "--junit")
    if os.environ.get("GITHUB_STEP_SUMMARY") is not None:
        check_output_file(os.environ["GITHUB_STEP_SUMMARY"], "GITHUB_STEP_SUMMARY")
    loaded = FAMILIES.load_workload(workload)
    family = FAMILIES.family_for(loaded)
    protocols = [family.parse_protocol(p) for p in (protocol or list(family.presets))]
    console = human_console(json_out)
    if exhaustive:
        return _exhaustive(family, loaded, protocols, max_events, console, json_out)
    from sim.report.fuzz import export_all, fuzz_document
    from sim.search.pipeline import fuzz as run_fuzz

    result = run_fuzz(family, loaded, protocols, seeds, seed_start, workers, advise=advise,
                      progress=_progress(sys.stderr.isatty() or bool(os.environ.get("FENCESIM_PROGRESS"))))
    document = fuzz_document(result, export_all(result, out))
    _print_summary(console, document)
    if json_out:
        emit_json(document)
    if junit is not None:
        from sim.report.ci import junit_xml

        write_atomically(junit, junit_xml(document))
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        from sim.report.ci import markdown_summary

        with open(summary_path, "a", encoding="utf-8") as handle:
            handle.write(markdown_summary(document))
    return EXIT_VIOLATION if document["counterexamples"] else EXIT_OK


def _print_summary(console, document: dict) -> None:
    console.print(f"workload {document['workload']} ({document['family']} family): {document['runs']} runs, "
                  f"{document['violating_runs']} violating", markup=False)
    for label, tally in document["by_protocol"].items():
        found = ", ".join(f"{k} {v}" for k, v in tally["violating_runs_by_invariant"].items() if v)
        counted = "; ".join(f"{name.replace('_', ' ')} {tally[name]}" for name in document["availability"])
        line = (f"  {label:<40} {tally['violating_runs']:>6} of {tally['runs']} runs violate ({found})" if found
                else f"  {label:<40} {'no':>6} violating run in {tally['runs']}")
        if "progress" in tally:
            share = tally["progress"]["share"]["value"]
            line += f"; {tally['progress']['what'].replace('_', ' ')} {share:.0%}" if share == share else ""
            if tally["applies_nothing"]:
                line += " -- APPLIES NOTHING: no violation because no work is done"
        console.print(line + (f"; {counted}" if counted else ""), markup=False)
    if document.get("claims"):
        console.print("\nthe seed's claims, as this search found them:", markup=False)
        for claim in document["claims"]:
            console.print(f"  [{'holds' if claim['holds'] else 'FAILS'}] {claim['protocol']}: {claim['claim']} "
                          f"-- {claim['evidence']}", markup=False)
    for example in document["counterexamples"]:
        console.print(f"\n{example['invariant']} under {example['protocol']}: minimal order of "
                      f"{len(example['events'])} events (from {example['original_events']}; "
                      f"{'shortest possible' if example['shrink']['shortest_proved'] else '1-minimal'}):", markup=False)
        console.print("  " + (" ; ".join(example["events"]) or "(no fault needed)"), markup=False)
        advice = example.get("advice")
        if advice and advice["recommended"]:
            changes = ", ".join(f"{k}={v}" for k, v in advice["changes"].items())
            done = "" if advice.get("progress_share") is None else f", work done {advice['progress_share']:.0%}"
            console.print(f"  smallest fix: {changes} -> {advice['recommended']} "
                          f"({advice['availability_per_run']} {' + '.join(document['availability'])} per run{done}, "
                          f"{advice['sample_violating_runs']} violating runs in a {advice['sample_seeds']}-seed "
                          f"sample)", markup=False)
        elif advice:
            console.print("  no change of up to two knobs removes it", markup=False)
        console.print(f"  replay: {example['replay']}", markup=False)


def _exhaustive(family, workload, protocols, max_events: int, console, json_out: bool) -> int:
    from sim.search.exhaustive import explore

    results = [explore(family, workload, p, max_events) for p in protocols]
    document = {"family": family.name, "workload": workload.name, "max_events": max_events,
                "protocols": [r.to_json() for r in results]}
    for r in results:
        data = r.to_json()
        console.print(f"{r.protocol}: {r.orders_explored} orders, {r.distinct_states} distinct states explored "
                      f"up to {max_events} events ({'complete' if r.complete else 'stopped: ' + r.reason})", markup=False)
        if not data["violations"]:
            console.print(f"  no safety violation within {max_events} events (proved by enumeration)", markup=False)
        for name, found in data["violations"].items():
            console.print(f"  {name}: shortest {found['shortest_events']} events, {len(found['orders'])} order(s):",
                          markup=False)
            for order in found["orders"]:
                console.print("    " + " ; ".join(order), markup=False)
    if json_out:
        emit_json(document)
    return EXIT_VIOLATION if any(r.violated for r in results) else EXIT_OK
