"""The reference review's report.html, opened in a real headless Chromium at 1400 px: the verdict matrices and
every figure render with a non-zero size, nothing is fetched from the network, the console stays clean, no
table or figure is clipped or runs past the page, and no text (figure text included) is under 10 px.  The same
checks fail on a page with a planted wide table or a shrunken figure."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REPORT = REPO / "reports" / "reference" / "report.html"
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                  "--disable-background-networking", "--disable-component-update"]
VIEWPORT = {"width": 1400, "height": 1000}
#: The smallest text a reader is asked to read, in CSS pixels (figure text at its drawn size).
MIN_FONT_PX = 10.0

#: Every table or figure clipped (its content wider than its box) or running past the page's text column,
#: and every text smaller than MIN_FONT_PX (HTML text by its computed size, SVG text by its size on screen).
LAYOUT_PROBLEMS = """(minimum) => {
  const problems = [];
  const column = document.body.getBoundingClientRect();
  const style = getComputedStyle(document.body);
  const right = column.right - parseFloat(style.paddingRight) + 1;
  for (const el of document.querySelectorAll('table, figure')) {
    const name = el.id || (el.dataset && el.dataset.name) || el.tagName;
    if (el.scrollWidth > el.clientWidth + 1) problems.push(`clipped ${name}: ${el.scrollWidth} > ${el.clientWidth}`);
    const box = el.getBoundingClientRect();
    if (box.right > right)
      problems.push(`past the page ${name}: right edge ${Math.round(box.right)} > ${Math.round(right)}`);
  }
  if (document.documentElement.scrollWidth > window.innerWidth)
    problems.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} > ${window.innerWidth}`);
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, el = node.parentElement;
    if (!node.textContent.trim() || el.closest('svg') || el.closest('details:not([open])')) continue;
    const size = parseFloat(getComputedStyle(el).fontSize);
    if (size < minimum) problems.push(`small text ${size.toFixed(1)}px: ${node.textContent.trim().slice(0, 40)}`);
  }
  for (const text of document.querySelectorAll('svg text')) {
    const matrix = text.getScreenCTM();
    if (!matrix || text.getBoundingClientRect().width === 0) continue;
    const size = parseFloat(getComputedStyle(text).fontSize) * Math.hypot(matrix.a, matrix.b);
    if (size < minimum - 0.05) {
      const figure = text.closest('figure');
      problems.push(`small figure text ${size.toFixed(1)}px in ${figure ? figure.dataset.name : '?'}: ` +
                    text.textContent.slice(0, 40));
    }
  }
  return problems;
}"""


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


def _problems(browser, path: Path) -> list[str]:
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        return page.evaluate(LAYOUT_PROBLEMS, MIN_FONT_PX)
    finally:
        page.close()


@pytest.mark.slow
def test_report_renders_in_headless_chromium(browser):
    """Matrices and figures are visible with non-zero size; no console error, no request leaves the file;
    screenshots of the top of the page and of the first verdict matrix are kept in test-artifacts/."""
    errors, requests = [], []
    page = browser.new_page(viewport=VIEWPORT)
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(REPORT.as_uri())
    page.wait_for_load_state("load")
    matrices = page.query_selector_all("table[id^='verdict-matrix-']")
    assert len(matrices) >= 2, "one verdict matrix per design"
    for matrix in matrices:
        box = matrix.bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0
        assert matrix.query_selector_all("td.bad") and matrix.query_selector_all("td.good")
    plots = page.query_selector_all("figure.plot svg")
    assert len(plots) >= 8
    for plot in plots:
        box = plot.bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0, plot.evaluate("e => e.parentNode.dataset.name")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=False)
    matrices[0].scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "report-matrix.png"), full_page=False)
    page.close()
    assert errors == []
    assert all(url.startswith("file:") or url.startswith("data:") for url in requests), requests


@pytest.mark.slow
def test_the_reference_report_reads_at_1400_px(browser):
    """No table or figure is clipped or wider than the page, and no text is under 10 px."""
    assert _problems(browser, REPORT) == []


@pytest.mark.slow
@pytest.mark.parametrize("planted, needle", [
    ('<table id="planted-wide"><tr><td style="white-space: nowrap">' + "a-long-protocol-name," * 60
     + "</td></tr></table>", "planted-wide"),
    ('<table id="planted-clipped" style="display: block; overflow: hidden; width: 300px"><tr>'
     '<td style="white-space: nowrap">' + "cell " * 200 + "</td></tr></table>", "clipped planted-clipped"),
    ('<figure class="plot" data-name="planted-small" style="width: 200px"><svg width="800pt" height="100pt" '
     'viewBox="0 0 800 100" style="max-width: 100%"><text x="10" y="50" style="font-size: 8px">tiny</text>'
     "</svg></figure>", "small figure text"),
])
def test_the_checks_fail_on_a_planted_problem(browser, tmp_path, planted, needle):
    """A planted wide table, a clipped one and a figure shrunk below 10 px are each found."""
    page = tmp_path / "report.html"
    page.write_text(REPORT.read_text(encoding="utf-8").replace("<h2>", planted + "<h2>", 1), encoding="utf-8")
    problems = _problems(browser, page)
    assert any(needle in problem for problem in problems), problems


#: Where a table cell's text goes on to a new line inside a token: each character is measured where it is
#: drawn, and a line that ends on anything but a space, ',', '=', ':', '|' or '-' ends inside a token.
TOKEN_SPLITS = r"""(selector) => {
  const found = [];
  for (const cell of document.querySelectorAll(selector)) {
    const chars = [];
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      for (let i = 0; i < node.length; i++) {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const box = range.getBoundingClientRect();
        chars.push([node.data[i], box.top, box.height]);
      }
    }
    const text = chars.map(c => c[0]).join('');
    for (let i = 0; i + 1 < chars.length; i++) {
      const [c, top, height] = chars[i], [next, nextTop] = chars[i + 1];
      if (/\s/.test(c) || /\s/.test(next) || height === 0) continue;
      if (nextTop > top + height / 2 && !/[,=:|\-]/.test(c))
        found.push(text.slice(Math.max(0, i - 15), i + 1) + ' / ' + text.slice(i + 1, i + 15));
    }
  }
  return found;
}"""


def _token_splits(browser, path: Path, width: int) -> list[str]:
    page = browser.new_page(viewport={"width": width, "height": 1000})
    try:
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        return page.evaluate(TOKEN_SPLITS, "table td, table th")
    finally:
        page.close()


@pytest.mark.slow
def test_table_cells_break_only_between_tokens(browser, tmp_path):
    """Verdict cells squeezed into a 500 px page, and every table of the reference report at 1400 px, end a line
    only between tokens: never `lost_` / `update` or `rejected:stale_` / `rev`."""
    from sim.report import html_writer
    from sim.report.document import Document, table

    protocols = ["none", "step-dedupe,journal_write=after_write", "keyed-fingerprint-reconcile,receipt_check=trusting"]
    cells = ["lost_update, duplicate_effect", "rejected:stale_rev", "unresolved_compensation"]
    squeezed = tmp_path / "squeezed.html"
    squeezed.write_text(html_writer.write(Document("squeezed", (table(
        ["scenario or counterexample", *protocols] * 2,
        [[f"minimal order: lost_update @ duplicate_delivery under {protocols[1]}", *cells] * 2] * 3, wide=True),)),
        {}), encoding="utf-8")
    assert _token_splits(browser, squeezed, 500) == []
    assert _token_splits(browser, REPORT, VIEWPORT["width"]) == []
