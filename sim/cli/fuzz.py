"""``fencesim fuzz``: sweep, shrink each distinct violation, export, advise -- for any family.

Long phases show a progress bar on stderr (a person only); ``--budget``
bounds the whole run; the sweep's state is saved in ``--out`` after every
chunk, so ``--resume DIR`` finishes an interrupted run with the same output
as an uninterrupted one; ``--baseline`` lets known violations pass.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from pathlib import Path
from typing import List, Optional

import typer

from sim.cli.app import EXIT_OK, EXIT_VIOLATION, JSON_HELP, app, emit_json, error_console, human_console
from sim.cli.progress import Bar, progress_wanted
from sim.core.errors import InputError
from sim.core.files import check_output_dir, check_output_file, read_text, write_atomically

DEFAULT_OUT = Path("counterexamples")
STATE_FILE = "sweep-state.json"
STATE_FORMAT = 1


def _state_arguments(workload: str, protocols: list[str], seeds: int, seed_start: int, advise: bool,
                     digest: str | None) -> dict:
    return {"workload": workload, "protocols": protocols, "seeds": seeds, "seed_start": seed_start, "advise": advise,
            "workload_digest": digest}


def _workload_digest(workload) -> str | None:
    """What a workload file holds, as a digest: a sweep resumed, or a baseline compared, must see the same."""
    if workload.path is None:
        return None
    return hashlib.sha256(Path(workload.path).read_bytes()).hexdigest()[:16]


def _read_state(folder: Path) -> dict:
    path = folder / STATE_FILE
    if not path.exists():
        raise InputError(f"nothing to resume: {path} does not exist (it is written by a fuzz run with --out {folder})")
    try:
        data = json.loads(read_text(path, "sweep state"))
    except json.JSONDecodeError as error:
        raise InputError(f"corrupt sweep state ({error.msg}); delete it and run again", str(path)) from None
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT or "arguments" not in data or "sweep" not in data:
        raise InputError("not a sweep state of this fencesim; delete it and run again", str(path))
    return data


#: Options that define a sweep; ``--resume`` takes them from the sweep's state and refuses them if given.
RUN_ARGUMENTS = (("workload", "--workload"), ("protocol", "--protocol"), ("seeds", "--seeds"),
                 ("seed_start", "--seed-start"), ("out", "--out"), ("advise", "--advise/--no-advise"),
                 ("exhaustive", "--exhaustive"))


@app.command()
def fuzz(
    ctx: typer.Context,
    workload: str = typer.Option("seed-fuzz", "--workload", "-w",
                                 help="A workload name (scenarios/workloads) or file; it names the family."),
    protocol: Optional[List[str]] = typer.Option(None, "--protocol", "-p",
                                                 help="Repeat to fuzz several; default: the family's presets."),
    seeds: int = typer.Option(1000, "--seeds", help="Seeds per protocol."),
    seed_start: int = typer.Option(0, "--seed-start", help="Run i uses seed seed_start + i."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Parallel processes (default: the core count)."),
    backend: str = typer.Option("local", "--backend", help="local (processes on this machine) or dask."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler",
                                            help="With --backend dask: the scheduler's address (default: a local "
                                            "cluster of --workers processes)."),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="Where counterexamples (and the sweep's state) are written."),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Write JUnit XML here."),
    budget: Optional[float] = typer.Option(None, "--budget", help="Seconds of wall clock for the whole run."),
    shrink_seconds: float = typer.Option(30.0, "--shrink-seconds",
                                         help="Seconds one counterexample may take to shrink."),
    baseline: Optional[Path] = typer.Option(None, "--baseline",
                                            help="Known violations (a file of --write-baseline): they do not fail."),
    write_baseline: Optional[Path] = typer.Option(None, "--write-baseline",
                                                  help="Write this run's counterexamples as a baseline file."),
    resume: Optional[Path] = typer.Option(None, "--resume",
                                          help="Finish the interrupted run whose --out is this folder."),
    check_determinism: bool = typer.Option(False, "--check-determinism",
                                           help="Rerun a sample of seeds in a fresh process (another hash seed) "
                                           "and compare history bytes."),
    exhaustive: bool = typer.Option(False, "--exhaustive", help="Enumerate every valid order up to --max-events."),
    max_events: int = typer.Option(6, "--max-events", help="Bound of --exhaustive."),
    advise: bool = typer.Option(True, "--advise/--no-advise", help="Run the counterfactual advisor on each counterexample."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Hunt violations: sweep seeds, shrink each distinct violation, export it, print its replay command."""
    from sim.registry import FAMILIES
    from sim.search.budget import Deadline

    if workers is not None and workers < 1:
        raise InputError("--workers must be at least 1")
    if budget is not None and not budget > 0:
        raise InputError(f"--budget must be a positive number of seconds, not {budget}")
    if not shrink_seconds > 0:
        raise InputError(f"--shrink-seconds must be positive, not {shrink_seconds}")
    if backend not in ("local", "dask"):
        raise InputError(f"unknown backend {backend!r}; backends: local, dask")
    if scheduler is not None and backend != "dask":
        raise InputError("--scheduler is the address of a Dask scheduler: give it with --backend dask")
    state = None
    if resume is not None:
        given = [option for name, option in RUN_ARGUMENTS
                 if ctx.get_parameter_source(name).name != "DEFAULT"]  # given, not defaulted
        if given:
            raise InputError(f"--resume continues a sweep with the arguments it started with; drop "
                             f"{', '.join(given)}")
        out = resume
        state = _read_state(resume)
        arguments = state["arguments"]
        workload, protocol, seeds = arguments["workload"], arguments["protocols"], arguments["seeds"]
        seed_start, advise = arguments["seed_start"], arguments["advise"]
        kept = state.get("outputs", {})  # what the interrupted run was to write, unless given again
        baseline = baseline if baseline is not None else _path(kept.get("baseline"))
        junit = junit if junit is not None else _path(kept.get("junit"))
        write_baseline = write_baseline if write_baseline is not None else _path(kept.get("write_baseline"))
        check_determinism = check_determinism or bool(kept.get("check_determinism"))
    # every output path is checked before any work starts: a sweep's results are never lost to a bad path
    check_output_dir(out, "--out")
    if resume is None and not exhaustive and (out / STATE_FILE).exists():
        raise InputError(f"{out} holds an unfinished sweep ({STATE_FILE}): continue it with --resume {out}, or "
                         f"delete that file to start afresh")
    for path, what in ((junit, "--junit"), (write_baseline, "--write-baseline"),
                       (os.environ.get("GITHUB_STEP_SUMMARY") or None, "GITHUB_STEP_SUMMARY")):
        if path is not None:
            check_output_file(path, what)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY") or None  # set but empty: as if unset
    if step_summary is not None and not Path(step_summary).parent.is_dir():
        raise InputError(f"GITHUB_STEP_SUMMARY {step_summary}: folder {Path(step_summary).parent} does not exist "
                         "(the summary is appended to a file there)")
    from sim.report.baseline import read_baseline

    known = read_baseline(baseline) if baseline is not None else None
    loaded = FAMILIES.load_workload(workload)
    family = FAMILIES.family_for(loaded)
    digest = _workload_digest(loaded)
    if known is not None:
        for key, ours in (("family", family.name), ("workload", loaded.name)):
            if known.get(key) is not None and known[key] != ours:
                raise InputError(f"--baseline {baseline} was written for {key} {known[key]!r}; this run fuzzes "
                                 f"{ours!r} (write one for it with --write-baseline)")
        if known.get("workload_digest") not in (None, digest):
            raise InputError(f"--baseline {baseline} was written for another version of workload {loaded.name!r} "
                             "(its file has changed since); write a new one with --write-baseline")
        _check_baseline_entries(family, loaded, known["entries"], baseline)
    protocols = [family.parse_protocol(p) for p in (protocol or list(family.presets))]
    labels = [p.label for p in protocols]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise InputError(f"--protocol names {', '.join(twice)} more than once; give each protocol once")
    console = human_console(json_out)
    deadline = Deadline(budget, "--budget")
    if exhaustive:
        return _exhaustive(family, loaded, protocols, max_events, console, json_out, deadline, workers or 1)
    from sim.report.fuzz import export_all, fuzz_document, timings
    from sim.search.pipeline import fuzz as run_fuzz
    from sim.search.sweep import SweepState

    arguments = _state_arguments(str(loaded.path or workload), [p.label for p in protocols], seeds, seed_start, advise,
                                 digest)
    if state is not None and state["arguments"].get("workload_digest") != digest:
        raise InputError(f"the workload file {loaded.path} has changed since the sweep in {resume} started; "
                         f"resuming would mix two workloads (delete {resume / STATE_FILE} to start afresh)")
    if state is not None and state["arguments"] != arguments:
        raise InputError(f"{resume / STATE_FILE} was written for other arguments")
    outputs = {"baseline": _text(baseline), "junit": _text(junit), "write_baseline": _text(write_baseline),
               "check_determinism": check_determinism}

    def checkpoint(sweep_state: SweepState) -> None:
        write_atomically(out / STATE_FILE, json.dumps({"format": STATE_FORMAT, "arguments": arguments,
                                                        "outputs": outputs, "sweep": sweep_state.__dict__}) + "\n")

    try:
        with Bar(progress_wanted(json_out)) as bar:
            result = run_fuzz(
                family, loaded, protocols, seeds, seed_start, workers, advise=advise, deadline=deadline,
                shrink_seconds=shrink_seconds, backend=backend, scheduler=scheduler,
                resume=SweepState(**state["sweep"]) if state is not None else None, checkpoint=checkpoint,
                progress=lambda done, total, violating: bar("sweep", done, total, f"{violating} violating runs"),
                shrink_progress=lambda what, length: bar(f"shrink {what}", 0, 1, f"{length} events"))
    except KeyboardInterrupt:
        if (out / STATE_FILE).exists():
            error_console().print(f"fencesim: the sweep so far is kept: continue it with "
                                  f"fencesim fuzz --resume {shlex.quote(str(out))}", markup=False)
        raise
    document = fuzz_document(result, export_all(result, out))
    (out / STATE_FILE).unlink(missing_ok=True)  # finished: nothing to resume
    if check_determinism:
        document["determinism"] = _check_determinism(family, loaded, protocols, seed_start, seeds, result)
    exit_code = EXIT_VIOLATION if document["counterexamples"] else EXIT_OK
    if known is not None:
        from sim.report.baseline import compare

        document["baseline"] = compare(document, known["entries"], str(baseline),
                                       lambda entry: _still_violates(family, loaded, entry))
        exit_code = EXIT_VIOLATION if document["baseline"]["new"] else EXIT_OK
    _print_summary(console, document)
    if json_out:
        emit_json(document)
    if write_baseline is not None:
        from sim.report.baseline import baseline_document

        write_atomically(write_baseline, json.dumps(baseline_document(document, digest), indent=2) + "\n")
        console.print(f"baseline of {len(document['counterexamples'])} counterexample(s) written to {write_baseline}",
                      markup=False)
    if junit is not None:
        from sim.report.ci import junit_xml

        write_atomically(junit, junit_xml(document, timings(result)))
    if step_summary:
        from sim.report.ci import markdown_summary

        with open(step_summary, "a", encoding="utf-8") as handle:
            handle.write(markdown_summary(document))
    return exit_code


def _check_determinism(family, workload, protocols, seed_start: int, seeds: int, result) -> dict:
    """Digests of sample runs here and in a fresh interpreter with another PYTHONHASHSEED; a difference is a
    bug in fencesim (exit 3 with the runs that differ)."""
    import subprocess
    import sys

    from sim.search.determinism import SAMPLE_SEEDS, digests

    sample = sorted({seed_start + i for i in range(min(SAMPLE_SEEDS, seeds))}
                    | {example.seed for example in result.counterexamples})
    labels = [p.label for p in protocols]
    here = digests(family, workload, labels, sample)
    request = json.dumps({"workload": str(workload.path), "protocols": labels, "seeds": sample})
    parent = os.environ.get("PYTHONHASHSEED", "")
    env = dict(os.environ, PYTHONHASHSEED=str(int(parent) + 1) if parent.isdigit() else "4242")
    done = subprocess.run([sys.executable, "-m", "sim.cli.determinism"], input=request, capture_output=True,
                          text=True, env=env, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the determinism check's fresh process failed: {done.stderr[-2000:]}")
    there = json.loads(done.stdout)
    differing = sorted(k for k in here if here[k] != there.get(k))
    if differing:
        raise RuntimeError(f"nondeterminism: runs {', '.join(differing[:10])} gave other history bytes in a fresh "
                           "process")
    return {"runs": len(here), "identical": True, "hash_seed": env["PYTHONHASHSEED"]}


def _path(text: str | None) -> Path | None:
    return None if text is None else Path(text)


def _text(path: Path | None) -> str | None:
    return None if path is None else str(Path(path).resolve())


def _check_baseline_entries(family, workload, entries: list[dict], path: Path) -> None:
    """Every entry of a baseline names a protocol and events this family and workload know: exit 4 if not."""
    from sim.core.errors import FencesimError

    for position, entry in enumerate(entries):
        try:
            family.parse_protocol(entry["protocol"])
            for text in entry["events"]:
                family.parse_event(workload.base, text)
        except (FencesimError, ValueError, KeyError) as error:
            raise InputError(f"--baseline {path}: entry {position} ({entry['invariant']} under "
                             f"{entry['protocol']}): {error}") from None


def _still_violates(family, workload, entry: dict) -> bool | None:
    """Replay a baseline entry's order under its protocol: does it still violate its invariant?"""
    from sim.core.errors import FencesimError
    from sim.search.oracle import evaluate

    try:
        protocol = family.parse_protocol(entry["protocol"])
        events = [family.parse_event(workload.base, text) for text in entry["events"]]
    except (FencesimError, ValueError, KeyError):
        return None  # written for another design: cannot tell
    return entry["invariant"] in evaluate(family, workload.base, protocol, events, (entry["invariant"],)).violated


def _print_summary(console, document: dict) -> None:
    from sim.report.ci import baseline_counts
    from sim.report.render import advice_sentence

    console.print(f"workload {document['workload']} ({document['family']} family): {document['runs']} runs, "
                  f"{document['violating_runs']} violating", markup=False)
    if document.get("stopped"):
        console.print(f"{document['stopped']} stopped the sweep early; counts are of the seeds run",
                      markup=False)
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
        shrink = example["shrink"]
        proof = ("shortest possible" if shrink["shortest_proved"] else
                 "1-minimal" if shrink["one_minimal"] else f"not minimal: the {shrink['end']} limit stopped it")
        status = {"known": " [known: in the baseline]", "new": " [NEW]"}.get(example.get("baseline"), "")
        kind = "minimal order" if shrink["one_minimal"] else "order"
        count = len(example["events"])
        console.print(f"\n{example['invariant']} under {example['protocol']}{status}: {kind} of "
                      f"{count} event{'' if count == 1 else 's'} (from {example['original_events']}; {proof}):",
                      markup=False)
        console.print("  " + (" ; ".join(example["events"]) or "(no fault needed)"), markup=False)
        advice = example.get("advice")
        if advice and advice["recommended"]:
            changes = ", ".join(f"{k}={v}" for k, v in advice["changes"].items())
            cost = advice_sentence(advice, example["invariant"], " + ".join(document["availability"]))
            console.print(f"  smallest fix: {changes} -> {advice['recommended']} ({cost})", markup=False)
        elif advice:
            console.print("  no change of up to two knobs removes it", markup=False)
        console.print(f"  replay: {example['replay']}", markup=False)
    if document.get("determinism"):
        check = document["determinism"]
        console.print(f"\ndeterminism: {check['runs']} sample runs gave identical history bytes in a fresh process "
                      f"(PYTHONHASHSEED={check['hash_seed']})", markup=False)
    baseline = document.get("baseline")
    if baseline:
        console.print(f"\nbaseline {baseline['file']}: {baseline_counts(baseline)}", markup=False)
        for entry in baseline["fixed"]:
            console.print(f"  fixed (its order no longer violates): {entry['invariant']} under {entry['protocol']}: "
                          f"{' ; '.join(entry['events'])}", markup=False)


def _exhaustive(family, workload, protocols, max_events: int, console, json_out: bool, deadline, workers: int) -> int:
    from sim.search.exhaustive import explore

    results = []
    with Bar(progress_wanted(json_out)) as bar:
        for p in protocols:
            results.append(explore(family, workload, p, max_events, deadline=deadline, workers=workers,
                                   progress=lambda depth, total, states, label=p.label:
                                   bar(f"exhaustive {label}", depth, total, f"{states} states")))
    document = {"family": family.name, "workload": workload.name, "max_events": max_events,
                "protocols": [r.to_json() for r in results]}
    for r in results:
        data = r.to_json()
        console.print(f"{r.protocol}: {r.orders_explored} orders ({r.pruned} more pruned as commuting), "
                      f"{r.distinct_states} distinct states explored up to {max_events} events "
                      f"({'complete' if r.complete else 'stopped by ' + r.reason})", markup=False)
        if not data["violations"] and r.complete:
            console.print(f"  no safety violation within {max_events} events (proved by enumeration)", markup=False)
        elif not data["violations"]:
            console.print("  no violation found before the search stopped: nothing is proved", markup=False)
        for name, found in data["violations"].items():
            console.print(f"  {name}: shortest {found['shortest_events']} events, {len(found['orders'])} order(s):",
                          markup=False)
            for order in found["orders"]:
                console.print("    " + " ; ".join(order), markup=False)
    if json_out:
        emit_json(document)
    return EXIT_VIOLATION if any(r.violated for r in results) else EXIT_OK
