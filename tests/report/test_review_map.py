"""A design may ask its review for a design map (``map = {knobs, max_events, seeds}``): the review then
classifies the lattice, names the minimal safe designs and draws the Pareto figure; a wrong map table is
one line with the design's file and line, exit 4."""

from __future__ import annotations

import json

import pytest

DESIGN = """format = 1
name = "tiny-map"
protocols = ["none", "step-dedupe"]
seeds = 40
workload = "tiny"
map = {MAP}
"""


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_a_design_map_is_a_section_of_the_review_with_its_pareto_figure(cli, tmp_path):
    design = tmp_path / "d.toml"
    design.write_text(DESIGN.replace("{MAP}", '{ knobs = ["fence", "dedupe"], max_events = 5, seeds = 30 }'))
    done = cli("review", "--design", design, "--out", tmp_path / "out", timeout=600)
    assert done.returncode == 1, done.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    drawn = results["designs"][0]["map"]
    assert len(drawn["protocols"]) == 9 and drawn["minimal_safe"] == ["plan"]
    statuses = {p["protocol"]: p["status"] for p in drawn["protocols"]}
    assert statuses["none"] == "violated" and statuses["plan"] == "safe"
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "### Design map" in summary and "Minimal safe designs: plan." in summary
    assert (tmp_path / "out" / "figures" / "pareto_tiny-map.svg").exists()
    assert (tmp_path / "out" / "figures" / "saturation_tiny-map.svg").exists()


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("table, says", [
    ('{ knobs = ["fence", "nonsense"] }', "unknown knob 'nonsense'"),
    ('{ knobs = [] }', "map.knobs must be a non-empty list"),
    ('{ knobs = ["fence"], max_events = 40 }', "map.max_events must be a whole number from 1 to 12"),
    ('{ knobs = ["fence"], depth = 3 }', "unknown key 'depth' in map"),
])
def test_a_wrong_map_table_is_one_line_with_file_and_line(cli, tmp_path, table, says):
    design = tmp_path / "d.toml"
    design.write_text(DESIGN.replace("{MAP}", table))
    done = cli("review", "--design", design, "--out", tmp_path / "out")
    assert done.returncode == 4, done.stderr
    assert says in done.stderr and f"{design}:6" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
