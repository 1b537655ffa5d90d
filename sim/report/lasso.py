"""A liveness violation's lasso as a file: a scenario that replays the prefix, then the cycle twice.

``explore --liveness --out DIR`` writes, per violated property and protocol,
``NAME.toml`` (the family's scenario file, whose ``lasso`` table says how many
of its events are the prefix and how many one turn of the cycle) and
``NAME.timeline.txt`` and ``NAME.svg`` (the replay's swimlane, the cycle's
events marked).
``fencesim run NAME.toml`` replays it and says whether the cycle, played
twice, left the state as it found it -- that it repeats forever.  Events that
are the system's own in the liveness model and not events of the family's
scenarios (the effects family's ``continue``) are left out: the replay's run
takes them by itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from sim.core.family import Family
from sim.core.files import write_files_atomically
from sim.core.knobs import Protocol
from sim.core.values import JsonObject
from sim.core.workload import Workload
from sim.report.export import NAME_LIMIT, counterexample_name, scenario_toml, slug, timeline
from sim.report.outputs import SWIMLANE_MARK, check_output_names

#: What a marked event is in a lasso's timeline and swimlane.
CYCLE = "the cycle, played twice: it repeats forever"


def lasso_name(workload: Workload, protocol: Protocol, prop: str) -> str:
    return counterexample_name(workload.name, protocol.label, prop, "lasso")


def lasso_files(workload: Workload, protocols: Sequence[Protocol], props: Sequence[str]) -> list[str]:
    """Every file name ``--out`` may write, for the check made before any search."""
    names = []
    for protocol in protocols:
        for prop in props:
            stem = slug(lasso_name(workload, protocol, prop), limit=NAME_LIMIT)
            names += [f"{stem}.toml", f"{stem}.timeline.txt", f"{stem}.svg"]
    return names


def export_lasso(family: Family, workload: Workload, protocol: Protocol, verdict: Any, out_dir: Path,
                 command: str, source: str | None = None, unfair: Sequence[str] = ()) -> Path:
    """Write the lasso of one violated property (see the module docstring); the scenario's path.  ``source`` is
    what ``-w`` took to name the workload (default: its name), ``unfair`` the assumptions dropped."""
    known = set(family.alphabet(workload))
    prefix = [e for e in verdict.prefix if e in known]
    cycle = [e for e in verdict.cycle if e in known]
    name = lasso_name(workload, protocol, verdict.name)
    pending = f", {verdict.item} pending" if verdict.item is not None else ""
    description = (f"Liveness lasso: {verdict.name} is violated under {protocol.label}{pending}. The first "
                   f"{len(prefix)} event(s) lead to "
                   + (f"a cycle of {len(cycle)}, played twice here; it repeats forever." if cycle else
                      "a state where nothing the system must do is enabled: it stays there forever.")
                   + f" Found by: {command}")
    lasso: JsonObject = {"property": verdict.name, "prefix": len(prefix), "cycle": len(cycle),
                         "workload": source or workload.name}
    if verdict.item is not None:
        lasso["item"] = str(verdict.item)
    if unfair:
        lasso["unfair"] = list(unfair)
    meta = {"name": name, "description": description, "workload": workload.name, "lasso": lasso}
    scenario = family.counterexample(workload, protocol, verdict.name, prefix + cycle + cycle, meta)
    replay = family.replay(scenario, protocol)
    stem = slug(name, limit=NAME_LIMIT)
    out = Path(out_dir)
    check_output_names(out, [f"{stem}.toml", f"{stem}.timeline.txt", f"{stem}.svg"], "--out")
    cycle_at = {e.index for e in replay.history if len(prefix) <= e.index} if cycle else set()
    write_files_atomically({out / f"{stem}.toml": scenario_toml(family, scenario),
                            out / f"{stem}.timeline.txt": timeline(family, replay.history, cycle_at, CYCLE),
                            out / f"{stem}.svg": _swimlane(family, replay.history, cycle_at, verdict, protocol)})
    return out / f"{stem}.toml"


def _swimlane(family: Family, history: Any, cycle_at: set[int], verdict: Any, protocol: Protocol) -> str:
    """The replay drawn as the review draws a counterexample, the cycle's events (both turns) marked."""
    from sim.report.figures import lane_events, swimlane, to_svg

    events = lane_events(family, history, cycle_at)
    title = (f"{verdict.name} under {protocol.label}: "
             + ("the marked events repeat forever" if cycle_at else "after the last event, nothing more happens"))
    svg = to_svg(swimlane(family.lanes, events, title, CYCLE))
    head, _, rest = svg.partition("\n")
    return f"{head}\n{SWIMLANE_MARK}\n{rest}"
