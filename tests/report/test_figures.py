"""The review's figures read at a glance: labels of nearby protocols never overlap, nothing is cut."""

from __future__ import annotations

import itertools

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from sim.report import figures


def _point(protocol: str, progress: float, violating: float) -> dict:
    return {"protocol": protocol,
            "progress": {"value": progress, "low": progress - 0.01, "high": progress + 0.01},
            "violating": {"value": violating, "low": max(0.0, violating - 0.02), "high": violating + 0.02}}


def _boxes(figure) -> list[tuple[str, object]]:
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = figure.axes[0]
    # Text's own extent: an annotation's would include its leader line
    return [(text.get_text(), Text.get_window_extent(text, renderer)) for text in ax.texts]


def test_labels_of_crowded_protocols_do_not_overlap():
    points = [_point("keyed-fingerprint-reconcile,key_retention=5", 0.86, 0.08),
              _point("keyed-fingerprint-reconcile,receipt_check=trusting", 0.86, 0.065),
              _point("keyed-reconcile", 0.86, 0.06),
              _point("keyed-fingerprint-reconcile", 0.86, 0.055),
              _point("keyed-fingerprint-reconcile,irreversible_keys=on", 0.86, 0.0)]
    boxes = _boxes(figures.safety_vs_availability(points, "crowded", "tasks completed / tasks"))
    assert len(boxes) == 5
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        assert not box_a.overlaps(box_b), f"labels {a!r} and {b!r} overlap"


def test_labels_are_whole_and_inside_the_axes():
    name = "keyed-fingerprint-reconcile,irreversible_keys=on"
    figure = figures.safety_vs_availability([_point(name, 0.95, 0.0), _point("plan", 0.3, 0.0)],
                                            "edge", "steps applied / steps planned")
    boxes = _boxes(figure)
    assert sorted(text for text, _ in boxes) == sorted([name, "plan"])  # never cut to an ellipsis
    axes_box = figure.axes[0].get_window_extent()
    for text, box in boxes:
        assert axes_box.x0 <= box.x0 and box.x1 <= axes_box.x1, f"label {text!r} leaves the axes"
        assert axes_box.y0 <= box.y0 and box.y1 <= axes_box.y1, f"label {text!r} leaves the axes"


def test_protocols_on_one_spot_share_one_label():
    figure = figures.safety_vs_availability([_point("step", 0.9, 0.3), _point("step-dedupe", 0.9, 0.3)],
                                            "shared", "steps applied / steps planned")
    assert [text for text, _ in _boxes(figure)] == ["step\nstep-dedupe"]
