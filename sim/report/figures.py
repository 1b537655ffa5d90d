"""The review's figures: matplotlib ``Figure`` objects, built from the review's numbers.

No global state: every function builds its own ``Figure`` (never
``pyplot``, never ``matplotlib.use``), so a notebook shows it and the
report writes it as PNG and SVG.  Each figure is titled and labelled with
its units; intervals come from :mod:`sim.core.stats` and never go below
zero.

Every figure reads on a 1400-pixel screen and on paper: no figure is wider
than ``MAX_WIDTH_IN`` (so the report never scales it down), no text is
smaller than ``MIN_FONT_PT`` (10.7 CSS pixels at full size), and no label
is cut -- long protocol names wrap at their commas.  (:mod:`sim.figures`
builds the same figures from a DataFrame or a result, for notebooks.)
"""

from __future__ import annotations

import io
import math
import textwrap
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import matplotlib
import matplotlib.patches
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from sim.core.records import json_number, json_object
from sim.core.stats import Share
from sim.core.values import JsonObject
from sim.report.results import DesignRow, InterferencePoint

#: Colours of verdicts in the heatmap, in order: holds, violated, no effect / not run.
VERDICT_COLOURS = ("#4c9f70", "#c44e52", "#d9d9d9")
FAULT_COLOUR = "#dd8452"
MARK_COLOUR = "#c44e52"
EVENT_COLOUR = "#4c72b0"


#: The widest figure (inches; 72 points each, drawn at 96 CSS pixels): inside a 1400-pixel page's text column.
MAX_WIDTH_IN = 11.0
#: The smallest text of any figure (points): 10.7 CSS pixels when the figure is shown at its size.
MIN_FONT_PT = 8.0


def wrap_label(text: str, width: int = 24) -> str:
    """A label on several lines, broken after commas, ``|`` and spaces (never cut): protocol names stay whole.

    >>> wrap_label("keyed-fingerprint-reconcile,receipt_check=trusting", 30)
    'keyed-fingerprint-reconcile,\\nreceipt_check=trusting'
    """
    parts = text.replace(",", ",\x00").replace(" | ", " |\x00").split("\x00")
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + len(part) <= width:
            lines[-1] += part
        else:
            lines.append(part)
    out = []
    for line in lines:
        for piece in textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False) or [line]:
            out += _split_long(piece, width)
    return "\n".join(out)


def _split_long(word: str, width: int) -> list[str]:
    """A word longer than ``width`` broken after ``=``, then ``_``, then ``-`` (the knob's name stays readable)."""
    if len(word) <= width:
        return [word]
    for mark in ("=", "_", "-"):
        cut = word.rfind(mark, 0, width)
        if cut > 0:
            return [word[:cut + 1]] + _split_long(word[cut + 1:], width)
    return [word]


#: Characters a verdict-matrix row label's line holds (8 pt text in the figure's 3-inch label margin).
ROW_LABEL_WIDTH = 34


def row_labels(labels: Sequence[str]) -> list[str]:
    """The verdict matrix's row labels, each whole (wrapped after commas and spaces, never cut), and no two the
    same: a label repeated is numbered (``#2``), so two rows never read alike."""
    wrapped = [wrap_label(" ".join(label.split()), ROW_LABEL_WIDTH) for label in labels]
    seen: dict[str, int] = {}
    out = []
    for label in wrapped:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return out


def verdict_heatmap(rows: Sequence[str], columns: Sequence[str], cells: dict[tuple[str, str], tuple[str, str]],
                    title: str, labels: Sequence[str] | None = None) -> Figure:
    """Scenario x protocol: green where the protocol holds, red where it violates an invariant.

    ``rows`` are protocols, ``columns`` scenarios and minimal counterexamples (``labels``: how to show
    them); ``cells[(row, column)]`` is ``(status, text)``: status ``"ok"``, ``"violated"`` or ``"none"``
    (not run).  Drawn with one row per scenario and one column per protocol, so many counterexamples make
    the figure taller, never wider than ``MAX_WIDTH_IN``.
    """
    shown = row_labels(labels or columns)
    cell_width = min(1.3, (MAX_WIDTH_IN - 3.0) / max(1, len(rows)))
    per_line = max(8, int(cell_width * 72 / (MIN_FONT_PT * 0.6)))
    texts = {(r, c): textwrap.fill(cells.get((r, c), ("none", "-"))[1].replace("_", " "), per_line)
             for r in rows for c in columns}
    lines = [max([t.count("\n") + 1 for (r, c), t in texts.items() if c == column] + [label.count("\n") + 1])
             for column, label in zip(columns, shown)]
    heights = [0.2 + 0.17 * n for n in lines]
    width = 3.0 + cell_width * len(rows)
    head = max([wrap_label(r, per_line).count("\n") + 1 for r in rows] + [1])
    figure = Figure(figsize=(width, 1.0 + 0.17 * head + sum(heights)), layout="constrained")
    ax = figure.subplots()
    code = {"ok": 0, "violated": 1, "none": 2}
    colours = ListedColormap(VERDICT_COLOURS)
    top = 0.0
    for column, height in zip(columns, heights):
        for j, row in enumerate(rows):
            status = code[cells.get((row, column), ("none", ""))[0]]
            ax.add_patch(matplotlib.patches.Rectangle((j - 0.5, top), 1, height, facecolor=colours(status),
                                                      edgecolor="white", linewidth=1.0))
            ax.text(j, top + height / 2, texts[(row, column)], ha="center", va="center", fontsize=MIN_FONT_PT,
                    color="white" if status == 1 else "black")
        top += height
    centres = [sum(heights[:i]) + h / 2 for i, h in enumerate(heights)]
    if not columns:  # no scripted scenario and no counterexample: an empty matrix says so
        top = 1.0
        ax.text((len(rows) - 1) / 2, 0.5, "nothing replayed: no scripted scenario and no counterexample",
                ha="center", va="center", fontsize=MIN_FONT_PT)
    ax.set_xlim(-0.5, len(rows) - 0.5)
    ax.set_ylim(top, 0)
    ax.set_yticks(centres, shown, fontsize=MIN_FONT_PT)
    ax.set_xticks(range(len(rows)), [wrap_label(r, per_line) for r in rows], fontsize=MIN_FONT_PT)
    ax.xaxis.tick_top()
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("each scenario and minimal counterexample replayed with no seed (green: holds; red: violates)",
                  fontsize=MIN_FONT_PT + 1)
    for side in ax.spines.values():
        side.set_visible(False)
    return figure


#: A share axis shows its data's range (at least SHARE_MIN_SPAN of [0, 1]) and this share of it again on each side.
SHARE_MARGIN = 0.08
SHARE_MIN_SPAN = 0.02
#: Shares whose largest is at least this many times their smallest above zero are drawn on a log scale (linear
#: near zero, so a share of 0 keeps its place): on a linear one the small ones would crowd together at zero.
LOG_SPAN_RATIO = 100.0


def share_axis(axis, shares: Sequence[Share]) -> None:
    """Zoom one axis of shares to where they are, every interval whole, so points spread over the axes instead
    of crowding one corner of [0, 1]; a log scale when they span orders of magnitude.  Never below 0 or above 1
    by more than the margin (a narrow window near 0 or 1 is moved inside)."""
    values = [s.value for s in shares]
    low = min([s.low for s in shares] + values, default=0.0)
    high = max([s.high for s in shares] + values, default=1.0)
    positive = [v for v in values if v > 0]
    limits = axis.axes.set_xlim if axis.axis_name == "x" else axis.axes.set_ylim
    scale = axis.axes.set_xscale if axis.axis_name == "x" else axis.axes.set_yscale
    if positive and max(positive) / min(positive) >= LOG_SPAN_RATIO:
        threshold = 10.0 ** math.floor(math.log10(min(positive)))
        scale("symlog", linthresh=threshold, linscale=0.5)
        limits(-threshold * 0.5, min(1.0 + SHARE_MARGIN * SHARE_MIN_SPAN, high * (1.0 + 2 * SHARE_MARGIN)))
        return
    span = max(high - low, SHARE_MIN_SPAN)
    start = min(max((low + high - span) / 2, 0.0), 1.0 - span) if span < 1.0 else low
    limits(start - SHARE_MARGIN * span, start + span + SHARE_MARGIN * span)


@dataclass(frozen=True, slots=True)
class SafetyPoint:
    """One protocol of :func:`safety_vs_availability`: its share of work done and of runs violating safety."""

    protocol: str
    violating: Share
    progress: Share


#: A share of nothing, for a protocol whose work done nobody measured.
NOTHING = Share(value=0, low=0, high=0)


def work_done_points(design: DesignRow) -> tuple[list[SafetyPoint], str, bool]:
    """The points of :func:`safety_vs_availability` for a review design: (points, the x axis's measure, whether
    it is work done *safely*).  A family that tells work done safely apart (its protocol rows hold
    ``safe_progress``) is plotted by it -- a write over content its author never saw is no work done --
    and the axis says so; other families by their work done (``progress``)."""
    safe = bool(design.protocols) and all(row.safe_progress is not None for row in design.protocols)
    points = []
    for row in design.protocols:
        done = row.safe_progress if safe else row.progress
        points.append(SafetyPoint(row.protocol, row.violating_runs.share if row.violating_runs else NOTHING,
                                  done.share if done else NOTHING))
    label = (design.safe_progress_label or "applied safely / planned") if safe else design.progress_label
    return points, label, safe


def safety_vs_availability(points: Sequence[SafetyPoint], title: str, progress_label: str,
                           safely: bool = False) -> Figure:
    """One point per protocol: share of work done (x) against share of runs violating safety (y), with
    Wilson intervals on both axes; protocols that land on the same spot share one labelled point.  Both axes
    zoom to the points (:func:`share_axis`: a log scale where shares span orders of magnitude), and each
    point's number stands clear of the other numbers, points and intervals (:mod:`sim.report.labels`).
    ``safely``: the x axis is work done safely (``progress_label`` names it), and the axis says it is not the
    plain work done."""
    from sim.report.labels import number_points

    figure = Figure(figsize=(10.0, 5.0), layout="constrained")
    ax = figure.subplots()
    groups: dict[tuple[float, float], list[SafetyPoint]] = {}
    for point in points:
        spot = (round(point.progress.value, 3), round(point.violating.value, 3))
        groups.setdefault(spot, []).append(point)
    numbered = []
    for index, members in enumerate(groups.values()):
        x, y = members[0].progress, members[0].violating
        drawn = ax.errorbar([x.value], [y.value], xerr=[[x.value - x.low], [x.high - x.value]],
                            yerr=[[y.value - y.low], [y.high - y.value]], fmt="o", capsize=3, color=f"C{index % 10}")
        for artist in (drawn.lines[0], *drawn.lines[1], *drawn.lines[2]):
            artist.set_clip_on(False)  # a point at 0 or 1 is drawn whole on the axis's edge
        numbered.append((x.value, y.value, ", ".join(m.protocol for m in members), f"C{index % 10}"))
    share_axis(ax.xaxis, [p.progress for p in points])  # zoomed to the data: points spread, not in a corner
    share_axis(ax.yaxis, [p.violating for p in points])
    ax.tick_params(labelsize=MIN_FONT_PT + 1)
    ax.set_xlabel(f"{progress_label} (share, 95% Wilson interval)"
                  + ("\nwork done safely: applied once, over what its author expected (not plain applied)"
                     if safely else ""), fontsize=9)
    ax.set_ylabel("runs violating a safety invariant (share, 95% Wilson)", fontsize=9)
    ax.set_title(title, fontsize=10)
    ax.axhline(0, color="#999999", linewidth=0.6)
    ax.grid(alpha=0.3)
    number_points(figure, ax, numbered, MIN_FONT_PT, "protocols")
    return figure


def interference_curves(curves: Mapping[str, Sequence[InterferencePoint]], title: str, bound: int | None = None,
                        xlabel: str = "faults injected per run (at most; the curves go past the design's bound on "
                                      "purpose)") -> Figure:
    """Violating-run share against faults per run, one line per protocol, with 95% Wilson bands; protocols
    with the same curve share one line.  ``bound``: the design's own faults per run, marked."""
    merged: dict[tuple, list[str]] = {}
    for protocol, points in curves.items():
        merged.setdefault(tuple((p.faults_per_run, p.share.value) for p in points), []).append(protocol)
    lines = {" | ".join(names): curves[names[0]] for names in merged.values()}
    figure = Figure(figsize=(9.0, 5.0 + 0.16 * sum(len(k.split(" | ")) for k in lines)), layout="constrained")
    ax = figure.subplots()
    for index, (protocol, points) in enumerate(lines.items()):
        xs = [p.faults_per_run for p in points]
        ys = [p.share.value for p in points]
        ax.plot(xs, ys, marker="o", color=f"C{index % 10}", label=protocol.replace(" | ", "\n"))
        ax.fill_between(xs, [p.share.low for p in points], [p.share.high for p in points],
                        color=f"C{index % 10}", alpha=0.15)
    if bound is not None:
        ax.axvline(bound, color="#777777", linestyle="--", linewidth=0.8,
                   label=f"this design's bound: {bound} faults per run")
    ax.set_xlabel(xlabel, fontsize=9)
    ax.set_ylabel("runs violating a safety invariant (share)", fontsize=9)
    ax.tick_params(labelsize=MIN_FONT_PT + 1)
    ax.set_ylim(-0.03, 1.03)
    ax.set_title(title, fontsize=10)
    figure.legend(fontsize=MIN_FONT_PT, loc="outside lower center", ncols=2, frameon=False,
                  title="protocols (one line per protocol; protocols with the same curve share a colour)",
                  title_fontsize=MIN_FONT_PT)
    ax.grid(alpha=0.3)
    return figure


def saturation_curve(points: Sequence[tuple[int, Mapping[str, int]]], title: str) -> Figure:
    """Distinct run behaviours against seeds run, one line per protocol (protocols with the same curve share
    one): where a line flattens, more seeds stopped finding new behaviour.

    ``points``: ``[[seeds_run, {protocol: distinct behaviours so far}], ...]`` (a sweep's saturation)."""
    protocols = list(points[-1][1]) if points else []
    merged: dict[tuple, list[str]] = {}
    for protocol in protocols:
        merged.setdefault(tuple(counts.get(protocol, 0) for _, counts in points), []).append(protocol)
    figure = Figure(figsize=(9.0, 4.6 + 0.16 * len(protocols)), layout="constrained")
    ax = figure.subplots()
    xs = [seeds_run for seeds_run, _ in points]
    for index, (ys, names) in enumerate(merged.items()):
        label = "\n".join(wrap_label(name, 60) for name in names)
        ax.plot(xs, list(ys), marker="o", markersize=3, color=f"C{index % 10}", label=label)
    ax.set_xlabel("seeds run per protocol", fontsize=9)
    ax.set_ylabel("distinct run behaviours (estimated)", fontsize=9)
    ax.tick_params(labelsize=MIN_FONT_PT + 1)
    ax.set_title(title, fontsize=10)
    if merged:
        figure.legend(fontsize=MIN_FONT_PT, loc="outside lower center", ncols=2, frameon=False)
    ax.grid(alpha=0.3)
    return figure


#: The exposure panels: (metric, the worked example's figure it is drawn beside, its legend).
EXPOSURE_PANELS = (("duplicate_effects", "already_committed", "arithmetic: already committed (unkeyed)"),
                   ("human_exceptions", "human_exceptions", "arithmetic: human exceptions"))
#: An exposure panel is drawn only when its widest 95% interval is at most this share of the scale it is read
#: against (the larger of the worked example's figure and the largest simulated value).
EXPOSURE_INFORMATIVE_WIDTH = 0.5


#: A family section's simulated metrics: protocol -> metric -> ``{value, ci_low, ci_high}`` (None: not measured).
Simulated = Mapping[str, Mapping[str, Mapping[str, float | None]]]


def exposure_of(section: JsonObject) -> tuple[dict[str, dict[str, dict[str, float | None]]], dict[str, float]]:
    """A family section's simulated metrics and its exact arithmetic (``analytic``), read as numbers."""
    simulated = {protocol: {metric: {key: json_number(value) for key, value in json_object(cell).items()}
                            for metric, cell in json_object(metrics).items()}
                 for protocol, metrics in json_object(section.get("metrics")).items()}
    analytic = {name: number for name, value in json_object(section.get("analytic")).items()
                for number in [json_number(value)] if number is not None}
    return simulated, analytic


def informative_panels(simulated: Simulated, analytic: Mapping[str, float]) -> tuple[list[str], list[str]]:
    """Which exposure panels carry intervals narrow enough to read, and why each other one is left out."""
    kept, reasons = [], []
    for metric, reference, _ in EXPOSURE_PANELS:
        cells = [simulated[p][metric] for p in simulated if metric in simulated[p]]
        values = [c["value"] or 0.0 for c in cells]
        widths = [(c["ci_high"] or 0.0) - (c["ci_low"] or 0.0) for c in cells if c["ci_high"] is not None]
        scale = max([float(analytic.get(reference, 0) or 0)] + values)
        if cells and widths and scale > 0 and max(widths) <= EXPOSURE_INFORMATIVE_WIDTH * scale:
            kept.append(metric)
        elif cells:
            reasons.append(f"{metric.replace('_', ' ')}: its 95% intervals are up to {max(widths or [0]):,.1f} wide "
                           f"against values of at most {scale:,.1f}, too wide to read as bars (simulate more "
                           "tasks to narrow them); the table above gives the numbers")
    return kept, reasons


def exposure_bars(simulated: Simulated, analytic: Mapping[str, float], tasks: int,
                  metrics: Sequence[str] | None = None) -> Figure:
    """Duplicate effects and human exceptions per ``tasks`` tasks for each protocol (exact Poisson
    intervals, never below zero), beside the worked example's arithmetic; ``metrics``: the panels to draw
    (default: those :func:`informative_panels` keeps, else both)."""
    if metrics is None:
        metrics = informative_panels(simulated, analytic)[0] or [m for m, _, _ in EXPOSURE_PANELS]
    panels = [panel for panel in EXPOSURE_PANELS if panel[0] in metrics]
    protocols = list(simulated)
    panel_in = min((MAX_WIDTH_IN - 0.5) / len(panels), max(4.5, 1.2 * len(protocols) + 1.0))
    figure = Figure(figsize=(0.5 + panel_in * len(panels), 4.8), layout="constrained")
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    for ax, (metric, reference, label) in zip(axes, panels):
        values = [simulated[p][metric]["value"] or 0.0 for p in protocols]
        low = [max(0.0, v - (simulated[p][metric]["ci_low"] or 0.0)) for p, v in zip(protocols, values)]
        high = [max(0.0, (simulated[p][metric]["ci_high"] or 0.0) - v) for p, v in zip(protocols, values)]
        ax.bar(range(len(protocols)), values, yerr=[low, high], capsize=4, color=EVENT_COLOUR)
        ax.axhline(float(analytic[reference]), color=MARK_COLOUR, linestyle="--", label=label)
        per_bar = max(8, int((panel_in - 1.0) / max(1, len(protocols)) * 72 / (MIN_FONT_PT * 0.62)))
        ax.set_xticks(range(len(protocols)), [wrap_label(p, per_bar) for p in protocols], fontsize=MIN_FONT_PT)
        ax.tick_params(axis="y", labelsize=MIN_FONT_PT + 1)
        ax.set_ylabel(f"per {tasks:,} tasks (95% exact Poisson)", fontsize=9)
        ax.set_title(metric.replace("_", " "), fontsize=10)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=MIN_FONT_PT)
    figure.suptitle("Duplicate-effect exposure, simulated, beside the worked example's arithmetic", fontsize=10)
    return figure


#: Width of the swimlane's first column (the event number and time), inches.
SWIMLANE_INDEX_IN = 0.5
#: Height of one line of a swimlane label, inches.
SWIMLANE_LINE_IN = 0.17


@dataclass(frozen=True, slots=True)
class LaneEvent:
    """One event of a swimlane: its actor (the lane), its label, and whether it is a fault or marked."""

    actor: str
    label: str
    fault: bool = False
    marked: bool = False


def lane_events(family: Any, history: Iterable[Any], marked: Iterable[int]) -> list[LaneEvent]:
    """A run's events as a swimlane shows them (``marked``: the indexes of the violating events); skipped
    events and the script's are left out."""
    chosen = set(marked)
    return [LaneEvent(e.actor, family.describe(e), family.is_fault(e), e.index in chosen)
            for e in history if not e.get("skipped") and e.actor != "script"]


def swimlane(lanes: Sequence[str], events: Iterable[LaneEvent], title: str,
             marks: str = "the violating event") -> Figure:
    """One column per actor, one row per event (in history order), top to bottom (the layout of the text
    timeline); faults in orange, the violating event in red.  However many events, the figure is as wide as its
    lanes allow (``MAX_WIDTH_IN`` at most) and grows downwards; every label is whole, wrapped to its lane."""
    events = list(events)
    lanes = [lane for lane in lanes if any(e.actor == lane for e in events)]
    lanes += sorted({e.actor for e in events} - set(lanes))
    lane_in = min(2.6, (MAX_WIDTH_IN - SWIMLANE_INDEX_IN - 0.3) / max(1, len(lanes)))
    column = {lane: i for i, lane in enumerate(lanes)}

    def width(actor: str) -> int:  # one event per row: a label may run over the lanes to its right
        return max(10, int(((len(lanes) - column[actor]) * lane_in - 0.2) * 72 / (MIN_FONT_PT * 0.62)))

    wrapped = [textwrap.fill(e.label, width(e.actor), break_long_words=False, break_on_hyphens=False)
               for e in events]
    heights = [SWIMLANE_LINE_IN * (text.count("\n") + 1) + 0.08 for text in wrapped]
    total = sum(heights)
    figure = Figure(figsize=(SWIMLANE_INDEX_IN + 0.3 + lane_in * len(lanes), 1.1 + total), layout="constrained")
    ax = figure.subplots()
    for x in column.values():
        ax.axvline(x, color="#cccccc", linewidth=0.8, zorder=0)
    y = 0.0
    for number, (event, text, height) in enumerate(zip(events, wrapped, heights)):
        centre = y + height / 2
        x = column[event.actor]
        colour = MARK_COLOUR if event.marked else (FAULT_COLOUR if event.fault else EVENT_COLOUR)
        ax.scatter([x], [centre], s=70 if event.marked else 30, color=colour, zorder=3,
                   edgecolors="black" if event.marked else "none")
        ax.text(x + 0.06, centre, text, fontsize=MIN_FONT_PT, va="center", ha="left",
                color=colour if event.marked else "black", fontweight="bold" if event.marked else "normal",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.3, "alpha": 0.85})
        ax.text(-0.5, centre, str(number), fontsize=MIN_FONT_PT, va="center", ha="right", color="#555555")
        y += height
    ax.set_xlim(-0.55, len(lanes) - 0.05)
    ax.set_ylim(total, 0)
    ax.set_xticks(range(len(lanes)), lanes, fontsize=MIN_FONT_PT + 1)
    ax.xaxis.tick_top()
    ax.set_yticks([])
    ax.set_xlabel(f"events in history order, top to bottom (orange: injected fault; red: {marks})",
                  fontsize=MIN_FONT_PT + 1)
    ax.set_title(title, fontsize=10)
    for side in ax.spines.values():
        side.set_visible(False)
    return figure


def to_svg(figure: Figure) -> str:
    """The figure as an SVG document (text); deterministic: no date, fixed hash salt."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "fencesim", "svg.fonttype": "none"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    return buffer.getvalue()


def to_png(figure: Figure, dpi: int = 90) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None}, bbox_inches="tight")
    return buffer.getvalue()
