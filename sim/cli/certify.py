"""``fencesim certify``: per transition, exactly once within N events under an engine, or the shortest order that
repeats or loses it and the smallest change its endpoint can take (docs/engines.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer

from sim.cli.app import EXIT_OK, EXIT_VIOLATION, JSON_HELP, app, emit_json, human_console
from sim.cli.bounds import CERTIFY_DEPTH_MAX
from sim.cli.progress import progress_for
from sim.core.errors import InputError


@app.command()
def certify(
    workload: str = typer.Option(..., "--workload", "-w", help="An effects workload (scenarios/workloads) or file."),
    engine: List[str] = typer.Option(..., "--engine", "-e", help="temporal, dbos, step-functions-standard, "
                                     "step-functions-express-async, step-functions-express-sync, durable-task, "
                                     "inngest, restate, or 'all'; repeat for several."),
    protocol: str = typer.Option("", "--protocol", "-p", help="Your knobs after the engine's preset, e.g. "
                                 "idempotency=key (keys, reconciliation, compensation are yours, not the engine's)."),
    max_events: int = typer.Option(3, "--max-events", "--depth", help=f"Faults per order searched (1 to "
                                   f"{CERTIFY_DEPTH_MAX}): 'exactly once' is proved within this many."),
    export: Optional[Path] = typer.Option(None, "--export", help="Folder: each finding's order as a scenario "
                                          "`fencesim run` replays, with its timeline."),
    budget: Optional[float] = typer.Option(None, "--budget", help="Seconds of wall clock; a search the budget "
                                           "stops proves nothing and says so."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Answer, for each transition of the workflow under each engine: exactly once within --max-events faults
    (proved by exhaustive search), or the proved-shortest order that repeats or loses its effect, with the
    smallest change its endpoint can take (checked by the search when it is a knob). Exit 0 when every
    transition is exactly once, 1 otherwise."""
    from sim.app.certifying import certify as run_certify
    from sim.app.certifying import engine_protocol, export_answers
    from sim.families.effects.knobs import ENGINES
    from sim.registry import FAMILIES
    from sim.search.budget import Deadline

    if not 1 <= max_events <= CERTIFY_DEPTH_MAX:
        raise InputError(f"--max-events must be from 1 to {CERTIFY_DEPTH_MAX}, not {max_events}")
    if budget is not None and not 0 < budget < 1e12:
        raise InputError(f"--budget must be a positive number of seconds, not {budget}")
    engines = list(ENGINES) if "all" in engine else list(dict.fromkeys(engine))
    for name in engines:
        engine_protocol(name, protocol)  # every engine and the knobs are checked before any search runs
    loaded = FAMILIES.load_workload(workload)
    if FAMILIES.family_for(loaded).name != "effects":
        raise InputError(f"certify reads effects workloads; {workload} is a {FAMILIES.family_for(loaded).name} "
                         "workload")
    if export is not None:  # before any search: a folder that cannot be one is refused now, not after it
        from sim.report.outputs import check_output_dir

        check_output_dir(export, "--export", contents=False)  # beside a user's files: none is ever replaced
    console = human_console(json_out)
    deadline = Deadline(budget, "--budget")
    with progress_for(json_out, {f"certify {name}": "depth" for name in engines}) as bar:
        certificates = [run_certify(loaded, name, protocol, max_events, deadline,
                                    progress=_progress(bar, f"certify {name}")) for name in engines]
    if export is not None:
        for certificate in certificates:
            export_answers(certificate, loaded, export)
    lives = [_ends(loaded, name, protocol, max_events, deadline) for name in engines]
    for certificate, live in zip(certificates, lives):
        for line in certificate_lines(certificate) + [live[0]]:
            console.print(line, markup=False)
    if json_out:
        emit_json({"workload": loaded.name,
                   "certificates": [{**c.to_json(), "liveness": live[1]} for c, live in zip(certificates, lives)]})
    clean = all(a.verdict == "exactly once" for c in certificates for a in c.answers)
    return EXIT_OK if clean else EXIT_VIOLATION


#: The faults a behaviour may have when certify asks whether the task ends under fairness (each fault more
#: multiplies the graph by the alphabet, and every state's run is followed to its end).
CERTIFY_LIVENESS_FAULTS = 1
CERTIFY_LIVENESS_STATES = 200_000


def _ends(workload: Any, engine: str, extra: str, max_events: int, deadline: Any) -> tuple[str, dict]:
    """Whether the task ends under fairness under one engine (``explore --liveness``): a line and its JSON."""
    from sim.app.certifying import engine_protocol
    from sim.registry import FAMILIES
    from sim.search.liveness import check_liveness, shown_events

    family = FAMILIES.family_for(workload)
    faults = min(max_events, CERTIFY_LIVENESS_FAULTS)
    result = check_liveness(family, workload, engine_protocol(engine, extra), faults,
                            max_states=CERTIFY_LIVENESS_STATES, deadline=deadline)
    within = f"within {faults} fault{'s' if faults != 1 else ''}"
    words = []
    for name, verdict in result.verdicts.items():
        if verdict.status == "violated":
            words.append(f"{name} violated after {' ; '.join(shown_events(verdict.prefix)) or 'the start'}"
                         + (f" (then forever: {' ; '.join(map(str, verdict.cycle))})" if verdict.cycle else ""))
        elif verdict.status == "not decided":
            words.append(f"{name} not decided ({verdict.note})")
        else:
            words.append(f"{name} holds" + (" (vacuously)" if verdict.vacuous else ""))
    ends = "ends" if all(v.status == "holds" for v in result.verdicts.values()) else "may not end"
    line = f"  under fairness the task {ends} {within} ({result.states:,} states): " + "; ".join(words)
    return line, {"within_faults": faults, **{name: v.to_json() for name, v in result.verdicts.items()}}


def _progress(bar: Any, phase: str) -> Any:
    def progress(depth: int, total: int, states: int) -> None:
        bar(phase, depth, total or depth + 1, f"{states:,} states")

    return progress


def order_shows(answer: Any, kind: str) -> str:
    """What the order of one finding showed when replayed: every invariant of certify, and what ``fencesim run``
    of it reports at the transition (empty when it showed only its own)."""
    violates, shows = answer.violates.get(kind, [kind]), answer.shows.get(kind, [])
    if violates == [kind] and not shows:
        return ""
    both = f"{' and '.join(violates)}; " if violates != [kind] else ""
    return f" ({both}replayed, it shows {', '.join(shows) or 'nothing the family checks'})"


def certificate_lines(certificate: Any) -> list[str]:
    """The human table of one engine's certificate: one block per transition."""
    knobs = f" with {certificate.extra}" if certificate.extra else ""
    proved = "" if certificate.complete else " (the search was stopped by a limit: nothing is proved)"
    out = [f"{certificate.engine}{knobs}: {len(certificate.answers)} transition(s), {certificate.states:,} states "
           f"searched within {certificate.max_events} events{proved}"]
    for answer in certificate.answers:
        within = f" within {answer.within} events" if answer.verdict == "exactly once" else ""
        out.append(f"  {answer.transition}: {answer.verdict}{within}")
        for kind, order in (("repeats", answer.repeats), ("lost", answer.lost)):
            if order is not None:
                words = "; ".join(str(e) for e in order) or "no fault (the run itself)"
                out.append(f"    {kind} under: {words}{order_shows(answer, kind)}")
        if answer.change is not None:
            checked = " (checked by the search)" if answer.change_checked else ""
            out.append(f"    smallest change: {answer.change}{checked}")
        for path in answer.exported:
            out.append(f"    replay: fencesim run {path}")
    return out
