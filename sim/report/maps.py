"""The design map's figure: safety against cost for every group of protocols, the Pareto front marked.

Built from the map's JSON document (``DesignMap.to_json()``), so a notebook, the ``map`` command and the
review draw the same figure.  A ``Figure`` of its own, never ``pyplot``.
"""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure

from sim.core.wrapping import wrap_text
from sim.report.labels import LEGEND_WIDTH, number_points
from sim.search.map_document import MapDocument, MapPoint

STATUS_COLOURS = {"safe": "#4c9f70", "violated": "#c44e52", "not decided": "#999999"}
#: Points numbered at most: the front first, then the violated, then the rest (the map's table names them all).
LABELLED_MAX = 40
#: Legend columns below the axes (filled one after the other), the height (inches) of one legend line, and the
#: lines' worth of room each entry adds (the space between entries).
LEGEND_COLUMNS = 3
LEGEND_LINE_IN = 0.15
LEGEND_ENTRY_GAP_LINES = 0.5

@dataclass(frozen=True, slots=True)
class Point:
    """A point of the figure: findings per run (x), violating share (y), the design that stands for its group
    and how many designs behave alike."""

    findings: float
    share: float
    design: MapPoint
    alike: int


def pareto_figure(document: MapDocument) -> Figure:
    """Findings per run (x) against the share of violating runs (y), one point per group of protocols
    that behave alike, coloured by verdict within the bound; the Pareto front is joined.  Every point is
    numbered -- the front's first, then the violated (red) ones, then the rest -- and the legend below names
    each number's group (its first protocol, and how many behave alike)."""
    front = set(document.pareto_front)
    points = _points(document)
    numbered = _numbered(points, front)
    figure = Figure(figsize=(10.5, 5.0 + LEGEND_LINE_IN * _legend_lines(numbered)), layout="constrained")
    ax = figure.subplots()
    for point in points:
        colour = STATUS_COLOURS.get(point.design.status, "#999999")
        on_front = point.design.protocol in front
        ax.scatter([point.findings], [point.share], color=colour, marker="D" if on_front else "o",
                   s=42 if on_front else 22, edgecolor="black" if on_front else "none", linewidth=0.6, zorder=3)
    front_points = sorted((p.findings, p.share) for p in points if p.design.protocol in front)
    if front_points:
        ax.plot([p[0] for p in front_points], [p[1] for p in front_points], color="#333333", linewidth=0.8,
                linestyle="--", zorder=2)
    for status, colour in STATUS_COLOURS.items():
        ax.scatter([], [], color=colour, label=f"{status} within {document.max_events} events")
    ax.scatter([], [], marker="D", color="white", edgecolor="black", label="Pareto front (among the safe)")
    ax.add_artist(ax.legend(fontsize=9, loc="upper right"))
    ax.set_xlabel("availability findings per run (spurious rejections, human exceptions)", fontsize=10)
    ax.set_ylabel("runs violating a safety invariant (share)", fontsize=10)
    ax.set_title(f"design map: {document.workload}, {len(document.knobs)} knobs "
                 f"({', '.join(document.knobs)})", fontsize=11)
    ax.set_ylim(-0.05, 1.05)
    ax.grid(alpha=0.3)
    left = len(points) - sum(names.count(" | ") + 1 for _, _, names, _ in numbered)
    unplaced = _unplaced(document)
    title = ("numbered points: the Pareto front first, then the violated (red)"
             + (f"; {left} more in the map's table" if left > 0 else "")
             + (f"; {unplaced} not decided and not measured (no point; in the map's table)" if unplaced else ""))
    number_points(figure, ax, numbered, 9, title, legend_below=True)
    if not points:
        ax.text(0.5, 0.5, f"no design measured: {unplaced} not decided and not measured (see the map's table)",
                transform=ax.transAxes, ha="center", va="center", fontsize=10)
    return figure


def _points(document: MapDocument) -> list[Point]:
    """One point per group of protocols that behave alike: the design that stands for it, with how many
    behave alike."""
    alike: dict[str, int] = {}
    for point in document.protocols:
        alike[point.representative] = alike.get(point.representative, 0) + 1
    return [Point(sum(point.availability_per_run.values()),
                  point.violating_share.value if point.violating_share else 0.0, point, alike.get(point.protocol, 1))
            for point in document.protocols if point.representative == point.protocol and not _is_unplaced(point)]


def _is_unplaced(point: MapPoint) -> bool:
    """A design the map neither decided nor measured (a budget stopped the map first): it has no place on the
    axes -- drawn at zero it would read as a design with no violating run."""
    return point.status == "not decided" and point.violating_share is None


def _unplaced(document: MapDocument) -> int:
    return sum(1 for point in document.protocols if _is_unplaced(point))


def _numbered(points: list[Point], front: set[str]) -> list[tuple[float, float, str, str]]:
    """The points to number, ``(x, y, names, colour)``: the front's, then the violated, then the rest, at most
    ``LABELLED_MAX`` spots; groups on the same spot share a number (their names joined by `` | ``)."""
    def rank(point: Point) -> int:
        return 0 if point.design.protocol in front else 1 if point.design.status == "violated" else 2

    spots: dict[tuple[float, float], list[Point]] = {}
    for point in sorted(points, key=rank):
        spot = (round(point.findings, 4), round(point.share, 4))
        if spot in spots or len(spots) < LABELLED_MAX:
            spots.setdefault(spot, []).append(point)
    return [(x, y, " | ".join(_name(p) for p in members), STATUS_COLOURS.get(members[0].design.status, "#999999"))
            for (x, y), members in spots.items()]


def _name(point: Point) -> str:
    more = point.alike - 1
    return point.design.protocol + (f" (and {more} alike)" if more else "")


def _legend_lines(numbered: list[tuple[float, float, str, str]]) -> float:
    """The height of the legend below the axes, in lines: its tallest column, and its title."""
    per_column = max(1, -(-len(numbered) // LEGEND_COLUMNS))  # no point at all: a map the budget stopped first
    heights = [len(wrap_text(names, LEGEND_WIDTH)) + LEGEND_ENTRY_GAP_LINES for _, _, names, _ in numbered]
    return max((sum(heights[i:i + per_column]) for i in range(0, len(heights), per_column)), default=0.0) + 2.0
