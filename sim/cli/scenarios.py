"""``fencesim matrix``, ``fencesim run`` and ``fencesim check``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from sim.cli.app import (
    EXIT_NOT_EVALUABLE,
    EXIT_NOTHING_RAN,
    EXIT_OK,
    EXIT_VIOLATION,
    JSON_HELP,
    app,
    emit_json,
    error_console,
    human_console,
)
from sim.core.errors import InputError
from sim.core.expect import labels_not_run
from sim.core.knobs import refuse_duplicates
from sim.core.values import cut
from sim.core.wrapping import name_cell, unbroken

if TYPE_CHECKING:
    pass


def _about(violation) -> str:
    """`` (s1)`` after the event index: the step or task a violation is about, when it names one."""
    return f" ({violation.step})" if violation.step is not None else ""


#: Tables ``fencesim matrix --table`` computes besides the default one.
MATRIX_TABLES = ("verdicts",)


def _matrix_table(value: str | None) -> str | None:
    if value is not None and value not in MATRIX_TABLES:
        from sim.core.workload import did_you_mean

        raise typer.BadParameter(f"unknown table {cut(value)!r}{did_you_mean(value, MATRIX_TABLES)}; tables: "
                                 f"{', '.join(MATRIX_TABLES)}")
    return value


@app.command()
def matrix(json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
           table_name: str | None = typer.Option(
               None, "--table", callback=_matrix_table,
               help="verdicts: the seed's section-10 table (reject, replay or compensate), one scripted "
                    "scenario per row, under each preset and the platform design."),
           design: Path | None = typer.Option(None, "--design", "-d", help="With --table verdicts: judge this "
                                              "design's protocols, on its workload's files and plan."),
           workload: str | None = typer.Option(None, "--workload", "-w", help="With --table verdicts: build "
                                               "each row on this workspace workload's files and plan."),
           protocol: list[str] = typer.Option([], "--protocol", "-p", help="With --table verdicts: the "
                                              "protocols judged (repeat; default: the presets and the platform)."),
           ) -> int:
    """The seed's verdict table computed by the model, beside the seed code's answers."""
    from rich.table import Table
    if table_name == "verdicts":
        return _verdicts_table(json_out, design, workload, protocol)
    if design is not None or workload is not None or protocol:
        raise InputError("--design, --workload and --protocol go with --table verdicts (the default table is "
                         "the seed's own)")
    from sim.families.workspace.matrix import SEED_SCENARIOS, compute_matrix

    document = compute_matrix()
    if json_out:
        emit_json(document)
    console = human_console(json_out)
    table = Table(title="Verdict of the last delivery (model; seed code where it differs)")
    table.add_column("row")
    for name in SEED_SCENARIOS:
        table.add_column(name)
    differing = {(d["row"], d["scenario"]): d for d in document["differences"]}
    for row, cells in document["table"].items():
        shown = []
        for name in SEED_SCENARIOS:
            cell = cells[name]
            if (row, name) in differing:
                cell += f"\n(seed code: {differing[(row, name)]['seed_code']})"
            shown.append(cell)
        table.add_row(row, *shown)
    console.print(unbroken(table))
    agree = "equals" if document["matches_seed_table"] else "DIFFERS FROM"
    console.print(f"The model's table {agree} the seed's printed table in all 12 cells.", markup=False)
    console.print(f"The seed's code disagrees with its table in {len(document['differences'])} cells:", markup=False)
    for d in document["differences"]:
        console.print(f"  {d['row']} / {d['scenario']}: table {d['table']}, seed code {d['seed_code']}"
                      f" -- {d['why']}", markup=False)
    for note in document["footnotes"]:
        console.print(f"  note: {note}", markup=False)
    return EXIT_OK


def _verdicts_table(json_out: bool, design: Path | None = None, workload: str | None = None,
                    protocols: list[str] | None = None) -> int:
    """``fencesim matrix --table verdicts``: the seed's correct verdict per row beside each protocol's --
    the presets' and the platform's, or a design's or the given protocols, on a workload of one's own."""
    from rich.table import Table

    from sim.families.workspace import FAMILY
    from sim.families.workspace.verdicts import PLATFORM, verdict_table
    from sim.registry import FAMILIES

    if design is not None and workload is not None:
        raise InputError("give --design or --workload, not both (a design names its workload)")
    loaded, chosen = None, [FAMILY.parse_protocol(p).label for p in protocols or ()]
    if design is not None:
        from sim.app.designs import load_design

        reviewed = load_design(design)
        if reviewed.family.name != FAMILY.name:
            raise InputError(f"the seed's verdict table is of the workspace family; design {reviewed.name!r} is of "
                             f"the {reviewed.family.name} family")
        loaded = reviewed.workload
        chosen = chosen or [p.label for p in reviewed.protocols]
    elif workload is not None:
        loaded = FAMILIES.load_workload(workload)
        if FAMILIES.family_for(loaded).name != FAMILY.name:
            raise InputError(f"the seed's verdict table is of the workspace family; workload {loaded.name!r} is not")
    document = verdict_table(tuple(chosen), None if loaded is None else loaded.base,
                             None if chosen else PLATFORM) if chosen or loaded is not None else verdict_table()
    if json_out:
        emit_json(document)
    console = human_console(json_out)
    table = Table(title="The seed's verdicts (section 10): correct verdict, and what each protocol does")
    table.add_column("event order")
    table.add_column("correct verdict")
    for label in document["protocols"]:  # a header broken after "," and "=", never inside a word
        table.add_column("platform" if label == document["platform"] else name_cell(label, 24))
    for row in document["rows"]:
        cells = [cell["verdict"] + ("" if cell["matches"] else " (differs)") for cell in row["cells"]]
        table.add_row(row["event_order"], row["correct_verdict"], *cells)
    console.print(unbroken(table))
    if document.get("workload"):
        console.print(f"each row built on workload {document['workload']}'s files and plan", markup=False)
    for row in document["rows"]:
        if row.get("not_expressible"):
            console.print(f"  {row['row']}: not expressible -- {row['not_expressible']}", markup=False)
    if document["platform"]:
        console.print(f"platform = {document['platform']}", markup=False)
    console.print(f"{document['cells_differing']} cells differ from the seed's verdict:", markup=False)
    for row in document["rows"]:
        for cell in row["cells"]:
            if not cell["matches"]:
                console.print(f"  {row['row']} / {cell['protocol']}: {cell['verdict']} -- {cell['why']}", markup=False)
    return EXIT_OK


def _protocols_for(family, scenario, given: list[str]):
    if given:
        chosen = [family.parse_protocol(text) for text in given]
        refuse_duplicates(chosen)
        return chosen
    if scenario.protocol:
        return [family.parse_protocol(scenario.protocol)]
    # The family's presets (the effects family's four, not its reliability classes: those run when named).
    return [family.parse_protocol(name) for name in family.presets]


_QUIET_FIELDS = {
    "index", "time", "actor", "event", "verdict", "skipped", "reason", "action", "expected_prior_hunks",
    "hunks_before", "patch_hunks", "domain", "incarnation", "fence", "dedupe", "hash_current", "pipeline",
}


def _fmt_fields(event) -> str:
    """The fields a reader needs, hashes cut to 8 digits (the JSON keeps them whole)."""
    parts = []
    for key, value in event.to_dict().items():
        if key in _QUIET_FIELDS:
            continue
        if isinstance(value, str) and ("hash" in key) and len(value) > 8:
            value = value[:8]
        parts.append(f"{key}={cut(str(value), MAX_CELL_CHARS)}")
    return " ".join(parts)


#: Characters of one value shown in a human table (the JSON keeps it whole).
MAX_CELL_CHARS = 80
#: Violations ``check`` lists on the terminal (``--json`` lists every one).
MAX_VIOLATIONS_SHOWN = 100


def _event_rows(result):
    """``(#, t, actor, event, verdict, details)`` per event of a run, as text."""
    verdict_at = {v["event_index"]: v["verdict"] for v in result.verdicts}
    for event in result.history:
        if event.get("skipped") or event.event == "skipped":
            shown = cut(str(event.get("action", event.get("line", event.event))), MAX_CELL_CHARS)
            yield (str(event.index), str(event.time), event.actor, shown, "skipped",
                   cut(str(event.get("reason", "")), MAX_CELL_CHARS))
            continue
        verdict = event.get("verdict") or verdict_at.get(event.index, "")
        yield (str(event.index), str(event.time), cut(event.actor, MAX_CELL_CHARS), cut(event.event, MAX_CELL_CHARS),
               cut(str(verdict or ""), MAX_CELL_CHARS), _fmt_fields(event))


def _columns(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """Rows as aligned plain-text columns (every column but the last padded to its widest cell).  Written
    by hand: a table library's layout of 10,000 rows takes tens of seconds."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header) - 1)]
    lines = ["  ".join([*(cell.ljust(width) for cell, width in zip(row, widths)), row[-1]]).rstrip()
             for row in (header, *rows)]
    return "\n".join(lines)


def print_result(console, result) -> None:
    """Human view of one run: the event order with verdicts, then the checks."""
    console.print(f"\n== {result.scenario} under {result.protocol.label} ==", markup=False, style="bold")
    table = _columns(("#", "t", "actor", "event", "verdict", "details"), list(_event_rows(result)))
    console.file.write(table + "\n")  # plain text: the console's own rendering of 100,000 lines takes seconds
    line = f"outcome: {result.outcome if result.outcome is not None else 'none (the run recorded no verdict)'}"
    if result.expect is not None:
        line += f"   expected: {result.expect.describe()}   {'OK' if result.expectation_met else 'MISMATCH'}"
    console.print(line, markup=False)
    for name, status in result.checks.status().items():
        console.print(f"  {name:<26} {status}", markup=False)
    declared = " (expected by [expect])" if result.violations_expected else ""
    for v in result.violations:
        console.print(f"  VIOLATED {v.invariant} at event {v.event_index}{_about(v)}: {v.detail}"
                      + (f" [domain {v.domain}]" if v.domain else "") + declared, markup=False, style="red")
    for v in result.availability:
        console.print(f"  counted {v.invariant} at event {v.event_index}{_about(v)}: {v.detail}"
                      + (f" [domain {v.domain}]" if v.domain else ""), markup=False)


def _print_verdict_line(console, result) -> None:
    """One line per run, for a person reading stderr beside ``--json``."""
    found = ", ".join(sorted({v.invariant for v in result.violations})) or "no violation"
    if result.violations_expected:
        found += " (expected by [expect])"
    console.print(f"{result.scenario} under {result.protocol.label}: outcome {result.outcome}; {found}",
                  markup=False)


@app.command()
def run(
    scenarios: List[Path] = typer.Argument(..., help="Scenario files (TOML), any family."),
    protocol: Optional[List[str]] = typer.Option(
        None, "--protocol", "-p",
        help="Preset and/or knobs, e.g. step-dedupe or fence=step,stamp_at=apply; repeat to run several. "
        "Default: the scenario's own protocol, else all of its family's presets.",
    ),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Replay scripted event orders: verdict per delivery, checks; exit 1 on a violated invariant the file's
    [expect] does not declare, or a run that does not meet its [expect]; 0 when every violation was expected
    and every expectation met."""
    from sim.core.result import run_scenario
    from sim.registry import FAMILIES

    loaded = [FAMILIES.load_scenario(path) for path in scenarios]  # all input errors before any run
    families = [(s, FAMILIES.family_for(s)) for s in loaded]
    plans = [(s, f, _protocols_for(f, s, protocol or [])) for s, f in families]
    lassos = {id(s): _lasso_workload(s, f, protocol or []) for s, f in families if "lasso" in getattr(s, "meta", {})}
    lassos_held = 0
    console = human_console(json_out)
    results = []
    for scenario, family, protocols in plans:
        for chosen in protocols:
            result = run_scenario(family, scenario, chosen)
            results.append(result)
            if not json_out:  # the JSON holds every event: no table of them beside it
                print_result(console, result)
            if id(scenario) in lassos:
                from sim.search.lasso_check import replay_lasso

                held, line = replay_lasso(family, scenario, chosen, lassos[id(scenario)])
                console.print(line, markup=False)
                lassos_held += held
    if not results:
        return EXIT_NOTHING_RAN
    if json_out:
        emit_json([r.to_json() for r in results])
        for result in results:
            _print_verdict_line(console, result)
    mismatched = [r for r in results if r.expectation_met is False]
    console.print(f"\n{_run_summary(results, lassos_held)}", markup=False)
    for r in mismatched:
        console.print(f"  [expect] mismatch: {r.scenario} under {r.protocol.label}: {'; '.join(r.mismatches)}",
                      markup=False)
    _warn_expect_not_run(plans)
    return EXIT_OK if all(r.passes for r in results) and not lassos_held else EXIT_VIOLATION


def _lasso_workload(scenario, family, protocols: list[str]):
    """The workload a lasso file was found on (its ``[lasso]`` table names it as ``-w`` takes it), its table
    checked under each protocol the file will run under -- before any run."""
    from sim.registry import FAMILIES
    from sim.search.lasso_check import check_lasso

    lasso = scenario.meta["lasso"]
    name = lasso.get("workload", scenario.meta.get("workload")) if isinstance(lasso, dict) else None
    if not isinstance(name, str):
        raise InputError(f"{scenario.path or scenario.name}: [lasso] must name its workload (workload = ...)")
    workload = FAMILIES.load_workload(name)
    for chosen in _protocols_for(family, scenario, protocols):
        check_lasso(family, scenario, chosen, workload)
    return workload


def _run_summary(results, lassos_held: int = 0) -> str:
    """``run``'s last line: the runs, those with a safety violation (saying which [expect] declared), those not
    matching [expect], the liveness lassos that still hold, and the exit code with its reason -- the rule of
    :attr:`RunResult.passes`, and a lasso that holds is a violation."""
    violated = [r for r in results if r.violations]
    expected = [r for r in violated if r.violations_expected]
    mismatched = [r for r in results if r.expectation_met is False]
    if not violated or not expected:
        found = f"{len(violated)} with a safety violation"
    elif len(expected) == len(violated):
        found = f"{len(violated)} with a safety violation, expected by [expect]"
    else:
        found = (f"{len(violated)} with a safety violation ({len(expected)} expected by [expect], "
                 f"{len(violated) - len(expected)} not)")
    line = f"{len(results)} run(s): {found}; {len(mismatched)} not matching [expect]"
    if lassos_held:
        line += f"; {lassos_held} liveness lasso(s) that still hold"
    if all(r.passes for r in results) and not lassos_held:
        why = "every violation expected by [expect] and every expectation met" if violated else "nothing violated" + (
            ", every expectation met" if any(r.expect is not None for r in results) else "")
        return f"{line} -- exit {EXIT_OK}: {why}"
    unexpected = len(violated) - len(expected)
    reasons = ([f"{unexpected} run(s) with a violation [expect] does not declare"] if unexpected else []) + (
        [f"{len(mismatched)} not matching [expect]"] if mismatched else []) + (
        [f"{lassos_held} liveness lasso(s) that still hold"] if lassos_held else [])
    return f"{line} -- exit {EXIT_VIOLATION}: {' and '.join(reasons)}"


def _warn_expect_not_run(plans) -> None:
    """A warning on stderr per scenario whose [expect] has entries for protocols that were not run (without
    ``--protocol``, a scenario runs under its own protocol or the family's presets only), naming them."""
    console = error_console()
    for scenario, family, protocols in plans:
        missing = labels_not_run(scenario.expect, protocols, family.parse_protocol)
        if missing:
            where = getattr(scenario, "path", None) or scenario.name
            console.print(f"warning: {where}: [expect] has entries for protocols that were not run, so "
                          f"they were not checked: {', '.join(repr(label) for label in missing)} (run them with "
                          "--protocol)", markup=False)


@app.command()
def check(
    history_file: Path = typer.Argument(..., help="A recorded history, one JSON event per line."),
    family: Optional[str] = typer.Option(None, "--family", help="workspace or runtime (default: inferred from "
                                                                 "the events)"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Run the invariant checks on a recorded history (simulated or from a real system): exit 1 on a violation,
    6 if a check could not judge it (a field it needs is never recorded), 0 if every check passed."""
    from sim.core.history import History
    from sim.registry import FAMILIES

    history = History.read(history_file)
    if len(history) == 0:
        human_console(json_out).print(f"{history_file}: no events: nothing to check", markup=False)
        return EXIT_NOTHING_RAN
    chosen, report = FAMILIES.judge_history(history, family, str(history_file))
    if json_out:
        emit_json({
            "family": chosen.name,
            "events": len(history),
            "checks": report.status(),
            "not_evaluable": {r.name: r.reason for r in report.not_evaluable},
            "violations": [v.to_dict() for v in report.safety_violations],
            "availability": [v.to_dict() for v in report.availability_findings],
        })
    console = human_console(json_out)
    console.print(f"{history_file}: {len(history)} events ({chosen.name} family)", markup=False)
    for result in report.results:
        console.print(f"  {result.name:<26} {result.status}" + (f" ({result.reason})" if result.reason else ""),
                      markup=False)
    violations = report.safety_violations
    for v in violations[:MAX_VIOLATIONS_SHOWN]:
        console.print(f"  VIOLATED {v.invariant} at event {v.event_index}{_about(v)}: {cut(v.detail, 400)}",
                      markup=False)
    if len(violations) > MAX_VIOLATIONS_SHOWN:
        console.print(f"  ... and {len(violations) - MAX_VIOLATIONS_SHOWN} more violation(s) (--json lists "
                      "every one)", markup=False)
    if report.safety_violations:
        return EXIT_VIOLATION
    if report.not_evaluable:
        console.print(f"{len(report.not_evaluable)} check(s) could not judge this history (exit {EXIT_NOT_EVALUABLE}): "
                      "each gives its reason", markup=False)
        return EXIT_NOT_EVALUABLE
    return EXIT_OK
