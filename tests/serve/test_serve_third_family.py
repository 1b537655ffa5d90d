"""The explorer over a family written only against the contract (the register family of tests/third_family):
its events, guard reasons, invariants and search need nothing of it beyond the contract, and its state shows as
its machine's parts (the default ``Family.state_tables``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "third_family"))

from register_family import FAMILY  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from sim.core.files import Source as FileSource  # noqa: E402
from sim.core.files import read_toml  # noqa: E402
from sim.webapp.app import make_app  # noqa: E402
from sim.webapp.views import Explorer, Source  # noqa: E402

WORKLOAD = """format = 1
family = "register"
name = "two-clients"
clients = ["A", "B"]

[faults]
classes = ["interleave"]
"""
SHORTEST = ["read A", "read B", "write A", "write B"]


@pytest.fixture
def client(tmp_path):
    path = tmp_path / "two-clients.toml"
    path.write_text(WORKLOAD, encoding="utf-8")
    data, source = read_toml(path, "workload file")
    workload = FAMILY.load_workload(data, source if isinstance(source, FileSource) else FileSource(str(path)))
    protocols = tuple(FAMILY.parse_protocol(p) for p in ("blind", "cas"))
    explorer = Explorer([Source("register", "register two-clients", FAMILY, workload, protocols)])
    with TestClient(make_app(explorer, tmp_path / "out"), base_url="http://127.0.0.1") as client:
        yield client


def test_the_third_family_steps_to_its_lost_update(client):
    first = client.get("/view", params=[("s", "register")]).text
    assert re.findall(r'role="button" href="[^"]*">([^<]*)</a>', first) == ["read A", "read B"]
    assert 'id="state-value"' in first  # the machine's parts, one table per field
    page = client.get("/view", params=[("s", "register")] + [("e", e) for e in SHORTEST]).text
    row = re.search(r'<tr data-invariant="lost_update" class="broke">(.*?)</tr>', page).group(1)
    assert "event 4: <code>write B</code>" in row
    cas = client.get("/view", params=[("s", "register"), ("p", "cas")] + [("e", e) for e in SHORTEST]).text
    assert 'class="broke"' not in cas


def test_the_third_family_is_searched_from_a_path(client):
    page = client.get("/search", params=[("s", "register"), ("e", "read A"), ("e", "read B")]).text
    found = re.search(r'<li data-invariant="lost_update"><b>lost_update</b>: 2 more event\(s\)', page)
    assert found, page
