"""``fencesim fuzz``: sweep, shrink each distinct violation, export, advise -- for any family.

Long phases show a progress bar on stderr (a person only); ``--budget``
bounds the whole run; the sweep's state is saved in ``--out`` after every
chunk and on an interrupt, so ``--resume DIR`` finishes an interrupted run
with every option it started with (the budget too: what is left of it);
``--baseline`` lets known violations pass.  Every input is read and every
output path checked before any work (:mod:`sim.report.outputs`): nothing
of the user's is replaced, and a run never fails at its end for a path it
could have refused at its start.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional

import typer

from sim.cli.app import (
    EXIT_OK,
    EXIT_VIOLATION,
    JSON_HELP,
    app,
    distinct_protocols,
    emit_json,
    error_console,
    human_console,
)
from sim.cli.bounds import WORKERS_MAX
from sim.cli.fuzz_state import STATE_FILE, check_against, read_state, resume_command, state_document
from sim.cli.fuzz_state import load_workload as load_state_workload
from sim.cli.progress import Bar, progress_wanted
from sim.core.errors import FencesimError, InputError
from sim.core.files import write_atomically
from sim.search.options import BACKENDS

if TYPE_CHECKING:
    from sim.core.values import JsonObject
    from sim.report.baseline import Baseline

DEFAULT_OUT = Path("counterexamples")

#: Options that define a sweep; ``--resume`` takes them from the sweep's state and refuses them if given.
RUN_ARGUMENTS = (("workload", "--workload"), ("protocol", "--protocol"), ("seeds", "--seeds"),
                 ("seed_start", "--seed-start"), ("out", "--out"), ("advise", "--advise/--no-advise"),
                 ("exhaustive", "--exhaustive"), ("max_events", "--max-events"), ("budget", "--budget"),
                 ("shrink_seconds", "--shrink-seconds"))


@dataclass
class FuzzOptions:
    """Every option of one ``fencesim fuzz`` run (from the command line, or from a sweep state)."""

    workload: str = "seed-fuzz"
    protocol: list[str] | None = None
    seeds: int = 1000
    seed_start: int = 0
    workers: int | None = None
    backend: str = "local"
    scheduler: str | None = None
    out: Path = DEFAULT_OUT
    junit: Path | None = None
    budget: float | None = None
    shrink_seconds: float = 30.0
    baseline: Path | None = None
    write_baseline: Path | None = None
    resume: Path | None = None
    check_determinism: bool = False
    exhaustive: bool = False
    max_events: int = 6
    advise: bool = True
    json_out: bool = False
    force: bool = False
    spent_s: float = 0.0  # seconds of the budget an interrupted run already spent


@dataclass
class Prepared:
    """A fuzz run ready to start: its inputs read and its outputs checked."""

    options: FuzzOptions
    family: Any
    workload: Any
    protocols: list
    digest: str
    known: Baseline | None = None
    state: dict | None = None
    junit: Path | None = None
    write_baseline: Path | None = None
    summary: Path | None = None
    last: dict = field(default_factory=dict)  # the last sweep state written


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
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="Where counterexamples (and the sweep's state) are written: "
                             "a new or empty folder, or an earlier fencesim output folder."),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Write JUnit XML here (a new file, or one fencesim "
                                         "wrote)."),
    budget: Optional[float] = typer.Option(None, "--budget", help="Seconds of wall clock for the whole run."),
    shrink_seconds: float = typer.Option(30.0, "--shrink-seconds",
                                         help="Seconds one counterexample may take to shrink."),
    baseline: Optional[Path] = typer.Option(None, "--baseline",
                                            help="Known violations (a file of --write-baseline): they do not fail."),
    write_baseline: Optional[Path] = typer.Option(None, "--write-baseline",
                                                  help="Write this run's counterexamples as a baseline file (a new "
                                                  "file, or a baseline); exit 0 once written."),
    resume: Optional[Path] = typer.Option(None, "--resume",
                                          help="Finish the interrupted run whose --out is this folder, with every "
                                          "option it started with (and what is left of its --budget)."),
    check_determinism: bool = typer.Option(False, "--check-determinism",
                                           help="Rerun a sample of seeds in a fresh process (another hash seed) "
                                           "and compare history bytes."),
    exhaustive: bool = typer.Option(False, "--exhaustive", help="Enumerate every valid order up to --max-events."),
    max_events: int = typer.Option(6, "--max-events", help="Bound of --exhaustive."),
    advise: bool = typer.Option(True, "--advise/--no-advise",
                                help="Run the counterfactual advisor on each counterexample."),
    force: bool = typer.Option(False, "--force", help="Replace a --junit or --write-baseline file that fencesim did "
                               "not write, and write into an --out folder that holds other files (a file of yours "
                               "there is still never replaced)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Hunt violations: sweep seeds, shrink each distinct violation, export it, print its replay command."""
    options = FuzzOptions(workload, list(protocol) if protocol else None, seeds, seed_start, workers, backend,
                          scheduler, out, junit, budget, shrink_seconds, baseline, write_baseline, resume,
                          check_determinism, exhaustive, max_events, advise, json_out, force)
    _check_numbers(options)
    state = _resume_options(ctx, options, options.resume) if options.resume is not None else None
    run = _prepare(options, state)
    if options.exhaustive:
        from sim.cli.explore import ExploreRequest
        from sim.cli.explore import exhaustive as search_every_state
        from sim.search.budget import Deadline
        from sim.search.exhaustive import ExploreOptions

        search = ExploreOptions(max_events=options.max_events, deadline=Deadline(options.budget, "--budget"),
                                workers=options.workers or 1)
        return search_every_state(run.family, run.workload, run.protocols, ExploreRequest(search=search),
                                  human_console(options.json_out), options.json_out)
    from sim.core.outputs import FolderLock

    with FolderLock(options.out):
        if state is None and (options.out / STATE_FILE).exists():
            _refuse_unfinished(options.out)
        return _execute(run)


def _check_numbers(options: FuzzOptions) -> None:
    if options.workers is not None and not 1 <= options.workers <= WORKERS_MAX:
        raise InputError(f"--workers must be from 1 to {WORKERS_MAX}, not {options.workers}")
    if options.budget is not None and not 0 < options.budget < 1e12:
        raise InputError(f"--budget must be a positive number of seconds, not {options.budget}")
    if not 0 < options.shrink_seconds < 1e12:
        raise InputError(f"--shrink-seconds must be positive, not {options.shrink_seconds}")
    if options.backend not in BACKENDS:
        raise InputError(f"unknown backend {options.backend!r}; backends: {', '.join(BACKENDS)}")
    if options.scheduler is not None and options.backend != "dask":
        raise InputError("--scheduler is the address of a Dask scheduler: give it with --backend dask")


def _refuse_unfinished(out: Path) -> None:
    raise InputError(f"{out} holds an unfinished sweep ({STATE_FILE}): continue it with "
                     f"{resume_command(out, False)}, or delete that file to start afresh")


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the option of parameter ``name`` was given (on the command line or by the environment)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


def _resume_options(ctx: typer.Context, options: FuzzOptions, resume: Path) -> dict:
    """Take every option of the interrupted run from its state (outputs and settings unless given again)."""
    given = [option for name, option in RUN_ARGUMENTS if _given(ctx, name)]
    if given:
        raise InputError(f"--resume continues a sweep with the arguments it started with; drop {', '.join(given)}")
    from sim.core.outputs import resolve_link

    resolve_link(resume, "--resume")  # a loop or a dangling link: one line, exit 4
    options.out = resume
    state = read_state(options.out)
    arguments, outputs, settings = state["arguments"], state["outputs"], state["settings"]
    options.workload, options.protocol = arguments["workload"], arguments["protocols"]
    options.seeds = arguments["seeds"]
    options.seed_start, options.advise = arguments["seed_start"], arguments["advise"]
    options.shrink_seconds, options.budget = arguments["shrink_seconds"], arguments["budget_s"]
    options.spent_s = state["budget"]["spent_s"]
    for name in ("baseline", "junit", "write_baseline"):
        if getattr(options, name) is None and outputs[name] is not None:
            setattr(options, name, Path(outputs[name]))
    options.check_determinism = options.check_determinism or outputs["check_determinism"]
    options.force = options.force or outputs["force"]
    for name in ("workers", "backend", "scheduler"):
        if not _given(ctx, name):
            setattr(options, name, settings[name])
    _check_numbers(options)
    return state


def finding_files(folder: Path, stems: list[str]) -> list[str]:
    """The files already in ``folder`` that a finding of these (protocol, invariant) stems may be exported as:
    where it happens is part of a counterexample's name, and is known only once the sweep found it, so every
    file the name could be is checked before any work (a file of the user's among them is refused)."""
    from sim.report.export import NAME_LIMIT, slug

    if not folder.is_dir():
        return []
    heads = tuple(slug(stem, limit=NAME_LIMIT) + "_" for stem in stems)
    return [entry for entry in sorted(os.listdir(folder))
            if entry.endswith((".toml", ".timeline.txt", ".py"))
            and (entry[len("test_"):] if entry.startswith("test_") else entry).startswith(heads)]


def _prepare(options: FuzzOptions, state: dict | None) -> Prepared:
    """Read every input (workload, protocols, baseline, sweep state) and check every output, before any work."""
    from sim.registry import FAMILIES
    from sim.report.baseline import read_baseline, workload_digest

    known = read_baseline(options.baseline) if options.baseline is not None else None
    loaded = FAMILIES.load_workload(options.workload) if state is None else \
        load_state_workload(state, options.out / STATE_FILE)
    family = FAMILIES.family_for(loaded)
    protocols = distinct_protocols(family, options.protocol or list(family.presets), "--protocol")
    run = Prepared(options, family, loaded, protocols, workload_digest(family, loaded), known, state)
    if state is not None:
        if state["arguments"]["workload_digest"] != run.digest:
            raise InputError(f"the workload {loaded.path or loaded.name} has changed since the sweep in "
                             f"{options.resume} started; resuming would mix two workloads (delete "
                             f"{options.out / STATE_FILE} to start afresh)")
        check_against(state, family, loaded, options.out / STATE_FILE)
    _check_outputs(run)
    return run


def _check_outputs(run: Prepared) -> None:
    """Every output path, before any work: never an input, never another output, never a file of the user's."""
    from sim.core.outputs import Plan
    from sim.report.export import counterexample_name, export_names
    from sim.report.outputs import check_output_dir, check_output_file, check_output_names, check_summary

    options = run.options
    plan = Plan()
    if run.workload.path is not None:
        plan.inputs.append(("--workload", Path(run.workload.path)))
    if options.baseline is not None:
        plan.inputs.append(("--baseline", Path(options.baseline)))
    if options.exhaustive:
        plan.check()
        return
    check_output_dir(options.out, "--out", force=options.force)
    stems = [counterexample_name(run.workload.name, p.label, invariant)
             for p in run.protocols for invariant in run.family.safety_invariants]
    names = [STATE_FILE] + [name for stem in stems for name in export_names(stem)] + finding_files(options.out, stems)
    check_output_names(options.out, names[1:], "--out")
    plan.folders.append(("--out", options.out, tuple(names)))
    if options.junit is not None:
        run.junit = check_output_file(options.junit, "--junit", "junit", options.force)
        plan.files.append(("--junit", Path(options.junit)))
    if options.write_baseline is not None:
        run.write_baseline = check_output_file(options.write_baseline, "--write-baseline", "baseline",
                                               options.force)
        plan.files.append(("--write-baseline", Path(options.write_baseline)))
    summary = os.environ.get("GITHUB_STEP_SUMMARY") or None  # set but empty: as if unset
    if summary is not None:
        run.summary = check_summary(summary)
        plan.files.append(("GITHUB_STEP_SUMMARY", Path(summary)))
    plan.check()


def _arguments(run: Prepared) -> dict:
    options = run.options
    return {"workload": str(run.workload.path or options.workload), "protocols": [p.label for p in run.protocols],
            "seeds": options.seeds, "seed_start": options.seed_start, "advise": options.advise,
            "workload_digest": run.digest, "shrink_seconds": options.shrink_seconds, "budget_s": options.budget}


def _outputs(run: Prepared) -> dict:
    options = run.options
    text = lambda path: None if path is None else str(Path(path).resolve())  # noqa: E731
    return {"baseline": text(options.baseline), "junit": text(options.junit),
            "write_baseline": text(options.write_baseline), "check_determinism": options.check_determinism,
            "force": options.force, "json": options.json_out}


def _save(run: Prepared, deadline, sweep: dict | None = None) -> None:
    """Write the sweep's state (the last one again when ``sweep`` is None): every option, and the budget spent."""
    options = run.options
    if sweep is not None:
        run.last = sweep
    settings = {"workers": options.workers, "backend": options.backend, "scheduler": options.scheduler}
    write_atomically(options.out / STATE_FILE, json.dumps(state_document(
        _arguments(run), _outputs(run), settings, deadline.spent(), run.last)) + "\n")


def _sweep(run: Prepared, deadline):
    """The pipeline, its state saved after every chunk; an interrupt keeps it and prints the resume command."""
    from sim.search.options import SearchOptions
    from sim.search.pipeline import fuzz as run_fuzz
    from sim.search.tally import SweepState

    options, state = run.options, run.state
    resume = SweepState(**state["sweep"]) if state is not None else None
    run.last = state["sweep"] if state is not None else {"next_chunk": 0, "seeds_done": 0, "found": [],
                                                         "tallies": _empty_tallies(run), "saturation": []}
    try:
        with Bar(progress_wanted(options.json_out)) as bar:
            return run_fuzz(run.family, run.workload, run.protocols, SearchOptions(
                options.seeds, options.seed_start, options.workers, deadline, options.backend, options.scheduler,
                resume=resume, checkpoint=lambda sweep_state: _save(run, deadline, dict(sweep_state.__dict__)),
                progress=lambda done, total, violating: bar("sweep", done, total, f"{violating} violating runs"),
                advise=options.advise, shrink_seconds=options.shrink_seconds,
                shrink_progress=lambda what, length: bar(f"shrink {what}", 0, 1, f"{length} events")))
    except KeyboardInterrupt:
        try:
            _save(run, deadline)
        except (KeyboardInterrupt, OSError):
            pass
        if (options.out / STATE_FILE).exists():
            error_console().print(f"fencesim: the sweep so far is kept: continue it with "
                                  f"{resume_command(options.out, options.json_out)}", markup=False)
        raise


def _empty_tallies(run: Prepared) -> dict:
    import dataclasses

    from sim.search.tally import ProtocolTally

    return {p.label: dataclasses.asdict(ProtocolTally(run.family.safety_invariants, run.family.availability_columns))
            for p in run.protocols}


def _execute(run: Prepared) -> int:
    """Sweep, shrink, advise; export; compare with the baseline; print; write the outputs."""
    from sim.cli.fuzz_print import print_summary
    from sim.report.fuzz import export_all, fuzz_document, timings
    from sim.search.budget import Deadline

    options = run.options
    deadline = Deadline(options.budget, "--budget", spent_before=options.spent_s)
    console = human_console(options.json_out)
    if run.state is not None:
        _print_resuming(console, run, run.state)
    result = _sweep(run, deadline)
    document = fuzz_document(result, export_all(result, options.out))
    document["budget_s"], document["budget_stopped"] = options.budget, list(deadline.hit)
    if run.state is not None and options.budget is not None:
        document["budget_left_at_resume_s"] = round(max(0.0, options.budget - options.spent_s), 1)
    (options.out / STATE_FILE).unlink(missing_ok=True)  # finished: nothing to resume
    if options.check_determinism:
        document["determinism"] = _check_determinism(run.family, run.workload, run.protocols, options.seed_start,
                                                     options.seeds, result)
    exit_code = EXIT_VIOLATION if document["counterexamples"] else EXIT_OK
    if run.known is not None:
        comparison = document["baseline"] = _compare(run, run.known, document)
        exit_code = EXIT_VIOLATION if comparison["new"] else EXIT_OK
    print_summary(console, document)
    if options.json_out:
        emit_json(document)
    if run.write_baseline is not None:
        _write_baseline(run, run.write_baseline, document, console)
        exit_code = EXIT_OK  # recording a baseline succeeded: what it recorded is in the file
    if run.junit is not None:
        from sim.report.ci import junit_xml

        write_atomically(run.junit, junit_xml(document, timings(result)))
    if run.summary is not None:
        from sim.report.ci import markdown_summary
        from sim.report.outputs import append_summary

        append_summary(run.summary, markdown_summary(document))
    return exit_code


def _print_resuming(console, run: Prepared, state: dict) -> None:
    sweep, options = state["sweep"], run.options
    line = (f"resuming the sweep in {options.out}: {sweep['seeds_done']} of {options.seeds} seeds per protocol done "
            f"(seeds {options.seed_start}..{options.seed_start + options.seeds - 1} asked)")
    if options.budget is not None:
        left = max(0.0, options.budget - options.spent_s)
        line += f"; --budget {options.budget:g} s: {options.spent_s:.1f} s spent, {left:.1f} s left"
    console.print(line, markup=False)


def _compare(run: Prepared, known: Baseline, document: JsonObject) -> JsonObject:
    from sim.report.baseline import BASELINE_MAX_WORK, compare, normalised_protocol, prepare
    from sim.search.budget import work_of
    from sim.search.pipeline import replay_orders

    spent = [0]  # the bulk replays of this comparison share one work limit

    def replayer(jobs, limited=True):
        if not limited:
            return replay_orders(run.family, run.workload.base, jobs, run.options.workers)
        results = replay_orders(run.family, run.workload.base, jobs, run.options.workers,
                                max(0, BASELINE_MAX_WORK - spent[0]))
        spent[0] += sum(work_of(1, len(events)) for (_, events), done in zip(jobs, results) if done is not None)
        return results

    labels = {p.label: normalised_protocol(p) for p in run.protocols}
    prepared = prepare(known, run.family, run.workload, str(run.options.baseline), run.digest,
                       set(labels.values()), replayer)
    return compare(document, prepared, lambda label: labels.get(label) or label, replayer)


def _previous_baseline(path: Path) -> Baseline | None:
    """The baseline ``--write-baseline`` replaces, to carry its run history on (None: a new file, or one that
    does not read as a baseline -- the output check already refused any file that is not one)."""
    from sim.report.baseline import read_baseline

    if not Path(path).exists():
        return None
    try:
        return read_baseline(path)
    except FencesimError:
        return None


def _write_baseline(run: Prepared, path: Path, document: dict, console) -> None:
    from sim.report.baseline import baseline_document

    previous = _previous_baseline(path)
    written = baseline_document(document, {p.label: p for p in run.protocols}, run.digest, previous)
    write_atomically(path, json.dumps(written.to_json(), indent=2) + "\n")
    entries = written.entries
    drawn = len(document["counterexamples"])
    carried = len(entries) - drawn
    console.print(f"baseline written to {run.options.write_baseline}: {len(entries)} "
                  f"entr{'y' if len(entries) == 1 else 'ies'} for workload {written.workload}"
                  + (f" ({carried} kept from the baseline it replaced: findings this run did not draw)"
                     if carried else "")
                  + (f"; its history holds {len(written.runs)} runs" if len(written.runs) > 1 else ""),
                  markup=False)
    for entry in entries:
        count = len(entry.events)
        shown = f"{count} event{'' if count == 1 else 's'}{', not shrunk' if entry.one_minimal is False else ''}"
        console.print(f"  {entry.finding} under {entry.label or '?'} ({shown})", markup=False)


def _check_determinism(family, workload, protocols, seed_start: int, seeds: int, result) -> dict:
    """Digests of sample runs here and in a fresh interpreter with another PYTHONHASHSEED; a difference is a
    bug in fencesim (exit 3 with the runs that differ)."""
    import subprocess
    import sys

    from sim.cli.determinism import other_hash_seed
    from sim.search.determinism import SAMPLE_SEEDS, digests

    sample = sorted({seed_start + i for i in range(min(SAMPLE_SEEDS, seeds))}
                    | {example.seed for example in result.counterexamples})
    labels = [p.label for p in protocols]
    here = digests(family, workload, labels, sample)
    request = json.dumps({"workload": str(workload.path), "protocols": labels, "seeds": sample})
    env = dict(os.environ, PYTHONHASHSEED=other_hash_seed(os.environ.get("PYTHONHASHSEED")))
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
