"""What a page can ask for besides a view: the shortest violation from here, and exporting the path.

The search is the exhaustive search of ``fencesim explore`` started from the path (its ``prefix``), within the
bounds the page states: a depth of events after the path, a number of distinct states and seconds.  The
export writes the path as the same three files a fuzz run or a review writes for a counterexample (the
scenario file ``fencesim run`` replays, its timeline, its pytest regression), only inside ``--out``
(:mod:`~sim.webapp.outfolder`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from sim.core.errors import InputError
from sim.core.knobs import Protocol
from sim.core.machine import Machine
from sim.report.export import (
    NAME_LIMIT,
    PYTEST_MARK,
    Exported,
    counterexample_name,
    current_commit,
    export_names,
    pytest_file,
    scenario_toml,
    slug,
    timeline,
)
from sim.search.budget import Deadline
from sim.search.exhaustive import ExhaustiveResult, ExploreOptions, explore
from sim.webapp.outfolder import OutFolder
from sim.webapp.views import Explorer, Source

#: The search's bounds: events after the path by default and at most, distinct states, seconds.
SEARCH_DEPTH_DEFAULT = 6
#: A machine that judges each state by the run after it (the effects family: every order of two faults of its
#: saga in about 10 s), and a family without a machine, which replays every candidate.
SEARCH_DEPTH_DEFAULT_JUDGED = 2
SEARCH_DEPTH_DEFAULT_REPLAYED = 1
SEARCH_DEPTH_MAX = 12
SEARCH_STATES = 200_000
SEARCH_SECONDS = 30.0


@dataclass
class Found:
    """The search's answer: its result, its bounds, and for each violated invariant the whole path to it."""

    result: ExhaustiveResult
    depth: int
    paths: dict[str, tuple[Any, ...]]  # invariant -> the path so far followed by the shortest order found


def default_depth(source: Source, protocol: Protocol) -> int:
    machine = source.family.machine(source.scenario, protocol)
    if machine is None:
        return SEARCH_DEPTH_DEFAULT_REPLAYED
    return SEARCH_DEPTH_DEFAULT_JUDGED if type(machine).judge is not Machine.judge else SEARCH_DEPTH_DEFAULT


def bounds_text(depth: int) -> str:
    return (f"within {depth} more event(s), at most {SEARCH_STATES:,} distinct states and {SEARCH_SECONDS:g} s, "
            "waiting for a turn included (exhaustive search, breadth first: the first order found for an invariant "
            "is a shortest one)")


def shortest_violation(explorer: Explorer, source: Source, protocol: Protocol, path: tuple[Any, ...],
                       depth: int, waited: float = 0.0) -> Found:
    """The exhaustive search from the state after ``path``, within ``depth`` more events; ``waited``: seconds
    the request waited for its turn, spent of the time limit."""
    if not 1 <= depth <= SEARCH_DEPTH_MAX:
        raise InputError(f"the search depth must be from 1 to {SEARCH_DEPTH_MAX} events, not {depth}")
    if source.workload.extra.get("events_only"):
        raise InputError(f"{source.title} is a script, not a fault list a workload generates: the search runs from "
                         "a workload's or a counterexample's path (fencesim serve --workload W)")
    deadline = Deadline(SEARCH_SECONDS, "the page's time limit", spent_before=waited)
    valid = explorer.replay(source, protocol, path).valid_order()
    options = ExploreOptions(max_events=depth, max_states=SEARCH_STATES, alphabet=tuple(explorer.alphabet(source)),
                             prefix=valid, deadline=deadline)
    result = explore(source.family, source.workload, protocol, options)
    paths = {name: valid + tuple(orders[0]) for name, orders in sorted(result.minimal_orders.items()) if orders}
    return Found(result, depth, paths)


CLEAN_PYTEST = PYTEST_MARK + '''
"""Regression: {description}

This path violates no safety invariant under {protocol}; the test keeps it so.
"""

from pathlib import Path

import sim

SCENARIO = Path(__file__).with_name("{toml_name}")


def test_{name}_holds():
    """Under {protocol} the path violates no safety invariant."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "{protocol}")
    assert result.violations == []
'''


def export_path(explorer: Explorer, source: Source, protocol: Protocol, path: tuple[Any, ...],
                out: OutFolder) -> tuple[Exported, str | None]:
    """Write the path into ``out`` as a counterexample's three files; returns them and the invariant the
    path violates first (None: it violates none, and its regression test says it holds).  An empty path is
    refused: it is the first state, no run to replay."""
    if not path:
        raise InputError("the path is empty: step through at least one event before exporting it (the first "
                         "state is no run to replay)")
    family = source.family
    view = explorer.view(source, protocol, path)
    invariant = min(view.broken, key=lambda b: b.position).invariant if view.broken else None
    digest = hashlib.sha256("\n".join(view.texts).encode("utf-8")).hexdigest()[:8]
    name = f"{counterexample_name(source.workload.name, protocol.label, invariant or 'path')}__{digest}"
    words = f"violating {invariant}" if invariant else "violating no safety invariant"
    meta: dict[str, Any] = {"name": name, "workload": source.workload.name, "commit": current_commit(),
                            "minimal": False,
                            "description": f"A path {words} under {protocol.label}, stepped through in fencesim "
                                           f"serve on {source.title}."}
    if invariant:
        meta["invariant"] = invariant
    scenario = family.counterexample(source.workload, protocol, invariant or "", path, meta)
    marked = [b.violation.event_index for b in view.broken if b.violation.event_index is not None]
    toml_name, timeline_name, pytest_name = export_names(scenario.name)
    stem = slug(scenario.name, limit=NAME_LIMIT)
    description = scenario.description.replace('"""', "'''")
    test = pytest_file(stem, scenario.description, scenario.protocol, invariant, toml_name, None) if invariant \
        else CLEAN_PYTEST.format(description=description, protocol=protocol.label, toml_name=toml_name, name=stem)
    written = out.write({toml_name: scenario_toml(family, scenario),
                         timeline_name: timeline(family, view.history, marked if invariant else ()),
                         pytest_name: test})
    return Exported(*written), invariant
