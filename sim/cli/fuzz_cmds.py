"""``fencesim fuzz``: sweep, shrink each distinct violation, export, advise."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import List, Optional

import typer

from sim.cli.app import EXIT_OK, EXIT_VIOLATION, app, emit_json, human_console, write_atomically
from sim.errors import InputError
from sim.protocol import WORKSPACE_PRESETS, parse_protocol

DEFAULT_OUT = Path("counterexamples")


def _progress(console, enabled: bool):
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
    workload: str = typer.Option("seed-fuzz", "--workload", "-w", help="A workload name (scenarios/workloads) or file."),
    protocol: Optional[List[str]] = typer.Option(None, "--protocol", "-p", help="Repeat to fuzz several; default: the four presets."),
    seeds: int = typer.Option(1000, "--seeds", help="Seeds per protocol."),
    seed_start: int = typer.Option(0, "--seed-start", help="Run i uses seed seed_start + i."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Parallel processes (default: the core count)."),
    backend: str = typer.Option("local", "--backend", help="local (dask is not available in this version)."),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="Where counterexamples are written."),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Write JUnit XML here."),
    exhaustive: bool = typer.Option(False, "--exhaustive", help="Enumerate every valid order up to --max-events."),
    max_events: int = typer.Option(6, "--max-events", help="Bound of --exhaustive."),
    advise: bool = typer.Option(True, "--advise/--no-advise", help="Run the counterfactual advisor on each counterexample."),
    json_out: bool = typer.Option(False, "--json", help="Machine output (JSON) on stdout; human output on stderr."),
) -> int:
    """Hunt violations: sweep seeds, shrink each distinct violation, export it, print its replay command."""
    from sim.search.workload import load_workload

    if backend != "local":
        raise InputError(f"backend {backend!r} is not available; backends: local")
    if workers is not None and workers < 1:
        raise InputError("--workers must be at least 1")
    loaded = load_workload(workload)
    protocols = [parse_protocol(p) for p in (protocol or list(WORKSPACE_PRESETS))]
    console = human_console(json_out)
    if exhaustive:
        return _exhaustive(loaded, protocols, max_events, console, json_out)
    from sim.search.sweep import sweep

    summary, _ = sweep(loaded, protocols, seeds, seed_start, workers,
                       progress=_progress(console, sys.stderr.isatty() or bool(os.environ.get("FENCESIM_PROGRESS"))))
    counterexamples = _shrink_and_export(loaded, summary, out, console)
    document = {
        "workload": loaded.name,
        "seed_start": seed_start,
        "seeds": seeds,
        "runs": summary.runs,
        "violating_runs": summary.violating_runs,
        "by_invariant": summary.by_invariant(),
        "by_protocol": {label: t.to_json() for label, t in summary.tallies.items()},
        "counterexamples": counterexamples,
    }
    from sim.search.claims import judge

    document["claims"] = judge(document["by_protocol"], protocols)
    if advise and counterexamples:
        from sim.search.advisor import advise as run_advisor

        for example in counterexamples:
            advice = run_advisor(loaded, parse_protocol(example["protocol"]), example["invariant"],
                                 example["_actions"], workers=1)
            example["advice"] = {k: v for k, v in advice.to_json().items() if k in (
                "recommended", "recommended_strength", "spurious_rejections_per_run", "sample_safety_violations")}
    for example in counterexamples:
        example.pop("_actions", None)
    _print_summary(console, document)
    if json_out:
        emit_json(document)
    if junit is not None:
        from sim.report_ci import junit_xml

        write_atomically(junit, junit_xml(document))
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        from sim.report_ci import markdown_summary

        with open(summary_path, "a", encoding="utf-8") as handle:
            handle.write(markdown_summary(document))
    return EXIT_VIOLATION if counterexamples else EXIT_OK


def _shrink_and_export(workload, summary, out: Path, console) -> list[dict]:
    from sim.replay import replay
    from sim.search.export import counterexample_scenario, current_commit, export
    from sim.search.shrink import shrink

    commit = current_commit()
    examples = []
    for (label, invariant), found in sorted(summary.found.items()):
        result = shrink(workload, parse_protocol(label), found.order, invariant)
        scenario = counterexample_scenario(workload.base, label, invariant, result.events, found.seed,
                                           workload.name, commit)
        history, _ = replay(scenario, parse_protocol(label))
        paths = export(scenario, history, out)
        replay_command = f"fencesim run {shlex.quote(str(paths['scenario']))}"
        examples.append({
            "protocol": label, "invariant": invariant, "events": [str(e) for e in result.events],
            "file": str(paths["scenario"]), "timeline": str(paths["timeline"]), "pytest": str(paths["pytest"]),
            "seed": found.seed, "run": found.run, "original_events": result.original_length,
            "shrink": {"replays": result.replays, "end": result.reason, "one_minimal": result.one_minimal,
                       "shortest_proved": result.shortest_proved},
            "replay": replay_command, "_actions": result.events,
        })
    return examples


def _print_summary(console, document: dict) -> None:
    console.print(f"workload {document['workload']}: {document['runs']} runs, "
                  f"{document['violating_runs']} violating", markup=False)
    for label, tally in document["by_protocol"].items():
        found = ", ".join(f"{k}={v}" for k, v in tally["by_invariant"].items() if v) or "no safety violation"
        console.print(f"  {label:<40} {tally['violating_runs']:>6} violating of {tally['runs']}: {found}; "
                      f"spurious rejections {tally['spurious_rejections']}", markup=False)
    if document.get("claims"):
        console.print("\nthe seed's claims, as this search found them:", markup=False)
        for claim in document["claims"]:
            console.print(f"  [{'holds' if claim['holds'] else 'FAILS'}] {claim['protocol']}: {claim['claim']} "
                          f"-- {claim['evidence']}", markup=False)
    for example in document["counterexamples"]:
        console.print(f"\n{example['invariant']} under {example['protocol']}: minimal order of "
                      f"{len(example['events'])} events (from {example['original_events']}; "
                      f"{'shortest possible' if example['shrink']['shortest_proved'] else '1-minimal'}):", markup=False)
        console.print("  " + " ; ".join(example["events"]), markup=False)
        if "advice" in example and example["advice"]["recommended"]:
            advice = example["advice"]
            console.print(f"  weakest protocol removing it: {advice['recommended']} "
                          f"({advice['spurious_rejections_per_run']} spurious rejections/run, "
                          f"{advice['sample_safety_violations']} violating runs in its sample sweep)", markup=False)
        console.print(f"  replay: {example['replay']}", markup=False)


def _exhaustive(workload, protocols, max_events: int, console, json_out: bool) -> int:
    from sim.search.exhaustive import explore

    results = [explore(workload, p, max_events) for p in protocols]
    document = {"workload": workload.name, "max_events": max_events, "protocols": [r.to_json() for r in results]}
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
