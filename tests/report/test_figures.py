"""The review's figures read at a glance: labels of nearby protocols never overlap, nothing is cut."""

from __future__ import annotations

import itertools

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from sim.core.stats import Share
from sim.report import figures
from sim.report.results import DesignRow
from sim.search.map_document import MapDocument


def _point(protocol: str, progress: float, violating: float) -> figures.SafetyPoint:
    return figures.SafetyPoint(protocol, Share(value=violating, low=max(0.0, violating - 0.02), high=violating + 0.02),
                               Share(value=progress, low=progress - 0.01, high=progress + 0.01))


def _boxes(figure) -> list[tuple[str, object]]:
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = figure.axes[0]
    # Text's own extent: an annotation's would include its leader line
    return [(text.get_text(), Text.get_window_extent(text, renderer)) for text in ax.texts]


def _legend_names(figure) -> list[str]:
    """The numbered legend's entries, each ``N  names`` with its line breaks taken out."""
    legend = figure.axes[0].get_legend()
    return [text.get_text().replace("\n", "") for text in legend.get_texts()]


def test_labels_of_crowded_protocols_do_not_overlap():
    """Five protocols within 0.03 of each other: five numbers, none over another, the names in the legend."""
    points = [_point("keyed-fingerprint-reconcile,key_retention=5", 0.86, 0.08),
              _point("keyed-fingerprint-reconcile,receipt_check=trusting", 0.86, 0.065),
              _point("keyed-reconcile", 0.86, 0.06),
              _point("keyed-fingerprint-reconcile", 0.86, 0.055),
              _point("keyed-fingerprint-reconcile,irreversible_keys=on", 0.86, 0.0)]
    figure = figures.safety_vs_availability(points, "crowded", "tasks completed / tasks")
    boxes = _boxes(figure)
    assert sorted(text for text, _ in boxes) == ["1", "2", "3", "4", "5"]
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        assert not box_a.overlaps(box_b), f"labels {a!r} and {b!r} overlap"
    assert sorted(name.split("  ", 1)[1] for name in _legend_names(figure)) == sorted(p.protocol for p in points)


def test_labels_are_whole_and_the_axis_is_a_share():
    """The x axis holds every interval and no more than a margin past [0, 1] (labels never widen it); names are
    whole in the legend; numbers in the figure."""
    name = "keyed-fingerprint-reconcile,irreversible_keys=on"
    figure = figures.safety_vs_availability([_point(name, 0.95, 0.0), _point("plan", 0.3, 0.0)],
                                            "edge", "steps applied / steps planned")
    left, right = figure.axes[0].get_xlim()
    assert -0.1 <= left <= 0.29 and 0.96 <= right <= 1.1
    boxes = _boxes(figure)
    assert _legend_names(figure) == [f"1  {name}", "2  plan"]  # never cut to an ellipsis
    whole = figure.bbox
    for text, box in boxes:
        assert whole.x0 <= box.x0 and box.x1 <= whole.x1 and whole.y0 <= box.y0 and box.y1 <= whole.y1, text
    legend = figure.axes[0].get_legend().get_window_extent()
    assert legend.x1 <= whole.x1 and not any(legend.overlaps(box) for _, box in boxes)


def test_protocols_on_one_spot_share_one_label():
    figure = figures.safety_vs_availability([_point("step", 0.9, 0.3), _point("step-dedupe", 0.9, 0.3)],
                                            "shared", "steps applied / steps planned")
    assert [text for text, _ in _boxes(figure)] == ["1"]
    assert _legend_names(figure) == ["1  step, step-dedupe"]


def _share(value: float) -> dict:
    return {"value": value, "low": value, "high": value}


def test_pareto_labels_never_overlap():
    """A front of eight protocols packed close together: numbered without overlap, named in the legend."""
    from sim.report.maps import pareto_figure

    names = [f"keyed-fingerprint-reconcile,key_retention={n}" for n in range(8)]
    protocols = [{"protocol": n, "same_as": n, "status": "violated" if i % 2 else "safe",
                  "violating_share": _share(0.1 - 0.01 * i), "availability_per_run": {"h": 0.2 + 0.01 * i}}
                 for i, n in enumerate(names)]
    document = {"protocols": protocols, "pareto_front": names, "max_events": 6, "workload": "w", "knobs": ["k"]}
    figure = pareto_figure(MapDocument.from_json(document))
    boxes = _boxes(figure)
    assert sorted(int(text) for text, _ in boxes) == list(range(1, 9))
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        assert not box_a.overlaps(box_b), f"labels {a!r} and {b!r} overlap"
    legends = [*figure.legends, *(c for c in figure.axes[0].get_children() if c.__class__.__name__ == "Legend")]
    entries = [t.get_text().replace("\n", "") for legend in legends for t in legend.get_texts()]
    assert all(any(entry.endswith(f"  {n}") for entry in entries) for n in names)


def test_exposure_bar_labels_are_whole_and_never_overlap():
    """Long protocol names under the exposure bars wrap (at commas, then inside the name) and keep apart."""
    protocols = ["unkeyed-retry", "keyed", "keyed-reconcile", "keyed-fingerprint-reconcile",
                 "keyed-fingerprint-reconcile,key_retention=5"]
    cell = {"value": 10.0, "ci_low": 8.0, "ci_high": 12.0}
    simulated = {p: {"duplicate_effects": cell, "human_exceptions": cell} for p in protocols}
    figure = figures.exposure_bars(simulated, {"already_committed": 10, "human_exceptions": 10}, 10_000,
                                   ["duplicate_effects"])
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    labels = figure.axes[0].get_xticklabels()
    assert [label.get_text().replace("\n", "") for label in labels] == protocols
    for a, b in itertools.combinations(labels, 2):
        assert not a.get_window_extent(renderer).overlaps(b.get_window_extent(renderer)), (a.get_text(), b.get_text())


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_no_figure_is_wider_than_the_page_nor_has_small_text():
    """A swimlane of a hundred events and a heatmap of twenty counterexamples stay within MAX_WIDTH_IN, with
    no text under MIN_FONT_PT."""
    events = [figures.LaneEvent(["queue", "w1", "git"][i % 3], f"event {i} with a rather long label " * 2,
                                i % 7 == 0, i == 50) for i in range(100)]
    columns = [f"counterexample_{i}" for i in range(20)]
    rows = ["none", "plan", "step", "step-dedupe", "step-dedupe,journal_write=after_write",
            "fence=step,stamp_at=apply", "fence=step,dedupe=memory", "step-dedupe,drift_check=reject"]
    cells = {(r, c): ("violated", "lost_update, duplicate_effect") for r in rows for c in columns}
    for figure in (figures.swimlane(["queue", "w1", "git"], events, "long"),
                   figures.verdict_heatmap(rows, columns, cells, "wide")):
        assert figure.get_figwidth() <= figures.MAX_WIDTH_IN
        canvas = FigureCanvasAgg(figure)
        canvas.draw()
        sizes = [t.get_fontsize() for t in figure.findobj(Text) if t.get_text().strip()]
        assert min(sizes) >= figures.MIN_FONT_PT


def _design_row(protocol: str, applied: float, safely: float) -> dict:
    share = {"value": applied, "low": applied - 0.02, "high": applied + 0.02}
    safe = {"value": safely, "low": safely - 0.02, "high": safely + 0.02}
    return {"protocol": protocol, "verdict": "violates safety",
            "violating_runs": {"count": 1, "share": {"value": 0.1, "low": 0.05, "high": 0.15}},
            "progress": {"done": 0, "planned": 0, "share": share},
            "safe_progress": {"done": 0, "planned": 0, "share": safe}}


def test_the_work_done_figure_plots_applied_safely_and_says_so():
    """A review design whose rows hold applied safely is plotted by it (x = 0.6, not the 0.9 applied), and the
    axis names applied safely and that it is not plain applied; a design without it keeps work done."""
    import sim.app.notebook_figures

    design = {"name": "d", "seeds_done": 10, "matrix": {}, "counterexamples": [],
              "progress_label": "steps applied / steps planned",
              "safe_progress_label": "steps applied safely / steps planned",
              "protocols": [_design_row("step", 0.9, 0.6)]}  # an entry of a results.json, as written
    ax = sim.app.notebook_figures.safety_vs_availability(design).axes[0]
    assert "steps applied safely / steps planned" in ax.get_xlabel() and "not plain applied" in ax.get_xlabel()
    assert "work done safely" in ax.get_title()
    assert [round(x, 3) for x in ax.lines[0].get_xdata()] == [0.6]
    points, label, safely = figures.work_done_points(DesignRow.from_json(
        {**design, "protocols": [{k: v for k, v in _design_row("step", 0.9, 0.6).items() if k != "safe_progress"}]}))
    assert (points[0].progress.value, label, safely) == (0.9, "steps applied / steps planned", False)


def test_an_empty_verdict_matrix_says_so_without_a_warning():
    """No scripted scenario and no counterexample: the matrix says nothing was replayed (and matplotlib is not
    asked for an empty axis, which it warns about on the user's terminal)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure = figures.verdict_heatmap(["none", "plan"], [], {}, "empty")
        FigureCanvasAgg(figure).draw()
    assert any("nothing replayed" in t.get_text() for t in figure.findobj(Text))


def test_verdict_matrix_row_labels_are_whole_and_never_equal():
    """Row labels wrap at their spaces and commas, never cut; a label given twice is numbered, so no two rows
    of the matrix read the same."""
    columns = ["a", "b", "c"]
    labels = ["lost_update @ stale_plan under step-dedupe,journal_write=after_write",
              "lost_update under none", "lost_update under none"]
    cells = {(r, c): ("ok", "ok") for r in ["none", "plan"] for c in columns}
    figure = figures.verdict_heatmap(["none", "plan"], columns, cells, "labels", labels)
    shown = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert len(set(shown)) == len(shown), shown
    assert "".join(shown[0].split()) == "".join(labels[0].split())  # whole: only line breaks added
    assert all(len(line) <= figures.ROW_LABEL_WIDTH for label in shown for line in label.splitlines())


def _in_axes(figure, x: float, y: float) -> tuple[float, float]:
    """Where a data point is drawn, as a share of the axes' width and height (0 to 1 inside them)."""
    ax = figure.axes[0]
    return tuple(ax.transAxes.inverted().transform(ax.transData.transform((x, y))))


def test_points_crowded_in_a_corner_spread_over_the_axes():
    """Five protocols that all do 93-99% of the work and violate in at most 3% of runs: the axes zoom to them,
    so the points spread over most of the plot instead of sitting within a few percent of its corner."""
    points = [_point("none", 0.97, 0.03), _point("plan", 0.93, 0.0), _point("step", 0.96, 0.01),
              _point("step-dedupe", 0.96, 0.012), _point("fence=step,stamp_at=apply", 0.99, 0.025)]
    figure = figures.safety_vs_availability(points, "corner", "steps applied / steps planned")
    FigureCanvasAgg(figure).draw()
    drawn = [_in_axes(figure, p.progress.value, p.violating.value) for p in points]
    xs, ys = [x for x, _ in drawn], [y for _, y in drawn]
    assert max(xs) - min(xs) >= 0.5 and max(ys) - min(ys) >= 0.5, drawn
    assert all(0.0 <= v <= 1.0 for v in xs + ys), drawn  # every point inside the axes
    ax = figure.axes[0]
    for p in points:  # and every interval
        assert ax.get_xlim()[0] <= p.progress.low and p.progress.high <= ax.get_xlim()[1]
        assert ax.get_ylim()[0] <= p.violating.low and p.violating.high <= ax.get_ylim()[1]


def test_shares_spanning_orders_of_magnitude_are_drawn_on_a_log_scale():
    """Violating shares of 0.0005, 0.003, 0.05 and 0.6 (and a 0): a symmetric log scale, so the small ones do
    not all sit on the zero line; shares within one order of magnitude stay linear."""
    spread = [_point("a", 0.5, 0.0005), _point("b", 0.6, 0.003), _point("c", 0.7, 0.05), _point("d", 0.8, 0.6),
              _point("e", 0.55, 0.0)]
    figure = figures.safety_vs_availability(spread, "log", "steps applied / steps planned")
    assert figure.axes[0].get_yscale() == "symlog" and figure.axes[0].get_xscale() == "linear"
    FigureCanvasAgg(figure).draw()
    heights = sorted(_in_axes(figure, p.progress.value, p.violating.value)[1] for p in spread)
    assert min(b - a for a, b in zip(heights, heights[1:])) >= 0.1, heights
    close = figures.safety_vs_availability([_point("a", 0.5, 0.05), _point("b", 0.6, 0.3)], "linear", "work")
    assert close.axes[0].get_yscale() == "linear"


def test_numbers_never_cover_a_point_or_an_interval():
    """Four protocols within 0.025 of each other, their intervals crossing: no number is drawn over any
    point's marker or error bar (a number that must stand off gets a line back to its point)."""
    from matplotlib.collections import LineCollection

    points = [_point("keyed-reconcile", 0.86, 0.062), _point("keyed-fingerprint-reconcile", 0.86, 0.059),
              _point("keyed-fingerprint-reconcile,receipt_check=trusting", 0.86, 0.066),
              _point("keyed-fingerprint-reconcile,key_retention=5", 0.86, 0.078), _point("keyed", 0.86, 0.52),
              _point("keyed-fingerprint-reconcile,irreversible_keys=on", 0.86, 0.0)]
    figure = figures.safety_vs_availability(points, "crowded", "tasks completed / tasks")
    boxes = _boxes(figure)
    ax = figure.axes[0]
    marker = FigureCanvasAgg(figure).get_renderer().points_to_pixels(3.0)
    covered = []
    for p in points:
        x, y = ax.transData.transform((p.progress.value, p.violating.value))
        covered.append(Bbox.from_extents(x - marker, y - marker, x + marker, y + marker))
    for collection in (c for c in ax.collections if isinstance(c, LineCollection)):
        for segment in collection.get_segments():
            (x0, y0), (x1, y1) = ax.transData.transform(segment[0]), ax.transData.transform(segment[-1])
            covered.append(Bbox.from_extents(min(x0, x1), min(y0, y1), max(x0, x1) + 0.5, max(y0, y1) + 0.5))
    for text, box in boxes:
        assert not any(box.overlaps(other) for other in covered), f"number {text} covers a point or an interval"


def test_every_red_point_of_the_pareto_figure_is_numbered_and_named():
    """A map whose violated (red) groups sit off the front: each red point has a number at it, and the legend
    names each number's group (its first protocol, and how many behave alike), and says what red means."""
    from sim.report.maps import pareto_figure

    def row(name: str, status: str, share: float, findings: float, same_as: str = "") -> dict:
        return {"protocol": name, "same_as": same_as or name, "status": status,
                "violating_share": _share(share), "availability_per_run": {"h": findings}}

    protocols = [row("plan", "safe", 0.0, 0.9), row("step-dedupe,drift_check=reject", "safe", 0.0, 0.3),
                 row("none", "violated", 0.62, 0.0), row("fence=step,stamp_at=apply", "violated", 0.62, 0.0, "none"),
                 row("step", "violated", 0.3, 0.45), row("step-dedupe", "violated", 0.3, 0.0),
                 row("step-dedupe,journal_write=after_write", "violated", 0.35, 0.0)]
    document = {"protocols": protocols, "pareto_front": ["step-dedupe,drift_check=reject"], "max_events": 6,
                "workload": "w", "knobs": ["k"]}
    figure = pareto_figure(MapDocument.from_json(document))
    FigureCanvasAgg(figure).draw()
    numbers = {text.get_text(): text.xy for text in figure.axes[0].texts}
    entries = [t.get_text().replace("\n", "") for legend in figure.legends for t in legend.get_texts()]
    names = {entry.split("  ", 1)[0]: entry.split("  ", 1)[1] for entry in entries}
    for p in protocols:
        if p["status"] != "violated" or p["same_as"] != p["protocol"]:
            continue
        spot = (p["availability_per_run"]["h"], p["violating_share"]["value"])
        number = next((n for n, xy in numbers.items() if tuple(xy) == spot), None)
        assert number is not None, f"red point {p['protocol']} has no number"
        assert p["protocol"] in names[number], (number, names[number])
    assert "none (and 1 alike)" in names.values()
    assert "violated (red)" in figure.legends[0].get_title().get_text()


def test_designs_a_budget_left_not_decided_and_not_measured_have_no_point():
    """Drawn at zero they would read as designs with no violating run: they are left off the axes and counted
    in the legend's title; a map with no design measured at all still draws, saying so."""
    from sim.report.maps import pareto_figure

    def row(name: str, status: str, share: float | None) -> dict:
        return {"protocol": name, "same_as": name, "status": status, "availability_per_run": {},
                "violating_share": None if share is None else _share(share)}

    document = {"protocols": [row("step-dedupe", "violated", 0.3), row("plan", "not decided", None),
                              row("step", "not decided", None)],
                "pareto_front": [], "max_events": 6, "workload": "w", "knobs": ["k"]}
    figure = pareto_figure(MapDocument.from_json(document))
    FigureCanvasAgg(figure).draw()
    entries = [t.get_text().replace("\n", "") for legend in figure.legends for t in legend.get_texts()]
    assert [e.split("  ", 1)[1] for e in entries] == ["step-dedupe"]
    assert "2 not decided and not measured" in figure.legends[0].get_title().get_text()
    for point in document["protocols"]:
        point.update(status="not decided", violating_share=None)
    figure = pareto_figure(MapDocument.from_json(document))
    FigureCanvasAgg(figure).draw()
    assert any("no design measured: 3 not decided" in t.get_text() for t in figure.axes[0].texts)
