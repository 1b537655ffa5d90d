"""Every figure a review draws, for a notebook: built from what the API returns, never from hand-built dicts.

Each function takes what you have -- a sweep DataFrame (:func:`sim.sweep_frame`), a fuzz result
(:func:`sim.fuzz`), or a review (:func:`sim.review`, or one of its designs) -- and returns a matplotlib
``Figure`` (shown by a notebook, saved with ``figure.savefig``):

>>> import sim                                                                     # doctest: +SKIP
>>> df = sim.sweep_frame("seed-fuzz", ["none", "step-dedupe"], seeds=300)      # doctest: +SKIP
>>> sim.figures.safety_vs_availability(df)                                     # doctest: +SKIP
>>> found = sim.fuzz("tiny", ["none", "plan"], seeds=200)                      # doctest: +SKIP
>>> sim.figures.swimlane(found, "lost_update")                                 # doctest: +SKIP
>>> sim.figures.verdict_matrix(found)                                          # doctest: +SKIP

The figures are the report's own (:mod:`sim.report.figures`): the same sizes, labels and intervals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from sim.core import stats
from sim.core.errors import InputError
from sim.core.records import json_text
from sim.core.values import JsonObject
from sim.report.results import DesignRow, InterferencePoint

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from sim.report.figures import SafetyPoint

__all__ = ["exposure", "interference", "review", "safety_vs_availability", "swimlane", "verdict_matrix"]

#: Names a sweep frame's per-run fault count may have.
FAULT_COUNT_COLUMNS = ("faults", "fault_count", "faults_per_run")


def _is_frame(data: Any) -> bool:
    return hasattr(data, "columns") and hasattr(data, "groupby")


def _is_result(data: Any) -> bool:
    return hasattr(data, "summary") and hasattr(data, "counterexamples") and hasattr(data, "family")


def _is_design(data: Any) -> bool:
    """A review design: a ``DesignReview`` of :func:`sim.review`, its row, or its entry of a ``results.json``."""
    from sim.report.results import DesignRow
    from sim.report.review import DesignReview

    return isinstance(data, (DesignReview, DesignRow)) or (isinstance(data, dict) and "protocols" in data
                                                           and "matrix" in data)


def _row(design: Any) -> DesignRow:
    """A review design's row (an entry of a ``results.json`` read, and refused with one line if it is not one)."""
    from sim.report.results import DesignRow
    from sim.report.review import DesignReview

    if isinstance(design, DesignReview):
        return design.row
    return design if isinstance(design, DesignRow) else DesignRow.from_json(design, "the review design")


def _family_of_frame(frame) -> Any:
    """The family whose invariant columns the frame has."""
    from sim.registry import FAMILIES

    for name in FAMILIES.names():
        family = FAMILIES.get(name)
        if all(f"violations_{invariant}" in frame.columns for invariant in family.safety_invariants):
            return family
    raise InputError("this DataFrame is not a sweep of a known family (make it with sim.sweep_frame)")


def _kind_error(what: str, data: Any) -> InputError:
    return InputError(f"{what} draws from a sweep DataFrame (sim.sweep_frame), a fuzz result (sim.fuzz) or a "
                      f"review design (sim.review().designs[i]), not {type(data).__name__}")


def _frame_points(frame) -> tuple[list[SafetyPoint], str, bool]:
    """Points, the x axis's measure, and whether it is work done safely (the family's ``safe_progress``
    when the frame has its columns, else its ``progress``)."""
    from sim.report import figures

    family = _family_of_frame(frame)
    measure = family.progress
    safely = family.safe_progress is not None and all(name in frame.columns for name in family.safe_progress)
    if safely:
        measure = family.safe_progress
    points = []
    label = "work done"
    for protocol, runs in frame.groupby("protocol", sort=False):
        violating = stats.share(int(runs["violated"].sum()), len(runs)).rounded()
        progress = stats.Share(value=0.0, low=0.0, high=0.0)
        if measure is not None:
            done, planned = measure
            progress = stats.share(int(runs[done].sum()), int(runs[planned].sum())).rounded()
            label = f"{done.replace('_', ' ')} / {planned.replace('_', ' ')}"
        points.append(figures.SafetyPoint(str(protocol), violating, progress))
    return points, label, safely


def _result_design(result) -> DesignRow:
    """What the review computes from a fuzz result: its protocol rows."""
    from sim.report.results import DesignRow
    from sim.report.review import progress_label, protocol_rows, safe_progress_label

    return DesignRow(name=result.workload.name, protocols=tuple(protocol_rows(result)), counterexamples=(),
                     seeds_done=result.summary.seeds_done, progress_label=progress_label(result.family),
                     safe_progress_label=safe_progress_label(result.family))


def safety_vs_availability(data: Any, title: str | None = None):
    """Share of runs violating safety against share of work done, one point per protocol (Wilson intervals).

    >>> sim.figures.safety_vs_availability(sim.sweep_frame("tiny", ["none", "plan"], seeds=200))  # doctest: +SKIP
    """
    from sim.report import figures

    if _is_frame(data):
        points, label, safely = _frame_points(data)
        runs = int(data.groupby("protocol").size().max())
    elif _is_result(data) or _is_design(data):
        design = _result_design(data) if _is_result(data) else _row(data)
        points, label, safely = figures.work_done_points(design)
        runs = design.seeds_done
    else:
        raise _kind_error("safety_vs_availability", data)
    what = "work done safely" if safely else "work done"
    return figures.safety_vs_availability(points, title or f"safety against {what} ({runs} runs per protocol)",
                                          label, safely)


def interference(data: Any, title: str | None = None, seeds: int | None = None):
    """Share of runs violating safety as faults per run grow, one curve per protocol (Wilson bands).

    From a sweep DataFrame with a per-run fault count (grouped by the exact count), from a fuzz result (the
    review's sweeps at 1, 2, 4 and 8 faults per run at most, ``seeds`` each), or from a review design.

    >>> sim.figures.interference(sim.fuzz("seed-fuzz", ["none", "step-dedupe"], seeds=200))  # doctest: +SKIP
    """
    from sim.report import figures

    if _is_frame(data):
        column = next((c for c in FAULT_COUNT_COLUMNS if c in data.columns), None)
        if column is None:
            raise InputError("this DataFrame has no per-run fault count column "
                             f"({', '.join(FAULT_COUNT_COLUMNS)}); draw from a fuzz result instead")
        curves: dict[str, list[InterferencePoint]] = {}
        for (protocol, faults), runs in data.groupby(["protocol", column], sort=True):
            curves.setdefault(protocol, []).append(InterferencePoint(
                faults_per_run=int(faults), runs=len(runs), violating_runs=int(runs["violated"].sum()),
                share=stats.share(int(runs["violated"].sum()), len(runs)).rounded()))
        order = list(dict.fromkeys(data["protocol"]))
        return figures.interference_curves({p: curves[p] for p in order if p in curves},
                                           title or "violating runs by the faults each run drew",
                                           xlabel="faults injected in the run")
    if _is_result(data):
        from sim.app.reviewing import interference as curves_of
        from sim.search.budget import NO_DEADLINE

        drawn = curves_of(data.family, data.workload, data.protocols, seeds or data.summary.seeds_done, 1,
                          NO_DEADLINE)
        return figures.interference_curves(drawn, title or f"{data.workload.name}: violating runs as faults per "
                                           "run grow", data.workload.per_run_max)
    if _is_design(data):
        row = _row(data)
        return figures.interference_curves(row.interference, title or f"{row.name}: violating runs as "
                                           "faults per run grow", row.workload.per_run_max)
    raise _kind_error("interference", data)


def verdict_matrix(data: Any, scenarios: Sequence[Any] = (), title: str | None = None):
    """Every scenario and minimal counterexample replayed under every protocol (green holds, red violates).

    >>> sim.figures.verdict_matrix(sim.fuzz("tiny", ["none", "plan"], seeds=200),
    ...                            [sim.load_scenario("scenarios/seed/concurrent_edit.toml")])  # doctest: +SKIP
    """
    from sim.report import figures

    if _is_result(data):
        from sim.app.reviewing import verdict_matrix as matrix_of
        from sim.report.review import counterexample_rows

        name = data.workload.name
        matrix = matrix_of(data.family, data.workload, data.protocols, list(scenarios),
                           counterexample_rows(data, name))
    elif _is_design(data):
        matrix, name = _row(data).matrix, _row(data).name
    else:
        raise _kind_error("verdict_matrix", data)
    cells = {key: ("violated" if value.violated else "ok", value.text) for key, value in matrix.cells.items()}
    return figures.verdict_heatmap(matrix.rows, matrix.columns, cells,
                                   title or f"{name}: protocol x scenario (red: an invariant is violated)",
                                   matrix.labels or None)


def swimlane(data: Any, which: int | str | tuple[str, str] = 0, title: str | None = None):
    """One minimal counterexample as a swimlane (one column per actor, events top to bottom).

    ``which``: the counterexample's position, its finding (``"lost_update @ stale_plan"``) or invariant (its
    first finding), or ``(protocol, finding or invariant)``.

    >>> sim.figures.swimlane(sim.fuzz("tiny", ["none"], seeds=100), "lost_update")  # doctest: +SKIP
    """
    from sim.report import figures
    from sim.report.review import DesignReview, counterexample_rows

    if _is_result(data):
        family, examples = data.family, counterexample_rows(data, data.workload.name)
    elif isinstance(data, DesignReview):
        family, examples = data.family, data.counterexamples
    else:
        raise InputError("swimlane draws from a fuzz result (sim.fuzz) or a design of sim.review(), not "
                         f"{type(data).__name__}")
    example = _pick(examples, which)
    events = figures.lane_events(family, example.history, example.row.violating_events)
    return figures.swimlane(family.lanes, events, title or f"{example.row.shown_finding} under {example.row.protocol}")


def _pick(runs: list[Any], which: int | str | tuple[str, str]) -> Any:
    """The counterexample ``which`` names (its position, its finding or invariant, or ``(protocol, either)``)."""
    examples = [run.row for run in runs]
    if not examples:
        raise InputError("no counterexample to draw: the search found no violation")
    if isinstance(which, int):
        if not -len(examples) <= which < len(examples):
            raise InputError(f"counterexample {which} of {len(examples)}: give 0 to {len(examples) - 1}")
        return runs[which]
    for run, example in zip(runs, examples):
        finding = example.shown_finding
        if which in (finding, (example.protocol, finding)):
            return run
    for run, example in zip(runs, examples):
        if which in (example.invariant, (example.protocol, example.invariant)):
            return run
    known = ", ".join(f"{e.shown_finding} under {e.protocol}" for e in examples)
    raise InputError(f"no counterexample {which!r}; there are: {known}")


def exposure(data: Any, seeds: int | None = None):
    """The effects family's exposure bars (duplicate effects, human exceptions per N tasks, exact Poisson
    intervals) beside the worked example's arithmetic: from a fuzz result of the effects family (simulated
    on ``seeds`` tasks), a review design, or one of its sections.

    >>> sim.figures.exposure(sim.fuzz("effects-saga", ["unkeyed-retry", "keyed"], seeds=100))  # doctest: +SKIP
    """
    from sim.report import figures

    sections: Sequence[JsonObject]
    if _is_result(data):
        sections = data.family.review_sections(data.workload, data.protocols, seeds or data.summary.seeds_done)
    elif _is_design(data):
        sections = _row(data).sections
    elif isinstance(data, dict) and "metrics" in data:
        sections = [data]
    else:
        raise _kind_error("exposure", data)
    section = next((s for s in sections if s.get("metrics")), None)
    if section is None:
        raise InputError("no exposure to draw: only the effects family simulates exposure")
    tasks = int(json_text(section.get("unit")).split()[1].replace(",", ""))
    return figures.exposure_bars(*figures.exposure_of(section), tasks)


def review(results: Any) -> dict[str, Figure]:
    """Every figure of a review (:func:`sim.review`), by the name of its file in a report folder.

    >>> figures = sim.figures.review(sim.review(seeds=200))       # doctest: +SKIP
    >>> sorted(figures)[:2]                                       # doctest: +SKIP
    ['interference_effects-saga', 'interference_seed-fuzz']
    """
    from sim.report.folder import draw
    from sim.report.review import ReviewResult

    if not isinstance(results, ReviewResult):
        raise InputError("review() draws the figures of sim.review()'s results")
    return draw(results)[1]
