"""``fencesim explore``: exhaustive search of a family's states, breadth first (``fuzz --exhaustive`` too)."""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, List, Optional

import typer

from sim.cli.app import EXIT_OK, EXIT_VIOLATION, JSON_HELP, app, distinct_protocols, emit_json, human_console
from sim.cli.progress import Bar, Ticker, progress_for
from sim.core.errors import InputError
from sim.search.budget import Deadline
from sim.search.exhaustive import EXHAUSTIVE_DEPTH_MAX, MAX_STATES_DEFAULT, STATE_LIMIT_MAX, ExploreOptions

#: The largest --memory-limit accepted, in GB.
MEMORY_LIMIT_MAX_GB = 4096.0


@dataclass(frozen=True, kw_only=True)
class ExploreRequest:
    """What the command asked for: the search of each protocol (how far, its limits, reductions, deadline and
    workers) and what is judged and written beside it."""

    search: ExploreOptions
    liveness: bool = False
    max_faults: int = 2
    unfair: tuple[str, ...] = ()
    out: Path | None = None
    junit: Path | None = None
    source: str = ""  # what -w took


@app.command()
def explore(
    workload: str = typer.Option("tiny", "--workload", "-w",
                                 help="A workload name (scenarios/workloads) or file; it names the family."),
    protocol: Optional[List[str]] = typer.Option(None, "--protocol", "-p",
                                                 help="Repeat for several; default: the family's presets."),
    depth: str = typer.Option("6", "--depth", "--max-events",
                              help=f"Longest order searched, in events (1 to {EXHAUSTIVE_DEPTH_MAX:,}), or 'max': "
                              "until no new state is left."),
    workers: int = typer.Option(1, "--workers", help="Processes expanding each layer of a search whose states cost "
                                "a run: one that replays its candidates, or the effects family's, whose machine "
                                "judges each state by the run after it (the workspace family's machine explores "
                                "in one process: faster than sending its states to workers)."),
    budget: Optional[float] = typer.Option(None, "--budget", help="Seconds of wall clock; a search the budget "
                                           "stops proves nothing and says so."),
    state_limit: int = typer.Option(MAX_STATES_DEFAULT, "--state-limit",
                                    help="Distinct states in all (the visited set keeps about 21 bytes of each; each "
                                    "depth's new states are kept until expanded, encoded past 131,072); a search "
                                    "that reaches it stops and proves nothing."),
    memory_limit: Optional[float] = typer.Option(None, "--memory-limit", help="GB of memory the search may use "
                                                 "(default: three quarters of the machine's); past half of it a "
                                                 "layer spills to disk; at it the search stops and proves nothing."),
    symmetry: bool = typer.Option(False, "--symmetry", help="Keep one state per orbit of the workload's "
                                  "interchangeable parts, where its family declares some (the same proofs; states "
                                  "counted are orbits)."),
    reduce: bool = typer.Option(False, "--reduce", help="Follow persistent sets only (fewer states): violations "
                                "found are measured again unreduced for their shortest orders; absence is proved "
                                "only when the reduced search exhausts the states."),
    exact: bool = typer.Option(False, "--exact", help="Keep each state's key in the visited set instead of a "
                               "64-bit fingerprint: no collision possible, several hundred bytes a state."),
    sleep: bool = typer.Option(True, "--sleep/--no-sleep", help="Leave out events asleep (independent of the "
                               "events before them, their order tried elsewhere: the same states and proofs); "
                               "--no-sleep tries every event in every state, and counts states generated as TLC "
                               "does."),
    liveness: bool = typer.Option(False, "--liveness", help="Also judge the family's liveness properties under "
                                  "fairness on every behaviour with at most --max-faults faults: each holds, is "
                                  "violated (a lasso: a prefix, then a cycle repeated forever) or is not decided."),
    max_faults: int = typer.Option(2, "--max-faults", help="With --liveness: the most faults a behaviour may have "
                                   "(after the last one only the system acts)."),
    unfair: Optional[List[str]] = typer.Option(None, "--unfair", help="With --liveness: drop a fairness "
                                               "assumption by name (repeat for several): the workspace family's are "
                                               "'system' and 'timeout' (the client re-sends an unanswered request), "
                                               "the effects family's 'system' and 'human' (a human answers an "
                                               "approval)."),
    out: Optional[Path] = typer.Option(None, "--out", help="With --liveness: write each lasso found as a "
                                       "scenario file, its timeline and its swimlane (SVG) in this folder "
                                       "(fencesim run FILE replays it: the prefix, then the cycle twice; exit 1 "
                                       "while the lasso still holds)."),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Write JUnit XML here (a new file, or one "
                                         "fencesim wrote): one case per invariant and, with --liveness, per "
                                         "liveness property."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Search every state reachable within --depth events, breadth first (equal states merged, commuting orders
    tried once): each invariant is proved absent within that depth -- at every depth when the search exhausts
    the states -- or violated with its shortest orders. Exit 0 when nothing is violated, 1 otherwise (a search
    stopped by a limit proves nothing and says so)."""
    from sim.registry import FAMILIES

    if (max_faults != 2 or unfair or out is not None) and not liveness:
        raise InputError("--max-faults, --unfair and --out go with --liveness")
    max_events, memory_limit_bytes = _depth(depth), _memory(memory_limit)
    _check_limits(workers, state_limit, budget)
    loaded = FAMILIES.load_workload(workload)
    family = FAMILIES.family_for(loaded)
    protocols = distinct_protocols(family, list(protocol or family.presets), "--protocol")
    request = ExploreRequest(search=ExploreOptions(
        max_events=max_events, max_states=state_limit, deadline=Deadline(budget, "--budget"), workers=workers,
        memory_limit=memory_limit_bytes, symmetry=symmetry, reduce=reduce, exact=exact, sleep=sleep),
        liveness=liveness, max_faults=max_faults, unfair=tuple(unfair or ()), out=out, junit=junit, source=workload)
    return exhaustive(family, loaded, protocols, request, human_console(json_out), json_out)


def _check_limits(workers: int, state_limit: int, budget: float | None) -> None:
    if not 1 <= workers <= 4096:
        raise InputError(f"--workers must be from 1 to 4096, not {workers}")
    if not 1 <= state_limit <= STATE_LIMIT_MAX:
        raise InputError(f"--state-limit must be from 1 to {STATE_LIMIT_MAX:,}, not {state_limit}")
    if budget is not None and not 0 < budget < 1e12:
        raise InputError(f"--budget must be a positive number of seconds, not {budget}")


def _depth(text: str) -> int | None:
    if text.strip().lower() == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        raise InputError(f"--depth must be a whole number of events or 'max', not {text!r}") from None
    if not 1 <= value <= EXHAUSTIVE_DEPTH_MAX:
        raise InputError(f"--depth must be between 1 and {EXHAUSTIVE_DEPTH_MAX:,} (or 'max'), got {value}")
    return value


def _memory(gigabytes: float | None) -> int | None:
    if gigabytes is None:
        return None
    if not 0.05 <= gigabytes <= MEMORY_LIMIT_MAX_GB:  # also refuses nan
        raise InputError(f"--memory-limit must be from 0.05 to {MEMORY_LIMIT_MAX_GB:,.0f} GB, not {gigabytes}")
    return int(gigabytes * 1e9)


#: Seconds a search runs before it reports progress: one of no measurable length prints no line per depth.
QUIET_S = 1.0


def _progress(bar: Bar | Ticker, label: str) -> Callable[[int, int, int], None]:
    """Progress of one search, once it has run :data:`QUIET_S`: its depth of the bound, or (until exhausted, no
    bound to count against) the depths searched so far, never a depth it has not reached."""
    started = time.monotonic()

    def progress(depth: int, total: int, states: int) -> None:
        if time.monotonic() - started < QUIET_S:
            return
        if total:
            bar(f"exhaustive {label}", depth, total, f"{states:,} states")
        else:
            bar(f"exhaustive {label}", 0, 1, f"{depth} depths searched, {states:,} states")

    return progress


def exhaustive(family: Any, workload: Any, protocols: list, request: ExploreRequest, console: Any,
               json_out: bool) -> int:
    """Search each protocol, print what was proved and found, and return the exit code."""
    from sim.search.exhaustive import explore

    if request.junit is not None:
        from sim.report.outputs import check_output_file

        check_output_file(request.junit, "--junit", "junit", forcible=False)
    if request.liveness:  # a bad liveness option stops the command before any search
        from sim.search.liveness import liveness_model

        for p in protocols:
            _, model = liveness_model(family, workload, p, request.max_faults, request.unfair)
        if request.out is not None:
            from sim.report.lasso import lasso_files
            from sim.report.outputs import check_output_names

            check_output_names(request.out, lasso_files(workload, protocols, [x.name for x in model.properties]),
                               "--out")
    if request.search.symmetry and family.symmetry(workload) is None:
        console.print(f"note: the {family.name} family declares no interchangeable parts in {workload.name}: "
                      "searched without symmetry reduction", markup=False)
    results = []
    with progress_for(json_out, {f"exhaustive {p.label}": "depth" for p in protocols}) as bar:
        for p in protocols:
            results.append(explore(family, workload, p, request.search, _progress(bar, p.label)))
    lives = _liveness(family, workload, protocols, request, json_out) if request.liveness else []
    depth = request.search.max_events
    document = {"family": family.name, "workload": workload.name, "max_events": depth if depth is not None else "max",
                "invariants": list(family.safety_invariants), "protocols": [r.to_json() for r in results]}
    for entry, live in zip(document["protocols"], lives):
        entry["liveness"] = {name: v.to_json() for name, v in live.verdicts.items()}
        entry["liveness_graph"] = live.to_json()
    if request.out is not None:
        _export_lassos(family, workload, protocols, lives, request, document)
    for index, r in enumerate(results):
        for line in result_lines(r, request) + (liveness_lines(lives[index]) if lives else []):
            console.print(line, markup=False)
    if request.junit is not None:
        from sim.core.files import write_files_atomically
        from sim.report.ci import explore_junit

        write_files_atomically({request.junit: explore_junit(document)})
    if json_out:
        emit_json(document)
    return EXIT_VIOLATION if any(r.violated for r in results) or any(x.violated for x in lives) else EXIT_OK


def _liveness(family: Any, workload: Any, protocols: list, request: ExploreRequest, json_out: bool) -> list:
    """Each protocol's liveness (``--liveness``)."""
    from sim.search.liveness import check_liveness

    out = []
    with progress_for(json_out, {f"liveness {p.label}": "faults" for p in protocols}) as bar:
        for p in protocols:
            def progress(states: int, faults: int, label: str = p.label) -> None:
                bar(f"liveness {label}", faults, request.max_faults or 1, f"fault levels, {states:,} states")

            out.append(check_liveness(family, workload, p, request.max_faults, max_states=request.search.max_states,
                                      unfair=request.unfair, deadline=request.search.deadline, progress=progress))
    return out


def _export_lassos(family: Any, workload: Any, protocols: list, lives: list, request: ExploreRequest,
                   document: dict) -> None:
    """Each lasso as a scenario file and its timeline (``--out``); the JSON names the file."""
    from sim.report.lasso import export_lasso

    out = request.out
    assert out is not None
    out.mkdir(parents=True, exist_ok=True)
    for p, live, entry in zip(protocols, lives, document["protocols"]):
        source = request.source or workload.name
        command = (f"fencesim explore -w {shlex.quote(source)} -p {shlex.quote(p.label)} --liveness --max-faults "
                   f"{live.max_faults}" + "".join(f" --unfair {u}" for u in live.unfair))
        for name, verdict in live.verdicts.items():
            if verdict.status == "violated":
                path = export_lasso(family, workload, p, verdict, out, command, source, live.unfair)
                entry["liveness"][name]["file"] = str(path)


def liveness_lines(result: Any) -> list[str]:
    """One protocol's liveness in words: the graph judged, the fairness assumed, each property's answer."""
    from sim.search.liveness import shown_events

    faults = f"{result.max_faults} fault{'s' if result.max_faults != 1 else ''}"
    how = ("every reachable state seen: the answers hold at any number of faults" if result.exhausted
           else f"every state within {faults}" if result.complete
           else "stopped by " + result.reason.replace("_", " "))
    dropped = f"; fairness dropped: {', '.join(result.unfair)}" if result.unfair else ""
    lines = [f"  liveness within {faults} ({result.states:,} states, {result.edges:,} transitions, {how}{dropped})"]
    if result.acted:
        lines.append(f"    faults that acted: {', '.join(result.acted)}")
    for name, verdict in result.verdicts.items():
        if verdict.status == "violated":
            item = f" ({verdict.item} stays pending)" if verdict.item is not None else ""
            cycle = (" ; ".join(map(str, verdict.cycle)) + " ; (repeats forever)" if verdict.cycle
                     else "it stays in that state forever: no event the system must take is enabled there "
                          "(faults and optional events may be)")
            prefix = " ; ".join(shown_events(verdict.prefix)) or "(from the initial state)"
            lines.append(f"    {name}: violated{item}: {prefix}")
            lines.append(f"      then: {cycle}")
        else:
            lines.append(f"    {name}: {verdict.status}" + (f" ({verdict.note})" if verdict.note else ""))
    return lines


def result_lines(result: Any, request: ExploreRequest) -> list[str]:
    """A search's result in words: what it counted, what it proved, what stopped it, what it found."""
    data = result.to_json()
    bound = f"within {result.max_events} events" if result.max_events is not None else "at any depth"
    how = ("every state the persistent sets keep seen" if result.exhausted and result.reduced
           else "every reachable state seen" if result.exhausted
           else f"complete {bound}: the bound, not the end of the state space" if result.complete
           else "stopped by " + result.reason)
    starts = result.states_per_depth[0] if result.states_per_depth else 1
    initial = "the initial one included" if starts == 1 else f"its {starts:,} initial states included"
    lines = [f"{result.protocol}: {result.distinct_states:,} distinct states ({initial}), "
             f"{result.states_generated:,} states generated, diameter {result.diameter} ({how})",
             "  new states per depth: " + ", ".join(f"{n:,}" for n in result.states_per_depth)]
    if result.violating_states:
        shows = "state shows" if result.violating_states == 1 else "states show"
        lines.append(f"  {result.violating_states:,} of the distinct {shows} a violation (counted above, as TLC "
                     "counts them; TLC stops at the first)")
    if result.pruned:
        lines.append(f"  {result.pruned:,} events not tried: asleep (independent of the events before them, "
                     "their order tried elsewhere)")
    if result.fingerprints:
        lines.append(f"  chance that two states shared a fingerprint: {result.collision_probability:.1e} "
                     "(TLC's optimistic estimate)")
    if result.symmetry is not None:
        lines.append(f"  one state per orbit of the interchangeable {result.symmetry} (states counted are orbits)")
    if result.reduced:
        lines.append("  persistent sets only: violations measured again unreduced; absence proved only when "
                     "the states are exhausted")
    if result.proved_absent:
        within = "at every depth" if data["proved_within_events"] == "all" else \
            f"within {data['proved_within_events']} events"
        lines.append(f"  proved absent {within}: {', '.join(result.proved_absent)}")
    elif not data["violations"]:
        lines.append(f"  nothing proved {bound}: the search did not cover it" if result.complete else
                     "  no violation found before the search stopped: nothing is proved")
    if result.reason == "state_limit":
        lines.append(f"  the state limit ({request.search.max_states:,} distinct states) stopped it: "
                     "fencesim explore --state-limit raises it")
    if result.reason == "memory_limit":
        lines.append("  the memory limit stopped it: fencesim explore --memory-limit raises it")
    for name, found in data["violations"].items():
        lines.append(f"  {name}: shortest {found['shortest_events']} events, {len(found['orders'])} order(s):")
        lines += ["    " + " ; ".join(order) for order in found["orders"]]
    return lines
