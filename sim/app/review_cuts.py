"""What a ``--budget`` cut from one design's review, section by section, and the command that completes each.

A review under a budget runs its parts in an order (:func:`sim.app.reviewing.review_design`): the sweep with
its shrinking and advice, the Engine table a design asks for (``engine =``), the exhaustive search of each
protocol, then the optional sections -- the interference curves, the family's own sections, the design
map.  When the budget runs out, each part it stopped or never started is a :class:`Cut`: the section by
name, what it left out, and the command that completes it -- ``fencesim certify``, ``explore`` or ``map``
for the Engine table, the protocols' searches and the map (when the workload is a named or separate file
those commands read), else the same review without ``--budget``.  A cut is listed in the design's
``budget_cuts`` and, one line each, in its Not covered; the report puts a line where a section it cut
would stand.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from sim.app.designs import Design
from sim.core.errors import ScenarioError
from sim.core.workload import resolve_workload
from sim.search.map_document import MapDocument

#: The deadline's name a budget-stopped search records as its end (``Deadline(..., "--budget")``).
BUDGET = "--budget"


@dataclass(frozen=True)
class Cut:
    """One part of a review a budget stopped: ``section`` a stable key (``sweep``, ``shrink``, ``advisor``,
    ``certify``, ``exhaustive``, ``interference``, ``sections``, ``map``, ``telemetry``), ``title`` the
    section as the report names it, ``left_out`` what it did not do, ``command`` what completes it."""

    section: str
    title: str
    left_out: str
    command: str

    def line(self) -> str:
        """The Not covered line: the section by name, what was left out, the command in backticks."""
        return f"the budget cut {self.title}: {self.left_out}; `{self.command}` completes it"

    def to_json(self) -> dict[str, str]:
        return {"section": self.section, "title": self.title, "left_out": self.left_out, "command": self.command,
                "line": self.line()}


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


def fuzz_cuts(design: Design, row: dict[str, Any], advise: bool = True) -> list[Cut]:
    """The sweep's seeds not run, the counterexamples not shrunk to a minimal order, the advice not given or
    cut short -- each completed by the same review without the budget."""
    command, out = review_command(design), []
    if row["seeds_done"] < row["seeds"]:
        out.append(Cut("sweep", "the sweep", f"seeds {row['seeds_done']}..{row['seeds'] - 1} of each protocol not "
                       f"run ({row['seeds_done']} of {row['seeds']})", command))
    examples = row["counterexamples"]
    unshrunk = [e["name"] for e in examples if not e.get("one_minimal") and e.get("shrink_end") == BUDGET]
    if unshrunk:
        out.append(Cut("shrink", "the shrinking of the minimal counterexamples",
                       f"{_count(unshrunk, 'counterexample')} not shrunk to a minimal order ({', '.join(unshrunk)})",
                       command))
    unadvised = [e["name"] for e in examples if advise and e.get("advice") is None]
    short = [e["name"] for e in examples if (e.get("advice") or {}).get("stopped") == BUDGET]
    if unadvised or short:
        parts = ([f"no advice for {_count(unadvised, 'counterexample')} ({', '.join(unadvised)})"] if unadvised
                 else []) + ([f"advice cut short for {len(short)} ({', '.join(short)})"] if short else [])
        out.append(Cut("advisor", "the advisor", "; ".join(parts), command))
    return out


def certify_cut(design: Design, certified: dict[str, Any] | None, stopped: bool, depth: int,
                limit: int = 0) -> list[Cut]:
    """The Engine table the design asks for, when the budget left it out (``certified`` None) or stopped its
    search (``stopped``), or when it was certified less deep than ``depth`` because the deeper search passes
    the review's state ``limit``."""
    engine = design.engine
    shallower = certified is not None and certified["complete"] and certified.get("max_events", depth) < depth
    if engine is None or (certified is not None and not stopped and not shallower):
        return []
    name, _, extra = engine.partition(",")
    workload = workload_argument(design)
    command = (f"fencesim certify -w {workload or 'WORKLOAD.toml'} -e {shlex.quote(name.strip())}"
               + (f" -p {shlex.quote(extra.strip())}" if extra.strip() else "") + f" --max-events {depth}")
    if shallower and certified is not None:
        within = certified["max_events"]
        left_out = (f"certified within {within} event{'s' if within != 1 else ''}, not {depth}: a search {depth} "
                    f"events deep passes the review's limit of {limit:,} distinct states")
        if workload is None:  # only the review reads a workload written inside the design file
            command += " (the design's workload saved to a file of its own)"
        return [Cut("certify", f"the Engine table ({engine})", left_out, command)]
    left_out = ("not computed: the budget ran out before it" if certified is None else
                "its search was stopped: no transition is proved exactly once")
    return [Cut("certify", f"the Engine table ({engine})", left_out,
                review_command(design) if workload is None else command)]


def proof_cuts(design: Design, protocols: Sequence[Any], proofs: dict[str, Any], bound: int) -> list[Cut]:
    """The protocols whose exhaustive search the budget stopped or never started."""
    stopped = [p.label for p in protocols if p.label not in proofs
               or (not proofs[p.label].complete and proofs[p.label].reason == BUDGET)]
    if not stopped:
        return []
    workload = workload_argument(design)
    command = review_command(design) if workload is None else (
        f"fencesim explore -w {workload} " + " ".join(f"-p {shlex.quote(label)}" for label in stopped)
        + f" --depth {bound}")
    return [Cut("exhaustive", "the exhaustive search of each protocol",
                f"{', '.join(stopped)} not searched to {bound} events (not decided)", command)]


def interference_cut(design: Design, curves: dict[str, list[dict[str, Any]]], levels: Sequence[int],
                     per_level: int) -> list[Cut]:
    """The interference levels not run, or run on fewer seeds than the others."""
    run = {p["faults_per_run"] for points in curves.values() for p in points}
    missing = [level for level in levels if level not in run]
    short = [level for level in levels if level in run and any(
        not any(p["faults_per_run"] == level and p["runs"] >= per_level for p in points) for points in curves.values())]
    parts = ([f"the levels of at most {', '.join(map(str, missing))} faults per run not run"] if missing else []) + (
        [f"the levels of at most {', '.join(map(str, short))} faults per run run on fewer than {per_level} seeds"]
        if short else [])
    if not parts:
        return []
    return [Cut("interference", "the interference curves", "; ".join(parts), review_command(design))]


def sections_cut(design: Design, family_name: str) -> list[Cut]:
    return [Cut("sections", f"the {family_name} family's own sections", "not computed: the budget ran out before "
                "them", review_command(design))]


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
    return [Cut("map", "the design map", left_out, command)]


def telemetry_cut(design: Design, skipped: bool) -> list[Cut]:
    """The triage's telemetry estimate, when the budget left the sweep's rates in its place."""
    if not skipped:
        return []
    return [Cut("telemetry", "the triage's telemetry estimate", "the findings are ranked by the sweep's rates, "
                "not by the workload's [telemetry]", review_command(design))]


def _count(names: Sequence[str], noun: str) -> str:
    return f"{len(names)} {noun}{'' if len(names) == 1 else 's'}"
