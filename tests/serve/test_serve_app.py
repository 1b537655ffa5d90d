"""The explorer's application through Starlette's test client: the pages a review clicks through, the 4xx
one-line answers to unknown pages and malformed input, the permalink round trip, the search from a path,
and exports that write only inside --out and replay with ``fencesim run`` to the same verdict."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from sim.app.serving import explorer_for  # noqa: E402
from sim.webapp.app import make_app  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
LOST_UPDATE = REPO / "scenarios" / "regressions" / "seed_fuzz_none_lost_update.toml"
EFFECTS = REPO / "scenarios" / "regressions" / "effects_saga_keyed_lost_success.toml"
SOURCE = "seed_fuzz_none_lost_update"
ORDER = ["plan", "dispatch s1", "human_edit app.py", "deliver s1"]


@pytest.fixture(scope="module")
def explorer():
    return explorer_for(scenarios=[LOST_UPDATE, EFFECTS], workload=None)


@pytest.fixture
def client(explorer, tmp_path):
    out = tmp_path / "out"
    with TestClient(make_app(explorer, out), base_url="http://127.0.0.1") as client:
        client.out = out  # type: ignore[attr-defined]
        yield client


def _view(client, events, protocol=None, source=SOURCE):
    params = [("s", source)] + ([("p", protocol)] if protocol else []) + [("e", e) for e in events]
    return client.get("/view", params=params)


def _body_line(text: str) -> str:
    """The text of an error page's body (one line)."""
    return re.sub(r"<[^>]+>", "", text.split("<body>", 1)[1]).strip()


def test_the_index_lists_each_scenario(client):
    page = client.get("/")
    assert page.status_code == 200
    assert "seed_fuzz_none_lost_update.toml" in page.text and "effects_saga_keyed_lost_success.toml" in page.text


def test_the_first_state_shows_enabled_events_and_disabled_ones_with_reasons(client):
    page = _view(client, [])
    assert page.status_code == 200
    enabled = re.findall(r'<a class="event" role="button" href="[^"]*">([^<]*)</a>', page.text)
    assert enabled == ["plan"]
    assert "<code>dispatch s1</code>: <span class=\"reason\">no plan yet</span>" in page.text
    assert 'id="state-files"' in page.text and "v0" in page.text


def test_stepping_to_the_violation_marks_the_event_that_broke_it(client):
    before = _view(client, ORDER[:3]).text
    assert 'data-invariant="lost_update"><td>lost_update</td><td class="ok">holds' in before
    page = _view(client, ORDER).text
    row = re.search(r'<tr data-invariant="lost_update" class="broke">(.*?)</tr>', page).group(1)
    assert "violated" in row and "event 4: <code>deliver s1</code>" in row and "its author expected" in row
    assert re.search(r'<tr data-step="4" class="broke">.*?lost_update', page)
    # the lane row of the violating record (the executor's delivery) carries the invariant
    assert re.search(r'<tr data-index="3" class="broke">.*?deliver s1 -&gt; applied.*?lost_update</td></tr>', page)


def test_an_event_after_the_violation_leaves_it_marked_where_it_broke(client):
    page = _view(client, ORDER + ["ack s1", "dispatch s2"]).text
    row = re.search(r'<tr data-invariant="lost_update" class="broke">(.*?)</tr>', page).group(1)
    assert "event 4: <code>deliver s1</code>" in row
    assert re.search(r'<tr data-step="4" class="broke">', page) and not re.search(r'<tr data-step="5" class', page)


def test_back_forward_and_the_permalink_round_trip(client):
    page = client.get("/view", params=[("s", SOURCE)] + [("a", e) for e in ORDER]).text
    forward = re.search(r'<a id="forward" href="([^"]*)"', page).group(1).replace("&amp;", "&")
    assert "e=plan" in forward
    second = client.get(forward).text
    assert '<code id="path">plan</code>' in second
    back = re.search(r'<a id="back" href="([^"]*)"', second).group(1).replace("&amp;", "&")
    assert '<code id="path">(none yet)</code>' in client.get(back).text
    state = _view(client, ORDER, "none").text
    link = re.search(r'<a id="permalink" href="([^"]*)"', state).group(1).replace("&amp;", "&")
    again = client.get(link).text
    strip = lambda text: re.sub(r'<a id="permalink" href="[^"]*"', "", text)  # noqa: E731
    assert strip(again) == strip(state)


def test_switching_the_protocol_and_the_side_by_side_divergence(client):
    step = _view(client, ORDER, "step").text
    assert '<code id="protocol">step</code>' in step and 'class="broke"' not in step
    params = [("s", SOURCE), ("p", "none"), ("q", "step")] + [("e", e) for e in ORDER]
    page = client.get("/compare", params=params).text
    assert "the first record that differs is #3" in page
    row = re.search(r'<tr data-row="3" class="differs">(.*?)</tr>', page).group(1)
    assert "applied" in row and "rejected:<wbr>stale_<wbr>rev" in row
    same = client.get("/compare", params=[("s", SOURCE), ("p", "none"), ("q", "fence=none")]).text
    assert "the two runs agree record for record" in same


def test_the_effects_family_steps_by_replay(client):
    source = "effects_saga_keyed_lost_success"
    page = _view(client, ["zombie publish_release after_commit"], source=source).text
    assert re.search(r'<tr data-invariant="lost_success" class="broke">', page)
    assert 'id="state-intents-and-receipts"' in page and 'id="state-external-objects"' in page
    assert "compensation_fails create_branch compensate</code>: <span class=\"reason\">" in page


def test_the_shortest_violation_from_here(client):
    page = client.get("/search", params=[("s", SOURCE), ("p", "none"), ("e", "plan"), ("e", "dispatch s1")]).text
    assert "within 6 more event(s), at most 200,000 distinct states" in page
    found = re.search(r'<li data-invariant="lost_update"><b>lost_update</b>: 2 more event\(s\): '
                      r"<code>([^<]*)</code>", page)
    assert found and found.group(1) == "human_edit app.py ; deliver s1"
    clean = client.get("/search", params=[("s", SOURCE), ("p", "step-dedupe"), ("depth", "3")]).text
    assert "No violation found within the bound." in clean and "Proved absent within the bound" in clean


@pytest.mark.parametrize("query, status, words", [
    ("/nowhere", 404, "no page '/nowhere'"),
    ("/view?s=nosuch", 400, "unknown scenario 'nosuch'"),
    ("/view?e=fly+away", 400, "event 'fly away'"),
    ("/view?p=fence%3Dsideways", 400, "knob 'fence' has no value 'sideways'"),
    ("/view?colour=red", 400, "unknown parameter 'colour'"),
    ("/view?s=a&s=b", 400, "parameter 's' given more than once"),
    ("/search?depth=deep", 400, "depth must be a whole number"),
    ("/search?depth=99", 400, "the search depth must be from 1 to 12"),
    ("/compare", 400, "give the protocol to compare with"),
    ("/view?" + "e=plan&" * 600, 400, "a path holds at most 500 events"),
])
def test_bad_requests_get_one_line_4xx_pages(client, query, status, words):
    page = client.get(query)
    assert page.status_code == status
    line = _body_line(page.text)
    assert "\n" not in line and "Traceback" not in page.text
    assert words in line.replace("&#x27;", "'"), line


def test_export_is_post_only_and_a_foreign_host_or_origin_is_refused(client):
    assert client.get("/export", params=[("s", SOURCE)]).status_code == 405
    foreign = client.get("/view", headers={"host": "attacker.example"})
    assert foreign.status_code == 400
    forged = client.post("/export?s=" + SOURCE + "&e=plan", headers={"origin": "http://attacker.example"})
    assert forged.status_code == 403 and "not from http://attacker.example" in forged.text
    assert not client.out.exists()
    own = client.post("/export?s=" + SOURCE + "&e=plan", headers={"origin": "http://127.0.0.1"})
    assert own.status_code == 200


@pytest.mark.parametrize("headers, words", [
    ({"origin": "http://localhost:3000"}, "not from http://localhost:3000"),  # another port: another origin
    ({"origin": "http://127.0.0.1:8080"}, "not from http://127.0.0.1:8080"),
    ({"origin": "https://127.0.0.1:8765"}, "not from https://127.0.0.1:8765"),  # another scheme
    ({"origin": "null"}, "not from null"),
    ({"origin": "http://127.0.0.1:99999"}, "not from http://127.0.0.1:99999"),
    ({"sec-fetch-site": "cross-site"}, "not from another site (Sec-Fetch-Site: cross-site)"),
    ({"sec-fetch-site": "same-site"}, "not from another site (Sec-Fetch-Site: same-site)"),
    ({"origin": "http://127.0.0.1:8765", "sec-fetch-site": "cross-site"}, "(Sec-Fetch-Site: cross-site)"),
])
def test_an_export_from_another_origin_or_site_is_refused(explorer, tmp_path, headers, words):
    """The Origin is compared as scheme, host and port; without one, a browser's Sec-Fetch-Site must not
    name another site."""
    out = tmp_path / "out"
    with TestClient(make_app(explorer, out), base_url="http://127.0.0.1:8765") as client:
        page = client.post("/export?s=" + SOURCE + "&e=plan", headers=headers)
        line = _body_line(page.text).replace("&#x27;", "'")
        assert page.status_code == 403 and words in line and "this server's own pages (http://127.0.0.1:8765)" in line
        assert not out.exists()
        for own in ({"origin": "http://127.0.0.1:8765"}, {"origin": "http://localhost:8765"},
                    {"sec-fetch-site": "same-origin"}, {"sec-fetch-site": "none"}, {}):
            assert client.post("/export?s=" + SOURCE + "&e=plan", headers=own).status_code == 200, own


@pytest.mark.slow  # replays with fencesim run in a subprocess
def test_export_writes_only_inside_out_and_replays_to_the_same_verdict(client, cli, tmp_path):
    outside_before = sorted(p.name for p in tmp_path.iterdir())
    query = "&".join(["s=" + SOURCE, "p=none"] + [f"e={e.replace(' ', '+')}" for e in ORDER])
    page = client.post("/export?" + query)
    assert page.status_code == 200 and "it violates lost_update" in page.text
    written = sorted(p.name for p in client.out.iterdir())
    assert len(written) == 3 and any(n.endswith(".toml") for n in written)
    assert any(n.startswith("test_") for n in written)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(set(outside_before) | {"out"})
    scenario = next(client.out.glob("*.toml"))
    replayed = cli("run", scenario, "--json")
    assert replayed.returncode == 1, replayed.stderr
    [run] = json.loads(replayed.stdout)
    shown = re.findall(r'<tr data-invariant="(\w+)" class="broke">', _view(client, ORDER, "none").text)
    assert sorted({v["invariant"] for v in run["violations"]}) == sorted(shown) == ["lost_update"]
    assert run["protocol"] == "none" and [e["event"] for e in run["history"]][-1] == "deliver"
    clean = client.post("/export?" + "&".join(["s=" + SOURCE, "p=step"] + [f"e={e.replace(' ', '+')}" for e in ORDER]))
    assert "it violates no safety invariant" in clean.text
    clean_file = next(p for p in client.out.glob("*.toml") if "_step_path_" in p.name)
    assert cli("run", clean_file).returncode == 0


def test_export_refuses_a_symbolic_link_leading_outside_out(explorer, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.toml"
    victim.write_text("mine\n", encoding="utf-8")
    with TestClient(make_app(explorer, out), base_url="http://127.0.0.1") as client:
        first = client.post("/export?s=" + SOURCE + "&e=plan")
        assert first.status_code == 200
        name = next(out.glob("*.toml")).name
        (out / name).unlink()
        (out / name).symlink_to(victim)
        again = client.post("/export?s=" + SOURCE + "&e=plan")
    assert again.status_code == 400 and "symbolic link" in again.text
    assert victim.read_text(encoding="utf-8") == "mine\n"


def test_without_out_nothing_is_written(explorer):
    with TestClient(make_app(explorer, None), base_url="http://127.0.0.1") as client:
        page = client.post("/export?s=" + SOURCE + "&e=plan")
    assert page.status_code == 400 and "started without --out" in page.text


def test_a_design_and_a_scripted_story_open_and_a_script_is_not_searched():
    explorer = explorer_for(design=str(REPO / "scenarios" / "designs" / "three-files.toml"),
                            scenarios=[REPO / "scenarios" / "runtime" / "pr_lost_response.toml"])
    assert list(explorer.sources) == ["three-files", "pr_lost_response"]
    with TestClient(make_app(explorer, None), base_url="http://127.0.0.1") as client:
        design = client.get("/view", params=[("s", "three-files")])
        assert design.status_code == 200 and 'id="state-files"' in design.text
        story = explorer.sources["pr_lost_response"]
        steps = [("e", str(e)) for e in story.events]
        page = client.get("/view", params=[("s", "pr_lost_response")] + steps)
        assert page.status_code == 200 and 'id="state-intents-and-receipts"' in page.text
        search = client.get("/search", params=[("s", "pr_lost_response")] + steps[:1])
    assert search.status_code == 400 and "is a script" in search.text


def test_a_protocols_knob_tokens_are_never_broken_inside(client):
    """Each knob=value token is one span that does not wrap, with no break opportunity inside it; the
    description breaks after its commas only (a browser test measures the lines)."""
    page = _view(client, ["plan"], "fence=step,journal_gc=never").text
    assert ".knob { white-space: nowrap; overflow-wrap: normal; word-break: keep-all; }" in page
    described = re.search(r'<small id="knobs">(.*?)</small>', page).group(1)
    tokens = re.findall(r'<span class="knob">([^<]*)</span>', described)
    assert "journal_gc=never" in tokens and "fence=step" in tokens and len(tokens) > 8
    assert re.sub(r'<span class="knob">[^<]*</span>', "T", described).replace(",<wbr>", "") == "T" * len(tokens)
    assert '<code id="protocol"><span class="knob">fence=step</span>,<wbr><span class="knob">journal_gc=never' in page
