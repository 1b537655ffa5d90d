"""``fencesim diff`` on reviews with a Liveness section: a lasso is a finding, new or fixed like the others."""

from __future__ import annotations

import json

from sim.report.diffing import compare, read_run


def review(path, properties):
    row = {"protocol": "step", "runs": 10, "verdict": "no safety violation found"}
    design = {"name": "d", "counterexamples": [], "protocols": [row],
              "sections": [{"title": "Liveness under fairness",
                            "liveness": [{"protocol": "step", "properties": properties}]}]}
    path.write_text(json.dumps({"designs": [design]}), encoding="utf-8")
    return read_run(path)


def test_a_lasso_is_a_finding_new_then_fixed(tmp_path):
    holds = {"step_settled": {"status": "holds"}}
    violated = {"step_settled": {"status": "violated", "item": "s1",
                                 "lasso": {"prefix": ["plan", "dispatch s1"], "cycle": ["retry s1", "deliver s1"]}}}
    before, after = review(tmp_path / "a.json", holds), review(tmp_path / "b.json", violated)
    found = compare(before, after)
    assert [f.name for f in found.new] == ["step_settled (liveness)"]
    assert found.new[0].words() == ("d: step_settled (liveness) under step (4 events: plan ; dispatch s1 ; "
                                    "(then forever) ; retry s1 ; deliver s1)")
    back = compare(after, before)
    assert [f.name for f in back.fixed] == ["step_settled (liveness)"] and not back.new
    # a later review that did not judge the protocol's liveness did not fix it
    unjudged = tmp_path / "c.json"
    unjudged.write_text(json.dumps({"designs": [{"name": "d", "counterexamples": [], "protocols": [],
                                                 "sections": []}]}), encoding="utf-8")
    assert [f.name for f in compare(after, read_run(unjudged)).not_run] == ["step_settled (liveness)"]
