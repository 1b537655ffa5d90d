"""``fencesim explore``: exhaustive search of every valid order up to a depth (``fuzz --exhaustive`` too)."""

from __future__ import annotations

from typing import List, Optional

import typer

from sim.cli.app import JSON_HELP, app, human_console
from sim.core.errors import InputError
from sim.search.exhaustive import MAX_STATES_DEFAULT, STATE_LIMIT_MAX


@app.command()
def explore(
    workload: str = typer.Option("tiny", "--workload", "-w",
                                 help="A workload name (scenarios/workloads) or file; it names the family."),
    protocol: Optional[List[str]] = typer.Option(None, "--protocol", "-p",
                                                 help="Repeat for several; default: the family's presets."),
    depth: int = typer.Option(6, "--depth", "--max-events", help="Longest order enumerated, in events."),
    workers: int = typer.Option(1, "--workers", help="Processes expanding each layer of a search that replays its "
                                "candidates (a family with a machine, as the workspace family, explores in one "
                                "process: faster than sending its states to workers)."),
    budget: Optional[float] = typer.Option(None, "--budget", help="Seconds of wall clock; a search the budget "
                                           "stops proves nothing and says so."),
    state_limit: int = typer.Option(MAX_STATES_DEFAULT, "--state-limit",
                                    help="Distinct states kept per depth (about 1 KB of memory each on the workspace "
                                    "family); a search that reaches it stops and proves nothing."),
    symmetry: bool = typer.Option(False, "--symmetry", help="Keep one state per orbit of the workload's "
                                  "interchangeable parts, where its family declares some (the same proofs; states "
                                  "counted are orbits)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> int:
    """Enumerate every valid order up to --depth events (commuting orders pruned, equal states merged): each
    invariant is either proved to hold within that depth or violated with its shortest orders. Exit 0 when
    nothing is violated, 1 otherwise (a search stopped by a limit proves nothing and says so)."""
    from sim.cli.fuzz import _exhaustive, distinct_protocols
    from sim.registry import FAMILIES
    from sim.search.budget import Deadline
    from sim.search.exhaustive import EXHAUSTIVE_DEPTH_MAX

    if not 1 <= depth <= EXHAUSTIVE_DEPTH_MAX:
        raise InputError(f"--depth must be between 1 and {EXHAUSTIVE_DEPTH_MAX}, got {depth}")
    if not 1 <= workers <= 4096:
        raise InputError(f"--workers must be from 1 to 4096, not {workers}")
    if not 1 <= state_limit <= STATE_LIMIT_MAX:
        raise InputError(f"--state-limit must be from 1 to {STATE_LIMIT_MAX:,}, not {state_limit}")
    if budget is not None and not 0 < budget < 1e12:
        raise InputError(f"--budget must be a positive number of seconds, not {budget}")
    loaded = FAMILIES.load_workload(workload)
    family = FAMILIES.family_for(loaded)
    protocols = distinct_protocols(family, list(protocol or family.presets), "--protocol")
    return _exhaustive(family, loaded, protocols, depth, human_console(json_out), json_out,
                       Deadline(budget, "--budget"), workers, state_limit, symmetry)
