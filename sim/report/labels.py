"""Point labels that never overlap: each labelled point gets a number beside it, placed where it overlaps no
other number (tried around the point, nearest first), and a legend beside the axes says which protocols each
number stands for.  A number is one or two characters, so a crowd of close points stays readable, and the
names, however long, are written once, whole, wrapped at their commas."""

from __future__ import annotations

from typing import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.transforms import Bbox

from sim.core.wrapping import wrap_text

#: Characters a legend entry's line holds at most (names wrap after their commas and '=').
LEGEND_WIDTH = 34

#: Offsets (points) tried for a number, nearest first: right-above, right-below, left-above, left-below, then
#: further out.
OFFSETS = [(dx * r, dy * r) for r in (1, 2, 3, 4) for dx, dy in ((5, 4), (5, -11), (-13, 4), (-13, -11))]


def number_points(figure: Figure, ax, points: Sequence[tuple[float, float, str, str]], font_pt: float,
                  title: str = "") -> list:
    """Label ``points`` (``x, y, names, colour``) with numbers 1, 2, ... placed without overlap; the legend
    beside the axes maps each number to its names.  Returns the numbers' annotations (to test placement)."""
    if not points:
        return []
    handles = [Line2D([], [], linestyle="none", marker="o", color=colour,
                      label=f"{index}  " + "\n".join(wrap_text(names, LEGEND_WIDTH)))
               for index, (_, _, names, colour) in enumerate(points, 1)]
    ax.legend(handles=handles, fontsize=font_pt, loc="upper left", bbox_to_anchor=(1.01, 1.0), title=title or None,
              title_fontsize=font_pt, borderaxespad=0.0, handletextpad=0.3)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()  # the layout first: boxes are measured where they will be drawn
    renderer = canvas.get_renderer()
    placed: list = []
    boxes: list[Bbox] = []
    for index, (x, y, _names, colour) in enumerate(points, 1):
        annotation = None
        for dx, dy in OFFSETS:
            if annotation is not None:
                annotation.remove()
            annotation = ax.annotate(str(index), (x, y), xytext=(dx, dy), textcoords="offset points",
                                     fontsize=font_pt, color=colour, fontweight="bold", annotation_clip=False)
            box = annotation.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in boxes):
                break
        assert annotation is not None
        boxes.append(annotation.get_window_extent(renderer))
        placed.append(annotation)
    return placed


def overlapping(figure: Figure, annotations: Sequence) -> list[tuple[str, str]]:
    """Pairs of annotations whose drawn boxes overlap (none, for :func:`number_points`' placement)."""
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [(a.get_text(), a.get_window_extent(renderer)) for a in annotations]
    return [(a, b) for i, (a, box) in enumerate(boxes) for b, other in boxes[i + 1:] if box.overlaps(other)]
