"""What a ``--budget`` cut from one design's review, section by section, and the command that completes each.

A review under a budget runs its parts in an order (:func:`sim.app.reviewing.review_design`): the sweep with
its shrinking and advice, the Engine table a design asks for (``engine =``), the exhaustive search of each
protocol, then the optional sections -- the interference curves, the family's own sections, the design
map.  When the budget runs out, each part it stopped or never started is a :class:`Cut`: the section by
name, what it left out, and the command that completes it -- ``fencesim certify``, ``explore`` or ``map``
for the Engine table, the protocols' searches and the map (when the workload is a named or separate file
those commands read), else the same review without ``--budget``.  A cut is listed in the design's
``budget_cuts`` (a :class:`~sim.report.results.Cut` each) and, one line each, in its Not covered; the report
puts a line where a section it cut would stand.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Mapping, Sequence

from sim.app.designs import Design
from sim.core.errors import ScenarioError
from sim.core.workload import resolve_workload
from sim.report.results import CertifyDocument, Cut, DesignRow, InterferencePoint
from sim.search.map_document import MapDocument

#: The deadline's name a budget-stopped search records as its end (``Deadline(..., "--budget")``).
BUDGET = "--budget"


def review_command(design: Design) -> str:
    """The same review of this design without ``--budget`` (at the seeds it was asked for)."""
    where = f" --design {shlex.quote(design.source)}" if design.from_file else ""
    return f"fencesim review{where} --seeds {design.seeds}"


def workload_argument(design: Design) -> str | None:
    """What ``-w`` takes to name the design's workload: its name where that finds the same file, else the
    file's path; None for a workload written inside the design file (only the review reads it)."""
    path = design.workload.path
    if path is None:
        return None
    if design.from_file and _same(Path(design.source), Path(path)):
        return None
    try:
        if _same(resolve_workload(design.workload.name), Path(path)):
            return shlex.quote(design.workload.name)
    except ScenarioError:
        pass
    return shlex.quote(str(path))


def _same(one: Path, other: Path) -> bool:
    try:
        return one.resolve() == other.resolve()
    except OSError:
        return False


def fuzz_cuts(design: Design, row: DesignRow, advise: bool = True) -> list[Cut]:
    """The sweep's seeds not run, the counterexamples not shrunk to a minimal order, the advice not given or
    cut short -- each completed by the same review without the budget."""
    command, out = review_command(design), []
    if row.seeds_done < row.seeds:
        out.append(Cut(section="sweep", title="the sweep", command=command,
                       left_out=f"seeds {row.seeds_done}..{row.seeds - 1} of each protocol not run "
                                f"({row.seeds_done} of {row.seeds})"))
    examples = row.counterexamples
    unshrunk = [e.name for e in examples if not e.one_minimal and e.shrink_end == BUDGET]
    if unshrunk:
        out.append(Cut(section="shrink", title="the shrinking of the minimal counterexamples", command=command,
                       left_out=f"{_count(unshrunk, 'counterexample')} not shrunk to a minimal order "
                                f"({', '.join(unshrunk)})"))
    unadvised = [e.name for e in examples if advise and e.advice is None]
    short = [e.name for e in examples if e.advice is not None and e.advice.stopped == BUDGET]
    if unadvised or short:
        parts = ([f"no advice for {_count(unadvised, 'counterexample')} ({', '.join(unadvised)})"] if unadvised
                 else []) + ([f"advice cut short for {len(short)} ({', '.join(short)})"] if short else [])
        out.append(Cut(section="advisor", title="the advisor", left_out="; ".join(parts), command=command))
    return out


def certify_cut(design: Design, certified: CertifyDocument | None, stopped: bool, depth: int,
                limit: int = 0) -> list[Cut]:
    """The Engine table the design asks for, when the budget left it out (``certified`` None) or stopped its
    search (``stopped``), or when it was certified less deep than ``depth`` because the deeper search passes
    the review's state ``limit``."""
    engine = design.engine
    shallower = certified is not None and certified.complete and certified.max_events < depth
    if engine is None or (certified is not None and not stopped and not shallower):
        return []
    name, _, extra = engine.partition(",")
    workload = workload_argument(design)
    command = (f"fencesim certify -w {workload or 'WORKLOAD.toml'} -e {shlex.quote(name.strip())}"
               + (f" -p {shlex.quote(extra.strip())}" if extra.strip() else "") + f" --max-events {depth}")
    if shallower and certified is not None:
        within = certified.max_events
        left_out = (f"certified within {within} event{'s' if within != 1 else ''}, not {depth}: a search {depth} "
                    f"events deep passes the review's limit of {limit:,} distinct states")
        if workload is None:  # only the review reads a workload written inside the design file
            command += " (the design's workload saved to a file of its own)"
        return [Cut(section="certify", title=f"the Engine table ({engine})", left_out=left_out, command=command)]
    left_out = ("not computed: the budget ran out before it" if certified is None else
                "its search was stopped: no transition is proved exactly once")
    return [Cut(section="certify", title=f"the Engine table ({engine})", left_out=left_out,
                command=review_command(design) if workload is None else command)]


def proof_cuts(design: Design, protocols: Sequence[Any], proofs: Mapping[str, Any], bound: int) -> list[Cut]:
    """The protocols whose exhaustive search the budget stopped or never started."""
    stopped = [p.label for p in protocols if p.label not in proofs
               or (not proofs[p.label].complete and proofs[p.label].reason == BUDGET)]
    if not stopped:
        return []
    workload = workload_argument(design)
    command = review_command(design) if workload is None else (
        f"fencesim explore -w {workload} " + " ".join(f"-p {shlex.quote(label)}" for label in stopped)
        + f" --depth {bound}")
    return [Cut(section="exhaustive", title="the exhaustive search of each protocol", command=command,
                left_out=f"{', '.join(stopped)} not searched to {bound} events (not decided)")]


def interference_cut(design: Design, curves: Mapping[str, Sequence[InterferencePoint]], levels: Sequence[int],
                     per_level: int) -> list[Cut]:
    """The interference levels not run, or run on fewer seeds than the others."""
    run = {p.faults_per_run for points in curves.values() for p in points}
    missing = [level for level in levels if level not in run]
    short = [level for level in levels if level in run and any(
        not any(p.faults_per_run == level and p.runs >= per_level for p in points) for points in curves.values())]
    parts = ([f"the levels of at most {', '.join(map(str, missing))} faults per run not run"] if missing else []) + (
        [f"the levels of at most {', '.join(map(str, short))} faults per run run on fewer than {per_level} seeds"]
        if short else [])
    if not parts:
        return []
    return [Cut(section="interference", title="the interference curves", left_out="; ".join(parts),
                command=review_command(design))]


def sections_cut(design: Design, family_name: str) -> list[Cut]:
    return [Cut(section="sections", title=f"the {family_name} family's own sections",
                left_out="not computed: the budget ran out before them", command=review_command(design))]


def map_cut(design: Design, drawn: MapDocument | None) -> list[Cut]:
    """The design map, when the budget left it out or left designs of it not decided."""
    request = design.map
    if request is None:
        return []
    undecided = [p.protocol for p in (drawn.protocols if drawn is not None else ())
                 if p.status == "not decided" and p.end == BUDGET]
    if drawn is not None and not undecided:
        return []
    workload = workload_argument(design)
    command = review_command(design) if workload is None else (
        f"fencesim map -w {workload} --knobs {','.join(request.knobs)} --max-events {request.max_events} "
        f"--seeds {request.seeds}" + (f" --base {shlex.quote(request.base)}" if request.base is not None else ""))
    left_out = ("not drawn: the budget ran out before it" if drawn is None else
                f"{len(undecided)} of {len(drawn.protocols)} designs not decided (the budget stopped their "
                "search)")
    return [Cut(section="map", title="the design map", left_out=left_out, command=command)]


def telemetry_cut(design: Design, skipped: bool) -> list[Cut]:
    """The triage's telemetry estimate, when the budget left the sweep's rates in its place."""
    if not skipped:
        return []
    return [Cut(section="telemetry", title="the triage's telemetry estimate",
                left_out="the findings are ranked by the sweep's rates, not by the workload's [telemetry]",
                command=review_command(design))]


def _count(names: Sequence[str], noun: str) -> str:
    return f"{len(names)} {noun}{'' if len(names) == 1 else 's'}"
