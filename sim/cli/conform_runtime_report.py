"""What ``fencesim conform --runtime`` writes and prints: each disagreement exported side by side with the
command that plays the real side again, and the agreement table."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Sequence


def export(family: Any, target: Any, table: Any, out: Path, runtime: str, plant: Sequence[str]) -> list[str]:
    """Each disagreement as a scenario (the model's side, replayable with fencesim run), both histories and
    a side-by-side text with the command that plays the real side again (a seed's: its shrunk list)."""
    from sim.core.files import write_files_atomically
    from sim.report.export import scenario_toml, slug

    files: dict[Path, str] = {}
    planted = "".join(f" --plant {p}" for p in plant)
    for found in table.disagreements:
        cell = found.shrunk_to or found
        base = (f"fencesim conform --runtime {shlex.quote(runtime)} --workload "
                f"{shlex.quote(workload_argument(target))} --protocol {shlex.quote(cell.protocol)}")
        if table.unit == "scenarios":
            replay = f"fencesim conform --runtime {shlex.quote(runtime)} --scenario {shlex.quote(str(target.path))}" \
                f" --protocol {shlex.quote(cell.protocol)}{planted}"
            origin = f"the scenario's fault list ({'; '.join(cell.labels) or 'none'})"
            stem = f"conform__{slug(target.name)}__{slug(cell.protocol)}__scenario"
            events = cell.events
        elif found.seed is None:
            what = cell.name
            replay, origin = f"{base} --cell {shlex.quote(what)}{planted}", f"the cell {what}"
            stem = f"conform__{slug(target.name)}__{slug(cell.protocol)}__{slug(what)}"
            events = next(c.events for c in family.single_faults(target) if tuple(c.labels) == cell.labels)
        else:
            stem = f"conform__{slug(target.name)}__{slug(cell.protocol)}__seed{found.seed}"
            replay = (f"fencesim conform --runtime {shlex.quote(runtime)} --scenario "
                      f"{shlex.quote(str(out / f'{stem}.toml'))}{planted}  (the seed's whole list: "
                      f"{base} --seeds 1 --seed-start {found.seed}{planted})")
            origin = (f"seed {found.seed}'s fault list ({len(found.events)} faults, shrunk to "
                      f"{len(cell.events)}: {'; '.join(cell.labels) or 'none'})")
            events = cell.events
        description = (f"The model and the {runtime} runtime disagree on {origin} under {cell.protocol}: "
                       + "; ".join(cell.differences()[:3]) + f". Real side: {replay}")
        protocol = family.parse_protocol(cell.protocol)
        scenario = family.counterexample(target, protocol, "conformance", events,
                                         {"name": stem, "description": description})
        files[out / f"{stem}.toml"] = scenario_toml(family, scenario)
        files[out / f"{stem}.model.jsonl"] = cell.model_history.to_jsonl() if cell.model_history else ""
        files[out / f"{stem}.real.jsonl"] = cell.real_history.to_jsonl() if cell.real_history else ""
        files[out / f"{stem}.side-by-side.txt"] = side_by_side(cell, replay, table.unit == "scenarios")
    write_files_atomically(files)
    return [str(p) for p in files]


def workload_argument(target: Any) -> str:
    """The workload as a command names it to load it again: its name when that name resolves to its file (a
    registered workload), else its file's path (a workload's name is no way to find a file of one's own)."""
    from sim.core.errors import FencesimError
    from sim.core.workload import resolve_workload

    if target.path is None:
        return str(target.name)
    try:
        if resolve_workload(target.name).resolve() == Path(target.path).resolve():
            return str(target.name)
    except (FencesimError, OSError):
        pass
    return str(target.path)


def side_by_side(cell: Any, replay: str, scenario: bool = False) -> str:
    what = f"cell {cell.name}" if cell.seed is None and scenario is False else \
        f"{'scenario' if cell.seed is None else f'seed {cell.seed}'}, faults: {'; '.join(cell.labels) or 'none'}"
    lines = [f"{what} under {cell.protocol}", f"real side again: {replay}", ""]
    if cell.kept is not None:
        lines[-1:] = [f"the real run's folder (--keep-runs): {cell.kept}", ""]
    if cell.failed is not None:  # no real observation: the run failed or hung (its partial history is exported)
        lines += [f"the real run failed: {cell.failed}", ""]
    lines += [f"{'observed':<14} {'model':<40} real"]
    from sim.real.runtimes.compare import OBSERVED

    for key in OBSERVED:
        model, real = (cell.model or {}).get(key), (cell.real or {}).get(key, "-")
        lines.append(f"{'  ' if model == real else '!='}{key:<12} {str(model):<40} {real}")
    explained = [d for d in cell.differences() if d.startswith("fingerprints of ")]
    return "\n".join(lines + ([""] + explained if explained else [])) + "\n"


def print_table(console: Any, workload: str, runtime: str, table: Any, files: list[str],
                scope: str | None = None, keep: Path | None = None) -> None:
    """The agreement table, one row per protocol; then, per protocol, the violating runs, the ones not
    applicable (each with its reason), not played and not judged; then each disagreement."""
    from sim.core.wrapping import wrap_names, wrap_text

    what = scope or {"cells": "the cruel grid", "seeds": "fuzzed fault lists"}.get(table.unit,
                                                                                    "a scenario's fault list")
    console.print(f"conform: {workload}, {what}, runtime: {runtime}", markup=False)
    header = ("protocol", table.unit, "agree", "disagree", "not played", "not applicable", "could not judge",
              "violating (model / real)", "real kills", "freezes", "seconds")
    rows = [header] + [(p, str(r[table.unit]), str(r["agreeing"]), str(r["disagreeing"]), str(r["not_played"]),
                        str(r["not_applicable"]), str(r["could_not_judge"]),
                        f"{r['violating_model']} / {r['violating_real']}", str(r["kills"]), str(r["freezes"]),
                        f"{r['seconds']:.1f}") for p, r in table.by_protocol().items()]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        console.print("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                       for i, (c, w) in enumerate(zip(row, widths))).rstrip(), markup=False)
    for protocol in table.by_protocol():
        mine = [c for c in table.cells if c.protocol == protocol]
        violating = [f"{c.name} (model: {', '.join((c.model or {}).get('violations', [])) or 'none'}; real: "
                     f"{', '.join((c.real or {}).get('violations', [])) or 'none'})" for c in mine if c.violating]
        if violating:
            _listed(console, f"violating under {protocol} ({len(violating)} {table.unit})", violating, wrap_names)
        for reason in sorted({c.not_applicable for c in mine if not c.applicable}):
            named = [c.name for c in mine if c.not_applicable == reason]
            _listed(console, f"not applicable under {protocol} ({len(named)} {table.unit}): {reason}", named,
                    wrap_names)
        for cell in mine:
            if cell.status in ("not_played", "could_not_judge"):
                what = "not played under" if cell.status == "not_played" else "COULD NOT JUDGE"
                for index, line in enumerate(wrap_text(f"{what} {protocol}, {cell.name}: "
                                                       f"{cell.not_played or cell.harness_error}", 110)):
                    console.print(("  " if index == 0 else "    ") + line, markup=False)
    _verdicts(console, table, files)
    _kept(console, table, keep)


def _verdicts(console: Any, table: Any, files: list[str]) -> None:
    """Every judged run agrees (and whether some could not be judged), or each disagreement and the exports."""
    if not table.disagreements:
        judged = sum(1 for c in table.cells if c.agrees)
        console.print(f"every judged run agrees ({judged}): same effects, duplicates, receipts, "
                      "compensations, outcome, violations and fingerprints", markup=False)
        if table.unjudged:
            console.print(f"not all runs judged: {len(table.unjudged)} could not be (the harness's own "
                          "infrastructure failed, not the runtime; exit 7)", markup=False)
        return
    for found in table.disagreements:
        cell = found.shrunk_to or found
        shrunk = "" if found.shrunk_to is None else f" (shrunk to {'; '.join(cell.labels) or 'no fault'})"
        name = found.name if table.unit != "scenarios" else f"faults: {'; '.join(found.labels) or 'none'}"
        console.print(f"DISAGREE {cell.protocol}, {name}{shrunk}: {'; '.join(cell.differences())}",
                      markup=False)
    console.print(f"exported: {len(files)} files under {Path(files[0]).parent if files else '-'}", markup=False)


def _kept(console: Any, table: Any, keep: Path | None) -> None:
    """Where ``--keep-runs`` kept the runs' folders: the one, or how many and those of the runs that disagree
    or could not be judged."""
    if keep is None:
        return
    kept = [c for c in table.cells if c.kept]
    if len(kept) == 1:
        console.print(f"run folder kept: {kept[0].kept}", markup=False)
        return
    console.print(f"run folders kept: {len(kept)} under {keep} (one per run, named PROTOCOL__CELL)", markup=False)
    for cell in kept:
        if cell.status in ("disagrees", "could_not_judge"):
            console.print(f"  {cell.status.replace('_', ' ')}: {cell.kept}", markup=False)


def _listed(console: Any, title: str, names: list[str], wrap_names: Any) -> None:
    """A title and the names under it, wrapped between names (never inside one)."""
    console.print(f"  {title}:", markup=False)
    for line in wrap_names(names, 100):
        console.print(f"    {line}", markup=False)
