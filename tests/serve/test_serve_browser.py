"""The explorer in a real headless Chromium, as a new user meets it: ``fencesim serve --review`` on the reference
review, open a shipped lost update, click from the first event to its violation, see the invariant marked at
the event that broke it, export the path and replay it with ``fencesim run`` to the same verdict; switch the
protocol and see where the same order diverges; read a disabled event's reason.  Skipped, saying so, without
Chromium or Playwright."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

REPO = Path(__file__).resolve().parents[2]
REVIEW = REPO / "reports" / "reference"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                  "--disable-background-networking", "--disable-component-update"]
SHIPPED = "seed_fuzz_none_lost_update_stale_plan.toml"  # the reference review's lost update over a human's edit
ORDER = ["plan", "dispatch s1", "human_edit app.py", "deliver s1"]

pytestmark = pytest.mark.slow


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on this machine (.ci/run installs Debian's chromium)")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    executable = _chromium()
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``fencesim serve --review reports/reference`` on a free port: (its URL, its --out folder)."""
    out = tmp_path_factory.mktemp("serve") / "out"
    env = dict(os.environ, NO_COLOR="1", PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "-c", "from sim.cli import main; main()", "serve", "--review", str(REVIEW), "--port", "0",
         "--out", str(out)], cwd=str(REPO), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        if "http://127.0.0.1:" not in line:
            process.kill()
            pytest.fail("fencesim serve did not start: " + line + process.stderr.read())  # type: ignore[union-attr]
        yield line.split(" at ", 1)[1].split()[0], out
    finally:
        process.send_signal(signal.SIGINT)
        try:
            assert process.wait(timeout=30) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
            process.stdout.close()  # type: ignore[union-attr]
            process.stderr.close()  # type: ignore[union-attr]


@pytest.fixture
def page(browser, server):
    opened = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    requests: list[str] = []
    opened.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("request", lambda request: requests.append(request.url))
    yield opened
    opened.close()
    assert errors == []
    assert all(url.startswith(server[0]) for url in requests), requests


def _invariant(page, name: str) -> str:
    return page.inner_text(f"#invariants tr[data-invariant='{name}']")


def test_a_new_user_reproduces_a_shipped_lost_update_by_clicking_and_exports_it(page, server, cli):
    address, out = server
    page.goto(address)
    page.click(f"#sources a:text-is('{SHIPPED}')")
    assert page.inner_text("#path") == "(none yet)"
    for number, event in enumerate(ORDER, 1):
        assert "holds" in _invariant(page, "lost_update"), f"lost_update before event {number}"
        page.click(f"#enabled a.event:text-is('{event}')")
        assert page.inner_text("#path") == " ; ".join(ORDER[:number])
    row = _invariant(page, "lost_update")
    assert "violated" in row and "event 4: deliver s1" in row and "its author expected" in row
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "the page scrolls sideways"
    lane = page.inner_text("#lanes tr.broke")
    assert "deliver s1 -> applied" in lane and "lost_update" in lane
    assert page.inner_text("#steps tr.broke").startswith("4")
    page.click("#export button")
    replay = page.inner_text("#replay")
    scenario = Path(replay.removeprefix("fencesim run "))
    assert scenario.parent == out and scenario.is_file()
    done = cli("run", scenario)
    assert done.returncode == 1 and "VIOLATED lost_update at event 3 (s1)" in done.stdout, done.stdout


def test_switching_the_protocol_shows_where_the_same_order_diverges(page, server):
    address, _ = server
    page.goto(address)
    page.click(f"#sources a:text-is('{SHIPPED}')")
    for _ in ORDER:
        page.click("#forward")
    assert "violated" in _invariant(page, "lost_update")
    page.fill("#switch input[name=p]", "step")
    page.click("#switch button")
    assert page.inner_text("#protocol") == "step"
    assert page.inner_text("#path") == " ; ".join(ORDER)
    assert "holds" in _invariant(page, "lost_update")
    page.fill("#compare input[name=q]", "none")
    page.click("#compare button")
    assert "first record that differs is #3" in page.inner_text("#divergence")
    marked = page.inner_text("#side-by-side tr.differs")
    assert "rejected:stale_rev" in marked.replace("\u200b", "") and "applied" in marked
    assert len(page.query_selector_all("#side-by-side tr.differs")) == 1
    assert len(page.query_selector_all("#side-by-side tr")) > 4
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "the page scrolls sideways"


def test_a_disabled_event_shows_the_guards_reason(page, server):
    address, _ = server
    page.goto(address)
    page.click(f"#sources a:text-is('{SHIPPED}')")
    reason = page.inner_text("#disabled-events li[data-event='dispatch s1']")
    assert reason == "dispatch s1: no plan yet"
    page.click("#enabled a.event:text-is('plan')")
    page.click("#enabled a.event:text-is('dispatch s1')")
    again = page.inner_text("#disabled-events li[data-event='dispatch s1']")
    assert re.search(r"already dispatched", again), again
    assert page.is_visible("#disabled-events li[data-event='dispatch s1'] .reason")


#: For each comma-separated token of an element's text, whether its characters lie on more than one line.
TOKENS_BROKEN = """(element) => {
  const chars = [];
  const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.length; i++) {
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      chars.push([node.data[i], Math.round(range.getBoundingClientRect().top)]);
    }
  }
  const broken = [];
  let token = [];
  for (const [char, top] of chars.concat([[",", 0]])) {
    if (char !== ",") { token.push([char, top]); continue; }
    if (new Set(token.map((c) => c[1])).size > 1) broken.push(token.map((c) => c[0]).join(""));
    token = [];
  }
  return {broken: broken, lines: new Set(chars.map((c) => c[1])).size};
}"""


@pytest.mark.parametrize("width", [420, 520, 760])
def test_a_protocols_knobs_wrap_between_tokens_never_inside_one(page, server, width):
    """The protocol's knobs (``journal_gc=never``) wrap after a comma, never inside a token."""
    address, _ = server
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(address)
    page.click(f"#sources a:text-is('{SHIPPED}')")
    seen = page.eval_on_selector("h1 + p small", TOKENS_BROKEN)
    assert seen["lines"] > 1 and seen["broken"] == [], seen
