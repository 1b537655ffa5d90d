"""``fencesim conform``: the same orders in the model and against a real executor; an agreement table."""

from __future__ import annotations

import shlex
import types
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from sim.cli.app import EXIT_OK, EXIT_VIOLATION, JSON_HELP, app, emit_json, human_console
from sim.cli.progress import Bar, progress_wanted
from sim.core.errors import InputError
from sim.core.files import write_atomically

if TYPE_CHECKING:
    from sim.core.workload import Workload

DEFAULT_OUT = Path("counterexamples/conform")
KEEP_RUNS_HELP = ("With --runtime: keep each run's folder (the external system's database and request log, the "
                  "runtime's database, every process's log) in a folder of its own under this new or empty folder.")
#: Disagreements shrunk per protocol (each distinct minimal order is exported); the rest are listed by seed.
MAX_SHRUNK = 5


@app.command()
def conform(
    workload: Optional[str] = typer.Option(None, "--workload", "-w",
                                           help="A workspace workload name (scenarios/workloads) or file "
                                           "(default: tiny)."),
    protocol: Optional[List[str]] = typer.Option(None, "--protocol", "-p",
                                                 help="Repeat for several; default: step-dedupe."),
    seeds: Optional[int] = typer.Option(None, "--seeds", help="Seeds per protocol (default 200; see --runtime)."),
    seed_start: int = typer.Option(0, "--seed-start", help="Run i uses seed seed_start + i."),
    scenario: Optional[Path] = typer.Option(None, "--scenario", help="Run this scenario's own order (its fault "
                                            "list with --runtime) instead of seeds."),
    executor: Optional[str] = typer.Option(None, "--executor",
                                           help="The executor command (default: fencesim's reference executor, "
                                           "git + SQLite); see docs/real-executor.md for its interface."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Parallel runs (default: the core count)."),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="Where disagreements are exported: a new or empty folder, "
                             "or an earlier fencesim output folder."),
    shrink_seconds: float = typer.Option(
        120.0, "--shrink-seconds", help="Seconds one disagreement may take to shrink (each probe is a real run)."),
    record: Optional[Path] = typer.Option(None, "--record",
                                          help="With --scenario and one protocol: write the real history here (a "
                                          "new file, or a history recorded before)."),
    force: bool = typer.Option(False, "--force", help="Replace a --record file that is not a history, and write into "
                               "an --out folder that holds other files (a file of yours there is never replaced)."),
    runtime: Optional[str] = typer.Option(None, "--runtime", help="Compare the effects family with a real durable "
                                          "runtime instead: dbos, temporal, restate, or your worker's command line "
                                          "(docs/real-runtimes.md); the cruel grid's cells, or --seeds N fault lists."),
    cells: Optional[str] = typer.Option(None, "--cells", help="With --runtime: cruel (the default without "
                                        "--seeds): every cell of the cruel grid the runtime can express."),
    cell: Optional[List[str]] = typer.Option(None, "--cell", help="With --runtime: only this cell, written "
                                             "'fault transition boundary' (repeat for several)."),
    plant: Optional[List[str]] = typer.Option(None, "--plant", help="With --runtime: a bug the reference worker "
                                              "carries (receipt_before_call, new_key_on_retry, skip_reconcile), "
                                              "to see conform find it."),
    keep_runs: Optional[Path] = typer.Option(None, "--keep-runs", help=KEEP_RUNS_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Conformance: run each order in the model and against a real executor (fresh git repository, SQLite
    journal, real SIGKILLs); the real history goes through fencesim check. Exit 0 when every run agrees,
    1 on any disagreement (each one shrunk and exported with both histories side by side)."""
    from sim.real.conform import summarize
    from sim.search.sweep import default_workers

    if runtime is not None:
        return _runtime(runtime, workload, protocol, (seeds, seed_start, shrink_seconds), scenario, executor,
                        record, workers, cells, cell or [], (out, keep_runs), force, plant or [], json_out)
    seeds = _check_numbers(seeds, workers, shrink_seconds, record, scenario, workload, protocol,
                           (cell, plant, cells, keep_runs))
    command = _command(executor)
    family, target, protocols, inputs = _load(scenario, workload, protocol)
    record_to = _check_outputs(out, record, inputs, force)
    _preflight(family, target, protocols[0], command)
    seed_list = [None] if scenario is not None else list(range(seed_start, seed_start + seeds))
    events = tuple(target.base.events) if scenario is not None else None
    workers = 1 if scenario is not None else (workers or default_workers())
    with Bar(progress_wanted(json_out)) as bar:
        results = _run(family, target, protocols, seed_list, workers, command, events, bar)
        if record_to is not None:  # given --record
            from sim.real.driver import run_real

            run = run_real(target.base, protocols[0], events, command=command)
            write_atomically(record_to, run.replay.history.to_jsonl())
        disagreements, unshrunk = _shrink_all(family, target, protocols, results, out, command, shrink_seconds,
                                              events, bar)
    summaries = [summarize(p.label, results[p.label]) for p in protocols]
    name = str(scenario) if scenario is not None else target.name
    who = "reference executor (git + SQLite)" if executor is None else shlex.join(command)
    if json_out:
        _emit(name, who, seed_list, summaries, disagreements, unshrunk, protocols, results)
    _print(human_console(json_out), name, who, len(seed_list), summaries, disagreements, unshrunk, record)
    return EXIT_VIOLATION if disagreements or unshrunk else EXIT_OK


def _emit(name, who, seed_list, summaries, disagreements, unshrunk, protocols, results) -> None:
    emit_json({"workload": name, "executor": who, "seeds": len(seed_list),
               "protocols": [s.to_json() for s in summaries], "disagreements": [d.__dict__ for d in disagreements],
               "same_minimal_order_or_not_shrunk": [{"protocol": r.protocol, "seed": r.seed,
                                                     "differences": r.differences} for r in unshrunk],
               "runs": [r.__dict__ | {"agree": r.agree} for p in protocols for r in results[p.label]]})


def _check_numbers(seeds, workers, shrink_seconds, record, scenario, workload, protocol, runtime_only) -> int:
    """The options of a run against the executor, checked; the seeds per protocol (default 200)."""
    if any(runtime_only):
        raise InputError("--cell, --cells, --plant and --keep-runs go with --runtime")
    seeds = 200 if seeds is None else seeds
    if seeds < 1:
        raise InputError(f"--seeds must be at least 1, not {seeds}")
    if workers is not None and workers < 1:
        raise InputError("--workers must be at least 1")
    if not shrink_seconds > 0:
        raise InputError(f"--shrink-seconds must be positive, not {shrink_seconds}")
    if record is not None and (scenario is None or (protocol and len(protocol) > 1)):
        raise InputError("--record needs --scenario and at most one --protocol")
    if scenario is not None and workload is not None:
        raise InputError("give --workload or --scenario, not both")
    return seeds


def _runtime(runtime, workload, protocol, fuzzing, scenario, executor, record, workers, cells, cell, outputs, force,
             plant, json_out) -> int:
    """``--runtime``: the cruel grid, or ``--seeds N`` fuzzed fault lists, on a real durable runtime
    (sim.cli.conform_runtime)."""
    from sim.cli.conform_runtime import conform_runtime

    seeds, seed_start, shrink_seconds = fuzzing
    out, keep_runs = outputs
    given = [name for name, value in (("--executor", executor), ("--record", record),
                                      ("--workers", workers)) if value is not None]
    if given:
        raise InputError(f"{given[0]} does not go with --runtime (a real runtime plays the cruel grid's cells "
                         "or --seeds N fuzzed fault lists, one run at a time)")
    return conform_runtime(workload, protocol, runtime, cells, cell, out, force, plant, json_out,
                           seeds=seeds, seed_start=seed_start, shrink_seconds=shrink_seconds, scenario=scenario,
                           keep_runs=keep_runs)


def _command(executor: str | None) -> list[str]:
    """The executor's command line, checked: it parses, names a program that exists, and git is there."""
    import shutil

    from sim.real.driver import parse_command

    try:
        command = parse_command(executor)
    except ValueError as error:
        raise InputError(f"--executor {executor!r}: {error}") from None
    if executor is not None and not command:
        raise InputError("--executor is empty (leave it out for the reference executor)")
    if shutil.which(command[0]) is None:
        raise InputError(f"--executor: {command[0]!r} is not a program on PATH or a file that can be run")
    if shutil.which("git") is None:
        raise InputError("conform needs the git command line (install git)")
    return command


def _load(scenario: Path | None, workload: str | None, protocol: list[str] | None):
    """The family, what to run (a scenario's order, or a workload's seeds), the protocols, and the input files."""
    from sim.cli.app import distinct_protocols
    from sim.registry import FAMILIES

    inputs = [("--scenario", scenario)] if scenario is not None else []
    target: types.SimpleNamespace | Workload
    if scenario is not None:
        loaded = FAMILIES.load_scenario(scenario)
        target = types.SimpleNamespace(base=loaded, name=loaded.name, family=getattr(loaded, "family", None))
        family = FAMILIES.family_for(loaded)
        default = [loaded.protocol] if getattr(loaded, "protocol", None) else ["step-dedupe"]
    else:
        target = FAMILIES.load_workload(workload or "tiny")
        family = FAMILIES.family_for(target)
        default = ["step-dedupe"]
        inputs += [("--workload", Path(target.path))] if target.path is not None else []
    if family.name != "workspace":
        raise InputError(f"conform drives a real executor of the workspace family; {family.name} has none "
                         "(its orders can be judged with fencesim check on a history your system records)")
    return family, target, distinct_protocols(family, list(protocol or default), "--protocol"), inputs


def _preflight(family, target, protocol, command) -> None:
    from sim.real.conform import preflight
    from sim.real.driver import RealRunError

    try:
        preflight(family, target.base, protocol, command)
    except RealRunError as error:
        raise InputError(f"the executor does not work: {error}") from None


def _run(family, target, protocols, seed_list, workers, command, events, bar) -> dict:
    """Each protocol's runs: the scenario's order once, or every seed."""
    from sim.real.conform import conform_seed, run_seeds

    if seed_list == [None]:
        return {p.label: [conform_seed(family, target, p, None, command, events)] for p in protocols}
    total, done = len(protocols) * len(seed_list), [0]

    def tick(result) -> None:
        done[0] += 1
        bar("conform", done[0], total, f"{result.protocol}")

    return run_seeds(family, target, protocols, seed_list, workers, command, on_result=tick)


def _shrink_all(family, target, protocols, results, out, command, shrink_seconds, events, bar):
    """Shrink and export up to MAX_SHRUNK disagreements per protocol (each distinct order once)."""
    from sim.real.conform import shrink_and_export

    disagreements, unshrunk = [], []
    for p in protocols:
        orders: set[tuple[str, ...]] = set()
        attempts = 0
        for result in results[p.label]:
            if result.agree:
                continue
            attempts += 1
            if attempts > MAX_SHRUNK:
                unshrunk.append(result)
                continue
            bar(f"shrink {p.label} seed {result.seed}", 0, 1, "")
            found = shrink_and_export(family, target, p, result, out, command, shrink_seconds, events,
                                      skip_orders=orders)
            if found is None:
                unshrunk.append(result)
            else:
                orders.add(tuple(found.order))
                disagreements.append(found)
    return disagreements, unshrunk


def _check_outputs(out: Path, record: Path | None, inputs: list, force: bool) -> Path | None:
    """Every output before any work: --out new, empty or fencesim's; --record a new file or a history; neither
    an input nor the other output.  Returns the path to record to."""
    from sim.core.outputs import Plan
    from sim.report.outputs import check_output_dir, check_output_file

    check_output_dir(out, "--out", force=force)
    plan = Plan(inputs=[(option, Path(path)) for option, path in inputs], folders=[("--out", out, ())])
    target = None
    if record is not None:
        target = check_output_file(record, "--record", "history", force)
        plan.files.append(("--record", Path(record)))
    plan.check()
    return target


def _print(console, name, who, seeds, summaries, disagreements, unshrunk, record) -> None:
    console.print(f"conform: {name}, {seeds} {'order' if seeds == 1 else 'seeds'} per protocol, executor: {who}",
                  markup=False)
    header = ("protocol", "runs", "agree", "deliveries", "agree", "violating runs (model/real)", "crashes",
              "median s", "slowest s")
    rows = [header] + [(s.protocol, str(s.runs), str(s.agreeing), str(s.deliveries), str(s.deliveries_agreeing),
                        f"{s.model_violating}/{s.real_violating}", str(s.crashes), f"{s.median:.2f}",
                        f"{s.slowest:.2f}" + (f" (seed {s.slowest_seed})" if s.slowest_seed is not None else ""))
                       for s in summaries]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        console.print("  " + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                                       for i, (cell, w) in enumerate(zip(row, widths))).rstrip(), markup=False)
    if record is not None:
        console.print(f"real history recorded: {record}", markup=False)
    if not disagreements and not unshrunk:
        console.print("every run agrees: same verdict per delivery, same violations, same final workspace",
                      markup=False)
        return
    for d in disagreements:
        where = "the scenario" if d.seed is None else f"seed {d.seed}"
        console.print(f"DISAGREE {d.protocol}, {where}: {len(d.order)} events (from {d.original_length}"
                      f"{'; 1-minimal: no single event can be removed' if d.one_minimal else ''}): "
                      f"{' ; '.join(d.order)}", markup=False)
        for difference in d.differences[:4]:
            console.print(f"  {difference}", markup=False)
        console.print(f"  side by side: {d.files[-1]}", markup=False)
        console.print(f"  replay: fencesim conform --scenario {d.files[0]}"
                      + ("" if who.startswith("reference") else f" --executor {shlex.quote(who)}"), markup=False)
    for protocol in dict.fromkeys(r.protocol for r in unshrunk):
        seeds_text = _ranges([r.seed for r in unshrunk if r.protocol == protocol])
        console.print(f"also disagree under {protocol} (not exported: the same minimal order as one above, or past "
                      f"the first {MAX_SHRUNK}): seeds {seeds_text}", markup=False)


def _ranges(numbers: list[int | None]) -> str:
    """1, 2, 3, 5 -> '1-3, 5'."""
    present = sorted(n for n in numbers if n is not None)
    parts, start = [], None
    for i, n in enumerate(present):
        if start is None:
            start = n
        if i + 1 == len(present) or present[i + 1] != n + 1:
            parts.append(str(start) if start == n else f"{start}-{n}")
            start = None
    return ", ".join(parts)
