"""The design map's figure: safety against cost for every group of protocols, the Pareto front marked.

Built from the map's JSON document (``DesignMap.to_json()``), so a notebook, the ``map`` command and the
review draw the same figure.  A ``Figure`` of its own, never ``pyplot``.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from sim.report.labels import number_points

STATUS_COLOURS = {"safe": "#4c9f70", "violated": "#c44e52", "not decided": "#999999"}
#: Points of the front numbered at most (their names in the numbered legend; the rest in the legend table).
LABELLED_MAX = 20


def pareto_figure(document: dict[str, Any]) -> Figure:
    """Findings per run (x) against the share of violating runs (y), one point per group of protocols
    that behave alike, coloured by verdict within the bound; the Pareto front is joined and labelled."""
    figure = Figure(figsize=(10.5, 5.0), layout="constrained")
    ax = figure.subplots()
    seen: set[str] = set()
    front = set(document["pareto_front"])
    front_points = []
    for point in document["protocols"]:
        if point["same_as"] in seen or point["same_as"] != point["protocol"]:
            continue
        seen.add(point["protocol"])
        share = point["violating_share"]["value"] if point["violating_share"] else 0.0
        findings = sum(point["availability_per_run"].values())
        colour = STATUS_COLOURS.get(point["status"], "#999999")
        marker = "D" if point["protocol"] in front else "o"
        ax.scatter([findings], [share], color=colour, marker=marker, s=42 if marker == "D" else 22,
                   edgecolor="black" if marker == "D" else "none", linewidth=0.6, zorder=3)
        if point["protocol"] in front:
            front_points.append((findings, share, point["protocol"], colour))
    front_points.sort()
    if front_points:
        ax.plot([p[0] for p in front_points], [p[1] for p in front_points], color="#333333", linewidth=0.8,
                linestyle="--", zorder=2)
    for status, colour in STATUS_COLOURS.items():
        ax.scatter([], [], color=colour, label=f"{status} within {document['max_events']} events")
    ax.scatter([], [], marker="D", color="white", edgecolor="black", label="Pareto front (among the safe)")
    ax.add_artist(ax.legend(fontsize=9, loc="upper right"))
    ax.set_xlabel("availability findings per run (spurious rejections, human exceptions)", fontsize=10)
    ax.set_ylabel("runs violating a safety invariant (share)", fontsize=10)
    ax.set_title(f"design map: {document['workload']}, {len(document['knobs'])} knobs "
                 f"({', '.join(document['knobs'])})", fontsize=11)
    ax.set_ylim(-0.05, 1.05)
    ax.grid(alpha=0.3)
    # The front's points numbered where no number overlaps another, their names in the legend beside.
    spots: dict[tuple[float, float], list[tuple[str, str]]] = {}
    for x, y, label, colour in front_points[:LABELLED_MAX]:
        spots.setdefault((round(x, 4), round(y, 4)), []).append((label, colour))
    numbered = [(x, y, ", ".join(label for label, _ in members), members[0][1]) for (x, y), members in spots.items()]
    number_points(figure, ax, numbered, 9, "Pareto front")
    return figure

