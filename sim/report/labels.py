"""Point labels that never overlap: each labelled point gets a number beside it, placed where it covers no
other number, no point and no error bar (tried around the point, nearest first, with a thin line leading back
to the point once it has to stand off), and a legend says which protocols each number stands for.  A number is
one or two characters, so a crowd of close points stays readable, and the names, however long, are written
once, whole, wrapped at their commas."""

from __future__ import annotations

import math
from typing import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from sim.core.wrapping import wrap_text

#: Characters a legend entry's line holds at most (names wrap after their commas and '=').
LEGEND_WIDTH = 34

#: Distances (points) from a point to its number's centre, nearest first; past the first, a line leads back.
RADII_PT = (9.0, 15.0, 22.0, 30.0, 40.0, 52.0, 66.0)
#: Directions tried at each distance (degrees, counter-clockwise from the right), upper right first.
ANGLES_DEG = (45, -45, 135, -135, 0, 180, 90, -90, 22, -22, 158, -158, 68, -68, 112, -112)
#: Half the side of the square a point's marker covers, in points (a 6-point marker and a little room).
MARKER_HALF_PT = 4.0

#: A candidate place, ``(dx, dy)`` in points from the point.
OFFSETS = [(r * math.cos(math.radians(a)), r * math.sin(math.radians(a))) for r in RADII_PT for a in ANGLES_DEG]


def number_points(figure: Figure, ax, points: Sequence[tuple[float, float, str, str]], font_pt: float,
                  title: str = "", legend_below: bool = False) -> list:
    """Label ``points`` (``x, y, names, colour``) with numbers 1, 2, ... placed where no number covers another
    number, any point or an error bar; the legend beside the axes (below them with ``legend_below``) maps each
    number to its names.  Returns the numbers' annotations (to test placement)."""
    if not points:
        return []
    handles = [Line2D([], [], linestyle="none", marker="o", color=colour,
                      label=f"{index}  " + "\n".join(wrap_text(names, LEGEND_WIDTH)))
               for index, (_, _, names, colour) in enumerate(points, 1)]
    if legend_below:
        figure.legend(handles=handles, fontsize=font_pt, loc="outside lower center", title=title or None,
                      title_fontsize=font_pt, ncols=3, handletextpad=0.3, frameon=False)
    else:
        ax.legend(handles=handles, fontsize=font_pt, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  title=title or None, title_fontsize=font_pt, borderaxespad=0.0, handletextpad=0.3)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()  # the layout first: boxes are measured where they will be drawn
    renderer = canvas.get_renderer()
    pixels = renderer.points_to_pixels(MARKER_HALF_PT)
    centres = [ax.transData.transform((x, y)) for x, y, _, _ in points]
    boxes = [Bbox.from_extents(cx - pixels, cy - pixels, cx + pixels, cy + pixels) for cx, cy in centres]
    boxes += _bar_boxes(ax)
    frame = ax.get_window_extent(renderer)
    placed = []
    for index, (x, y, _names, colour) in enumerate(points, 1):
        annotation = _place(ax, renderer, (x, y), str(index), colour, font_pt, boxes, frame)
        annotation.update_positions(renderer)
        boxes.append(Text.get_window_extent(annotation, renderer))
        placed.append(annotation)
    return placed


def _bar_boxes(ax) -> list[Bbox]:
    """The boxes of the axes' error bars (their line collections' segments, a pixel thick): no number sits on
    another point's interval."""
    boxes = []
    for collection in ax.collections:
        if isinstance(collection, LineCollection):
            for segment in collection.get_segments():
                (x0, y0), (x1, y1) = ax.transData.transform(segment[0]), ax.transData.transform(segment[-1])
                boxes.append(Bbox.from_extents(min(x0, x1) - 1, min(y0, y1) - 1, max(x0, x1) + 1, max(y0, y1) + 1))
    return boxes


def _place(ax, renderer, xy: tuple[float, float], text: str, colour: str, font_pt: float, taken: list[Bbox],
           frame: Bbox):
    """The number at the nearest offset where it overlaps nothing in ``taken`` and stays inside the axes' frame
    (else where it overlaps the fewest); a number standing off its point gets a thin line back to it."""
    annotation = ax.annotate(text, xy, xytext=OFFSETS[0], textcoords="offset points", ha="center", va="center",
                             fontsize=font_pt, color=colour, fontweight="bold", annotation_clip=False)
    best: tuple[int, tuple[float, float]] | None = None
    for offset in OFFSETS:
        annotation.xyann = offset
        annotation.update_positions(renderer)
        box = Text.get_window_extent(annotation, renderer)  # the number alone: not its line back to the point
        inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
        score = sum(box.overlaps(other) for other in taken) + (0 if inside else 1)
        if best is None or score < best[0]:
            best = (score, offset)
        if score == 0:
            break
    assert best is not None
    annotation.xyann = best[1]
    if math.hypot(*best[1]) > RADII_PT[0]:
        annotation.remove()
        annotation = ax.annotate(text, xy, xytext=best[1], textcoords="offset points", ha="center", va="center",
                                 fontsize=font_pt, color=colour, fontweight="bold", annotation_clip=False,
                                 arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.6,
                                             "shrinkA": 4, "shrinkB": 3})
    return annotation


def overlapping(figure: Figure, annotations: Sequence) -> list[tuple[str, str]]:
    """Pairs of annotations whose drawn boxes overlap (none, for :func:`number_points`' placement)."""
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [(a.get_text(), Text.get_window_extent(a, renderer)) for a in annotations]
    return [(a, b) for i, (a, box) in enumerate(boxes) for b, other in boxes[i + 1:] if box.overlaps(other)]
