"""The explorer shows what the model says, not a fixed text: a planted guard (a client that refuses to dispatch
once a human has edited) changes the page's enabled events and the reason it shows."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from sim.families.workspace.family import WorkspaceFamily  # noqa: E402
from sim.families.workspace.machine import WorkspaceMachine  # noqa: E402
from sim.registry import FAMILIES  # noqa: E402
from sim.webapp.app import make_app  # noqa: E402
from sim.webapp.views import Explorer, Source  # noqa: E402

PLANTED_REASON = "planted: the client stops once a human has edited"


class FrozenClient(WorkspaceMachine):
    def why_not_dispatch(self, state, event):
        return PLANTED_REASON if state.edits else super().why_not_dispatch(state, event)


def _client(family):
    workload = FAMILIES.load_workload("seed-fuzz")
    protocols = tuple(family.parse_protocol(p) for p in ("step", "none"))
    return TestClient(make_app(Explorer([Source("w", "seed-fuzz", family, workload, protocols)]), None),
                      base_url="http://127.0.0.1")


def _page(client, events):
    return client.get("/view", params=[("s", "w")] + [("e", e) for e in events]).text


def _enabled(text):
    return re.findall(r'role="button" href="[^"]*">([^<]*)</a>', text)


def test_a_planted_guard_changes_what_the_page_offers_and_why():
    after_edit = ["plan", "human_edit app.py"]
    with _client(WorkspaceFamily()) as shipped:
        assert "dispatch s1" in _enabled(_page(shipped, after_edit))
    with _client(WorkspaceFamily(machine=FrozenClient)) as planted:
        text = _page(planted, after_edit)
        assert "dispatch s1" not in _enabled(text)
        assert f'<code>dispatch s1</code>: <span class="reason">{PLANTED_REASON}</span>' in text
        assert "dispatch s1" in _enabled(_page(planted, ["plan"]))  # before the edit it may still dispatch
