"""A budgeted review says what it cut: each section the budget stopped, by name, in Not covered (summary.md,
report.html, results.json) with the command that completes it; the Engine table a design asks for runs
before the optional sections, and where the budget cut it the report says so where the table would be."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest

import sim
import sim.app.reviewing as reviewing
from sim.app.designs import Design, MapRequest, load_design
from sim.app.review_cuts import certify_cut, map_cut, proof_cuts, review_command, workload_argument
from sim.report.folder import write_review
from sim.report.results import CertifyDocument
from sim.search.budget import NO_DEADLINE
from sim.search.map_document import MapDocument

DESIGN = """format = 1
name = "notify"
family = "effects"
protocols = ["keyed", "keyed-fingerprint-reconcile"]
seeds = 5
workload = "notify-after-create"
engine = "temporal,idempotency=key"
map = { knobs = ["idempotency", "reconcile"], max_events = 2, seeds = 10, base = "keyed" }
"""
INLINE = """format = 1
name = "inline"
protocols = ["keyed"]
seeds = 5
engine = "temporal"
map = { knobs = ["reconcile"], max_events = 2, seeds = 0 }

[workload]
family = "effects"
task = "task_1"
workflow = [ { name = "create_account", class = "keyed_creation", object = "account" } ]
[workload.faults]
classes = ["timeout"]
[workload.limits]
max_events = 2
"""


@pytest.fixture(scope="module")
def budgeted(tmp_path_factory):
    """The design reviewed under a budget that is spent before anything after the sweep starts."""
    folder = tmp_path_factory.mktemp("cuts")
    path = folder / "notify.toml"
    path.write_text(DESIGN)
    results = reviewing.run_review([load_design(path)], budget_s=1e-6, workers=1)
    write_review(results, folder / "report", 1.0)
    return path, results.designs[0].row, folder / "report"


@pytest.mark.slow  # over 3 s with its fixture: outside the fast lane
def test_each_section_the_budget_stopped_is_named_with_its_command(budgeted):
    path, row, _ = budgeted
    cuts = {cut.section: cut for cut in row.budget_cuts}
    assert {"certify", "exhaustive", "interference", "sections", "map"} <= set(cuts)
    assert cuts["certify"].command == ("fencesim certify -w notify-after-create -e temporal -p idempotency=key "
                                       "--max-events 2")
    assert cuts["exhaustive"].command == ("fencesim explore -w notify-after-create -p keyed "
                                          "-p keyed-fingerprint-reconcile --depth 2")
    assert cuts["map"].command == ("fencesim map -w notify-after-create --knobs idempotency,reconcile "
                                   "--max-events 2 --seeds 10 --base keyed")
    assert cuts["sections"].command == f"fencesim review --design {path} --seeds 5"
    for cut in row.budget_cuts:
        assert cut.line() in row.not_covered
        assert cut.title in cut.line() and f"`{cut.command}`" in cut.line()
    assert not any(line.startswith("the budget stopped:") for line in row.not_covered)
    assert row.contradictions == ()


@pytest.mark.slow  # over 3 s with its fixture: outside the fast lane
def test_the_report_says_where_the_engine_table_and_the_map_would_be(budgeted):
    """``certify: null`` under a budget, but never silently: a line where the table would be, and in Not
    covered, in all three files."""
    _, row, report = budgeted
    assert row.certify is None and row.map is None
    summary = (report / "summary.md").read_text()
    engine = summary.index("### Engine: temporal,idempotency=key")
    assert summary.index("**Cut by the budget:** not computed", engine) < summary.index("###", engine + 4)
    assert "### Design map\n\n**Cut by the budget:** not drawn" in summary
    not_covered = summary[summary.index("### Not covered"):]
    assert ("- the budget cut the Engine table (temporal,idempotency=key): not computed: the budget ran out before "
            "it; `fencesim certify -w notify-after-create") in not_covered
    html = (report / "report.html").read_text()
    assert "<code>fencesim certify -w notify-after-create -e temporal -p idempotency=key --max-events 2</code>" in html
    written = json.loads((report / "results.json").read_text())["designs"][0]
    assert written["budget_cuts"] == [cut.to_json() for cut in row.budget_cuts] and written["certify"] is None


def test_interference_cut_whole_draws_no_figure_and_says_where_the_curves_would_be(budgeted):
    """Every level of the interference curves cut: no empty figure, and the cut where the curves would be."""
    _, row, report = budgeted
    assert not any(row.interference.values())
    summary = (report / "summary.md").read_text()
    assert "### Violations against interference\n\n**Cut by the budget:** the levels of at most" in summary
    assert list((report / "figures").glob("verdict_matrix_*")) and not list((report / "figures").glob("interference_*"))


def test_the_engine_table_runs_before_the_optional_sections(tmp_path, monkeypatch):
    """Certify, then each protocol's search, then the interference curves, the family's sections and the map:
    a budget that runs out cuts the optional work first."""
    path = tmp_path / "notify.toml"
    path.write_text(DESIGN)
    design = load_design(path)
    called: list[str] = []

    def record(name, value):
        def stand_in(*args, **kwargs):
            called.append(name)
            return value
        return stand_in

    monkeypatch.setattr(reviewing, "_certified", record("certify", None))
    monkeypatch.setattr(reviewing, "protocol_proofs", record("proofs", {}))
    monkeypatch.setattr(reviewing, "interference", record("interference", {}))
    monkeypatch.setattr(type(design.family), "review_sections", record("sections", []))
    monkeypatch.setattr(reviewing, "_drawn_map", record("map", None))
    reviewing.review_design(design, workers=1)
    assert called == ["certify", "proofs", "interference", "sections", "map"]


def test_an_inline_workload_is_completed_by_the_review_without_the_budget(tmp_path):
    """certify, explore and map read a workload file; a workload written inside the design is read by the
    review alone, so the review is the command."""
    path = tmp_path / "inline.toml"
    path.write_text(INLINE)
    design = load_design(path)
    assert workload_argument(design) is None
    command = review_command(design)
    assert command == f"fencesim review --design {path} --seeds 5"
    assert certify_cut(design, None, False, 2)[0].command == command
    assert map_cut(design, None)[0].command == command
    assert proof_cuts(design, design.protocols, {}, 2)[0].command == command


def _certified(complete: bool, max_events: int = 2) -> CertifyDocument:
    """An Engine table with no transition: complete (or stopped) within ``max_events`` events."""
    return CertifyDocument(engine="temporal", protocol="temporal", max_events=max_events, complete=complete)


def _design(**changes) -> Design:
    """An effects design read from ``d.toml`` whose workload is written inside it (no file of its own)."""
    workload = dataclasses.replace(sim.load_workload("notify-after-create"), name="x", path=None)
    design = Design(name="d", family=sim.family("effects"), workload=workload,
                    protocols=(sim.parse_protocol("keyed", "effects"),), seeds=5, source="d.toml", engine="temporal",
                    map=MapRequest(("reconcile",), 2, 0, None))
    return dataclasses.replace(design, **changes)


def test_only_what_the_budget_stopped_is_a_cut():
    """A complete Engine table or map, a map undecided by its state limit, a search that finished: no cut."""
    design = _design()
    assert certify_cut(design, _certified(True), False, 2) == []
    assert certify_cut(design, _certified(False), False, 2) == []  # stopped by its state limit, not the budget
    assert certify_cut(design, _certified(False), True, 2)[0].left_out.startswith("its search was stopped")
    limit = {"protocols": [{"protocol": "keyed", "status": "not decided", "end": "state_limit"}]}
    assert map_cut(design, MapDocument.from_json(limit)) == []
    budget = {"protocols": [{"protocol": "keyed", "status": "not decided", "end": "--budget"},
                            {"protocol": "unkeyed-retry", "status": "violated", "end": "--budget"}]}
    assert map_cut(design, MapDocument.from_json(budget))[0].left_out.startswith("1 of 2 designs not decided")
    done = SimpleNamespace(complete=True, reason="bound_reached")
    assert proof_cuts(design, [SimpleNamespace(label="keyed")], {"keyed": done}, 2) == []
    assert review_command(_design(source="default", seeds=7)) == "fencesim review --seeds 7"



def test_an_engine_table_certified_less_deep_than_asked_is_a_cut_with_the_whole_depth():
    """The review certifies one event less deep when the deeper search passes its state limit; Not covered
    says so and gives ``fencesim certify`` at the depth asked."""
    design = _design(engine="temporal,idempotency=key")
    cut = certify_cut(design, _certified(True, 2), False, 3, 30_000)
    assert cut[0].left_out == ("certified within 2 events, not 3: a search 3 events deep passes the review's "
                               "limit of 30,000 distinct states")
    assert cut[0].command.startswith("fencesim certify -w WORKLOAD.toml -e temporal -p idempotency=key "
                                     "--max-events 3")
    assert certify_cut(design, _certified(True, 3), False, 3, 30_000) == []


def test_the_review_steps_the_engine_table_down_until_its_search_fits(monkeypatch):
    """With a limit of 200 states, effects-saga under temporal is certified within 1 event (2 events is 9,000
    states), complete, and the Not covered cut asks for 3."""
    import sim

    monkeypatch.setattr(reviewing, "REVIEW_CERTIFY_STATES", 200)
    workload = sim.load_workload("effects-saga")
    design = _design(name="saga", workload=workload)
    certified = reviewing._certified(design, workload, NO_DEADLINE, None)
    assert certified is not None and certified.complete and certified.max_events == 1
    assert all(t.within_events == 1 for t in certified.transitions if t.verdict == "exactly once")
    cut = certify_cut(design, certified, False, reviewing._certify_depth(workload), 200)
    assert cut and "certified within 1 event, not 3" in cut[0].left_out
