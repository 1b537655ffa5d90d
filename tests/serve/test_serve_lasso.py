"""``fencesim serve --scenario`` steps through a liveness lasso file (``explore --liveness --out``) like any
scenario: its order is the way forward, and the page shows the state it stays in."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from sim.app.serving import explorer_for  # noqa: E402
from sim.registry import FAMILIES  # noqa: E402
from sim.report.lasso import export_lasso  # noqa: E402
from sim.search.liveness import check_liveness  # noqa: E402
from sim.webapp.app import make_app  # noqa: E402


def test_serve_steps_through_a_lasso(tmp_path):
    tiny = FAMILIES.load_workload("tiny")
    family = FAMILIES.family_for(tiny)
    protocol = family.parse_protocol("step")
    verdict = check_liveness(family, tiny, protocol, 1, unfair=("timeout",)).verdicts["request_answered"]
    path = export_lasso(family, tiny, protocol, verdict, tmp_path, "test")
    with TestClient(make_app(explorer_for(scenarios=[path], workload=None), None),
                    base_url="http://127.0.0.1") as client:
        assert path.name in client.get("/").text
        order = [str(e) for e in verdict.prefix]
        page = client.get("/view", params=[("s", path.stem)] + [("e", e) for e in order]).text
        assert re.findall(r'<code id="path">.*?</code>', page) == [
            '<code id="path">plan ; dispatch s1 ; preempt before_write ; deliver s1</code>']
