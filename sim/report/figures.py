"""The review's figures: matplotlib ``Figure`` objects, built from the review's numbers.

No global state: every function builds its own ``Figure`` (never
``pyplot``, never ``matplotlib.use``), so a notebook shows it and the
report writes it as PNG and SVG.  Each figure is titled and labelled with
its units; intervals come from :mod:`sim.core.stats` and never go below
zero.
"""

from __future__ import annotations

import io
from typing import Any, Iterable, Sequence

import matplotlib
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

#: Colours of verdicts in the heatmap, in order: holds, violated, no effect / not run.
VERDICT_COLOURS = ("#4c9f70", "#c44e52", "#d9d9d9")
FAULT_COLOUR = "#dd8452"
MARK_COLOUR = "#c44e52"
EVENT_COLOUR = "#4c72b0"


def _short(text: str, width: int = 28) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"



#: Height of one label line in the safety/availability figure, in data units of its y axis, with room (7 pt text
#: on an axis about 300 pt tall spanning 1.1).
_LINE = 0.045
#: Width of one label character as a share of that figure's axis width (7 pt text, about 560 pt wide).
_CHAR = 0.0075


def _spread_labels(labels: list[tuple[float, float, list[str], str, float]]
                   ) -> list[tuple[float, float, float, list[str], str, float]]:
    """Place each label ``(x, y, lines, colour, text_x)`` beside its point, moved down just enough that
    labels in the same column never overlap: ``(x, y, text_y, lines, colour, text_x)``, highest point
    first, the same for the same input."""
    placed: list[tuple[float, float, float, list[str], str, float]] = []
    for x, y, lines, colour, text_x in sorted(labels, key=lambda item: (-item[1], item[0], item[2])):
        half = len(lines) * _LINE / 2
        centre = y
        for _, _, other_centre, other_lines, _, other_text_x in placed:
            if abs(other_text_x - text_x) > 0.3:
                continue  # different column: no overlap possible
            floor = other_centre - len(other_lines) * _LINE / 2 - half - 0.01
            centre = min(centre, floor)
        placed.append((x, y, centre, lines, colour, text_x))
    return placed

def verdict_heatmap(rows: Sequence[str], columns: Sequence[str], cells: dict[tuple[str, str], tuple[str, str]],
                    title: str, labels: Sequence[str] | None = None) -> Figure:
    """Protocol x scenario: green where the protocol holds, red where it violates an invariant.

    ``cells[(row, column)]`` is ``(status, text)``: status ``"ok"``, ``"violated"`` or ``"none"`` (not run).
    """
    height = 1.4 + 0.42 * len(rows)
    width = max(6.0, 2.8 + 1.25 * len(columns))
    figure = Figure(figsize=(width, height), layout="constrained")
    ax = figure.subplots()
    code = {"ok": 0, "violated": 1, "none": 2}
    grid = [[code[cells.get((r, c), ("none", ""))[0]] for c in columns] for r in rows]
    ax.imshow(grid, cmap=ListedColormap(VERDICT_COLOURS), vmin=0, vmax=2, aspect="auto")
    for i, row in enumerate(rows):
        for j, column in enumerate(columns):
            text = cells.get((row, column), ("none", "-"))[1]
            ax.text(j, i, _short(text.replace("_", " "), 18), ha="center", va="center", fontsize=6.5,
                    color="white" if grid[i][j] == 1 else "black")
    ax.set_xticks(range(len(columns)), list(labels or [_short(c, 30) for c in columns]), rotation=0, fontsize=6.5)
    ax.set_yticks(range(len(rows)), [_short(r, 46) for r in rows], fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("scenario or minimal counterexample, replayed with no seed (green: holds; red: violates)",
                  fontsize=8)
    return figure


def safety_vs_availability(points: Sequence[dict[str, Any]], title: str, progress_label: str) -> Figure:
    """One point per protocol: share of work done (x) against share of runs violating safety (y), with
    Wilson intervals on both axes; protocols that land on the same spot share one labelled point.
    ``points``: ``{"protocol", "progress": {value, low, high}, "violating": {value, low, high}}``."""
    figure = Figure(figsize=(8.5, 5.0), layout="constrained")
    ax = figure.subplots()
    groups: dict[tuple[float, float], list[dict[str, Any]]] = {}
    for point in points:
        spot = (round(point["progress"]["value"], 3), round(point["violating"]["value"], 3))
        groups.setdefault(spot, []).append(point)
    labels = []
    for index, members in enumerate(groups.values()):
        x, y = members[0]["progress"], members[0]["violating"]
        ax.errorbar([x["value"]], [y["value"]],
                    xerr=[[x["value"] - x["low"]], [x["high"] - x["value"]]],
                    yerr=[[y["value"] - y["low"]], [y["high"] - y["value"]]],
                    fmt="o", capsize=3, color=f"C{index % 10}")
        lines = [_short(m["protocol"], 64) for m in members]
        labels.append((x["value"], y["value"], lines, f"C{index % 10}", max(x["value"] + 0.025, x["high"] + 0.01)))
    lowest, right = -0.05, 1.1
    for x, y, text_y, lines, colour, text_x in _spread_labels(labels):
        moved = abs(text_y - y) > 1e-9
        ax.annotate("\n".join(lines), (x, y), xytext=(text_x, text_y), textcoords="data", fontsize=7,
                    color=colour, va="center",
                    arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.5} if moved else None)
        lowest = min(lowest, text_y - len(lines) * _LINE / 2 - 0.01)
        share = max(len(line) for line in lines) * _CHAR  # of the axis width, the label's width
        right = max(right, (text_x + 0.03 * share) / (1 - share))
    ax.set_xlim(-0.03, right)  # room on the right for the labels
    ax.set_xticks([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_ylim(lowest, 1.05)
    ax.set_xlabel(f"{progress_label} (share, 95% Wilson interval)", fontsize=9)
    ax.set_ylabel("runs violating a safety invariant (share, 95% Wilson)", fontsize=9)
    ax.set_title(title, fontsize=10)
    ax.axhline(0, color="#999999", linewidth=0.6)
    ax.grid(alpha=0.3)
    return figure


def interference_curves(curves: dict[str, list[dict[str, Any]]], title: str, bound: int | None = None) -> Figure:
    """Violating-run share against faults per run, one line per protocol, with 95% Wilson bands; protocols
    with the same curve share one line.  ``bound``: the design's own faults per run, marked.

    ``curves[protocol]``: ``[{"faults_per_run", "share": {value, low, high}}, ...]``."""
    merged: dict[tuple, list[str]] = {}
    for protocol, points in curves.items():
        merged.setdefault(tuple((p["faults_per_run"], p["share"]["value"]) for p in points), []).append(protocol)
    curves = {" | ".join(names): curves[names[0]] for names in merged.values()}
    figure = Figure(figsize=(9.0, 4.8), layout="constrained")
    ax = figure.subplots()
    for index, (protocol, points) in enumerate(curves.items()):
        xs = [p["faults_per_run"] for p in points]
        ys = [p["share"]["value"] for p in points]
        ax.plot(xs, ys, marker="o", color=f"C{index % 10}", label=_short(protocol, 90))
        ax.fill_between(xs, [p["share"]["low"] for p in points], [p["share"]["high"] for p in points],
                        color=f"C{index % 10}", alpha=0.15)
    if bound is not None:
        ax.axvline(bound, color="#777777", linestyle="--", linewidth=0.8,
                   label=f"this design's bound: {bound} faults per run")
    ax.set_xlabel("faults injected per run (at most; the curves go past the design's bound on purpose)",
                  fontsize=9)
    ax.set_ylabel("runs violating a safety invariant (share)", fontsize=9)
    ax.set_ylim(-0.03, 1.03)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3)
    return figure


def exposure_bars(simulated: dict[str, dict[str, dict[str, float]]], analytic: dict[str, Any],
                  tasks: int) -> Figure:
    """Duplicate effects and human exceptions per ``tasks`` tasks for each protocol (exact Poisson
    intervals, never below zero), beside the worked example's arithmetic."""
    figure = Figure(figsize=(10, 4.2), layout="constrained")
    axes = figure.subplots(1, 2)
    protocols = list(simulated)
    for ax, metric, reference, label in (
        (axes[0], "duplicate_effects", analytic["already_committed"], "arithmetic: already committed (unkeyed)"),
        (axes[1], "human_exceptions", analytic["human_exceptions"], "arithmetic: human exceptions"),
    ):
        values = [simulated[p][metric]["value"] or 0.0 for p in protocols]
        low = [max(0.0, v - (simulated[p][metric]["ci_low"] or 0.0)) for p, v in zip(protocols, values)]
        high = [max(0.0, (simulated[p][metric]["ci_high"] or 0.0) - v) for p, v in zip(protocols, values)]
        ax.bar(range(len(protocols)), values, yerr=[low, high], capsize=4, color=EVENT_COLOUR)
        ax.axhline(float(reference), color=MARK_COLOUR, linestyle="--", label=label)
        ax.set_xticks(range(len(protocols)), [_short(p, 30) for p in protocols], rotation=20, ha="right",
                      fontsize=8)
        ax.set_ylabel(f"per {tasks:,} tasks (95% exact Poisson)", fontsize=8)
        ax.set_title(metric.replace("_", " "), fontsize=10)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    figure.suptitle("Duplicate-effect exposure, simulated, beside the worked example's arithmetic", fontsize=10)
    return figure


#: Event columns of room kept right of the last event of a swimlane, so its slanted label is not cut.
SWIMLANE_LABEL_ROOM = 2.2


def swimlane(lanes: Sequence[str], events: Iterable[dict[str, Any]], title: str) -> Figure:
    """One lane per actor, one column per event in order; faults in orange, the violating event in red.

    ``events``: ``{"actor", "label", "fault": bool, "marked": bool}`` in history order.
    """
    events = list(events)
    lanes = [lane for lane in lanes if any(e["actor"] == lane for e in events)]
    width = max(6.0, 1.0 + 0.55 * (len(events) + SWIMLANE_LABEL_ROOM))
    figure = Figure(figsize=(min(width, 26.0), 1.2 + 0.7 * len(lanes)), layout="constrained")
    ax = figure.subplots()
    row = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}
    for lane, y in row.items():
        ax.axhline(y, color="#cccccc", linewidth=0.8, zorder=0)
    for x, event in enumerate(events):
        y = row[event["actor"]]
        colour = MARK_COLOUR if event["marked"] else (FAULT_COLOUR if event["fault"] else EVENT_COLOUR)
        ax.scatter([x], [y], s=90 if event["marked"] else 40, color=colour, zorder=3,
                   edgecolors="black" if event["marked"] else "none")
        ax.annotate(_short(event["label"], 34), (x, y), xytext=(0, 7), textcoords="offset points", rotation=35,
                    fontsize=6.5, ha="left", va="bottom", color=colour if event["marked"] else "black")
    ax.set_yticks(list(row.values()), list(row.keys()), fontsize=8)
    ax.set_xticks(range(len(events)), [str(i) for i in range(len(events))], fontsize=6)
    ax.set_xlabel("event, in history order (orange: injected fault; red: the violating event)", fontsize=8)
    ax.set_ylim(-0.6, len(lanes) - 0.2 + 0.9)
    ax.set_xlim(-0.6, len(events) - 0.4 + SWIMLANE_LABEL_ROOM)  # room for the last labels, slanted right
    ax.set_title(title, fontsize=9)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
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
